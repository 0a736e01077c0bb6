"""``ember.multiprocessing``: Python's ``multiprocessing``, plus PyTorch's additions.

Everything in ``multiprocessing`` is re-exported (``Process``, ``Queue``, ``get_context``,
``set_start_method``...); ``spawn``/``start_processes`` run ``fn(rank, *args)`` in several
processes; tensors moved to shared memory (``share_memory_()``, ``Module.share_memory()``) stay
shared when passed to a child process or through a ``Queue``. See docs/parallel.md.
"""

import multiprocessing
from multiprocessing import *  # noqa: F403

from . import _shared  # noqa: F401 - registers the pickling of shared tensors
from .spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)

__all__ = [
    "ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException",
    "SpawnContext", "get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy",
    "spawn", "start_processes", *multiprocessing.__all__,
]

_strategies = {"file_descriptor", "file_system"}
_strategy = "file_descriptor"


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how shared tensors are passed ("file_descriptor" or "file_system"). ember always
    sends a file descriptor; the choice is stored for ``get_sharing_strategy``."""
    global _strategy
    if new_strategy not in _strategies:
        raise AssertionError(f"sharing strategy must be one of {sorted(_strategies)}")
    _strategy = new_strategy


def get_sharing_strategy() -> str:
    """The sharing strategy set (default "file_descriptor")."""
    return _strategy


def get_all_sharing_strategies() -> set[str]:
    """The strategies ``set_sharing_strategy`` accepts."""
    return set(_strategies)
