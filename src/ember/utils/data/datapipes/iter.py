"""``torch.utils.data.datapipes.iter``: PyTorch's core iterable DataPipes and their functional
forms (``IterableWrapper``; ``map``, ``filter``, ``batch``, ``unbatch``, ``collate``,
``shuffle``, ``sharding_filter``, ``concat``, ``zip``)."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .._collate import default_collate
from ._decorator import functional_datapipe
from .datapipe import DataChunk, IterDataPipe

__all__ = ["IterableWrapper", "Mapper", "Filter", "Batcher", "UnBatcher", "Collator", "Shuffler",
           "ShardingFilter", "Concater", "Zipper"]


def _apply_cols(fn: Callable, data: Any, input_col: Any, output_col: Any) -> Any:
    """``fn`` on the whole sample, or on its ``input_col`` (an index, key or a list of them),
    the result replacing that column or written to ``output_col`` (``-1``: appended)."""
    if input_col is None:
        return fn(data)
    many = isinstance(input_col, (list, tuple))
    res = fn(*(data[c] for c in input_col)) if many else fn(data[input_col])
    was_tuple = isinstance(data, tuple)
    data = list(data) if was_tuple else copy.copy(data)
    if output_col is None:
        if many:
            for c in sorted(input_col, reverse=True)[:-1]:
                del data[c]
            data[min(input_col)] = res
        else:
            data[input_col] = res
    elif output_col == -1 and isinstance(data, list):
        data.append(res)
    else:
        data[output_col] = res
    return tuple(data) if was_tuple else data


class IterableWrapperIterDataPipe(IterDataPipe):
    """Wraps an iterable (deep-copied at each iteration unless ``deepcopy=False``)."""

    def __init__(self, iterable: Iterable, deepcopy: bool = True) -> None:
        self.iterable, self.deepcopy = iterable, deepcopy

    def __iter__(self) -> Iterator:
        source = self.iterable
        if self.deepcopy:
            try:
                source = copy.deepcopy(self.iterable)
            except TypeError:  # not deep-copyable: iterate the original, as PyTorch
                pass
        yield from source

    def __len__(self) -> int:
        return len(self.iterable)


@functional_datapipe("map")
class MapperIterDataPipe(IterDataPipe):
    """``fn`` on each sample (or on ``input_col``, written to ``output_col``)."""

    def __init__(self, datapipe: IterDataPipe, fn: Callable, input_col: Any = None,
                 output_col: Any = None) -> None:
        if input_col is None and output_col is not None:
            raise ValueError("`output_col` must be None when `input_col` is None.")
        if isinstance(output_col, (list, tuple)):
            if len(output_col) > 1:
                raise ValueError("`output_col` must be a single-element list or tuple")
            output_col = output_col[0]
        self.datapipe, self.fn, self.input_col, self.output_col = datapipe, fn, input_col, \
            output_col

    def __iter__(self) -> Iterator:
        for d in self.datapipe:
            yield _apply_cols(self.fn, d, self.input_col, self.output_col)

    def __len__(self) -> int:
        if hasattr(self.datapipe, "__len__"):
            return len(self.datapipe)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


@functional_datapipe("filter")
class FilterIterDataPipe(IterDataPipe):
    """The samples for which ``filter_fn`` (of the sample, or of ``input_col``) is true."""

    def __init__(self, datapipe: IterDataPipe, filter_fn: Callable, input_col: Any = None) -> None:
        self.datapipe, self.filter_fn, self.input_col = datapipe, filter_fn, input_col

    def __iter__(self) -> Iterator:
        for d in self.datapipe:
            if self.input_col is None:
                keep = self.filter_fn(d)
            elif isinstance(self.input_col, (list, tuple)):
                keep = self.filter_fn(*(d[c] for c in self.input_col))
            else:
                keep = self.filter_fn(d[self.input_col])
            if not isinstance(keep, bool):
                raise ValueError(f"Boolean output is required for `filter_fn` of FilterIterDataPipe,"
                                 f" got {type(keep)}.")
            if keep:
                yield d


@functional_datapipe("batch")
class BatcherIterDataPipe(IterDataPipe):
    """Lists (``DataChunk``) of ``batch_size`` samples; the last is shorter unless
    ``drop_last``."""

    def __init__(self, datapipe: IterDataPipe, batch_size: int, drop_last: bool = False,
                 wrapper_class: type = DataChunk) -> None:
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        self.datapipe, self.batch_size, self.drop_last = datapipe, batch_size, drop_last
        self.wrapper_class = wrapper_class

    def __iter__(self) -> Iterator:
        batch: list = []
        for x in self.datapipe:
            batch.append(x)
            if len(batch) == self.batch_size:
                yield self.wrapper_class(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.wrapper_class(batch)

    def __len__(self) -> int:
        if not hasattr(self.datapipe, "__len__"):
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


@functional_datapipe("unbatch")
class UnBatcherIterDataPipe(IterDataPipe):
    """The samples inside the batches, ``unbatch_level`` levels down (-1: all the way)."""

    def __init__(self, datapipe: IterDataPipe, unbatch_level: int = 1) -> None:
        self.datapipe, self.unbatch_level = datapipe, unbatch_level

    def __iter__(self) -> Iterator:
        for element in self.datapipe:
            yield from self._dive(element, self.unbatch_level)

    def _dive(self, element: Any, level: int) -> Iterator:
        if level < -1:
            raise ValueError("unbatch_level must be -1 or >= 0")
        if level == -1:
            if isinstance(element, list):
                for item in element:
                    yield from self._dive(item, -1)
            else:
                yield element
        elif level == 0:
            yield element
        elif isinstance(element, list):
            for item in element:
                yield from self._dive(item, level - 1)
        else:
            raise IndexError(f"unbatch_level {self.unbatch_level} exceeds the depth of the "
                             "DataPipe")


@functional_datapipe("collate")
class CollatorIterDataPipe(MapperIterDataPipe):
    """Each batch collated (``default_collate`` unless ``collate_fn``/``conversion``)."""

    def __init__(self, datapipe: IterDataPipe, conversion: Any = default_collate,
                 collate_fn: Callable | None = None) -> None:
        fn = collate_fn if collate_fn is not None else conversion
        if not callable(fn):
            raise NotImplementedError("a dict of conversions is not supported in ember; pass "
                                      "collate_fn=")
        super().__init__(datapipe, fn=fn)


@functional_datapipe("shuffle")
class ShufflerIterDataPipe(IterDataPipe):
    """Samples shuffled through a buffer of ``buffer_size`` (``set_shuffle(False)`` turns it
    off; ``set_seed`` fixes the order)."""

    def __init__(self, datapipe: IterDataPipe, *, buffer_size: int = 10000,
                 unbatch_level: int = 0) -> None:
        if buffer_size <= 0:
            raise AssertionError("buffer_size should be larger than 0")
        self.datapipe = datapipe if unbatch_level == 0 else datapipe.unbatch(unbatch_level)
        self.buffer_size, self._enabled, self._seed = buffer_size, True, None
        self._rng = random.Random()

    def set_shuffle(self, shuffle: bool = True) -> ShufflerIterDataPipe:
        self._enabled = shuffle
        return self

    def set_seed(self, seed: int) -> ShufflerIterDataPipe:
        self._seed = seed
        return self

    def __iter__(self) -> Iterator:
        if not self._enabled:
            yield from self.datapipe
            return
        if self._seed is not None:
            self._rng.seed(self._seed)
        buf: list = []
        for x in self.datapipe:
            if len(buf) == self.buffer_size:
                i = self._rng.randint(0, len(buf) - 1)
                buf[i], x = x, buf[i]
                yield x
            else:
                buf.append(x)
        while buf:
            i = self._rng.randint(0, len(buf) - 1)
            buf[i], buf[-1] = buf[-1], buf[i]
            yield buf.pop()

    def __len__(self) -> int:
        if hasattr(self.datapipe, "__len__"):
            return len(self.datapipe)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


@functional_datapipe("sharding_filter")
class ShardingFilterIterDataPipe(IterDataPipe):
    """Every ``num_of_instances``-th sample from ``instance_id`` (``apply_sharding``; all of
    them until it is called)."""

    def __init__(self, source_datapipe: IterDataPipe, sharding_group_filter: Any = None) -> None:
        self.source_datapipe, self.sharding_group_filter = source_datapipe, sharding_group_filter
        self.num_of_instances, self.instance_id = 1, 0

    def apply_sharding(self, num_of_instances: int, instance_id: int,
                       sharding_group: Any = None) -> None:
        self.num_of_instances, self.instance_id = num_of_instances, instance_id

    def __iter__(self) -> Iterator:
        for i, x in enumerate(self.source_datapipe):
            if i % self.num_of_instances == self.instance_id:
                yield x

    def __len__(self) -> int:
        n = len(self.source_datapipe)
        return n // self.num_of_instances + (1 if self.instance_id < n % self.num_of_instances
                                             else 0)


@functional_datapipe("concat")
class ConcaterIterDataPipe(IterDataPipe):
    """The pipes one after another."""

    def __init__(self, *datapipes: IterDataPipe) -> None:
        if not datapipes:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `IterDataPipe`")
        self.datapipes = datapipes

    def __iter__(self) -> Iterator:
        for dp in self.datapipes:
            yield from dp

    def __len__(self) -> int:
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("zip")
class ZipperIterDataPipe(IterDataPipe):
    """Tuples of one sample from each pipe, until the shortest ends."""

    def __init__(self, *datapipes: IterDataPipe) -> None:
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("All inputs are required to be `IterDataPipe` for `ZipIterDataPipe`.")
        self.datapipes = datapipes

    def __iter__(self) -> Iterator:
        yield from zip(*self.datapipes)

    def __len__(self) -> int:
        return min(len(dp) for dp in self.datapipes)


IterableWrapper = IterableWrapperIterDataPipe
Mapper = MapperIterDataPipe
Filter = FilterIterDataPipe
Batcher = BatcherIterDataPipe
UnBatcher = UnBatcherIterDataPipe
Collator = CollatorIterDataPipe
Shuffler = ShufflerIterDataPipe
ShardingFilter = ShardingFilterIterDataPipe
Concater = ConcaterIterDataPipe
Zipper = ZipperIterDataPipe
