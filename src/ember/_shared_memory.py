"""Arrays in shared memory: a ``memfd`` mapping (or an unlinked temporary file where there is
none) that forked or spawned processes can map too. ``Tensor.share_memory_()`` moves a CPU
tensor's array here; ``ember.multiprocessing`` sends such arrays between processes as file
descriptors. The memory is freed when the last mapping goes.
"""

from __future__ import annotations

import mmap
import os
import select
import tempfile
import weakref
from typing import Any

import numpy as np

__all__ = ["SharedBuffer", "is_shared_array", "map_shared", "shared_root", "to_shared_array"]


class SharedBuffer(mmap.mmap):
    """A MAP_SHARED mapping of ``fd``; the fd stays open (it is what gets sent) until the
    mapping is collected."""

    fd: int


def _open_fd(nbytes: int) -> int:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("ember-shared", os.MFD_CLOEXEC)
    else:  # pragma: no cover - macOS and other systems without memfd
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        fd, path = tempfile.mkstemp(prefix="ember-shared-", dir=shm)
        os.unlink(path)
    os.ftruncate(fd, nbytes)
    return fd


def map_shared(fd: int, nbytes: int) -> SharedBuffer:
    buf = SharedBuffer(fd, nbytes)
    buf.fd = fd
    if hasattr(select, "epoll"):
        # The fd is closed in C when the mapping goes: an epoll object adopts it (``fromfd``
        # takes any descriptor and only closes it). A Python finalizer would run at every
        # batch a DataLoader receives, and a Ctrl-C arriving inside one is lost ("Exception
        # ignored in: <finalize object>"), leaving the program running.
        buf._owner = select.epoll.fromfd(fd)
    else:  # pragma: no cover - systems without epoll
        weakref.finalize(buf, os.close, fd)
    return buf


def shared_root(arr: Any) -> tuple[SharedBuffer | None, int]:
    """The shared mapping under ``arr`` (following ``.base``), and ``arr``'s byte offset in it."""
    b = arr
    while isinstance(b, np.ndarray):
        b = b.base
    if not isinstance(b, SharedBuffer):
        return None, 0
    start = np.frombuffer(b, dtype=np.uint8, count=0).__array_interface__["data"][0]
    return b, arr.__array_interface__["data"][0] - start


def is_shared_array(arr: Any) -> bool:
    """Whether a NumPy array lives in memory made by ``share_memory_``."""
    return shared_root(arr)[0] is not None


def to_shared_array(arr: np.ndarray) -> np.ndarray:
    """A copy of a NumPy array in a fresh shared mapping (the array itself if already shared)."""
    if is_shared_array(arr):
        return arr
    buf = map_shared(_open_fd(max(arr.nbytes, 1)), max(arr.nbytes, 1))
    new = np.ndarray(arr.shape, dtype=arr.dtype, buffer=buf)
    new[...] = arr
    return new
