"""``torch.nn.modules.utils``: the argument helpers custom layers import (``_pair`` for a
kernel size given as one int or a pair, ...) and ``consume_prefix_in_state_dict_if_present``."""

from __future__ import annotations

import collections.abc
from itertools import repeat
from typing import Any

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n: int, name: str = "parse") -> Any:
    """A parser: an iterable comes back as a tuple as it is; anything else repeated ``n`` times."""

    def parse(x: Any) -> tuple:
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: tuple, n: int) -> tuple:
    """Each element of ``t`` repeated ``n`` times, last element first: the (left, right, top,
    bottom) order ``F.pad`` wants from a per-dimension padding."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size: list, defaults: list) -> list:
    """``out_size`` with each ``None`` taken from the same position counted from the end of
    ``defaults`` (adaptive pooling's output size)."""
    if isinstance(out_size, (int, float)):
        return out_size  # type: ignore[return-value]
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict: dict, prefix: str) -> None:
    """Strip ``prefix`` from every key of ``state_dict`` (and of its ``_metadata``) that starts
    with it, in place: loads a DataParallel / DDP checkpoint ("module." keys) into a bare model."""
    keys = list(state_dict.keys())
    for key in keys:
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                metadata[key[len(prefix):]] = metadata.pop(key)
