"""``torch.utils.data._utils.collate`` at PyTorch's module path."""

from .._collate import default_collate, default_convert

__all__ = ["default_collate", "default_convert"]
