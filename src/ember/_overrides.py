"""``__torch_function__``: PyTorch's functions hand a call to the class of an argument that asks.

PyTorch's public functions (``torch.add``, ``torch.Tensor.add``, ``F.relu``...) check their
arguments: when one is a Tensor subclass, or any object whose class defines
``__torch_function__`` (a linear operator, an ``fx.Proxy``), the call becomes
``type(arg).__torch_function__(func, types, args, kwargs)``; when a ``TorchFunctionMode`` is
active, the mode sees every call first. The default ``Tensor.__torch_function__`` runs the
function and turns plain Tensor results into the subclass (so ``S + 1`` is an ``S``).

How ember does it: each public function is wrapped once, at import, in a *dispatcher*
(``dispatcher(impl)``): a callable that checks its arguments' types and calls ``impl``
straight through when none asks for dispatch, which is every call of a program that uses plain
tensors. The check is one type test per argument (and per item of a list/tuple argument); the
rest of this module runs only when an argument's class does ask, or a mode or a
``DisableTorchFunction*`` block is active. With the native core the dispatcher is a C type
(``_native_overrides.c``, the same rules); this file is the reference and the fallback.

The state (mode stack, disabled flags) is process-wide, not per thread as PyTorch's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ._native_core import native

# What dispatch must look at, as bits of one int that the fast path tests against 0:
MODES = 1              # a TorchFunctionMode is on the stack
SUBCLASS_DISABLED = 2  # DisableTorchFunctionSubclass: arguments' classes are not asked
ALL_DISABLED = 4       # DisableTorchFunction: neither modes nor arguments' classes
flags = 0

_mode_stack: list[Any] = []
_subclass_disabled = 0  # nesting depth of DisableTorchFunctionSubclass blocks
_all_disabled = 0       # nesting depth of DisableTorchFunction blocks

_tensor_class: type | None = None   # Tensor: its own __torch_function__ asks for nothing
_default_tf: Any = None             # Tensor.__dict__["__torch_function__"] (a classmethod)

# Types that never ask, answered without a lookup; tensors are added by register()
_PLAIN: set[type] = {int, float, bool, type(None), str, complex, slice, type(Ellipsis)}
# type -> asks for dispatch (its class defines a __torch_function__ that is not disabled)
_asks: dict[type, bool] = {}


class _DisabledTorchFunctionImpl:
    """``torch._C._disabled_torch_function_impl(func, types, args=(), kwargs=None)``: run
    ``func(*args, **kwargs)`` with arguments' ``__torch_function__`` switched off.

    A class that assigns it as its ``__torch_function__`` (``nn.Parameter`` does) takes no part in
    dispatch: the dispatchers treat it as a plain tensor. It does not bind as a method, as
    PyTorch's built-in function does not."""

    __slots__ = ()
    __name__ = __qualname__ = "_disabled_torch_function_impl"

    def __call__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        with DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))

    def __repr__(self) -> str:
        return "<function torch._C._disabled_torch_function_impl>"


disabled_torch_function_impl = _DisabledTorchFunctionImpl()


def _update_flags() -> None:
    global flags
    flags = ((MODES if _mode_stack else 0) | (SUBCLASS_DISABLED if _subclass_disabled else 0)
             | (ALL_DISABLED if _all_disabled else 0))
    if native is not None:
        native.overrides_set_flags(flags)


def asks(t: type) -> bool:
    """Whether arguments of type ``t`` take part in dispatch."""
    r = _asks.get(t)
    if r is None:
        tf = None
        for klass in t.__mro__:
            if "__torch_function__" in klass.__dict__:
                tf = klass.__dict__["__torch_function__"]
                break
        r = tf is not None and tf is not disabled_torch_function_impl and t is not _tensor_class
        _asks[t] = r
        if not r and not issubclass(t, (list, tuple)):
            _PLAIN.add(t)  # answered on the fast path from now on
    return r


def _arg_asks(a: Any) -> bool:
    t = type(a)
    if t in _PLAIN:
        return False
    if t is list or t is tuple or isinstance(a, (list, tuple)):
        for x in a:
            u = type(x)
            if u not in _PLAIN and asks(u):
                return True
        return False
    return asks(t)


def dispatcher(impl: Callable[..., Any], operator: bool = False) -> Callable[..., Any]:
    """``impl`` wrapped in a dispatcher: same name, signature and docstring; binds as a method
    like a function does. Its ``__torch_function_public__`` (the object handed to
    ``__torch_function__`` as ``func``) is itself until ``set_public`` names another (a
    namespace's staticmethod wrapper). ``operator``: a binary operator (``Tensor.__add__``),
    whose dispatch answers ``NotImplemented`` for a ``TypeError`` (``dispatch_operator``)."""
    slow = dispatch_operator if operator else dispatch
    if native is not None:
        d = native.dispatcher(impl, slow)
    else:
        plain = _PLAIN.issuperset

        def d(*args: Any, **kwargs: Any) -> Any:
            # one C-level pass over the arguments' types; lists, tuples and unseen types go
            # to the exact check
            if not flags and plain(map(type, args)) and (
                    not kwargs or plain(map(type, kwargs.values()))):
                return impl(*args, **kwargs)
            if flags == SUBCLASS_DISABLED or (not flags and not any(
                    map(_arg_asks, (*args, *kwargs.values())))):
                return impl(*args, **kwargs)
            return slow(d.__torch_function_public__, impl, args, kwargs)

    functools.update_wrapper(d, impl)
    d.__torch_function_public__ = d
    return d


def set_public(d: Any, public: Any) -> None:
    """Make ``public`` the ``func`` that dispatcher ``d`` hands to ``__torch_function__``."""
    d.__torch_function_public__ = public
    if native is not None and type(d) is native.dispatcher:
        native.dispatcher_set_public(d, public)


def implementation(fn: Any) -> Any:
    """The function a dispatcher wraps (``fn`` itself when it is none)."""
    return getattr(fn, "__wrapped__", fn) if is_dispatcher(fn) else fn


def is_dispatcher(fn: Any) -> bool:
    return getattr(fn, "__torch_function_public__", None) is not None and hasattr(fn, "__wrapped__")


def overloaded_args(args: Any, kwargs: Any = None) -> list[Any]:
    """The arguments (and items of list/tuple arguments) whose class asks for dispatch, in
    PyTorch's order: left to right, a subclass before its parent classes, one per type."""
    found: list[Any] = []
    seen: set[type] = set()

    def add(x: Any) -> None:
        t = type(x)
        if t in _PLAIN or t in seen or not asks(t):
            return
        seen.add(t)
        for i, y in enumerate(found):  # a subclass goes before the first of its parents
            if issubclass(t, type(y)):
                found.insert(i, x)
                return
        found.append(x)

    for a in (*args, *(kwargs or {}).values()):
        if isinstance(a, (list, tuple)):
            for x in a:
                add(x)
        else:
            add(a)
    return found


def dispatch(func: Any, impl: Callable[..., Any], args: tuple, kwargs: dict | None,
             relevant: tuple | None = None) -> Any:
    """The slow path of a dispatcher: a mode first, then the arguments' classes, else ``impl``.
    ``relevant``: the arguments whose classes are asked (all of them when None), as
    ``handle_torch_function`` names them."""
    kwargs = kwargs or {}
    if _all_disabled:
        return impl(*args, **kwargs)
    overloaded = [] if _subclass_disabled else (
        overloaded_args(args, kwargs) if relevant is None else overloaded_args(relevant))
    types = tuple(type(a) for a in overloaded)
    if _mode_stack:
        mode = _mode_stack.pop()  # the mode's own calls are not seen by it (PyTorch's rule)
        _update_flags()
        try:
            ret = mode.__torch_function__(func, types, args, kwargs)
        finally:
            _mode_stack.append(mode)
            _update_flags()
        if ret is not NotImplemented:
            return ret
    if not overloaded:
        if _mode_stack:
            raise TypeError(f"no implementation found for '{_name(func)}': the active "
                            f"TorchFunctionMode {type(_mode_stack[-1]).__name__} returned "
                            "NotImplemented")
        return impl(*args, **kwargs)
    for a in overloaded:
        ret = type(a).__torch_function__(func, types, args, kwargs)
        if ret is not NotImplemented:
            return ret
    names = "\n".join(f"  - {t}" for t in types)
    raise TypeError(f"Multiple dispatch failed for '{_name(func)}'; all __torch_function__ "
                    f"handlers returned NotImplemented:\n\n{names}\n\nEach class's "
                    "__torch_function__ declined this call: implement it for this function, "
                    "or unwrap the arguments to plain tensors first.")


# Tensor's binary operators: when the call is handed over and fails with a TypeError (every
# class declined, or one raised it), PyTorch's answer is NotImplemented, so Python goes on to the
# other operand's reflected operator (``tensor @ linear_operator`` runs its ``__rmatmul__``)
BINARY_OPERATORS = frozenset(
    f"__{op}__" for op in (
        "add", "radd", "iadd", "sub", "rsub", "isub", "mul", "rmul", "imul", "truediv",
        "rtruediv", "itruediv", "floordiv", "rfloordiv", "ifloordiv", "mod", "rmod", "imod",
        "pow", "rpow", "ipow", "matmul", "rmatmul", "imatmul", "and", "rand", "iand", "or",
        "ror", "ior", "xor", "rxor", "ixor", "lshift", "rlshift", "ilshift", "rshift",
        "rrshift", "irshift", "eq", "ne", "lt", "le", "gt", "ge",
    ))

# The ``func`` PyTorch hands over for an operator is the method it stands for: ``t + o`` and
# ``o + t`` give ``Tensor.add``, ``t @ o`` ``Tensor.matmul``, ``t == o`` ``Tensor.eq`` (libraries
# key their tables on these); the operators not listed hand over themselves (``Tensor.__rsub__``)
OPERATOR_METHODS = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub",
    "__isub__": "sub_", "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_",
    "__truediv__": "div", "__itruediv__": "div_", "__ifloordiv__": "floor_divide_",
    "__mod__": "remainder", "__imod__": "remainder_", "__matmul__": "matmul",
    "__rand__": "bitwise_and", "__ror__": "bitwise_or", "__rxor__": "bitwise_xor",
    "__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
}


def dispatch_operator(func: Any, impl: Callable[..., Any], args: tuple,
                      kwargs: dict | None) -> Any:
    """``dispatch`` for a binary operator: a ``TypeError`` gives ``NotImplemented``."""
    try:
        return dispatch(func, impl, args, kwargs)
    except TypeError:
        return NotImplemented


def set_operator_methods(tensor_class: type) -> None:
    """Point the operators' dispatchers at the methods PyTorch hands over for them."""
    for name, method in OPERATOR_METHODS.items():
        d, public = tensor_class.__dict__.get(name), tensor_class.__dict__.get(method)
        if is_dispatcher(d) and public is not None:
            set_public(d, public)


def _name(func: Any) -> str:
    module = getattr(func, "__module__", None) or ""
    module = "torch" + module[5:] if module.startswith("ember") else module
    module = "torch" if module == "torch._tensor" else module  # torch.Tensor.add
    return f"{module}.{getattr(func, '__qualname__', getattr(func, '__name__', func))}"


def convert(ret: Any, cls: type) -> Any:
    """Results as the default ``Tensor.__torch_function__`` returns them: plain tensors become
    ``cls`` (sharing data and graph), inside lists and tuples too."""
    t = _tensor_class
    if isinstance(ret, t) and not isinstance(ret, cls):
        return ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)) and any(isinstance(x, t) for x in ret):
        items = [convert(x, cls) for x in ret]
        if type(ret) is list:
            return items
        try:
            return type(ret)(items) if type(ret) is not tuple else tuple(items)
        except TypeError:  # a named tuple (torch.return_types): positional fields
            return type(ret)(*items)
    return ret


def default_torch_function(cls: type, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
    """``Tensor.__torch_function__``: run ``func`` with dispatch off, results as ``cls``."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
        return convert(ret, cls)


def register(tensor_class: type) -> None:
    """Tensor is defined: it and its default ``__torch_function__`` never ask for dispatch."""
    global _tensor_class, _default_tf
    _tensor_class = tensor_class
    _default_tf = tensor_class.__dict__["__torch_function__"]
    _PLAIN.add(tensor_class)
    _asks.clear()
    if native is not None:
        native.overrides_init(tensor_class, disabled_torch_function_impl)


class DisableTorchFunctionSubclass:
    """``torch._C.DisableTorchFunctionSubclass``: inside the block, arguments' classes are not
    asked (modes still are)."""

    def __enter__(self) -> DisableTorchFunctionSubclass:
        global _subclass_disabled
        _subclass_disabled += 1
        _update_flags()
        return self

    def __exit__(self, *exc: Any) -> None:
        global _subclass_disabled
        _subclass_disabled -= 1
        _update_flags()


class DisableTorchFunction:
    """``torch._C.DisableTorchFunction``: inside the block, neither modes nor arguments'
    classes are asked."""

    def __enter__(self) -> DisableTorchFunction:
        global _all_disabled
        _all_disabled += 1
        _update_flags()
        return self

    def __exit__(self, *exc: Any) -> None:
        global _all_disabled
        _all_disabled -= 1
        _update_flags()


def push_mode(mode: Any) -> None:
    _mode_stack.append(mode)
    _update_flags()


def pop_mode() -> Any:
    if not _mode_stack:
        raise RuntimeError("Trying to pop from an empty torch function mode stack")
    mode = _mode_stack.pop()
    _update_flags()
    return mode


def mode_stack() -> list[Any]:
    """The active TorchFunctionModes, outermost first (a copy)."""
    return list(_mode_stack)


def is_subclass_dispatch_enabled() -> bool:
    return not (_subclass_disabled or _all_disabled)


def is_mode_enabled() -> bool:
    return bool(_mode_stack) and not _all_disabled
