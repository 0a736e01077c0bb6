"""Tensors in shared memory: ``Tensor.share_memory_()``, ``is_shared()``, and passing shared
tensors between processes.

``share_memory_`` copies a CPU tensor's array into a fresh shared mapping (a ``memfd``, or an
unlinked temporary file where there is none) and points the tensor at it. A forked child
inherits the mapping, so in-place updates on either side are seen by both (Hogwild). Pickling a
shared tensor through ``multiprocessing`` (a ``Queue``, or a spawned ``Process``'s arguments)
sends a duplicate of the file descriptor, so the receiver maps the same memory; tensors that are
not shared pickle by value, as before. The memory is freed when the last mapping goes.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import weakref
from multiprocessing import reduction
from typing import Any

import numpy as np

__all__ = ["is_shared_array", "share_tensor_"]


class _SharedBuffer(mmap.mmap):
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


def _map(fd: int, nbytes: int) -> _SharedBuffer:
    buf = _SharedBuffer(fd, nbytes)
    buf.fd = fd
    weakref.finalize(buf, os.close, fd)
    return buf


def _shared_root(arr: Any) -> tuple[_SharedBuffer | None, int]:
    """The shared mapping under ``arr`` (following ``.base``), and ``arr``'s byte offset in it."""
    b = arr
    while isinstance(b, np.ndarray):
        b = b.base
    if not isinstance(b, _SharedBuffer):
        return None, 0
    start = np.frombuffer(b, dtype=np.uint8, count=0).__array_interface__["data"][0]
    return b, arr.__array_interface__["data"][0] - start


def is_shared_array(arr: Any) -> bool:
    """Whether a NumPy array lives in memory made by ``share_memory_``."""
    return _shared_root(arr)[0] is not None


def share_tensor_(t: Any) -> Any:
    """Move a CPU tensor's data into shared memory in place (``Tensor.share_memory_``)."""
    arr = t._data
    if type(arr) is not np.ndarray or is_shared_array(arr):
        return t  # CUDA tensors: a no-op, as in PyTorch
    buf = _map(_open_fd(max(arr.nbytes, 1)), max(arr.nbytes, 1))
    new = np.ndarray(arr.shape, dtype=arr.dtype, buffer=buf)
    new[...] = arr
    t._data = new
    return t


def _rebuild_shared(kind: str, dupfd: Any, size: int, offset: int, shape: tuple,
                    strides: tuple, dtype: Any, requires_grad: bool) -> Any:
    from .._tensor import Tensor

    buf = _map(dupfd.detach(), size)
    arr = np.ndarray(shape, dtype=dtype, buffer=buf, offset=offset, strides=strides)
    if kind == "parameter":
        from ..nn.parameter import Parameter

        return Parameter(Tensor._make(arr), requires_grad)
    return Tensor._make(arr, requires_grad=requires_grad)


def _reduce(t: Any) -> Any:
    buf, offset = _shared_root(t._data) if type(t._data) is np.ndarray else (None, 0)
    if buf is None or t.grad_fn is not None:
        return t.__reduce_ex__(4)  # by value
    from ..nn.parameter import Parameter

    arr = t._data
    kind = "parameter" if isinstance(t, Parameter) else "tensor"
    return (_rebuild_shared, (kind, reduction.DupFd(buf.fd), len(buf), offset, arr.shape,
                              arr.strides, arr.dtype, bool(t.requires_grad)))


def _register() -> None:
    from .._tensor import Tensor
    from ..nn.parameter import Parameter

    for cls in (Tensor, Parameter):
        reduction.ForkingPickler.register(cls, _reduce)


_register()
