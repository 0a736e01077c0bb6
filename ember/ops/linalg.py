"""Linear algebra: matmul and friends, transposes, triangular parts, diagonals."""

from __future__ import annotations

from typing import Any

from ._op import Op


class Matmul(Op):
    """out = a @ b          grad_a = grad @ b^T          grad_b = a^T @ grad"""

    node_name = "MmBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        return grad @ b.swapaxes(-1, -2), a.swapaxes(-1, -2) @ grad


def matmul(a: Any, b: Any) -> Any:
    return Matmul.apply(a, b)


def t(x: Any) -> Any:
    raise NotImplementedError
