"""``torch.utils.hooks``: ``RemovableHandle`` (the handle every module hook registration
returns, the same class) and ``unserializable_hook``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..nn.modules._hooks import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook"]

_F = TypeVar("_F", bound=Callable)


def unserializable_hook(f: _F) -> _F:
    """Mark a tensor hook as one that need not survive serialization; returns ``f``."""
    f.__torch_unserializable__ = True  # type: ignore[attr-defined]
    return f


def __getattr__(name: str) -> object:
    from .._missing import attribute_error

    raise attribute_error("torch.utils.hooks", name)
