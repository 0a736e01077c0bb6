"""Attention: ``scaled_dot_product_attention`` (one fused ``Op``) and
``multi_head_attention_forward``, the function ``nn.MultiheadAttention`` runs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import _dtype
from ... import _kernels_loader as _kernels
from ..._backend import xp_of
from ..._tensor_base import TensorBase
from ...autograd.function import Op
from .. import random as _random
from .._autocast import cast as _amp_cast
from .._autocast import flag as _amp
from .._reduce import _rowsum
from ..creation import zeros
from ..joining import cat
from ._common import (
    _broadcast_shape,
    _causal_mask,
    _graphing,
    _kernel_forward,
    _quiet,
    _SoftmaxCached,
)
from .activation import softmax
from .dropout import _noise, dropout
from .linear import linear
from .vision import pad

__all__ = [
    "multi_head_attention_forward",
    "scaled_dot_product_attention",
]


# ---------------------------------------------------------------------------------------------
# attention


def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, *,
                                 scale: float | None = None, enable_gqa: bool = False) -> Any:
    """softmax(query key^T * scale + mask) value, fused forward and backward."""
    if _amp.active:
        query, key, value, attn_mask = _amp_cast("scaled_dot_product_attention", query, key,
                                                 value, attn_mask)
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.ndim < 2:
            raise RuntimeError(
                f"scaled_dot_product_attention: {name} must have at least 2 dims (..., L, E), got "
                f"shape {list(t.shape)}"
            )
        if not t.is_floating_point():
            raise (NotImplementedError if t.is_complex() else RuntimeError)(  # PyTorch's classes
                f"scaled_dot_product_attention: {name} must be floating point, got {t.dtype}"
            )
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(
            f"Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead."
        )
    L, E = query.shape[-2], query.shape[-1]
    S = key.shape[-2]
    if key.shape[-1] != E or value.shape[-2] != S:
        raise RuntimeError(
            f"scaled_dot_product_attention: query (..., L, E) = {list(query.shape)}, key "
            f"(..., S, E) = {list(key.shape)} and value (..., S, Ev) = {list(value.shape)} must "
            "agree in E (query/key) and S (key/value)"
        )
    if is_causal and attn_mask is not None:
        raise RuntimeError(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
            "is_causal=True"
        )
    groups = 1
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hk != hv or hq % hk != 0:
            raise RuntimeError(
                f"scaled_dot_product_attention(enable_gqa=True): the query's {hq} heads must be a "
                f"multiple of the key/value heads ({hk}, {hv}); got query {list(query.shape)}, "
                f"key {list(key.shape)}, value {list(value.shape)}"
            )
        groups = hq // hk
    kshape = tuple(key.shape[:-3]) + (key.shape[-3] * groups,) if key.ndim >= 3 else ()
    batch = _broadcast_shape(tuple(query.shape[:-2]),
                             kshape if groups > 1 else tuple(key.shape[:-2]))
    if batch is not None:
        batch = _broadcast_shape(batch, tuple(value.shape[:-3]) + (
            (value.shape[-3] * groups,) if value.ndim >= 3 else ()))
    if batch is None:
        raise RuntimeError(
            f"scaled_dot_product_attention: the batch/head dims of query {list(query.shape)}, "
            f"key {list(key.shape)} and value {list(value.shape)} do not broadcast (for grouped "
            "query attention with fewer key/value heads pass enable_gqa=True)"
        )

    xp = xp_of(query._data)
    bmask = fmask = None
    if is_causal:
        bmask = _causal_mask(xp, L, S)
    elif attn_mask is not None:
        if _broadcast_shape(tuple(attn_mask.shape), batch + (L, S)) != batch + (L, S):
            raise RuntimeError(
                f"scaled_dot_product_attention: attn_mask of shape {list(attn_mask.shape)} does "
                f"not broadcast to the attention weights' shape {list(batch + (L, S))} "
                "(..., L, S)"
            )
        if attn_mask.dtype == _dtype.bool_:
            bmask = attn_mask._data
        elif attn_mask.is_floating_point():
            fmask = attn_mask if attn_mask.dtype == query.dtype else attn_mask.to(query.dtype)
        else:
            raise RuntimeError(
                f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                f"attn_mask.dtype: {attn_mask.dtype} and query.dtype: {query.dtype} instead."
            )
    if scale is None:
        scale = 1.0 / math.sqrt(E)
    big = L > _Q_TILE or S > _K_TILE or (
        dropout_p == 0.0 and math.prod(batch) * L * S > _FLASH_MIN_SCORES)
    if big and L > 0 and S > 0 and dropout_p < 1.0 and \
            _flash_ok(query._data, key._data, value._data, bmask, fmask):
        seed = None
        if dropout_p > 0.0:  # each tile's dropout mask is drawn again from this seed in backward
            seed = int(_random._rng(None).integers(0, 1 << 62))
        return ScaledDotProductFlashAttention.apply(
            query, key, value, fmask, None if is_causal else bmask, float(scale),
            bool(is_causal), float(dropout_p), groups, seed)
    keep = None
    if dropout_p > 0.0:
        if dropout_p >= 1.0:
            keep = xp.zeros(batch + (L, S), dtype=query._data.dtype)
            dropout_p = 0.0
        else:
            # PyTorch's math path: F.dropout of the weights, a bernoulli_(1 - p) noise
            keep = _noise(query, 1.0 - dropout_p, batch + (L, S))
            if type(keep) is not type(query._data):
                keep = xp.asarray(keep)
    out = ScaledDotProductAttention.apply(query, key, value, fmask, bmask, float(scale), keep,
                                          float(dropout_p), groups)
    if is_causal and out.grad_fn is not None:
        out.grad_fn.causal = True  # (shown as PyTorch's ``_saved_is_causal``, not as a mask)
    return out


class ScaledDotProductAttention(Op):
    """S = scale * q k^T (+ mask);  P = softmax(S) (rows with nothing to attend give 0);
    P_d = P * keep / (1 - p_drop);  out = P_d v
    grad_v = P_d^T grad;  dP = (grad v^T) * keep / (1 - p_drop);  dS = P * (dP - sum(dP * P))
    grad_q = scale * dS k;  grad_k = scale * dS^T q;  grad_mask (float) = dS"""
    node_name = "ScaledDotProductFlashAttentionForCpuBackward0"  # PyTorch's (CPU kernel) name

    @staticmethod
    def forward(ctx: Any, q: Any, k: Any, v: Any, fmask: Any, bmask: Any, scale: float,
                keep: Any, p_drop: float, groups: int) -> Any:
        xp = ctx.xp
        out = _kernel_forward(ctx, q, k, v, fmask, bmask, scale, keep, p_drop, groups)
        if out is not None:
            return out
        kk, vv = _repeat_heads(xp, k, groups), _repeat_heads(xp, v, groups)
        s = _attn_scores(xp, q, kk, fmask, bmask, scale)
        p = None
        if fmask is None and (bmask is None or bool(bmask.any(axis=-1).all())):
            p = _kernels.softmax(s)  # (every row attends somewhere: the kernel's softmax, 1 pass)
        if p is None:
            p = s  # softmax in place over s's buffer
            m = p.max(axis=-1, keepdims=True)
            with _quiet(xp):
                m = xp.where(xp.isfinite(m), m, 0)
                p -= m
                xp.exp(p, out=p)
                den = _rowsum(p, -1)
                p /= xp.where(den == 0, 1, den)
        pd = p if keep is None else p * keep * (1.0 / (1.0 - p_drop))
        out = xp.matmul(pd, vv)
        if out.dtype != q.dtype:  # bfloat16 inputs: scores and softmax ran in float32; round once
            out = out.astype(q.dtype)
        out = _query_layout(out, q)
        ctx.scale, ctx.p_drop, ctx.groups = scale, p_drop, groups
        # (the output too, unused, as PyTorch's kernel saves it: an in-place change to it
        # before backward is refused)
        ctx.save_for_backward(q, k, v, fmask, bmask, keep, p, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        q, k, v, fmask, bmask, keep, p, _ = ctx.saved
        xp, scale, groups = ctx.xp, ctx.scale, ctx.groups
        if ctx.qkv is not None and not _graphing(ctx):
            need = ctx.needs_input_grad
            res = _kernels.attention_backward(q, k, v, p, grad, scale, bmask is not None,
                                              tuple(need[:3]))
            if res is not None:
                return res + (None,) * 6
        kk, vv = _repeat_heads(xp, k, groups), _repeat_heads(xp, v, groups)
        if _graphing(ctx):
            s = _attn_scores(xp, q, kk, fmask, bmask, scale)
            p = ctx.call(_SoftmaxCached, s, p, -1)
        return _grads_from_p(ctx, grad, q, kk, vv, p, keep) + (None,) * 5


def _query_layout(out: Any, q: Any) -> Any:
    """``out`` in the query's memory order, as PyTorch's CPU attention allocates its output:
    with q a transposed view of (B, T, H, E) (``x.view(B, T, H, E).transpose(1, 2)``), the
    output's ``transpose(1, 2)`` is contiguous, so a following ``.contiguous()`` copies
    nothing and records no node. A C-ordered query (the common case) costs nothing here, and a
    query whose last dim is not dense (channels_last, a transposed E) gets a C-ordered output,
    as PyTorch's."""
    if type(out) is not np.ndarray or q.ndim < 3 or q.flags.c_contiguous or \
            out.shape[:-1] != q.shape[:-1] or q.strides[-1] != q.itemsize:
        return out
    order = sorted(range(q.ndim - 1), key=lambda i: -q.strides[i]) + [q.ndim - 1]
    if order == list(range(q.ndim)):
        return out
    res = np.empty([out.shape[i] for i in order], out.dtype).transpose(np.argsort(order))
    res[...] = out
    return res


def _grads_from_p(ctx: Any, grad: Any, q: Any, kk: Any, vv: Any, p: Any, keep: Any) -> tuple:
    """The attention's gradients from its (whole) probabilities ``p`` and dropout mask."""
    xp, scale, groups = ctx.xp, ctx.scale, ctx.groups
    drop = None if keep is None else keep * (1.0 / (1.0 - ctx.p_drop))
    pd = p if drop is None else p * drop
    need = ctx.needs_input_grad
    gv = None
    if need[2]:
        gv = _sum_heads(xp.matmul(pd.swapaxes(-1, -2), grad), groups)
    gp = xp.matmul(grad, vv.swapaxes(-1, -2))
    if drop is not None:
        gp = gp * drop
    if isinstance(gp, TensorBase):  # create_graph: recorded ops
        gs = p * (gp - (gp * p).sum(axis=-1, keepdims=True))
        gq = xp.matmul(gs, kk) * scale if need[0] else None
        gk = _sum_heads(xp.matmul(gs.swapaxes(-1, -2), q) * scale, groups) if need[1] else None
    else:  # gp is this call's own array: the softmax backward in place
        gs = _kernels.softmax_backward(p, gp)  # (p (gp - rowsum(gp p)) in one pass, else:)
        if gs is None:
            gs = gp * p
            row = _rowsum(gs, -1)
            xp.subtract(gp, row, out=gs)
            gs *= p
        gq = gk = None
        if need[0]:
            gq = xp.matmul(gs, kk)
            gq *= scale
        if need[1]:
            gk = xp.matmul(gs.swapaxes(-1, -2), q)
            gk *= scale
            gk = _sum_heads(gk, groups)
    gm = gs if need[3] else None
    return gq, gk, gv, gm


# ---------------------------------------------------------------------------------------------
# tiled (flash-style) attention on the host


# query rows and keys per tile; inputs with more query rows or keys than one tile take the
# tiled path, smaller ones the single-tile op above
_Q_TILE = 256


_K_TILE = 512


# a batch whose scores would take more than this many elements (4 MB of float32) takes the
# tiled path even when one tile holds its rows, so backward keeps the log-sum-exp and not the
# probabilities, as PyTorch's CPU kernel (without dropout: that path draws its masks as
# PyTorch's math path does)
_FLASH_MIN_SCORES = 1 << 20


# at most about this many scores per tile (4 MB of float32): the leading batch dims are looped
# over, one index at a time, until the rest of the batch times one tile fits. (Single-threaded,
# 2^18 and 2^20 run alike; fewer, larger products lose less to BLAS threads' synchronisation.)
_TILE_ELEMS = 1 << 20


class ScaledDotProductFlashAttention(Op):
    """The attention of ``ScaledDotProductAttention`` in query x key tiles, flash-style:
    forward keeps per query row a running max m and sum l of exp(S - m) and rescales its partial
    output as m grows; it saves q, k, v, the output and lse = m + log(l) per row, never P.
    Backward recomputes each tile's P = exp(S - lse) and, with D = rowsum(grad * out):
    grad_v += P_d^T grad;  dS = P * (grad v^T * keep / (1 - p_drop) - D);
    grad_q += scale * dS k;  grad_k += scale * dS^T q.
    Causal tiles above the diagonal are skipped; dropout masks are drawn per tile from a seed
    the forward was given, and drawn again in backward (nothing of them is stored)."""
    node_name = "ScaledDotProductFlashAttentionForCpuBackward0"

    @staticmethod
    def forward(ctx: Any, q: Any, k: Any, v: Any, fmask: Any, bmask: Any, scale: float,
                causal: bool, p_drop: float, groups: int, seed: Any) -> Any:
        g = _FlashGeom(q, k, v, fmask, bmask, groups)
        shape = g.batch[:-2] + (g.batch[-2] * g.batch[-1],) if groups > 1 else g.batch
        bq, bk = min(_Q_TILE, g.L), min(_K_TILE, g.S)
        kp = 0
        while kp < len(g.batch) and math.prod(g.batch[kp:]) * bq * bk > _TILE_ELEMS:
            kp += 1
        tiles = (kp, bq, bk)
        out = np.empty(g.batch + (g.L, g.Ev), dtype=q.dtype)
        lse = np.empty(g.batch + (g.L, 1), dtype=q.dtype)
        nb = len(g.batch)
        with np.errstate(divide="ignore", invalid="ignore"):
            for idx in np.ndindex(*g.batch[:kp]):
                qb, kb, vb, fb, bb = (_at(a, idx, nb) for a in (g.q, g.k, g.v, g.f, g.b))
                ob, lb = out[idx], lse[idx]
                for i0 in range(0, g.L, bq):
                    i1 = min(i0 + bq, g.L)
                    qi = qb[..., i0:i1, :]
                    m = acc = den = mu = None
                    for j0 in range(0, min(g.S, i1) if causal else g.S, bk):
                        j1 = min(j0 + bk, g.S)
                        s = _tile_scores(qi, kb, fb, bb, scale, causal, i0, i1, j0, j1)
                        mx = s.max(axis=-1, keepdims=True)
                        if m is not None:
                            np.maximum(mx, m, out=mx)
                        mu_new = np.where(np.isfinite(mx), mx, 0).astype(s.dtype, copy=False)
                        s = _inplace(np.subtract, s, mu_new)
                        np.exp(s, out=s)
                        rs = _rowsum(s, -1)
                        if seed is not None:
                            s = _inplace(np.multiply, s, _keep(seed, idx, i0, j0, g.batch[kp:],
                                                               i1 - i0, j1 - j0, p_drop))
                        pv = np.matmul(s, vb[..., j0:j1, :])
                        if acc is None:
                            acc, den = pv, rs
                        else:
                            c = np.exp(m - mu_new)  # (0 where nothing was seen yet)
                            acc *= c
                            acc = _inplace(np.add, acc, pv)
                            den *= c
                            den += rs
                        m, mu = mx, mu_new
                    empty = den == 0  # rows with nothing to attend: output 0, lse +inf (P = 0)
                    if seed is not None:
                        acc *= 1.0 / (1.0 - p_drop)
                    ob[..., i0:i1, :] = acc / np.where(empty, 1, den)
                    lb[..., i0:i1, :] = np.where(empty, np.inf, mu + np.log(den))
        ctx.scale, ctx.causal, ctx.p_drop, ctx.groups, ctx.seed = scale, causal, p_drop, groups, seed
        ctx.tiles = tiles
        out = _query_layout(out.reshape(shape + (g.L, g.Ev)), q)
        ctx.save_for_backward(q, k, v, fmask, bmask, out, lse)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        q, k, v, fmask, bmask, out, lse = ctx.saved
        need = ctx.needs_input_grad
        if _graphing(ctx):
            return _flash_graph_backward(ctx, grad, q, k, v, fmask, bmask)
        g = _FlashGeom(q, k, v, fmask, bmask, ctx.groups)
        scale, causal, p_drop, seed = ctx.scale, ctx.causal, ctx.p_drop, ctx.seed
        kp, bq, bk = ctx.tiles
        nb = len(g.batch)
        o = g.split_q(out)
        dy = g.split_q(grad)
        gq = np.zeros(g.q.shape, dtype=q.dtype) if need[0] else None
        gk = np.zeros(g.k.shape, dtype=k.dtype) if need[1] else None
        gv = np.zeros(g.v.shape, dtype=v.dtype) if need[2] else None
        inv = 1.0 / (1.0 - p_drop)
        with np.errstate(invalid="ignore"):
            for idx in np.ndindex(*g.batch[:kp]):
                qb, kb, vb, fb, bb, ob, db, lb = (
                    _at(a, idx, nb) for a in (g.q, g.k, g.v, g.f, g.b, o, dy, lse))
                gqb, gkb, gvb = (None if a is None else _at(a, idx, nb) for a in (gq, gk, gv))
                for i0 in range(0, g.L, bq):
                    i1 = min(i0 + bq, g.L)
                    qi, di, li = qb[..., i0:i1, :], db[..., i0:i1, :], lb[..., i0:i1, :]
                    dd = _rowsum(np.multiply(di, ob[..., i0:i1, :]), -1)  # D = rowsum(dy * out)
                    acc = None
                    for j0 in range(0, min(g.S, i1) if causal else g.S, bk):
                        j1 = min(j0 + bk, g.S)
                        kj, vj = kb[..., j0:j1, :], vb[..., j0:j1, :]
                        p = _tile_scores(qi, kb, fb, bb, scale, causal, i0, i1, j0, j1)
                        p = _inplace(np.subtract, p, li)
                        np.exp(p, out=p)
                        keep = None if seed is None else _keep(
                            seed, idx, i0, j0, g.batch[kp:], i1 - i0, j1 - j0, p_drop)
                        if gvb is not None:
                            pd = p if keep is None else p * keep
                            _add_to(gvb[..., j0:j1, :], np.matmul(pd.swapaxes(-1, -2), di))
                        ds = np.matmul(di, vj.swapaxes(-1, -2))
                        if keep is not None:
                            ds = _inplace(np.multiply, ds, keep)
                            ds *= inv
                        ds = _inplace(np.subtract, ds, dd)
                        ds = _inplace(np.multiply, ds, p)
                        if gqb is not None:
                            t = np.matmul(ds, kj)
                            acc = t if acc is None else _inplace(np.add, acc, t)
                        if gkb is not None:
                            _add_to(gkb[..., j0:j1, :], np.matmul(ds.swapaxes(-1, -2), qi))
                    if gqb is not None:
                        _add_to(gqb[..., i0:i1, :], acc)
        if gq is not None:
            gq *= scale
            gq = gq.reshape(q.shape)
        if gk is not None:
            gk *= scale
            gk = gk.reshape(k.shape)
        if gv is not None:
            if seed is not None:
                gv *= inv
            gv = gv.reshape(v.shape)
        return gq, gk, gv, None, None, None, None, None, None, None


class _FlashGeom:
    """The tiled attention's operands with grouped heads split out: q (..., Hk, groups, L, E)
    against k, v (..., Hk, 1, S, E), masks alike (a view each), and their broadcast batch."""
    __slots__ = ("q", "k", "v", "f", "b", "batch", "L", "S", "Ev", "groups")

    def __init__(self, q: Any, k: Any, v: Any, fmask: Any, bmask: Any, groups: int) -> None:
        self.groups = groups
        self.q = self.split_q(q)
        if groups > 1:
            k, v = k[..., None, :, :], v[..., None, :, :]
        self.k, self.v = k, v
        self.f, self.b = self._mask(fmask, q), self._mask(bmask, q)
        self.batch = np.broadcast_shapes(self.q.shape[:-2], k.shape[:-2], v.shape[:-2])
        self.L, self.S, self.Ev = q.shape[-2], k.shape[-2], v.shape[-1]

    def split_q(self, a: Any) -> Any:
        if self.groups == 1:
            return a
        sh = a.shape
        return a.reshape(sh[:-3] + (sh[-3] // self.groups, self.groups) + sh[-2:])

    def _mask(self, m: Any, q: Any) -> Any:
        if m is None:
            return None
        if m.ndim < 2:
            m = m.reshape((1,) * (2 - m.ndim) + m.shape)
        if self.groups > 1 and m.ndim >= 3:
            h = m.shape[-3]
            m = m.reshape(m.shape[:-3] + ((h // self.groups, self.groups) if h > 1 else (1, 1))
                          + m.shape[-2:])
        return m


def _flash_ok(q: Any, k: Any, v: Any, bmask: Any, fmask: Any) -> bool:
    """Whether the tiled path applies: host float32 / float64 arrays of one dtype, masks on the
    host, and no float mask that wants a gradient (that takes the whole-matrix op)."""
    if not (type(q) is np.ndarray and type(k) is np.ndarray and type(v) is np.ndarray
            and q.dtype in (np.float32, np.float64) and q.dtype == k.dtype == v.dtype):
        return False
    if bmask is not None and type(bmask) is not np.ndarray:
        return False
    return fmask is None or (type(fmask._data) is np.ndarray and not fmask.requires_grad)


def _at(a: Any, idx: tuple, nb: int) -> Any:
    """``a`` (batch dims aligned right against a batch of ``nb`` dims, then two more) at the
    leading batch index ``idx`` (a view; axes of size 1 broadcast)."""
    if a is None or not idx:
        return a
    off = nb - (a.ndim - 2)
    sel = tuple([(i if a.shape[t - off] != 1 else 0) for t, i in enumerate(idx) if t >= off])
    return a[sel] if sel else a


def _mask_tile(m: Any, i0: int, i1: int, j0: int, j1: int) -> Any:
    return m[..., slice(i0, i1) if m.shape[-2] != 1 else slice(None),
             slice(j0, j1) if m.shape[-1] != 1 else slice(None)]


def _tile_scores(qi: Any, kb: Any, fb: Any, bb: Any, scale: float, causal: bool, i0: int,
                 i1: int, j0: int, j1: int) -> Any:
    """scale * q_i k_j^T with the tile's masks applied (as ``_attn_scores``: additive -inf)."""
    s = np.matmul(qi, kb[..., j0:j1, :].swapaxes(-1, -2))
    s *= scale
    if causal and j1 - 1 > i0:  # a tile on the diagonal: key j visible to row i when j <= i
        np.copyto(s, -np.inf, where=~np.tri(i1 - i0, j1 - j0, i0 - j0, dtype=bool))
    if bb is not None:
        add = np.where(_mask_tile(bb, i0, i1, j0, j1), 0.0, -np.inf).astype(s.dtype)
        s = _inplace(np.add, s, add)
    if fb is not None:
        s = _inplace(np.add, s, _mask_tile(fb, i0, i1, j0, j1))
    return s


def _inplace(op: Any, a: Any, b: Any) -> Any:
    """``op(a, b)`` into ``a`` where the result has ``a``'s shape, else a new array."""
    if np.broadcast_shapes(a.shape, b.shape) == a.shape:
        return op(a, b, out=a)
    return op(a, b)


def _add_to(dst: Any, part: Any) -> None:
    """dst += part, summed over the axes ``dst`` broadcasts along (leading ones or size 1)."""
    if part.shape != dst.shape:
        lead = part.ndim - dst.ndim
        axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(dst.shape)
                                          if n == 1 and part.shape[lead + i] != 1)
        part = part.sum(axis=axes, keepdims=True).reshape(dst.shape)
    dst += part


def _keep(seed: int, idx: tuple, i0: int, j0: int, batch: tuple, rows: int, cols: int,
          p: float) -> Any:
    """The dropout mask of one tile (True = kept), drawn from the seed and the tile's place:
    the same tile gets the same mask in forward and backward."""
    rng = np.random.Generator(np.random.PCG64((seed,) + tuple(idx) + (i0, j0)))
    return rng.random(batch + (rows, cols), dtype=np.float32) >= p


def _flash_graph_backward(ctx: Any, grad: Any, q: Any, k: Any, v: Any, fmask: Any,
                          bmask: Any) -> tuple:
    """create_graph: the gradients as recorded ops over the whole probability matrix (the
    single-tile op's rule), the dropout mask rebuilt from its tiles."""
    xp, groups = ctx.xp, ctx.groups
    kk, vv = _repeat_heads(xp, k, groups), _repeat_heads(xp, v, groups)
    L, S = q.shape[-2], k.shape[-2]
    if ctx.causal:
        bmask = np.tri(L, S, 0, dtype=bool)
    elif bmask is not None:
        bmask = bmask._data
    s = _attn_scores(xp, q, kk, fmask, bmask, ctx.scale)
    p = s._data.copy()  # softmax as the single-tile forward computes it
    m = p.max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p -= np.where(np.isfinite(m), m, 0)
        np.exp(p, out=p)
        den = _rowsum(p, -1)
        p /= np.where(den == 0, 1, den)
    p = ctx.call(_SoftmaxCached, s, p, -1)
    keep = None
    if ctx.seed is not None:
        g = _FlashGeom(q._data, k._data, v._data, None, None, groups)
        kp, bq, bk = ctx.tiles
        full = np.zeros(g.batch + (L, S), dtype=q._data.dtype)
        for idx in np.ndindex(*g.batch[:kp]):
            fb = full[idx]
            for i0 in range(0, L, bq):
                i1 = min(i0 + bq, L)
                for j0 in range(0, min(S, i1) if ctx.causal else S, bk):
                    j1 = min(j0 + bk, S)
                    fb[..., i0:i1, j0:j1] = _keep(ctx.seed, idx, i0, j0, g.batch[kp:],
                                                  i1 - i0, j1 - j0, ctx.p_drop)
        keep = full.reshape(p.shape)
    return _grads_from_p(ctx, grad, q, kk, vv, p, keep)[:3] + (None,) * 7


def _attn_scores(xp: Any, q: Any, k: Any, fmask: Any, bmask: Any, scale: float) -> Any:
    s = xp.matmul(q, k.swapaxes(-1, -2))
    if isinstance(s, TensorBase):  # create_graph: recorded ops, no in-place arithmetic
        s = s * scale
        if bmask is not None:
            s = xp.where(bmask, s, float("-inf"))
        return s + fmask if fmask is not None else s
    s *= scale
    if bmask is not None:  # as an additive 0 / -inf mask, as PyTorch's math path applies it
        add = xp.where(bmask, 0.0, float("-inf")).astype(s.dtype)
        if np.broadcast_shapes(s.shape, add.shape) == s.shape:
            s += add
        else:
            s = s + add
    if fmask is not None:
        s = s + fmask
    return s


def _repeat_heads(xp: Any, k: Any, groups: int) -> Any:
    """k (..., H, S, E) -> (..., H * groups, S, E), each head repeated ``groups`` times in a row."""
    if groups == 1:
        return k
    shape = tuple(k.shape)
    big = xp.broadcast_to(xp.expand_dims(k, -3), shape[:-2] + (groups,) + shape[-2:])
    return big.reshape(shape[:-3] + (shape[-3] * groups,) + shape[-2:])


def _sum_heads(g: Any, groups: int) -> Any:
    """Inverse of ``_repeat_heads`` for gradients: sum each head's ``groups`` copies."""
    if groups == 1:
        return g
    shape = tuple(g.shape)
    return g.reshape(shape[:-3] + (shape[-3] // groups, groups) + shape[-2:]).sum(axis=-3)


# ---------------------------------------------------------------------------------------------
# multi-head attention


def multi_head_attention_forward(
    query: TensorBase, key: TensorBase, value: TensorBase, embed_dim_to_check: int, num_heads: int,
    in_proj_weight: TensorBase | None, in_proj_bias: TensorBase | None, bias_k: TensorBase | None,
    bias_v: TensorBase | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: TensorBase,
    out_proj_bias: TensorBase | None, training: bool = True, key_padding_mask: TensorBase | None = None,
    need_weights: bool = True, attn_mask: TensorBase | None = None,
    use_separate_proj_weight: bool = False, q_proj_weight: TensorBase | None = None,
    k_proj_weight: TensorBase | None = None, v_proj_weight: TensorBase | None = None,
    static_k: TensorBase | None = None, static_v: TensorBase | None = None,
    average_attn_weights: bool = True, is_causal: bool = False,
) -> tuple[TensorBase, TensorBase | None]:
    """Multi-head attention on (L, N, E) query and (S, N, E) key/value (or unbatched (L, E)).

    ``out = concat_h(softmax(q_h k_h^T / sqrt(d) + mask) v_h) W_o^T + b_o`` with
    ``q_h, k_h, v_h`` the heads of the input projections. Returns ``(out, weights)``;
    ``weights`` is (N, L, S) averaged over heads (or (N, H, L, S)) when ``need_weights``.
    """
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
            "method `generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the fused kernel applies the causal mask itself
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", query.dtype)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(
                f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                f"{tuple(value.shape[:2])}"
            )
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(
            f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}"
        )

    # input projections
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        if query is key and key is value:  # self-attention: one product, then split
            qkv = linear(query, in_proj_weight, in_proj_bias)
            q, k, v = qkv.chunk(3, dim=-1)
        else:
            e = embed_dim
            q, k, v = _in_projection(query, key, value, in_proj_weight[:e],
                                     in_proj_weight[e:2 * e], in_proj_weight[2 * e:],
                                     in_proj_bias, e)
    else:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError(
                "use_separate_proj_weight is True but q_proj_weight, k_proj_weight or "
                "v_proj_weight is None"
            )
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight,
                                 in_proj_bias, embed_dim)

    # attn_mask to 3-D
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                    f"{(tgt_len, src_len)}."
                )
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                    f"{(bsz * num_heads, tgt_len, src_len)}."
                )
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    # learned key/value biases appended along the sequence
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key or value.")
        k = cat([k, bias_k.repeat(1, bsz, 1)], 0)
        v = cat([v, bias_v.repeat(1, bsz, 1)], 0)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must both be given or both be None")

    # heads: (L, N, E) -> (N * H, L, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_k.size(0) != bsz * num_heads or static_k.size(2) != head_dim:
            raise AssertionError(
                f"expecting static_k of shape ({bsz * num_heads}, S, {head_dim}), but got "
                f"{tuple(static_k.shape)}"
            )
        k = static_k
    if static_v is None:
        v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_v.size(0) != bsz * num_heads or static_v.size(2) != head_dim:
            raise AssertionError(
                f"expecting static_v of shape ({bsz * num_heads}, S, {head_dim}), but got "
                f"{tuple(static_v.shape)}"
            )
        v = static_v
    if add_zero_attn:
        zero_kv = zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k = cat([k, zero_kv], 1)
        v = cat([v, zero_kv], 1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.size(1)

    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(
                f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                f"{tuple(key_padding_mask.shape)}"
            )
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm

    if not training:
        dropout_p = 0.0

    if need_weights:
        if is_causal and attn_mask is None:
            raise RuntimeError("is_causal without attn_mask is not supported with need_weights")
        scores = (q * math.sqrt(1.0 / head_dim)).matmul(k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = weights.matmul(v)  # (N * H, L, head_dim)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        if attn_mask.size(0) == 1:
            attn_mask = attn_mask.unsqueeze(0)  # (1, 1, L, S): broadcast over batch and heads
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def _canonical_mask(mask: TensorBase | None, name: str, target_dtype: Any) -> TensorBase | None:
    """A bool mask (True = blocked) -> float of ``target_dtype`` with -inf where blocked; a
    float mask passes through; anything else is an error."""
    if mask is None:
        return None
    if mask.dtype is _dtype.bool_:
        blank = zeros(tuple(mask.shape), dtype=target_dtype, device=mask.device)
        return blank.masked_fill(mask, float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(
            f"only bool and floating types of {name} are supported, got {mask.dtype}: pass a "
            "bool mask (True = not allowed to attend) or a float mask added to the scores"
        )
    return mask


def _mha_shape_check(query: TensorBase, key: TensorBase, value: TensorBase, key_padding_mask: Any,
                     attn_mask: Any, num_heads: int) -> bool:
    """Whether the input is batched (3-D query); errors for inconsistent dims."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                f"found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                f"found {attn_mask.dim()}-D tensor instead"
            )
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                f"but found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(
                    "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                    f"but found {attn_mask.dim()}-D tensor instead"
                )
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(
                        f"Expected `attn_mask` shape to be {expected} but got "
                        f"{tuple(attn_mask.shape)}"
                    )
        return False
    raise AssertionError(
        "query should be unbatched 2D or batched 3D tensor but received "
        f"{query.dim()}-D query tensor"
    )


def _in_projection(query: TensorBase, key: TensorBase, value: TensorBase, w_q: TensorBase, w_k: TensorBase,
                   w_v: TensorBase, b: TensorBase | None, e: int) -> tuple[TensorBase, TensorBase, TensorBase]:
    b_q, b_k, b_v = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
    return (linear(query, w_q, b_q), linear(key, w_k, b_k),
            linear(value, w_v, b_v))
