"""The transform classes (torchvision's ``transforms`` v1): each wraps a functional form.

Random transforms draw their parameters from ember's generator (``ember.manual_seed`` makes a run
repeat) in ``_params`` and apply them in ``_apply``; ``transforms.v2`` reuses both halves so one
draw serves every image of a sample.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import ember
from ember import nn

from . import functional as F
from .functional import InterpolationMode, interpolation_mode

__all__ = ["Compose", "ToTensor", "PILToTensor", "ConvertImageDtype", "ToPILImage", "Normalize", "Resize",
           "CenterCrop", "Pad", "Lambda", "RandomCrop", "RandomHorizontalFlip", "RandomVerticalFlip",
           "RandomResizedCrop", "ColorJitter", "RandomRotation", "Grayscale", "RandomErasing",
           "InterpolationMode"]


def _setup_size(size: Any, error_msg: str) -> tuple[int, int]:
    """(h, w) from one number or a sequence of one or two."""
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 1:
        return size[0], size[0]
    if not isinstance(size, Sequence) or len(size) != 2:
        raise ValueError(f"{error_msg} Got {size!r}")
    return size[0], size[1]


def _check_range(value: Any, name: str) -> None:
    if not isinstance(value, Sequence) or len(value) != 2:
        raise TypeError(f"{name} should be a sequence (min, max), got {value!r}")
    if value[0] > value[1]:
        warnings.warn(f"{name} should be of kind (min, max), got {tuple(value)}", stacklevel=3)


class _Transform(nn.Module):
    """A transform module: ``forward(img) = _apply(img, _params(img))``."""

    def _params(self, img: Any) -> dict[str, Any]:
        return {}

    def _apply(self, img: Any, params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def forward(self, img: Any) -> Any:
        return self._apply(img, self._params(img))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Compose:
    """Apply ``transforms`` one after the other."""

    def __init__(self, transforms: Sequence[Callable[[Any], Any]]) -> None:
        self.transforms = transforms

    def __call__(self, img: Any) -> Any:
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        return type(self).__name__ + "(" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class ToTensor:
    """PIL image / HWC ndarray -> CHW float tensor in [0, 1] (uint8 input) or the array's dtype."""

    def __call__(self, pic: Any) -> ember.Tensor:
        return F.to_tensor(pic)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class PILToTensor:
    """PIL image -> CHW tensor of the same dtype, unscaled."""

    def __call__(self, pic: Any) -> ember.Tensor:
        return F.pil_to_tensor(pic)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ConvertImageDtype(_Transform):
    """Convert a tensor image to ``dtype``, rescaling its values."""

    def __init__(self, dtype: ember.dtype) -> None:
        super().__init__()
        self.dtype = dtype

    def _apply(self, img: Any, params: dict[str, Any]) -> Any:
        return F.convert_image_dtype(img, self.dtype)


class ToPILImage:
    """CHW tensor / HWC ndarray -> PIL image (``mode`` as Pillow names it, or guessed)."""

    def __init__(self, mode: str | None = None) -> None:
        self.mode = mode

    def __call__(self, pic: Any) -> Any:
        return F.to_pil_image(pic, self.mode)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + (f"mode={self.mode}" if self.mode is not None else "") + ")"


class Normalize(_Transform):
    """(x - mean) / std per channel of a float tensor image."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> None:
        super().__init__()
        self.mean, self.std, self.inplace = mean, std, inplace

    def _apply(self, img: Any, params: dict[str, Any]) -> Any:
        return F.normalize(img, self.mean, self.std, self.inplace)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mean={self.mean}, std={self.std})"


class Resize(_Transform):
    """Resize to ``size`` (h, w), or the shorter edge to ``size`` when it is one number."""

    def __init__(self, size: Any, interpolation: InterpolationMode | int = InterpolationMode.BILINEAR,
                 max_size: int | None = None, antialias: bool | None = True) -> None:
        super().__init__()
        if not isinstance(size, (int, Sequence)) or (isinstance(size, Sequence) and len(size) not in (1, 2)):
            raise TypeError(f"size should be an int or a sequence of one or two ints, got {size!r}")
        self.size, self.max_size, self.antialias = size, max_size, antialias
        self.interpolation = interpolation_mode(interpolation)

    def _apply(self, img: Any, params: dict[str, Any]) -> Any:
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(size={self.size}, interpolation={self.interpolation.value}, "
                f"max_size={self.max_size}, antialias={self.antialias})")


class CenterCrop(_Transform):
    """Crop the central (h, w) window (zero-padding an image smaller than that)."""

    def __init__(self, size: Any) -> None:
        super().__init__()
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")

    def _apply(self, img: Any, params: dict[str, Any]) -> Any:
        return F.center_crop(img, self.size)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size})"


def _check_pad_args(padding: Any, fill: Any, padding_mode: str) -> None:
    if not isinstance(padding, (numbers.Number, tuple, list)):
        raise TypeError(f"padding should be an int or a sequence, got {type(padding).__name__}")
    if not isinstance(fill, (numbers.Number, tuple, list)):
        raise TypeError(f"fill should be a number or a sequence, got {type(fill).__name__}")
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError(f"padding_mode should be constant, edge, reflect or symmetric, got {padding_mode!r}")
    if isinstance(padding, Sequence) and len(padding) not in (1, 2, 4):
        raise ValueError(f"padding must be an int or a 1, 2, or 4 element sequence, not a {len(padding)} "
                         "element sequence")


class Pad(_Transform):
    """Pad the borders (``padding``: one int, (left/right, top/bottom) or (left, top, right, bottom))."""

    def __init__(self, padding: Any, fill: Any = 0, padding_mode: str = "constant") -> None:
        super().__init__()
        _check_pad_args(padding, fill, padding_mode)
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def _apply(self, img: Any, params: dict[str, Any]) -> Any:
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(padding={self.padding}, fill={self.fill}, padding_mode={self.padding_mode})"


class Lambda:
    """A user function as a transform."""

    def __init__(self, lambd: Callable[[Any], Any]) -> None:
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img: Any) -> Any:
        return self.lambd(img)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _randint(high: int) -> int:
    """A uniform integer in [0, high) from ember's generator."""
    return int(ember.randint(0, high, size=(1,)).item())


def _uniform(low: float, high: float) -> float:
    return float(ember.empty(1).uniform_(low, high).item())


class RandomCrop(_Transform):
    """Crop a random (h, w) window, optionally after padding."""

    def __init__(self, size: Any, padding: Any = None, pad_if_needed: bool = False, fill: Any = 0,
                 padding_mode: str = "constant") -> None:
        super().__init__()
        self.size = tuple(_setup_size(size, "Please provide only two dimensions (h, w) for size."))
        if padding is not None:
            _check_pad_args(padding, fill, padding_mode)
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    @staticmethod
    def get_params(img: Any, output_size: tuple[int, int]) -> tuple[int, int, int, int]:
        """Random (top, left, height, width) of an ``output_size`` window inside ``img``."""
        _, h, w = F.get_dimensions(img)
        return RandomCrop._window(h, w, output_size)

    @staticmethod
    def _window(h: int, w: int, output_size: tuple[int, int]) -> tuple[int, int, int, int]:
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}: "
                             "pass padding or pad_if_needed=True")
        if w == tw and h == th:
            return 0, 0, h, w
        return _randint(h - th + 1), _randint(w - tw + 1), th, tw

    def _params(self, img: Any) -> dict[str, Any]:
        _, h, w = F.get_dimensions(img)
        ltrb = [0, 0, 0, 0]
        if self.padding is not None:
            ltrb = list(F._pad_amounts(self.padding))
        h, w = h + ltrb[1] + ltrb[3], w + ltrb[0] + ltrb[2]
        extra = [0, 0]  # pad_if_needed: width, then height, each on both sides
        if self.pad_if_needed and w < self.size[1]:
            extra[0] = self.size[1] - w
            w += 2 * extra[0]
        if self.pad_if_needed and h < self.size[0]:
            extra[1] = self.size[0] - h
            h += 2 * extra[1]
        return {"padding": self.padding, "extra": extra, "window": self._window(h, w, self.size)}

    def _apply(self, img: Any, params: dict[str, Any]) -> Any:
        if params["padding"] is not None:
            img = F.pad(img, params["padding"], self.fill, self.padding_mode)
        if params["extra"][0]:
            img = F.pad(img, [params["extra"][0], 0], self.fill, self.padding_mode)
        if params["extra"][1]:
            img = F.pad(img, [0, params["extra"][1]], self.fill, self.padding_mode)
        return F.crop(img, *params["window"])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size}, padding={self.padding})"


class RandomHorizontalFlip(_Transform):
    """Mirror left-right with probability ``p``."""

    _flip = staticmethod(F.hflip)

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = p

    def _params(self, img: Any) -> dict[str, Any]:
        return {"flip": bool(ember.rand(1).item() < self.p)}

    def _apply(self, img: Any, params: dict[str, Any]) -> Any:
        return self._flip(img) if params["flip"] else img

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p})"


class RandomVerticalFlip(RandomHorizontalFlip):
    """Mirror top-bottom with probability ``p``."""

    _flip = staticmethod(F.vflip)


def _area_window(h: int, w: int, scale: Sequence[float], ratio: Sequence[float],
                 fits: Callable[[int, int], bool]) -> tuple[int, int] | None:
    """Up to ten draws of a (height, width) covering ``scale`` of the area at aspect ``ratio``."""
    area = h * w
    # torchvision's float32 log and exp (``torch.log(torch.tensor(ratio))``)
    log_ratio = [float(v) for v in np.log(np.asarray(ratio, np.float32))]
    for _ in range(10):
        target = area * _uniform(scale[0], scale[1])
        aspect = float(np.exp(np.float32(_uniform(log_ratio[0], log_ratio[1]))))
        cw, ch = int(round(math.sqrt(target * aspect))), int(round(math.sqrt(target / aspect)))
        if fits(ch, cw):
            return ch, cw
    return None


class RandomResizedCrop(_Transform):
    """Crop a random area and aspect ratio, then resize it to ``size``."""

    def __init__(self, size: Any, scale: tuple[float, float] = (0.08, 1.0),
                 ratio: tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0),
                 interpolation: InterpolationMode | int = InterpolationMode.BILINEAR,
                 antialias: bool | None = True) -> None:
        super().__init__()
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")
        _check_range(scale, "scale")
        _check_range(ratio, "ratio")
        self.scale, self.ratio, self.antialias = scale, ratio, antialias
        self.interpolation = interpolation_mode(interpolation)

    @staticmethod
    def get_params(img: Any, scale: Sequence[float], ratio: Sequence[float]) -> tuple[int, int, int, int]:
        """Random (top, left, height, width) of a crop; falls back to a central crop after 10 tries."""
        _, height, width = F.get_dimensions(img)
        found = _area_window(height, width, scale, ratio, lambda h, w: 0 < w <= width and 0 < h <= height)
        if found is not None:
            h, w = found
            return _randint(height - h + 1), _randint(width - w + 1), h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w, h = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            h, w = height, int(round(height * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def _params(self, img: Any) -> dict[str, Any]:
        return {"window": self.get_params(img, self.scale, self.ratio)}

    def _apply(self, img: Any, params: dict[str, Any]) -> Any:
        return F.resized_crop(img, *params["window"], list(self.size), self.interpolation,
                              antialias=self.antialias)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(size={self.size}, scale={tuple(round(s, 4) for s in self.scale)}, "
                f"ratio={tuple(round(r, 4) for r in self.ratio)}, interpolation={self.interpolation.value}, "
                f"antialias={self.antialias})")


def _jitter_range(value: Any, name: str, center: float = 1.0, bound: tuple[float, float] = (0, float("inf")),
                  clip_first_on_zero: bool = True) -> tuple[float, float] | None:
    """ColorJitter's argument as [min, max], or None when it asks for no change."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be non negative, got {value}")
        value = [center - float(value), center + float(value)]
        if clip_first_on_zero:
            value[0] = max(value[0], 0.0)
    elif isinstance(value, Sequence) and len(value) == 2:
        value = [float(value[0]), float(value[1])]
    else:
        raise TypeError(f"{name} should be a single number or a list/tuple with length 2, got {value!r}")
    if not bound[0] <= value[0] <= value[1] <= bound[1]:
        raise ValueError(f"{name} values should be between {bound} and ordered (min, max), got {value}")
    if value[0] == value[1] == center:
        return None
    return (value[0], value[1])


class ColorJitter(_Transform):
    """Random brightness, contrast, saturation and hue changes, applied in a random order."""

    def __init__(self, brightness: Any = 0, contrast: Any = 0, saturation: Any = 0, hue: Any = 0) -> None:
        super().__init__()
        self.brightness = _jitter_range(brightness, "brightness")
        self.contrast = _jitter_range(contrast, "contrast")
        self.saturation = _jitter_range(saturation, "saturation")
        self.hue = _jitter_range(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def get_params(brightness: Sequence[float] | None, contrast: Sequence[float] | None,
                   saturation: Sequence[float] | None, hue: Sequence[float] | None
                   ) -> tuple[ember.Tensor, float | None, float | None, float | None, float | None]:
        """(order of the four adjustments, then each factor or None)."""
        order = ember.randperm(4)
        factors = [None if r is None else _uniform(r[0], r[1]) for r in (brightness, contrast, saturation, hue)]
        return order, factors[0], factors[1], factors[2], factors[3]

    def _params(self, img: Any) -> dict[str, Any]:
        order, *factors = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        return {"order": [int(i) for i in order.tolist()], "factors": factors}

    def _apply(self, img: Any, params: dict[str, Any]) -> Any:
        adjust = (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue)
        for i in params["order"]:
            if params["factors"][i] is not None:
                img = adjust[i](img, params["factors"][i])
        return img

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")


def _setup_angle(x: Any, name: str) -> list[float]:
    if isinstance(x, numbers.Number):
        if x < 0:
            raise ValueError(f"If {name} is a single number, it must be positive, got {x}")
        return [float(-x), float(x)]
    if not isinstance(x, Sequence) or len(x) != 2:
        raise ValueError(f"{name} should be a single number or a sequence of 2 numbers, got {x!r}")
    return [float(d) for d in x]


class RandomRotation(_Transform):
    """Rotate by an angle drawn uniformly from ``degrees``."""

    def __init__(self, degrees: Any, interpolation: InterpolationMode | int = InterpolationMode.NEAREST,
                 expand: bool = False, center: Sequence[int] | None = None, fill: Any = 0) -> None:
        super().__init__()
        self.degrees = _setup_angle(degrees, "degrees")
        self.interpolation = interpolation_mode(interpolation)
        if center is not None and (not isinstance(center, Sequence) or len(center) != 2):
            raise ValueError(f"center should be a sequence of 2 numbers (x, y), got {center!r}")
        if fill is None:
            fill = 0
        elif not isinstance(fill, (Sequence, numbers.Number)):
            raise TypeError(f"fill should be a number or a sequence, got {type(fill).__name__}")
        self.expand, self.center, self.fill = expand, center, fill

    @staticmethod
    def get_params(degrees: Sequence[float]) -> float:
        """A uniform angle in [degrees[0], degrees[1]]."""
        return _uniform(float(degrees[0]), float(degrees[1]))

    def _params(self, img: Any) -> dict[str, Any]:
        return {"angle": self.get_params(self.degrees)}

    def _apply(self, img: Any, params: dict[str, Any]) -> Any:
        fill = self.fill
        if isinstance(img, ember.Tensor):  # torchvision fills tensors per channel, in floats
            channels = F.get_dimensions(img)[0]
            fill = [float(fill)] * channels if isinstance(fill, numbers.Number) else [float(f) for f in fill]
        return F.rotate(img, params["angle"], self.interpolation, self.expand, self.center, fill)

    def __repr__(self) -> str:
        s = (f"{type(self).__name__}(degrees={self.degrees}, interpolation={self.interpolation.value}, "
             f"expand={self.expand}")
        if self.center is not None:
            s += f", center={self.center}"
        if self.fill is not None:
            s += f", fill={self.fill}"
        return s + ")"


class Grayscale(_Transform):
    """Convert to grayscale, with 1 or 3 (equal) channels."""

    def __init__(self, num_output_channels: int = 1) -> None:
        super().__init__()
        self.num_output_channels = num_output_channels

    def _apply(self, img: Any, params: dict[str, Any]) -> Any:
        return F.rgb_to_grayscale(img, self.num_output_channels)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_output_channels={self.num_output_channels})"


class RandomErasing(_Transform):
    """With probability ``p``, erase a random rectangle of a tensor image (Zhong et al., 2017)."""

    def __init__(self, p: float = 0.5, scale: tuple[float, float] = (0.02, 0.33),
                 ratio: tuple[float, float] = (0.3, 3.3), value: Any = 0, inplace: bool = False) -> None:
        super().__init__()
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError(f"If value is str, it should be 'random', got {value!r}")
        _check_range(scale, "scale")
        _check_range(ratio, "ratio")
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError(f"Scale should be between 0 and 1, got {scale}")
        if p < 0 or p > 1:
            raise ValueError(f"Random erasing probability should be between 0 and 1, got {p}")
        self.p, self.scale, self.ratio, self.value, self.inplace = p, scale, ratio, value, inplace

    @staticmethod
    def get_params(img: ember.Tensor, scale: Sequence[float], ratio: Sequence[float],
                   value: list[float] | None = None) -> tuple[int, int, int, int, ember.Tensor]:
        """(top, left, height, width, values) of the erased box; the whole image unchanged if none fits."""
        c, img_h, img_w = int(img.shape[-3]), int(img.shape[-2]), int(img.shape[-1])
        # the box's height is the draw's width, as torchvision names them (the other way round
        # from RandomResizedCrop's)
        found = _area_window(img_h, img_w, scale, ratio, lambda dh, dw: dw < img_h and dh < img_w)
        if found is None:
            return 0, 0, img_h, img_w, img
        w, h = found
        if value is None:
            v = ember.empty([c, h, w], dtype=ember.float32).normal_()
        else:
            v = ember.tensor(value, dtype=ember.float32)[:, None, None]
        return _randint(img_h - h + 1), _randint(img_w - w + 1), h, w, v

    def _value(self, img: ember.Tensor) -> list[float] | None:
        if isinstance(self.value, str):
            return None
        value = [float(self.value)] if isinstance(self.value, numbers.Number) else [float(v) for v in self.value]
        if len(value) not in (1, img.shape[-3]):
            raise ValueError("If value is a sequence, it should have either a single value or "
                             f"{img.shape[-3]} (number of input channels), got {len(value)}")
        return value

    def _params(self, img: Any) -> dict[str, Any]:
        if not isinstance(img, ember.Tensor):
            raise TypeError(f"RandomErasing works on tensor images, got {type(img).__name__}: put it after "
                            "ToTensor / PILToTensor")
        if not ember.rand(1).item() < self.p:
            return {"box": None}
        return {"box": self.get_params(img, self.scale, self.ratio, self._value(img))}

    def _apply(self, img: Any, params: dict[str, Any]) -> Any:
        if params["box"] is None:
            return img
        i, j, h, w, v = params["box"]
        if v is img:  # no box fitted
            return img
        return F.erase(img, i, j, h, w, v, self.inplace)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(p={self.p}, scale={self.scale}, ratio={self.ratio}, "
                f"value={self.value}, inplace={self.inplace})")
