"""Neural-network functional ops: losses, normalization layers, scaled dot-product attention.

The fused ops (``cross_entropy``, ``nll_loss``, the binary cross entropies, ``layer_norm``,
``rms_norm``, ``batch_norm`` in training, ``scaled_dot_product_attention``) are one ``Op`` each,
forward and backward side by side. Their backward rules keep intermediates (softmax, the
normalized input) from the forward pass; under ``create_graph=True`` they rebuild those
intermediates from the inputs with recorded ops instead, so double backward is exact.
The other losses are plain compositions of elementwise ops and reductions.
"""

from __future__ import annotations

import contextlib
import math
import sys
import warnings
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .._tensor_base import TensorBase
from ..autograd.function import Op
from . import comparison as _cmp
from . import pointwise as _pw
from . import pointwise_math as _pm
from . import pointwise_piecewise as _pp

__all__ = [
    "ctc_loss",
    "GRID_SAMPLE_INTERPOLATION_MODES",
    "GRID_SAMPLE_PADDING_MODES",
    "assert_int_or_pair",
    "native_channel_shuffle",
    "lp_pool3d",
    "max_unpool3d",
    "has_torch_function",
    "has_torch_function_unary",
    "has_torch_function_variadic",
    "handle_torch_function",
    "affine_grid",
    "grid_sample",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "triplet_margin_with_distance_loss",
    "lp_pool1d",
    "lp_pool2d",
    "max_unpool1d",
    "max_unpool2d",
    "cross_entropy",
    "nll_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "kl_div",
    "cosine_embedding_loss",
    "margin_ranking_loss",
    "triplet_margin_loss",
    "soft_margin_loss",
    "poisson_nll_loss",
    "gaussian_nll_loss",
    "hinge_embedding_loss",
    "multilabel_soft_margin_loss",
    "layer_norm",
    "group_norm",
    "rms_norm",
    "batch_norm",
    "instance_norm",
    "local_response_norm",
    "scaled_dot_product_attention",
]


# ---------------------------------------------------------------------------------------------
# shared helpers


def _is_t(x: Any) -> bool:
    return hasattr(x, "_data") and hasattr(x, "grad_fn")


def _size(shape: Any) -> str:
    """How PyTorch prints a shape: ``torch.Size([32, 1])``."""
    return f"torch.Size({list(shape)})"


def _dtype_name(t: Any) -> str:
    return {
        "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
        "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
        "bool": "Bool",
    }.get(t.dtype.name, t.dtype.name)


def _graphing(ctx: Any) -> bool:
    """True while a backward rule runs on tensors (``create_graph=True``)."""
    return bool(ctx._tensor_mode)


def _quiet(xp: Any) -> Any:
    """Silence NumPy's divide/invalid warnings where the op defines the result itself."""
    errstate = getattr(xp, "errstate", None)
    return errstate(divide="ignore", invalid="ignore") if errstate else contextlib.nullcontext()


def _user_stacklevel() -> int:
    """The stacklevel that points a warning at the first frame outside ember."""
    level = 1
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("ember."):
        frame = frame.f_back
        level += 1
    return level


def _legacy_reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    """Map the deprecated ``size_average``/``reduce`` pair to a ``reduction`` string."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    out = "mean" if (size_average and reduce) else ("sum" if reduce else "none")
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{out}' instead.",
        UserWarning,
        stacklevel=_user_stacklevel(),
    )
    return out


def _check_reduction(reduction: str) -> str:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss: Any, reduction: str) -> Any:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _as_float_tensor(x: Any, like: Any) -> Any:
    """Numbers and arrays become tensors of ``like``'s dtype and device."""
    if _is_t(x):
        return x
    from .creation import tensor

    return tensor(x, dtype=like.dtype, device=like.device)


def _broadcast_shape(a: tuple, b: tuple) -> tuple | None:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and x != 1 and y != 1:
            return None
        out.append(max(x, y) if x != 0 and y != 0 else 0)
    return tuple(reversed(out))


def _check_target_size(name: str, input: Any, target: Any) -> None:
    """Warn (as PyTorch does) when a regression target only broadcasts to the input's shape."""
    ishape, tshape = tuple(input.shape), tuple(target.shape)
    if ishape == tshape:
        return
    both = _broadcast_shape(ishape, tshape)
    if both is None:
        raise RuntimeError(
            f"{name}: the input of shape {list(ishape)} and the target of shape {list(tshape)} "
            "cannot be broadcast together (a loss compares input[i] with target[i], so both need "
            "the same shape). Reshape one of them, e.g. target = target.view_as(input)."
        )
    if ishape == tshape + (1,):
        fix = (f"reshape the target with target.view(-1, 1) (or target.unsqueeze({len(tshape)})), "
               f"or squeeze the prediction with pred.squeeze({len(tshape)})")
    elif tshape == ishape + (1,):
        fix = (f"squeeze the target with target.squeeze({len(ishape)}), or reshape the prediction "
               f"with pred.unsqueeze({len(ishape)})")
    else:
        fix = "reshape one of them so that both have the same shape, e.g. target.view_as(pred)"
    n_pairs = math.prod(both)
    n_want = max(math.prod(ishape), math.prod(tshape))
    warnings.warn(
        f"Using a target size ({_size(tshape)}) that is different to the input size "
        f"({_size(ishape)}). This will likely lead to incorrect results due to broadcasting. "
        f"Please ensure they have the same size. {name} would broadcast the input "
        f"{list(ishape)} and the target {list(tshape)} to {list(both)}, comparing every "
        f"prediction with every target ({n_pairs} pairs instead of {n_want}), so the loss and "
        f"its gradients are wrong while training still runs. Fix: {fix}.",
        UserWarning,
        stacklevel=_user_stacklevel(),
    )


def _not_differentiable(fn: str, arg: str, t: Any) -> None:
    """PyTorch's error for a requires-grad tensor in an argument it does not differentiate."""
    from ..autograd import grad_mode

    if t is not None and _is_t(t) and t.requires_grad and grad_mode.state.enabled:
        raise RuntimeError(
            f"The function '{fn}' is not differentiable with respect to argument '{arg}'. This "
            f"input cannot have requires_grad True. (Pass {arg}.detach() if it should stay fixed.)"
        )


def _check_floating(name: str, x: Any, what: str = "input") -> None:
    if not x.is_floating_point():
        raise RuntimeError(
            f"{name}: expected a floating point {what}, but got {x.dtype} (shape "
            f"{list(x.shape)}). Convert it first, e.g. {what} = {what}.float()."
        )


# ---------------------------------------------------------------------------------------------
# softmax helpers for backward rules (they keep double backward exact)


class _SoftmaxCached(Op):
    """out = softmax(x) along ``axis``, given as the already computed ``p``
    grad_x = out * (grad - sum(grad * out, axis))"""

    node_name = "SoftmaxBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, p: Any, axis: int) -> Any:
        out = p[...]
        ctx.save_for_backward(out)
        ctx.axis = axis
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        return out * (grad - (grad * out).sum(axis=ctx.axis, keepdims=True)), None, None


class _LogSoftmaxFromLse(Op):
    """out = x - lse = log_softmax(x) along ``axis`` (``lse`` = logsumexp(x), computed before)
    grad_x = grad - exp(out) * sum(grad, axis)"""

    node_name = "LogSoftmaxBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, lse: Any, axis: int) -> Any:
        out = x - lse
        ctx.save_for_backward(out)
        ctx.axis = axis
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        return grad - ctx.xp.exp(out) * grad.sum(axis=ctx.axis, keepdims=True), None, None


def _softmax_stats(xp: Any, x: Any, axis: int, need_p: bool) -> tuple[Any, Any]:
    """(softmax(x) or None, logsumexp(x)) along ``axis`` with keepdims, stable for finite x."""
    m = x.max(axis=axis, keepdims=True)
    with _quiet(xp):
        m = xp.where(xp.isfinite(m), m, 0)
        e = xp.exp(x - m)
        s = e.sum(axis=axis, keepdims=True)
        lse = xp.log(s) + m
        if need_p:
            e /= s
    return (e if need_p else None), lse


# ---------------------------------------------------------------------------------------------
# cross entropy and negative log likelihood


class CrossEntropy(Op):
    """Fused log_softmax + negative log likelihood along the class axis ``a`` (1, or 0 for 1-D).

    With q the target distribution (one-hot of the class index, or the given probabilities),
    label smoothing e and class weights w:
        q~_c = w_c ((1 - e) q_c + e / C)          loss = -sum_c q~_c log_softmax(x)_c
    grad_x = grad * (softmax(x) * sum_c q~_c - q~)
    grad_target (probabilities) = -grad * (1 - e) * w * log_softmax(x)
    'mean' divides by the summed weight of the non-ignored targets (class indices) or by the
    number of samples (probabilities), as PyTorch does.
    """

    node_name = "NllLossBackward0"  # PyTorch's last step is nll_loss

    @staticmethod
    def forward(ctx: Any, x: Any, target: Any, weight: Any, ignore_index: int, reduction: str,
                eps: float, probs: bool) -> Any:
        xp = ctx.xp
        ax = 1 if x.ndim >= 2 else 0
        C = x.shape[ax]
        wshape = [1] * x.ndim
        wshape[ax] = C
        w_b = weight.reshape(wshape) if weight is not None else None
        p, lse = _softmax_stats(xp, x, ax, ctx.needs_input_grad[0])
        ctx.ax, ctx.reduction, ctx.eps, ctx.probs, ctx.C = ax, reduction, eps, probs, C
        if probs:
            q = target if eps == 0 else target * (1 - eps) + eps / C
            if w_b is not None:
                q = q * w_b
            with _quiet(xp):
                loss = (q * (lse - x)).sum(axis=ax)
            n = x.size // C if x.ndim >= 2 else 1
            den = xp.asarray(n, dtype=x.dtype)
            ctx.save_for_backward(x, target, w_b, p, lse, den)
        else:
            valid = target != ignore_index
            t = xp.where(valid, target, 0)
            bad = valid & ((target < 0) | (target >= C))
            if bool(bad.any()):
                first = int(target[bad].reshape(-1)[0])
                raise IndexError(
                    f"Target {first} is out of bounds. cross_entropy got logits of shape "
                    f"{list(x.shape)} with {C} classes, so class-index targets must lie in "
                    f"[0, {C - 1}] (or equal ignore_index={ignore_index}). Check the number of "
                    "output units of the last layer and the labels (e.g. 1-based labels need "
                    "target - 1)."
                )
            tk = xp.expand_dims(t, ax)
            x_t = xp.take_along_axis(x, tk, axis=ax).squeeze(ax)
            wt = (weight[t] if weight is not None else xp.ones(t.shape, x.dtype)) * valid
            loss = (lse.squeeze(ax) - x_t) * wt
            if eps > 0:
                if w_b is None:
                    smooth = lse.squeeze(ax) * C - x.sum(axis=ax)
                else:
                    smooth = lse.squeeze(ax) * weight.sum() - (x * w_b).sum(axis=ax)
                loss = (1 - eps) * loss + (eps / C) * (smooth * valid)
            den = wt.sum()
            cls = xp.arange(C).reshape(wshape)
            ctx.save_for_backward(x, p, tk, cls, xp.expand_dims(wt, ax),
                                  xp.expand_dims(valid, ax).astype(x.dtype), w_b, den)
        if reduction == "none":
            return loss
        total = loss.sum()
        if reduction == "sum":
            return total
        with _quiet(xp):
            return total / den

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        xp, ax, eps, C = ctx.xp, ctx.ax, ctx.eps, ctx.C
        g = xp.expand_dims(grad, ax) if ctx.reduction == "none" else grad
        if ctx.probs:
            x, target, w_b, p_saved, lse, den = ctx.saved
        else:
            x, p_saved, tk, cls, wt, valid, w_b, den = ctx.saved
        if ctx.reduction == "mean":
            g = g / den
        gx = gt = None
        if ctx.probs:
            q = target if eps == 0 else target * (1 - eps) + eps / C
            if w_b is not None:
                q = q * w_b
            if ctx.needs_input_grad[0]:
                p = ctx.call(_SoftmaxCached, x, p_saved, ax)
                gx = g * (p * q.sum(axis=ax, keepdims=True) - q)
            if ctx.needs_input_grad[1]:
                lsm = ctx.call(_LogSoftmaxFromLse, x, lse, ax)
                coef = -(1 - eps) * lsm
                gt = g * (coef * w_b if w_b is not None else coef)
            return gx, gt, None, None, None, None, None
        p = ctx.call(_SoftmaxCached, x, p_saved, ax)
        onehot = cls == tk
        if eps == 0:
            gx = g * wt * ctx.xp.where(onehot, p - 1, p)  # (p - onehot; no bool subtraction)
        else:
            wsum = C if w_b is None else w_b.sum()
            rowsum = (1 - eps) * wt + (eps / C) * wsum * valid
            smooth = (eps / C) * valid * (w_b if w_b is not None else 1.0)
            gx = g * (p * rowsum - (1 - eps) * wt * onehot - smooth)
        return gx, None, None, None, None, None, None


class NllLoss(Op):
    """loss_i = -w[t_i] * x[i, t_i] (0 where t_i == ignore_index)
    grad_x = -grad * w[t] * onehot(t);   'mean' divides by the summed weight of kept targets"""

    @staticmethod
    def forward(ctx: Any, x: Any, target: Any, weight: Any, ignore_index: int,
                reduction: str) -> Any:
        xp = ctx.xp
        ax = 1 if x.ndim >= 2 else 0
        C = x.shape[ax]
        valid = target != ignore_index
        t = xp.where(valid, target, 0)
        bad = valid & ((target < 0) | (target >= C))
        if bool(bad.any()):
            first = int(target[bad].reshape(-1)[0])
            raise IndexError(
                f"Target {first} is out of bounds. nll_loss got an input of shape "
                f"{list(x.shape)} with {C} classes, so targets must lie in [0, {C - 1}] (or equal "
                f"ignore_index={ignore_index})."
            )
        tk = xp.expand_dims(t, ax)
        wt = (weight[t] if weight is not None else xp.ones(t.shape, x.dtype)) * valid
        loss = -xp.take_along_axis(x, tk, axis=ax).squeeze(ax) * wt
        den = wt.sum()
        wshape = [1] * x.ndim
        wshape[ax] = C
        ctx.ax, ctx.reduction = ax, reduction
        ctx.save_for_backward(tk, xp.arange(C).reshape(wshape), xp.expand_dims(wt, ax), den)
        if reduction == "none":
            return loss
        if reduction == "sum":
            return loss.sum()
        with _quiet(xp):
            return loss.sum() / den

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        tk, cls, wt, den = ctx.saved
        g = ctx.xp.expand_dims(grad, ctx.ax) if ctx.reduction == "none" else grad
        if ctx.reduction == "mean":
            g = g / den
        return -g * wt * (cls == tk), None, None, None, None


def _class_target_checks(name: str, input: Any, target: Any, weight: Any) -> Any:
    """Validate class-index targets; returns the target as int64."""
    ishape, tshape = tuple(input.shape), tuple(target.shape)
    if target.dtype not in (_dtype.int64, _dtype.uint8):
        hint = " Class-index targets must be int64: use target.long()."
        if target.is_floating_point():
            hint += (" Or, to pass class probabilities, give a float target of the input's "
                     f"shape {list(ishape)}.")
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {_dtype_name(target)} "
            f"(expected scalar type Long but found {_dtype_name(target)}; {name} got input "
            f"{list(ishape)} and target {list(tshape)} of dtype {target.dtype}).{hint}"
        )
    if input.ndim == 0:
        raise ValueError(f"{name}: input must have at least 1 dimension (classes), got a 0-d tensor")
    C = ishape[1] if input.ndim >= 2 else ishape[0]
    if input.ndim == 1:
        if target.ndim != 0:
            raise RuntimeError(
                f"{name}: 1D input {list(ishape)} (one sample's {C} class scores) expects a 0D "
                f"target (one class index), got target of shape {list(tshape)}"
            )
    else:
        if target.ndim != input.ndim - 1:
            raise RuntimeError(
                f"{name}: input of shape {list(ishape)} expects a target of shape "
                f"{[ishape[0]] + list(ishape[2:])} (the class dim 1 removed), got "
                f"{list(tshape)}. 0D or 1D target tensor expected, multi-target not supported "
                "for 2D input."
            )
        if tshape[0] != ishape[0]:
            raise ValueError(
                f"Expected input batch_size ({ishape[0]}) to match target batch_size "
                f"({tshape[0]}). ({name}: input {list(ishape)}, target {list(tshape)}; "
                "the first dimension of both is the batch.)"
            )
        if tshape[1:] != ishape[2:]:
            raise RuntimeError(
                f"Expected target size {[ishape[0]] + list(ishape[2:])}, got {list(tshape)} "
                f"({name}: input {list(ishape)})"
            )
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != C):
        raise RuntimeError(
            f"weight tensor should be defined either for all {C} classes or no classes but got "
            f"weight tensor of shape: {list(weight.shape)}"
        )
    if target.dtype == _dtype.uint8:
        target = target.to(_dtype.int64)
    return target


def cross_entropy(input: Any, target: Any, weight: Any = None, size_average: Any = None,
                  ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Any:
    """Cross entropy between logits and class indices or class probabilities (fused, stable)."""
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    _check_floating("cross_entropy", input)
    _not_differentiable("nll_loss_forward", "weight", weight)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if weight is not None and weight.dtype != input.dtype:
        weight = weight.to(input.dtype)
    if tuple(target.shape) == tuple(input.shape) and input.ndim >= 1:
        if not target.is_floating_point():
            raise RuntimeError(
                f"Expected floating point type for target with class probabilities, got "
                f"{target.dtype} (cross_entropy: input and target both have shape "
                f"{list(input.shape)}). For class indices the target drops the class dim: "
                f"shape {list(input.shape[:1]) + list(input.shape[2:])}."
            )
        C = input.shape[1] if input.ndim >= 2 else input.shape[0]
        if weight is not None and (weight.ndim != 1 or weight.shape[0] != C):
            raise RuntimeError(
                f"weight tensor should be defined either for all {C} classes or no classes but "
                f"got weight tensor of shape: {list(weight.shape)}"
            )
        if target.dtype != input.dtype:
            target = target.to(input.dtype)
        return CrossEntropy.apply(input, target, weight, ignore_index, reduction,
                                  float(label_smoothing), True)
    if target.is_floating_point() and input.ndim >= 2 and target.ndim == input.ndim:
        raise RuntimeError(
            f"cross_entropy: a float target of shape {list(target.shape)} is read as class "
            f"probabilities, which must have the input's shape {list(input.shape)}. For class "
            "indices pass an int64 target without the class dim (target.long())."
        )
    target = _class_target_checks("cross_entropy", input, target, weight)
    return CrossEntropy.apply(input, target, weight, ignore_index, reduction,
                              float(label_smoothing), False)


def nll_loss(input: Any, target: Any, weight: Any = None, size_average: Any = None,
             ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> Any:
    """Negative log likelihood of class indices given log-probabilities."""
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    _check_floating("nll_loss", input)
    _not_differentiable("nll_loss_forward", "weight", weight)
    if weight is not None and weight.dtype != input.dtype:
        weight = weight.to(input.dtype)
    target = _class_target_checks("nll_loss", input, target, weight)
    return NllLoss.apply(input, target, weight, ignore_index, reduction)


# ---------------------------------------------------------------------------------------------
# binary cross entropy


def _reduce_array(xp: Any, loss: Any, reduction: str) -> Any:
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    with _quiet(xp):
        return loss.sum() / loss.size


def _grad_scale(ctx: Any, grad: Any) -> Any:
    return grad / ctx.n if ctx.reduction == "mean" else grad


class BinaryCrossEntropy(Op):
    """loss = -w (t max(log x, -100) + (1 - t) max(log(1 - x), -100))
    grad_x = grad * w (x - t) / max(x (1 - x), 1e-12)
    grad_t = grad * w (log(1 - x) - log x)"""

    @staticmethod
    def forward(ctx: Any, x: Any, t: Any, w: Any, reduction: str) -> Any:
        xp = ctx.xp
        with _quiet(xp):
            lx = xp.maximum(xp.log(x), -100)
            l1x = xp.maximum(xp.log1p(-x), -100)
        loss = -(t * lx + (1 - t) * l1x)
        if w is not None:
            loss = loss * w
        ctx.reduction, ctx.n = reduction, x.size
        ctx.save_for_backward(x, t, w)
        return _reduce_array(xp, loss, reduction)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, t, w = ctx.saved
        xp = ctx.xp
        g = _grad_scale(ctx, grad)
        if w is not None:
            g = g * w
        gx = gt = None
        if ctx.needs_input_grad[0]:
            gx = g * (x - t) / (x * (1 - x)).clip(1e-12, None)
        if ctx.needs_input_grad[1]:
            with _quiet(xp):
                gt = g * (xp.log1p(-x) - xp.log(x))
        return gx, gt, None, None


class BinaryCrossEntropyWithLogits(Op):
    """With l = 1 + (pw - 1) t and sp(z) = log(1 + exp(z)) (computed stably):
    loss = w ((1 - t) x + l sp(-x))
    grad_x = grad * w ((1 - t) - l sigmoid(-x))
    grad_t = grad * w ((pw - 1) sp(-x) - x)"""

    @staticmethod
    def forward(ctx: Any, x: Any, t: Any, w: Any, pw: Any, reduction: str) -> Any:
        xp = ctx.xp
        sp = xp.logaddexp(0, -x)
        if pw is None:
            loss = (1 - t) * x + sp
        else:
            loss = (1 - t) * x + (1 + (pw - 1) * t) * sp
        if w is not None:
            loss = loss * w
        ctx.reduction, ctx.n = reduction, x.size
        ctx.save_for_backward(x, t, w, pw)
        return _reduce_array(xp, loss, reduction)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, t, w, pw = ctx.saved
        xp = ctx.xp
        g = _grad_scale(ctx, grad)
        if w is not None:
            g = g * w
        gx = gt = None
        if ctx.needs_input_grad[0]:
            sig_neg = xp.exp(-xp.logaddexp(0, x))  # sigmoid(-x), no overflow
            lw = 1 if pw is None else 1 + (pw - 1) * t
            gx = g * ((1 - t) - lw * sig_neg)
        if ctx.needs_input_grad[1]:
            gt = g * (-x if pw is None else (pw - 1) * xp.logaddexp(0, -x) - x)
        return gx, gt, None, None, None


def binary_cross_entropy(input: Any, target: Any, weight: Any = None, size_average: Any = None,
                         reduce: Any = None, reduction: str = "mean") -> Any:
    """Binary cross entropy between probabilities ``input`` and ``target`` (logs clamped at -100)."""
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({_size(target.shape)}) that is different to the input size "
            f"({_size(input.shape)}) is deprecated. Please ensure they have the same size. "
            "(binary_cross_entropy pairs input[i] with target[i]; e.g. target.view_as(input) or "
            "input.squeeze(-1).)"
        )
    _check_floating("binary_cross_entropy", input)
    _not_differentiable("binary_cross_entropy", "weight", weight)
    if not target.is_floating_point():
        raise RuntimeError(
            f"Found dtype {_dtype_name(target)} but expected {_dtype_name(input)}: "
            f"binary_cross_entropy needs a floating point target like its input ({input.dtype}); "
            "use target.float()."
        )
    if target.dtype != input.dtype:
        target = target.to(input.dtype)
    d = input._data
    if bool(((d < 0) | (d > 1)).any()):
        raise RuntimeError(
            "all elements of input should be between 0 and 1 (binary_cross_entropy takes "
            "probabilities; for raw scores (logits) use binary_cross_entropy_with_logits / "
            "nn.BCEWithLogitsLoss, or apply sigmoid first)"
        )
    if weight is not None:
        weight = _as_float_tensor(weight, input).to(input.dtype)
        if _broadcast_shape(tuple(weight.shape), tuple(input.shape)) != tuple(input.shape):
            raise RuntimeError(
                f"binary_cross_entropy: weight of shape {list(weight.shape)} does not broadcast "
                f"to the input's shape {list(input.shape)}"
            )
    return BinaryCrossEntropy.apply(input, target, weight, reduction)


def binary_cross_entropy_with_logits(input: Any, target: Any, weight: Any = None,
                                     size_average: Any = None, reduce: Any = None,
                                     reduction: str = "mean", pos_weight: Any = None) -> Any:
    """Sigmoid + binary cross entropy in one stable op (``weight``, ``pos_weight`` broadcast)."""
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Target size ({_size(target.shape)}) must be the same as input size "
            f"({_size(input.shape)}) (binary_cross_entropy_with_logits pairs input[i] with "
            "target[i]; e.g. target.view_as(input) or input.squeeze(-1))"
        )
    _check_floating("binary_cross_entropy_with_logits", input)
    _not_differentiable("binary_cross_entropy_with_logits", "weight", weight)
    _not_differentiable("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    if not target.is_floating_point():
        raise RuntimeError(
            f"Found dtype {_dtype_name(target)} but expected {_dtype_name(input)}: "
            "binary_cross_entropy_with_logits needs a floating point target (0./1. or "
            "probabilities); use target.float()."
        )
    if target.dtype != input.dtype:
        target = target.to(input.dtype)
    ishape = tuple(input.shape)
    if weight is not None:
        weight = _as_float_tensor(weight, input).to(input.dtype)
        if _broadcast_shape(tuple(weight.shape), ishape) != ishape:
            raise RuntimeError(
                f"binary_cross_entropy_with_logits: weight of shape {list(weight.shape)} does "
                f"not broadcast to the input's shape {list(ishape)}"
            )
    if pos_weight is not None:
        pos_weight = _as_float_tensor(pos_weight, input).to(input.dtype)
        if _broadcast_shape(tuple(pos_weight.shape), ishape) != ishape:
            raise RuntimeError(
                f"binary_cross_entropy_with_logits: pos_weight of shape "
                f"{list(pos_weight.shape)} does not broadcast to the input's shape {list(ishape)} "
                "(it holds one weight per class, along the last dimension)"
            )
    return BinaryCrossEntropyWithLogits.apply(input, target, weight, pos_weight, reduction)


# ---------------------------------------------------------------------------------------------
# regression and margin losses (compositions)


def mse_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean", weight: Any = None) -> Any:
    """Mean squared error ``(input - target)**2``, reduced."""
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    _check_target_size("mse_loss", input, target)
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def l1_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
            reduction: str = "mean", weight: Any = None) -> Any:
    """Mean absolute error ``|input - target|``, reduced (gradient 0 where they are equal)."""
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    _check_target_size("l1_loss", input, target)
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
                   reduction: str = "mean", beta: float = 1.0) -> Any:
    """0.5 d**2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target)."""
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_target_size("smooth_l1_loss", input, target)
    d = input - target
    ad = d.abs()
    if beta == 0.0:
        return _reduce(ad, reduction)
    loss = _pp.where(ad < beta, d * d * (0.5 / beta), ad - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input: Any, target: Any, reduction: str = "mean", delta: float = 1.0,
               weight: Any = None) -> Any:
    """0.5 d**2 where |d| < delta, else delta (|d| - 0.5 delta) (d = input - target)."""
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_target_size("huber_loss", input, target)
    d = input - target
    ad = d.abs()
    loss = _pp.where(ad < delta, d * d * 0.5, (ad - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
           reduction: str = "mean", log_target: bool = False) -> Any:
    """KL divergence with ``input`` as log-probabilities: target * (log target - input)."""
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
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {_size(input1.shape)}, input2: {_size(input2.shape)}, target: "
            f"{_size(target.shape)} "
        )
    loss = (-target * (input1 - input2) + margin).clamp_min(0)
    return _reduce(loss, reduction)


def _pnorm_distance(x1: Any, x2: Any, p: float, eps: float) -> Any:
    """||x1 - x2 + eps||_p over the last dimension (as ``pairwise_distance``)."""
    d = x1 - x2 + eps
    if p == 2:
        return (d * d).sum(-1).sqrt()
    if p == 1:
        return d.abs().sum(-1)
    return (d.abs() ** p).sum(-1) ** (1.0 / p)


def triplet_margin_loss(anchor: Any, positive: Any, negative: Any, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False,
                        size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Any:
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with p-norm distances."""
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
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    _check_target_size("soft_margin_loss", input, target)
    loss = _pm.logaddexp(0.0, -target * input)
    return _reduce(loss, reduction)


def poisson_nll_loss(input: Any, target: Any, log_input: bool = True, full: bool = False,
                     size_average: Any = None, eps: float = 1e-8, reduce: Any = None,
                     reduction: str = "mean") -> Any:
    """Poisson negative log likelihood: exp(input) - target * input (log_input=True)."""
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
    if not _is_t(var):
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


# ---------------------------------------------------------------------------------------------
# normalization


def _norm_stats(x: Any, axes: tuple[int, ...], eps: float, xp: Any) -> tuple[Any, Any]:
    """(x_hat, 1/sqrt(var + eps)) over ``axes``, keepdims; works on arrays or tensors."""
    n = 1
    for a in axes:
        n *= x.shape[a]
    mu = x.sum(axis=axes, keepdims=True) / n
    xc = x - mu
    var = (xc * xc).sum(axis=axes, keepdims=True) / n
    rstd = 1 / xp.sqrt(var + eps)
    return xc * rstd, rstd


def _norm_input_grad(gxhat: Any, xhat: Any, rstd: Any, axes: tuple[int, ...], n: int) -> Any:
    """d/dx of x_hat = (x - mean) / std, applied to gxhat."""
    mg = gxhat.sum(axis=axes, keepdims=True) / n
    mgx = (gxhat * xhat).sum(axis=axes, keepdims=True) / n
    return rstd * (gxhat - mg - xhat * mgx)


class LayerNorm(Op):
    """x_hat = (x - mean) / sqrt(var + eps) over the last k dims;  out = x_hat * w + b
    grad_x = rstd * (gh - mean(gh) - x_hat * mean(gh * x_hat)),  gh = grad * w
    grad_w = sum(grad * x_hat),  grad_b = sum(grad)   (over the leading dims)"""

    node_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any, b: Any, k: int, eps: float) -> Any:
        axes = tuple(range(x.ndim - k, x.ndim))
        xhat, rstd = _norm_stats(x, axes, eps, ctx.xp)
        out = xhat
        if w is not None:
            out = out * w
        if b is not None:
            out = out + b
        ctx.axes, ctx.eps = axes, eps
        ctx.save_for_backward(x, w, xhat, rstd)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, w, xhat, rstd = ctx.saved
        axes = ctx.axes
        if _graphing(ctx):
            xhat, rstd = _norm_stats(x, axes, ctx.eps, ctx.xp)
        n = 1
        for a in axes:
            n *= x.shape[a]
        need = ctx.needs_input_grad
        gx = gw = gb = None
        if need[0]:
            gxhat = grad * w if w is not None else grad
            gx = _norm_input_grad(gxhat, xhat, rstd, axes, n)
        if need[1]:
            gw = grad * xhat
        if need[2]:
            gb = grad
        return gx, gw, gb, None, None


def _normalized_shape(normalized_shape: Any) -> tuple[int, ...]:
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(int(s) for s in normalized_shape)


def layer_norm(input: Any, normalized_shape: Any, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Any:
    """Normalize over the trailing ``normalized_shape`` dims, then scale and shift."""
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
    return LayerNorm.apply(input, weight, bias, k, float(eps))


class RMSNorm(Op):
    """r = 1 / sqrt(mean(x**2) + eps) over the last k dims;  out = x * r * w
    grad_x = r * (gh - x_hat * mean(gh * x_hat)),  gh = grad * w,  x_hat = x * r
    grad_w = sum(grad * x_hat)   (over the leading dims)"""

    node_name = "RmsNormBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any, k: int, eps: float) -> Any:
        axes = tuple(range(x.ndim - k, x.ndim))
        xhat, r = _rms_stats(x, axes, eps, ctx.xp)
        ctx.axes, ctx.eps = axes, eps
        ctx.save_for_backward(x, w, xhat, r)
        return xhat * w if w is not None else xhat

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, w, xhat, r = ctx.saved
        axes = ctx.axes
        if _graphing(ctx):
            xhat, r = _rms_stats(x, axes, ctx.eps, ctx.xp)
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


def _rms_stats(x: Any, axes: tuple[int, ...], eps: float, xp: Any) -> tuple[Any, Any]:
    n = 1
    for a in axes:
        n *= x.shape[a]
    r = 1 / xp.sqrt((x * x).sum(axis=axes, keepdims=True) / n + eps)
    return x * r, r


def rms_norm(input: Any, normalized_shape: Any, weight: Any = None, eps: float | None = None) -> Any:
    """Root-mean-square normalization over the trailing dims (eps defaults to finfo.eps)."""
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
    _check_floating("rms_norm", input)
    if eps is None:
        eps = _finfo_eps(input)
    return RMSNorm.apply(input, weight, k, float(eps))


def _finfo_eps(x: Any) -> float:
    return {"float16": 0.0009765625, "bfloat16": 0.0078125, "float32": 1.1920928955078125e-07,
            "float64": 2.220446049250313e-16}[x.dtype.name]


def group_norm(input: Any, num_groups: int, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Any:
    """Normalize each group of channels of each sample, then scale and shift per channel."""
    if input.ndim < 2:
        raise RuntimeError(
            f"group_norm: expected an input of shape (N, C, *), got {list(input.shape)}"
        )
    N, C = input.shape[0], input.shape[1]
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
    ishape = tuple(input.shape)
    grouped = input.reshape(N, num_groups, -1) if N * C else input.reshape(N, num_groups, 0)
    out = LayerNorm.apply(grouped, None, None, 1, float(eps)).reshape(ishape)
    bshape = (C,) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(bshape)
    if bias is not None:
        out = out + bias.reshape(bshape)
    return out


class BatchNormTrain(Op):
    """x_hat = (x - mean) / sqrt(var + eps) over all dims but 1;  out = x_hat * w + b
    grad_x = rstd * (gh - mean(gh) - x_hat * mean(gh * x_hat)),  gh = grad * w
    grad_w = sum(grad * x_hat),  grad_b = sum(grad)   (over all dims but 1)
    Also returns the batch mean and unbiased variance (non-differentiable) for running stats."""

    node_name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any, b: Any, eps: float) -> Any:
        xp = ctx.xp
        axes = (0,) + tuple(range(2, x.ndim))
        bshape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        n = x.size // x.shape[1]
        mu = x.sum(axis=axes, keepdims=True) / n
        xc = x - mu
        var = (xc * xc).sum(axis=axes, keepdims=True) / n
        rstd = 1 / xp.sqrt(var + eps)
        xhat = xc * rstd
        out = xhat
        if w is not None:
            out = out * w.reshape(bshape)
        if b is not None:
            out = out + b.reshape(bshape)
        mean = mu.reshape(-1)
        var = var.reshape(-1) * (n / (n - 1))
        ctx.axes, ctx.eps, ctx.bshape, ctx.n = axes, eps, bshape, n
        ctx.save_for_backward(x, w, xhat, rstd)
        ctx.mark_non_differentiable(mean, var)
        return out, mean, var

    @staticmethod
    def backward(ctx: Any, grad: Any, _gm: Any = None, _gv: Any = None) -> Any:
        x, w, xhat, rstd = ctx.saved
        axes = ctx.axes
        if _graphing(ctx):
            xhat, rstd = _norm_stats(x, axes, ctx.eps, ctx.xp)
        n = ctx.n
        need = ctx.needs_input_grad
        gx = gw = gb = None
        if need[0]:
            gxhat = grad * w.reshape(ctx.bshape) if w is not None else grad
            gx = _norm_input_grad(gxhat, xhat, rstd, axes, n)
        if need[1]:
            gw = (grad * xhat).sum(axis=axes)
        if need[2]:
            gb = grad.sum(axis=axes)
        return gx, gw, gb, None


def batch_norm(input: Any, running_mean: Any, running_var: Any, weight: Any = None,
               bias: Any = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> Any:
    """Batch normalization over all dims but 1; in training, updates the running stats in place."""
    if input.ndim < 2:
        raise ValueError(
            f"batch_norm: expected an input of shape (N, C) or (N, C, *), got {list(input.shape)}"
        )
    _check_floating("batch_norm", input)
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
        _update_running(running_mean, mean, momentum)
        _update_running(running_var, var, momentum)
        return out
    if running_mean is None or running_var is None:
        raise RuntimeError(
            "batch_norm: running_mean and running_var must be defined in evaluation mode "
            "(training=False); pass training=True to use the batch statistics"
        )
    bshape = (C,) + (1,) * (input.ndim - 2)
    rm = running_mean.detach().to(input.dtype)
    rv = running_var.detach().to(input.dtype)
    scale = (rv + eps).rsqrt()
    if weight is not None:
        scale = scale * weight
    shift = -rm * scale
    if bias is not None:
        shift = shift + bias
    return input * scale.reshape(bshape) + shift.reshape(bshape)


def _update_running(stat: Any, batch: Any, momentum: float) -> None:
    """stat = (1 - momentum) * stat + momentum * batch, in place and outside the graph."""
    if stat is None:
        return
    arr = stat._data
    new = arr * (1 - momentum) + batch._data.astype(arr.dtype) * momentum
    arr[...] = new.reshape(arr.shape)
    stat._bump_version()


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
        with _no_grad():
            flat = input.detach().reshape(N, C, -1)
            n = flat.shape[-1]
            mean = flat.mean(-1).mean(0)
            d = flat - flat.mean(-1, keepdim=True)
            var = ((d * d).sum(-1) / max(n - 1, 1)).mean(0)
        _update_running(running_mean, mean, momentum)
        _update_running(running_var, var, momentum)
    return group_norm(input, C, weight, bias, eps)


def _no_grad() -> Any:
    from ..autograd.grad_mode import no_grad

    return no_grad()


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


def _lrn_denominator(xp: Any, x: Any, size: int, alpha: float, k: float) -> Any:
    return k + (alpha / size) * _channel_window_sum(xp, x * x, size // 2, (size - 1) // 2)


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


# ---------------------------------------------------------------------------------------------
# attention


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
        kk, vv = _repeat_heads(xp, k, groups), _repeat_heads(xp, v, groups)
        s = _attn_scores(xp, q, kk, fmask, bmask, scale)
        p = s  # softmax in place over s's buffer
        m = p.max(axis=-1, keepdims=True)
        with _quiet(xp):
            m = xp.where(xp.isfinite(m), m, 0)
            p -= m
            xp.exp(p, out=p)
            den = p.sum(axis=-1, keepdims=True)
            p /= xp.where(den == 0, 1, den)
        pd = p if keep is None else p * keep * (1.0 / (1.0 - p_drop))
        out = xp.matmul(pd, vv)
        ctx.scale, ctx.p_drop, ctx.groups = scale, p_drop, groups
        ctx.save_for_backward(q, k, v, fmask, bmask, keep, p)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        q, k, v, fmask, bmask, keep, p = ctx.saved
        xp, scale, groups = ctx.xp, ctx.scale, ctx.groups
        kk, vv = _repeat_heads(xp, k, groups), _repeat_heads(xp, v, groups)
        if _graphing(ctx):
            s = _attn_scores(xp, q, kk, fmask, bmask, scale)
            p = ctx.call(_SoftmaxCached, s, p, -1)
        drop = None if keep is None else keep * (1.0 / (1.0 - ctx.p_drop))
        pd = p if drop is None else p * drop
        need = ctx.needs_input_grad
        gv = None
        if need[2]:
            gv = _sum_heads(xp.matmul(pd.swapaxes(-1, -2), grad), groups)
        gp = xp.matmul(grad, vv.swapaxes(-1, -2))
        if drop is not None:
            gp = gp * drop
        gs = p * (gp - (gp * p).sum(axis=-1, keepdims=True))
        gq = xp.matmul(gs, kk) * scale if need[0] else None
        gk = _sum_heads(xp.matmul(gs.swapaxes(-1, -2), q) * scale, groups) if need[1] else None
        gm = gs if need[3] else None
        return gq, gk, gv, gm, None, None, None, None, None


def _attn_scores(xp: Any, q: Any, k: Any, fmask: Any, bmask: Any, scale: float) -> Any:
    s = xp.matmul(q, k.swapaxes(-1, -2)) * scale
    if bmask is not None:
        s = xp.where(bmask, s, float("-inf"))
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


def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None, enable_gqa: bool = False) -> Any:
    """softmax(query key^T * scale + mask) value, fused forward and backward."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.ndim < 2:
            raise RuntimeError(
                f"scaled_dot_product_attention: {name} must have at least 2 dims (..., L, E), got "
                f"shape {list(t.shape)}"
            )
        if not t.is_floating_point():
            raise RuntimeError(
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
    from .._backend import xp_of

    xp = xp_of(query._data)
    bmask = fmask = None
    if is_causal:
        bmask = xp.tri(L, S, 0, dtype=bool)
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
    keep = None
    if dropout_p > 0.0:
        if dropout_p >= 1.0:
            keep = xp.zeros(batch + (L, S), dtype=query._data.dtype)
            dropout_p = 0.0
        else:
            from .random import rand

            u = rand(*(batch + (L, S)), dtype=query.dtype, device=query.device)._data
            keep = (u >= dropout_p).astype(query._data.dtype)
    return ScaledDotProductAttention.apply(query, key, value, fmask, bmask, float(scale), keep,
                                           float(dropout_p), groups)


# ---------------------------------------------------------------------------------------------
# spatial transformers: affine_grid and grid_sample (composites: gradients reach theta, the
# input and the grid through the ops they are made of)


def _grid_coords(n: int, align_corners: bool, like: Any) -> Any:
    """The normalised coordinates of n pixel centres in [-1, 1] (corner pixels' centres at +-1
    when ``align_corners``, else the corners of the corner pixels)."""
    from .creation import arange

    if n == 1:
        return arange(1, dtype=like.dtype, device=like.device) * 0.0
    i = arange(n, dtype=like.dtype, device=like.device)
    if align_corners:
        return i * (2.0 / (n - 1)) - 1.0
    return (i * 2.0 + 1.0) / n - 1.0


def affine_grid(theta: Any, size: Any, align_corners: bool | None = None) -> Any:
    """Sampling grid (N, H, W, 2) for ``grid_sample`` from affine matrices theta (N, 2, 3)
    (or (N, D, H, W, 3) from (N, 3, 4)): each output pixel's normalised (x, y[, z], 1) times
    theta^T."""
    from .joining import stack

    align = bool(align_corners)
    size = tuple(int(v) for v in size)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[1:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{list(size)}. Got {list(theta.shape)}.")
        N, _, H, W = size
        xs = _grid_coords(W, align, theta).reshape(1, W).expand(H, W)
        ys = _grid_coords(H, align, theta).reshape(H, 1).expand(H, W)
        base = stack([xs, ys, xs * 0 + 1], -1).reshape(1, H * W, 3)
        return (base @ theta.transpose(1, 2)).reshape(N, H, W, 2)
    if len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[1:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{list(size)}. Got {list(theta.shape)}.")
        N, _, D, H, W = size
        xs = _grid_coords(W, align, theta).reshape(1, 1, W).expand(D, H, W)
        ys = _grid_coords(H, align, theta).reshape(1, H, 1).expand(D, H, W)
        zs = _grid_coords(D, align, theta).reshape(D, 1, 1).expand(D, H, W)
        base = stack([xs, ys, zs, xs * 0 + 1], -1).reshape(1, D * H * W, 4)
        return (base @ theta.transpose(1, 2)).reshape(N, D, H, W, 3)
    raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine "
                              f"transforms, respectively. Got size {list(size)}.")


def _reflect(x: Any, lo: float, hi: float) -> Any:
    """x reflected into [lo, hi] (mirror at both ends, repeatedly)."""
    span = hi - lo
    if span <= 0:
        return x * 0 + lo
    d = (x - lo).abs()
    flips = (d / span).floor()
    extra = d - flips * span
    odd = _pw.remainder(flips, 2.0) == 1
    return _pp.where(odd, span - extra, extra) + lo


def _unnormalise(c: Any, n: int, align: bool, padding_mode: str) -> Any:
    x = (c + 1) * ((n - 1) / 2) if align else ((c + 1) * n - 1) / 2
    if padding_mode == "border":
        x = x.clamp(0, n - 1)
    elif padding_mode == "reflection":
        x = _reflect(x, 0.0, n - 1.0) if align else _reflect(x, -0.5, n - 0.5)
        x = x.clamp(0, n - 1)
    return x


def grid_sample(input: Any, grid: Any, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Any:
    """Sample a 4-D input (N, C, H, W) at the normalised (x, y) locations of grid
    (N, Ho, Wo, 2), bilinearly or from the nearest pixel; locations outside read 0 ('zeros'),
    the edge ('border') or the mirror image ('reflection')."""
    from .creation import tensor as _tensor

    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if mode == "bicubic" or input.dim() != 4:
        raise NotImplementedError("ember's grid_sample supports 4-D inputs with mode 'bilinear' "
                                  "or 'nearest' (PyTorch also has 5-D inputs and 'bicubic')")
    if grid.dim() != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid of shape (N, H_out, W_out, 2) with "
                           f"N = {input.shape[0]}, but got grid with sizes {list(grid.shape)}")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have the same dtype, "
                           f"but input has {input.dtype} and grid has {grid.dtype}")
    align = bool(align_corners)
    N, C, H, W = input.shape
    Ho, Wo = grid.shape[1], grid.shape[2]
    ix = _unnormalise(grid[..., 0], W, align, padding_mode)  # (N, Ho, Wo)
    iy = _unnormalise(grid[..., 1], H, align, padding_mode)
    flat = input.reshape(N, C, H * W)

    def tap(xi: Any, yi: Any) -> tuple[Any, Any]:
        """Values at integer pixel (xi, yi) (N, C, Ho, Wo) and the in-bounds mask."""
        ok = (xi >= 0) & (xi <= W - 1) & (yi >= 0) & (yi <= H - 1)
        idx = (yi.clamp(0, H - 1) * W + xi.clamp(0, W - 1)).to(_dtype.int64)
        idx = idx.reshape(N, 1, Ho * Wo).expand(N, C, Ho * Wo)
        vals = flat.gather(2, idx).reshape(N, C, Ho, Wo)
        return vals, ok.unsqueeze(1).to(input.dtype)

    if mode == "nearest":
        vals, ok = tap(_pp.round(ix.detach()), _pp.round(iy.detach()))
        return vals * ok
    x0, y0 = ix.detach().floor(), iy.detach().floor()
    x1, y1 = x0 + 1, y0 + 1
    wx1, wy1 = (ix - x0).unsqueeze(1), (iy - y0).unsqueeze(1)
    wx0, wy0 = 1 - wx1, 1 - wy1
    out = _tensor(0.0, dtype=input.dtype, device=input.device)
    for xi, yi, w in ((x0, y0, wx0 * wy0), (x1, y0, wx1 * wy0), (x0, y1, wx0 * wy1),
                      (x1, y1, wx1 * wy1)):
        vals, ok = tap(xi, yi)
        out = out + vals * ok * w
    return out


# ---------------------------------------------------------------------------------------------
# margin losses, power-average pooling and max-unpooling (composites)


def multi_margin_loss(input: Any, target: Any, p: int = 1, margin: float = 1.0,
                      weight: Any = None, size_average: Any = None, reduce: Any = None,
                      reduction: str = "mean") -> Any:
    """Multi-class hinge loss: sum_{j != y} max(0, margin - x_y + x_j)^p / C per sample
    (times ``weight[y]``)."""
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target.reshape(-1)
    if x.dim() != 2 or t.shape[0] != x.shape[0]:
        raise RuntimeError(f"inconsistent target size, expected {x.shape[0]} but got "
                           f"{list(target.shape)}")
    C = x.shape[1]
    xy = x.gather(1, t.reshape(-1, 1))
    h = (x - xy + margin).clamp_min(0)
    if p == 2:
        h = h * h
    if weight is not None:
        h = h * weight[t].reshape(-1, 1)
    from . import creation as _creation

    not_y = _creation.arange(C, device=x.device).reshape(1, C) != t.reshape(-1, 1)
    loss = (h * not_y.to(h.dtype)).sum(1) / C
    if input.dim() < 2 and reduction == "none":
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_margin_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
                           reduction: str = "mean") -> Any:
    """Multi-label hinge loss: for each sample, the target classes are ``target``'s entries up to
    the first -1; loss = sum_{j in targets, k not in targets} max(0, 1 - (x_j - x_k)) / C."""
    import numpy as np

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
    from .activation import pairwise_distance

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


def _lp_pool(input: Any, norm_type: float, kernel_size: Any, stride: Any, ceil_mode: bool,
             dims: int) -> Any:
    from . import conv

    ks = (kernel_size,) * dims if isinstance(kernel_size, int) else tuple(kernel_size)
    pool = {1: conv.avg_pool1d, 2: conv.avg_pool2d, 3: conv.avg_pool3d}[dims]
    out = pool(input ** norm_type, ks if dims > 1 else ks[0], stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu() * math.prod(ks)) ** (1.0 / norm_type)


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


def max_unpool1d(input: Any, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Any:
    """The inverse of ``max_pool1d``: each value goes back to the position its index names,
    zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input: Any, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Any:
    """The inverse of ``max_pool2d`` (indices flat over each H x W plane)."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input: Any, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Any:
    """The inverse of ``max_pool3d`` (indices flat over each D x H x W volume)."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


# ---------------------------------------------------------------------------------------------
# the __torch_function__ protocol's probes: ember has no tensor-subclass dispatch, so nothing
# ever needs handling


def has_torch_function(relevant_args: Any) -> bool:
    """False: ember does not dispatch ``__torch_function__`` overrides."""
    return False


def has_torch_function_unary(arg: Any) -> bool:
    return False


def has_torch_function_variadic(*args: Any) -> bool:
    return False


def handle_torch_function(public_api: Any, relevant_args: Any, *args: Any, **kwargs: Any) -> Any:
    """Calls ``public_api`` directly (there are no overrides to dispatch to)."""
    return public_api(*args, **kwargs)


# =============================================================================================
# CTC loss


class CtcLoss(Op):
    """Connectionist temporal classification: nll_n = -log sum over the alignments of target n
    of prod_t p_t(path_t), by the forward (alpha) recursion over the extended label sequence
    l' = (blank, l_1, blank, l_2, ..., blank) in log space:

        alpha_t(s) = lp_t(l'_s) + logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2)),
        (the s-2 term only when l'_s is not blank and differs from l'_{s-2}),
        nll = -logsumexp(alpha_{T-1}(L-1), alpha_{T-1}(L-2)).

    With beta the same recursion run backwards (both including the frame's emission),
    d nll / d lp_t(c) = -sum_{s: l'_s = c} exp(alpha_t(s) + beta_t(s) + nll - lp_t(c)).
    As PyTorch does, the returned gradient adds exp(lp_t(c)) (it assumes lp is a log_softmax
    output, whose backward then gives the same gradient for the logits), and frames past an
    input's length get 0. First order only (PyTorch has no double backward here either)."""

    node_name = "CtcLossBackward0"

    @staticmethod
    def forward(ctx: Any, lp: Any, ext: Any, in_len: Any, ext_len: Any, blank: int,
                zero_infinity: bool) -> Any:
        xp = ctx.xp
        T, N, _ = lp.shape
        L = ext.shape[1]
        ninf = -np.inf
        em = lp[:, xp.arange(N)[:, None], ext]  # (T, N, L): emission of each extended label
        prev2 = xp.concatenate([xp.full((N, 2), -1, ext.dtype), ext[:, :-2]], axis=1)
        skip = (ext != blank) & (ext != prev2)
        valid = xp.arange(L)[None, :] < ext_len[:, None]
        alpha = xp.full((T, N, L), ninf, dtype=lp.dtype)
        a = xp.full((N, L), ninf, dtype=lp.dtype)
        a[:, 0] = em[0, :, 0]
        if L > 1:
            a[:, 1] = xp.where(ext_len > 1, em[0, :, 1], ninf)
        alpha[0] = a
        pad = xp.full((N, 1), ninf, dtype=lp.dtype)
        for t in range(1, T):
            s1 = xp.concatenate([pad, a[:, :-1]], axis=1)
            s2 = xp.where(skip, xp.concatenate([pad, pad, a[:, :-2]], axis=1)[:, :L], ninf)
            a = xp.logaddexp(xp.logaddexp(a, s1), s2) + em[t]
            a = xp.where(valid, a, ninf)
            alpha[t] = a
        last_t = xp.clip(in_len - 1, 0, T - 1)
        a_end = alpha[last_t, xp.arange(N)]  # (N, L)
        e1 = xp.take_along_axis(a_end, (ext_len - 1)[:, None], 1)[:, 0]
        e2 = xp.take_along_axis(a_end, xp.clip(ext_len - 2, 0, None)[:, None], 1)[:, 0]
        e2 = xp.where(ext_len > 1, e2, ninf)
        nll = -xp.logaddexp(e1, e2)
        nll = xp.where(in_len > 0, nll, xp.where(ext_len > 1, np.inf, 0.0)).astype(lp.dtype)
        ctx.arrays = (lp, em, alpha, skip, valid, nll, in_len, ext_len, ext)
        ctx.zero_infinity = zero_infinity
        if zero_infinity:
            nll = xp.where(xp.isinf(nll), xp.zeros((), lp.dtype), nll)
        return nll

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        lp, em, alpha, skip, valid, nll, in_len, ext_len, ext = ctx.arrays
        xp = _backend.xp_of(lp)
        T, N, C = lp.shape
        L = ext.shape[1]
        ninf = -np.inf
        pad = xp.full((N, 1), ninf, dtype=lp.dtype)
        skip_from = xp.concatenate([skip[:, 2:], xp.zeros((N, 2), bool)], axis=1)[:, :L]
        s_idx = xp.arange(L)[None, :]
        start = valid & ((s_idx == ext_len[:, None] - 1) | (s_idx == ext_len[:, None] - 2))
        b = xp.full((N, L), ninf, dtype=lp.dtype)
        beta = xp.full((T, N, L), ninf, dtype=lp.dtype)
        for t in range(T - 1, -1, -1):
            s1 = xp.concatenate([b[:, 1:], pad], axis=1)
            s2 = xp.where(skip_from, xp.concatenate([b[:, 2:], pad, pad], axis=1)[:, :L], ninf)
            rec = xp.logaddexp(xp.logaddexp(b, s1), s2) + em[t]
            here = (t == in_len - 1)[:, None]
            inside = (t < in_len - 1)[:, None]
            b = xp.where(inside, rec, xp.where(here & start, em[t], ninf))
            b = xp.where(valid, b, ninf)
            beta[t] = b
        with np.errstate(invalid="ignore", over="ignore"):
            share = xp.exp(alpha + beta + nll[None, :, None] - em)  # (T, N, L), each <= 1
        share = xp.where(xp.isfinite(share), share, 0)
        onehot = (ext[:, :, None] == xp.arange(C)[None, None, :]).astype(lp.dtype)  # (N, L, C)
        X = xp.einsum("tns,nsc->tnc", share, onehot)
        G = xp.exp(lp) - X
        live = xp.arange(T)[:, None] < in_len[None, :]  # (T, N)
        if ctx.zero_infinity:
            live = live & ~xp.isinf(nll)[None, :]
        G = xp.where(live[:, :, None], G, 0).astype(lp.dtype)
        return grad.reshape(1, N, 1) * G, None, None, None, None, None


def _lengths(v: Any, what: str) -> np.ndarray:
    if _is_t(v):
        arr = _backend.to_device(v._data, _backend.CPU)
    else:
        arr = np.asarray(v)
    if arr.dtype.kind not in "iu":
        raise RuntimeError(f"ctc_loss: {what} must be integers, got dtype {arr.dtype}")
    return arr.astype(np.int64).reshape(-1)


def ctc_loss(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Any:
    """The CTC loss of (T, N, C) (or unbatched (T, C)) log-probabilities against targets.

    ``targets`` is (N, S) padded or the 1-D concatenation of all targets (``target_lengths``
    says how to split it); ``input_lengths`` / ``target_lengths`` are tensors or int sequences.
    'mean' averages ``loss_n / target_length_n`` over the batch; ``zero_infinity`` turns the
    infinite losses of impossible alignments (and their gradients) into 0.
    """
    _check_reduction(reduction)
    lp = log_probs
    unbatched = lp.ndim == 2
    if unbatched:
        lp = lp.unsqueeze(1)
    if lp.ndim != 3:
        raise RuntimeError(f"ctc_loss: log_probs must be (T, N, C) or (T, C), got shape "
                           f"{_size(log_probs.shape)}")
    _check_floating("ctc_loss", lp, "log_probs")
    T, N, C = lp.shape
    in_len, tl = _lengths(input_lengths, "input_lengths"), _lengths(target_lengths,
                                                                    "target_lengths")
    if in_len.size != N or tl.size != N:
        raise RuntimeError(f"ctc_loss: expected {N} input_lengths and target_lengths (batch "
                           f"size of log_probs {_size(log_probs.shape)}), got {in_len.size} and "
                           f"{tl.size}")
    if (in_len > T).any() or (in_len < 0).any():
        raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                           f"{int(in_len.max())} (ctc_loss: log_probs has T={T} frames)")
    tgt = _backend.to_device(targets._data, _backend.CPU) if _is_t(targets) else \
        np.asarray(targets)
    tgt = tgt.astype(np.int64)
    if unbatched:
        tgt = tgt.reshape(1, -1)
    rows = []
    if tgt.ndim == 2 and not (tgt.shape[0] == 1 and N > 1):
        for n in range(N):
            if tl[n] > tgt.shape[1]:
                raise RuntimeError(f"Expected tensor to have size at least {tl[n]} at dimension "
                                   f"1, but got size {tgt.shape[1]} for argument #2 'targets' "
                                   "(ctc_loss: a target length exceeds the padded targets)")
            rows.append(tgt[n, :tl[n]])
    else:
        flat = tgt.reshape(-1)
        if tl.sum() > flat.size:
            raise RuntimeError(f"ctc_loss: target_lengths sum to {int(tl.sum())} but the "
                               f"concatenated targets have {flat.size} elements")
        ends = np.cumsum(tl)
        rows = [flat[e - n: e] for e, n in zip(ends, tl)]
    S = max([int(r.size) for r in rows] + [0])
    ext = np.full((N, 2 * S + 1), blank, dtype=np.int64)
    for n, r in enumerate(rows):
        if r.size and ((r < 0) | (r >= C)).any():
            raise RuntimeError(f"ctc_loss: target labels must lie in [0, {C - 1}]")
        ext[n, 1: 2 * r.size: 2] = r
    xp = _backend.xp_of(lp._data)
    nll = CtcLoss.apply(lp, xp.asarray(ext), xp.asarray(in_len), xp.asarray(2 * tl + 1), blank,
                        zero_infinity)
    if reduction == "none":
        return nll.squeeze(0) if unbatched else nll
    if reduction == "sum":
        return nll.sum()
    denom = TensorBase._make(xp.asarray(np.maximum(tl, 1).astype(lp._data.dtype)))
    return (nll / denom).mean()


def native_channel_shuffle(input: Any, groups: int) -> Any:
    """``channel_shuffle`` under its native-kernel name."""
    from .activation import channel_shuffle

    return channel_shuffle(input, groups)


GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


def assert_int_or_pair(arg: Any, arg_name: str, message: str) -> None:
    """Raise ``AssertionError(message.format(arg_name))`` unless ``arg`` is an int or a pair."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))
