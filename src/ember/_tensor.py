"""``Tensor``: what users hold. An array (NumPy on cpu, CuPy on cuda) with autograd fields.

``Tensor`` adds the user-facing API to ``TensorBase`` (``ember/_tensor_base.py``, what the engine
and the ops see): identity, autograd, conversions and operators, here; the methods that are op
functions (``x.sum``, ``x.view``...), bound from the table in ``ember/_tensor_methods.py``. Where
is ``mul`` defined? ``ember.ops``: ``ember/ops/pointwise.py``, forward and backward together.
"""

from __future__ import annotations

import copy as _copy
import math
import types as _types
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import _backend, _dtype, _dtype_info, _overrides, _tensor_wrapper, ops
from ._dtype import dtype as _dtype_cls
from ._missing import _api as _missing_api
from ._missing import attribute_error
from ._shared_memory import is_shared_array
from ._size import Size
from ._tensor_base import TensorBase, register_tensor_class, wrap_dim
from ._tensor_methods import INPLACE_TWINS, OP_METHODS, TWIN_ONLY_OPS, inplace_twin
from ._tensor_sharing import register_reducer, share_in_place
from ._tensor_str import tensor_repr
from .autograd import engine
from .autograd.function import refresh_view, register_retain
from .autograd.node import RemovableHandle
from .ops import _args, casting, creation, indexing, shape
from .ops import random as _random
from .ops._aliases import numpy_names as _numpy_names
from .ops.inplace import inplace, restride

# what a comparison operator takes (PyTorch's): a tensor, a Python number, a NumPy scalar
_OPERAND = (TensorBase, int, float, complex, np.generic)


def _foreign(o: Any) -> bool:
    """An operand that is no tensor but takes part through ``__torch_function__``."""
    return hasattr(type(o), "__torch_function__")


def _array_or_foreign(o: Any) -> bool:
    """The same, or a NumPy/CuPy array: ``x * array`` computes as a tensor operand (PyTorch
    hands it to NumPy, whose result comes back wrapped as a tensor of the same values; rules
    written with arrays under create_graph rely on it, on every device)."""
    t = type(o)
    return hasattr(t, "__torch_function__") or (hasattr(t, "dtype") and hasattr(t, "shape"))


def _binary(fn: Any) -> Any:
    """``x <op> o`` for the op function ``fn``: ``fn(x, o)``, or NotImplemented for an operand
    PyTorch's operators do not take."""
    def method(self: Any, o: Any) -> Any:
        if isinstance(o, _OPERAND) or _array_or_foreign(o):
            return fn(self, o)
        return NotImplemented
    return method


def _reflected(fn: Any, arrays: bool = False, swap: bool = True) -> Any:
    """``o <op> x`` for the op function ``fn``: ``fn(o, x)`` (``fn(x, o)`` where the op
    commutes); arrays only where PyTorch's reflected operator takes them."""
    take = _array_or_foreign if arrays else _foreign

    def method(self: Any, o: Any) -> Any:
        if isinstance(o, _OPERAND) or take(o):
            return fn(o, self) if swap else fn(self, o)
        return NotImplemented
    return method


def _inplace(fn: Any) -> Any:
    """``x <op>= o``: ``inplace(x, fn, o)``, or NotImplemented as ``_binary``."""
    def method(self: Any, o: Any) -> Any:
        if isinstance(o, _OPERAND) or _array_or_foreign(o):
            return inplace(self, fn, o)
        return NotImplemented
    return method


class Tensor(TensorBase):
    """A multi-dimensional array with a dtype, a device and optional gradient tracking.

    Create tensors with ``ember.tensor``, ``ember.zeros``, ``ember.randn``...; ``ember.Tensor(...)``
    is PyTorch's legacy constructor (a list -> float32 data, ints -> an uninitialised shape).
    """

    __slots__ = ()
    __hash__ = TensorBase.__hash__  # (a class that defines __eq__ must say so again)
    # NumPy meets a Tensor as PyTorch's does: its functions read it through __array__ and hand a
    # ufunc's result back as a tensor (__array_wrap__); its operators defer to Tensor's
    # reflected ones (the priority), which take numbers and NumPy scalars, not arrays
    __array_priority__ = 1000
    # a subclass's calls come here (ember/_overrides.py): run the function, results as the class
    __torch_function__ = classmethod(_overrides.default_torch_function)
    # wrapper subclasses (ember/_tensor_wrapper.py): metadata without storage; a subclass that
    # wraps must define its own __torch_dispatch__, as in PyTorch
    __torch_dispatch__ = _tensor_wrapper.disabled_torch_dispatch_impl
    _make_wrapper_subclass = staticmethod(_tensor_wrapper.make_wrapper_subclass)
    _make_subclass = staticmethod(_tensor_wrapper.make_subclass)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Legacy constructor: Tensor([1, 2]) -> float32 data; Tensor(2, 3) -> uninitialised 2x3.
        if type(self) is not Tensor and _tensor_wrapper.is_made(self):
            return  # a subclass's __new__ made it (_make_subclass, _make_wrapper_subclass)
        device = kwargs.pop("device", None)
        dt = _dtype.get_default_dtype()
        if len(args) == 1 and not isinstance(args[0], (int, Size)):
            data = args[0]
            arr = data._data.copy() if isinstance(data, Tensor) else np.array(data, dtype=dt.np)
        else:
            shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else args
            arr = np.zeros(tuple(int(s) for s in shape), dt.np)
        self._init_fields(arr if device is None else _backend.to_device(arr, _dev(device)))

    def size(self, dim: int | None = None) -> Size | int:
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[wrap_dim(dim, self._data.ndim)]

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    def get_device(self) -> int:
        d = self.device
        return -1 if d.type == "cpu" else (d.index or 0)

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f" or self.dtype is _dtype.bfloat16

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def stride(self, dim: int | None = None) -> tuple[int, ...] | int:
        st = tuple(s // self._data.itemsize for s in self._data.strides)
        return st if dim is None else st[wrap_dim(dim, self._data.ndim)]

    def storage_offset(self) -> int:
        base = self._data
        if _backend.is_meta(base):
            return base.offset
        while base.base is not None and hasattr(base.base, "__array_interface__"):
            base = base.base
        if base is self._data or not hasattr(base, "__array_interface__"):
            return 0
        off = self._data.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        return off // self._data.itemsize

    def data_ptr(self) -> int:
        return _backend.address(self._data)

    def is_contiguous(self, memory_format: Any = None) -> bool:
        return bool(self._data.flags.c_contiguous)

    def contiguous(self, *, memory_format: Any = _dtype_info.contiguous_format) -> Tensor:
        if self._data.flags.c_contiguous:
            return self
        return ops.contiguous(self)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(ops.unbind(self, 0))  # views of the rows, as PyTorch's iteration gives

    def __reversed__(self) -> Tensor:
        return ops.flip(self, (0,))

    def __contains__(self, item: Any) -> bool:
        if isinstance(item, Tensor):
            item = item._data
        elif not isinstance(item, (bool, int, float, complex, np.generic)):
            raise RuntimeError(
                "Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                f"{type(item)}."
            )
        return bool((self._data == item).any())

    # -- autograd fields --------------------------------------------------------------------
    @property
    def grad_fn(self) -> Any:
        """The node that made this tensor (None for a leaf). A view whose base (or another view
        of it) was modified in place since the view's history was recorded gets that history
        re-derived from the base first, as in PyTorch (``AsStridedBackward0``)."""
        if self._base is not None and self._attr_version != self._version[0]:
            refresh_view(self)
        return self._grad_fn

    @property
    def requires_grad(self) -> bool:
        base = self._base
        if base is not None:  # (a stale view's history is not re-derived here, as in PyTorch:
            return self._rg or base._rg  # that would move its retain_grad() off the old node)
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if not value and self.grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if value and not (self.is_floating_point() or self._data.dtype.kind == "c"):
            raise RuntimeError(
                f"only Tensors of floating point and complex dtype can require gradients (this one is "
                f"{self.dtype}); convert it first, e.g. x = x.float().requires_grad_()"
            )
        self._rg = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient (leaves, or non-leaves after ``retain_grad()``)."""
        g = self._grad
        # (the recorded grad_fn: reading .grad does not re-derive a stale view's history)
        if g is None and self._grad_fn is not None and not self._retains:
                warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                ".grad attribute won't be populated during autograd.backward(). If you indeed want "
                "the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the "
                "non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you "
                "access the leaf Tensor instead (e.g. the model's parameters, not an activation).",
                UserWarning,
                stacklevel=2,
            )
        return g

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"assigned grad expected to be a Tensor or None but got {type(value).__name__}")
        if value is not None and tuple(value.shape) != tuple(self.shape):
            raise RuntimeError(
                f"assigned grad has data of a different size: grad {tuple(value.shape)} vs "
                f"tensor {tuple(self.shape)}"
            )
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        # ``del p.grad``: the gradient is gone, as after ``p.grad = None`` (PyTorch's)
        self._grad = None

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def output_nr(self) -> int:
        return self._output_nr

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another (its ``_base``), as PyTorch's ``_is_view``."""
        return self._base is not None

    @property
    def _version_number(self) -> int:
        return 0 if self._version is None else self._version[0]

    def _version_counter(self) -> list:
        v = self._version
        if v is None:
            v = self._version = [0]
        return v

    def _bump_version(self) -> None:
        v = self._version
        if v is None:
            self._version = [1]
        else:
            v[0] += 1

    @property
    def data(self) -> Tensor:
        return Tensor._make(self._data)

    @data.setter
    def data(self, value: Tensor) -> None:
        self._data = value._data if isinstance(value, Tensor) else np.asarray(value)

    @property
    def retains_grad(self) -> bool:
        return self._retains

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after ``backward()``."""
        if self._retains:  # already retained: a no-op that does not re-derive a stale view's
            return  # history (that would move the hook off the node a loss was built from)
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None:  # a leaf
            return
        register_retain(self)
        self._retains = True

    def register_hook(self, hook: Any) -> Any:
        """``hook(grad) -> Tensor | None`` runs when this tensor's gradient is computed."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn._add_pre_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        return RemovableHandle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Any) -> Any:
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_accumulate_hooks is None:
            self._post_accumulate_hooks = []
        self._post_accumulate_hooks.append(hook)
        return RemovableHandle(self._post_accumulate_hooks, hook)

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (chain rule, in reverse)."""
        engine.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> Tensor:
        t = Tensor._make(self._data)
        t._version = self._version_counter()
        return t

    def detach_(self) -> Tensor:
        if self._base is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. (This tensor of shape "
                f"{tuple(self.shape)} is a view; if you want to detach it from the graph and keep "
                "it a view, use x = x.detach().)"
            )
        self._grad_fn = None
        self._rg = False
        return self

    def clone(self, *, memory_format: Any = _dtype_info.preserve_format) -> Tensor:
        return ops.clone(self, memory_format=memory_format)

    def as_subclass(self, cls: type) -> Tensor:
        """A ``cls`` instance sharing this tensor's data and staying on its autograd graph (an
        alias: its gradient flows back to ``self``); ``cls.__init__`` is not called."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                            f"Tensor is not possible ({cls!r}). Make sure your class inherits "
                            "from Tensor.")
        out = ops.view(self, tuple(self._data.shape))
        out.__class__ = cls
        return out

    # -- conversions ------------------------------------------------------------------------
    def numpy(self, force: bool = False) -> np.ndarray:
        """The NumPy array behind this CPU tensor (shared memory: changes show in both)."""
        if self._rg and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if not _backend.is_cpu_array(self._data):
            if type(self._data) is _backend.WrapperArray:
                self._data._refuse()  # a wrapper subclass's own array: no data
            if not force:
                raise TypeError(
                    f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() "
                    "to copy the tensor to host memory first."
                )
            return _backend.to_numpy(self._data)
        return self._data

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy's view of this CPU tensor (``np.asarray(t)``, ``np.log(t)``), shared memory
        unless ``dtype`` or ``copy=True`` asks for a copy; refused, as ``numpy()`` is, for a
        tensor that requires grad or lives on a GPU."""
        arr = self.numpy()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError("Unable to avoid copy while creating an array as requested "
                                 f"(the tensor is {self.dtype}, the array asked for {dtype}).")
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __array_wrap__(self, array: np.ndarray, context: Any = None,
                       return_scalar: bool = False) -> Tensor:
        """A NumPy function's result on tensors, as a tensor (a bool result as uint8, as
        PyTorch gives it); a 0-d result stays a 0-d tensor."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return creation.from_numpy(np.asarray(array))

    def item(self) -> float | int | bool:
        d = self._data
        if d.size != 1:
            raise RuntimeError(
                f"a Tensor with {d.size} elements cannot be converted to Scalar (item() needs "
                f"exactly one element; this tensor has shape {tuple(d.shape)}). Reduce it first, "
                "e.g. loss.mean().item(), or use .tolist() for all values."
            )
        if type(d) is np.ndarray:  # (the common case, without to_numpy's dispatch)
            return d.item()
        if _backend.is_meta(d):
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return _backend.to_numpy(d.reshape(())).item()

    def tolist(self) -> Any:
        d = self._data
        return _backend.to_numpy(d).tolist()

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with more than one value is ambiguous (shape "
                f"{tuple(self._data.shape)}); use .any() or .all()"
            )
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:  # f"{loss:.4f}" and f"{loss}" format the number, as PyTorch does
            return format(self.item(), spec)
        return format(str(self), spec)

    def __repr__(self) -> str:
        return tensor_repr(self)

    __str__ = __repr__

    def __reduce_ex__(self, protocol: int) -> Any:
        return (_rebuild, (self.detach().cpu().numpy(), self._rg))

    def __deepcopy__(self, memo: dict) -> Tensor:
        if self.grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                "protocol at the moment. If you were attempting to deepcopy a module, this may be "
                "because of a torch.nn.utils.weight_norm usage."
            )
        t = type(self).__new__(type(self))
        t._init_fields(self._data.copy(), self._rg)
        if self.grad is not None:
            t.grad = Tensor._make(self.grad._data.copy())
        for k, v in self.__dict__.items():
            if k not in Tensor._INTERNAL:  # user attributes only
                setattr(t, k, _copy.deepcopy(v, memo))
        memo[id(self)] = t
        return t

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)``; ``copy=``,
        ``non_blocking=`` accepted. Returns ``self`` when nothing changes."""
        if len(args) == 1 and not kwargs and type(self._data) is _backend.CPU_ARRAY:
            a = args[0]  # the training loop's x.to(device) on CPU: nothing to do
            if (a == "cpu" if type(a) is str
                    else type(a) is _backend.device and a.type == "cpu"):
                return self
        dev, dt = None, None
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        for a in list(args) + list(kwargs.values()):
            if a is None:
                continue
            if isinstance(a, Tensor):
                dev, dt = a.device, a.dtype
            elif isinstance(a, _dtype_cls) or (isinstance(a, type) and a in (float, int, bool)):
                dt = _dtype.to_dtype(a)
            elif isinstance(a, (str, _backend.device, int)):
                if isinstance(a, str) and a.removeprefix("torch.") in _dtype.ALIASES:
                    dt = _dtype.to_dtype(a)
                else:
                    dev = _dev(a)
            elif isinstance(a, bool):
                continue
            else:
                dt = _dtype.to_dtype(a)
        out = self
        if dt is not None and dt.np != self._data.dtype:
            out = casting.cast(out, dt)
        if dev is not None:
            dev = _backend.check_available(dev)
            if dev != out.device:
                out = casting.to_device(out, dev)
        if copy and out is self:
            out = self.clone()
        return out

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def cuda(self, device: Any = None, non_blocking: bool = False) -> Tensor:
        if device is None:
            device = "cuda"
        elif isinstance(device, int):
            device = f"cuda:{device}"
        return self.to(device)

    def pin_memory(self, device: Any = None) -> Tensor:
        if device is not None:
            _deprecated_device("pin_memory")
        return self

    def is_pinned(self, device: Any = None) -> bool:
        if device is not None:
            _deprecated_device("is_pinned")
        return False

    def share_memory_(self) -> Tensor:
        """Move the data into shared memory (a no-op on CUDA): processes forked or spawned later,
        or sent this tensor through a ``multiprocessing`` Queue, see in-place writes."""
        if _backend.is_cpu_array(self._data):
            share_in_place(self)  # a view's base moves with it, as PyTorch moves the storage
            register_reducer(type(self))
        return self

    def is_shared(self) -> bool:
        """Whether the data lives in shared memory (``share_memory_``; always True on CUDA)."""
        return not _backend.is_cpu_array(self._data) or is_shared_array(self._data)

    def type(self, dtype: Any = None, non_blocking: bool = False) -> Any:
        if dtype is None:
            return _legacy_type_name(self)
        if isinstance(dtype, type) and dtype.__name__.endswith("Tensor"):  # x.type(FloatTensor)
            dtype = dtype.__name__
        if isinstance(dtype, str) and dtype.endswith("Tensor"):
            dtype = _dtype.from_legacy_type(dtype)
        return self.to(_dtype.to_dtype(dtype))

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.dtype)

    type_as = _numpy_names(type_as)  # x2= for other, as PyTorch's method takes

    def float(self) -> Tensor:
        return self.to(_dtype.float32)

    def double(self) -> Tensor:
        return self.to(_dtype.float64)

    def half(self) -> Tensor:
        return self.to(_dtype.float16)

    def bfloat16(self) -> Tensor:
        return self.to(_dtype.bfloat16)

    def long(self) -> Tensor:
        return self.to(_dtype.int64)

    def int(self) -> Tensor:
        return self.to(_dtype.int32)

    def short(self) -> Tensor:
        return self.to(_dtype.int16)

    def char(self) -> Tensor:
        return self.to(_dtype.int8)

    def byte(self) -> Tensor:
        return self.to(_dtype.uint8)

    def bool(self) -> Tensor:
        return self.to(_dtype.bool_)

    # -- new_* constructors -----------------------------------------------------------------
    def _like(self, dtype: Any, device: Any, requires_grad: bool) -> dict:
        if device is None and not _backend.is_cpu_array(self._data):
            device = self.device  # on the CPU, None already means it (and skips a device check)
        return {"dtype": self.dtype if dtype is None else dtype, "device": device,
                "requires_grad": requires_grad}

    def new_zeros(self, *size: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: bool = False, requires_grad: bool = False,
                  **size_kw: Any) -> Tensor:
        """A tensor of zeros of ``size`` (ints, one sequence, or ``size=``), with this tensor's
        dtype and device unless given."""
        shape = _args.size("new_zeros", size, size_kw, _args.NEW)
        return creation.zeros(shape, layout=layout, **self._like(dtype, device, requires_grad))

    def new_ones(self, *size: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                 pin_memory: bool = False, requires_grad: bool = False,
                 **size_kw: Any) -> Tensor:
        """A tensor of ones of ``size``, with this tensor's dtype and device unless given."""
        shape = _args.size("new_ones", size, size_kw, _args.NEW)
        return creation.ones(shape, layout=layout, **self._like(dtype, device, requires_grad))

    def new_empty(self, *size: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: bool = False, requires_grad: bool = False,
                  **size_kw: Any) -> Tensor:
        """An uninitialised tensor of ``size``, with this tensor's dtype and device unless given."""
        shape = _args.size("new_empty", size, size_kw, _args.NEW)
        return creation.empty(shape, layout=layout, **self._like(dtype, device, requires_grad))

    def new_full(self, size: Any, fill_value: Any, *, dtype: Any = None, layout: Any = None,
                 device: Any = None, pin_memory: bool = False,
                 requires_grad: bool = False) -> Tensor:
        """A tensor of ``size`` (a sequence) filled with ``fill_value`` (this tensor's dtype and
        device unless given)."""
        shape = _args.sequence("new_full", "size", size)
        return creation.full(shape, fill_value, layout=layout,
                             **self._like(dtype, device, requires_grad))

    def new_tensor(self, data: Any, *, dtype: Any = None, device: Any = None,
                   requires_grad: bool = False) -> Tensor:
        """A new tensor holding a copy of ``data`` (this tensor's dtype and device by default)."""
        return creation.tensor(data, **self._like(dtype, device, requires_grad))

    # -- transposes ---------------------------------------------------------------------------
    @property
    def T(self) -> Tensor:
        """All dimensions reversed (the transpose of a matrix)."""
        if self._data.ndim <= 2:
            return ops.t(self)
        return ops.permute(self, tuple(range(self._data.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Tensor:
        """The last two dimensions swapped (a batch of transposed matrices)."""
        return ops.transpose(self, -2, -1)

    @property
    def H(self) -> Tensor:
        """The conjugate transpose of a matrix (the transpose of a real one)."""
        return ops.conj(self.T) if self._data.dtype.kind == "c" else self.T

    @property
    def mH(self) -> Tensor:
        """The last two dimensions swapped and conjugated (``mT`` for real tensors)."""
        return ops.conj(self.mT) if self._data.dtype.kind == "c" else self.mT

    # -- arithmetic operators (ops/pointwise.py) -----------------------------------------
    # They take what PyTorch's take: tensors, Python numbers, NumPy scalars, objects with
    # __torch_function__, and (not reflected) arrays, whose result PyTorch gets back from NumPy
    # as a tensor of the same values. Anything else (a list, a tuple, None) gives NotImplemented,
    # so Python asks the other operand (zuko's NestedTensor, a tuple, defines __rmul__) or raises
    # TypeError; the function forms (torch.add(x, [1, 2])) still convert lists.
    __add__, __radd__ = _binary(ops.add), _reflected(ops.add)
    __sub__, __rsub__ = _binary(ops.sub), _reflected(ops.sub)
    __mul__, __rmul__ = _binary(ops.mul), _reflected(ops.mul)
    # (array / tensor takes the array, as PyTorch's reflected true division does)
    __truediv__, __rtruediv__ = _binary(ops.div), _reflected(ops.div, arrays=True)
    __floordiv__, __rfloordiv__ = _binary(ops.floor_divide), _reflected(ops.floor_divide)
    __mod__, __rmod__ = _binary(ops.remainder), _reflected(ops.remainder)
    __pow__, __rpow__ = _binary(ops.pow), _reflected(ops.pow)
    __matmul__, __rmatmul__ = _binary(ops.matmul), _reflected(ops.matmul)

    __neg__ = ops.neg

    def __pos__(self) -> Tensor:
        return self

    __abs__ = ops.abs

    __invert__ = ops.bitwise_not

    # (and, or, xor commute: the reflected forms keep the tensor first)
    __and__, __rand__ = _binary(ops.bitwise_and), _reflected(ops.bitwise_and, swap=False)
    __or__, __ror__ = _binary(ops.bitwise_or), _reflected(ops.bitwise_or, swap=False)
    __xor__, __rxor__ = _binary(ops.bitwise_xor), _reflected(ops.bitwise_xor, swap=False)
    __lshift__, __rlshift__ = _binary(ops.bitwise_left_shift), _reflected(ops.bitwise_left_shift)
    __rshift__, __rrshift__ = (_binary(ops.bitwise_right_shift),
                               _reflected(ops.bitwise_right_shift))

    # comparisons take what PyTorch's take: tensors, numbers and NumPy scalars (arrays for ==);
    # anything else (None, a string, an enum member, a list) gives NotImplemented, so Python
    # answers == with False and != with True, and an ordering raises TypeError
    def __eq__(self, o: Any) -> Any:  # type: ignore[override]
        if isinstance(o, _OPERAND) or type(o) is np.ndarray:
            return ops.eq(self, o)
        return NotImplemented

    def __ne__(self, o: Any) -> Any:  # type: ignore[override]
        if isinstance(o, _OPERAND):
            return ops.ne(self, o)
        return NotImplemented

    def __lt__(self, o: Any) -> Any:
        return ops.lt(self, o) if isinstance(o, _OPERAND) else NotImplemented

    def __le__(self, o: Any) -> Any:
        return ops.le(self, o) if isinstance(o, _OPERAND) else NotImplemented

    def __gt__(self, o: Any) -> Any:
        return ops.gt(self, o) if isinstance(o, _OPERAND) else NotImplemented

    def __ge__(self, o: Any) -> Any:
        return ops.ge(self, o) if isinstance(o, _OPERAND) else NotImplemented

    # in-place operators: x += y is x.add_(y) (PyTorch's semantics, incl. the leaf check)
    __iadd__, __isub__, __imul__ = _inplace(ops.add), _inplace(ops.sub), _inplace(ops.mul)
    __itruediv__, __ifloordiv__ = _inplace(ops.div), _inplace(ops.floor_divide)
    __imod__, __ipow__ = _inplace(ops.remainder), _inplace(ops.pow)
    __imatmul__ = _inplace(ops.matmul)
    __iand__, __ior__ = _inplace(ops.bitwise_and), _inplace(ops.bitwise_or)
    __ixor__ = _inplace(ops.bitwise_xor)
    __ilshift__, __irshift__ = _inplace(ops.bitwise_left_shift), _inplace(ops.bitwise_right_shift)

    # -- in-place methods that are not an op's twin (the twins: _tensor_methods.INPLACE_TWINS)
    def copy_(self, src: Any, non_blocking: bool = False) -> Tensor:
        return inplace(self, casting.copy_from, src)

    def scatter_(self, dim: int, index: Any, src: Any = None, value: Any = None, reduce: Any = None) -> Tensor:
        return inplace(self, ops.scatter, dim, index, src if src is not None else value, reduce=reduce)

    def t_(self) -> Tensor:
        return restride(self, ops.t)

    def squeeze_(self, dim: Any = None) -> Tensor:
        return restride(self, ops.squeeze, dim)

    def unsqueeze_(self, dim: int) -> Tensor:
        return restride(self, ops.unsqueeze, dim)

    def transpose_(self, dim0: int, dim1: int) -> Tensor:
        return restride(self, ops.transpose, dim0, dim1)

    def resize_(self, *sizes: Any, memory_format: Any = None) -> Tensor:
        """Give the tensor a new shape, keeping its first elements in order (new elements are
        zeros; PyTorch leaves them uninitialised). Same on every device."""
        if self.requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        new_shape = shape._shape_arg(sizes)
        n = math.prod(new_shape)
        flat = self._data.reshape(-1)
        if n != flat.size:
            grown = _backend.xp_of(flat).zeros_like(flat, shape=(n,))
            k = min(n, flat.size)
            grown[:k] = flat[:k]
            flat = grown
        self._data = flat.reshape(new_shape)
        self._bump_version()
        return self

    def set_(self, source: Tensor) -> Tensor:
        self._data = source._data
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        inplace(self, indexing.setitem, key, value)

    def __getitem__(self, key: Any) -> Tensor:
        return indexing.getitem(self, key)

    # random fills: ember/ops/random.py (PyTorch's signatures: generator is keyword-only)
    uniform_ = _random.uniform_
    normal_ = _random.normal_
    bernoulli_ = _random.bernoulli_
    random_ = _random.random_
    exponential_ = _random.exponential_
    geometric_ = _random.geometric_
    log_normal_ = _random.log_normal_
    cauchy_ = _random.cauchy_

    # -- dlpack -----------------------------------------------------------------------------
    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        if self._rg:
            raise RuntimeError(
                "Can't export tensors that require gradient, use tensor.detach()"
            )
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self._data.__dlpack_device__()

    def __dir__(self) -> list[str]:
        return [n for n in super().__dir__() if n not in _UNIMPLEMENTED or n in self.__dict__]



def _rebuild(arr: np.ndarray, requires_grad: bool) -> Tensor:
    t = Tensor._make(np.array(arr))
    t._rg = requires_grad
    return t


def _deprecated_device(method: str) -> None:
    warnings.warn(f"The argument 'device' of Tensor.{method}() is deprecated. Please do not pass "
                  "this argument.", DeprecationWarning, stacklevel=3)


def _dev(d: Any) -> _backend.device:
    return d if type(d) is _backend.device else _backend.device(d)


def _legacy_type_name(t: Tensor) -> str:
    prefix = "torch.cuda." if t.is_cuda else "torch."
    return prefix + _dtype.legacy_name(t.dtype) + "Tensor"


class _Unimplemented:
    """A PyTorch ``Tensor`` attribute ember lacks: reading it raises ``NotImplementedYet`` (an
    AttributeError, so ``hasattr`` is False as for any absent name) and ``ember run --report``
    lists it. One descriptor per name rather than a ``Tensor.__getattr__``: a class with
    ``__getattr__`` sends every attribute read of every tensor down CPython's slow path (no
    specialised LOAD_ATTR in Python, two more type lookups per read from C)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        raise attribute_error("torch.Tensor", self.name, what="object")


# The methods that are op functions, and their in-place twins (see _tensor_methods.py).
for _name, _fn in OP_METHODS.items():
    setattr(Tensor, _name, _fn)
for _name in INPLACE_TWINS:
    setattr(Tensor, f"{_name}_", inplace_twin(_name, OP_METHODS.get(_name) or TWIN_ONLY_OPS[_name]))
del _name, _fn

# From now on every tensor the engine and the ops make is a Tensor.
register_tensor_class(Tensor)
register_reducer(Tensor)  # multiprocessing sends tensors through shared memory, as PyTorch does

# __torch_function__ (ember/_overrides.py): the public methods and the operators dispatch on
# their arguments' classes, as PyTorch's do; the rest (conversions to NumPy, pickling, copying,
# printing) stay plain functions.
_DISPATCHED_DUNDERS = frozenset(
    f"__{op}__" for op in (
        "add", "radd", "iadd", "sub", "rsub", "isub", "mul", "rmul", "imul", "truediv",
        "rtruediv", "itruediv", "floordiv", "rfloordiv", "ifloordiv", "mod", "rmod", "imod",
        "pow", "rpow", "ipow", "matmul", "rmatmul", "imatmul", "and", "rand", "iand", "or", "ror",
        "ior", "xor", "rxor", "ixor", "lshift", "rlshift", "ilshift", "rshift", "rrshift",
        "irshift", "neg", "pos", "abs", "invert", "eq", "ne", "lt", "le", "gt", "ge", "getitem",
        "setitem", "len", "iter", "reversed", "contains", "bool", "float", "int", "index",
        "complex",
    ))
_overrides.register(Tensor)
for _name, _fn in list(Tensor.__dict__.items()):
    if type(_fn) is _types.FunctionType and (_name[0] != "_" or _name in _DISPATCHED_DUNDERS) \
            and _name != "as_subclass":
        if _fn.__name__ == "method":  # an operator made by _binary/_reflected/_inplace
            _fn.__name__ = _name
        _d = _overrides.dispatcher(_fn, operator=_name in _overrides.BINARY_OPERATORS)
        _d.__module__, _d.__qualname__ = Tensor.__module__, f"Tensor.{_name}"  # pickles so
        setattr(Tensor, _name, _d)
del _name, _fn, _d
_overrides.set_operator_methods(Tensor)  # t + o hands over Tensor.add, as PyTorch's

# PyTorch's Tensor attributes that ember lacks (ember/_torch_api.txt): each reads as
# NotImplementedYet (see _Unimplemented); a module that defines one later replaces it.
_UNIMPLEMENTED = frozenset(n for n in _missing_api().get("torch.Tensor", ())
                           if n[0] != "_" and not hasattr(Tensor, n))
for _name in _UNIMPLEMENTED:
    setattr(Tensor, _name, _Unimplemented(_name))
del _name
