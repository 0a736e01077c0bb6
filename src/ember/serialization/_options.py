"""The other helpers of ``torch.serialization``: default load options (endianness, mmap
flags, CRC-32), ``skip_data``, ``mkdtemp``, the storage location registry (``register_package``,
``location_tag``, ``default_restore_location``), version checks and ``StorageType``."""

from __future__ import annotations

import mmap as _mmap_module
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Any

from .. import _backend, _dtype
from .._dtype import dtype as _dtype_cls
from .._tensor import Tensor
from ._common import _DTYPE_OF_STORAGE, _location


# -- the other helpers of torch.serialization ---------------------------------------------------
class SourceChangeWarning(Warning):
    """PyTorch warns with this when a pickled module's source changed (ember never does)."""


class LoadEndianness(Enum):
    """Byte order assumed for checkpoints without a ``byteorder`` record (pre-1.10 files)."""

    NATIVE = 1
    LITTLE = 2
    BIG = 3


_load_endianness: list[LoadEndianness | None] = [None]

MAP_PRIVATE = getattr(_mmap_module, "MAP_PRIVATE", 2)

MAP_SHARED = getattr(_mmap_module, "MAP_SHARED", 1)

_mmap_flags = [MAP_PRIVATE]

_crc32 = [True]


def get_default_load_endianness() -> LoadEndianness | None:
    """The byte order assumed for archives without a ``byteorder`` record (None: little)."""
    return _load_endianness[0]


def set_default_load_endianness(endianness: LoadEndianness | None) -> None:
    """Set the byte order assumed for archives without a ``byteorder`` record."""
    if endianness is not None and not isinstance(endianness, LoadEndianness):
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    _load_endianness[0] = endianness


def get_default_mmap_options() -> int | None:
    """The ``mmap`` flags ``load(mmap=True)`` uses: ``MAP_PRIVATE`` (default) or ``MAP_SHARED``."""
    return _mmap_flags[0]


class set_default_mmap_options:  # noqa: N801 - PyTorch's name
    """Set the ``mmap`` flags of ``load(mmap=True)``; also a context manager that restores them.

    ``MAP_PRIVATE`` (default): writes to loaded tensors stay in memory. ``MAP_SHARED``: they
    are written to the file.
    """

    def __init__(self, flags: int) -> None:
        if flags not in (MAP_PRIVATE, MAP_SHARED):
            raise ValueError(
                "Invalid argument in function set_default_mmap_options, expected "
                f"mmap.MAP_PRIVATE or mmap.MAP_SHARED, but got {flags}")
        self.prev = _mmap_flags[0]
        _mmap_flags[0] = flags

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _mmap_flags[0] = self.prev


def get_crc32_options() -> bool:
    """Whether ``save`` computes each record's CRC-32 (ember always does)."""
    return _crc32[0]


def set_crc32_options(compute_crc32: bool) -> None:
    """Accepted for compatibility: ember always writes CRC-32s (``load`` checks them)."""
    _crc32[0] = bool(compute_crc32)


class skip_data:  # noqa: N801 - PyTorch's name
    """Context manager: ``save`` writes every storage record at full size but with zero bytes,
    and ``load`` gives tensors of the right shapes filled with zeros, reading no storage bytes.

    Args:
        materialize_fake_tensors: accepted for compatibility (ember has no fake tensors).
    """

    active = False

    def __init__(self, materialize_fake_tensors: bool = False) -> None:
        self.materialize_fake_tensors = materialize_fake_tensors

    def __enter__(self) -> skip_data:
        self.prev = skip_data.active
        skip_data.active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        skip_data.active = self.prev


_skip_data = skip_data


@contextmanager
def mkdtemp() -> Iterator[str]:
    """A temporary directory for the block, removed afterwards."""
    import shutil
    import tempfile

    path = tempfile.mkdtemp()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


_packages: list[tuple[int, Callable, Callable]] = []


def register_package(priority: int, tagger: Callable[[Any], str | None],
                     deserializer: Callable[[Any, str], Any]) -> None:
    """Register a ``tagger(storage) -> location`` and ``deserializer(storage, location)``
    pair, consulted (lowest priority first) by ``location_tag`` and ``default_restore_location``."""
    _packages.append((priority, tagger, deserializer))
    _packages.sort(key=lambda p: p[0])


def location_tag(storage: Any) -> str:
    """Where a tensor (ember's storages are tensors) lives, as a checkpoint names it."""
    for _, tagger, _ in _packages:
        tag = tagger(storage)
        if tag:
            return tag
    if isinstance(storage, Tensor):
        return _location(storage._data)
    raise RuntimeError(f"don't know how to determine data location of {type(storage).__name__}")


def validate_cuda_device(location: Any) -> int:
    """The CUDA device index of ``location`` (``'cuda:1'``), checking that it exists."""
    dev = _backend.device(location)
    if not _backend.cuda_available():
        raise RuntimeError(
            "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
            "is False. If you are running on a CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the CPU.")
    from .. import cuda

    index = dev.index or 0
    count = cuda.device_count()
    if index >= count:
        raise RuntimeError(
            f"Attempting to deserialize object on CUDA device {index} but "
            f"torch.cuda.device_count() is {count}. Please use torch.load with map_location to "
            "map your storages to an existing device.")
    return index


def default_restore_location(storage: Any, location: str) -> Any:
    """``storage`` (a tensor) moved to ``location`` (``'cpu'``, ``'cuda:0'``)."""
    for _, _, deserializer in _packages:
        out = deserializer(storage, location)
        if out is not None:
            return out
    if location.startswith("cuda"):
        validate_cuda_device(location)
    try:
        return storage.to(_backend.device(location))
    except (RuntimeError, ValueError):
        raise RuntimeError(
            f"don't know how to restore data location of {type(storage).__name__} (tagged "
            f"with {location})") from None


def normalize_storage_type(storage_type: Any) -> Any:
    """The storage type itself (ember has no separate typed-storage classes)."""
    return storage_type


def storage_to_tensor_type(storage: Any) -> Any:
    """The legacy tensor type of a storage type name (``FloatStorage`` -> ``FloatTensor``)."""
    import ember

    name = storage if isinstance(storage, str) else getattr(
        storage, "__name__", type(storage).__name__)
    return getattr(ember, name.replace("Storage", "Tensor"))


def check_module_version_greater_or_equal(module: Any, req_version_tuple: tuple,
                                          error_if_malformed: bool = True) -> bool:
    """Whether ``module.__version__`` is at least ``req_version_tuple`` (e.g. ``(1, 2)``)."""
    version = getattr(module, "__version__", "")
    try:
        parts = version.split(".")
        have = tuple(type(req_version_tuple[i])(parts[i]) for i in range(len(req_version_tuple)))
    except (ValueError, IndexError, TypeError) as e:
        message = (f"'{module.__name__}' module version string is malformed '{version}' and "
                   f"cannot be compared with tuple {req_version_tuple}")
        if error_if_malformed:
            raise RuntimeError(message) from e
        import warnings

        warnings.warn(message + ", but continuing assuming that requirement is met",
                      stacklevel=2)
        return True
    return have >= tuple(req_version_tuple)


class StorageType:
    """A storage type named in a checkpoint (``torch.FloatStorage`` -> its dtype)."""

    def __init__(self, name: str) -> None:
        dt = _DTYPE_OF_STORAGE.get(name)
        if dt is None:
            raise RuntimeError(f"unknown storage type {name}")
        self._dtype = _dtype.ALIASES[dt]

    @property
    def dtype(self) -> _dtype_cls:
        return self._dtype

    def __str__(self) -> str:
        return f"StorageType(dtype={self.dtype})"
