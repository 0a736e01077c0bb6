"""v2's functional forms (``import ember.vision.transforms.v2.functional as F``): v1's, under v2's
names too (``horizontal_flip``, ``get_size``...), plus ``to_image`` and ``to_dtype``."""

from __future__ import annotations

from typing import Any

import numpy as np

import ember

from .. import _kernels as K
from ..functional import (
    InterpolationMode,
    _check_tensor,
    _is_pil,
    _resize,
    _size_list,
    adjust_brightness,
    adjust_contrast,
    adjust_hue,
    adjust_saturation,
    center_crop,
    convert_image_dtype,
    crop,
    erase,
    get_dimensions,
    get_image_num_channels,
    get_image_size,
    hflip,
    interpolation_mode,
    normalize,
    pad,
    pil_to_tensor,
    rgb_to_grayscale,
    rotate,
    to_pil_image,
    to_tensor,
    vflip,
)
from ..functional import InterpolationMode as _Mode

__all__ = ["InterpolationMode", "adjust_brightness", "adjust_contrast", "adjust_hue", "adjust_saturation",
           "center_crop", "convert_image_dtype", "crop", "erase", "get_dimensions", "get_image_num_channels",
           "get_image_size", "get_num_channels", "get_size", "hflip", "horizontal_flip", "normalize", "pad",
           "pil_to_tensor", "resize", "resized_crop", "rgb_to_grayscale", "rotate", "to_dtype", "to_grayscale",
           "to_image", "to_pil_image", "to_tensor", "vertical_flip", "vflip"]

horizontal_flip = hflip
vertical_flip = vflip


def to_grayscale(inpt: Any, num_output_channels: int = 1) -> Any:
    """v2's to_grayscale takes tensors too: the same as rgb_to_grayscale."""
    return rgb_to_grayscale(inpt, num_output_channels)


def get_size(inpt: Any) -> list[int]:
    """[height, width] (v2's order; v1's get_image_size gives [width, height])."""
    return get_dimensions(inpt)[1:]


def get_num_channels(inpt: Any) -> int:
    """The number of channels."""
    return get_dimensions(inpt)[0]


def to_image(inpt: Any) -> ember.Tensor:
    """PIL image, (H, W[, C]) ndarray or tensor -> (C, H, W) tensor, dtype unchanged."""
    if isinstance(inpt, np.ndarray):
        a = np.atleast_3d(inpt).transpose(2, 0, 1)
        return ember.from_numpy(np.ascontiguousarray(a))
    if _is_pil(inpt):
        return pil_to_tensor(inpt)
    if isinstance(inpt, ember.Tensor):
        return inpt.unsqueeze(0) if inpt.ndim == 2 else inpt  # an image has a channel axis
    raise TypeError(f"to_image expects a tensor, an ndarray or a PIL image, got {type(inpt).__name__}")


def to_dtype(inpt: ember.Tensor, dtype: ember.dtype = ember.float32, scale: bool = False) -> ember.Tensor:
    """Cast a tensor image to ``dtype``; ``scale=True`` rescales values as convert_image_dtype does."""
    _check_tensor(inpt, "to_dtype")
    if inpt.dtype == dtype:
        return inpt
    if not scale:
        return inpt.to(dtype)
    if not inpt.is_floating_point() and dtype.is_floating_point:
        # v2 multiplies by the reciprocal where v1 divides: the last bit can differ, so follow v2
        return inpt.to(dtype) * (1.0 / K.max_value(inpt.dtype.np))
    return convert_image_dtype(inpt, dtype)


def resize(inpt: Any, size: Any, interpolation: _Mode | int = _Mode.BILINEAR, max_size: int | None = None,
           antialias: bool | None = True) -> Any:
    """v1's resize, with v2's uint8 arithmetic (rounded after each pass) and ``size=None``."""
    sizes = _size_list(size, "size")
    if sizes is not None and max_size is not None and len(sizes) != 1:
        raise ValueError("max_size should only be passed if size is None or specifies the length of the smaller edge")
    return _resize(inpt, sizes, interpolation_mode(interpolation), max_size, antialias, uint8_passes=True)


def resized_crop(inpt: Any, top: int, left: int, height: int, width: int, size: Any,
                 interpolation: _Mode | int = _Mode.BILINEAR, antialias: bool | None = True) -> Any:
    """crop, then v2's resize."""
    return resize(crop(inpt, top, left, height, width), size, interpolation, antialias=antialias)
