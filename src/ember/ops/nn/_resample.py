"""Resampling along axes: ``_AxisMap`` (each output a weighted sum of a few inputs along one axis)
and the ``Resample`` op that applies one map per spatial axis (interpolate, adaptive average
pooling, the vision transforms' resizes), split out of ``_kernels.py``, which keeps convolution's
and pooling's layouts."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...autograd.function import Op

# a dense resampling map (_AxisMap.dense) is a matrix of at most this many entries
_DENSE_MAX_ENTRIES = 1 << 22
# a NumPy resampling (interpolate, adaptive average pooling) runs over blocks of rows whose
# largest intermediate has at most this many elements (see _resample_blocks)
_RESAMPLE_BLOCK = 1 << 18


class _AxisMap:
    """out[k] = sum_t w[k, t] * in[idx[k, t]] along one axis (host arrays; ``w`` None = ones).

    ``block`` > 0 marks out[k] = mean(in[k*block:(k+1)*block]), computed by a reshape.
    ``dense`` marks a map applied as one (n_out, n_in) matrix product (many taps per output:
    antialiased downscaling), where that matrix is small enough."""
    __slots__ = ("idx", "w", "n_in", "block", "dense", "_adj", "_dev")

    def __init__(self, idx: np.ndarray, w: np.ndarray | None, n_in: int, block: int = 0,
                 dense: bool = False) -> None:
        self.idx, self.w, self.n_in, self.block = idx, w, n_in, block
        self.dense = dense and idx.shape[0] * n_in <= _DENSE_MAX_ENTRIES
        self._adj: _AxisMap | None = None
        self._dev: dict = {}

    @property
    def n_out(self) -> int:
        return self.idx.shape[0]

    def arrays(self, xp: Any, dtype: Any) -> tuple[Any, Any]:
        key = (xp, np.dtype(dtype))
        got = self._dev.get(key)
        if got is None:
            w = None if self.w is None else xp.asarray(self.w.astype(dtype))
            got = self._dev[key] = (xp.asarray(self.idx), w)
        return got

    def matrix(self, xp: Any, dtype: Any) -> Any:
        """The map as a dense (n_out, n_in) matrix (repeated taps summed)."""
        key = ("dense", xp, np.dtype(dtype))
        got = self._dev.get(key)
        if got is None:
            a = np.zeros((self.n_out, self.n_in))
            rows = np.broadcast_to(np.arange(self.n_out)[:, None], self.idx.shape)
            np.add.at(a, (rows, self.idx), 1.0 if self.w is None else self.w)
            got = self._dev[key] = xp.asarray(a.astype(dtype))
        return got

    def adjoint(self) -> _AxisMap:
        """The transposed map (a CSR transpose of the tap lists)."""
        if self._adj is None:
            n_out, T = self.idx.shape
            src = self.idx.ravel()
            dst = np.repeat(np.arange(n_out), T)
            wt = np.ones(src.size) if self.w is None else self.w.ravel()
            keep = wt != 0
            src, dst, wt = src[keep], dst[keep], wt[keep]
            order = np.argsort(src, kind="stable")
            src, dst, wt = src[order], dst[order], wt[order]
            counts = np.bincount(src, minlength=self.n_in)
            m = max(int(counts.max()) if counts.size else 0, 1)
            rank = np.arange(src.size) - (np.cumsum(counts) - counts)[src]
            aidx = np.zeros((self.n_in, m), dtype=np.int64)
            aw = np.zeros((self.n_in, m), dtype=wt.dtype)
            aidx[src, rank] = dst
            aw[src, rank] = wt
            plain = self.w is None and bool((counts == m).all())
            self._adj = _AxisMap(aidx, None if plain else aw, n_out, dense=self.dense)
            self._adj._adj = self
        return self._adj


class Resample(Op):
    """out = A_H x A_W^T: fixed linear maps along the last axes (one map per axis, or None)

    grad_x = A_H^T grad A_W          (Resample with the adjoint maps)"""
    node_name = "UpsampleBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, maps: tuple) -> Any:
        xp = ctx.xp
        ctx.maps = maps
        if all(m is None for m in maps):
            return x.copy()
        if type(x) is np.ndarray and x.size:
            return _resample_blocks(x, maps)
        y = _resample(xp, x, maps)
        # a sum over a permuted input keeps its layout: PyTorch's result is contiguous
        return y if y.flags.c_contiguous else xp.ascontiguousarray(y)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        adj = tuple(None if m is None else m.adjoint() for m in ctx.maps)
        return ctx.call(Resample, grad, adj), None


def _resample(xp: Any, x: Any, maps: tuple) -> Any:
    """``maps`` applied to the last ``len(maps)`` axes of ``x``, the last axis first (as
    PyTorch's kernels do)."""
    y = x
    n = len(maps)
    for k in range(n - 1, -1, -1):
        if maps[k] is not None:
            y = _apply_map(xp, y, maps[k], k - n)
    return y


def _resample_blocks(x: np.ndarray, maps: tuple) -> np.ndarray:
    """``_resample`` on a NumPy array a block of rows (its leading dims merged, or its first
    dim where they do not merge) at a time, each block written into the one C-ordered result:
    the passes' temporaries stay block-sized (PyTorch's kernels build none). ``x`` may be a
    broadcast view (a sum's gradient): a block reads it in place."""
    n = len(maps)
    lead, sp = x.shape[:x.ndim - n], x.shape[x.ndim - n:]
    osp = tuple(s if m is None else m.n_out for s, m in zip(sp, maps))
    out = np.empty(lead + osp, x.dtype)
    try:
        x2 = np.reshape(x, (-1,) + sp, copy=False)
    except ValueError:  # leading dims that do not merge without a copy: blocks of the first
        x2 = x
    o2 = out.reshape((x2.shape[0],) + out.shape[out.ndim - x2.ndim + 1:])
    # the largest intermediate per row: each pass's output size
    per, size = 1, list(sp)
    for k in range(n - 1, -1, -1):
        size[k] = osp[k]
        per = max(per, math.prod(size), math.prod(sp))
    per *= math.prod(x2.shape[1:x2.ndim - n])
    step = max(1, _RESAMPLE_BLOCK // max(1, per))
    last = min(k for k, m in enumerate(maps) if m is not None)
    scratch: dict = {}  # one buffer per pass and role, reused block after block
    for r0 in range(0, x2.shape[0], step):
        y = x2[r0:r0 + step]
        dst = o2[r0:r0 + step]
        for k in range(n - 1, -1, -1):
            if maps[k] is not None:
                y = _apply_map_into(y, maps[k], k - n, dst if k == last else None, scratch, k)
    return out


def _apply_map_into(x: np.ndarray, m: _AxisMap, axis: int, dst: Any, scratch: dict,
                    key: int) -> np.ndarray:
    """``_apply_map`` on a NumPy block, into ``dst`` (or a buffer of ``scratch``): the same
    taps, products and sums, with no new array per block."""
    ax = x.ndim + axis
    shape = x.shape[:ax] + (m.n_out,) + x.shape[ax + 1:]
    idx, w = m.arrays(np, x.dtype)
    T = idx.shape[1]
    if m.block or m.dense or T > 8:
        y = _apply_map(np, x, m, axis)
        if dst is None:
            return y
        dst[...] = y
        return dst
    if not x.flags.c_contiguous:  # (take would copy it for each tap: once, into a buffer)
        xc = _scratch(scratch, (key, 2), x.shape, x.dtype)
        np.copyto(xc, x)
        x = xc
    y = dst if dst is not None else _scratch(scratch, (key, 0), shape, x.dtype)
    v = _scratch(scratch, (key, 1), shape, x.dtype) if T > 1 else None
    tail = (1,) * (x.ndim - ax - 1)
    for t in range(T):  # (indices in range: "clip" takes straight into the buffer)
        o = y if t == 0 else v
        np.take(x, idx[:, t], axis=ax, out=o, mode="clip")
        if w is not None:
            o *= w[:, t].reshape((m.n_out,) + tail)
        if t:
            y += v
    return y


def _scratch(bufs: dict, key: Any, shape: tuple, dtype: Any) -> np.ndarray:
    """A C-ordered array of ``shape`` over the buffer ``bufs[key]`` (grown when too small)."""
    need = math.prod(shape)
    b = bufs.get(key)
    if b is None or b.size < need or b.dtype != dtype:
        b = bufs[key] = np.empty(need, dtype)
    return b[:need].reshape(shape)


def _apply_map(xp: Any, x: Any, m: _AxisMap, axis: int) -> Any:
    ax = x.ndim + axis
    if m.block:
        shape = x.shape[:ax] + (m.n_out, m.block) + x.shape[ax + 1:]
        return x.reshape(shape).sum(axis=ax + 1) / m.block
    if m.dense and axis in (-1, -2):
        a = m.matrix(xp, x.dtype)
        return xp.matmul(x, a.T) if axis == -1 else xp.matmul(a, x)
    idx, w = m.arrays(xp, x.dtype)
    tail = (1,) * (x.ndim - ax - 1)
    T = idx.shape[1]
    if T > 8:
        y = xp.take(x, idx, axis=ax)
        return (y * w.reshape((m.n_out, T) + tail)).sum(axis=ax + 1)
    y = None
    for t in range(T):
        v = xp.take(x, idx[:, t], axis=ax)
        if w is not None:
            v *= w[:, t].reshape((m.n_out,) + tail)
        if y is None:
            y = v
        else:  # (y is this function's own array: summed in place)
            y += v
    return y
