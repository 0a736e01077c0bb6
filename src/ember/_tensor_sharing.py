"""Sending tensors whose memory is shared (``Tensor.share_memory_()``) to other processes.

Through ``multiprocessing`` (a ``Queue``, a spawned ``Process``'s arguments) a shared tensor is
pickled as a duplicate of its mapping's file descriptor, so the receiver maps the same memory and
sees in-place writes (Hogwild); tensors that are not shared pickle by value, as always. The
pickler learns this the first time a tensor of a class is shared in (or received by) a process.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _backend
from ._shared_memory import map_shared, shared_root
from ._tensor_base import TensorBase

_registered: set[type] = set()


def register_reducer(cls: type) -> None:
    """Let ``multiprocessing``'s pickler send shared tensors of class ``cls`` by descriptor."""
    if cls in _registered:
        return
    from multiprocessing import reduction  # the standard library's; loaded only when sharing

    reduction.ForkingPickler.register(cls, _reduce)
    _registered.add(cls)


def _reduce(t: Any) -> Any:
    from multiprocessing import reduction  # loaded by register_reducer already

    arr = t._data
    buf, offset = shared_root(arr) if _backend.is_cpu_array(arr) else (None, 0)
    if buf is None or t._grad_fn is not None:
        return t.__reduce_ex__(4)  # by value
    return (_rebuild_shared, (type(t), reduction.DupFd(buf.fd), len(buf), offset, arr.shape,
                              arr.strides, arr.dtype, bool(t._rg)))


def _rebuild_shared(cls: type, dupfd: Any, size: int, offset: int, shape: tuple,
                    strides: tuple, dtype: Any, requires_grad: bool) -> Any:
    buf = map_shared(dupfd.detach(), size)
    arr = np.ndarray(shape, dtype=dtype, buffer=buf, offset=offset, strides=strides)
    t = TensorBase._make(arr)
    if cls is not type(t):  # a subclass, built as Parameter is: cls(data, requires_grad)
        t = cls(t, requires_grad)
    else:
        t._rg = requires_grad
    register_reducer(cls)
    return t
