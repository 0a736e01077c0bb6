"""Sparse tensors (``torch.sparse_coo`` and the compressed CSR, CSC, BSR, BSC): their records,
array kernels and backward rules.

A sparse tensor is a ``Tensor`` of the subclass ``SparseTensor`` (``ember/_tensor_sparse.py``)
whose ``_data`` is not an array but a ``COO`` or ``Compressed`` record: index arrays, a values
array and the dense shape. ``shape``, ``dtype``, ``ndim`` and ``size`` read through the record as they do
through an array, so the engine and the argument checks see a tensor of the right shape; any
other use of it as an array (a dense op's forward, ``np.asarray``) raises ``SparseLayoutError``,
so no dense op ever reads a sparse tensor as garbage. The tensor class sits above the ops and
registers itself here (``register_class``), as ``Tensor`` does with ``TensorBase``.

Autograd. A sparse tensor's gradient is a tensor of its shape, sparse or dense. The engine
moves it between nodes like any gradient (it reads ``shape`` and ``dtype``, adds two with ``+``);
a sparse gradient travels as a ``SparseTensor``. The primitives below record the graph:
``_FromValues`` (values -> sparse, ``sparse_coo_tensor``; ``_FromCompressedValues`` for the
compressed layouts), ``_Values`` (coalesced or compressed sparse -> values), ``_Coalesce``,
``_ToDense``, ``_ToSparse``, ``_Permute``, ``_SparseMM`` and ``_SparseSum``; value-wise ops (``2 * s``, ``s.sqrt()``, ``s * d``) are dense ops on the values
between ``_Values`` and ``_FromValues``, so their gradients come from the dense rules. A sparse
gradient reaches a leaf's ``.grad`` through a hook (``sparse_grad_hook``) that gives the leaf an
empty sparse ``.grad`` first, which the engine's accumulation (``cur._data + g``) then extends;
a sparse gradient of another layout than its leaf's is converted to the leaf's first.

Neighbours: ``ops/sparse_compressed.py`` (conversions to and between the compressed layouts,
their transposes, ``torch.sparse.mm`` with ``reduce``), ``ops/nn/sparse.py`` (``embedding(sparse=True)`` makes sparse gradients with
``make_sparse``); ``ember/sparse/__init__.py`` is ``torch.sparse``.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from .. import _backend, _dtype, _dtype_info
from .._tensor_base import TensorBase
from ..autograd import grad_mode
from ..autograd.function import Op

__all__: list[str] = []  # the public constructors and products: ops/sparse_creation.py


_sparse_class: Any = None  # SparseTensor, registered by ember._tensor_sparse when it loads


def register_class(cls: type) -> None:
    global _sparse_class
    _sparse_class = cls


class SparseLayoutError(NotImplementedError, AttributeError):
    """A sparse tensor met an operation that needs a dense (strided) one."""


# ---------------------------------------------------------------------------------------------
# records


ROW_LAYOUTS = (_dtype_info.sparse_csr, _dtype_info.sparse_bsr)


BLOCK_LAYOUTS = (_dtype_info.sparse_bsr, _dtype_info.sparse_bsc)


COMPRESSED_LAYOUTS = (_dtype_info.sparse_csr, _dtype_info.sparse_csc, _dtype_info.sparse_bsr,
                      _dtype_info.sparse_bsc)


def is_sparse(x: Any) -> bool:
    """Whether ``x`` is a sparse tensor (or a sparse record)."""
    return isinstance(x._data if isinstance(x, TensorBase) else x, _Record)


def make(rec: _Record, requires_grad: bool = False, grad_fn: Any = None) -> Any:
    """A sparse tensor around ``rec`` (the class registered by ``ember._tensor_sparse``)."""
    t = object.__new__(_sparse_class)
    t._data = rec
    t._rg = requires_grad
    t._grad_fn = grad_fn
    t._output_nr = 0
    return t


class _Record:
    """What both layouts share: the dense shape, the values array, and refusals elsewhere."""

    __slots__ = ("shape", "values")
    layout: Any = None
    shape: tuple
    values: Any

    @property
    def dtype(self) -> Any:
        return self.values.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nnz(self) -> int:
        return int(self.values.shape[0])

    def _refuse(self, what: str) -> SparseLayoutError:
        return SparseLayoutError(
            f"{what} is not supported on a sparse tensor (layout={self.layout}, shape "
            f"{tuple(self.shape)}): ember runs dense ops on strided tensors only. Convert it "
            "first with .to_dense(), or use the sparse form of the op (torch.sparse.mm, "
            "torch.sparse.sum...).")

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise self._refuse("converting to a NumPy array")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise self._refuse(f"{func.__name__}")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        # the engine adds gradients: a dense buffer plus a sparse gradient gives a dense one
        if ufunc is np.add and method == "__call__" and not kwargs and len(inputs) == 2:
            a, b = inputs
            if _backend.is_array(a):
                return add_dense(a, b, 1)
            if _backend.is_array(b):
                return add_dense(b, a, 1)
        raise self._refuse(f"{ufunc.__name__}")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise self._refuse(f"array attribute {name!r}")

    def __add__(self, other: Any) -> Any:
        if _backend.is_array(other):
            return add_dense(other, self, 1)
        return add_sparse(self, other, 1)

    __radd__ = __add__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} shape={tuple(self.shape)} nnz={self.nnz} {self.dtype}>"


class COO(_Record):
    """Coordinates: ``indices`` (int64, sparse_dim x nnz), ``values`` (nnz, *dense_shape)."""

    __slots__ = ("indices", "coalesced")
    layout = _dtype_info.sparse_coo

    def __init__(self, indices: Any, values: Any, shape: tuple, coalesced: bool) -> None:
        self.indices = indices
        self.values = values
        self.shape = tuple(int(s) for s in shape)
        self.coalesced = bool(coalesced)

    @property
    def sparse_dim(self) -> int:
        return int(self.indices.shape[0])

    @property
    def dense_dim(self) -> int:
        return self.values.ndim - 1

    def astype(self, dt: Any, copy: bool = True) -> COO:
        if np.dtype(dt) == self.values.dtype:
            return self
        return COO(self.indices, self.values.astype(dt), self.shape, self.coalesced)

    def copy(self) -> COO:
        return COO(self.indices.copy(), self.values.copy(), self.shape, self.coalesced)


class Compressed(_Record):
    """A matrix in one of the compressed layouts (``sparse_csr``, ``sparse_csc``, ``sparse_bsr``,
    ``sparse_bsc``): ``compressed`` (int64, one more than the rows of elements or blocks for the
    row layouts, than the columns for the column layouts), ``plain`` (the other index of each
    stored element or block, nnz), ``values`` (nnz) or, for the block layouts, (nnz, bh, bw)."""

    __slots__ = ("compressed", "plain", "layout")

    def __init__(self, compressed: Any, plain: Any, values: Any, shape: tuple,
                 layout: Any = _dtype_info.sparse_csr) -> None:
        self.compressed = compressed
        self.plain = plain
        self.values = values
        self.shape = tuple(int(s) for s in shape)
        self.layout = layout

    sparse_dim = 2

    @property
    def blocked(self) -> bool:
        return self.layout in BLOCK_LAYOUTS

    @property
    def by_rows(self) -> bool:
        return self.layout in ROW_LAYOUTS

    @property
    def blocksize(self) -> tuple | None:
        return tuple(int(b) for b in self.values.shape[1:3]) if self.blocked else None

    @property
    def dense_dim(self) -> int:
        return self.values.ndim - (3 if self.blocked else 1)

    def __add__(self, other: Any) -> Any:
        if _backend.is_array(other):
            return add_dense(other, self, 1)
        return convert_rec(add_sparse(self, other, 1), self.layout, self.blocksize)

    __radd__ = __add__

    def like(self, values: Any) -> Compressed:
        """The same pattern with other values."""
        return Compressed(self.compressed, self.plain, values, self.shape, self.layout)

    def astype(self, dt: Any, copy: bool = True) -> Compressed:
        if np.dtype(dt) == self.values.dtype:
            return self
        return self.like(self.values.astype(dt))

    def copy(self) -> Compressed:
        return Compressed(self.compressed.copy(), self.plain.copy(), self.values.copy(),
                          self.shape, self.layout)


CSR = Compressed  # (the name the row-compressed layout's code knew it by)


RECORDS = (COO, Compressed)


# ---------------------------------------------------------------------------------------------
# array kernels


def coalesce(c: COO) -> COO:
    """Indices sorted row-major, duplicates summed (PyTorch's ``coalesce``)."""
    if c.coalesced:
        return c
    xp = _xp(c.values)
    sizes = c.shape[: c.sparse_dim]
    if c.nnz == 0:
        return COO(c.indices, c.values, c.shape, True)
    lin = _linear(c.indices, sizes)
    order = xp.argsort(lin, kind="stable")
    lin = lin[order]
    vals = c.values[order]
    first = xp.ones(lin.shape[0], dtype=bool)
    first[1:] = lin[1:] != lin[:-1]
    starts = xp.flatnonzero(first)
    if starts.shape[0] != lin.shape[0]:
        vals = _segment_sum(vals, starts)
        lin = lin[starts]
    return COO(_unlinear(lin, sizes), vals, c.shape, True)


def coo_to_dense(c: COO) -> Any:
    xp = _xp(c.values)
    out = xp.zeros(c.shape, dtype=c.values.dtype)
    if c.nnz:
        cc = coalesce(c)
        out[tuple(cc.indices)] = cc.values
    return out


def dense_to_coo(arr: Any, sparse_dim: int | None = None) -> COO:
    xp = _xp(arr)
    sd = arr.ndim if sparse_dim is None else sparse_dim
    mask = arr != 0
    if sd < arr.ndim:
        mask = mask.any(axis=tuple(range(sd, arr.ndim)))
    idx = xp.nonzero(mask) if sd else ()
    if sd == 0:
        return COO(xp.zeros((0, 1), dtype=np.int64), arr[None].copy(), arr.shape, True)
    indices = xp.stack([i.astype(np.int64) for i in idx]) if idx else xp.zeros((0, 0), np.int64)
    return COO(indices, arr[idx].copy(), arr.shape, True)


def coo_to_compressed(c: COO, layout: Any = _dtype_info.sparse_csr,
                      blocksize: tuple | None = None) -> Compressed:
    """A 2-D COO record (no dense dims) in a compressed layout; a block layout stores every
    block that holds a specified element (its other elements zero)."""
    cc = coalesce(c)
    xp = _xp(cc.values)
    nr, nc = cc.shape[:2]
    rows, cols = cc.indices[0], cc.indices[1]
    by_rows = layout in ROW_LAYOUTS
    if layout in BLOCK_LAYOUTS:
        bh, bw = blocksize
        nbr, nbc = nr // bh, nc // bw
        br, bc = rows // bh, cols // bw
        nminor = nbc if by_rows else nbr
        key = br * nbc + bc if by_rows else bc * nbr + br
        uniq, inv = xp.unique(key, return_inverse=True)
        blocks = xp.zeros((uniq.shape[0], bh, bw) + cc.values.shape[1:], dtype=cc.values.dtype)
        blocks[inv.reshape(-1), rows % bh, cols % bw] = cc.values
        return Compressed(_ptr(uniq // nminor, nbr if by_rows else nbc), uniq % nminor, blocks,
                          cc.shape, layout)
    if by_rows:
        return Compressed(_ptr(rows, nr), cols.copy(), cc.values.copy(), cc.shape, layout)
    order = xp.argsort(cols * max(nr, 1) + rows, kind="stable")
    return Compressed(_ptr(cols[order], nc), rows[order], cc.values[order], cc.shape, layout)


def coo_to_csr(c: COO) -> Compressed:
    return coo_to_compressed(c)


def element_positions(r: Compressed) -> tuple:
    """The (row, column) of each stored element of ``r``, each shaped as its values (nnz, or
    nnz x bh x bw), in storage order."""
    xp = _xp(r.values)
    major = xp.repeat(xp.arange(r.compressed.shape[0] - 1, dtype=np.int64),
                      xp.diff(r.compressed))
    plain = r.plain.astype(np.int64, copy=False)
    br, bc = (major, plain) if r.by_rows else (plain, major)
    if not r.blocked:
        return br, bc
    bh, bw = r.blocksize
    shape = (br.shape[0], bh, bw)
    rows = br[:, None, None] * bh + xp.arange(bh, dtype=np.int64)[None, :, None]
    cols = bc[:, None, None] * bw + xp.arange(bw, dtype=np.int64)[None, None, :]
    return xp.broadcast_to(rows, shape), xp.broadcast_to(cols, shape)


def compressed_to_coo(r: Compressed) -> COO:
    """The stored elements of ``r`` as COO, in storage order (coalesced for CSR only, as
    PyTorch marks them)."""
    xp = _xp(r.values)
    rows, cols = element_positions(r)
    idx = xp.stack([rows.reshape(-1), cols.reshape(-1)])
    vals = r.values.reshape((-1,) + r.values.shape[(3 if r.blocked else 1):])
    return COO(idx, vals, r.shape, r.layout is _dtype_info.sparse_csr)


def as_coo(rec: _Record) -> COO:
    return rec if isinstance(rec, COO) else compressed_to_coo(rec)


def convert_rec(rec: _Record, layout: Any, blocksize: tuple | None = None) -> _Record:
    """``rec`` in ``layout`` (``blocksize`` for the block layouts); itself if it is already."""
    if layout is _dtype_info.sparse_coo:
        return as_coo(rec)
    if isinstance(rec, Compressed) and rec.layout is layout and rec.blocksize == (
            tuple(blocksize) if blocksize is not None else None):
        return rec
    return coo_to_compressed(as_coo(rec), layout, blocksize)


def empty_rec(rec: _Record) -> _Record:
    """A record of ``rec``'s layout, shape and dtype with nothing specified."""
    xp = _xp(rec.values)
    if isinstance(rec, COO):
        return COO(xp.zeros((rec.sparse_dim, 0), np.int64),
                   xp.zeros((0,) + rec.values.shape[1:], rec.values.dtype), rec.shape, True)
    return Compressed(xp.zeros(rec.compressed.shape[0], np.int64), xp.zeros(0, np.int64),
                      xp.zeros((0,) + rec.values.shape[1:], rec.values.dtype), rec.shape,
                      rec.layout)


def spmm_array(c: COO, dense: Any) -> Any:
    """``c @ dense`` for a 2-D COO record (sparse_dim 2, no dense dims) and a dense matrix."""
    xp = _xp(dense)
    vec = dense.ndim == 1
    d2 = dense[:, None] if vec else dense
    out = xp.zeros((c.shape[0], d2.shape[1]), dtype=np.result_type(c.values.dtype, d2.dtype))
    if c.nnz:
        rows, cols = c.indices
        xp.add.at(out, rows, c.values[:, None] * d2[cols])
    return out[:, 0] if vec else out


def add_dense(dense: Any, rec: _Record, alpha: Any) -> Any:
    """``dense + alpha * rec`` as a new dense array."""
    c = coalesce(as_coo(rec))
    out = dense.astype(np.result_type(dense.dtype, c.values.dtype), copy=True)
    if c.nnz:
        idx = tuple(c.indices)
        vals = c.values if alpha == 1 else c.values * alpha
        out[idx] = out[idx] + vals.astype(out.dtype, copy=False)
    return out


def add_sparse(a: _Record, b: _Record, alpha: Any) -> COO:
    """``a + alpha * b`` for two COO records of one shape (same indices: values added)."""
    a, b = as_coo(a), as_coo(b)
    vb = b.values if alpha == 1 else b.values * alpha
    dt = np.result_type(a.values.dtype, vb.dtype)
    xp = _xp(a.values)
    if a.nnz == 0 and not b.nnz == 0:
        return COO(b.indices, vb.astype(dt, copy=True), a.shape, b.coalesced)
    if b.nnz == 0:
        return COO(a.indices, a.values.astype(dt, copy=True), a.shape, a.coalesced)
    if a.indices is b.indices or (a.indices.shape == b.indices.shape
                                  and bool((a.indices == b.indices).all())):
        return COO(a.indices, (a.values + vb).astype(dt, copy=False), a.shape, a.coalesced)
    out = COO(xp.concatenate([a.indices, b.indices], axis=1),
              xp.concatenate([a.values.astype(dt), vb.astype(dt)]), a.shape, False)
    return coalesce(out) if a.coalesced and b.coalesced else out


def add_into(dense: Any, rec: _Record, alpha: Any) -> None:
    """``dense += alpha * rec`` in place (an optimizer's step with a sparse gradient)."""
    c = coalesce(as_coo(rec))
    if c.nnz:
        idx = tuple(c.indices)
        dense[idx] += (c.values * alpha).astype(dense.dtype, copy=False)


def gather(grad: Any, c: COO) -> Any:
    """The values of ``grad`` (a dense array or a sparse tensor/record) at ``c``'s indices."""
    if isinstance(grad, TensorBase):
        grad = grad._data
    if isinstance(c, Compressed):
        return dense_of(grad)[element_positions(c)]
    if _backend.is_array(grad):
        return grad[tuple(c.indices)] if c.sparse_dim else grad[None]
    g = coalesce(as_coo(grad))
    xp = _xp(g.values)
    out = xp.zeros((c.nnz,) + g.values.shape[1:], dtype=g.values.dtype)
    if g.nnz and c.nnz:
        sizes = c.shape[: c.sparse_dim]
        glin, clin = _linear(g.indices, sizes), _linear(c.indices, sizes)
        pos = xp.searchsorted(glin, clin)
        pos = xp.minimum(pos, glin.shape[0] - 1)
        hit = glin[pos] == clin
        out[hit] = g.values[pos[hit]]
    return out


def mask_values(dense: Any, c: COO) -> Any:
    return dense[tuple(c.indices)]


def dense_of(g: Any) -> Any:
    """A gradient as a dense array (a sparse tensor's densified)."""
    if isinstance(g, TensorBase):
        g = g._data
    return coo_to_dense(as_coo(g)) if isinstance(g, _Record) else g


def permute_rec(c: COO, perm: tuple) -> COO:
    sd = c.sparse_dim
    if any(p >= sd for p in perm[:sd]) or tuple(perm[sd:]) != tuple(range(sd, c.ndim)):
        raise RuntimeError(
            f"permute(sparse_coo): transposing sparse dimensions with dense dimensions is not "
            f"supported (sparse_dim={sd}, dims {tuple(perm)})")
    shape = tuple(c.shape[p] for p in perm)
    return COO(c.indices[list(perm[:sd])], c.values, shape, c.coalesced and list(perm[:sd]) ==
               list(range(sd)))


def _ptr(major: Any, n: int) -> Any:
    """Compressed pointers (``n + 1``) from the sorted major indices of the stored elements."""
    xp = _xp(major)
    counts = xp.bincount(major, minlength=n) if major.shape[0] else xp.zeros(n, np.int64)
    ptr = xp.zeros(n + 1, dtype=np.int64)
    ptr[1:] = xp.cumsum(counts)
    return ptr


def _xp(a: Any) -> Any:
    return _backend.xp_of(a)


def _linear(indices: Any, sizes: tuple) -> Any:
    """Row-major linear positions of ``indices`` (sparse_dim x nnz) in a grid of ``sizes``."""
    lin = _xp(indices).zeros(indices.shape[1], dtype=np.int64)
    for k, s in enumerate(sizes):
        lin = lin * s + indices[k]
    return lin


def _unlinear(lin: Any, sizes: tuple) -> Any:
    xp = _xp(lin)
    out = xp.empty((len(sizes), lin.shape[0]), dtype=np.int64)
    for k in range(len(sizes) - 1, -1, -1):
        out[k] = lin % sizes[k]
        lin = lin // sizes[k]
    return out


def _segment_sum(values: Any, starts: Any) -> Any:
    """Sums of ``values`` (sorted into groups) over the groups beginning at ``starts``."""
    xp = _xp(values)
    if xp is np:
        return np.add.reduceat(values, starts, axis=0)
    seg = xp.zeros(values.shape[0], dtype=np.int64)
    seg[starts[1:]] = 1
    seg = xp.cumsum(seg)
    out = xp.zeros((starts.shape[0],) + values.shape[1:], dtype=values.dtype)
    xp.add.at(out, seg, values)
    return out


csr_to_coo = compressed_to_coo


# ---------------------------------------------------------------------------------------------
# the ops autograd records


class _FromValues(Op):
    """out = the sparse tensor with fixed indices and these values
    grad_values = grad at the indices (grad dense or sparse)"""

    node_name = "SparseCooTensorWithDimsAndTensorsBackward0"

    @staticmethod
    def forward(ctx: Any, values: Any, rec: COO) -> Any:
        ctx.rec = rec
        return values

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return gather(grad, ctx.rec), None


class _Values(Op):
    """out = the values of a coalesced sparse tensor
    grad_input = the sparse tensor with its indices and the values' gradient"""

    node_name = "ValuesBackward0"

    @staticmethod
    def forward(ctx: Any, rec: COO) -> Any:
        ctx.rec = rec
        return rec.values

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        r = ctx.rec
        if isinstance(r, Compressed):
            return make(r.like(grad))
        return make(COO(r.indices, grad, r.shape, r.coalesced))


class _Coalesce(Op):
    """out = coalesce(input) (the same tensor)          grad_input = grad"""

    node_name = "CoalesceBackward0"

    @staticmethod
    def forward(ctx: Any, rec: COO, out: COO) -> Any:
        return out.values

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad, None


class _ToDense(Op):
    """out = the dense form of a sparse tensor
    grad_input = grad at the input's (coalesced) indices, as a sparse tensor (``to_dense``), or
    all of grad (``dense + sparse``, where PyTorch's gradient is dense)"""

    node_name = "ToDenseBackward0"

    @staticmethod
    def forward(ctx: Any, rec: _Record, dense_grad: bool = False) -> Any:
        c = coalesce(as_coo(rec))
        ctx.rec, ctx.dense_grad = c, dense_grad
        ctx.layout = rec.layout, getattr(rec, "blocksize", None)
        return coo_to_dense(c)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        c = ctx.rec
        if ctx.dense_grad:
            return dense_of(grad), None
        g = COO(c.indices, mask_values(dense_of(grad), c), c.shape, True)
        return make(convert_rec(g, *ctx.layout)), None


class _ToSparse(Op):
    """out = the sparse form of a dense tensor          grad_input = dense(grad)"""

    node_name = "ToSparseBackward1"

    @staticmethod
    def forward(ctx: Any, x: Any, out: _Record) -> Any:
        return out.values

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return dense_of(grad), None


class _FromCompressedValues(_FromValues):
    """_FromValues for a compressed record (CSR/CSC/BSR/BSC): PyTorch's node name differs"""

    node_name = "SparseCompressedTensorBackward0"


class _Permute(Op):
    """out = input with its sparse dims permuted          grad_input = grad permuted back"""

    node_name = "PermuteBackward0"

    @staticmethod
    def forward(ctx: Any, rec: COO, perm: tuple) -> Any:
        ctx.perm = perm
        return rec.values

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        inv = tuple(int(i) for i in np.argsort(ctx.perm))
        if isinstance(grad, TensorBase):
            return make(permute_rec(as_coo(grad._data), inv)), None
        return grad.transpose(inv), None


class _SparseMM(Op):
    """out = S @ D (S a sparse matrix, D dense)
    grad_S = (grad @ D^T) at S's indices (sparse), or dense for ``torch.mm``
    grad_D = S^T @ grad"""

    node_name = "SparseAddmmBackward0"

    @staticmethod
    def forward(ctx: Any, rec: _Record, d: Any, dense_grad: bool) -> Any:
        c = coalesce(as_coo(rec))
        ctx.rec, ctx.dense_grad = c, dense_grad
        ctx.save_for_backward(d)
        return spmm_array(c, d)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (d,) = ctx.saved
        c = ctx.rec
        need = ctx.needs_input_grad
        gs = gd = None
        if need[0]:
            if ctx.dense_grad:
                gs = grad @ d.T if d.ndim == 2 else grad[:, None] * d[None, :]
            else:
                rows, cols = c.indices
                g2 = grad[:, None] if grad.ndim == 1 else grad
                d2 = d[:, None] if d.ndim == 1 else d
                vals = (g2[rows] * d2[cols]).sum(axis=1).astype(c.values.dtype)
                gs = make(COO(c.indices, vals, c.shape, True))
        if need[1]:
            ct = COO(c.indices[::-1], c.values, c.shape[::-1], False)
            gd = spmm_array(ct, grad).astype(d.dtype, copy=False)
        return gs, gd, None


class _SparseSum(Op):
    """out = the sum of all values (a dense 0-d tensor)
    grad_input = grad at every specified element, as a sparse tensor"""

    node_name = "SumBackward0"

    @staticmethod
    def forward(ctx: Any, rec: _Record, dt: Any) -> Any:
        c = coalesce(as_coo(rec))
        ctx.rec = c
        v = c.values if dt is None else c.values.astype(dt)
        return _xp(v).asarray(v.sum(), dtype=v.dtype)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        c = ctx.rec
        xp = _xp(c.values)
        vals = xp.broadcast_to(xp.asarray(grad, dtype=c.values.dtype), c.values.shape).copy()
        return make(COO(c.indices, vals, c.shape, True)), None


# ---------------------------------------------------------------------------------------------
# tensor-level helpers (used by ember._tensor_sparse and ember.sparse)


def tracking(*ts: Any) -> bool:
    return grad_mode.state.enabled and any(isinstance(t, TensorBase) and t._rg for t in ts)


def values_of(s: Any) -> tuple[COO, Any]:
    """``s``'s COO record (coalesced when autograd tracks ``s``) and its values as a tensor that
    carries ``s``'s gradient (``_Values``), or a plain alias when nothing tracks."""
    c = as_coo(s._data)
    if tracking(s):
        if not c.coalesced:
            s = coalesce_tensor(s)
            c = s._data
        return c, _Values.apply(s)
    return c, TensorBase._make(c.values)


def from_values(rec: _Record, values: Any) -> Any:
    """A sparse tensor with ``rec``'s indices and shape and the tensor ``values`` (recorded when
    ``values`` requires grad)."""
    if isinstance(rec, Compressed):
        out_rec: _Record = rec.like(values._data)
        op: Any = _FromCompressedValues
    else:
        out_rec, op = COO(rec.indices, values._data, rec.shape, rec.coalesced), _FromValues
    if tracking(values):
        v = op.apply(values, out_rec)
        return make(out_rec, True, v._grad_fn)
    return make(out_rec)


def record(op: Any, out_rec: _Record, *args: Any) -> Any:
    """A sparse tensor around ``out_rec``, recorded as made by ``op`` from ``args`` when
    autograd tracks them (``op.forward`` returns ``out_rec.values``)."""
    if tracking(*args):
        v = op.apply(*args)
        return make(out_rec, True, v._grad_fn)
    return make(out_rec)


def coalesce_tensor(s: Any) -> Any:
    c = s._data
    if c.coalesced:
        return s
    return record(_Coalesce, coalesce(c), s, coalesce(c))


def to_dense(s: Any) -> Any:
    if tracking(s):
        return _ToDense.apply(s)
    return TensorBase._make(coo_to_dense(as_coo(s._data)))


def to_sparse(x: Any, sparse_dim: int | None = None) -> Any:
    """A dense tensor as a coalesced COO tensor (``sparse_dim`` leading sparse dims)."""
    if sparse_dim is not None and not 0 <= sparse_dim <= x.ndim:
        raise RuntimeError(f"sparse_dim argument must be in [0, {x.ndim}] range, but {sparse_dim} "
                           "is given")
    rec = dense_to_coo(x._data, sparse_dim)
    return record(_ToSparse, rec, x, rec)


def permute(s: Any, perm: tuple) -> Any:
    c = s._data
    out = permute_rec(c, perm)
    return record(_Permute, out, s, tuple(perm))


def sparse_mm(s: Any, d: Any, dense_grad: bool = False, name: str = "mm") -> Any:
    """``s @ d`` for a sparse matrix ``s`` and a dense matrix (or vector) ``d``: dense."""
    rec = s._data
    if not isinstance(d, TensorBase):
        raise TypeError(f"{name}(): argument 'mat2' must be Tensor, not {type(d).__name__}")
    if rec.ndim != 2 or rec.sparse_dim != 2:
        raise RuntimeError(f"{name}: expected a 2-D sparse matrix with 2 sparse dims, got shape "
                           f"{tuple(rec.shape)} with sparse_dim={rec.sparse_dim}")
    if d._data.ndim not in (1, 2) or d._data.shape[0] != rec.shape[1]:
        raise RuntimeError(
            f"{name}: Argument #3 (dense): Expected dim 0 size {rec.shape[1]}, got "
            f"{d._data.shape[0] if d._data.ndim else 0} (sparse {tuple(rec.shape)} @ dense "
            f"{tuple(d._data.shape)}: the inner dimensions must match)")
    if rec.dtype != d._data.dtype:
        raise RuntimeError(
            f"expected scalar type {_cpp(rec.dtype)} but found {_cpp(d._data.dtype)} ({name} of "
            f"a sparse {_dtype.from_numpy(rec.dtype)} matrix and a dense "
            f"{_dtype.from_numpy(d._data.dtype)} one: convert one, e.g. d.to(s.dtype))")
    if tracking(s, d):
        return _SparseMM.apply(s, d, dense_grad)
    return TensorBase._make(spmm_array(coalesce(as_coo(rec)), d._data))


def sparse_sum_all(s: Any, dt: Any = None) -> Any:
    np_dt = None if dt is None else _dtype.to_dtype(dt).np
    if tracking(s):
        return _SparseSum.apply(s, np_dt)
    c = as_coo(s._data)
    v = c.values if np_dt is None else c.values.astype(np_dt)
    return TensorBase._make(_xp(v).asarray(v.sum(), dtype=v.dtype))


def sparse_grad_hook(leaf: Any) -> Any:
    """A hook for a leaf that may receive sparse gradients: a sparse gradient finds an empty
    sparse ``.grad`` to be added to (the engine adds into an existing ``.grad``); a dense one
    finds a dense ``.grad`` (a sparse one is densified first), as PyTorch accumulates."""
    ref = weakref.ref(leaf)

    def hook(g: Any) -> Any:
        t = ref()
        if t is None:
            return
        cur = t._grad
        out = None
        if is_sparse(g):
            mine = t._data
            if isinstance(mine, _Record) and (mine.layout is not g._data.layout or getattr(
                    mine, "blocksize", None) != getattr(g._data, "blocksize", None)):
                # a sparse gradient takes its leaf's layout, as PyTorch's
                out = g = make(convert_rec(g._data, mine.layout, getattr(mine, "blocksize",
                                                                          None)))
            if cur is None:
                t._grad = make(empty_rec(g._data))
        elif cur is not None and is_sparse(cur):
            t._grad = TensorBase._make(dense_of(cur))
        return out

    hook._ember_sparse = True  # type: ignore[attr-defined]
    return hook


def install_grad_hook(t: Any) -> None:
    """Give ``t`` (a leaf) the sparse-gradient hook, once."""
    hooks = t._hooks
    if hooks is not None and any(getattr(h, "_ember_sparse", False) for h in hooks):
        return
    if hooks is None:
        hooks = t._hooks = []
    hooks.append(sparse_grad_hook(t))


def _cpp(dt: Any) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
            "int32": "Int", "bool": "Bool"}.get(np.dtype(dt).name, str(dt))
