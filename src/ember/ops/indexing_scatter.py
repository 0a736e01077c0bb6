"""Gather and scatter along a dim: gather, scatter, scatter_add, scatter_reduce, take_along_dim
(from torch's "Indexing, Slicing, Joining, Mutating Ops").

Their neighbours: ``x[key]``, the index_* and masked ops in ``indexing.py``; the index checks
they share in ``_index.py``; sort/topk/kthvalue (whose backward is ``ScatterAdd``) in
``sorting.py``.

``Gather`` and ``ScatterAdd`` are each other's backward. An index along ``dim`` becomes flat
linear positions (``_dim_lin``) and one ``xp.bincount`` sums the repeated ones, so no scatter
loops in Python.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _backend
from .. import _kernels_loader as _kernels
from .._tensor_base import TensorBase, data_of, wrap_dim
from ..autograd.function import Op
from . import _out
from . import _promote as _prom
from . import pointwise as _pw
from ._autocast import cast as _amp_cast
from ._autocast import flag as _amp
from ._index import (
    _accumulate,
    _as_index_tensor,
    _atleast_1d,
    _broadcast_shapes,
    _c_strides,
    _check_bounds,
    _check_int_index,
    _check_nonneg_bounds,
    _group_starts,
    _numel,
    _reshape,
    keeps_index,
)
from .creation import full
from .indexing import _expand, getitem

__all__ = [
    "gather", "scatter", "scatter_add", "scatter_reduce", "take_along_dim",
]


# ---------------------------------------------------------------------------------------------
# gather / scatter along a dim


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


@keeps_index("index")
def gather(input: Any, dim: int, index: Any, *, sparse_grad: bool = False,
           out: Any = None) -> Any:
    """``out[i][j] = input[index[i][j]][j]`` for dim 0 (index no larger than input elsewhere)."""
    if out is not None:
        return _out.write(out, gather(input, dim, index, sparse_grad=sparse_grad), "gather")
    index = _as_index_tensor(index, "gather")
    idx = _check_int_index(index, "gather")
    dim = wrap_dim(dim, input._data.ndim)
    _check_dim_index(input, dim, index, "gather")
    _check_nonneg_bounds(idx, input._data.shape[dim] if input._data.ndim else 1, dim, "gather")
    if input._data.ndim == 0 or idx.ndim == 0:  # PyTorch treats 0-d as 1-element vectors
        out = Gather.apply(_atleast_1d(input), 0, idx.reshape(-1))
        return _reshape(out, tuple(idx.shape))
    return Gather.apply(input, dim, idx)


@keeps_index("index")
def scatter(input: Any, dim: int, index: Any, src: Any = None, value: Any = None, *,
            reduce: str | None = None, out: Any = None) -> Any:
    """Out-of-place ``scatter_``: write ``src`` (a tensor) or ``value`` (a number) at ``index``
    along ``dim``. ``reduce='add' | 'multiply'`` combines instead (and, unlike PyTorch, stays
    differentiable)."""
    if out is not None:
        return _out.write(out, scatter(input, dim, index, src, value, reduce=reduce), "scatter")
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing the src tensor or the value to write")
    if isinstance(src, TensorBase) and src._data.ndim == 0 and input._data.ndim > 0:
        src = src.item()
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(
                f"reduce argument must be either add or multiply, got {reduce!r}"
            )
        if not isinstance(src, TensorBase):
            src = full(tuple(data_of(index).shape), src, dtype=input.dtype, device=input.device)
        if reduce == "add":
            return scatter_add(input, dim, index, src)
        return scatter_reduce(input, dim, index, src, "prod", include_self=True)
    dim, idx, src = _scatter_prep(input, dim, index, src, "scatter")
    return (Scatter if isinstance(src, TensorBase) else ScatterValue).apply(input, src, dim, idx)


@keeps_index("index", only_for="src")
def scatter_add(input: Any, dim: int, index: Any, src: Any, *, out: Any = None) -> Any:
    """Out-of-place ``scatter_add_``: ``out[index[i][j]][j] += src[i][j]`` (dim 0)."""
    if out is not None:
        return _out.write(out, scatter_add(input, dim, index, src), "scatter_add")
    if _amp.active:
        input, src = _amp_cast("scatter_add", input, src)
    dim, idx, src = _scatter_prep(input, dim, index, src, "scatter_add")
    shape = tuple(input._data.shape)
    if src._data.dtype == input._data.dtype:  # accumulated onto input's values, in order
        return _ScatterAddOnto.apply(input, ScatterAdd.apply(src, dim, idx, shape, input._data))
    a, b = _prom._promote(input, ScatterAdd.apply(src, dim, idx, shape))
    return _ScatterAddInto.apply(a, b)


@keeps_index("index")
def scatter_reduce(input: Any, dim: int, index: Any, src: Any, reduce: str, *,
                   include_self: bool = True, out: Any = None) -> Any:
    """Reduce ``src`` into ``input`` at ``index`` along ``dim`` with sum, prod, mean, amax, amin."""
    if reduce not in _REDUCES:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce!r}"
        )
    dim, idx, src = _scatter_prep(input, dim, index, src, "scatter_reduce")
    res = ScatterReduce.apply(input, src, dim, idx, reduce, bool(include_self))
    return res if out is None else _out.write(out, res, "scatter_reduce")


def take_along_dim(input: Any, indices: Any, dim: int | None = None, *,
                   out: Any = None) -> Any:
    """Pick values along ``dim`` at ``indices`` (broadcast against input elsewhere); with
    ``dim=None`` both are flattened first."""
    if out is not None:
        return _out.write(out, take_along_dim(input, indices, dim), "take_along_dim")
    indices = _as_index_tensor(indices, "take_along_dim")
    idx = _check_int_index(indices, "take_along_dim")
    if dim is None:
        flat = _reshape(input, (input._data.size,))
        return gather(flat, 0, TensorBase._make(idx.reshape(-1)))
    nd = input._data.ndim
    if idx.ndim != nd:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {nd} dimensions for input, and {idx.ndim} dimensions for indices"
        )
    dim = wrap_dim(dim, nd)
    xs, ids = list(input._data.shape), list(idx.shape)
    xs_d, ids_d = xs[dim], ids[dim]
    xs[dim] = ids[dim] = 1
    b = list(_broadcast_shapes(tuple(xs), tuple(ids)))
    xb = b.copy()
    xb[dim] = xs_d
    b[dim] = ids_d
    xp = _backend.xp_of(idx)
    x = _expand(input, tuple(xb))
    idx = xp.broadcast_to(idx, tuple(b))
    # PyTorch counts negative indices from the end here (unlike gather); beyond [-size, size)
    # it reads unchecked memory, which we refuse
    _check_bounds(idx, xs_d, dim, "take_along_dim", RuntimeError)
    if idx.size and not _backend.is_meta(idx) and int(idx.min()) < 0:
        idx = xp.where(idx < 0, idx + xs_d, idx)
    return Gather.apply(x, dim, idx)


class Gather(Op):
    """out[i][j] = x[index[i][j]][j] (dim 0)          grad_x = scatter-add of grad at index"""

    @staticmethod
    def forward(ctx: Any, x: Any, dim: int, index: Any) -> Any:
        ctx.dim, ctx.index, ctx.shape = dim, index, x.shape
        if (out := _kernels.gather_dim(x, index, dim)) is not None:
            return out  # (the eager kernel: one pass, no index arrays built)
        if any(index.shape[d] < x.shape[d] for d in range(x.ndim) if d != dim):
            x = x[tuple(slice(None) if d == dim else slice(0, index.shape[d])
                        for d in range(x.ndim))]
        return ctx.xp.take_along_axis(x, index, axis=dim)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(ScatterAdd, grad, ctx.dim, ctx.index, ctx.shape), None, None


class ScatterAdd(Op):
    """out = zeros(shape); out[index[i][j]][j] += src[i][j] (dim 0)          grad_src = grad
    gathered at index

    With ``base`` (an array, not differentiated here) the sums start from a copy of it, each
    value added in index order (float16/bfloat16 in float32, rounded once), as PyTorch's CPU
    kernel; ``_ScatterAddOnto`` then routes the base's gradient."""

    @staticmethod
    def forward(ctx: Any, src: Any, dim: int, index: Any, shape: tuple, base: Any = None) -> Any:
        ctx.dim, ctx.index = dim, index
        xp = ctx.xp
        if xp is np and src.dtype.kind == "f" and src.dtype.itemsize >= 4 and index.ndim:
            # block by block of the index's leading dim: no flat-position array of the whole
            # index; the same values added in the same order (add.at) as _accumulate
            # (the result owns its memory: the engine hands it on as .grad without a copy)
            # (C order: flat below must be a view of out, and PyTorch's result is contiguous)
            out = np.zeros(shape, src.dtype) if base is None else (
                base.reshape(shape).astype(src.dtype, order="C"))
            if _kernels.scatter_add_dim(out, index, src, dim):
                return out  # (the eager kernel: the same additions in the same order)
            flat = out.reshape(-1)
            step = max(1, _BLOCK // max(1, index[:1].size))
            for r0 in range(0, index.shape[0], step):
                lin = _dim_lin(xp, index[r0:r0 + step], dim, shape, r0)
                np.add.at(flat, lin.reshape(-1), src[r0:r0 + step].reshape(-1))
            return out
        lin = _dim_lin(xp, index, dim, shape).reshape(-1)
        return _accumulate(xp, lin, src.reshape(-1), _numel(shape), src.dtype, base,
                           opmath=True).reshape(shape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(Gather, grad, ctx.dim, ctx.index), None, None, None, None


class Scatter(Op):
    """out = x with out[index[i][j]][j] = src[i][j] (dim 0; src may be a number)
    grad_x = grad with zeros at the written positions          grad_src = grad gathered at index"""

    @staticmethod
    def forward(ctx: Any, x: Any, src: Any, dim: int, index: Any) -> Any:
        ctx.dim, ctx.index = dim, index
        out = x.copy()
        lin = _dim_lin(ctx.xp, index, dim, x.shape).reshape(-1)
        flat = out.reshape(-1)
        flat[lin] = src.reshape(-1) if _backend.is_array(src) else src
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        gx = ctx.call(Scatter, grad, 0, ctx.dim, ctx.index) if ctx.needs_input_grad[0] else None
        gs = ctx.call(Gather, grad, ctx.dim, ctx.index) if ctx.needs_input_grad[1] else None
        return gx, gs, None, None


class ScatterValue(Scatter):
    """scatter of a number (same rule as Scatter)."""

    node_name = "ScatterBackward1"


class ScatterReduce(Op):
    """out[p] = reduce({x[p] if include_self} + {src[j] : index sends j to p}); p not hit
    keeps x[p].
    sum:       grad_x = grad (0 at hit p without include_self)      grad_src = grad[p(j)]
    mean:      grad_x = grad / n            grad_src = grad[p(j)] / n[p(j)]   (n = group size)
    prod:      grad_e = grad[p] * product of the other members of e's group (exact with zeros)
    amax/amin: grad[p] is split evenly among the members equal to out[p]
    (Unlike PyTorch, an excluded self value (include_self=False) is not counted in a tie, so the
    gradient of each output sums to grad[p].)"""

    @staticmethod
    def forward(ctx: Any, x: Any, src: Any, dim: int, index: Any, reduce: str,
                include_self: bool) -> Any:
        xp = ctx.xp
        lin = _dim_lin(xp, index, dim, x.shape).reshape(-1)
        w = src.reshape(-1)
        size = x.size
        flat = x.reshape(-1)
        cnt = None
        if reduce == "mean" or (reduce == "sum" and not include_self):
            cnt = xp.bincount(lin, minlength=size)
        if reduce in ("sum", "mean"):
            acc = _accumulate(xp, lin, w, size, x.dtype, flat if include_self else None,
                              opmath=True)
            total = acc
            if reduce == "mean":
                n = (cnt + 1 if include_self else xp.maximum(cnt, 1)).astype(x.dtype)
                total = total / n if x.dtype.kind == "f" else total // n
                total = total.astype(x.dtype, copy=False)
            out = total if include_self else xp.where(cnt > 0, total, flat)
        else:
            ufunc = {"prod": xp.multiply, "amax": xp.maximum, "amin": xp.minimum}[reduce]
            out = flat.copy()
            if lin.size:
                order = xp.argsort(lin, kind="stable")
                s = lin[order]
                starts = _group_starts(xp, s)
                red = ufunc.reduceat(w[order], starts)
                pos = s[starts]
                out[pos] = ufunc(out[pos], red) if include_self else red
        ctx.lin, ctx.cnt, ctx.reduce, ctx.include_self = lin, cnt, reduce, include_self
        ctx.src_shape = src.shape
        out = out.reshape(x.shape)
        if reduce in ("prod", "amax", "amin") and any(ctx.needs_input_grad):
            ctx.save_for_backward(x, src, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        # coefficients are computed on raw arrays (bx); only products with grad use ctx.xp, so
        # the rule also runs under create_graph (prod excepted: its coefficients depend on x)
        xp = ctx.xp
        lin, cnt, reduce, inc = ctx.lin, ctx.cnt, ctx.reduce, ctx.include_self
        bx = _backend.xp_of(lin)
        if cnt is None:
            cnt = bx.bincount(lin, minlength=_numel(tuple(grad.shape)))
        g = grad.reshape(-1)
        hit = cnt > 0
        dt = data_of(grad).dtype
        if reduce == "sum":
            gx = g if inc else xp.where(hit, 0, g)
            gs = g[lin]
        elif reduce == "mean":
            n = (cnt + 1 if inc else bx.maximum(cnt, 1)).astype(dt)
            gn = g / n
            gx = gn if inc else xp.where(hit, 0, g)
            gs = gn[lin]
        else:
            x, src, out = (data_of(s) for s in ctx.saved)
            flat, w, r = x.reshape(-1), src.reshape(-1), out.reshape(-1)
            self_member = (~hit) | inc
            if reduce == "prod":
                if isinstance(grad, TensorBase):
                    raise RuntimeError(
                        "scatter_reduce(reduce='prod') does not support double backward "
                        "(create_graph=True) in ember; use reduce='sum' or compute the product "
                        "with differentiable ops"
                    )
                cx, cs = _prod_coefs(bx, flat, w, lin, self_member)
            else:
                eq_src = w == r[lin]
                eq_self = self_member & (flat == r)
                total = bx.bincount(lin[eq_src], minlength=flat.size) + eq_self
                inv = (1.0 / bx.maximum(total, 1)).astype(dt)
                cx = bx.where(eq_self, inv, 0).astype(dt)
                cs = bx.where(eq_src, inv[lin], 0).astype(dt)
            gx = g * cx
            gs = g[lin] * cs
        gx = gx.reshape(grad.shape) if ctx.needs_input_grad[0] else None
        gs = gs.reshape(ctx.src_shape) if ctx.needs_input_grad[1] else None
        return gx, gs, None, None, None, None


class _ScatterAddInto(_pw.Add):
    """x + the scattered src: scatter_add's last step (same rule as Add)."""

    node_name = "ScatterAddBackward0"


class _ScatterAddOnto(_ScatterAddInto):
    """scatter_add's last step when ``b`` was accumulated onto ``x`` already (ScatterAdd's
    ``base``): out = b, with Add's rule."""

    node_name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, b: Any) -> Any:
        return b


_BLOCK = 1 << 18  # index elements per block of ScatterAdd's positions


def _dim_lin(xp: Any, index: Any, dim: int, shape: tuple, first: int = 0) -> Any:
    """For each element of ``index`` (same ndim as ``shape``), its flat position in an array of
    ``shape`` when dim ``dim`` takes the index value and the others their own coordinate
    (``first``: ``index`` is the block of rows from ``first`` on of a larger index)."""
    strides = _c_strides(shape)
    lin = index.astype(np.int64) * strides[dim]
    nd = index.ndim
    for d in range(nd):
        if d != dim and (index.shape[d] > 1 or (d == 0 and first)):
            start = first if d == 0 else 0
            ar = xp.arange(start, start + index.shape[d], dtype=np.int64) * strides[d]
            lin += ar.reshape((-1,) + (1,) * (nd - d - 1))
    return lin


def _prod_coefs(xp: Any, flat: Any, w: Any, lin: Any, self_member: Any) -> tuple[Any, Any]:
    """d(group product)/d(member) for the self values and the src values, exact with zeros:
    the product of the other members (0 when another member is 0)."""
    size = flat.size
    dt = flat.dtype
    zero_self = self_member & (flat == 0)
    zc = xp.bincount(lin[w == 0], minlength=size) + zero_self
    # product of the nonzero members of each group
    pnz = xp.where(self_member & (flat != 0), flat, 1).astype(dt)
    if lin.size:
        order = xp.argsort(lin, kind="stable")
        s = lin[order]
        starts = _group_starts(xp, s)
        ws = w[order]
        red = xp.multiply.reduceat(xp.where(ws == 0, 1, ws).astype(dt), starts)
        pos = s[starts]
        pnz[pos] = pnz[pos] * red

    def coef(e: Any, z: Any, p: Any) -> Any:
        safe = xp.where(e == 0, 1, e)
        return xp.where(e == 0, (z == 1) * p, (z == 0) * p / safe).astype(dt)

    cx = xp.where(self_member, coef(flat, zc, pnz), 0).astype(dt)
    cs = coef(w, zc[lin], pnz[lin])
    return cx, cs


def _check_dim_index(x: Any, dim: int, index: Any, name: str, src: Any = None) -> None:
    """PyTorch's shape rules for gather/scatter: same ndim; index no larger than x apart from
    ``dim`` (and no larger than src anywhere)."""
    xs, ids = tuple(x._data.shape), tuple(index._data.shape)
    if len(ids) != len(xs) and not (len(ids) <= 1 and len(xs) <= 1):
        raise RuntimeError(
            f"{name}(): Index tensor must have the same number of dimensions as input tensor "
            f"(index shape {list(ids)}, input shape {list(xs)})"
        )
    too_big = any(ids[d] > xs[d] for d in range(len(ids)) if d != dim)
    ss = tuple(src._data.shape) if src is not None else None
    if ss is not None and len(ss) == len(ids):
        too_big = too_big or any(ids[d] > ss[d] for d in range(len(ids)))
    if too_big:
        extra = f" and to be no larger size than src {list(ss)}" if ss is not None else ""
        raise RuntimeError(
            f"{name}(): Expected index {list(ids)} to be no larger than self {list(xs)} apart "
            f"from dimension {dim}{extra}"
        )


def _scatter_prep(input: Any, dim: int, index: Any, src: Any, name: str) -> tuple:
    index = _as_index_tensor(index, name)
    idx = _check_int_index(index, name)
    dim = wrap_dim(dim, input._data.ndim)
    if isinstance(src, TensorBase) and src._data.dtype != input._data.dtype:
        raise RuntimeError(
            f"{name}(): Expected self.dtype to be equal to src.dtype (self is {input.dtype}, src "
            f"is {src.dtype}); convert src first, e.g. src.to(self.dtype)"
        )
    _check_dim_index(input, dim, index, name, src if isinstance(src, TensorBase) else None)
    _check_nonneg_bounds(idx, input._data.shape[dim] if input._data.ndim else 1, dim, name)
    if isinstance(src, TensorBase) and tuple(src._data.shape) != tuple(idx.shape):
        src = getitem(src, tuple(slice(0, s) for s in idx.shape))
    return dim, idx, src
