"""``torch.cuda.amp``'s deprecated spellings: ``autocast(...)`` and ``GradScaler(...)`` for CUDA.

They behave as ``torch.amp.autocast("cuda", ...)`` and ``torch.amp.GradScaler("cuda", ...)`` and
warn, as PyTorch does, that the ``torch.amp`` spelling is preferred. Without CUDA both disable
themselves (with PyTorch's warning), so ``GradScaler(enabled=False)`` style code runs anywhere.
"""

from __future__ import annotations

import warnings
from typing import Any

from .. import _dtype
from . import autocast_mode, grad_scaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(autocast_mode.autocast):
    """``torch.cuda.amp.autocast(args...)``: ``torch.amp.autocast("cuda", args...)``."""

    def __init__(self, enabled: bool = True, dtype: Any = _dtype.float16,
                 cache_enabled: bool = True) -> None:
        warnings.warn(
            "`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
            "`torch.amp.autocast('cuda', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(grad_scaler.GradScaler):
    """``torch.cuda.amp.GradScaler(args...)``: ``torch.amp.GradScaler("cuda", args...)``."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn(
            "`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
            "`torch.amp.GradScaler('cuda', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd: Any = None, *, cast_inputs: Any = None) -> Any:
    """``torch.cuda.amp.custom_fwd``: ``torch.amp.custom_fwd(device_type='cuda')``."""
    return autocast_mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Any = None) -> Any:
    """``torch.cuda.amp.custom_bwd``: ``torch.amp.custom_bwd(device_type='cuda')``."""
    return autocast_mode.custom_bwd(bwd, device_type="cuda")
