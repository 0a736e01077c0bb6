"""Devices for the op tests: put the same inputs on ``cpu``, ``fake_cuda`` or ``cuda``.

``fake_cuda`` wraps the values in ``ember._backend.FakeCudaArray``, a NumPy subclass that reports
``cuda:0``: every code path that is not the plain-``np.ndarray`` CPU fast path runs on a machine
without a GPU. ``cuda`` is the real device (CuPy), used only when ``ember.cuda.is_available()``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

import ember
from ember import _backend
from ember.testing._fake_cuda import FAKE_CUPY

DEVICES = ("cpu", "fake_cuda", "cuda")


def cuda_available() -> bool:
    """True when CuPy and a CUDA GPU are usable (the ``cuda`` parameter runs)."""
    with real_backend():
        return bool(ember.cuda.is_available())


def on(device: str, x: Any, requires_grad: bool = False) -> Any:
    """A new leaf tensor holding ``x``'s values (a NumPy array or an ember tensor) on ``device``.

    Args:
        device: one of ``DEVICES``.
        x: the values; a tensor is detached and its values copied.
        requires_grad: make the leaf require grad (floating and complex dtypes only).
    """
    arr = host(x) if isinstance(x, ember.Tensor) else np.asarray(x)
    arr = np.array(arr, copy=True)  # a leaf of its own: never a view of the caller's array
    if device == "cpu":
        t = ember.Tensor._make(arr, False)
    elif device == "fake_cuda":
        t = ember.Tensor._make(arr.view(_backend.FakeCudaArray), False)
    elif device == "cuda":
        t = ember.Tensor._make(arr, False).to("cuda")
    else:
        raise ValueError(f"unknown test device {device!r}; expected one of {DEVICES}")
    if requires_grad:
        t.requires_grad_()
    return t


def host(t: Any) -> np.ndarray:
    """The values of tensor ``t`` (any device) as a NumPy array."""
    return _backend.to_numpy(t.detach()._data)


def array_type_ok(t: Any, device: str) -> bool:
    """Whether ``t``'s backing array has the type that belongs to ``device``."""
    arr = t._data
    if device == "cpu":
        return type(arr) is np.ndarray
    if device == "fake_cuda":
        return isinstance(arr, _backend.FakeCudaArray)
    if device == "cuda":
        import cupy

        return isinstance(arr, cupy.ndarray)
    raise ValueError(f"unknown test device {device!r}; expected one of {DEVICES}")


def device_name(device: str) -> str:
    """The ``ember.device`` string a tensor on test device ``device`` reports."""
    return "cpu" if device == "cpu" else "cuda:0"


# -------------------------------------------------------------------------------------------
# A stand-in for the CuPy module while fake_cuda tests run: the package's fake CUDA
# (``ember.testing._fake_cuda.FAKE_CUPY``, behind ``ember.testing.fake_cuda()`` and
# ``ember run --fake-cuda``).
#
# ember asks ``_backend.xp_of(arr)`` for the array module of a non-CPU array. Without CuPy that is
# NumPy, so ``xp.zeros(shape)`` would make a plain (CPU) array where CuPy makes a GPU one: the
# FakeCudaArray alone cannot tell a real bug from the double's own gap. ``FAKE_CUPY`` is NumPy
# with every array it returns turned into a FakeCudaArray, as CuPy returns device arrays. Code
# that bypasses the array module (``np.zeros`` on a GPU path, ``type(a) is np.ndarray``
# branches, ``.get()``) still fails, as it would on a GPU.

_real_cupy: list = []  # the CuPy module (or None) that fake_cupy() replaced, innermost last


@contextlib.contextmanager
def fake_cupy() -> Iterator[None]:
    """Make ember see ``FAKE_CUPY`` as CuPy (and so ``cuda`` as available) inside the block.

    Also on a machine with a GPU: fake_cuda tests never meet real CUDA arrays."""
    _real_cupy.append(_backend._cupy)
    _backend._cupy = FAKE_CUPY
    try:
        yield
    finally:
        _backend._cupy = _real_cupy.pop()


@contextlib.contextmanager
def real_backend() -> Iterator[None]:
    """Undo ``fake_cupy`` inside the block (for CPU reference runs and availability checks)."""
    saved = _backend._cupy
    if saved is FAKE_CUPY:
        _backend._cupy = _real_cupy[-1]
    try:
        yield
    finally:
        _backend._cupy = saved
