"""``ember.cpu`` (``torch.cpu``): the CPU as a device module, like ``torch.cuda`` for GPUs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


def is_available() -> bool:
    """True: the CPU is always there."""
    return True


def is_initialized() -> bool:
    return True


def device_count() -> int:
    """1: PyTorch counts the CPU as one device."""
    return 1


def current_device() -> str:
    return "cpu"


def set_device(device: Any) -> None:
    """Nothing to switch: there is one CPU device."""


def synchronize(device: Any = None) -> None:
    """Nothing to wait for: NumPy's CPU ops finish before they return."""


@contextlib.contextmanager
def stream(stream: Any) -> Iterator[None]:
    """A no-op context: the CPU runs one stream."""
    yield


def __getattr__(name: str) -> object:
    if name == "amp":  # torch.cpu.amp lives in ember.amp
        from .amp import cpu_amp

        return cpu_amp
    from ._missing import attribute_error

    raise attribute_error("torch.cpu", name)
