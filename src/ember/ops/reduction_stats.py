"""Statistical reductions (torch's "Reduction Ops", continued): var, std, var_mean, std_mean,
norm, logsumexp, median, nanmedian, mode; `torch._segment_reduce` (`segment_reduce`).

The plain reductions (sum, max...) are in ``reduction.py``, whose tie-sharing and index-selecting
backward rules (``_EvenSplit``, ``_Select``) these reuse; ``torch.linalg.vector_norm`` lives in
``linalg.py``.
"""

from __future__ import annotations

import builtins as _b
import math
import warnings
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .. import _kernels_loader as _kernels
from .._tensor_base import data_of, wrap_dim
from ..autograd import function as _function
from ..autograd.function import Op
from . import _out, return_types
from . import _promote as _prom
from . import pointwise_math as _pm
from . import pointwise_piecewise as _pp
from ._autocast import cast as _amp_cast
from ._autocast import flag as _amp
from ._reduce import (
    _axes,
    _count,
    _kept,
    _lift,
    _narrow,
    _need,
    _quiet,
    _reduced,
    _slice_at,
    _sum_arr,
    _t,
    _unreduce,
    _wide,
    _with_dtype,
    make_outputs_contiguous,
)
from .reduction import AMax, AMin, Mean, Sum, _EvenSplit, _extreme_dim, _first_nan, _Select

__all__ = [
    "var", "std", "var_mean", "std_mean", "norm", "logsumexp", "median", "nanmedian", "mode",
    "_segment_reduce",
]


# ---------------------------------------------------------------------------------------------
# var / std


def var(
    input: Any, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
    correction: float | None = None, out: Any = None,
) -> Any:
    """Variance over ``dim`` with Bessel's ``correction`` (default 1; legacy ``unbiased=``)."""
    x = _t(input)
    axes, c = _var_args(x, dim, unbiased, correction, "var")
    if x._data.dtype.kind == "c":  # the variances of the two parts add up (a real result)
        return var(x.real, dim, keepdim=keepdim, correction=c, out=out) + var(
            x.imag, dim, keepdim=keepdim, correction=c)
    result = Var.apply(x, axes, c, keepdim)
    return result if out is None else _out.write(out, result, "var")


def std(
    input: Any, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
    correction: float | None = None, out: Any = None,
) -> Any:
    """Standard deviation over ``dim`` with ``correction`` (default 1; legacy ``unbiased=``)."""
    x = _t(input)
    axes, c = _var_args(x, dim, unbiased, correction, "std")
    if x._data.dtype.kind == "c":  # sqrt of the parts' variances' sum
        result = _pm.sqrt(var(x, dim, keepdim=keepdim, correction=c))
        return result if out is None else _out.write(out, result, "std")
    result = Std.apply(x, axes, c, keepdim)
    return result if out is None else _out.write(out, result, "std")


def var_mean(
    input: Any, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
    correction: float | None = None,
) -> tuple[Any, Any]:
    """``(var, mean)`` over ``dim``."""
    x = _t(input)
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    v = var(x, dim, unbiased, keepdim, correction=correction)
    return v, Mean.apply(x, _axes(dim, x, "var_mean"), keepdim)


def std_mean(
    input: Any, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
    correction: float | None = None,
) -> tuple[Any, Any]:
    """``(std, mean)`` over ``dim``."""
    x = _t(input)
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    s = std(x, dim, unbiased, keepdim, correction=correction)
    return s, Mean.apply(x, _axes(dim, x, "std_mean"), keepdim)


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
        zero = _lift(g, data_of(o) == 0)
        inv = xp.where(zero, 0, 1 / xp.where(zero, 1, o))
        mu = x.sum(axis=ctx.axes, keepdims=True) / ctx.n
        scale = 1.0 / ctx.raw_dof if ctx.raw_dof else math.inf
        return g * inv * (x - mu) * scale, None, None, None


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


def _var_args(x: Any, dim: Any, unbiased: Any, correction: Any, fname: str) -> tuple:
    if isinstance(dim, bool):  # var(x, unbiased)
        dim, unbiased = None, dim
    if correction is not None and unbiased is not True and unbiased is not None:
        # (unbiased=True, PyTorch's default, cannot be told from not given: correction wins)
        raise TypeError(
            f"{fname}(): pass either unbiased= (legacy) or correction=, not both"
        )
    if correction is None:
        correction = 1 if unbiased is None else int(bool(unbiased))
    if not (x.is_floating_point() or x._data.dtype.kind == "c"):
        raise RuntimeError(
            f"std and var only support floating point and complex dtypes ({fname}() got "
            f"{_dtype.legacy_name(x.dtype)}); convert first, e.g. x.float()"
        )
    return _axes(dim, x, fname), correction


# ---------------------------------------------------------------------------------------------
# norms


def vector_norm(
    x: Any, ord: float = 2, dim: Any = None, keepdim: bool = False, dtype: Any = None,
) -> Any:
    """The vector ``ord``-norm over ``dim`` (all elements when None), as torch.linalg.vector_norm.

    ``ord`` may be any real number or +-inf: inf is max |x|, -inf is min |x|, 0 counts the
    non-zeros, and p gives (sum |x|^p)^(1/p).
    """
    if _amp.active and dtype is None:
        (x,) = _amp_cast("vector_norm", x)
    x = _t(x)
    if x._data.dtype.kind == "c":  # the norm of the moduli
        return vector_norm(_pp.abs(x), ord, dim, keepdim, None if dtype is None else
                           _dtype.to_dtype(dtype).to_real())
    if not x.is_floating_point():
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
            f"{_dtype.legacy_name(x.dtype)}; convert first, e.g. x.float()"
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
        return _NormMax.apply(_pp.abs(x), axes, keepdim)
    if p == -math.inf:
        return _NormMin.apply(_pp.abs(x), axes, keepdim)
    if p == 1:
        return _NormSum.apply(_pp.abs(x), axes, keepdim)
    return Norm.apply(x, p, axes, keepdim)


def norm(
    input: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False, out: Any = None,
    dtype: Any = None,
) -> Any:
    """Vector or Frobenius norm (``p`` = 'fro' (default), 'nuc', inf, -inf, 0, 1, 2 or any real).

    A numeric ``p`` computes the vector norm over ``dim`` (all elements when None), even for
    two dims; 'fro' is the 2-norm over at most two dims; 'nuc' is the nuclear norm of a matrix.
    """
    if _amp.active and dtype is None and out is None:
        (input,) = _amp_cast("norm", input)
    x = _t(input)
    if p is None:
        p = "fro"
    if not isinstance(p, (str, int, float, np.number)):
        raise TypeError(
            f"norm(): argument 'p' must be a number or 'fro'/'nuc', not {type(p).__name__} (to "
            "pick dims pass dim=, e.g. x.norm(dim=(0,)))"
        )
    if isinstance(p, str):
        if p == "fro":
            if isinstance(dim, (tuple, list)) and len(dim) > 2:
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
            if (ss := _kernels.row_sum(xw, axes, keepdim, True)) is None:  # (the same bits)
                ss = (xw * xw).sum(axis=axes, keepdims=keepdim)
            out = _narrow(xp.sqrt(ss), x.dtype)
        elif p == 0:
            out = (x != 0).sum(axis=axes, keepdims=keepdim).astype(x.dtype)
        else:
            with _quiet(xp):
                powered = xp.abs(xw)
                powered **= p  # in place: one full-size temporary
                out = powered.sum(axis=axes, keepdims=keepdim) ** (1.0 / p)
                del powered
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
        zero = _lift(g, data_of(o) == 0)
        o_safe = xp.where(zero, 1, o)
        if p == 2:  # x * (grad / norm): the factor on the reduced shape, one full-size product
            return x * xp.where(zero, 0, g / o_safe), None, None, None
        if not ctx._tensor_mode:  # arrays: |x|^(p-1) with x's sign built in one buffer
            with _quiet(xp):
                d = xp.abs(x)
                at_zero = x == 0
                d[at_zero] = 1  # (sign(0) = 0 zeroes these below; 0^(p-1) may be inf)
                d **= p - 1
                xp.copysign(d, x, out=d)
                d[at_zero] = 0
                d *= xp.where(zero, 0, g * o_safe ** (1 - p))
            return d, None, None, None
        ax = xp.abs(x)
        ax_safe = xp.where(_lift(g, data_of(x) == 0), 1, ax)  # sign(0) = 0 zeroes these anyway
        d = xp.sign(x) * ax_safe ** (p - 1) * o_safe ** (1 - p)
        return g * xp.where(zero, 0, d), None, None, None


class _NormMax(AMax):
    """The inf-norm's last step, max |x| (same rule as AMax; PyTorch's vector_norm node)."""

    node_name = "LinalgVectorNormBackward0"


class _NormMin(AMin):
    """The -inf-norm's last step, min |x| (same rule as AMin)."""

    node_name = "LinalgVectorNormBackward0"


class _NormSum(Sum):
    """The 1-norm's last step, sum |x| (same rule as Sum)."""

    node_name = "LinalgVectorNormBackward0"


# ---------------------------------------------------------------------------------------------
# logsumexp


def logsumexp(
    input: Any, dim: Any, keepdim: bool = False, *, out: Any = None,
) -> Any:
    """``log(sum(exp(x)))`` over ``dim``, computed stably (integers compute in float)."""
    if _amp.active:
        (input,) = _amp_cast("logsumexp", input)
    op, x = _prom._cunary(LogSumExp, _t(input))  # complex: holomorphic, PyTorch's gradient
    result = op.apply(x, _axes(dim, x, "logsumexp"), keepdim)
    return result if out is None else _out.write(out, result, "logsumexp")


class LogSumExp(Op):
    """out = m + log(sum over dims of exp(x - m)), m = max (of the real part for complex x;
    0 where it is not finite)          grad_x = grad * exp(x - out)"""

    node_name = "LogsumexpBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, axes: Any, keepdim: bool) -> Any:
        xp = ctx.xp
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        if _count(x.shape, axes) == 0:
            out = xp.full(_reduced(x.shape, axes, keepdim), -math.inf, dtype=x.dtype)
        else:
            with _quiet(xp):
                m = (x.real if x.dtype.kind == "c" else x).max(axis=axes, keepdims=True)
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


# ---------------------------------------------------------------------------------------------
# median / nanmedian / mode


def median(
    input: Any, dim: Any = None, keepdim: bool = False, *, out: Any = None,
) -> Any:
    """``median(x)``: lower median of all elements; ``median(x, dim)``: ``(values, indices)``."""
    x = _t(input)
    if x._data.dtype.kind == "c":
        raise _prom._unordered(x, f"\"{'median_cpu' if dim is None else 'median_out'}\" not "
                              "implemented for '{dt}'")
    if dim is None:
        result = MedianAll.apply(x, None, False)
        return result if out is None else _out.write(out, result, "median")
    result = _extreme_dim(x, dim, keepdim, MedianDim, "median", return_types.median)
    return result if out is None else _out.write(out, result, "median")


def nanmedian(
    input: Any, dim: Any = None, keepdim: bool = False, *, out: Any = None,
) -> Any:
    """Like ``median`` but ignoring NaN values."""
    x = _t(input)
    if x._data.dtype.kind == "c":
        raise _prom._unordered(x, f"\"{'median_cpu' if dim is None else 'median_out'}\" not "
                              "implemented for '{dt}'")
    if dim is None:
        result = NanMedianAll.apply(x, None, False)
        return result if out is None else _out.write(out, result, "nanmedian")
    result = _extreme_dim(x, dim, keepdim, NanMedianDim, "nanmedian", return_types.nanmedian)
    return result if out is None else _out.write(out, result, "nanmedian")


def mode(
    input: Any, dim: int = -1, keepdim: bool = False, *, out: Any = None,
) -> Any:
    """Most frequent value along ``dim`` (the smallest on ties) and its last index."""
    x = _t(input)
    if x._data.dtype.kind == "c":
        raise _prom._unordered(x, "\"mode_cpu\" not implemented for '{dt}'")
    result = _extreme_dim(x, dim, keepdim, ModeDim, "mode", return_types.mode)
    return result if out is None else _out.write(out, result, "mode")


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


def _nan_fill(xp: Any, x: Any) -> Any:
    if x.dtype.kind != "f":
        raise RuntimeError(
            f"median() of an empty {x.dtype} tensor has no value; reduce a non-empty tensor"
        )
    return xp.full((1,) * x.ndim, math.nan, dtype=x.dtype)


make_outputs_contiguous(globals())


# ---------------------------------------------------------------------------------------------
# _segment_reduce


_SEGMENT_REDUCES = {"sum": "sum", "mean": "mean", "prod": "prod", "max": "max", "amax": "max",
                    "min": "min", "amin": "min"}


class SegmentReduce(Op):
    """out[s] = reduce(initial?, x[off[s]:off[s+1]]) along axis (per leading batch index).
    sum:  grad_x = grad[s]                mean: grad_x = grad[s] / len[s]
    prod: grad_x = grad[s] * initial * product of the other members (exact with zeros)
    max/min: grad[s] is split evenly among the members equal to out[s] (initial is no member)"""

    node_name = "SegmentReduceBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, reduce: str, offs: Any, axis: int, initial: Any) -> Any:
        xp = ctx.xp
        bshape, n, rshape = x.shape[:axis], x.shape[axis], x.shape[axis + 1:]
        bp, rp = math.prod(bshape), math.prod(rshape)
        nseg = offs.shape[-1] - 1
        off = xp.asarray(offs.reshape(bp, nseg + 1), dtype=np.int64)
        lens = (off[:, 1:] - off[:, :-1]).reshape(-1)
        first = xp.cumsum(lens) - lens  # each group's first place among the gathered rows
        grp = xp.repeat(xp.arange(bp * nseg, dtype=np.int64), lens)
        row0 = (off[:, :-1] + xp.arange(bp, dtype=np.int64)[:, None] * n).reshape(-1)
        pos = xp.repeat(row0 - first, lens) + xp.arange(grp.shape[0], dtype=np.int64)
        w = _wide(x).reshape(bp * n, rp)
        vals = w[pos]
        full = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}[reduce]
        out = xp.full((bp * nseg, rp), full, dtype=w.dtype)
        ne = lens > 0
        if bool(ne.any()):
            ufunc = {"sum": xp.add, "mean": xp.add, "prod": xp.multiply, "max": xp.maximum,
                     "min": xp.minimum}[reduce]
            out[ne] = ufunc.reduceat(vals, first[ne], axis=0)
        if initial is not None:
            init = xp.asarray(initial, dtype=w.dtype)
            out = {"sum": xp.add, "mean": xp.add, "prod": xp.multiply, "max": xp.maximum,
                   "min": xp.minimum}[reduce](out, init)
        if reduce == "mean":
            with _quiet(xp):
                div = out / lens.astype(w.dtype)[:, None]
            out = xp.where(ne[:, None], div, out if initial is not None else np.nan)
        out = out.astype(w.dtype, copy=False)
        ctx.reduce, ctx.xshape = reduce, x.shape
        if _need(ctx):
            inv = xp.full(bp * n, bp * nseg, dtype=np.int64)  # rows in no segment: the zero row
            inv[pos] = grp
            ctx.inv, ctx.rp = inv, rp
            if reduce == "mean":
                per = xp.concatenate([1.0 / xp.maximum(lens, 1), xp.zeros(1)])
                ctx.coef = per.astype(w.dtype)[inv][:, None]
            elif reduce in ("max", "min"):
                hit = vals == out[grp]
                cnt = xp.zeros((bp * nseg, rp), dtype=np.int64)
                if bool(ne.any()):
                    cnt[ne] = xp.add.reduceat(hit.astype(np.int64), first[ne], axis=0)
                coef = xp.zeros((bp * n, rp), dtype=w.dtype)
                coef[pos] = hit / xp.maximum(cnt[grp], 1)
                ctx.coef = coef
            elif reduce == "prod":
                ctx.coef = _segment_prod_coef(xp, w, vals, pos, grp, first, ne, bp * nseg, initial)
        oshape = bshape + (nseg,) + rshape
        return _narrow(out, x.dtype).reshape(oshape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        xp = ctx.xp
        if ctx.reduce == "prod" and not isinstance(grad, np.ndarray) and hasattr(grad, "_data"):
            raise RuntimeError("_segment_reduce(reduce='prod') does not support double backward "
                               "(create_graph=True) in ember; use reduce='sum' or torch.prod")
        g = grad.reshape(-1, ctx.rp)
        gpad = xp.concatenate([g, xp.zeros_like(g[:1])], axis=0)
        gx = gpad[ctx.inv]
        if ctx.reduce != "sum":
            gx = gx * ctx.coef.astype(data_of(grad).dtype if hasattr(grad, "_data")
                                      else grad.dtype, copy=False)
        return gx.reshape(ctx.xshape), None, None, None, None


def _segment_reduce(
    data: Any, reduce: str, *, lengths: Any = None, indices: Any = None, offsets: Any = None,
    axis: int = 0, unsafe: bool = False, initial: float | None = None,
) -> Any:
    """Reduce consecutive segments of ``data`` along ``axis`` (``sum``, ``mean``, ``prod``,
    ``max``/``amax``, ``min``/``amin``); the segments are given by ``lengths`` or ``offsets``,
    whose last dim is ``axis`` (``lengths.shape == data.shape[:axis] + (segments,)``). An empty
    segment gives ``initial`` (else 0, nan, 1, -inf, inf); ``initial`` also joins every segment."""
    x = _t(data)
    if reduce not in _SEGMENT_REDUCES:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if x.ndim == 0:
        raise RuntimeError("segment_reduce(): expected data with at least one dim, got a 0-d "
                           "tensor; reshape it, e.g. data.reshape(1)")
    axis = wrap_dim(axis, x.ndim)
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet; "
                           "give lengths= or offsets=")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    dt = x._data.dtype
    if dt.kind not in "fV":
        raise NotImplementedError(
            f"\"_segment_reduce_cpu\" not implemented for '{_dtype.legacy_name(x.dtype)}' "
            "(segment_reduce takes floating data); convert first, e.g. data.float()")
    offs = _segment_offsets(x, lengths, offsets, axis, unsafe)
    return SegmentReduce.apply(x, _SEGMENT_REDUCES[reduce], offs, axis, initial)


def _segment_offsets(x: Any, lengths: Any, offsets: Any, axis: int, unsafe: bool) -> Any:
    """The segments' offsets as an int64 array of shape ``data.shape[:axis] + (segments + 1,)``,
    checked as PyTorch checks them."""
    name = "lengths" if lengths is not None else "offsets"
    seg = _t(lengths if lengths is not None else offsets)
    a = data_of(seg)
    if a.dtype not in (np.int32, np.int64):
        raise NotImplementedError(
            f"\"_segment_reduce_{name}_cpu_kernel1\" not implemented for "
            f"'{_dtype.legacy_name(seg.dtype)}' ({name} must be int32 or int64)")
    if seg.ndim != axis + 1:
        raise RuntimeError(
            f"segment_reduce(): Expected axis to be the last dimension of {name} but got {axis} "
            f"({name} has shape {tuple(a.shape)}, data {tuple(x.shape)}; {name} needs shape "
            f"data.shape[:axis] + (segments{'' if lengths is not None else ' + 1'},))")
    if tuple(a.shape[:-1]) != tuple(x.shape[:axis]):
        raise RuntimeError(
            f"segment_reduce(): {name} of shape {tuple(a.shape)} does not match data of shape "
            f"{tuple(x.shape)} before axis {axis}")
    if _function.tracer is not None:  # the segments come from data: compile stays eager
        _function.tracer.data_read("segment_reduce")
    a = np.asarray(_backend.to_numpy(a), dtype=np.int64)
    n = x.shape[axis]
    if lengths is not None:
        if (a < 0).any():
            raise RuntimeError("lengths contains negative value!")
        if not unsafe and (a.sum(axis=-1) != n).any():
            raise RuntimeError(
                "segment_reduce(): Expected all rows of lengths along axis to sum to "
                f"data.size(lengths.dim()-1) when !unsafe (they sum to "
                f"{a.sum(axis=-1).tolist()}, data.size({axis}) is {n}).")
        zero = np.zeros(a.shape[:-1] + (1,), dtype=np.int64)
        a = np.concatenate([zero, np.cumsum(a, axis=-1)], axis=-1)
    if a.shape[-1] == 0:
        raise RuntimeError("segment_reduce(): offsets needs at least one value (segments + 1)")
    if (np.diff(a, axis=-1) < 0).any():
        raise RuntimeError("Expected segment_length >= 0 to be true, but got false (offsets "
                           "must not decrease).")
    if a.size and (a.min() < 0 or a.max() > n):
        raise RuntimeError(f"segment_reduce(): offsets out of range [0, {n}] for data.size("
                           f"{axis}) = {n}")
    return _backend.xp_of(x._data).asarray(a)


def _segment_prod_coef(xp: Any, w: Any, vals: Any, pos: Any, grp: Any, first: Any, ne: Any,
                       ngroups: int, initial: Any) -> Any:
    """d(initial * product of the segment)/d(member): the product of the other members and
    ``initial``, exact with zeros (0 when another member is 0)."""
    zero = vals == 0
    zc = xp.zeros((ngroups, vals.shape[1]), dtype=np.int64)
    pnz = xp.full((ngroups, vals.shape[1]), 1.0 if initial is None else initial, dtype=w.dtype)
    if bool(ne.any()):
        zc[ne] = xp.add.reduceat(zero.astype(np.int64), first[ne], axis=0)
        pnz[ne] = pnz[ne] * xp.multiply.reduceat(xp.where(zero, 1, vals).astype(w.dtype),
                                                 first[ne], axis=0)
    z, p = zc[grp], pnz[grp]
    with _quiet(xp):
        c = xp.where(zero, (z == 1) * p, (z == 0) * p / xp.where(zero, 1, vals))
    coef = xp.zeros(w.shape, dtype=w.dtype)
    coef[pos] = c
    return coef
