"""The Tensor methods that are op functions, in one table; and the in-place twins' one rule.

``x.sum(1)`` *is* ``ember.ops.sum(x, 1)``: each entry of ``OP_METHODS`` is the op function itself,
set on ``Tensor`` as a method (``ember/_tensor.py`` does it), so ``help(x.sum)`` shows the op's
signature and docstring, and a method call costs no forwarding. Where the method's arguments
differ from the function's (``x.where(cond, y)`` is ``where(cond, x, y)``), a small function below
says so. Where is an op's math? ``ember/ops/``: each op's forward and backward sit side by side.

``x.add_(y)`` is ``add`` written back into ``x``'s memory (``ember/ops/inplace.py``, PyTorch's rules
for versions, views and leaves): every name in ``INPLACE_TWINS`` gets its ``name_`` method by that
one rule, ``inplace_twin``. In-place methods that are not twins of an op (``copy_``, ``fill_``-like
random fills, ``t_``...) are written out in ``ember/_tensor.py``.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _backend, _dtype_info, ops
from ._size import Size
from .ops import casting, indexing, joining, shape
from .ops import shape as _sh
from .ops import sparse as _sparse
from .ops import sparse_compressed as _sparse_compressed
from .ops import special as _special_ops
from .ops import spectral_stft as _spectral_stft
from .ops._aliases import numpy_names
from .ops.creation import tensor
from .ops.inplace import inplace
from .ops.nn import activation

# -- methods whose arguments differ from their op function's ---------------------------------

def where(self, condition: Any, other: Any) -> Any:
    """``where(condition, other)``: ``self`` where ``condition``, else ``other``."""
    return ops.where(condition, self, other)

def reshape_as(self, other: Any) -> Any:
    """``reshape_as(other)``: ``self.reshape(other.shape)``."""
    return ops.reshape(self, tuple(other.shape))

def polygamma(self, n: int) -> Any:
    """``polygamma(n)``: see ``ember.ops.special.polygamma``."""
    return ops.polygamma(n, self)

def slice_scatter(self: Any, src: Any, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Any:
    """``slice_scatter(src, dim=0, start=None, end=None, step=1)``: a copy with ``src`` written
    into that slice."""
    return ops.slice_scatter(self, src, dim, start, end, step)

def reshape(self, *size: Any, shape: Any = None) -> Any:
    """``reshape(*shape)``: the shape as varargs, one sequence, or ``shape=`` (``torch.reshape``
    takes one sequence)."""
    if shape is not None:
        if size:
            raise TypeError("reshape() got the shape both positionally and as shape=")
        size = (shape,)
    shape = _sh._infer_shape(_sh._shape_arg(size), self._data.size)
    if _sh._can_view(self._data, shape):
        return _sh.Reshape.apply(self, shape)
    return _sh.ReshapeCopy.apply(self, shape)

def norm(self, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
    """``norm(p='fro', dim=None, keepdim=False, dtype=None)``: ``torch.norm`` without ``out=``,
    ``dtype`` fourth (``torch.norm`` has ``out`` there)."""
    return ops.norm(self, p, dim, keepdim, dtype=dtype)

def repeat_interleave(self, repeats: Any, dim: int | None = None, *,
                      output_size: int | None = None) -> Any:
    """``repeat_interleave(repeats, dim=None, *, output_size=None)``: ``repeats`` required (the
    function's one-tensor form is not a method)."""
    return ops.repeat_interleave(self, repeats, dim, output_size=output_size)

def diagonal_scatter(self: Any, src: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
    """``diagonal_scatter(src, offset=0, dim1=0, dim2=1)``: a copy with ``src`` written into that
    diagonal."""
    return ops.diagonal_scatter(self, src, offset, dim1, dim2)

def adjoint(self) -> Any:
    """``adjoint()``: the conjugate transpose of the last two dims (a transpose when real)."""
    return ops.conj(ops.transpose(self, -2, -1))

def resize_as_(self, other: Any) -> Any:
    """``resize_as_(other)``: ``self.resize_(other.shape)``."""
    return self.resize_(tuple(other.shape))

def new_empty_strided(self, size: Any, stride: Any, *, dtype: Any = None, layout: Any = None,
                      device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False) -> Any:
    """``new_empty_strided(size, stride, *, dtype, layout, device, pin_memory, requires_grad)``:
    ember arrays pick their own (contiguous) strides."""
    return ops.empty_strided(size, stride, dtype=self.dtype if dtype is None else dtype,
                             layout=layout, device=self.device if device is None else device,
                             requires_grad=requires_grad)

def _real(self) -> Any:
    """The real parts (a view of a complex tensor; a real tensor itself)."""
    return ops.real(self)

def _set_real(self, value: Any) -> None:
    ops.real(self).copy_(value)

def _imag(self) -> Any:
    """The imaginary parts (a view; real tensors have none: RuntimeError, as in PyTorch)."""
    return ops.imag(self)

def _set_imag(self, value: Any) -> None:
    ops.imag(self).copy_(value)

real = property(_real, _set_real)
imag = property(_imag, _set_imag)

def dequantize(self) -> Any:
    """The tensor itself: ember has no quantized tensors."""
    return self

def to_dense(self, dtype: Any = None, *, masked_grad: Any = None) -> Any:
    """The tensor itself (already dense), or a copy in ``dtype``."""
    return self if dtype is None else self.to(dtype)

# the sparse layouts (ops/sparse.py; a sparse tensor is an ember._tensor_sparse.SparseTensor,
# whose own methods shadow these): a dense tensor converts, and refuses the sparse accessors
def to_sparse(self, sparse_dim: int | None = None, *, layout: Any = None, blocksize: Any = None,
              dense_dim: Any = None) -> Any:
    """A sparse COO copy (``sparse_dim`` leading sparse dims; all by default), or one in the
    compressed ``layout`` (``torch.sparse_csr``/``_csc``/``_bsr``/``_bsc``; ``blocksize`` for
    the block layouts)."""
    if layout in _sparse.COMPRESSED_LAYOUTS:
        return _sparse_compressed.to_layout(self, layout, blocksize, dense_dim)
    if layout not in (None, _dtype_info.sparse_coo):
        raise RuntimeError(f"to_sparse: layout {layout} is not a sparse layout (sparse_coo, "
                           "sparse_csr, sparse_csc, sparse_bsr or sparse_bsc)")
    return _sparse.to_sparse(self, sparse_dim)

def to_sparse_coo(self) -> Any:
    return _sparse.to_sparse(self)

def to_sparse_csr(self, dense_dim: int | None = None) -> Any:
    """A sparse CSR copy of a dense matrix."""
    return _sparse_compressed.to_layout(self, _dtype_info.sparse_csr, dense_dim=dense_dim)

def to_sparse_csc(self, dense_dim: int | None = None) -> Any:
    """A sparse CSC copy of a dense matrix."""
    return _sparse_compressed.to_layout(self, _dtype_info.sparse_csc, dense_dim=dense_dim)

def to_sparse_bsr(self, blocksize: Any, dense_dim: int | None = None) -> Any:
    """A sparse BSR copy of a dense matrix (blocks of ``blocksize``)."""
    return _sparse_compressed.to_layout(self, _dtype_info.sparse_bsr, blocksize, dense_dim)

def to_sparse_bsc(self, blocksize: Any, dense_dim: int | None = None) -> Any:
    """A sparse BSC copy of a dense matrix (blocks of ``blocksize``)."""
    return _sparse_compressed.to_layout(self, _dtype_info.sparse_bsc, blocksize, dense_dim)

def _strided_refusal(what: str, layout: str = "sparse coordinate") -> Callable:
    def method(self: Any) -> Any:
        raise RuntimeError(f"{what} expected {layout} tensor layout but got Strided (a dense "
                           "tensor: convert it with .to_sparse() first)")
    method.__name__ = what
    return method

is_coalesced = _strided_refusal("is_coalesced")
coalesce = _strided_refusal("coalesce")
indices = _strided_refusal("indices")
values = _strided_refusal("values")
_indices = _strided_refusal("_indices")
_values = _strided_refusal("_values")
crow_indices = _strided_refusal("crow_indices", "sparse row compressed")
col_indices = _strided_refusal("col_indices", "sparse row compressed")
ccol_indices = _strided_refusal("ccol_indices", "sparse column compressed")
row_indices = _strided_refusal("row_indices", "sparse column compressed")

def _nnz(self) -> int:
    raise NotImplementedError("Could not run 'aten::_nnz' with arguments from the 'CPU' backend "
                              "(a dense tensor has no nnz: count_nonzero() counts its non-zeros)")

def sparse_dim(self) -> int:
    return 0

def dense_dim(self) -> int:
    return self.ndim

def sparse_mask(self, mask: Any) -> Any:
    """This dense tensor's entries at the indices of the sparse tensor ``mask`` (sparse)."""
    from ._tensor_sparse import _sparse_mask  # (the tensor layer's sparse subclass)

    return _sparse_mask(self, mask)

def is_signed(self) -> bool:
    return self.dtype.is_signed

def is_nonzero(self) -> bool:
    """``bool`` of a one-element tensor; more or fewer elements raise."""
    n = self.numel()
    if n != 1:
        more = "more than one value" if n else "no values"
        raise RuntimeError(f"Boolean value of Tensor with {more} is ambiguous")
    return bool(self.item())

def is_same_size(self, other: Any) -> bool:
    return tuple(self.shape) == tuple(other.shape)

def is_inference(self) -> bool:
    return False

def is_set_to(self, tensor: Any) -> bool:
    """True when both tensors view the same memory with the same shape and strides."""
    return (self.data_ptr() == tensor.data_ptr() and tuple(self.shape) == tuple(tensor.shape)
            and self.stride() == tensor.stride())

def dim_order(self, *, ambiguity_check: Any = False) -> tuple:
    """The dims from outermost to innermost in memory (largest stride first).

    ``ambiguity_check=True`` raises when the order is not unique (a size-1 dim, a zero stride,
    or two dims with the same stride); a list of memory formats accepts an ambiguous order that matches exactly
    one of them."""
    st = self.stride()
    order = tuple(sorted(range(self.dim()), key=lambda d: -st[d]))
    if not isinstance(ambiguity_check, (bool, list)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    if ambiguity_check is False:
        return order
    shape = tuple(self.shape)
    if 1 not in shape and 0 not in st and len(set(st)) == len(st):
        return order
    if ambiguity_check is not True:
        perms = {_dtype_info.contiguous_format: tuple(range(len(shape))),
                 _dtype_info.channels_last: (0, 2, 3, 1) if len(shape) == 4 else None,
                 _dtype_info.channels_last_3d: (0, 2, 3, 4, 1) if len(shape) == 5 else None}
        for f in ambiguity_check:
            if f not in perms:
                raise TypeError("The ambiguity_check argument must be a bool or a list of memory "
                                "formats.")
        if sum(_dense_in(shape, st, perms[f]) for f in ambiguity_check) == 1:
            return order
    raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of "
                       f"the given memory formats (shape {list(shape)}, strides {list(st)}).")


def _dense_in(shape: tuple, strides: tuple, perm: tuple | None) -> bool:
    """Whether a tensor of ``shape``/``strides`` is dense with its dims laid out in ``perm``
    (outermost first), size-1 dims' strides ignored."""
    if perm is None:
        return False
    if 0 in shape:  # no elements: contiguous, and in no other layout
        return perm == tuple(range(len(shape)))
    expect = 1
    for d in reversed(perm):
        if shape[d] != 1 and strides[d] != expect:
            return False
        expect *= shape[d]
    return True

def const_data_ptr(self) -> int:
    return self.data_ptr()

@property
def layout(self) -> Any:
    return _dtype_info.strided

is_sparse = property(lambda self: False, doc="False for a dense tensor (a sparse COO one is True).")

is_sparse_csr = property(lambda self: False, doc="False for a dense tensor (a CSR one is True).")

is_quantized = property(lambda self: False, doc="False: ember has no quantized tensors.")

is_nested = property(lambda self: False, doc="False: a dense tensor (torch.nested's are True).")

is_meta = property(lambda self: _backend.is_meta(self._data),
                   doc="Whether the tensor is on the meta device (a shape, no data).")

is_mkldnn = property(lambda self: False, doc="False: no MKL-DNN layout.")

is_xpu = property(lambda self: False, doc="False: ember runs on cpu and cuda only.")

is_mps = property(lambda self: False, doc="False: ember runs on cpu and cuda only.")

is_vulkan = property(lambda self: False, doc="False: ember runs on cpu and cuda only.")

is_ipu = property(lambda self: False, doc="False: ember runs on cpu and cuda only.")

is_xla = property(lambda self: False, doc="False: ember runs on cpu and cuda only.")

is_mtia = property(lambda self: False, doc="False: ember runs on cpu and cuda only.")

is_maia = property(lambda self: False, doc="False: ember runs on cpu and cuda only.")

def is_distributed(self) -> bool:
    return False

# -- storages: the one allocation a tensor views, as PyTorch's storage objects ----------------

class UntypedStorage:
    """``x.untyped_storage()``: the bytes of the allocation ``x`` views, shared by every view of
    it: ``nbytes()`` (``len``), ``data_ptr()``, ``device``, the byte values (``tolist()``,
    ``s[i]``). ember's tensors own NumPy/CuPy arrays, so a storage is a window on the array that
    owns the memory, made on request; ``torch.UntypedStorage(n)`` and resizing are not offered."""

    _ember_storage = True

    def __init__(self, arr: Any, device: Any) -> None:
        self._arr, self.device = arr, device  # the tensor's array keeps the allocation alive
        ext = _backend.storage_extent(arr)
        start, rest = ext if ext is not None else (0, int(np.prod(arr.shape)))
        self._start, self._nbytes = start * arr.itemsize, (start + rest) * arr.itemsize

    def nbytes(self) -> int:
        return self._nbytes

    def size(self) -> int:
        return self._nbytes

    def __len__(self) -> int:
        return self.size()

    def element_size(self) -> int:
        return 1

    def data_ptr(self) -> int:
        return _backend.address(self._arr) - self._start

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def is_shared(self) -> bool:
        return False

    def _bytes(self) -> np.ndarray:
        """The allocation's bytes, a 1-D uint8 view (a copy off the host)."""
        root, arr = self._arr, self._arr
        while _backend.is_array(getattr(root, "base", None)):
            root = root.base
        if _backend.storage_extent(arr) is None:  # no one dense allocation: the tensor's values
            root = np.ascontiguousarray(_backend.to_numpy(arr))
        return _backend.to_numpy(root).ravel(order="K").view(np.uint8)[:self._nbytes]

    def tolist(self) -> list:
        return self._bytes().tolist()

    def __getitem__(self, i: Any) -> Any:
        """A byte's value; a slice is a storage over those bytes (the same memory)."""
        if isinstance(i, slice) and type(self) is UntypedStorage:
            part = self._bytes()[i]
            if part.strides not in ((1,), ()) and part.size > 1:
                raise RuntimeError("Trying to slice with a step other than 1: a storage is "
                                   "contiguous bytes")
            # a fresh array over the slice's memory, so the new storage starts where it does
            return UntypedStorage(np.frombuffer(memoryview(part), np.uint8), self.device)
        return self._bytes()[i].tolist()

    def untyped(self) -> UntypedStorage:
        """Itself (a TypedStorage answers its bytes' storage)."""
        return self

    @classmethod
    def from_file(cls, filename: str, shared: bool = False, nbytes: int = 0) -> UntypedStorage:
        """The first ``nbytes`` bytes of a file (all of it when 0), memory-mapped: with
        ``shared=True`` writes go to the file, else they stay private (copy on write)."""
        import os

        size = nbytes or os.path.getsize(filename)
        mapped = np.memmap(filename, dtype=np.uint8, mode="r+" if shared else "c", shape=(size,))
        return cls(mapped, _backend.device("cpu"))

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist())
        return (f"{body}\n[torch.storage.{type(self).__name__}(device={self.device}) of size "
                f"{self.size()}]")


class TypedStorage(UntypedStorage):
    """``x.storage()`` (deprecated in PyTorch, which warns): the allocation as elements of
    ``x``'s dtype; ``s[i] = v`` writes into the memory every view of it shares."""

    def __init__(self, arr: Any, device: Any, dtype: Any) -> None:
        super().__init__(arr, device)
        self.dtype = dtype
        self._untyped_storage = UntypedStorage(arr, device)

    def size(self) -> int:
        return self._nbytes // self._arr.itemsize

    def element_size(self) -> int:
        return int(self._arr.itemsize)

    def untyped(self) -> UntypedStorage:
        return self._untyped_storage

    def _elements(self) -> np.ndarray:
        return self._bytes().view(self._arr.dtype)

    def tolist(self) -> list:
        return self._elements().tolist()

    def __getitem__(self, i: Any) -> Any:
        return self._elements()[i].tolist()

    def __setitem__(self, i: Any, value: Any) -> None:
        if not isinstance(self._arr, np.ndarray):
            raise NotImplementedError("ember writes through a storage only on the CPU: write "
                                      "into the tensor instead")
        self._elements()[i] = value

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist())
        return (f"{body}\n[torch.storage.TypedStorage(dtype={self.dtype}, device={self.device}) "
                f"of size {self.size()}]")


def untyped_storage(self) -> UntypedStorage:
    """The bytes of the allocation this tensor views (``UntypedStorage``)."""
    return UntypedStorage(self._data, self.device)

def storage(self) -> TypedStorage:
    """The allocation this tensor views, as elements of its dtype (``TypedStorage``; PyTorch
    warns that it is deprecated in favour of ``untyped_storage()``)."""
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                  "UntypedStorage will be the only storage class. This should only matter to "
                  "you if you are using storages directly.  To access UntypedStorage directly, "
                  "use tensor.untyped_storage() instead of tensor.storage()", UserWarning,
                  stacklevel=2)
    return TypedStorage(self._data, self.device, self.dtype)

def put_(self, index: Any, source: Any, accumulate: bool = False) -> Any:
    """``put_(index, source, accumulate=False)``: in-place ``put``."""
    return inplace(self, ops.put, index, source, accumulate)

def index_reduce(self, dim: int, index: Any, source: Any, reduce: str, *,
                 include_self: bool = True) -> Any:
    """``index_reduce(dim, index, source, reduce)``: reduce ('prod', 'mean', 'amax',
    'amin') the slices of ``source`` into the slices of ``self`` that ``index`` names."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax "
                           f"or amin but got {reduce}.")
    if index.dim() != 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, got "
                         f"{index.dim()}-D")
    d = dim % max(self.dim(), 1)
    shape = [1] * source.dim()
    shape[d] = index.shape[0]
    full = index.reshape(shape).expand(tuple(source.shape))
    return ops.scatter_reduce(self, d, full, source, reduce, include_self=include_self)

def index_reduce_(self, dim: int, index: Any, source: Any, reduce: str, *,
                  include_self: bool = True) -> Any:
    """In-place ``index_reduce``."""
    return inplace(self, lambda t: t.index_reduce(dim, index, source, reduce,
                                                  include_self=include_self))

def apply_(self, callable: Any) -> Any:
    """``apply_(fn)``: replace each element by ``fn(element)`` (CPU tensors; slow, as in
    PyTorch)."""
    if self.device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    flat = self._data.reshape(-1)
    flat[...] = [callable(v) for v in flat.tolist()]
    return self

def map_(self, tensor: Any, callable: Any) -> Any:
    """``map_(other, fn)``: ``self[i] = fn(self[i], other[i])`` (``other`` broadcast)."""
    if self.device.type != "cpu":
        raise TypeError("map_ is only implemented on CPU tensors")
    other = np.broadcast_to(tensor._data, self._data.shape).reshape(-1).tolist()
    flat = self._data.reshape(-1)
    flat[...] = [callable(a, b) for a, b in zip(flat.tolist(), other, strict=True)]
    return self

def record_stream(self, s: Any) -> None:
    """Nothing to record: ember's CuPy arrays are freed by reference counting."""

def conj_physical_(self) -> Any:
    """Conjugates in place (a real tensor is its own conjugate: itself)."""
    if self._data.dtype.kind != "c":
        return self
    return self.copy_(ops.conj_physical(self))

def new(self, *args: Any, **kwargs: Any) -> Any:
    """Legacy constructor: ``x.new(2, 3)`` (uninitialised, x's dtype and device),
    ``x.new([1, 2])`` or ``x.new(tensor)`` (data in x's dtype), ``x.new()`` (empty)."""
    if kwargs.get("device") is not None and str(kwargs["device"]) != str(self.device):
        raise RuntimeError(f"Expected device {self.device} but got {kwargs['device']}")
    if not args:
        return self.new_empty((0,))
    first = args[0]
    if len(args) == 1 and hasattr(first, "_data"):
        if first.dtype != self.dtype:
            raise TypeError(f"expected {self.dtype} (got {first.dtype}) for x.new(tensor); "
                            "use x.new_tensor(t) to convert")
        return first.detach()
    if len(args) == 1 and isinstance(first, Size):
        return self.new_empty(tuple(first))
    if len(args) == 1 and isinstance(first, (list, tuple)):
        return tensor(first, dtype=self.dtype, device=self.device)
    return self.new_empty(tuple(int(a) for a in args))


# -- the table: method name -> the op function (or the function above) it is -----------------

OP_METHODS: dict[str, Any] = {
    "add": ops.add,
    "sub": ops.sub,
    "mul": ops.mul,
    "div": ops.div,
    "true_divide": ops.true_divide,
    "floor_divide": ops.floor_divide,
    "remainder": ops.remainder,
    "fmod": ops.fmod,
    "pow": ops.pow,
    "neg": ops.neg,
    "negative": ops.neg,
    "abs": ops.abs,
    "absolute": ops.abs,
    "exp": ops.exp,
    "exp2": ops.exp2,
    "log": ops.log,
    "log1p": ops.log1p,
    "expm1": ops.expm1,
    "log2": ops.log2,
    "log10": ops.log10,
    "sqrt": ops.sqrt,
    "rsqrt": ops.rsqrt,
    "sin": ops.sin,
    "cos": ops.cos,
    "tan": ops.tan,
    "asin": ops.asin,
    "acos": ops.acos,
    "atan": ops.atan,
    "atan2": ops.atan2,
    "arcsin": ops.asin,
    "arccos": ops.acos,
    "arctan": ops.atan,
    "arctan2": ops.atan2,
    "sinh": ops.sinh,
    "cosh": ops.cosh,
    "tanh": ops.tanh,
    "asinh": ops.asinh,
    "acosh": ops.acosh,
    "atanh": ops.atanh,
    "sigmoid": ops.sigmoid,
    "relu": ops.relu,
    "erf": ops.erf,
    "erfc": ops.erfc,
    "erfinv": ops.erfinv,
    "reciprocal": ops.reciprocal,
    "sign": ops.sign,
    "sgn": ops.sgn,
    "signbit": ops.signbit,
    "floor": ops.floor,
    "ceil": ops.ceil,
    "round": ops.round,
    "trunc": ops.trunc,
    "fix": ops.trunc,
    "frac": ops.frac,
    "clamp": ops.clamp,
    "clip": ops.clamp,
    "clamp_min": ops.clamp_min,
    "clamp_max": ops.clamp_max,
    "maximum": ops.maximum,
    "minimum": ops.minimum,
    "fmax": ops.fmax,
    "fmin": ops.fmin,
    "lerp": ops.lerp,
    "square": ops.square,
    "logaddexp": ops.logaddexp,
    "logaddexp2": ops.logaddexp2,
    "nan_to_num": ops.nan_to_num,
    "isnan": ops.isnan,
    "isinf": ops.isinf,
    "isposinf": ops.isposinf,
    "isneginf": ops.isneginf,
    "isfinite": ops.isfinite,
    "isreal": ops.isreal,
    "eq": ops.eq,
    "ne": ops.ne,
    "lt": ops.lt,
    "le": ops.le,
    "gt": ops.gt,
    "ge": ops.ge,
    "greater": ops.gt,
    "less": ops.lt,
    "greater_equal": ops.ge,
    "less_equal": ops.le,
    "not_equal": ops.ne,
    "equal": ops.equal,
    "allclose": ops.allclose,
    "isclose": ops.isclose,
    "logical_and": ops.logical_and,
    "logical_or": ops.logical_or,
    "logical_xor": ops.logical_xor,
    "logical_not": ops.logical_not,
    "bitwise_and": ops.bitwise_and,
    "bitwise_or": ops.bitwise_or,
    "bitwise_xor": ops.bitwise_xor,
    "bitwise_not": ops.bitwise_not,
    "addcmul": ops.addcmul,
    "addcdiv": ops.addcdiv,
    "hypot": ops.hypot,
    "xlogy": ops.xlogy,
    "copysign": ops.copysign,
    "heaviside": ops.heaviside,
    "deg2rad": ops.deg2rad,
    "rad2deg": ops.rad2deg,
    "logit": ops.logit,
    "sinc": ops.sinc,
    "float_power": ops.float_power,
    "positive": ops.positive,
    "subtract": ops.subtract,
    "multiply": ops.mul,
    "divide": ops.div,
    "mvlgamma": ops.mvlgamma,
    "lgamma": ops.lgamma,
    "digamma": ops.digamma,
    "sum": ops.sum,
    "mean": ops.mean,
    "nansum": ops.nansum,
    "nanmean": ops.nanmean,
    "prod": ops.prod,
    "max": ops.max,
    "min": ops.min,
    "amax": ops.amax,
    "amin": ops.amin,
    "aminmax": ops.aminmax,
    "argmax": ops.argmax,
    "argmin": ops.argmin,
    "var": ops.var,
    "std": ops.std,
    "norm": norm,
    "logsumexp": ops.logsumexp,
    "cumsum": ops.cumsum,
    "cumprod": ops.cumprod,
    "cummax": ops.cummax,
    "cummin": ops.cummin,
    "all": ops.all,
    "any": ops.any,
    "count_nonzero": ops.count_nonzero,
    "median": ops.median,
    "nanmedian": ops.nanmedian,
    "mode": ops.mode,
    "softmax": ops.softmax,
    "log_softmax": ops.log_softmax,
    "var_mean": ops.var_mean,
    "std_mean": ops.std_mean,
    "matmul": ops.matmul,
    "mm": ops.mm,
    "bmm": ops.bmm,
    "mv": ops.mv,
    "dot": ops.dot,
    "vdot": ops.vdot,
    "inner": ops.inner,
    "outer": ops.outer,
    "ger": ops.outer,
    "addmm": ops.addmm,
    "addmv": ops.addmv,
    "addbmm": ops.addbmm,
    "baddbmm": ops.baddbmm,
    "t": ops.t,
    "tril": ops.tril,
    "triu": ops.triu,
    "diag": ops.diag,
    "diagonal": ops.diagonal,
    "diag_embed": ops.diag_embed,
    "trace": ops.trace,
    "kron": ops.kron,
    "cross": ops.cross,
    "inverse": ops.inverse,
    "det": ops.det,
    "logdet": ops.logdet,
    "slogdet": ops.slogdet,
    "matrix_power": ops.matrix_power,
    "addr": ops.addr,
    "cholesky": ops.cholesky,
    "qr": ops.qr,
    "svd": ops.svd,
    "pinverse": ops.pinverse,
    "lu": ops.lu,
    "lu_solve": ops.lu_solve,
    "cholesky_solve": ops.cholesky_solve,
    "cholesky_inverse": ops.cholesky_inverse,
    "triangular_solve": ops.triangular_solve,
    "matrix_exp": ops.matrix_exp,
    "orgqr": ops.orgqr,
    "diagflat": ops.diagflat,
    "reshape": reshape,
    "view": ops.view,
    "view_as": ops.view_as,
    "flatten": ops.flatten,
    "unflatten": ops.unflatten,
    "squeeze": ops.squeeze,
    "unsqueeze": ops.unsqueeze,
    "expand": ops.expand,
    "expand_as": ops.expand_as,
    "repeat": ops.repeat,
    "repeat_interleave": repeat_interleave,
    "permute": shape.permute_method,
    "movedim": ops.movedim,
    "moveaxis": ops.movedim,
    "transpose": ops.transpose,
    "swapaxes": ops.swapaxes,
    "swapdims": ops.transpose,
    "split": joining.split_method,
    "tensor_split": ops.tensor_split,
    "chunk": ops.chunk,
    "unbind": ops.unbind,
    "flip": joining.flip_method,
    "fliplr": ops.fliplr,
    "flipud": ops.flipud,
    "roll": ops.roll,
    "narrow": ops.narrow,
    "select": ops.select,
    "tile": joining.tile_method,
    "broadcast_to": shape.broadcast_to_method,
    "ravel": ops.ravel,
    "unfold": ops.unfold,
    "rot90": ops.rot90,
    "as_strided": ops.as_strided,
    "hsplit": ops.hsplit,
    "vsplit": ops.vsplit,
    "gather": ops.gather,
    "scatter": ops.scatter,
    "scatter_add": ops.scatter_add,
    "scatter_reduce": ops.scatter_reduce,
    "index_select": ops.index_select,
    "index_add": ops.index_add,
    "index_fill": ops.index_fill,
    "index_copy": ops.index_copy,
    "index_put": ops.index_put,
    "masked_fill": ops.masked_fill,
    "masked_select": ops.masked_select,
    "masked_scatter": ops.masked_scatter,
    "take": ops.take,
    "take_along_dim": ops.take_along_dim,
    "nonzero": ops.nonzero,
    "argwhere": ops.argwhere,
    "topk": ops.topk,
    "sort": ops.sort,
    "argsort": ops.argsort,
    "msort": ops.msort,
    "unique": ops.unique,
    "unique_consecutive": ops.unique_consecutive,
    "kthvalue": ops.kthvalue,
    "searchsorted": ops.searchsorted,
    "bincount": ops.bincount,
    "histc": ops.histc,
    "put": ops.put,
    "i0": ops.i0,
    "igamma": _special_ops.igamma,
    "igammac": _special_ops.igammac,
    "gcd": ops.gcd,
    "lcm": ops.lcm,
    "diff": ops.diff,
    "stft": _spectral_stft.stft,
    "istft": _spectral_stft.istft,
    "angle": ops.angle,
    "dist": ops.dist,
    "cov": ops.cov,
    "corrcoef": ops.corrcoef,
    "quantile": ops.quantile,
    "nanquantile": ops.nanquantile,
    "logcumsumexp": ops.logcumsumexp,
    "histogram": ops.histogram,
    "multinomial": ops.multinomial,
    "split_with_sizes": ops.split_with_sizes,
    "unsafe_chunk": ops.unsafe_chunk,
    "unsafe_split": ops.unsafe_split,
    "unsafe_split_with_sizes": ops.unsafe_split_with_sizes,
    "sum_to_size": ops.sum_to_size,
    "renorm": ops.renorm,
    "ldexp": ops.ldexp,
    "frexp": ops.frexp,
    "nextafter": ops.nextafter,
    "bitwise_left_shift": ops.bitwise_left_shift,
    "bitwise_right_shift": ops.bitwise_right_shift,
    "select_scatter": ops.select_scatter,
    "narrow_copy": ops.narrow_copy,
    "conj_physical": ops.conj_physical,
    "arccosh": ops.acosh,
    "arcsinh": ops.asinh,
    "arctanh": ops.atanh,
    "dsplit": ops.dsplit,
    "hardshrink": activation.hardshrink,
    "prelu": activation.prelu,
    "bernoulli": ops.bernoulli,
    "where": where,
    "reshape_as": reshape_as,
    "polygamma": polygamma,
    "slice_scatter": slice_scatter,
    "diagonal_scatter": diagonal_scatter,
    "adjoint": adjoint,
    "resize_as_": resize_as_,
    "new_empty_strided": new_empty_strided,
    "conj": ops.conj,
    "resolve_conj": ops.resolve_conj,
    "resolve_neg": ops.resolve_neg,
    "is_conj": ops.is_conj,
    "is_neg": ops.is_neg,
    "real": real,
    "imag": imag,
    "dequantize": dequantize,
    "to_dense": to_dense,
    "to_sparse": to_sparse,
    "to_sparse_coo": to_sparse_coo,
    "to_sparse_csr": to_sparse_csr,
    "to_sparse_csc": to_sparse_csc,
    "to_sparse_bsr": to_sparse_bsr,
    "to_sparse_bsc": to_sparse_bsc,
    "is_coalesced": is_coalesced,
    "coalesce": coalesce,
    "indices": indices,
    "values": values,
    "_indices": _indices,
    "_values": _values,
    "crow_indices": crow_indices,
    "ccol_indices": ccol_indices,
    "row_indices": row_indices,
    "col_indices": col_indices,
    "_nnz": _nnz,
    "sparse_dim": sparse_dim,
    "dense_dim": dense_dim,
    "sparse_mask": sparse_mask,
    "is_signed": is_signed,
    "is_nonzero": is_nonzero,
    "is_same_size": is_same_size,
    "is_inference": is_inference,
    "is_set_to": is_set_to,
    "dim_order": dim_order,
    "const_data_ptr": const_data_ptr,
    "layout": layout,
    "is_distributed": is_distributed,
    "storage": storage,
    "untyped_storage": untyped_storage,
    "index_reduce": index_reduce,
    "index_reduce_": index_reduce_,
    "apply_": apply_,
    "map_": map_,
    "record_stream": record_stream,
    "conj_physical_": conj_physical_,
    "new": new,
    "is_sparse": is_sparse,
    "is_sparse_csr": is_sparse_csr,
    "is_quantized": is_quantized,
    "is_nested": is_nested,
    "is_meta": is_meta,
    "is_mkldnn": is_mkldnn,
    "is_xpu": is_xpu,
    "is_mps": is_mps,
    "is_vulkan": is_vulkan,
    "is_ipu": is_ipu,
    "is_xla": is_xla,
    "is_mtia": is_mtia,
    "is_maia": is_maia,
}
# NumPy's names (x.sum(axis=0, keepdims=True)), as PyTorch's methods take: ops/_aliases.py
OP_METHODS = {name: numpy_names(fn, name) for name, fn in OP_METHODS.items()}


# -- in-place twins ---------------------------------------------------------------------------

INPLACE_TWINS = """
abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr arccos arccosh arcsin
arcsinh arctan arctan2 arctanh asin asinh atan atan2 atanh baddbmm bitwise_and
bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor ceil clamp clamp_max
clamp_min clip copysign cos cosh cumprod cumsum deg2rad digamma div divide eq erf erfc erfinv
exp exp2 expm1 fill fill_diagonal fix floor floor_divide fmod frac gcd ge greater greater_equal
gt heaviside hypot i0 igamma igammac index_add index_copy index_fill index_put lcm ldexp le lerp less
less_equal lgamma log log10 log1p log2 logical_and logical_not logical_or logical_xor logit lt
masked_fill masked_scatter mul multiply mvlgamma nan_to_num ne neg negative nextafter not_equal
polygamma pow put rad2deg reciprocal relu remainder renorm round rsqrt scatter_add
scatter_reduce sgn sigmoid sign sin sinc sinh sqrt square sub subtract tan tanh tril triu
true_divide trunc xlogy zero
""".split()

# twins whose out-of-place op is not itself a Tensor method (PyTorch has x.fill_ but no x.fill)
TWIN_ONLY_OPS: dict[str, Callable] = {
    "fill": casting.fill,
    "zero": casting.zero,
    "fill_diagonal": indexing.fill_diagonal,
}


def inplace_twin(name: str, fn: Callable) -> Callable:
    """``x.<name>_(...)``: ``fn(x, ...)`` written back into ``x`` (see ``ember/ops/inplace.py``)."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs and "out" in kwargs:  # the result goes into self: no out= (PyTorch's rule)
            raise TypeError(f"{name}_() got an unexpected keyword argument 'out'")
        return inplace(self, fn, *args, **kwargs)

    method.__name__ = method.__qualname__ = f"{name}_"
    method.__doc__ = f"In-place version of ``{name}``: the result is written into ``self``."
    try:
        sig = inspect.signature(fn)
        method.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[p for p in sig.parameters.values() if p.name != "out"])
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        pass
    return method
