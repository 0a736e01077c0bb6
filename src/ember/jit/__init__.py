"""``ember.jit``: PyTorch's TorchScript entry points, run eagerly.

ember has no TorchScript compiler. ``@torch.jit.script`` and ``torch.jit.trace`` give back
something that computes exactly what the original computes, by running the original Python:

- ``script(fn)`` / ``trace(fn, example)`` return a :class:`ScriptFunction` wrapping ``fn``;
- ``script(module)`` / ``trace(module, example)`` return the module itself, marked so that
  ``isinstance(m, torch.jit.ScriptModule)`` holds (``RecursiveScriptModule`` for script,
  ``TracedModule`` for trace); its parameters, buffers and ``state_dict`` are the original's.
- ``trace`` runs the example once (so a broken model fails at the ``trace`` call, as in PyTorch),
  with ``is_tracing()`` True during that run; nothing is recorded, so data-dependent control flow
  keeps working afterwards (PyTorch's trace would freeze the branch taken).
- ``script`` refuses what PyTorch's TorchScript front end refuses, with its exception classes
  (``torch.jit.frontend``: ``*args``/``**kwargs``, ``try``, ``lambda``...);
- ``ignore``, ``unused``, ``export``, ``interface``, ``script_method`` are decorators that return
  their argument (the first three mark it, as PyTorch's do); ``is_scripting()`` is False; ``annotate(T, v)`` returns ``v``; ``Final`` is
  ``typing.Final``.
- ``fork(fn, ...)`` calls ``fn`` at once and returns a completed ``torch.futures.Future``;
  ``wait`` reads it.
- ``save``/``load`` (TorchScript archives) raise ``NotImplementedError`` at the call: save the
  ``state_dict`` with ``torch.save`` instead.

``script`` and ``trace`` emit the ``DeprecationWarning`` PyTorch 2.13 emits.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import types
import typing
import warnings
from collections.abc import Callable, Iterator
from typing import Any, Final, NamedTuple

from ..futures import Future  # torch.jit.Future is torch.futures.Future's class

del annotations  # the __future__ flag's name: torch.jit.annotations is the submodule

__all__ = [
    "script", "trace", "trace_module", "ignore", "unused", "export", "interface", "script_method",
    "script_if_tracing", "is_scripting", "is_tracing", "annotate", "Final", "Attribute", "fork",
    "wait", "Future", "save", "load", "freeze", "optimize_for_inference", "optimized_execution",
    "fuser", "set_fusion_strategy", "enable_onednn_fusion", "onednn_fusion_enabled", "isinstance",
    "ScriptModule", "RecursiveScriptModule", "TracedModule", "TopLevelTracedModule",
    "ScriptFunction", "CompilationUnit", "Error", "TracerWarning", "ScriptWarning",
]

_MARK = "_ember_jit"  # instance attribute on a scripted/traced module: "script" or "trace"
_tracing = False


class Error(RuntimeError):
    """``torch.jit.Error`` (TorchScript's exception type)."""


class TracerWarning(Warning):
    """``torch.jit.TracerWarning``."""


class ScriptWarning(Warning):
    """``torch.jit.ScriptWarning``."""


def _deprecated(what: str) -> None:
    # attributed to this module, as PyTorch attributes it to its own: hidden by Python's default
    # filters, shown under pytest or -W default
    warnings.warn(f"`torch.jit.{what}` is deprecated. Please switch to `torch.compile` or "
                  "`torch.export`.", DeprecationWarning, stacklevel=2)


def _module_cls() -> type:
    from ..nn.modules.module import Module

    return Module


class _ScriptModuleMeta(type):
    """Lets ``isinstance(m, ScriptModule)`` hold for modules returned by ``script``/``trace``."""

    _marks: tuple[str, ...] = ("script", "trace")

    def __instancecheck__(cls, obj: object) -> bool:
        if type.__instancecheck__(cls, obj):
            return True
        return getattr(obj, "__dict__", {}).get(_MARK) in cls._marks


def _make_script_module_classes() -> tuple[type, type, type, type]:
    Module = _module_cls()

    class ScriptModule(Module, metaclass=_ScriptModuleMeta):
        """Base class of TorchScript modules; in ember a plain ``nn.Module`` that runs eagerly.

        Subclassing it (with ``@torch.jit.script_method`` methods) works as subclassing
        ``nn.Module``. Modules returned by ``script``/``trace`` pass ``isinstance`` checks.
        """

        def save(self, f: Any, **kwargs: Any) -> None:
            save(self, f)

    class RecursiveScriptModule(ScriptModule):
        """What ``torch.jit.script(module)`` returns in PyTorch."""

        _marks = ("script",)

    class TracedModule(ScriptModule):
        """What ``torch.jit.trace(module, ...)`` returns in PyTorch."""

        _marks = ("trace",)

    class TopLevelTracedModule(TracedModule):
        """What ``torch.jit.trace(module, ...)`` returns in PyTorch."""

        _marks = ("trace",)

    for c in (ScriptModule, RecursiveScriptModule, TracedModule, TopLevelTracedModule):
        c.__module__ = __name__
    return ScriptModule, RecursiveScriptModule, TracedModule, TopLevelTracedModule


_classes: tuple | None = None


def __getattr__(name: str) -> Any:
    # the module classes need ember.nn, which is loaded lazily; build them on first use
    global _classes
    if name in ("ScriptModule", "RecursiveScriptModule", "TracedModule", "TopLevelTracedModule"):
        if _classes is None:
            _classes = _make_script_module_classes()
            g = globals()
            for c in _classes:
                g[c.__name__] = c
        return globals()[name]
    if name in ("annotations", "frontend"):  # torch.jit.annotations loads on first use
        import importlib

        return importlib.import_module(f"{__name__}.annotations")
    from .._missing import attribute_error

    raise attribute_error("torch.jit", name)


class ScriptFunction:
    """A function returned by ``script``/``trace``: calls the original Python function."""

    def __init__(self, fn: Callable, kind: str = "script") -> None:
        self._fn = fn
        self._kind = kind
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)

    @property
    def name(self) -> str:
        return getattr(self._fn, "__name__", "fn")

    @property
    def qualified_name(self) -> str:
        return f"{getattr(self._fn, '__module__', '__main__')}.{self.name}"

    @property
    def code(self) -> str:
        raise NotImplementedError("ember runs scripted functions eagerly: there is no TorchScript "
                                  "code to show; read the Python source instead.")

    graph = code

    def save(self, f: Any, **kwargs: Any) -> None:
        save(self, f)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        # a scripted function stored as a class attribute still binds like a method
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self) -> str:
        return f"<ember.jit.ScriptFunction {self.name} (eager)>"


def _mark(module: Any, kind: str) -> Any:
    object.__setattr__(module, _MARK, kind)
    if not hasattr(type(module), "save"):  # scripted.save(path): PyTorch's method, explained
        object.__setattr__(module, "save", functools.partial(save, module))
    return module


def script(obj: Any, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Any:
    """Return ``obj`` ready to run as PyTorch's ``torch.jit.script`` would, but eagerly.

    What PyTorch's front end refuses is refused with its exception classes (``*args`` and
    ``**kwargs`` parameters, ``try``, ``lambda``, ``import``... in the function, the functions
    it calls, or a module's and its submodules' ``forward``): see ``ember/jit/frontend.py``.

    Args:
        obj: a function (gives a :class:`ScriptFunction`), an ``nn.Module`` instance (returned
            itself, marked as a ``RecursiveScriptModule``) or a plain class (returned as is).
            An ``nn.Module`` *class* is refused, as in PyTorch: script an instance.
        optimize, _frames_up, _rcb, example_inputs: accepted for compatibility and ignored.
    """
    _deprecated("script")
    from .frontend import check_scriptable

    Module = _module_cls()
    if builtins.isinstance(obj, Module):
        if getattr(obj, "__dict__", {}).get(_MARK) is None:
            check_scriptable(obj, is_module=True)
        return _mark(obj, "script")
    if builtins.isinstance(obj, type):
        if issubclass(obj, Module):
            raise RuntimeError(f"Type '{obj}' cannot be compiled since it inherits from "
                               "nn.Module, pass an instance instead")
        return obj
    if builtins.isinstance(obj, ScriptFunction):
        return obj
    if not callable(obj) or builtins.isinstance(obj, types.BuiltinFunctionType):
        raise TypeError(f"{type(obj)} is a built-in class: torch.jit.script takes a Python "
                        "function, an nn.Module instance or a class")
    check_scriptable(obj)
    return ScriptFunction(obj, "script")


def _as_args(example_inputs: Any) -> tuple:
    if builtins.isinstance(example_inputs, tuple):
        return example_inputs
    return (example_inputs,)


@contextlib.contextmanager
def _tracing_on() -> Iterator[None]:
    global _tracing
    before = _tracing
    _tracing = True
    try:
        yield
    finally:
        _tracing = before


def trace(func: Any, example_inputs: Any = None, optimize: Any = None, check_trace: bool = True,
          check_inputs: Any = None, check_tolerance: float = 1e-5, strict: bool = True,
          _force_outplace: bool = False, _module_class: Any = None, _compilation_unit: Any = None,
          example_kwarg_inputs: dict | None = None, _store_inputs: bool = True) -> Any:
    """Run ``func`` once on the example inputs and return it ready to run again (eagerly).

    Args:
        func: a function or an ``nn.Module``.
        example_inputs: a tuple of positional arguments, or a single tensor.
        example_kwarg_inputs: keyword arguments for the example run instead.
        optimize, check_trace, check_inputs, check_tolerance, strict: accepted and ignored
            (nothing is recorded, so there is no trace to check).

    Returns:
        the module itself (marked as a ``TracedModule``) or a :class:`ScriptFunction`.
    """
    _deprecated("trace")
    if example_inputs is None and example_kwarg_inputs is None:
        raise TypeError("torch.jit.trace: pass example_inputs (a tuple of example arguments, or "
                        "one tensor) or example_kwarg_inputs (a dict), e.g. "
                        "torch.jit.trace(model, (x,))")
    if not callable(func):
        raise TypeError(f"torch.jit.trace: expected a function or an nn.Module, got "
                        f"{type(func).__name__}")
    args = () if example_inputs is None else _as_args(example_inputs)
    kwargs = example_kwarg_inputs or {}
    from ..autograd.grad_mode import no_grad

    with _tracing_on(), no_grad():
        func(*args, **kwargs)
    if builtins.isinstance(func, _module_cls()):
        return _mark(func, "trace")
    if builtins.isinstance(func, ScriptFunction):
        return func
    return ScriptFunction(func, "trace")


def trace_module(mod: Any, inputs: dict[str, Any], **kwargs: Any) -> Any:
    """Run each named method of ``mod`` on its example inputs once; return ``mod``."""
    from ..autograd.grad_mode import no_grad

    with _tracing_on(), no_grad():
        for method, example in inputs.items():
            getattr(mod, method)(*_as_args(example))
    return _mark(mod, "trace")


def script_if_tracing(fn: Callable) -> Callable:
    """Returns ``fn`` (ember never traces into a graph)."""
    return fn


_script_if_tracing = script_if_tracing


def _overload(fn: Callable) -> Callable:
    """``@torch.jit._overload``: a typed declaration; the later plain definition is what runs."""
    return fn


_overload_method = _overload


def _unwrap_optional(x: Any) -> Any:
    """Returns ``x``, which must not be None."""
    if x is None:
        raise AssertionError("Unwrapping null optional")
    return x


def script_method(fn: Callable) -> Callable:
    """Returns ``fn``: a ``ScriptModule`` method runs as Python."""
    return fn


def _modify(fn: Any, modifier: str) -> Any:
    """Record PyTorch's ``fn._torchscript_modifier`` (``script`` reads it) and return ``fn``."""
    from .._jit_internal import FunctionModifiers

    target = fn.fget if builtins.isinstance(fn, property) else fn
    try:
        target._torchscript_modifier = getattr(FunctionModifiers, modifier)
    except (AttributeError, TypeError):  # a builtin or a slotted callable: nothing to record
        pass
    return fn


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """``@torch.jit.ignore`` / ``@torch.jit.ignore(drop=True)``: returns the function, marked
    (``script`` does not read it)."""
    if callable(drop):
        return _modify(drop, "IGNORE")
    if drop:
        warnings.warn("ignore(True) has been deprecated. TorchScript will now drop the function "
                      "call on compilation. Use torch.jit.unused now. {}", FutureWarning,
                      stacklevel=2)

    def decorator(fn: Callable) -> Callable:
        return _modify(fn, "UNUSED" if drop else "IGNORE")

    return decorator


def unused(fn: Callable) -> Callable:
    """``@torch.jit.unused``: returns ``fn``, marked (``script`` does not read it)."""
    return _modify(fn, "UNUSED")


def export(fn: Callable) -> Callable:
    """``@torch.jit.export``: returns ``fn``, marked (``script`` reads it as it reads
    ``forward``)."""
    return _modify(fn, "EXPORT")


def interface(obj: Any) -> Any:
    """``@torch.jit.interface``: returns the class unchanged."""
    return obj


def is_scripting() -> bool:
    """False: ember code always runs as Python."""
    return False


def is_tracing() -> bool:
    """True only while ``torch.jit.trace`` runs its example."""
    return _tracing


_T = typing.TypeVar("_T")


def annotate(the_type: Any, the_value: _T) -> _T:
    """Returns ``the_value`` (a type hint for the TorchScript compiler)."""
    return the_value


class Attribute(NamedTuple):
    """``torch.jit.Attribute(value, type)``: in eager code, just the pair."""

    value: Any
    type: Any


def fork(func: Callable, *args: Any, **kwargs: Any) -> Future:
    """Call ``func(*args, **kwargs)`` now and return a completed :class:`Future` of the result.

    An exception raised by ``func`` propagates from ``fork``, as in PyTorch's eager mode.
    """
    future: Future = Future()
    future.set_result(func(*args, **kwargs))
    return future


def wait(future: Future) -> Any:
    """The value of a future returned by :func:`fork`."""
    return future.wait()


def _no_archives(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"torch.jit.{what}: ember has no TorchScript, so it cannot write or read TorchScript "
        "archives. Save the weights instead: torch.save(model.state_dict(), path), then build "
        "the model in Python and call model.load_state_dict(torch.load(path))."
    )


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    """Not available in ember: raises ``NotImplementedError`` naming the alternative."""
    raise _no_archives("save")


def load(f: Any, map_location: Any = None, _extra_files: Any = None,
         _restore_shapes: bool = False) -> Any:
    """Not available in ember: raises ``NotImplementedError`` naming the alternative."""
    raise _no_archives("load")


class CompilationUnit:
    """TorchScript source compilation: not available in ember (raises at construction)."""

    def __init__(self, lang: str | None = None, _frames_up: int = 0) -> None:
        raise NotImplementedError("torch.jit.CompilationUnit compiles TorchScript source, which "
                                  "ember cannot run: write the function in Python instead.")


def freeze(mod: Any, preserved_attrs: list[str] | None = None,
           optimize_numerics: bool = True) -> Any:
    """Return the scripted/traced module unchanged (PyTorch's preconditions are checked)."""
    if getattr(mod, "__dict__", {}).get(_MARK) is None:
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use torch.jit.script "
                           "or torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    return mod


def optimize_for_inference(mod: Any, other_methods: list[str] | None = None) -> Any:
    """Return ``mod`` in eval mode (script it first if it is a plain module), unchanged."""
    if getattr(mod, "__dict__", {}).get(_MARK) is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            mod = script(mod)
    return mod.eval()


@contextlib.contextmanager
def optimized_execution(should_optimize: bool) -> Iterator[None]:
    """A no-op context manager (nothing to optimise)."""
    yield


@contextlib.contextmanager
def fuser(name: str) -> Iterator[None]:
    """A no-op context manager (no fusers)."""
    yield


_fusion_strategy: list = [("STATIC", 2), ("DYNAMIC", 10)]


def set_fusion_strategy(strategy: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Store the strategy and return the previous one (it has no effect in ember)."""
    global _fusion_strategy
    before, _fusion_strategy = _fusion_strategy, list(strategy)
    return before


_onednn = False


def enable_onednn_fusion(enabled: bool) -> None:
    global _onednn
    _onednn = bool(enabled)


def onednn_fusion_enabled() -> bool:
    return _onednn


def isinstance(obj: Any, target_type: Any) -> bool:  # noqa: A001 - PyTorch's name
    """``isinstance`` that also understands ``list[int]``, ``dict[str, Tensor]``, ``Optional[T]``
    and ``tuple[...]`` (checking every element), as TorchScript's refinement does."""
    origin = typing.get_origin(target_type)
    if origin is None:
        if target_type is Any:
            return True
        if target_type is None or target_type is type(None):
            return obj is None
        return builtins.isinstance(obj, target_type)
    args = typing.get_args(target_type)
    if origin is typing.Union or origin is types.UnionType:
        return any(isinstance(obj, a) for a in args)
    if not builtins.isinstance(obj, origin):
        return False
    if origin in (list, set, frozenset) and args:
        return all(isinstance(v, args[0]) for v in obj)
    if origin is dict and args:
        return all(isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items())
    if origin is tuple and args:
        if len(args) == 2 and args[1] is Ellipsis:
            return all(isinstance(v, args[0]) for v in obj)
        return len(obj) == len(args) and all(isinstance(v, a) for v, a in zip(obj, args))
    return True

