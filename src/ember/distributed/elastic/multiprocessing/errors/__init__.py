"""``ember.distributed.elastic.multiprocessing.errors``: the ``@record`` decorator that torchrun
entry points wear. With no launcher around, it calls the function unchanged."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["ChildFailedError", "record"]


class ChildFailedError(Exception):
    """A child process launched by torchelastic failed."""

    def __init__(self, name: str, failures: dict) -> None:
        super().__init__(f"{name} FAILED: {failures}")
        self.name = name
        self.failures = failures


def record(fn: Callable[..., Any], error_handler: Any = None) -> Callable[..., Any]:
    """Decorate a torchrun entry point; exceptions propagate unchanged (no error file to write)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper
