"""``nn.utils.fusion``: fold an eval-mode BatchNorm into the convolution or linear layer before
it, so inference runs one layer instead of two.

For a batch norm with running mean m, variance v, eps, weight g and bias b, and s = g / sqrt(v +
eps): the fused weight is ``W * s`` (per output channel) and the fused bias ``(bias - m) * s + b``.
"""

from __future__ import annotations

import copy
from typing import Any

from ..._tensor import Tensor
from ...ops import creation as _creation
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def _scale(bn_rv: Tensor, bn_eps: float, bn_w: Tensor | None) -> Tensor:
    s = (bn_rv + bn_eps).rsqrt()
    return s if bn_w is None else bn_w * s


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor,
                         bn_eps: float, bn_w: Tensor | None, bn_b: Tensor | None,
                         transpose: bool = False) -> tuple[Parameter, Parameter]:
    """The (weight, bias) of the convolution that equals conv followed by the batch norm.

    ``transpose``: the weight is a transposed convolution's (C_in, C_out / groups, ...)."""
    if conv_b is None:
        conv_b = _creation.zeros_like(bn_rm)
    if bn_b is None:
        bn_b = _creation.zeros_like(bn_rm)
    s = _scale(bn_rv, bn_eps, bn_w)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
    w = (conv_w * s.reshape(shape)).to(conv_w.dtype)
    b = ((conv_b - bn_rm) * s + bn_b).to(conv_w.dtype)
    return Parameter(w.detach(), conv_w.requires_grad), Parameter(b.detach(), conv_b.requires_grad)


def fuse_conv_bn_eval(conv: Any, bn: Any, transpose: bool = False) -> Any:
    """A copy of ``conv`` with ``bn`` (both in eval mode) folded into its weight and bias."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("fuse_conv_bn_eval needs a batch norm with running statistics")
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor,
                           bn_rv: Tensor, bn_eps: float, bn_w: Tensor, bn_b: Tensor
                           ) -> tuple[Parameter, Parameter]:
    """The (weight, bias) of the linear layer that equals linear followed by the batch norm."""
    if linear_b is None:
        linear_b = _creation.zeros_like(bn_rm)
    s = _scale(bn_rv, bn_eps, bn_w)
    w = linear_w * s.unsqueeze(-1)
    b = (linear_b - bn_rm) * s + bn_b
    return Parameter(w.detach(), linear_w.requires_grad), \
        Parameter(b.detach(), linear_b.requires_grad)


def fuse_linear_bn_eval(linear: Any, bn: Any) -> Any:
    """A copy of ``linear`` with ``bn`` (both in eval mode) folded into its weight and bias."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise AssertionError(
            "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
            f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("fuse_linear_bn_eval needs a batch norm with running statistics")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused
