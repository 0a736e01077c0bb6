"""Package metadata for ``torch`` and ``torchvision`` under ``ember run``.

Libraries gate features on ``importlib.metadata.version("torch")`` (diffusers, accelerate,
lightning_utilities' ``RequirementCache("torch>=2.1")``...). Under ``ember run``, ``import torch``
is ember, so these lookups answer with the releases ember mirrors (``torch.__version__``,
``torchvision.__version__``), from a finder on ``sys.meta_path`` that lives only in this process:
nothing is written to disk, so pip and other processes see no ``torch`` distribution. Installed
by :func:`ember._alias.install`, removed by its ``uninstall``.
"""

from __future__ import annotations

import importlib.abc
import importlib.metadata
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._version import __version__ as _torch_version

__all__ = ["install", "uninstall"]


def _normalized(name: str) -> str:
    """PEP 503's normal form: ``Torch_Vision`` and ``torch-vision`` name the same project."""
    return name.lower().replace("-", "_").replace(".", "_")


def _torchvision_version() -> str:
    from .vision import __version__

    return __version__


# project name -> its version (a function: ember.vision is imported only when asked about)
_VERSIONS = {"torch": lambda: _torch_version, "torchvision": _torchvision_version}


class MirroredDistribution(importlib.metadata.Distribution):
    """The metadata of one mirrored project: its name and version, no files, no requirements."""

    def __init__(self, name: str) -> None:
        self._name = name

    def read_text(self, filename: str) -> str | None:
        if filename in ("METADATA", "PKG-INFO"):
            version = _VERSIONS[self._name]()
            return (f"Metadata-Version: 2.1\nName: {self._name}\nVersion: {version}\n"
                    f"Summary: answered by ember run (ember mirrors this release's API)\n")
        return None  # no RECORD (files() is None), entry_points.txt, requires.txt...

    def locate_file(self, path: Any) -> Path:
        import ember

        return Path(ember.__file__).parent / str(path)


class MirroredFinder(importlib.abc.MetaPathFinder):
    """Finds no modules (the import alias does that); finds the mirrored distributions."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        return None

    def find_distributions(
        self, context: Any = importlib.metadata.DistributionFinder.Context()
    ) -> Iterator[importlib.metadata.Distribution]:
        name = getattr(context, "name", None)
        for project in _VERSIONS:
            if name is None or _normalized(name) == project:
                yield MirroredDistribution(project)


_finder = MirroredFinder()


def install() -> None:
    """Answer metadata lookups for ``torch``/``torchvision`` first, ahead of installed ones."""
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
