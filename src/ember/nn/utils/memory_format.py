"""``nn.utils.convert_conv{2,3}d_weight_memory_format``: convolution weights in a memory format.

ember stores tensors densely in one (row-major) layout, so the conversion keeps the values and
layout; the functions exist so scripts that call them run unchanged.
"""

from __future__ import annotations

from typing import Any

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module: Any, memory_format: Any, kinds: tuple) -> Any:
    if isinstance(module, kinds):
        w = module.weight.detach().contiguous(memory_format=memory_format)
        module.weight.data = w
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module: Any, memory_format: Any) -> Any:
    """Apply ``memory_format`` to every Conv2d / ConvTranspose2d weight in ``module``."""
    from ..modules.conv import Conv2d, ConvTranspose2d

    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module: Any, memory_format: Any) -> Any:
    """Apply ``memory_format`` to every Conv3d / ConvTranspose3d weight in ``module``."""
    from ..modules.conv import Conv3d, ConvTranspose3d

    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
