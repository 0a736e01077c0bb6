"""Grad mode: whether operations record a graph. ``no_grad`` and friends switch it.

The mode is per thread, as in PyTorch: two threads training their own models do not switch
each other's recording off. ``state`` is a ``threading.local`` whose class attributes are the
defaults a new thread starts with (grad on, inference off); ops read ``grad_mode.state.enabled``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any


class _ThreadState(threading.local):
    enabled = True  # grad mode: ops record a graph
    inference = False  # inside inference_mode(True)


state = _ThreadState()


def is_grad_enabled() -> bool:
    return state.enabled


def _set(mode: bool) -> None:
    state.enabled = bool(mode)


class _GradModeContext:
    """Base for the grad-mode switches: a context manager and a decorator."""

    mode = True

    def __enter__(self) -> None:
        self._prev = state.enabled
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
        self._prev = state.enabled
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
    """Like ``no_grad``, and ``is_inference_mode_enabled()`` is True inside (ember keeps no
    extra bookkeeping to skip). ``inference_mode(False)`` turns grad mode back on, as in PyTorch."""

    def __init__(self, mode: bool = True) -> None:
        if callable(mode):  # used as a bare decorator
            self._fn = mode
            mode = True
        self.inference = bool(mode)
        self.mode = not mode

    def __new__(cls, mode: Any = True) -> Any:
        self = super().__new__(cls)
        if callable(mode):
            self.__init__(True)
            return self(mode)
        return self

    def __enter__(self) -> None:
        self._prev = state.enabled
        self._prev_inference = state.inference
        state.enabled = self.mode
        state.inference = self.inference

    def __exit__(self, *exc: Any) -> None:
        state.enabled = self._prev
        state.inference = self._prev_inference

    def __call__(self, fn: Callable) -> Callable:
        mode = self.inference

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return wrapper

    def clone(self) -> inference_mode:
        return inference_mode(self.inference)


def is_inference_mode_enabled() -> bool:
    return state.inference
