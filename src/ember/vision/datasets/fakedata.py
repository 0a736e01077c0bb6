"""FakeData: random images with random labels, the same for the same index and offset."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import Generator, long, randint, randn
from .folder import _pil_image
from .vision import VisionDataset

__all__ = ["FakeData"]

_MODES = {1: "L", 3: "RGB", 4: "RGBA"}


class FakeData(VisionDataset):
    """``size`` random PIL images of ``image_size`` (C, H, W) with labels in ``[0, num_classes)``.

    Item ``i`` comes from a generator seeded with ``i + random_offset``, so it is the same every
    time and the global random state is left alone. As in torchvision the pixels are
    ``randn * 255`` truncated to integers and wrapped to 0..255 (noise, not a Gaussian image).
    """

    def __init__(
        self,
        size: int = 1000,
        image_size: tuple[int, int, int] = (3, 224, 224),
        num_classes: int = 10,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        random_offset: int = 0,
    ) -> None:
        super().__init__(transform=transform, target_transform=target_transform)
        if len(image_size) != 3 or image_size[0] not in _MODES:
            raise ValueError(f"FakeData image_size must be (C, H, W) with C in 1, 3 or 4, got {image_size}")
        self.size = size
        self.num_classes = num_classes
        self.image_size = image_size
        self.random_offset = random_offset

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        if index >= len(self):
            raise IndexError(f"{self.__class__.__name__} index out of range")
        g = Generator().manual_seed(index + self.random_offset)
        pixels = randn(*self.image_size, generator=g).numpy()
        target = int(randint(0, self.num_classes, (1,), generator=g, dtype=long)[0])
        # torchvision's ToPILImage of a float tensor: mul(255), truncate, wrap to uint8
        hwc = (pixels * np.float32(255)).astype(np.int64).astype(np.uint8).transpose(1, 2, 0)
        channels = self.image_size[0]
        img = _pil_image().fromarray(hwc[:, :, 0] if channels == 1 else hwc)  # L, RGB or RGBA
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return self.size
