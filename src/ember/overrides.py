"""``torch.overrides`` at PyTorch's module path: ``__torch_function__`` modes and helpers.

ember's public functions dispatch ``__torch_function__`` as PyTorch's do (``ember/_overrides.py``
says how): on Tensor subclasses, on any class that defines it, and to an active
``TorchFunctionMode``. This module holds the user-facing pieces: the mode classes, the probes
(``has_torch_function*``, ``handle_torch_function``) for Python-level functions written the way
PyTorch's are, and the queries libraries make (``is_tensor_like``...).
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from . import _overrides
from ._tensor import Tensor
from .ops.nn import (
    handle_torch_function,
    has_torch_function,
    has_torch_function_unary,
    has_torch_function_variadic,
)

__all__ = ["BaseTorchFunctionMode", "TorchFunctionMode", "enable_reentrant_dispatch",
           "get_ignored_functions", "get_overridable_functions", "handle_torch_function",
           "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "is_tensor_like", "is_tensor_method_or_property", "resolve_name",
           "wrap_torch_function"]


class TorchFunctionMode:
    """A context manager that sees every call of a public function in its block first::

        class Log(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                print(func.__name__)
                return func(*args, **(kwargs or {}))

        with Log():
            y = torch.relu(x) + 1      # prints relu, then __add__

    While its ``__torch_function__`` runs, the mode is off (so ``func(*args)`` inside it runs the
    function); return ``NotImplemented`` to pass the call on to the arguments' classes."""

    inner: Any

    def __init__(self) -> None:
        pass

    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        raise NotImplementedError

    def __enter__(self) -> TorchFunctionMode:
        _overrides.push_mode(self)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        _overrides.pop_mode()

    @classmethod
    def push(cls, *args: Any, **kwargs: Any) -> TorchFunctionMode:
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just "
                      "`with Mode()`", stacklevel=2)
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode whose ``__torch_function__`` runs the function: subclass it and override what
    you need."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


def _get_current_function_mode() -> TorchFunctionMode | None:
    stack = _overrides.mode_stack()
    return stack[-1] if stack else None


def _get_current_function_mode_stack() -> list[TorchFunctionMode]:
    return _overrides.mode_stack()


def _push_mode(mode: TorchFunctionMode) -> None:
    _overrides.push_mode(mode)


def _pop_mode() -> TorchFunctionMode:
    return _overrides.pop_mode()


@contextlib.contextmanager
def _pop_mode_temporarily() -> Iterator[TorchFunctionMode]:
    old = _overrides.pop_mode()
    try:
        yield old
    finally:
        _overrides.push_mode(old)


def _is_torch_function_mode_enabled() -> bool:
    return _overrides.is_mode_enabled()


@contextlib.contextmanager
def enable_reentrant_dispatch() -> Iterator[None]:
    """PyTorch's re-entrant ``__torch_dispatch__`` switch: ember has no dispatch layer below
    ``__torch_function__``, so the block runs as it is."""
    yield


def is_tensor_like(inp: Any) -> bool:
    """True for a Tensor (or subclass) and for any object whose class defines
    ``__torch_function__``."""
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def is_tensor_method_or_property(func: Callable[..., Any]) -> bool:
    """Whether ``func`` is a method or property of ``torch.Tensor`` (``Tensor.add``)."""
    name = getattr(func, "__name__", None)
    if name is None:
        return False
    return getattr(Tensor, name, None) is func or getattr(func, "__objclass__", None) is Tensor


def resolve_name(f: Any) -> str | None:
    """``"torch.add"``, ``"torch.Tensor.add"``: the public name of a function, or None."""
    if isinstance(f, property):
        return f"torch.Tensor.{f.fget.__name__}" if f.fget is not None else None
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    module = getattr(f, "__module__", None)
    if name is None or module is None:
        return None
    if module.startswith("ember"):
        module = "torch" + module[len("ember"):]
    if module == "torch._tensor":
        module = "torch"
    return f"{module}.{name}"


@functools.lru_cache(maxsize=1)
def get_ignored_functions() -> set[Callable[..., Any]]:
    """Public functions that never dispatch (they take no tensors): ``torch.zeros`` is not one,
    modes see it; these are the device, dtype and switch queries."""
    import ember

    names = ("is_tensor", "is_storage", "set_default_dtype", "get_default_dtype",
             "manual_seed", "seed", "initial_seed", "is_grad_enabled", "set_grad_enabled",
             "compile", "save", "load", "typename", "set_printoptions")
    return {getattr(ember, n) for n in names if hasattr(ember, n)}


@functools.lru_cache(maxsize=1)
def get_overridable_functions() -> dict[Any, list[Callable[..., Any]]]:
    """The functions that dispatch, per namespace object: ``torch``, ``torch.Tensor``,
    ``torch.nn.functional``, ``torch.linalg``, ``torch.special``."""
    import ember
    import ember.linalg
    import ember.nn.functional
    import ember.special

    out: dict[Any, list[Callable[..., Any]]] = {}
    for ns in (ember, ember.nn.functional, ember.linalg, ember.special):
        fns = []
        for name in dir(ns):
            f = getattr(ns, name, None)
            core = f.__func__ if isinstance(f, staticmethod) else f
            if not name.startswith("_") and _overrides.is_dispatcher(core):
                fns.append(f)
        out[ns] = fns
    out[Tensor] = [v for k, v in Tensor.__dict__.items() if _overrides.is_dispatcher(v)]
    return out


def wrap_torch_function(dispatcher: Callable[..., Any]) -> Callable[[Callable[..., Any]],
                                                                    Callable[..., Any]]:
    """Decorator for a Python-level function: dispatch ``__torch_function__`` on the arguments
    ``dispatcher(*args, **kwargs)`` names."""

    def inner(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)

        return wrapped

    return inner
