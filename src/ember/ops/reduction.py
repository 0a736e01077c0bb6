"""Reductions (torch's "Reduction Ops"): sum, mean, nansum, nanmean, prod, max/min, amax/amin,
aminmax, argmax/argmin, all/any, count_nonzero.

Their neighbours: var/std, norms, logsumexp, median and mode in ``reduction_stats.py``; the
cumulative ops in ``cumulative.py``; softmax in ``nn/activation.py``; what they share (dim
handling, keepdim shapes, dtype rules) in ``_reduce.py``.

- A reduction's forward saves its *returned* output when the derivative is expressed by it, so
  under ``create_graph=True`` the saved value comes back as the differentiable output tensor.
- Selecting reductions (``max(x, dim)``...) return PyTorch's named tuples ``(values,
  indices)``; the gradient goes to the selected index only. Value reductions without an index
  (``amax``, ``max()``) share the gradient evenly among ties, as PyTorch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .. import _kernels_loader as _kernels
from .._tensor_base import TensorBase, data_of
from ..autograd.function import Op
from . import _out, return_types
from . import comparison as _cmp
from . import pointwise_piecewise as _pp
from ._autocast import cast as _amp_cast
from ._autocast import flag as _amp
from ._promote import _unordered, conjugated
from ._reduce import (
    _axes,
    _count,
    _float_only,
    _int_to_long,
    _lift,
    _make,
    _narrow,
    _need,
    _nonempty,
    _one,
    _positions,
    _quiet,
    _reduced,
    _sum_arr,
    _t,
    _unreduce,
    _wide,
    _with_dtype,
    make_outputs_contiguous,
)

__all__ = [
    "sum", "mean", "nansum", "nanmean", "prod", "max", "min", "amax", "amin", "aminmax",
    "argmax", "argmin", "all", "any", "count_nonzero",
]


# ---------------------------------------------------------------------------------------------
# sum, mean, nansum, nanmean


def sum(  # noqa: A001 - PyTorch's name
    input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, out: Any = None,
) -> Any:
    """Sum over ``dim`` (all dims when None); integers and bools sum to int64."""
    if _amp.active and dtype is None:
        (input,) = _amp_cast("sum", input)
    x = _t(input)
    x = _int_to_long(x) if dtype is None else _with_dtype(x, dtype)
    result = (Sum if dim is None else SumDim).apply(x, _axes(dim, x, "sum"), keepdim)
    return result if out is None else _out.write(out, _out_dtype(out, result, dtype, "sum"), "sum")


def mean(
    input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, out: Any = None,
) -> Any:
    """Arithmetic mean over ``dim``; integer inputs need ``dtype=`` (as in PyTorch)."""
    x = _t(input)
    x = _with_dtype(x, dtype)
    if not (x.is_floating_point() or x._data.dtype.kind == "c"):
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {_dtype.legacy_name(x.dtype)}. Convert first, e.g. x.float().mean(), or pass "
            "dtype=torch.float32"
        )
    result = (Mean if dim is None else MeanDim).apply(x, _axes(dim, x, "mean"), keepdim)
    return result if out is None else _out.write(out, _out_dtype(out, result, dtype, "mean"), "mean")


def nansum(
    input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, out: Any = None,
) -> Any:
    """Sum treating NaN as zero (the gradient at NaN positions is 0)."""
    x = _t(input)
    if not x.is_floating_point():
        if x.is_complex():
            _nansum_complex(x, dtype)
        return sum(x, dim, keepdim, dtype=dtype, out=out)
    if dtype is not None and dtype.is_complex:
        _nansum_complex(x, dtype)
    x = _pp.where(_cmp.isnan(x), 0.0, x)
    x = _with_dtype(x, dtype)
    result = NanSum.apply(x, _axes(dim, x, "nansum"), keepdim)
    return result if out is None else _out.write(out, _out_dtype(out, result, dtype, "nansum"), "nansum")


def nanmean(
    input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, out: Any = None,
) -> Any:
    """Mean of the non-NaN elements."""
    x = _t(input)
    if x.is_complex() or (x.is_floating_point() and dtype is not None and dtype.is_complex):
        _nansum_complex(x, dtype)  # nanmean is nansum / count in PyTorch: its refusal
    x = _with_dtype(x, dtype)
    _float_only(x, "nanmean", f"nanmean(): expected input to have floating point or complex "
                f"dtype but got {_dtype.legacy_name(x.dtype)}; convert first, e.g. x.float()")
    axes = _axes(dim, x, "nanmean")
    ok = ~_cmp.isnan(x)
    total = Sum.apply(_pp.where(ok, x, 0.0), axes, keepdim)
    n = _make(_sum_arr(ok._data, axes, keepdim).astype(x._data.dtype))
    with _quiet(_backend.xp_of(x._data)):
        result = total / n
        return result if out is None else _out.write(out, _out_dtype(out, result, dtype, "nanmean"), "nanmean")


class Sum(Op):
    """out = sum over dims of x          grad_x = grad broadcast back to x's shape"""

    @staticmethod
    def forward(ctx: Any, x: Any, axes: Any, keepdim: bool) -> Any:
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        return _sum_arr(x, axes, keepdim)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        g = _unreduce(grad, ctx.shape, ctx.axes, ctx.keepdim)
        return _expand_back(ctx.xp, g, ctx.shape), None, None


class Mean(Op):
    """out = sum over dims of x / n          grad_x = grad / n broadcast back to x's shape"""

    @staticmethod
    def forward(ctx: Any, x: Any, axes: Any, keepdim: bool) -> Any:
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        n = _count(x.shape, axes)
        ctx.n = n
        xw = _wide(x)
        if n:
            if type(xw) is not np.ndarray:
                total = xw.sum(axis=axes, keepdims=keepdim)
            elif (total := _kernels.row_sum(xw, axes, keepdim)) is None:  # (the same bits)
                total = np.add.reduce(xw, axes, None, None, keepdim)  # (ndarray.sum's call)
            return _narrow(total / n, x.dtype)
        with _quiet(ctx.xp):  # the mean of nothing is NaN, as in PyTorch
            return _narrow(xw.sum(axis=axes, keepdims=keepdim) / 0.0, x.dtype)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        g = _unreduce(grad, ctx.shape, ctx.axes, ctx.keepdim)
        g = g * (1.0 / ctx.n) if ctx.n else g * 0.0
        return _expand_back(ctx.xp, g, ctx.shape), None, None


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


def _nansum_complex(x: Any, dtype: Any) -> None:
    """nansum (and nanmean) refuse complex numbers as PyTorch's: a complex input raises
    RuntimeError, a complex ``dtype=`` for a real input NotImplementedError."""
    if x.is_complex():
        raise RuntimeError(
            f"nansum does not support complex inputs (got {x.dtype}, shape {tuple(x.shape)}); "
            "sum the parts instead, e.g. torch.complex(x.real.nansum(), x.imag.nansum())")
    raise NotImplementedError(
        f"\"nansum\" not implemented for '{_dtype.legacy_name(dtype)}' (dtype={dtype} for a "
        f"{x.dtype} input); nansum takes real dtypes only")


def _expand_back(xp: Any, g: Any, shape: tuple) -> Any:
    """``g`` broadcast to ``shape``: a small result as a filled array (``np.full`` is a few times
    cheaper than NumPy's Python-level ``broadcast_to``), a large one as a broadcast view."""
    if xp is np and type(g) is np.ndarray and math.prod(shape) <= 4096:
        out = np.empty(shape, g.dtype)  # (np.full's own two steps, without its Python frame)
        np.copyto(out, g)
        return out
    return xp.broadcast_to(g, shape)


# ---------------------------------------------------------------------------------------------
# prod


def prod(
    input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, out: Any = None,
) -> Any:
    """Product over one ``dim`` (all elements when None); integers and bools give int64."""
    if _amp.active and dtype is None:
        (input,) = _amp_cast("prod", input)
    x = _t(input)
    if dim is not None:
        _one(dim, x, "prod")  # (a bad dim raises before a bad dtype, as in PyTorch)
    x = _int_to_long(x) if dtype is None else _with_dtype(x, dtype)
    op = Prod if x._data.dtype.kind != "c" else conjugated(Prod)
    if dim is None:
        result = op.apply(x, None, False)
        return result if out is None else _out.write(out, _out_dtype(out, result, dtype, "prod"), "prod")
    d = _one(dim, x, "prod")
    if x._data.ndim == 0:
        result = op.apply(x, None, False)
        return result if out is None else _out.write(out, _out_dtype(out, result, dtype, "prod"), "prod")
    result = (ProdDim if op is Prod else conjugated(ProdDim)).apply(x, d, keepdim)
    return result if out is None else _out.write(out, _out_dtype(out, result, dtype, "prod"), "prod")


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
        rx = data_of(x)
        is0 = rx == 0
        if not is0.any():
            return g * _unreduce(out, ctx.shape, axes, ctx.keepdim) / x, None, None
        nz = is0.sum(axis=ctx.axis, keepdims=True)
        lone = is0 & (nz == 1)  # the only zero of its slice: gets the product of the others
        rest = ~is0 & (nz == 1)  # the others in such a slice: 0 (times a zero, kept for 2nd order)
        nonzero = nz == 0
        x_safe = xp.where(_lift(g, is0), 1, x)
        others = ctx.call(Prod, x_safe, ctx.axis, True)  # product of the non-zero entries
        zero = xp.where(_lift(g, is0), x, 0).sum(axis=ctx.axis, keepdims=True)
        full = others / x_safe
        d = xp.where(_lift(g, lone), others,
                     xp.where(_lift(g, nonzero), full,
                              xp.where(_lift(g, rest), full * zero, 0)))
        return g * d, None, None


class ProdDim(Prod):
    """Product over one given dim (the rule is Prod's)."""

    node_name = "ProdBackward1"


# ---------------------------------------------------------------------------------------------
# max / min / amax / amin / aminmax / argmax / argmin


def amax(
    input: Any, dim: Any = (), keepdim: bool = False, *, out: Any = None,
) -> Any:
    """Maximum over ``dim`` (all dims by default); the gradient is shared evenly among ties."""
    x = _t(input)
    if x._data.dtype.kind == "c":
        raise _unordered(x, "\"max_values_cpu\" not implemented for '{dt}'")
    axes = _axes(dim, x, "amax")
    _nonempty(x, axes, "amax")  # (no dim given: PyTorch's "specify the reduction dim" error)
    result = AMax.apply(x, axes, keepdim)
    return result if out is None else _out.write(out, result, "amax")


def amin(
    input: Any, dim: Any = (), keepdim: bool = False, *, out: Any = None,
) -> Any:
    """Minimum over ``dim`` (all dims by default); the gradient is shared evenly among ties."""
    x = _t(input)
    if x._data.dtype.kind == "c":
        raise _unordered(x, "\"min_values_cpu\" not implemented for '{dt}'")
    axes = _axes(dim, x, "amin")
    _nonempty(x, axes, "amin")  # (no dim given: PyTorch's "specify the reduction dim" error)
    result = AMin.apply(x, axes, keepdim)
    return result if out is None else _out.write(out, result, "amin")


def max(  # noqa: A001 - PyTorch's name
    input: Any, dim: Any = None, keepdim: bool = False, *, other: Any = None,
    out: Any = None,
) -> Any:
    """``max(x)``: the largest value; ``max(x, dim)``: ``(values, indices)``; ``max(x, y)``:
    elementwise maximum."""
    x = _t(input)
    if other is not None or isinstance(dim, TensorBase):
        result = _cmp.maximum(x, other if other is not None else dim)
        return result if out is None else _out.write(out, result, "max")
    if x._data.dtype.kind == "c":
        raise (_unordered(x, "\"max_all\" not implemented for '{dt}'") if dim is None else
               _unordered(x, "max(): does not support complex input", RuntimeError))
    if dim is None:
        _nonempty(x, None, "max")
        result = MaxAll.apply(x, None, False)
        return result if out is None else _out.write(out, result, "max")
    result = _extreme_dim(x, dim, keepdim, MaxDim, "max", return_types.max)
    return result if out is None else _out.write(out, result, "max")


def min(  # noqa: A001 - PyTorch's name
    input: Any, dim: Any = None, keepdim: bool = False, *, other: Any = None,
    out: Any = None,
) -> Any:
    """``min(x)``: the smallest value; ``min(x, dim)``: ``(values, indices)``; ``min(x, y)``:
    elementwise minimum."""
    x = _t(input)
    if other is not None or isinstance(dim, TensorBase):
        result = _cmp.minimum(x, other if other is not None else dim)
        return result if out is None else _out.write(out, result, "min")
    if x._data.dtype.kind == "c":
        raise (_unordered(x, "\"min_all\" not implemented for '{dt}'") if dim is None else
               _unordered(x, "min(): does not support complex input", RuntimeError))
    if dim is None:
        _nonempty(x, None, "min")
        result = MinAll.apply(x, None, False)
        return result if out is None else _out.write(out, result, "min")
    result = _extreme_dim(x, dim, keepdim, MinDim, "min", return_types.min)
    return result if out is None else _out.write(out, result, "min")


def aminmax(
    input: Any, *, dim: Any = None, keepdim: bool = False, out: Any = None,
) -> Any:
    """``(min, max)`` over one ``dim`` (all elements when None), as a named tuple."""
    x = _t(input)
    if x._data.dtype.kind == "c":
        raise _unordered(x, "\"aminmax_cpu\" not implemented for '{dt}'")
    if dim is None:
        axes = None
        _nonempty(x, None, "aminmax")
    else:
        axes = (_one(dim, x, "aminmax"),) if x._data.ndim else ()
        _nonempty(x, axes, "aminmax")
    result = return_types.aminmax(AMin.apply(x, axes, keepdim), AMax.apply(x, axes, keepdim))
    return result if out is None else _out.write(out, result, "aminmax")


def argmax(
    input: Any, dim: Any = None, keepdim: bool = False, *, out: Any = None,
) -> Any:
    """Index of the first maximum along ``dim`` (of the flattened tensor when None)."""
    x = _t(input)
    result = _arg(x, dim, keepdim, "argmax", True)
    return result if out is None else _out.write(out, result, "argmax")


def argmin(
    input: Any, dim: Any = None, keepdim: bool = False, *, out: Any = None,
) -> Any:
    """Index of the first minimum along ``dim`` (of the flattened tensor when None)."""
    x = _t(input)
    result = _arg(x, dim, keepdim, "argmin", False)
    return result if out is None else _out.write(out, result, "argmin")


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
        share = _even_share(data_of(x), ctx.out_k, ctx.axes)
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
        vals, idx = _backend.c_contiguous(vals), _backend.c_contiguous(idx)
        ctx.mark_non_differentiable(idx)
        return vals, idx

    @staticmethod
    def backward(ctx: Any, grad: Any, _grad_idx: Any = None) -> Any:
        idx = ctx.idx
        axis = ctx.axis
        xp = _backend.xp_of(idx)
        onehot = _positions(xp, ctx.shape[axis], axis, len(ctx.shape)) == idx
        g = _unreduce(grad, ctx.shape, (axis,), ctx.keepdim)
        return g * _lift(g, onehot.astype(data_of(g).dtype)), None, None


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


def _even_share(x: Any, out_k: Any, axes: Any) -> Any:
    """1/k at the k positions of each slice equal to the selected value, 0 elsewhere."""
    xp = _backend.xp_of(x)
    mask = x == out_k
    cnt = mask.sum(axis=axes, keepdims=True)
    return mask.astype(x.dtype) / xp.maximum(cnt, 1).astype(x.dtype)


def _first_nan(xp: Any, x: Any, axis: int, idx: Any) -> Any:
    """Where a slice holds NaN, point at its first NaN (PyTorch propagates NaN with its index)."""
    if x.dtype.kind != "f":
        return idx
    isn = xp.isnan(x)
    has = isn.any(axis=axis, keepdims=True)
    if not has.any():
        return idx
    return xp.where(has, isn.argmax(axis=axis, keepdims=True), idx)


def _extreme_dim(x: Any, dim: Any, keepdim: bool, op: Any, fname: str, rtype: Any) -> Any:
    d = _one(dim, x, fname)
    if x._data.ndim == 0:
        v, i = op.apply(x.reshape(1), 0, False)
        return rtype(v, i)
    _nonempty(x, (d,), fname)
    return rtype(*op.apply(x, d, keepdim))


def _arg(x: Any, dim: Any, keepdim: bool, fname: str, largest: bool) -> Any:
    a = x._data
    if a.dtype == bool:
        raise RuntimeError(
            f"{fname}(): does not support bool input; convert first, e.g. x.int().{fname}()"
        )
    if a.dtype.kind == "c":
        raise _unordered(x, f"{fname}(): does not support complex input", RuntimeError)
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


# ---------------------------------------------------------------------------------------------
# all / any / count_nonzero (no gradient)


def all(  # noqa: A001 - PyTorch's name
    input: Any, dim: Any = None, keepdim: bool = False, *, out: Any = None,
) -> Any:
    """True where every element over ``dim`` is non-zero (uint8 in gives uint8, as PyTorch)."""
    x = _t(input)
    result = _logical_reduce(x, dim, keepdim, "all")
    return result if out is None else _out.write(out, result, "all")


def any(  # noqa: A001 - PyTorch's name
    input: Any, dim: Any = None, keepdim: bool = False, *, out: Any = None,
) -> Any:
    """True where some element over ``dim`` is non-zero (uint8 in gives uint8, as PyTorch)."""
    x = _t(input)
    result = _logical_reduce(x, dim, keepdim, "any")
    return result if out is None else _out.write(out, result, "any")


def count_nonzero(input: Any, dim: Any = None) -> Any:
    """Number of non-zero elements over ``dim`` (int64)."""
    x = _t(input)
    a = x._data
    axes = _axes(dim, x, "count_nonzero")
    return _make(_backend.xp_of(a).asarray((a != 0).sum(axis=axes)).astype("int64"))


def _logical_reduce(x: Any, dim: Any, keepdim: bool, fname: str) -> Any:
    a = x._data
    axes = _axes(dim, x, fname, empty_all=False)
    r = a.all(axis=axes, keepdims=keepdim) if fname == "all" else a.any(axis=axes, keepdims=keepdim)
    xp = _backend.xp_of(a)
    r = xp.asarray(r)
    return _make(r.astype("uint8") if a.dtype.name == "uint8" else r)


make_outputs_contiguous(globals())


def _out_dtype(out: Any, result: Any, dtype: Any, fname: str) -> Any:
    """With ``dtype=`` and ``out=`` both given, ``out`` must have that dtype (PyTorch's rule)."""
    if dtype is not None and out.dtype != result.dtype:
        raise RuntimeError(f"{fname}(): expected out tensor to have dtype {result.dtype}, but got "
                           f"{out.dtype} instead. Give an out tensor of dtype {result.dtype}, or "
                           "drop dtype=.")
    return result
