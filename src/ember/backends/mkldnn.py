"""``ember.backends.mkldnn``: the flags PyTorch has; ember has no oneDNN backend."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager

from ._flags import set_flags

__all__ = ["is_available", "flags", "enabled", "deterministic", "allow_tf32"]

enabled = True
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: ember has no MKL-DNN (oneDNN) backend."""
    return False


def flags(enabled: bool = False, deterministic: bool = False, allow_tf32: bool = True,
          fp32_precision: str = "none") -> AbstractContextManager[None]:
    """Set the flags inside a ``with`` block, restoring them after."""
    return set_flags(sys.modules[__name__], enabled=enabled, deterministic=deterministic,
                     allow_tf32=allow_tf32)
