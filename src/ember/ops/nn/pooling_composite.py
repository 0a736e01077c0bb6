"""Pooling built from other ops: the 3-D pools (stacks of 2-D ones over depth),
fractional max pooling, power-average (``lp_pool``) pooling and max-unpooling. Their gradients
come from the ops they are made of.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import _backend, _dtype
from ..._tensor_base import TensorBase
from ...autograd import grad_mode
from .. import _out
from .._autocast import cast as _amp_cast
from .._autocast import flag as _amp
from .._promote import _refuse_complex
from ..joining import stack
from ..random import rand
from ._kernels import _check_tensor, _depth_taps, _ints, _rebatch, _tname, _unbatch
from .pooling import (
    _adaptive_args,
    _adaptive_avg,
    _adaptive_windows,
    _avg_divisor,
    _pool_out,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool2d,
)
from .vision import pad

__all__ = [
    "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "max_pool3d", "max_pool3d_with_indices", "avg_pool3d", "adaptive_avg_pool3d",
    "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "fractional_max_pool2d",
    "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices",
]


# ---------------------------------------------------------------------------------------------
# margin losses, power-average pooling and max-unpooling (composites)


def lp_pool1d(input: Any, norm_type: float, kernel_size: int, stride: Any = None,
              ceil_mode: bool = False) -> Any:
    """Power-average pooling: (sum over the window of x^p)^(1/p)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input: Any, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Any:
    """Power-average pooling over 2-D windows: (sum of x^p)^(1/p)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input: Any, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Any:
    """Power-average pooling over 3-D windows: (sum of x^p)^(1/p)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


def max_unpool1d(input: Any, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Any:
    """The inverse of ``max_pool1d``: each value goes back to the position its index names,
    zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input: Any, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Any:
    """The inverse of ``max_pool2d`` (indices flat over each H x W plane)."""
    if _amp.active:
        (input,) = _amp_cast("max_unpool2d", input)
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input: Any, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Any:
    """The inverse of ``max_pool3d`` (indices flat over each D x H x W volume)."""
    if _amp.active:
        (input,) = _amp_cast("max_unpool3d", input)
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


def _lp_pool(input: Any, norm_type: float, kernel_size: Any, stride: Any, ceil_mode: bool,
             dims: int) -> Any:
    ks = (kernel_size,) * dims if isinstance(kernel_size, int) else tuple(kernel_size)
    pool = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}[dims]
    out = pool(input ** norm_type, ks if dims > 1 else ks[0], stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu() * math.prod(ks)) ** (1.0 / norm_type)


def _max_unpool(input: Any, indices: Any, kernel_size: Any, stride: Any, padding: Any,
                output_size: Any, dims: int) -> Any:
    def tup(v: Any) -> tuple:
        return (int(v),) * dims if isinstance(v, int) else tuple(int(a) for a in v)

    ks = tup(kernel_size)
    st = ks if stride is None else tup(stride)
    pd = tup(padding)
    spatial = tuple(input.shape[-dims:])
    if output_size is None:
        out_sp = tuple((spatial[i] - 1) * st[i] - 2 * pd[i] + ks[i] for i in range(dims))
    else:
        out_sp = tuple(int(v) for v in tuple(output_size)[-dims:])
    lead = tuple(input.shape[:-dims])
    flat_in = input.reshape(*lead, -1)
    idx = indices.reshape(*lead, -1).to(_dtype.int64)
    total = math.prod(out_sp)
    if idx.numel() and (int(idx.max()) >= total or int(idx.min()) < 0):
        raise RuntimeError(f"Found an invalid max index: {int(idx.max())} (output volumes are of "
                           f"size {'x'.join(map(str, out_sp))})")
    out = flat_in.new_zeros((*lead, total)).scatter(-1, idx, flat_in)
    return out.reshape(*lead, *out_sp)


# ---------------------------------------------------------------------------------------------
# 3-D convolution and pooling: composites of the 2-D ops (depth taps folded into channels or batch), so their gradients (and double backward) come from the 2-D ops' rules.


def max_pool3d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """3-D max pooling over an (N, C, D, H, W) or (C, D, H, W) input.

    ``stride`` defaults to ``kernel_size``; padding is -inf. With ``return_indices`` also
    returns each maximum's flat index ``(d * H + h) * W + w`` in its volume (ties keep the
    first), as PyTorch does."""
    if _amp.active:
        (input,) = _amp_cast("max_pool3d", input)
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
    with grad_mode.no_grad():
        T = TensorBase
        xp = _backend.xp_of(vals._data)
        idx2 = idx._data.reshape(k[0], N, C, OD, OH, OW)
        t = tap._data
        hw = xp.take_along_axis(idx2, t[None], 0)[0]
        depth = xp.arange(OD).reshape(1, 1, OD, 1, 1) * s[0] - p[0] + t * d[0]
        ind = T._make((depth * (H * W) + hw).astype(np.int64))
    return _rebatch(vals, unbatched), _rebatch(ind, unbatched)


def max_pool3d_with_indices(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> Any:
    """``max_pool3d`` returning (values, indices)."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None, *, out: Any = None) -> Any:
    """3-D average pooling over an (N, C, D, H, W) or (C, D, H, W) input (divisor rules as
    ``avg_pool2d``: zero padding counted with ``count_include_pad``, or ``divisor_override``)."""
    if out is not None:
        res = avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override)
        return _out.write(out, res, "avg_pool3d")
    if _amp.active:
        (input,) = _amp_cast("avg_pool3d", input)
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
    if _amp.active:
        (input,) = _amp_cast("adaptive_avg_pool3d", input)
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def adaptive_max_pool3d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    """3-D adaptive max pooling: the maximum over each window, window o of an axis covering
    [floor(o n / out), ceil((o + 1) n / out))."""
    if _amp.active:
        (input,) = _amp_cast("adaptive_max_pool3d", input)
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
    if not pieces:
        raise RuntimeError("adaptive_max_pool3d: output_size must be positive")
    vals = stack(pieces, 2)
    if not return_indices:
        return _rebatch(vals, unbatched)
    xp = _backend.xp_of(vals._data)
    ind = TensorBase._make(xp.stack(inds, 2).astype(np.int64))
    return _rebatch(vals, unbatched), _rebatch(ind, unbatched)


def adaptive_max_pool3d_with_indices(input: Any, output_size: Any,
                                     return_indices: bool = False) -> Any:
    """``adaptive_max_pool3d`` returning (values, indices)."""
    return adaptive_max_pool3d(input, output_size, True)


def fractional_max_pool2d(input: Any, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Any = None) -> Any:
    """Fractional max pooling over an (N, C, H, W) or (C, H, W) input: windows of
    ``kernel_size`` at pseudo-random, increasing starts chosen per plane so that the output has
    ``output_size`` (or ``output_ratio`` of the input). ``_random_samples`` (N, C, 2) in [0, 1)
    fixes the starts (as in PyTorch)."""
    if _amp.active:
        (input,) = _amp_cast("fractional_max_pool2d", input)
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples)


def fractional_max_pool3d(input: Any, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Any = None) -> Any:
    """Fractional max pooling over an (N, C, D, H, W) or (C, D, H, W) input (see
    ``fractional_max_pool2d``; ``_random_samples`` is (N, C, 3))."""
    if _amp.active:
        (input,) = _amp_cast("fractional_max_pool3d", input)
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input: Any, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Any = None) -> Any:
    """``fractional_max_pool2d`` returning (values, indices)."""
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


def fractional_max_pool3d_with_indices(input: Any, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Any = None) -> Any:
    """``fractional_max_pool3d`` returning (values, indices)."""
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


def _pool3d_args(fn: str, input: Any, kernel_size: Any, stride: Any, padding: Any,
                 dilation: Any, ceil_mode: bool) -> tuple:
    """Checks of a 3-D pooling call; returns (batched input, unbatched, k, s, p, d, OD, pad_hi)."""
    _check_tensor(input, fn)
    _refuse_complex(fn, input)
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
    if p[0] or pad_hi:
        x = pad(x, (0, 0, 0, 0, p[0], pad_hi), value=value)
    N, C, _, H, W = x.shape
    taps = stack(_depth_taps(x, k[0], s[0], d[0], OD), 0)  # (kT, N, C, OD, H, W)
    return taps.reshape(k[0] * N, C * OD, H, W)


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
        ratio = (output_ratio,) * nd if isinstance(output_ratio, (float, int)) else \
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
