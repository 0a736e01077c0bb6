"""How long OpenBLAS's idle threads spin, chosen before NumPy loads it (``import ember``).

After each threaded product OpenBLAS keeps its worker threads spinning (polling for the next
product, with ``sched_yield``) for ``2 ** OPENBLAS_THREAD_TIMEOUT`` cycles before they sleep; its
default, 2 ** 28 cycles, is about a tenth of a second. A training step runs its own work between
products (ember's kernels on their thread pool, NumPy's loops), and for that tenth of a second the
spinning threads take the cores that work needs: on the benchmark's CNN step at 2 threads the
process burned 100-220 ms of CPU per 8 ms step and ran 1.5-40x slower than at one thread
(docs/benchmarks.md, "Session 2026-12-06"). PyTorch runs its products and its own loops on one
pool, so its threads never wait on each other that way.

OpenBLAS reads the variable once, when it loads, which is when NumPy is imported. So at
``import ember``, if NumPy is not imported yet and the user has not set the variable, it is set
for that load (to ``SPIN_EXPONENT``, 14: a few microseconds of polling) and removed again
afterwards: child processes and the user's environment are left as they were. Where NumPy was imported before ember, set
``OPENBLAS_THREAD_TIMEOUT`` in the environment yourself (docs/running.md, "Threads").
``EMBER_BLAS_SPIN=default`` keeps OpenBLAS's own setting.
"""

from __future__ import annotations

import os
import sys

VARIABLE = "OPENBLAS_THREAD_TIMEOUT"
# 2 ** 14 cycles, a few microseconds: long enough for the next of back-to-back products, short
# of the work between a step's products. Measured on a quiet 2-vCPU box at 2 threads
# (docs/benchmarks.md): the CNN step's median 6.6-6.9 ms at 14 every run, 6.6 or 12 ms at 4
# (OpenBLAS's smallest value: sleep at once), 7.1-13 ms at OpenBLAS's 28; a 128 x 128 product
# back to back 60 us at 14, 74 at 4, 32-54 at 28.
SPIN_EXPONENT = 14

chosen: str | None = None  # the value this process's OpenBLAS was loaded with by ember, if any


def before_numpy() -> bool:
    """Set the variable for NumPy's coming load; True when it was set here."""
    global chosen
    if ("numpy" in sys.modules or VARIABLE in os.environ
            or os.environ.get("EMBER_BLAS_SPIN", "").lower() == "default"):
        return False
    os.environ[VARIABLE] = chosen = str(SPIN_EXPONENT)
    return True


def after_numpy(was_set: bool) -> None:
    """Take the variable out of the environment again (NumPy has loaded OpenBLAS by now)."""
    if was_set:
        os.environ.pop(VARIABLE, None)
