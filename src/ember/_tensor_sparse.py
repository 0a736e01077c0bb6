"""``SparseTensor``: the tensors of the sparse layouts (``torch.sparse_coo`` and the compressed
``torch.sparse_csr``, ``sparse_csc``, ``sparse_bsr``, ``sparse_bsc``).

PyTorch has one Tensor type for every layout and picks the kernel per call. ember keeps the
dense path free of layout tests by giving sparse tensors their own subclass of ``Tensor``: its
methods are the sparse forms (``s.coalesce()``, ``s + s``, ``s.t()``, ``s @ d``...), and a
namespace function that meets one (``torch.mm(s, d)``, ``torch.add(d, s)``) reaches
``SparseTensor.__torch_function__``, which runs the sparse form or raises PyTorch's
``NotImplementedError`` naming the op. The records, kernels and backward rules are in
``ember/ops/sparse.py``; ``torch.sparse`` is ``ember/sparse/__init__.py``.
"""

# ruff: noqa: A006 - the handlers take PyTorch's argument names (input=...)
from __future__ import annotations

import copy as _copy
from typing import Any

import numpy as np

from . import _backend, _dtype, _dtype_info, ops
from ._dtype import dtype as _dtype_cls
from ._tensor import Tensor
from ._tensor_base import TensorBase, wrap_dim
from ._tensor_str import _add_suffixes, array_str
from .autograd import grad_mode
from .ops import sparse as _sp
from .ops import sparse_compressed as _spc
from .ops.nn.linear import linear as _nn_linear
from .ops.sparse import COO, Compressed

__all__ = ["SparseTensor"]

# zero-preserving pointwise ops PyTorch runs on sparse COO tensors (on the coalesced values)
UNARY = ("abs asin asinh atan atanh ceil floor round trunc frac sign sgn signbit sin sinh tan "
         "tanh sqrt expm1 log1p erf erfinv deg2rad rad2deg square relu isnan isinf isposinf "
         "isneginf nan_to_num conj_physical").split()

# Tensor methods that read only shape, dtype and the autograd fields: they run unchanged
_PASS = frozenset(
    "size dim ndimension numel nelement is_floating_point is_complex is_signed get_device "
    "float double half bfloat16 long int short char byte bool cpu cuda type_as requires_grad_ "
    "register_hook register_post_accumulate_grad_hook retain_grad backward __len__ __bool__ "
    "pin_memory is_pinned __format__ is_inference is_same_size dim_order __hash__ "
    "sparse_mask".split())


def _layout_name(rec: Any) -> str:
    return _spc.layout_name(rec.layout)


class SparseTensor(Tensor):
    """A Tensor in a sparse layout: ``_data`` is a ``COO`` or ``Compressed`` record
    (ops/sparse.py)."""

    __slots__ = ()

    # -- identity ---------------------------------------------------------------------------
    @property
    def layout(self) -> Any:
        return self._data.layout

    @property
    def is_sparse(self) -> bool:
        return isinstance(self._data, COO)

    @property
    def is_sparse_csr(self) -> bool:
        return self._data.layout is _dtype_info.sparse_csr

    @property
    def device(self) -> _backend.device:
        return _backend.device_of(self._data.values)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    def element_size(self) -> int:
        return self._data.values.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.values.itemsize

    def type(self, dtype: Any = None, non_blocking: bool = False) -> Any:
        if dtype is None:
            prefix = "torch.cuda.sparse." if self.is_cuda else "torch.sparse."
            return prefix + _dtype.legacy_name(self.dtype) + "Tensor"
        return Tensor.type(self, dtype)

    def is_contiguous(self, memory_format: Any = None) -> bool:
        return False

    def contiguous(self, *, memory_format: Any = None) -> Tensor:
        raise RuntimeError("unsupported memory format option Contiguous (sparse tensors have no "
                           "strides; use .to_dense() for a contiguous dense tensor)")

    def stride(self, dim: int | None = None) -> Any:
        st = (0,) * self._data.ndim
        return st if dim is None else st[wrap_dim(dim, self._data.ndim)]

    def data_ptr(self) -> int:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage (a "
                           f"sparse tensor, layout={self.layout}; see .values() / .indices())")

    def untyped_storage(self) -> Any:
        raise NotImplementedError(f"Cannot access storage of {_layout_name(self._data)}"
                                  "TensorImpl (use .values() / .indices())")

    storage = untyped_storage

    def numpy(self, force: bool = False) -> np.ndarray:
        raise TypeError(f"can't convert {_layout_name(self._data)} layout tensor to numpy. Use "
                        "Tensor.to_dense() first.")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.numpy()

    def tolist(self) -> Any:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage (a "
                           "sparse tensor: .to_dense().tolist())")

    def item(self) -> Any:
        if self._data.size != 1:
            return Tensor.item(self)
        return self.to_dense().item()

    def __repr__(self) -> str:
        return _sparse_repr(self)

    __str__ = __repr__

    # -- structure --------------------------------------------------------------------------
    def _coo(self, what: str) -> COO:
        rec = self._data
        if not isinstance(rec, COO):
            raise RuntimeError(f"{what} expected sparse coordinate tensor layout but got "
                               f"{_layout_name(rec)}")
        return rec

    def _compressed(self, what: str, by_rows: bool) -> Compressed:
        rec = self._data
        if not isinstance(rec, Compressed) or rec.by_rows != by_rows:
            kind = "row" if by_rows else "column"
            raise RuntimeError(f"{what} expected sparse {kind} compressed tensor layout but got "
                               f"{_layout_name(rec)}")
        return rec

    def is_coalesced(self) -> bool:
        return self._coo("is_coalesced").coalesced

    def coalesce(self) -> SparseTensor:
        self._coo("coalesce")
        return _sp.coalesce_tensor(self)

    def _coalesced_(self, coalesced: bool) -> SparseTensor:
        self._coo("_coalesced_").coalesced = bool(coalesced)
        return self

    def indices(self) -> Tensor:
        c = self._coo("indices")
        if not c.coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return TensorBase._make(c.indices)

    def _indices(self) -> Tensor:
        return TensorBase._make(self._coo("_indices").indices)

    def values(self) -> Tensor:
        rec = self._data
        if isinstance(rec, COO):
            if not rec.coalesced:
                raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                                   ".coalesce() first")
            return _sp.values_of(self)[1]
        return _spc.compressed_values(self)[1]

    def _values(self) -> Tensor:
        return TensorBase._make(self._coo("_values").values)

    def _nnz(self) -> int:
        return self._data.nnz

    def sparse_dim(self) -> int:
        return self._data.sparse_dim

    def dense_dim(self) -> int:
        return self._data.dense_dim

    def crow_indices(self) -> Tensor:
        return TensorBase._make(self._compressed("crow_indices", True).compressed)

    def col_indices(self) -> Tensor:
        return TensorBase._make(self._compressed("col_indices", True).plain)

    def ccol_indices(self) -> Tensor:
        return TensorBase._make(self._compressed("ccol_indices", False).compressed)

    def row_indices(self) -> Tensor:
        return TensorBase._make(self._compressed("row_indices", False).plain)

    def to_dense(self, dtype: Any = None, *, masked_grad: bool | None = None) -> Tensor:
        out = _sp.to_dense(self)
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, sparse_dim: int | None = None, *, layout: Any = None,
                  blocksize: Any = None, dense_dim: Any = None) -> SparseTensor:
        if layout in _sp.COMPRESSED_LAYOUTS:
            return _spc.to_layout(self, layout, blocksize, dense_dim)
        if layout not in (None, _dtype_info.sparse_coo):
            raise RuntimeError(f"to_sparse: layout {layout} is not a sparse layout (sparse_coo, "
                               "sparse_csr, sparse_csc, sparse_bsr or sparse_bsc)")
        if isinstance(self._data, Compressed):
            return _spc.to_coo(self)
        if sparse_dim is not None and sparse_dim != self._data.sparse_dim:
            raise RuntimeError(f"to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               f"argument !=self.sparse_dim() is not supported (sparse_dim="
                               f"{sparse_dim}, self.sparse_dim()={self._data.sparse_dim})")
        return self

    def to_sparse_coo(self) -> SparseTensor:
        return self.to_sparse()

    def to_sparse_csr(self, dense_dim: int | None = None) -> SparseTensor:
        return _spc.to_layout(self, _dtype_info.sparse_csr, dense_dim=dense_dim)

    def to_sparse_csc(self, dense_dim: int | None = None) -> SparseTensor:
        return _spc.to_layout(self, _dtype_info.sparse_csc, dense_dim=dense_dim)

    def to_sparse_bsr(self, blocksize: Any, dense_dim: int | None = None) -> SparseTensor:
        return _spc.to_layout(self, _dtype_info.sparse_bsr, blocksize, dense_dim)

    def to_sparse_bsc(self, blocksize: Any, dense_dim: int | None = None) -> SparseTensor:
        return _spc.to_layout(self, _dtype_info.sparse_bsc, blocksize, dense_dim)

    # -- autograd ---------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        Tensor.requires_grad.fset(self, value)  # type: ignore[attr-defined]
        if value and self._grad_fn is None:
            _sp.install_grad_hook(self)

    def detach(self) -> SparseTensor:
        return _sp.make(self._data)

    def astype(self, dt: Any, copy: bool = False) -> SparseTensor:
        """(The engine's cast of a gradient to its input's dtype.)"""
        if np.dtype(dt) == self._data.dtype:
            return self
        return _sp.make(self._data.astype(dt))

    def register_hook(self, hook: Any) -> Any:
        handle = Tensor.register_hook(self, hook)
        hooks = self._hooks  # the sparse-gradient hook runs last: it sees the final gradient
        if hooks:
            mine = [h for h in hooks if getattr(h, "_ember_sparse", False)]
            hooks[:] = [h for h in hooks if not getattr(h, "_ember_sparse", False)] + mine
        return handle

    # -- copies and conversions -------------------------------------------------------------
    def clone(self, *, memory_format: Any = None) -> SparseTensor:
        rec = self._data
        if not _sp.tracking(self):
            return _sp.make(rec.copy())
        if isinstance(rec, Compressed):
            c, v = _spc.compressed_values(self)
            return _sp.from_values(c.copy(), v.clone())
        c, v = _sp.values_of(self)
        return _sp.from_values(COO(c.indices.copy(), c.values, c.shape, c.coalesced), v.clone())

    def __deepcopy__(self, memo: dict) -> SparseTensor:
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        t = _sp.make(self._data.copy())
        if self._rg:
            t.requires_grad_(True)
        if self._grad is not None:
            t._grad = _copy.deepcopy(self._grad, memo)
        memo[id(self)] = t
        return t

    def __reduce_ex__(self, protocol: int) -> Any:
        rec = self._data
        if isinstance(rec, COO):
            parts: tuple = (_backend.to_numpy(rec.indices), _backend.to_numpy(rec.values),
                            rec.shape, rec.coalesced)
        else:
            parts = (_backend.to_numpy(rec.compressed), _backend.to_numpy(rec.plain),
                     _backend.to_numpy(rec.values), rec.shape)
        return (_rebuild_sparse, (rec.layout._name, parts, self._rg))

    def to(self, *args: Any, **kwargs: Any) -> SparseTensor:
        dev, dt = None, None
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        for a in list(args) + list(kwargs.values()):
            if a is None or isinstance(a, bool):
                continue
            if isinstance(a, Tensor):
                dev, dt = a.device, a.dtype
            elif isinstance(a, _dtype_cls) or (isinstance(a, type) and a in (float, int, bool)):
                dt = _dtype.to_dtype(a)
            elif isinstance(a, str) and a.removeprefix("torch.") in _dtype.ALIASES:
                dt = _dtype.to_dtype(a)
            else:
                dev = _backend.check_available(
                    a if type(a) is _backend.device else _backend.device(a))
        out = self
        rec = self._data
        if dt is not None and dt.np != rec.dtype:
            if _sp.tracking(self):
                c, v = (_sp.values_of if isinstance(rec, COO) else _spc.compressed_values)(self)
                out = _sp.from_values(c, v.to(dt))
            else:
                out = _sp.make(rec.astype(dt.np))
            rec = out._data
        if dev is not None and dev != out.device:
            moved = rec.copy()
            for name in ("indices", "values", "compressed", "plain"):
                if hasattr(type(moved), name) or name == "values":
                    try:
                        setattr(moved, name, _backend.to_device(getattr(moved, name), dev))
                    except AttributeError:
                        pass
            out = _sp.make(moved, out._rg and out._grad_fn is None)
        if copy and out is self:
            out = self.clone()
        return out

    # -- arithmetic -------------------------------------------------------------------------
    def add(self, other: Any, *, alpha: Any = 1, out: Any = None) -> Any:
        return _add(self, other, alpha)

    __add__ = add

    def __radd__(self, other: Any) -> Any:
        return _add(other, self, 1)

    def sub(self, other: Any, *, alpha: Any = 1, out: Any = None) -> Any:
        return _add(self, other, -alpha)

    subtract = sub
    __sub__ = sub

    def __rsub__(self, other: Any) -> Any:
        if _backend.is_array(other):
            return _sp.add_dense(other, self._data, -1)
        return _add(other, self, -1)

    def mul(self, other: Any) -> Any:
        return _mul(self, other)

    multiply = mul
    __mul__ = mul
    __rmul__ = mul

    def div(self, other: Any, *, rounding_mode: str | None = None) -> Any:
        return _div(self, other, rounding_mode)

    divide = div
    true_divide = div
    __truediv__ = div

    def __rtruediv__(self, other: Any) -> Any:
        raise NotImplementedError("Could not run 'aten::reciprocal' with arguments from the "
                                  f"'{_layout_name(self._data)}CPU' backend (x / sparse is not "
                                  "sparse; use x / s.to_dense())")

    def neg(self) -> SparseTensor:
        return _scale(self, -1)

    negative = neg
    __neg__ = neg

    def __pos__(self) -> SparseTensor:
        return self

    def pow(self, exponent: Any) -> SparseTensor:
        if isinstance(exponent, TensorBase):
            raise NotImplementedError("Could not run 'aten::pow.Tensor_Tensor' with arguments "
                                      "from the 'SparseCPU' backend (a sparse tensor takes a "
                                      "number as exponent)")
        if exponent == 0:
            raise RuntimeError("pow(sparse, 0) is not sparse: use torch.ones(s.shape)")
        return _valuewise(self, lambda v: v.pow(exponent), coalesce=True)

    __pow__ = pow  # noqa: A003

    def mm(self, mat2: Any) -> Any:
        return _mm(self, mat2)

    def matmul(self, other: Any) -> Any:
        return _mm(self, other)

    __matmul__ = matmul

    def __rmatmul__(self, other: Any) -> Any:
        return _mm(other, self)

    def mv(self, vec: Any) -> Any:
        return _mm(self, vec)

    def sum(self, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
        from .ops.sparse import sparse_sum_all

        if dim is None:
            return sparse_sum_all(self, dtype)
        if keepdim:
            raise RuntimeError("sum(sparse, dim, keepdim=True) is not supported (PyTorch's sparse "
                               "sum keeps no dims)")
        return sparse_sum_dims(self, dim, dtype)

    # -- transposes -------------------------------------------------------------------------
    def t(self) -> SparseTensor:
        if self._data.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                               f"but self is {self._data.ndim}D")
        if self._data.ndim < 2:
            return self
        return self.transpose(0, 1)

    def transpose(self, dim0: int, dim1: int) -> SparseTensor:
        n = self._data.ndim
        perm = list(range(n))
        a, b = wrap_dim(dim0, n), wrap_dim(dim1, n)
        perm[a], perm[b] = perm[b], perm[a]
        if isinstance(self._data, Compressed):
            return self if a == b else _spc.transpose_compressed(self)
        return _sp.permute(self, tuple(perm))

    swapaxes = transpose
    swapdims = transpose

    def permute(self, *dims: Any) -> SparseTensor:
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        n = self._data.ndim
        return _sp.permute(self._as_coo("permute"), tuple(wrap_dim(d, n) for d in dims))

    @property
    def T(self) -> SparseTensor:
        return self.t()

    @property
    def mT(self) -> SparseTensor:
        return self.transpose(-2, -1)

    def _as_coo(self, what: str) -> SparseTensor:
        return self if isinstance(self._data, COO) else _spc.to_coo(self)

    def t_(self) -> SparseTensor:
        return self._replace(self.t())

    def transpose_(self, dim0: int, dim1: int) -> SparseTensor:
        return self._replace(self.transpose(dim0, dim1))

    # -- in place ---------------------------------------------------------------------------
    def _replace(self, new: Any) -> SparseTensor:
        """In place: ``self`` takes ``new``'s record (refused where autograd would need it)."""
        if grad_mode.state.enabled and self._rg:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation (ember runs in-place ops on sparse tensors only "
                               "outside autograd: use the out-of-place form)")
        if not isinstance(new, SparseTensor):
            raise RuntimeError("an in-place op on a sparse tensor must give a sparse result")
        self._data = new._data
        self._bump_version()
        return self

    def add_(self, other: Any, *, alpha: Any = 1) -> SparseTensor:
        return self._replace(_add(self, other, alpha))

    def sub_(self, other: Any, *, alpha: Any = 1) -> SparseTensor:
        return self._replace(_add(self, other, -alpha))

    def mul_(self, other: Any) -> SparseTensor:
        return self._replace(_mul(self, other))

    def div_(self, other: Any, *, rounding_mode: str | None = None) -> SparseTensor:
        return self._replace(_div(self, other, rounding_mode))

    def neg_(self) -> SparseTensor:
        return self._replace(self.neg())

    def zero_(self) -> SparseTensor:
        return self._replace(_sp.make(_sp.empty_rec(self._data)))

    def resize_as_(self, the_template: Any, *, memory_format: Any = None) -> SparseTensor:
        """``s.resize_as_(other)`` (COO): ``other``'s size and sparse/dense dims; an empty
        tensor takes any, a non-empty one keeps its elements and may only grow, as PyTorch's."""
        return self._replace(_resize_as(self, the_template))

    def index_select(self, dim: int, index: Any) -> SparseTensor:
        return _index_select(self, dim, index)

    def copy_(self, src: Any, non_blocking: bool = False) -> SparseTensor:
        if not isinstance(src, SparseTensor):
            raise RuntimeError("copy_() between dense and sparse Tensors is not implemented! "
                               f"Found self type = {self.type()} and src type = {src.type()}")
        if tuple(src.shape) != tuple(self.shape):
            raise RuntimeError(f"copy_: sizes do not match ({tuple(self.shape)} and "
                               f"{tuple(src.shape)})")
        return self._replace(_sp.make(src._data.astype(self._data.dtype).copy()))

    def sparse_mask(self, mask: Any) -> SparseTensor:
        return _sparse_mask(self.to_dense(), mask)

    # -- __torch_function__: namespace functions that meet a sparse tensor ------------------
    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        impl = getattr(func, "__func__", func)
        for _ in range(4):  # through the dispatcher and NumPy-name wrappers to the op function
            handler = _HANDLERS.get(impl)
            if handler is not None:
                return handler(*args, **kwargs)
            inner = getattr(impl, "__wrapped__", None)
            if inner is None:
                break
            impl = inner
        name = getattr(impl, "__name__", str(impl))
        module = getattr(impl, "__module__", "") or ""
        if name in ("add_", "sub_") and args and not isinstance(args[0], SparseTensor):
            # dense.add_(sparse): the dense sum, written into the dense tensor
            other = args[1] if len(args) > 1 else kwargs.pop("other")
            alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
            res = _add(args[0], other, alpha if name == "add_" else -alpha)
            return args[0].copy_(res)
        if name == "new" and args and isinstance(args[0], SparseTensor):
            return _legacy_new(*args, **kwargs)
        if name in _PASS or module in ("ember.ops.sparse", "ember.ops.sparse_creation",
                                       "ember.sparse"):
            return impl(*args, **kwargs)
        rec = next(a._data for a in _flat(args, kwargs) if isinstance(a, SparseTensor))
        raise NotImplementedError(
            f"Could not run 'aten::{name}' with arguments from the '{_layout_name(rec)}CPU' "
            f"backend: ember has no sparse form of {name} (layout={rec.layout}). Convert with "
            ".to_dense() first, or use torch.sparse's functions.")


def _legacy_new(self: Any, *args: Any, **kwargs: Any) -> Any:
    """``sparse.new(indices, values[, size])`` (PyTorch's legacy constructor, optimizers such as
    SM3 call it on a sparse gradient), ``sparse.new(*size)`` and ``sparse.new()``: sparse COO
    tensors of ``self``'s dtype."""
    from .ops.sparse_creation import sparse_coo_tensor

    if len(args) >= 2 and all(hasattr(a, "_data") for a in args[:2]):
        size = tuple(args[2]) if len(args) > 2 else kwargs.get("size")
        return sparse_coo_tensor(args[0], args[1].to(self.dtype), size)
    sizes = tuple(int(a) for a in (args[0] if len(args) == 1 and isinstance(args[0], (tuple, list))
                                   else args)) or (0,)
    return sparse_coo_tensor(ops.zeros(len(sizes), 0, dtype=_dtype.int64),
                             ops.zeros(0, dtype=self.dtype),
                             sizes)


def _zeros_like(input: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                requires_grad: bool = False, memory_format: Any = None,
                pin_memory: bool = False, empty: bool = False) -> Any:
    """``torch.zeros_like(sparse)`` (and ``empty_like``): a sparse tensor of ``input``'s layout,
    shape and sparse/dense dims with nothing specified (``empty_like`` of a compressed one keeps
    its pattern, with zero values); dense zeros of a COO one with ``layout=torch.strided``."""
    rec = input._data
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.from_numpy(rec.dtype)
    if layout is not None and layout is not rec.layout and isinstance(rec, Compressed):
        raise RuntimeError(f"empty_like with different sparse layout is not supported (self is "
                           f"{_layout_name(rec)} but you requested {_spc.layout_name(layout)})")
    if layout is _dtype_info.strided:
        out = ops.zeros(tuple(rec.shape), dtype=dt, device=device or input.device)
        return out.requires_grad_(True) if requires_grad else out
    if layout is not None and layout is not rec.layout:
        raise RuntimeError(f"zeros_like: layout={layout} differs from the input's "
                           f"{rec.layout}: ember makes zeros of the input's layout (or strided)")
    out = _sp.make(_sp.empty_rec(rec).astype(dt.np))
    if empty and isinstance(rec, Compressed):  # PyTorch's keeps the pattern (values unset)
        xp = _backend.xp_of(rec.values)
        out = _sp.make(Compressed(rec.compressed.copy(), rec.plain.copy(),
                                  xp.zeros(rec.values.shape, dt.np), rec.shape, rec.layout))
    if device is not None:
        out = out.to(device)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _resize_as(s: SparseTensor, other: Any) -> SparseTensor:
    rec = s._data
    if not isinstance(other, SparseTensor):
        raise NotImplementedError(
            f"Could not run 'aten::resize_' with arguments from the '{_layout_name(rec)}CPU' "
            "backend: a sparse tensor's resize_as_ takes a sparse template")
    tpl = other._data
    if not isinstance(rec, COO) or not isinstance(tpl, COO):
        raise NotImplementedError(f"resize_as_: ember resizes sparse COO tensors only (got "
                                  f"{_layout_name(rec)} and {_layout_name(tpl)})")
    shape, sd = tuple(tpl.shape), tpl.sparse_dim
    if rec.nnz == 0:
        xp = _backend.xp_of(rec.values)
        return _sp.make(COO(xp.zeros((sd, 0), np.int64),
                            xp.zeros((0,) + shape[sd:], rec.values.dtype), shape, True))
    if (sd, tpl.dense_dim) != (rec.sparse_dim, rec.dense_dim):
        raise RuntimeError(
            f"resize_as_: changing the number of sparse dimensions (from {rec.sparse_dim} to "
            f"{sd}) or dense dimensions (from {rec.dense_dim} to {tpl.dense_dim}) on a "
            "non-empty sparse tensor is not supported.")
    old = list(rec.shape)
    if any(n < o for n, o in zip(shape[:sd], old[:sd])):
        raise RuntimeError(f"shrinking the size of sparse dimensions (from {old[:sd]} to "
                           f"{list(shape[:sd])}) on a non-empty sparse tensor is not supported.")
    if shape[sd:] != tuple(old[sd:]):
        raise RuntimeError(f"resizing dense dimensions (from {old[sd:]} to {list(shape[sd:])}) "
                           "on a non-empty sparse tensor is not supported.")
    return _sp.make(COO(rec.indices, rec.values, shape, rec.coalesced))


def _index_select(s: SparseTensor, dim: int, index: Any) -> SparseTensor:
    """``s.index_select(dim, index)`` for a COO tensor: the entries at ``index`` along ``dim``,
    in the order of ``index`` (then of ``s``'s elements), uncoalesced, as PyTorch's."""
    rec = s._data
    if not isinstance(rec, COO):
        raise NotImplementedError(
            f"Could not run 'aten::index_select' with arguments from the '{_layout_name(rec)}CPU'"
            " backend (ember selects from sparse COO tensors: convert with .to_sparse() first)")
    if not isinstance(index, TensorBase) or isinstance(index, SparseTensor) or \
            index._data.ndim != 1 or index._data.dtype != np.int64:
        raise IndexError("index_select() argument index must be 1-D strided (non-sparse) "
                         "long-tensor.")
    d = wrap_dim(dim, rec.ndim)
    n = rec.shape[d]
    ix = index._data
    xp = _backend.xp_of(rec.values)
    ix = xp.asarray(ix)
    if ix.shape[0]:
        bad = (ix < -n) | (ix >= n)
        if bool(bad.any()):
            raise IndexError(f"index_select(): index contains {int(ix[bad][0])} that is out of "
                             f"range for tensor of size {list(rec.shape)} at dimension {d}")
    ix = xp.where(ix < 0, ix + n, ix)
    shape = list(rec.shape)
    shape[d] = int(ix.shape[0])
    c, v = _sp.values_of(s)
    sd = c.sparse_dim
    if d >= sd:
        nv = v.index_select(d - sd + 1, TensorBase._make(ix))
        return _sp.from_values(COO(c.indices, nv._data, tuple(shape), c.nnz <= 1), nv)
    key = c.indices[d]
    order = xp.argsort(key, kind="stable")
    sk = key[order]
    lo = xp.searchsorted(sk, ix, "left")
    counts = xp.searchsorted(sk, ix, "right") - lo
    total = int(counts.sum())
    pos = order[xp.arange(total, dtype=np.int64)
                + xp.repeat(lo - (xp.cumsum(counts) - counts), counts)]
    idx = c.indices[:, pos].copy()
    idx[d] = xp.repeat(xp.arange(ix.shape[0], dtype=np.int64), counts)
    nv = v[TensorBase._make(pos)]
    return _sp.from_values(COO(idx, nv._data, tuple(shape), total <= 1), nv)


def _flat(args: Any, kwargs: dict) -> list:
    out = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, (list, tuple)):
            out.extend(a)
        else:
            out.append(a)
    return out


def _rebuild_sparse(layout: str, parts: tuple, requires_grad: bool) -> SparseTensor:
    if layout == "sparse_coo":
        idx, vals, shape, coalesced = parts
        t = _sp.make(COO(np.array(idx), np.array(vals), shape, coalesced))
    else:
        cidx, pidx, vals, shape = parts
        t = _sp.make(Compressed(np.array(cidx), np.array(pidx), np.array(vals), shape,
                                getattr(_dtype_info, layout)))
    if requires_grad:
        t.requires_grad_(True)
    return t


# ---------------------------------------------------------------------------------------------
# the sparse forms


def _is_scalar(x: Any) -> bool:
    return isinstance(x, (int, float, np.generic)) and not isinstance(x, bool) or (
        isinstance(x, TensorBase) and not isinstance(x, SparseTensor) and x._data.ndim == 0)


def _valuewise(s: SparseTensor, fn: Any, coalesce: bool) -> SparseTensor:
    """A sparse tensor with ``s``'s indices and ``fn(values)`` (a dense op on the values
    tensor, so autograd records it); coalesced first when ``coalesce`` (PyTorch's unary ops)."""
    if isinstance(s._data, Compressed):
        rec, v = _spc.compressed_values(s)
        return _sp.from_values(rec, fn(v))
    if coalesce:
        s = _sp.coalesce_tensor(s)
    c, v = _sp.values_of(s)
    return _sp.from_values(c, fn(v))


def _scale(s: SparseTensor, k: Any) -> SparseTensor:
    return _valuewise(s, lambda v: v * k, coalesce=False)


def _add(a: Any, b: Any, alpha: Any) -> Any:
    """``a + alpha * b`` with at least one sparse operand."""
    sa, sb = isinstance(a, SparseTensor), isinstance(b, SparseTensor)
    if _backend.is_array(a):  # the engine adds a sparse gradient to a dense buffer
        return _sp.add_dense(a, b._data, alpha)
    if _backend.is_array(b):
        return _sp.add_dense(b, a._data, 1) if alpha == 1 else _sp.add_dense(
            b * alpha, a._data, 1)
    if sa and sb:
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                               f"size {list(a.shape)} while other has size {list(b.shape)} "
                               "(sparse tensors do not broadcast)")
        like = a._data if isinstance(a._data, Compressed) else b._data
        if isinstance(like, Compressed):  # (in the compressed operand's layout)
            return _sp.make(_sp.convert_rec(_sp.add_sparse(a._data, b._data, alpha), like.layout,
                                            like.blocksize))
        if _sp.tracking(a, b):
            ca, va = _sp.values_of(a)
            cb, vb = _sp.values_of(b)
            xp = _backend.xp_of(ca.indices)
            idx = xp.concatenate([ca.indices, cb.indices], axis=1)
            from . import ops as _ops

            vals = _ops.cat([va, vb * alpha if alpha != 1 else vb])
            out = _sp.from_values(COO(idx, vals._data, ca.shape, False), vals)
            return out.coalesce()
        return _sp.make(_sp.add_sparse(a._data, b._data, alpha))
    if sa:
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if not isinstance(a, TensorBase):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    # dense + alpha * sparse: a dense result (its gradient to the sparse operand is dense)
    if _sp.tracking(a, b):
        return ops.add(a, _sp._ToDense.apply(b, True), alpha=alpha)
    dt = _dtype.result_type(a, b)
    out = _sp.add_dense(a._data, b._data, alpha)
    return TensorBase._make(out.astype(dt.np, copy=False))


def _mul(s: SparseTensor, other: Any) -> Any:
    if _is_scalar(other):
        return _scale(s, other)
    if not isinstance(other, TensorBase):
        raise TypeError(f"mul(): argument 'other' must be Tensor or Number, not "
                        f"{type(other).__name__}")
    if isinstance(s._data, Compressed) or isinstance(other, SparseTensor) and isinstance(
            other._data, Compressed):  # through COO, back to s's layout
        out = _mul(s._as_coo("mul"), other._as_coo("mul") if isinstance(other, SparseTensor)
                   else other)
        rec = s._data
        if isinstance(rec, Compressed):
            return _spc.to_layout(out, rec.layout, rec.blocksize)
        return out
    if isinstance(other, SparseTensor):
        a, b = _sp.coalesce_tensor(s), _sp.coalesce_tensor(other)
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"mul: sparse tensors of shapes {list(a.shape)} and "
                               f"{list(b.shape)} do not broadcast")
        ca, va = _sp.values_of(a)
        cb, vb = _sp.values_of(b)
        sizes = ca.shape[: ca.sparse_dim]
        la, lb = _sp._linear(ca.indices, sizes), _sp._linear(cb.indices, sizes)
        xp = _backend.xp_of(la)
        common, ia, ib = np.intersect1d(_backend.to_numpy(la), _backend.to_numpy(lb),
                                        assume_unique=True, return_indices=True)
        ia, ib = xp.asarray(ia), xp.asarray(ib)
        vals = va[TensorBase._make(ia)] * vb[TensorBase._make(ib)]
        return _sp.from_values(COO(ca.indices[:, ia], vals._data, ca.shape, True), vals)
    # sparse * dense: the sparse pattern, values times the dense entries there
    c, v = _sp.values_of(s)
    full = tuple(np.broadcast_shapes(tuple(other.shape), c.shape))
    if full != c.shape:
        raise RuntimeError(f"mul: the dense operand of shape {list(other.shape)} must broadcast "
                           f"to the sparse tensor's shape {list(c.shape)}")
    d = other.expand(c.shape) if tuple(other.shape) != c.shape else other
    picked = d[tuple(TensorBase._make(i) for i in c.indices)]
    return _sp.from_values(c, v * picked)


def _div(s: SparseTensor, other: Any, rounding_mode: Any) -> Any:
    if not _is_scalar(other):
        shape = list(other.shape) if isinstance(other, TensorBase) else type(other).__name__
        raise RuntimeError(f"Sparse division requires a scalar or zero-dim dense tensor divisor "
                           f"(got shape {shape} for divisor)")
    return _valuewise(s, lambda v: ops.div(v, other, rounding_mode=rounding_mode),
                      coalesce=rounding_mode is not None)


def _mm(a: Any, b: Any, dense_grad: bool = True, keep_layout: bool = False) -> Any:
    sa, sb = isinstance(a, SparseTensor), isinstance(b, SparseTensor)
    if sa and sb:
        # sparse @ sparse: PyTorch gives a sparse (coalesced) result; of two compressed ones,
        # CSR (torch.mm, @) or the first one's layout (torch.sparse.mm)
        if a._data.ndim != 2 or b._data.ndim != 2:
            raise RuntimeError("mm: sparse @ sparse takes two matrices")
        for r in (a._data, b._data):
            if r.layout in _sp.BLOCK_LAYOUTS:
                raise RuntimeError(f"mm: sparse @ sparse with a {_layout_name(r)} operand is not "
                                   "supported (as in PyTorch): convert it with .to_dense() or "
                                   ".to_sparse() first")
        prod = _sp.sparse_mm(a._as_coo("mm"), b.to_dense(), dense_grad)
        if isinstance(a._data, COO):
            return _sp.to_sparse(prod)
        return _spc.to_layout(prod, a._data.layout if keep_layout else _dtype_info.sparse_csr)
    if sa:
        return _sp.sparse_mm(a._as_coo("mm"), b, dense_grad)
    # dense @ sparse = (sparse^T @ dense^T)^T
    if not isinstance(a, TensorBase):
        raise TypeError(f"mm(): argument 'input' must be Tensor, not {type(a).__name__}")
    if a.ndim == 1:
        return _sp.sparse_mm(b._as_coo("mm").t(), a, dense_grad)
    return _sp.sparse_mm(b._as_coo("mm").t(), a.t(), dense_grad).t()


def _addmm(input: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1,
           out: Any = None) -> Any:
    prod = _mm(mat1, mat2)
    if isinstance(input, SparseTensor):
        input = input.to_dense()
    return ops.add(input * beta if beta != 1 else input, prod * alpha if alpha != 1 else prod)


def sparse_sum_dims(s: SparseTensor, dim: Any, dtype: Any = None) -> Any:
    """``torch.sparse.sum(s, dim)``: the sum over ``dim`` (sparse while sparse dims remain)."""
    s = s._as_coo("sum")
    c = s._data
    dims = [dim] if isinstance(dim, int) else list(dim)
    dims = sorted({wrap_dim(d, c.ndim) for d in dims})
    if len(dims) == c.ndim and c.dense_dim == 0:
        return _sp.sparse_sum_all(s, dtype)
    s = _sp.coalesce_tensor(s)
    c, v = _sp.values_of(s)
    if dtype is not None:
        v = v.to(dtype)
    sd = c.sparse_dim
    sparse_red = [d for d in dims if d < sd]
    dense_red = [d - sd + 1 for d in dims if d >= sd]
    if dense_red:
        v = v.sum(dim=tuple(dense_red))
    keep = [k for k in range(sd) if k not in sparse_red]
    shape = tuple(c.shape[k] for k in keep) + tuple(
        c.shape[k] for k in range(sd, c.ndim) if k not in dims)
    if not keep:
        return v.sum(0)
    sizes = tuple(c.shape[k] for k in keep)
    lin = _sp._linear(c.indices[keep], sizes)
    xp = _backend.xp_of(lin)
    uniq, inv = xp.unique(lin, return_inverse=True)
    summed = ops.zeros((uniq.shape[0],) + tuple(v.shape[1:]), dtype=v.dtype).index_add(
        0, TensorBase._make(inv.reshape(-1)), v)
    rec = COO(_sp._unlinear(uniq, sizes), summed._data, shape, True)
    return _sp.from_values(rec, summed)


def _linear(input: Any, weight: Any, bias: Any) -> Any:
    """``F.linear`` of a sparse matrix input (a graph library's sparse node features):
    ``bias + input @ weight.T``, dense, with a dense gradient to ``input`` as PyTorch's."""
    if isinstance(weight, SparseTensor) or isinstance(bias, SparseTensor) or \
            not isinstance(input, SparseTensor) or input._data.ndim != 2:
        rec = next(a._data for a in (input, weight, bias) if isinstance(a, SparseTensor))
        raise NotImplementedError(
            f"Could not run 'aten::linear' with arguments from the '{_layout_name(rec)}CPU' "
            "backend: ember's F.linear takes a sparse 2-D input with a dense weight and bias")
    out = _mm(input, weight.t())
    return out if bias is None else ops.add(out, bias)

def _sparse_mask(dense: Any, mask: Any) -> SparseTensor:
    """``dense.sparse_mask(mask)``: ``dense``'s entries at ``mask``'s indices."""
    if not isinstance(mask, SparseTensor):
        raise RuntimeError("sparse_mask: expected mask to be a sparse COO tensor")
    if tuple(dense.shape) != tuple(mask.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(dense.shape)} but mask has size {list(mask.shape)}")
    c = _sp.coalesce(mask._as_coo("sparse_mask")._data)
    picked = dense[tuple(TensorBase._make(i) for i in c.indices)]
    return _sp.from_values(COO(c.indices, picked._data, c.shape, True), picked)


def _cat(tensors: Any, dim: int = 0, *, out: Any = None) -> Any:
    ts = list(tensors)
    if not all(isinstance(t, SparseTensor) and isinstance(t._data, COO) for t in ts):
        raise RuntimeError("cat: expected all tensors to be sparse COO (ember does not mix "
                           "dense and sparse tensors in cat)")
    first = ts[0]._data
    n = first.ndim
    d = wrap_dim(dim, n)
    if d >= first.sparse_dim:
        raise RuntimeError("cat: ember concatenates sparse tensors along sparse dims only")
    xp = _backend.xp_of(first.values)
    idx, vals, off = [], [], 0
    for t in ts:
        c = t._data
        i = c.indices.copy()
        i[d] += off
        off += c.shape[d]
        idx.append(i)
        vals.append(c.values)
    shape = list(first.shape)
    shape[d] = off
    rec = COO(xp.concatenate(idx, axis=1), xp.concatenate(vals), tuple(shape), False)
    if _sp.tracking(*ts):
        vs = [_sp.values_of(t)[1] for t in ts]
        v = ops.cat(vs)
        return _sp.from_values(rec, v)
    return _sp.make(rec)


def _unary(name: str) -> Any:
    fn = getattr(ops, name)
    keep = name in ("neg", "negative")

    def method(self: SparseTensor, *args: Any, **kwargs: Any) -> SparseTensor:
        return _valuewise(self, lambda v: fn(v, *args, **kwargs), coalesce=not keep)

    def method_(self: SparseTensor, *args: Any, **kwargs: Any) -> SparseTensor:
        if isinstance(self._data, COO) and not self._data.coalesced:
            raise RuntimeError(f"{name}_: in-place operations on sparse tensors require a "
                               "coalesced tensor; call .coalesce() first")
        return self._replace(method(self, *args, **kwargs))

    method.__name__, method_.__name__ = name, name + "_"
    return method, method_


for _name in UNARY:
    if hasattr(ops, _name):
        _m, _m_ = _unary(_name)
        setattr(SparseTensor, _name, _m)
        setattr(SparseTensor, _name + "_", _m_)


# namespace functions (by the op function they wrap) -> their sparse forms
_HANDLERS: dict[Any, Any] = {
    ops.mm: lambda input, mat2, *, out=None: _mm(input, mat2),
    ops.matmul: lambda input, other, *, out=None: _mm(input, other),
    ops.mv: lambda input, vec, *, out=None: _mm(input, vec),
    ops.addmm: _addmm,
    ops.add: lambda input, other, *, alpha=1, out=None: _add(input, other, alpha),
    ops.sub: lambda input, other, *, alpha=1, out=None: _add(input, other, -alpha),
    ops.mul: lambda input, other, *, out=None: (
        _mul(input, other) if isinstance(input, SparseTensor) else _mul(other, input)),
    ops.div: lambda input, other, *, rounding_mode=None, out=None: (
        _div(input, other, rounding_mode)),
    ops.neg: lambda input, *, out=None: input.neg(),
    ops.pow: lambda input, exponent, *, out=None: input.pow(exponent),
    ops.sum: lambda input, dim=None, keepdim=False, *, dtype=None, out=None: (
        input.sum(dim, keepdim, dtype)),
    ops.t: lambda input: input.t(),
    ops.transpose: lambda input, dim0, dim1: input.transpose(dim0, dim1),
    ops.permute: lambda input, dims: input.permute(dims),
    ops.clone: lambda input, *, memory_format=None: input.clone(),
    ops.cat: _cat,
    _nn_linear: lambda input, weight, bias=None: _linear(input, weight, bias),
    ops.zeros_like: _zeros_like,
    ops.empty_like: lambda input, **kw: _zeros_like(input, empty=True, **kw),
    ops.index_select: lambda input, dim, index, *, out=None: _index_select(input, dim, index),
}
for _name in UNARY:
    if hasattr(ops, _name):
        _HANDLERS[getattr(ops, _name)] = (
            lambda n: lambda input, *a, out=None, **k: getattr(input, n)(*a, **k))(_name)
for _f in (getattr(ops, "true_divide", None), getattr(ops, "divide", None)):
    if _f is not None and _f not in _HANDLERS:
        _HANDLERS[_f] = _HANDLERS[ops.div]
for _f in (getattr(ops, "multiply", None),):
    if _f is not None and _f not in _HANDLERS:
        _HANDLERS[_f] = _HANDLERS[ops.mul]
for _f in (getattr(ops, "subtract", None),):
    if _f is not None and _f not in _HANDLERS:
        _HANDLERS[_f] = _HANDLERS[ops.sub]
for _f in (getattr(ops, "negative", None),):
    if _f is not None and _f not in _HANDLERS:
        _HANDLERS[_f] = _HANDLERS[ops.neg]
SparseTensor.__abs__ = SparseTensor.abs  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------
# printing, as PyTorch prints a sparse tensor


def _inner(arr: Any, indent: int) -> str:
    a = _backend.to_numpy(arr)
    if a.size == 0:
        return f"tensor([], size={tuple(a.shape)})"
    return "tensor(" + array_str(a, indent + len("tensor(")) + ")"


def _sparse_repr(t: SparseTensor) -> str:
    rec = t._data
    indent = len("tensor(")
    if isinstance(rec, COO):
        parts = [("indices=", rec.indices), ("values=", rec.values)]
    else:
        c, p = ("crow_indices=", "col_indices=") if rec.by_rows else ("ccol_indices=",
                                                                      "row_indices=")
        parts = [(c, rec.compressed), (p, rec.plain), ("values=", rec.values)]
    text = "tensor("
    for k, (label, arr) in enumerate(parts):
        if k:
            text += ",\n" + " " * indent
        text += label + _inner(arr, indent + len(label))
    suffixes = [f"size={tuple(rec.shape)}", f"nnz={rec.nnz}"]
    if _dtype.from_numpy(rec.dtype) is not _dtype.get_default_dtype():
        suffixes.append(f"dtype={_dtype.from_numpy(rec.dtype)}")
    dev = t.device
    if dev.type != "cpu":
        suffixes.insert(0, f"device='{dev}'")
    suffixes.append(f"layout={rec.layout}")
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._rg:
        suffixes.append("requires_grad=True")
    return _add_suffixes(text, suffixes, indent, force_newline=isinstance(rec, COO))


_sp.register_class(SparseTensor)
