"""The compressed sparse layouts' conversions and products: ``to_layout`` (a dense or sparse
tensor as CSR, CSC, BSR or BSC, as ``to_sparse_csr``/``_csc``/``_bsr``/``_bsc`` convert),
``to_coo``, the CSR <-> CSC and BSR <-> BSC transposes, ``torch.sparse.mm(csr, dense, reduce)``,
and the ops autograd records for them. The ``Compressed`` record and the kernels every sparse
layout shares are ``ops/sparse.py``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtype, _dtype_info
from .._tensor_base import TensorBase
from ..autograd.function import Op
from .sparse import (
    BLOCK_LAYOUTS,
    COO,
    Compressed,
    _cpp,
    _Record,
    _ToSparse,
    _Values,
    _xp,
    compressed_to_coo,
    convert_rec,
    coo_to_compressed,
    dense_to_coo,
    element_positions,
    make,
    permute_rec,
    record,
    tracking,
)

__all__: list[str] = []  # (the public constructors: ops/sparse_creation.py)


# ---------------------------------------------------------------------------------------------
# conversions, transposes and products


_LAYOUT_NAMES = {_dtype_info.sparse_coo: "Sparse", _dtype_info.sparse_csr: "SparseCsr",
                 _dtype_info.sparse_csc: "SparseCsc", _dtype_info.sparse_bsr: "SparseBsr",
                 _dtype_info.sparse_bsc: "SparseBsc", _dtype_info.strided: "Strided"}


def layout_name(layout: Any) -> str:
    """A layout as PyTorch's messages name it (``SparseCsc``)."""
    return _LAYOUT_NAMES.get(layout, str(layout))


def to_layout(x: Any, layout: Any, blocksize: Any = None, dense_dim: int | None = None) -> Any:
    """``x`` (dense or sparse) as a matrix in the compressed ``layout``, as PyTorch's
    ``to_sparse_csr``/``_csc``/``_bsr``/``_bsc`` convert it (autograd records the conversion);
    a dense ``x`` keeps its last ``dense_dim`` dims dense (a hybrid tensor)."""
    lname = layout_name(layout)
    src = x._data
    sparse_src = isinstance(src, _Record)
    block = layout in BLOCK_LAYOUTS
    kind = lname[6:].lower()
    if isinstance(src, Compressed):
        name = ("to_sparse_" if src.layout is layout else "sparse_compressed_to_sparse_") + kind
    else:
        name = ("sparse_coo_to_sparse_" if sparse_src else "dense_to_sparse_") + kind
    if block == (blocksize is None):
        src_name = layout_name(src.layout if sparse_src else _dtype_info.strided)
        raise RuntimeError(
            f"{name if sparse_src else 'dense_to_sparse'}: conversion from {src_name} to "
            f"{lname} {'without' if block else 'with'} blocksize argument given is not "
            "supported")
    bs = _blocksize(blocksize, name) if block else None
    if isinstance(src, Compressed):
        if src.blocked and not block:
            raise RuntimeError(f"{name}: expected SparseCsr or SparseCsc layout but got "
                               f"{layout_name(src.layout)}")
        if src.blocked and block and src.blocksize != bs:
            raise RuntimeError(
                f"{name}: conversion from {layout_name(src.layout)} to {lname} with blocksize "
                f"changed from {list(src.blocksize)} to {list(bs)} is not supported")
        if src.layout is layout:
            return x
    if len(src.shape) < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got 1)"
                         f" ({name} needs a matrix, got shape {tuple(src.shape)})")
    dd = src.dense_dim if sparse_src else int(dense_dim or 0)
    if len(src.shape) - dd != 2:
        raise RuntimeError(
            f"{name}: expected a matrix of 2 sparse dims (got shape {tuple(src.shape)} with "
            f"{dd} dense dims): ember's compressed sparse tensors have no batch dims (pass "
            "dense_dim= for trailing dense dims)")
    if bs is not None and (src.shape[0] % bs[0] or src.shape[1] % bs[1]):
        raise RuntimeError(f"{name}: tensor sparse size ({src.shape[0]},{src.shape[1]}) must be "
                           f"divisible by given blocksize ({bs[0]},{bs[1]})")
    if sparse_src:
        out = convert_rec(src, layout, bs)
        return record(_Convert, out, x, out)
    out = coo_to_compressed(dense_to_coo(src, 2), layout, bs)
    return record(_ToSparse, out, x, out)


def to_csr(x: Any) -> Any:
    return to_layout(x, _dtype_info.sparse_csr)


def to_coo(s: Any) -> Any:
    """A compressed tensor as COO (its stored elements, in storage order); a COO one itself."""
    if isinstance(s._data, COO):
        return s
    out = compressed_to_coo(s._data)
    return record(_Convert, out, s, out)


def transpose_rec(r: Compressed) -> Compressed:
    """The transpose of a compressed matrix: the same arrays in the other direction's layout
    (CSR <-> CSC, BSR <-> BSC; blocks transposed)."""
    swap = {_dtype_info.sparse_csr: _dtype_info.sparse_csc,
            _dtype_info.sparse_csc: _dtype_info.sparse_csr,
            _dtype_info.sparse_bsr: _dtype_info.sparse_bsc,
            _dtype_info.sparse_bsc: _dtype_info.sparse_bsr}[r.layout]
    vals = r.values.swapaxes(1, 2) if r.blocked else r.values
    return Compressed(r.compressed, r.plain, vals, (r.shape[1], r.shape[0]) + r.shape[2:], swap)


def transpose_compressed(s: Any) -> Any:
    out = transpose_rec(s._data)
    return record(_TransposeCompressed, out, s, out)


def compressed_values(s: Any) -> tuple[Compressed, Any]:
    """A compressed tensor's record and its values as a tensor that carries ``s``'s gradient
    (``_Values``), or a plain alias when nothing tracks."""
    rec = s._data
    if tracking(s):
        return rec, _Values.apply(s)
    return rec, TensorBase._make(rec.values)


def mm_reduce_array(rec: Compressed, d: Any, reduce: str) -> tuple:
    """``torch.sparse.mm(csr, d, reduce)``'s result, with what its backward needs: the stored
    elements' rows and columns and each product's weight in its output (None: all 1)."""
    xp = _xp(d)
    rows, cols = element_positions(rec)
    prod = rec.values[:, None] * d[cols]
    out = xp.zeros((rec.shape[0], d.shape[1]), dtype=prod.dtype)
    w: Any = None
    if reduce in ("sum", "mean"):
        xp.add.at(out, rows, prod)
        if reduce == "mean":
            counts = xp.maximum(xp.diff(rec.compressed), 1).astype(prod.dtype)
            out /= counts[:, None]
            w = (1 / counts)[rows][:, None]
    elif prod.shape[0]:  # amax / amin: the first winner of each output takes its gradient
        best = xp.full(out.shape, np.inf if reduce == "amin" else -np.inf, dtype=prod.dtype)
        (xp.minimum if reduce == "amin" else xp.maximum).at(best, rows, prod)
        nnz = prod.shape[0]
        order = xp.arange(nnz, dtype=np.int64)[:, None]
        first = xp.full(out.shape, nnz, dtype=np.int64)
        xp.minimum.at(first, rows, xp.where(prod == best[rows], order, nnz))
        w = (first[rows] == order).astype(prod.dtype)
        out = xp.where(xp.isinf(best), 0, best).astype(prod.dtype)
    return out, rows, cols, w


def sparse_mm_reduce(s: Any, d: Any, reduce: str) -> Any:
    """``torch.sparse.mm(s, d, reduce)``: a CSR matrix times a dense one, the products of each
    row reduced by ``reduce`` (``sum``, ``mean``, ``amax``/``max``, ``amin``/``min``)."""
    rec = s._data
    red = {"max": "amax", "min": "amin"}.get(reduce, reduce)
    if red not in ("sum", "mean", "amax", "amin"):
        raise RuntimeError(f"sparse_mm_reduce: reduce type of {reduce} has not been enabled "
                           "(sum, mean, amax and amin are)")
    if not isinstance(rec, Compressed):
        raise NotImplementedError(
            f"Could not run 'aten::_sparse_mm_reduce_impl' with arguments from the "
            f"'{layout_name(rec.layout)}CPU' backend (torch.sparse.mm with reduce takes a CSR "
            "matrix: convert with .to_sparse_csr())")
    if rec.layout is not _dtype_info.sparse_csr:
        raise RuntimeError(f"sparse_mm_reduce: expect self to be SparseCsr, got "
                           f"{layout_name(rec.layout)}")
    if rec.dense_dim:
        raise RuntimeError(f"sparse_mm_reduce: expected a matrix without dense dims, got shape "
                           f"{tuple(rec.shape)}")
    if not isinstance(d, TensorBase) or d._data.ndim != 2 or d._data.shape[0] != rec.shape[1]:
        shape = tuple(d.shape) if isinstance(d, TensorBase) else type(d).__name__
        raise RuntimeError(f"sparse_mm_reduce: expected a dense matrix of {rec.shape[1]} rows "
                           f"for a {tuple(rec.shape)} sparse one, got {shape}")
    if rec.dtype != d._data.dtype:
        raise RuntimeError(f"expected scalar type {_cpp(rec.dtype)} but found "
                           f"{_cpp(d._data.dtype)} (torch.sparse.mm of a sparse "
                           f"{_dtype.from_numpy(rec.dtype)} matrix and a dense "
                           f"{_dtype.from_numpy(d._data.dtype)} one)")
    if tracking(s, d):
        return _SparseMMReduce.apply(s, d, red)
    return TensorBase._make(mm_reduce_array(rec, d._data, red)[0])


class _Convert(Op):
    """out = a sparse tensor in another sparse layout
    grad_input = grad in the input's layout (a dense grad stays dense)"""

    node_name = "ToSparseBackward0"

    @staticmethod
    def forward(ctx: Any, rec: _Record, out: _Record) -> Any:
        ctx.layout = rec.layout, getattr(rec, "blocksize", None)
        return out.values

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        if isinstance(grad, TensorBase):
            return make(convert_rec(grad._data, *ctx.layout)), None
        return grad, None


class _TransposeCompressed(Op):
    """out = the transpose of a compressed matrix (CSR <-> CSC, BSR <-> BSC)
    grad_input = grad transposed back"""

    node_name = "TBackward0"

    @staticmethod
    def forward(ctx: Any, rec: Compressed, out: Compressed) -> Any:
        return out.values

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        if not isinstance(grad, TensorBase):
            return grad.T, None
        g = grad._data
        return make(transpose_rec(g) if isinstance(g, Compressed) else permute_rec(g, (1, 0))), None


class _SparseMMReduce(Op):
    """out[i] = reduce over the stored j of row i of v_ij * D[j] (a CSR matrix S, D dense;
    ``sum``, ``mean``, ``amax``, ``amin``; rows with nothing stored give 0)
    grad_S = sum_k grad[i, k] D[j, k] w_ijk at S's elements (CSR), grad_D[j] = sum_i v_ij w_ij grad[i]
    (w: 1 for sum, 1 / (the row's count) for mean, 1 at each (i, k)'s first winner for amax/amin)"""

    node_name = "SparseMmReduceImplBackward0"

    @staticmethod
    def forward(ctx: Any, rec: Compressed, d: Any, reduce: str) -> Any:
        out, ctx.rows, ctx.cols, ctx.w = mm_reduce_array(rec, d, reduce)
        ctx.rec = rec
        ctx.save_for_backward(d)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (d,) = ctx.saved
        rec, rows, cols, w = ctx.rec, ctx.rows, ctx.cols, ctx.w
        g = grad[rows]
        if w is not None:
            g = g * w
        gs = gd = None
        if ctx.needs_input_grad[0]:
            gs = make(rec.like((g * d[cols]).sum(axis=1).astype(rec.values.dtype)))
        if ctx.needs_input_grad[1]:
            gd = _xp(d).zeros(d.shape, dtype=d.dtype)
            _xp(d).add.at(gd, cols, (g * rec.values[:, None]).astype(d.dtype))
        return gs, gd, None


def _blocksize(blocksize: Any, name: str) -> tuple:
    if isinstance(blocksize, TensorBase):
        blocksize = blocksize.tolist()
    if isinstance(blocksize, (int, np.integer)):
        blocksize = (int(blocksize), int(blocksize))
    bs = tuple(int(b) for b in blocksize)
    if len(bs) != 2:
        raise RuntimeError(f"{name}: blocksize needs to be a tuple of size 2, but got {len(bs)}")
    if min(bs) < 1:
        raise RuntimeError(f"{name}: blocksize {bs} must be positive")
    return bs
