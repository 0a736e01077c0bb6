"""Normalization functions: layer, RMS, group, batch, instance and local response
norms, and ``normalize``.

The fused ones (``layer_norm``, ``rms_norm``, ``batch_norm`` in training) are one ``Op`` each; their
backward rules keep the normalized input from the forward pass, and under ``create_graph=True``
rebuild it from the inputs with recorded ops, so double backward is exact.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import _dtype
from ... import _kernels_loader as _kernels
from ..._tensor_base import TensorBase
from ...autograd import grad_mode
from ...autograd.function import Op
from .._autocast import cast as _amp_cast
from .._autocast import flag as _amp
from ._common import _check_floating, _graphing, _size

__all__ = [
    "normalize", "layer_norm", "rms_norm", "group_norm", "batch_norm", "instance_norm",
    "local_response_norm",
]


# ---------------------------------------------------------------------------------------------
# normalisation and distances (composites)


def normalize(input: TensorBase, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: TensorBase | None = None) -> TensorBase:
    """x / max(||x||_p, eps) along ``dim``."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps)
    res = input / denom
    if out is not None:
        with grad_mode.no_grad():
            out.copy_(res)
        return out
    return res


# ---------------------------------------------------------------------------------------------
# normalization


def layer_norm(input: Any, normalized_shape: Any, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Any:
    """Normalize over the trailing ``normalized_shape`` dims, then scale and shift."""
    if _amp.active:
        input, weight, bias = _amp_cast("layer_norm", input, weight, bias)
    if _half(input, "layer_norm", weight, bias):
        return layer_norm(input.float(), normalized_shape, _float(weight), _float(bias),
                          eps).to(input.dtype)
    shape = _normalized_shape(normalized_shape)
    k = len(shape)
    ishape = tuple(input.shape)
    if k == 0 or ishape[len(ishape) - k:] != shape or len(ishape) < k:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in shape)}], but got input of size{list(ishape)}"
        )
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != shape:
            raise RuntimeError(
                f"layer_norm: expected {name} of shape {list(shape)} (the normalized_shape), but "
                f"got {list(p.shape)}"
            )
    _check_floating("layer_norm", input)
    out = LayerNorm.apply(input, weight, bias, k, float(eps))
    if bias is not None and out.grad_fn is not None:
        out.grad_fn.bias = bias  # (PyTorch's node keeps it: ``_saved_bias``)
    return out


def rms_norm(input: Any, normalized_shape: Any, weight: Any = None, eps: float | None = None) -> Any:
    """Root-mean-square normalization over the trailing dims (eps defaults to finfo.eps)."""
    if _amp.active:
        input, weight = _amp_cast("rms_norm", input, weight)
    shape = _normalized_shape(normalized_shape)
    k = len(shape)
    ishape = tuple(input.shape)
    if k == 0 or len(ishape) < k or ishape[len(ishape) - k:] != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in shape)}], but got input of size{list(ishape)}"
        )
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(
            f"rms_norm: expected weight of shape {list(shape)} (the normalized_shape), but got "
            f"{list(weight.shape)}"
        )
    if input.is_complex():  # PyTorch's composite, holomorphic: x * rsqrt(mean(x * x) + eps)
        return _rms_norm_complex(input, k, weight, eps)
    _check_floating("rms_norm", input)
    if eps is None:
        eps = _finfo_eps(input)
    if _half(input, "rms_norm", weight):
        return rms_norm(input.float(), normalized_shape, _float(weight), eps).to(input.dtype)
    return RMSNorm.apply(input, weight, k, float(eps))


def group_norm(input: Any, num_groups: int, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Any:
    """Normalize each group of channels of each sample, then scale and shift per channel."""
    if _amp.active:
        input, weight, bias = _amp_cast("group_norm", input, weight, bias)
    if _half(input, "group_norm", weight, bias):
        return group_norm(input.float(), num_groups, _float(weight), _float(bias),
                          eps).to(input.dtype)
    if input.ndim < 2:
        raise RuntimeError(
            f"group_norm: expected an input of shape (N, C, *), got {list(input.shape)}"
        )
    C = input.shape[1]
    if num_groups <= 0 or C % num_groups != 0:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {list(input.shape)} and num_groups={num_groups}"
        )
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and (p.ndim != 1 or p.shape[0] != C):
            raise RuntimeError(
                f"group_norm: expected {name} of shape [{C}] (one per channel), got "
                f"{list(p.shape)}"
            )
    _check_floating("group_norm", input)
    return GroupNorm.apply(input, weight, bias, num_groups, float(eps))


def batch_norm(input: Any, running_mean: Any, running_var: Any, weight: Any = None,
               bias: Any = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> Any:
    """Batch normalization over all dims but 1; in training, updates the running stats in place."""
    if input.ndim < 2:
        raise ValueError(
            f"batch_norm: expected an input of shape (N, C) or (N, C, *), got {list(input.shape)}"
        )
    _check_floating("batch_norm", input)
    if _half(input, "batch_norm", weight, bias):  # (the running statistics keep their dtype)
        return batch_norm(input.float(), running_mean, running_var, _float(weight),
                          _float(bias), training, momentum, eps).to(input.dtype)
    C = input.shape[1]
    for name, p in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if p is not None and p.numel() != C:
            raise RuntimeError(
                f"{name} should contain {C} elements not {p.numel()} (batch_norm: input of shape "
                f"{list(input.shape)} has {C} channels in dim 1)"
            )
    if training:
        n = input.numel() // max(C, 1)
        if n <= 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size "
                f"{_size(input.shape)} (batch statistics need at least 2 values per channel: use "
                "a batch size above 1, or model.eval() to use the running statistics)"
            )
        out, mean, var = BatchNormTrain.apply(input, weight, bias, float(eps))
        if out.grad_fn is not None:  # what PyTorch's node shows as ``_saved_running_mean``...
            out.grad_fn.running = (running_mean, running_var)
        _update_running(running_mean, mean, momentum)
        _update_running(running_var, var, momentum)
        return out
    if running_mean is None or running_var is None:
        raise RuntimeError(
            "batch_norm: running_mean and running_var must be defined in evaluation mode "
            "(training=False); pass training=True to use the batch statistics"
        )
    rm = running_mean.detach().to(input.dtype).reshape(C)
    rv = running_var.detach().to(input.dtype).reshape(C)
    out = BatchNormEval.apply(input, weight, bias, rm, rv, float(eps))
    if out.grad_fn is not None:
        out.grad_fn.running = (running_mean, running_var)
    return out


def instance_norm(input: Any, running_mean: Any = None, running_var: Any = None,
                  weight: Any = None, bias: Any = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Any:
    """Normalize each channel of each sample over its spatial dims (uses input statistics)."""
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    if input.ndim < 3:
        raise ValueError(
            f"instance_norm: expected an input of shape (N, C, *spatial), got {list(input.shape)}"
        )
    N, C = input.shape[0], input.shape[1]
    if running_mean is not None or running_var is not None:
        with grad_mode.no_grad():
            flat = input.detach().reshape(N, C, -1)
            n = flat.shape[-1]
            mean = flat.mean(-1).mean(0)
            d = flat - flat.mean(-1, keepdim=True)
            var = ((d * d).sum(-1) / max(n - 1, 1)).mean(0)
        _update_running(running_mean, mean, momentum)
        _update_running(running_var, var, momentum)
    return group_norm(input, C, weight, bias, eps)


def local_response_norm(input: Any, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Any:
    """Normalize each channel by the squared activity of ``size`` neighbouring channels."""
    if input.ndim < 3:
        raise ValueError(
            f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions; "
            f"local_response_norm takes (N, C, *), got shape {list(input.shape)})"
        )
    if input.numel() == 0:
        return input * 1
    _check_floating("local_response_norm", input)
    return LocalResponseNorm.apply(input, int(size), float(alpha), float(beta), float(k))


class LayerNorm(Op):
    """x_hat = (x - mean) * rstd over the last k dims, rstd = 1 / sqrt(var + eps);  out = x_hat * w + b
    grad_x = rstd * (gh - mean(gh) - x_hat * mean(gh * x_hat)),  gh = grad * w
    grad_w = sum(grad * x_hat),  grad_b = sum(grad)   (over the leading dims)
    Saves x, w, mean and rstd (PyTorch's saves); backward recomputes x_hat, a block of rows at
    a time."""
    node_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any, b: Any, k: int, eps: float) -> Any:
        axes = tuple(range(x.ndim - k, x.ndim))
        # PyTorch normalizes a contiguous copy, so its result is contiguous whatever x's layout
        xc = x if x.flags.c_contiguous else ctx.xp.ascontiguousarray(x)
        fast = _kernels.layer_norm(xc, w, b, k, eps)  # the eager kernel: y, mean, rstd per row
        if fast is not None:
            xhat, mu, rstd = fast  # (already scaled and shifted)
        elif _rows_ok(xc):
            xhat, rstd, mu = _norm_stats_rows(xc, k, eps)
        else:
            xhat, rstd, mu = _norm_moments(xc, axes, eps, ctx.xp)
        out = xhat  # (x_hat is this op's own array: scaled and shifted in place)
        if w is not None and fast is None:
            if w.dtype == out.dtype:
                out *= w
            else:
                out = out * w
        if b is not None and fast is None:
            if b.dtype == out.dtype:
                out += b
            else:
                out = out + b
        ctx.axes, ctx.eps, ctx.shape = axes, eps, x.shape
        ctx.save_for_backward(x, w, mu, rstd)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, w, mu, rstd = ctx.saved
        axes = ctx.axes
        need = ctx.needs_input_grad
        n = 1
        for a in axes:
            n *= x.shape[a]
        if _graphing(ctx):
            xhat, rstd = _norm_stats(x, axes, ctx.eps, ctx.xp)
        elif (fast := _kernels.layer_norm_backward(x, w, mu, rstd, grad, len(axes),
                                                   need)) is not None:
            return (*fast, None, None)
        elif (_rows_ok(x) and type(grad) is np.ndarray and grad.dtype == x.dtype
              and (w is None or w.dtype == x.dtype)):
            return _layer_norm_backward_rows(x, w, mu, rstd, grad, n, need, len(axes))
        else:
            xhat = (x - mu) * rstd
        gx = gw = gb = None
        if need[0]:
            gxhat = grad * w if w is not None else grad
            gx = _norm_input_grad(gxhat, xhat, rstd, axes, n)
        if need[1]:
            gw = grad * xhat
        if need[2]:
            gb = grad
        return gx, gw, gb, None, None


class GroupNorm(Op):
    """x_hat = (x - mean) * rstd over each group of C/G channels of a sample (and all their
    positions), rstd = 1 / sqrt(var + eps);  out = x_hat * w + b (w, b per channel)
    grad_x = rstd * (gh - mean(gh) - x_hat * mean(gh * x_hat)) over each group,  gh = grad * w
    grad_w = sum(grad * x_hat),  grad_b = sum(grad)   (over samples and positions)
    Saves x, w, mean and rstd (PyTorch's saves); backward recomputes x_hat, a block of samples
    at a time."""
    node_name = "NativeGroupNormBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any, b: Any, groups: int, eps: float) -> Any:
        n, c = x.shape[0], x.shape[1]
        hw = math.prod(x.shape[2:])
        xc = x if x.flags.c_contiguous else ctx.xp.ascontiguousarray(x)
        if (fast := _kernels.group_norm(xc, w, b, groups, eps)) is not None:  # the eager kernel
            out, mu, rstd = fast
            ctx.groups, ctx.eps, ctx.shape = groups, eps, x.shape
            ctx.save_for_backward(x, w, mu, rstd)
            return out
        g3 = xc.reshape(n, groups, c // groups * hw)
        if _rows_ok(g3):
            xhat, rstd, mu = _norm_stats_rows(g3, 1, eps)
        else:
            xhat, rstd, mu = _norm_moments(g3, (2,), eps, ctx.xp)
        out = xhat.reshape(n, c, hw)  # (x_hat is this op's own array: scaled and shifted in place)
        if w is not None:
            if w.dtype == out.dtype:
                out *= w.reshape(c, 1)
            else:
                out = out * w.reshape(c, 1)
        if b is not None:
            if b.dtype == out.dtype:
                out += b.reshape(c, 1)
            else:
                out = out + b.reshape(c, 1)
        ctx.groups, ctx.eps, ctx.shape = groups, eps, x.shape
        ctx.save_for_backward(x, w, mu, rstd)
        return out.reshape(x.shape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, w, mu, rstd = ctx.saved
        need = ctx.needs_input_grad
        groups = ctx.groups
        n, c = x.shape[0], x.shape[1]
        hw = math.prod(x.shape[2:])
        m = c // groups * hw
        if _graphing(ctx):
            xhat, rstd = _norm_stats(x.reshape((n, groups, m)), (2,), ctx.eps, ctx.xp)
        elif (fast := _kernels.group_norm_backward(x, w, mu, rstd, grad, groups,
                                                   need)) is not None:
            return (*fast, None, None)
        elif (_rows_ok(x) and type(grad) is np.ndarray and grad.dtype == x.dtype
              and (w is None or w.dtype == x.dtype)):
            return _group_norm_backward_blocks(x, w, mu, rstd, grad, groups, need)
        else:
            xhat = (x.reshape(n, groups, m) - mu) * rstd
        xhat = xhat.reshape((n, c, hw))
        g = grad.reshape((n, c, hw))
        gx = gw = gb = None
        if need[0]:
            gh = g * w.reshape((c, 1)) if w is not None else g
            gx = _norm_input_grad(gh.reshape((n, groups, m)), xhat.reshape((n, groups, m)),
                                  rstd, (2,), m).reshape(x.shape)
        if need[1]:
            gw = (g * xhat).sum(axis=(0, 2))
        if need[2]:
            gb = g.sum(axis=(0, 2))
        return gx, gw, gb, None, None


class RMSNorm(Op):
    """r = 1 / sqrt(mean(x**2) + eps) over the last k dims;  out = x * r * w
    grad_x = r * (gh - x_hat * mean(gh * x_hat)),  gh = grad * w,  x_hat = x * r
    grad_w = sum(grad * x_hat)   (over the leading dims)"""
    node_name = "RmsNormBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any, k: int, eps: float) -> Any:
        axes = tuple(range(x.ndim - k, x.ndim))
        ctx.axes, ctx.eps = axes, eps
        if (res := _kernels.rms_norm(x, w, k, eps)) is not None:  # the eager kernel
            ctx.save_for_backward(x, w, None, res[1])  # (x_hat recomputed: PyTorch's saves)
            return res[0]
        xhat, r = _rms_stats(x, axes, eps, ctx.xp)
        ctx.save_for_backward(x, w, xhat, r)
        return xhat * w if w is not None else xhat

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, w, xhat, r = ctx.saved
        axes = ctx.axes
        if _graphing(ctx):
            xhat, r = _rms_stats(x, axes, ctx.eps, ctx.xp)
        elif xhat is None:  # saved by the kernel
            res = _kernels.rms_norm_backward(x, w, r, grad, len(axes), ctx.needs_input_grad)
            if res is not None:
                return res[0], res[1], None, None
            xhat = x * r
        n = 1
        for a in axes:
            n *= x.shape[a]
        gx = gw = None
        if ctx.needs_input_grad[0]:
            gxhat = grad * w if w is not None else grad
            gx = r * (gxhat - xhat * ((gxhat * xhat).sum(axis=axes, keepdims=True) / n))
        if ctx.needs_input_grad[1]:
            gw = grad * xhat
        return gx, gw, None, None


class BatchNormTrain(Op):
    """x_hat = (x - mean) * rstd over all dims but 1;  out = x_hat * w + b
    grad_x = rstd * (gh - mean(gh) - x_hat * mean(gh * x_hat)),  gh = grad * w
    grad_w = sum(grad * x_hat),  grad_b = sum(grad)   (over all dims but 1)
    Also returns the batch mean and unbiased variance (non-differentiable) for running stats.
    Saves x, w, mean and rstd (PyTorch's saves); backward recomputes x_hat a block of samples
    at a time."""
    node_name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any, b: Any, eps: float) -> Any:
        xp = ctx.xp
        axes = (0,) + tuple(range(2, x.ndim))
        bshape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        n = x.size // x.shape[1]
        if (fast := _kernels.batch_norm(x, w, b, eps)) is not None:  # the eager kernel
            out, mean, var, rstd = fast
            mu, rstd = mean.reshape(bshape), rstd.reshape(bshape)
        else:
            mu = x.sum(axis=axes, keepdims=True) / n
            xc = x - mu
            var = _sum_of_squares(xc, axes) / n
            rstd = 1 / xp.sqrt(var + eps)
            out = xc  # x - mean, then x_hat, then the output, in place (the same values)
            out *= rstd
            if w is not None:
                out *= w.reshape(bshape)
            if b is not None:
                out += b.reshape(bshape)
            mean = mu.reshape(-1)
        var = var.reshape(-1) * (n / (n - 1))
        ctx.axes, ctx.eps, ctx.bshape, ctx.n = axes, eps, bshape, n
        ctx.save_for_backward(x, w, mu, rstd)
        ctx.mark_non_differentiable(mean, var)
        return out, mean, var

    @staticmethod
    def backward(ctx: Any, grad: Any, _gm: Any = None, _gv: Any = None) -> Any:
        x, w, mu, rstd = ctx.saved
        axes = ctx.axes
        n = ctx.n
        need = ctx.needs_input_grad
        if _graphing(ctx):
            xhat, rstd = _norm_stats(x, axes, ctx.eps, ctx.xp)
        elif (fast := _kernels.batch_norm_backward(x, w, mu.reshape(-1), rstd.reshape(-1), grad,
                                                   need)) is not None:
            return (*fast, None)
        elif type(x) is np.ndarray and type(grad) is np.ndarray:
            return _batch_norm_backward_blocks(x, w, mu, rstd, grad, ctx.bshape, n, need)
        else:
            xhat = (x - mu) * rstd
        gx = gw = gb = None
        if need[0]:
            gxhat = grad * w.reshape(ctx.bshape) if w is not None else grad
            gx = _norm_input_grad(gxhat, xhat, rstd, axes, n)
        if need[1]:
            gw = (grad * xhat).sum(axis=axes)
        if need[2]:
            gb = grad.sum(axis=axes)
        return gx, gw, gb, None


class BatchNormEval(Op):
    """batch_norm in evaluation: rstd = 1 / sqrt(running_var + eps), scale = rstd * w,
    shift = b - running_mean * scale;  out = x * scale + shift (per channel, dim 1)
    grad_x = grad * scale,  grad_w = sum(grad * x_hat), x_hat = (x - running_mean) * rstd,
    grad_b = sum(grad)   (over all dims but 1; the running statistics get none)"""
    node_name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any, b: Any, rm: Any, rv: Any, eps: float) -> Any:
        scale, shift = _eval_affine(ctx.xp, w, b, rm, rv, eps)
        ctx.eps, ctx.bshape = eps, (x.shape[1],) + (1,) * (x.ndim - 2)
        ctx.save_for_backward(x, w, rm, rv)
        if (out := _kernels.channel_affine(x, scale, shift)) is not None:  # the eager kernel
            return out
        return x * scale.reshape(ctx.bshape) + shift.reshape(ctx.bshape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, w, rm, rv = ctx.saved
        need, bshape = ctx.needs_input_grad, ctx.bshape
        axes = (0,) + tuple(range(2, x.ndim))
        rstd = 1 / ctx.xp.sqrt(rv + ctx.eps)
        scale = rstd * w if w is not None else rstd
        gx = gw = gb = None
        if need[0]:
            gx = None if _graphing(ctx) else _kernels.channel_affine(grad, scale, None)
            if gx is None:
                gx = grad * scale.reshape(bshape)
        if need[1] or need[2]:
            fast = None if _graphing(ctx) else _kernels.batch_norm_backward(
                x, None, rm, rstd, grad, (False, need[1], need[2]))
            if fast is not None:
                gw, gb = fast[1], fast[2]
            else:
                if need[1]:
                    gw = (grad * ((x - rm.reshape(bshape)) * rstd.reshape(bshape))).sum(axis=axes)
                if need[2]:
                    gb = grad.sum(axis=axes)
        return gx, gw, gb, None, None, None


class LocalResponseNorm(Op):
    """D_c = k + alpha / n * sum_{c' in win(c)} x_c'^2;  out = x * D^-beta
    grad_x_c' = grad_c' D_c'^-beta - 2 beta alpha / n * x_c' * sum_{c: c' in win(c)} grad_c x_c D_c^(-beta-1)"""
    @staticmethod
    def forward(ctx: Any, x: Any, size: int, alpha: float, beta: float, k: float) -> Any:
        d = _lrn_denominator(ctx.xp, x, size, alpha, k)
        ctx.size, ctx.alpha, ctx.beta, ctx.k = size, alpha, beta, k
        ctx.save_for_backward(x, d)
        return x * d ** (-beta)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, d = ctx.saved
        xp, size, alpha, beta = ctx.xp, ctx.size, ctx.alpha, ctx.beta
        if _graphing(ctx):
            d = _lrn_denominator(xp, x, size, alpha, ctx.k)
        inner = _channel_window_sum(xp, grad * x * d ** (-beta - 1), (size - 1) // 2, size // 2)
        gx = grad * d ** (-beta) - (2 * beta * alpha / size) * x * inner
        return gx, None, None, None, None


def _eval_affine(xp: Any, w: Any, b: Any, rm: Any, rv: Any, eps: float) -> tuple[Any, Any]:
    """batch_norm's evaluation scale and shift per channel: rstd * w and b - rm * scale."""
    scale = 1 / xp.sqrt(rv + eps)
    if w is not None:
        scale = scale * w
    shift = -rm * scale
    if b is not None:
        shift = shift + b
    return scale, shift


def _norm_stats(x: Any, axes: tuple[int, ...], eps: float, xp: Any) -> tuple[Any, Any]:
    """(x_hat, 1/sqrt(var + eps)) over ``axes``, keepdims; works on arrays or tensors."""
    xhat, rstd, _ = _norm_moments(x, axes, eps, xp)
    return xhat, rstd


def _norm_moments(x: Any, axes: tuple[int, ...], eps: float, xp: Any) -> tuple[Any, Any, Any]:
    """(x_hat, 1/sqrt(var + eps), mean) over ``axes``, keepdims; arrays or tensors."""
    n = 1
    for a in axes:
        n *= x.shape[a]
    mu = x.sum(axis=axes, keepdims=True) / n
    xc = x - mu
    var = (xc * xc).sum(axis=axes, keepdims=True) / n
    rstd = 1 / xp.sqrt(var + eps)
    return xc * rstd, rstd, mu


def _batch_norm_backward_blocks(x: np.ndarray, w: Any, mu: np.ndarray, rstd: np.ndarray,
                                grad: np.ndarray, bshape: tuple, n: int, need: tuple) -> tuple:
    """BatchNorm's backward on NumPy arrays in two passes over blocks of samples: the channel
    sums of grad and grad * x_hat, then grad_x block by block; each block's x_hat recomputed
    from x, mean and rstd, so no full-size array but the result."""
    axes = (0,) + tuple(range(2, x.ndim))
    g = np.broadcast_to(grad, x.shape)
    step = max(1, _ROWS_BLOCK // max(1, x[:1].size))
    C = x.shape[1]
    sg = np.zeros(C, grad.dtype)
    sgx = np.zeros(C, grad.dtype)
    for r0 in range(0, x.shape[0], step):
        xh = x[r0:r0 + step] - mu
        xh *= rstd
        gc = g[r0:r0 + step]
        sg += gc.sum(axis=axes)
        xh *= gc
        sgx += xh.sum(axis=axes)
    gx = None
    if need[0]:
        wb = w.reshape(bshape) if w is not None else None
        mg = (sg if w is None else sg * w.reshape(-1)).reshape(bshape) / n
        mgx = (sgx if w is None else sgx * w.reshape(-1)).reshape(bshape) / n
        gx = np.empty(x.shape, np.result_type(x, grad))
        for r0 in range(0, x.shape[0], step):
            xh = x[r0:r0 + step] - mu
            xh *= rstd
            xh *= mgx
            xh += mg
            gh = g[r0:r0 + step] * wb if wb is not None else g[r0:r0 + step]
            out = gx[r0:r0 + step]
            np.subtract(gh, xh, out=out)
            out *= rstd
    return (gx, sgx.astype(x.dtype, copy=False) if need[1] else None,
            sg.astype(x.dtype, copy=False) if need[2] else None, None)


def _sum_of_squares(xc: Any, axes: tuple[int, ...]) -> Any:
    """sum(xc * xc) over ``axes`` (0 among them), keepdims: squares a block of samples at a
    time, so no full-size temporary beside the result's input."""
    step = max(1, _ROWS_BLOCK // max(1, xc[:1].size))
    total = None
    for r0 in range(0, xc.shape[0], step):
        blk = xc[r0:r0 + step]
        part = (blk * blk).sum(axis=axes, keepdims=True)
        total = part if total is None else total + part
    if total is None:  # an empty batch: the channels' zeros, as the one-call sum gives
        total = (xc * xc).sum(axis=axes, keepdims=True)
    return total


def _norm_input_grad(gxhat: Any, xhat: Any, rstd: Any, axes: tuple[int, ...], n: int) -> Any:
    """d/dx of x_hat = (x - mean) / std, applied to gxhat."""
    mg = gxhat.sum(axis=axes, keepdims=True) / n
    mgx = (gxhat * xhat).sum(axis=axes, keepdims=True) / n
    return rstd * (gxhat - mg - xhat * mgx)


def _rows_ok(a: Any) -> bool:
    """A C-ordered float32 NumPy array: its normalized dims are rows of a matrix. (float64 keeps
    the plain sums: its parity tests compare summation orders to 1e-12.)"""
    return (type(a) is np.ndarray and a.dtype == np.float32 and a.flags.c_contiguous
            and a.size > 0)


def _norm_stats_rows(x: np.ndarray, k: int, eps: float) -> tuple[np.ndarray, np.ndarray,
                                                                  np.ndarray]:
    """(x_hat, rstd, mean) over the last ``k`` dims of a C-ordered NumPy array, as rows of a
    matrix: the two row means are matrix-vector products (BLAS) and the rest in-place passes.
    Equal to ``_norm_stats`` within rounding; 3x faster on GPT's 1024x128 (0.82 -> 0.27 ms)."""
    n = math.prod(x.shape[x.ndim - k:])
    x2 = x.reshape(-1, n)
    inv = np.full(n, 1.0 / n, x.dtype)
    mu = x2 @ inv
    xc = x2 - mu[:, None]
    var = np.square(xc) @ inv
    var += eps
    rstd = np.sqrt(var)
    np.reciprocal(rstd, out=rstd)
    xc *= rstd[:, None]
    kept = x.shape[:x.ndim - k] + (1,) * k
    return xc.reshape(x.shape), rstd.reshape(kept), mu.reshape(kept)


_ROWS_BLOCK = 1 << 16  # elements per block of rows (norms' block loops: a 256 KB float32 block)


def _layer_norm_backward_rows(x: np.ndarray, w: Any, mu: np.ndarray, rstd: np.ndarray,
                              grad: np.ndarray, n: int, need: tuple, k: int) -> tuple:
    """LayerNorm's backward on C-ordered NumPy arrays, a block of rows at a time: each block's
    x_hat recomputed from x, mean and rstd exactly as the forward made it, so no full-size
    array but the result (PyTorch's kernel works row by row too). ``grad`` may be a broadcast
    view (a sum's gradient): its rows are read in place."""
    x2, g2 = x.reshape(-1, n), np.broadcast_to(grad, x.shape).reshape(-1, n)
    mu1, r1 = mu.reshape(-1), rstd.reshape(-1)
    w1 = w.reshape(-1) if w is not None else None
    gx = np.empty_like(x2) if need[0] else None
    gw = np.zeros(n, x.dtype) if need[1] else None
    gb = np.zeros(n, x.dtype) if need[2] else None
    step = max(1, _ROWS_BLOCK // max(1, n))
    for r0 in range(0, x2.shape[0], step):
        sl = slice(r0, r0 + step)
        xh = x2[sl] - mu1[sl, None]
        xh *= r1[sl, None]
        g = g2[sl]
        if gw is not None:
            gw += (g * xh).sum(0)
        if gb is not None:
            gb += g.sum(0)
        if gx is not None:
            gh = g * w1 if w1 is not None else g
            gx[sl] = _norm_input_grad_rows(gh, xh, r1[sl, None], n)
    kshape = x.shape[x.ndim - k:]
    return (gx.reshape(x.shape) if gx is not None else None,
            gw.reshape(kshape) if gw is not None else None,
            gb.reshape(kshape) if gb is not None else None, None, None)


def _group_norm_backward_blocks(x: np.ndarray, w: Any, mu: np.ndarray, rstd: np.ndarray,
                                grad: np.ndarray, groups: int, need: tuple) -> tuple:
    """GroupNorm's backward on a C-ordered float32 NumPy ``x``, a block of samples at a time:
    each block's x_hat recomputed from x, mean and rstd as the forward made it, so no
    full-size array but the result. ``grad`` may be a broadcast view (a sum's gradient)."""
    n, c = x.shape[0], x.shape[1]
    hw = math.prod(x.shape[2:])
    m = c // groups * hw
    g = np.broadcast_to(grad, x.shape)
    wc = w.reshape(c, 1) if w is not None else None
    gx = np.empty(x.shape, x.dtype) if need[0] else None
    gw = np.zeros(c, x.dtype) if need[1] else None
    gb = np.zeros(c, x.dtype) if need[2] else None
    step = max(1, _ROWS_BLOCK // max(1, x[:1].size))
    for r0 in range(0, n, step):
        sl = slice(r0, r0 + step)
        nb = x[sl].shape[0]
        xh = x[sl].reshape(nb, groups, m) - mu[sl]
        xh *= rstd[sl]
        xh = xh.reshape(nb, c, hw)
        gb3 = g[sl].reshape(nb, c, hw)
        if gw is not None:
            gw += (gb3 * xh).sum(axis=(0, 2))
        if gb is not None:
            gb += gb3.sum(axis=(0, 2))
        if gx is not None:
            gh = gb3 * wc if wc is not None else gb3
            gx[sl] = _norm_input_grad_rows(np.ascontiguousarray(gh).reshape(nb * groups, m),
                                           xh.reshape(nb * groups, m), rstd[sl],
                                           m).reshape(x[sl].shape)
    return gx, gw, gb, None, None


def _norm_input_grad_rows(gxhat: np.ndarray, xhat: np.ndarray, rstd: np.ndarray,
                          n: int) -> np.ndarray:
    """``_norm_input_grad`` on C-ordered NumPy arrays, as rows (row means by BLAS)."""
    g2, h2 = gxhat.reshape(-1, n), xhat.reshape(-1, n)
    inv = np.full(n, 1.0 / n, g2.dtype)
    mg = g2 @ inv
    mgx = (g2 * h2) @ inv
    out = h2 * mgx[:, None]
    out += mg[:, None]
    np.subtract(g2, out, out=out)
    out *= rstd.reshape(-1, 1)
    return out.reshape(gxhat.shape)


def _half(t: Any, fn: str, *params: Any) -> bool:
    """A float16/bfloat16 input: PyTorch's norms compute it in float32 (their accumulate type)
    and round the result once to the input's dtype; its parameters must be all of the input's
    dtype or all float32 (mixed precision), as PyTorch requires. The norms here do the same
    through a float32 call."""
    if not (t.dtype.itemsize == 2 and t.is_floating_point()):
        return False
    kinds = {p.dtype for p in params if p is not None}
    if kinds and kinds != {t.dtype} and kinds != {_dtype.float32}:
        got = ", ".join(f"{name} {p.dtype}" for name, p in zip(("weight", "bias"), params)
                        if p is not None)
        raise RuntimeError(
            f"{fn}: mixed dtype: a {t.dtype} input takes parameters that are all {t.dtype} or "
            f"all torch.float32, got {got} (cast them alike, e.g. module.float())")
    return True


def _float(p: Any) -> Any:
    return p.float() if p is not None and p.dtype.itemsize == 2 else p


def _normalized_shape(normalized_shape: Any) -> tuple[int, ...]:
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(int(s) for s in normalized_shape)


def _rms_stats(x: Any, axes: tuple[int, ...], eps: float, xp: Any) -> tuple[Any, Any]:
    n = 1
    for a in axes:
        n *= x.shape[a]
    r = 1 / xp.sqrt((x * x).sum(axis=axes, keepdims=True) / n + eps)
    return x * r, r


def _rms_norm_complex(x: Any, k: int, weight: Any, eps: float | None) -> Any:
    """rms_norm of a complex tensor as PyTorch computes it: the mean of x * x (not |x|^2) over
    the last ``k`` dims, eps (default: the real dtype's finfo.eps) added, its rsqrt times x."""
    if eps is None:
        eps = _finfo_eps(x.real)
    dims = tuple(range(x.ndim - k, x.ndim))
    out = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


def _finfo_eps(x: Any) -> float:
    return {"float16": 0.0009765625, "bfloat16": 0.0078125, "float32": 1.1920928955078125e-07,
            "float64": 2.220446049250313e-16}[x.dtype.name]


def _update_running(stat: Any, batch: Any, momentum: float) -> None:
    """stat = (1 - momentum) * stat + momentum * batch, in place and outside the graph."""
    if stat is None:
        return
    arr = stat._data
    new = arr * (1 - momentum) + batch._data.astype(arr.dtype) * momentum
    arr[...] = new.reshape(arr.shape)
    stat._bump_version()


def _shift_channels(xp: Any, a: Any, d: int) -> Any:
    """b[:, c] = a[:, c - d] (zero where c - d falls outside the channels)."""
    C = a.shape[1]
    if d == 0:
        return a
    if abs(d) >= C:
        return a * 0
    if d > 0:
        return xp.concatenate([a[:, :d] * 0, a[:, : C - d]], axis=1)
    return xp.concatenate([a[:, -d:], a[:, :(-d)] * 0], axis=1)


def _channel_window_sum(xp: Any, a: Any, before: int, after: int) -> Any:
    """s[:, c] = sum of a[:, c - before .. c + after] (zero padded)."""
    s = a
    for d in range(-after, before + 1):
        if d != 0:
            s = s + _shift_channels(xp, a, d)
    return s


def _lrn_denominator(xp: Any, x: Any, size: int, alpha: float, k: float) -> Any:
    return k + (alpha / size) * _channel_window_sum(xp, x * x, size // 2, (size - 1) // 2)
