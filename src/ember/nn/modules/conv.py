"""Convolution layers: ``Conv1d``, ``Conv2d``, ``ConvTranspose1d``, ``ConvTranspose2d``.

Weights have PyTorch's shapes, (out, in / groups, *kernel) for a convolution and
(in, out / groups, *kernel) for a transposed one, so ``state_dict`` moves between the two.
"""

from __future__ import annotations

import math
import operator
from typing import Any

from ..._tensor import Tensor
from ...ops import creation as _creation
from ...ops import nn as C
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _ntuple(v: Any, n: int) -> tuple:
    if isinstance(v, str):
        return v  # type: ignore[return-value]
    try:
        return (operator.index(v),) * n
    except TypeError:
        t = tuple(v)
        return t * n if len(t) == 1 else t


class _ConvNd(Module):
    """Shared state and checks of the convolution layers (PyTorch's attribute names)."""

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any,
                 padding: Any, dilation: Any, transposed: bool, output_padding: Any,
                 groups: int, bias: bool, padding_mode: str, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        nd = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError(f"in_channels must be divisible by groups (got in_channels="
                             f"{in_channels}, groups={groups})")
        if out_channels % groups != 0:
            raise ValueError(f"out_channels must be divisible by groups (got out_channels="
                             f"{out_channels}, groups={groups})")
        kernel_size = _ntuple(kernel_size, nd)
        stride = _ntuple(stride, nd)
        dilation = _ntuple(dilation, nd)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _ntuple(padding, nd)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {sorted(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = _ntuple(output_padding, nd)
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad order: last dim first, (left, right) per dim
        if isinstance(padding, str):
            rev: list[int] = [0, 0] * nd
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(nd - 1, -1, -1)):
                    total = d * (k - 1)
                    rev[2 * i] = total // 2
                    rev[2 * i + 1] = total - total // 2
        else:
            rev = [p for p in reversed(padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = rev
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(_creation.empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(_creation.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw weight and bias from PyTorch's defaults: kaiming_uniform_(a=sqrt(5)) and
        U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        fn = {1: C.conv1d, 2: C.conv2d, 3: C.conv3d}[self._nd]
        if self.padding_mode != "zeros":
            from .. import functional as F

            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L) or (C_in, L) inputs.

    Args:
        in_channels, out_channels: channels of input and output.
        kernel_size, stride, dilation: int or 1-tuple.
        padding: int, 1-tuple, 'valid' or 'same'.
        groups: split channels into independent groups; bias: learn a bias.
        padding_mode: 'zeros' (default), 'reflect', 'replicate' or 'circular'.

    Shape: (N, C_in, L_in) -> (N, C_out, L_out),
    L_out = floor((L_in + 2 padding - dilation (kernel_size - 1) - 1) / stride + 1).
    """

    _nd = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         False, 0, groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W) or (C_in, H, W) inputs.

    Args:
        in_channels, out_channels: channels of input and output.
        kernel_size, stride, dilation: int or (h, w).
        padding: int, (h, w), 'valid' or 'same' (stride 1 only).
        groups: split channels into independent groups; bias: learn a bias.
        padding_mode: 'zeros' (default), 'reflect', 'replicate' or 'circular'.

    Shape: (N, C_in, H, W) -> (N, C_out, H_out, W_out),
    H_out = floor((H + 2 padding - dilation (kernel - 1) - 1) / stride + 1). ``weight`` is
    (C_out, C_in / groups, kH, kW).

    Example::

        >>> conv = nn.Conv2d(1, 16, 5)
        >>> conv(torch.randn(64, 1, 28, 28)).shape
        torch.Size([64, 16, 24, 24])
    """

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         False, 0, groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class _ConvTransposeNd(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any,
                 padding: Any, dilation: Any, output_padding: Any, groups: int, bias: bool,
                 padding_mode: str, device: Any = None, dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        if isinstance(padding, str):
            raise TypeError(f"{type(self).__name__}: padding must be an int or a tuple of ints, "
                            f"not {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         True, output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple:
        """``output_padding`` that makes the output ``output_size`` (PyTorch's rule)."""
        if output_size is None:
            return self.output_padding
        nd = self._nd
        out = list(output_size)
        if len(out) == nd + 2 or (len(out) == nd + 1 and input.dim() == nd + 1):
            out = out[-nd:]
        if len(out) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.dim()}D input, output_size must "
                             f"have {nd} or {nd + 2} elements (got {len(output_size)})")
        res = []
        for d in range(nd):
            n = input.shape[input.dim() - nd + d]
            smallest = ((n - 1) * self.stride[d] - 2 * self.padding[d]
                        + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            largest = smallest + self.stride[d] - 1
            if not smallest <= out[d] <= largest:
                raise ValueError(
                    f"requested an output size of {out}, but valid sizes range from "
                    f"{smallest} to {largest} (for an input of {list(input.shape[2:])})")
            res.append(out[d] - smallest)
        return tuple(res)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution ("deconvolution"); ``weight`` is (C_in, C_out / groups, k).

    Shape: (N, C_in, L_in) -> (N, C_out, L_out), L_out = (L_in - 1) stride - 2 padding
    + dilation (kernel_size - 1) + output_padding + 1.
    """

    _nd = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        op = self._output_padding(input, output_size)
        return C.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding, op,
                                  self.groups, self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution ("deconvolution"); ``weight`` is (C_in, C_out / groups, kH, kW).

    Shape: (N, C_in, H, W) -> (N, C_out, H_out, W_out), H_out = (H - 1) stride - 2 padding
    + dilation (kernel - 1) + output_padding + 1. ``forward(x, output_size)`` picks the
    output_padding that gives ``output_size``.

    Example::

        >>> up = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1)
        >>> up(torch.randn(4, 16, 7, 7)).shape
        torch.Size([4, 8, 14, 14])
    """

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        op = self._output_padding(input, output_size)
        return C.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, op,
                                  self.groups, self.dilation)


class Conv3d(_ConvNd):
    """3-D convolution over an (N, C_in, D, H, W) or (C_in, D, H, W) input.

    Arguments as ``Conv2d`` with triples; ``weight`` is (C_out, C_in / groups, kT, kH, kW).
    """

    _nd = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         False, 0, groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution; ``weight`` is (C_in, C_out / groups, kT, kH, kW).

    Each output size is (in - 1) stride - 2 padding + dilation (kernel - 1) + output_padding
    + 1; ``forward(x, output_size)`` picks the output_padding that gives ``output_size``.
    """

    _nd = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        op = self._output_padding(input, output_size)
        return C.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding, op,
                                  self.groups, self.dilation)
