"""Helpers shared by the losses, normalization and attention: argument checks, reductions,
and the softmax nodes their backward rules keep.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from typing import Any

import numpy as np

from ... import _kernels_loader as _kernels
from ..._tensor_base import TensorBase
from ...autograd import grad_mode
from ...autograd.function import Op
from .._args import user_stacklevel as _user_stacklevel
from .._reduce import _rowsum
from ..creation import tensor

# ---------------------------------------------------------------------------------------------
# shared helpers


def _size(shape: Any) -> str:
    """How PyTorch prints a shape: ``torch.Size([32, 1])``."""
    return f"torch.Size({list(shape)})"


def _graphing(ctx: Any) -> bool:
    """True while a backward rule runs on tensors (``create_graph=True``)."""
    return bool(ctx._tensor_mode)


def _quiet(xp: Any) -> Any:
    """Silence NumPy's divide/invalid warnings where the op defines the result itself."""
    errstate = getattr(xp, "errstate", None)
    return errstate(divide="ignore", invalid="ignore") if errstate else contextlib.nullcontext()


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
    if isinstance(x, TensorBase):
        return x

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
    if type(target) is type(input) and input._data.shape == target._data.shape:
        return  # (the common call, without building two Size objects)
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
    if t is not None and isinstance(t, TensorBase) and t.requires_grad and grad_mode.state.enabled:
        raise RuntimeError(
            f"The function '{fn}' is not differentiable with respect to argument '{arg}'. This "
            f"input cannot have requires_grad True. (Pass {arg}.detach() if it should stay fixed.)"
        )


def _check_floating(name: str, x: Any, what: str = "input") -> None:
    if not x.is_floating_point():
        raise (NotImplementedError if x.is_complex() else RuntimeError)(  # PyTorch's classes
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
        return out * (grad - _rowsum(grad * out, ctx.axis)), None, None


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
        return grad - ctx.xp.exp(out) * _rowsum(grad, ctx.axis), None, None


def _softmax_stats(xp: Any, x: Any, axis: int, need_p: bool) -> tuple[Any, Any]:
    """(softmax(x) or None, logsumexp(x)) along ``axis`` with keepdims, stable for finite x."""
    if (res := _kernels.softmax_lse(x, need_p, axis)) is not None:
        return res  # the eager kernel (one pass a row, or a column block of a middle dim)
    m = x.max(axis=axis, keepdims=True)
    with _quiet(xp):
        m = xp.where(xp.isfinite(m), m, 0)
        e = xp.exp(x - m)
        s = _rowsum(e, axis)
        lse = xp.log(s) + m
        if need_p:
            e /= s
    return (e if need_p else None), lse


# ---------------------------------------------------------------------------------------------
# attention's masks and output layout (ops/nn/attention.py)


_CAUSAL: dict = {}  # (L, S) -> the read-only lower-triangular bool mask of is_causal


def _causal_mask(xp: Any, L: int, S: int) -> Any:
    """``is_causal``'s mask, key j <= query i (one cached read-only copy per size on the host)."""
    if xp is not np:
        return xp.tri(L, S, 0, dtype=bool)
    m = _CAUSAL.get((L, S))
    if m is None:
        if len(_CAUSAL) > 64:
            _CAUSAL.clear()
        m = _CAUSAL[(L, S)] = np.tri(L, S, 0, dtype=bool)
        m.flags.writeable = False
    return m


def _is_causal(bmask: Any, L: int, S: int) -> bool:
    """Whether a bool mask is exactly the causal one (is_causal's, or an equal attn_mask)."""
    if type(bmask) is not np.ndarray or bmask.shape != (L, S):
        return False
    return bmask is _CAUSAL.get((L, S)) or bool(np.array_equal(bmask, _causal_mask(np, L, S)))


def _query_layout_empty(q: Any, ev: int) -> Any:
    """A new float32 output (..., L, ev) in the query's memory order, as ``_query_layout``
    copies one into (for the kernel to write in place); None (C order) where that keeps it."""
    if type(q) is not np.ndarray or q.ndim < 3 or q.flags.c_contiguous or \
            q.strides[-1] != q.itemsize:
        return None
    order = sorted(range(q.ndim - 1), key=lambda i: -q.strides[i]) + [q.ndim - 1]
    if order == list(range(q.ndim)):
        return None
    shape = q.shape[:-1] + (ev,)
    return np.empty([shape[i] for i in order], np.float32).transpose(np.argsort(order))


def _kernel_forward(ctx: Any, q: Any, k: Any, v: Any, fmask: Any, bmask: Any, scale: float,
                    keep: Any, p_drop: float, groups: int) -> Any:
    """ScaledDotProductAttention's forward by the attention kernel (float32 without dropout,
    with no mask or the causal one), its context set as the formula's; None where it does not
    apply (``ctx.qkv`` None: backward takes the formula too)."""
    ctx.qkv = None
    if fmask is not None or keep is not None or groups != 1 or (
            bmask is not None and not _is_causal(bmask, q.shape[-2], k.shape[-2])):
        return None
    res = _kernels.attention(q, k, v, scale, bmask is not None,
                             _query_layout_empty(q, v.shape[-1]))
    if res is None:
        return None
    out, p = res
    ctx.qkv = True
    ctx.scale, ctx.p_drop, ctx.groups = scale, p_drop, groups
    # (the output too, as the formula's forward saves it)
    ctx.save_for_backward(q, k, v, fmask, bmask, keep, p, out)
    return out
