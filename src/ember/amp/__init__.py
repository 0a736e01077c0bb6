"""``ember.amp``: automatic mixed precision (``autocast`` regions and the ``GradScaler``)."""

from . import autocast_mode, grad_scaler
from .autocast_mode import (
    autocast,
    custom_bwd,
    custom_fwd,
    is_autocast_available,
)
from .grad_scaler import GradScaler

__all__ = [
    "GradScaler",
    "autocast",
    "autocast_mode",
    "custom_bwd",
    "custom_fwd",
    "grad_scaler",
    "is_autocast_available",
]


def __getattr__(name: str) -> object:
    from .._missing import attribute_error

    raise attribute_error("torch.amp", name)
