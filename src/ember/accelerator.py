"""``ember.accelerator``: the device-agnostic accelerator API (CUDA when present)."""

from __future__ import annotations

from . import _backend


def is_available() -> bool:
    return _backend.cuda_available()


def current_accelerator(check_available: bool = False) -> _backend.device | None:
    return _backend.device("cuda") if is_available() else None


def device_count() -> int:
    return _backend.cuda_device_count()
