"""``Parameter`` and ``Buffer``: tensors that a ``Module`` registers when assigned as attributes."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._tensor import Tensor

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"]


def _array_of(data: Any) -> Any:
    if data is None:
        return np.empty((0,), dtype=np.float32)
    if isinstance(data, Tensor):
        return data._data
    raise TypeError(
        f"Parameter(data) expects an ember Tensor, got {type(data).__name__}; wrap it first, "
        "e.g. nn.Parameter(torch.tensor(values))"
    )


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning one to a Module attribute registers it.

    ``Parameter(data=None, requires_grad=True)`` shares ``data``'s array (no copy). Operations on
    a Parameter return plain Tensors.

    Example::

        >>> w = nn.Parameter(torch.zeros(2, 3))
        >>> isinstance(w, torch.Tensor), w.requires_grad
        (True, True)
    """

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        arr = _array_of(data)
        t = Tensor.__new__(cls)
        Tensor._init_from(t, arr, False)
        if requires_grad:
            t.requires_grad = True  # the setter raises PyTorch's error for integer dtypes
        if isinstance(data, Tensor) and data._version is not None:
            t._version = data._version  # in-place writes through either are seen by autograd
        return t

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass  # everything happens in __new__ (Tensor.__init__ is the legacy constructor)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce_ex__(self, protocol: int) -> Any:
        return (_rebuild_parameter, (self.detach().cpu().numpy(), self.requires_grad))

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)(Tensor._make(self._data.copy()), self.requires_grad)
        if self.grad is not None:
            out.grad = Tensor._make(self.grad._data.copy())
        memo[id(self)] = out
        return out


def _rebuild_parameter(arr: np.ndarray, requires_grad: bool) -> Parameter:
    return Parameter(Tensor._make(np.array(arr)), requires_grad)


class _BufferMeta(type):
    # ``isinstance(t, Buffer)`` is true for tensors made by ``Buffer(...)`` (they are plain
    # Tensors carrying a flag, as in PyTorch).
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and bool(getattr(obj, "_is_buffer", False))


class Buffer(metaclass=_BufferMeta):
    """Marks a tensor as a buffer: ``self.running = nn.Buffer(torch.zeros(3), persistent=True)``
    registers it like ``register_buffer`` does."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Any:  # type: ignore[misc]
        t = Tensor._make(_array_of(data))
        t._is_buffer = True
        t.persistent = persistent
        return t


class UninitializedParameter(Parameter):
    """Placeholder for lazily shaped parameters (not supported: raises on use)."""

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> Any:
        raise NotImplementedError(
            "lazy modules (UninitializedParameter) are not supported by ember; give the layer its "
            "input size explicitly, e.g. nn.Linear(in_features, out_features)"
        )


class UninitializedBuffer(Tensor):
    """Placeholder for lazily shaped buffers (not supported: raises on use)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("lazy modules (UninitializedBuffer) are not supported by ember")
