"""The ``"nccl"`` backend: collectives on CUDA tensors through CuPy's NCCL binding.

MPI still starts the processes and carries NCCL's unique id from rank 0 to the others; the
reductions themselves run on the GPUs. Untested on real GPUs in ember's CI (no GPU there).
"""

from __future__ import annotations

import importlib.util
from typing import Any

__all__ = ["available", "check_available"]


def available() -> bool:
    """Whether CuPy and its NCCL binding are installed."""
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        from cupy.cuda import nccl  # noqa: F401
    except Exception:  # noqa: BLE001 - any failure means "not usable here"
        return False
    return True


def check_available(backend: Any) -> None:
    """Raise a clear error where ``init_process_group(backend)`` (nccl) cannot run."""
    if not available():
        raise RuntimeError(
            f"init_process_group(backend={backend!r}): ember's NCCL backend runs through CuPy's "
            "NCCL binding, which is not installed here (pip install 'ember[cuda]' on a machine "
            "with NVIDIA GPUs); for CPU tensors use backend='gloo' (over MPI)"
        )
