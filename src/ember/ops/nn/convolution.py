"""Convolution functions: ``conv1d``/``2d``/``3d``, the transposed convolutions,
``conv_tbc``, ``unfold`` and ``fold``.

The differentiable pieces come in adjoint pairs, so every backward rule is another op of this
room (run through ``ctx.call``) and double backward works for free: ``Conv`` (y = W * x),
``ConvTranspose`` (its adjoint in x) and ``ConvWeight`` (its adjoint in W), each one's derivatives
being the other two; ``Im2col`` / ``Col2im``. The 3-D convolutions are compositions of the 2-D ops
over depth taps. The kernels are in ``_kernels.py``.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ... import _kernels_loader as _kl
from ...autograd.function import Op
from .._autocast import cast as _amp_cast
from .._autocast import flag as _amp
from .._promote import conjugated, opmath
from ..creation import zeros_like
from ..joining import stack
from . import _bf16_products as _bf16
from ._conv_chunks import (  # (the row-chunk path: the large layers)
    _chunk_forward,
    _chunk_transpose,
    _chunk_weight_grad,
    _chunked,
)
from ._kernels import (
    _LAYOUT,
    Pad2,
    _4d,
    _batch_step,
    _bias_grad,
    _check_tensor,
    _col2im,
    _depth_taps,
    _direct_forward,
    _direct_ok,
    _fold,
    _Geom,
    _grad_rows,
    _grad_to_cols,
    _im2col,
    _image_forward,
    _image_weight_grad,
    _ints,
    _out_from_cols,
    _over_images,
    _pointwise_forward,
    _pointwise_input_grad,
    _pointwise_ok,
    _pointwise_weight_grad,
    _rebatch,
    _rows,
    _rows_forward,
    _rows_input_grad,
    _rows_ok,
    _rows_weight_grad,
    _same_dtype,
    _to2,
    _unbatch,
    _unfold,
)
from .vision import pad

__all__ = [
    "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold", "conv3d",
    "conv_transpose3d", "conv_tbc",
]




def conv1d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Any:
    """1-D convolution (cross-correlation) over an (N, C_in, L) or (C_in, L) input."""
    if _amp.active:
        input, weight, bias = _amp_cast("conv1d", input, weight, bias)
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
    if _amp.active:
        input, weight, bias = _amp_cast("conv2d", input, weight, bias)
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Any:
    """1-D transposed convolution; ``weight`` is (C_in, C_out / groups, kL)."""
    if _amp.active:
        input, weight, bias = _amp_cast("conv_transpose1d", input, weight, bias)
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Any:
    """2-D transposed convolution (the gradient of conv2d with respect to its input).

    ``weight`` is (C_in, C_out / groups, kH, kW); the output size per dim is
    ``(in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``."""
    if _amp.active:
        input, weight, bias = _amp_cast("conv_transpose2d", input, weight, bias)
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


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
        xp = ctx.xp
        x4, w4 = _4d(x), _4d(w)
        N, C, H, W = x4.shape
        O, Cg, kh, kw = w4.shape
        g = _Geom((H, W), (kh, kw), stride, pad, dil, out_hw, n=N, cin=Cg)
        step = _batch_step(g, N, C * kh * kw, O, x4.itemsize)
        pointwise = _pointwise_ok(g, groups, x4, w4, b)
        chunked = not pointwise and _chunked(g, C * kh * kw, x4, w4, b)
        if pointwise:  # (1 x 1: no columns, no tiles)
            y = _pointwise_forward(x4, w4, b, g)
        elif chunked:
            y = _chunk_forward(x4, w4, b, g, groups)
        elif step >= N or (g.image and _image_arrays(x4, w4, b)):
            # (the host's per-image columns are built a few images at a time)
            y = _conv_forward(xp, x4, w4, b, g, groups)[0]
        else:  # batch tiles: columns of ``step`` images at a time, rebuilt by the weight grad
            y = xp.empty((N, O, g.OH, g.OW), dtype=x.dtype)
            for n0 in range(0, N, step):
                xc = x4[n0:n0 + step]
                gc = g if g.rows else _Geom((H, W), (kh, kw), stride, pad, dil, out_hw,
                                            n=len(xc), cin=Cg)
                y[n0:n0 + len(xc)] = _conv_forward(xp, xc, w4, b, gc, groups)[0]
        # PyTorch's convolution keeps input and weight whatever needs a gradient (so an in-place
        # change to either refuses backward there, and here)
        ctx.save_for_backward(x, w)
        ctx.args = (stride, pad, dil, groups)
        ctx.in_hw, ctx.k, ctx.nd, ctx.geom = (H, W), (kh, kw), x.ndim, g
        # (no whole-batch gradient columns to share where the gradients' ops run in tiles)
        ctx.tiled = pointwise or chunked or \
            _batch_step(g, N, C * kh * kw, O, x4.itemsize, grad=True) < N
        ctx.bias, ctx.out_channels = b is not None, O
        return y if x.ndim == 4 else y.reshape(N, O, g.OW)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, w = ctx.saved
        need = ctx.needs_input_grad
        gt = None  # batch-inner: both gradients' products read the gradient as columns (O, N * L)
        g = ctx.geom  # (row-major: as rows (N * L, O))
        if need[0] and need[1] and not ctx._tensor_mode and g.batch and not g.image and \
                not ctx.tiled:
            if _rows_ok(g, ctx.args[3], _4d(x), _4d(w), grad):
                gt = _grad_rows(_4d(grad))
            else:
                gt = _grad_to_cols(ctx.xp, _4d(grad), g)
        gx = ctx.call(ConvTranspose, grad, w, None, ctx.in_hw, *ctx.args, gt) \
            if need[0] else None
        if need[1] and need[2] and not ctx._tensor_mode and g.image and \
                _image_arrays(_4d(x), _4d(grad)):
            # per image: the bias's gradient rides in the weight's products (a row of ones)
            x4, groups = _4d(x), ctx.args[3]
            shape = (ctx.out_channels, x4.shape[1] // groups) + \
                ((ctx.k[1],) if ctx.nd == 3 else tuple(ctx.k))
            gw, gb = _image_weight_grad(x4, _4d(grad), g, groups, shape, bias=True)
            return gx, gw, gb, None, None, None, None, None
        gw = ctx.call(ConvWeight, x, grad, ctx.k, *ctx.args, gt) if need[1] else None
        gb = _bias_grad(ctx.xp, grad, ctx.nd) if need[2] else None
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
                dil: tuple, groups: int, gt: Any = None) -> Any:
        xp = ctx.xp
        g4, w4 = _4d(gy), _4d(w)
        N, O, OH, OW = g4.shape
        _, Cg, kh, kw = w4.shape
        C = Cg * groups
        g = _Geom(in_hw, (kh, kw), stride, pad, dil, (OH, OW), n=N, cin=Cg)
        step = _batch_step(g, N, C * kh * kw, C, g4.itemsize, in_hw, grad=True)
        if _pointwise_ok(g, groups, g4, w4):
            out = _pointwise_input_grad(g4, w4, g, in_hw)
        elif _chunked(g, C * kh * kw, g4, w4):
            out = _chunk_transpose(g4, w4, g, groups)
        elif step >= N:
            out = _conv_transpose_forward(xp, g4, w4, g, groups, gt, gy.dtype)
        else:  # batch tiles: the columns of ``step`` images at a time
            out = xp.empty((N, C) + tuple(in_hw), dtype=gy.dtype)
            for n0 in range(0, N, step):
                gc = g4[n0:n0 + step]
                geom = g if g.rows else _Geom(in_hw, (kh, kw), stride, pad, dil, (OH, OW),
                                              n=len(gc), cin=Cg)
                out[n0:n0 + len(gc)] = _conv_transpose_forward(xp, gc, w4, geom, groups, None,
                                                               gy.dtype)
        if b is not None:
            out += b.reshape(1, C, 1, 1)
        ctx.save_for_backward(gy, w)  # input and weight, whatever needs a gradient (PyTorch's)
        ctx.args = (stride, pad, dil, groups)
        ctx.out_hw, ctx.k, ctx.nd = (OH, OW), (kh, kw), gy.ndim
        return out if gy.ndim == 4 else out.reshape(N, C, in_hw[1])

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        gy, w = ctx.saved
        need = ctx.needs_input_grad
        gg = ctx.call(Conv, grad, w, None, *ctx.args, ctx.out_hw) if need[0] else None
        gw = ctx.call(ConvWeight, grad, gy, ctx.k, *ctx.args) if need[1] else None
        gb = _bias_grad(ctx.xp, grad, ctx.nd) if need[2] else None
        return gg, gw, gb, None, None, None, None, None


class ConvWeight(Op):
    """gW[o, c, i, j] = sum_{n, p} gy[n, o, p] * im2col(x)[n, (c, i, j), p]: Conv's adjoint in W

    grad_x = conv_transpose(gy, grad)          (ConvTranspose with weight = grad)
    grad_gy = conv(x, grad)          (Conv with weight = grad)
    """
    node_name = "ConvolutionBackwardBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, gy: Any, k: tuple, stride: tuple, pad: Pad2, dil: tuple,
                groups: int, gt: Any = None) -> Any:
        xp = ctx.xp
        x4, g4 = _4d(x), _4d(gy)
        N, C, H, W = x4.shape
        _, O, OH, OW = g4.shape
        g = _Geom((H, W), k, stride, pad, dil, (OH, OW), n=N, cin=C // groups)
        ctx.save_for_backward(x if ctx.needs_input_grad[1] else None,
                              gy if ctx.needs_input_grad[0] else None)
        ctx.args = (stride, pad, dil, groups)
        ctx.in_hw, ctx.out_hw = (H, W), (OH, OW)
        shape = (O, C // groups) + ((k[1],) if x.ndim == 3 else tuple(k))
        # (Conv's backward hands over the gradient's columns as ``gt`` when it made them)
        step = _batch_step(g, N, C * k[0] * k[1], O, x4.itemsize, grad=True)
        if _pointwise_ok(g, groups, x4, g4):
            return _pointwise_weight_grad(x4, g4, g, shape)
        if _chunked(g, C * k[0] * k[1], x4, g4):
            return _chunk_weight_grad(x4, g4, g, groups, shape)
        if step >= N or (g.image and _image_arrays(x4, g4)):
            # (the host's per-image columns are built a few images at a time)
            return _weight_grad(xp, x4, g4, g, groups, shape, None, gt)
        gw = None  # batch tiles: each tile's columns rebuilt, their products summed
        for n0 in range(0, N, step):
            xc, gc = x4[n0:n0 + step], g4[n0:n0 + step]
            geom = g if g.rows else _Geom((H, W), k, stride, pad, dil, (OH, OW), n=len(xc),
                                          cin=C // groups)
            part = _weight_grad(xp, xc, gc, geom, groups, shape, None, None)
            if gw is None:
                gw = part
            else:
                gw += part
        return gw

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, gy = ctx.saved
        need = ctx.needs_input_grad
        gx = ctx.call(ConvTranspose, gy, grad, None, ctx.in_hw, *ctx.args) if need[0] else None
        ggy = ctx.call(Conv, x, grad, None, *ctx.args, ctx.out_hw) if need[1] else None
        return gx, ggy, None, None, None, None, None, None


class Im2col(Op):
    """out[n, (c, i, j), p] = x_pad[n, c, s*p + d*(i, j)]          grad_x = col2im(grad)"""
    node_name = "Im2ColBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, g: _Geom) -> Any:
        N, C = x.shape[:2]
        ctx.geom = g
        xp = ctx.xp
        return _unfold(xp, x, g)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(Col2im, grad, ctx.geom), None


class Col2im(Op):
    """out[n, c, t] = sum over (window p, tap (i, j)) landing on t of cols[n, (c, i, j), p]

    grad_cols = im2col(grad)"""
    node_name = "Col2ImBackward0"

    @staticmethod
    def forward(ctx: Any, cols: Any, g: _Geom) -> Any:
        xp = ctx.xp
        ctx.geom = g
        return _fold(xp, cols, g)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(Im2col, grad, ctx.geom), None


def _conv_forward(xp: Any, x4: Any, w4: Any, b: Any, g: _Geom, groups: int) -> tuple[Any, Any]:
    """Conv's forward on (N, C, H, W) arrays -> (output (N, O, OH, OW), the columns its weight
    gradient can reuse)."""
    N = x4.shape[0]
    O, Cg, kh, kw = w4.shape
    w3 = w4.reshape(groups, O // groups, Cg * kh * kw)
    if _rows_ok(g, groups, x4, w4, b):
        return _rows_forward(x4, w4, b, g)  # (bias added; cols are rows (N * L, K))
    if _direct_ok(g, groups, x4, w4, b) and (y := _direct_forward(x4, w4, b, g)) is not None:
        return y, None  # (bias added; no columns)
    if g.image and _image_arrays(x4, w3, b):
        return _image_forward(x4, w3, b, g, groups)  # (bias added)
    cols = _im2col(xp, x4, g, groups)
    y = _bf16.matmul_xp(xp, w3, cols)
    # a bfloat16 product comes back float32: the bias joins it there and the sum is
    # rounded once, as PyTorch's convolution does
    if g.image:  # one product per image, already (N, groups, O / groups, OH * OW)
        y = y.reshape(N, O, g.OH, g.OW)
        if b is not None:
            y += b.reshape(1, O, 1, 1)
        return y.astype(x4.dtype, copy=False), cols
    y = y.reshape(O, N * g.L)
    if b is not None:
        y += b.reshape(O, 1)
    return _out_from_cols(xp, y.astype(x4.dtype, copy=False), g, N), cols


def _conv_transpose_forward(xp: Any, g4: Any, w4: Any, g: _Geom, groups: int, gt: Any,
                            dtype: Any) -> Any:
    """ConvTranspose's forward (without the bias) on (N, O, OH, OW) arrays -> (N, C, H, W);
    ``gt``: the gradient's columns, when Conv's backward made them already."""
    N, O = g4.shape[:2]
    Cg, kh, kw = w4.shape[1:]
    C = Cg * groups
    if _rows_ok(g, groups, g4, w4):  # row-major: the gradient's rows (``gt`` when given)
        return _rows_input_grad(_grad_rows(g4) if gt is None else gt, w4, g, N)
    wm = w4.reshape(groups, O // groups, Cg * kh * kw).swapaxes(1, 2)
    if g.image:  # per image: (N, groups, Cg * kh * kw, L), no transpose of the gradient
        gt = g4.reshape(N, groups, O // groups, g.L)
        if xp is np and type(gt) is np.ndarray:  # (split over the threads where that pays)
            cols = np.empty((N, groups, Cg * kh * kw, g.L), gt.dtype)
            _over_images(lambda lo, hi: _bf16.matmul(wm, gt[lo:hi], out=cols[lo:hi]), N,
                         O * Cg * kh * kw * g.L)
        else:
            cols = _bf16.matmul_xp(xp, wm, gt)
        return _col2im(xp, cols.astype(dtype, copy=False).reshape(N, C * kh * kw, g.L), g, N)
    gt = (_grad_to_cols(xp, g4, g) if gt is None else gt).reshape(groups, O // groups, N * g.L)
    cols = _bf16.matmul_xp(xp, wm, gt).astype(dtype, copy=False)
    return _col2im(xp, cols.reshape(C * kh * kw, N * g.L), g, N)


def _image_arrays(x4: Any, *others: Any) -> bool:
    """Whether the host's per-image ops (``_image_forward``, ``_image_weight_grad``) take these
    arrays: host float32 / float64 of one dtype (``None`` entries skipped)."""
    return type(x4) is np.ndarray and x4.dtype in (np.float32, np.float64) and all(
        type(a) is np.ndarray and a.dtype == x4.dtype for a in others if a is not None)


def _weight_grad(xp: Any, x4: Any, g4: Any, g: _Geom, groups: int, shape: tuple, cols: Any,
                 gt: Any) -> Any:
    """ConvWeight's forward on (N, C, H, W) and (N, O, OH, OW) arrays -> the weight's gradient
    of ``shape``; ``cols`` / ``gt``: the forward's columns and the gradient's, when at hand."""
    N = x4.shape[0]
    O = g4.shape[1]
    if g.image and cols is None and _image_arrays(x4, g4):
        return _image_weight_grad(x4, g4, g, groups, shape)
    if cols is None:
        cols = _rows(x4, g) if _rows_ok(g, groups, x4, g4) else \
            _im2col(xp, x4, g, groups)
    if cols.ndim == 2:  # the forward's rows (N * L, K) (row-major columns, one group)
        return _rows_weight_grad(cols, g4, shape, (g.kh, g.kw), gt)
    if g.image:
        # per image, cols (K, L) @ gy^T (L, O / groups) (the faster orientation for a small
        # K), summed over the images: (groups, K, O / groups), transposed into place
        # (into an array of the weight's shape that owns its memory, as below)
        gt = g4.reshape(N, groups, O // groups, g.L)
        part = _bf16.matmul_xp(xp, cols, gt.swapaxes(2, 3)).sum(axis=0)
        gw = xp.empty(shape, dtype=x4.dtype)
        gw.reshape(groups, O // groups, -1)[...] = part.swapaxes(1, 2)
        return gw
    gt = (_grad_to_cols(xp, g4, g) if gt is None else gt).reshape(
        groups, O // groups, N * g.L)
    if type(gt) is np.ndarray and gt.dtype in (np.float32, np.float64) and \
            cols.dtype == gt.dtype:
        # the product lands in an array of the weight's shape that owns its memory, so the
        # weight's .grad takes it as is (a reshaped view would be copied into .grad). It is
        # computed transposed where N * L is long against K, cols (K, N * L) @ gt^T
        # (N * L, O / groups), then copied into place (O * K values): OpenBLAS runs these
        # products up to 2x faster with the im2col rows as M than with the few output
        # channels (CNN conv2: 2.9 -> 1.3 ms; not so for ResNet's later layers)
        gw = np.empty(shape, dtype=gt.dtype)
        K = cols.shape[1]
        # (also a small weight of many taps: its transposing copy is cheap against the product's
        # gain, ResNet's 3x3 64 and 128 on 8x8 and 4x4 outputs: 2.07 -> 1.70 ms, 1.70 -> 1.49 ms)
        if gt.shape[2] >= 4 * K or (K >= 512 and O * K <= 1 << 18):
            part = _bf16.matmul(cols, gt.swapaxes(1, 2))
            gw.reshape(groups, O // groups, -1)[...] = part.swapaxes(1, 2)
        else:
            _bf16.matmul(gt, cols.swapaxes(1, 2), out=gw.reshape(groups, O // groups, -1))
        return gw
    gw = _bf16.matmul_xp(xp, gt, cols.swapaxes(1, 2)).astype(x4.dtype, copy=False)
    return gw.reshape(shape)


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
    dt = input._data.dtype
    op = conjugated(Conv) if dt.kind == "c" else _half_conv(dt) if dt.itemsize == 2 else Conv
    out = op.apply(input, weight, bias, _to2(stride, 1), pad2, _to2(dilation, 1), groups)
    return _rebatch(out, unbatched)


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
    op = conjugated(ConvTranspose) if input._data.dtype.kind == "c" else ConvTranspose
    y = op.apply(input, weight, bias, out_hw, s2, pad2, d2, groups)
    return _rebatch(y, unbatched)


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


# ---------------------------------------------------------------------------------------------
# 3-D convolution and pooling: composites of the 2-D ops (depth taps folded into channels or batch), so their gradients (and double backward) come from the 2-D ops' rules.


def conv3d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Any:
    """3-D convolution (cross-correlation) over an (N, C_in, D, H, W) or (C_in, D, H, W) input.

    ``weight`` is (C_out, C_in / groups, kT, kH, kW); ``padding`` an int, a triple, 'valid' or
    'same'. Runs as a single 2-D convolution over the depth taps."""
    if _amp.active:
        input, weight, bias = _amp_cast("conv3d", input, weight, bias)
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose3d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Any:
    """3-D transposed convolution; ``weight`` is (C_in, C_out / groups, kT, kH, kW) and each
    output size is ``(in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.
    """
    if _amp.active:
        input, weight, bias = _amp_cast("conv_transpose3d", input, weight, bias)
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


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


def _conv3d(x: Any, w: Any, bias: Any, stride: tuple, pads: tuple, dil: tuple,
            groups: int) -> Any:
    """y[n, o, t] = sum_i conv2d(x_pad[n, :, t*sD + i*dD], w[:, :, i]) (+ bias), computed as
    ONE conv2d: the kT depth taps become extra input channels (group-major, as conv2d's groups
    need) and the output depths become batch rows."""
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
    y = conv2d(taps, w2, bias, stride[1:], 0, dil[1:], groups)  # (N*OD, O, OH, OW)
    # the depths come out batch-major: one copy puts them in PyTorch's contiguous layout
    return y.reshape(N, OD, O, y.shape[2], y.shape[3]).permute(0, 2, 1, 3, 4).contiguous()


def _conv_transpose3d(x: Any, w: Any, bias: Any, out: tuple, stride: tuple, padding: tuple,
                      output_padding: tuple, dil: tuple, groups: int) -> Any:
    """The adjoint of conv3d: one conv_transpose2d per input depth slice with every depth tap
    as extra output channels, then each tap's planes land at depth t*sD + i*dD - pD."""
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
            zeros = zeros_like(zi)
            zi = stack([zi] + [zeros] * (sD - 1), 3).reshape(N, groups * Cog, D * sD, OH, OW)
            zi = zi[:, :, :span]
        zi = pad(zi, (0, 0, 0, 0, i * dD, full - span - i * dD))
        total = zi if total is None else total + zi
    extra = pD + out[0] - full
    if extra > 0:
        total = pad(total, (0, 0, 0, 0, 0, extra))
    y = total[:, :, pD: pD + out[0]]
    if bias is not None:
        return y + bias.reshape(1, -1, 1, 1, 1)  # a new, contiguous array
    return y.contiguous()  # the crop of the padded depths is a view: one copy, as PyTorch's


def _half_conv(dt: Any) -> type:
    """Conv for float16/bfloat16 tensors: the float32 kernels on the half values, rounded once
    (``opmath``), the products of bfloat16 ones in the bfloat16 kernel where the CPU has it."""
    return _bf16.variant(opmath(Conv)) if _kl.bf16_gemm_ready(dt) else opmath(Conv)
