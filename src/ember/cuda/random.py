"""``ember.cuda.random``: seeding. ember draws random numbers on the CPU and moves them, so the
CUDA generator is the CPU one; without a GPU the calls behave as PyTorch's do without CUDA."""

from __future__ import annotations

from typing import Any

from ._common import available, require

__all__ = ["get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all",
           "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed"]


def manual_seed(seed: int) -> None:
    """Seed the generator CUDA draws use (ember's one generator)."""
    from ..ops.random import manual_seed as ms

    ms(seed)


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def seed() -> None:
    """Seed with a random number (nothing to do without a GPU, as in PyTorch)."""
    if available():
        from ..ops.random import seed as s

        s()


def seed_all() -> None:
    seed()


def initial_seed() -> int:
    require("initial_seed")
    from ..ops.random import initial_seed as i

    return i()


def get_rng_state(device: Any = "cuda") -> Any:
    require("get_rng_state")
    from ..ops.random import get_rng_state as g

    return g()


def set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    """Set the generator's state (ignored without a GPU, as in PyTorch)."""
    if available():
        from ..ops.random import set_rng_state as s

        s(new_state)


def get_rng_state_all() -> list:
    return [get_rng_state()] if available() else []


def set_rng_state_all(new_states: Any) -> None:
    for st in new_states:
        set_rng_state(st)
