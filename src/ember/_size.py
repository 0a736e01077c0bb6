"""``ember.Size``: the shape of a tensor, a tuple of ints (``torch.Size``)."""

from __future__ import annotations

from typing import Any


class Size(tuple):
    """A tuple of dimension sizes; prints as ``torch.Size([2, 3])``."""

    __slots__ = ()

    def __new__(cls, sizes: Any = ()) -> Size:
        return tuple.__new__(cls, (int(s) for s in sizes))

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    __str__ = __repr__

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key: Any) -> Any:
        r = tuple.__getitem__(self, key)
        return Size(r) if isinstance(key, slice) else r

    def __add__(self, other: Any) -> Size:
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other: Any) -> Size:
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n: Any) -> Size:
        return Size(tuple(self) * n)

    __rmul__ = __mul__

    def __reduce__(self) -> tuple:
        return (Size, (tuple(self),))
