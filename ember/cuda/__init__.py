"""``ember.cuda``: CUDA devices through CuPy (optional). Everything answers sensibly without one."""

from __future__ import annotations

from typing import Any

from . import _backend


def is_available() -> bool:
    """True when CuPy is installed and a CUDA GPU is usable."""
    return _backend.cuda_available()


def device_count() -> int:
    return _backend.cuda_device_count()


def current_device() -> int:
    if not is_available():
        raise RuntimeError("no CUDA device: ember.cuda.is_available() is False")
    return int(_backend._cupy.cuda.runtime.getDevice())


def set_device(device: Any) -> None:
    if is_available():
        d = _backend.device(device) if not isinstance(device, int) else _backend.device("cuda", device)
        _backend._cupy.cuda.runtime.setDevice(d.index or 0)


def get_device_name(device: Any = None) -> str:
    if not is_available():
        raise RuntimeError("no CUDA device: ember.cuda.is_available() is False")
    props = _backend._cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def synchronize(device: Any = None) -> None:
    if is_available():
        _backend.synchronize(None if device is None else _backend.device(device))


def manual_seed(seed: int) -> None:
    """Seeds the generator CUDA draws use (ember draws on the CPU and moves: one generator)."""
    from ._random import manual_seed as ms

    ms(seed)


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return is_available()


def empty_cache() -> None:
    if is_available():
        _backend._cupy.get_default_memory_pool().free_all_blocks()


def memory_allocated(device: Any = None) -> int:
    return int(_backend._cupy.get_default_memory_pool().used_bytes()) if is_available() else 0


def max_memory_allocated(device: Any = None) -> int:
    return int(_backend._cupy.get_default_memory_pool().total_bytes()) if is_available() else 0


def reset_peak_memory_stats(device: Any = None) -> None:
    pass


def __getattr__(name: str) -> object:
    if name == "amp":  # torch.cuda.amp (deprecated spellings of torch.amp)
        import sys

        from .amp import cuda_amp

        sys.modules.setdefault("ember.cuda.amp", cuda_amp)
        return cuda_amp
    from ._missing import attribute_error

    raise attribute_error("torch.cuda", name)
