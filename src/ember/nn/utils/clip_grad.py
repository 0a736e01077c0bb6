"""Gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_`` (in place, under no_grad)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from typing import Any

from ... import _backend, _dtype
from ..._tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _as_list(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def _scale_(t: Tensor, coef: Any) -> None:
    """t *= coef in place, keeping t's dtype (a fresh array when t's buffer is read-only)."""
    arr = t._data
    c = arr.dtype.type(coef)
    if arr.flags.writeable:
        arr *= c
    else:
        t._data = arr * c
    t._bump_version()


def get_total_norm(
    tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0,
    error_if_nonfinite: bool = False, foreach: bool | None = None,
) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together, as a 0-d tensor."""
    ts = [t for t in _as_list(tensors) if t is not None]
    norm_type = float(norm_type)
    if not ts:
        from ...ops import creation as _creation

        return _creation.tensor(0.0)
    first = ts[0]._data
    xp = _backend.xp_of(first)
    dt = first.dtype
    if norm_type == math.inf:
        parts = [xp.abs(t._data).max() if t._data.size else xp.zeros((), dt) for t in ts]
        total = xp.stack([xp.asarray(p, dtype=dt) for p in parts]).max()
    elif norm_type == -math.inf:
        parts = [xp.abs(t._data).min() for t in ts if t._data.size]
        total = xp.stack([xp.asarray(p, dtype=dt) for p in parts]).min()
    elif norm_type == 0:
        total = xp.asarray(sum(int((t._data != 0).sum()) for t in ts), dtype=dt)
    else:
        # per-tensor norms in the tensors' dtype, then the norm of those (as PyTorch does)
        parts = []
        for t in ts:
            a = t._data
            if norm_type == 2.0:
                parts.append(xp.sqrt((a * a).sum(dtype=a.dtype)))
            elif norm_type == 1.0:
                parts.append(xp.abs(a).sum(dtype=a.dtype))
            else:
                parts.append((xp.abs(a) ** norm_type).sum(dtype=a.dtype) ** (1.0 / norm_type))
        stacked = xp.stack([xp.asarray(p, dtype=dt) for p in parts])
        if norm_type == 2.0:
            total = xp.sqrt((stacked * stacked).sum())
        elif norm_type == 1.0:
            total = stacked.sum()
        else:
            total = (stacked ** norm_type).sum() ** (1.0 / norm_type)
    total = xp.asarray(total, dtype=dt)
    if error_if_nonfinite and not bool(xp.isfinite(total)):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be clipped. To disable this error and scale the gradients by the "
            "non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return Tensor._make(total)


def clip_grads_with_norm_(
    parameters: Tensor | Iterable[Tensor], max_norm: float, total_norm: Tensor,
    foreach: bool | None = None,
) -> None:
    """Scale every ``.grad`` by min(1, max_norm / (total_norm + 1e-6)) in place."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    tn = float(total_norm.item()) if isinstance(total_norm, Tensor) else float(total_norm)
    coef = min(float(max_norm) / (tn + 1e-6), 1.0) if not math.isnan(tn) else math.nan
    if _dtype.float32.np == grads[0]._data.dtype:
        coef = float(_dtype.float32.np.type(coef))  # PyTorch computes the factor in float32
    for g in grads:
        _scale_(g, coef)


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
    error_if_nonfinite: bool = False, foreach: bool | None = None,
) -> Tensor:
    """Rescale gradients so their joint ``norm_type``-norm is at most ``max_norm``.

    Every gradient is multiplied in place by min(1, max_norm / (total_norm + 1e-6)).
    Returns the total norm before clipping (a 0-d tensor). ``norm_type`` may be ``inf``.

    Example::

        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
    """
    params = _as_list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    if grads:
        clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(
    parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
    error_if_nonfinite: bool = False, foreach: bool | None = None,
) -> Tensor:
    """Deprecated alias of ``clip_grad_norm_``."""
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
        "`torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(
    parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None
) -> None:
    """Clamp every ``.grad`` into [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    for p in _as_list(parameters):
        g = p.grad
        if g is None:
            continue
        xp = _backend.xp_of(g._data)
        arr = g._data
        if arr.flags.writeable:
            xp.clip(arr, -clip_value, clip_value, out=arr)
        else:
            g._data = xp.clip(arr, -clip_value, clip_value)
        g._bump_version()
