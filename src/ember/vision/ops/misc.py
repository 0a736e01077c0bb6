"""Building blocks models share: ``Conv2dNormActivation`` (conv -> norm -> activation) and
``FrozenBatchNorm2d`` (batch norm with fixed statistics and affine parameters)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ... import Tensor, nn, ones, zeros

__all__ = ["Conv2dNormActivation", "FrozenBatchNorm2d"]


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


class Conv2dNormActivation(nn.Sequential):
    """``Conv2d`` then ``norm_layer`` then ``activation_layer``, as one ``Sequential`` whose
    children are named 0, 1, 2 (checkpoint keys ``<name>.0.weight``, ``<name>.1.running_mean``).

    ``padding=None`` keeps the size at stride 1 (``(kernel_size - 1) // 2 * dilation``);
    ``bias=None`` means a bias only when there is no norm layer (a norm's shift makes it
    redundant)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, int] = 3,
                 stride: int | tuple[int, int] = 1,
                 padding: int | tuple[int, int] | str | None = None, groups: int = 1,
                 norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm2d,
                 activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
                 dilation: int | tuple[int, int] = 1, inplace: bool | None = True,
                 bias: bool | None = None) -> None:
        if padding is None:
            ks = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
            dl = (dilation, dilation) if isinstance(dilation, int) else tuple(dilation)
            pads = tuple((k - 1) // 2 * d for k, d in zip(ks, dl))
            padding = pads[0] if isinstance(kernel_size, int) and isinstance(dilation, int) else pads
        if bias is None:
            bias = norm_layer is None
        layers: list[nn.Module] = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding,
                                             dilation=dilation, groups=groups, bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer(**({} if inplace is None else {"inplace": inplace})))
        super().__init__(*layers)
        self.out_channels = out_channels
