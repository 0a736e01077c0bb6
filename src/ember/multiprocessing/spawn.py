"""``spawn`` / ``start_processes``: run ``fn(rank, *args)`` in ``nprocs`` processes (PyTorch's API).

A child that raises sends its traceback back; ``join`` then stops the others and raises
``ProcessRaisedException`` carrying it. A child that dies without raising (``os._exit``, a signal)
raises ``ProcessExitedException`` with its exit code or signal name.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "SpawnContext", "spawn", "start_processes"]


class ProcessException(Exception):
    """A process started by ``spawn``/``start_processes`` failed."""

    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self) -> Any:
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A process raised an exception; the message holds its traceback."""

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg, error_index, error_pid)


class ProcessExitedException(ProcessException):
    """A process exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self) -> Any:
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _run(fn: Callable[..., Any], i: int, args: tuple, error_queue: Any) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent got the same Ctrl-C and reports it
    except Exception:  # noqa: BLE001 - sent to the parent, which re-raises it
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes ``start_processes(..., join=False)`` started; ``join()`` waits for them."""

    def __init__(self, processes: list, error_queues: list) -> None:
        self.processes = processes
        self.error_queues = error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        """The children's process ids."""
        return [int(p.pid) for p in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds; True when all processes finished successfully.

        Raises ``ProcessRaisedException``/``ProcessExitedException`` for the first one that
        failed, after terminating the rest.
        """
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            i = self.sentinels.pop(sentinel)
            p = self.processes[i]
            p.join()
            if p.exitcode != 0:
                failed = i
                break
        if failed is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join(grace_period)
        proc = self.processes[failed]
        if self.error_queues[failed].empty():
            code = proc.exitcode
            if code < 0:
                name = signal.Signals(-code).name
                raise ProcessExitedException(
                    f"process {failed} terminated with signal {name}", failed, proc.pid, code, name
                )
            raise ProcessExitedException(
                f"process {failed} terminated with exit code {code}", failed, proc.pid, code
            )
        trace = self.error_queues[failed].get()
        raise ProcessRaisedException(
            f"\n\n-- Process {failed} terminated with the following error:\n{trace}", failed,
            proc.pid,
        )


class SpawnContext(ProcessContext):
    """The context ``spawn(..., join=False)`` returns (PyTorch's name)."""


def start_processes(fn: Callable[..., Any], args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """Start ``nprocs`` processes running ``fn(i, *args)`` with ``start_method``.

    Args:
        fn: a module-level function (spawned children import it) taking the index first.
        args: the other arguments; shared tensors stay shared.
        nprocs: how many processes.
        join: wait for all (and raise if one fails); otherwise return the ``ProcessContext``.
        daemon: start them as daemon processes.
        start_method: "spawn", "fork" or "forkserver".
    """
    ctx = multiprocessing.get_context(start_method)
    error_queues = []
    processes = []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_run, args=(fn, i, args, q), daemon=daemon)
        p.start()
        error_queues.append(q)
        processes.append(p)
    context = ProcessContext(processes, error_queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable[..., Any], args: tuple = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """``start_processes`` with the spawn start method (PyTorch's ``mp.spawn``)."""
    if start_method != "spawn":
        warnings.warn(
            f"This method only supports start_method=spawn (got: {start_method}).\n"
            "To use a different start_method use:\n\t\t torch.multiprocessing.start_processes(...)",
            FutureWarning,
            stacklevel=2,
        )
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
