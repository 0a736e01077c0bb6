"""Pointwise arithmetic, continued from ``pointwise.py``: the fused forms addcmul
(``input + value * t1 * t2``), addcdiv (``input + value * t1 / t2``) and lerp
(``input + weight * (end - input)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtype
from .. import _kernels_loader as _kernels
from .._tensor_base import TensorBase
from ..autograd.function import Op
from . import _out
from ._autocast import cast as _amp_cast
from ._autocast import flag as _amp
from ._promote import _om, _promote, _promoted, _quietly, _truediv
from .casting import as_tensor_arg
from .pointwise import _is_int_arg

__all__ = ["addcmul", "addcdiv", "lerp"]


def addcmul(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1, out: Any = None) -> Any:
    """``input + value * tensor1 * tensor2``."""
    if _amp.active:
        input, tensor1, tensor2 = _amp_cast("addcmul", input, tensor1, tensor2)
    input, tensor1, tensor2 = _promote3(input, tensor1, tensor2)
    res = _om(Addcmul, input, tensor1, tensor2).apply(input, tensor1, tensor2, value)
    return res if out is None else _out.write(out, res, "addcmul")


def addcdiv(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1, out: Any = None) -> Any:
    """``input + value * tensor1 / tensor2`` (floating tensors only, as in PyTorch)."""
    if _amp.active:
        input, tensor1, tensor2 = _amp_cast("addcdiv", input, tensor1, tensor2)
    if (_is_int_arg(tensor1) and _is_int_arg(tensor2)
            and isinstance(tensor1, TensorBase) and isinstance(tensor2, TensorBase)):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release "
            "addcdiv will perform a true division of tensor1 and tensor2. Convert tensor1 or "
            "tensor2 to a floating dtype first (e.g. t1.float())"
        )
    input, tensor1, tensor2 = _promote3(input, tensor1, tensor2)
    res = _om(Addcdiv, input, tensor1, tensor2).apply(input, tensor1, tensor2, value)
    return res if out is None else _out.write(out, res, "addcdiv")


def lerp(input: Any, end: Any, weight: Any, *, out: Any = None) -> Any:
    """``input + weight * (end - input)`` (``end`` and a non-0-d ``weight`` must have
    ``input``'s dtype, as in PyTorch)."""
    for name, v in (("end", end), ("weight", weight)):
        if (isinstance(v, TensorBase) and isinstance(input, TensorBase) and v.dtype != input.dtype
                and (name == "end" or v.ndim)):
            raise RuntimeError(f"expected dtype {input.dtype} for `{name}` but got dtype "
                               f"{v.dtype}; convert it first: {name}.to({input.dtype})")
    input, end = _promote(input, end)
    if isinstance(weight, TensorBase):
        input, weight = _promote(input, weight)
        res = _om(LerpT, input, end, weight).apply(input, end, weight)
    else:
        res = _om(Lerp, input, end).apply(input, end, weight)
    return res if out is None else _out.write(out, res, "lerp")


# ---------------------------------------------------------------------------------------------
# op classes


_FUSED_FROM = 4096  # elements from which addcmul/addcdiv take the one-pass kernel (below it
# the NumPy calls cost about as much as the kernel's checks)


class Addcmul(Op):
    """out = x + value * t1 * t2
    grad_x = grad          grad_t1 = grad * value * t2          grad_t2 = grad * value * t1"""

    @staticmethod
    def forward(ctx: Any, x: Any, t1: Any, t2: Any, value: Any) -> Any:
        n = ctx.needs_input_grad  # t1 is kept for t2's gradient only, and t2 for t1's
        # (saved at their argument positions: t1 may be x's very array, as in
        # addcmul(y, y.detach(), w), and must keep its own history for double backward);
        # value only with them, so a node that keeps nothing runs a second backward, as PyTorch's
        ctx.save_for_backward(None, t1 if n[2] else None, t2 if n[1] else None,
                              value if n[1] or n[2] else None)
        if isinstance(value, float) and x.dtype.kind in "iu":
            value = int(value)  # an integer result: value in its dtype, as PyTorch casts it
        if type(x) is np.ndarray and x.size >= _FUSED_FROM and _kernels.addc(
                False, x, t1, t2, out := np.empty_like(x), value):
            return out  # (one pass, the same values)
        return x + value * (t1 * t2)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        _, t1, t2, value = ctx.saved
        n = ctx.needs_input_grad
        return (grad, grad * value * t2 if n[1] else None, grad * value * t1 if n[2] else None,
                None)


class Addcdiv(Op):
    """out = x + value * t1 / t2
    grad_x = grad          grad_t1 = grad * value / t2          grad_t2 = -grad * value * t1 / t2**2"""

    @staticmethod
    def forward(ctx: Any, x: Any, t1: Any, t2: Any, value: Any) -> Any:
        # t1 is kept for t2's gradient only; t2 always, as PyTorch's node keeps it (an in-place
        # change of t2 makes backward raise even when only x needs a gradient)
        # (saved at their argument positions, as Addcmul's)
        ctx.save_for_backward(None, t1 if ctx.needs_input_grad[2] else None, t2, value)
        if type(x) is np.ndarray and x.size >= _FUSED_FROM and _kernels.addc(
                True, x, t1, t2, out := np.empty_like(x), value):
            return out
        return x + value * _quietly(_truediv, t1, t2)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        _, t1, t2, value = ctx.saved
        n = ctx.needs_input_grad
        g1 = _quietly(_truediv, grad * value, t2) if n[1] else None
        g2 = _quietly(_truediv, -grad * value * t1, t2 * t2) if n[2] else None
        return grad, g1, g2, None


class Lerp(Op):
    """out = start + w * (end - start)   (computed as end - (1 - w) * (end - start) for |w| >= 0.5)
    grad_start = grad * (1 - w)          grad_end = grad * w          grad_w = grad * (end - start)

    start and end are saved when w needs a gradient (as PyTorch's), not their difference: a
    write through ``.data`` after the op reaches w's gradient, and an in-place change fails."""

    @staticmethod
    def forward(ctx: Any, start: Any, end: Any, w: Any) -> Any:
        if ctx.needs_input_grad[2]:
            ctx.save_for_backward(start, end, w)
        else:
            ctx.save_for_backward(None, None, w)
        if isinstance(w, (int, float)):
            return _lerp_number(ctx.xp, start, end, w)
        diff = end - start
        wide = getattr(diff, "dtype", None) == np.float32 and ctx.xp is np  # (as _lerp_number)
        if wide and getattr(w, "dtype", None) == np.float32:
            d64 = diff.astype(np.float64)
            out = np.where(np.abs(w) < 0.5, start + d64 * w,
                           end - d64 * (np.float32(1) - w))
            return out.astype(np.float32)
        return ctx.xp.where(abs(w) < 0.5, start + w * diff, end - diff * (1 - w))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        start, end, w = ctx.saved
        n = ctx.needs_input_grad
        return (grad * (1 - w) if n[0] else None, grad * w if n[1] else None,
                grad * (end - start) if n[2] else None)


class LerpT(Lerp):
    """lerp with a tensor weight (same rule as Lerp)."""

    node_name = "LerpBackward1"


# ---------------------------------------------------------------------------------------------
# helpers


def _lerp_number(xp: Any, start: Any, end: Any, w: Any) -> Any:
    """``start + w * (end - start)`` for a number ``w``, PyTorch's formula: from start for
    |w| < 0.5, from end otherwise (exact at w = 1; lerp(a, -inf, 0.5) is nan there, which
    schedulers' interpolated sigmas rely on), each a fused multiply-add: for float32 the product
    and sum are taken in float64 and rounded once, which is what the fused instruction gives.
    Host arrays of one shape take the kernel (one pass, the same values)."""
    if (out := _kernels.lerp(start, end, w)) is not None:
        return out
    diff = end - start
    if getattr(diff, "dtype", None) == np.float32 and xp is np:
        w32 = np.float32(w)
        lo, hi = (start, diff * np.float64(w32)) if abs(w32) < 0.5 else \
            (end, -(diff * np.float64(np.float32(1) - w32)))
        return (lo.astype(np.float64) + hi).astype(np.float32)
    return start + w * diff if abs(w) < 0.5 else end - diff * (1 - w)


def _promote3(x: Any, t1: Any, t2: Any) -> tuple[Any, Any, Any]:
    """Cast three tensor operands to their common dtype."""
    x, t1, t2 = as_tensor_arg(x), as_tensor_arg(t1), as_tensor_arg(t2)
    t1, t2 = _promote(t1, t2)
    x, t1 = _promote(x, t1)
    if isinstance(t2, TensorBase) and isinstance(t1, TensorBase) and t2._data.dtype != t1._data.dtype:
        t2 = _promoted(t2, _dtype.from_numpy(t1._data.dtype))
    return x, t1, t2
