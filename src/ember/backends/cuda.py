"""``ember.backends.cuda``: ``matmul.allow_tf32`` and the scaled-dot-product-attention switches.

CUDA in ember goes through CuPy, so ``is_built()`` says whether CuPy is installed. The flags are
stored and read back; ember's attention has one (math) implementation whatever they say.
"""

from __future__ import annotations

import contextlib
import enum
import importlib.util
import warnings
from collections.abc import Iterator
from typing import Any

__all__ = [
    "SDPBackend", "cuBLASModule", "cudnn_sdp_enabled", "enable_cudnn_sdp", "enable_flash_sdp",
    "enable_math_sdp", "enable_mem_efficient_sdp", "flash_sdp_enabled", "is_built",
    "is_flash_attention_available", "math_sdp_enabled", "matmul", "mem_efficient_sdp_enabled",
    "preferred_linalg_library", "sdp_kernel",
]


def is_built() -> bool:
    """Whether ember can run CUDA tensors: CuPy is installed (a GPU may still be absent)."""
    return importlib.util.find_spec("cupy") is not None


class cuBLASModule:  # noqa: N801 - PyTorch's name
    """``torch.backends.cuda.matmul``: precision switches for CUDA matrix products."""

    _FIELDS = ("allow_tf32", "allow_fp16_reduced_precision_reduction",
               "allow_bf16_reduced_precision_reduction", "allow_fp16_accumulation",
               "fp32_precision")

    def __init__(self) -> None:
        object.__setattr__(self, "_values", {
            "allow_tf32": False,
            "allow_fp16_reduced_precision_reduction": True,
            "allow_bf16_reduced_precision_reduction": True,
            "allow_fp16_accumulation": False,
            "fp32_precision": "none",
        })

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._FIELDS:
            raise AttributeError(f"Unknown attribute {name}")
        self._values[name] = value


matmul = cuBLASModule()


class SDPBackend(enum.IntEnum):
    """The attention implementations PyTorch can choose between."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def enable_flash_sdp(enabled: bool) -> None:
    """Allow or forbid the flash attention kernel (stored; ember has only the math one)."""
    _sdp["flash"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    """The flag ``enable_flash_sdp`` set."""
    return _sdp["flash"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Allow or forbid the memory-efficient attention kernel (stored)."""
    _sdp["mem_efficient"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    """The flag ``enable_mem_efficient_sdp`` set."""
    return _sdp["mem_efficient"]


def enable_math_sdp(enabled: bool) -> None:
    """Allow or forbid the math attention implementation (stored)."""
    _sdp["math"] = bool(enabled)


def math_sdp_enabled() -> bool:
    """The flag ``enable_math_sdp`` set."""
    return _sdp["math"]


def enable_cudnn_sdp(enabled: bool) -> None:
    """Allow or forbid the cuDNN attention kernel (stored)."""
    _sdp["cudnn"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    """The flag ``enable_cudnn_sdp`` set."""
    return _sdp["cudnn"]


def is_flash_attention_available() -> bool:
    """False: ember has no flash attention kernel."""
    return False


def can_use_flash_attention(params: Any, debug: bool = False) -> bool:
    """False: ember has no flash attention kernel."""
    return False


def can_use_efficient_attention(params: Any, debug: bool = False) -> bool:
    """False: ember has no memory-efficient attention kernel."""
    return False


def can_use_cudnn_attention(params: Any, debug: bool = False) -> bool:
    """False: ember has no cuDNN attention kernel."""
    return False


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True) -> Iterator[dict]:
    """Deprecated in PyTorch (use ``torch.nn.attention.sdpa_kernel``): set the four attention
    switches inside a ``with`` block and restore them after."""
    warnings.warn(
        "`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager "
        "will be removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context "
        "manager, with updated signature.",
        FutureWarning,
        stacklevel=3,
    )
    old = dict(_sdp)
    _sdp.update(flash=bool(enable_flash), math=bool(enable_math),
                mem_efficient=bool(enable_mem_efficient), cudnn=bool(enable_cudnn))
    try:
        yield {}
    finally:
        _sdp.update(old)


_linalg_library = "default"


def preferred_linalg_library(backend: str | None = None) -> str:
    """Store (and return) the preferred linear-algebra library name; ember uses NumPy's/CuPy's."""
    global _linalg_library
    if backend is not None:
        _linalg_library = str(backend).lower()
    return _linalg_library
