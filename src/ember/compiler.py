"""``ember.compiler`` (``torch.compiler``): the compiler's switches, for code that guards on them.

``torch.compile`` traces a region and replays its ops (``src/ember/_compile/``, described in
docs/utilities.md); these functions answer for it: ``is_compiling()`` is True while a region is
being traced, ``reset()`` forgets every compiled program. The decorators hand back what they are
given.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["allow_in_graph", "assume_constant_result", "compile", "cudagraph_mark_step_begin",
           "disable", "is_compiling", "is_dynamo_compiling", "is_exporting", "list_backends",
           "reset", "set_stance", "substitute_in_graph", "nested_compile_region"]


def compile(*args: Any, **kwargs: Any) -> Any:  # noqa: A001 - PyTorch's name
    """``torch.compile``: trace a model or function and replay it (``ember.compile``)."""
    from ._compile import compile as _compile

    return _compile(*args, **kwargs)


def is_compiling() -> bool:
    """True while ``torch.compile`` traces a region."""
    from ._dynamo import is_compiling as tracing

    return tracing()


def is_dynamo_compiling() -> bool:
    """The same as ``is_compiling()`` (ember's tracing is its dynamo)."""
    return is_compiling()


def is_exporting() -> bool:
    return False


def reset() -> None:
    """Forget every compiled program (``torch._dynamo.reset()``)."""
    from ._dynamo import reset as _reset

    _reset()


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list[str]:
    """The backend names ``torch.compile`` accepts (ember's own tracer serves them all)."""
    from ._dynamo import list_backends as _backends

    return _backends(exclude_tags)


def _identity_decorator(fn: Any = None, *args: Any, **kwargs: Any) -> Any:
    if fn is None or not callable(fn):
        return lambda f: f
    return fn


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """Returns ``fn`` (or a decorator that does): there is no compilation to switch off."""
    return _identity_decorator(fn)


def allow_in_graph(fn: Callable) -> Callable:
    return fn


def assume_constant_result(fn: Callable) -> Callable:
    return fn


def substitute_in_graph(original_fn: Callable, *, can_constant_fold_through: bool = False,
                        skip_signature_check: bool = False) -> Callable:
    """A decorator that leaves ``original_fn`` in use (there is no graph to substitute in)."""
    return lambda fn: fn


def nested_compile_region(fn: Any = None, **kwargs: Any) -> Any:
    return _identity_decorator(fn)


def cudagraph_mark_step_begin() -> None:
    """No CUDA graphs to mark."""


@contextlib.contextmanager
def _stance() -> Iterator[None]:
    yield


def set_stance(stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
               force_backend: Any = None) -> Any:
    """Accepted and ignored (usable as a call, a context manager or a decorator)."""
    return _stance()


def __getattr__(name: str) -> object:
    from ._missing import attribute_error

    raise attribute_error("torch.compiler", name)
