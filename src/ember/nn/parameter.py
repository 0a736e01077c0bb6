"""``Parameter`` and ``Buffer``: tensors that a ``Module`` registers when assigned as attributes."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _overrides
from .._tensor import Tensor
from .._tensor_sharing import register_reducer

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"]


def _array_of(data: Any) -> Any:
    if data is None:
        return np.empty((0,), dtype=np.float32)
    if isinstance(data, Tensor):
        return data._data
    raise TypeError(
        f"Parameter(data) expects an ember Tensor, got {type(data).__name__}; wrap it first, "
        "e.g. nn.Parameter(torch.tensor(values))"
    )


def _internal_only(fields: dict) -> None:
    """Keyword arguments that are ember's own per-tensor fields are ignored: a library that
    rebuilds a parameter as ``type(p)(p.to(device), **p.__dict__)`` (accelerate's
    init_empty_weights, which diffusers' from_pretrained uses) passes them, because ember keeps
    them in the instance dict where PyTorch's C tensor keeps its own out of sight. Any other
    name is refused as Python refuses it."""
    for name in fields:
        if name not in Tensor._INTERNAL and name not in ("_retains", "_lazy_device",
                                                             "_lazy_dtype"):
            raise TypeError(f"Parameter.__new__() got an unexpected keyword argument '{name}'")


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning one to a Module attribute registers it.

    ``Parameter(data=None, requires_grad=True)`` shares ``data``'s array (no copy). Operations on
    a Parameter return plain Tensors.

    Example::

        >>> w = nn.Parameter(torch.zeros(2, 3))
        >>> isinstance(w, torch.Tensor), w.requires_grad
        (True, True)
    """

    __slots__ = ()
    # operations on a Parameter give plain Tensors: it takes no part in __torch_function__
    __torch_function__ = _overrides.disabled_torch_function_impl

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True,
                **fields: Any) -> Parameter:
        if fields:
            _internal_only(fields)
        arr = _array_of(data)
        t = Tensor.__new__(cls)
        t._init_fields(arr, False)
        if requires_grad:
            t.requires_grad = True  # the setter raises PyTorch's error for integer dtypes
        if isinstance(data, Tensor) and data._version is not None:
            t._version = data._version  # in-place writes through either are seen by autograd
        return t

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True,
                 **fields: Any) -> None:
        pass  # everything happens in __new__ (Tensor.__init__ is the legacy constructor)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce_ex__(self, protocol: int) -> Any:
        # PyTorch's form: the data through torch.storage._load_from_bytes (torch.save's bytes);
        # under `ember run`, PyTorch's names too (torch._utils._rebuild_parameter)
        from .. import storage

        if storage._pytorch_form[0]:
            return storage._reduce_parameter_as_pytorch(self)
        return (_rebuild_parameter, (storage._SavedTensor(self.detach()), self.requires_grad))

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)(Tensor._make(self._data.copy()), self.requires_grad)
        if self.grad is not None:
            out.grad = Tensor._make(self.grad._data.copy())
        memo[id(self)] = out
        return out


register_reducer(Parameter)  # through multiprocessing: shared memory (ember/_tensor_sharing.py)


def _rebuild_parameter(arr: Tensor | np.ndarray, requires_grad: bool) -> Parameter:
    # a Tensor (from _load_from_bytes), or an array (pickles written before it)
    data = arr if isinstance(arr, Tensor) else Tensor._make(np.array(arr))
    return Parameter(data, requires_grad)


class _BufferMeta(type):
    # ``isinstance(t, Buffer)`` is true for tensors made by ``Buffer(...)`` (they are plain
    # Tensors carrying a flag, as in PyTorch).
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and bool(getattr(obj, "_is_buffer", False))


class Buffer(metaclass=_BufferMeta):
    """Marks a tensor as a buffer: ``self.running = nn.Buffer(torch.zeros(3), persistent=True)``
    registers it like ``register_buffer`` does."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Any:  # type: ignore[misc]
        t = Tensor._make(_array_of(data))
        t._is_buffer = True
        t.persistent = persistent
        return t


_UNINIT_MSG = ("Can't access the shape of an uninitialized parameter or buffer. This error usually "
               "happens in `load_state_dict` when trying to load an uninitialized parameter into "
               "an initialized one. Call `forward` to initialize the parameters before accessing "
               "their attributes.")


class _Uninitialized:
    """What lazy placeholders share: no shape until ``materialize(shape)`` gives them one."""

    cls_to_become: type = Tensor

    def _lazy_setup(self, device: Any, dtype: Any) -> None:
        self.__dict__["_lazy_device"] = device
        self.__dict__["_lazy_dtype"] = dtype

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Give the placeholder ``shape`` (uninitialized values) and make it a plain
        Parameter / Tensor, in place: references (e.g. an optimizer's) stay valid."""
        from .._backend import device_of
        from ..ops import creation as _creation

        # the placeholder's (empty) array carries the dtype and device that casts gave it
        device = device if device is not None else device_of(self._data)
        dtype = dtype if dtype is not None else Tensor._make(self._data).dtype
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self._data = _creation.empty(shape, device=device, dtype=dtype)._data
        self.__class__ = self.cls_to_become

    @property
    def shape(self) -> Any:
        raise RuntimeError(_UNINIT_MSG)

    def size(self, dim: Any = None) -> Any:
        raise RuntimeError(_UNINIT_MSG)

    def dim(self) -> int:
        raise RuntimeError(_UNINIT_MSG)

    def numel(self) -> int:
        raise ValueError("Attempted to use an uninitialized parameter. This error happens when you "
                         "are using a `LazyModule` or explicitly manipulating "
                         "`torch.nn.parameter.UninitializedParameter` objects. When using "
                         "LazyModules Call `forward` with a dummy batch to initialize the "
                         "parameters before calling torch functions")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def _converted(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """A placeholder of the dtype / device ``Tensor.<method>`` would give."""
        arr = getattr(Tensor._make(self._data), method)(*args, **kwargs)._data
        out = self.detach()
        out._data = arr
        if isinstance(self, Parameter):
            out.requires_grad_(self.requires_grad)
        return out

    def to(self, *args: Any, **kwargs: Any) -> Any:
        return self._converted("to", *args, **kwargs)

    def cpu(self) -> Any:
        return self._converted("cpu")

    def cuda(self, *args: Any, **kwargs: Any) -> Any:
        return self._converted("cuda", *args, **kwargs)

    def float(self) -> Any:
        return self._converted("float")

    def double(self) -> Any:
        return self._converted("double")

    def half(self) -> Any:
        return self._converted("half")

    def bfloat16(self) -> Any:
        return self._converted("bfloat16")

    def type(self, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs:
            return Tensor._make(self._data).type()
        return self._converted("type", *args, **kwargs)

    def detach(self) -> Any:
        """Another placeholder (``state_dict`` of a lazy module holds placeholders)."""
        return type(self)(False, self.__dict__.get("_lazy_device"),
                          self.__dict__.get("_lazy_dtype"))

    def __deepcopy__(self, memo: dict) -> Any:
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)(self.requires_grad, self.__dict__.get("_lazy_device"),
                         self.__dict__.get("_lazy_dtype"))
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, protocol: int) -> Any:
        return (type(self), (self.requires_grad, None, self.__dict__.get("_lazy_dtype")))


class UninitializedParameter(_Uninitialized, Parameter):
    """A parameter whose shape a lazy module fills in on its first forward (``materialize``)."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> Any:
        from ..ops import creation as _creation

        t = Parameter.__new__(cls, _creation.empty(0, device=device, dtype=dtype), requires_grad)
        t._lazy_setup(device, dtype)
        return t

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        pass


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape a lazy module fills in on its first forward (``materialize``)."""

    __slots__ = ()

    def __new__(cls, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                persistent: bool = True) -> Any:
        from ..ops import creation as _creation

        t = Tensor.__new__(cls)
        t._init_fields(_creation.empty(0, device=device, dtype=dtype)._data, False)
        t._lazy_setup(device, dtype)
        return t

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is a lazy placeholder not yet materialized."""
    return isinstance(param, _Uninitialized)
