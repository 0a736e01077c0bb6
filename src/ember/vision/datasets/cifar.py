"""CIFAR10 and CIFAR100 from their python batches, read without unpickling code."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ._pickled_arrays import load_arrays_pickle
from .folder import _pil_image
from .utils import check_integrity, download_and_extract_archive
from .vision import VisionDataset

__all__ = ["CIFAR10", "CIFAR100"]


def _read_batch(path: str) -> dict[str, Any]:
    with open(path, "rb") as f:
        entry = load_arrays_pickle(f.read(), what=path)
    if not isinstance(entry, dict):
        raise RuntimeError(f"{path} is not a CIFAR batch: it holds a {type(entry).__name__}, not a dict")
    return entry


class CIFAR10(VisionDataset):
    """`CIFAR10 <https://www.cs.toronto.edu/~kriz/cifar.html>`_: 32x32 colour images, 10 classes.

    Files live in ``root/cifar-10-batches-py/`` (``data_batch_1`` ... ``data_batch_5``,
    ``test_batch``, ``batches.meta``), each checked against its md5. ``data`` is a NumPy uint8
    N x 32 x 32 x 3 array, ``targets`` a list of ints; an item is ``(PIL image "RGB", int)``
    before transforms. ``download=True`` fetches and unpacks ``url`` (md5 ``tgz_md5``).
    """

    base_folder = "cifar-10-batches-py"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    filename = "cifar-10-python.tar.gz"
    tgz_md5 = "c58f30108f718f92721af3b95e74349a"
    train_list = [
        ["data_batch_1", "c99cafc152244af753f735de768cd75f"],
        ["data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"],
        ["data_batch_3", "54ebc095f3ab1f0389bbae665268c751"],
        ["data_batch_4", "634d18415352ddfa80567beed471001a"],
        ["data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"],
    ]
    test_list = [
        ["test_batch", "40351d587109b95175f43aff81a1287e"],
    ]
    meta = {
        "filename": "batches.meta",
        "key": "label_names",
        "md5": "5ff9c542aee3614f3951f8cda6e48888",
    }

    def __init__(
        self,
        root: str | Path,
        train: bool = True,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        bad = self._first_bad_file()
        if bad is not None:
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to "
                               f"download it ({bad})")
        chunks = []
        self.targets: list[int] = []
        for file_name, _ in self.train_list if self.train else self.test_list:
            path = os.path.join(self.root, self.base_folder, file_name)
            entry = _read_batch(path)
            labels = entry.get("labels", entry.get("fine_labels"))
            data = entry.get("data")
            if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or labels is None:
                raise RuntimeError(f"{path} is not a CIFAR batch: it needs a uint8 'data' array "
                                   "and 'labels' (or 'fine_labels')")
            chunks.append(data)
            self.targets.extend(int(t) for t in labels)
        # rows are 3072 bytes: the red, green and blue 32x32 planes; items want HWC
        self.data: Any = np.vstack(chunks).reshape(-1, 3, 32, 32).transpose((0, 2, 3, 1))
        if len(self.data) != len(self.targets):
            raise RuntimeError(f"{self.base_folder}: {len(self.data)} images but {len(self.targets)} labels")
        self._load_meta()

    def _load_meta(self) -> None:
        path = os.path.join(self.root, self.base_folder, self.meta["filename"])
        if not check_integrity(path, self.meta["md5"]):
            raise RuntimeError("Dataset metadata file not found or corrupted. You can use "
                               f"download=True to download it ({path})")
        self.classes = list(_read_batch(path)[self.meta["key"]])
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img = _pil_image().fromarray(self.data[index])  # H x W x 3 uint8: mode "RGB"
        target = self.targets[index]
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return len(self.data)

    def _first_bad_file(self) -> str | None:
        """Why the batches are not usable (a missing file, or one with the wrong md5), or None."""
        for filename, md5 in self.train_list + self.test_list:
            fpath = os.path.join(self.root, self.base_folder, filename)
            if not os.path.isfile(fpath):
                return f"missing: {fpath}"
            if not check_integrity(fpath, md5):
                return f"wrong md5, expected {md5}: {fpath}"
        return None

    def _check_integrity(self) -> bool:
        return self._first_bad_file() is None

    def download(self) -> None:
        """Download and unpack the archive unless every batch is present with its md5."""
        if self._check_integrity():
            return
        download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.tgz_md5)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"


class CIFAR100(CIFAR10):
    """`CIFAR100 <https://www.cs.toronto.edu/~kriz/cifar.html>`_: 32x32 colour images, 100
    classes (``targets`` are the fine labels), in ``root/cifar-100-python/``."""

    base_folder = "cifar-100-python"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
    filename = "cifar-100-python.tar.gz"
    tgz_md5 = "eb9058c3a382ffc7106e4002c42a8d85"
    train_list = [
        ["train", "16019d7e3df5f24257cddd939b257f8d"],
    ]
    test_list = [
        ["test", "f0ef6b0ae62326f3e7ffdfab6717acfc"],
    ]
    meta = {
        "filename": "meta",
        "key": "fine_label_names",
        "md5": "7973b15100ade9c7d40fb424638fde48",
    }
