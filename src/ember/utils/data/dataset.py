"""Datasets: "what is sample i" (map-style) or "the next sample" (iterable)."""

from __future__ import annotations

import bisect
import math
import typing
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
    "ChainDataset", "Subset", "random_split",
]

# Datasets are generic in their sample type, as PyTorch's (``Dataset[tuple[Tensor, Tensor]]``)
_T_co = TypeVar("_T_co", covariant=True)
_T_stack = TypeVar("_T_stack", tuple[Any, ...], dict[str, Any])


class Dataset(Generic[_T_co]):
    """A map-style dataset: subclass it and define ``__getitem__`` (and ``__len__``)."""

    def __getitem__(self, index: Any) -> Any:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[_T_co], typing.Iterable[_T_co]):  # MRO as PyTorch's
    """A dataset you iterate over (streams); define ``__iter__``. With workers, each worker runs
    its own copy: split the work with ``get_worker_info()``."""

    def __iter__(self) -> Iterator:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


class SizeMismatchError(ValueError, AssertionError):
    """TensorDataset's tensors differ in their first dimension. PyTorch raises AssertionError;
    ember raised ValueError: the class is both, so either ``except`` catches it."""


class TensorDataset(Dataset[tuple[Any, ...]]):
    """Samples are ``tuple(t[i] for t in tensors)``; all tensors share their first dimension.

    DataLoader indexes a whole batch at once on this dataset (one array index per tensor), so
    iterating it costs no per-sample Python work.
    """

    def __init__(self, *tensors: Any) -> None:
        if tensors and any(tensors[0].shape[0] != t.shape[0] for t in tensors):
            sizes = ", ".join(str(tuple(t.shape)) for t in tensors)
            raise SizeMismatchError(
                f"Size mismatch between tensors: first dimensions differ ({sizes})")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def _batch(self, indices: Sequence[int]) -> tuple:
        """The collated batch for ``indices`` in one indexing op per tensor."""
        from ..._tensor import Tensor

        idx = np.asarray(indices, dtype=np.int64)
        return tuple(Tensor._make(t._data[idx]) for t in self.tensors)


class StackDataset(Dataset[_T_stack]):
    """Stacks datasets of equal length: samples are tuples (positional) or dicts (keywords)."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like input/output, but both types are given.")
        self._length = None
        datasets = args or tuple(kwargs.values())
        lengths = {len(d) for d in datasets}  # type: ignore[arg-type]
        if len(lengths) > 1:
            raise ValueError("Size mismatch between datasets")
        self._length = lengths.pop() if lengths else 0
        self.datasets: Any = args if args else kwargs

    def __getitem__(self, index: int) -> Any:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[_T_co]):
    """Datasets one after another."""

    def __init__(self, datasets: Sequence[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]).tolist())  # type: ignore[arg-type]

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> Any:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = 0 if which == 0 else self.cumulative_sizes[which - 1]
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another."""

    def __init__(self, datasets: Sequence[IterableDataset]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator:
        for d in self.datasets:
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)  # type: ignore[arg-type]


class Subset(Dataset[_T_co]):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset, lengths: Sequence[int | float], generator: Any = None) -> list[Subset]:
    """Split into non-overlapping random subsets of the given lengths (or fractions summing to 1)."""
    from ...ops import random as _random

    n = len(dataset)  # type: ignore[arg-type]
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = [int(math.floor(n * frac)) for frac in lengths]
        remainder = n - sum(counts)
        for i in range(remainder):  # round-robin the remainder, as PyTorch does
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.", stacklevel=2)
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = _random.randperm(n, generator=generator).tolist()
    out = []
    offset = 0
    for length in lengths:
        out.append(Subset(dataset, perm[offset : offset + int(length)]))
        offset += int(length)
    return out
