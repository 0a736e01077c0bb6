"""Functional forms of the transforms (``import ember.vision.transforms.functional as F``).

Each takes a PIL image (worked on with Pillow, as torchvision does, and a PIL image comes back) or
an ember tensor ``[..., C, H, W]`` (uint8 or floating; a tensor comes back, same dtype). Tensor
arithmetic runs in NumPy through ``_kernels`` and ``_resize``; flips, crops inside the image,
``normalize`` and ``erase`` use ember's own ops, so they keep the device and autograd.
"""

from __future__ import annotations

import numbers
import sys
import warnings
from collections.abc import Sequence
from enum import Enum
from typing import Any

import numpy as np

import ember

from . import _kernels as K
from ._resize import resample, resized_shape

try:
    from PIL import Image, ImageEnhance, ImageOps
except ImportError:  # tensors work without Pillow; PIL inputs cannot exist then
    Image = ImageEnhance = ImageOps = None  # type: ignore[assignment]


class InterpolationMode(Enum):
    """Interpolation methods; tensors support the first four, PIL images all of them."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


# Pillow's integer resampling constants, accepted in place of the enum as torchvision does
_FROM_PIL = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR, 3: InterpolationMode.BICUBIC,
             4: InterpolationMode.BOX, 5: InterpolationMode.HAMMING, 1: InterpolationMode.LANCZOS}
_TO_PIL = {InterpolationMode.NEAREST: 0, InterpolationMode.NEAREST_EXACT: 0, InterpolationMode.BILINEAR: 2,
           InterpolationMode.BICUBIC: 3, InterpolationMode.BOX: 4, InterpolationMode.HAMMING: 5,
           InterpolationMode.LANCZOS: 1}

Tensor = ember.Tensor


def interpolation_mode(value: InterpolationMode | int | str) -> InterpolationMode:
    """``value`` (the enum, a Pillow constant or the mode's name) as an InterpolationMode."""
    if isinstance(value, InterpolationMode):
        return value
    if isinstance(value, int) and value in _FROM_PIL:
        return _FROM_PIL[value]
    if isinstance(value, str):
        try:
            return InterpolationMode(value)
        except ValueError:
            pass
    raise TypeError(f"interpolation should be an InterpolationMode (or a Pillow constant such as "
                    f"PIL.Image.BILINEAR), got {value!r}")


def _is_pil(img: Any) -> bool:
    return Image is not None and isinstance(img, Image.Image)


def _is_tensor(img: Any) -> bool:
    return isinstance(img, ember.Tensor)


def _check_image(img: Any, name: str) -> None:
    if _is_pil(img):
        return
    if not _is_tensor(img):
        raise TypeError(f"{name} expects a PIL image or an ember tensor [..., C, H, W], got {type(img).__name__}")
    if img.ndim < 2:
        raise TypeError(f"{name} expects a tensor image with at least 2 dimensions [..., H, W], "
                        f"got shape {tuple(img.shape)}")


def _check_tensor(img: Any, name: str) -> None:
    if not _is_tensor(img):
        raise TypeError(f"{name} expects an ember tensor image, got {type(img).__name__}"
                        + (" (convert PIL images with to_tensor or pil_to_tensor first)" if _is_pil(img) else ""))
    if img.ndim < 2:
        raise TypeError(f"{name} expects a tensor image [..., H, W], got shape {tuple(img.shape)}")


def _check_channels(img: Tensor, allowed: tuple[int, ...], name: str) -> None:
    c = get_dimensions(img)[0]
    if c not in allowed:
        raise TypeError(f"{name} works on images with {' or '.join(map(str, allowed))} channels, "
                        f"got {c} (shape {tuple(img.shape)})")


# --- sizes -----------------------------------------------------------------------------------

def get_dimensions(img: Any) -> list[int]:
    """[channels, height, width] of a PIL image or tensor."""
    _check_image(img, "get_dimensions")
    if _is_pil(img):
        return [len(img.getbands()), img.height, img.width]
    channels = 1 if img.ndim == 2 else int(img.shape[-3])
    return [channels, int(img.shape[-2]), int(img.shape[-1])]


def get_image_size(img: Any) -> list[int]:
    """[width, height] of a PIL image or tensor (note the order: PIL's)."""
    _, h, w = get_dimensions(img)
    return [w, h]


def get_image_num_channels(img: Any) -> int:
    """The number of channels of a PIL image or tensor."""
    return get_dimensions(img)[0]


# --- conversions -----------------------------------------------------------------------------

def _pil_array(pic: Any, dtype: Any = None) -> np.ndarray:
    """A PIL image as an (H, W, C) array."""
    a = np.array(pic, dtype=dtype, copy=True)
    return a.reshape(pic.height, pic.width, len(pic.getbands()))


def to_tensor(pic: Any) -> Tensor:
    """PIL image or (H, W[, C]) ndarray -> (C, H, W) tensor; uint8 is scaled to floats in [0, 1]."""
    if isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2 or 3 dimensional (H, W[, C]), got {pic.ndim} dimensions")
        a = (pic[:, :, None] if pic.ndim == 2 else pic).transpose(2, 0, 1)
    elif _is_pil(pic):
        little = sys.byteorder == "little"
        kinds = {"I": np.int32, "I;16" if little else "I;16B": np.int16, "F": np.float32}
        a = _pil_array(pic, kinds.get(pic.mode, np.uint8)).transpose(2, 0, 1)
        if pic.mode == "1":
            a = a * np.uint8(255)
    else:
        raise TypeError(f"to_tensor expects a PIL image or an ndarray, got {type(pic).__name__}")
    if a.dtype == np.uint8:
        fd = ember.get_default_dtype().np
        return ember.from_numpy(np.ascontiguousarray(a.astype(fd) / fd.type(255)))
    return ember.from_numpy(np.ascontiguousarray(a))


def pil_to_tensor(pic: Any) -> Tensor:
    """PIL image -> (C, H, W) tensor of the image's own dtype (uint8 for 8-bit modes), unscaled."""
    if not _is_pil(pic):
        raise TypeError(f"pil_to_tensor expects a PIL image, got {type(pic).__name__}")
    return ember.from_numpy(np.ascontiguousarray(_pil_array(pic).transpose(2, 0, 1)))


def _fromarray(a: np.ndarray, mode: str | None) -> Any:
    natural = Image.fromarray(a)
    if mode is None or natural.mode == mode:
        return natural
    # same bytes read as another mode (YCbCr, HSV, RGBX, CMYK...): fromarray's mode= is deprecated
    return Image.frombuffer(mode, natural.size, np.ascontiguousarray(a).tobytes(), "raw", mode, 0, 1)


def to_pil_image(pic: Any, mode: str | None = None) -> Any:
    """(C, H, W) tensor or (H, W, C) ndarray -> PIL image; floats are scaled by 255 (unless mode 'F')."""
    if Image is None:
        raise ImportError("to_pil_image needs Pillow: pip install 'ember[vision]'")
    if _is_tensor(pic):
        a = K.to_numpy(pic)
        if a.ndim == 3:
            a = a.transpose(1, 2, 0)
    elif isinstance(pic, np.ndarray):
        a = pic
    else:
        raise TypeError(f"to_pil_image expects a tensor or an ndarray, got {type(pic).__name__}")
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3:
        raise ValueError(f"pic should be 2 or 3 dimensional, got {a.ndim} dimensions")
    if a.shape[-1] > 4:
        raise ValueError(f"pic should have at most 4 channels (channels last for arrays, first for "
                         f"tensors), got {a.shape[-1]}")
    if a.dtype.kind == "f" and mode != "F":
        a = (a * 255).astype(np.uint8)
    channels = a.shape[2]
    if channels == 1:
        a = a[:, :, 0]
        expected = {np.dtype(np.uint8): "L", np.dtype(np.int16): "I;16", np.dtype(np.int32): "I",
                    np.dtype(np.float32): "F"}.get(a.dtype)
        if mode is not None and mode != expected:
            raise ValueError(f"mode {mode!r} does not fit a one-channel {a.dtype} image: it should be {expected!r}")
        mode = expected
    else:
        allowed = {2: ["LA"], 3: ["RGB", "YCbCr", "HSV"], 4: ["RGBA", "CMYK", "RGBX"]}[channels]
        if mode is not None and mode not in allowed:
            raise ValueError(f"mode {mode!r} does not fit a {channels}-channel image: use one of {allowed}")
        if mode is None and a.dtype == np.uint8:
            mode = allowed[0]
    if mode is None:
        raise TypeError(f"to_pil_image cannot store {a.dtype} data with {channels} channels in a PIL image")
    if mode == "I;16" and a.dtype == np.int16:
        a = a.astype(np.uint16)
    return _fromarray(a, mode)


def convert_image_dtype(image: Tensor, dtype: ember.dtype = ember.float32) -> Tensor:
    """Change a tensor image's dtype, rescaling values (uint8 255 <-> float 1.0)."""
    _check_tensor(image, "convert_image_dtype")
    if image.dtype == dtype:
        return image
    src_max, dst_max = K.max_value(image.dtype.np), K.max_value(dtype.np)
    if image.is_floating_point():
        if dtype.is_floating_point:
            return image.to(dtype)
        if (image.dtype == ember.float32 and dtype in (ember.int32, ember.int64)) or (
                image.dtype == ember.float64 and dtype == ember.int64):
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed safely: "
                               "the float cannot hold every integer of the range")
        # max + 1 - eps spreads [0, 1] evenly over the integers, 1.0 still maps to max
        return image.mul(dst_max + 1.0 - 1e-3).to(dtype)
    if dtype.is_floating_point:
        return image.to(dtype) / float(src_max)
    if src_max > dst_max:
        return ember.div(image, (src_max + 1) // (dst_max + 1), rounding_mode="floor").to(dtype)
    return image.to(dtype) * ((dst_max + 1) // (src_max + 1))


# --- normalisation ---------------------------------------------------------------------------

def normalize(tensor: Tensor, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> Tensor:
    """(x - mean) / std per channel of a float tensor image [..., C, H, W]."""
    _check_tensor(tensor, "normalize")
    if not tensor.is_floating_point():
        raise TypeError(f"normalize expects a float tensor, got {tensor.dtype}: convert it first "
                        "(ConvertImageDtype / convert_image_dtype)")
    if tensor.ndim < 3:
        raise ValueError(f"normalize expects a tensor image [..., C, H, W], got shape {tuple(tensor.shape)}")
    m = ember.as_tensor(mean, dtype=tensor.dtype, device=tensor.device)
    s = ember.as_tensor(std, dtype=tensor.dtype, device=tensor.device)
    if bool((s == 0).any()):
        raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division by zero.")
    if m.ndim == 1:
        m = m.view(-1, 1, 1)
    if s.ndim == 1:
        s = s.view(-1, 1, 1)
    if inplace:
        return tensor.sub_(m).div_(s)
    return (tensor - m) / s


# --- geometry --------------------------------------------------------------------------------

def _size_list(size: Any, name: str) -> list[int] | None:
    if size is None:
        return None
    if isinstance(size, numbers.Integral):
        return [int(size)]
    if isinstance(size, Sequence) and len(size) in (1, 2) and all(isinstance(s, numbers.Integral) for s in size):
        return [int(s) for s in size]
    raise ValueError(f"{name} should be an int or a sequence of one or two ints, got {size!r}")


def resize(img: Any, size: Any, interpolation: InterpolationMode | int = InterpolationMode.BILINEAR,
           max_size: int | None = None, antialias: bool | None = True) -> Any:
    """Resize to ``size`` (h, w), or make the shorter edge ``size`` when it is one number."""
    _check_image(img, "resize")
    mode = interpolation_mode(interpolation)
    sizes = _size_list(size, "size")
    if sizes is None:
        raise ValueError("resize needs a size (v2's Resize takes size=None with max_size)")
    if max_size is not None and len(sizes) != 1:
        raise ValueError("max_size should only be passed if size specifies the length of the smaller edge, "
                         "i.e. size should be an int or a sequence of length 1")
    return _resize(img, sizes, mode, max_size, antialias)


def _resize(img: Any, sizes: list[int] | None, mode: InterpolationMode, max_size: int | None,
            antialias: bool | None, uint8_passes: bool = False) -> Any:
    _, h, w = get_dimensions(img)
    out = resized_shape(h, w, sizes, max_size)
    if out == [h, w]:
        return img
    if _is_pil(img):
        if antialias is False:
            warnings.warn("Anti-alias option is always applied for PIL Image input. Argument antialias is ignored.",
                          stacklevel=3)
        return img.resize((out[1], out[0]), _TO_PIL[mode])
    if mode.value not in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        raise ValueError(f"interpolation {mode} is not supported for tensors: use NEAREST, NEAREST_EXACT, "
                         "BILINEAR or BICUBIC (or resize a PIL image)")
    a = K.to_numpy(img)
    if mode.value.startswith("nearest"):
        return K.from_numpy(resample(a, (out[0], out[1]), mode.value, False), img)
    x = resample(a.astype(K.work_dtype(a.dtype), copy=False), (out[0], out[1]), mode.value, bool(antialias),
                 uint8_passes and a.dtype == np.uint8 and mode is InterpolationMode.BICUBIC)
    if mode is InterpolationMode.BICUBIC and a.dtype == np.uint8:
        x = np.clip(x, 0, 255)  # bicubic overshoots; uint8 would wrap
    return K.from_numpy(K.cast_back(x, a.dtype, rounding=True), img)


def _pad_amounts(padding: Any) -> tuple[int, int, int, int]:
    """padding as (left, top, right, bottom) from an int or a 1, 2 or 4 element sequence."""
    if isinstance(padding, numbers.Integral):
        p = [int(padding)] * 4
    elif isinstance(padding, Sequence) and len(padding) in (1, 2, 4) and all(
            isinstance(x, numbers.Integral) for x in padding):
        q = [int(x) for x in padding]
        p = q * 4 if len(q) == 1 else ([q[0], q[1], q[0], q[1]] if len(q) == 2 else q)
    else:
        raise ValueError(f"padding must be an int or a 1, 2 or 4 element sequence of ints, got {padding!r}")
    return p[0], p[1], p[2], p[3]


def pad(img: Any, padding: Any, fill: Any = 0, padding_mode: str = "constant") -> Any:
    """Pad the borders: ``padding`` is one int, (left/right, top/bottom) or (left, top, right, bottom)."""
    _check_image(img, "pad")
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError(f"padding_mode should be constant, edge, reflect or symmetric, got {padding_mode!r}")
    if fill is not None and not isinstance(fill, (numbers.Number, Sequence)):
        raise TypeError(f"fill should be a number or a sequence of numbers, got {type(fill).__name__}")
    left, top, right, bottom = _pad_amounts(padding)
    if _is_pil(img):
        return _pad_pil(img, (left, top, right, bottom), fill, padding_mode)
    a = K.to_numpy(img)
    return K.from_numpy(K.pad(a, left, top, right, bottom, fill, padding_mode), img)


def _pil_fill(fill: Any, img: Any) -> Any:
    """``fill`` in the form Pillow wants for ``img``'s mode (one value per band, ints unless 'F')."""
    bands = len(img.getbands())
    fill = 0 if fill is None else fill
    if isinstance(fill, numbers.Number):
        fill = fill if bands == 1 else (fill,) * bands
    else:
        fill = tuple(fill)
        if len(fill) == 1:
            fill = fill * bands
        elif len(fill) != bands:
            raise ValueError(f"fill has {len(fill)} values but the image has {bands} channels: "
                             "give one number or one per channel")
    if img.mode != "F":
        fill = int(fill) if isinstance(fill, numbers.Number) else tuple(int(x) for x in fill)
    return fill


def _pad_pil(img: Any, ltrb: tuple[int, int, int, int], fill: Any, mode: str) -> Any:
    left, top, right, bottom = ltrb
    if mode == "constant" and min(ltrb) >= 0:
        palette = img.getpalette() if img.mode == "P" else None
        out = ImageOps.expand(img, border=ltrb, fill=_pil_fill(fill, img))
        if palette is not None:
            out.putpalette(palette)
        return out
    a = np.asarray(img)
    axes = a[None] if a.ndim == 2 else np.moveaxis(a, -1, 0)  # (C, H, W) for the kernel
    padded = K.pad(axes, left, top, right, bottom, None if mode != "constant" else fill, mode)
    out_a = padded[0] if a.ndim == 2 else np.moveaxis(padded, 0, -1)
    out = Image.fromarray(np.ascontiguousarray(out_a))
    if img.mode == "P":
        out.putpalette(img.getpalette())
    return out


def crop(img: Any, top: int, left: int, height: int, width: int) -> Any:
    """The (height, width) window whose top-left corner is (top, left); outside the image is 0."""
    _check_image(img, "crop")
    if _is_pil(img):
        return img.crop((left, top, left + width, top + height))
    _, h, w = get_dimensions(img)
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        a = K.to_numpy(img)[..., max(top, 0):bottom, max(left, 0):right]
        ltrb = (max(-left + min(0, right), 0), max(-top + min(0, bottom), 0),
                max(right - max(w, left), 0), max(bottom - max(h, top), 0))
        return K.from_numpy(K.pad(a, *ltrb, 0, "constant"), img)
    return img[..., top:bottom, left:right]


def center_crop(img: Any, output_size: Any) -> Any:
    """The central (h, w) window; an image smaller than that is zero-padded first."""
    _check_image(img, "center_crop")
    if isinstance(output_size, numbers.Number):
        output_size = (int(output_size), int(output_size))
    elif isinstance(output_size, Sequence) and len(output_size) == 1:
        output_size = (output_size[0], output_size[0])
    if not (isinstance(output_size, Sequence) and len(output_size) == 2):
        raise ValueError(f"output_size should be an int or a sequence of one or two ints, got {output_size!r}")
    crop_h, crop_w = int(output_size[0]), int(output_size[1])
    _, h, w = get_dimensions(img)
    if crop_w > w or crop_h > h:
        img = pad(img, [(crop_w - w) // 2 if crop_w > w else 0, (crop_h - h) // 2 if crop_h > h else 0,
                        (crop_w - w + 1) // 2 if crop_w > w else 0, (crop_h - h + 1) // 2 if crop_h > h else 0],
                  fill=0)
        _, h, w = get_dimensions(img)
        if crop_w == w and crop_h == h:
            return img
    return crop(img, int(round((h - crop_h) / 2.0)), int(round((w - crop_w) / 2.0)), crop_h, crop_w)


def resized_crop(img: Any, top: int, left: int, height: int, width: int, size: Any,
                 interpolation: InterpolationMode | int = InterpolationMode.BILINEAR,
                 antialias: bool | None = True) -> Any:
    """crop, then resize to ``size``."""
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def hflip(img: Any) -> Any:
    """Mirror left-right."""
    _check_image(img, "hflip")
    return img.transpose(Image.FLIP_LEFT_RIGHT) if _is_pil(img) else img.flip(-1)


def vflip(img: Any) -> Any:
    """Mirror top-bottom."""
    _check_image(img, "vflip")
    return img.transpose(Image.FLIP_TOP_BOTTOM) if _is_pil(img) else img.flip(-2)


def rotate(img: Any, angle: float, interpolation: InterpolationMode | int = InterpolationMode.NEAREST,
           expand: bool = False, center: Sequence[int] | None = None, fill: Any = None) -> Any:
    """Rotate counter-clockwise by ``angle`` degrees about ``center`` (default: the image centre)."""
    _check_image(img, "rotate")
    mode = interpolation_mode(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError(f"angle should be an int or float, got {type(angle).__name__}")
    if center is not None and not isinstance(center, Sequence):
        raise TypeError(f"center should be a sequence (x, y), got {type(center).__name__}")
    if _is_pil(img):
        return img.rotate(angle, _TO_PIL[mode], expand, center, fillcolor=_pil_fill(fill, img))
    if mode.value not in ("nearest", "bilinear"):
        raise ValueError(f"rotate supports NEAREST and BILINEAR on tensors, got {mode} (rotate a PIL image "
                         "for the others)")
    _, h, w = get_dimensions(img)
    center_f = [0.0, 0.0]
    if center is not None:  # pixel coordinates, relative to the image centre
        center_f = [1.0 * (c - s * 0.5) for c, s in zip(center, [w, h], strict=True)]
    # the grid maps output to input pixels, so the inverse rotation, which is by -angle
    matrix = K.inverse_rotation(center_f, -angle)
    ow, oh = K.rotated_size(matrix, w, h) if expand else (w, h)
    a = K.to_numpy(img)
    x = K.affine_sample(a.astype(K.work_dtype(a.dtype), copy=False), matrix, ow, oh, mode.value, fill)
    return K.from_numpy(K.cast_back(x, a.dtype, rounding=True), img)


# --- colour ----------------------------------------------------------------------------------

def rgb_to_grayscale(img: Any, num_output_channels: int = 1) -> Any:
    """Luma (0.2989 R + 0.587 G + 0.114 B) of an RGB image, 1 or 3 channels."""
    _check_image(img, "rgb_to_grayscale")
    if num_output_channels not in (1, 3):
        raise ValueError(f"num_output_channels should be either 1 or 3, got {num_output_channels}")
    if _is_pil(img):
        return to_grayscale(img, num_output_channels)
    if img.ndim < 3:
        raise TypeError(f"rgb_to_grayscale expects [..., C, H, W], got shape {tuple(img.shape)}")
    _check_channels(img, (1, 3), "rgb_to_grayscale")
    a = K.to_numpy(img)
    g = K.grayscale(a) if a.shape[-3] == 3 else a.copy()
    if num_output_channels == 3:
        g = np.broadcast_to(g, g.shape[:-3] + (3,) + g.shape[-2:])
    return K.from_numpy(g, img)


def to_grayscale(img: Any, num_output_channels: int = 1) -> Any:
    """Grayscale version of a PIL image of any mode (Pillow's 'L' conversion)."""
    if not _is_pil(img):
        raise TypeError(f"to_grayscale expects a PIL image, got {type(img).__name__} "
                        "(use rgb_to_grayscale for tensors)")
    if num_output_channels not in (1, 3):
        raise ValueError(f"num_output_channels should be either 1 or 3, got {num_output_channels}")
    gray = img.convert("L")
    if num_output_channels == 1:
        return gray
    return Image.merge("RGB", (gray, gray, gray))


def _color_tensor(img: Any, name: str) -> np.ndarray:
    _check_tensor(img, name)
    _check_channels(img, (1, 3), name)
    return K.to_numpy(img)


def _check_factor(value: float, name: str) -> None:
    if value < 0:
        raise ValueError(f"{name} ({value}) is not non-negative.")


def adjust_brightness(img: Any, brightness_factor: float) -> Any:
    """Multiply intensities by ``brightness_factor`` (0 gives black, 1 the original)."""
    _check_factor(brightness_factor, "brightness_factor")
    _check_image(img, "adjust_brightness")
    if _is_pil(img):
        return ImageEnhance.Brightness(img).enhance(brightness_factor)
    a = _color_tensor(img, "adjust_brightness")
    return K.from_numpy(K.blend(a, np.zeros_like(a), brightness_factor), img)


def adjust_contrast(img: Any, contrast_factor: float) -> Any:
    """Blend with the mean grey level (0 gives a flat grey image, 1 the original)."""
    _check_factor(contrast_factor, "contrast_factor")
    _check_image(img, "adjust_contrast")
    if _is_pil(img):
        return ImageEnhance.Contrast(img).enhance(contrast_factor)
    a = _color_tensor(img, "adjust_contrast")
    wd = K.work_dtype(a.dtype)
    gray = (K.grayscale(a) if a.shape[-3] == 3 else a).astype(wd)
    mean = gray.astype(np.float64).mean(axis=(-3, -2, -1), keepdims=True).astype(wd)
    return K.from_numpy(K.blend(a, mean, contrast_factor), img)


def adjust_saturation(img: Any, saturation_factor: float) -> Any:
    """Blend with the grayscale image (0 gives grey, 1 the original, 2 doubles saturation)."""
    _check_factor(saturation_factor, "saturation_factor")
    _check_image(img, "adjust_saturation")
    if _is_pil(img):
        return ImageEnhance.Color(img).enhance(saturation_factor)
    a = _color_tensor(img, "adjust_saturation")
    if a.shape[-3] == 1:  # nothing to desaturate, as for PIL
        return img
    return K.from_numpy(K.blend(a, K.grayscale(a), saturation_factor), img)


def adjust_hue(img: Any, hue_factor: float) -> Any:
    """Shift the hue by ``hue_factor`` turns of the colour wheel, in [-0.5, 0.5]."""
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    _check_image(img, "adjust_hue")
    if _is_pil(img):
        if img.mode in {"L", "1", "I", "F"}:
            return img
        h, s, v = img.convert("HSV").split()
        hue = np.array(h, dtype=np.uint8)
        hue += np.int32(hue_factor * 255).astype(np.uint8)  # wraps around, as a hue should
        return Image.merge("HSV", (Image.fromarray(hue), s, v)).convert(img.mode)
    a = _color_tensor(img, "adjust_hue")
    if a.shape[-3] == 1:
        return img
    x = K.to_numpy(convert_image_dtype(img, ember.float32))
    hsv = K.rgb_to_hsv(x)
    hsv[..., 0, :, :] = np.mod(hsv[..., 0, :, :] + np.float32(hue_factor), np.float32(1.0))
    rgb = K.from_numpy(K.hsv_to_rgb(hsv), img)
    return convert_image_dtype(rgb, img.dtype)


# --- erasing ---------------------------------------------------------------------------------

def erase(img: Tensor, i: int, j: int, h: int, w: int, v: Any, inplace: bool = False) -> Tensor:
    """Set the (h, w) window at (i, j) to ``v`` (a tensor broadcastable to [..., C, h, w], or a number)."""
    _check_tensor(img, "erase")
    out = img if inplace else img.clone()
    out[..., i:i + h, j:j + w] = v
    return out
