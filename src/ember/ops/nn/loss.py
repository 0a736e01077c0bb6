"""Losses built on log-likelihoods: cross entropy, negative log likelihood, the binary cross
entropies and CTC.

Each is one fused ``Op`` (forward and backward side by side). Their backward rules keep the softmax
from the forward pass; under ``create_graph=True`` they rebuild it from the inputs with recorded ops
instead, so double backward is exact.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import _backend, _dtype
from ... import _kernels_loader as _kernels
from ..._tensor_base import TensorBase
from ...autograd.function import Op
from .._autocast import cast as _amp_cast
from .._autocast import flag as _amp
from ._common import (
    _as_float_tensor,
    _broadcast_shape,
    _check_floating,
    _check_reduction,
    _legacy_reduction,
    _LogSoftmaxFromLse,
    _not_differentiable,
    _quiet,
    _size,
    _softmax_stats,
    _SoftmaxCached,
)

__all__ = [
    "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "ctc_loss",
]


# ---------------------------------------------------------------------------------------------
# cross entropy and negative log likelihood


def cross_entropy(input: Any, target: Any, weight: Any = None, size_average: Any = None,
                  ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Any:
    """Cross entropy between logits and class indices or class probabilities (fused, stable)."""
    if _amp.active:
        input, target, weight = _amp_cast("cross_entropy", input, target, weight)
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    _check_floating("cross_entropy", input)
    _not_differentiable("nll_loss_forward", "weight", weight)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if weight is not None and weight.dtype != input.dtype:
        weight = weight.to(input.dtype)
    if target._data.shape == input._data.shape and input.ndim >= 1:
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
    if _amp.active:
        input, target, weight = _amp_cast("nll_loss", input, target, weight)
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    _check_floating("nll_loss", input)
    _not_differentiable("nll_loss_forward", "weight", weight)
    if weight is not None and weight.dtype != input.dtype:
        weight = weight.to(input.dtype)
    target = _class_target_checks("nll_loss", input, target, weight)
    return NllLoss.apply(input, target, weight, ignore_index, reduction)


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
        if (not probs and weight is None and eps == 0 and not 0 <= ignore_index < C
                and (fast := _kernels.cross_entropy_rows(x, target, ctx.needs_input_grad[0]))
                is not None):
            # (N, C) host logits, every target a class (the common call): one kernel call for
            # the plain branch below's values (the same bits), the same saved values
            p, _lse, loss, total = fast
            ctx.ax, ctx.reduction, ctx.eps, ctx.probs, ctx.C = ax, reduction, eps, probs, C
            return _plain_class_result(ctx, x, p, target, loss, total, reduction)
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
        elif _plain_class_targets(x, target, weight, ignore_index, eps):
            # (N, C) host logits, every target a class, no weight or smoothing (the common
            # call, with the kernels off): the values of the branch below without its masks
            loss = lse[:, 0] - x[np.arange(x.shape[0]), target]
            return _plain_class_result(ctx, x, p, target, loss, None, reduction)
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
        if eps == 0 and type(p_saved) is np.ndarray and p_saved.ndim >= 2 \
                and not ctx._tensor_mode:
            # (N, C, ...) host logits: s p, then s (p - 1) at the targets (the formula's
            # operations, one pass over the logits instead of a one-hot mask and three); p is the
            # saved softmax itself (what ctx.call(_SoftmaxCached, ...) gives outside create_graph)
            p = p_saved
            s = g * wt
            if p.ndim == 2 and ctx.C == p.shape[1] and (
                    gx := _kernels.cross_entropy_rows_backward(p, tk.reshape(-1), s)) is not None:
                return gx, None, None, None, None, None, None  # (one pass: the same products)
            gx = np.multiply(p, s)
            if p.ndim == 2:
                rows = np.arange(p.shape[0])
                cols = tk[:, 0]
                gx[rows, cols] = s[:, 0] * (p[rows, cols] - 1)
            else:  # (image logits: the targets along dim 1)
                at = np.take_along_axis(p, tk, axis=1)
                np.put_along_axis(gx, tk, s * (at - 1), axis=1)
            return gx, None, None, None, None, None, None
        p = ctx.call(_SoftmaxCached, x, p_saved, ax)
        if eps == 0:
            gx = g * wt * ctx.xp.where(cls == tk, p - 1, p)  # (p - onehot; no bool subtraction)
        else:
            wsum = C if w_b is None else w_b.sum()
            rowsum = (1 - eps) * wt + (eps / C) * wsum * valid
            smooth = (eps / C) * valid * (w_b if w_b is not None else 1.0)
            if (w_b is None and type(p) is np.ndarray and p.ndim == 2 and not ctx._tensor_mode
                    and getattr(g, "dtype", p.dtype) == p.dtype):
                return _smoothed_class_grad(p, rowsum, (1 - eps) * wt, smooth, tk, g), \
                    None, None, None, None, None, None
            gx = g * (p * rowsum - (1 - eps) * wt * (cls == tk) - smooth)
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
        if type(tk) is np.ndarray and tk.ndim == 2 and not ctx._tensor_mode:
            s = -g * wt  # (N, C) host input: zeros, then -g w at the targets (as PyTorch's
            gx = np.zeros((tk.shape[0], cls.shape[1]), s.dtype)  # scatter: +0 elsewhere)
            gx[np.arange(tk.shape[0]), tk[:, 0]] = s[:, 0] + 0  # (ignored rows: +0, not -0)
            return gx, None, None, None, None
        return -g * wt * (cls == tk), None, None, None, None


def _plain_class_result(ctx: Any, x: Any, p: Any, target: Any, loss: Any, total: Any,
                        reduction: str) -> Any:
    """cross_entropy's plain branch ((N, C) logits, every target a class): what it saves (the
    general branch's layout, every target's weight and validity 1) and its result (``total``:
    the rows' sum, or None to take it here)."""
    n, c = x.shape
    ones = np.empty((n, 1), x.dtype)
    ones.fill(1)
    den = x.dtype.type(n)
    ctx.save_for_backward(x, p, target.reshape(n, 1), np.arange(c).reshape(1, c), ones, ones,
                          None, den)
    if reduction == "none":
        return loss
    if total is None:
        total = np.add.reduce(loss)
    return total if reduction == "sum" else total / den  # (n > 0: no 0/0 to quiet)


def _plain_class_targets(x: Any, target: Any, weight: Any, ignore_index: int, eps: float) -> bool:
    """Whether cross entropy's fast branch applies: float32/float64 (N, C) host logits, int64
    targets all in [0, C) (a negative one wraps past C as uint64), ignore_index outside [0, C)."""
    if type(x) is not np.ndarray or x.ndim != 2 or weight is not None or eps != 0 \
            or x.dtype.kind != "f" or x.dtype.itemsize < 4 or type(target) is not np.ndarray \
            or not x.size:
        return False
    C = x.shape[1]
    return not 0 <= ignore_index < C and np.maximum.reduce(target.view(np.uint64), None) < C


def _smoothed_class_grad(p: np.ndarray, rowsum: Any, hit: Any, smooth: Any, tk: Any,
                         g: Any) -> np.ndarray:
    """Cross entropy's input gradient with label smoothing and no class weights, (N, C) host
    probabilities: g * (p * rowsum - hit * onehot - smooth) (rowsum, hit = (1 - eps) * wt and
    smooth per row) in three passes over one array instead of the formula's six: off the targets
    the one-hot term is +0, so p * rowsum - smooth there, and each target's entry is recomputed
    in the formula's order. The same bits."""
    gx = np.multiply(p, rowsum)
    rows, cols = np.arange(p.shape[0]), tk[:, 0]
    at = (gx[rows, cols] - hit[:, 0]) - smooth[:, 0]
    gx -= smooth
    gx[rows, cols] = at
    gx *= g
    return gx


def _class_target_checks(name: str, input: Any, target: Any, weight: Any) -> Any:
    """Validate class-index targets; returns the target as int64."""
    ishape, tshape = input._data.shape, target._data.shape
    tnp = target._data.dtype
    if tnp != np.int64 and tnp != np.uint8:
        hint = " Class-index targets must be int64: use target.long()."
        if target.is_floating_point():
            hint += (" Or, to pass class probabilities, give a float target of the input's "
                     f"shape {list(ishape)}.")
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {_dtype.legacy_name(target.dtype)} "
            f"(expected scalar type Long but found {_dtype.legacy_name(target.dtype)}; {name} got input "
            f"{list(ishape)} and target {list(tshape)} of dtype {target.dtype}).{hint}"
        )
    ndim = len(ishape)
    if ndim == 0:
        raise ValueError(f"{name}: input must have at least 1 dimension (classes), got a 0-d tensor")
    C = ishape[1] if ndim >= 2 else ishape[0]
    if ndim == 1:
        if len(tshape) != 0:
            raise RuntimeError(
                f"{name}: 1D input {list(ishape)} (one sample's {C} class scores) expects a 0D "
                f"target (one class index), got target of shape {list(tshape)}"
            )
    else:
        if len(tshape) != ndim - 1:
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
    if tnp == np.uint8:
        target = target.to(_dtype.int64)
    return target


# ---------------------------------------------------------------------------------------------
# binary cross entropy


def binary_cross_entropy(input: Any, target: Any, weight: Any = None, size_average: Any = None,
                         reduce: Any = None, reduction: str = "mean") -> Any:
    """Binary cross entropy between probabilities ``input`` and ``target`` (logs clamped at -100)."""
    if _amp.active:
        input, target, weight = _amp_cast("binary_cross_entropy", input, target, weight)
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
            f"Found dtype {_dtype.legacy_name(target.dtype)} but expected {_dtype.legacy_name(input.dtype)}: "
            f"binary_cross_entropy needs a floating point target like its input ({input.dtype}); "
            "use target.float()."
        )
    if target.dtype != input.dtype:
        target = target.to(input.dtype)
    d = input._data
    if not bool(((d >= 0) & (d <= 1)).all()):  # (NaN fails both tests, as in PyTorch)
        nan = "it holds NaN (check the step that made it); " if bool((d != d).any()) else ""
        raise RuntimeError(
            f"all elements of input should be between 0 and 1 ({nan}binary_cross_entropy takes "
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
    if _amp.active:
        input, target, weight, pos_weight = _amp_cast("binary_cross_entropy_with_logits", input, target, weight, pos_weight)
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
            f"Found dtype {_dtype.legacy_name(target.dtype)} but expected {_dtype.legacy_name(input.dtype)}: "
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


def ctc_loss(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Any:
    """The CTC loss of (T, N, C) (or unbatched (T, C)) log-probabilities against targets.

    ``targets`` is (N, S) padded or the 1-D concatenation of all targets (``target_lengths``
    says how to split it); ``input_lengths`` / ``target_lengths`` are tensors or int sequences.
    'mean' averages ``loss_n / target_length_n`` over the batch; ``zero_infinity`` turns the
    infinite losses of impossible alignments (and their gradients) into 0.
    """
    if _amp.active:
        (log_probs,) = _amp_cast("ctc_loss", log_probs)
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
    tgt = _backend.to_device(targets._data, _backend.CPU) if isinstance(targets, TensorBase) else \
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
        sp = _softplus_neg(xp, x)
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
            sig_neg = _kernels.activation("sigmoid", -x)  # sigmoid(-x): one pass, 1 ulp
            if sig_neg is None:
                sig_neg = xp.exp(-xp.logaddexp(0, x))  # (no overflow)
            lw = 1 if pw is None else 1 + (pw - 1) * t
            gx = g * ((1 - t) - lw * sig_neg)
        if ctx.needs_input_grad[1]:
            gt = g * (-x if pw is None else (pw - 1) * _softplus_neg(xp, x) - x)
        return gx, gt, None, None, None


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


def _softplus_neg(xp: Any, x: Any) -> Any:
    """log(1 + exp(-x)) = logaddexp(0, -x): the float32 softplus kernel (one pass, 1 ulp; NumPy's
    logaddexp is a scalar loop, ~15x slower), else NumPy's."""
    sp = _kernels.activation("softplus", -x, 1.0, math.inf)
    return sp if sp is not None else xp.logaddexp(0, -x)


def _reduce_array(xp: Any, loss: Any, reduction: str) -> Any:
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    with _quiet(xp):
        return loss.sum() / loss.size


def _grad_scale(ctx: Any, grad: Any) -> Any:
    return grad / ctx.n if ctx.reduction == "mean" else grad


def _lengths(v: Any, what: str) -> np.ndarray:
    if isinstance(v, TensorBase):
        arr = _backend.to_device(v._data, _backend.CPU)
    else:
        arr = np.asarray(v)
    if arr.dtype.kind not in "iu":
        raise RuntimeError(f"ctc_loss: {what} must be integers, got dtype {arr.dtype}")
    return arr.astype(np.int64).reshape(-1)
