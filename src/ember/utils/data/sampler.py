"""Samplers: which indices, in which order; ``BatchSampler`` groups them into batches.

The draws are PyTorch's: after ``manual_seed`` a sampler yields PyTorch's indices. A
``RandomSampler`` without a generator seeds a new ``Generator`` each epoch from a 64-bit
``random_()`` of the default one, then draws ``randperm(n)`` (or ``randint`` 32 at a time with
replacement); ``SubsetRandomSampler`` is a ``randperm``, ``WeightedRandomSampler`` a
``multinomial``.

Every sampler here is lazy: its memory does not grow with ``num_samples``. A permutation of
``n`` items is PyTorch's ``randperm`` for ``n`` up to ``_EAGER_PERM_MAX`` and beyond that
(where ember's departs from PyTorch's) a keyed bijection of ``range(n)`` computed a chunk at a
time, so even ``RandomSampler(range(10**10))`` starts at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = [
    "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
    "WeightedRandomSampler", "BatchSampler",
]

_DRAW_CHUNK = 32  # indices drawn per call with replacement (PyTorch's RandomSampler draws 32)
_WEIGHTED_CHUNK = 1 << 14  # weighted draws with replacement per multinomial call
_PERM_CHUNK = 1024  # permutation entries turned into Python ints at a time
_EAGER_PERM_MAX = 1 << 22  # above this, permutations are computed lazily (32 MiB of int64)


def _seed_from(generator: Any) -> int:
    """``int(torch.empty((), dtype=torch.int64).random_(generator=generator))``: a 64-bit draw
    modulo 2**63, how PyTorch seeds a sampler's epoch and a DataLoader's workers."""
    from ...ops import random as _random

    return _random.int64_draw(generator)


def _epoch_generator(generator: Any) -> Any:
    """The generator itself; without one, a new ``Generator`` seeded from the default one (as
    PyTorch's ``RandomSampler`` does), so ``manual_seed`` makes the epochs reproducible."""
    from ...ops import random as _random

    if generator is not None:
        return generator
    return _random.Generator().manual_seed(_seed_from(None))


def _mix(x: np.ndarray) -> np.ndarray:
    """A 64-bit avalanche mix (splitmix64's finaliser) on a uint64 array; wraps modulo 2**64."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


class _LazyPermutation:
    """A pseudo-random bijection of ``range(n)`` in O(1) memory: a 4-round Feistel network over
    the smallest even-bit-width domain holding ``n``, cycle-walking values that land past ``n``."""

    def __init__(self, n: int, generator: Any) -> None:
        from ...ops import random as _random

        bits = max(2, (n - 1).bit_length())
        self.half = np.uint64((bits + 1) // 2)
        self.mask = np.uint64((1 << int(self.half)) - 1)
        self.n = np.uint64(n)
        keys = _random.randint(0, 2**62, (4,), generator=generator)
        self.keys = [np.uint64(k) for k in keys.tolist()]

    def _round_trip(self, x: np.ndarray) -> np.ndarray:
        left, right = x >> self.half, x & self.mask
        for k in self.keys:
            left, right = right, left ^ (_mix(right ^ k) & self.mask)
        return (left << self.half) | right

    def __call__(self, positions: np.ndarray) -> np.ndarray:
        out = self._round_trip(positions.astype(np.uint64))
        bad = out >= self.n
        while bad.any():  # the domain is < 4n, so a few walks at most on average
            out[bad] = self._round_trip(out[bad])
            bad = out >= self.n
        return out.astype(np.int64)


def _permutation_chunks(n: int, generator: Any) -> Iterator[list[int]]:
    """A random permutation of ``range(n)`` (``randperm(n, generator=generator)``) as successive
    lists of at most ``_PERM_CHUNK``."""
    from ...ops import random as _random

    if n <= _EAGER_PERM_MAX:
        perm = _random.randperm(n, generator=generator).numpy()
        for start in range(0, n, _PERM_CHUNK):
            yield perm[start : start + _PERM_CHUNK].tolist()
        return
    lazy = _LazyPermutation(n, generator)
    for start in range(0, n, _PERM_CHUNK):
        yield lazy(np.arange(start, min(start + _PERM_CHUNK, n), dtype=np.uint64)).tolist()


def _permutation(n: int, generator: Any) -> Iterator[int]:
    for chunk in _permutation_chunks(n, generator):
        yield from chunk


_T_co = TypeVar("_T_co", covariant=True)


class Sampler(Generic[_T_co]):
    """Base class: ``__iter__`` yields indices (or lists of indices for batch samplers)."""

    def __init__(self, data_source: Any = None) -> None:
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """A random permutation each epoch, or ``num_samples`` draws with ``replacement``.

    Args:
        data_source: anything with ``len``.
        replacement: draw with replacement (``num_samples`` independent uniform draws).
        num_samples: how many indices per epoch (default ``len(data_source)``); without
            replacement, more than ``len`` repeats whole permutations.
        generator: an ``ember.Generator`` to draw from.
    """

    def __init__(self, data_source: Any, replacement: bool = False, num_samples: int | None = None,
                 generator: Any = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        from ...ops import random as _random

        n = len(self.data_source)
        g = _epoch_generator(self.generator)
        total = self.num_samples
        if self.replacement:
            for _ in range(total // _DRAW_CHUNK):
                yield from _random.randint(0, n, (_DRAW_CHUNK,), generator=g).tolist()
            yield from _random.randint(0, n, (total % _DRAW_CHUNK,), generator=g).tolist()
            return
        for _ in range(total // n):
            yield from _permutation(n, g)
        # PyTorch draws the last permutation whole (even for none of it), keeps total % n
        left = total % n
        for chunk in _permutation_chunks(n, g):
            if left <= 0:
                break
            yield from chunk[:left]
            left -= len(chunk)

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a random order each epoch (lazy even for ``range(10**10)``)."""

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _permutation(len(self.indices), self.generator):
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices drawn with probability proportional to ``weights``.

    PyTorch's ``multinomial(weights, num_samples, replacement)``; with replacement its draws come
    in chunks (memory independent of ``num_samples``); without, ``num_samples`` may not exceed
    ``len(weights)`` (PyTorch's error).
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:
        from ..._dtype import float64
        from ...ops.creation import as_tensor

        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = as_tensor(weights, dtype=float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        from ...ops import random as _random

        if not self.replacement:  # at most len(weights) draws: bounded by the weights' size
            draws = _random.multinomial(self.weights, self.num_samples, False,
                                        generator=self.generator)
            yield from draws.tolist()
            return
        # PyTorch's multinomial(weights, num_samples, True) in chunks: the same draws (one
        # float64 uniform per sample), except that a single sample takes multinomial's other
        # path, so the last chunk never holds one alone
        left = self.num_samples
        while left:
            k = left if left <= _WEIGHTED_CHUNK + 1 else _WEIGHTED_CHUNK
            yield from _random.multinomial(self.weights, k, True,
                                           generator=self.generator).tolist()
            left -= k

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Groups another sampler's indices into lists of ``batch_size``."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        it = iter(self.sampler)
        while True:
            batch = list(islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size


def __getattr__(name: str) -> object:
    if name == "DistributedSampler":  # kept importable from here (it lives in .distributed)
        from .distributed import DistributedSampler

        return DistributedSampler
    from ..._missing import attribute_error

    raise attribute_error("torch.utils.data.sampler", name)
