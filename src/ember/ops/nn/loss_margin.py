"""Regression, margin and embedding losses (``mse_loss``, ``huber_loss``, ``kl_div``,
``triplet_margin_loss``...): compositions of elementwise ops and reductions, so their gradients
come from those ops' rules; except ``mse_loss``, ``smooth_l1_loss``, ``huber_loss`` and
``multi_margin_loss``, one ``Op`` each as in PyTorch: they save the input and the target (not
their differences) and their backward recomputes what it needs, a block at a time.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ... import _kernels_loader as _kernels
from ... import _threads
from ..._tensor_base import TensorBase
from ...autograd.function import Op
from .. import comparison as _cmp
from .. import creation as _creation
from .. import pointwise_math as _pm
from .. import pointwise_piecewise as _pp
from .._autocast import cast as _amp_cast
from .._autocast import flag as _amp
from .._promote import _refuse_complex
from .._reduce import _sum_arr
from ._common import (
    _as_float_tensor,
    _check_reduction,
    _check_target_size,
    _graphing,
    _legacy_reduction,
    _quiet,
    _reduce,
    _size,
    _user_stacklevel,
)
from .distance import pairwise_distance

__all__ = [
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "cosine_embedding_loss",
    "margin_ranking_loss", "triplet_margin_loss", "soft_margin_loss", "poisson_nll_loss",
    "gaussian_nll_loss", "hinge_embedding_loss", "multilabel_soft_margin_loss",
    "multi_margin_loss", "multilabel_margin_loss", "triplet_margin_with_distance_loss",
]


# ---------------------------------------------------------------------------------------------
# regression and margin losses (compositions)


def mse_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean", weight: Any = None) -> Any:
    """Mean squared error ``(input - target)**2``, reduced."""
    if _amp.active:
        input, target, weight = _amp_cast("mse_loss", input, target, weight)
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    _refuse_complex("mse_cpu", input, target)  # (PyTorch defines no complex squared error)
    _check_target_size("mse_loss", input, target)
    if weight is None and _fusable(input, target):
        return MseLoss.apply(input, target, reduction)
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def l1_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
            reduction: str = "mean", weight: Any = None) -> Any:
    """Mean absolute error ``|input - target|``, reduced (gradient 0 where they are equal)."""
    if _amp.active:
        input, target, weight = _amp_cast("l1_loss", input, target, weight)
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    _check_target_size("l1_loss", input, target)
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
                   reduction: str = "mean", beta: float = 1.0) -> Any:
    """0.5 d**2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target)."""
    if _amp.active:
        input, target = _amp_cast("smooth_l1_loss", input, target)
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _refuse_complex("smooth_l1_cpu", input, target)
    _check_target_size("smooth_l1_loss", input, target)
    if beta > 0 and _fusable(input, target):
        return SmoothL1Loss.apply(input, target, reduction, float(beta), False)
    d = input - target
    ad = d.abs()
    if beta == 0.0:
        return _reduce(ad, reduction)
    loss = _pp.where(ad < beta, d * d * (0.5 / beta), ad - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input: Any, target: Any, reduction: str = "mean", delta: float = 1.0,
               weight: Any = None) -> Any:
    """0.5 d**2 where |d| < delta, else delta (|d| - 0.5 delta) (d = input - target)."""
    if _amp.active:
        input, target, weight = _amp_cast("huber_loss", input, target, weight)
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _refuse_complex("huber_cpu", input, target)
    _check_target_size("huber_loss", input, target)
    if weight is None and _fusable(input, target):
        return HuberLoss.apply(input, target, reduction, float(delta), True)
    d = input - target
    ad = d.abs()
    loss = _pp.where(ad < delta, d * d * 0.5, (ad - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
           reduction: str = "mean", log_target: bool = False) -> Any:
    """KL divergence with ``input`` as log-probabilities: target * (log target - input)."""
    if _amp.active:
        input, target = _amp_cast("kl_div", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = _pm.xlogy(target, target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim != 0 else total
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1: Any, input2: Any, target: Any, margin: float = 0.0,
                          size_average: Any = None, reduce: Any = None,
                          reduction: str = "mean") -> Any:
    """1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin) where target == -1."""
    if _amp.active:
        input1, input2, target = _amp_cast("cosine_embedding_loss", input1, input2, target)
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    if tuple(input1.shape) != tuple(input2.shape):
        raise RuntimeError(
            f"cosine_embedding_loss: input1 and input2 must have the same shape, got "
            f"{list(input1.shape)} and {list(input2.shape)}"
        )
    if input1.ndim not in (1, 2) or target.ndim != input1.ndim - 1:
        raise RuntimeError(
            f"cosine_embedding_loss: 0D target tensor expects 1D input tensors, 1D target tensor "
            f"expects 2D input tensors, but got input of shape {list(input1.shape)} and target "
            f"of shape {list(target.shape)}"
        )
    eps = 1e-12
    dot = (input1 * input2).sum(-1)
    m1 = (input1 * input1).sum(-1) + eps
    m2 = (input2 * input2).sum(-1) + eps
    cos = dot / (m1 * m2).sqrt()
    zeros = cos * 0
    pos = _pp.where(target == 1, 1 - cos, zeros)
    neg = _pp.where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _reduce(pos + neg, reduction)


def margin_ranking_loss(input1: Any, input2: Any, target: Any, margin: float = 0.0,
                        size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Any:
    """max(0, -target * (input1 - input2) + margin)."""
    if _amp.active:
        input1, input2, target = _amp_cast("margin_ranking_loss", input1, input2, target)
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {_size(input1.shape)}, input2: {_size(input2.shape)}, target: "
            f"{_size(target.shape)} "
        )
    loss = (-target * (input1 - input2) + margin).clamp_min(0)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor: Any, positive: Any, negative: Any, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False,
                        size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Any:
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with p-norm distances."""
    if _amp.active:
        anchor, positive, negative = _amp_cast("triplet_margin_loss", anchor, positive, negative)
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    if margin <= 0:
        raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
    a, pdim, n = anchor.ndim, positive.ndim, negative.ndim
    if not (a == pdim == n):
        raise RuntimeError(
            f"The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {a}D, positive {pdim}D, and negative {n}D inputs"
        )
    d_pos = _pnorm_distance(anchor, positive, p, eps)
    d_neg = _pnorm_distance(anchor, negative, p, eps)
    if swap:
        d_swap = _pnorm_distance(positive, negative, p, eps)
        d_neg = _cmp.minimum(d_neg, d_swap)
    loss = (margin + d_pos - d_neg).clamp_min(0)
    return _reduce(loss, reduction)


def soft_margin_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
                     reduction: str = "mean") -> Any:
    """log(1 + exp(-target * input)), computed stably."""
    if _amp.active:
        input, target = _amp_cast("soft_margin_loss", input, target)
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    _check_target_size("soft_margin_loss", input, target)
    loss = _pm.logaddexp(0.0, -target * input)
    return _reduce(loss, reduction)


def poisson_nll_loss(input: Any, target: Any, log_input: bool = True, full: bool = False,
                     size_average: Any = None, eps: float = 1e-8, reduce: Any = None,
                     reduction: str = "mean") -> Any:
    """Poisson negative log likelihood: exp(input) - target * input (log_input=True)."""
    if _amp.active:
        input, target = _amp_cast("poisson_nll_loss", input, target)
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        safe = _pp.where(target > 1, target, target * 0 + 1)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + _pp.where(target > 1, stirling, stirling * 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Any, target: Any, var: Any, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Any:
    """0.5 (log(max(var, eps)) + (input - target)**2 / max(var, eps)) (+ 0.5 log(2 pi) if full)."""
    _check_reduction(reduction)
    if not isinstance(var, TensorBase):
        var = _as_float_tensor(float(var), input) * input.new_ones(tuple(input.shape))
    ishape, vshape = tuple(input.shape), tuple(var.shape)
    if vshape != ishape:
        if ishape[:-1] == vshape:
            var = var.unsqueeze(-1)
        elif ishape[:-1] == vshape[:-1] and vshape[-1:] == (1,):
            pass
        else:
            raise ValueError(
                f"var is of incorrect size: gaussian_nll_loss got input {list(ishape)} and var "
                f"{list(vshape)}; var must have the input's shape, or that shape with the last "
                "dimension removed or set to 1"
            )
    if bool((var._data < 0).any()):
        raise ValueError("var has negative entry/entries")
    # PyTorch clamps var in place without recording it: the gradient passes straight through.
    vd = var.detach()
    var = var + (vd.clamp(min=eps) - vd)
    d = input - target
    loss = 0.5 * (var.log() + d * d / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def hinge_embedding_loss(input: Any, target: Any, margin: float = 1.0, size_average: Any = None,
                         reduce: Any = None, reduction: str = "mean") -> Any:
    """input where target == 1, max(0, margin - input) where target == -1."""
    if _amp.active:
        input, target = _amp_cast("hinge_embedding_loss", input, target)
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    zeros = input * 0
    margin_part = _pp.where(target != 1, (margin - input).clamp_min(0), zeros)
    self_part = _pp.where(target != -1, input, zeros)
    return _reduce(margin_part + self_part, reduction)


def multilabel_soft_margin_loss(input: Any, target: Any, weight: Any = None,
                                size_average: Any = None, reduce: Any = None,
                                reduction: str = "mean") -> Any:
    """Per-class binary logistic loss averaged over classes: -(t log s(x) + (1-t) log s(-x))."""
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    loss = target * _pm.logaddexp(0.0, -input) + (1 - target) * _pm.logaddexp(0.0, input)
    if weight is not None:
        loss = loss * weight
    C = input.shape[-1] if input.ndim else 1
    loss = loss.sum(input.ndim - 1) / C if input.ndim else loss
    return _reduce(loss, reduction)


def _pnorm_distance(x1: Any, x2: Any, p: float, eps: float) -> Any:
    """||x1 - x2 + eps||_p over the last dimension (as ``pairwise_distance``)."""
    d = x1 - x2 + eps
    if p == 2:
        return (d * d).sum(-1).sqrt()
    if p == 1:
        return d.abs().sum(-1)
    return (d.abs() ** p).sum(-1) ** (1.0 / p)


# ---------------------------------------------------------------------------------------------
# margin losses, power-average pooling and max-unpooling (composites)


def multi_margin_loss(input: Any, target: Any, p: int = 1, margin: float = 1.0,
                      weight: Any = None, size_average: Any = None, reduce: Any = None,
                      reduction: str = "mean") -> Any:
    """Multi-class hinge loss: sum_{j != y} max(0, margin - x_y + x_j)^p / C per sample
    (times ``weight[y]``)."""
    if _amp.active:
        input, target, weight = _amp_cast("multi_margin_loss", input, target, weight)
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target.reshape(-1)
    if x.dim() != 2 or t.shape[0] != x.shape[0]:
        raise RuntimeError(f"inconsistent target size, expected {x.shape[0]} but got "
                           f"{list(target.shape)}")
    C = x.shape[1]
    if C and x.is_floating_point() and (weight is None or weight.dtype == x.dtype):
        bad = t._data[(t._data < 0) | (t._data >= C)]
        if bad.size:
            raise RuntimeError(f"target out of range (multi_margin_loss: target "
                               f"{int(bad.reshape(-1)[0])} for {C} classes; targets must lie "
                               f"in [0, {C - 1}])")
        loss = MultiMarginLoss.apply(x, t, weight, p, float(margin))
        if input.dim() < 2 and reduction == "none":
            loss = loss.reshape(tuple(target.shape))  # (PyTorch: the target's shape)
        return _reduce(loss, reduction)
    xy = x.gather(1, t.reshape(-1, 1))
    h = (x - xy + margin).clamp_min(0)
    if p == 2:
        h = h * h
    if weight is not None:
        h = h * weight[t].reshape(-1, 1)

    not_y = _creation.arange(C, device=x.device).reshape(1, C) != t.reshape(-1, 1)
    loss = (h * not_y.to(h.dtype)).sum(1) / C
    if input.dim() < 2 and reduction == "none":
        loss = loss.reshape(tuple(target.shape))
    return _reduce(loss, reduction)


def multilabel_margin_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
                           reduction: str = "mean") -> Any:
    """Multi-label hinge loss: for each sample, the target classes are ``target``'s entries up to
    the first -1; loss = sum_{j in targets, k not in targets} max(0, 1 - (x_j - x_k)) / C."""
    if _amp.active:
        input, target = _amp_cast("multilabel_margin_loss", input, target)
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target.reshape(x.shape)
    tn = t.detach().cpu().numpy()
    N, C = x.shape
    is_target = np.zeros((N, C), bool)
    for i in range(N):
        for c in tn[i]:
            if c < 0:
                break
            is_target[i, c] = True
    pos = TensorBase._make(is_target.astype(x._data.dtype)).to(x.device)
    neg = 1 - pos
    # pair (j, k): max(0, 1 - x_j + x_k) for j a target and k not
    pair = (1 - x.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)  # [i, j, k]
    loss = (pair * pos.unsqueeze(2) * neg.unsqueeze(1)).sum((1, 2)) / C
    if input.dim() < 2 and reduction == "none":
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor: Any, positive: Any, negative: Any, *,
                                      distance_function: Any = None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Any:
    """max(0, d(a, p) - d(a, n) + margin) with any distance (default ``pairwise_distance``);
    ``swap`` uses min(d(a, n), d(p, n))."""
    reduction = _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater than "
                         f"0, got {margin} instead")
    dist = pairwise_distance if distance_function is None else distance_function
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = _cmp.minimum(d_neg, dist(positive, negative))
    loss = (d_pos - d_neg + margin).clamp_min(0)
    return _reduce(loss, reduction)


# ---------------------------------------------------------------------------------------------
# the fused losses: save input and target, recompute the rest in backward


class MseLoss(Op):
    """loss = (x - t)^2, reduced          grad_x = 2 (x - t) grad (/ N for 'mean'), grad_t = -grad_x
    (PyTorch's saves: input and target)"""
    node_name = "MseLossBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, t: Any, reduction: str) -> Any:
        d = _threads.call(np.subtract, np.subtract, x, t) if type(x) is np.ndarray else x - t
        ctx.reduction, ctx.n = reduction, d.size
        ctx.save_for_backward(x, t)
        if (reduction != "none" and type(d) is np.ndarray and d.size >= 4096
                and (total := _kernels.row_sum(d, None, False, square=True)) is not None):
            return _finish_loss(total, d.size, d.dtype, reduction)  # (the squares' sum, one pass)
        ctx.xp.multiply(d, d, out=d)
        return _reduce_loss(d, reduction)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, t = ctx.saved
        g = _loss_grad_scale(ctx, grad)
        if _graphing(ctx):
            gx = (x - t) * g * 2
        else:
            gx = x - t
            gx *= g
            gx *= 2  # (exact: as the sum of the two factors' gradients of d * d)
        need = ctx.needs_input_grad
        return gx if need[0] else None, -gx if need[1] else None, None


class SmoothL1Loss(Op):
    """d = x - t;  smooth L1: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta
    Huber (``huber``): 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)
    grad_x = grad * (d / beta or d where |d| < beta, else sign(d) or delta sign(d)), grad_t = -grad_x
    (PyTorch's saves: input and target; forward and backward go a block at a time)"""
    node_name = "SmoothL1LossBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, t: Any, reduction: str, beta: float, huber: bool) -> Any:
        xp = ctx.xp
        ctx.reduction, ctx.beta, ctx.huber = reduction, beta, huber
        ctx.save_for_backward(x, t)
        shape = xp.broadcast_shapes(x.shape, t.shape)
        ctx.n = math.prod(shape)
        if (out := _kernels.smooth_l1(huber, x, t, beta)) is not None:
            return _reduce_loss(out, reduction)  # (one pass, the same terms)
        out = xp.empty(shape, dtype=xp.result_type(x, t))
        for o, xc, tc in _blocks(xp, out, x, t):
            d = xc - tc
            ad = xp.abs(d)
            near = ad < beta
            if huber:
                ad -= 0.5 * beta
                ad *= beta
            else:
                ad -= 0.5 * beta
            d *= d
            d *= 0.5 if huber else 0.5 / beta
            o[...] = xp.where(near, d, ad)
        return _reduce_loss(out, reduction)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, t = ctx.saved
        xp, beta = ctx.xp, ctx.beta
        g = _loss_grad_scale(ctx, grad)
        if _graphing(ctx):
            d = x - t
            if ctx.huber:
                gx = d.clamp(-beta, beta) * g
            else:
                gx = _pp.where(d.abs() < beta, d * (g * (0.5 / beta)) * 2, d.sign() * g)
        elif (gx := _kernels.smooth_l1(ctx.huber, x, t, beta, g)) is None:
            shape = xp.broadcast_shapes(x.shape, t.shape)
            gx = xp.empty(shape, dtype=xp.result_type(x, t, grad))
            for o, xc, tc, gc in _blocks(xp, gx, x, t, g):
                d = xc - tc
                if ctx.huber:  # PyTorch's clamp form (equal to the where form exactly)
                    xp.clip(d, -beta, beta, out=d)
                    xp.multiply(d, gc, out=o)
                else:
                    inner = d * (gc * (0.5 / beta))
                    inner *= 2
                    o[...] = xp.where(xp.abs(d) < beta, inner, xp.sign(d) * gc)
        need = ctx.needs_input_grad
        return gx if need[0] else None, -gx if need[1] else None, None, None, None


class HuberLoss(SmoothL1Loss):
    """Huber loss (``huber=True``; same rule as SmoothL1Loss)"""
    node_name = "HuberLossBackward0"


class MultiMarginLoss(Op):
    """h_ij = max(0, x_ij - x_iy + margin)^p (times weight[y_i]), j != y_i;  loss_i = sum_j h_ij / C
    grad_x_ij = grad_i / C * dh_ij (p=1: [h > 0], p=2: 2 sqrt(h)) * weight[y_i] for j != y_i,
    grad_x_iy = -sum_j grad_x_ij   (PyTorch's saves: input, target and weight)"""
    node_name = "MultiMarginLossBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, t: Any, weight: Any, p: int, margin: float) -> Any:
        xp = ctx.xp
        rows = xp.arange(x.shape[0])
        h = _margin_terms(xp, x, t, rows, margin)
        if p == 2:
            h *= h
        if weight is not None:
            h *= weight[t].reshape(-1, 1)
        ctx.p, ctx.margin = p, margin
        ctx.save_for_backward(x, t, weight)
        return h.sum(1) / x.shape[1]

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, t, weight = ctx.saved
        xp, C = ctx.xp, x.shape[1]
        if _graphing(ctx):
            xy = x.gather(1, t.reshape(-1, 1))
            h = (x - xy + ctx.margin).clamp_min(0)
            not_y = _creation.arange(C, device=x.device).reshape(1, C) != t.reshape(-1, 1)
            dh = (h > 0).to(h.dtype) if ctx.p == 1 else h * 2
            dh = dh * not_y.to(h.dtype)
            if weight is not None:
                dh = dh * weight[t].reshape(-1, 1)
            gx = dh * (grad.reshape(-1, 1) / C)
            gy = -gx.sum(1, keepdim=True)
            return gx.scatter_add(1, t.reshape(-1, 1), gy), None, None, None, None
        rows = xp.arange(x.shape[0])
        gx = _margin_terms(xp, x, t, rows, ctx.margin)
        if ctx.p == 1:
            xp.greater(gx, 0, out=gx, casting="unsafe")
        else:
            gx *= 2
        scale = grad.reshape(-1) / C
        if weight is not None:
            scale = scale * weight[t]
        gx *= scale.reshape(-1, 1)
        gx[rows, t] = 0
        gx[rows, t] = -gx.sum(1)
        return gx, None, None, None, None


_BLOCK = 1 << 20  # elements per block of the fused losses' elementwise passes


def _fusable(input: Any, target: Any) -> bool:
    """The fused regression losses take two floating tensors of one dtype (else composites)."""
    return (isinstance(target, TensorBase) and input.dtype == target.dtype
            and input.is_floating_point())


def _reduce_loss(loss: Any, reduction: str) -> Any:
    """'none', 'sum' or 'mean' of an elementwise loss array, as the Sum and Mean ops compute."""
    if reduction == "none":
        return loss
    return _finish_loss(_sum_arr(loss, None, False), loss.size, loss.dtype, reduction)


def _finish_loss(total: Any, n: int, dtype: Any, reduction: str) -> Any:
    """A loss's 'sum' (``total``) or 'mean' of ``n`` terms of ``dtype``."""
    if reduction == "sum":
        return total
    if n:  # (no 0/0 here: np.errstate costs ~2 us a call, a tenth of a small step)
        mean = total / n
        # (a NumPy scalar's astype costs ~0.8 us: only where the division widened it)
        return mean if mean.dtype == dtype else mean.astype(dtype)
    with _quiet(np):
        return total / 0.0


def _loss_grad_scale(ctx: Any, grad: Any) -> Any:
    """grad as the Mean op hands it back: times 1/N for 'mean'."""
    if ctx.reduction == "mean":
        return grad * (1.0 / ctx.n) if ctx.n else grad * 0.0
    return grad


def _blocks(xp: Any, out: Any, *ins: Any) -> Any:
    """(out block, input blocks...) over ``out``'s elements, ``_BLOCK`` at a time, the inputs
    broadcast to ``out``'s shape (a 0-d or one-element input passes whole). Inputs of another
    shape, or a non-contiguous layout, go in one block."""
    flat = out.reshape(-1) if out.flags.c_contiguous else None
    same = [a.ndim == 0 or a.shape == out.shape and a.flags.c_contiguous for a in ins]
    if flat is None or not all(same) or out.size <= _BLOCK:
        yield (out, *ins)
        return
    parts = [a if a.ndim == 0 else a.reshape(-1) for a in ins]
    for i in range(0, flat.size, _BLOCK):
        yield (flat[i:i + _BLOCK], *[a if a.ndim == 0 else a[i:i + _BLOCK] for a in parts])


def _margin_terms(xp: Any, x: Any, t: Any, rows: Any, margin: float) -> Any:
    """max(0, x_ij - x_iy + margin) with the target's own column set to 0 (an array)."""
    h = x - x[rows, t].reshape(-1, 1)
    h += margin
    xp.maximum(h, 0, out=h)
    h[rows, t] = 0
    return h
