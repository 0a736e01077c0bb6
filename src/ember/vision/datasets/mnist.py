"""MNIST and its relatives (FashionMNIST, KMNIST, EMNIST), read from idx files with NumPy."""

from __future__ import annotations

import gzip
import os
import shutil
import string
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ... import from_numpy, load
from .folder import _pil_image
from .utils import (
    _download,
    check_integrity,
    download_and_extract_archive,
    extract_archive,
    verify_str_arg,
)
from .vision import VisionDataset

__all__ = ["MNIST", "FashionMNIST", "KMNIST", "EMNIST", "read_sn3_pascalvincent_tensor",
           "read_image_file", "read_label_file"]

# idx type byte -> big-endian NumPy dtype ("Pascal Vincent" SN3 format, as LeCun's files use)
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}



def read_sn3_pascalvincent_tensor(path: str | Path, strict: bool = True) -> Any:
    """An idx file (optionally gzip-compressed) as an ember tensor of its dtype and shape.

    The header is two zero bytes, a type byte (0x08 uint8 ... 0x0E float64), the number of
    dimensions, then each dimension as a big-endian int32; the values follow, big-endian.
    ``strict=False`` allows extra bytes after the values (torchvision's flag); too few is an error.
    """
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":  # a .gz idx file read without unpacking it first
        data = gzip.decompress(data)
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_DTYPES or not 1 <= data[3] <= 3:
        raise ValueError(f"{path} is not an idx file: its header bytes are {data[:4]!r}, expected "
                         "0x00 0x00, a type byte (0x08..0x0E) and 1-3 dimensions")
    dtype = np.dtype(_IDX_DTYPES[data[2]])
    nd = data[3]
    if len(data) < 4 + 4 * nd:
        raise ValueError(f"{path} is truncated: its header ends after {len(data)} bytes")
    shape = tuple(int(x) for x in np.frombuffer(data, dtype=">u4", count=nd, offset=4))
    count = int(np.prod(shape))
    have = (len(data) - 4 - 4 * nd) // dtype.itemsize
    if have < count or (strict and have != count):
        raise ValueError(f"{path} holds {have} values but its header says shape {shape} "
                         f"({count} values): the file is truncated or corrupted; delete it and "
                         "download it again")
    values = np.frombuffer(data, dtype=dtype, count=count, offset=4 + 4 * nd)
    # native byte order, and a writable copy: frombuffer over bytes is read-only
    return from_numpy(values.astype(dtype.newbyteorder("="), copy=True).reshape(shape))


def read_label_file(path: str | Path) -> Any:
    """An idx1 uint8 label file as an int64 ember tensor."""
    x = read_sn3_pascalvincent_tensor(path, strict=False)
    if str(x.dtype) != "torch.uint8":
        raise TypeError(f"x should be of dtype torch.uint8 instead of {x.dtype} ({path})")
    if x.ndim != 1:
        raise ValueError(f"x should have 1 dimension instead of {x.ndim} ({path})")
    return x.long()


def read_image_file(path: str | Path) -> Any:
    """An idx3 uint8 image file as an N x H x W uint8 ember tensor."""
    x = read_sn3_pascalvincent_tensor(path, strict=False)
    if str(x.dtype) != "torch.uint8":
        raise TypeError(f"x should be of dtype torch.uint8 instead of {x.dtype} ({path})")
    if x.ndim != 3:
        raise ValueError(f"x should have 3 dimension instead of {x.ndim} ({path})")
    return x


class MNIST(VisionDataset):
    """`MNIST <http://yann.lecun.com/exdb/mnist/>`_: 28x28 grey digits, 60000 train / 10000 test.

    Files live in ``root/MNIST/raw/`` (``train-images-idx3-ubyte`` ...). ``data`` is an
    N x 28 x 28 uint8 tensor, ``targets`` an int64 tensor; an item is ``(PIL image "L", int)``
    before transforms. ``download=True`` fetches the gzipped files from ``mirrors`` in order,
    checks each md5 from ``resources`` and unpacks them.
    """

    mirrors = [
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    ]
    resources = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    training_file = "training.pt"
    test_file = "test.pt"
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six",
               "7 - seven", "8 - eight", "9 - nine"]

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
        if self._check_legacy_exist():
            self.data, self.targets = self._load_legacy_data()
            return
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it "
                               f"(looked for the {type(self).__name__} files in {self.raw_folder})")
        self.data, self.targets = self._load_data()

    # torchvision's old attribute names, kept with its warning
    @property
    def train_labels(self) -> Any:
        warnings.warn("train_labels has been renamed targets", stacklevel=2)
        return self.targets

    @property
    def test_labels(self) -> Any:
        warnings.warn("test_labels has been renamed targets", stacklevel=2)
        return self.targets

    @property
    def train_data(self) -> Any:
        warnings.warn("train_data has been renamed data", stacklevel=2)
        return self.data

    @property
    def test_data(self) -> Any:
        warnings.warn("test_data has been renamed data", stacklevel=2)
        return self.data

    def _check_legacy_exist(self) -> bool:
        # torchvision < 0.9 cached processed/training.pt and test.pt; still read when present
        if not os.path.exists(self.processed_folder):
            return False
        return all(check_integrity(os.path.join(self.processed_folder, f))
                   for f in (self.training_file, self.test_file))

    def _load_legacy_data(self) -> tuple[Any, Any]:
        data_file = self.training_file if self.train else self.test_file
        return load(os.path.join(self.processed_folder, data_file), weights_only=True)

    def _load_data(self) -> tuple[Any, Any]:
        prefix = "train" if self.train else "t10k"
        data = read_image_file(os.path.join(self.raw_folder, f"{prefix}-images-idx3-ubyte"))
        targets = read_label_file(os.path.join(self.raw_folder, f"{prefix}-labels-idx1-ubyte"))
        if len(data) != len(targets):
            raise RuntimeError(f"{type(self).__name__} in {self.raw_folder}: {len(data)} images but "
                               f"{len(targets)} labels; delete the files and download them again")
        return data, targets

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img = _pil_image().fromarray(self.data[index].numpy())  # 2-D uint8: mode "L"
        target = int(self.targets[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return len(self.data)

    @property
    def raw_folder(self) -> str:
        return os.path.join(self.root, self.__class__.__name__, "raw")

    @property
    def processed_folder(self) -> str:
        return os.path.join(self.root, self.__class__.__name__, "processed")

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.classes)}

    def _check_exists(self) -> bool:
        # the unpacked files must exist (torchvision checks no md5 of them either)
        return all(check_integrity(os.path.join(self.raw_folder, os.path.splitext(os.path.basename(f))[0]))
                   for f, _ in self.resources)

    def download(self) -> None:
        """Download the files unless they are already in ``raw_folder``."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        for filename, md5 in self.resources:
            unpacked = os.path.join(self.raw_folder, os.path.splitext(filename)[0])
            _download([m + filename for m in self.mirrors], self.raw_folder, filename, md5,
                      by_hand=f" (or its unpacked form at {unpacked})")
            extract_archive(os.path.join(self.raw_folder, filename), self.raw_folder)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"


class FashionMNIST(MNIST):
    """`Fashion-MNIST <https://github.com/zalandoresearch/fashion-mnist>`_: 28x28 grey clothing
    images in MNIST's format, under ``root/FashionMNIST/raw/``."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot"]


class KMNIST(MNIST):
    """`Kuzushiji-MNIST <https://github.com/rois-codh/kmnist>`_: 28x28 cursive Japanese
    characters in MNIST's format, under ``root/KMNIST/raw/``."""

    mirrors = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "bdb82020997e1d708af4cf47b453dcf7"),
        ("train-labels-idx1-ubyte.gz", "e144d726b3acfaa3e44228e80efcd344"),
        ("t10k-images-idx3-ubyte.gz", "5c965bf0a639b31b8f53240b1b52f4d7"),
        ("t10k-labels-idx1-ubyte.gz", "7320c461ea6c1c855c0b718fb2a4b134"),
    ]
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]


class EMNIST(MNIST):
    """`EMNIST <https://www.nist.gov/itl/products-and-services/emnist-dataset>`_: handwritten
    digits and letters; ``split`` is one of ``byclass``, ``bymerge``, ``balanced``, ``letters``,
    ``digits``, ``mnist``. Files: ``root/EMNIST/raw/emnist-<split>-<train|test>-*-idx?-ubyte``;
    ``download=True`` fetches NIST's one zip of all splits (``url``, ``md5``).

    As in torchvision, the images are stored transposed (the character lies on its side).
    """

    url = "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"
    md5 = "58c8d27c78d21e728a6bc7b3cc06412e"
    splits = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")
    # upper and lower case of these letters look alike: merged into one class
    _merged_classes = {"c", "i", "j", "k", "l", "m", "o", "p", "s", "u", "v", "w", "x", "y", "z"}
    _all_classes = set(string.digits + string.ascii_letters)
    classes_split_dict = {
        "byclass": sorted(_all_classes),
        "bymerge": sorted(_all_classes - _merged_classes),
        "balanced": sorted(_all_classes - _merged_classes),
        "letters": ["N/A", *string.ascii_lowercase],
        "digits": list(string.digits),
        "mnist": list(string.digits),
    }

    def __init__(self, root: str | Path, split: str, **kwargs: Any) -> None:
        self.split = verify_str_arg(split, "split", self.splits)
        self.training_file = f"training_{split}.pt"
        self.test_file = f"test_{split}.pt"
        super().__init__(root, **kwargs)
        self.classes = self.classes_split_dict[self.split]

    @property
    def _file_prefix(self) -> str:
        return f"emnist-{self.split}-{'train' if self.train else 'test'}"

    @property
    def images_file(self) -> str:
        return os.path.join(self.raw_folder, f"{self._file_prefix}-images-idx3-ubyte")

    @property
    def labels_file(self) -> str:
        return os.path.join(self.raw_folder, f"{self._file_prefix}-labels-idx1-ubyte")

    def _load_data(self) -> tuple[Any, Any]:
        return read_image_file(self.images_file), read_label_file(self.labels_file)

    def _check_exists(self) -> bool:
        return all(check_integrity(f) for f in (self.images_file, self.labels_file))

    def download(self) -> None:
        """Download and unpack NIST's zip (all splits) unless this split's files are present."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        download_and_extract_archive(self.url, download_root=self.raw_folder, md5=self.md5)
        gzip_folder = os.path.join(self.raw_folder, "gzip")
        for name in sorted(os.listdir(gzip_folder)):
            if name.endswith(".gz"):
                extract_archive(os.path.join(gzip_folder, name), self.raw_folder)
        shutil.rmtree(gzip_folder)
