"""Linear functions: ``linear`` and ``bilinear``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import _backend, _dtype
from ... import _kernels_loader as _kernels
from ..._tensor_base import TensorBase
from ...autograd import grad_mode
from ...autograd.function import Op, internal_view
from .. import _out
from .._autocast import cast as _amp_cast
from .._autocast import flag as _amp
from .._promote import conjugated, half_gemm, opmath, round_half, wide

__all__ = [
    "linear", "bilinear",
]


# ---------------------------------------------------------------------------------------------
# linear layers


def linear(input: TensorBase, weight: TensorBase, bias: TensorBase | None = None,
           *, out: Any = None) -> TensorBase:
    """x W^T + b, x of shape (*, in_features), W of shape (out_features, in_features)."""
    if out is not None:
        return _out.write(out, linear(input, weight=weight, bias=bias), "linear")
    if _amp.active:
        input, weight, bias = _amp_cast("linear", input, weight, bias)
    try:
        x, w = input._data, weight._data
    except AttributeError:
        raise TypeError(
            f"linear(): input and weight must be Tensors, got {type(input).__name__} and "
            f"{type(weight).__name__}"
        ) from None
    b = None if bias is None else bias._data
    # the common case in one test: matching dtypes, 2-D weight, in_features that agree
    if (x.dtype == w.dtype and w.ndim == 2 and x.ndim and x.shape[-1] == w.shape[1]
            and (b is None or (b.dtype == w.dtype and b.shape == (w.shape[0],)))):
        if x.ndim > 2 and not x.flags.c_contiguous and _flattens_to_copy(x):
            return _linear_of_flat_copy(input, weight, bias)
        res = _linear_op(x.ndim, b, x.dtype).apply(input, weight, bias)
        if b is not None and x.ndim != 2 and res._grad_fn is None:
            internal_view(res)  # PyTorch's: a view of its addmm's output (ViewBackward0)
        return res
    return _linear_checked(input, weight, bias)


def bilinear(input1: TensorBase, input2: TensorBase, weight: TensorBase, bias: TensorBase | None = None) -> TensorBase:
    """y_k = x1^T W_k x2 + b_k; W of shape (out, in1, in2)."""
    if _amp.active:
        input1, input2, weight, bias = _amp_cast("bilinear", input1, input2, weight, bias)
    if weight.ndim != 3:
        raise RuntimeError(
            f"bilinear(): weight must be 3-D (out_features, in1_features, in2_features), got "
            f"shape {tuple(weight.shape)}"
        )
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(
            f"bilinear(): input batch dimensions do not match: got {tuple(input1.shape[:-1])} "
            f"and {tuple(input2.shape[:-1])}"
        )
    if input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(
            f"bilinear(): input sizes ({input1.shape[-1]}, {input2.shape[-1]}) do not match the "
            f"weight's (in1_features, in2_features) = ({weight.shape[1]}, {weight.shape[2]})"
        )
    if input1._data.dtype.kind == "c" and grad_mode.state.enabled and any(
            t is not None and t.requires_grad for t in (input1, input2, weight, bias)):
        raise RuntimeError("_trilinear does not support automatic differentiation for outputs "
                           "with complex dtype. (As PyTorch: compute it under torch.no_grad(), "
                           "or write it with einsum, which is differentiable.)")
    return Bilinear.apply(input1, input2, weight, bias)


class Linear(Op):
    """out = x W^T + b   (one GEMM over the flattened batch)
    grad_x = grad W          grad_W = grad^T x (summed over batch dims)          grad_b = sum grad"""
    node_name = "AddmmBackward0"
    new_grads = True  # backward's gradients are new arrays, one each (ops/_promote.py rounds
    # a weight's in place for autocast's cast back)

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any, b: Any) -> Any:
        # PyTorch's addmm/mm formula: x is kept for W's gradient, W for x's, each only when
        # that gradient is needed (so an in-place change to the other is allowed, as there)
        need = ctx.needs_input_grad
        ctx.save_for_backward(x if need[1] else None, w if need[0] else None)
        ctx.x_shape, ctx.w_shape = x.shape, w.shape
        rows = math.prod(x.shape[:-1])
        # (the bias added after the product, on each part's rows; a float16/bfloat16 product
        # is float32 here: the bias joins it there)
        out = _gemm(x.reshape(rows, x.shape[-1]), w.T, b)
        if out.dtype != x.dtype:  # a bfloat16 product is float32: round once
            out = round_half(out, x.dtype)
        return out.reshape(x.shape[:-1] + (w.shape[0],))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, w = ctx.saved
        need = ctx.needs_input_grad
        x_shape = tuple(ctx.x_shape)
        rows = math.prod(x_shape[:-1])
        g2 = grad.reshape(rows, grad.shape[-1])
        gx = gw = gb = None
        if need[0]:
            gx = _gemm(g2, w).reshape(x_shape)
        if need[1]:
            gw = _gemm(g2.swapaxes(0, 1), x.reshape(rows, x_shape[-1]))
        if need[2]:
            gb = wide(g2).sum(axis=0)  # (half_gemm's bfloat16 gradient: summed in float32)
        return gx, gw, gb


# PyTorch's node for linear depends on the input's rank and the bias (it lowers to mm/addmm with
# views around them); the rule is Linear's in every case (``ops/_shown.py`` shows those views).
class LinearMm(Linear):
    node_name = "MmBackward0"


class LinearView(Linear):
    node_name = "ViewBackward0"


class LinearUnsafeView(Linear):
    node_name = "UnsafeViewBackward0"


class LinearSqueeze(Linear):
    node_name = "SqueezeBackward4"


class Bilinear(Op):
    """out_k = x1^T W_k x2 + b_k   (batch dims flattened; every contraction is one GEMM)
    grad_x1 = sum_k grad_k W_k x2          grad_x2 = sum_k grad_k W_k^T x1
    grad_W_k = sum over batch of grad_k x1 x2^T          grad_b = sum grad"""
    @staticmethod
    def forward(ctx: Any, x1: Any, x2: Any, w: Any, b: Any) -> Any:
        ctx.save_for_backward(x1, x2, w)
        k, i, j = w.shape
        a1, a2 = x1.reshape(-1, i), x2.reshape(-1, j)
        u = _x1_w(a1, w)  # (B, K, J)
        out = (u * a2.reshape(-1, 1, j)).sum(axis=2)
        if b is not None:
            out = out + b
        return out.reshape(x1.shape[:-1] + (k,))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x1, x2, w = ctx.saved
        need = ctx.needs_input_grad
        k, i, j = tuple(w.shape)
        g = grad.reshape(-1, k)
        n = g.shape[0]
        a1, a2 = x1.reshape(n, i), x2.reshape(n, j)
        g1 = g2 = gw = gb = None
        if need[0]:
            t = (a2 @ w.reshape(k * i, j).swapaxes(0, 1)).reshape(n, k, i)
            g1 = (g.reshape(n, k, 1) * t).sum(axis=1).reshape(tuple(x1.shape))
        if need[1]:
            g2 = (g.reshape(n, k, 1) * _x1_w(a1, w)).sum(axis=1).reshape(tuple(x2.shape))
        if need[2]:
            gk_a1 = (g.reshape(n, k, 1) * a1.reshape(n, 1, i)).reshape(n, k * i)
            gw = (gk_a1.swapaxes(0, 1) @ a2).reshape(k, i, j)
        if need[3]:
            gb = g.sum(axis=0)
        return g1, g2, gw, gb


def _linear_of_flat_copy(input: TensorBase, weight: TensorBase, bias: Any) -> TensorBase:
    """PyTorch flattens a batch whose layout does not flatten as a view into a copy and saves
    that copy (an in-place change of the input afterwards leaves backward alone): the same two
    steps here."""
    flat = input.reshape(-1, input._data.shape[-1])
    out2 = _linear_op(2, bias, flat._data.dtype).apply(flat, weight, bias)
    return out2.reshape(tuple(input._data.shape[:-1]) + (weight._data.shape[0],))


def _flattens_to_copy(x: Any) -> bool:
    """Whether ``x`` (N-D, not C-ordered) flattens to (rows, in_features) only as a copy."""
    flat = x.reshape(-1, x.shape[-1])
    return not _backend.xp_of(x).may_share_memory(flat, x)


def _linear_op(ndim: int, bias: Any, dt: Any) -> type:
    if ndim == 2:
        op = Linear if bias is not None else LinearMm
    elif bias is not None:
        op = LinearView
    else:
        op = LinearSqueeze if ndim == 1 else LinearUnsafeView
    # float16/bfloat16: the product, the bias and the gradients in float32, rounded once (the
    # bfloat16 operands multiplied as they are where the CPU can: half_gemm)
    if dt.itemsize == 2:
        return half_gemm(op) if _kernels.bf16_gemm_ready(dt) else opmath(op)
    return conjugated(op) if dt.kind == "c" else op  # complex: PyTorch's conjugated rule


def _linear_checked(input: TensorBase, weight: TensorBase, bias: TensorBase | None) -> TensorBase:
    if input.dtype != weight.dtype or (bias is not None and bias.dtype != weight.dtype):
        other = bias.dtype if bias is not None and input.dtype == weight.dtype else input.dtype
        raise RuntimeError(
            f"mat1 and mat2 must have the same dtype, but got {_dtype.legacy_name(other)} and "
            f"{_dtype.legacy_name(weight.dtype)} (linear: input {tuple(input.shape)} {input.dtype}, "
            f"weight {tuple(weight.shape)} {weight.dtype}). Convert the input, e.g. x = x.float(), "
            "or the model, e.g. model.double()"
        )
    if weight.ndim not in (1, 2):
        raise RuntimeError(
            f"linear(): weight must be 1-D or 2-D (out_features, in_features), got shape "
            f"{tuple(weight.shape)}"
        )
    squeeze_out = weight.ndim == 1
    if squeeze_out:
        weight = weight.reshape(1, -1)
        if bias is not None and bias.ndim == 0:
            bias = bias.reshape(1)
    if input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        cols = input.shape[-1] if input.ndim else 1
        rows = math.prod(input.shape[:-1]) if input.ndim > 1 else 1
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} and "
            f"{weight.shape[1]}x{weight.shape[0]}) (linear: input of shape "
            f"{tuple(input.shape)}, weight of shape {tuple(weight.shape)}: the last dim of the "
            f"input must equal in_features={weight.shape[1]})"
        )
    if bias is not None and tuple(bias.shape) not in ((weight.shape[0],), (), (1,)):
        raise RuntimeError(
            f"linear(): bias of shape {tuple(bias.shape)} does not match out_features="
            f"{weight.shape[0]} (weight of shape {tuple(weight.shape)})"
        )
    x = input._data
    if x.ndim > 2 and not x.flags.c_contiguous and _flattens_to_copy(x):
        out = _linear_of_flat_copy(input, weight, bias)
    else:
        out = _linear_op(input.ndim, bias, x.dtype).apply(input, weight, bias)
    if squeeze_out:
        out = out.squeeze(-1)
    return out


def _x1_w(a1: Any, w: Any) -> Any:
    """(B, I) x (K, I, J) -> (B, K, J): sum_i a1[b, i] w[k, i, j], as one GEMM."""
    k, i, j = tuple(w.shape)
    return (a1 @ w.swapaxes(0, 1).reshape(i, k * j)).reshape(a1.shape[0], k, j)


def _gemm(a: Any, b: Any, bias: Any = None) -> Any:
    """``a @ b`` (then ``+= bias``); bfloat16 host arrays (``half_gemm``'s operands) by the
    kernel, in float32, the bias joining that float32 product."""
    if a.dtype.itemsize == 2 and type(a) is np.ndarray:
        out = _kernels.bf16_gemm(a, b)  # (None where the kernels were turned off since forward)
        if out is None:
            return _backend.gemm(wide(a), wide(b), bias)
        if bias is not None:
            out += bias
        return out
    return _backend.gemm(a, b, bias)
