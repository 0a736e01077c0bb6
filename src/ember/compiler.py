"""``ember.compiler`` (``torch.compiler``): the compiler's switches, for code that guards on them.

ember runs eagerly (``torch.compile`` returns the model unchanged, see ``ember/_compile.py``), so
nothing is ever being compiled: ``is_compiling()`` is False and the decorators hand back what
they are given.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["allow_in_graph", "assume_constant_result", "compile", "cudagraph_mark_step_begin",
           "disable", "is_compiling", "is_dynamo_compiling", "is_exporting", "list_backends",
           "reset", "set_stance", "substitute_in_graph", "nested_compile_region"]


def compile(*args: Any, **kwargs: Any) -> Any:  # noqa: A001 - PyTorch's name
    """``torch.compile``: runs eagerly."""
    from ._compile import compile as _compile

    return _compile(*args, **kwargs)


def is_compiling() -> bool:
    """False: ember never traces or compiles."""
    return False


def is_dynamo_compiling() -> bool:
    return False


def is_exporting() -> bool:
    return False


def reset() -> None:
    """Nothing cached to clear."""


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list[str]:
    """No compiler backends: ember runs eagerly."""
    return []


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
