"""Sorting and selection: sort, argsort, msort, topk, kthvalue (torch's "Comparison Ops"),
unique, unique_consecutive, searchsorted; and the counting ops bincount and histc (torch's
"Other operations").

Their neighbours: gather/scatter in ``indexing_scatter.py`` (``Sort``'s backward is its
``ScatterAdd``); max/min/median/mode along a dim in ``reduction.py`` and ``reduction_stats.py``.

Sorts are stable; a descending sort keeps equal elements in their original order and puts NaN
first, as PyTorch's. sort, topk and kthvalue return ``torch.return_types`` tuples
(``return_types.py``); only the values are differentiable (the gradient goes back to the
selected positions).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .. import _kernels_loader as _kernels
from .._tensor_base import TensorBase, data_of, wrap_dim
from ..autograd.function import Op
from . import _out, return_types
from ._index import _atleast_1d
from ._promote import _unordered
from .indexing_scatter import ScatterAdd

__all__ = [
    "sort", "argsort", "msort", "topk", "kthvalue", "unique", "unique_consecutive", "searchsorted",
    "bincount", "histc", "_convert_indices_from_coo_to_csr", "_convert_indices_from_csr_to_coo",
]


# ---------------------------------------------------------------------------------------------
# sorting and selection


def sort(input: Any, dim: int = -1, descending: bool = False, *, stable: bool | None = False,
         out: Any = None) -> Any:
    """``(values, indices)`` sorted along ``dim`` (always stable; NaN sorts as the largest)."""
    if input._data.dtype.kind == "c":
        raise _unordered(input, "Sort does not support complex dtypes on CPU", RuntimeError)
    x, d, was0 = _dim_1d(input.detach(), dim)
    idx = _argsort(_backend.xp_of(x._data), x._data, d, descending)
    if was0:
        res = return_types.sort(_take(input, d, idx, Sort, ()), TensorBase._make(idx.reshape(())))
    else:
        res = return_types.sort(_take(input, d, idx, Sort), TensorBase._make(idx))
    return res if out is None else _out.write(out, res, "sort")


def argsort(input: Any, dim: int = -1, descending: bool = False, *, stable: bool = False,
            out: Any = None) -> Any:
    """The int64 indices that sort ``input`` along ``dim``."""
    if input._data.dtype.kind == "c":
        raise _unordered(input, "Sort does not support complex dtypes on CPU", RuntimeError)
    x, d, was0 = _dim_1d(input, dim)
    idx = _argsort(_backend.xp_of(x._data), x._data, d, descending)
    res = TensorBase._make(idx.reshape(()) if was0 else idx)
    return res if out is None else _out.write(out, res, "argsort")


def msort(input: Any, *, out: Any = None) -> Any:
    """``sort(input, dim=0).values``."""
    res = sort(input, 0).values
    return res if out is None else _out.write(out, res, "msort")


def topk(input: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *,
         out: Any = None) -> Any:
    """The ``k`` largest (or smallest) values along ``dim`` and their indices, sorted."""
    if input._data.dtype.kind == "c":
        raise _unordered(input, "topk does not support complex dtypes on CPU", RuntimeError)
    x, d, was0 = _dim_1d(input.detach(), dim)
    a = x._data
    xp = _backend.xp_of(a)
    n = a.shape[d]
    k = operator.index(k)
    if not 0 <= k <= n:
        raise RuntimeError(
            f"selected index k out of range (k = {k}, but dimension {d} has size {n})"
        )
    if d == a.ndim - 1 and (idx := _kernels.topk(a, k, largest)) is not None:
        pass  # (one scan per row; the same indices: used only where no tie decides them)
    elif 0 < k < n and n > 64:  # partition first: O(n), then sort only the k candidates
        if largest:
            cand = xp.argpartition(a, n - k, axis=d)
            cand = xp.take(cand, xp.arange(n - k, n), axis=d)
        else:
            cand = xp.argpartition(a, k - 1, axis=d)
            cand = xp.take(cand, xp.arange(k), axis=d)
        # the candidates in index order, so equal values keep it through the stable sort (the
        # partition leaves them in an order that depends on NumPy's sorting code for the CPU)
        cand = xp.sort(cand, axis=d)
        order = _argsort(xp, xp.take_along_axis(a, cand, axis=d), d, largest)
        idx = xp.take_along_axis(cand, order, axis=d)
    else:
        idx = _argsort(xp, a, d, largest)
        idx = xp.take(idx, xp.arange(k), axis=d)
    if was0:
        res = return_types.topk(_take(input, d, idx, Topk, ()), TensorBase._make(idx.reshape(())))
    else:
        res = return_types.topk(_take(input, d, idx, Topk), TensorBase._make(idx))
    return res if out is None else _out.write(out, res, "topk")


def kthvalue(input: Any, k: int, dim: int = -1, keepdim: bool = False, *, out: Any = None) -> Any:
    """The ``k``-th smallest value along ``dim`` and its index."""
    if input._data.dtype.kind == "c":
        raise _unordered(input, "\"kthvalue_cpu\" not implemented for '{dt}'")
    x, d, was0 = _dim_1d(input.detach(), dim)
    a = x._data
    xp = _backend.xp_of(a)
    n = a.shape[d]
    k = operator.index(k)
    if not 1 <= k <= n:
        raise RuntimeError(
            f"kthvalue(): selected number k out of range for dimension {d} (k = {k}, size {n})"
        )
    idx = _argsort(xp, a, d, False)
    idx = xp.take(idx, xp.arange(k - 1, k), axis=d)
    if was0:
        res = return_types.kthvalue(_take(input, d, idx, Kthvalue, ()),
                                     TensorBase._make(idx.reshape(())))
        return res if out is None else _out.write(out, res, "kthvalue")
    shape = idx.shape
    if not keepdim:
        shape = tuple(s for i, s in enumerate(idx.shape) if i != d)
    res = return_types.kthvalue(_take(input, d, idx, Kthvalue, shape),
                                 TensorBase._make(idx.reshape(shape)))
    return res if out is None else _out.write(out, res, "kthvalue")


class Sort(Op):
    """out = x's values at ``idx`` along ``dim``, reshaped to ``shape`` (a 0-d x counts as one
    element)          grad_x = grad scattered back to idx (as Gather's)"""

    @staticmethod
    def forward(ctx: Any, x: Any, dim: int, idx: Any, shape: tuple) -> Any:
        ctx.dim, ctx.idx, ctx.xshape = dim, idx, x.shape
        a = x.reshape(1) if x.ndim == 0 else x
        return ctx.xp.take_along_axis(a, idx, axis=dim).reshape(shape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        shape = ctx.xshape
        g = grad.reshape(tuple(ctx.idx.shape))
        full = ctx.call(ScatterAdd, g, ctx.dim, ctx.idx, shape if len(shape) else (1,))
        return full.reshape(shape), None, None, None


class Topk(Sort):
    """topk's values (same rule as Sort)."""


class Kthvalue(Sort):
    """kthvalue's values (same rule as Sort)."""


def _argsort(xp: Any, a: Any, axis: int, descending: bool) -> Any:
    """Stable argsort; descending keeps equal elements in their original order and puts NaN
    first (PyTorch's order), by sorting the reversed array."""
    if not descending:
        return xp.argsort(a, axis=axis, kind="stable")
    n = a.shape[axis]
    rev = xp.flip(xp.argsort(xp.flip(a, axis), axis=axis, kind="stable"), axis)
    return (n - 1) - rev


def _take(x: Any, dim: int, idx: Any, op: Any = Sort, shape: Any = None) -> Any:
    """x's values at ``idx`` along ``dim`` (differentiable), reshaped to ``shape``."""
    return op.apply(x, dim, idx, tuple(idx.shape) if shape is None else tuple(shape))


def _dim_1d(input: Any, dim: int) -> tuple[Any, int, bool]:
    """A 0-d tensor is handled as a 1-element vector (PyTorch's sort/topk accept 0-d)."""
    if input._data.ndim == 0:
        wrap_dim(dim, 0)
        return _atleast_1d(input), 0, True
    return input, wrap_dim(dim, input._data.ndim), False


# ---------------------------------------------------------------------------------------------
# unique and searchsorted


def unique(input: Any, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim: int | None = None) -> Any:
    """The sorted unique elements (or slices along ``dim``), optionally with the inverse
    indices and counts."""
    a = input._data
    if a.dtype.kind == "c":
        raise _unordered(input, "\"unique\" not implemented for '{dt}'")
    xp = _backend.xp_of(a)
    if dim is None and xp is np and a.dtype.kind in "iu" and a.size:
        vals, inv, counts = _unique_ints(a, return_inverse, return_counts)
    elif dim is None:
        vals, inv, counts = xp.unique(a.reshape(-1), return_inverse=True, return_counts=True,
                                      equal_nan=False)
        inv = inv.reshape(a.shape)
    else:
        d = wrap_dim(dim, a.ndim)
        vals, inv, counts = xp.unique(a, return_inverse=True, return_counts=True, axis=d,
                                      equal_nan=False)
        inv = inv.reshape(-1)
    return _unique_result(vals, inv, counts, return_inverse, return_counts)


def unique_consecutive(input: Any, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Any:
    """Collapse runs of equal consecutive elements (or slices along ``dim``)."""
    a = input._data
    if a.dtype.kind == "c":
        raise _unordered(input, "\"unique\" not implemented for '{dt}'")
    xp = _backend.xp_of(a)
    if dim is None:
        flat = a.reshape(-1)
        rows = flat
    else:
        d = wrap_dim(dim, a.ndim)
        moved = xp.moveaxis(a, d, 0)
        rows = moved.reshape(moved.shape[0], -1)
        flat = moved
    n = rows.shape[0]
    change = xp.ones(n, dtype=bool)
    if n > 1:
        diff = rows[1:] != rows[:-1]
        change[1:] = diff if diff.ndim == 1 else diff.any(axis=1)
    vals = flat[change]
    if dim is not None:
        vals = xp.moveaxis(vals, 0, d)
    starts = xp.flatnonzero(change)
    counts = xp.diff(xp.concatenate([starts, xp.asarray([n], dtype=starts.dtype)]))
    inv = xp.cumsum(change) - 1
    if dim is None:
        inv = inv.reshape(a.shape)
    return _unique_result(vals, inv, counts, return_inverse, return_counts)


def searchsorted(sorted_sequence: Any, input: Any, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter: Any = None,
                 out: Any = None) -> Any:
    """Insertion indices of ``input`` into ``sorted_sequence`` along its last dim (batched
    over the leading dims)."""
    for t in (sorted_sequence, input):
        if isinstance(t, TensorBase) and t._data.dtype.kind == "c":
            raise _unordered(t, "\"searchsorted_out_cpu\" not implemented for '{dt}'")
    seq = sorted_sequence._data
    xp = _backend.xp_of(seq)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(
                f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}"
            )
        if right and side == "left":
            raise RuntimeError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of "
                "left while right was True"
            )
        right = side == "right"
    if sorter is not None:
        seq = xp.take_along_axis(seq, data_of(sorter), axis=-1)
    vals = input._data if isinstance(input, TensorBase) else xp.asarray(input)
    how = "right" if right else "left"
    if seq.ndim <= 1:
        res = xp.searchsorted(seq.reshape(-1), vals, side=how)
    else:
        if vals.ndim != seq.ndim or tuple(vals.shape[:-1]) != tuple(seq.shape[:-1]):
            raise RuntimeError(
                "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                "dimensions of boundaries tensor and input value tensor must match, but we got "
                f"boundaries tensor {list(seq.shape)} and input value tensor {list(vals.shape)}"
            )
        res = _batched_searchsorted(xp, seq, vals, right)
    res = TensorBase._make(xp.asarray(res).astype(np.int32 if out_int32 else np.int64))
    return res if out is None else _out.write(out, res, "searchsorted")


def _unique_ints(a: np.ndarray, ret_inv: bool, ret_counts: bool) -> tuple:
    """unique of a host integer array (values, inverse, counts: None where not asked): by
    counting where the values span at most a few times their number (a table of counts, no
    sort), else NumPy's sort with the inverse's argsort only when asked. Integers have one
    representation each, so any exact method gives the same results."""
    lo, hi = int(a.min()), int(a.max())
    span = hi - lo + 1
    if span > 4 * a.size + 65536:
        if not (ret_inv or ret_counts):  # (a sort and a mask: NumPy's unique hashes first)
            srt = np.sort(a, axis=None)
            keep = np.empty(srt.size, bool)
            keep[0] = True
            np.not_equal(srt[1:], srt[:-1], out=keep[1:])
            return srt[keep], None, None
        vals, inv, counts = np.unique(a.reshape(-1), return_inverse=True, return_counts=True)
        return vals, inv.reshape(a.shape), counts
    if a.dtype.itemsize < 8:  # (widened first: 127 - -128 wraps in int8)
        off = a.astype(np.intp) - lo
    else:  # (in its own dtype: no wrap, every value is at least lo and the span is small)
        off = (a - a.dtype.type(lo)).astype(np.intp, copy=False)
    cnt = np.bincount(off.reshape(-1), minlength=span)
    present = np.flatnonzero(cnt)
    if a.dtype.itemsize < 8:
        vals = (present + lo).astype(a.dtype)
    else:  # (a uint64 lo may pass int64's range; the sums stay within [lo, hi])
        vals = present.astype(a.dtype) + a.dtype.type(lo)
    inv = None
    if ret_inv:
        rank = np.cumsum(cnt != 0) - 1
        inv = rank[off]
    return vals, inv, cnt[present] if ret_counts else None


def _unique_result(vals: Any, inv: Any, counts: Any, ret_inv: bool, ret_counts: bool) -> Any:
    out = [TensorBase._make(vals)]
    if ret_inv:
        out.append(TensorBase._make(inv.astype(np.int64, copy=False)))
    if ret_counts:
        out.append(TensorBase._make(counts.astype(np.int64, copy=False)))
    return out[0] if len(out) == 1 else tuple(out)


def _batched_searchsorted(xp: Any, seq: Any, vals: Any, right: bool) -> Any:
    """Row-wise searchsorted without a Python loop: stable-sort each row of [values, sequence]
    (or [sequence, values] for right) and count the sequence elements before each value."""
    n, m = seq.shape[-1], vals.shape[-1]
    ct = xp.result_type(seq.dtype, vals.dtype)
    s2 = seq.reshape(-1, n).astype(ct)
    v2 = vals.reshape(-1, m).astype(ct)
    rows = s2.shape[0]
    cat = xp.concatenate([s2, v2] if right else [v2, s2], axis=1)
    order = xp.argsort(cat, axis=1, kind="stable")
    is_seq = order < n if right else order >= m
    before = xp.cumsum(is_seq, axis=1)
    is_val = ~is_seq
    slots = order[is_val].reshape(rows, m) - (n if right else 0)
    found = before[is_val].reshape(rows, m)
    res = xp.empty((rows, m), np.int64)
    res[xp.arange(rows)[:, None], slots] = found
    return res.reshape(vals.shape)


# ---------------------------------------------------------------------------------------------
# counting (torch's "Other operations")


def bincount(input: Any, weights: Any = None, minlength: int = 0) -> Any:
    """Counts of each value in a 1-D non-negative integer tensor (sums of ``weights``)."""
    a = input._data
    xp = _backend.xp_of(a)
    if a.dtype.kind == "c":  # (PyTorch's class for complex input)
        raise NotImplementedError(f"\"bincount\" not implemented for "
                                  f"'{_dtype.legacy_name(input.dtype)}' (it counts non-negative "
                                  "integers)")
    if a.ndim != 1 or a.dtype.kind not in "iub" or (a.size and int(a.min()) < 0):
        raise RuntimeError(
            f"bincount only supports 1-d non-negative integral inputs (got shape {list(a.shape)},"
            f" dtype {input.dtype})."
        )
    if weights is None:
        return TensorBase._make(xp.bincount(a, minlength=minlength).astype(np.int64, copy=False))
    w = data_of(weights)
    if w.shape != a.shape:
        raise RuntimeError(
            f"bincount(): weights should be 1-d and have the same length as input (input "
            f"{list(a.shape)}, weights {list(w.shape)})"
        )
    if w.dtype == np.float32 and xp is np:  # PyTorch: float32 weights add up in float32, in
        out = np.zeros(max(minlength, int(a.max()) + 1 if a.size else 0), np.float32)
        np.add.at(out, a, w)  # order; any other dtype sums (and returns) float64
        return TensorBase._make(out)
    out = xp.bincount(a, weights=w, minlength=minlength)
    dt = np.float32 if w.dtype == np.float32 else np.float64
    return TensorBase._make(out.astype(dt, copy=False))


def histc(input: Any, bins: int = 100, min: Any = 0, max: Any = 0, *, out: Any = None) -> Any:
    """A histogram of ``bins`` equal bins over [min, max] (the data's range when both are 0);
    elements outside are ignored."""
    a = input._data
    if a.dtype.kind != "f" and a.dtype.kind != "V":
        raise NotImplementedError(
            f'"histogram_cpu" not implemented for {input.dtype}: histc needs a floating tensor; '
            "convert first, e.g. x.float()"
        )
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for dimension 0")
    xp = _backend.xp_of(a)
    flat = a.reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and flat.size:
        lo, hi = float(flat.min()), float(flat.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"torch.histc(): max must be larger than min (min {lo}, max {hi})")
    keep = flat[(flat >= lo) & (flat <= hi)]
    lo_a, hi_a = xp.asarray(lo, a.dtype), xp.asarray(hi, a.dtype)
    pos = ((keep - lo_a) / (hi_a - lo_a) * bins).astype(np.int64)
    pos = xp.minimum(pos, bins - 1)
    res = TensorBase._make(xp.bincount(pos, minlength=bins).astype(a.dtype))
    return res if out is None else _out.write(out, res, "histc")


# ---------------------------------------------------------------------------------------------
# compressed sparse row indices


def _convert_indices_from_coo_to_csr(input: Any, size: int, *, out_int32: bool = False,
                                     out: Any = None) -> Any:
    """CSR row pointers (``size + 1`` values) from the sorted COO row indices ``input``:
    ``crow[i]`` counts the indices below ``i``; int64, or int32 with ``out_int32=True``."""
    a = _sparse_index(input, "convert_indices_from_coo_to_csr")
    if a.ndim > 1:
        raise RuntimeError(f"Input is supposed to be a vector, but got {a.ndim} dimensional "
                           f"tensor (shape {tuple(a.shape)}).")
    xp = _backend.xp_of(a)
    size = operator.index(size)
    crow = xp.searchsorted(a.reshape(-1), xp.arange(size + 1), side="left")
    result = TensorBase._make(crow.astype(np.int32 if out_int32 else np.int64))
    return result if out is None else _out.write(out, result, "_convert_indices_from_coo_to_csr")


def _convert_indices_from_csr_to_coo(crow_indices: Any, col_indices: Any, *,
                                     out_int32: bool = False, transpose: bool = False,
                                     out: Any = None) -> Any:
    """COO indices ``[row, col]`` (``[col, row]`` with ``transpose=True``), shape ``(2, nnz)``,
    from CSR ``crow_indices`` and ``col_indices``; a batched CSR (``crow`` of shape ``(B, n+1)``)
    gives ``[batch, row, col]``. int64, or int32 with ``out_int32=True``."""
    name = "convert_indices_from_csr_to_coo"
    crow, col = _sparse_index(crow_indices, name), _sparse_index(col_indices, name)
    xp = _backend.xp_of(crow)
    dt = np.int32 if out_int32 else np.int64
    crow2 = crow.reshape(-1, crow.shape[-1] if crow.ndim else 1).astype(np.int64)
    col2 = col.reshape(crow2.shape[0], -1)
    nnz = col2.shape[1]
    counts = (crow2[:, 1:] - crow2[:, :-1]).reshape(-1)
    nrows = crow2.shape[1] - 1
    rows = xp.repeat(xp.tile(xp.arange(nrows, dtype=np.int64), crow2.shape[0]), counts)
    if rows.size != col2.size:
        raise RuntimeError(f"{name}: crow_indices {tuple(crow.shape)} end at {counts.sum()} "
                           f"values, col_indices {tuple(col.shape)} holds {col2.size}")
    rows = rows.reshape(col2.shape)
    pair = [col2, rows] if transpose else [rows, col2]
    if crow.ndim > 1:
        batch = xp.repeat(xp.arange(crow2.shape[0], dtype=np.int64), nnz).reshape(-1, nnz)
        pair = [batch] + pair
    result = xp.stack([p.reshape(-1).astype(dt) for p in pair])
    result = TensorBase._make(result)
    return result if out is None else _out.write(out, result, "_convert_indices_from_csr_to_coo")


def _sparse_index(t: Any, name: str) -> Any:
    a = data_of(t)
    if a.dtype.kind not in "iu":
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                  f"'{_dtype.legacy_name(t.dtype)}' (indices are integers)")
    return a
