"""``Tensor._make_wrapper_subclass`` and ``Tensor._make_subclass``: tensor subclasses that wrap.

A *wrapper subclass* is a ``Tensor`` subclass whose instances hold no data of their own: its
``__new__`` calls ``Tensor._make_wrapper_subclass(cls, size, strides=..., dtype=..., device=...)``
and keeps the tensor(s) it wraps in attributes (graph libraries' index tensors keep theirs in
``_data``; quantized weights keep packed data and scales). PyTorch routes every operation on such
an instance to the class's ``__torch_function__`` (which unwraps) or ``__torch_dispatch__``.

How ember does it. The instance's array is a ``WrapperArray`` (``ember._meta``): the metadata it
was given and no storage, so ``shape``, ``dtype``, ``device``, ``size()``, ``stride()``,
``numel()``... answer from it, and anything that reads values raises an error naming the class.
The first call for a class prepares it once:

- ``_data`` becomes the instance's own attribute (a descriptor on the class), because
  ``TensorBase`` keeps its array in a slot of that name; ember's array stays in the slot;
- the metadata properties and methods read the slot (so they answer from the given metadata even
  inside the class's handlers), and ``repr``/``np.asarray`` go through ``__torch_function__``,
  as PyTorch's do;
- ember has no dispatch layer below ``__torch_function__``: a class that does not override
  ``__torch_function__`` (or disables it) gets one that calls its ``__torch_dispatch__`` with the
  public function (``torch.add``, ``Tensor.sum``) in place of the aten overload.
"""

from __future__ import annotations

import operator
import sys as _sys
import weakref
from typing import Any

from . import _backend, _dtype, _dtype_info, _overrides, _tensor_base
from ._meta import WrapperArray
from ._size import Size
from ._tensor_base import TensorBase

_SLOT = TensorBase.__dict__["_data"]  # the array slot, read past a wrapper class's ``_data``


class _DisabledTorchDispatchImpl:
    """``torch._C._disabled_torch_dispatch_impl``: ``Tensor.__torch_dispatch__``, which runs the
    function as it is. A wrapper subclass must define its own."""

    __slots__ = ()
    __name__ = __qualname__ = "_disabled_torch_dispatch_impl"

    def __call__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))

    def __repr__(self) -> str:
        return "<built-in function _disabled_torch_dispatch_impl>"


disabled_torch_dispatch_impl = _DisabledTorchDispatchImpl()


def make_wrapper_subclass(
    cls: type, size: Any, strides: Any = None, storage_offset: int | None = None,
    memory_format: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
    pin_memory: bool = False, requires_grad: bool = False, dispatch_sizes_strides_policy: Any = None,
    dispatch_device: bool = False, dispatch_layout: bool = False, _extra_dispatch_keys: Any = None,
    storage_size: Any = None,
) -> Any:
    """A ``cls`` instance with this metadata and no storage (see the module docstring)."""
    tensor = _tensor_base._tensor_class
    if not (isinstance(cls, type) and issubclass(cls, tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        f"Tensor is not possible ({cls!r}). Make sure your class inherits from "
                        "Tensor.")
    if _lookup(cls, "__torch_dispatch__") is disabled_torch_dispatch_impl:
        raise TypeError(f"{cls.__name__} must define __torch_dispatch__ (PyTorch requires it of "
                        "a wrapper subclass; ember calls it for the operations its "
                        "__torch_function__ hands on)")
    if layout is not None and layout is not _dtype_info.strided:
        raise NotImplementedError(f"_make_wrapper_subclass(layout={layout}): ember makes strided "
                                  "wrapper tensors only")
    shape = tuple(operator.index(n) for n in size)
    if any(n < 0 for n in shape):
        raise RuntimeError(f"_make_wrapper_subclass: negative dimension in size {list(shape)}")
    dt = _dtype.get_default_dtype() if dtype is None else dtype
    itemsize = dt.itemsize
    if strides is None:
        strides, acc = [], 1
        for n in reversed(shape):
            strides.insert(0, acc)
            acc *= max(n, 1)
    strides = tuple(operator.index(s) for s in strides)
    if len(strides) != len(shape):
        raise RuntimeError(f"_make_wrapper_subclass: size {list(shape)} and strides "
                           f"{list(strides)} have different lengths")
    if requires_grad and not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                           f"gradients (got {dt})")
    dev = _backend.get_default_device() if device is None else _backend.device(device)
    arr = WrapperArray(shape, dt.np, tuple(s * itemsize for s in strides),
                       int(storage_offset or 0), dev, cls.__name__)
    _prepare(cls, tensor)
    t = object.__new__(cls)
    _SLOT.__set__(t, arr)
    t._rg, t._grad_fn, t._output_nr = bool(requires_grad), None, 0
    return t


def make_subclass(cls: type, data: Any, require_grad: bool = False, dispatch_strides: bool = False,
                  dispatch_device: bool = False, dispatch_layout: bool = False,
                  _extra_dispatch_keys: Any = None, storage_size: Any = None) -> Any:
    """``Tensor._make_subclass(cls, data, require_grad)``: a ``cls`` leaf sharing ``data``'s
    memory (and version counter), detached from its graph (how ``nn.Parameter`` is made)."""
    tensor = _tensor_base._tensor_class
    if not (isinstance(cls, type) and issubclass(cls, tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        f"Tensor is not possible ({cls!r}). Make sure your class inherits from "
                        "Tensor.")
    if not isinstance(data, TensorBase):
        raise TypeError(f"_make_subclass(): data must be a Tensor, not {type(data).__name__}")
    t = object.__new__(cls)
    _SLOT.__set__(t, _SLOT.__get__(data))
    t._rg, t._grad_fn, t._output_nr = bool(require_grad), None, 0
    t._version = data._version_counter()
    return t


def is_made(t: Any) -> bool:
    """Whether ``t``'s fields are set (a subclass's ``__new__`` made it, so ``Tensor.__init__``,
    PyTorch's legacy constructor, leaves it alone)."""
    try:
        _SLOT.__get__(t)
    except AttributeError:
        return False
    return True


# --------------------------------------------------------------------------------------------
# preparing a wrapper class (once)

_prepared: weakref.WeakSet = weakref.WeakSet()


def _lookup(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


def _prepare(cls: type, tensor: type) -> None:
    if cls in _prepared:
        return
    own = set()
    for klass in cls.__mro__:
        if klass is tensor:
            break
        own.update(klass.__dict__)
    for name, attr in _class_attrs(tensor).items():
        if name not in own:
            setattr(cls, name, attr)
    tf = _lookup(cls, "__torch_function__")
    if tf is tensor.__dict__["__torch_function__"] or tf is _overrides.disabled_torch_function_impl:
        # PyTorch: the function runs, and its aten ops reach __torch_dispatch__; ember has no
        # aten layer, so the class's __torch_dispatch__ gets the public function
        cls.__torch_function__ = classmethod(_bridge(convert=tf is not
                                                     _overrides.disabled_torch_function_impl))
        _overrides._asks.pop(cls, None)
        _overrides._PLAIN.discard(cls)
    _prepared.add(cls)


def _bridge(convert: bool) -> Any:
    def __torch_function__(cls: type, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        with _overrides.DisableTorchFunctionSubclass():
            meta = _METADATA.get(func)
            if meta is not None:  # answered from the metadata, as PyTorch's are
                return meta(*args, **(kwargs or {}))
            ret = cls.__torch_dispatch__(func, types, args, kwargs or {})
        return _overrides.convert(ret, cls) if convert else ret

    return __torch_function__


class _OwnData:
    """A wrapper class's ``_data``: the instance's own attribute (what the class stores there),
    while ember's array stays in ``TensorBase``'s slot. An array assigned by ember goes to the
    slot; code outside ember reads the instance's value (the slot's when it has none), ember's
    own modules always read the slot."""

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        d = obj.__dict__
        # ember's own modules read the array (an op given the wrapper itself then raises
        # WrapperArray's error); the class's code and its users read what it stored
        if "_data" in d and _sys._getframe(1).f_globals.get("__name__", "").partition(".")[0] \
                != "ember":
            return d["_data"]
        return _SLOT.__get__(obj, owner)

    def __set__(self, obj: Any, value: Any) -> None:
        if _backend.is_array(value) or type(value) is WrapperArray:
            _SLOT.__set__(obj, value)
        else:
            obj.__dict__["_data"] = value

    def __delete__(self, obj: Any) -> None:
        obj.__dict__.pop("_data", None)


def _plain(t: Any) -> Any:
    """A plain Tensor over ``t``'s own array (the slot): what the metadata methods read."""
    p = object.__new__(_tensor_base._tensor_class)
    _SLOT.__set__(p, _SLOT.__get__(t))
    p._rg, p._grad_fn, p._output_nr = False, None, 0
    return p


# metadata methods: answered from the slot, dispatched as Tensor's are (handlers see the same
# ``func``: ``torch.Tensor.size``)
_METHODS = ("size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous",
            "is_floating_point", "is_complex", "element_size", "__repr__", "__array__")
_cache: dict[str, Any] = {}
_METADATA: dict[Any, Any] = {}  # their public functions (and requires_grad_, get_device): ours


def _class_attrs(tensor: type) -> dict[str, Any]:
    if _cache:
        return _cache
    _cache["_data"] = _OwnData()
    _cache["shape"] = property(lambda self: Size(_SLOT.__get__(self).shape))
    _cache["ndim"] = property(lambda self: _SLOT.__get__(self).ndim)
    _cache["dtype"] = property(lambda self: _dtype.from_numpy(_SLOT.__get__(self).dtype))
    _cache["device"] = property(lambda self: _backend.device_of(_SLOT.__get__(self)))
    for name in (*_METHODS, "storage_offset"):
        public = tensor.__dict__[name]
        impl = _overrides.implementation(public)
        if name == "storage_offset":
            def fn(self: Any, impl: Any = impl) -> int:
                arr = _SLOT.__get__(self)
                return arr.offset if type(arr) is WrapperArray else impl(_plain(self))
        elif name.startswith("__"):
            def fn(self: Any, *args: Any, impl: Any = impl, **kwargs: Any) -> Any:
                return impl(self, *args, **kwargs)
        else:
            def fn(self: Any, *args: Any, impl: Any = impl, **kwargs: Any) -> Any:
                return impl(_plain(self), *args, **kwargs)
        fn.__name__ = fn.__qualname__ = name
        d = _overrides.dispatcher(fn)
        _overrides.set_public(d, public)
        _cache[name] = d
        if not name.startswith("__"):
            _METADATA[public] = fn
    for name in ("requires_grad_", "get_device"):
        _METADATA[tensor.__dict__[name]] = _overrides.implementation(tensor.__dict__[name])
    return _cache
