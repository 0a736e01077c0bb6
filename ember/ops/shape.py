"""Shape and view ops: reshape/view, squeeze/unsqueeze, permute/transpose, cat/stack/split..."""

from __future__ import annotations

from typing import Any

from ._op import Op


def _shape_arg(size: tuple) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], tuple | list):
        return tuple(int(s) for s in size[0])
    return tuple(int(s) for s in size)


class Reshape(Op):
    """out = x reshaped          grad_x = grad reshaped back"""

    node_name = "ViewBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, shape: tuple) -> Any:
        ctx.shape = x.shape
        return x.reshape(shape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad.reshape(ctx.shape), None


def reshape(x: Any, *shape: Any) -> Any:
    return Reshape.apply(x, _shape_arg(shape))


view = reshape
