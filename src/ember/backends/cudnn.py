"""``ember.backends.cudnn``: the flags scripts set (``benchmark``, ``deterministic``,
``allow_tf32``...). ember calls no cuDNN, so ``is_available()`` is False and the flags are stored
only."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager
from typing import Any

from ._flags import set_flags

__all__ = ["allow_tf32", "benchmark", "benchmark_limit", "deterministic", "enabled", "flags",
           "is_acceptable", "is_available", "version"]

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: ember does not use cuDNN."""
    return False


def version() -> int | None:
    """None: no cuDNN is loaded."""
    return None


def is_acceptable(tensor: Any) -> bool:
    """False: no tensor goes through cuDNN in ember."""
    return False


def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10,
          deterministic: bool = False, allow_tf32: bool = True, fp32_precision: str = "none",
          depthwise_kernel: str = "auto") -> AbstractContextManager[None]:
    """Set the flags inside a ``with`` block, restoring them after (PyTorch's defaults)."""
    return set_flags(sys.modules[__name__], enabled=enabled, benchmark=benchmark,
                     benchmark_limit=benchmark_limit, deterministic=deterministic,
                     allow_tf32=allow_tf32)
