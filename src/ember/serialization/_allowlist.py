"""What a ``weights_only`` load may call: the built-in constructors (each checks its arguments)
and the user allowlist (``add_safe_globals``, ``safe_globals``: one list, here)."""

from __future__ import annotations

import sys
from collections import Counter, OrderedDict
from typing import Any

from .. import _backend, _tensor_wrapper
from .._pickle_reader import (
    Callable_,
    Marker,
    _qualname,
    check_plain,
)
from .._size import Size
from .._tensor import Tensor
from ._common import (
    _MISSING,
    _ember_object,
    _is_int,
    _is_parameter,
    _refuse,
    _short,
    _torch_global,
)

# -- the user allowlist: add_safe_globals, safe_globals (one list, here) ----------------------
_user_safe_globals: list[Any] = []


def _names_of(obj: Any) -> list[str]:
    """The dotted names a checkpoint may use for an allowlisted object."""
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], str):
        return [obj[1]]
    names = []
    mod = getattr(obj, "__module__", None)
    for attr in ("__qualname__", "__name__"):
        q = getattr(obj, attr, None)
        if isinstance(mod, str) and isinstance(q, str):
            names.append(f"{mod}.{q}")
    tg = _torch_global(obj)
    if tg is not None:
        names.append(f"{tg[0]}.{tg[1]}")
    return names


class _UserAllowlist:
    """A snapshot of the allowlisted globals for one load."""

    def __init__(self, entries: list[Any]) -> None:
        self.by_name: dict[str, Any] = {}
        self.ids: set[int] = set()
        for e in entries:
            obj = e[0] if isinstance(e, tuple) and len(e) == 2 and isinstance(e[1], str) else e
            self.ids.add(id(obj))
            for n in _names_of(e):
                self.by_name.setdefault(n, obj)
        self.keep = entries

    def lookup(self, module: str, name: str) -> Any:
        hit = self.by_name.get(f"{module}.{name}", _MISSING)
        if hit is not _MISSING or not self.ids:
            return hit
        if module == "torch" or module.startswith("torch."):  # another path to the same object
            obj = _ember_object(module, name, import_modules=False)
            if obj is not _MISSING and id(obj) in self.ids:
                return obj
        return _MISSING


def _user_allowlist() -> _UserAllowlist:
    return _UserAllowlist(list(_user_safe_globals))


def _unsupported_global_message(module: str, name: str) -> str:
    full = f"{module}.{name}"
    lacks = ""
    if module == "torch" or module.startswith("torch."):
        if ("ember" + module[5:] in sys.modules
                and _ember_object(module, name, import_modules=False) is _MISSING):
            lacks = f" (ember may not have {'ember' + module[5:]}.{name} at all)"
    return (
        f"refused global {full}{lacks}: ember.load with weights_only=True (the default) "
        "rebuilds only tensors, plain containers and the classes or functions you allowlist, "
        "and never imports or calls anything else a checkpoint names (that could run code). "
        "Nothing from the file was run. If you trust this class or function, allowlist it: "
        f"torch.serialization.add_safe_globals([{full}]), or load inside `with "
        f"torch.serialization.safe_globals([{full}]):`. If you trust the whole file, "
        "torch.load(f, weights_only=False) loads it as a full pickle, which can execute "
        "arbitrary code."
    )


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Allowlist classes and functions for ``weights_only=True`` loading.

    A checkpoint may then name them: classes are instantiated (``NEWOBJ``/``REDUCE``) and
    given their pickled state (``__setstate__`` or ``__dict__``), functions are called with
    rebuilt values. An entry may be ``(obj, "dotted.name")`` to match another name.

    Args:
        safe_globals: classes/functions, or ``(obj, name)`` pairs.
    """
    for g in safe_globals:
        if not any(g is e or (isinstance(g, tuple) and g == e) for e in _user_safe_globals):
            _user_safe_globals.append(g)


def clear_safe_globals() -> None:
    """Forget every global given to ``add_safe_globals``."""
    _user_safe_globals.clear()


def get_safe_globals() -> list[Any]:
    """The globals given to ``add_safe_globals`` (and active ``safe_globals`` blocks)."""
    return list(_user_safe_globals)


class safe_globals:  # noqa: N801 - PyTorch's name
    """Context manager: allowlist ``safe_globals`` for ``weights_only`` loads in the block."""

    def __init__(self, safe_globals: list[Any]) -> None:
        self.safe_globals = safe_globals

    def __enter__(self) -> None:
        self._saved = list(_user_safe_globals)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc: Any) -> None:
        _user_safe_globals[:] = self._saved


# -- the allowlisted constructors (each checks its arguments) ---------------------------------
def _ordered_dict(*args: Any) -> OrderedDict:
    if args:
        raise _refuse(f"refused collections.OrderedDict{_short(args)}: only OrderedDict() is allowed")
    return OrderedDict()


def _counter(*args: Any) -> Counter:
    if args == ():
        return Counter()
    if len(args) == 1 and type(args[0]) is dict:
        return Counter(args[0])
    raise _refuse("refused collections.Counter arguments: only Counter() or Counter(dict)")


def _size(*args: Any) -> Size:
    if len(args) != 1 or type(args[0]) is not tuple or not all(_is_int(n) for n in args[0]):
        raise _refuse("refused torch.Size arguments: expected one tuple of ints")
    return Size(args[0])


def _rebuild_sparse_tensor(*args: Any) -> Any:
    """``torch._utils._rebuild_sparse_tensor(layout, data)``: a sparse COO tensor from (indices,
    values, size, is_coalesced), or a compressed one (CSR, CSC, BSR, BSC) from
    (compressed_indices, plain_indices, values, size)."""
    from .. import _dtype_info
    from ..ops import sparse as _sparse
    from ..ops import sparse_creation as _creation

    if len(args) != 2 or type(args[1]) is not tuple:
        raise _refuse(f"refused _rebuild_sparse_tensor arguments {_short(args)}")
    layout, data = args
    tensors = [x for x in data if isinstance(x, Tensor) and not _sparse.is_sparse(x)]
    if layout is _dtype_info.sparse_coo and len(data) in (3, 4) and len(tensors) == 2:
        size = data[2]
        coalesced = data[3] if len(data) == 4 else None
        if type(size) not in (tuple, Size) or coalesced not in (None, True, False):
            raise _refuse(f"refused _rebuild_sparse_tensor data {_short(data)}")
        return _creation.sparse_coo_tensor(data[0], data[1], tuple(size), is_coalesced=coalesced)
    if layout in _sparse.COMPRESSED_LAYOUTS and len(data) == 4 and len(tensors) == 3:
        if type(data[3]) not in (tuple, Size):
            raise _refuse(f"refused _rebuild_sparse_tensor data {_short(data)}")
        return _creation.sparse_compressed_tensor(data[0], data[1], data[2], tuple(data[3]),
                                                  layout=layout)
    raise _refuse(f"refused _rebuild_sparse_tensor for layout {_short(layout)}: ember rebuilds "
                  "sparse_coo, sparse_csr, sparse_csc, sparse_bsr and sparse_bsc tensors")


def _get_layout(*args: Any) -> Any:
    """``torch.serialization._get_layout("torch.sparse_coo")``: the layout of that name."""
    from .. import _dtype_info

    name = args[0] if len(args) == 1 and type(args[0]) is str else None
    layout = getattr(_dtype_info, name[6:], None) if name and name.startswith("torch.") else None
    if type(layout) is not type(_dtype_info.strided):
        raise _refuse(f"refused torch.serialization._get_layout arguments {_short(args)}")
    return layout


def _device(*args: Any) -> _backend.device:
    if not (1 <= len(args) <= 2 and type(args[0]) is str
            and (len(args) == 1 or args[1] is None or _is_int(args[1]))):
        raise _refuse(f"refused torch.device arguments {_short(args)}")
    try:
        return _backend.device(*args)
    except (RuntimeError, ValueError) as e:
        raise _refuse(f"refused torch.device{_short(args)}: {e}") from None


def _encode(*args: Any) -> bytes:
    if len(args) != 2 or type(args[0]) is not str or args[1] not in ("latin1", "latin-1"):
        raise _refuse("refused _codecs.encode arguments: only encode(str, 'latin1') (bytes)")
    return args[0].encode("latin-1")


def _set(*args: Any) -> set:
    if args == ():
        return set()
    if len(args) != 1 or type(args[0]) is not list:
        raise _refuse("refused builtins.set arguments: only set(list)")
    return set(args[0])


def _bytearray(*args: Any) -> bytearray:
    if args == ():
        return bytearray()
    if len(args) == 1 and type(args[0]) is bytes:
        return bytearray(args[0])
    if len(args) == 2 and type(args[0]) is str and args[1] in ("latin1", "latin-1"):
        return bytearray(args[0], "latin-1")
    raise _refuse("refused builtins.bytearray arguments")


def _complex(*args: Any) -> complex:
    if len(args) in (1, 2) and all(type(a) in (int, float) for a in args):
        return complex(*args)
    raise _refuse("refused builtins.complex arguments: only numbers")


def _rebuild_parameter(data: Any, requires_grad: Any, hooks: Any) -> Any:
    from ..nn.parameter import Parameter

    if type(data) is not Tensor or type(requires_grad) is not bool:
        raise _refuse("refused _rebuild_parameter: expected (tensor, bool, OrderedDict())")
    if hooks is not None and (type(hooks) not in (dict, OrderedDict) or hooks):
        raise _refuse("refused _rebuild_parameter: backward hooks cannot be loaded")
    if requires_grad and not data.is_floating_point():
        raise _refuse(f"refused _rebuild_parameter: a {data.dtype} parameter cannot require grad")
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data: Any, requires_grad: Any, hooks: Any, state: Any) -> Any:
    p = _rebuild_parameter(data, requires_grad, hooks)
    _set_attributes(p, state)
    return p


_TENSOR_REBUILDS = ("_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_tensor",
                    "_rebuild_parameter", "_rebuild_parameter_with_state",
                    "_rebuild_wrapper_subclass")


def _rebuild_wrapper_subclass(cls: Any, dtype: Any, size: Any, stride: Any, storage_offset: Any,
                              layout: Any, device: Any, requires_grad: Any,
                              user_ids: frozenset[int] | None = None) -> Any:
    """``torch._utils._rebuild_wrapper_subclass``: a ``Tensor._make_wrapper_subclass`` tensor
    (its attributes follow in ``_rebuild_from_type_v2``'s state); with ``weights_only``
    (``user_ids`` given) only of a class given to ``add_safe_globals``."""
    if user_ids is not None and not (isinstance(cls, type) and issubclass(cls, Tensor)
                                     and id(cls) in user_ids):
        raise _refuse(f"refused _rebuild_wrapper_subclass of {_short(cls)}: ember rebuilds "
                      "wrapper tensor subclasses given to add_safe_globals")
    try:
        return _tensor_wrapper.rebuild_wrapper_subclass(
            cls, dtype, tuple(size), tuple(stride), storage_offset, layout, device,
            bool(requires_grad))
    except (TypeError, ValueError, RuntimeError, NotImplementedError) as e:
        raise _refuse(f"refused _rebuild_wrapper_subclass: {e}") from None


def _rebuild_from_type_v2(func: Any, new_type: Any, args: Any, state: Any,
                          user_ids: frozenset[int] = frozenset()) -> Any:
    if type(func) is not Callable_ or func.name not in _TENSOR_REBUILDS:
        raise _refuse(f"refused _rebuild_from_type_v2 with function {_short(func)}")
    subclass = (isinstance(new_type, type) and issubclass(new_type, Tensor)
                and id(new_type) in user_ids)  # an allowlisted tensor subclass
    if not subclass and (type(new_type) is not Marker
                         or new_type.value not in ("tensor", "parameter")):
        raise _refuse(f"refused _rebuild_from_type_v2 to type {_short(new_type)}: ember rebuilds "
                      "torch.Tensor, torch.nn.Parameter and tensor subclasses given to "
                      "add_safe_globals")
    if type(args) is not tuple:
        raise _refuse("refused _rebuild_from_type_v2: arguments are not a tuple")
    t = func.fn(*args)
    if not isinstance(t, Tensor):
        raise _refuse("refused _rebuild_from_type_v2: it does not rebuild a tensor")
    if subclass:
        from ..nn.parameter import Parameter

        if issubclass(new_type, Parameter) and not _is_parameter(t):
            t = Parameter(t, t.requires_grad)
        try:
            t.__class__ = new_type
        except TypeError as e:
            raise _refuse(f"refused _rebuild_from_type_v2 to {_qualname(new_type)}: {e}") from None
    elif new_type.value == "parameter" and not _is_parameter(t):
        from ..nn.parameter import Parameter

        t = Parameter(t, t.requires_grad)
    _set_attributes(t, state)
    return t


def _wrapper_attribute(cls: type, name: str) -> bool:
    """A wrapper class's instance attribute with a class-level default (``_sort_order = None``)
    or its wrapped tensor (``_data``): a saved value may set it, a method may not be replaced."""
    if name == "_data":
        return True
    attr = getattr(cls, name)
    return not callable(attr) and not hasattr(type(attr), "__get__")


def _set_attributes(t: Tensor, state: Any) -> None:
    """Plain Python attributes of a saved tensor (``t.note = 'x'``), names checked."""
    if state is None:
        return
    if type(state) is tuple and len(state) == 2 and state[1] in (None, {}):
        state = state[0]
    if type(state) not in (dict, OrderedDict):
        raise _refuse(f"refused tensor state {_short(state)}")
    check_plain(state, "a tensor's attributes")
    wrapper = _tensor_wrapper.is_wrapper(t)
    for k in state:
        if (type(k) is not str or not k.isidentifier() or k.startswith("__")
                or k in Tensor._INTERNAL or (hasattr(type(t), k) and not (
                    wrapper and _wrapper_attribute(type(t), k)))):
            raise _refuse(f"refused tensor attribute {_short(k)}")
    t.__dict__.update(state)
