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


def is_wrapper(t: Any) -> bool:
    """Whether ``t`` was made by ``Tensor._make_wrapper_subclass`` (it has no storage)."""
    try:
        return type(_SLOT.__get__(t)) is WrapperArray
    except AttributeError:
        return False


def wrapper_state(t: Any) -> dict:
    """What pickling saves of a wrapper besides its metadata: its instance attributes (the
    wrapped tensors in them), as PyTorch's ``_rebuild_from_type_v2`` restores them."""
    internal = _tensor_base._tensor_class._INTERNAL
    return {k: v for k, v in t.__dict__.items() if k not in internal or k == "_data"}


def wrapper_args(t: Any) -> tuple:
    """``torch._utils._rebuild_wrapper_subclass``'s arguments for ``t``: class, dtype, size,
    stride, storage offset, layout, device, requires_grad."""
    arr = _SLOT.__get__(t)
    itemsize = arr.dtype.itemsize
    return (type(t), _dtype.from_numpy(arr.dtype), tuple(arr.shape),
            tuple(s // itemsize for s in arr.strides), arr.offset, _dtype_info.strided,
            arr.device, bool(t._rg))


def rebuild_wrapper_subclass(cls: type, dtype: Any, size: Any, stride: Any, storage_offset: int,
                             layout: Any, device: Any, requires_grad: bool) -> Any:
    """``torch._utils._rebuild_wrapper_subclass``: the wrapper, without its attributes."""
    return make_wrapper_subclass(cls, size, strides=stride, storage_offset=storage_offset,
                                 dtype=dtype, layout=layout, device=device,
                                 requires_grad=requires_grad)


def _rebuild_with_state(args: tuple, state: dict) -> Any:
    t = rebuild_wrapper_subclass(*args)
    for k, v in state.items():
        setattr(t, k, v)
    return t


def _reduce_ex(self: Any, protocol: int) -> Any:
    # pickle (multiprocessing queues, copy): the metadata and the attributes, whose tensors
    # pickle as tensors do (shared memory between processes)
    return (_rebuild_with_state, (wrapper_args(self), wrapper_state(self)))


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
        kwargs = kwargs or {}
        meta = _METADATA.get(func)
        if meta is not None:  # answered from the metadata, as PyTorch's are
            with _overrides.DisableTorchFunctionSubclass():
                return meta(*args, **kwargs)
        # the handler runs with dispatch on, as PyTorch's __torch_dispatch__ does: an operation
        # it makes on a wrapper (``input[0]``) reaches the wrapper's class again
        ret = _aten_call(func, args, kwargs)
        if ret is _NO:  # no aten form: the public function itself
            ret = cls.__torch_dispatch__(func, types, args, kwargs)
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


def _len(self: Any) -> int:
    shape = _SLOT.__get__(self).shape
    if not shape:
        raise TypeError("len() of a 0-d tensor")
    return shape[0]


def _class_attrs(tensor: type) -> dict[str, Any]:
    if _cache:
        return _cache
    _cache["_data"] = _OwnData()
    # str() is repr(), as PyTorch's Tensor has no __str__ (a class's own __repr__ prints it)
    _cache["__str__"] = lambda self: type(self).__repr__(self)
    _cache["__reduce_ex__"] = _reduce_ex
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
    _METADATA[tensor.__dict__["__len__"].__torch_function_public__] = _len
    return _cache


# --------------------------------------------------------------------------------------------
# aten forms: what a wrapper's __torch_dispatch__ is handed
#
# PyTorch runs the public function and hands ``__torch_dispatch__`` the aten operators it
# decomposes into (``x[:, 1:]`` is ``aten.slice.Tensor(x, 1, 1, 2**63 - 1)``, ``x.narrow(1, 0,
# 2)`` is ``aten.slice.Tensor(x, 1, 0, 2)``, ``x.int()`` is ``aten._to_copy.default(x,
# dtype=torch.int32)``, ``x.to(x.dtype)`` is ``x`` itself); libraries key their tables on those
# overloads. For the public functions below ember does the same decomposition, with the
# arguments as PyTorch passes them (trailing defaults left out), over ``torch.ops.aten``
# (``ops/_aten.py``); every other function reaches ``__torch_dispatch__`` as itself.

_NO = object()  # no aten form for this call: hand over the public function
_MAX = 2 ** 63 - 1  # a slice's open end, as PyTorch passes it


def _aten_call(func: Any, args: tuple, kwargs: dict) -> Any:
    """``func(*args, **kwargs)`` as the aten operators PyTorch would dispatch, or ``_NO``."""
    module = getattr(func, "__module__", None) or ""
    if not module.startswith(("ember", "torch")):
        return _NO
    name = getattr(func, "__name__", None)
    form = _FORMS.get(f"sparse.{name}" if module in ("ember.sparse", "torch.sparse") else name)
    if form is None:
        return _NO
    try:
        return form(*args, **kwargs)
    except _Unbound:
        return _NO


class _Unbound(Exception):
    """The call does not fit the form's signature (the public function reports it)."""


def _fits(fn: Any) -> Any:
    """``fn`` raising ``_Unbound`` for arguments that do not bind to its signature."""
    import inspect

    sig = inspect.signature(fn)

    def form(*args: Any, **kwargs: Any) -> Any:
        try:
            sig.bind(*args, **kwargs)
        except TypeError:
            raise _Unbound from None
        return fn(*args, **kwargs)

    return form


def _dispatching(x: Any) -> bool:
    t = type(x)
    return (isinstance(x, TensorBase) and t is not _tensor_base._tensor_class
            and _lookup(t, "__torch_dispatch__") not in (None, disabled_torch_dispatch_impl))


def _call(op: Any, *args: Any, **kwargs: Any) -> Any:
    """Run aten ``op``: through the ``__torch_dispatch__`` of the arguments' wrapper classes
    (subclasses first, the first answer that is not ``NotImplemented``), else the op itself."""
    types: list[type] = []
    for a in (*args, *kwargs.values()):
        for x in (a if isinstance(a, (list, tuple)) else (a,)):
            t = type(x)
            if t not in types and _dispatching(x):
                i = next((i for i, u in enumerate(types) if issubclass(t, u)), len(types))
                types.insert(i, t)
    if not types:
        return op(*args, **kwargs)
    for t in types:
        ret = t.__torch_dispatch__(op, tuple(types), args, kwargs)
        if ret is not NotImplemented:
            return ret
    raise TypeError(f"Multiple dispatch failed for {op}: every __torch_dispatch__ returned "
                    f"NotImplemented ({', '.join(t.__name__ for t in types)})")


def _aten() -> Any:
    from .ops._aten import aten

    return aten


def _trim(*args: Any, defaults: tuple) -> tuple:
    """``args`` without the trailing ones equal to their ``defaults`` (as PyTorch passes them)."""
    n = len(args)
    while n and n > len(args) - len(defaults) and \
            args[n - 1] == defaults[n - 1 - (len(args) - len(defaults))]:
        n -= 1
    return args[:n]


def _to_form(self: Any, dt: Any, dev: Any, copy: bool = False) -> Any:
    changes = (dt is not None and dt != self.dtype) or (dev is not None and dev != self.device)
    if not changes and not copy:
        return self
    kw = {}
    if dt is not None:
        kw["dtype"] = dt
    if dev is not None:
        kw["device"] = dev
    return _call(_aten()._to_copy.default, self, **kw)


def _to(self: Any, *args: Any, copy: bool = False, non_blocking: bool = False,
        memory_format: Any = None, **kwargs: Any) -> Any:
    if memory_format is not None and memory_format is not _dtype_info.preserve_format:
        raise _Unbound
    dt = dev = None
    for a in (*args, *kwargs.values()):
        if a is None or isinstance(a, bool):
            continue
        if isinstance(a, TensorBase):
            dt, dev = a.dtype, a.device
        elif isinstance(a, _dtype.dtype) or a in (float, int, bool):
            dt = _dtype.to_dtype(a)
        elif isinstance(a, (str, _backend.device, int)):
            if isinstance(a, str) and a.removeprefix("torch.") in _dtype.ALIASES:
                dt = _dtype.to_dtype(a)
            else:
                dev = _backend.device(a)
        else:
            raise _Unbound
    return _to_form(self, dt, dev, copy)


def _cast(dt_name: str) -> Any:
    def form(self: Any) -> Any:
        return _to_form(self, getattr(_dtype, dt_name), None)

    return _fits(form)


def _type(self: Any, dtype: Any = None, non_blocking: bool = False) -> Any:
    if not isinstance(dtype, _dtype.dtype):
        raise _Unbound  # the type's name, or a legacy type: the method itself
    return _to_form(self, dtype, None)


def _contiguous(self: Any, memory_format: Any = _dtype_info.contiguous_format) -> Any:
    if memory_format is not _dtype_info.contiguous_format:
        raise _Unbound
    if self.is_contiguous():
        return self
    return _call(_aten().clone.default, self, memory_format=memory_format)


def _clone(self: Any, *, memory_format: Any = None) -> Any:
    kw = {} if memory_format in (None, _dtype_info.preserve_format) else \
        {"memory_format": memory_format}
    return _call(_aten().clone.default, self, **kw)


def _joining(name: str) -> Any:
    def form(tensors: Any, dim: Any = 0, *, out: Any = None) -> Any:
        if out is not None or not isinstance(tensors, (list, tuple)) or \
                not isinstance(dim, int):
            raise _Unbound
        return _call(getattr(_aten(), name).default, list(tensors), *_trim(dim, defaults=(0,)))

    return _fits(form)


def _dims(dims: tuple) -> list:
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        return list(dims[0])
    return list(dims)


def _flip(self: Any, *dims: Any, **kwargs: Any) -> Any:
    if kwargs:
        if dims or set(kwargs) != {"dims"}:
            raise _Unbound
        dims = (kwargs["dims"],)
    dims = _dims(dims)
    if not all(isinstance(d, int) for d in dims):
        raise _Unbound
    return _call(_aten().flip.default, self, dims)


def _index_select(self: Any, dim: int, index: Any, *, out: Any = None) -> Any:
    if out is not None or not isinstance(dim, int):
        raise _Unbound
    return _call(_aten().index_select.default, self, dim, index)


def _narrow(self: Any, dim: int, start: Any, length: int) -> Any:
    if not isinstance(dim, int):
        raise _Unbound
    start = operator.index(start) if not isinstance(start, TensorBase) else int(start)
    if start < 0:
        start += self.size(dim)
    return _call(_aten().slice.Tensor, self, dim, start, start + length)


def _select(self: Any, dim: int, index: int) -> Any:
    if not isinstance(dim, int):
        raise _Unbound
    return _call(_aten().select.int, self, dim, index)


def _unbind(self: Any, dim: int = 0) -> Any:
    if not isinstance(dim, int):
        raise _Unbound
    return tuple(_call(_aten().unbind.int, self, *_trim(dim, defaults=(0,))))


def _sort(self: Any, dim: int = -1, descending: bool = False, *, stable: Any = None,
          out: Any = None) -> Any:
    from .ops import return_types

    if out is not None or not isinstance(dim, int):
        raise _Unbound
    A = _aten()
    if stable is None:
        ret = _call(A.sort.default, self, *_trim(dim, descending, defaults=(-1, False)))
    else:
        kw: dict[str, Any] = {"stable": stable}
        if dim != -1:
            kw["dim"] = dim
        if descending:
            kw["descending"] = descending
        ret = _call(A.sort.stable, self, **kw)
    return return_types.sort(*ret)


def _arith(name: str, alpha: bool) -> Any:
    def form(self: Any, other: Any, *, out: Any = None, **kwargs: Any) -> Any:
        if out is not None or not isinstance(self, TensorBase) or \
                set(kwargs) - ({"alpha"} if alpha else set()):
            raise _Unbound
        kw = {"alpha": kwargs["alpha"]} if kwargs.get("alpha", 1) != 1 else {}
        return _call(getattr(_aten(), name).Tensor, self, other, **kw)

    return _fits(form)


def _mm(self: Any, mat2: Any, *, out: Any = None) -> Any:
    if out is not None or not isinstance(self, TensorBase) or \
            not isinstance(mat2, TensorBase) or self.dim() != 2 or mat2.dim() != 2:
        raise _Unbound
    return _call(_aten().mm.default, self, mat2)


def _sparse_mm(mat1: Any, mat2: Any, reduce: Any = _NO) -> Any:
    if reduce is _NO:
        raise _Unbound
    return _call(_aten()._sparse_mm_reduce_impl.default, mat1, mat2, reduce)[0]


def _view(self: Any, *shape: Any) -> Any:
    shape = _dims(shape)
    if not all(isinstance(n, int) for n in shape):
        raise _Unbound  # view(dtype)
    return _call(_aten().view.default, self, shape)


def _unary(name: str, overload: str = "default") -> Any:
    def form(self: Any) -> Any:
        return _call(getattr(getattr(_aten(), name), overload), self)

    return _fits(form)


def _iter(self: Any) -> Any:
    if self.dim() == 0:
        raise _Unbound  # the method's error
    return iter(self.unbind(0))


def _getitem(self: Any, key: Any) -> Any:
    """Indexing as PyTorch decomposes it: ``select`` for an int, ``slice`` for a slice (a
    full one inside a tuple is skipped), ``unsqueeze`` for None, then one ``index`` for the
    tensors; ``alias`` when nothing else ran."""
    A = _aten()
    items = key if type(key) is tuple else (key,)
    if any(type(k) is list for k in items):  # a list of ints or of bools indexes as a tensor
        from .ops.creation import tensor

        if not all(type(k) is not list or k and (all(type(i) is int for i in k) or all(
                type(i) is bool for i in k)) for k in items):
            raise _Unbound
        items = tuple(tensor(k) if type(k) is list else k for k in items)
    spec = 0
    for k in items:
        if k is None or k is Ellipsis:
            continue
        if isinstance(k, (bool, list, str, float)):
            raise _Unbound
        if isinstance(k, TensorBase):
            spec += k.dim() if k.dtype in (_dtype.bool_, _dtype.uint8) else 1
        elif isinstance(k, slice) or hasattr(k, "__index__"):
            spec += 1
        else:
            raise _Unbound
    out, dim, ran, adv = self, 0, False, []
    for k in items:
        if k is None:
            out, dim, ran = _call(A.unsqueeze.default, out, dim), dim + 1, True
        elif k is Ellipsis:
            dim += self.dim() - spec
        elif isinstance(k, slice):
            start = 0 if k.start is None else operator.index(k.start)
            stop = _MAX if k.stop is None else operator.index(k.stop)
            step = 1 if k.step is None else operator.index(k.step)
            if step <= 0:
                raise _Unbound  # the error is the method's
            if type(key) is not tuple or (start, stop, step) != (0, _MAX, 1):
                out, ran = _call(A.slice.Tensor, out, dim, start, stop,
                                 *_trim(step, defaults=(1,))), True
            dim += 1
        elif isinstance(k, TensorBase):
            adv.append((dim, k))
            dim += k.dim() if k.dtype in (_dtype.bool_, _dtype.uint8) else 1
        else:
            out, ran = _call(A.select.int, out, dim, operator.index(k)), True
    if adv:
        indices: list[Any] = [None] * (adv[-1][0] + 1)
        for d, k in adv:
            indices[d] = k
        return _call(A.index.Tensor, out, indices)
    return out if ran else _call(A.alias.default, out)


_FORMS: dict[str, Any] = {
    "__getitem__": _fits(_getitem), "to": _fits(_to), "type": _fits(_type),
    "cpu": _fits(lambda self, memory_format=None: _to_form(self, None, _backend.device("cpu"))),
    "type_as": _fits(lambda self, other: _to_form(self, other.dtype, None)),
    "contiguous": _fits(_contiguous), "clone": _fits(_clone),
    "cat": _joining("cat"), "concat": _joining("cat"), "concatenate": _joining("cat"),
    "stack": _joining("stack"), "flip": _fits(_flip), "flip_method": _fits(_flip),
    "index_select": _fits(_index_select),
    "narrow": _fits(_narrow), "select": _fits(_select), "unbind": _fits(_unbind),
    "sort": _fits(_sort), "matmul": _fits(_mm), "mm": _fits(_mm),
    "sparse.mm": _fits(_sparse_mm), "sparse.spmm": _fits(_sparse_mm), "view": _fits(_view),
    "__iter__": _fits(_iter), "t": _unary("t"), "detach": _unary("detach"), "neg": _unary("neg"),
    "negative": _unary("neg"),
}
for _name, _dt in (("int", "int32"), ("long", "int64"), ("float", "float32"),
                   ("double", "float64"), ("half", "float16"), ("bfloat16", "bfloat16"),
                   ("short", "int16"), ("char", "int8"), ("byte", "uint8"), ("bool", "bool_")):
    _FORMS[_name] = _cast(_dt)
for _name, _alpha in (("add", True), ("sub", True), ("subtract", True), ("mul", False),
                      ("multiply", False)):
    _base = {"subtract": "sub", "multiply": "mul"}.get(_name, _name)
    _FORMS[_name] = _arith(_base, _alpha)
    _FORMS[_name + "_"] = _arith(_base + "_", _alpha)
