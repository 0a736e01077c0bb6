"""Devices for the op tests: put the same inputs on ``cpu``, ``fake_cuda`` or ``cuda``.

``fake_cuda`` wraps the values in ``ember._backend.FakeCudaArray``, a NumPy subclass that reports
``cuda:0``: every code path that is not the plain-``np.ndarray`` CPU fast path runs on a machine
without a GPU. ``cuda`` is the real device (CuPy), used only when ``ember.cuda.is_available()``.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from typing import Any

import numpy as np

import ember
from ember import _backend

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
# A stand-in for the CuPy module while fake_cuda tests run.
#
# ember asks ``_backend.xp_of(arr)`` for the array module of a non-CPU array. Without CuPy that is
# NumPy, so ``xp.zeros(shape)`` would make a plain (CPU) array where CuPy makes a GPU one: the
# FakeCudaArray alone cannot tell a real bug from the double's own gap. ``fake_cupy()`` installs a
# module that is NumPy with every array it returns (functions, submodules, NumPy scalars)
# turned into a FakeCudaArray, as CuPy returns device arrays, and ``ndarray`` is FakeCudaArray.
# Code that bypasses the array module (``np.zeros`` on a GPU path, ``type(a) is np.ndarray``
# branches, ``.get()``) still fails, as it would on a GPU.


def _fake(x: Any) -> Any:
    if type(x) is np.ndarray or isinstance(x, np.generic):
        return np.asarray(x).view(_backend.FakeCudaArray)
    if type(x) is tuple or type(x) is list:
        return type(x)(_fake(v) for v in x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # NumPy's named results (linalg)
        return type(x)(*(_fake(v) for v in x))
    return x


class _FakeUfunc:
    """A NumPy ufunc whose results (call, reduce, accumulate, outer, ...) are FakeCudaArray."""

    def __init__(self, uf: np.ufunc) -> None:
        self._uf = uf

    def __call__(self, *args: Any, **kw: Any) -> Any:
        return _fake(self._uf(*args, **kw))

    def __getattr__(self, name: str) -> Any:
        obj = getattr(self._uf, name)
        if not callable(obj):
            return obj

        def call(*args: Any, **kw: Any) -> Any:
            return _fake(obj(*args, **kw))

        return call


class _FakeModule(types.ModuleType):
    """NumPy (or one of its submodules) returning FakeCudaArray where it returns arrays."""

    def __init__(self, mod: Any) -> None:
        super().__init__(f"fake_cupy<{mod.__name__}>")
        self._mod = mod

    def __getattr__(self, name: str) -> Any:
        obj = getattr(self._mod, name)
        if isinstance(obj, types.ModuleType):
            obj = _FakeModule(obj)
        elif isinstance(obj, np.ufunc):
            obj = _FakeUfunc(obj)
        elif callable(obj) and not isinstance(obj, type):

            def call(*args: Any, _f: Any = obj, **kw: Any) -> Any:
                return _fake(_f(*args, **kw))

            obj = call
        setattr(self, name, obj)
        return obj


class _FakeDevice:
    def __init__(self, index: int | None = None) -> None:
        self.id = 0 if index is None else int(index)

    def __enter__(self) -> _FakeDevice:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def synchronize(self) -> None:
        return None


class _FakeCupy(_FakeModule):
    """The fake CuPy module: one device, arrays are FakeCudaArray."""

    def __init__(self) -> None:
        super().__init__(np)
        self.ndarray = _backend.FakeCudaArray
        self.cuda = types.SimpleNamespace(
            Device=_FakeDevice,
            runtime=types.SimpleNamespace(getDeviceCount=lambda: 1, getDevice=lambda: 0),
        )

    def get_array_module(self, *arrays: Any) -> Any:
        return self if any(isinstance(a, _backend.FakeCudaArray) for a in arrays) else np

    def asnumpy(self, a: Any) -> np.ndarray:
        return np.array(a)


FAKE_CUPY = _FakeCupy()


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
