"""Building blocks models share: ``Conv2dNormActivation`` (conv -> norm -> activation)."""

from __future__ import annotations

from collections.abc import Callable

from ... import nn

__all__ = ["Conv2dNormActivation"]


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
