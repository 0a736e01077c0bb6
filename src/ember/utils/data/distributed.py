"""``DistributedSampler``: each of ``num_replicas`` processes iterates its own share of a dataset.

The partition is PyTorch's: shuffle with a generator seeded ``seed + epoch`` (the same order in
every process), pad by repeating from the start so every rank gets ``ceil(n / num_replicas)``
indices (or drop the tail with ``drop_last``), then rank ``r`` takes positions ``r``,
``r + num_replicas``, ... Without a process group (ember has none yet) pass ``num_replicas`` and
``rank`` yourself.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, TypeVar

import numpy as np

from .sampler import Sampler

__all__ = ["DistributedSampler"]

_CHUNK = 1024


def _permutation(n: int, seed: int) -> np.ndarray:
    """``randperm(n)`` from an ``ember.Generator`` seeded with ``seed``."""
    from ...ops import random as _random

    g = _random.Generator().manual_seed(seed)
    return _random.randperm(n, generator=g).numpy()


_T_co = TypeVar("_T_co", covariant=True)


class DistributedSampler(Sampler[_T_co]):
    """Each of ``num_replicas`` processes sees its own 1/num_replicas of the data.

    Args:
        dataset: anything with ``len``.
        num_replicas: number of processes (default: the process group's world size).
        rank: this process's rank in ``[0, num_replicas)`` (default: the process group's rank).
        shuffle: a new order each epoch (call ``set_epoch(e)``), the same in every process.
        seed: base seed of the shuffle; every process must use the same.
        drop_last: drop the tail so the data splits evenly instead of padding with repeats.
    """

    def __init__(self, dataset: Any, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        from ... import distributed as dist

        hint = ("DistributedSampler reads num_replicas and rank from it; pass num_replicas= and "
                "rank= to use it without one")
        if num_replicas is None:
            if not dist.is_initialized():
                raise dist._no_group(hint)
            num_replicas = dist.get_world_size()
        if rank is None:
            if not dist.is_initialized():
                raise dist._no_group(hint)
            rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        order = _permutation(n, self.seed + self.epoch) if self.shuffle else None
        # Position p of the padded (or truncated) order is order[p % n]; this rank takes
        # p = rank, rank + num_replicas, ... < total_size. Computed a chunk at a time.
        for start in range(0, self.num_samples, _CHUNK):
            j = np.arange(start, min(start + _CHUNK, self.num_samples), dtype=np.int64)
            pos = (self.rank + j * self.num_replicas) % n
            yield from (order[pos] if order is not None else pos).tolist()

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch (reshuffles when ``shuffle``): call it at the start of every epoch."""
        self.epoch = epoch
