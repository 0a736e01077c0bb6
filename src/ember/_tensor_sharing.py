"""Sending tensors to other processes through shared memory, as PyTorch's reductions do.

Through ``multiprocessing`` (a ``Queue``, a ``Pipe``, a spawned ``Process``'s arguments) a CPU
tensor is pickled as a duplicate of its shared mapping's file descriptor, so the receiver maps the
same memory and sees in-place writes (Hogwild). A tensor not yet in shared memory is moved there
first, in place (``share_in_place``): after ``q.put(t)``, ``t.is_shared()`` is True on both sides.
Empty tensors and those off the host pickle by value; a non-leaf tensor that requires grad
refuses, as PyTorch's does. ``Tensor`` and ``Parameter`` are registered when ember is imported;
another subclass the first time one of its tensors is shared in (or received by) a process.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _backend
from ._shared_memory import is_shared_array, map_shared, shared_root, to_shared_array
from ._tensor_base import TensorBase

_registered: set[type] = set()


def register_reducer(cls: type) -> None:
    """Let ``multiprocessing``'s pickler send tensors of class ``cls`` through shared memory."""
    if cls in _registered:
        return
    from multiprocessing import reduction  # the standard library's

    reduction.ForkingPickler.register(cls, _reduce)
    _registered.add(cls)


def share_in_place(t: Any) -> None:
    """Move a CPU tensor's memory into shared memory, keeping its values, shape and strides.

    PyTorch moves the whole storage: for a view, ember moves its base's array and re-points the
    view into it, so ``base`` and ``view`` both report ``is_shared()`` and still alias (other
    views of that base made before keep the old memory: share the base first to avoid that).
    """
    arr = t._data
    if not _backend.is_cpu_array(arr) or is_shared_array(arr):
        return
    base = t._base
    old = base._data if base is not None else None
    if old is not None and _backend.is_cpu_array(old) and old.flags.c_contiguous \
            and old.dtype.itemsize and not is_shared_array(old):
        lo = _backend.address(old)
        first, last = np.lib.array_utils.byte_bounds(arr)
        if lo <= first and last <= lo + old.nbytes:  # (a view inside its base's array)
            offset = _backend.address(arr) - lo
            new = to_shared_array(old)
            base._data = new
            view = np.ndarray(arr.shape, dtype=arr.dtype, buffer=new, offset=offset,
                              strides=arr.strides)
            if not arr.flags.writeable:
                view.flags.writeable = False
            t._data = view
            return
    t._data = to_shared_array(arr)


def _reduce(t: Any) -> Any:
    from multiprocessing import reduction  # loaded by register_reducer already

    if t._grad_fn is not None and t._rg:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries. If you just want to transfer the "
            "data, call detach() on the tensor before serializing (e.g., putting it on the "
            "queue)."
        )
    if _backend.is_cpu_array(t._data) and t._data.nbytes:
        share_in_place(t)
    arr = t._data
    buf, offset = shared_root(arr) if _backend.is_cpu_array(arr) else (None, 0)
    if buf is None:
        return t.__reduce_ex__(4)  # by value: empty, or off the host
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
