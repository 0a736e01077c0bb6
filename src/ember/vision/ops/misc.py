"""Building blocks models share, as torchvision's ``ops.misc``: ``Conv2dNormActivation`` and
``Conv3dNormActivation`` (conv -> norm -> activation), ``FrozenBatchNorm2d`` (batch norm with
fixed statistics and affine parameters), ``SqueezeExcitation``, ``MLP`` and ``Permute``."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ... import Tensor, nn, ones, zeros

__all__ = ["ConvNormActivation", "Conv2dNormActivation", "Conv3dNormActivation",
           "FrozenBatchNorm2d", "SqueezeExcitation", "MLP", "Permute"]


class FrozenBatchNorm2d(nn.Module):
    """BatchNorm2d whose statistics and affine parameters are fixed: ``weight``, ``bias``,
    ``running_mean`` and ``running_var`` are buffers (no gradients, untouched by ``train()``),
    as detection backbones use it.

    ``y = (x - running_mean) / sqrt(running_var + eps) * weight + bias`` per channel (dim 1).
    Its ``state_dict`` keys are those four; loading a ``BatchNorm2d`` checkpoint drops its
    ``num_batches_tracked``.
    """

    def __init__(self, num_features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", ones(num_features))
        self.register_buffer("bias", zeros(num_features))
        self.register_buffer("running_mean", zeros(num_features))
        self.register_buffer("running_var", ones(num_features))

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        state_dict.pop(prefix + "num_batches_tracked", None)  # a BatchNorm2d's counter
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def forward(self, x: Tensor) -> Tensor:
        # one scale and one shift per channel, folded before touching x
        scale = self.weight.reshape(1, -1, 1, 1) * (
            self.running_var.reshape(1, -1, 1, 1) + self.eps).rsqrt()
        shift = self.bias.reshape(1, -1, 1, 1) - self.running_mean.reshape(1, -1, 1, 1) * scale
        return x * scale + shift

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.weight.shape[0]}, eps={self.eps})"


class ConvNormActivation(nn.Sequential):
    """``conv_layer`` then ``norm_layer`` then ``activation_layer``, as one ``Sequential`` whose
    children are named 0, 1, 2 (checkpoint keys ``<name>.0.weight``, ``<name>.1.running_mean``).
    Use ``Conv2dNormActivation`` or ``Conv3dNormActivation`` (as in torchvision, building this
    base class directly warns).

    ``padding=None`` keeps the size at stride 1 (``(kernel_size - 1) // 2 * dilation`` per
    axis); ``bias=None`` means a bias only when there is no norm layer (a norm's shift makes it
    redundant); ``inplace=None`` builds the activation with its own default."""

    def __init__(self, in_channels: int, out_channels: int,
                 kernel_size: int | tuple[int, ...] = 3, stride: int | tuple[int, ...] = 1,
                 padding: int | tuple[int, ...] | str | None = None, groups: int = 1,
                 norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm2d,
                 activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
                 dilation: int | tuple[int, ...] = 1, inplace: bool | None = True,
                 bias: bool | None = None,
                 conv_layer: Callable[..., nn.Module] = nn.Conv2d) -> None:
        if padding is None:
            if isinstance(kernel_size, int) and isinstance(dilation, int):
                padding = (kernel_size - 1) // 2 * dilation
            else:
                n = len(kernel_size) if not isinstance(kernel_size, int) else len(dilation)
                ks = (kernel_size,) * n if isinstance(kernel_size, int) else tuple(kernel_size)
                dl = (dilation,) * n if isinstance(dilation, int) else tuple(dilation)
                padding = tuple((k - 1) // 2 * d for k, d in zip(ks, dl))
        if bias is None:
            bias = norm_layer is None
        layers: list[nn.Module] = [conv_layer(in_channels, out_channels, kernel_size, stride,
                                              padding, dilation=dilation, groups=groups,
                                              bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer(**({} if inplace is None else {"inplace": inplace})))
        super().__init__(*layers)
        self.out_channels = out_channels
        if type(self) is ConvNormActivation:
            warnings.warn("Don't use ConvNormActivation directly, please use "
                          "Conv2dNormActivation and Conv3dNormActivation instead.", stacklevel=2)


class Conv2dNormActivation(ConvNormActivation):
    """``Conv2d`` -> ``norm_layer`` (default ``BatchNorm2d``) -> ``activation_layer`` (default
    ``ReLU``); see ``ConvNormActivation``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, int] = 3,
                 stride: int | tuple[int, int] = 1,
                 padding: int | tuple[int, int] | str | None = None, groups: int = 1,
                 norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm2d,
                 activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
                 dilation: int | tuple[int, int] = 1, inplace: bool | None = True,
                 bias: bool | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, groups,
                         norm_layer, activation_layer, dilation, inplace, bias, nn.Conv2d)


class Conv3dNormActivation(ConvNormActivation):
    """``Conv3d`` -> ``norm_layer`` (default ``BatchNorm3d``) -> ``activation_layer`` (default
    ``ReLU``); see ``ConvNormActivation``."""

    def __init__(self, in_channels: int, out_channels: int,
                 kernel_size: int | tuple[int, int, int] = 3,
                 stride: int | tuple[int, int, int] = 1,
                 padding: int | tuple[int, int, int] | str | None = None, groups: int = 1,
                 norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm3d,
                 activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
                 dilation: int | tuple[int, int, int] = 1, inplace: bool | None = True,
                 bias: bool | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, groups,
                         norm_layer, activation_layer, dilation, inplace, bias, nn.Conv3d)


class SqueezeExcitation(nn.Module):
    """Squeeze-and-excitation (Hu et al., 2018): ``x * scale_activation(fc2(activation(fc1(
    avgpool(x)))))`` with 1x1 convolutions ``fc1`` (input -> squeeze channels) and ``fc2``
    (back), children ``avgpool``, ``fc1``, ``fc2``, ``activation``, ``scale_activation`` as in
    torchvision (keys ``fc1.weight``, ``fc1.bias``, ``fc2.weight``, ``fc2.bias``)."""

    def __init__(self, input_channels: int, squeeze_channels: int,
                 activation: Callable[..., nn.Module] = nn.ReLU,
                 scale_activation: Callable[..., nn.Module] = nn.Sigmoid) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input: Tensor) -> Tensor:
        return self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(input)))))

    def forward(self, input: Tensor) -> Tensor:
        return self._scale(input) * input


class MLP(nn.Sequential):
    """Linear layers of widths ``hidden_channels``, each but the last followed by ``norm_layer``
    (if any), ``activation_layer`` and ``Dropout(dropout)``; the last by ``Dropout(dropout)``.
    Children are numbered in that order, as torchvision's (``0.weight``, ``3.weight``...).
    ``inplace=None`` builds the activation and dropout layers with their own defaults."""

    def __init__(self, in_channels: int, hidden_channels: list[int],
                 norm_layer: Callable[..., nn.Module] | None = None,
                 activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
                 inplace: bool | None = None, bias: bool = True, dropout: float = 0.0) -> None:
        if not hidden_channels:
            raise IndexError("MLP: hidden_channels must list at least one width (the output's), "
                             "got an empty list")
        if activation_layer is None and len(hidden_channels) > 1:
            raise TypeError("MLP: activation_layer is called between the linear layers; pass a "
                            "module class such as nn.ReLU or nn.Identity, not None")
        params = {} if inplace is None else {"inplace": inplace}
        layers: list[nn.Module] = []
        width = in_channels
        for hidden in hidden_channels[:-1]:
            layers.append(nn.Linear(width, hidden, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden))
            layers.append(activation_layer(**params))
            layers.append(nn.Dropout(dropout, **params))
            width = hidden
        layers.append(nn.Linear(width, hidden_channels[-1], bias=bias))
        layers.append(nn.Dropout(dropout, **params))
        super().__init__(*layers)


class Permute(nn.Module):
    """``x.permute(*dims)`` as a module (ConvNeXt and Swin use it to move channels last)."""

    def __init__(self, dims: list[int]) -> None:
        super().__init__()
        self.dims = dims

    def forward(self, x: Tensor) -> Tensor:
        return x.permute(*self.dims)
