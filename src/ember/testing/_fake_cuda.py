"""Fake CUDA: a ``cuda`` device backed by NumPy arrays, for checking GPU code without a GPU.

ember computes on CUDA through CuPy, which ``ember._backend`` imports on first use and keeps in
``_backend._cupy``. ``fake_cuda()`` puts ``FAKE_CUPY`` there instead: NumPy with every array it
returns (functions, submodules, ufuncs, NumPy scalars) turned into ``_backend.FakeCudaArray``, a
NumPy array that reports ``cuda:0``, plus the small part of CuPy's ``cuda`` module ember asks
(one device, streams, events, a memory pool). Everything above the backend then runs its CUDA
paths: ``is_available()`` is True, tensors say ``device='cuda:0'``, an op mixing devices raises,
autocast uses CUDA's op lists. Code that bypasses the array module (``np.zeros`` on a GPU path,
``type(a) is np.ndarray`` branches) fails as it would on a GPU.

The numbers and the speed are the CPU's: the values are NumPy's, and nothing runs on a GPU.
"""

from __future__ import annotations

import contextlib
import os
import time
import types
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import _backend
from ._fake_kernels import ElementwiseKernel

__all__ = ["FAKE_CUPY", "fake_cuda"]

DEVICE_NAME = "ember fake CUDA (NumPy on the CPU)"


def _fake(x: Any) -> Any:
    """``x`` with its arrays (and NumPy scalars) as FakeCudaArray, as CuPy returns device arrays."""
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


# ---------------------------------------------------------------------------------------------
# the part of cupy.cuda that ember asks: one device, streams, events, a memory pool


def _host_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 16 << 30


def _check_index(index: Any) -> int:
    i = 0 if index is None else int(index)
    if i != 0:
        raise RuntimeError(f"CUDA error: invalid device ordinal: cuda:{i} (fake CUDA has one "
                           "device, cuda:0)")
    return i


class _Device:
    def __init__(self, index: int | None = None) -> None:
        self.id = _check_index(index)

    def __enter__(self) -> _Device:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def synchronize(self) -> None:
        return None


class _Runtime:
    """``cupy.cuda.runtime``: one device."""

    @staticmethod
    def getDeviceCount() -> int:  # noqa: N802 - CuPy's names
        return 1

    @staticmethod
    def getDevice() -> int:  # noqa: N802
        return 0

    @staticmethod
    def setDevice(index: int) -> None:  # noqa: N802
        _check_index(index)

    @staticmethod
    def getDeviceProperties(index: int) -> dict:  # noqa: N802
        _check_index(index)
        return {"name": DEVICE_NAME.encode(), "major": 8, "minor": 0,
                "totalGlobalMem": _host_memory(), "multiProcessorCount": os.cpu_count() or 1}

    @staticmethod
    def memGetInfo() -> tuple[int, int]:  # noqa: N802
        total = _host_memory()
        return max(total - _POOL.used_bytes(), 0), total

    @staticmethod
    def deviceCanAccessPeer(index: int, peer: int) -> bool:  # noqa: N802
        _check_index(index)
        _check_index(peer)
        return False


class _Event:
    """A CUDA event: its time is the host's when recorded (the work before it is already done)."""

    def __init__(self, block: bool = False, disable_timing: bool = False,
                 interprocess: bool = False) -> None:
        self._timing = not disable_timing
        self._t: float | None = None
        self.done = True

    def record(self, stream: Any = None) -> None:
        self._t = time.perf_counter()

    def synchronize(self) -> None:
        return None


def _elapsed_ms(start: _Event, end: _Event) -> float:
    if not (start._timing and end._timing):
        raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
    if start._t is None or end._t is None:
        raise RuntimeError("Both events must be recorded before calculating elapsed time.")
    return (end._t - start._t) * 1000.0


class _Stream:
    """A CUDA stream: everything has finished when the call that queued it returns."""

    null: _Stream
    _current: list = []

    def __init__(self, non_blocking: bool = False, priority: int = 0) -> None:
        self.priority = priority
        self.done = True
        self.ptr = id(self)

    def synchronize(self) -> None:
        return None

    def record(self, event: _Event | None = None) -> _Event:
        event = event if event is not None else _Event()
        event.record(self)
        return event

    def wait_event(self, event: _Event) -> None:
        return None

    def use(self) -> _Stream:
        _Stream._current[:] = [self]
        return self

    def __enter__(self) -> _Stream:
        _Stream._current.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _Stream._current.pop()


_Stream.null = _Stream()
_Stream.null.ptr = 0


def _current_stream() -> _Stream:
    return _Stream._current[-1] if _Stream._current else _Stream.null


class _Pool:
    """The memory pool's counters: bytes of the live allocations that FakeCudaArrays view
    (counted while fake CUDA is on; nothing is cached, so held equals used)."""

    def __init__(self) -> None:
        self._live: dict[int, int] = {}
        self._used = 0

    def track(self, arr: np.ndarray) -> None:
        root = arr
        while isinstance(root.base, np.ndarray):
            root = root.base
        key = id(root)
        if key in self._live:
            return
        n = int(root.nbytes)
        self._live[key] = n
        self._used += n
        weakref.finalize(root, self._free, key).atexit = False

    def _free(self, key: int) -> None:
        self._used -= self._live.pop(key, 0)

    def used_bytes(self) -> int:
        return self._used

    def total_bytes(self) -> int:
        return self._used

    def free_all_blocks(self) -> None:
        return None


_POOL = _Pool()


class _FakeCupy(_FakeModule):
    """The fake CuPy module: one device (``cuda:0``); its arrays are FakeCudaArray."""

    ember_fake_cuda = True  # (``_backend.cuda_is_fake`` reads it)

    def __init__(self) -> None:
        super().__init__(np)
        self.ndarray = _backend.FakeCudaArray
        self.ElementwiseKernel = ElementwiseKernel  # (compile's CUDA kernels, run on the host)
        self.cuda = types.SimpleNamespace(
            Device=_Device, runtime=_Runtime, Stream=_Stream, Event=_Event,
            get_current_stream=_current_stream, get_elapsed_time=_elapsed_ms,
        )

    def get_array_module(self, *arrays: Any) -> Any:
        return self if any(isinstance(a, _backend.FakeCudaArray) for a in arrays) else np

    def asarray(self, a: Any, dtype: Any = None, order: Any = None, **kw: Any) -> Any:
        """A device array: host data is copied (as CuPy copies it to the GPU)."""
        if isinstance(a, _backend.FakeCudaArray):
            return a if dtype is None or a.dtype == np.dtype(dtype) else a.astype(dtype)
        return np.array(a, dtype=dtype, order=order or "K", copy=True).view(
            _backend.FakeCudaArray)

    def asnumpy(self, a: Any) -> np.ndarray:
        """A host copy."""
        return np.array(a, copy=True, subok=False)

    def get_default_memory_pool(self) -> _Pool:
        return _POOL

    def get_default_pinned_memory_pool(self) -> _Pool:
        return _POOL


FAKE_CUPY = _FakeCupy()


# ---------------------------------------------------------------------------------------------
# switching it on


def _snapshot() -> dict:
    from ..backends import cuda as backends_cuda
    from ..backends import cudnn
    from ..cuda import memory

    return {
        "cupy": _backend._cupy,
        "hook": _backend.fake_cuda_track,
        "default_device": _backend.default_device,
        "default_stack": list(_backend._default_stack),
        "cudnn": {k: getattr(cudnn, k) for k in
                  ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")},
        "matmul": dict(object.__getattribute__(backends_cuda.matmul, "_values")),
        "sdp": dict(backends_cuda._sdp),
        "peak": dict(memory._peak),
        "streams": list(_Stream._current),
    }


def _restore(s: dict) -> None:
    from ..backends import cuda as backends_cuda
    from ..backends import cudnn
    from ..cuda import memory

    _backend._cupy = s["cupy"]
    _backend.fake_cuda_track = s["hook"]
    _backend.default_device = s["default_device"]
    _backend._default_stack[:] = s["default_stack"]
    for k, v in s["cudnn"].items():
        setattr(cudnn, k, v)
    values = object.__getattribute__(backends_cuda.matmul, "_values")
    values.clear()
    values.update(s["matmul"])
    backends_cuda._sdp.clear()
    backends_cuda._sdp.update(s["sdp"])
    memory._peak.clear()
    memory._peak.update(s["peak"])
    _Stream._current[:] = s["streams"]


@contextlib.contextmanager
def fake_cuda() -> Iterator[None]:
    """Inside the block, ``cuda`` is a device backed by NumPy arrays with CUDA's rules.

    ``torch.cuda.is_available()`` is True and ``device_count()`` 1; tensors on it report
    ``device='cuda:0'``; an op mixing a CUDA and a CPU tensor raises PyTorch's "Expected all
    tensors to be on the same device" error; ``.cuda()``, ``.cpu()``, ``.to()``,
    ``pin_memory()`` and ``non_blocking=`` work; ``torch.autocast("cuda")`` uses CUDA's op lists
    (float16 by default); ``torch.cuda``'s queries answer about one device
    (``memory_allocated`` counts the bytes of live fake-CUDA tensors). Use it to find device
    mistakes in GPU code on a machine without a GPU (``ember run --fake-cuda script.py`` runs a
    whole script so). The numbers and the speed are the CPU's.

    On exit everything is as before: the real CUDA state (CuPy, or none), the default device,
    the ``torch.backends.cudnn`` / ``torch.backends.cuda`` flags and the memory peaks. Tensors
    made inside stay on the fake device: move them with ``.cpu()`` before the block ends.

    Example:
        >>> with ember.testing.fake_cuda():
        ...     model = nn.Linear(3, 2).cuda()
        ...     model(torch.randn(4, 3))  # raises: the input is on the CPU
    """
    saved = _snapshot()
    _backend._cupy = FAKE_CUPY
    _backend.fake_cuda_track = _POOL.track
    try:
        yield
    finally:
        _restore(saved)


def enable() -> None:
    """Turn fake CUDA on for the rest of the process (``ember run --fake-cuda``)."""
    _backend._cupy = FAKE_CUPY
    _backend.fake_cuda_track = _POOL.track

