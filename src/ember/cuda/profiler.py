"""``ember.cuda.profiler``: start/stop the CUDA profiler (cudaProfilerStart/Stop)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ._common import require

__all__ = ["start", "stop", "profile"]


def start() -> None:
    require("profiler.start")


def stop() -> None:
    require("profiler.stop")


@contextlib.contextmanager
def profile() -> Iterator[None]:
    """Profile the block (``start`` ... ``stop``)."""
    start()
    try:
        yield
    finally:
        stop()
