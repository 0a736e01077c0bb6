"""class Tensor: an array (NumPy on cpu, CuPy on cuda) plus the fields autograd needs.

Every math method is a one-line call into ``ember.ops``; this file holds the tensor's identity,
its conversions, and the autograd fields. Where is ``mul`` defined? ``ember/ops/elementwise.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from . import _backend, _dtype
from ._dtype import dtype as _dtype_cls
from ._size import Size
from ._tensor_methods import TensorMethods
from .autograd import grad_mode
from .autograd.function import _MULTI_OUTPUT, _NO_GRAD_VIEW
from .ops import elementwise as _ew
from .ops import indexing as _ix
from .ops import linalg as _la
from .ops import shape as _sh


class Tensor(TensorMethods):
    """A multi-dimensional array with a dtype, a device and optional gradient tracking.

    Create tensors with ``ember.tensor``, ``ember.zeros``, ``ember.randn``...; ``ember.Tensor(...)``
    is PyTorch's legacy constructor (a list -> float32 data, ints -> an uninitialised shape).
    """

    # Set on every tensor: slots. Rarely set (leaf grads, hooks, views' bases, version counters):
    # class-level defaults, stored per tensor only when assigned, so creating a tensor is cheap.
    __slots__ = ("_data", "_rg", "_grad_fn", "_output_nr", "__weakref__", "__dict__")
    _grad: Tensor | None = None
    _version: list | None = None  # [n]: shared by a tensor, its views and its detach()es
    _base: Tensor | None = None  # for a view: the tensor (not itself a view) whose memory it shows
    _attr_version = 0  # for a view: the version its grad_fn was derived at (see _refresh_view)
    _view_kind = 0  # for a view: _MULTI_OUTPUT | _NO_GRAD_VIEW flags (in-place is refused)
    _accum: Any = None
    _hooks: list | None = None
    _post_accumulate_hooks: list | None = None
    _INTERNAL = frozenset({"_grad", "_version", "_base", "_accum", "_hooks", "_post_accumulate_hooks",
                           "_attr_version", "_view_kind"})

    __array_priority__ = 1000
    __array_ufunc__ = None  # NumPy ufuncs and operators defer to Tensor's (reflected) operators
    _data: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Legacy constructor: Tensor([1, 2]) -> float32 data; Tensor(2, 3) -> uninitialised 2x3.
        device = kwargs.pop("device", None)
        dt = _dtype.get_default_dtype()
        if len(args) == 1 and not isinstance(args[0], int | Size):
            data = args[0]
            arr = data._data.copy() if isinstance(data, Tensor) else np.array(data, dtype=dt.np)
        else:
            shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else args
            arr = np.zeros(tuple(int(s) for s in shape), dt.np)
        _init(self, arr if device is None else _backend.to_device(arr, _dev(device)))

    @staticmethod
    def _make(data: Any, requires_grad: bool = False, grad_fn: Any = None, output_nr: int = 0) -> Tensor:
        """Wrap a backend array (the internal constructor; no copy)."""
        t = object.__new__(Tensor)
        if type(data) is not np.ndarray:
            if isinstance(data, np.generic):
                data = np.asarray(data)
            elif not _backend.is_array(data):
                data = np.asarray(data)
        t._data = data
        t._rg = requires_grad
        t._grad_fn = grad_fn
        t._output_nr = output_nr
        return t

    # -- identity ---------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None) -> Size | int:
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    @property
    def dtype(self) -> _dtype_cls:
        return _dtype.from_numpy(self._data.dtype)

    @property
    def device(self) -> _backend.device:
        return _backend.device_of(self._data)

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
        return False

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
        return st if dim is None else st[_wrap_dim(dim, self._data.ndim)]

    def storage_offset(self) -> int:
        base = self._data
        while base.base is not None and hasattr(base.base, "__array_interface__"):
            base = base.base
        if base is self._data or not hasattr(base, "__array_interface__"):
            return 0
        off = self._data.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        return off // self._data.itemsize

    def data_ptr(self) -> int:
        if type(self._data) is np.ndarray:
            return self._data.__array_interface__["data"][0]
        return int(self._data.data.ptr)

    def is_contiguous(self, memory_format: Any = None) -> bool:
        return bool(self._data.flags.c_contiguous)

    def contiguous(self, memory_format: Any = None) -> Tensor:
        if self._data.flags.c_contiguous:
            return self
        return _sh.contiguous(self)

    def __hash__(self) -> int:
        return id(self)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(_sh.unbind(self, 0))  # views of the rows, as PyTorch's iteration gives

    def __reversed__(self) -> Tensor:
        return _sh.flip(self, 0)

    def __contains__(self, item: Any) -> bool:
        if isinstance(item, Tensor):
            item = item._data
        elif not isinstance(item, bool | int | float | complex | np.generic):
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
            _refresh_view(self)
        return self._grad_fn

    @property
    def requires_grad(self) -> bool:
        base = self._base
        if base is not None:
            if self._attr_version != self._version[0] and grad_mode.state.enabled:
                _refresh_view(self)
            return self._rg or base._rg  # a view of a tensor that requires grad does too
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if not value and self.grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if value and not (self.is_floating_point()):
            raise RuntimeError(
                f"only Tensors of floating point dtype can require gradients (this one is "
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
        if g is None and self.grad_fn is not None and not self.retains_grad:
            import warnings

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

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def output_nr(self) -> int:
        return self._output_nr

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
        fn = self.grad_fn
        return fn is not None and fn._retain is not None and any(
            r() is self for _, r in fn._retain
        )

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after ``backward()``."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        fn = self.grad_fn
        if fn is None or self.retains_grad:
            return
        import weakref

        if fn._retain is None:
            fn._retain = []
        fn._retain.append((self._output_nr, weakref.ref(self)))

    def register_hook(self, hook: Any) -> Any:
        """``hook(grad) -> Tensor | None`` runs when this tensor's gradient is computed."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn._add_pre_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = []
        from .autograd.function import _RemovableHandle

        self._hooks.append(hook)
        return _RemovableHandle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Any) -> Any:
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_accumulate_hooks is None:
            self._post_accumulate_hooks = []
        from .autograd.function import _RemovableHandle

        self._post_accumulate_hooks.append(hook)
        return _RemovableHandle(self._post_accumulate_hooks, hook)

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (chain rule, in reverse)."""
        from .autograd import backward as _backward

        _backward(self, gradient, retain_graph, create_graph, inputs=inputs)

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

    def clone(self, memory_format: Any = None) -> Tensor:
        return _ew.clone(self)

    # -- conversions ------------------------------------------------------------------------
    def numpy(self, force: bool = False) -> np.ndarray:
        """The NumPy array behind this CPU tensor (shared memory: changes show in both)."""
        if self._rg and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if type(self._data) is not np.ndarray:
            if not force:
                raise TypeError(
                    f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() "
                    "to copy the tensor to host memory first."
                )
            return self._data.get()
        return self._data

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = self._data if type(self._data) is np.ndarray else self._data.get()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def item(self) -> float | int | bool:
        d = self._data
        if d.size != 1:
            raise RuntimeError(
                f"a Tensor with {d.size} elements cannot be converted to Scalar (item() needs "
                f"exactly one element; this tensor has shape {tuple(d.shape)}). Reduce it first, "
                "e.g. loss.mean().item(), or use .tolist() for all values."
            )
        return d.reshape(()).item() if type(d) is np.ndarray else d.reshape(()).get().item()

    def tolist(self) -> Any:
        d = self._data
        return (d if type(d) is np.ndarray else d.get()).tolist()

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
        from ._tensor_str import tensor_repr

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
        Tensor._init_from(t, self._data.copy(), self._rg)
        if self.grad is not None:
            t.grad = Tensor._make(self.grad._data.copy())
        import copy

        for k, v in self.__dict__.items():
            if k not in Tensor._INTERNAL:  # user attributes only
                setattr(t, k, copy.deepcopy(v, memo))
        memo[id(self)] = t
        return t

    @staticmethod
    def _init_from(t: Tensor, data: Any, requires_grad: bool = False) -> None:
        _init(t, data)
        t._rg = requires_grad

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)``; ``copy=``,
        ``non_blocking=`` accepted. Returns ``self`` when nothing changes."""
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
            elif isinstance(a, str | _backend.device | int):
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
            out = _ew.cast(out, dt)
        if dev is not None:
            dev = _backend.check_available(dev)
            if dev != out.device:
                out = _ew.to_device(out, dev)
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

    def pin_memory(self) -> Tensor:
        return self

    def is_pinned(self) -> bool:
        return False

    def share_memory_(self) -> Tensor:
        """Move the data into shared memory (a no-op on CUDA): processes forked or spawned later,
        or sent this tensor through a ``torch.multiprocessing`` Queue, see in-place writes."""
        from .multiprocessing._shared import share_tensor_

        return share_tensor_(self)

    def is_shared(self) -> bool:
        """Whether the data lives in shared memory (``share_memory_``; always True on CUDA)."""
        if type(self._data) is not np.ndarray:
            return True
        from .multiprocessing._shared import is_shared_array

        return is_shared_array(self._data)

    def type(self, dtype: Any = None, non_blocking: bool = False) -> Any:
        if dtype is None:
            return _legacy_type_name(self)
        if isinstance(dtype, str) and dtype.endswith("Tensor"):
            dtype = _LEGACY_TYPES[dtype.split(".")[-1]]
        return self.to(_dtype.to_dtype(dtype))

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.dtype)

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
    def _like_kwargs(self, kw: dict) -> dict:
        kw.setdefault("dtype", self.dtype)
        kw.setdefault("device", self.device)
        return kw

    def new_zeros(self, *size: Any, **kw: Any) -> Tensor:
        from . import _creation

        return _creation.zeros(*size, **self._like_kwargs(kw))

    def new_ones(self, *size: Any, **kw: Any) -> Tensor:
        from . import _creation

        return _creation.ones(*size, **self._like_kwargs(kw))

    def new_empty(self, *size: Any, **kw: Any) -> Tensor:
        from . import _creation

        return _creation.empty(*size, **self._like_kwargs(kw))

    def new_full(self, size: Any, fill_value: Any, **kw: Any) -> Tensor:
        from . import _creation

        return _creation.full(size, fill_value, **self._like_kwargs(kw))

    def new_tensor(self, data: Any, **kw: Any) -> Tensor:
        from . import _creation

        return _creation.tensor(data, **self._like_kwargs(kw))

    # -- transposes ---------------------------------------------------------------------------
    @property
    def T(self) -> Tensor:
        """All dimensions reversed (the transpose of a matrix)."""
        if self._data.ndim <= 2:
            return _la.t(self)
        return _sh.permute(self, *range(self._data.ndim - 1, -1, -1))

    @property
    def mT(self) -> Tensor:
        """The last two dimensions swapped (a batch of transposed matrices)."""
        return _sh.transpose(self, -2, -1)

    H = T
    mH = mT

    # -- arithmetic operators (ops/elementwise.py) -----------------------------------------
    def __add__(self, o: Any) -> Tensor:
        return _ew.add(self, o)

    def __radd__(self, o: Any) -> Tensor:
        return _ew.add(o, self)

    def __sub__(self, o: Any) -> Tensor:
        return _ew.sub(self, o)

    def __rsub__(self, o: Any) -> Tensor:
        return _ew.sub(o, self)

    def __mul__(self, o: Any) -> Tensor:
        return _ew.mul(self, o)

    def __rmul__(self, o: Any) -> Tensor:
        return _ew.mul(o, self)

    def __truediv__(self, o: Any) -> Tensor:
        return _ew.div(self, o)

    def __rtruediv__(self, o: Any) -> Tensor:
        return _ew.div(o, self)

    def __floordiv__(self, o: Any) -> Tensor:
        return _ew.floor_divide(self, o)

    def __rfloordiv__(self, o: Any) -> Tensor:
        return _ew.floor_divide(o, self)

    def __mod__(self, o: Any) -> Tensor:
        return _ew.remainder(self, o)

    def __rmod__(self, o: Any) -> Tensor:
        return _ew.remainder(o, self)

    def __pow__(self, o: Any) -> Tensor:
        return _ew.pow(self, o)

    def __rpow__(self, o: Any) -> Tensor:
        return _ew.pow(o, self)

    def __matmul__(self, o: Any) -> Tensor:
        return _la.matmul(self, o)

    def __rmatmul__(self, o: Any) -> Tensor:
        return _la.matmul(o, self)

    def __neg__(self) -> Tensor:
        return _ew.neg(self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return _ew.abs(self)

    def __invert__(self) -> Tensor:
        return _ew.bitwise_not(self)

    def __and__(self, o: Any) -> Tensor:
        return _ew.bitwise_and(self, o)

    __rand__ = __and__

    def __or__(self, o: Any) -> Tensor:
        return _ew.bitwise_or(self, o)

    __ror__ = __or__

    def __xor__(self, o: Any) -> Tensor:
        return _ew.bitwise_xor(self, o)

    __rxor__ = __xor__

    def __eq__(self, o: Any) -> Tensor:  # type: ignore[override]
        return _ew.eq(self, o)

    def __ne__(self, o: Any) -> Tensor:  # type: ignore[override]
        return _ew.ne(self, o)

    def __lt__(self, o: Any) -> Tensor:
        return _ew.lt(self, o)

    def __le__(self, o: Any) -> Tensor:
        return _ew.le(self, o)

    def __gt__(self, o: Any) -> Tensor:
        return _ew.gt(self, o)

    def __ge__(self, o: Any) -> Tensor:
        return _ew.ge(self, o)

    # in-place operators: x += y runs add_ (PyTorch's semantics, incl. the leaf check)
    def __iadd__(self, o: Any) -> Tensor:
        return self.add_(o)

    def __isub__(self, o: Any) -> Tensor:
        return self.sub_(o)

    def __imul__(self, o: Any) -> Tensor:
        return self.mul_(o)

    def __itruediv__(self, o: Any) -> Tensor:
        return self.div_(o)

    def __ifloordiv__(self, o: Any) -> Tensor:
        return self._inplace(_ew.floor_divide, o)

    def __imod__(self, o: Any) -> Tensor:
        return self._inplace(_ew.remainder, o)

    def __ipow__(self, o: Any) -> Tensor:
        return self.pow_(o)

    def __imatmul__(self, o: Any) -> Tensor:
        return self._inplace(_la.matmul, o)

    def __iand__(self, o: Any) -> Tensor:
        return self._inplace(_ew.bitwise_and, o)

    def __ior__(self, o: Any) -> Tensor:
        return self._inplace(_ew.bitwise_or, o)

    def __ixor__(self, o: Any) -> Tensor:
        return self._inplace(_ew.bitwise_xor, o)

    # -- in-place machinery -----------------------------------------------------------------
    def _inplace(self, fn: Any, *args: Any, **kwargs: Any) -> Tensor:
        """Run ``fn(self, *args)`` and make its result this tensor's new value, PyTorch-style.

        The new values are always written into this tensor's memory, so its views, its base and
        ``numpy()`` arrays see them, and the version counter they share is bumped (a saved
        tensor modified this way makes backward raise, as in PyTorch). When autograd is tracking
        (grad mode on and the tensor or an argument requires grad) the op is also recorded: on
        a plain tensor it becomes the tensor's ``grad_fn``; on a view, the base's history
        becomes "base with the view's window replaced" (``CopySlices``) and the view becomes
        that window of the new base."""
        base = self._base
        if base is not None and self._attr_version != self._version[0]:
            if grad_mode.state.enabled:
                _refresh_view(self)
        if 0 in self._data.strides and fn not in _OVERLAP_OK:
            _check_no_overlap(self)
        if fn not in _OVERLAP_OK:
            _check_operands_overlap(self, args)
        tracking = grad_mode.state.enabled and (
            self._rg or (base is not None and base._rg)
            or any(isinstance(a, Tensor) and a._rg for a in args)
        ) and self._data.dtype.kind in "fV"  # an integer tensor never requires grad
        if not tracking:
            with grad_mode.no_grad():
                out = fn(self, *args, **kwargs)
            _check_inplace_result(self, out, fn)
            _write(self, out._data)
            self._bump_version()
            return self
        if base is not None:
            return self._inplace_on_view(fn, args, kwargs)
        if self._rg and self._grad_fn is None:
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation. "
                "(Update parameters inside `with torch.no_grad():`, or use an out-of-place "
                "op such as x = x + y.)"
            )
        # the op runs on a snapshot (it may save its input); the result is written back into
        # this tensor's memory
        old = Tensor._make(self._data.copy(), self._rg, self._grad_fn, self._output_nr)
        out = fn(old, *args, **kwargs)
        _check_inplace_result(self, out, fn)
        _write(self, out._data)
        old_fn = self._grad_fn
        self._grad_fn = out._grad_fn
        self._output_nr = out._output_nr
        self._rg = out._rg
        self._bump_version()
        _adopt_saved_output(out, self)
        _move_retain_grad(self, old_fn)
        return self

    def _inplace_on_view(self, fn: Any, args: tuple, kwargs: dict) -> Tensor:
        """An in-place op on a view while autograd tracks (PyTorch's CopySlices): the base
        becomes "base with the view's window replaced by fn(view)", and the view becomes that
        window of the new base, so gradients flow through both."""
        base = self._base
        _check_view_inplace(self, base)
        geom = _sh.window_geometry(base._data, self._data)
        if geom is None:
            _no_geometry(self, base)
        old_fn = self._grad_fn
        snapshot = Tensor._make(self._data.copy(), self._rg, old_fn, self._output_nr)
        new_view = fn(snapshot, *args, **kwargs)
        _check_inplace_result(self, new_view, fn)
        old_base_fn = base._grad_fn
        old_base = Tensor._make(base._data, base._rg, old_base_fn, base._output_nr)
        new_base = _sh.StridedScatter.apply(old_base, new_view, geom)
        base._data[...] = new_base._data  # the view's values change in memory too
        base._grad_fn, base._output_nr, base._rg = new_base._grad_fn, 0, new_base._rg
        self._bump_version()
        window = _sh.StridedWindow.apply(base, geom)
        self._grad_fn, self._output_nr, self._rg = window._grad_fn, 0, window._rg
        self._attr_version = self._version[0]
        _adopt_saved_output(new_view, self)
        _move_retain_grad(self, old_fn)
        _move_retain_grad(base, old_base_fn)
        return self

    def add_(self, other: Any, alpha: Any = 1) -> Tensor:
        return self._inplace(_ew.add, other, alpha=alpha)

    def sub_(self, other: Any, alpha: Any = 1) -> Tensor:
        return self._inplace(_ew.sub, other, alpha=alpha)

    def mul_(self, other: Any) -> Tensor:
        return self._inplace(_ew.mul, other)

    def div_(self, other: Any, rounding_mode: str | None = None) -> Tensor:
        return self._inplace(_ew.div, other, rounding_mode=rounding_mode)

    def pow_(self, exponent: Any) -> Tensor:
        return self._inplace(_ew.pow, exponent)

    def neg_(self) -> Tensor:
        return self._inplace(_ew.neg)

    def abs_(self) -> Tensor:
        return self._inplace(_ew.abs)

    def exp_(self) -> Tensor:
        return self._inplace(_ew.exp)

    def log_(self) -> Tensor:
        return self._inplace(_ew.log)

    def sqrt_(self) -> Tensor:
        return self._inplace(_ew.sqrt)

    def sigmoid_(self) -> Tensor:
        return self._inplace(_ew.sigmoid)

    def tanh_(self) -> Tensor:
        return self._inplace(_ew.tanh)

    def relu_(self) -> Tensor:
        return self._inplace(_ew.relu)

    def floor_(self) -> Tensor:
        return self._inplace(_ew.floor)

    def ceil_(self) -> Tensor:
        return self._inplace(_ew.ceil)

    def round_(self, decimals: int = 0) -> Tensor:
        return self._inplace(_ew.round, decimals=decimals)

    def trunc_(self) -> Tensor:
        return self._inplace(_ew.trunc)

    def reciprocal_(self) -> Tensor:
        return self._inplace(_ew.reciprocal)

    def square_(self) -> Tensor:
        return self._inplace(_ew.square)

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:
        return self._inplace(_ew.clamp, min, max)

    clip_ = clamp_

    def clamp_min_(self, min: Any) -> Tensor:
        return self._inplace(_ew.clamp, min, None)

    def clamp_max_(self, max: Any) -> Tensor:
        return self._inplace(_ew.clamp, None, max)

    def lerp_(self, end: Any, weight: Any) -> Tensor:
        return self._inplace(_ew.lerp, end, weight)

    def addcmul_(self, t1: Any, t2: Any, value: Any = 1) -> Tensor:
        return self._inplace(_ew.addcmul, t1, t2, value=value)

    def addcdiv_(self, t1: Any, t2: Any, value: Any = 1) -> Tensor:
        return self._inplace(_ew.addcdiv, t1, t2, value=value)

    def masked_fill_(self, mask: Any, value: Any) -> Tensor:
        return self._inplace(_ix.masked_fill, mask, value)

    def index_add_(self, dim: int, index: Any, source: Any, alpha: Any = 1) -> Tensor:
        return self._inplace(_ix.index_add, dim, index, source, alpha=alpha)

    def index_fill_(self, dim: int, index: Any, value: Any) -> Tensor:
        return self._inplace(_ix.index_fill, dim, index, value)

    def index_copy_(self, dim: int, index: Any, source: Any) -> Tensor:
        return self._inplace(_ix.index_copy, dim, index, source)

    def scatter_(self, dim: int, index: Any, src: Any = None, value: Any = None, reduce: Any = None) -> Tensor:
        return self._inplace(_ix.scatter, dim, index, src if src is not None else value, reduce=reduce)

    def scatter_add_(self, dim: int, index: Any, src: Any) -> Tensor:
        return self._inplace(_ix.scatter_add, dim, index, src)

    def scatter_reduce_(self, dim: int, index: Any, src: Any, reduce: str, include_self: bool = True) -> Tensor:
        return self._inplace(_ix.scatter_reduce, dim, index, src, reduce, include_self=include_self)

    def index_put_(self, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
        return self._inplace(_ix.index_put, indices, values, accumulate)

    def masked_scatter_(self, mask: Any, source: Any) -> Tensor:
        return self._inplace(_ix.masked_scatter, mask, source)

    def copy_(self, src: Any, non_blocking: bool = False) -> Tensor:
        return self._inplace(_ew.copy_from, src)

    def fill_(self, value: Any) -> Tensor:
        return self._inplace(_ew.fill, value)

    def zero_(self) -> Tensor:
        return self._inplace(_ew.zero)

    def fill_diagonal_(self, fill_value: Any, wrap: bool = False) -> Tensor:
        return self._inplace(_ix.fill_diagonal, fill_value, wrap)

    def tril_(self, diagonal: int = 0) -> Tensor:
        return self._inplace(_la.tril, diagonal)

    def triu_(self, diagonal: int = 0) -> Tensor:
        return self._inplace(_la.triu, diagonal)

    def _restride(self, fn: Any, *args: Any) -> Tensor:
        """In-place view ops (``t_``, ``squeeze_``...): this tensor becomes the view of itself,
        in the same memory; its version is bumped, as in PyTorch (a saved copy of it is stale)."""
        if grad_mode.state.enabled and self.requires_grad:
            if self._base is not None:
                _check_view_inplace(self, self._base)
            elif self._grad_fn is None:
                raise RuntimeError(
                    "a leaf Variable that requires grad is being used in an in-place operation. "
                    "(Change a parameter's shape inside `with torch.no_grad():`, or use the "
                    "out-of-place form, e.g. x = x.t().)"
                )
        out = fn(self, *args)
        self._data = out._data
        if out._grad_fn is not None:
            self._grad_fn, self._output_nr, self._rg = out._grad_fn, out._output_nr, out._rg
        self._bump_version()
        if self._base is not None:
            self._attr_version = self._version[0]  # its new grad_fn already describes it
        return self

    def t_(self) -> Tensor:
        return self._restride(_la.t)

    def squeeze_(self, dim: Any = None) -> Tensor:
        return self._restride(_sh.squeeze, dim)

    def unsqueeze_(self, dim: int) -> Tensor:
        return self._restride(_sh.unsqueeze, dim)

    def transpose_(self, dim0: int, dim1: int) -> Tensor:
        return self._restride(_sh.transpose, dim0, dim1)

    def resize_(self, *size: Any) -> Tensor:
        shape = _sh._shape_arg(size)
        self._data = np.resize(self._data, shape) if type(self._data) is np.ndarray else self._data
        return self

    def set_(self, source: Tensor) -> Tensor:
        self._data = source._data
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        self._inplace(_ix.setitem, key, value)

    def __getitem__(self, key: Any) -> Tensor:
        return _ix.getitem(self, key)

    # random fills (ember/_random.py)
    def uniform_(self, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
        from . import _random

        return _random.fill_(self, "uniform", a, b, generator=generator)

    def normal_(self, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
        from . import _random

        return _random.fill_(self, "normal", mean, std, generator=generator)

    def bernoulli_(self, p: float = 0.5, generator: Any = None) -> Tensor:
        from . import _random

        return _random.fill_(self, "bernoulli", p, generator=generator)

    def random_(self, low: int = 0, high: int | None = None, generator: Any = None) -> Tensor:
        from . import _random

        return _random.fill_(self, "random", low, high, generator=generator)

    def exponential_(self, lambd: float = 1.0, generator: Any = None) -> Tensor:
        from . import _random

        return _random.fill_(self, "exponential", lambd, generator=generator)

    def geometric_(self, p: float, generator: Any = None) -> Tensor:
        from . import _random

        return _random.fill_(self, "geometric", p, generator=generator)

    def log_normal_(self, mean: float = 1.0, std: float = 2.0, generator: Any = None) -> Tensor:
        from . import _random

        return _random.fill_(self, "log_normal", mean, std, generator=generator)

    def cauchy_(self, median: float = 0.0, sigma: float = 1.0, generator: Any = None) -> Tensor:
        from . import _random

        return _random.fill_(self, "cauchy", median, sigma, generator=generator)

    # -- dlpack -----------------------------------------------------------------------------
    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        if self._rg:
            raise RuntimeError(
                "Can't export tensors that require gradient, use tensor.detach()"
            )
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self._data.__dlpack_device__()

    def __getattr__(self, name: str) -> Any:
        # only reached when normal lookup fails: a PyTorch method ember lacks, or a typo
        from ._missing import attribute_error

        raise attribute_error("torch.Tensor", name, what="object")

    # -- everything else is a one-line call into ember.ops: see _tensor_methods.py --------


def _init(t: Tensor, data: Any) -> None:
    t._data = data
    t._rg = False
    t._grad_fn = None
    t._output_nr = 0


# -- views and in-place ops: the rules PyTorch applies, in one place ------------------------------

def _refresh_view(t: Tensor) -> None:
    """Re-derive a view's history after its base (or another view of it) changed in place.

    The view's recorded ``grad_fn`` describes the base as it was; PyTorch re-creates it as the
    view's window of the base's current history. We do the same, lazily, when the view's
    ``grad_fn``/``requires_grad`` is read or the view is used by an op."""
    base = t._base
    t._attr_version = t._version[0]
    if not base._rg:
        return  # the base has no history to derive from: the view keeps its own
    if t._view_kind & _NO_GRAD_VIEW:
        t._attr_version = -1  # stays stale: every use raises
        raise RuntimeError(
            "A view was created in no_grad mode and its base or another view of its base has been "
            "modified inplace with grad mode enabled. Given that this use case is ambiguous and "
            "error-prone, it is forbidden. You can clarify your code by moving both the view and "
            "the inplace either both inside the no_grad block (if you don't want the inplace to "
            "be tracked) or both outside (if you want the inplace to be tracked)."
        )
    if t._view_kind & _MULTI_OUTPUT:
        t._attr_version = -1  # stays stale: every use raises
        raise RuntimeError(
            f"Output {t._output_nr} of {_view_op_name(t)} is a view and its base or another view "
            "of its base has been modified inplace. This view is the output of a function that "
            "returns multiple views (unbind, split, chunk, iterating over a tensor). Such functions "
            "do not allow the output views to be modified inplace. You should replace the inplace "
            "operation by an out-of-place one, or clone() the views before the in-place change."
        )
    geom = _sh.window_geometry(base._data, t._data)
    if geom is None:
        _no_geometry(t, base)
    with grad_mode.enable_grad():
        window = _sh.StridedWindow.apply(base, geom)
    old_fn = t._grad_fn
    t._grad_fn, t._output_nr, t._rg = window._grad_fn, 0, True
    _move_retain_grad(t, old_fn)


def _no_geometry(t: Tensor, base: Tensor) -> None:
    raise RuntimeError(
        f"ember cannot express this view (shape {tuple(t.shape)}, stride {t.stride()}) as a "
        f"window of its base (shape {tuple(base.shape)}, stride {base.stride()}), which it needs "
        "to track an in-place change to either of them under autograd (the base's memory is not "
        "C-contiguous). Call .contiguous() on the base before taking the view, or use "
        "out-of-place ops."
    )


# in-place ops PyTorch lets write into memory that several elements share (an expand()ed tensor)
_OVERLAP_OK = frozenset({_ew.fill, _ew.zero, _ix.masked_fill, _ix.setitem, _ix.index_fill,
                         _ix.index_put})


def _check_no_overlap(t: Tensor) -> None:
    d = t._data
    if d.size > 1 and any(s == 0 and n > 1 for s, n in zip(d.strides, d.shape)):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            f"single memory location (shape {tuple(d.shape)}, stride {t.stride()}: made by "
            "expand() or broadcast_to()). Please clone() the tensor before performing the "
            "operation."
        )


def _check_operands_overlap(t: Tensor, args: tuple) -> None:
    d = t._data
    for a in args:
        if isinstance(a, Tensor) and a._data is not d and _backend.partial_overlap(d, a._data):
            raise RuntimeError(
                "unsupported operation: some elements of the input tensor and the written-to "
                "tensor refer to a single memory location. Please clone() the tensor before "
                f"performing the operation. (The in-place op writes a tensor of shape "
                f"{tuple(d.shape)} while reading an argument of shape {tuple(a._data.shape)} that "
                "views the same memory differently, e.g. x.mul_(x.t()): use x.mul_(x.t().clone()).)"
            )


def _check_view_inplace(view: Tensor, base: Tensor) -> None:
    """The in-place ops on views that PyTorch refuses while autograd tracks."""
    kind = view._view_kind
    if kind & _MULTI_OUTPUT:
        if kind & _NO_GRAD_VIEW:
            raise RuntimeError(
                "A view was created in no_grad mode and is being modified inplace with grad mode "
                "enabled. This view is the output of a function that returns multiple views. "
                "Such functions do not allow the output views to be modified inplace. You should "
                "replace the inplace operation by an out-of-place one."
            )
        raise RuntimeError(
            f"Output {view._output_nr} of {_view_op_name(view)} is a view and is being modified "
            "inplace. This view is the output of a function that returns multiple views (unbind, "
            "split, chunk, iterating over a tensor). Such functions do not allow the output views "
            "to be modified inplace. You should replace the inplace operation by an out-of-place "
            "one, or clone() the view first."
        )
    if kind & _NO_GRAD_VIEW:
        raise RuntimeError(
            "A view was created in no_grad mode and is being modified inplace with grad mode "
            "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
            "You can clarify your code by moving both the view and the inplace either both "
            "inside the no_grad block (if you don't want the inplace to be tracked) or both "
            "outside (if you want the inplace to be tracked)."
        )
    if base._rg and base._grad_fn is None:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation. "
            "(Modify the parameter itself inside `with torch.no_grad():`, or build a new tensor "
            "out of place, e.g. with torch.cat or torch.where.)"
        )


def _view_op_name(view: Tensor) -> str:
    fn = view._grad_fn
    name = type(fn).__name__ if fn is not None else "the view op"
    return name.removesuffix("Backward0")


def _write(t: Tensor, arr: Any) -> None:
    """Put ``arr``'s values into t's memory (or take ``arr`` when t's memory is read-only)."""
    d = t._data
    if arr is d:
        return
    if d.flags.writeable:
        if d.size > 1 and 0 in d.strides:  # expand()ed memory (fill_, x[i] = v...): write only
            changed = arr != d  # what changed, or unchanged copies would overwrite it
            d[changed] = arr[changed]
            return
        d[...] = arr
    else:
        t._data = arr.astype(d.dtype, copy=True) if arr.dtype != d.dtype else arr


def _move_retain_grad(t: Tensor, old_fn: Any) -> None:
    """``retain_grad()`` follows the tensor to its new place in the graph, as in PyTorch."""
    if old_fn is None or old_fn._retain is None:
        return
    mine = [e for e in old_fn._retain if e[1]() is t]
    if mine:
        old_fn._retain = [e for e in old_fn._retain if e[1]() is not t] or None
        if t._grad_fn is not None:
            t.retain_grad()


def _adopt_saved_output(out: Tensor, t: Tensor) -> None:
    """An in-place op's own result lives on in ``t``: if the op saved it for backward (``exp_``
    saves its result), a later in-place change of ``t`` must fail that backward, as in PyTorch."""
    fn = out._grad_fn
    if fn is None or fn._saved is None:
        return
    od, td = out._data, t._data
    if od is not td and od.shape == td.shape and any(v is od for v in fn._saved):
        # the saved result is t's own memory from now on (as in PyTorch), not a second copy
        fn._saved = tuple([td if v is od else v for v in fn._saved])
    own = out._version
    if own is None or fn._versions is None:
        return
    counter = t._version
    now = counter[0]
    fn._versions = [(counter, now, k) if c is own else (c, seen, k) for c, seen, k in fn._versions]


def _rebuild(arr: np.ndarray, requires_grad: bool) -> Tensor:
    t = Tensor._make(np.array(arr))
    t._rg = requires_grad
    return t


def _dev(d: Any) -> _backend.device:
    return d if type(d) is _backend.device else _backend.device(d)


def _wrap_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def _check_inplace_result(self: Tensor, out: Tensor, fn: Any) -> None:
    if out._data.shape != self._data.shape:
        raise RuntimeError(
            f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
            f"{list(out._data.shape)} (in-place {getattr(fn, '__name__', 'op')}_ on a tensor of "
            f"shape {tuple(self._data.shape)}); use the out-of-place form, which can grow the shape"
        )
    if out._data.dtype != self._data.dtype:
        src, dst = _dtype.from_numpy(out._data.dtype), _dtype.from_numpy(self._data.dtype)
        if not _dtype.can_cast(src, dst):
            raise RuntimeError(
                f"result type {_legacy_name(src)} can't be cast to the desired output type "
                f"{_legacy_name(dst)} (in-place {getattr(fn, '__name__', 'op')}_ on a {dst} "
                f"tensor); convert the tensor first, e.g. x = x.float()"
            )
        out._data = out._data.astype(self._data.dtype)


def _legacy_name(d: _dtype_cls) -> str:
    return {
        "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
        "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
        "bool": "Bool",
    }[d.name]


_LEGACY_TYPES = {
    "FloatTensor": _dtype.float32, "DoubleTensor": _dtype.float64, "HalfTensor": _dtype.float16,
    "BFloat16Tensor": _dtype.bfloat16, "LongTensor": _dtype.int64, "IntTensor": _dtype.int32,
    "ShortTensor": _dtype.int16, "CharTensor": _dtype.int8, "ByteTensor": _dtype.uint8,
    "BoolTensor": _dtype.bool_,
}


def _legacy_type_name(t: Tensor) -> str:
    prefix = "torch.cuda." if t.is_cuda else "torch."
    return prefix + _legacy_name(t.dtype) + "Tensor"
