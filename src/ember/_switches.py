"""Global switches of the ``torch`` namespace: deterministic algorithms (and their debug mode),
float32 matmul precision, warn-always, inter-op threads, the default device and tensor type.
ember's NumPy/CuPy kernels are deterministic and full precision already, so most switches only
keep their setting for the matching getter. Namespace layer: ``ember/__init__.py`` re-exports
them; ``set_num_threads``/``set_printoptions``/``set_default_dtype`` live beside their subjects
(``ember/__init__.py``, ``_tensor_str.py``, ``_dtype.py``).
"""

from __future__ import annotations

import builtins
import importlib
import warnings
from typing import Any

from . import _backend, _dtype
from ._backend import device as _device
from ._dtype import set_default_dtype

__all__ = [
    "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
    "get_deterministic_debug_mode", "set_float32_matmul_precision", "get_float32_matmul_precision",
    "set_warn_always", "is_warn_always_enabled", "get_num_interop_threads",
    "set_num_interop_threads", "init_num_threads", "get_default_device", "get_device_module",
    "set_default_tensor_type", "set_default_device",
]

_state: dict[str, Any] = {
    "deterministic": False, "warn_only": False, "matmul_precision": "highest",
    "warn_always": False, "interop_threads": 1,
}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record the switch; ember's NumPy/CuPy kernels are deterministic already."""
    _state["deterministic"] = builtins.bool(mode)
    _state["warn_only"] = builtins.bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """The switch ``use_deterministic_algorithms`` set."""
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """The ``warn_only`` flag of ``use_deterministic_algorithms``."""
    return _state["warn_only"]


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """``"default"``/0, ``"warn"``/1 or ``"error"``/2, as ``use_deterministic_algorithms``."""
    modes = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in modes:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = modes[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0 (default), 1 (warn) or 2 (error), from ``use_deterministic_algorithms``."""
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


def set_float32_matmul_precision(precision: str) -> None:
    """``"highest"``, ``"high"`` or ``"medium"``; ember's float32 matmuls are always full
    precision (there is no TF32 on NumPy), so only the setting is kept."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision {precision!r}: use 'highest', 'high' or 'medium'")
    _state["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    """The precision ``set_float32_matmul_precision`` set (default ``"highest"``)."""
    return _state["matmul_precision"]


def set_warn_always(b: bool) -> None:
    """Record whether warnings PyTorch gives once should be given every time."""
    _state["warn_always"] = builtins.bool(b)


def is_warn_always_enabled() -> bool:
    """The switch ``set_warn_always`` set."""
    return _state["warn_always"]


def get_num_interop_threads() -> int:
    """The inter-op thread count ``set_num_interop_threads`` set (default 1)."""
    return _state["interop_threads"]


def set_num_interop_threads(n: int) -> None:
    """Record the inter-op thread count (ember runs ops on the calling thread)."""
    if builtins.int(n) < 1:
        raise RuntimeError(f"Expected positive number of threads, got {n}")
    _state["interop_threads"] = builtins.int(n)


def init_num_threads() -> None:
    """Nothing to initialise: NumPy's thread pool starts on first use."""


def get_default_device() -> Any:
    """The device factory functions use when given none: the CPU, unless
    ``set_default_device`` or a ``with torch.device(...)`` block chose another."""
    return _backend.get_default_device()


def set_default_device(device: Any) -> None:
    """The device factory functions (``zeros``, ``tensor``, ``randn``, modules' parameters) use
    when given none; ``None`` or ``"cpu"`` restores the CPU."""
    _backend.set_default_device(device)


def get_device_module(device: Any = None) -> Any:
    """The module for a device type: ``torch.cuda`` for 'cuda', ``torch.cpu`` for 'cpu'
    (no argument: the default device's)."""
    kind = "cpu" if device is None else (device if isinstance(device, str) else str(device))
    kind = _device(kind).type if kind not in ("xpu", "mps") else kind
    return importlib.import_module(f"ember.{kind}")


def set_default_tensor_type(t: Any) -> None:
    """Deprecated in PyTorch: sets the default dtype from ``torch.DoubleTensor`` or its name."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    name = name.rsplit(".", 1)[-1]
    table = {"FloatTensor": _dtype.float32, "DoubleTensor": _dtype.float64,
             "HalfTensor": _dtype.float16}
    if name not in table:
        raise TypeError(f"invalid type {t!r}: use torch.FloatTensor or torch.DoubleTensor "
                        "(or torch.set_default_dtype)")
    set_default_dtype(table[name])
