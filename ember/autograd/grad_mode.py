"""Grad mode: whether operations record a graph. ``no_grad`` and friends switch it.

The flag is a module global, not thread-local: reading it is on every op's hot path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

enabled = True


def is_grad_enabled() -> bool:
    return enabled


def _set(mode: bool) -> None:
    global enabled
    enabled = bool(mode)


class _GradModeContext:
    """Base for the grad-mode switches: a context manager and a decorator."""

    mode = True

    def __enter__(self) -> None:
        self._prev = enabled
        _set(self.mode)

    def __exit__(self, *exc: Any) -> None:
        _set(self._prev)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self) -> _GradModeContext:
        return self.__class__()


class no_grad(_GradModeContext):
    """Operations inside record no graph: for evaluation and parameter updates."""

    mode = False

    def __new__(cls, fn: Callable | None = None) -> Any:
        # ``@no_grad`` without parentheses works too, as PyTorch allows.
        self = super().__new__(cls)
        if fn is not None and callable(fn):
            return self(fn)
        return self

    def __init__(self, fn: Callable | None = None) -> None:
        pass


class enable_grad(_GradModeContext):
    mode = True

    def __new__(cls, fn: Callable | None = None) -> Any:
        self = super().__new__(cls)
        if fn is not None and callable(fn):
            return self(fn)
        return self

    def __init__(self, fn: Callable | None = None) -> None:
        pass


class set_grad_enabled(_GradModeContext):
    """Sets grad mode now (as a call) and restores the previous mode on leaving a ``with``."""

    def __init__(self, mode: bool) -> None:
        self._prev = enabled
        self.mode = bool(mode)
        _set(mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _set(self._prev)

    def __call__(self, fn: Callable) -> Callable:
        _set(self._prev)
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper


class inference_mode(_GradModeContext):
    """Like ``no_grad`` (ember keeps no extra bookkeeping to skip)."""

    def __init__(self, mode: bool = True) -> None:
        if callable(mode):  # used as a bare decorator
            self._fn = mode
            mode = True
        self.mode = not mode

    def __new__(cls, mode: Any = True) -> Any:
        self = super().__new__(cls)
        if callable(mode):
            self.__init__(True)
            return self(mode)
        return self

    def __call__(self, fn: Callable) -> Callable:
        mode = not self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return wrapper


def is_inference_mode_enabled() -> bool:
    return not enabled
