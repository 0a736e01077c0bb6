"""``torch.utils.data.datapipes.map``: PyTorch's core map-style DataPipes and their functional
forms (``SequenceWrapper``; ``map``, ``batch``, ``shuffle``, ``concat``, ``zip``)."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator
from typing import Any

from ._decorator import functional_datapipe
from .datapipe import DataChunk, IterDataPipe, MapDataPipe

__all__ = ["SequenceWrapper", "Mapper", "Batcher", "Shuffler", "Concater", "Zipper"]


class SequenceWrapperMapDataPipe(MapDataPipe):
    """Wraps a sequence or mapping (deep-copied once unless ``deepcopy=False``)."""

    def __init__(self, sequence: Any, deepcopy: bool = True) -> None:
        if deepcopy:
            try:
                sequence = copy.deepcopy(sequence)
            except TypeError:
                pass
        self.sequence = sequence

    def __getitem__(self, index: Any) -> Any:
        return self.sequence[index]

    def __len__(self) -> int:
        return len(self.sequence)


def _identity(x: Any) -> Any:
    return x


@functional_datapipe("map")
class MapperMapDataPipe(MapDataPipe):
    """``fn`` applied to each item on access."""

    def __init__(self, datapipe: MapDataPipe, fn: Callable = _identity) -> None:
        self.datapipe, self.fn = datapipe, fn

    def __getitem__(self, index: Any) -> Any:
        return self.fn(self.datapipe[index])

    def __len__(self) -> int:
        return len(self.datapipe)


@functional_datapipe("batch")
class BatcherMapDataPipe(MapDataPipe):
    """Item ``i`` is the ``i``-th batch of ``batch_size`` items (a ``DataChunk``)."""

    def __init__(self, datapipe: MapDataPipe, batch_size: int, drop_last: bool = False,
                 wrapper_class: type = DataChunk) -> None:
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        self.datapipe, self.batch_size, self.drop_last = datapipe, batch_size, drop_last
        self.wrapper_class = wrapper_class

    def __getitem__(self, index: int) -> Any:
        n = len(self.datapipe)
        lo = index * self.batch_size
        hi = min(lo + self.batch_size, n)
        if index < 0 or lo >= n or (self.drop_last and hi - lo < self.batch_size):
            raise IndexError(f"Index {index} is out of bound.")
        return self.wrapper_class([self.datapipe[i] for i in range(lo, hi)])

    def __len__(self) -> int:
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class ShufflerIterDataPipe(IterDataPipe):
    """The items of a MapDataPipe in a random order (an IterDataPipe, as PyTorch's)."""

    def __init__(self, datapipe: MapDataPipe, *, indices: list | None = None) -> None:
        self.datapipe = datapipe
        self.indices = list(range(len(datapipe))) if indices is None else indices
        self._enabled, self._seed, self._rng = True, None, random.Random()

    def set_shuffle(self, shuffle: bool = True) -> ShufflerIterDataPipe:
        self._enabled = shuffle
        return self

    def set_seed(self, seed: int) -> ShufflerIterDataPipe:
        self._seed = seed
        return self

    def __iter__(self) -> Iterator:
        order = list(self.indices)
        if self._enabled:
            if self._seed is not None:
                self._rng.seed(self._seed)
            self._rng.shuffle(order)
        for i in order:
            yield self.datapipe[i]

    def __len__(self) -> int:
        return len(self.indices)


@functional_datapipe("concat")
class ConcaterMapDataPipe(MapDataPipe):
    """The pipes' items one after another."""

    def __init__(self, *datapipes: MapDataPipe) -> None:
        if not datapipes:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, MapDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `MapDataPipe`")
        self.datapipes = datapipes

    def __getitem__(self, index: int) -> Any:
        offset = index
        for dp in self.datapipes:
            if offset < len(dp):
                return dp[offset]
            offset -= len(dp)
        raise IndexError(f"Index {index} is out of range.")

    def __len__(self) -> int:
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("zip")
class ZipperMapDataPipe(MapDataPipe):
    """Item ``i`` is the tuple of item ``i`` of each pipe (length: the shortest)."""

    def __init__(self, *datapipes: MapDataPipe) -> None:
        if not datapipes:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, MapDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `MapDataPipe`")
        self.datapipes = datapipes

    def __getitem__(self, index: int) -> tuple:
        if not 0 <= index < len(self):
            raise IndexError(f"Index {index} is out of range.")
        return tuple(dp[index] for dp in self.datapipes)

    def __len__(self) -> int:
        return min(len(dp) for dp in self.datapipes)


# an IterDataPipe made from a MapDataPipe: its form is on MapDataPipe
MapDataPipe.register_datapipe_as_function("shuffle", ShufflerIterDataPipe)

SequenceWrapper = SequenceWrapperMapDataPipe
Mapper = MapperMapDataPipe
Batcher = BatcherMapDataPipe
Shuffler = ShufflerIterDataPipe
Concater = ConcaterMapDataPipe
Zipper = ZipperMapDataPipe
