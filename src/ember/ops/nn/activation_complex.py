"""Activations, continued from ``activation.py``: the three that PyTorch also defines on complex
tensors, ``silu``, ``softsign`` and ``tanhshrink``, in their real and complex forms.

On complex input they compute what PyTorch computes: softsign is ``x / (1 + |x|)`` and tanhshrink
``x - tanh(x)``, built from the complex ops (division, ``abs``, ``tanh``, subtraction), so their
gradients are those ops' conjugate-Wirtinger gradients and their nodes are PyTorch's
(``DivBackward0``, ``SubBackward0``); silu is ``x / (1 + exp(-x))`` forward only: PyTorch refuses
to differentiate it ("silu does not support automatic differentiation for outputs with complex
dtype"), so ember raises that error when autograd would record it. Every other activation refuses
complex input (``activation.py``'s ``_float_input``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _backend
from ..._tensor_base import TensorBase
from ...autograd import grad_mode
from ...autograd.function import Op
from .. import _blockwise as _bw
from .. import pointwise as _pw
from .. import pointwise_math as _pm
from .. import pointwise_piecewise as _pp
from ..inplace import inplace as _inplace
from .activation import _act, _sig

__all__ = ["silu", "softsign", "tanhshrink"]


# ---------------------------------------------------------------------------------------------
# activations defined on complex tensors too


def silu(input: TensorBase, inplace: bool = False) -> TensorBase:
    """x * sigmoid(x) (a.k.a. swish); on complex input ``x / (1 + exp(-x))``, without gradient
    (as PyTorch)."""
    if isinstance(input, TensorBase) and input.is_complex():
        return _inplace(input, _silu_complex) if inplace else _silu_complex(input)
    op = _act(Silu, input, "silu")
    if inplace:
        return _inplace(input, op.apply)
    return op.apply(input)


def softsign(input: TensorBase) -> TensorBase:
    """x / (1 + |x|)."""
    if isinstance(input, TensorBase) and input.is_complex():
        return _pw.div(input, _pw.add(_pp.abs(input), 1))  # PyTorch's composite, its gradient
    op = _act(Softsign, input, "softsign")
    return op.apply(input)


def tanhshrink(input: TensorBase) -> TensorBase:
    """x - tanh(x)."""
    if isinstance(input, TensorBase) and input.is_complex():
        return _pw.sub(input, _pm.tanh(input))  # PyTorch's composite, its gradient
    op = _act(Tanhshrink, input, "tanhshrink")
    return op.apply(input)


class Silu(Op):
    """out = x * sigmoid(x)          grad_x = grad * s * (1 + x * (1 - s)), s = sigmoid(x)"""
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        if type(x) is np.ndarray:
            return _bw.run(_bw.silu, "f?", x)
        return x * _sig(ctx.xp, x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        if type(x) is np.ndarray and type(grad) is np.ndarray:
            return _bw.run(_bw.silu_backward, "ff?", x, grad)
        s = _sig(ctx.xp, x)
        return grad * s * (1 + x * (1 - s))  # (PyTorch's order)


class Softsign(Op):
    """out = x / (1 + |x|)          grad_x = grad / (1 + |x|)^2"""
    node_name = "DivBackward0"  # PyTorch computes softsign as a division

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return x / (1 + ctx.xp.abs(x))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        d = 1 + ctx.xp.abs(x)
        return grad / (d * d)


class Tanhshrink(Op):
    """out = x - tanh(x)          grad_x = grad * tanh(x)^2"""
    node_name = "SubBackward0"  # PyTorch computes tanhshrink as a subtraction

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return x - ctx.xp.tanh(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        t = ctx.xp.tanh(x)
        return grad * t * t


def _silu_complex(x: TensorBase) -> TensorBase:
    """silu of a complex tensor, x / (1 + exp(-x)) in its own precision; refused where autograd
    would record it, as PyTorch has no complex derivative for silu."""
    if x.requires_grad and grad_mode.state.enabled:
        raise RuntimeError(
            "silu does not support automatic differentiation for outputs with complex dtype "
            f"(input {x.dtype}, shape {tuple(x.shape)}, requires_grad=True); compute it as "
            "x * torch.sigmoid(x) to differentiate it, or under torch.no_grad()")
    a = x._data
    return TensorBase._make(a / (1 + _backend.xp_of(a).exp(-a)))
