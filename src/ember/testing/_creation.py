"""``make_tensor``: a random tensor for tests, with ``torch.testing.make_tensor``'s ranges."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["make_tensor"]


def _finfo(np_dtype: Any) -> Any:
    try:
        return np.finfo(np_dtype)
    except ValueError:  # bfloat16 from ml_dtypes
        import ml_dtypes

        return ml_dtypes.finfo(np_dtype)


def make_tensor(*shape: int | Sequence[int], dtype: Any, device: Any, low: float | None = None,
                high: float | None = None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format: Any = None) -> Any:
    """A tensor of ``shape`` filled with values drawn uniformly from ``[low, high)``.

    Defaults by dtype, as PyTorch's: bool ``[0, 2)``, uint8 ``[0, 10)``, signed integers
    ``[-9, 10)``, floating ``[-9, 9)``. ``low``/``high`` outside the dtype's range are clamped.
    Values come from ember's generator, so ``manual_seed`` makes them repeatable.

    Args:
        shape: sizes, as separate ints or one sequence.
        dtype, device: of the result (both required, as in PyTorch).
        requires_grad: for floating dtypes only.
        noncontiguous: return a strided view (ignored for fewer than two elements).
        exclude_zero: replace zeros by 1 (integers, bool) or the dtype's smallest normal number.
        memory_format: accepted; must not be combined with ``noncontiguous``.
    """
    import ember

    from .. import _dtype

    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)  # type: ignore[arg-type]
    dt = _dtype.to_dtype(dtype)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    if requires_grad and not dt.is_floating_point:
        raise ValueError(f"make_tensor: requires_grad must be False for integral dtype {dt}")
    for name, value in (("low", low), ("high", high)):
        if value is not None and isinstance(value, float) and math.isnan(value):
            raise ValueError(f"`{name}` cannot be NaN, but got {name}={value}")

    draw_shape = shape
    if noncontiguous and math.prod(shape) > 1:
        draw_shape = shape[:-1] + (shape[-1] * 2,)

    if dt is _dtype.bool_:
        t = ember.randint(0, 2, draw_shape, dtype=ember.int64).to(dt)
    elif not dt.is_floating_point:
        info = np.iinfo(dt.np)
        lo = -9 if low is None else low
        hi = 10 if high is None else high
        if info.min == 0 and low is None:
            lo = 0
        lo, hi = max(lo, info.min), min(hi, info.max)
        if lo >= hi:
            raise ValueError(f"`low` must be less than `high`, but got {lo} >= {hi}")
        t = ember.randint(math.ceil(lo), math.ceil(hi), draw_shape, dtype=ember.int64).to(dt)
    else:
        info = _finfo(dt.np)
        lo = -9.0 if low is None else float(low)
        hi = 9.0 if high is None else float(high)
        lo, hi = max(lo, float(info.min)), min(hi, float(info.max))
        if lo > hi:
            raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
        if lo == hi:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                          "complex types is deprecated since 2.1 and will be removed in 2.3. Use "
                          "`torch.full(...)` instead.", FutureWarning, stacklevel=2)
            t = ember.full(draw_shape, lo, dtype=dt)
        else:
            u = ember.rand(draw_shape, dtype=ember.float64)
            t = (u * (hi - lo) + lo).to(dt)
    if exclude_zero:
        if dt.is_floating_point:
            replacement: Any = float(_finfo(dt.np).tiny)
        else:
            replacement = 1
        t = ember.where(t == 0, ember.full((), replacement, dtype=dt), t)
    if draw_shape != shape:
        t = t[..., ::2]
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t
