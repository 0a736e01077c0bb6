"""The DataPipe base classes: ``IterDataPipe`` (an ``IterableDataset``) and ``MapDataPipe`` (a
``Dataset``), each with a table of functional forms: ``dp.batch(4)`` is ``Batcher(dp, 4)``.
A class registers its form with ``@functional_datapipe("name")`` (``_decorator.py``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..dataset import Dataset, IterableDataset

__all__ = ["IterDataPipe", "MapDataPipe", "DataChunk"]


class _FunctionalForms:
    """What ``IterDataPipe`` and ``MapDataPipe`` share: ``functions``, a name -> callable table
    (per base class), looked up by ``__getattr__`` when normal lookup fails."""

    functions: dict[str, Callable] = {}

    def __getattr__(self, name: str) -> Any:
        fns = type(self).functions
        if name in fns and not name.startswith("__"):
            return functools.partial(fns[name], self)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    @classmethod
    def register_function(cls, function_name: str, function: Callable) -> None:
        """``dp.<function_name>(...)`` calls ``function(dp, ...)``."""
        cls.functions[function_name] = function

    @classmethod
    def register_datapipe_as_function(cls, function_name: str, cls_to_register: type,
                                      enable_df_api_tracing: bool = False) -> None:
        """``dp.<function_name>(...)`` builds ``cls_to_register(dp, ...)``."""
        if function_name in cls.functions:
            raise Exception(f"Unable to add DataPipe function name {function_name} as it is "
                            "already taken")
        cls.functions[function_name] = _Construct(cls_to_register)

    def __repr__(self) -> str:
        return type(self).__qualname__

    def __str__(self) -> str:
        return type(self).__qualname__

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(type(self).functions))

    def reset(self) -> None:
        """Called before a new iteration starts (subclasses clear their state here)."""


class _Construct:
    """A registered DataPipe class as a picklable function of the source pipe."""

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def __call__(self, source: Any, *args: Any, **kwargs: Any) -> Any:
        return self.cls(source, *args, **kwargs)


class IterDataPipe(_FunctionalForms, IterableDataset):
    """An iterable-style DataPipe: define ``__iter__`` (and ``__len__`` when known). Its functional
    forms (``map``, ``filter``, ``batch``, ``shuffle``...) chain pipes: ``dp.map(f).batch(2)``."""

    functions: dict[str, Callable] = {}


class MapDataPipe(_FunctionalForms, Dataset):
    """A map-style DataPipe: define ``__getitem__`` and ``__len__``; functional forms ``map``,
    ``batch``, ``shuffle``, ``concat``, ``zip``."""

    functions: dict[str, Callable] = {}


class DataChunk(list):
    """A batch from ``Batcher``: a list (``raw_iterator()`` walks it)."""

    def __init__(self, items: Any) -> None:
        super().__init__(items)
        self.items = items

    def as_str(self, indent: str = "") -> str:
        return indent + "[" + ", ".join(str(i) for i in iter(self)) + "]"

    def raw_iterator(self) -> Any:
        yield from self.items
