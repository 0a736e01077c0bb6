"""Vision functions: ``pad``, ``interpolate``/``upsample``, ``pixel_shuffle`` and
``channel_shuffle`` (``affine_grid`` and ``grid_sample`` continue in ``vision_sampling.py``).
"""

from __future__ import annotations

import functools
import math
import operator
import warnings
from typing import Any

import numpy as np

from ... import _backend
from ..._tensor_base import TensorBase
from ...autograd.function import Op
from .._autocast import cast as _amp_cast
from .._autocast import flag as _amp
from .._promote import _refuse_complex
from ._kernels import Resample, _AxisMap, _check_tensor, _tname
from .pooling import _adaptive_avg, adaptive_avg_pool1d, adaptive_avg_pool2d

__all__ = [
    "pad", "channel_shuffle", "native_channel_shuffle", "interpolate", "upsample",
    "upsample_nearest", "upsample_bilinear", "pixel_shuffle", "pixel_unshuffle",
]


# ---------------------------------------------------------------------------------------------
# padding


def pad(input: TensorBase, pad: Any, mode: str = "constant", value: float | None = None) -> TensorBase:
    """Pad the last ``len(pad) // 2`` dims; ``pad = (left_last, right_last, left_prev, ...)``.

    Modes: ``constant`` (with ``value``), ``reflect``, ``replicate``, ``circular``.
    """
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError(
            f"Padding length must be divisible by 2 (got pad={pad}): give (left, right) per dim, "
            "starting from the last dim"
        )
    k = len(pad) // 2
    if k > input.ndim:
        raise RuntimeError(
            f"Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(pad)} and input of dimension {input.ndim}"
        )
    pads = [(0, 0)] * input.ndim
    for i in range(k):
        pads[input.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if mode == "constant":
        for d, (lo, hi) in enumerate(pads):
            if input.shape[d] + lo + hi < 0:
                raise RuntimeError(
                    f"The input size {input.shape[d]}, plus negative padding {lo} and {hi} "
                    f"resulted in a negative output size, which is invalid. Check dimension {d} "
                    "of your input."
                )
        return ConstantPad.apply(input, tuple(pads), 0.0 if value is None else value)
    if _amp.active and mode in ("reflect", "replicate"):  # PyTorch's CPU float32 list
        name = "reflection" if mode == "reflect" else "replication"
        (input,) = _amp_cast(f"{name}_pad{k}d", input)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(
            f"Unrecognised padding mode {mode} (choose constant, reflect, replicate or circular)"
        )
    if value is not None and value != 0:
        raise ValueError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if k > 3 or input.ndim < k + 1:
        raise NotImplementedError(
            f"Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now "
            f"(got input of shape {tuple(input.shape)} and pad={pad}; mode={mode!r} pads at most "
            "the last 3 dims and needs one more leading dim)"
        )
    xp = _backend.xp_of(input._data)
    out = input
    for d in range(input.ndim - k, input.ndim):
        lo, hi = pads[d]
        n = input.shape[d]
        if lo == 0 and hi == 0:
            continue
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({lo}, {hi}) at dimension {d} of input "
                f"{list(input.shape)}"
            )
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError(
                "Padding value causes wrapping around more than once. (circular padding "
                f"({lo}, {hi}) at dimension {d} of input {list(input.shape)})"
            )
        if n == 0:
            raise RuntimeError(
                f"{mode} padding of an empty dimension {d} (input {list(input.shape)})"
            )
        out = GatherAlong.apply(out, _pad_index(xp, n, lo, hi, mode), d)
    return out


class ConstantPad(Op):
    """out = x padded with ``value`` (negative pads crop)
    grad_x = grad with the padding removed (a constant pad by the negated amounts)"""
    node_name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, pads: tuple, value: float) -> Any:
        xp = ctx.xp
        ctx.pads = pads
        widths = [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
        crop = tuple(slice(max(-lo, 0), x.shape[i] - max(-hi, 0)) for i, (lo, hi) in enumerate(pads))
        x = x[crop]
        if any(w != (0, 0) for w in widths):
            out = xp.full(tuple(s + lo + hi for s, (lo, hi) in zip(x.shape, widths)), value,
                          dtype=x.dtype)
            out[tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape, widths))] = x
            return out
        return x.copy()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        neg = tuple((-lo, -hi) for lo, hi in ctx.pads)
        return ctx.call(ConstantPad, grad, neg, 0.0), None, None


class GatherAlong(Op):
    """out = take(x, idx, axis)          grad_x = scatter-add of grad along axis (one GEMM with
    the one-hot matrix of idx)"""
    node_name = "ReflectionPadBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, idx: Any, axis: int) -> Any:
        ctx.save_for_backward(idx)
        ctx.axis, ctx.n = axis, x.shape[axis]
        return ctx.xp.take(x, idx, axis=axis)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (idx,) = ctx.saved
        return ctx.call(ScatterAlong, grad, idx, ctx.axis, ctx.n), None, None


class ScatterAlong(Op):
    """out[..., j, ...] = sum over k with idx[k] = j of x[..., k, ...] (along axis)
    grad_x = take(grad, idx, axis)"""
    @staticmethod
    def forward(ctx: Any, x: Any, idx: Any, axis: int, n: int) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(idx)
        ctx.axis = axis
        onehot = (idx[:, None] == xp.arange(n)).astype(x.dtype)  # (len(idx), n)
        moved = xp.moveaxis(x, axis, -1)
        return xp.moveaxis(moved @ onehot, -1, axis)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (idx,) = ctx.saved
        return ctx.call(GatherAlong, grad, idx, ctx.axis), None, None, None


def _pad_index(xp: Any, n: int, lo: int, hi: int, mode: str) -> Any:
    pos = xp.arange(-lo, n + hi)
    if mode == "reflect":
        period = 2 * (n - 1)
        pos = xp.abs(pos) % period if period else pos * 0
        return xp.where(pos >= n, period - pos, pos)
    if mode == "replicate":
        return xp.clip(pos, 0, n - 1)
    return pos % n  # circular


# ---------------------------------------------------------------------------------------------
# normalisation and distances (composites)


def channel_shuffle(input: TensorBase, groups: int) -> TensorBase:
    """Split the channels (dim 1) into ``groups`` and interleave them (ShuffleNet)."""
    c = input.shape[1]
    if groups <= 0 or c % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {c} channels and {groups} "
            "groups."
        )
    shape = tuple(input.shape)
    x = input.reshape(shape[0], groups, c // groups, *shape[2:])
    return x.transpose(1, 2).reshape(shape)


# ---------------------------------------------------------------------------------------------
# CTC loss


_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")


def native_channel_shuffle(input: Any, groups: int) -> Any:
    """``channel_shuffle`` under its native-kernel name."""
    return channel_shuffle(input, groups)


def interpolate(input: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Any:
    """Resize the spatial dims of an (N, C, L), (N, C, H, W) or (N, C, D, H, W) input.

    Modes: 'nearest', 'nearest-exact', 'linear' (3-D), 'bilinear' and 'bicubic' (4-D),
    'trilinear' (5-D) (those four with ``align_corners``), 'area' (adaptive average pooling).
    Give either ``size`` or ``scale_factor``. ``antialias=True`` ('bilinear', 'bicubic', 4-D) resamples with PyTorch's
    (and PIL's) separable filters: a triangle or a cubic (a = -0.5) whose support widens by the
    downscale factor, its taps normalised to sum to 1."""
    if _amp.active:
        (input,) = _amp_cast("interpolate", input)
    _check_tensor(input, "interpolate")
    x = input._data
    nsp = x.ndim - 2
    _refuse_complex(f"upsample_{mode}{nsp}d", input)
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
    if antialias and not (mode in ("bilinear", "bicubic") and x.ndim == 4):
        raise ValueError(f"Anti-alias option is restricted to bilinear and bicubic modes and "
                         f"requires a 4-D tensor as input (got mode {mode!r} and a "
                         f"{x.ndim}-D input)")
    if x.ndim not in (3, 4, 5):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for the "
            "modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")
    need = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}.get(mode)
    if need is not None and x.ndim != need:
        raise NotImplementedError(f"Got {x.ndim}D input, but {mode} mode needs {need}D input")
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
        sf = (scale_factor,) * nsp if isinstance(scale_factor, (int, float)) else \
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
        names = ("D", "H", "W")[3 - nsp:]
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input "
            f"({', '.join(f'{a}: {n}' for a, n in zip(names, sizes))}) output "
            f"({', '.join(f'{a}: {n}' for a, n in zip(names, out))})")
    if mode == "area":
        if nsp == 3:
            return _adaptive_avg("adaptive_avg_pool3d", 3, input, out)
        return (adaptive_avg_pool1d if nsp == 1 else adaptive_avg_pool2d)(input, out)
    sc = scales or (None,) * nsp
    if mode in ("nearest", "nearest-exact"):
        maps = tuple(_nearest_map(n, o, s, mode == "nearest-exact")
                     for n, o, s in zip(sizes, out, sc))
    else:
        if x.dtype.kind not in "fV":
            raise RuntimeError(f'"upsample_{mode}" not implemented for \'{_tname(input)}\' '
                               f"(input dtype {input.dtype}); convert it first, e.g. x.float()")
        dt, align = np.dtype(x.dtype), bool(align_corners)
        if antialias:
            maps = tuple(_filter_map(n, o, s, align, mode, dt) for n, o, s in zip(sizes, out, sc))
        elif mode == "bicubic":
            maps = tuple(_cubic_map(n, o, s, align, dt) for n, o, s in zip(sizes, out, sc))
        else:
            maps = tuple(None if (n == o and not align and s in (None, 1.0)) else
                         _linear_map(n, o, s, align, dt) for n, o, s in zip(sizes, out, sc))
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


@functools.lru_cache(maxsize=256)  # maps are reused step after step
def _cubic_map(n_in: int, n_out: int, scale: float | None, align: bool, dtype: Any) -> _AxisMap:
    """Four taps per output: PyTorch's bicubic convolution (a = -0.75) at its source index,
    the taps clamped to the edge, in the input's precision."""
    ft = np.dtype(dtype).type
    o = np.arange(n_out).astype(dtype)
    if align:
        src = (ft(n_in - 1) / ft(n_out - 1) if n_out > 1 else ft(0)) * o
    else:
        sc = ft(1.0 / scale) if scale is not None and scale > 0 else ft(n_in) / ft(n_out)
        src = sc * (o + ft(0.5)) - ft(0.5)
    i0 = np.floor(src)
    t = (src - i0).astype(dtype)
    a = ft(-0.75)

    def near(v: Any) -> Any:  # |v| <= 1
        return ((a + 2) * v - (a + 3)) * v * v + 1

    def far(v: Any) -> Any:  # 1 < |v| < 2
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a

    w = np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=1).astype(dtype)
    idx = np.clip(i0.astype(np.int64)[:, None] + np.arange(-1, 3), 0, n_in - 1)
    return _AxisMap(idx, w, n_in)


@functools.lru_cache(maxsize=256)  # maps are reused step after step
def _filter_map(n_in: int, n_out: int, scale: float | None, align: bool, mode: str,
                dtype: Any) -> _AxisMap:
    """Antialiased resampling along one axis (PyTorch's and PIL's): output k is centred at
    ``scale * (k + 0.5)`` in the input, a triangle ('bilinear') or cubic (a = -0.5, 'bicubic')
    filter stretched by the downscale factor (not when upscaling) weighs the inputs within its
    support, and the weights are normalised to sum to 1 (computed in float64)."""
    if align:
        sc = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        sc = 1.0 / scale if scale is not None and scale > 0 else n_in / n_out
    half = 1.0 if mode == "bilinear" else 2.0  # the filter's support at scale 1
    support = half * sc if sc >= 1.0 else half
    inv = 1.0 / sc if sc >= 1.0 else 1.0
    centre = sc * (np.arange(n_out) + 0.5)
    lo = np.maximum(np.trunc(centre - support + 0.5), 0).astype(np.int64)
    hi = np.minimum(np.trunc(centre + support + 0.5).astype(np.int64), n_in)
    T = max(int((hi - lo).max()), 1)
    j = lo[:, None] + np.arange(T)
    d = np.abs((j - centre[:, None] + 0.5) * inv)
    if mode == "bilinear":
        w = np.maximum(1.0 - d, 0.0)
    else:
        a = -0.5
        w = np.where(d < 1.0, ((a + 2) * d - (a + 3)) * d * d + 1,
                     np.where(d < 2.0, (((d - 5) * d + 8) * d - 4) * a, 0.0))
    w = np.where(j < hi[:, None], w, 0.0)
    total = w.sum(axis=1, keepdims=True)
    w = np.divide(w, total, out=np.zeros_like(w), where=total != 0)
    return _AxisMap(np.minimum(j, n_in - 1), w.astype(dtype), n_in, dense=T > 8)


# ---------------------------------------------------------------------------------------------
# fold / unfold / pixel shuffle: public functions


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
