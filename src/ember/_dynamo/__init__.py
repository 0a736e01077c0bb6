"""``ember._dynamo``: the parts of ``torch._dynamo`` that scripts touch.

``torch.compile`` traces and replays regions (``ember/_compile/``); this module is its control
panel:

- ``config`` holds PyTorch's settings by name (set and read them; unknown names raise);
  ``cache_size_limit`` bounds the guard keys kept per compiled callable (past it, calls run
  eagerly) and ``disable = True`` runs every compiled callable eagerly;
- ``reset()`` forgets every compiled program; ``exc.Unsupported`` is raised at a graph break
  under ``fullgraph=True``;
- ``is_compiling()`` is True while a region is being traced;
- ``disable``, ``allow_in_graph``, ``disallow_in_graph``, ``assume_constant_result`` return
  what they are given; ``mark_dynamic``, ``mark_static``... record nothing (shapes are always
  specialised); ``set_stance("force_eager")`` runs compiled callables eagerly;
- ``optimize(...)`` is ``torch.compile``; ``explain(fn)(*args)`` runs ``fn`` once and reports
  its graphs, graph breaks and ops as ember's compiler sees them (``_explain.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from .._compile import OptimizedModule
from . import config, eval_frame, exc
from ._explain import explain
from .eval_frame import is_dynamo_supported

__all__ = [
    "config", "exc", "reset", "disable", "allow_in_graph", "disallow_in_graph", "assume_constant_result",
    "graph_break", "is_compiling", "mark_dynamic", "maybe_mark_dynamic", "mark_static",
    "mark_static_address", "optimize", "run", "explain", "list_backends", "is_dynamo_supported",
    "set_stance", "OptimizedModule", "eval_frame",
]


def reset() -> None:
    """Forget every compiled program: compiled callables trace again on their next calls."""
    from .. import _compile

    _compile.reset()


def _disabled() -> bool:
    """Whether compiled callables should run eagerly now (``config.disable``, the stance)."""
    return _stance == "force_eager" or bool(config._values["disable"])  # (runs per compiled call)


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None,
            wrapping: bool = True) -> Any:
    """``@torch._dynamo.disable``: ember never compiles, so ``fn`` comes back unchanged.

    Without ``fn`` it returns a decorator (``@disable(recursive=False)``).
    """
    if fn is None:
        def decorator(f: Callable) -> Callable:
            return f

        return decorator
    return fn


def allow_in_graph(fn: Any) -> Any:
    """Returns ``fn`` (there is no graph)."""
    return fn


def disallow_in_graph(fn: Any) -> Any:
    """Returns ``fn`` (there is no graph)."""
    return fn


def assume_constant_result(fn: Any) -> Any:
    """Returns ``fn``."""
    return fn


def graph_break() -> None:
    """A no-op (no graph to break)."""


def is_compiling() -> bool:
    """True while ``torch.compile`` traces a region (its code runs once, recorded)."""
    from ..autograd import function as _function

    return _function.tracer is not None


def mark_dynamic(t: Any, index: Any, *, hint_override: int | None = None, min: int | None = None,  # noqa: A002
                 max: int | None = None, specialize_on: list | None = None) -> None:  # noqa: A002
    """Records nothing: ember has no shape specialisation."""


def maybe_mark_dynamic(t: Any, index: Any) -> None:
    """Records nothing."""


def mark_static(t: Any, index: Any = None) -> None:
    """Records nothing."""


def mark_static_address(t: Any, guard: bool = True) -> None:
    """Records nothing."""


def optimize(*args: Any, **kwargs: Any) -> Callable:
    """``torch._dynamo.optimize(backend)``: a decorator that applies ``torch.compile``."""
    from .._compile import compile as _compile

    backend = args[0] if args else kwargs.get("backend", "inductor")

    def decorator(fn: Any) -> Any:
        return _compile(fn, backend=backend)

    return decorator


def run(fn: Any = None) -> Any:
    """Returns ``fn`` (it already runs without compilation)."""
    return fn


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list[str]:
    """The backend names PyTorch lists; ``torch.compile`` accepts and ignores any of them."""
    return ["cudagraphs", "inductor", "openxla", "tvm"]


_stance = "default"


class set_stance(contextlib.ContextDecorator):  # noqa: N801 - PyTorch's name
    """``torch._dynamo.set_stance(...)``: remembered and ignored (ember always runs eagerly).

    Works as a call, a ``with`` block and a decorator, like PyTorch's.
    """

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
                 force_backend: Any = None) -> None:
        global _stance
        self._previous = _stance
        self._stance = stance
        _stance = stance

    def __enter__(self) -> set_stance:
        global _stance
        _stance = self._stance
        return self

    def __exit__(self, *exc: object) -> None:
        global _stance
        _stance = self._previous
