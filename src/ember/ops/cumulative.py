"""Cumulative ops (in torch's "Other Operations"): cumsum, cumprod, cummax, cummin.

Each backward is itself a cumulative op run backwards (a reversed cumsum), recorded through
``ctx.call`` so that ``create_graph=True`` can differentiate it again. Shared dim and dtype
rules are in ``_reduce.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _backend
from .. import _kernels_loader as _kernels
from .._tensor_base import data_of
from ..autograd.function import Op
from . import _out, return_types
from ._autocast import cast as _amp_cast
from ._autocast import flag as _amp
from ._promote import _om, _unordered
from ._reduce import (
    _int_to_long,
    _lift,
    _need,
    _one,
    _positions,
    _t,
    _with_dtype,
    make_outputs_contiguous,
)

__all__ = ["cumsum", "cumprod", "cummax", "cummin"]


# ---------------------------------------------------------------------------------------------
# cumulative ops


# PyTorch's CPU kernels accumulate cumulative sums and products in a wider type (float32 in
# double, half and bfloat16 in float, complex64 in complex128) and round each output once
_ACC = {"float32": "float64", "float16": "float32", "bfloat16": "float32",
        "complex64": "complex128"}


def cumsum(input: Any, dim: Any, *, dtype: Any = None, out: Any = None) -> Any:
    """Cumulative sum along ``dim``; integers and bools accumulate in int64."""
    if _amp.active and dtype is None:
        (input,) = _amp_cast("cumsum", input)
    x = _t(input)
    d = _cum_dim(x, dim, "cumsum")
    x = _int_to_long(x) if dtype is None else _with_dtype(x, dtype)
    result = _cumulative(CumSum, x, d)
    return result if out is None else _out.write(out, result, "cumsum")


def cumprod(input: Any, dim: Any, *, dtype: Any = None, out: Any = None) -> Any:
    """Cumulative product along ``dim``; integers and bools accumulate in int64."""
    if _amp.active and dtype is None:
        (input,) = _amp_cast("cumprod", input)
    x = _t(input)
    d = _cum_dim(x, dim, "cumprod")
    x = _int_to_long(x) if dtype is None else _with_dtype(x, dtype)
    result = _cumulative(CumProd, x, d)
    return result if out is None else _out.write(out, result, "cumprod")


def cummax(input: Any, dim: Any, *, out: Any = None) -> Any:
    """Running maximum along ``dim``: ``(values, indices)``."""
    x = _t(input)
    result = _cum_extreme(CumMax, return_types.cummax, x, _cum_dim(x, dim, "cummax"))
    return result if out is None else _out.write(out, result, "cummax")


def cummin(input: Any, dim: Any, *, out: Any = None) -> Any:
    """Running minimum along ``dim``: ``(values, indices)``."""
    x = _t(input)
    result = _cum_extreme(CumMin, return_types.cummin, x, _cum_dim(x, dim, "cummin"))
    return result if out is None else _out.write(out, result, "cummin")


class CumSum(Op):
    """out_i = sum_{j <= i} x_j along dim          grad_x_j = sum_{i >= j} grad_i"""

    node_name = "CumsumBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, axis: int) -> Any:
        ctx.axis = axis
        if (out := _kernels.cumsum(x, axis)) is not None:  # (one pass, the same bits)
            return out
        return _accumulated(ctx.xp, ctx.xp.cumsum, x, axis)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(RevCumSum, grad, ctx.axis), None


class RevCumSum(Op):
    """out_j = sum_{i >= j} x_i along dim          grad_x_i = sum_{j <= i} grad_j"""

    @staticmethod
    def forward(ctx: Any, x: Any, axis: int) -> Any:
        xp = ctx.xp
        ctx.axis = axis
        if (out := _kernels.cumsum(x, axis, True)) is not None:  # (one pass, the same bits)
            return out
        return xp.flip(_accumulated(xp, xp.cumsum, xp.flip(x, axis), axis), axis)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(CumSum, grad, ctx.axis), None


class CumProd(Op):
    """out_i = prod_{j <= i} x_j along dim
    grad_x_k = sum_{i >= k} grad_i prod_{j <= i, j != k} x_j, that is
    revcumsum(grad * out)_k / x_k before a slice's first zero, the same sum with that zero
    skipped at the first zero, and 0 after it"""

    node_name = "CumprodBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, axis: int) -> Any:
        ctx.axis = axis
        out = _accumulated(ctx.xp, ctx.xp.cumprod, x, axis)
        if _need(ctx):
            ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, out = ctx.saved
        xp, axis = ctx.xp, ctx.axis
        rx = data_of(x)
        is0 = rx == 0
        if not is0.any():
            return ctx.call(RevCumSum, grad * out, axis) / x, None
        first = is0.argmax(axis=axis, keepdims=True)
        has = is0.any(axis=axis, keepdims=True)
        pos = _positions(_backend.xp_of(rx), rx.shape[axis], axis, rx.ndim)
        before = _lift(grad, (pos < first) | ~has)
        at = _lift(grad, (pos == first) & has)
        term1 = ctx.call(RevCumSum, grad * out, axis) / xp.where(before, x, 1)
        skipped = ctx.call(CumProd, xp.where(at, 1, x), axis)  # products without that zero
        term2 = ctx.call(RevCumSum, grad * skipped, axis)
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
        return ctx.call(_Gather, grad, ctx.idx, ctx.axis), None, None


class _Gather(Op):
    """out_i = g at idx_i along dim          grad_g = grad scatter-added at idx"""

    @staticmethod
    def forward(ctx: Any, g: Any, idx: Any, axis: int) -> Any:
        ctx.idx, ctx.axis = idx, axis
        return ctx.xp.take_along_axis(g, idx, axis)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(_ScatterAdd, grad, ctx.idx, ctx.axis), None, None


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
        idx = _backend.c_contiguous(xp.maximum.accumulate(xp.where(mark, pos, 0), axis=axis).astype("int64"))
        if _need(ctx):
            ctx.idx = idx
        ctx.mark_non_differentiable(idx)
        return _backend.c_contiguous(vals), idx

    @staticmethod
    def backward(ctx: Any, grad: Any, _grad_idx: Any = None) -> Any:
        return ctx.call(_ScatterAdd, grad, ctx.idx, ctx.axis), None


class CumMin(CumMax):
    """(values, indices) = running min along dim (indices: the last position among ties)
    grad_x_j = sum of grad_i over the i whose running min is x_j"""

    node_name = "CumminBackward0"

    _ufunc = "minimum"


def _accumulated(xp: Any, fn: Any, x: Any, axis: int) -> Any:
    """``fn(x, axis)`` (cumsum/cumprod) accumulated as PyTorch's CPU kernels do."""
    wide = _ACC.get(str(getattr(x, "dtype", ""))) if xp is np else None
    if wide is None:
        return fn(x, axis=axis, dtype=x.dtype)
    return fn(x, axis=axis, dtype=wide).astype(x.dtype)


def _cum_dim(x: Any, dim: Any, fname: str) -> int:
    if dim is None:
        raise TypeError(f"{fname}(): argument 'dim' must be int, not None")
    return _one(dim, x, fname)


def _cumulative(op: Any, x: Any, d: int) -> Any:
    op = _om(op, x)  # float16/bfloat16 accumulate in float32, each output rounded once
    if x._data.ndim == 0:
        return op.apply(x.reshape(1), 0).reshape(())
    return op.apply(x, d)


def _cum_extreme(op: Any, rtype: Any, x: Any, d: int) -> Any:
    if x._data.dtype.kind == "c":
        name = "cummax" if rtype is return_types.cummax else "cummin"
        raise _unordered(x, f"\"{name}_cpu\" not implemented for '{{dt}}'")
    if x._data.ndim == 0:
        v, i = op.apply(x.reshape(1), 0)
        return rtype(v.reshape(()), i.reshape(()))
    return rtype(*op.apply(x, d))


make_outputs_contiguous(globals())
