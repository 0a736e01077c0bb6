"""Image utilities: ``make_grid``, ``save_image``, ``draw_bounding_boxes`` (torchvision.utils)."""

from __future__ import annotations

import math
import pathlib
import warnings
from typing import IO, Any

import numpy as np

import ember

from .transforms import _kernels as K

Color = str | tuple[int, int, int]


def _as_batch(tensor: Any) -> np.ndarray:
    """make_grid's input as an (N, C, H, W) array, one-channel images repeated to three."""
    if isinstance(tensor, list):
        if not all(isinstance(t, ember.Tensor) for t in tensor):
            bad = next(type(t).__name__ for t in tensor if not isinstance(t, ember.Tensor))
            raise TypeError(f"tensor or list of tensors expected, got a list containing {bad}")
        if not tensor:
            raise ValueError("make_grid got an empty list of images")
        shapes = {tuple(t.shape) for t in tensor}
        if len(shapes) > 1:
            raise ValueError(f"make_grid needs images of one shape, got {sorted(shapes)}: resize or pad them first")
        a = np.stack([K.to_numpy(t) for t in tensor])
    elif isinstance(tensor, ember.Tensor):
        a = K.to_numpy(tensor)
    else:
        raise TypeError(f"tensor or list of tensors expected, got {type(tensor).__name__}")
    if a.ndim == 2:
        a = a[None]
    if a.ndim == 3:
        a = np.concatenate([a] * 3) if a.shape[0] == 1 else a
        a = a[None]
    if a.ndim != 4:
        raise ValueError(f"make_grid expects (B, C, H, W), (C, H, W) or (H, W) images, got {a.ndim} dimensions")
    if a.shape[1] == 1:
        a = np.concatenate([a] * 3, axis=1)
    return a


def _normalize(a: np.ndarray, value_range: tuple[float, float] | None) -> np.ndarray:
    low, high = (float(a.min()), float(a.max())) if value_range is None else value_range
    t = a.dtype.type
    return (np.clip(a, t(low), t(high)) - t(low)) / t(max(high - low, 1e-5))


def make_grid(tensor: ember.Tensor | list[ember.Tensor], nrow: int = 8, padding: int = 2, normalize: bool = False,
              value_range: tuple[float, float] | None = None, scale_each: bool = False,
              pad_value: float = 0.0) -> ember.Tensor:
    """Tile a batch of images (B, C, H, W) into one image, ``nrow`` per row, ``padding`` pixels apart."""
    a = _as_batch(tensor)  # validates first: only then is there a tensor to take the device from
    like = tensor if isinstance(tensor, ember.Tensor) else tensor[0]
    if normalize:
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")
        if a.dtype.kind != "f":
            raise TypeError(f"normalize=True needs a floating image, got {a.dtype}: convert it first")
        a = np.stack([_normalize(x, value_range) for x in a]) if scale_each else _normalize(a, value_range)
    if a.shape[0] == 1:
        return K.from_numpy(a[0], like)
    n, c, h, w = a.shape
    xmaps = min(nrow, n)
    ymaps = int(math.ceil(n / xmaps))
    height, width = h + padding, w + padding
    grid = np.full((c, height * ymaps + padding, width * xmaps + padding), pad_value, dtype=a.dtype)
    for k in range(n):
        y, x = divmod(k, xmaps)
        grid[:, y * height + padding: (y + 1) * height, x * width + padding: (x + 1) * width] = a[k]
    return K.from_numpy(grid, like)


def save_image(tensor: ember.Tensor | list[ember.Tensor], fp: str | pathlib.Path | IO[bytes],
               format: str | None = None, **kwargs: Any) -> None:
    """Save an image or a grid of images (floats in [0, 1]) with Pillow; ``kwargs`` go to make_grid."""
    from PIL import Image

    grid = K.to_numpy(make_grid(tensor, **kwargs))
    if grid.dtype == np.uint8:  # already pixels; scaling by 255 would wrap
        pixels = grid
    else:
        pixels = np.clip(grid.astype(np.float32) * np.float32(255) + np.float32(0.5), 0, 255).astype(np.uint8)
    Image.fromarray(np.ascontiguousarray(pixels.transpose(1, 2, 0))).save(fp, format=format)


def _palette(n: int) -> list[tuple[int, int, int]]:
    """torchvision's automatic box colours: distinct, repeatable."""
    base = (2**25 - 1, 2**15 - 1, 2**21 - 1)
    return [tuple((i * p) % 255 for p in base) for i in range(n)]  # type: ignore[misc]


def _parse_colors(colors: Color | list[Color] | None, n: int) -> list[tuple[int, ...]]:
    from PIL import ImageColor

    if colors is None:
        return list(_palette(n))
    if isinstance(colors, list):
        if len(colors) < n:
            raise ValueError(f"Number of colors must be equal or larger than the number of objects, "
                             f"but got {len(colors)} < {n}.")
    elif not isinstance(colors, (tuple, str)):
        raise ValueError(f"colors must be a tuple or a string, or a list thereof, but got {colors!r}.")
    elif isinstance(colors, tuple) and len(colors) != 3:
        raise ValueError(f"If passed as tuple, colors should be an RGB triplet, but got {colors}.")
    else:
        colors = [colors] * n
    return [ImageColor.getrgb(c) if isinstance(c, str) else tuple(c) for c in colors]


def draw_bounding_boxes(image: ember.Tensor, boxes: ember.Tensor, labels: list[str] | None = None,
                        colors: Color | list[Color] | None = None, fill: bool | None = False, width: int = 1,
                        font: str | None = None, font_size: int | None = None,
                        label_colors: Color | list[Color] | None = None) -> ember.Tensor:
    """Draw (xmin, ymin, xmax, ymax) boxes, and their labels, on a (C, H, W) uint8 or float image."""
    from PIL import Image, ImageDraw, ImageFont

    if not isinstance(image, ember.Tensor):
        raise TypeError(f"image should be an ember tensor, got {type(image).__name__}")
    if not (image.dtype == ember.uint8 or image.is_floating_point()):
        raise ValueError(f"image should be uint8 or float, got {image.dtype}")
    if image.ndim != 3:
        raise ValueError(f"image should be (C, H, W), got shape {tuple(image.shape)}")
    if image.shape[0] not in (1, 3):
        raise ValueError(f"Only grayscale and RGB images are supported, got {image.shape[0]} channels")
    b = K.to_numpy(boxes) if isinstance(boxes, ember.Tensor) else np.asarray(boxes)
    if b.ndim != 2 or b.shape[-1] != 4:
        raise ValueError(f"boxes should be (N, 4) in (xmin, ymin, xmax, ymax) format, got shape {b.shape}")
    if ((b[:, 0] > b[:, 2]) | (b[:, 1] > b[:, 3])).any():
        raise ValueError("Boxes need to be in (xmin, ymin, xmax, ymax) format. Use torchvision.ops.box_convert "
                         "to convert them")
    n = b.shape[0]
    if n == 0:
        warnings.warn("boxes doesn't contain any box. No box was drawn", stacklevel=2)
        return image
    if labels is None:
        labels = [None] * n  # type: ignore[list-item]
    elif len(labels) != n:
        raise ValueError(f"Number of boxes ({n}) and labels ({len(labels)}) mismatch. "
                         "Please specify labels for each box.")
    box_colors = _parse_colors(colors, n)
    text_colors = _parse_colors(label_colors, n) if label_colors else box_colors
    if font is None:
        if font_size is not None:
            warnings.warn("Argument 'font_size' will be ignored since 'font' is not set.", stacklevel=2)
        txt_font = ImageFont.load_default()
    else:
        txt_font = ImageFont.truetype(font=font, size=font_size or 10)

    a = K.to_numpy(image)
    if a.shape[0] == 1:
        a = np.concatenate([a] * 3)
    if a.dtype.kind == "f":
        a = (a * np.float32(255 + 1 - 1e-3)).astype(np.uint8)  # as to_dtype(uint8, scale=True)
    canvas = Image.fromarray(np.ascontiguousarray(a.transpose(1, 2, 0)))
    draw = ImageDraw.Draw(canvas, "RGBA" if fill else None)
    for box, color, label, text_color in zip(b.astype(np.int64).tolist(), box_colors, labels, text_colors,
                                             strict=True):
        draw.rectangle(box, width=width, outline=color, fill=color + (100,) if fill else None)
        if label is not None:
            margin = width + 1
            draw.text((box[0] + margin, box[1] + margin), label, fill=text_color, font=txt_font)
    out = np.asarray(canvas).transpose(2, 0, 1)
    if image.is_floating_point():
        out = out.astype(image.dtype.np) * image.dtype.np.type(1.0 / 255)
    return K.from_numpy(out, image)
