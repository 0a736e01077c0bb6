"""Transforms v2 (torchvision's ``transforms.v2``): the same transforms, called on a whole sample
(``t(image, label)``, dicts, lists), with ``ToImage``, ``ToDtype`` and ``ToPureTensor``."""

from . import functional
from ._transforms import *  # noqa: F403
from ._transforms import __all__ as _names
from .functional import InterpolationMode

__all__ = ["InterpolationMode", "functional", *_names]
