"""The v2 transform classes: v1's parameter draws and arithmetic (``transforms.transforms``) under
the v2 calling convention (``Transform``), v2's constructor defaults and v2's ``repr``."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import ember

from .. import transforms as v1
from ..functional import InterpolationMode, _is_pil, _pad_amounts, _size_list
from . import functional as F2
from ._transform import Transform

__all__ = ["Transform", "Compose", "ToImage", "ToDtype", "ToPureTensor", "ToTensor", "PILToTensor",
           "ConvertImageDtype", "ToPILImage", "Normalize", "Resize", "CenterCrop", "Pad", "Lambda", "RandomCrop",
           "RandomHorizontalFlip", "RandomVerticalFlip", "RandomResizedCrop", "ColorJitter", "RandomRotation",
           "Grayscale", "RandomErasing"]


class Compose(Transform):
    """Apply ``transforms`` one after the other; several inputs go through as a tuple."""

    def __init__(self, transforms: Sequence[Callable[..., Any]]) -> None:
        super().__init__()
        if not isinstance(transforms, Sequence):
            raise TypeError(f"transforms should be a sequence of callables, got {type(transforms).__name__}")
        if not transforms:
            raise ValueError("Pass at least one transform")
        self.transforms = list(transforms)

    def forward(self, *inputs: Any) -> Any:
        unpack = len(inputs) > 1
        outputs: Any = inputs if unpack else inputs[0]
        for t in self.transforms:
            outputs = t(*outputs) if unpack else t(outputs)
        return outputs

    def __repr__(self) -> str:
        return type(self).__name__ + "(" + "".join(f"\n      {t}" for t in self.transforms) + "\n)"


class ToImage(Transform):
    """PIL image, HWC ndarray or tensor -> CHW tensor (dtype kept: uint8 stays uint8)."""

    _transformed_types = (ember.Tensor, np.ndarray)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F2.to_image(inpt)


class ToDtype(Transform):
    """Change the dtype of images; ``scale=True`` also rescales values (uint8 255 <-> float 1.0)."""

    def __init__(self, dtype: ember.dtype, scale: bool = False) -> None:
        super().__init__()
        if isinstance(dtype, dict):
            raise TypeError("ToDtype with a dict of dtypes per tv_tensor type is not supported (ember has no "
                            "tv_tensors): pass one dtype, which applies to the images")
        if not isinstance(dtype, ember.dtype):
            raise TypeError(f"dtype should be an ember dtype, got {dtype!r}")
        self.dtype, self.scale = dtype, scale

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F2.to_dtype(inpt, self.dtype, self.scale)

    def _repr_fields(self) -> dict[str, Any]:
        return {"scale": self.scale}


class ToPureTensor(Transform):
    """Strip tensor subclasses; ember's images are plain tensors already, so this is the identity."""

    _transforms_pil = False

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return inpt


class ToTensor(Transform):
    """Deprecated in torchvision's v2 as here: use ``Compose([ToImage(), ToDtype(float32, scale=True)])``."""

    _transformed_types = (np.ndarray,)

    def __init__(self) -> None:
        warnings.warn("The transform `ToTensor()` is deprecated: use `v2.Compose([v2.ToImage(), "
                      "v2.ToDtype(torch.float32, scale=True)])`, which gives the same result.", stacklevel=2)
        super().__init__()

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F2.to_tensor(inpt)


class PILToTensor(Transform):
    """PIL image -> CHW tensor of the same dtype, unscaled."""

    _transformed_types = ()

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F2.pil_to_tensor(inpt)


class ConvertImageDtype(Transform):
    """``ToDtype(dtype, scale=True)`` under its v1 name."""

    _transforms_pil = False

    def __init__(self, dtype: ember.dtype = ember.float32) -> None:
        super().__init__()
        self.dtype = dtype

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F2.to_dtype(inpt, self.dtype, scale=True)


class ToPILImage(Transform):
    """CHW tensor / HWC ndarray -> PIL image."""

    _transformed_types = (ember.Tensor, np.ndarray)
    _transforms_pil = False

    def __init__(self, mode: str | None = None) -> None:
        super().__init__()
        self.mode = mode

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F2.to_pil_image(inpt, self.mode)

    def _repr_fields(self) -> dict[str, Any]:
        return {"mode": self.mode}


class Normalize(Transform, v1.Normalize):
    """(x - mean) / std per channel of a float tensor image."""

    _transforms_pil = False

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> None:
        super().__init__(list(mean), list(std), inplace)

    def _repr_fields(self) -> dict[str, Any]:
        return {"mean": self.mean, "std": self.std, "inplace": self.inplace}


class Resize(Transform, v1.Resize):
    """Resize to ``size``; ``size=None`` with ``max_size`` bounds the longer edge instead."""

    def __init__(self, size: Any, interpolation: InterpolationMode | int = InterpolationMode.BILINEAR,
                 max_size: int | None = None, antialias: bool | None = True) -> None:
        if size is None and max_size is None:
            raise ValueError("Resize needs size, or max_size when size is None")
        super().__init__(1 if size is None else size, interpolation, max_size, antialias)
        self.size = _size_list(size, "size")
        if self.size is not None and max_size is not None and len(self.size) != 1:
            raise ValueError("max_size should only be passed if size is None or specifies the length of the "
                             "smaller edge, i.e. size should be an int or a sequence of length 1")

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F2.resize(inpt, self.size, self.interpolation, self.max_size, self.antialias)

    def _repr_fields(self) -> dict[str, Any]:
        return {"size": self.size, "interpolation": self.interpolation.value, "max_size": self.max_size,
                "antialias": self.antialias}


class CenterCrop(Transform, v1.CenterCrop):
    """Crop the central (h, w) window."""

    def _repr_fields(self) -> dict[str, Any]:
        return {"size": self.size}


class Pad(Transform, v1.Pad):
    """Pad the borders."""

    def _repr_fields(self) -> dict[str, Any]:
        return {"padding": self.padding, "fill": self.fill, "padding_mode": self.padding_mode}


class Lambda(Transform):
    """A user function, applied to the leaves of the given ``types`` (all leaves by default)."""

    def __init__(self, lambd: Callable[[Any], Any], *types: type) -> None:
        super().__init__()
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd
        self.types = types or (object,)
        self._transformed_types = self.types

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self.lambd(inpt)

    def __repr__(self) -> str:
        name = getattr(self.lambd, "__name__", None)
        extras = ([name] if name else []) + [f"types={[t.__name__ for t in self.types]}"]
        return f"{type(self).__name__}({', '.join(extras)})"


class RandomCrop(Transform, v1.RandomCrop):
    """Crop a random window, optionally after padding."""

    def _repr_fields(self) -> dict[str, Any]:
        padding = None
        if self.padding is not None:  # v2 shows the padding as [left, right, top, bottom]
            left, top, right, bottom = _pad_amounts(self.padding)
            padding = [left, right, top, bottom]
        return {"size": self.size, "padding": padding, "pad_if_needed": self.pad_if_needed, "fill": self.fill,
                "padding_mode": self.padding_mode}


class RandomHorizontalFlip(Transform, v1.RandomHorizontalFlip):
    """Mirror left-right with probability ``p``."""

    def _repr_fields(self) -> dict[str, Any]:
        return {"p": self.p}


class RandomVerticalFlip(Transform, v1.RandomVerticalFlip):
    """Mirror top-bottom with probability ``p``."""

    def _repr_fields(self) -> dict[str, Any]:
        return {"p": self.p}


class RandomResizedCrop(Transform, v1.RandomResizedCrop):
    """Crop a random area and aspect ratio, then resize it to ``size``."""

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F2.resized_crop(inpt, *params["window"], list(self.size), self.interpolation,
                               antialias=self.antialias)

    def _repr_fields(self) -> dict[str, Any]:
        return {"size": self.size, "scale": self.scale, "ratio": self.ratio,
                "interpolation": self.interpolation.value, "antialias": self.antialias}


class ColorJitter(Transform, v1.ColorJitter):
    """Random brightness, contrast, saturation and hue changes in a random order."""

    def _repr_fields(self) -> dict[str, Any]:
        return {"brightness": self.brightness, "contrast": self.contrast, "saturation": self.saturation,
                "hue": self.hue}


class RandomRotation(Transform, v1.RandomRotation):
    """Rotate by a random angle from ``degrees``."""

    def __init__(self, degrees: Any, interpolation: InterpolationMode | int | str = InterpolationMode.NEAREST,
                 expand: bool = False, center: Sequence[float] | None = None, fill: Any = 0) -> None:
        super().__init__(degrees, interpolation, expand, center, fill)

    def _repr_fields(self) -> dict[str, Any]:
        return {"degrees": self.degrees, "interpolation": self.interpolation.value, "expand": self.expand,
                "fill": self.fill, "center": self.center}


class Grayscale(Transform, v1.Grayscale):
    """Convert to grayscale with 1 or 3 channels."""

    def _repr_fields(self) -> dict[str, Any]:
        return {"num_output_channels": self.num_output_channels}


class RandomErasing(Transform, v1.RandomErasing):
    """With probability ``p``, erase a random rectangle of a tensor image."""

    _transforms_pil = False

    def __init__(self, p: float = 0.5, scale: Sequence[float] = (0.02, 0.33), ratio: Sequence[float] = (0.3, 3.3),
                 value: float | str | Sequence[float] = 0.0, inplace: bool = False) -> None:
        super().__init__(p, scale, ratio, value, inplace)

    def forward(self, *inputs: Any) -> Any:
        leaves = inputs if len(inputs) > 1 else (inputs[0],)
        if any(_is_pil(x) for x in leaves):
            raise TypeError("RandomErasing works on tensor images: put it after ToImage/ToDtype "
                            "(torchvision passes PIL images through unchanged)")
        return super().forward(*inputs)

    def _repr_fields(self) -> dict[str, Any]:
        value = None if isinstance(self.value, str) else (
            [float(self.value)] if isinstance(self.value, (int, float)) else [float(v) for v in self.value])
        return {"p": self.p, "scale": self.scale, "ratio": self.ratio, "value": value, "inplace": self.inplace}
