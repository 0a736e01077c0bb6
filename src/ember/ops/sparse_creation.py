"""Sparse tensors' constructors and products with dense matrices: ``sparse_coo_tensor``,
``sparse_compressed_tensor`` and its layouts' forms (``sparse_csr_tensor``, ``sparse_csc_tensor``,
``sparse_bsr_tensor``, ``sparse_bsc_tensor``), ``spmm``, ``smm``, ``dsmm``, ``hsmm`` (the records, kernels and backward
rules they build on are ``ops/sparse.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _backend, _dtype, _dtype_info
from .._tensor_base import TensorBase
from .sparse import (
    BLOCK_LAYOUTS,
    COMPRESSED_LAYOUTS,
    COO,
    ROW_LAYOUTS,
    Compressed,
    from_values,
    is_sparse,
    make,
    sparse_mm,
    to_sparse,
)
from .sparse_compressed import layout_name

__all__ = ["sparse_coo_tensor", "sparse_csr_tensor", "sparse_csc_tensor", "sparse_bsr_tensor",
           "sparse_bsc_tensor", "sparse_compressed_tensor", "spmm", "smm", "dsmm", "hsmm"]


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


def sparse_compressed_tensor(compressed_indices: Any, plain_indices: Any, values: Any,
                             size: Any = None, *, dtype: Any = None, layout: Any = None,
                             device: Any = None, pin_memory: bool = False,
                             requires_grad: bool = False,
                             check_invariants: bool | None = None) -> Any:
    """A sparse matrix in a compressed ``layout`` (``torch.sparse_csr``, ``sparse_csc``,
    ``sparse_bsr``, ``sparse_bsc``): ``compressed_indices`` (one more than the rows, or the
    columns for the column layouts, counted in blocks for the block layouts), ``plain_indices``
    (the other index of each stored element or block) and ``values`` (nnz, or nnz x bh x bw
    blocks). ``size`` defaults to the smallest that holds the indices."""
    if layout not in COMPRESSED_LAYOUTS:
        got = "none" if layout is None else layout_name(layout)
        raise RuntimeError(f"sparse_compressed_tensor expected sparse compressed tensor layout "
                           f"but got {got} (pass layout=torch.sparse_csr, sparse_csc, sparse_bsr "
                           "or sparse_bsc)")
    return _compressed(compressed_indices, plain_indices, values, size, dtype, layout, device,
                       requires_grad)


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


def _constructor(fixed: Any, cname: str, pname: str) -> Any:
    lname = layout_name(fixed)

    def make_one(compressed: Any, plain: Any, values: Any, size: Any = None, *,
                 dtype: Any = None, layout: Any = None, device: Any = None,
                 pin_memory: bool = False, requires_grad: bool = False,
                 check_invariants: bool | None = None) -> Any:
        if layout is not None and layout is not fixed:
            raise RuntimeError(f"sparse_{lname[6:].lower()}_tensor: layout must be {lname} but "
                               f"got {layout_name(layout)} (leave layout out)")
        return _compressed(compressed, plain, values, size, dtype, fixed, device, requires_grad)

    name = f"sparse_{lname[6:].lower()}_tensor"
    # PyTorch's parameter names (callers pass them by keyword: ccol_indices=, row_indices=)
    src = (f"def {name}({cname}, {pname}, values, size=None, *, dtype=None, layout=None, "
           f"device=None, pin_memory=False, requires_grad=False, check_invariants=None):\n"
           f"    return _impl({cname}, {pname}, values, size, dtype=dtype, layout=layout, "
           "device=device, pin_memory=pin_memory, requires_grad=requires_grad, "
           "check_invariants=check_invariants)\n")
    scope: dict = {"_impl": make_one}
    exec(src, scope)  # noqa: S102 - a fixed signature, no user input
    fn = scope[name]
    fn.__module__ = __name__
    fn.__doc__ = (f"A sparse {lname[6:].upper()} matrix: ``{cname}``, ``{pname}`` and ``values``"
                  " (see ``sparse_compressed_tensor``).")
    return fn


def _compressed(compressed_indices: Any, plain_indices: Any, values: Any, size: Any, dtype: Any,
                layout: Any, device: Any, requires_grad: bool) -> Any:
    by_rows = layout in ROW_LAYOUTS
    block = layout in BLOCK_LAYOUTS
    cname, pname = ("crow_indices", "col_indices") if by_rows else ("ccol_indices", "row_indices")
    dt = _dtype.to_dtype(dtype) if dtype is not None else None
    cidx, pidx = _as_array(compressed_indices), _as_array(plain_indices)
    for label, arr in ((cname, cidx), (pname, pidx)):
        if arr.dtype.kind not in "iu" and not (arr.size == 0 and not isinstance(
                compressed_indices if label == cname else plain_indices, TensorBase)):
            raise RuntimeError(f"{cname} and {pname} must be integer tensors (got {label} of "
                               f"{arr.dtype.name}): convert them, e.g. .long()")
        if arr.ndim != 1:
            raise RuntimeError(f"{label} of shape {tuple(arr.shape)}: ember's compressed sparse "
                               "tensors are matrices, with 1-D index tensors (batched ones are "
                               "not supported)")
    cidx, pidx = cidx.astype(np.int64), pidx.astype(np.int64)
    vt = None
    if isinstance(values, TensorBase):  # its values are the tensor's own (PyTorch aliases them)
        vt = values if dt is None or values._data.dtype == dt.np else values.to(dt)
        vals = vt._data
    else:
        vals = _as_array(values, dt)
        if dt is not None and vals.dtype != dt.np:
            vals = vals.astype(dt.np)
    want = 3 if block else 1
    if vals.ndim < want:
        raise RuntimeError(f"values must have dimensionality > sum of batch and block "
                           f"dimensionalities (=0 + {want - 1}) but got {vals.ndim}")
    dense_shape = tuple(int(n) for n in vals.shape[want:])
    nnz = vals.shape[0]
    bh, bw = (int(vals.shape[1]), int(vals.shape[2])) if block else (1, 1)
    if size is None:
        nmajor = cidx.shape[0] - 1
        nminor = int(pidx.max()) + 1 if pidx.shape[0] else 0
        nbr, nbc = (nmajor, nminor) if by_rows else (nminor, nmajor)
        size = (nbr * bh, nbc * bw) + dense_shape
    size = tuple(int(s) for s in size)
    if len(size) != 2 + len(dense_shape):
        raise RuntimeError(f"tensor dimensionality must be sum of batch, base, and dense "
                           f"dimensionalities (=0 + 2 + {len(dense_shape)}) but got {len(size)} "
                           "(ember's compressed sparse tensors have no batch dims)")
    if size[2:] != dense_shape:
        raise RuntimeError(f"tensor shape[2:] (={list(size[2:])}) must be equal to "
                           f"values.shape[{want}:] (={list(dense_shape)}) (the dense dims)")
    for k, b in enumerate((bh, bw)):
        if size[k] % b:
            raise RuntimeError(f"tensor shape[{k}] (={size[k]}) must be divisible with "
                               f"blocksize[{k}] (={b}) as defined by values shape")
    nbr, nbc = size[0] // bh, size[1] // bw
    nmajor, nminor = (nbr, nbc) if by_rows else (nbc, nbr)
    what = ("row" if by_rows else "column") + (" blocks" if block else "s")
    if cidx.shape[0] != nmajor + 1:
        raise RuntimeError(f"{cname}.shape[-1] must be equal to the number of {what} + 1 "
                           f"(={nmajor + 1}), but got {cidx.shape[0]}")
    if pidx.shape[0] != nnz:
        raise RuntimeError(f"{pname}.shape[-1] must be equal to nnz (={nnz}) as defined by "
                           f"values.shape[0], but got {pidx.shape[0]}")
    if int(cidx[0]) != 0:
        raise RuntimeError(f"`{cname}[..., 0] == 0` is not satisfied.")
    if int(cidx[-1]) != nnz:
        raise RuntimeError(f"`{cname}[..., -1] == nnz` is not satisfied (got {int(cidx[-1])}, "
                           f"nnz={nnz}).")
    steps = np.diff(cidx)
    if steps.size and (int(steps.min()) < 0 or int(steps.max()) > nminor):
        raise RuntimeError(f"`0 <= {cname}[..., 1:] - {cname}[..., :-1] <= "
                           f"{'ncols' if by_rows else 'nrows'}` is not satisfied.")
    lim = "ncols" if by_rows else "nrows"
    if nnz and (int(pidx.min()) < 0 or int(pidx.max()) >= nminor):
        raise RuntimeError(f"`0 <= {pname} < {lim}` is not satisfied ({lim}={nminor}"
                           f"{' blocks' if block else ''}).")
    if nnz > 1:
        seg_start = np.zeros(nnz, dtype=bool)
        seg_start[cidx[:-1][steps > 0]] = True
        if bool(((np.diff(pidx) <= 0) & ~seg_start[1:]).any()):
            n = "nrows" if by_rows else "ncols"
            raise RuntimeError(f"`{pname}[..., {cname}[..., i - 1]:{cname}[..., i]] for all i = "
                               f"1, ..., {n} are sorted and distinct along the last dimension "
                               "values` is not satisfied.")
    rec = Compressed(cidx, pidx, vals, size, layout)
    out = from_values(rec, vt) if vt is not None else make(rec)
    return _finish(out, device, requires_grad)


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


sparse_csr_tensor = _constructor(_dtype_info.sparse_csr, "crow_indices", "col_indices")


sparse_csc_tensor = _constructor(_dtype_info.sparse_csc, "ccol_indices", "row_indices")


sparse_bsr_tensor = _constructor(_dtype_info.sparse_bsr, "crow_indices", "col_indices")


sparse_bsc_tensor = _constructor(_dtype_info.sparse_bsc, "ccol_indices", "row_indices")
