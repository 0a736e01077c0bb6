"""``torch.nn.modules.pixelshuffle``'s classes at PyTorch's module path (they live in upsampling)."""

from .upsampling import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]
