"""``ember.cuda.memory``: memory statistics. Without a GPU the counters are 0, as in PyTorch.

With CuPy, ``memory_allocated`` is the bytes in use in CuPy's default memory pool and
``memory_reserved`` the bytes the pool holds; peaks are tracked from the calls ember sees.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any

from .. import _backend
from ._common import available, index_of, require

__all__ = [
    "empty_cache", "memory_stats", "reset_peak_memory_stats", "reset_max_memory_allocated",
    "reset_max_memory_cached", "reset_accumulated_memory_stats", "memory_allocated",
    "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_cached",
    "max_memory_cached", "memory_summary", "mem_get_info", "list_gpu_processes",
    "set_per_process_memory_fraction", "get_per_process_memory_fraction",
    "memory_stats_as_nested_dict", "host_memory_stats", "host_memory_stats_as_nested_dict",
    "reset_peak_host_memory_stats", "reset_accumulated_host_memory_stats",
]

_peak = {"allocated": 0, "reserved": 0}


def _pool() -> tuple[int, int]:
    if not available():
        return 0, 0
    used, held = _backend.cuda_pool_bytes()
    _peak["allocated"] = max(_peak["allocated"], used)
    _peak["reserved"] = max(_peak["reserved"], held)
    return used, held


def empty_cache() -> None:
    """Release cached, unused GPU memory (nothing to do without a GPU)."""
    if available():
        _backend.cuda_free_pool()


def memory_allocated(device: Any = None) -> int:
    """Bytes of GPU memory tensors occupy now (0 without a GPU)."""
    return _pool()[0]


def max_memory_allocated(device: Any = None) -> int:
    """The peak of ``memory_allocated`` since the start or the last reset (0 without a GPU)."""
    _pool()
    return _peak["allocated"]


def memory_reserved(device: Any = None) -> int:
    """Bytes the caching allocator holds (0 without a GPU)."""
    return _pool()[1]


def max_memory_reserved(device: Any = None) -> int:
    """The peak of ``memory_reserved`` (0 without a GPU)."""
    _pool()
    return _peak["reserved"]


def memory_cached(device: Any = None) -> int:
    """Deprecated name of ``memory_reserved``."""
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`",
                  FutureWarning, stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device: Any = None) -> int:
    """Deprecated name of ``max_memory_reserved``."""
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to "
                  "`torch.cuda.max_memory_reserved`", FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


def reset_peak_memory_stats(device: Any = None) -> None:
    """Restart the peaks from the current values."""
    used, held = _backend.cuda_pool_bytes() if available() else (0, 0)
    _peak["allocated"], _peak["reserved"] = used, held


def reset_accumulated_memory_stats(device: Any = None) -> None:
    """Nothing accumulates in ember's counters; kept for scripts that call it."""


def reset_max_memory_allocated(device: Any = None) -> None:
    """Deprecated: calls ``reset_peak_memory_stats`` (which resets all peaks)."""
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device: Any = None) -> None:
    """Deprecated: calls ``reset_peak_memory_stats`` (which resets all peaks)."""
    warnings.warn("torch.cuda.reset_max_memory_cached now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def memory_stats(device: Any = None) -> OrderedDict:
    """A few of PyTorch's allocator counters (an empty dict without a GPU, as in PyTorch)."""
    if not available():
        return OrderedDict()
    used, held = _pool()
    return OrderedDict([
        ("allocated_bytes.all.current", used), ("allocated_bytes.all.peak", _peak["allocated"]),
        ("reserved_bytes.all.current", held), ("reserved_bytes.all.peak", _peak["reserved"]),
    ])


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A short human-readable report of the memory counters."""
    if not available():
        return "ember: no CUDA device (torch.cuda.is_available() is False); nothing allocated.\n"
    used, held = _pool()
    mib = 1024 * 1024
    return (f"ember CUDA memory summary, device {index_of(device)}\n"
            f"  allocated: {used / mib:.1f} MiB (peak {_peak['allocated'] / mib:.1f} MiB)\n"
            f"  reserved:  {held / mib:.1f} MiB (peak {_peak['reserved'] / mib:.1f} MiB)\n")


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of the GPU."""
    require("mem_get_info")
    return _backend.cuda_mem_get_info(index_of(device))


def list_gpu_processes(device: Any = None) -> str:
    """PyTorch asks NVML; ember does not, and says so."""
    return "pynvml module not found, please install nvidia-ml-py"


_fraction = {"value": 1.0}


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    """Record a memory cap (ember's CuPy pool is not limited by it)."""
    require("set_per_process_memory_fraction")
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _fraction["value"] = float(fraction)


def get_per_process_memory_fraction(device: Any = None) -> float:
    require("get_per_process_memory_fraction")
    return _fraction["value"]


def memory_stats_as_nested_dict(device: Any = None) -> dict:
    """``memory_stats`` with its dotted keys split into nested dicts ({} without a GPU)."""
    out: dict = {}
    for key, value in memory_stats(device).items():
        node = out
        *parts, last = key.split(".")
        for p in parts:
            node = node.setdefault(p, {})
        node[last] = value
    return out


def host_memory_stats() -> dict:
    """Pinned host memory counters (ember keeps none: empty, as CPU-only PyTorch)."""
    from collections import OrderedDict

    return OrderedDict()


def host_memory_stats_as_nested_dict() -> dict:
    return {}


def reset_peak_host_memory_stats() -> None:
    """Nothing to reset (no host memory counters)."""


def reset_accumulated_host_memory_stats() -> None:
    """Nothing to reset (no host memory counters)."""
