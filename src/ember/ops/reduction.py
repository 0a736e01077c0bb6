"""Reductions: sum, mean, prod, max/min, var/std, norms, logsumexp, cumulative ops, median/mode,
softmax and log_softmax.

Conventions shared by every op here:

- ``dim`` is an int, a tuple/list of ints, or None (all dims); negative dims wrap; a 0-d tensor
  accepts dims 0 and -1. A dim out of range raises PyTorch's ``IndexError``.
- A reduction's forward saves its *returned* output when the derivative is expressed by it, so
  under ``create_graph=True`` the saved value comes back as the differentiable output tensor.
- Backward rules first put the reduced dims back as size 1 (``_unreduce``); broadcasting then
  spreads the gradient over the reduced dims. Masks that only select positions (ties of a max,
  the zeros of a product) are computed on raw arrays and carry no gradient.
- Selecting reductions (``max(x, dim)``, ``median``, ``mode``...) return PyTorch's named tuples
  ``(values, indices)``; the gradient goes to the selected index only. Value reductions without
  an index (``amax``, ``max()``, ``median()``) share the gradient evenly among ties, as PyTorch.
"""

from __future__ import annotations

import builtins as _b
import math
import warnings
from collections import namedtuple
from contextlib import nullcontext
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .._tensor_base import TensorBase
from ..autograd.function import Op
from . import elementwise as _ew

__all__ = [
    "sum",
    "mean",
    "nansum",
    "nanmean",
    "prod",
    "max",
    "min",
    "amax",
    "amin",
    "aminmax",
    "argmax",
    "argmin",
    "var",
    "std",
    "var_mean",
    "std_mean",
    "norm",
    "logsumexp",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "all",
    "any",
    "count_nonzero",
    "median",
    "nanmedian",
    "mode",
    "softmax",
    "log_softmax",
]


# ---------------------------------------------------------------------------------------------
# PyTorch's named result tuples (torch.return_types.*)


def _return_type(name: str, fields: str) -> Any:
    """A named tuple printed as PyTorch's (``max(values=..., indices=...)``) that pickles."""
    cls = namedtuple(name, fields)
    cls.__module__ = __name__
    cls.__qualname__ = f"{name}_t"
    return cls


max_t = _return_type("max", "values indices")
min_t = _return_type("min", "values indices")
median_t = _return_type("median", "values indices")
nanmedian_t = _return_type("nanmedian", "values indices")
mode_t = _return_type("mode", "values indices")
cummax_t = _return_type("cummax", "values indices")
cummin_t = _return_type("cummin", "values indices")
aminmax_t = _return_type("aminmax", "min max")


# ---------------------------------------------------------------------------------------------
# helpers

_LEGACY = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
    "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
    "bool": "Bool",
}

def _is_t(x: Any) -> bool:
    return hasattr(x, "_data") and hasattr(x, "grad_fn")


def _t(x: Any) -> Any:
    """Tensors pass through; NumPy arrays, lists and numbers become tensors."""
    if _is_t(x):
        return x
    from .creation import tensor

    return tensor(x)


def _make(arr: Any) -> Any:
    return TensorBase._make(_c_order(arr))


def _c_order(a: Any) -> Any:
    """``a`` in C order: PyTorch's reductions return contiguous tensors, while NumPy's keep the
    input's memory order (a sum over a transposed array is itself transposed), which would make
    a later ``.view()`` fail where PyTorch's succeeds."""
    flags = getattr(a, "flags", None)
    if flags is None or flags.c_contiguous:
        return a
    return _backend.xp_of(a).ascontiguousarray(a)


def _raw(a: Any) -> Any:
    """The backend array of a tensor (arrays pass through)."""
    return a._data if _is_t(a) else a


def _lift(like: Any, arr: Any) -> Any:
    """A constant (no-grad) mask or factor in the form ``like`` has: tensor or array."""
    return _make(arr) if _is_t(like) else arr


def _quiet(xp: Any) -> Any:
    """Silence NumPy's warnings where inf/nan are the documented result (CuPy never warns)."""
    errstate = getattr(xp, "errstate", None)
    return errstate(all="ignore") if errstate is not None else nullcontext()


def _call(ctx: Any, op: Any, *args: Any) -> Any:
    """``ctx.call`` that also works on raw arrays for ops whose forward reads ``ctx.xp``."""
    if getattr(ctx, "_tensor_mode", False):
        return ctx.call(op, *args)
    node = op._node_cls()
    node.xp = ctx.xp
    node.needs_input_grad = (False,) * len(args)
    return op.forward(node, *args)


def _legacy(t: Any) -> str:
    return _LEGACY.get(t.dtype.name, t.dtype.name)


def _alias(dim: Any, keepdim: Any, axis: Any, keepdims: Any) -> tuple[Any, Any]:
    """NumPy-style ``axis=`` / ``keepdims=`` spellings, which PyTorch also accepts."""
    if axis is not None:
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    return dim, bool(keepdim)


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
    if isinstance(dim, tuple | list):
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
    if isinstance(dim, tuple | list):
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
    if x.dtype.kind == "f" and x.dtype.itemsize < 4:
        return x.sum(axis=axes, keepdims=keepdim, dtype="float32").astype(x.dtype)
    if x.dtype.kind == "b":
        return x.sum(axis=axes, keepdims=keepdim)
    return x.sum(axis=axes, keepdims=keepdim, dtype=x.dtype)


def _wide(x: Any) -> Any:
    """Half-precision floats compute in float32 (no overflow in sums of squares), as PyTorch."""
    return x.astype("float32") if x.dtype.kind == "f" and x.dtype.itemsize < 4 else x


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
            f"{_legacy(x)}; convert first, e.g. x.float()"
        )


_LEGACY_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                 "uint8": "Byte", "bool": "Bool"}


def _with_dtype(x: Any, dtype: Any) -> Any:
    """``x`` cast to a reduction's ``dtype=`` argument; an integer dtype for a tensor that
    needs a gradient raises, as in PyTorch (there is no integer gradient)."""
    if dtype is None:
        return x
    dt = _dtype.to_dtype(dtype)
    if not dt.is_floating_point and x.requires_grad and _grad_enabled():
        name = _LEGACY_NAMES.get(dt.np.name, str(dt))
        raise RuntimeError(
            f"Autograd not support dtype: {name} (a reduction with dtype={dt} of a tensor that "
            "requires grad); reduce in a floating dtype, or detach() the input first"
        )
    return _ew.cast(x, dt)


def _grad_enabled() -> bool:
    from ..autograd import grad_mode

    return grad_mode.state.enabled


def _int_to_long(x: Any) -> Any:
    """Integer and bool sums/products/cumulative ops accumulate in int64, as PyTorch."""
    if x._data.dtype.kind in "biu" and x._data.dtype.name != "int64":
        return _ew.cast(x, _dtype.int64)
    return x


def _positions(xp: Any, n: int, axis: int, ndim: int) -> Any:
    """``arange(n)`` shaped to broadcast along ``axis`` of an ``ndim``-d array."""
    shape = [1] * ndim
    shape[axis] = n
    return xp.arange(n).reshape(shape)


def _slice_at(a: Any, axis: int, k: int) -> Any:
    """``a`` at index ``k`` of ``axis``, keeping the axis (size 1)."""
    return a[(slice(None),) * axis + (slice(k, k + 1),)]


# ---------------------------------------------------------------------------------------------
# sum, mean, nansum, nanmean


class Sum(Op):
    """out = sum over dims of x          grad_x = grad broadcast back to x's shape"""

    @staticmethod
    def forward(ctx: Any, x: Any, axes: Any, keepdim: bool) -> Any:
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        return _sum_arr(x, axes, keepdim)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        g = _unreduce(grad, ctx.shape, ctx.axes, ctx.keepdim)
        return ctx.xp.broadcast_to(g, ctx.shape), None, None


class Mean(Op):
    """out = sum over dims of x / n          grad_x = grad / n broadcast back to x's shape"""

    @staticmethod
    def forward(ctx: Any, x: Any, axes: Any, keepdim: bool) -> Any:
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        n = _count(x.shape, axes)
        ctx.n = n
        xw = _wide(x)
        if n:
            return _narrow(xw.sum(axis=axes, keepdims=keepdim) / n, x.dtype)
        with _quiet(ctx.xp):  # the mean of nothing is NaN, as in PyTorch
            return _narrow(xw.sum(axis=axes, keepdims=keepdim) / 0.0, x.dtype)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        g = _unreduce(grad, ctx.shape, ctx.axes, ctx.keepdim)
        g = g * (1.0 / ctx.n) if ctx.n else g * 0.0
        return ctx.xp.broadcast_to(g, ctx.shape), None, None


# PyTorch names the node of a reduction over given dims ``...Backward1`` (``SumBackward1``) and
# the full reduction ``...Backward0``: same rule, second class for the name.
class SumDim(Sum):
    """Sum over given dims (the rule is Sum's)."""

    node_name = "SumBackward1"


class NanSum(Sum):
    """nansum's final sum (NaNs already replaced by 0; the rule is Sum's)."""

    node_name = "NansumBackward0"


class MeanDim(Mean):
    """Mean over given dims (the rule is Mean's)."""

    node_name = "MeanBackward1"


def sum(  # noqa: A001 - PyTorch's name
    input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """Sum over ``dim`` (all dims when None); integers and bools sum to int64."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    x = _int_to_long(x) if dtype is None else _with_dtype(x, dtype)
    return (Sum if dim is None else SumDim).apply(x, _axes(dim, x, "sum"), keepdim)


def mean(
    input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """Arithmetic mean over ``dim``; integer inputs need ``dtype=`` (as in PyTorch)."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    x = _with_dtype(x, dtype)
    if not x.is_floating_point():
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {_legacy(x)}. Convert first, e.g. x.float().mean(), or pass "
            "dtype=torch.float32"
        )
    return (Mean if dim is None else MeanDim).apply(x, _axes(dim, x, "mean"), keepdim)


def nansum(
    input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """Sum treating NaN as zero (the gradient at NaN positions is 0)."""
    x = _t(input)
    if not x.is_floating_point():
        return sum(x, dim, keepdim, dtype=dtype, axis=axis, keepdims=keepdims)
    x = _ew.where(_ew.isnan(x), 0.0, x)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    x = _with_dtype(x, dtype)
    return NanSum.apply(x, _axes(dim, x, "nansum"), keepdim)


def nanmean(
    input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """Mean of the non-NaN elements."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    x = _with_dtype(x, dtype)
    _float_only(x, "nanmean", f"nanmean(): expected input to have floating point or complex "
                f"dtype but got {_legacy(x)}; convert first, e.g. x.float()")
    axes = _axes(dim, x, "nanmean")
    ok = ~_ew.isnan(x)
    total = Sum.apply(_ew.where(ok, x, 0.0), axes, keepdim)
    n = _make(_sum_arr(ok._data, axes, keepdim).astype(x._data.dtype))
    with _quiet(_backend.xp_of(x._data)):
        return total / n


# ---------------------------------------------------------------------------------------------
# prod


class Prod(Op):
    """out = prod over dim of x
    grad_x_i = grad * prod_{j != i} x_j  (= grad * out / x_i without zeros; with one zero in a
    slice only the zero gets the product of the others; with two or more zeros all get 0)"""

    @staticmethod
    def forward(ctx: Any, x: Any, axis: Any, keepdim: bool) -> Any:
        ctx.shape, ctx.axis, ctx.keepdim = x.shape, axis, keepdim
        out = x.prod(axis=axis, keepdims=keepdim, dtype=x.dtype)
        if _need(ctx):
            ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, out = ctx.saved
        xp = ctx.xp
        axes = None if ctx.axis is None else (ctx.axis,)
        g = _unreduce(grad, ctx.shape, axes, ctx.keepdim)
        rx = _raw(x)
        is0 = rx == 0
        if not is0.any():
            return g * _unreduce(out, ctx.shape, axes, ctx.keepdim) / x, None, None
        nz = is0.sum(axis=ctx.axis, keepdims=True)
        lone = is0 & (nz == 1)  # the only zero of its slice: gets the product of the others
        rest = ~is0 & (nz == 1)  # the others in such a slice: 0 (times a zero, kept for 2nd order)
        nonzero = nz == 0
        x_safe = xp.where(_lift(g, is0), 1, x)
        others = _call(ctx, Prod, x_safe, ctx.axis, True)  # product of the non-zero entries
        zero = xp.where(_lift(g, is0), x, 0).sum(axis=ctx.axis, keepdims=True)
        full = others / x_safe
        d = xp.where(_lift(g, lone), others,
                     xp.where(_lift(g, nonzero), full,
                              xp.where(_lift(g, rest), full * zero, 0)))
        return g * d, None, None


class ProdDim(Prod):
    """Product over one given dim (the rule is Prod's)."""

    node_name = "ProdBackward1"


def prod(
    input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """Product over one ``dim`` (all elements when None); integers and bools give int64."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    if dim is not None:
        _one(dim, x, "prod")  # (a bad dim raises before a bad dtype, as in PyTorch)
    x = _int_to_long(x) if dtype is None else _with_dtype(x, dtype)
    if dim is None:
        return Prod.apply(x, None, False)
    d = _one(dim, x, "prod")
    if x._data.ndim == 0:
        return Prod.apply(x, None, False)
    return ProdDim.apply(x, d, keepdim)


# ---------------------------------------------------------------------------------------------
# max / min / amax / amin / aminmax / argmax / argmin


def _even_share(x: Any, out_k: Any, axes: Any) -> Any:
    """1/k at the k positions of each slice equal to the selected value, 0 elsewhere."""
    xp = _backend.xp_of(x)
    mask = x == out_k
    cnt = mask.sum(axis=axes, keepdims=True)
    return mask.astype(x.dtype) / xp.maximum(cnt, 1).astype(x.dtype)


class _EvenSplit(Op):
    """Backward shared by value reductions without indices (amax, amin, max(), median()):
    grad_x = grad / k at the k positions equal to out (ties share evenly), 0 elsewhere"""

    @staticmethod
    def _value(ctx: Any, x: Any, axes: Any) -> Any:  # keepdim-shaped result
        raise NotImplementedError

    @staticmethod
    def forward(ctx: Any, x: Any, axes: Any, keepdim: bool) -> Any:
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        out_k = ctx._fn._value(ctx, x, axes)
        if _need(ctx):
            ctx.save_for_backward(x)
            ctx.out_k = out_k
        return out_k if keepdim else out_k.reshape(_reduced(x.shape, axes, False))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        share = _even_share(_raw(x), ctx.out_k, ctx.axes)
        g = _unreduce(grad, ctx.shape, ctx.axes, ctx.keepdim)
        return g * _lift(g, share), None, None


class AMax(_EvenSplit):
    """out = max over dims of x
    grad_x = grad / k at the k positions attaining the max (ties share evenly), 0 elsewhere"""

    node_name = "AmaxBackward0"

    @staticmethod
    def _value(ctx: Any, x: Any, axes: Any) -> Any:
        return x.max(axis=axes, keepdims=True)


class AMin(_EvenSplit):
    """out = min over dims of x
    grad_x = grad / k at the k positions attaining the min (ties share evenly), 0 elsewhere"""

    node_name = "AminBackward0"

    @staticmethod
    def _value(ctx: Any, x: Any, axes: Any) -> Any:
        return x.min(axis=axes, keepdims=True)


class MaxAll(AMax):
    """``max(x)`` of all elements (the rule is AMax's)."""

    node_name = "MaxBackward1"


class MinAll(AMin):
    """``min(x)`` of all elements (the rule is AMin's)."""

    node_name = "MinBackward1"


class _Select(Op):
    """Backward shared by value-selecting reductions along one dim that return indices:
    grad_x = grad placed at the returned index of each slice, 0 elsewhere"""

    @staticmethod
    def _pick(ctx: Any, x: Any, axis: int) -> tuple[Any, Any]:  # keepdim values, indices
        raise NotImplementedError

    @staticmethod
    def forward(ctx: Any, x: Any, axis: int, keepdim: bool) -> Any:
        ctx.shape, ctx.axis, ctx.keepdim = x.shape, axis, keepdim
        vals, idx = ctx._fn._pick(ctx, x, axis)
        if _need(ctx):
            ctx.idx = idx
        if not keepdim:
            shp = _reduced(x.shape, (axis,), False)
            vals, idx = vals.reshape(shp), idx.reshape(shp)
        vals, idx = _c_order(vals), _c_order(idx)
        ctx.mark_non_differentiable(idx)
        return vals, idx

    @staticmethod
    def backward(ctx: Any, grad: Any, _grad_idx: Any = None) -> Any:
        idx = ctx.idx
        axis = ctx.axis
        xp = _backend.xp_of(idx)
        onehot = _positions(xp, ctx.shape[axis], axis, len(ctx.shape)) == idx
        g = _unreduce(grad, ctx.shape, (axis,), ctx.keepdim)
        return g * _lift(g, onehot.astype(_raw(g).dtype)), None, None


def _first_nan(xp: Any, x: Any, axis: int, idx: Any) -> Any:
    """Where a slice holds NaN, point at its first NaN (PyTorch propagates NaN with its index)."""
    if x.dtype.kind != "f":
        return idx
    isn = xp.isnan(x)
    has = isn.any(axis=axis, keepdims=True)
    if not has.any():
        return idx
    return xp.where(has, isn.argmax(axis=axis, keepdims=True), idx)


class MaxDim(_Select):
    """(values, indices) = max of x along dim (first index of the max)
    grad_x = grad at the returned index, 0 elsewhere"""

    node_name = "MaxBackward0"

    @staticmethod
    def _pick(ctx: Any, x: Any, axis: int) -> tuple[Any, Any]:
        idx = x.argmax(axis=axis, keepdims=True)
        return ctx.xp.take_along_axis(x, idx, axis), idx


class MinDim(_Select):
    """(values, indices) = min of x along dim (first index of the min)
    grad_x = grad at the returned index, 0 elsewhere"""

    node_name = "MinBackward0"

    @staticmethod
    def _pick(ctx: Any, x: Any, axis: int) -> tuple[Any, Any]:
        idx = x.argmin(axis=axis, keepdims=True)
        return ctx.xp.take_along_axis(x, idx, axis), idx


def _extreme_dim(x: Any, dim: Any, keepdim: bool, op: Any, fname: str, rtype: Any) -> Any:
    d = _one(dim, x, fname)
    if x._data.ndim == 0:
        v, i = op.apply(x.reshape(1), 0, False)
        return rtype(v, i)
    _nonempty(x, (d,), fname)
    return rtype(*op.apply(x, d, keepdim))


def amax(
    input: Any, dim: Any = (), keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """Maximum over ``dim`` (all dims by default); the gradient is shared evenly among ties."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    axes = _axes(dim, x, "amax")
    _nonempty(x, axes, "amax")  # (no dim given: PyTorch's "specify the reduction dim" error)
    return AMax.apply(x, axes, keepdim)


def amin(
    input: Any, dim: Any = (), keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """Minimum over ``dim`` (all dims by default); the gradient is shared evenly among ties."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    axes = _axes(dim, x, "amin")
    _nonempty(x, axes, "amin")  # (no dim given: PyTorch's "specify the reduction dim" error)
    return AMin.apply(x, axes, keepdim)


def max(  # noqa: A001 - PyTorch's name
    input: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None, other: Any = None,
) -> Any:
    """``max(x)``: the largest value; ``max(x, dim)``: ``(values, indices)``; ``max(x, y)``:
    elementwise maximum."""
    x = _t(input)
    if other is not None or _is_t(dim):
        return _ew.maximum(x, other if other is not None else dim)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    if dim is None:
        _nonempty(x, None, "max")
        return MaxAll.apply(x, None, False)
    return _extreme_dim(x, dim, keepdim, MaxDim, "max", max_t)


def min(  # noqa: A001 - PyTorch's name
    input: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None, other: Any = None,
) -> Any:
    """``min(x)``: the smallest value; ``min(x, dim)``: ``(values, indices)``; ``min(x, y)``:
    elementwise minimum."""
    x = _t(input)
    if other is not None or _is_t(dim):
        return _ew.minimum(x, other if other is not None else dim)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    if dim is None:
        _nonempty(x, None, "min")
        return MinAll.apply(x, None, False)
    return _extreme_dim(x, dim, keepdim, MinDim, "min", min_t)


def aminmax(
    input: Any, *, dim: Any = None, keepdim: bool = False, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """``(min, max)`` over one ``dim`` (all elements when None), as a named tuple."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    if dim is None:
        axes = None
        _nonempty(x, None, "aminmax")
    else:
        axes = (_one(dim, x, "aminmax"),) if x._data.ndim else ()
        _nonempty(x, axes, "aminmax")
    return aminmax_t(AMin.apply(x, axes, keepdim), AMax.apply(x, axes, keepdim))


def _arg(x: Any, dim: Any, keepdim: bool, fname: str, largest: bool) -> Any:
    a = x._data
    if a.dtype == bool:
        raise RuntimeError(
            f"{fname}(): does not support bool input; convert first, e.g. x.int().{fname}()"
        )
    if dim is None:
        if a.size == 0:
            raise IndexError(
                f"{fname}(): Expected reduction dim to be specified for input.numel() == 0 "
                f"(input shape {tuple(a.shape)}); pass dim="
            )
        flat = a.reshape(-1)
        i = flat.argmax() if largest else flat.argmin()
        out = _backend.xp_of(a).asarray(i, dtype="int64")
        return _make(out.reshape((1,) * a.ndim) if keepdim else out)
    d = _one(dim, x, fname)
    if a.ndim == 0:
        return _make(_backend.xp_of(a).zeros((), dtype="int64"))
    _nonempty(x, (d,), fname)
    i = a.argmax(axis=d, keepdims=keepdim) if largest else a.argmin(axis=d, keepdims=keepdim)
    return _make(i.astype("int64", copy=False))


def argmax(
    input: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """Index of the first maximum along ``dim`` (of the flattened tensor when None)."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    return _arg(x, dim, keepdim, "argmax", True)


def argmin(
    input: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """Index of the first minimum along ``dim`` (of the flattened tensor when None)."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    return _arg(x, dim, keepdim, "argmin", False)


# ---------------------------------------------------------------------------------------------
# var / std


def _dof(n: int, correction: float, fname: str) -> float:
    dof = n - correction
    if dof <= 0:
        warnings.warn(
            f"{fname}(): degrees of freedom is <= 0. Correction should be strictly less than the "
            f"reduction factor (input numel divided by output numel); got {n} elements and "
            f"correction={correction}.",
            stacklevel=4,
        )
        return 0.0
    return dof


class Var(Op):
    """out = sum over dims of (x - mean)^2 / (n - correction)
    grad_x = grad * 2 (x - mean) / (n - correction)"""

    @staticmethod
    def forward(ctx: Any, x: Any, axes: Any, correction: float, keepdim: bool) -> Any:
        n = _count(x.shape, axes)
        ctx.shape, ctx.axes, ctx.keepdim, ctx.n = x.shape, axes, keepdim, n
        ctx.dof = _dof(n, correction, "var")
        ctx.raw_dof = n - correction  # the backward divides by it unclamped, as PyTorch
        xw = _wide(x)
        with _quiet(ctx.xp):
            d = xw - xw.sum(axis=axes, keepdims=True) / (n or 0.0)
            out = _narrow((d * d).sum(axis=axes, keepdims=keepdim) / ctx.dof, x.dtype)
        if _need(ctx):
            ctx.save_for_backward(x)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        g = _unreduce(grad, ctx.shape, ctx.axes, ctx.keepdim)
        mu = x.sum(axis=ctx.axes, keepdims=True) / ctx.n
        scale = 2.0 / ctx.raw_dof if ctx.raw_dof else math.inf
        return g * (x - mu) * scale, None, None, None


class Std(Op):
    """out = sqrt(var(x))
    grad_x = grad * (x - mean) / ((n - correction) * out)   (0 where out == 0, as PyTorch)"""

    @staticmethod
    def forward(ctx: Any, x: Any, axes: Any, correction: float, keepdim: bool) -> Any:
        n = _count(x.shape, axes)
        ctx.shape, ctx.axes, ctx.keepdim, ctx.n = x.shape, axes, keepdim, n
        ctx.dof = _dof(n, correction, "std")
        ctx.raw_dof = n - correction  # the backward divides by it unclamped, as PyTorch
        xw = _wide(x)
        with _quiet(ctx.xp):
            d = xw - xw.sum(axis=axes, keepdims=True) / (n or 0.0)
            out = _narrow(ctx.xp.sqrt((d * d).sum(axis=axes, keepdims=keepdim) / ctx.dof), x.dtype)
        if _need(ctx):
            ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, out = ctx.saved
        xp = ctx.xp
        g = _unreduce(grad, ctx.shape, ctx.axes, ctx.keepdim)
        o = _unreduce(out, ctx.shape, ctx.axes, ctx.keepdim)
        zero = _lift(g, _raw(o) == 0)
        inv = xp.where(zero, 0, 1 / xp.where(zero, 1, o))
        mu = x.sum(axis=ctx.axes, keepdims=True) / ctx.n
        scale = 1.0 / ctx.raw_dof if ctx.raw_dof else math.inf
        return g * inv * (x - mu) * scale, None, None, None


def _var_args(x: Any, dim: Any, unbiased: Any, correction: Any, fname: str) -> tuple:
    if isinstance(dim, bool):  # var(x, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(
            f"{fname}(): pass either unbiased= (legacy) or correction=, not both"
        )
    if correction is None:
        correction = 1 if unbiased is None else int(bool(unbiased))
    if not x.is_floating_point():
        raise RuntimeError(
            f"std and var only support floating point and complex dtypes ({fname}() got "
            f"{_legacy(x)}); convert first, e.g. x.float()"
        )
    return _axes(dim, x, fname), correction


def var(
    input: Any, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
    correction: float | None = None, axis: Any = None, keepdims: bool | None = None,
) -> Any:
    """Variance over ``dim`` with Bessel's ``correction`` (default 1; legacy ``unbiased=``)."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    axes, c = _var_args(x, dim, unbiased, correction, "var")
    return Var.apply(x, axes, c, keepdim)


def std(
    input: Any, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
    correction: float | None = None, axis: Any = None, keepdims: bool | None = None,
) -> Any:
    """Standard deviation over ``dim`` with ``correction`` (default 1; legacy ``unbiased=``)."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    axes, c = _var_args(x, dim, unbiased, correction, "std")
    return Std.apply(x, axes, c, keepdim)


def var_mean(
    input: Any, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
    correction: float | None = None, axis: Any = None, keepdims: bool | None = None,
) -> tuple[Any, Any]:
    """``(var, mean)`` over ``dim``."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    v = var(x, dim, unbiased, keepdim, correction=correction)
    return v, Mean.apply(x, _axes(dim, x, "var_mean"), keepdim)


def std_mean(
    input: Any, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
    correction: float | None = None, axis: Any = None, keepdims: bool | None = None,
) -> tuple[Any, Any]:
    """``(std, mean)`` over ``dim``."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    s = std(x, dim, unbiased, keepdim, correction=correction)
    return s, Mean.apply(x, _axes(dim, x, "std_mean"), keepdim)


# ---------------------------------------------------------------------------------------------
# norms


class Norm(Op):
    """out = (sum over dims of |x|^p)^(1/p)   (p = 0 counts the non-zeros)
    grad_x = grad * x / out                             for p = 2
    grad_x = grad * sign(x) |x|^(p-1) / out^(p-1)       otherwise
    (0 where out == 0 or x == 0, as PyTorch; p = 0 has zero gradient)"""

    node_name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, p: float, axes: Any, keepdim: bool) -> Any:
        xp = ctx.xp
        ctx.shape, ctx.axes, ctx.keepdim, ctx.p = x.shape, axes, keepdim, p
        xw = _wide(x)
        if p == 2:
            out = _narrow(xp.sqrt((xw * xw).sum(axis=axes, keepdims=keepdim)), x.dtype)
        elif p == 0:
            out = (x != 0).sum(axis=axes, keepdims=keepdim).astype(x.dtype)
        else:
            with _quiet(xp):
                out = (xp.abs(xw) ** p).sum(axis=axes, keepdims=keepdim) ** (1.0 / p)
            out = _narrow(out, x.dtype)
        if _need(ctx) and p != 0:
            ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        xp, p = ctx.xp, ctx.p
        g = _unreduce(grad, ctx.shape, ctx.axes, ctx.keepdim)
        if p == 0:  # no gradient at all (PyTorch leaves x.grad None), not a zero one
            return None, None, None, None
        x, out = ctx.saved
        o = _unreduce(out, ctx.shape, ctx.axes, ctx.keepdim)
        zero = _lift(g, _raw(o) == 0)
        o_safe = xp.where(zero, 1, o)
        if p == 2:
            return g * x * xp.where(zero, 0, 1 / o_safe), None, None, None
        ax = xp.abs(x)
        ax_safe = xp.where(_lift(g, _raw(x) == 0), 1, ax)  # sign(0) = 0 zeroes these anyway
        d = xp.sign(x) * ax_safe ** (p - 1) * o_safe ** (1 - p)
        return g * xp.where(zero, 0, d), None, None, None


def vector_norm(
    x: Any, ord: float = 2, dim: Any = None, keepdim: bool = False, dtype: Any = None,
) -> Any:
    """The vector ``ord``-norm over ``dim`` (all elements when None), as torch.linalg.vector_norm.

    ``ord`` may be any real number or +-inf: inf is max |x|, -inf is min |x|, 0 counts the
    non-zeros, and p gives (sum |x|^p)^(1/p).
    """
    x = _t(x)
    if not x.is_floating_point():
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
            f"{_legacy(x)}; convert first, e.g. x.float()"
        )
    x = _with_dtype(x, dtype)
    if isinstance(ord, str):
        raise RuntimeError(
            f"linalg.vector_norm: ord must be a number (got {ord!r}); use torch.linalg.matrix_norm "
            "for matrix norms"
        )
    p = float(ord)
    axes = _axes(dim, x, "linalg.vector_norm")
    if p < 0 or math.isinf(p):
        red = tuple(range(x._data.ndim)) if axes is None else axes
        if x._data.size == 0 and (axes is None or _b.any(x._data.shape[a] == 0 for a in red)):
            name = "inf" if p == math.inf else "-inf" if p == -math.inf else f"{ord}"
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {name} norm on an empty tensor because "
                f"the operation does not have an identity (input shape {tuple(x._data.shape)})"
            )
    if p == math.inf:
        return _NormMax.apply(_ew.abs(x), axes, keepdim)
    if p == -math.inf:
        return _NormMin.apply(_ew.abs(x), axes, keepdim)
    if p == 1:
        return _NormSum.apply(_ew.abs(x), axes, keepdim)
    return Norm.apply(x, p, axes, keepdim)


class _NormMax(AMax):
    """The inf-norm's last step, max |x| (same rule as AMax; PyTorch's vector_norm node)."""

    node_name = "LinalgVectorNormBackward0"


class _NormMin(AMin):
    """The -inf-norm's last step, min |x| (same rule as AMin)."""

    node_name = "LinalgVectorNormBackward0"


class _NormSum(Sum):
    """The 1-norm's last step, sum |x| (same rule as Sum)."""

    node_name = "LinalgVectorNormBackward0"


def norm(
    input: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False, out: Any = None,
    dtype: Any = None,
) -> Any:
    """Vector or Frobenius norm (``p`` = 'fro' (default), 'nuc', inf, -inf, 0, 1, 2 or any real).

    A numeric ``p`` computes the vector norm over ``dim`` (all elements when None), even for
    two dims; 'fro' is the 2-norm over at most two dims; 'nuc' is the nuclear norm of a matrix.
    """
    x = _t(input)
    if p is None:
        p = "fro"
    if not isinstance(p, str | int | float | np.number):
        raise TypeError(
            f"norm(): argument 'p' must be a number or 'fro'/'nuc', not {type(p).__name__} (to "
            "pick dims pass dim=, e.g. x.norm(dim=(0,)))"
        )
    if isinstance(p, str):
        if p == "fro":
            if isinstance(dim, tuple | list) and len(dim) > 2:
                raise RuntimeError(
                    f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}"
                )
            res = vector_norm(x, 2, dim, keepdim, dtype)
        elif p == "nuc":
            from . import linalg as _la

            fn = getattr(_la, "matrix_norm", None)
            if fn is None:
                raise NotImplementedError("norm(p='nuc') needs ember.linalg.matrix_norm")
            res = fn(_with_dtype(x, dtype), "nuc", (-2, -1) if dim is None else dim, keepdim)
        else:
            raise RuntimeError(f"norm(): unknown norm type {p!r}; use 'fro', 'nuc' or a number")
    else:
        res = vector_norm(x, p, dim, keepdim, dtype)
    if out is not None:
        out.copy_(res)
        return out
    return res


# ---------------------------------------------------------------------------------------------
# logsumexp


class LogSumExp(Op):
    """out = m + log(sum over dims of exp(x - m)), m = max (0 where the max is not finite)
    grad_x = grad * exp(x - out)"""

    node_name = "LogsumexpBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, axes: Any, keepdim: bool) -> Any:
        xp = ctx.xp
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        if _count(x.shape, axes) == 0:
            out = xp.full(_reduced(x.shape, axes, keepdim), -math.inf, dtype=x.dtype)
        else:
            with _quiet(xp):
                m = x.max(axis=axes, keepdims=True)
                m = xp.where(xp.isfinite(m), m, 0)  # all -inf (or inf/nan) rows: no shift
                s = _sum_arr(xp.exp(x - m), axes, True)
                out = xp.log(s) + m
            if not keepdim:
                out = out.reshape(_reduced(x.shape, axes, False))
        if _need(ctx):
            ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, out = ctx.saved
        g = _unreduce(grad, ctx.shape, ctx.axes, ctx.keepdim)
        o = _unreduce(out, ctx.shape, ctx.axes, ctx.keepdim)
        with _quiet(ctx.xp):  # inf - inf at infinite entries gives NaN, as in PyTorch
            return g * ctx.xp.exp(x - o), None, None


def logsumexp(
    input: Any, dim: Any, keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """``log(sum(exp(x)))`` over ``dim``, computed stably (integers compute in float)."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    x = _ew._float_unary(x)
    return LogSumExp.apply(x, _axes(dim, x, "logsumexp"), keepdim)


# ---------------------------------------------------------------------------------------------
# cumulative ops


class CumSum(Op):
    """out_i = sum_{j <= i} x_j along dim          grad_x_j = sum_{i >= j} grad_i"""

    node_name = "CumsumBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, axis: int) -> Any:
        ctx.axis = axis
        return ctx.xp.cumsum(x, axis=axis, dtype=x.dtype)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return _call(ctx, RevCumSum, grad, ctx.axis), None


class RevCumSum(Op):
    """out_j = sum_{i >= j} x_i along dim          grad_x_i = sum_{j <= i} grad_j"""

    @staticmethod
    def forward(ctx: Any, x: Any, axis: int) -> Any:
        xp = ctx.xp
        ctx.axis = axis
        return xp.flip(xp.cumsum(xp.flip(x, axis), axis=axis, dtype=x.dtype), axis)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return _call(ctx, CumSum, grad, ctx.axis), None


class CumProd(Op):
    """out_i = prod_{j <= i} x_j along dim
    grad_x_k = sum_{i >= k} grad_i prod_{j <= i, j != k} x_j, that is
    revcumsum(grad * out)_k / x_k before a slice's first zero, the same sum with that zero
    skipped at the first zero, and 0 after it"""

    node_name = "CumprodBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, axis: int) -> Any:
        ctx.axis = axis
        out = ctx.xp.cumprod(x, axis=axis, dtype=x.dtype)
        if _need(ctx):
            ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, out = ctx.saved
        xp, axis = ctx.xp, ctx.axis
        rx = _raw(x)
        is0 = rx == 0
        if not is0.any():
            return _call(ctx, RevCumSum, grad * out, axis) / x, None
        first = is0.argmax(axis=axis, keepdims=True)
        has = is0.any(axis=axis, keepdims=True)
        pos = _positions(_backend.xp_of(rx), rx.shape[axis], axis, rx.ndim)
        before = _lift(grad, (pos < first) | ~has)
        at = _lift(grad, (pos == first) & has)
        term1 = _call(ctx, RevCumSum, grad * out, axis) / xp.where(before, x, 1)
        skipped = _call(ctx, CumProd, xp.where(at, 1, x), axis)  # products without that zero
        term2 = _call(ctx, RevCumSum, grad * skipped, axis)
        return xp.where(before, term1, xp.where(at, term2, 0)), None


class _ScatterAdd(Op):
    """out_k = sum of g_i over the i with idx_i == k along dim          grad_g = grad at idx"""

    @staticmethod
    def forward(ctx: Any, g: Any, idx: Any, axis: int) -> Any:
        xp = ctx.xp
        ctx.idx, ctx.axis = idx, axis
        if g.size == 0:
            return xp.zeros_like(g)
        gm = xp.moveaxis(g, axis, -1)
        im = xp.moveaxis(idx, axis, -1)
        n = gm.shape[-1]
        m = gm.size // n
        flat = (im.reshape(m, n) + xp.arange(m).reshape(m, 1) * n).reshape(-1)
        out = xp.bincount(flat, weights=gm.reshape(-1), minlength=m * n)
        return xp.moveaxis(out.astype(g.dtype).reshape(gm.shape), -1, axis)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return _call(ctx, _Gather, grad, ctx.idx, ctx.axis), None, None


class _Gather(Op):
    """out_i = g at idx_i along dim          grad_g = grad scatter-added at idx"""

    @staticmethod
    def forward(ctx: Any, g: Any, idx: Any, axis: int) -> Any:
        ctx.idx, ctx.axis = idx, axis
        return ctx.xp.take_along_axis(g, idx, axis)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return _call(ctx, _ScatterAdd, grad, ctx.idx, ctx.axis), None, None


class CumMax(Op):
    """(values, indices) = running max along dim (indices: the last position among ties)
    grad_x_j = sum of grad_i over the i whose running max is x_j"""

    node_name = "CummaxBackward0"

    _ufunc = "maximum"

    @staticmethod
    def forward(ctx: Any, x: Any, axis: int) -> Any:
        xp = ctx.xp
        ctx.axis = axis
        vals = getattr(xp, ctx._fn._ufunc).accumulate(x, axis=axis)
        mark = x == vals  # a new running extreme (or a tie with it) starts here
        if x.dtype.kind == "f":
            mark |= xp.isnan(x)
        pos = _positions(xp, x.shape[axis], axis, x.ndim)
        idx = _c_order(xp.maximum.accumulate(xp.where(mark, pos, 0), axis=axis).astype("int64"))
        if _need(ctx):
            ctx.idx = idx
        ctx.mark_non_differentiable(idx)
        return _c_order(vals), idx

    @staticmethod
    def backward(ctx: Any, grad: Any, _grad_idx: Any = None) -> Any:
        return _call(ctx, _ScatterAdd, grad, ctx.idx, ctx.axis), None


class CumMin(CumMax):
    """(values, indices) = running min along dim (indices: the last position among ties)
    grad_x_j = sum of grad_i over the i whose running min is x_j"""

    node_name = "CumminBackward0"

    _ufunc = "minimum"


def _cum_dim(x: Any, dim: Any, axis: Any, fname: str) -> int:
    if axis is not None:
        dim = axis
    if dim is None:
        raise TypeError(f'{fname}() missing 1 required positional arguments: "dim"')
    return _one(dim, x, fname)


def _cumulative(op: Any, x: Any, d: int) -> Any:
    if x._data.ndim == 0:
        return op.apply(x.reshape(1), 0).reshape(())
    return op.apply(x, d)


def cumsum(input: Any, dim: Any = None, *, dtype: Any = None, axis: Any = None) -> Any:
    """Cumulative sum along ``dim``; integers and bools accumulate in int64."""
    x = _t(input)
    d = _cum_dim(x, dim, axis, "cumsum")
    x = _int_to_long(x) if dtype is None else _with_dtype(x, dtype)
    return _cumulative(CumSum, x, d)


def cumprod(input: Any, dim: Any = None, *, dtype: Any = None, axis: Any = None) -> Any:
    """Cumulative product along ``dim``; integers and bools accumulate in int64."""
    x = _t(input)
    d = _cum_dim(x, dim, axis, "cumprod")
    x = _int_to_long(x) if dtype is None else _with_dtype(x, dtype)
    return _cumulative(CumProd, x, d)


def _cum_extreme(op: Any, rtype: Any, x: Any, d: int) -> Any:
    if x._data.ndim == 0:
        v, i = op.apply(x.reshape(1), 0)
        return rtype(v.reshape(()), i.reshape(()))
    return rtype(*op.apply(x, d))


def cummax(input: Any, dim: Any = None, *, axis: Any = None) -> Any:
    """Running maximum along ``dim``: ``(values, indices)``."""
    x = _t(input)
    return _cum_extreme(CumMax, cummax_t, x, _cum_dim(x, dim, axis, "cummax"))


def cummin(input: Any, dim: Any = None, *, axis: Any = None) -> Any:
    """Running minimum along ``dim``: ``(values, indices)``."""
    x = _t(input)
    return _cum_extreme(CumMin, cummin_t, x, _cum_dim(x, dim, axis, "cummin"))


# ---------------------------------------------------------------------------------------------
# all / any / count_nonzero (no gradient)


def _logical_reduce(x: Any, dim: Any, keepdim: bool, fname: str) -> Any:
    a = x._data
    axes = _axes(dim, x, fname, empty_all=False)
    r = a.all(axis=axes, keepdims=keepdim) if fname == "all" else a.any(axis=axes, keepdims=keepdim)
    xp = _backend.xp_of(a)
    r = xp.asarray(r)
    return _make(r.astype("uint8") if a.dtype.name == "uint8" else r)


def all(  # noqa: A001 - PyTorch's name
    input: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """True where every element over ``dim`` is non-zero (uint8 in gives uint8, as PyTorch)."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    return _logical_reduce(x, dim, keepdim, "all")


def any(  # noqa: A001 - PyTorch's name
    input: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """True where some element over ``dim`` is non-zero (uint8 in gives uint8, as PyTorch)."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    return _logical_reduce(x, dim, keepdim, "any")


def count_nonzero(input: Any, dim: Any = None, *, axis: Any = None) -> Any:
    """Number of non-zero elements over ``dim`` (int64)."""
    x = _t(input)
    if axis is not None:
        dim = axis
    a = x._data
    axes = _axes(dim, x, "count_nonzero")
    return _make(_backend.xp_of(a).asarray((a != 0).sum(axis=axes)).astype("int64"))


# ---------------------------------------------------------------------------------------------
# median / nanmedian / mode


def _nan_fill(xp: Any, x: Any) -> Any:
    if x.dtype.kind != "f":
        raise RuntimeError(
            f"median() of an empty {x.dtype} tensor has no value; reduce a non-empty tensor"
        )
    return xp.full((1,) * x.ndim, math.nan, dtype=x.dtype)


class MedianAll(_EvenSplit):
    """out = the lower median of all elements (NaN if any is NaN)
    grad_x = grad / k at the k positions equal to the median, 0 elsewhere"""

    node_name = "MedianBackward0"

    @staticmethod
    def _value(ctx: Any, x: Any, axes: Any) -> Any:
        xp = ctx.xp
        flat = x.reshape(-1)
        if flat.size == 0:
            return _nan_fill(xp, x)
        if x.dtype.kind == "f" and xp.isnan(flat).any():
            return _nan_fill(xp, x)
        k = (flat.size - 1) // 2
        return xp.partition(flat, k)[k : k + 1].reshape((1,) * x.ndim)


class NanMedianAll(_EvenSplit):
    """out = the lower median of the non-NaN elements (NaN if there are none)
    grad_x = grad / k at the k positions equal to the median, 0 elsewhere"""

    node_name = "NanmedianBackward0"

    @staticmethod
    def _value(ctx: Any, x: Any, axes: Any) -> Any:
        xp = ctx.xp
        flat = x.reshape(-1)
        if x.dtype.kind == "f":
            flat = flat[~xp.isnan(flat)]
        if flat.size == 0:
            return _nan_fill(xp, x)
        k = (flat.size - 1) // 2
        return xp.partition(flat, k)[k : k + 1].reshape((1,) * x.ndim)


class MedianDim(_Select):
    """(values, indices) = lower median of x along dim (NaN and its index if the slice has one)
    grad_x = grad at the returned index, 0 elsewhere"""

    node_name = "MedianBackward1"

    @staticmethod
    def _pick(ctx: Any, x: Any, axis: int) -> tuple[Any, Any]:
        xp = ctx.xp
        k = (x.shape[axis] - 1) // 2
        idx = _slice_at(xp.argpartition(x, k, axis=axis), axis, k)
        idx = _first_nan(xp, x, axis, idx)
        return xp.take_along_axis(x, idx, axis), idx


class NanMedianDim(_Select):
    """(values, indices) = lower median of the non-NaN values of x along dim
    grad_x = grad at the returned index, 0 elsewhere"""

    node_name = "NanmedianBackward1"

    @staticmethod
    def _pick(ctx: Any, x: Any, axis: int) -> tuple[Any, Any]:
        xp = ctx.xp
        order = xp.argsort(x, axis=axis, kind="stable")  # NaNs sort last
        if x.dtype.kind == "f":
            m = (~xp.isnan(x)).sum(axis=axis, keepdims=True)
        else:
            m = xp.full(_kept(x.shape, (axis,)), x.shape[axis])
        k = xp.where(m == 0, (x.shape[axis] - 1) // 2, (m - 1) // 2)  # all-NaN: the middle one
        idx = xp.take_along_axis(order, k, axis)
        return xp.take_along_axis(x, idx, axis), idx


class ModeDim(_Select):
    """(values, indices) = the most frequent value along dim (the smallest among equally
    frequent ones) and the last index where it occurs
    grad_x = grad at the returned index, 0 elsewhere"""

    node_name = "ModeBackward0"

    @staticmethod
    def _pick(ctx: Any, x: Any, axis: int) -> tuple[Any, Any]:
        xp = ctx.xp
        xm = xp.moveaxis(x, axis, -1)
        n = xm.shape[-1]
        s = xp.sort(xm, axis=-1)
        new = xp.ones(s.shape, dtype=bool)
        new[..., 1:] = s[..., 1:] != s[..., :-1]  # a run of equal values starts here
        pos = xp.arange(n)
        start = xp.maximum.accumulate(xp.where(new, pos, 0), axis=-1)
        run = pos - start  # how far into its run each sorted element is
        best = run.argmax(axis=-1)[..., None]  # end of the first longest run = smallest value
        val = xp.take_along_axis(s, best, -1)
        same = xm == val
        if x.dtype.kind == "f":
            same |= xp.isnan(xm) & xp.isnan(val)
        idx = xp.where(same, pos, 0).max(axis=-1, keepdims=True).astype("int64")
        return xp.moveaxis(val, -1, axis), xp.moveaxis(idx, -1, axis)


def median(
    input: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """``median(x)``: lower median of all elements; ``median(x, dim)``: ``(values, indices)``."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    if dim is None:
        return MedianAll.apply(x, None, False)
    return _extreme_dim(x, dim, keepdim, MedianDim, "median", median_t)


def nanmedian(
    input: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """Like ``median`` but ignoring NaN values."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    if dim is None:
        return NanMedianAll.apply(x, None, False)
    return _extreme_dim(x, dim, keepdim, NanMedianDim, "nanmedian", nanmedian_t)


def mode(
    input: Any, dim: int = -1, keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """Most frequent value along ``dim`` (the smallest on ties) and its last index."""
    x = _t(input)
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    return _extreme_dim(x, dim, keepdim, ModeDim, "mode", mode_t)


# ---------------------------------------------------------------------------------------------
# softmax / log_softmax


class Softmax(Op):
    """y = exp(x - max) / sum(exp(x - max)) along dim          grad_x = y * (grad - sum(grad * y))"""

    @staticmethod
    def forward(ctx: Any, x: Any, axis: int) -> Any:
        xp = ctx.xp
        ctx.axis = axis
        if x.shape[axis] == 0:
            out = x.copy()
        else:
            with _quiet(xp):  # an all -inf row gives NaN, as in PyTorch
                out = xp.exp(x - x.max(axis=axis, keepdims=True))
                out /= _sum_arr(out, axis, True)
        if _need(ctx):
            ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (y,) = ctx.saved
        return y * (grad - (grad * y).sum(axis=ctx.axis, keepdims=True)), None


class LogSoftmax(Op):
    """y = x - max - log(sum(exp(x - max))) along dim          grad_x = grad - exp(y) * sum(grad)"""

    @staticmethod
    def forward(ctx: Any, x: Any, axis: int) -> Any:
        xp = ctx.xp
        ctx.axis = axis
        if x.shape[axis] == 0:
            out = x.copy()
        else:
            with _quiet(xp):
                shifted = x - x.max(axis=axis, keepdims=True)
                out = shifted - xp.log(_sum_arr(xp.exp(shifted), axis, True))
        if _need(ctx):
            ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (y,) = ctx.saved
        return grad - ctx.xp.exp(y) * grad.sum(axis=ctx.axis, keepdims=True), None


def _softmax_dim(x: Any, dim: Any, fname: str) -> int:
    if dim is None:  # PyTorch's deprecated implicit choice
        nd = x._data.ndim
        dim = 0 if nd in (0, 1, 3) else 1
        warnings.warn(
            f"Implicit dimension choice for {fname} has been deprecated. Change the call to "
            "include dim=X as an argument.",
            stacklevel=3,
        )
    return _one(dim, x, fname)


def _softmax_like(op: Any, input: Any, dim: Any, dtype: Any, fname: str) -> Any:
    x = _t(input)
    if x._data.size == 0 and not (x.is_floating_point() and (
            dtype is None or _dtype.to_dtype(dtype).is_floating_point)):
        # PyTorch returns an empty tensor (of the integer/bool dtype) rather than raising
        _softmax_dim(x, dim, fname)
        return _make((x._data if dtype is None else _ew.cast(x.detach(), _dtype.to_dtype(
            dtype))._data).copy())
    if dtype is not None and not _dtype.to_dtype(dtype).is_floating_point:
        raise NotImplementedError(
            f'"{fname}" not implemented for \'{_LEGACY_NAMES.get(_dtype.to_dtype(dtype).np.name)}'
            "': pass a floating dtype=, e.g. dtype=torch.float32"
        )
    x = _with_dtype(_t(input), dtype)
    if not x.is_floating_point():
        raise NotImplementedError(
            f'"{fname}" not implemented for \'{_legacy(x)}\': convert first, e.g. x.float(), '
            "or pass dtype=torch.float32"
        )
    d = _softmax_dim(x, dim, fname)
    if x._data.ndim == 0:
        return op.apply(x.reshape(1), 0).reshape(())
    return op.apply(x, d)


def softmax(input: Any, dim: Any = None, dtype: Any = None) -> Any:
    """``exp(x) / sum(exp(x))`` along ``dim``, computed stably (``dtype`` casts first)."""
    return _softmax_like(Softmax, input, dim, dtype, "softmax")


def log_softmax(input: Any, dim: Any = None, dtype: Any = None) -> Any:
    """``x - logsumexp(x)`` along ``dim``, computed stably (``dtype`` casts first)."""
    return _softmax_like(LogSoftmax, input, dim, dtype, "log_softmax")


def _contiguous_forward(op: Any) -> None:
    """Make ``op.forward``'s single-array result C-ordered (see :func:`_c_order`)."""
    fwd = op.forward

    def forward(ctx: Any, *args: Any) -> Any:
        out = fwd(ctx, *args)
        return out if type(out) is tuple else _c_order(out)

    forward.__doc__ = fwd.__doc__
    op.forward = staticmethod(forward)


# Every reduction's output is contiguous, as PyTorch's (the tuple-returning ops, which mark
# their indices non-differentiable by identity, order their outputs themselves).
for _op in [v for v in list(globals().values())
            if isinstance(v, type) and issubclass(v, Op) and v.__module__ == __name__
            and "forward" in v.__dict__]:
    _contiguous_forward(_op)
del _op
