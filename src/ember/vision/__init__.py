"""ember.vision: a torchvision-compatible package written for ember.

``import ember.vision as torchvision`` gives it directly; under ``ember run`` a program's
``import torchvision`` (and ``from torchvision import datasets, transforms``) loads it. Images
need Pillow: ``pip install 'ember[vision]'``.

Submodules load when first used, as torchvision's names do when imported: ``datasets``,
``transforms``, ``models``, ``ops``, ``utils``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__version__ = "0.28.0+ember"  # the torchvision release whose API this package follows

_SUBMODULES = ("datasets", "transforms", "models", "ops", "utils", "io")
_image_backend = "PIL"


def __getattr__(name: str) -> ModuleType:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_SUBMODULES])


def get_image_backend() -> str:
    """The image backend datasets use to load images: always ``"PIL"`` here."""
    return _image_backend


def set_image_backend(backend: str) -> None:
    """Choose the image backend; ember supports ``"PIL"`` only (torchvision's ``accimage`` is absent)."""
    if backend != "PIL":
        raise ValueError(f"Invalid backend '{backend}'. ember.vision supports only 'PIL'")
