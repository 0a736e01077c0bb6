"""``torch.autograd.Variable``: PyTorch's deprecated alias of ``Tensor``.

``Variable(t, requires_grad=False)`` returns a new leaf tensor that shares ``t``'s data (detached
from any graph), and ``isinstance(x, Variable)`` holds for every tensor, as in PyTorch.
"""

from __future__ import annotations

import warnings
from typing import Any

from .._tensor import Tensor
from ..ops import creation as _creation
from . import engine as _engine

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, Tensor)

    def __call__(cls, data: Any = None, requires_grad: bool = False, volatile: bool = False,
                 **kwargs: Any) -> Any:
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                          "instead.", UserWarning, stacklevel=2)
        if data is None:
            data = _creation.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__} "
                            "(wrap it first: torch.tensor(data))")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out


class Variable(metaclass=_VariableMeta):
    """Deprecated: tensors are variables. ``Variable(t, requires_grad=...)`` returns a tensor."""


class _ExecutionEngine:
    """``Variable._execution_engine``: PyTorch's handle on its backward engine, which libraries use
    to queue a callback that runs when the current backward pass finishes."""

    @staticmethod
    def queue_callback(callback: Any) -> None:
        _engine.queue_callback(callback)


Variable._execution_engine = _ExecutionEngine()  # type: ignore[attr-defined]
