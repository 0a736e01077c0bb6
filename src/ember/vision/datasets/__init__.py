"""ember.vision.datasets: torchvision.datasets' classic datasets, written for ember.

MNIST, FashionMNIST, KMNIST, EMNIST, CIFAR10, CIFAR100, ImageFolder, DatasetFolder and FakeData,
with torchvision's arguments, on-disk layout, attributes and item types. ``download=True``
fetches from torchvision's sources with its md5 checks; files are parsed without running code
from them (idx files with NumPy, CIFAR's pickles with a restricted reader).
"""

from __future__ import annotations

from .cifar import CIFAR10, CIFAR100
from .fakedata import FakeData
from .folder import DatasetFolder, ImageFolder
from .mnist import EMNIST, KMNIST, MNIST, FashionMNIST
from .vision import VisionDataset

__all__ = ["CIFAR10", "CIFAR100", "DatasetFolder", "EMNIST", "FakeData", "FashionMNIST",
           "ImageFolder", "KMNIST", "MNIST", "VisionDataset"]


def __getattr__(name: str) -> object:
    # torchvision has many more datasets; say which ones exist here instead of a bare miss
    raise AttributeError(
        f"module {__name__!r} has no attribute {name!r}"
        + (f": ember.vision.datasets provides {', '.join(__all__)}; torchvision's other "
           "datasets are not part of ember.vision" if name[:1].isupper() else ""))
