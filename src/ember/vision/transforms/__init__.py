"""Image transforms, torchvision's ``transforms`` (``v2`` is the submodule ``transforms.v2``)."""

from . import functional
from .functional import InterpolationMode
from .transforms import *  # noqa: F403
from .transforms import __all__ as _transform_names

__all__ = ["InterpolationMode", "functional", *_transform_names]
