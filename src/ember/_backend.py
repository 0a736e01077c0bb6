"""Devices and array modules. THE ONLY module that knows CuPy.

A ``device`` names where a tensor lives; ``device.xp`` is the array module that computes there
(NumPy on ``cpu``, CuPy on ``cuda``, ``ember._meta.namespace`` on ``meta``: arrays with a shape
and no data). CuPy is imported the first time a CUDA device is used.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from . import _meta, _threads
from ._meta import MetaArray, WrapperArray

_cupy: Any = None


class CudaUnavailableError(AssertionError, RuntimeError):
    """Raised where PyTorch built without CUDA raises ``AssertionError('Torch not compiled with
    CUDA enabled')``: a CUDA tensor or ``torch.cuda`` call where CuPy or a GPU is missing (the
    text says which). It is also a ``RuntimeError``, so either ``except`` catches it
    (``ember.cuda.CudaUnavailableError``)."""


def _import_cupy() -> Any:
    global _cupy
    if _cupy is None:
        try:
            import cupy
        except ImportError as e:
            raise CudaUnavailableError(
                "ember's CUDA device needs CuPy, which is not installed: "
                "pip install 'ember[cuda]' (or cupy-cuda12x), on a machine with an NVIDIA GPU. "
                "Use device='cpu' to run without a GPU."
            ) from e
        try:
            n = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # noqa: BLE001 - CuPy raises driver-specific errors
            raise CudaUnavailableError(f"CuPy is installed but no CUDA GPU is usable: {e}") from e
        if n == 0:
            raise CudaUnavailableError("CuPy is installed but this machine has no CUDA GPU; use device='cpu'")
        _cupy = cupy
    return _cupy


def nccl_module() -> Any:
    """CuPy's NCCL binding (``cupy.cuda.nccl``), or None where CuPy, a GPU or NCCL is missing."""
    if not cuda_available() or cuda_is_fake():
        return None
    try:
        from cupy.cuda import nccl
    except Exception:  # noqa: BLE001 - CuPy built without NCCL raises at import
        return None
    return nccl if getattr(nccl, "available", True) else None


def cuda_available() -> bool:
    try:
        _import_cupy()
    except RuntimeError:
        return False
    return True


def cuda_device_count() -> int:
    return _cupy.cuda.runtime.getDeviceCount() if cuda_available() else 0


class device:
    """``ember.device("cpu" | "cuda" | "cuda:N")``, or ``device("cuda", N)``."""

    __slots__ = ("type", "index")

    def __new__(cls, spec: Any = "cpu", index: int | None = None) -> device:
        if type(spec) is device:
            return spec
        return _parse(str(spec) if not isinstance(spec, int) else f"cuda:{spec}", index)

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        # a device equals only a device, never its string ("cpu"), as in PyTorch: compare
        # ``x.device.type == "cpu"`` or ``x.device == torch.device("cpu")``
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self) -> tuple:
        return (device, (str(self),))

    def __enter__(self) -> device:
        """``with torch.device("meta"):``: factory functions called without ``device=`` make
        their tensors here, as PyTorch's device context does."""
        global default_device
        _default_stack.append(default_device)
        default_device = None if self.type == "cpu" and self.index is None else self
        return self

    def __exit__(self, *exc: Any) -> None:
        global default_device
        default_device = _default_stack.pop()

    @property
    def xp(self) -> Any:
        """The array module computing on this device."""
        if self.type == "cpu":
            return np
        if self.type == "meta":
            return _meta.namespace
        return _import_cupy()


@functools.lru_cache(maxsize=64)
def _parse(spec: str, index: int | None) -> device:
    spec = spec.strip()
    kind, _, idx = spec.partition(":")
    if idx:
        if index is not None:
            raise RuntimeError(f"device string {spec!r} already has an index; don't pass index={index}")
        if not idx.isdigit():
            raise RuntimeError(f"Invalid device string: {spec!r}")
        index = int(idx)
    if kind not in ("cpu", "cuda", "mps", "meta", "xpu"):
        raise RuntimeError(
            f"Expected one of cpu, cuda, mps device type at start of device string: {spec!r}"
        )
    d = object.__new__(device)
    d.type = kind
    d.index = index
    return d


CPU = device("cpu")
META = device("meta")
# the device factory functions use when given none (``with torch.device(...)``,
# ``set_default_device``); None means the CPU, so the common case tests one global
default_device: device | None = None
_default_stack: list = []


def set_default_device(dev: Any) -> None:
    """``torch.set_default_device``: None or 'cpu' restores the CPU."""
    global default_device
    d = None if dev is None else device(dev)
    default_device = None if d is None or (d.type == "cpu" and d.index is None) else d


def get_default_device() -> device:
    return CPU if default_device is None else default_device


def meta_target(dev: Any) -> bool:
    """Whether a factory given ``device=dev`` makes a meta tensor (``device="meta"``, or none
    given inside ``with torch.device("meta")``): it then allocates nothing."""
    if dev is None:
        return default_device is not None and default_device.type == "meta"
    return (dev.type if type(dev) is device else str(dev)) == "meta"


class OutOfMemoryError(RuntimeError):
    """Raised when a device runs out of memory (``torch.OutOfMemoryError``)."""


def check_available(dev: device) -> device:
    """Raise a helpful error for devices ember cannot compute on; returns the canonical device."""
    if dev.type == "cpu":
        return CPU
    if dev.type == "meta":
        return META
    if dev.type == "cuda":
        _import_cupy()
        n = _cupy.cuda.runtime.getDeviceCount()
        index = 0 if dev.index is None else dev.index
        if index >= n:
            raise RuntimeError(f"CUDA error: invalid device ordinal: cuda:{index} (this machine has {n})")
        return device("cuda", index)
    if dev.type == "mps":
        raise RuntimeError(
            "the 'mps' device (Apple GPUs) is not available in ember: "
            "ember computes on 'cpu' (NumPy) and 'cuda' (CuPy). "
            "Check ember.backends.mps.is_available() first, as PyTorch scripts do."
        )
    raise RuntimeError(f"ember does not support the '{dev.type}' device; use 'cpu' or 'cuda'")


class FakeCudaArray(np.ndarray):
    """A NumPy array that says it lives on ``cuda:0``: the arrays of fake CUDA
    (``ember.testing.fake_cuda``, ``ember run --fake-cuda``) and of the tests' ``fake_cuda``
    device, so device checks and transfers run on machines without a GPU."""

    def __array_finalize__(self, obj: Any) -> None:
        if fake_cuda_track is not None:
            fake_cuda_track(self)


# set by ``ember.testing.fake_cuda`` while it is on: counts each new FakeCudaArray's allocation
fake_cuda_track: Any = None


def cuda_array_type() -> type | None:
    """The exact type of a CUDA array (CuPy's ``ndarray``, or ``FakeCudaArray`` under fake
    CUDA), or None while CuPy has not been loaded (then no array is a CUDA one)."""
    return None if _cupy is None else _cupy.ndarray


def cuda_is_fake() -> bool:
    """Whether ``cuda`` is fake CUDA (NumPy arrays) rather than CuPy's."""
    return bool(getattr(_cupy, "ember_fake_cuda", False))


def device_of(arr: Any) -> device:
    if type(arr) is np.ndarray:
        return CPU
    if type(arr) is MetaArray:
        return META
    if isinstance(arr, FakeCudaArray):
        return device("cuda", 0)
    if _cupy is not None and isinstance(arr, _cupy.ndarray):
        return device("cuda", arr.device.id)
    if type(arr) is WrapperArray:  # Tensor._make_wrapper_subclass: the device it was given
        return arr.device
    return CPU


def xp_of(arr: Any) -> Any:
    """The array module of ``arr``."""
    if type(arr) is np.ndarray:
        return np
    if type(arr) is MetaArray:
        return _meta.namespace
    if _cupy is None:
        return np
    return _cupy.get_array_module(arr)


def to_device(arr: Any, dev: device, copy: bool = False) -> Any:
    """``arr`` on ``dev`` (the same object when already there, unless ``copy``)."""
    src = device_of(arr)
    if src == dev:
        return arr.copy() if copy else arr
    if dev.type == "meta":
        return _meta.like(arr)
    if src.type == "meta":
        raise NotImplementedError(_meta.NO_DATA)
    if dev.type == "cpu":
        return np.array(arr, subok=False) if isinstance(arr, FakeCudaArray) else arr.get()
    if _cupy is None:  # only reachable from a FakeCudaArray (tests): Tensor.to checks first
        return np.array(arr).view(FakeCudaArray)
    cp = _import_cupy()
    with cp.cuda.Device(dev.index or 0):
        return cp.asarray(arr)


def partial_overlap(a: Any, b: Any) -> bool:
    """PyTorch's rule for an in-place op's operand: both arrays dense (no gaps, no repeats), their
    memory ranges meet, and they are not the same view of it (same range and strides, size-1
    dims' included, as PyTorch compares them: views give PyTorch's strides there, see
    ``with_strides``). Arrays with gaps (a diagonal, a step slice) are not compared, as in
    PyTorch."""
    if a.size == 0 or b.size == 0 or not xp_of(a).may_share_memory(a, b):
        return False  # (the common case: a cheap bounds check says they are apart)
    ra, rb = _dense_range(a), _dense_range(b)
    if ra is None or rb is None:
        return False
    if ra == rb:
        return a.strides != b.strides
    return ra[0] < rb[1] and rb[0] < ra[1]


def _dense_range(a: Any) -> tuple[int, int] | None:
    """[first byte, end) of a dense array's memory, or None when it has gaps or repeats."""
    item = a.itemsize
    if any(s < 0 for s in a.strides):
        return None
    span = sum((n - 1) * s for n, s in zip(a.shape, a.strides)) + item
    if span != a.size * item or any(s == 0 and n > 1 for n, s in zip(a.shape, a.strides)):
        return None
    start = _address(a)
    return start, start + span


def with_strides(a: Any, strides: tuple) -> Any:
    """A view of ``a`` with the byte ``strides``, which must address the same elements (they
    differ from ``a``'s on size-1 dims only): PyTorch's strides where NumPy's reshape or
    indexing picks others for such dims (visible in ``stride()`` and the in-place overlap
    check)."""
    if type(a) is np.ndarray and a.flags.c_contiguous:  # (its buffer: 5x faster than as_strided)
        return np.ndarray(a.shape, a.dtype, a, 0, strides)  # (read-only stays read-only)
    if isinstance(a, np.ndarray):  # the CPU array and FakeCudaArray (kept by subok)
        return np.lib.stride_tricks.as_strided(a, strides=strides, subok=True)
    return xp_of(a).lib.stride_tricks.as_strided(a, a.shape, strides)


def view_strides(shape: tuple, strides: tuple, new: tuple, item: int) -> tuple | None:
    """PyTorch's byte strides for a view of an array (``shape``, byte ``strides``) as ``new``,
    None when no view exists. From the innermost dim out, x's dims group into chunks laid out
    contiguously one after the other; each chunk is spread over the next run of ``new`` dims,
    each stride the chunk's innermost stride times the sizes already placed, and a size-1
    dim of ``new`` takes the stride reached at its place (NumPy picks others for size-1 dims)."""
    if not shape:
        return _meta._c_strides(new, item)
    out = [0] * len(new)
    j = len(new) - 1
    unit = strides[-1]
    n_old = n_new = 1
    for i in range(len(shape) - 1, -1, -1):
        n_old *= shape[i]
        if i and (shape[i - 1] == 1 or strides[i - 1] == n_old * unit):
            continue  # x's dim i - 1 continues the chunk
        while j >= 0 and (n_new < n_old or new[j] == 1):
            out[j] = n_new * unit
            n_new *= new[j]
            j -= 1
        if n_new != n_old:
            return None
        if i:
            unit, n_old, n_new = strides[i - 1], 1, 1
    return tuple(out) if j == -1 else None


def view_restrided(x: Any, out: Any) -> Any:
    """``out``, a view of ``x`` in another shape, with PyTorch's strides for its size-1 dims."""
    st = view_strides(x.shape, x.strides, out.shape, x.itemsize)
    return out if st is None or st == out.strides else with_strides(out, st)


def expand_restrided(x: Any, out: Any) -> Any:
    """``out``, ``x`` broadcast to a larger shape, with PyTorch's strides for its size-1 dims."""
    st = expand_strides(x, out.shape)
    return out if st == out.strides else with_strides(out, st)




def expand_strides(x: Any, shape: tuple) -> tuple:
    """PyTorch's byte strides for ``x`` expanded to ``shape``: a dim kept at its size keeps
    its stride, a broadcast dim gets 0, and a new size-1 dim the size times the stride of the
    dim after it (0 at the end)."""
    lead = len(shape) - x.ndim
    out = [0] * len(shape)
    after = 0
    for i in range(len(shape) - 1, -1, -1):
        n, k = shape[i], i - lead
        if k >= 0:
            st = x.strides[k] if x.shape[k] == n else 0
        else:
            st = after if n == 1 else 0
        out[i] = st
        after = n * st
    return tuple(out)


def _address(a: Any) -> int:
    if type(a) is MetaArray:
        return 0  # (PyTorch's data_ptr() of a meta tensor)
    return a.__array_interface__["data"][0] if isinstance(a, np.ndarray) else int(a.data.ptr)


CPU_ARRAY = np.ndarray  # the exact type of a CPU array (hot paths test ``type(a) is CPU_ARRAY``)


def is_cpu_array(arr: Any) -> bool:
    """A plain NumPy array (the CPU fast path: ``FakeCudaArray`` and CuPy arrays are not)."""
    return type(arr) is np.ndarray


def is_numpy_backed(arr: Any) -> bool:
    """Any NumPy array (the CPU array or ``FakeCudaArray``), whose ``flags`` NumPy manages
    (``writeable``...); CuPy arrays and tensors are not."""
    return isinstance(arr, np.ndarray)


def c_contiguous(a: Any) -> Any:
    """``a`` in C order (a copy only when it is not; scalars pass through). PyTorch's reductions,
    cat, stack and roll return contiguous tensors, while NumPy's keep the inputs' memory order,
    which would make a later ``.view()`` fail where PyTorch's succeeds."""
    flags = getattr(a, "flags", None)
    if flags is None or flags.c_contiguous:
        return a
    return xp_of(a).ascontiguousarray(a)


def to_numpy(arr: Any) -> np.ndarray:
    """The array's values as a NumPy array on the host: the array itself on the CPU, a copy from
    a GPU (``FakeCudaArray``, the tests' stand-in for a CUDA array, becomes a plain view)."""
    if type(arr) is np.ndarray:
        return arr
    if isinstance(arr, np.ndarray):
        return np.asarray(arr)
    if isinstance(arr, np.generic):
        return np.asarray(arr)
    if type(arr) is MetaArray:
        raise NotImplementedError(_meta.NO_DATA)
    return arr.get()


def address(arr: Any) -> int:
    """The address of the array's first element (host or device memory)."""
    return _address(arr)


def storage_extent(arr: Any) -> tuple[int, int] | None:
    """(elements before the array's first element, elements from it to the end) of the one
    dense allocation it views; None when that is unknown or not dense."""
    item = arr.itemsize
    if type(arr) is MetaArray:
        return arr.offset, arr.storage_elements() - arr.offset
    if isinstance(arr, np.ndarray):
        root = arr
        while isinstance(root.base, np.ndarray):
            root = root.base
        if not root.flags.c_contiguous and not root.flags.f_contiguous:
            return None
        start = (_address(arr) - _address(root)) // item
        return start, root.nbytes // item - start
    mem = getattr(getattr(arr, "data", None), "mem", None)  # CuPy: the allocation it views
    if mem is None:
        return None
    start = (arr.data.ptr - mem.ptr) // item
    return start, mem.size // item - start


def gemm(a: Any, b: Any, bias: Any = None) -> Any:
    """``a @ b`` (``+ bias``, a vector of the result's width, added after the product) for arrays
    of at most two dimensions. Host arrays go through ``ndarray.dot``: the same BLAS call as
    matmul's, bit for bit, at a third of matmul's fixed cost (~0.8 vs 2.5 us), which is most of
    a small layer's product. Large float32 products of matrices run on the kernels' pool
    (``_threads.gemm``; the same values), each part adding the bias to its rows."""
    if type(a) is np.ndarray and type(b) is np.ndarray:
        if a.ndim == 2 and b.ndim == 2 and _threads.gemm_applies(a.shape[0], b.shape[1]) \
                and (out := _threads.gemm(a, b, None, bias)) is not None:  # (a small one: no call)
            return out
        out = a.dot(b)
    else:
        out = a @ b
    if bias is not None:
        out += bias
    return out


def is_array(x: Any) -> bool:
    return (type(x) is np.ndarray or isinstance(x, FakeCudaArray) or type(x) is MetaArray
            or (_cupy is not None and isinstance(x, _cupy.ndarray)))


def is_meta(x: Any) -> bool:
    """A meta array: a shape, a dtype and strides, no data (``ember._meta``)."""
    return type(x) is MetaArray


def values_equal(a: Any, b: Any) -> bool:
    """Whether two values are equal by value: arrays (either backend) by dtype, shape and
    contents (NaN equal to NaN), tuples and lists item by item, anything else by ``==`` of the
    same type (an uncomparable value is not equal). Compile compares two traces' constants with
    it, and an indexing key its fields."""
    if is_array(a) or is_array(b):
        if not (is_array(a) and is_array(b)) or a.shape != b.shape or a.dtype != b.dtype:
            return False
        a, b = to_numpy(a), to_numpy(b)
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))
    try:
        eq = a == b
        if isinstance(eq, bool):
            return eq or (isinstance(a, float) and a != a and b != b)
        return bool(eq) if isinstance(eq, np.bool_) else False
    except Exception:  # noqa: BLE001 - an uncomparable value is simply not equal
        return False


def synchronize(dev: device | None = None) -> None:
    if _cupy is not None:
        _cupy.cuda.Device((dev.index or 0) if dev is not None else None).synchronize()


# ---------------------------------------------------------------------------------------------
# small CUDA queries for ``ember.cuda`` (each assumes ``cuda_available()``)


def cuda_current_device() -> int:
    """The index of CuPy's current CUDA device."""
    return int(_import_cupy().cuda.runtime.getDevice())


def cuda_set_device(index: int) -> None:
    _import_cupy().cuda.runtime.setDevice(int(index))


def cuda_device_properties(index: int) -> dict:
    """The CUDA runtime's properties of device ``index`` (name decoded to str)."""
    props = dict(_import_cupy().cuda.runtime.getDeviceProperties(int(index)))
    name = props.get("name", b"")
    props["name"] = name.decode() if isinstance(name, bytes) else str(name)
    return props


def cuda_mem_get_info(index: int) -> tuple[int, int]:
    """(free, total) bytes on device ``index``."""
    cp = _import_cupy()
    with cp.cuda.Device(int(index)):
        free, total = cp.cuda.runtime.memGetInfo()
    return int(free), int(total)


def cuda_pool_bytes() -> tuple[int, int]:
    """(used, held) bytes of CuPy's default memory pool."""
    pool = _import_cupy().get_default_memory_pool()
    return int(pool.used_bytes()), int(pool.total_bytes())


def cuda_free_pool() -> None:
    """Return the default memory pools' cached blocks to the driver."""
    cp = _import_cupy()
    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()


def cuda_new_stream(index: int, priority: int = 0) -> Any:
    """A new non-blocking CuPy stream on device ``index``."""
    cp = _import_cupy()
    with cp.cuda.Device(int(index)):
        return cp.cuda.Stream(non_blocking=True, priority=priority)


def cuda_current_stream_obj() -> Any:
    return _import_cupy().cuda.get_current_stream()


def cuda_null_stream() -> Any:
    return _import_cupy().cuda.Stream.null


def cuda_new_event(enable_timing: bool, blocking: bool, interprocess: bool) -> Any:
    cp = _import_cupy()
    return cp.cuda.Event(block=blocking, disable_timing=not enable_timing,
                         interprocess=interprocess)


def cuda_elapsed_ms(start: Any, end: Any) -> float:
    return float(_import_cupy().cuda.get_elapsed_time(start, end))


def cuda_can_access_peer(index: int, peer: int) -> bool:
    return bool(_import_cupy().cuda.runtime.deviceCanAccessPeer(int(index), int(peer)))
