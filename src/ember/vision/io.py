"""``torchvision.io``: reading and writing image files, with Pillow.

Images are uint8 tensors of shape (C, H, W), as torchvision's. ``decode_image`` takes the file's
bytes (a 1-D uint8 tensor, as ``read_file`` returns) or a path; ``mode`` picks the channels
(``ImageReadMode.UNCHANGED`` keeps the file's: 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA; a palette
image opens as RGB, or RGBA when it has transparency; a 16-bit PNG gives uint16).
``apply_exif_orientation`` rotates as the EXIF tag says. ``encode_png``/``encode_jpeg`` return
the encoded bytes as a 1-D uint8 tensor; ``write_png``/``write_jpeg`` write them. Video
(``read_video``, ``VideoReader``) is not offered.
"""

from __future__ import annotations

import enum
import io as _io
import os
from typing import Any

import numpy as np

import ember as torch

__all__ = ["ImageReadMode", "read_file", "write_file", "decode_image", "read_image",
           "decode_png", "decode_jpeg", "encode_png", "encode_jpeg", "write_png", "write_jpeg"]


class ImageReadMode(enum.Enum):
    """The channels ``decode_image``/``read_image`` return."""

    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4
    RGBA = RGB_ALPHA


_PIL_MODE = {ImageReadMode.GRAY: "L", ImageReadMode.GRAY_ALPHA: "LA", ImageReadMode.RGB: "RGB",
             ImageReadMode.RGB_ALPHA: "RGBA"}


def read_file(path: str | os.PathLike) -> Any:
    """The file's bytes, a 1-D uint8 tensor."""
    with open(path, "rb") as f:
        return torch.from_numpy(np.frombuffer(f.read(), dtype=np.uint8).copy())


def write_file(filename: str | os.PathLike, data: Any) -> None:
    """Write a 1-D uint8 tensor's bytes to ``filename``."""
    _check_bytes(data, "write_file")
    with open(filename, "wb") as f:
        f.write(data.numpy().tobytes())


def _check_bytes(data: Any, fn: str) -> None:
    if not isinstance(data, torch.Tensor) or data.dtype != torch.uint8 or data.dim() != 1:
        raise RuntimeError(f"{fn}: expected a 1-D uint8 tensor of bytes, got "
                           f"{getattr(data, 'dtype', type(data).__name__)} of shape "
                           f"{tuple(getattr(data, 'shape', ()))}")


def decode_image(input: Any, mode: ImageReadMode | str = ImageReadMode.UNCHANGED,
                 apply_exif_orientation: bool = False) -> Any:
    """Decode an image (PNG, JPEG, GIF's first frame, WEBP, BMP...) into a (C, H, W) tensor."""
    from PIL import Image, ImageOps

    if isinstance(mode, str):
        mode = ImageReadMode[mode.upper()]
    if isinstance(input, (str, os.PathLike)):
        input = read_file(input)
    _check_bytes(input, "decode_image")
    img = Image.open(_io.BytesIO(input.numpy().tobytes()))
    if apply_exif_orientation:
        img = ImageOps.exif_transpose(img)
    if mode is ImageReadMode.UNCHANGED:
        if img.mode == "P":
            img = img.convert("RGBA" if "transparency" in img.info else "RGB")
        elif img.mode in ("1", "CMYK", "YCbCr", "HSV", "LAB", "I", "F"):
            img = img.convert("L" if img.mode in ("1", "I", "F") else "RGB")
    else:
        img = img.convert(_PIL_MODE[mode])
    arr = np.asarray(img)
    if arr.dtype != np.uint8 and img.mode.startswith("I;16"):
        arr = arr.astype(np.uint16)
    arr = arr[:, :, None] if arr.ndim == 2 else arr
    return torch.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def read_image(path: str | os.PathLike, mode: ImageReadMode | str = ImageReadMode.UNCHANGED,
               apply_exif_orientation: bool = False) -> Any:
    """``decode_image(read_file(path), mode)``."""
    return decode_image(read_file(path), mode, apply_exif_orientation)


def decode_png(input: Any, mode: ImageReadMode = ImageReadMode.UNCHANGED,
               apply_exif_orientation: bool = False) -> Any:
    return decode_image(input, mode, apply_exif_orientation)


def decode_jpeg(input: Any, mode: ImageReadMode = ImageReadMode.UNCHANGED,
                device: Any = "cpu", apply_exif_orientation: bool = False) -> Any:
    if isinstance(input, list):
        return [decode_image(i, mode, apply_exif_orientation) for i in input]
    return decode_image(input, mode, apply_exif_orientation)


def _to_pil(input: Any, fn: str) -> Any:
    from PIL import Image

    if not isinstance(input, torch.Tensor) or input.dim() != 3 or input.dtype != torch.uint8:
        raise RuntimeError(f"{fn}: expected a (C, H, W) uint8 tensor, got "
                           f"{getattr(input, 'dtype', type(input).__name__)} of shape "
                           f"{tuple(getattr(input, 'shape', ()))}")
    c = input.shape[0]
    if c not in (1, 2, 3, 4):
        raise RuntimeError(f"{fn}: the image must have 1, 2, 3 or 4 channels, got {c}")
    arr = np.ascontiguousarray(input.numpy().transpose(1, 2, 0))
    return Image.fromarray(arr[:, :, 0] if c == 1 else arr, {1: "L", 2: "LA", 3: "RGB",
                                                             4: "RGBA"}[c])


def _encoded(img: Any, fmt: str, **options: Any) -> Any:
    buf = _io.BytesIO()
    img.save(buf, format=fmt, **options)
    return torch.from_numpy(np.frombuffer(buf.getvalue(), dtype=np.uint8).copy())


def encode_png(input: Any, compression_level: int = 6) -> Any:
    """The PNG bytes of a (C, H, W) uint8 image, a 1-D uint8 tensor (lossless)."""
    if not 0 <= compression_level <= 9:
        raise ValueError("Compression level should be between 0 and 9")
    return _encoded(_to_pil(input, "encode_png"), "PNG", compress_level=compression_level)


def encode_jpeg(input: Any, quality: int = 75) -> Any:
    """The JPEG bytes of a (C, H, W) uint8 image with 1 or 3 channels."""
    if not 1 <= quality <= 100:
        raise ValueError("Image quality should be a positive number between 1 and 100")
    if isinstance(input, list):
        return [encode_jpeg(i, quality) for i in input]
    if input.dim() == 3 and input.shape[0] not in (1, 3):
        raise RuntimeError(f"encode_jpeg: the image must have 1 or 3 channels, got "
                           f"{input.shape[0]}")
    return _encoded(_to_pil(input, "encode_jpeg"), "JPEG", quality=quality)


def write_png(input: Any, filename: str | os.PathLike, compression_level: int = 6) -> None:
    write_file(filename, encode_png(input, compression_level))


def write_jpeg(input: Any, filename: str | os.PathLike, quality: int = 75) -> None:
    write_file(filename, encode_jpeg(input, quality))
