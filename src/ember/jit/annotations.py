"""``torch.jit.annotations``: the type names TorchScript code imports from here.

``Any``, ``Dict``, ``List``, ``Optional``, ``Tuple``, ``Union`` are ``typing``'s own.
``BroadcastingList1/2/3[T]`` ("a T or a list of 1/2/3 of them", as in
``output_size: BroadcastingList2[int]``) evaluate to None, as PyTorch's do in eager Python: the
annotation only means something to the TorchScript compiler, which ember does not have.
``is_tuple`` / ``is_list`` / ``is_dict`` / ``is_optional`` / ``is_union`` inspect annotations.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Dict, List, Optional, Tuple, Union  # noqa: UP035 - PyTorch's names

from ..futures import Future

__all__ = ["Any", "Dict", "List", "Optional", "Tuple", "Union", "BroadcastingList1",
           "BroadcastingList2", "BroadcastingList3", "Future", "is_tuple", "is_list", "is_dict",
           "is_optional", "is_union"]


class BroadcastingListCls:
    """``BroadcastingListN[T]``: None in eager Python (an annotation for TorchScript only)."""

    def __getitem__(self, types: Any) -> None:
        return None


BroadcastingList1 = BroadcastingListCls()
BroadcastingList2 = BroadcastingListCls()
BroadcastingList3 = BroadcastingListCls()


def _bare(ann: Any, alias: Any, name: str) -> None:
    if ann is alias:
        raise RuntimeError(f"Attempted to use {name} without a contained type. Please add a "
                           f"contained type, e.g. {name}[int]")


def is_tuple(ann: Any) -> bool:
    """``Tuple[...]`` or ``tuple[...]``; a bare ``typing.Tuple`` is an error."""
    _bare(ann, Tuple, "Tuple")  # noqa: UP006
    return typing.get_origin(ann) is tuple


def is_list(ann: Any) -> bool:
    """``List[...]`` or ``list[...]``; a bare ``typing.List`` is an error."""
    _bare(ann, List, "List")  # noqa: UP006
    return typing.get_origin(ann) is list


def is_dict(ann: Any) -> bool:
    """``Dict[K, V]`` or ``dict[K, V]``; a bare ``typing.Dict`` is an error."""
    if ann is Dict:  # noqa: UP006
        raise RuntimeError("Attempted to use Dict without contained types. Please add contained "
                           "type, e.g. Dict[int, int]")
    return typing.get_origin(ann) is dict


def is_union(ann: Any) -> bool:
    """``Union[...]``, ``Optional[...]`` or ``A | B``."""
    return typing.get_origin(ann) in (Union, types.UnionType)


def is_optional(ann: Any) -> bool:
    """A union that includes None (``Optional[int]``, ``int | None``)."""
    return is_union(ann) and type(None) in typing.get_args(ann)
