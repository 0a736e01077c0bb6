"""Padding layers: ``ZeroPad``, ``ConstantPad``, ``ReflectionPad``, ``ReplicationPad`` and
``CircularPad`` in 1, 2 and 3 dims, each a thin module over ``F.pad``.

``padding`` is an int (the same on every side) or a tuple ``(left, right[, top, bottom[, front,
back]])`` starting from the last dim, as in ``F.pad``.
"""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from ...ops.nn.vision import pad as _pad
from .module import Module

__all__ = [
    "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
    "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
]


def _sides(padding: Any, nd: int) -> tuple[int, ...]:
    if isinstance(padding, int):
        return (padding,) * (2 * nd)
    return tuple(int(p) for p in padding)


class _PadNd(Module):
    _mode = "constant"
    _nd = 1

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _sides(padding, self._nd)

    def forward(self, input: Tensor) -> Tensor:
        return _pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return _pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim of a (C, W) or (N, C, W) input with ``value``."""

    _nd = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims of a (C, H, W) or (N, C, H, W) input with ``value``."""

    _nd = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims of a (C, D, H, W) or (N, C, D, H, W) input with ``value``."""

    _nd = 3


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last two dims with zeros (``nn.ZeroPad2d((left, right, top, bottom))``)."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pad the last three dims with zeros."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pad the last dim with its reflection (the edge not repeated); padding < the dim's size."""

    _mode, _nd = "reflect", 1


class ReflectionPad2d(_PadNd):
    """Pad the last two dims by reflection (the edge not repeated)."""

    _mode, _nd = "reflect", 2


class ReflectionPad3d(_PadNd):
    """Pad the last three dims by reflection (the edge not repeated)."""

    _mode, _nd = "reflect", 3


class ReplicationPad1d(_PadNd):
    """Pad the last dim by repeating its edge values."""

    _mode, _nd = "replicate", 1


class ReplicationPad2d(_PadNd):
    """Pad the last two dims by repeating their edge values."""

    _mode, _nd = "replicate", 2


class ReplicationPad3d(_PadNd):
    """Pad the last three dims by repeating their edge values."""

    _mode, _nd = "replicate", 3


class CircularPad1d(_PadNd):
    """Pad the last dim by wrapping around (periodic boundary)."""

    _mode, _nd = "circular", 1


class CircularPad2d(_PadNd):
    """Pad the last two dims by wrapping around (periodic boundary)."""

    _mode, _nd = "circular", 2


class CircularPad3d(_PadNd):
    """Pad the last three dims by wrapping around (periodic boundary)."""

    _mode, _nd = "circular", 3
