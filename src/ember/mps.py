"""``ember.mps`` (``torch.mps``): ember has no mps backend, so the probes say so and the
housekeeping calls do nothing, and scripts that check ``torch.mps.is_available()`` take their
CPU/CUDA path."""

from __future__ import annotations

from typing import Any


def is_available() -> bool:
    """False: ember runs on cpu (NumPy) and cuda (CuPy)."""
    return False


def device_count() -> int:
    return 0


def synchronize(device: Any = None) -> None:
    """Nothing to wait for."""


def empty_cache() -> None:
    """Nothing to free."""


def manual_seed(seed: int) -> None:
    """No mps generator to seed (ember's default generator serves every device)."""


def manual_seed_all(seed: int) -> None:
    """No mps generator to seed."""


def __getattr__(name: str) -> object:
    from ._missing import attribute_error

    raise attribute_error("torch.mps", name)
