"""Sparse tensors' constructors and products with dense matrices: ``sparse_coo_tensor``,
``sparse_csr_tensor``, ``spmm``, ``smm``, ``dsmm``, ``hsmm`` (the records, kernels and backward
rules they build on are ``ops/sparse.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _backend, _dtype, _dtype_info
from .._tensor_base import TensorBase
from .sparse import (
    COO,
    CSR,
    from_values,
    is_sparse,
    make,
    sparse_mm,
    to_sparse,
)

__all__ = ["sparse_coo_tensor", "sparse_csr_tensor", "spmm", "smm", "dsmm", "hsmm"]


def sparse_coo_tensor(indices: Any = None, values: Any = None, size: Any = None, *, dtype: Any = None,
                      device: Any = None, pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> Any:
    """A sparse COO tensor: ``indices`` (sparse_dim x nnz), ``values`` (nnz, *dense_shape);
    ``size`` defaults to the smallest that holds the indices. ``sparse_coo_tensor(size)`` (a
    size only) makes an empty one."""
    if values is None:
        if size is None and isinstance(indices, (tuple, list)) and all(
                isinstance(s, int) for s in indices):
            size, indices = tuple(indices), None
        if indices is not None:
            raise TypeError("sparse_coo_tensor(): takes indices and values, or a size")
        dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
        rec = COO(np.zeros((len(size), 0), np.int64), np.zeros((0,), dt.np), size, True)
        return _finish(make(rec), device, requires_grad)
    dt = _dtype.to_dtype(dtype) if dtype is not None else None
    idx = _as_array(indices)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"indices must be an int64 tensor (got {idx.dtype.name} indices): "
                           "convert them, e.g. indices.long()")
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    idx = idx.astype(np.int64, copy=False)
    vt = None
    if isinstance(values, TensorBase):  # its values are the tensor's own (PyTorch aliases them)
        vt = values if dt is None or values._data.dtype == dt.np else values.to(dt)
        if vt._data.ndim == 0:
            vt = vt.reshape(1)
        vals = vt._data
    else:
        vals = _as_array(values, dt)
        if vals.ndim == 0:
            vals = vals.reshape(1)
        if dt is not None and vals.dtype != dt.np:
            vals = vals.astype(dt.np)
    sd, nnz = idx.shape
    if vals.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{nnz}, nnz from values: {vals.shape[0]}")
    if size is None:
        mx = (idx.max(axis=1) + 1) if nnz else np.zeros(sd, np.int64)
        size = tuple(int(m) for m in mx) + tuple(vals.shape[1:])
    size = tuple(int(s) for s in size)
    dd = vals.ndim - 1
    if len(size) != sd + dd:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = "
                           f"{len(size)}, sparse_dim = {sd}, dense_dim = {dd}")
    if tuple(vals.shape[1:]) != size[sd:]:
        raise RuntimeError(f"values has incorrect size, expected {list(size[sd:])}, got "
                           f"{list(vals.shape[1:])} (the dense dims of size)")
    if nnz:
        lo = idx.min(axis=1)
        hi = idx.max(axis=1)
        for k in range(sd):
            if lo[k] < 0:
                raise RuntimeError(f"found negative index {int(lo[k])} for dim {k}")
            if hi[k] >= size[k]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {k}, size is "
                                   f"{size[k]} but found index {int(hi[k])}")
    if is_coalesced is None:
        is_coalesced = nnz <= 1
    rec = COO(idx, vals, size, bool(is_coalesced))
    out = from_values(rec, vt) if vt is not None else make(rec)
    return _finish(out, device, requires_grad)


def sparse_csr_tensor(crow_indices: Any, col_indices: Any, values: Any, size: Any = None, *,
                      dtype: Any = None, layout: Any = None, device: Any = None,
                      pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants: bool | None = None) -> Any:
    """A sparse CSR matrix: ``crow_indices`` (rows + 1), ``col_indices`` and ``values`` (nnz)."""
    if layout is not None and layout != _dtype_info.sparse_csr:
        raise RuntimeError(f"sparse_csr_tensor: layout={layout} given; this constructor makes "
                           "torch.sparse_csr tensors (leave layout out)")
    dt = _dtype.to_dtype(dtype) if dtype is not None else None
    crow = _as_array(crow_indices).astype(np.int64)
    col = _as_array(col_indices).astype(np.int64)
    vals = _as_array(values, dt)
    if dt is not None:
        vals = vals.astype(dt.np)
    if crow.ndim != 1 or col.ndim != 1:
        raise RuntimeError("sparse_csr_tensor: ember's CSR tensors are matrices: crow_indices and "
                           f"col_indices must be 1-D (got {crow.ndim}-D and {col.ndim}-D)")
    if col.shape[0] != vals.shape[0]:
        raise RuntimeError(f"col_indices and values must have the same number of elements, but "
                           f"got {col.shape[0]} and {vals.shape[0]}")
    if crow.shape[0] < 1 or (crow.shape[0] and int(crow[-1]) != col.shape[0]) or int(crow[0]):
        raise RuntimeError("`crow_indices[..., 0] == 0` and `crow_indices[..., -1] == nnz` are "
                           f"required (got crow_indices {crow.tolist()} with nnz={col.shape[0]})")
    if size is None:
        size = (crow.shape[0] - 1, int(col.max()) + 1 if col.shape[0] else 0) + vals.shape[1:]
    size = tuple(int(s) for s in size)
    if len(size) != 2 + vals.ndim - 1 or size[0] != crow.shape[0] - 1:
        raise RuntimeError(f"sparse_csr_tensor: size {size} does not fit crow_indices of length "
                           f"{crow.shape[0]} (rows + 1)")
    if col.shape[0] and (int(col.min()) < 0 or int(col.max()) >= size[1]):
        raise RuntimeError(f"`0 <= col_indices < ncols` is not satisfied (ncols={size[1]})")
    return _finish(make(CSR(crow, col, vals, size)), device, requires_grad)


def spmm(input: Any, mat2: Any) -> Any:
    """``torch.spmm``: a sparse matrix times a dense one (dense result)."""
    if not is_sparse(input):
        raise RuntimeError("spmm: expected a sparse matrix as the first argument; use torch.mm "
                           "for two dense matrices")
    return sparse_mm(input, mat2, dense_grad=True, name="spmm")


def smm(input: Any, mat2: Any) -> Any:
    """``torch.smm``: a sparse matrix times a dense one, as a sparse matrix."""
    return to_sparse(spmm(input, mat2))


def dsmm(input: Any, mat2: Any) -> Any:
    """``torch.dsmm``: a sparse matrix times a dense matrix, a dense result (a dense ``input``
    is ``torch.mm``'s)."""
    if not is_sparse(input):
        return input.mm(mat2)
    if isinstance(mat2, TensorBase) and mat2._data.ndim != 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got "
                           f"1): dsmm takes a dense matrix, got shape {tuple(mat2._data.shape)}")
    return sparse_mm(input, mat2, dense_grad=True, name="dsmm")


def hsmm(input: Any, mat2: Any) -> Any:
    """``torch.hsmm``: a sparse matrix times a dense matrix, as a hybrid sparse tensor (its rows
    sparse, each row dense: ``sparse_dim() == 1``)."""
    if not is_sparse(input):
        raise RuntimeError("hsmm: expected a sparse matrix as the first argument")
    return to_sparse(dsmm(input, mat2), 1)


def _as_array(x: Any, dt: Any = None) -> Any:
    if isinstance(x, TensorBase):
        return x._data
    arr = np.asarray(x)
    if dt is None and arr.dtype == np.float64 and not isinstance(x, np.ndarray):
        arr = arr.astype(_dtype.get_default_dtype().np)
    return arr


def _finish(t: Any, device: Any, requires_grad: bool) -> Any:
    if device is not None:
        dev = device if type(device) is _backend.device else _backend.device(device)
        t = t.to(dev)
    if requires_grad:
        t.requires_grad_(True)
    return t
