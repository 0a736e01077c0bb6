"""``ember.utils.dlpack``: exchange tensors with other libraries without copying (DLPack).

``from_dlpack(x)`` accepts any object with ``__dlpack__``/``__dlpack_device__`` (a NumPy or
CuPy array, a PyTorch or JAX tensor, another ember tensor) or a bare DLPack capsule of CPU
memory, and returns an ember tensor sharing its memory: writes show in both. Exporting is
``Tensor.__dlpack__`` (``torch.from_dlpack(ember_tensor)``, ``np.from_dlpack(ember_tensor)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _backend
from .._tensor import Tensor

__all__ = ["from_dlpack", "to_dlpack"]

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13


class _Capsule:
    """Adapts a bare (legacy) DLPack capsule to the ``__dlpack__`` protocol, on the CPU."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_DL_CPU, 0)


def from_dlpack(ext_tensor: Any, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """A tensor sharing memory with ``ext_tensor`` (anything with ``__dlpack__``, or a capsule).

    CPU data becomes a NumPy-backed tensor, CUDA data a CuPy-backed one; no bytes are copied
    unless ``device=`` names another device or ``copy=True`` (``copy=False`` refuses a copy).

    Example::

        >>> a = np.arange(3.0)
        >>> t = ember.from_dlpack(a)
        >>> t[0] = 5.0; a[0]
        5.0
    """
    if device is not None or copy is not None:
        t = from_dlpack(ext_tensor)
        moved = t if device is None else t.to(device)
        if copy is False and moved is not t:
            raise BufferError(f"from_dlpack: copy=False, but the data lives on {t.device} and "
                              f"device={device!r} needs a copy")
        return moved.clone() if copy and moved is t else moved
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if type(ext_tensor).__name__ == "PyCapsule":
        ext_tensor = _Capsule(ext_tensor)
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(
            f"from_dlpack expects an object with __dlpack__ (a tensor or array from another "
            f"library) or a DLPack capsule, got {type(ext_tensor).__name__}"
        )
    kind, index = (ext_tensor.__dlpack_device__() if hasattr(ext_tensor, "__dlpack_device__")
                    else (_DL_CPU, 0))
    if kind in (_DL_CPU, _DL_CUDA_HOST):
        xp: Any = np
    elif kind in (_DL_CUDA, _DL_CUDA_MANAGED):
        xp = _backend.check_available(_backend.device("cuda", int(index))).xp
    else:
        raise RuntimeError(
            f"from_dlpack: the tensor lives on DLPack device type {kind}, which ember has no "
            "backend for (ember computes on cpu and cuda); copy it to the CPU first"
        )
    try:
        arr = xp.from_dlpack(ext_tensor)
    except (BufferError, RuntimeError, TypeError) as e:
        raise RuntimeError(
            f"from_dlpack could not import a {type(ext_tensor).__name__}: {e} (DLPack carries "
            "bool, integer and float dtypes; bfloat16 has no NumPy DLPack import, convert it "
            "first, e.g. x.float())"
        ) from e
    if arr.dtype.kind == "u" and arr.dtype.itemsize > 1:
        raise TypeError(
            f"from_dlpack: ember has no {arr.dtype} tensors (uint8 is the only unsigned type); "
            "convert first, e.g. x.to(torch.int64)"
        )
    if arr.dtype.kind == "c":
        raise TypeError("from_dlpack: ember has no complex tensors")
    return Tensor._make(arr)


def to_dlpack(tensor: Tensor) -> Any:
    """A DLPack capsule of ``tensor``'s memory (legacy API; prefer passing the tensor itself)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack expects an ember Tensor, got {type(tensor).__name__}")
    return tensor.__dlpack__()
