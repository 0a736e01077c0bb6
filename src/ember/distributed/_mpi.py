"""The transport under ``ember.distributed``: MPI through mpi4py (the optional extra ``ember[mpi]``,
which brings MPICH's wheel with its ``mpiexec``; no compiler or system MPI needed).

Collectives run on the tensors' own NumPy arrays, in place as PyTorch's do, through MPI's
non-blocking calls (``Iallreduce``, ``Ibcast``...), so ``async_op=True`` returns a :class:`Work`
whose ``wait()`` completes the request. Everything here sees only CPU arrays; the caller checks
tensors first.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["Work", "as_buffer", "available", "comm_world", "module", "mpi_op"]


def available() -> bool:
    """Whether mpi4py is installed (without importing it: importing initialises MPI)."""
    return importlib.util.find_spec("mpi4py") is not None


def module() -> Any:
    """mpi4py's ``MPI`` (importing it initialises MPI), or a clear error without mpi4py."""
    if not available():
        raise RuntimeError(
            "ember.distributed runs over MPI, and mpi4py is not installed: "
            "pip install 'ember[mpi]' (mpi4py and MPICH's wheel, which brings mpiexec)"
        )
    from mpi4py import MPI

    return MPI


def comm_world() -> Any:
    """MPI's world communicator (initialises MPI on first use)."""
    return module().COMM_WORLD


def mpi_op(name: str) -> Any:
    """MPI's reduction for a ``ReduceOp`` name (AVG is a SUM the caller divides)."""
    MPI = module()
    table = {"SUM": MPI.SUM, "AVG": MPI.SUM, "PRODUCT": MPI.PROD, "MIN": MPI.MIN,
             "MAX": MPI.MAX, "BAND": MPI.BAND, "BOR": MPI.BOR, "BXOR": MPI.BXOR}
    if name not in table:
        raise ValueError(f"ReduceOp.{name} is not supported by ember's MPI backend")
    return table[name]


def as_buffer(arr: np.ndarray) -> Any:
    """The MPI buffer spec for a C-contiguous array (bool travels as bytes)."""
    if arr.dtype == np.bool_:
        return arr.view(np.uint8)
    return arr


class Work:
    """The handle of a collective: ``wait()`` completes it (``async_op=True`` returns one).

    ``then`` runs once after the requests complete (copy results back, divide for AVG)."""

    def __init__(self, requests: list[Any], then: Callable[[], None] | None = None,
                 result: Any = None) -> None:
        self._requests = requests
        self._then = then
        self._result = result
        self._done = False

    def wait(self, timeout: Any = None) -> bool:
        if not self._done:
            for r in self._requests:
                r.Wait()
            if self._then is not None:
                self._then()
            self._done = True
        return True

    def is_completed(self) -> bool:
        if not self._done and all(r.Test() for r in self._requests):
            self.wait()
        return self._done

    def is_success(self) -> bool:
        return self.is_completed()

    def exception(self) -> None:
        return None

    def result(self) -> Any:
        self.wait()
        return self._result

    def synchronize(self) -> None:
        self.wait()
