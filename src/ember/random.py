"""``ember.random`` (``torch.random``): the default generator and its seed and state functions."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from .ops.random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str = "cuda") -> Iterator[None]:
    """Run the block with the random state saved before and restored after it."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def __getattr__(name: str) -> object:
    from ._missing import attribute_error

    raise attribute_error("torch.random", name)
