"""How the C allocator hands out NumPy's large arrays, tuned once at ``import ember``.

NumPy takes every array's memory from ``malloc``. glibc serves blocks of 128 KiB and up with a
fresh ``mmap`` and returns them to the system on ``free`` (its threshold then rises with the
sizes it sees, but the heap above the trim threshold goes back as well), so a training step that
makes and drops the same few-MiB temporaries every step page-faults its memory in again each
time. Setting the mmap threshold to glibc's maximum (32 MiB) keeps those blocks for reuse:
measured on the benchmark's CNN step +25-35%, GPT +10-15%, peak RSS unchanged
(docs/benchmarks.md). The trim threshold is 256 MiB (glibc's own dynamic value would be twice the
mmap threshold, 64 MiB): a compiled region frees its intermediates together at the end of a call,
and above 64 MiB freed at once the heap's top went back to the system and was faulted in again
next call (GELU, LayerNorm and softmax at 1024 x 4096 compiled, forward and backward: 2,044
faults and 36 ms a step at 64 MiB, none and 27 ms at 256 MiB, peak RSS the same). Up to that much
freed memory stays in the process after a peak; the peak itself does not change.

Linux with glibc only; skipped when the process already chose (any ``MALLOC_*_`` tuning variable
in the environment) and with ``EMBER_MALLOC=system``.
"""

from __future__ import annotations

import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest allowed value (64-bit)
TRIM_THRESHOLD = 256 * 1024 * 1024
_USER_VARS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
              "MALLOC_MMAP_MAX_", "GLIBC_TUNABLES", "LD_PRELOAD")

tuned = False  # whether tune() changed the allocator in this process


def should_tune(env: dict | None = None, platform: str | None = None) -> bool:
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux") or env.get("EMBER_MALLOC", "").lower() == "system":
        return False
    # a preloaded allocator (jemalloc, tcmalloc) or explicit glibc settings: the user's choice
    return not any(env.get(v) for v in _USER_VARS)


def tune() -> bool:
    """Apply the thresholds above (once); True when glibc accepted them."""
    global tuned
    if tuned or not should_tune():
        return tuned
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl or another C library: nothing to tune
        return False
    tuned = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return tuned
