"""``ember.cuda.nvtx``: NVTX ranges for profilers. Without a GPU they raise as CPU-only PyTorch
does; with one they are no-ops (ember emits no NVTX markers)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ._common import available

__all__ = ["range_push", "range_pop", "range_start", "range_end", "mark", "range"]


def _check() -> None:
    if not available():
        raise RuntimeError("NVTX functions not installed. Are you sure you have a CUDA build? "
                           "(ember has no usable CUDA GPU)")


def range_push(msg: str) -> int:
    _check()
    return 0


def range_pop() -> int:
    _check()
    return 0


def range_start(msg: str) -> int:
    _check()
    return 0


def range_end(range_id: int) -> None:
    _check()


def mark(msg: str) -> None:
    _check()


@contextlib.contextmanager
def range(msg: str, *args: Any, **kwargs: Any) -> Iterator[None]:  # noqa: A001 - PyTorch's name
    """``with nvtx.range("step"):`` brackets the block."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
