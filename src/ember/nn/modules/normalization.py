"""Normalization layers over features: ``LayerNorm``, ``GroupNorm``, ``RMSNorm``,
``LocalResponseNorm`` (``BatchNorm*`` live in ``batchnorm.py``)."""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from ...ops import creation as _creation
from ...ops import nn as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]


def _shape(normalized_shape: Any) -> tuple[int, ...]:
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(int(s) for s in normalized_shape)


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` dims:
    ``y = (x - mean) / sqrt(var + eps) * weight + bias`` (biased variance).

    Args:
        normalized_shape: the trailing shape to normalize over (int or tuple).
        eps: added to the variance.
        elementwise_affine: learn ``weight`` (ones) and ``bias`` (zeros) of that shape.
        bias: with ``elementwise_affine``, also learn the bias (default True).

    Shape: input (*, *normalized_shape) -> output of the same shape.

    Example::

        >>> ln = nn.LayerNorm(10)
        >>> ln(torch.randn(4, 10)).shape
        torch.Size([4, 10])
    """

    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_creation.empty(self.normalized_shape, device=device,
                                                    dtype=dtype))
            if bias:
                self.bias = Parameter(_creation.empty(self.normalized_shape, device=device,
                                                      dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """weight = 1, bias = 0."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Split the channels into ``num_groups`` groups and normalize each group of each sample;
    then scale and shift per channel.

    Shape: input (N, C, *) -> output of the same shape; C = ``num_channels``.

    Example::

        >>> gn = nn.GroupNorm(3, 6)
        >>> gn(torch.randn(20, 6, 10, 10)).shape
        torch.Size([20, 6, 10, 10])
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(_creation.empty(num_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = Parameter(_creation.empty(num_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """weight = 1, bias = 0."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """``y = x / sqrt(mean(x**2) + eps) * weight`` over the trailing ``normalized_shape`` dims.

    ``eps=None`` uses ``torch.finfo(input.dtype).eps``.

    Example::

        >>> rms = nn.RMSNorm([2, 3])
        >>> rms(torch.randn(2, 2, 3)).shape
        torch.Size([2, 2, 3])
    """

    def __init__(self, normalized_shape: Any, eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_creation.empty(self.normalized_shape, device=device,
                                                    dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """weight = 1."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """``b_c = a_c / (k + alpha / n * sum_{c' near c} a_{c'}**2) ** beta`` over ``size``
    neighbouring channels."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
