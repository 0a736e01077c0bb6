"""Reductions: sum, mean, max/min, var/std, norms, logsumexp, cumulative ops, softmax family."""

from __future__ import annotations

from typing import Any

from .. import _dtype
from ._op import Op


def _dims(dim: Any, ndim: int) -> tuple[int, ...] | None:
    if dim is None:
        return None
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(d % max(ndim, 1) for d in dim)


class Sum(Op):
    """out = sum of x over dims          grad_x = grad broadcast back to x's shape"""

    @staticmethod
    def forward(ctx: Any, x: Any, axes: Any, keepdim: bool) -> Any:
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        return x.sum(axis=axes, keepdims=keepdim)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        xp = ctx.xp
        if not ctx.keepdim and ctx.axes is not None:
            grad = xp.expand_dims(grad, ctx.axes)
        return xp.broadcast_to(grad, ctx.shape), None, None


def sum(x: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
        keepdims: bool | None = None) -> Any:
    if axis is not None:
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    if dtype is not None:
        x = x.to(dtype)
    elif x._data.dtype.kind in "biu":
        x = x.to(_dtype.int64)
    return Sum.apply(x, _dims(dim, x._data.ndim), keepdim)


def mean(x: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
         keepdims: bool | None = None) -> Any:
    if axis is not None:
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    if dtype is not None:
        x = x.to(dtype)
    if not x.is_floating_point():
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {x.dtype}. Convert first, e.g. x.float().mean()"
        )
    dims = _dims(dim, x._data.ndim)
    n = x._data.size if dims is None else int(__import__("math").prod(x._data.shape[d] for d in dims))
    return Sum.apply(x, dims, keepdim) / max(n, 1) if n else Sum.apply(x, dims, keepdim) / 0.0
