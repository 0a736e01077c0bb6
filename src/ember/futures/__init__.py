"""``torch.futures``: :class:`Future`, a result that arrives later, and ``collect_all`` /
``wait_all`` over several.

A Future is completed once, by ``set_result`` or ``set_exception`` (from any thread); ``wait()``
blocks until then and returns the result or raises the exception; ``then(cb)`` gives a new
Future of ``cb(self)``; ``add_done_callback(cb)`` runs ``cb(self)`` on completion (at once when
already complete). ``torch.jit.fork`` returns one, completed.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
S = TypeVar("S")


class Future(Generic[T]):
    """A value that a producer sets once and consumers wait for.

    Args:
        devices: accepted for PyTorch's signature (CUDA stream synchronisation); ember's CUDA
            arrays need none.
    """

    def __init__(self, *, devices: list[Any] | None = None) -> None:
        self._cond = threading.Condition()
        self._done = False
        self._result: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Future[T]], None]] = []

    def __repr__(self) -> str:
        return f"<torch.futures.Future object at {id(self):#x}>"

    def done(self) -> bool:
        """Whether the result (or an exception) has been set."""
        return self._done

    def wait(self) -> T:
        """Block until the Future completes; return its result or raise its exception."""
        with self._cond:
            while not self._done:
                self._cond.wait()
        if self._error is not None:
            raise self._error
        return cast(T, self._result)

    def value(self) -> T:
        """The result of a completed Future (raises its exception); call after ``wait()`` or in
        a callback."""
        if not self._done:
            raise RuntimeError("Future.value() was called before the Future completed: call "
                               "wait() first, or read it in a then()/add_done_callback callback")
        if self._error is not None:
            raise self._error
        return cast(T, self._result)

    def then(self, callback: Callable[[Future[T]], S]) -> Future[S]:
        """A new Future completed with ``callback(self)`` once this one completes. If the callback
        raises, the new Future holds a RuntimeError that names the error."""
        out: Future[S] = Future()

        def run(fut: Future[T]) -> None:
            try:
                result = callback(fut)
            except Exception as e:  # noqa: BLE001 - handed to the waiting side
                out.set_exception(RuntimeError(
                    "Got the following error when running the callback: "
                    f"{type(e).__name__}: {e}"))
            else:
                out.set_result(result)

        self._on_done(run)
        return out

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Run ``callback(self)`` when the Future completes (now, if it has). The callback's
        return value is ignored; an exception it raises is printed to stderr, not raised."""

        def run(fut: Future[T]) -> None:
            try:
                callback(fut)
            except Exception as e:  # noqa: BLE001 - PyTorch logs and continues too
                print("Got the following error when running the callback: "
                      f"{type(e).__name__}: {e}", file=sys.stderr)
                traceback.print_exc()

        self._on_done(run)

    def set_result(self, result: T) -> None:
        """Complete the Future with ``result``; waiting threads wake and callbacks run.

        Raises:
            RuntimeError: the Future was already completed.
        """
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Complete the Future with an exception that ``wait()`` and ``value()`` will raise."""
        if not isinstance(result, BaseException):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def _complete(self, result: Any, error: BaseException | None) -> None:
        with self._cond:
            if self._done:
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._result, self._error, self._done = result, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:
            cb(self)

    def _on_done(self, run: Callable[[Future[T]], None]) -> None:
        with self._cond:
            if not self._done:
                self._callbacks.append(run)
                return
        run(self)


def collect_all(futures: list[Future]) -> Future[list[Future]]:
    """A Future completed with the list ``futures`` once every one of them has completed; it
    holds the first error (in list order) if any of them failed."""
    out: Future[list[Future]] = Future()
    futures = list(futures)
    remaining = [len(futures)]
    lock = threading.Lock()

    def one_done(_: Future) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            error = next((f._error for f in futures if f._error is not None), None)
            if error is not None:
                out.set_exception(error)
            else:
                out.set_result(futures)

    if not futures:
        out.set_result([])
    for f in futures:
        f._on_done(one_done)
    return out


def wait_all(futures: list[Future]) -> list:
    """Wait for every Future and return their results in order; raises the first error."""
    return [f.wait() for f in collect_all(futures).wait()]
