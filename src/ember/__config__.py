"""``torch.__config__``: what this build is made of, as text (``show()``, ``parallel_info()``).

ember is Python on NumPy (CuPy on CUDA devices), so the report names those and their BLAS
instead of PyTorch's compiler flags. It uses the same ``KEY=VALUE`` spelling for the settings
programs look for (``USE_CUDA``, ``USE_MKL``, ``USE_OPENMP``...), with ember's true values.
"""

from __future__ import annotations

import importlib.util
import platform

import numpy as np

from ._version import TORCH_API_VERSION, __ember_version__

__all__ = ["show", "parallel_info"]


def _blas() -> str:
    try:
        info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except Exception:  # noqa: BLE001 - older NumPy, or a build that does not report it
        return "unknown"
    return f"{info.get('name', 'unknown')} {info.get('version', '')}".strip()


def show() -> str:
    """A description of the build: ember's version, the PyTorch API it implements, Python,
    NumPy and its BLAS, CuPy if installed, and the build settings."""
    cupy = importlib.util.find_spec("cupy") is not None
    mpi = importlib.util.find_spec("mpi4py") is not None
    blas = _blas()
    settings = {
        "TORCH_VERSION": TORCH_API_VERSION, "EMBER_VERSION": __ember_version__,
        "BLAS_INFO": blas.split()[0] if blas != "unknown" else "unknown",
        "USE_CUDA": "1" if cupy else "0", "USE_CUDNN": "OFF", "USE_MKL": "OFF",
        "USE_MKLDNN": "OFF", "USE_OPENMP": "OFF", "USE_MPI": "ON" if mpi else "OFF",
        "USE_NCCL": "ON" if cupy else "OFF", "USE_GLOO": "OFF", "USE_ROCM": "OFF",
        "USE_XPU": "OFF",
    }
    lines = [
        "ember (PyTorch's API on NumPy) built with:",
        f"  - Python {platform.python_version()} ({platform.python_implementation()})",
        f"  - NumPy {np.__version__}",
        f"  - BLAS: {blas} (NumPy's)",
        f"  - CuPy: {'installed' if cupy else 'not installed'}",
        "  - Build settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()) + ", ",
        "",
    ]
    return "\n".join(lines)


def parallel_info() -> str:
    """The thread settings: ember's thread count (``torch.get_num_threads()``: the eager kernels'
    pool, NumPy's BLAS threads and the pool that splits large NumPy calls), the inter-op count,
    the BLAS's own count and the thread environment variables, as PyTorch's lists them."""
    import os

    from . import _kernels_loader, _threads, get_num_interop_threads, get_num_threads

    blas = _threads.blas_threads()
    env = "".join(f"\t{v} : {os.environ.get(v, '[not set]')}\n"
                  for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"))
    return ("ember/Parallel:\n"
            f"\ttorch.get_num_threads() : {get_num_threads()}\n"
            f"\ttorch.get_num_interop_threads() : {get_num_interop_threads()}\n"
            f"BLAS: {_blas()}\n"
            f"\tBLAS threads : {', '.join(map(str, blas)) if blas else 'unknown'}\n"
            f"{_kernels_loader.describe().capitalize()}\n"
            f"Elementwise NumPy calls: split over the threads from {_threads.THRESHOLD} "
            f"elements ({_threads.THRESHOLD_CHEAP} for memory-bound arithmetic)\n"
            f"Environment variables:\n{env}")
