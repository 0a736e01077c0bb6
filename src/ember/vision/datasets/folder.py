"""DatasetFolder and ImageFolder: samples in ``root/<class>/**/<file>``, classes from folder names."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .vision import VisionDataset

__all__ = ["DatasetFolder", "ImageFolder", "IMG_EXTENSIONS", "default_loader", "pil_loader",
           "find_classes", "make_dataset", "has_file_allowed_extension", "is_image_file"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def _pil_image() -> Any:
    """PIL.Image, or an ImportError that says how to install Pillow."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("ember.vision datasets return PIL images and need Pillow: "
                          "pip install 'ember[vision]' (or pip install pillow)") from None
    return Image


def has_file_allowed_extension(filename: str, extensions: str | tuple[str, ...]) -> bool:
    """Whether ``filename`` ends (case-insensitively) with one of ``extensions``."""
    return filename.lower().endswith(extensions if isinstance(extensions, str) else tuple(extensions))


def is_image_file(filename: str) -> bool:
    """Whether ``filename`` has one of ``IMG_EXTENSIONS``."""
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def find_classes(directory: str | Path) -> tuple[list[str], dict[str, int]]:
    """The sorted names of the folders in ``directory`` and their indices."""
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    return classes, {name: i for i, name in enumerate(classes)}


def make_dataset(
    directory: str | Path,
    class_to_idx: dict[str, int] | None = None,
    extensions: str | tuple[str, ...] | None = None,
    is_valid_file: Callable[[str], bool] | None = None,
    allow_empty: bool = False,
) -> list[tuple[str, int]]:
    """``(path, class_index)`` for every valid file under ``directory/<class>/`` (at any depth),
    classes in sorted order and files sorted within each folder.

    Exactly one of ``extensions`` and ``is_valid_file`` selects the files; a class without any
    valid file is a FileNotFoundError unless ``allow_empty``.
    """
    directory = os.path.expanduser(directory)
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    elif not class_to_idx:
        raise ValueError("'class_to_index' must have at least one entry to collect any samples.")
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at the same time")
    if extensions is not None:
        exts = extensions

        def is_valid_file(path: str) -> bool:
            return has_file_allowed_extension(path, exts)

    assert is_valid_file is not None
    instances = []
    found = set()
    for target_class in sorted(class_to_idx):
        index = class_to_idx[target_class]
        target_dir = os.path.join(directory, target_class)
        if not os.path.isdir(target_dir):
            continue
        for root, _, fnames in sorted(os.walk(target_dir, followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(root, fname)
                if is_valid_file(path):
                    instances.append((path, index))
                    found.add(target_class)
    empty = set(class_to_idx) - found
    if empty and not allow_empty:
        msg = f"Found no valid file for the classes {', '.join(sorted(empty))}. "
        if extensions is not None:
            shown = extensions if isinstance(extensions, str) else ", ".join(extensions)
            msg += f"Supported extensions are: {shown}"
        raise FileNotFoundError(msg)
    return instances


class DatasetFolder(VisionDataset):
    """Samples arranged as ``root/<class>/.../<file>``; ``loader(path)`` reads one.

    Attributes: ``classes`` (sorted folder names), ``class_to_idx``, ``samples`` (list of
    ``(path, class_index)``), ``targets``. Override ``find_classes``/``make_dataset`` for
    another layout.
    """

    def __init__(
        self,
        root: str | Path,
        loader: Callable[[str], Any],
        extensions: tuple[str, ...] | None = None,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        is_valid_file: Callable[[str], bool] | None = None,
        allow_empty: bool = False,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        classes, class_to_idx = self.find_classes(self.root)
        samples = self.make_dataset(self.root, class_to_idx=class_to_idx, extensions=extensions,
                                    is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.loader = loader
        self.extensions = extensions
        self.classes = classes
        self.class_to_idx = class_to_idx
        self.samples = samples
        self.targets = [s[1] for s in samples]

    @staticmethod
    def make_dataset(
        directory: str | Path,
        class_to_idx: dict[str, int],
        extensions: tuple[str, ...] | None = None,
        is_valid_file: Callable[[str], bool] | None = None,
        allow_empty: bool = False,
    ) -> list[tuple[str, int]]:
        """The samples of ``directory`` (see the module function ``make_dataset``)."""
        if class_to_idx is None:
            # the module function would fall back on its own find_classes, not an override's
            raise ValueError("The class_to_idx parameter cannot be None.")
        return make_dataset(directory, class_to_idx, extensions=extensions,
                            is_valid_file=is_valid_file, allow_empty=allow_empty)

    def find_classes(self, directory: str | Path) -> tuple[list[str], dict[str, int]]:
        """The class folders of ``directory`` and their indices; override for another layout."""
        return find_classes(directory)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        path, target = self.samples[index]
        sample = self.loader(path)
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target

    def __len__(self) -> int:
        return len(self.samples)


def pil_loader(path: str | Path) -> Any:
    """The image at ``path`` as an RGB PIL image (read fully, the file closed)."""
    with open(path, "rb") as f:
        return _pil_image().open(f).convert("RGB")


def default_loader(path: str | Path) -> Any:
    """``pil_loader``: PIL is ember.vision's only image backend."""
    return pil_loader(path)


class ImageFolder(DatasetFolder):
    """Images arranged as ``root/<class>/.../<image>``, loaded as RGB PIL images.

    Files count when their extension is in ``IMG_EXTENSIONS``, or, when given, when
    ``is_valid_file(path)`` says so. ``imgs`` is ``samples``.
    """

    def __init__(
        self,
        root: str | Path,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        loader: Callable[[str], Any] = default_loader,
        is_valid_file: Callable[[str], bool] | None = None,
        allow_empty: bool = False,
    ) -> None:
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None,
                         transform=transform, target_transform=target_transform,
                         is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.imgs = self.samples
