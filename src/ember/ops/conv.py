"""Convolution, pooling, resampling (interpolate, adaptive pools) and fold/unfold.

Layout is NCHW (NCL in 1-D); a 1-D op runs as the 2-D op with a height of 1. Every sliding-window
op works on a strided *view* of the (padded) input, so the only copies are the im2col matrix that
feeds a convolution's single GEMM and the output itself.

The differentiable pieces come in adjoint pairs, so every backward rule is another op of this
file (run through ``ctx.call``) and double backward works for free:

- ``Conv`` (y = W * x), ``ConvTranspose`` (its adjoint in x) and ``ConvWeight`` (its adjoint in
  W); each one's derivatives are the other two.
- ``AvgPool`` / ``AvgPoolT``, ``Im2col`` / ``Col2im``, ``PixelShuffle`` / ``PixelUnshuffle``.
- ``Resample``: a separable linear map on the last one or two axes (interpolate, adaptive average
  pooling), whose adjoint is again a ``Resample``.
- ``MaxPoolGather`` / ``IndexScatter``: max pooling is a non-differentiable argmax search
  followed by a gather of the chosen elements; the gather's adjoint scatters.

Convolution columns are channel-major, (C * kh * kw, N * L), so forward, weight gradient and
input gradient are one large GEMM each. Stride-1 convolutions use a *wide* im2col: with the
padded image flattened, every kernel offset is one contiguous slice, so im2col and col2im move
long rows instead of 8-element pieces (several times faster); the GEMM computes ``kw - 1``
throw-away columns per output row, dropped afterwards.
"""

from __future__ import annotations

import functools
import math
import operator
import warnings
from typing import Any

import numpy as np

from .. import _backend
from .._tensor_base import TensorBase
from ..autograd import grad_mode
from ..autograd.function import Op

__all__ = [
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "max_pool1d",
    "max_pool2d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "interpolate",
    "upsample",
    "upsample_nearest",
    "upsample_bilinear",
    "unfold",
    "fold",
    "pixel_shuffle",
    "pixel_unshuffle",
    "conv3d",
    "conv_transpose3d",
    "max_pool3d",
    "max_pool3d_with_indices",
    "avg_pool3d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "conv_tbc",
    "fractional_max_pool2d",
    "fractional_max_pool3d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices",
]

Pad2 = tuple[tuple[int, int], tuple[int, int]]


# =============================================================================================
# geometry and the array kernels (im2col, col2im, window slices)


class _Geom:
    """Sliding windows over the last two axes of an (N, C, H, W) array.

    ``pad`` is ((top, bottom), (left, right)); ``out`` the number of window positions. With
    ``wide`` (stride 1) windows are addressed in the flattened padded image, see the module doc.
    """

    __slots__ = ("H", "W", "kh", "kw", "sh", "sw", "pt", "pb", "pl", "pr", "dh", "dw", "OH", "OW",
                 "Hp", "Wp", "wide", "L")

    def __init__(self, in_hw: tuple[int, int], k: tuple[int, int], stride: tuple[int, int],
                 pad: Pad2, dil: tuple[int, int], out: tuple[int, int] | None = None,
                 wide: bool = True) -> None:
        self.H, self.W = in_hw
        self.kh, self.kw = k
        self.sh, self.sw = stride
        (self.pt, self.pb), (self.pl, self.pr) = pad
        self.dh, self.dw = dil
        self.Hp = self.H + self.pt + self.pb
        self.Wp = self.W + self.pl + self.pr
        if out is None:
            out = ((self.Hp - self.dh * (self.kh - 1) - 1) // self.sh + 1,
                   (self.Wp - self.dw * (self.kw - 1) - 1) // self.sw + 1)
        self.OH, self.OW = out
        self.wide = wide and self.sh == 1 and self.sw == 1 and self.OH > 0 and self.OW > 0
        self.L = self.OH * self.Wp if self.wide else self.OH * self.OW

    @property
    def padded(self) -> bool:
        return bool(self.pt or self.pb or self.pl or self.pr)

    def window(self, i: int, j: int) -> tuple:
        """Index of kernel tap (i, j) across all windows: an (N, C, OH, OW) strided view."""
        h0, w0 = i * self.dh, j * self.dw
        return (slice(None), slice(None),
                slice(h0, h0 + self.sh * (self.OH - 1) + 1, self.sh),
                slice(w0, w0 + self.sw * (self.OW - 1) + 1, self.sw))


def _xp(ctx: Any, a: Any) -> Any:
    """The op's array module. (A node made by ``ctx.call`` has no ``xp`` set: ask the array.)"""
    xp = getattr(ctx, "xp", None)
    return xp if xp is not None else _backend.xp_of(a)


def _need(ctx: Any, i: int) -> bool:
    """Whether input ``i`` needs a gradient (True for a node made by ``ctx.call``)."""
    need = getattr(ctx, "needs_input_grad", None)
    return True if need is None else need[i]


def _4d(a: Any) -> Any:
    """(N, C, L) -> (N, C, 1, L): 1-D ops run as 2-D ones (a view)."""
    return a.reshape(a.shape[:2] + (1,) + a.shape[2:]) if a.ndim == 3 else a


def _pad(xp: Any, x: Any, g: _Geom, value: Any = 0) -> Any:
    if not g.padded:
        return x
    N, C = x.shape[:2]
    out = xp.full((N, C, g.Hp, g.Wp), value, dtype=x.dtype)
    out[:, :, g.pt:g.pt + g.H, g.pl:g.pl + g.W] = x
    return out


def _crop(xp: Any, xpad: Any, g: _Geom) -> Any:
    if not g.padded:
        return xpad
    return xp.ascontiguousarray(xpad[:, :, g.pt:g.pt + g.H, g.pl:g.pl + g.W])


def _unfold_cols(xp: Any, xpad: Any, g: _Geom) -> Any:
    """Padded (N, C, Hp, Wp) -> unfold's columns (N, C * kh * kw, OH * OW): one copy."""
    N, C = xpad.shape[:2]
    s0, s1, s2, s3 = xpad.strides
    v = xp.lib.stride_tricks.as_strided(
        xpad, (N, C, g.kh, g.kw, g.OH, g.OW),
        (s0, s1, g.dh * s2, g.dw * s3, g.sh * s2, g.sw * s3))
    return v.reshape(N, C * g.kh * g.kw, g.OH * g.OW)


def _fold_cols(xp: Any, cols: Any, g: _Geom) -> Any:
    """Fold's columns (N, C * kh * kw, OH * OW) -> padded (N, C, Hp, Wp), overlaps summed."""
    N = cols.shape[0]
    c = cols.reshape(N, cols.shape[1] // (g.kh * g.kw), g.kh, g.kw, g.OH, g.OW)
    out = xp.zeros((N, c.shape[1], g.Hp, g.Wp), dtype=cols.dtype)
    for i in range(g.kh):
        for j in range(g.kw):
            out[g.window(i, j)] += c[:, :, i, j]
    return out


# The convolution kernels keep their columns channel-major, (C * kh * kw, N * L), so that each
# convolution step is ONE large GEMM (a batch of N small GEMMs wakes the BLAS threads N times).
# ``L`` is the number of window positions per image: OH * OW, or OH * Wp in the wide layout.


def _conv_input(xp: Any, x4: Any, g: _Geom) -> Any:
    """(N, C, H, W) -> the padded buffer the windows read (one extra zero row when wide)."""
    if not g.wide:
        return _pad(xp, x4, g)
    N, C = x4.shape[:2]
    buf = xp.zeros((N, C, g.Hp + 1, g.Wp), dtype=x4.dtype)
    buf[:, :, g.pt:g.pt + g.H, g.pl:g.pl + g.W] = x4
    return buf


def _cols(xp: Any, buf: Any, g: _Geom, groups: int) -> Any:
    """im2col: padded buffer (N, C, ...) -> columns (groups, C / groups * kh * kw, N * L)."""
    N, C = buf.shape[:2]
    strided = xp.lib.stride_tricks.as_strided
    if g.wide:  # every kernel tap is one contiguous run of each flattened image
        flat = buf.reshape(N, C, buf.shape[2] * buf.shape[3])
        s0, s1, s2 = flat.strides
        v = strided(flat, (C, g.kh, g.kw, N, g.L), (s1, g.dh * g.Wp * s2, g.dw * s2, s0, s2))
    else:
        s0, s1, s2, s3 = buf.strides
        v = strided(buf, (C, g.kh, g.kw, N, g.OH, g.OW),
                    (s1, g.dh * s2, g.dw * s3, s0, g.sh * s2, g.sw * s3))
    return v.reshape(groups, (C // groups) * g.kh * g.kw, N * g.L)


def _out_from_cols(xp: Any, y: Any, g: _Geom, N: int) -> Any:
    """GEMM result (O, N * L) -> (N, O, OH, OW), dropping the wide layout's extra columns."""
    O = y.shape[0]
    s = y.itemsize
    row = g.Wp if g.wide else g.OW
    v = xp.lib.stride_tricks.as_strided(y, (N, O, g.OH, g.OW), (g.L * s, N * g.L * s, row * s, s))
    return xp.ascontiguousarray(v)


def _grad_to_cols(xp: Any, gy: Any, g: _Geom) -> Any:
    """(N, O, OH, OW) -> (O, N * L), zeros in the wide layout's extra columns."""
    N, O = gy.shape[:2]
    if g.wide:
        buf = xp.zeros((O, N, g.OH, g.Wp), dtype=gy.dtype)
        buf[..., :g.OW] = gy.transpose(1, 0, 2, 3)
        return buf.reshape(O, N * g.L)
    return xp.ascontiguousarray(gy.transpose(1, 0, 2, 3)).reshape(O, N * g.L)


def _col2im(xp: Any, cols: Any, g: _Geom, N: int) -> Any:
    """Columns (C * kh * kw, N * L) -> (N, C, H, W): each tap's values added back where it read
    them (one vectorised add per kernel tap), then the padding cropped."""
    C = cols.shape[0] // (g.kh * g.kw)
    if g.wide:
        c = cols.reshape(C, g.kh, g.kw, N, g.L)
        out = xp.zeros((C, N, (g.Hp + 1) * g.Wp), dtype=cols.dtype)
        for i in range(g.kh):
            for j in range(g.kw):
                o = i * g.dh * g.Wp + j * g.dw
                out[:, :, o:o + g.L] += c[:, i, j]
        out = out.reshape(C, N, g.Hp + 1, g.Wp)
    else:
        c = cols.reshape(C, g.kh, g.kw, N, g.OH, g.OW)
        out = xp.zeros((C, N, g.Hp, g.Wp), dtype=cols.dtype)
        for i in range(g.kh):
            for j in range(g.kw):
                out[g.window(i, j)] += c[:, i, j]
    out = out[:, :, g.pt:g.pt + g.H, g.pl:g.pl + g.W]
    return xp.ascontiguousarray(out.transpose(1, 0, 2, 3))


def _spatial_axes(ndim: int) -> tuple[int, ...]:
    return (0,) + tuple(range(2, ndim))


# =============================================================================================
# convolution: Conv, ConvTranspose (adjoint in x), ConvWeight (adjoint in W)


class Conv(Op):
    """y[n, o] = b[o] + sum_{c, i, j} W[o, c, i, j] * x_pad[n, g(o) c, s*p + d*(i, j)]
    (cross-correlation, grouped; im2col + one GEMM)

    grad_x = conv_transpose(grad, W)          (ConvTranspose)
    grad_W = sum_{n, p} grad[n, o, p] * im2col(x)[n, (c, i, j), p]          (ConvWeight)
    grad_b = sum_{n, p} grad[n, o, p]
    """

    node_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any, b: Any, stride: tuple, pad: Pad2, dil: tuple,
                groups: int, out_hw: tuple | None = None) -> Any:
        xp = _xp(ctx, x)
        x4, w4 = _4d(x), _4d(w)
        N, C, H, W = x4.shape
        O, Cg, kh, kw = w4.shape
        g = _Geom((H, W), (kh, kw), stride, pad, dil, out_hw)
        cols = _cols(xp, _conv_input(xp, x4, g), g, groups)
        y = xp.matmul(w4.reshape(groups, O // groups, Cg * kh * kw), cols)
        # (a bfloat16 matmul returns float32)
        y = _out_from_cols(xp, y.reshape(O, N * g.L).astype(x.dtype, copy=False), g, N)
        if b is not None:
            y += b.reshape(1, O, 1, 1)
        ctx.save_for_backward(x if _need(ctx, 1) else None,
                              w if _need(ctx, 0) else None)
        ctx.args = (stride, pad, dil, groups)
        ctx.in_hw, ctx.k, ctx.nd = (H, W), (kh, kw), x.ndim
        return y if x.ndim == 4 else y.reshape(N, O, g.OW)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, w = ctx.saved
        need = ctx.needs_input_grad
        gx = ctx.call(ConvTranspose, grad, w, None, ctx.in_hw, *ctx.args) if need[0] else None
        gw = ctx.call(ConvWeight, x, grad, ctx.k, *ctx.args) if need[1] else None
        gb = grad.sum(axis=_spatial_axes(ctx.nd)) if need[2] else None
        return gx, gw, gb, None, None, None, None, None


class ConvTranspose(Op):
    """out = Conv_W^T g + b: the adjoint of ``Conv`` in x (columns W^T g, summed back by col2im)

    grad_g = conv(grad, W)          (Conv)
    grad_W = ConvWeight(x=grad, gy=g)          (since <grad, Conv_W^T g> = <Conv_W grad, g>)
    grad_b = sum_{n, p} grad[n, c, p]
    """

    node_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx: Any, gy: Any, w: Any, b: Any, in_hw: tuple, stride: tuple, pad: Pad2,
                dil: tuple, groups: int) -> Any:
        xp = _xp(ctx, gy)
        g4, w4 = _4d(gy), _4d(w)
        N, O, OH, OW = g4.shape
        _, Cg, kh, kw = w4.shape
        C = Cg * groups
        g = _Geom(in_hw, (kh, kw), stride, pad, dil, (OH, OW))
        gt = _grad_to_cols(xp, g4, g).reshape(groups, O // groups, N * g.L)
        wm = w4.reshape(groups, O // groups, Cg * kh * kw).swapaxes(1, 2)
        cols = xp.matmul(wm, gt).astype(gy.dtype, copy=False)
        out = _col2im(xp, cols.reshape(C * kh * kw, N * g.L), g, N)
        if b is not None:
            out += b.reshape(1, C, 1, 1)
        ctx.save_for_backward(gy if _need(ctx, 1) else None,
                              w if _need(ctx, 0) else None)
        ctx.args = (stride, pad, dil, groups)
        ctx.out_hw, ctx.k, ctx.nd = (OH, OW), (kh, kw), gy.ndim
        return out if gy.ndim == 4 else out.reshape(N, C, in_hw[1])

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        gy, w = ctx.saved
        need = ctx.needs_input_grad
        gg = ctx.call(Conv, grad, w, None, *ctx.args, ctx.out_hw) if need[0] else None
        gw = ctx.call(ConvWeight, grad, gy, ctx.k, *ctx.args) if need[1] else None
        gb = grad.sum(axis=_spatial_axes(ctx.nd)) if need[2] else None
        return gg, gw, gb, None, None, None, None, None


class ConvWeight(Op):
    """gW[o, c, i, j] = sum_{n, p} gy[n, o, p] * im2col(x)[n, (c, i, j), p]: Conv's adjoint in W

    grad_x = conv_transpose(gy, grad)          (ConvTranspose with weight = grad)
    grad_gy = conv(x, grad)          (Conv with weight = grad)
    """

    node_name = "ConvolutionBackwardBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, gy: Any, k: tuple, stride: tuple, pad: Pad2, dil: tuple,
                groups: int) -> Any:
        xp = _xp(ctx, x)
        x4, g4 = _4d(x), _4d(gy)
        N, C, H, W = x4.shape
        _, O, OH, OW = g4.shape
        g = _Geom((H, W), k, stride, pad, dil, (OH, OW))
        cols = _cols(xp, _conv_input(xp, x4, g), g, groups)
        gt = _grad_to_cols(xp, g4, g).reshape(groups, O // groups, N * g.L)
        gw = xp.matmul(gt, cols.swapaxes(1, 2)).astype(x.dtype, copy=False)
        ctx.save_for_backward(x if _need(ctx, 1) else None,
                              gy if _need(ctx, 0) else None)
        ctx.args = (stride, pad, dil, groups)
        ctx.in_hw, ctx.out_hw = (H, W), (OH, OW)
        shape = (O, C // groups) + ((k[1],) if x.ndim == 3 else tuple(k))
        return gw.reshape(shape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, gy = ctx.saved
        need = ctx.needs_input_grad
        gx = ctx.call(ConvTranspose, gy, grad, None, ctx.in_hw, *ctx.args) if need[0] else None
        ggy = ctx.call(Conv, x, grad, None, *ctx.args, ctx.out_hw) if need[1] else None
        return gx, ggy, None, None, None, None, None


# =============================================================================================
# pooling ops


class AvgPool(Op):
    """y[n, c, p] = sum_{t in window(p)} x_pad[n, c, t] / divisor[p]

    grad_x = AvgPoolT(grad): each window's grad / divisor added back to every element of it"""

    node_name = "AvgPool2DBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, g: _Geom, div: Any) -> Any:
        xp = _xp(ctx, x)
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
        xp = _xp(ctx, gy)
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


def _rows(shape: tuple, nsp: int) -> tuple[int, int]:
    lead = math.prod(shape[:len(shape) - nsp])
    return lead, math.prod(shape[len(shape) - nsp:])


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
        got = _xp(ctx, x).take_along_axis(x.reshape(rows, n), idx.reshape(rows, m), axis=1)
        return got.reshape(idx.shape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        gx = ctx.call(IndexScatter, grad, ctx.idx, ctx.shape, ctx.nsp, ctx.unique)
        return gx, None, None, None, None


class AdaptiveMaxPoolGather(MaxPoolGather):
    """out[r, p] = x[r, idx[r, p]]          grad_x = scatter-add of grad at idx"""

    node_name = "AdaptiveMaxPool2DBackward0"


class IndexScatter(Op):
    """out = zeros(shape); out[r, idx[r, p]] += g[r, p]

    grad_g[r, p] = grad[r, idx[r, p]]          (MaxPoolGather)"""

    node_name = "MaxPool2DWithIndicesBackwardBackward0"

    @staticmethod
    def forward(ctx: Any, gy: Any, idx: Any, shape: tuple, nsp: int, unique: bool) -> Any:
        xp = _xp(ctx, gy)
        rows, n = _rows(shape, nsp)
        m = _rows(idx.shape, nsp)[1]
        gf = gy.reshape(rows, m)
        idf = idx.reshape(rows, m)
        flat = (idf + (xp.arange(rows) * n)[:, None]).ravel()
        if unique:  # windows don't overlap: every index is hit at most once
            out = xp.zeros(rows * n, dtype=gy.dtype)
            out[flat] = gf.ravel()
        else:
            out = xp.bincount(flat, weights=gf.ravel(), minlength=rows * n)
            out = out.astype(gy.dtype, copy=False)
        ctx.idx, ctx.nsp, ctx.unique = idx, nsp, unique
        return out.reshape(shape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        gg = ctx.call(MaxPoolGather, grad, ctx.idx, ctx.nsp)
        return gg, None, None, None, None


_LUT_TAPS = 12  # windows of up to 12 taps find their argmax through a 2**12 lookup table


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
                base: Any = None) -> tuple[Any, Any]:
    """Max over kernel taps and, when asked, the flat input index of each maximum.

    ``taps`` is a list of (values (N, C, OH, OW), flat index): with ``base`` the index is
    ``base + offset`` for an int offset, else an (OH, OW) array. PyTorch's rule decides: a tap
    wins when greater than the running max or NaN (NaN propagates and reports the last NaN;
    ties keep the first index; a window of only -inf reports ``init``, its first element)."""
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
        idx = xp.asarray(first)[code]
        if has_nan:
            idx = xp.where(nan, xp.asarray(last)[code], idx)
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


def _first_valid(xp: Any, n_out: int, s: int, p: int, d: int, n_in: int) -> Any:
    """Per window, the first input position that is not padding."""
    start = np.arange(n_out) * s - p
    first = np.where(start < 0, start + ((-start + d - 1) // d) * d, start)
    return xp.asarray(np.clip(first, 0, max(n_in - 1, 0)))


# =============================================================================================
# resampling: a separable linear map along the last axes (interpolate, adaptive avg pool)


class _AxisMap:
    """out[k] = sum_t w[k, t] * in[idx[k, t]] along one axis (host arrays; ``w`` None = ones).

    ``block`` > 0 marks out[k] = mean(in[k*block:(k+1)*block]), computed by a reshape."""

    __slots__ = ("idx", "w", "n_in", "block", "_adj", "_dev")

    def __init__(self, idx: np.ndarray, w: np.ndarray | None, n_in: int, block: int = 0) -> None:
        self.idx, self.w, self.n_in, self.block = idx, w, n_in, block
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
            self._adj = _AxisMap(aidx, None if plain else aw, n_out)
            self._adj._adj = self
        return self._adj


def _apply_map(xp: Any, x: Any, m: _AxisMap, axis: int) -> Any:
    ax = x.ndim + axis
    if m.block:
        shape = x.shape[:ax] + (m.n_out, m.block) + x.shape[ax + 1:]
        return x.reshape(shape).sum(axis=ax + 1) / m.block
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
        y = v if y is None else y + v
    return y


class Resample(Op):
    """out = A_H x A_W^T: fixed linear maps along the last axes (one map per axis, or None)

    grad_x = A_H^T grad A_W          (Resample with the adjoint maps)"""

    node_name = "UpsampleBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, maps: tuple) -> Any:
        xp = _xp(ctx, x)
        ctx.maps = maps
        y = x
        n = len(maps)
        for k in range(n - 1, -1, -1):  # the last axis first, as PyTorch's kernels do
            if maps[k] is not None:
                y = _apply_map(xp, y, maps[k], k - n)
        return y.copy() if y is x else y

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        adj = tuple(None if m is None else m.adjoint() for m in ctx.maps)
        return ctx.call(Resample, grad, adj), None


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


# =============================================================================================
# pixel shuffle


class PixelShuffle(Op):
    """out[.., c, h*r + i, w*r + j] = x[.., c*r*r + i*r + j, h, w]

    grad_x = pixel_unshuffle(grad, r)"""

    node_name = "PixelShuffleBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, r: int) -> Any:
        *lead, C, H, W = x.shape
        y = x.reshape(*lead, C // (r * r), r, r, H, W)
        n = len(lead)
        y = y.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
        ctx.r = r
        return y.reshape(*lead, C // (r * r), H * r, W * r)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(PixelUnshuffle, grad, ctx.r), None


class PixelUnshuffle(Op):
    """out[.., c*r*r + i*r + j, h, w] = x[.., c, h*r + i, w*r + j]

    grad_x = pixel_shuffle(grad, r)"""

    node_name = "PixelUnshuffleBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, r: int) -> Any:
        *lead, C, H, W = x.shape
        y = x.reshape(*lead, C, H // r, r, W // r, r)
        n = len(lead)
        y = y.transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3)
        ctx.r = r
        return y.reshape(*lead, C * r * r, H // r, W // r)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(PixelShuffle, grad, ctx.r), None


# =============================================================================================
# fold / unfold


class Im2col(Op):
    """out[n, (c, i, j), p] = x_pad[n, c, s*p + d*(i, j)]          grad_x = col2im(grad)"""

    node_name = "Im2ColBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, g: _Geom) -> Any:
        N, C = x.shape[:2]
        ctx.geom = g
        xp = _xp(ctx, x)
        return _unfold_cols(xp, _pad(xp, x, g), g)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(Col2im, grad, ctx.geom), None


class Col2im(Op):
    """out[n, c, t] = sum over (window p, tap (i, j)) landing on t of cols[n, (c, i, j), p]

    grad_cols = im2col(grad)"""

    node_name = "Col2ImBackward0"

    @staticmethod
    def forward(ctx: Any, cols: Any, g: _Geom) -> Any:
        xp = _xp(ctx, cols)
        ctx.geom = g
        return _crop(xp, _fold_cols(xp, cols, g), g)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(Im2col, grad, ctx.geom), None


# =============================================================================================
# argument checks shared by the public functions

def _reshape(t: Any, shape: tuple) -> Any:
    from .shape import reshape

    return reshape(t, shape)


def _check_tensor(x: Any, fn: str, what: str = "input") -> None:
    if not (hasattr(x, "_data") and hasattr(x, "grad_fn")):
        raise TypeError(f"{fn}(): argument '{what}' must be Tensor, not {type(x).__name__}")


def _ints(v: Any, n: int, name: str, fn: str, conv_msg: bool = True) -> tuple[int, ...]:
    """An int or a sequence of ints as an n-tuple, as PyTorch accepts them."""
    if isinstance(v, bool | float) or v is None:
        raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, not "
                        f"{type(v).__name__}")
    try:
        return (operator.index(v),) * n
    except TypeError:
        pass
    try:
        vals = tuple(operator.index(e) for e in v)
    except TypeError:
        raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, but got "
                        f"{v!r}") from None
    if len(vals) == 1:
        return vals * n
    if len(vals) != n:
        if conv_msg:
            raise RuntimeError(
                f"expected {name} to be a single integer value or a list of {n} values to "
                f"match the convolution dimensions, but got {name}={list(vals)}")
        raise RuntimeError(f"{fn}: {name} must either be a single int, or a tuple of {n} ints, "
                           f"but got {name}={list(vals)}")
    return vals


_LEGACY = {"float32": "float", "float64": "double", "float16": "c10::Half",
           "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int"}


def _tname(t: Any) -> str:
    s = str(t._data.dtype)
    return _LEGACY.get(s, s)


def _same_dtype(fn: str, x: Any, other: Any, what: str) -> None:
    if x._data.dtype != other._data.dtype:
        raise RuntimeError(
            f"Input type ({_tname(x)}) and {what} type ({_tname(other)}) should be the same "
            f"({fn}: input is {x.dtype}, {what} is {other.dtype}); convert one of them, e.g. "
            f"input.to({other.dtype}) or module.to({x.dtype})")


_LAYOUT = {1: "L", 2: "H x W", 3: "D x H x W"}


def _to2(v: tuple, fill: int) -> tuple:
    return (fill,) + v if len(v) == 1 else v


def _unbatch(x: Any, batched_ndim: int) -> tuple[Any, bool]:
    if x._data.ndim == batched_ndim - 1:
        return _reshape(x, (1,) + tuple(x._data.shape)), True
    return x, False


def _rebatch(y: Any, unbatched: bool) -> Any:
    return _reshape(y, tuple(y._data.shape[1:])) if unbatched else y


# =============================================================================================
# convolution: public functions


def _conv(fn: str, nd: int, input: Any, weight: Any, bias: Any, stride: Any, padding: Any,
          dilation: Any, groups: int) -> Any:
    _check_tensor(input, fn)
    _check_tensor(weight, fn, "weight")
    x, w = input._data, weight._data
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {fn}, "
                           f"but got input of size: {list(x.shape)}")
    if w.ndim != nd + 2:
        dims = {1: "kL", 2: "kH, kW", 3: "kT, kH, kW"}[nd]
        raise RuntimeError(
            f"{fn}: expected a {nd + 2}-D weight (out_channels, in_channels / groups, {dims}), "
            f"but got weight of size {list(w.shape)}")
    stride = _ints(stride, nd, "stride", fn)
    dilation = _ints(dilation, nd, "dilation", fn)
    groups = operator.index(groups)
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    input, unbatched = _unbatch(input, nd + 2)  # noqa: A001
    x = input._data
    O, Cg, ks = w.shape[0], w.shape[1], w.shape[2:]
    if O % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(w.shape)} instead")
    if x.shape[1] != Cg * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(w.shape)}, expected input"
            f"{list(x.shape)} to have {Cg * groups} channels, but got {x.shape[1]} channels "
            f"instead. The layer's in_channels (weight.size(1) * groups = {Cg * groups}) must "
            f"equal the input's dim 1 ({x.shape[1]}): fix in_channels or the input's layout "
            f"(ember expects channels first, N x C x {_LAYOUT[nd]})")
    _same_dtype(fn, input, weight, "weight")
    if bias is not None:
        _check_tensor(bias, fn, "bias")
        if bias._data.ndim != 1 or bias._data.shape[0] != O:
            raise RuntimeError(
                f"Given weight of size {list(w.shape)}, expected bias to be 1-dimensional with "
                f"{O} elements, but got bias of size {list(bias._data.shape)} instead")
        _same_dtype(fn, input, bias, "bias")
    if isinstance(padding, str):
        if padding == "valid":
            pads = tuple((0, 0) for _ in range(nd))
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                         for d, k in zip(dilation, ks))
        else:
            raise RuntimeError(f"Invalid padding string: {padding!r} (expected 'same' or "
                               "'valid', or an int / tuple of ints)")
    else:
        p = _ints(padding, nd, "padding", fn)
        if any(v < 0 for v in p):
            raise RuntimeError("negative padding is not supported")
        pads = tuple((v, v) for v in p)
    padded = [s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads)]
    eff = [d * (k - 1) + 1 for d, k in zip(dilation, ks)]
    if any(p < k for p, k in zip(padded, eff)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than "
            f"actual input size (input of size {list(x.shape)}); use a smaller kernel, more "
            "padding or a larger input")
    if nd == 3:
        return _rebatch(_conv3d(input, weight, bias, stride, pads, dilation, groups), unbatched)
    pad2 = ((0, 0),) + pads if nd == 1 else pads
    out = Conv.apply(input, weight, bias, _to2(stride, 1), pad2, _to2(dilation, 1), groups)
    return _rebatch(out, unbatched)


def conv1d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Any:
    """1-D convolution (cross-correlation) over an (N, C_in, L) or (C_in, L) input."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Any:
    """2-D convolution (cross-correlation) over an (N, C_in, H, W) or (C_in, H, W) input.

    ``weight`` is (C_out, C_in / groups, kH, kW); ``padding`` an int, a pair, 'valid' or 'same'
    (stride 1 only; an even kernel pads one more at the end, as PyTorch does).

    Example::

        >>> y = F.conv2d(torch.randn(8, 3, 32, 32), torch.randn(16, 3, 3, 3), padding=1)
        >>> y.shape
        torch.Size([8, 16, 32, 32])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(fn: str, nd: int, input: Any, weight: Any, bias: Any, stride: Any,
                    padding: Any, output_padding: Any, groups: int, dilation: Any) -> Any:
    _check_tensor(input, fn)
    _check_tensor(weight, fn, "weight")
    x, w = input._data, weight._data
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {fn}, "
                           f"but got input of size: {list(x.shape)}")
    if w.ndim != nd + 2:
        dims = {1: "kL", 2: "kH, kW", 3: "kT, kH, kW"}[nd]
        raise RuntimeError(
            f"{fn}: expected a {nd + 2}-D weight (in_channels, out_channels / groups, {dims}), "
            f"but got weight of size {list(w.shape)}")
    stride = _ints(stride, nd, "stride", fn)
    padding = _ints(padding, nd, "padding", fn)
    output_padding = _ints(output_padding, nd, "output_padding", fn)
    dilation = _ints(dilation, nd, "dilation", fn)
    groups = operator.index(groups)
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    s2, p2, o2, d2 = (_to2(v, f) for v, f in ((stride, 1), (padding, 0), (output_padding, 0),
                                               (dilation, 1)))
    if any(op >= s and op >= d for op, s, d in zip(o2, s2, d2)) or any(op < 0 for op in o2):
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got "
            f"output_padding: {list(o2)}, stride: {list(s2)}, dilation: {list(d2)}")
    input, unbatched = _unbatch(input, nd + 2)  # noqa: A001
    x = input._data
    Cin, Cg, ks = w.shape[0], w.shape[1], w.shape[2:]
    if Cin % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(w.shape)} instead")
    if x.shape[1] != Cin:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(w.shape)}, expected input{list(x.shape)} "
            f"to have {Cin} channels, but got {x.shape[1]} channels instead. The layer's "
            f"in_channels (weight.size(0) = {Cin}) must equal the input's dim 1 ({x.shape[1]})")
    _same_dtype(fn, input, weight, "weight")
    C = Cg * groups
    if bias is not None:
        _check_tensor(bias, fn, "bias")
        if bias._data.ndim != 1 or bias._data.shape[0] != C:
            raise RuntimeError(
                f"Given transposed=1, weight of size {list(w.shape)}, expected bias to be "
                f"1-dimensional with {C} elements, but got bias of size "
                f"{list(bias._data.shape)} instead")
        _same_dtype(fn, input, bias, "bias")
    sizes = x.shape[2:]
    out = [(n - 1) * s - 2 * p + d * (k - 1) + op + 1
           for n, s, p, d, k, op in zip(sizes, stride, padding, dilation, ks, output_padding)]
    if any(o < 1 for o in out):
        raise RuntimeError(
            f"Given input size per channel: ({' x '.join(map(str, sizes))}). Calculated output "
            f"size per channel: ({' x '.join(map(str, out))}). Output size is too small")
    if nd == 3:
        y = _conv_transpose3d(input, weight, bias, tuple(out), stride, padding, output_padding,
                              dilation, groups)
        return _rebatch(y, unbatched)
    out_hw = _to2(tuple(out), 1)
    pad2 = ((p2[0], p2[0]), (p2[1], p2[1]))
    y = ConvTranspose.apply(input, weight, bias, out_hw, s2, pad2, d2, groups)
    return _rebatch(y, unbatched)


def conv_transpose1d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Any:
    """1-D transposed convolution; ``weight`` is (C_in, C_out / groups, kL)."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Any:
    """2-D transposed convolution (the gradient of conv2d with respect to its input).

    ``weight`` is (C_in, C_out / groups, kH, kW); the output size per dim is
    ``(in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


# =============================================================================================
# pooling: public functions


def _pool_out(n: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool_args(fn: str, nd: int, input: Any, kernel_size: Any, stride: Any, padding: Any,
               dilation: Any, ceil_mode: bool) -> tuple:
    """Check a pooling call; returns (input (batched), unbatched, geometry)."""
    _check_tensor(input, fn)
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


def _max_pool(fn: str, nd: int, input: Any, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool, return_indices: bool) -> Any:
    input, unbatched, g = _pool_args(  # noqa: A001
        fn, nd, input, kernel_size, stride, padding, dilation, ceil_mode)
    x = input._data
    xp = _backend.xp_of(x)
    x4 = _4d(x)
    need_grad = grad_mode.state.enabled and input.requires_grad
    need_idx = return_indices or need_grad
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
    y, idx = _max_search(xp, taps, shape, init, x.dtype, need_idx, base)
    if nd == 1:
        y = y.reshape(shape[:2] + (g.OW,))
        idx = None if idx is None else idx.reshape(y.shape)
    T = TensorBase
    if need_grad:
        unique = g.sh >= g.dh * (g.kh - 1) + 1 and g.sw >= g.dw * (g.kw - 1) + 1
        out = MaxPoolGather.apply(input, idx, nd, y, unique)
    else:
        out = T._make(y)
    out = _rebatch(out, unbatched)
    if return_indices:
        return out, _rebatch(T._make(idx), unbatched)
    return out


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
                            return_indices: bool = True) -> Any:
    """``max_pool1d`` returning (values, indices)."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = True) -> Any:
    """``max_pool2d`` returning (values, indices)."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


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


def avg_pool1d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Any:
    """1-D average pooling over an (N, C, L) or (C, L) input."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Any:
    """2-D average pooling over an (N, C, H, W) or (C, H, W) input.

    Each window's sum is divided by its size including zero padding (``count_include_pad``)
    or counting only input elements, or by ``divisor_override``."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _adaptive_args(fn: str, nd: int, input: Any, output_size: Any) -> tuple[Any, tuple]:
    _check_tensor(input, fn)
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
    sizes = input._data.shape[-nd:]
    maps = tuple(None if o == n else _adaptive_avg_map(n, o) for n, o in zip(sizes, out))
    return AdaptiveAvgPool.apply(input, maps)


def adaptive_avg_pool1d(input: Any, output_size: Any) -> Any:
    """1-D adaptive average pooling: window o covers [floor(o L / out), ceil((o+1) L / out))."""
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input: Any, output_size: Any) -> Any:
    """2-D adaptive average pooling to ``output_size`` (an int, or (H, W) with None = keep)."""
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


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


def adaptive_max_pool1d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    """1-D adaptive max pooling (optionally with the indices of the maxima)."""
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    """2-D adaptive max pooling (optionally with the flat indices h * W + w of the maxima)."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input: Any, output_size: Any,
                                     return_indices: bool = True) -> Any:
    """``adaptive_max_pool1d`` returning (values, indices)."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Any, output_size: Any,
                                     return_indices: bool = True) -> Any:
    """``adaptive_max_pool2d`` returning (values, indices)."""
    return adaptive_max_pool2d(input, output_size, True)


# =============================================================================================
# interpolate


_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")


@functools.lru_cache(maxsize=256)  # maps are reused step after step
def _nearest_map(n_in: int, n_out: int, scale: float | None, exact: bool) -> _AxisMap:
    """PyTorch's source index, computed in float32 as its kernels do."""
    o = np.arange(n_out)
    if not exact and n_out == n_in:
        src = o
    elif not exact and n_out == 2 * n_in:
        src = o >> 1
    else:
        f32 = np.float32
        sc = f32(1.0 / scale) if scale is not None and scale > 0 else f32(n_in) / f32(n_out)
        pos = (o.astype(f32) + f32(0.5)) * sc if exact else o.astype(f32) * sc
        src = np.minimum(np.floor(pos).astype(np.int64), n_in - 1)
    return _AxisMap(src[:, None], None, n_in)


@functools.lru_cache(maxsize=256)  # maps are reused step after step
def _linear_map(n_in: int, n_out: int, scale: float | None, align: bool, dtype: Any) -> _AxisMap:
    """Two taps per output (PyTorch's source index and lambdas, in the input's precision)."""
    ft = np.dtype(dtype).type
    o = np.arange(n_out).astype(dtype)
    if align:
        sc = ft(n_in - 1) / ft(n_out - 1) if n_out > 1 else ft(0)
        src = sc * o
    else:
        sc = ft(1.0 / scale) if scale is not None and scale > 0 else ft(n_in) / ft(n_out)
        src = np.maximum(sc * (o + ft(0.5)) - ft(0.5), ft(0))
    i0 = np.minimum(src.astype(np.int64), n_in - 1)
    i1 = i0 + (i0 < n_in - 1)
    l1 = np.clip(src - i0.astype(dtype), 0, 1).astype(dtype)
    l0 = (ft(1) - l1).astype(dtype)
    return _AxisMap(np.stack([i0, i1], axis=1), np.stack([l0, l1], axis=1), n_in)


def interpolate(input: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Any:
    """Resize the spatial dims of an (N, C, L) or (N, C, H, W) input.

    Modes: 'nearest', 'nearest-exact', 'linear' (3-D), 'bilinear' (4-D; ``align_corners``),
    'area' (adaptive average pooling). Give either ``size`` or ``scale_factor``."""
    _check_tensor(input, "interpolate")
    x = input._data
    nsp = x.ndim - 2
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if mode not in _MODES:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for the "
            "modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by ember")
    if x.ndim not in (3, 4):
        if x.ndim == 5:
            raise NotImplementedError(f"interpolate: 5-D (volumetric) input is not supported by "
                                      f"ember yet (got input of size {list(x.shape)}, "
                                      f"mode {mode!r})")
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for the "
            "modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")
    need = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}.get(mode)
    if need is not None and x.ndim != need:
        raise NotImplementedError(f"Got {x.ndim}D input, but {mode} mode needs {need}D input")
    if mode == "bicubic":
        raise NotImplementedError("interpolate: mode 'bicubic' is not supported by ember yet; "
                                  "use 'bilinear'")
    sizes = x.shape[2:]
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    scales: tuple | None = None
    if size is not None:
        out = (size,) * nsp if isinstance(size, int) else tuple(size)
        if len(out) != nsp:
            raise ValueError(
                f"Input and output must have the same number of spatial dimensions, but got "
                f"input with spatial dimensions of {list(sizes)} and output size of {size}. "
                "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size "
                "in (o1, o2, ...,oK) format.")
        out = tuple(operator.index(o) for o in out)
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    elif scale_factor is not None:
        sf = (scale_factor,) * nsp if isinstance(scale_factor, int | float) else \
            tuple(scale_factor)
        if len(sf) != nsp:
            raise ValueError(
                f"Input and scale_factor must have the same number of spatial dimensions, but "
                f"got input with spatial dimensions of {list(sizes)} and scale_factor of shape "
                f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                "and scale_factor in (s1, s2, ...,sK) format.")
        out = tuple(int(math.floor(float(n) * float(f))) for n, f in zip(sizes, sf))
        if not (recompute_scale_factor or mode == "area"):
            scales = tuple(float(f) for f in sf)
    else:
        raise ValueError("either size or scale_factor should be defined")
    if any(o <= 0 for o in out) or any(n <= 0 for n in sizes):
        names = ("W",) if nsp == 1 else ("H", "W")
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input "
            f"({', '.join(f'{a}: {n}' for a, n in zip(names, sizes))}) output "
            f"({', '.join(f'{a}: {n}' for a, n in zip(names, out))})")
    if mode == "area":
        return (adaptive_avg_pool1d if nsp == 1 else adaptive_avg_pool2d)(input, out)
    sc = scales or (None,) * nsp
    if mode in ("nearest", "nearest-exact"):
        maps = tuple(_nearest_map(n, o, s, mode == "nearest-exact")
                     for n, o, s in zip(sizes, out, sc))
    else:
        if x.dtype.kind not in "fV":
            raise RuntimeError(f'"upsample_{mode}" not implemented for \'{_tname(input)}\' '
                               f"(input dtype {input.dtype}); convert it first, e.g. x.float()")
        maps = tuple(None if (n == o and not align_corners and s in (None, 1.0)) else
                     _linear_map(n, o, s, bool(align_corners), np.dtype(x.dtype))
                     for n, o, s in zip(sizes, out, sc))
    return Resample.apply(input, maps)


def upsample(input: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Any:
    """Deprecated alias of ``interpolate``."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Any, size: Any = None, scale_factor: Any = None) -> Any:
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Any, size: Any = None, scale_factor: Any = None) -> Any:
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# =============================================================================================
# fold / unfold / pixel shuffle: public functions


def _fold_geom(fn: str, hw: tuple, kernel_size: Any, dilation: Any, padding: Any,
               stride: Any) -> tuple[_Geom, tuple]:
    k = _ints(kernel_size, 2, "kernel_size", fn, conv_msg=False)
    d = _ints(dilation, 2, "dilation", fn, conv_msg=False)
    p = _ints(padding, 2, "padding", fn, conv_msg=False)
    s = _ints(stride, 2, "stride", fn, conv_msg=False)
    if any(v <= 0 for v in k) or any(v <= 0 for v in d) or any(v <= 0 for v in s) or \
            any(v < 0 for v in p):
        raise RuntimeError(f"{fn}: kernel_size, dilation and stride must be greater than zero "
                           f"and padding non-negative, but got kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}")
    g = _Geom(hw, k, s, ((p[0], p[0]), (p[1], p[1])), d, wide=False)
    return g, (k, d, p, s)


def unfold(input: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
           stride: Any = 1) -> Any:
    """im2col: sliding blocks of an (N, C, H, W) input as columns (N, C * kH * kW, L)."""
    _check_tensor(input, "unfold")
    x = input._data
    if x.ndim not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported by unfold "
                           f"(got {x.ndim}D, size {list(x.shape)})")
    input, unbatched = _unbatch(input, 4)  # noqa: A001
    g, (k, d, p, s) = _fold_geom("unfold", input._data.shape[2:], kernel_size, dilation,
                                 padding, stride)
    if g.OH < 1 or g.OW < 1:
        raise RuntimeError(
            f"Given input with spatial size {tuple(input._data.shape[2:])}, kernel_size={k}, "
            f"dilation={d}, padding={p}, calculated shape of the array of sliding blocks as "
            f"({g.OH}, {g.OW}), but its components must be at least one.")
    return _rebatch(Im2col.apply(input, g), unbatched)


def fold(input: Any, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Any:
    """col2im: sum columns (N, C * kH * kW, L) back into an (N, C, H, W) output."""
    _check_tensor(input, "fold")
    x = input._data
    if x.ndim not in (2, 3):
        raise RuntimeError(
            f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
            f"non-zero dimensions for input, but got: {list(x.shape)}")
    hw = _ints(output_size, 2, "output_size", "fold", conv_msg=False)
    input, unbatched = _unbatch(input, 3)  # noqa: A001
    g, (k, d, p, s) = _fold_geom("fold", hw, kernel_size, dilation, padding, stride)
    CK, L = input._data.shape[1:]
    if CK % (k[0] * k[1]):
        raise RuntimeError(
            f"Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={CK} and kernel_size={k}.")
    if g.OH < 1 or g.OW < 1 or g.OH * g.OW != L:
        raise RuntimeError(
            f"Given output_size={hw}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, "
            f"expected size of input's dimension 2 to match the calculated number of sliding "
            f"blocks {g.OH} * {g.OW} = {g.OH * g.OW}, but got input.size(2)={L}.")
    return _rebatch(Col2im.apply(input, g), unbatched)


def pixel_shuffle(input: Any, upscale_factor: int) -> Any:
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r)."""
    _check_tensor(input, "pixel_shuffle")
    r = operator.index(upscale_factor)
    x = input._data
    if x.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {x.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    if x.shape[-3] % (r * r):
        raise RuntimeError(
            f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
            f"square of upscale_factor, but input.size(-3)={x.shape[-3]} is not divisible by "
            f"{r * r}")
    return PixelShuffle.apply(input, r)


def pixel_unshuffle(input: Any, downscale_factor: int) -> Any:
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W)."""
    _check_tensor(input, "pixel_unshuffle")
    r = operator.index(downscale_factor)
    x = input._data
    if x.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {x.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    for name, ax in (("height", -2), ("width", -1)):
        if x.shape[ax] % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                f"input.size({ax})={x.shape[ax]} is not divisible by {r}")
    return PixelUnshuffle.apply(input, r)


# =============================================================================================
# 3-D convolution and pooling: composites of the 2-D ops (depth taps folded into channels or
# batch), so their gradients (and double backward) come from the 2-D ops' rules.


def _creation_zeros_like(t: Any) -> Any:
    from .creation import zeros_like

    return zeros_like(t)


def _tops() -> Any:
    """The tensor-level helpers the 3-D composites use (imported late: import order)."""
    from . import activation, joining

    return activation.pad, joining.stack


def _depth_taps(x: Any, k: int, s: int, d: int, n_out: int) -> list:
    """The ``k`` strided depth slices (N, C, n_out, H, W) that kernel tap i reads."""
    return [x[:, :, i * d: i * d + s * (n_out - 1) + 1: s] for i in range(k)]


def _conv3d(x: Any, w: Any, bias: Any, stride: tuple, pads: tuple, dil: tuple,
            groups: int) -> Any:
    """y[n, o, t] = sum_i conv2d(x_pad[n, :, t*sD + i*dD], w[:, :, i]) (+ bias), computed as
    ONE conv2d: the kT depth taps become extra input channels (group-major, as conv2d's groups
    need) and the output depths become batch rows."""
    pad, stack = _tops()
    flat = tuple(v for lo_hi in reversed(pads) for v in lo_hi)
    if any(flat):
        x = pad(x, flat)
    N, C, Dp, Hp, Wp = x.shape
    O, Cg, kT = w.shape[0], w.shape[1], w.shape[2]
    OD = (Dp - dil[0] * (kT - 1) - 1) // stride[0] + 1
    taps = stack(_depth_taps(x, kT, stride[0], dil[0], OD), 2)  # (N, C, kT, OD, Hp, Wp)
    taps = taps.reshape(N, groups, Cg, kT, OD, Hp, Wp).permute(0, 4, 1, 3, 2, 5, 6)
    taps = taps.reshape(N * OD, groups * kT * Cg, Hp, Wp)
    w2 = w.permute(0, 2, 1, 3, 4).reshape(O, kT * Cg, w.shape[3], w.shape[4])
    y = conv2d(taps, w2, None, stride[1:], 0, dil[1:], groups)  # (N*OD, O, OH, OW)
    y = y.reshape(N, OD, O, y.shape[2], y.shape[3]).permute(0, 2, 1, 3, 4)
    if bias is not None:
        y = y + bias.reshape(1, O, 1, 1, 1)
    return y


def _conv_transpose3d(x: Any, w: Any, bias: Any, out: tuple, stride: tuple, padding: tuple,
                      output_padding: tuple, dil: tuple, groups: int) -> Any:
    """The adjoint of conv3d: one conv_transpose2d per input depth slice with every depth tap
    as extra output channels, then each tap's planes land at depth t*sD + i*dD - pD."""
    pad, stack = _tops()
    N, Cin, D, H, W = x.shape
    Cog, kT = w.shape[1], w.shape[2]
    # (Cin, Cog, kT, kH, kW) -> (Cin, kT * Cog, kH, kW), tap-major inside each group
    w2 = w.permute(0, 2, 1, 3, 4).reshape(Cin, kT * Cog, w.shape[3], w.shape[4])
    x2 = x.permute(0, 2, 1, 3, 4).reshape(N * D, Cin, H, W)
    z = conv_transpose2d(x2, w2, None, stride[1:], padding[1:], output_padding[1:], groups,
                         dil[1:])
    OH, OW = z.shape[2], z.shape[3]
    z = z.reshape(N, D, groups, kT, Cog, OH, OW)
    sD, dD, pD = stride[0], dil[0], padding[0]
    span = (D - 1) * sD + 1
    full = (D - 1) * sD + dD * (kT - 1) + 1
    total = None
    for i in range(kT):
        zi = z[:, :, :, i].reshape(N, D, groups * Cog, OH, OW).permute(0, 2, 1, 3, 4)
        if sD > 1:  # put the slices sD apart: interleave zeros along depth
            zeros = _creation_zeros_like(zi)
            zi = stack([zi] + [zeros] * (sD - 1), 3).reshape(N, groups * Cog, D * sD, OH, OW)
            zi = zi[:, :, :span]
        zi = pad(zi, (0, 0, 0, 0, i * dD, full - span - i * dD))
        total = zi if total is None else total + zi
    extra = pD + out[0] - full
    if extra > 0:
        total = pad(total, (0, 0, 0, 0, 0, extra))
    y = total[:, :, pD: pD + out[0]]
    if bias is not None:
        y = y + bias.reshape(1, -1, 1, 1, 1)
    return y


def conv3d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Any:
    """3-D convolution (cross-correlation) over an (N, C_in, D, H, W) or (C_in, D, H, W) input.

    ``weight`` is (C_out, C_in / groups, kT, kH, kW); ``padding`` an int, a triple, 'valid' or
    'same'. Runs as a single 2-D convolution over the depth taps."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose3d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Any:
    """3-D transposed convolution; ``weight`` is (C_in, C_out / groups, kT, kH, kW) and each
    output size is ``(in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.
    """
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def _pool3d_args(fn: str, input: Any, kernel_size: Any, stride: Any, padding: Any,
                 dilation: Any, ceil_mode: bool) -> tuple:
    """Checks of a 3-D pooling call; returns (batched input, unbatched, k, s, p, d, OD, pad_hi)."""
    _check_tensor(input, fn)
    x = input._data
    if x.ndim not in (4, 5):
        raise RuntimeError(f"{fn}: Expected 4D or 5D (batch mode) tensor with optional 0 dim "
                           f"batch size for input, but got:{list(x.shape)}")
    k = _ints(kernel_size, 3, "kernel_size", fn, conv_msg=False)
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _ints(stride, 3, "stride", fn, conv_msg=False)
    p = _ints(padding, 3, "padding", fn, conv_msg=False)
    d = _ints(dilation, 3, "dilation", fn, conv_msg=False)
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
    input, unbatched = _unbatch(input, 5)  # noqa: A001
    sizes = input._data.shape[2:]
    out = [_pool_out(n, kk, ss, pp, dd, ceil_mode) for n, kk, ss, pp, dd in
           zip(sizes, k, s, p, d)]
    if any(o <= 0 for o in out):
        shown = "x".join(map(str, (input._data.shape[1],) + tuple(sizes)))
        got = "x".join(map(str, (input._data.shape[1],) + tuple(out)))
        raise RuntimeError(f"Given input size: ({shown}). Calculated output size: ({got}). "
                           f"Output size is too small ({fn} with kernel_size={list(k)}, "
                           f"stride={list(s)}, padding={list(p)}, dilation={list(d)})")
    need = (out[0] - 1) * s[0] + d[0] * (k[0] - 1) + 1
    pad_hi = max(p[0], need - sizes[0] - p[0])
    return input, unbatched, k, s, p, d, out[0], pad_hi


def _depth_stack(x: Any, k: tuple, s: tuple, d: tuple, p: tuple, OD: int, pad_hi: int,
                 value: float) -> Any:
    """The depth taps of the depth-padded input as 2-D images: (kT * N, C * OD, H, W)."""
    pad, stack = _tops()
    if p[0] or pad_hi:
        x = pad(x, (0, 0, 0, 0, p[0], pad_hi), value=value)
    N, C, _, H, W = x.shape
    taps = stack(_depth_taps(x, k[0], s[0], d[0], OD), 0)  # (kT, N, C, OD, H, W)
    return taps.reshape(k[0] * N, C * OD, H, W)


def max_pool3d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """3-D max pooling over an (N, C, D, H, W) or (C, D, H, W) input.

    ``stride`` defaults to ``kernel_size``; padding is -inf. With ``return_indices`` also
    returns each maximum's flat index ``(d * H + h) * W + w`` in its volume (ties keep the
    first), as PyTorch does."""
    input, unbatched, k, s, p, d, OD, pad_hi = _pool3d_args(  # noqa: A001
        "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode)
    N, C, D, H, W = input.shape
    if input._data.dtype.kind not in "fV":
        raise RuntimeError(f'"max_pool3d" not implemented for \'{_tname(input)}\' (input '
                           f"dtype {input.dtype}); convert it first, e.g. x.float()")
    taps = _depth_stack(input, k, s, d, p, OD, pad_hi, -math.inf)
    y, idx = max_pool2d(taps, k[1:], s[1:], p[1:], d[1:], ceil_mode, True)
    OH, OW = y.shape[2], y.shape[3]
    y = y.reshape(k[0], N, C, OD, OH, OW)
    vals, tap = y.max(0)
    if not return_indices:
        return _rebatch(vals, unbatched)
    with _no_grad():
        T = TensorBase
        xp = _backend.xp_of(vals._data)
        idx2 = idx._data.reshape(k[0], N, C, OD, OH, OW)
        t = tap._data
        hw = xp.take_along_axis(idx2, t[None], 0)[0]
        depth = xp.arange(OD).reshape(1, 1, OD, 1, 1) * s[0] - p[0] + t * d[0]
        ind = T._make((depth * (H * W) + hw).astype(np.int64))
    return _rebatch(vals, unbatched), _rebatch(ind, unbatched)


def _no_grad() -> Any:
    from ..autograd.grad_mode import no_grad

    return no_grad()


def max_pool3d_with_indices(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = True) -> Any:
    """``max_pool3d`` returning (values, indices)."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Any:
    """3-D average pooling over an (N, C, D, H, W) or (C, D, H, W) input (divisor rules as
    ``avg_pool2d``: zero padding counted with ``count_include_pad``, or ``divisor_override``)."""
    input, unbatched, k, s, p, d, OD, pad_hi = _pool3d_args(  # noqa: A001
        "avg_pool3d", input, kernel_size, stride, padding, 1, ceil_mode)
    if input._data.dtype.kind not in "fV":
        raise RuntimeError(f'"avg_pool3d" not implemented for \'{_tname(input)}\' (input '
                           f"dtype {input.dtype}); convert it first, e.g. x.float()")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    N, C, D, H, W = input.shape
    taps = _depth_stack(input, k, s, d, p, OD, pad_hi, 0.0)
    sums = avg_pool2d(taps, k[1:], s[1:], p[1:], ceil_mode, True, 1)
    OH, OW = sums.shape[2], sums.shape[3]
    total = sums.reshape(k[0], N, C, OD, OH, OW).sum(0)
    if divisor_override is not None:
        y = total / divisor_override
    else:
        parts = [_avg_divisor(n, kk, ss, pp, oo, count_include_pad)
                 for n, kk, ss, pp, oo in zip((D, H, W), k, s, p, (OD, OH, OW))]
        div = np.einsum("i,j,k->ijk", *parts).astype(input._data.dtype)
        xp = _backend.xp_of(input._data)
        y = total / TensorBase._make(xp.asarray(div))
    return _rebatch(y, unbatched)


def adaptive_avg_pool3d(input: Any, output_size: Any) -> Any:
    """3-D adaptive average pooling to ``output_size`` (an int, or (D, H, W) with None = keep)."""
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def adaptive_max_pool3d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    """3-D adaptive max pooling: the maximum over each window, window o of an axis covering
    [floor(o n / out), ceil((o + 1) n / out))."""
    input, out = _adaptive_args("adaptive_max_pool3d", 3, input, output_size)  # noqa: A001
    input, unbatched = _unbatch(input, 5)  # noqa: A001
    N, C, D, H, W = input.shape
    OD = out[0]
    sd, ed = _adaptive_windows(D, OD)
    pieces, inds = [], []
    for o in range(OD):
        part = input[:, :, int(sd[o]): int(ed[o])]
        depth = part.shape[2]
        y, idx = adaptive_max_pool2d(part.reshape(N, C * depth, H, W), out[1:], True)
        y = y.reshape(N, C, depth, out[1], out[2])
        vals, tap = y.max(2)
        pieces.append(vals)
        if return_indices:
            xp = _backend.xp_of(vals._data)
            i2 = idx._data.reshape(N, C, depth, out[1], out[2])
            hw = xp.take_along_axis(i2, tap._data[:, :, None], 2)[:, :, 0]
            inds.append((int(sd[o]) + tap._data) * (H * W) + hw)
    _, stack = _tops()
    if not pieces:
        raise RuntimeError("adaptive_max_pool3d: output_size must be positive")
    vals = stack(pieces, 2)
    if not return_indices:
        return _rebatch(vals, unbatched)
    xp = _backend.xp_of(vals._data)
    ind = TensorBase._make(xp.stack(inds, 2).astype(np.int64))
    return _rebatch(vals, unbatched), _rebatch(ind, unbatched)


def adaptive_max_pool3d_with_indices(input: Any, output_size: Any,
                                     return_indices: bool = True) -> Any:
    """``adaptive_max_pool3d`` returning (values, indices)."""
    return adaptive_max_pool3d(input, output_size, True)


def conv_tbc(input: Any, weight: Any, bias: Any, pad: int = 0) -> Any:
    """1-D convolution in time-batch-channel layout: input (T, N, C_in), weight
    (k, C_in, C_out), bias (C_out,) -> (T_out, N, C_out), ``pad`` zeros at both ends of T."""
    _check_tensor(input, "conv_tbc")
    if input.ndim != 3 or weight.ndim != 3:
        raise RuntimeError(f"conv_tbc: expected a 3-D input (T, N, C_in) and a 3-D weight "
                           f"(k, C_in, C_out), got input {list(input.shape)} and weight "
                           f"{list(weight.shape)}")
    y = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return y.permute(2, 0, 1)


# =============================================================================================
# fractional max pooling (Graham, 2014): pseudo-random window starts, one sample per plane


def _fractional_starts(u: np.ndarray, n_in: int, n_out: int, k: int, dtype: Any) -> np.ndarray:
    """Window starts for samples ``u`` (any shape): start_i = floor((i + u) a) - floor(u a),
    a = (n_in - k) / (n_out - 1), computed in the input's float type as PyTorch does; the last
    window ends at the input's end."""
    ft = np.float32 if np.dtype(dtype) != np.float64 else np.float64
    u = u.astype(ft)[..., None]
    if n_out == 1:
        return np.full(u.shape[:-1] + (1,), n_in - k, dtype=np.int64)
    a = ft(n_in - k) / ft(n_out - 1)
    i = np.arange(n_out - 1, dtype=ft)
    starts = (((i + u) * a).astype(np.int64) - (u * a).astype(np.int64))
    last = np.full(u.shape[:-1] + (1,), n_in - k, dtype=np.int64)
    return np.concatenate([starts, last], axis=-1)


def _fractional_max_pool(fn: str, nd: int, input: Any, kernel_size: Any, output_size: Any,
                         output_ratio: Any, return_indices: bool, samples: Any) -> Any:
    _check_tensor(input, fn)
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{fn}: expected {nd + 1}D or {nd + 2}D input, but got "
                           f"{list(input.shape)}")
    k = _ints(kernel_size, nd, "kernel_size", fn, conv_msg=False)
    input, unbatched = _unbatch(input, nd + 2)  # noqa: A001
    N, C = input.shape[:2]
    sizes = tuple(input.shape[2:])
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{fn} requires specifying either an output_size or an "
                             "output_ratio")
        ratio = (output_ratio,) * nd if isinstance(output_ratio, float | int) else \
            tuple(output_ratio)
        out = tuple(int(n * r) for n, r in zip(sizes, ratio))
    else:
        out = _ints(output_size, nd, "output_size", fn, conv_msg=False)
    for n, kk, o in zip(sizes, k, out):
        if o + kk - 1 > n:
            raise RuntimeError(f"{fn}(): pool size {kk} too large relative to input size {n} "
                               f"and output size {o} (need output_size + kernel_size - 1 <= "
                               "input size)")
    dt = input._data.dtype
    if samples is None:
        from .random import rand

        u = rand(N, C, nd, dtype=input.dtype)._data
    else:
        u = samples._data
        if tuple(u.shape) != (N, C, nd):
            raise RuntimeError(f"{fn}: expected _random_samples of shape {[N, C, nd]}, got "
                               f"{list(u.shape)}")
    u = _backend.to_device(u, _backend.CPU)
    # which sample drives which dim follows PyTorch's kernels: (w, h) in 2-D, (t, h, w) in 3-D
    order = [1, 0] if nd == 2 else [0, 1, 2]
    starts = [_fractional_starts(u[:, :, order[j]], sizes[j], out[j], k[j], dt)
              for j in range(nd)]
    # flat index of every tap of every window: (N, C, *out, prod(k))
    strides = [int(np.prod(sizes[j + 1:])) for j in range(nd)]
    flat = np.zeros((N, C) + tuple(out) + tuple(k), dtype=np.int64)
    for j in range(nd):
        pos = starts[j][:, :, :, None] + np.arange(k[j])  # (N, C, out_j, k_j)
        shape = [N, C] + [1] * nd + [1] * nd
        shape[2 + j] = out[j]
        shape[2 + nd + j] = k[j]
        flat = flat + (pos * strides[j]).reshape(shape)
    K = int(np.prod(k))
    flat = flat.reshape(N, C, -1)
    xp = _backend.xp_of(input._data)
    T = TensorBase
    idx = T._make(xp.asarray(flat))
    vals = input.reshape(N, C, -1).gather(2, idx).reshape((N, C) + tuple(out) + (K,))
    y, arg = vals.max(-1)
    y = _rebatch(y, unbatched)
    if not return_indices:
        return y
    ind = xp.take_along_axis(xp.asarray(flat).reshape((N, C) + tuple(out) + (K,)),
                             arg._data[..., None], -1)[..., 0]
    return y, _rebatch(T._make(ind), unbatched)


def fractional_max_pool2d(input: Any, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Any = None) -> Any:
    """Fractional max pooling over an (N, C, H, W) or (C, H, W) input: windows of
    ``kernel_size`` at pseudo-random, increasing starts chosen per plane so that the output has
    ``output_size`` (or ``output_ratio`` of the input). ``_random_samples`` (N, C, 2) in [0, 1)
    fixes the starts (as in PyTorch)."""
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples)


def fractional_max_pool3d(input: Any, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Any = None) -> Any:
    """Fractional max pooling over an (N, C, D, H, W) or (C, D, H, W) input (see
    ``fractional_max_pool2d``; ``_random_samples`` is (N, C, 3))."""
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input: Any, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = True,
                                       _random_samples: Any = None) -> Any:
    """``fractional_max_pool2d`` returning (values, indices)."""
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


def fractional_max_pool3d_with_indices(input: Any, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = True,
                                       _random_samples: Any = None) -> Any:
    """``fractional_max_pool3d`` returning (values, indices)."""
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)
