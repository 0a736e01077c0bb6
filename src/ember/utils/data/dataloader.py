"""``DataLoader``: batches from a dataset, shuffled each epoch, loaded in parallel by workers.

``iter(loader)`` is a ``_SingleProcessDataLoaderIter`` (``num_workers=0``) or a
``_MultiProcessingDataLoaderIter``, both ``_BaseDataLoaderIter``s, as in PyTorch; each steps a
generator of batches. With ``num_workers > 0`` each worker is a real process that fetches
and collates whole batches; batches come back in order; a worker's exception is re-raised here
with its traceback; a worker that dies or a ``timeout`` that passes raises instead of hanging.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import random
import signal
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ._collate import default_collate, default_convert
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _seed_from

__all__ = ["DataLoader", "get_worker_info", "WorkerInfo"]

_T_co = TypeVar("_T_co", covariant=True)

_POLL = 0.1  # seconds between liveness checks while waiting for a worker
_WATCHDOG = 2.0  # seconds between a worker's checks that the main process is still there


@dataclass
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker process."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The current worker's id, count, seed and dataset copy; ``None`` in the main process."""
    return _worker_info


class _KeyErrorMessage(str):
    """``str(KeyError(m))`` is ``repr(m)``: one escaped line. This message's repr is itself, so a
    worker's KeyError shows its traceback over several readable lines, as PyTorch's does."""

    def __repr__(self) -> str:
        return str.__str__(self)


class _ExceptionWrapper:
    """An exception raised in a worker, carried to the main process with its traceback."""

    def __init__(self, exc: BaseException, where: str) -> None:
        self.exc_type = type(exc)
        self.message = (
            f"Caught {type(exc).__name__} {where}.\nOriginal "
            + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        )

    def reraise(self) -> None:
        msg = self.message
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            err = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - exception types with unusual constructors
            raise RuntimeError(msg) from None
        raise err


class _IterationEnd:
    """A worker's iterable dataset is exhausted."""


def _fetch(dataset: Any, indices: Any, auto_collation: bool, collate_fn: Any) -> Any:
    if not auto_collation:
        return collate_fn(dataset[indices])
    if collate_fn is default_collate and isinstance(dataset, TensorDataset):
        return dataset._batch(indices)  # whole batch in one index op per tensor
    if hasattr(dataset, "__getitems__"):
        return collate_fn(dataset.__getitems__(indices))
    return collate_fn([dataset[i] for i in indices])


def _worker_loop(dataset: Any, index_q: Any, result_q: Any, collate_fn: Any, auto_collation: bool,
                 iterable: bool, batch_size: int | None, drop_last: bool, worker_id: int,
                 num_workers: int, seed: int, init_fn: Any) -> None:
    # Ctrl-C reaches every process in the terminal's process group: the main process raises
    # KeyboardInterrupt and stops the workers, so workers ignore SIGINT instead of each printing
    # a traceback of their own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _worker_body(dataset, index_q, result_q, collate_fn, auto_collation, iterable, batch_size,
                     drop_last, worker_id, num_workers, seed, init_fn)
    except KeyboardInterrupt:
        pass  # the main process reports it


def _parent_alive(ppid: int) -> bool:
    return os.getppid() == ppid


def _worker_body(dataset: Any, index_q: Any, result_q: Any, collate_fn: Any, auto_collation: bool,
                 iterable: bool, batch_size: int | None, drop_last: bool, worker_id: int,
                 num_workers: int, seed: int, init_fn: Any) -> None:
    global _worker_info
    from ... import _threads
    from ...ops import random as _random

    ppid = os.getppid()
    _threads.set_num_threads(1)  # as PyTorch's workers: N workers must not each take every core
    _random.manual_seed(seed)
    random.seed(seed)
    import numpy as np

    # or every worker draws the same NumPy "random" augmentations; PyTorch's seed: NumPy's
    # SeedSequence of (worker_id, the base seed's two 32-bit halves, 0)
    base = seed - worker_id
    np.random.seed(np.random.SeedSequence([worker_id, base & 0xFFFFFFFF, base >> 32, 0])
                   .generate_state(4))
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    try:
        if init_fn is not None:
            init_fn(worker_id)
    except Exception as e:  # noqa: BLE001 - reported to the main process
        result_q.put((-1, -1, _ExceptionWrapper(e, f"in DataLoader worker process {worker_id}")))
        return
    it = None
    cur_epoch = None
    while True:
        try:
            msg = index_q.get(timeout=_WATCHDOG)
        except queue.Empty:
            if not _parent_alive(ppid):
                return  # the main process died without stopping us
            continue
        except (EOFError, OSError):
            return
        if msg is None:
            return
        epoch, task, indices = msg
        try:
            if iterable and epoch != cur_epoch:  # a new epoch restarts the stream
                it, cur_epoch = iter(dataset), epoch
            if iterable:
                if auto_collation:
                    items = []
                    for _ in range(batch_size):
                        try:
                            items.append(next(it))
                        except StopIteration:
                            break
                    if not items or (drop_last and len(items) < batch_size):
                        data: Any = _IterationEnd()
                    else:
                        data = collate_fn(items)
                else:
                    try:
                        data = collate_fn(next(it))
                    except StopIteration:
                        data = _IterationEnd()
            else:
                data = _fetch(dataset, indices, auto_collation, collate_fn)
        except Exception as e:  # noqa: BLE001 - reported to the main process
            data = _ExceptionWrapper(e, f"in DataLoader worker process {worker_id}")
        result_q.put((epoch, task, data))


class DataLoader(Generic[_T_co]):
    """Batches of ``dataset``: ``for xb, yb in DataLoader(ds, batch_size=64, shuffle=True)``.

    Args (PyTorch's): batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn,
    pin_memory (accepted; a no-op on ember), drop_last, timeout, worker_init_fn,
    multiprocessing_context, generator, prefetch_factor, persistent_workers.
    """

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Any = None, batch_sampler: Any = None, num_workers: int = 0,
                 collate_fn: Any = None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn: Any = None, multiprocessing_context: Any = None,
                 generator: Any = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers > 0 else prefetch_factor
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.persistent_workers = persistent_workers
        self._iterator: _BaseDataLoaderIter | None = None  # PyTorch's: persistent workers' iterator
        self._iterable = isinstance(dataset, IterableDataset)

        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}")
            if sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler/batch_sampler option")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self._auto_collation = batch_sampler is not None or (self._iterable and batch_size is not None)
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.check_worker_number_rationality()

    def check_worker_number_rationality(self) -> None:
        """PyTorch's warning (at construction and at each new worker iterator) when
        ``num_workers`` is more than the CPUs this process may use: the workers then compete
        for them, and loading slows down or stalls."""
        if not self.num_workers:
            return
        affinity = hasattr(os, "sched_getaffinity")
        try:
            cpus = len(os.sched_getaffinity(0)) if affinity else os.cpu_count()
        except OSError:
            cpus = os.cpu_count()
        if cpus is not None and self.num_workers <= cpus:
            return
        if cpus is None:
            suggest = ("DataLoader is not able to compute a suggested max number of worker in "
                       "current system.")
        else:
            suggest = (f"Our suggested max number of worker in current system is {cpus}"
                       f"{'' if affinity else ' (`cpuset` is not taken into account)'}, which is "
                       "smaller than what this DataLoader is going to create.")
        warnings.warn(
            f"This DataLoader will create {self.num_workers} worker processes in total. {suggest} "
            "Please be aware that excessive worker creation might get DataLoader running slow or "
            "even freeze, lower the worker number to avoid potential slowness/freeze if "
            "necessary.", stacklevel=2)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)

    def _index_stream(self, indices: Iterator | None = None) -> Iterator:
        if self._iterable:
            while True:
                yield None
        if indices is None:
            indices = iter(self.batch_sampler if self.batch_sampler is not None else self.sampler)
        yield from indices

    def _next_base_seed(self) -> int:
        """The workers' base seed of a new iterator: PyTorch draws it from ``generator`` (the
        default generator without one) for every ``iter(loader)``, even with ``num_workers=0``,
        after starting the sampler's iterator; persistent workers keep their first one."""
        if self.persistent_workers and self.num_workers > 0 and hasattr(self, "_base_seed"):
            return self._base_seed
        self._base_seed: int = _seed_from(self.generator)
        return self._base_seed

    def __iter__(self) -> _BaseDataLoaderIter:
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        it = _MultiProcessingDataLoaderIter(self)
        if self.persistent_workers:  # kept, as PyTorch keeps it: `loader._iterator` is how
            self._iterator = it  # libraries reach `_shutdown_workers()`
        return it

    def _single_process(self, indices: Iterator | None = None) -> Iterator:
        if self._iterable:
            it = iter(self.dataset)
            if not self._auto_collation:
                for item in it:
                    yield self.collate_fn(item)
                return
            while True:
                items = []
                for _ in range(self.batch_size):
                    try:
                        items.append(next(it))
                    except StopIteration:
                        break
                if not items or (self.drop_last and len(items) < self.batch_size):
                    return
                yield self.collate_fn(items)
                if len(items) < self.batch_size:
                    return
        for batch in self._index_stream(indices):
            yield _fetch(self.dataset, batch, self._auto_collation, self.collate_fn)

    def _start_workers(self, base_seed: int) -> tuple:
        ctx = self.multiprocessing_context
        if ctx is None:
            ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
        elif isinstance(ctx, str):
            ctx = mp.get_context(ctx)
        n = self.num_workers
        result_q = ctx.Queue()
        index_qs = [ctx.Queue() for _ in range(n)]
        workers = []
        for w in range(n):
            p = ctx.Process(
                target=_worker_loop,
                args=(self.dataset, index_qs[w], result_q, self.collate_fn, self._auto_collation,
                      self._iterable, self.batch_size, self.drop_last, w, n, base_seed + w,
                      self.worker_init_fn),
                daemon=True,
            )
            p.start()
            workers.append(p)
        return workers, index_qs, result_q

    @staticmethod
    def _stop_workers(pool: tuple, now: bool = False) -> None:
        """Stop the workers: by a sentinel on each index queue, or (``now``, after Ctrl-C) by
        terminating them without a put. A KeyboardInterrupt can strike inside ``Queue.put``
        after its lock was taken and before ``with`` covers it (CPython's signal checks allow
        this): a put, or the queue's close at exit, would then wait forever, before the
        traceback prints. The feeder thread holds that lock only for instants, so a lock still
        held after half a second is the interrupted put's, and is released."""
        workers, index_qs, result_q = pool
        if now:
            for p in workers:
                p.terminate()
            for q in index_qs:
                lock = getattr(q, "_notempty", None)
                if lock is not None:
                    lock.acquire(timeout=0.5)  # taken now, or still held by the interrupted put
                    lock.release()  # (a plain Lock: any thread may release it)
            for p in workers:
                p.join(timeout=1.0)
            for q in [*index_qs, result_q]:
                q.cancel_join_thread()  # (its feeder thread is a daemon)
            return
        for q in index_qs:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for p in workers:
            p.join(timeout=1.0)
            if p.is_alive():
                p.terminate()
                p.join(timeout=1.0)
        for q in [*index_qs, result_q]:
            q.cancel_join_thread()
            q.close()

    def _multi_process(self, indices: Iterator | None = None, base_seed: int = 0) -> Iterator:
        pool = getattr(self, "_pool", None)
        if pool is not None and not all(p.is_alive() for p in pool[0]):
            self._stop_workers(pool)
            pool = None
        if pool is None:
            pool = self._start_workers(base_seed)
            if self.persistent_workers:
                self._pool = pool
        self._epoch = getattr(self, "_epoch", 0) + 1
        failed = True
        try:
            yield from self._ordered_results(*pool, self._epoch, indices)
            failed = False
        except KeyboardInterrupt:
            self._stop_workers(pool, now=True)
            self._pool = pool = None
            raise
        finally:
            if pool is not None and (not self.persistent_workers or failed):
                self._stop_workers(pool)
                self._pool = None

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            self._pool = None
            try:
                self._stop_workers(pool)
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass

    def _ordered_results(self, workers: list, index_qs: list, result_q: Any, epoch: int,
                         indices: Iterator | None = None) -> Iterator:
        import time

        stream = self._index_stream(indices)
        n = len(workers)
        active = list(range(n))  # workers still producing (iterable datasets end per worker)
        sent = 0
        task_worker: dict[int, int] = {}
        exhausted = False

        def send_next() -> None:
            nonlocal sent, exhausted
            if exhausted or not active:
                return
            try:
                indices = next(stream)
            except StopIteration:
                exhausted = True
                return
            w = active[sent % len(active)]
            index_qs[w].put((epoch, sent, indices))
            task_worker[sent] = w
            sent += 1

        for _ in range(self.prefetch_factor * n):
            send_next()
        waiting: dict[int, Any] = {}
        next_task = 0
        while next_task < sent:
            if next_task in waiting:
                data = waiting.pop(next_task)
            else:
                start = time.monotonic()
                while True:
                    try:
                        got_epoch, task, data = result_q.get(timeout=_POLL)
                        if got_epoch != epoch and got_epoch != -1:
                            continue  # left over from an epoch that was stopped early
                        break
                    except queue.Empty:
                        for w, p in enumerate(workers):
                            if not p.is_alive() and (w in active):
                                raise RuntimeError(
                                    f"DataLoader worker (pid {p.pid}) exited unexpectedly with exit "
                                    f"code {p.exitcode}. A worker can die from running out of "
                                    "memory or from a signal; run with num_workers=0 to see the "
                                    "error in the main process."
                                ) from None
                        if self.timeout and time.monotonic() - start > self.timeout:
                            raise RuntimeError(
                                f"DataLoader timed out after {self.timeout} seconds waiting for a "
                                "batch from its workers"
                            ) from None
                if task == -1 and isinstance(data, _ExceptionWrapper):
                    data.reraise()
                if task != next_task:
                    waiting[task] = data
                    continue
            next_task += 1
            if isinstance(data, _ExceptionWrapper):
                data.reraise()
            if isinstance(data, _IterationEnd):
                w = task_worker.pop(next_task - 1, None)
                if w in active:
                    active.remove(w)
                    # tasks already queued on that worker will also end; keep the order going
                send_next()
                continue
            send_next()
            yield data


class _BaseDataLoaderIter:
    """What ``iter(loader)`` returns: the batches of one pass over the data.

    ``next()`` calls ``_next_data()`` (which subclasses may override) and counts the batches in
    ``_num_yielded``; ``len()`` is ``len(loader)``. It cannot be pickled, as in PyTorch.
    """

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._dataset_kind = 1 if loader._iterable else 0  # PyTorch's _DatasetKind: Map, Iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader.batch_sampler if loader._auto_collation else loader.sampler
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._pin_memory = loader.pin_memory
        if loader.pin_memory:
            from ... import accelerator

            if not accelerator.is_available():
                warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                              "then device pinned memory won't be used.", stacklevel=2)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0
        self._len = loader.__len__
        self._batches: Iterator = iter(())
        # as PyTorch: the sampler's iterator, then the workers' base seed (drawn even without
        # workers, so the default generator moves on as in PyTorch)
        self._sampler_iter = None if loader._iterable else iter(self._index_sampler)
        self._base_seed = loader._next_base_seed()

    def __iter__(self) -> _BaseDataLoaderIter:
        return self

    def __next__(self) -> Any:
        data = self._next_data()
        self._num_yielded += 1
        return data

    def _next_data(self) -> Any:
        return next(self._batches)

    def __len__(self) -> int:
        return self._len()

    def __getstate__(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """The batches, fetched in this process (``num_workers=0``)."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._batches = loader._single_process(self._sampler_iter)


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """The batches, fetched by ``num_workers`` worker processes and handed back in order.

    The workers start at the first ``next()``; they stop when the pass ends (unless
    ``persistent_workers``), when this iterator is dropped, or at ``_shutdown_workers()``.
    """

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._loader = loader
        self._batches = loader._multi_process(self._sampler_iter, self._base_seed)

    def _shutdown_workers(self) -> None:
        """Stop the workers now (persistent ones too); later ``next()`` calls raise
        StopIteration."""
        self._batches.close()  # type: ignore[attr-defined]
        pool = getattr(self._loader, "_pool", None)  # persistent workers idle between passes
        if pool is not None:
            self._loader._pool = None
            DataLoader._stop_workers(pool)
