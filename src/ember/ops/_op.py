"""``Op``: the base of ember's built-in operations (arrays in, arrays out)."""

from __future__ import annotations

from typing import Any

from ..autograd.function import Function


class Op(Function):
    """A built-in operation: ``forward``/``backward`` see backend arrays, not tensors."""

    _tensor_io = False

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise NotImplementedError
