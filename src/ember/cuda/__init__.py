"""``ember.cuda``: CUDA devices through CuPy (optional). Everything answers as PyTorch built
without CUDA does when there is no GPU: counters are 0, queries about a device raise
``Torch not compiled with CUDA enabled`` (an ``AssertionError`` that is also a ``RuntimeError``).

Only ``ember/_backend.py`` talks to CuPy; this package calls its small helpers.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .. import _backend
from .._backend import OutOfMemoryError
from . import memory, profiler, random  # noqa: F401
from ._common import CudaUnavailableError, available, index_of, require
from .memory import (  # noqa: F401
    empty_cache,
    get_per_process_memory_fraction,
    host_memory_stats,
    host_memory_stats_as_nested_dict,
    list_gpu_processes,
    max_memory_allocated,
    max_memory_cached,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_cached,
    memory_reserved,
    memory_stats,
    memory_stats_as_nested_dict,
    memory_summary,
    reset_accumulated_host_memory_stats,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_cached,
    reset_peak_host_memory_stats,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from .random import (  # noqa: F401
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)

__all__ = ["CudaUnavailableError", "OutOfMemoryError"]


def is_available() -> bool:
    """True when CuPy is installed and a CUDA GPU is usable."""
    return _backend.cuda_available()


def device_count() -> int:
    return _backend.cuda_device_count()


def is_initialized() -> bool:
    """Whether CUDA has been set up (ember does so on first use of a GPU)."""
    return _backend._cupy is not None


def init() -> None:
    """Set CUDA up now rather than on first use."""
    require("init")


def _is_compiled() -> bool:
    return available()


def get_arch_list() -> list[str]:
    return []


def current_device() -> int:
    """The index of the current CUDA device."""
    require("current_device")
    return _backend.cuda_current_device()


def set_device(device: Any) -> None:
    """Make ``device`` current (a no-op without a GPU)."""
    if is_available():
        idx = index_of(device)
        if idx >= 0:
            _backend.cuda_set_device(idx)


class _CudaDeviceProperties(NamedTuple):
    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device: Any = None) -> _CudaDeviceProperties:
    """Name, compute capability, memory and SM count of a GPU."""
    require("get_device_properties")
    idx = index_of(device)
    if not 0 <= idx < device_count():
        raise AssertionError("Invalid device id")
    p = _backend.cuda_device_properties(idx)
    return _CudaDeviceProperties(p["name"], int(p["major"]), int(p["minor"]),
                                 int(p["totalGlobalMem"]), int(p["multiProcessorCount"]))


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """(major, minor) compute capability of a GPU."""
    p = get_device_properties(device)
    return p.major, p.minor


def get_device_name(device: Any = None) -> str:
    return get_device_properties(device).name


def synchronize(device: Any = None) -> None:
    """Wait for all kernels on ``device`` to finish."""
    require("synchronize")
    _backend.synchronize(_backend.device("cuda", index_of(device)))


def ipc_collect() -> None:
    """Free CUDA memory shared with other processes that they released."""
    require("ipc_collect")


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return is_available()


def is_tf32_supported() -> bool:
    return is_available() and get_device_capability() >= (8, 0)


class device:
    """Context manager that makes a CUDA device current (``with torch.cuda.device(1):``).

    ``None`` or a negative index is a no-op, as in PyTorch."""

    def __init__(self, device: Any) -> None:
        self.idx = -1 if device is None else (
            device if isinstance(device, int) else (_backend.device(device).index or 0))
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx < 0:
            return
        if not is_available():
            raise RuntimeError("PyTorch was compiled without CUDA support: ember has no usable "
                               f"CUDA GPU to switch to (cuda:{self.idx})")
        self.prev_idx = _backend.cuda_current_device()
        if self.prev_idx != self.idx:
            _backend.cuda_set_device(self.idx)

    def __exit__(self, *exc: object) -> bool:
        if self.idx >= 0 and self.prev_idx >= 0 and self.prev_idx != self.idx:
            _backend.cuda_set_device(self.prev_idx)
        return False


class device_of(device):
    """``device`` of the tensor's GPU; a no-op for a CPU tensor."""

    def __init__(self, obj: Any) -> None:
        super().__init__(obj.get_device() if obj.is_cuda else -1)


class Stream:
    """A CUDA stream (a CuPy stream underneath). Needs a GPU, as in PyTorch."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        if not is_available():
            raise RuntimeError("torch.cuda.Stream requires CUDA support (ember has no usable "
                               "CUDA GPU; check torch.cuda.is_available() first)")
        self.device = _backend.device("cuda", index_of(device))
        self._s = kwargs.get("_native") or _backend.cuda_new_stream(self.device.index, priority)

    def synchronize(self) -> None:
        self._s.synchronize()

    def query(self) -> bool:
        return bool(self._s.done)

    def wait_stream(self, stream: Stream) -> None:
        self._s.wait_event(stream._s.record())

    def wait_event(self, event: Event) -> None:
        self._s.wait_event(event._e)

    def record_event(self, event: Event | None = None) -> Event:
        event = event if event is not None else Event()
        event.record(self)
        return event

    def __enter__(self) -> Stream:
        self._s.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._s.__exit__(*exc)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and self._s == other._s

    def __hash__(self) -> int:
        return hash(self._s)

    def __repr__(self) -> str:
        return f"<torch.cuda.Stream device={self.device} cuda_stream={self._s.ptr:#x}>"


class ExternalStream(Stream):
    """PyTorch wraps a stream allocated elsewhere; ember cannot."""

    def __init__(self, stream_ptr: int, device: Any = None, **kwargs: Any) -> None:
        raise RuntimeError("torch.cuda.ExternalStream is not supported by ember")


class Event:
    """A CUDA event for timing and stream synchronisation. Needs a GPU, as in PyTorch."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        if not is_available():
            raise RuntimeError("Tried to instantiate dummy base class Event: ember has no usable "
                               "CUDA GPU (check torch.cuda.is_available() first)")
        self._e = _backend.cuda_new_event(enable_timing, blocking, interprocess)

    def record(self, stream: Stream | None = None) -> None:
        self._e.record(None if stream is None else stream._s)

    def wait(self, stream: Stream | None = None) -> None:
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        return bool(self._e.done)

    def synchronize(self) -> None:
        self._e.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and ``end_event``."""
        return _backend.cuda_elapsed_ms(self._e, end_event._e)


def current_stream(device: Any = None) -> Stream:
    require("current_stream")
    return Stream(device, _native=_backend.cuda_current_stream_obj())


def default_stream(device: Any = None) -> Stream:
    require("default_stream")
    return Stream(device, _native=_backend.cuda_null_stream())


def set_stream(stream: Stream | None) -> None:
    """Make ``stream`` current (None: no-op)."""
    if stream is not None:
        stream._s.use()


class StreamContext:
    """Context manager that makes a stream current; ``None`` is a no-op."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream

    def __enter__(self) -> Stream | None:
        if self.stream is not None:
            self.stream.__enter__()
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self.stream is not None:
            self.stream.__exit__(*exc)


def stream(stream: Stream | None) -> StreamContext:
    """``with torch.cuda.stream(s):`` runs the block's kernels on ``s`` (None: no-op)."""
    return StreamContext(stream)


def is_current_stream_capturing() -> bool:
    return False


class CUDAGraph:
    """CUDA graph capture. ember does not capture graphs; it raises as CPU-only PyTorch does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("Tried to instantiate dummy base class CUDAGraph: ember does not "
                           "capture CUDA graphs; run the model eagerly")


class graph:
    """``with torch.cuda.graph(g):`` capture context (needs a CUDAGraph, which ember lacks)."""

    def __init__(self, cuda_graph: CUDAGraph, pool: Any = None, stream: Any = None,
                 capture_error_mode: str = "global") -> None:
        raise RuntimeError("torch.cuda.Stream requires CUDA support: ember does not capture "
                           "CUDA graphs; run the model eagerly")


def graph_pool_handle() -> Any:
    raise RuntimeError("ember does not capture CUDA graphs")


def make_graphed_callables(callables: Any, sample_args: Any, **kwargs: Any) -> Any:
    """PyTorch captures CUDA graphs here; ember returns the callables unchanged (eager)."""
    return callables


class _CudaTensorType(type):
    """``torch.cuda.FloatTensor`` and kin: constructors of CUDA tensors of one dtype, and
    ``isinstance`` checks for them."""

    def __instancecheck__(cls, obj: object) -> bool:
        from .._tensor import Tensor

        return isinstance(obj, Tensor) and obj.is_cuda and obj.dtype is cls._dtype()

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if not is_available():
            raise TypeError(f"type torch.cuda.{cls.__name__} not available. Torch not compiled "
                            "with CUDA enabled (ember has no usable CUDA GPU).")
        import ember

        return getattr(ember, cls.__name__)(*args, **kwargs).cuda()

    def _dtype(cls) -> Any:
        import ember

        return getattr(ember, cls._dtname)


def _tensor_type(name: str, dtname: str) -> type:
    return _CudaTensorType(name, (), {"_dtname": dtname, "__module__": "ember.cuda",
                                      "__doc__": f"CUDA tensors of dtype {dtname}."})


FloatTensor = _tensor_type("FloatTensor", "float32")
DoubleTensor = _tensor_type("DoubleTensor", "float64")
HalfTensor = _tensor_type("HalfTensor", "float16")
BFloat16Tensor = _tensor_type("BFloat16Tensor", "bfloat16")
LongTensor = _tensor_type("LongTensor", "int64")
IntTensor = _tensor_type("IntTensor", "int32")
ShortTensor = _tensor_type("ShortTensor", "int16")
CharTensor = _tensor_type("CharTensor", "int8")
ByteTensor = _tensor_type("ByteTensor", "uint8")
BoolTensor = _tensor_type("BoolTensor", "bool")


has_half = True
has_magma = False
default_generators: tuple = ()


class CudaError(RuntimeError):
    """An error the CUDA runtime reported."""

    def __init__(self, code: int) -> None:
        super().__init__(f"CUDA error (code {code})")


class DeferredCudaCallError(Exception):
    """A deferred CUDA call failed during lazy initialization."""


def get_gencode_flags() -> str:
    return ""


_sync_debug_mode = {"mode": 0}


def get_sync_debug_mode() -> int:
    """0 (ember does not warn on synchronizing calls)."""
    require("get_sync_debug_mode")
    return _sync_debug_mode["mode"]


def set_sync_debug_mode(debug_mode: int | str) -> None:
    """Recorded only: ember does not report synchronizing calls."""
    require("set_sync_debug_mode")
    modes = {"default": 0, "warn": 1, "error": 2}
    _sync_debug_mode["mode"] = modes[debug_mode] if isinstance(debug_mode, str) else debug_mode


def can_device_access_peer(device: Any, peer_device: Any) -> bool:
    """Whether ``device`` can read ``peer_device``'s memory directly."""
    require("can_device_access_peer")
    return _backend.cuda_can_access_peer(index_of(device), index_of(peer_device))


def _nvml(what: str) -> Any:
    raise ModuleNotFoundError(f"nvidia-ml-py does not seem to be installed or it can't be "
                              f"imported (torch.cuda.{what} reads the GPU through NVML; ember "
                              "does not)")


def utilization(device: Any = None) -> int:
    return _nvml("utilization")


def memory_usage(device: Any = None) -> int:
    return _nvml("memory_usage")


def temperature(device: Any = None) -> int:
    return _nvml("temperature")


def power_draw(device: Any = None) -> int:
    return _nvml("power_draw")


def clock_rate(device: Any = None) -> int:
    return _nvml("clock_rate")


def device_memory_used(device: Any = None) -> int:
    return _nvml("device_memory_used")


def __getattr__(name: str) -> object:
    if name in ("nvtx", "streams", "graphs"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    if name == "amp":  # torch.cuda.amp (deprecated spellings of torch.amp)
        import sys

        from ..amp import cuda_amp

        sys.modules.setdefault("ember.cuda.amp", cuda_amp)
        return cuda_amp
    from .._missing import attribute_error

    raise attribute_error("torch.cuda", name)


# PyTorch defines these in torch.cuda.streams / torch.cuda.graphs (checkpoints name them so)
for _c in (Stream, ExternalStream, Event):
    _c.__module__ = "ember.cuda.streams"
for _c in (CUDAGraph, graph):
    _c.__module__ = "ember.cuda.graphs"
del _c
