"""Distance functions: ``pairwise_distance``, ``cosine_similarity`` and ``pdist``, and the two
kernels under ``torch.cdist`` (``ops/other.py``).

``pairwise_distance`` and ``cosine_similarity`` are compositions of recorded ops. ``pdist`` and
``cdist`` are one ``Op`` each, as in PyTorch: they compute the distances block by block and never
hold the whole (pairs, M) difference tensor (PyTorch's CPU kernels loop over pairs); their
backward recomputes each block's differences from the saved inputs and the saved result. The
Euclidean ``cdist`` of many rows uses the matrix-product form ``|a|^2 + |b|^2 - 2ab``, as
PyTorch's ``compute_mode`` says.
"""

from __future__ import annotations

import math
from typing import Any

from ... import _backend, _dtype
from ..._tensor_base import TensorBase
from ...autograd.function import Op
from .._autocast import cast as _amp_cast
from .._autocast import flag as _amp
from ..indexing import getitem
from ._common import _graphing, _quiet

__all__ = [
    "cosine_similarity", "pairwise_distance", "pdist",
]


# ---------------------------------------------------------------------------------------------
# normalisation and distances (composites)


def cosine_similarity(x1: TensorBase, x2: TensorBase, dim: int = 1, eps: float = 1e-8) -> TensorBase:
    """sum(x1/||x1|| * x2/||x2||) along ``dim`` (each norm clamped to at least ``eps``)."""
    if _amp.active:
        x1, x2 = _amp_cast("cosine_similarity", x1, x2)
    if not (isinstance(x1, TensorBase) and x1.is_floating_point()
            and isinstance(x2, TensorBase) and x2.is_floating_point()):
        x1, x2 = _floating_pair(x1, x2)
    n1 = x1.norm(2, dim, keepdim=True).clamp_min(eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: TensorBase, x2: TensorBase, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> TensorBase:
    """||x1 - x2 + eps||_p along the last dim."""
    dim = max(x1.ndim, x2.ndim) - 1
    return (x1 - x2 + eps).norm(p, dim if dim >= 0 else None, keepdim=keepdim)


def pdist(input: TensorBase, p: float = 2) -> TensorBase:
    """||x_i - x_j||_p for every row pair i < j of a 2-D input (the condensed upper triangle)."""
    if _amp.active:
        (input,) = _amp_cast("pdist", input)
    if input.ndim != 2:
        raise RuntimeError(
            f"pdist only supports 2D tensors, got: {input.ndim}D (shape {tuple(input.shape)})"
        )
    if not input.is_floating_point():
        raise RuntimeError(f"pdist only supports floating-point dtypes (got {input.dtype}; "
                           "convert first, e.g. x.float())")
    if p < 0:
        raise RuntimeError(f"pdist only supports non-negative p values (got p={p})")
    return Pdist.apply(input, float(p))


# ---------------------------------------------------------------------------------------------
# the pdist and cdist kernels: block by block, the backward recomputing each block


class Pdist(Op):
    """out[k] = ||x[i] - x[j]||_p over the row pairs i < j in order (PyTorch's condensed form)
    grad_x[i] = sum_j>i grad_ij w(x[i] - x[j]) - sum_j<i grad_ji w(x[j] - x[i]),
    w(d) = the p-norm's derivative (``_pnorm_weights``); computed block of rows by block"""
    node_name = "PdistBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, p: float) -> Any:
        xp = ctx.xp
        n = x.shape[0]
        out = xp.empty(n * (n - 1) // 2, dtype=x.dtype)
        for i0, i1, pos, cnt, mask in _pdist_blocks(xp, x.shape):
            d = _pnorm_rows(xp, x[i0:i1, None, :] - x[None, i0 + 1:, :], p)
            out[pos:pos + cnt] = d[mask]
        ctx.p = p
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, out = ctx.saved
        p, xp = ctx.p, ctx.xp
        if _graphing(ctx):  # recorded ops (create_graph): the pairs' differences at once
            i, j = _backend.xp_of(x._data).triu_indices(x.shape[0], 1)
            it, jt = TensorBase._make(i), TensorBase._make(j)
            w = _pnorm_weights(xp, getitem(x, it) - getitem(x, jt), out.unsqueeze(-1), p)
            t = grad.unsqueeze(-1) * w
            return x.new_zeros(x.shape).index_add(0, it, t).index_add(0, jt, -t), None
        gx = xp.zeros_like(x)
        if p == 0:
            return gx, None
        for i0, i1, pos, cnt, mask in _pdist_blocks(xp, x.shape):
            g = xp.zeros(mask.shape, dtype=grad.dtype)
            g[mask] = grad[pos:pos + cnt]
            dist = xp.ones(mask.shape, dtype=out.dtype)  # (1 off the pairs: no 0/0 there)
            dist[mask] = out[pos:pos + cnt]
            t = _pnorm_weights(xp, x[i0:i1, None, :] - x[None, i0 + 1:, :], dist[..., None], p)
            t *= g[..., None]
            gx[i0:i1] += t.sum(1)
            gx[i0 + 1:] -= t.sum(0)
        return gx, None


class Cdist(Op):
    """out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p (batch dims broadcast)
    grad_x1[i] = sum_j grad_ij w(x1[i] - x2[j]),  grad_x2[j] = -sum_i grad_ij w(x1[i] - x2[j]),
    w(d) = the p-norm's derivative (``_pnorm_weights``); computed block of rows by block"""
    node_name = "CdistBackward0"

    @staticmethod
    def forward(ctx: Any, x1: Any, x2: Any, p: float) -> Any:
        xp = ctx.xp
        a1, a2, batch = _batched(xp, x1, x2)
        nb, rows, cols = a1.shape[0], a1.shape[1], a2.shape[1]
        out = xp.empty((nb, rows, cols), dtype=x1.dtype)
        step = _block_rows(cols * x1.shape[-1])
        for b in range(nb):
            for r0 in range(0, rows, step):
                d = a1[b, r0:r0 + step, None, :] - a2[b, None, :, :]
                out[b, r0:r0 + step] = _pnorm_rows(xp, d, p)
        ctx.p = p
        out = out.reshape(batch + (rows, cols))
        ctx.save_for_backward(x1, x2, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x1, x2, out = ctx.saved
        p, xp = ctx.p, ctx.xp
        need = ctx.needs_input_grad
        if _graphing(ctx):  # recorded ops (create_graph): the whole difference tensor
            t = grad.unsqueeze(-1) * _pnorm_weights(
                xp, x1.unsqueeze(-2) - x2.unsqueeze(-3), out.unsqueeze(-1), p)
            return t.sum(-2) if need[0] else None, -t.sum(-3) if need[1] else None, None
        a1, a2, batch = _batched(xp, x1, x2)
        nb, rows, cols = a1.shape[0], a1.shape[1], a2.shape[1]
        g = xp.broadcast_to(grad, batch + (rows, cols)).reshape(nb, rows, cols)
        dist = out.reshape(nb, rows, cols)
        g1 = xp.zeros(a1.shape, dtype=a1.dtype)
        g2 = xp.zeros(a2.shape, dtype=a2.dtype)
        if p != 0:
            step = _block_rows(cols * x1.shape[-1])
            for b in range(nb):
                for r0 in range(0, rows, step):
                    d = a1[b, r0:r0 + step, None, :] - a2[b, None, :, :]
                    t = _pnorm_weights(xp, d, dist[b, r0:r0 + step, :, None], p)
                    t *= g[b, r0:r0 + step, :, None]
                    g1[b, r0:r0 + step] = t.sum(1)
                    g2[b] -= t.sum(0)
        return (g1.reshape(batch + a1.shape[1:]) if need[0] else None,
                g2.reshape(batch + a2.shape[1:]) if need[1] else None, None)


class EuclideanDist(Op):
    """out = sqrt(max(|x1_i|^2 + |x2_j|^2 - 2 x1_i.x2_j, 0)) as one matrix product of the
    padded rows [-2 x1, |x1|^2, 1] and [x2, 1, |x2|^2] (PyTorch's form for many rows)
    r = grad / out (0 where out == 0):  grad_x1 = x1 * sum_j r - r @ x2,
    grad_x2 = x2 * sum_i r - r^T @ x1"""
    node_name = "EuclideanDistBackward0"

    @staticmethod
    def forward(ctx: Any, x1: Any, x2: Any) -> Any:
        xp = ctx.xp
        n1 = (x1 * x1).sum(-1, keepdims=True)
        n2 = (x2 * x2).sum(-1, keepdims=True)
        one1, one2 = xp.ones_like(n1), xp.ones_like(n2)
        left = xp.concatenate([-2 * x1, n1, one1], axis=-1)
        right = xp.concatenate([x2, one2, n2], axis=-1)
        out = xp.matmul(left, xp.swapaxes(right, -1, -2))
        del left, right
        xp.maximum(out, 0, out=out)
        xp.sqrt(out, out=out)
        ctx.save_for_backward(x1, x2, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x1, x2, out = ctx.saved
        xp = ctx.xp
        need = ctx.needs_input_grad
        with _quiet(xp):
            if _graphing(ctx):
                r = xp.where(out == 0, 0, grad / out)
            else:
                r = grad / out
                r[out == 0] = 0
        g1 = g2 = None
        if need[0]:
            g1 = x1 * xp.sum(r, axis=-1, keepdims=True) - xp.matmul(r, x2)
        if need[1]:
            g2 = (x2 * xp.expand_dims(xp.sum(r, axis=-2), -1)
                  - xp.matmul(xp.swapaxes(r, -1, -2), x1))
        return g1, g2


_BLOCK = 1 << 20  # elements of one block's (rows, other rows, M) difference tensor (4 MB float32)


def _block_rows(per_row: int) -> int:
    """How many rows one block takes when each row pairs with ``per_row`` elements."""
    return max(1, _BLOCK // max(1, per_row))


def _pdist_blocks(xp: Any, shape: tuple) -> Any:
    """(i0, i1, pos, count, mask) per block of rows i0..i1 of an (N, M) input: the block pairs
    with rows i0+1..N-1, ``mask`` (i1-i0, N-i0-1) marks the pairs j > i, and they fill
    ``out[pos:pos + count]`` of the condensed result in row-major order."""
    n, m = shape
    i0 = pos = 0
    while i0 < n - 1:
        cols = n - i0 - 1
        i1 = min(n - 1, i0 + _block_rows(cols * m))
        mask = xp.arange(cols)[None, :] >= xp.arange(i1 - i0)[:, None]
        cnt = (i1 - i0) * cols - (i1 - i0) * (i1 - i0 - 1) // 2
        yield i0, i1, pos, cnt, mask
        pos += cnt
        i0 = i1


def _batched(xp: Any, x1: Any, x2: Any) -> tuple[Any, Any, tuple]:
    """x1 (..., P, M) and x2 (..., R, M) with their batch dims broadcast and flattened:
    (B, P, M), (B, R, M) and the broadcast batch shape."""
    batch = tuple(xp.broadcast_shapes(x1.shape[:-2], x2.shape[:-2]))
    nb = math.prod(batch)
    a1 = xp.broadcast_to(x1, batch + x1.shape[-2:]).reshape((nb,) + x1.shape[-2:])
    a2 = xp.broadcast_to(x2, batch + x2.shape[-2:]).reshape((nb,) + x2.shape[-2:])
    return a1, a2, batch


def _pnorm_rows(xp: Any, d: Any, p: float) -> Any:
    """The p-norm of ``d`` over its last axis (an array)."""
    if d.shape[-1] == 0:
        return xp.zeros(d.shape[:-1], dtype=d.dtype)
    if p == 0:
        return (d != 0).sum(-1).astype(d.dtype)
    xp.abs(d, out=d)  # d is the block's own temporary
    if p == math.inf:
        return d.max(-1)
    if p == 1:
        return d.sum(-1)
    if p == 2:
        d *= d
        return xp.sqrt(d.sum(-1))
    xp.power(d, p, out=d)
    return d.sum(-1) ** (1.0 / p)


def _pnorm_weights(xp: Any, d: Any, dist: Any, p: float) -> Any:
    """d ||d||_p / d d given the differences ``d`` and their norms ``dist`` (broadcast over the
    last axis), 0 where the norm is 0, as PyTorch's cdist/pdist backward: sign(d) for p=1,
    sign(d) where |d| is the max for p=inf, sign(d) |d|^(p-1) / dist^(p-1) otherwise (also 0
    where d is 0 when p < 1). Arrays (``d`` is consumed) or tensors (create_graph)."""
    if p == 0:
        return d * 0
    if p == 1:
        return xp.sign(d)
    if p == math.inf:
        return xp.where(xp.abs(d) == dist, xp.sign(d), 0)
    with _quiet(xp):
        if p == 2:
            w = d / dist
        else:
            w = xp.sign(d) * xp.abs(d) ** (p - 1) / dist ** (p - 1)
        zero = dist == 0
        if p < 1:
            zero = zero | (d == 0)
        return xp.where(zero, 0, w)


def _floating_pair(x1: Any, x2: Any) -> tuple[Any, Any]:
    """cosine_similarity's operands in their common dtype, which must be floating (PyTorch
    refuses integer and complex ones)."""
    rt = _dtype.result_type(x1, x2)
    if not rt.is_floating_point:
        raise RuntimeError(
            f"expected common dtype to be floating point, yet common dtype is "
            f"{_dtype.legacy_name(rt)} (x1: {x1.dtype}, x2: {x2.dtype}); cosine_similarity "
            "takes real floating tensors: convert first, e.g. x.float() (or x.abs() of complex)")
    return x1.to(rt), x2.to(rt)
