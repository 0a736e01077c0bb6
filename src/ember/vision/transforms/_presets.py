"""The preprocessing that pretrained weights expect: ``ImageClassification``, which a weights
enum's ``.transforms()`` returns (``ResNet50_Weights.DEFAULT.transforms()``)."""

from __future__ import annotations

from typing import Any

from ... import float32, nn
from ..._tensor import Tensor
from . import functional as F
from .functional import InterpolationMode

__all__ = ["ImageClassification"]


class ImageClassification(nn.Module):
    """Resize the shorter side to ``resize_size``, center-crop ``crop_size``, convert to float
    in [0, 1] and normalize with ``mean``/``std``. Accepts a PIL image, a ``(C, H, W)`` tensor or
    a ``(B, C, H, W)`` batch; returns float32 tensors."""

    def __init__(self, *, crop_size: int, resize_size: int = 256,
                 mean: tuple[float, ...] = (0.485, 0.456, 0.406),
                 std: tuple[float, ...] = (0.229, 0.224, 0.225),
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 antialias: bool | None = True) -> None:
        super().__init__()
        self.crop_size = [crop_size]
        self.resize_size = [resize_size]
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation
        self.antialias = antialias

    def forward(self, img: Any) -> Tensor:
        img = F.resize(img, self.resize_size, interpolation=self.interpolation,
                       antialias=self.antialias)
        img = F.center_crop(img, self.crop_size)
        if not isinstance(img, Tensor):
            img = F.pil_to_tensor(img)
        img = F.convert_image_dtype(img, float32)
        return F.normalize(img, mean=self.mean, std=self.std)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(\n    crop_size={self.crop_size}\n"
                f"    resize_size={self.resize_size}\n    mean={self.mean}\n    std={self.std}\n"
                f"    interpolation={self.interpolation}\n)")

    def describe(self) -> str:
        """What the preset does, in torchvision's words."""
        return ("Accepts ``PIL.Image``, batched ``(B, C, H, W)`` and single ``(C, H, W)`` image "
                "``torch.Tensor`` objects. The images are resized to "
                f"``resize_size={self.resize_size}`` using ``interpolation={self.interpolation}``, "
                f"followed by a central crop of ``crop_size={self.crop_size}``. Finally the values "
                "are first rescaled to ``[0.0, 1.0]`` and then normalized using "
                f"``mean={self.mean}`` and ``std={self.std}``.")

