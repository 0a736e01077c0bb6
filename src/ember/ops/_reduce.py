"""What every reduction room shares (``reduction.py``, ``reduction_stats.py``, ``cumulative.py``).

- ``dim`` is an int, a tuple/list of ints, or None (all dims); negative dims wrap; a 0-d tensor
  accepts dims 0 and -1. A dim out of range raises PyTorch's ``IndexError`` (``_axes``, ``_one``).
- Backward rules first put the reduced dims back as size 1 (``_unreduce``); broadcasting then
  spreads the gradient over the reduced dims.
- Masks that only select positions are computed on raw arrays (``data_of``) and lifted to the
  gradient's form (``_lift``: a tensor under ``create_graph``, else an array); they carry no
  gradient.
- Half-precision inputs accumulate in float32 (``_sum_arr``, ``_wide``); integer and bool sums
  and products accumulate in int64 (``_int_to_long``), as PyTorch's.
"""

from __future__ import annotations

import builtins as _b
import math
from contextlib import nullcontext
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .. import _kernels_loader as _kernels
from .._tensor_base import TensorBase
from ..autograd import grad_mode
from ..autograd.function import Op
from .casting import cast
from .creation import tensor


def make_outputs_contiguous(namespace: dict[str, Any]) -> None:
    """Every reduction's output is contiguous, as PyTorch's: wrap the forward of each op class
    defined in the module whose globals are ``namespace`` (the tuple-returning ops, which mark
    their indices non-differentiable by identity, order their outputs themselves)."""
    name = namespace["__name__"]
    for op in list(namespace.values()):
        if (isinstance(op, type) and issubclass(op, Op) and op.__module__ == name
                and "forward" in op.__dict__):
            _contiguous_forward(op)


def _t(x: Any) -> Any:
    """Tensors pass through; NumPy arrays, lists and numbers become tensors."""
    return x if isinstance(x, TensorBase) else tensor(x)


def _make(arr: Any) -> Any:
    return TensorBase._make(_backend.c_contiguous(arr))






def _lift(like: Any, arr: Any) -> Any:
    """A constant (no-grad) mask or factor in the form ``like`` has: tensor or array."""
    return _make(arr) if isinstance(like, TensorBase) else arr


def _quiet(xp: Any) -> Any:
    """Silence NumPy's warnings where inf/nan are the documented result (CuPy never warns)."""
    errstate = getattr(xp, "errstate", None)
    return errstate(all="ignore") if errstate is not None else nullcontext()


def _wrap(d: Any, ndim: int, fname: str, shape: tuple) -> int:
    if isinstance(d, bool) or not hasattr(d, "__index__"):
        raise TypeError(
            f"{fname}(): argument 'dim' must be int or tuple of ints, not {type(d).__name__}"
        )
    d = int(d)
    n = _b.max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d}) "
            f"in {fname}() of a tensor of shape {tuple(shape)}; pass a dim in that range"
        )
    return d % n


def _axes(dim: Any, x: Any, fname: str, empty_all: bool = True) -> tuple[int, ...] | None:
    """Normalise ``dim`` to sorted non-negative axes; None means all dims."""
    shape = x._data.shape
    ndim = len(shape)
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        if len(dim) == 0:
            return None if empty_all else ()
        axes = [_wrap(d, ndim, fname, shape) for d in dim]
        seen = set()
        for d in axes:
            if d in seen:
                raise RuntimeError(
                    f"dim {d} appears multiple times in the list of dims ({fname}() of a tensor "
                    f"of shape {tuple(shape)}); list each dim once"
                )
            seen.add(d)
    else:
        axes = [_wrap(dim, ndim, fname, shape)]
    if ndim == 0:
        return ()
    return tuple(sorted(axes))


def _one(dim: Any, x: Any, fname: str) -> int:
    """A single dim (for ops that take exactly one)."""
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"{fname}(): argument 'dim' must be int, not {type(dim).__name__}")
    return _wrap(dim, x._data.ndim, fname, x._data.shape)


def _kept(shape: tuple, axes: tuple[int, ...] | None) -> tuple[int, ...]:
    """``shape`` with the reduced axes set to 1 (the keepdim shape)."""
    if axes is None:
        return (1,) * len(shape)
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _reduced(shape: tuple, axes: tuple[int, ...] | None, keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return _kept(shape, axes)
    if axes is None:
        return ()
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _count(shape: tuple, axes: tuple[int, ...] | None) -> int:
    """How many elements each output of the reduction sums over."""
    if axes is None:
        return math.prod(shape)
    return math.prod(shape[a] for a in axes)


def _unreduce(g: Any, shape: tuple, axes: tuple[int, ...] | None, keepdim: bool) -> Any:
    """Put the reduced dims of ``g`` back as size 1, so it broadcasts against the input."""
    if keepdim or axes == ():
        return g
    return g.reshape(_kept(shape, axes))


def _sum_arr(x: Any, axes: Any, keepdim: bool) -> Any:
    """Array sum in x's dtype; half-precision floats accumulate in float32, as PyTorch does."""
    if x.dtype.itemsize == 2 and x.dtype.kind in "fV":
        return x.sum(axis=axes, keepdims=keepdim, dtype="float32").astype(x.dtype)
    if x.dtype.kind == "b":
        return x.sum(axis=axes, keepdims=keepdim)
    if type(x) is np.ndarray:  # ndarray.sum's own call, without its Python-level wrapper
        if x.size >= 4096 and (out := _kernels.row_sum(x, axes, keepdim)) is not None:
            return out  # (trailing axes: the same bits in one vector pass)
        return np.add.reduce(x, axes, x.dtype, None, keepdim)
    return x.sum(axis=axes, keepdims=keepdim, dtype=x.dtype)


def _rowsum(x: Any, axis: int) -> Any:
    """``x.sum(axis, keepdims=True)``; along the last axis of a C-ordered host float32/float64
    array it is a matrix-vector product with ones: NumPy reduces a short contiguous axis row by
    row (a (4096, 64) float32 sum 100 us), BLAS in one pass (15 us). Summation order differs
    from NumPy's pairwise sum by rounding only."""
    if ((axis == -1 or axis == x.ndim - 1) and type(x) is np.ndarray and x.ndim >= 1
            and x.dtype.kind == "f" and x.dtype.itemsize >= 4 and x.shape[-1] > 0
            and x.flags.c_contiguous):
        c = x.shape[-1]
        return np.matmul(x.reshape(-1, c), np.ones(c, dtype=x.dtype)).reshape(x.shape[:-1] + (1,))
    if hasattr(x, "_data"):  # a tensor (a backward rule recorded under create_graph)
        return x.sum(axis=axis, keepdims=True)
    return _sum_arr(x, axis, True)


def _wide(x: Any) -> Any:
    """float16/bfloat16 compute in float32 (their "opmath": no overflow in sums of squares, no
    stalled sums), to be rounded once by ``_narrow``, as PyTorch."""
    return x.astype("float32") if x.dtype.itemsize == 2 and x.dtype.kind in "fV" else x


def _narrow(out: Any, dtype: Any) -> Any:
    return out if out.dtype == dtype else out.astype(dtype)


def _need(ctx: Any, i: int = 0) -> bool:
    nig = getattr(ctx, "needs_input_grad", None)
    return bool(nig and nig[i])


def _nonempty(x: Any, axes: tuple[int, ...] | None, fname: str) -> None:
    """Reductions without an identity (max, min, median, mode) need a non-empty reduced dim."""
    shape = x._data.shape
    if axes is None:
        if x._data.size == 0:
            raise RuntimeError(
                f"{fname}(): Expected reduction dim to be specified for input.numel() == 0. "
                f"Specify the reduction dim with the 'dim' argument (input shape {tuple(shape)})."
            )
        return
    for a in axes:
        if shape[a] == 0:
            raise IndexError(
                f"{fname}(): Expected reduction dim {a} to have non-zero size (input shape "
                f"{tuple(shape)})."
            )


def _float_only(x: Any, fname: str, msg: str | None = None) -> None:
    if not x.is_floating_point():
        raise RuntimeError(
            msg or f"{fname}(): expected input to have floating point dtype but got "
            f"{_dtype.legacy_name(x.dtype)}; convert first, e.g. x.float()"
        )


def _with_dtype(x: Any, dtype: Any) -> Any:
    """``x`` cast to a reduction's ``dtype=`` argument; an integer dtype for a tensor that
    needs a gradient raises, as in PyTorch (there is no integer gradient)."""
    if dtype is None:
        return x
    dt = _dtype.to_dtype(dtype)
    if not dt.is_floating_point and x.requires_grad and grad_mode.state.enabled:
        name = _dtype.legacy_name(dt)
        raise RuntimeError(
            f"Autograd not support dtype: {name} (a reduction with dtype={dt} of a tensor that "
            "requires grad); reduce in a floating dtype, or detach() the input first"
        )
    return cast(x, dt)


def _int_to_long(x: Any) -> Any:
    """Integer and bool sums/products/cumulative ops accumulate in int64, as PyTorch."""
    if x._data.dtype.kind in "biu" and x._data.dtype.name != "int64":
        return cast(x, _dtype.int64)
    return x


def _positions(xp: Any, n: int, axis: int, ndim: int) -> Any:
    """``arange(n)`` shaped to broadcast along ``axis`` of an ``ndim``-d array."""
    shape = [1] * ndim
    shape[axis] = n
    return xp.arange(n).reshape(shape)


def _slice_at(a: Any, axis: int, k: int) -> Any:
    """``a`` at index ``k`` of ``axis``, keeping the axis (size 1)."""
    return a[(slice(None),) * axis + (slice(k, k + 1),)]


def _contiguous_forward(op: Any) -> None:
    """Make ``op.forward``'s single-array result C-ordered (see ``_backend.c_contiguous``)."""
    fwd = op.forward

    def forward(ctx: Any, *args: Any) -> Any:
        out = fwd(ctx, *args)
        return out if type(out) is tuple else _backend.c_contiguous(out)

    forward.__doc__ = fwd.__doc__
    op.forward = staticmethod(forward)
