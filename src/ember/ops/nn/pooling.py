"""Pooling functions: max, average and adaptive pooling in 1-D and 2-D.

``AvgPool`` / ``AvgPoolT`` are an adjoint pair. Max pooling is a non-differentiable argmax search
(``MaxPoolGather``) followed by a gather of the chosen elements, whose adjoint scatters
(``IndexScatter``). On host float32/float64 arrays both run as eager kernels
(``_kernels_loader.max_pool`` / ``max_pool_backward``: one pass, PyTorch's rule; the NumPy search
below is the reference and the fallback).
"""

from __future__ import annotations

import functools
import math
import operator
from typing import Any

import numpy as np

from ... import _backend
from ... import _kernels_loader as _kl
from ..._tensor_base import TensorBase
from ...autograd import grad_mode
from ...autograd.function import Op
from .. import _out
from .._promote import _refuse_complex
from ._kernels import (
    Resample,
    _4d,
    _AxisMap,
    _check_tensor,
    _crop,
    _Geom,
    _ints,
    _pad,
    _rebatch,
    _tname,
    _to2,
    _unbatch,
)

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices", "avg_pool1d",
    "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
]


_LUT_TAPS = 12  # windows of up to 12 taps find their argmax through a 2**12 lookup table


class AvgPool(Op):
    """y[n, c, p] = sum_{t in window(p)} x_pad[n, c, t] / divisor[p]

    grad_x = AvgPoolT(grad): each window's grad / divisor added back to every element of it"""
    node_name = "AvgPool2DBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, g: _Geom, div: Any) -> Any:
        xp = ctx.xp
        x4 = _4d(x)
        xpad = _pad(xp, x4, g)
        y = None
        for i in range(g.kh):
            for j in range(g.kw):
                v = xpad[g.window(i, j)]
                if y is None:
                    y = v.copy()
                else:
                    y += v
        y /= div
        ctx.geom, ctx.div, ctx.shape = g, div, x.shape
        return y.reshape(x.shape[:-1] + (g.OW,)) if x.ndim == 3 else y

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(AvgPoolT, grad, ctx.geom, ctx.div, ctx.shape), None, None


class AvgPoolT(Op):
    """out = AvgPool^T g: every window's g / divisor spread over its elements

    grad_g = AvgPool(grad)"""
    node_name = "AvgPool2DBackwardBackward0"

    @staticmethod
    def forward(ctx: Any, gy: Any, g: _Geom, div: Any, x_shape: tuple) -> Any:
        xp = ctx.xp
        g4 = _4d(gy) / div
        N, C = g4.shape[:2]
        out = xp.zeros((N, C, g.Hp, g.Wp), dtype=gy.dtype)
        for i in range(g.kh):
            for j in range(g.kw):
                out[g.window(i, j)] += g4
        ctx.geom, ctx.div = g, div
        return _crop(xp, out, g).reshape(x_shape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(AvgPool, grad, ctx.geom, ctx.div), None, None, None


class MaxPoolGather(Op):
    """out[r, p] = x[r, idx[r, p]] (r = batch x channel, spatial dims flattened): the values
    max pooling selected (``out`` may be passed in precomputed)

    grad_x[r, j] = sum_{p : idx[r, p] = j} grad[r, p]          (IndexScatter)"""
    node_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, idx: Any, nsp: int, out: Any = None,
                unique: bool = False) -> Any:
        ctx.idx, ctx.nsp, ctx.unique, ctx.shape = idx, nsp, unique, x.shape
        if out is not None:
            return out
        rows, n = _rows(x.shape, nsp)
        m = _rows(idx.shape, nsp)[1]
        got = ctx.xp.take_along_axis(x.reshape(rows, n), idx.reshape(rows, m), axis=1)
        return got.reshape(idx.shape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        gx = ctx.call(IndexScatter, grad, ctx.idx, ctx.shape, ctx.nsp, ctx.unique)
        return gx, None, None, None, None


class MaxPool(Op):
    """out[r, p] = max of x[r] over window p (the search and, when a gradient is needed, the
    index it chose)

    grad_x[r, j] = sum_{p : idx[r, p] = j} grad[r, p]          (IndexScatter)"""
    node_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, g: Any, nsp: int) -> Any:
        y, idx = _max_pool_search(x, g, nsp, any(ctx.needs_input_grad))
        ctx.idx, ctx.nsp, ctx.unique, ctx.shape = idx, nsp, _windows_apart(g), x.shape
        ctx.save_for_backward(x)  # (PyTorch's formula keeps the input: ``_saved_self``)
        return y

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        gx = ctx.call(IndexScatter, grad, ctx.idx, ctx.shape, ctx.nsp, ctx.unique)
        return gx, None, None


class AdaptiveMaxPoolGather(MaxPoolGather):
    """out[r, p] = x[r, idx[r, p]]          grad_x = scatter-add of grad at idx"""
    node_name = "AdaptiveMaxPool2DBackward0"


class IndexScatter(Op):
    """out = zeros(shape); out[r, idx[r, p]] += g[r, p]

    grad_g[r, p] = grad[r, idx[r, p]]          (MaxPoolGather)"""
    node_name = "MaxPool2DWithIndicesBackwardBackward0"

    @staticmethod
    def forward(ctx: Any, gy: Any, idx: Any, shape: tuple, nsp: int, unique: bool) -> Any:
        xp = ctx.xp
        rows, n = _rows(shape, nsp)
        m = _rows(idx.shape, nsp)[1]
        ctx.idx, ctx.nsp, ctx.unique = idx, nsp, unique
        if type(gy) is np.ndarray and (out := _kl.max_pool_backward(gy, idx, (rows, n),
                                                                    unique)) is not None:
            return out.reshape(shape)  # (the eager kernel: the same values, one pass)
        gf = gy.reshape(rows, m)
        idf = idx.reshape(rows, m)
        if unique:  # windows don't overlap: every index is hit at most once; the (row, index)
            # pairs are read as they are, with no flat index array beside them
            out = xp.zeros((rows, n), dtype=gy.dtype)
            out[xp.arange(rows)[:, None], idf] = gf
        else:
            flat = (idf + (xp.arange(rows) * n)[:, None]).ravel()
            out = xp.bincount(flat, weights=gf.ravel(), minlength=rows * n)
            out = out.astype(gy.dtype, copy=False)
        return out.reshape(shape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        gg = ctx.call(MaxPoolGather, grad, ctx.idx, ctx.nsp)
        return gg, None, None, None, None


def _rows(shape: tuple, nsp: int) -> tuple[int, int]:
    lead = math.prod(shape[:len(shape) - nsp])
    return lead, math.prod(shape[len(shape) - nsp:])


@functools.lru_cache(maxsize=64)
def _first_bit_tables(offs: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """For a bit mask of the taps equal to the max: the offset of the first and of the last."""
    codes = np.arange(1 << len(offs))
    first = np.zeros(codes.size, dtype=np.int64)
    last = np.zeros(codes.size, dtype=np.int64)
    for k in range(len(offs)):
        last = np.where((codes >> k) & 1, k, last)
        first = np.where((codes >> (len(offs) - 1 - k)) & 1, len(offs) - 1 - k, first)
    o = np.asarray(offs, dtype=np.int64)
    return o[first], o[last]


def _max_search(xp: Any, taps: list, shape: tuple, init: Any, dtype: Any, need_idx: bool,
                base: Any = None, y: Any = None) -> tuple[Any, Any]:
    """Max over kernel taps and, when asked, the flat input index of each maximum.

    ``taps`` is a list of (values (N, C, OH, OW), flat index): with ``base`` the index is
    ``base + offset`` for an int offset, else an (OH, OW) array. PyTorch's rule decides: a tap
    wins when greater than the running max or NaN (NaN propagates and reports the last NaN;
    ties keep the first index; a window of only -inf reports ``init``, its first element).
    ``y``, the maxima, may be passed in precomputed."""
    if y is None:
        y = taps[0][0].copy()
        for v, _ in taps[1:]:
            xp.maximum(y, v, out=y)
    if not need_idx:
        return y, None
    is_float = np.dtype(dtype).kind in "fV"
    low = -np.inf if is_float else np.iinfo(dtype).min
    if base is not None and len(taps) <= _LUT_TAPS:
        # bit k of ``code`` says tap k equals the max; a table maps the code to an offset
        first, last = _first_bit_tables(tuple(o for _, o in taps))
        nan = xp.isnan(y) if is_float else None
        has_nan = nan is not None and bool(nan.any())
        code = xp.zeros(shape, dtype=np.uint16)
        for k, (v, _) in enumerate(taps):
            eq = v == y
            if has_nan:
                eq |= xp.isnan(v) & nan
            code |= xp.left_shift(eq, k, dtype=np.uint16)
        idx = xp.take(xp.asarray(first), code)  # (take: 2x faster than fancy indexing)
        if has_nan:
            idx = xp.where(nan, xp.take(xp.asarray(last), code), idx)
        idx += base
        all_low = y == low
        if bool(all_low.any()):
            idx = xp.where(all_low, init, idx)
        return y, idx
    cur = xp.full(shape, low, dtype=dtype)
    idx = xp.empty(shape, dtype=np.int64)
    idx[...] = init
    for v, flat in taps:
        win = v > cur
        if is_float:
            win |= xp.isnan(v)
        xp.copyto(cur, v, where=win)
        xp.copyto(idx, flat if base is None else base + flat, where=win)
    return cur, idx


def _tile_max(xp: Any, xpad: Any, g: _Geom) -> Any:
    """The maxima of windows that tile the input (stride = kernel, no dilation), reduced over the
    kernel's rows first, on whole contiguous rows, then over its columns: fewer strided reads
    than a maximum per tap (2x2: 0.37 -> 0.27 ms on 64 x 16 x 24 x 24); None for other
    windows. NaN propagates as in the per-tap maximum."""
    if (g.sh, g.sw) != (g.kh, g.kw) or (g.dh, g.dw) != (1, 1) or g.kh * g.kw < 2:
        return None
    N, C = xpad.shape[:2]
    t = xpad[:, :, :g.OH * g.kh, :g.OW * g.kw].reshape(N, C, g.OH, g.kh, g.OW * g.kw)
    r = t[:, :, :, 0].copy() if g.kh > 1 else t[:, :, :, 0]
    for i in range(1, g.kh):
        xp.maximum(r, t[:, :, :, i], out=r)
    r = r.reshape(N, C, g.OH, g.OW, g.kw)
    y = r[..., 0].copy()
    for j in range(1, g.kw):
        xp.maximum(y, r[..., j], out=y)
    return y


def _first_valid(xp: Any, n_out: int, s: int, p: int, d: int, n_in: int) -> Any:
    """Per window, the first input position that is not padding."""
    start = np.arange(n_out) * s - p
    first = np.where(start < 0, start + ((-start + d - 1) // d) * d, start)
    return xp.asarray(np.clip(first, 0, max(n_in - 1, 0)))


# ---------------------------------------------------------------------------------------------
# resampling: a separable linear map along the last axes (interpolate, adaptive avg pool)


def max_pool1d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """1-D max pooling over an (N, C, L) or (C, L) input (indices index L)."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """2-D max pooling over an (N, C, H, W) or (C, H, W) input.

    ``stride`` defaults to ``kernel_size``; padding (at most half the kernel) is -inf. With
    ``return_indices`` also returns each maximum's flat index ``h * W + w`` in its plane; ties
    keep the first index and NaN propagates, as in PyTorch."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool1d_with_indices(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> Any:
    """``max_pool1d`` returning (values, indices)."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> Any:
    """``max_pool2d`` returning (values, indices)."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool1d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Any:
    """1-D average pooling over an (N, C, L) or (C, L) input."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None, *, out: Any = None) -> Any:
    """2-D average pooling over an (N, C, H, W) or (C, H, W) input.

    Each window's sum is divided by its size including zero padding (``count_include_pad``)
    or counting only input elements, or by ``divisor_override``."""
    if out is not None:
        res = avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override)
        return _out.write(out, res, "avg_pool2d")
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def adaptive_avg_pool1d(input: Any, output_size: Any) -> Any:
    """1-D adaptive average pooling: window o covers [floor(o L / out), ceil((o+1) L / out))."""
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input: Any, output_size: Any) -> Any:
    """2-D adaptive average pooling to ``output_size`` (an int, or (H, W) with None = keep)."""
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_max_pool1d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    """1-D adaptive max pooling (optionally with the indices of the maxima)."""
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    """2-D adaptive max pooling (optionally with the flat indices h * W + w of the maxima)."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input: Any, output_size: Any,
                                     return_indices: bool = False) -> Any:
    """``adaptive_max_pool1d`` returning (values, indices)."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Any, output_size: Any,
                                     return_indices: bool = False) -> Any:
    """``adaptive_max_pool2d`` returning (values, indices)."""
    return adaptive_max_pool2d(input, output_size, True)


class AdaptiveAvgPool(Resample):
    """out = A_H x A_W^T with A the window-average matrices          grad_x = A_H^T grad A_W"""
    node_name = "AdaptiveAvgPool2DBackward0"


def _adaptive_windows(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    o = np.arange(n_out)
    return (o * n_in) // n_out, ((o + 1) * n_in + n_out - 1) // n_out


@functools.lru_cache(maxsize=256)  # maps are reused step after step
def _adaptive_avg_map(n_in: int, n_out: int) -> _AxisMap:
    if n_in % n_out == 0:
        k = n_in // n_out
        idx = np.arange(n_out)[:, None] * k + np.arange(k)
        return _AxisMap(idx, np.full(idx.shape, 1.0 / k), n_in, block=k)
    start, end = _adaptive_windows(n_in, n_out)
    cnt = end - start
    t = np.arange(int(cnt.max()))
    idx = np.minimum(start[:, None] + t, end[:, None] - 1)
    w = np.where(t < cnt[:, None], 1.0 / cnt[:, None], 0.0)
    return _AxisMap(idx, w, n_in)


def _pool_out(n: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool_args(fn: str, nd: int, input: Any, kernel_size: Any, stride: Any, padding: Any,
               dilation: Any, ceil_mode: bool) -> tuple:
    """Check a pooling call; returns (input (batched), unbatched, geometry)."""
    _check_tensor(input, fn)
    _refuse_complex(fn, input)
    x = input._data
    if x.ndim not in (nd + 1, nd + 2):
        if fn.startswith("max_pool2d"):
            raise RuntimeError(f"non-empty 3D or 4D (batch mode) tensor expected for input, but "
                               f"got input of size {list(x.shape)}")
        raise RuntimeError(f"{fn}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with "
                           f"optional 0 dim batch size for input, but got:{list(x.shape)}")
    k = _ints(kernel_size, nd, "kernel_size", fn, conv_msg=False)
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _ints(stride, nd, "stride", fn, conv_msg=False)
    p = _ints(padding, nd, "padding", fn, conv_msg=False)
    d = _ints(dilation, nd, "dilation", fn, conv_msg=False)
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{fn}: kernel_size must be greater than zero, but got "
                           f"kernel_size={list(k)}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"stride should not be zero ({fn}: got stride={list(s)})")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation={list(d)}")
    if any(v < 0 for v in p):
        raise RuntimeError(f"{fn}: padding must be non-negative, but got padding={list(p)}")
    for kk, pp, dd in zip(k, p, d):
        if pp > kk // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={pp}, kernel_size={kk} and dilation={dd}")
    input, unbatched = _unbatch(input, nd + 2)  # noqa: A001
    x = input._data
    sizes = x.shape[2:]
    out = [_pool_out(n, kk, ss, pp, dd, ceil_mode) for n, kk, ss, pp, dd in
           zip(sizes, k, s, p, d)]
    if any(o <= 0 for o in out):
        shown = "x".join(map(str, (x.shape[1],) + tuple(sizes)))
        got = "x".join(map(str, (x.shape[1],) + tuple(out)))
        raise RuntimeError(f"Given input size: ({shown}). Calculated output size: ({got}). "
                           f"Output size is too small ({fn} with kernel_size={list(k)}, "
                           f"stride={list(s)}, padding={list(p)}, dilation={list(d)})")
    k2, s2, p2, d2, o2 = (_to2(v, f) for v, f in ((k, 1), (s, 1), (p, 0), (d, 1),
                                                   (tuple(out), 1)))
    in_hw = _to2(tuple(sizes), 1)
    pads = []
    for n, kk, ss, pp, dd, oo in zip(in_hw, k2, s2, p2, d2, o2):
        need = (oo - 1) * ss + dd * (kk - 1) + 1  # the padded extent the windows reach
        pads.append((pp, max(pp, need - n - pp)))
    g = _Geom(in_hw, k2, s2, (pads[0], pads[1]), d2, o2, wide=False)
    return input, unbatched, g


def _pool_fields(nd: int, k: Any, s: Any, p: Any, d: Any, ceil_mode: bool) -> tuple:
    """(kernel_size, stride, padding, dilation, ceil_mode) as PyTorch's node keeps them."""
    def ints(v: Any) -> tuple:
        return (int(v),) * nd if isinstance(v, int) else tuple(int(x) for x in v)
    k = ints(k)
    return k, (k if s is None or s == [] or s == () else ints(s)), ints(p), ints(d), \
        bool(ceil_mode)


def _max_pool(fn: str, nd: int, input: Any, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool, return_indices: bool) -> Any:
    input, unbatched, g = _pool_args(  # noqa: A001
        fn, nd, input, kernel_size, stride, padding, dilation, ceil_mode)
    if not return_indices:  # the search runs inside the op, so compile can replay it
        out = MaxPool.apply(input, g, nd)
        if out.grad_fn is not None:  # PyTorch's ``_saved_kernel_size``... (as given)
            out.grad_fn.pool = _pool_fields(nd, kernel_size, stride, padding, dilation, ceil_mode)
        return _rebatch(out, unbatched)
    y, idx = _max_pool_search(input._data, g, nd, True)
    T = TensorBase
    if grad_mode.state.enabled and input.requires_grad:
        out = MaxPoolGather.apply(input, idx, nd, y, _windows_apart(g))
    else:
        out = T._make(y)
    return _rebatch(out, unbatched), _rebatch(T._make(idx), unbatched)


def _windows_apart(g: Any) -> bool:
    """No two pooling windows overlap: each input element is chosen at most once."""
    return g.sh >= g.dh * (g.kh - 1) + 1 and g.sw >= g.dw * (g.kw - 1) + 1


def _max_pool_search(x: Any, g: Any, nd: int, need_idx: bool) -> tuple[Any, Any]:
    """Each window's maximum of ``x`` (N, C, H, W) or (N, C, L), and with ``need_idx`` its flat
    index in the plane (first of ties, NaN wins)."""
    xp = _backend.xp_of(x)
    x4 = _4d(x)
    half = None
    if type(x4) is np.ndarray and x4.dtype.itemsize == 2 and x4.dtype.kind in "fV" and \
            (wide := _kl.half_cast(np.ascontiguousarray(x4), np.float32)) is not None:
        half, x4 = x4.dtype, wide  # (float16/bfloat16: the float32 kernel's search)
    if type(x4) is np.ndarray and (got := _kl.max_pool(
            x4, (g.H, g.W, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw, g.OH, g.OW),
            need_idx)) is not None:  # the eager kernel: PyTorch's rule in one pass
        y, idx = got
        if half is not None:  # (exact: each maximum is one of the half values)
            y = _kl.half_cast(y, half)
        if nd == 1:
            y = y.reshape(y.shape[:2] + (g.OW,))
            idx = None if idx is None else idx.reshape(y.shape)
        return y, idx
    fill = -np.inf if x.dtype.kind in "fV" else np.iinfo(x.dtype).min
    xpad = _pad(xp, x4, g, fill)
    init = base = None
    if need_idx:
        hs = xp.arange(g.OH) * g.sh - g.pt
        ws = xp.arange(g.OW) * g.sw - g.pl
        base = hs[:, None] * g.W + ws[None, :]
        init = (_first_valid(xp, g.OH, g.sh, g.pt, g.dh, g.H)[:, None] * g.W
                + _first_valid(xp, g.OW, g.sw, g.pl, g.dw, g.W)[None, :])
    taps = [(xpad[g.window(i, j)], i * g.dh * g.W + j * g.dw)
            for i in range(g.kh) for j in range(g.kw)]
    shape = x4.shape[:2] + (g.OH, g.OW)
    y, idx = _max_search(xp, taps, shape, init, x4.dtype, need_idx, base,
                         _tile_max(xp, xpad, g))
    if half is not None:
        y = y.astype(half)  # (exact, as above)
    if nd == 1:
        y = y.reshape(shape[:2] + (g.OW,))
        idx = None if idx is None else idx.reshape(y.shape)
    return y, idx


def _avg_divisor(n: int, k: int, s: int, p: int, out: int, include_pad: bool) -> np.ndarray:
    start = np.arange(out) * s - p
    end = np.minimum(start + k, n + p)
    if include_pad:
        return end - start
    return np.minimum(end, n) - np.maximum(start, 0)


def _avg_pool(fn: str, nd: int, input: Any, kernel_size: Any, stride: Any, padding: Any,
              ceil_mode: bool, count_include_pad: bool, divisor_override: Any) -> Any:
    input, unbatched, g = _pool_args(  # noqa: A001
        fn, nd, input, kernel_size, stride, padding, 1, ceil_mode)
    x = input._data
    if x.dtype.kind not in "fV":
        raise RuntimeError(f'"{fn}" not implemented for \'{_tname(input)}\' (input dtype '
                           f"{input.dtype}); convert it first, e.g. x.float()")
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
        div: Any = divisor_override
    else:
        dh = _avg_divisor(g.H, g.kh, g.sh, g.pt, g.OH, count_include_pad)
        dw = _avg_divisor(g.W, g.kw, g.sw, g.pl, g.OW, count_include_pad)
        dd = np.outer(dh, dw)
        div = int(dd.flat[0]) if (dd == dd.flat[0]).all() else \
            _backend.xp_of(x).asarray(dd.astype(x.dtype))
    return _rebatch(AvgPool.apply(input, g, div), unbatched)


def _adaptive_args(fn: str, nd: int, input: Any, output_size: Any) -> tuple[Any, tuple]:
    _check_tensor(input, fn)
    _refuse_complex(fn, input)
    x = input._data
    if x.ndim not in (nd + 1, nd + 2):
        if nd == 1:
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor "
                               f"for argument #1 'self' (while checking arguments for {fn})")
        raise RuntimeError(f"{fn}(): Expected {nd + 1}D or {nd + 2}D tensor, but got "
                           f"{list(x.shape)}")
    sizes = x.shape[-nd:]
    for i in range(1, x.ndim):
        if x.shape[i] == 0:
            raise RuntimeError(
                f"{fn}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {list(x.shape)} with dimension {i} being empty")
    if isinstance(output_size, int) or output_size is None:
        out = (output_size,) * nd
    else:
        out = tuple(output_size)
        if len(out) == 1 and nd > 1:
            out = out * nd
    if len(out) != nd:
        raise RuntimeError(f"{fn}: output_size must be {nd} (got {list(out)})")
    out = tuple(n if o is None else operator.index(o) for o, n in zip(out, sizes))
    if any(o < 0 for o in out):
        raise RuntimeError(f"{fn}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{', '.join(map(str, out))}}}")
    return input, out


def _adaptive_avg(fn: str, nd: int, input: Any, output_size: Any) -> Any:
    input, out = _adaptive_args(fn, nd, input, output_size)  # noqa: A001
    if input._data.dtype.kind not in "fV":
        raise RuntimeError(f'"{fn}" not implemented for \'{_tname(input)}\' (input dtype '
                           f"{input.dtype}); convert it first, e.g. x.float()")
    if all(o == 1 for o in out):  # PyTorch's global pooling is the mean (MeanBackward1), so
        # the two agree to the last bit (a library's test compares them with allclose)
        if nd == 1:
            return input.unsqueeze(-2).mean(dim=(-1, -2), keepdim=True).squeeze(-2)
        return input.mean(dim=tuple(range(-1, -nd - 1, -1)), keepdim=True)
    sizes = input._data.shape[-nd:]
    maps = tuple(None if o == n else _adaptive_avg_map(n, o) for n, o in zip(sizes, out))
    return AdaptiveAvgPool.apply(input, maps)


def _adaptive_max(fn: str, nd: int, input: Any, output_size: Any, return_indices: bool) -> Any:
    input, out = _adaptive_args(fn, nd, input, output_size)  # noqa: A001
    input, unbatched = _unbatch(input, nd + 2)  # noqa: A001
    x = input._data
    xp = _backend.xp_of(x)
    x4 = _4d(x)
    N, C, H, W = x4.shape
    OH, OW = _to2(out, 1)
    need_grad = grad_mode.state.enabled and input.requires_grad
    need_idx = return_indices or need_grad
    sh, eh = _adaptive_windows(H, OH)
    sw, ew = _adaptive_windows(W, OW)
    th = np.arange(int((eh - sh).max()) if OH else 0)
    tw = np.arange(int((ew - sw).max()) if OW else 0)
    ph = xp.asarray(np.minimum(sh[:, None] + th, eh[:, None] - 1))  # (OH, taps): input rows
    pw = xp.asarray(np.minimum(sw[:, None] + tw, ew[:, None] - 1))
    init = xp.asarray(sh[:, None] * W + sw[None, :])

    taps = []
    for a in range(th.size):
        rows = xp.take(x4, ph[:, a], axis=2)
        for b in range(tw.size):
            taps.append((xp.take(rows, pw[:, b], axis=3), ph[:, a][:, None] * W + pw[:, b]))
    if taps:
        y, idx = _max_search(xp, taps, (N, C, OH, OW), init, x.dtype, need_idx)
    else:  # an empty output
        y = xp.empty((N, C, OH, OW), dtype=x.dtype)
        idx = xp.empty((N, C, OH, OW), dtype=np.int64)
    if nd == 1:
        y = y.reshape(N, C, OW)
        idx = None if idx is None else idx.reshape(N, C, OW)
    T = TensorBase
    if need_grad:
        unique = H % max(OH, 1) == 0 and W % max(OW, 1) == 0
        res = AdaptiveMaxPoolGather.apply(input, idx, nd, y, unique)
    else:
        res = T._make(y)
    res = _rebatch(res, unbatched)
    if return_indices:
        return res, _rebatch(T._make(idx), unbatched)
    return res
