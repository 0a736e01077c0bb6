"""Pooling layers: max, average and adaptive pooling in 1-D, 2-D and 3-D."""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from ...ops import nn as C
from .module import Module

__all__ = [
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "MaxPool3d",
    "AvgPool3d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
]


def _single(v: Any) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


class _MaxPoolNd(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of an (N, C, L) or (C, L) input.

    Args: kernel_size; stride (default kernel_size); padding (-inf, at most half the kernel);
    dilation; return_indices (also return the argmax positions); ceil_mode (round the
    output length up).
    """

    def forward(self, input: Tensor) -> Any:
        return C.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """Max over sliding windows of an (N, C, H, W) or (C, H, W) input.

    Args: kernel_size; stride (default kernel_size); padding (-inf, at most half the kernel);
    dilation; return_indices (also return flat argmax positions h * W + w); ceil_mode.

    Example::

        >>> nn.MaxPool2d(2)(torch.randn(64, 16, 24, 24)).shape
        torch.Size([64, 16, 12, 12])
    """

    def forward(self, input: Tensor) -> Any:
        return C.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    """Mean over sliding windows of an (N, C, L) or (C, L) input.

    Args: kernel_size; stride (default kernel_size); padding (zeros); ceil_mode;
    count_include_pad (count padding zeros in the divisor).
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:
        return C.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(Module):
    """Mean over sliding windows of an (N, C, H, W) or (C, H, W) input.

    Args: kernel_size; stride (default kernel_size); padding (zeros); ceil_mode;
    count_include_pad (count padding zeros in the divisor); divisor_override.
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:
        return C.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class _AdaptivePool(Module):
    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """Average pooling to a fixed output length: window o covers
    [floor(o L / out), ceil((o + 1) L / out))."""

    def forward(self, input: Tensor) -> Tensor:
        return C.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePool):
    """Average pooling to a fixed (H, W) (an int for both; None keeps that dim).

    Example::

        >>> nn.AdaptiveAvgPool2d((1, 1))(torch.randn(8, 64, 7, 7)).shape
        torch.Size([8, 64, 1, 1])
    """

    def forward(self, input: Tensor) -> Tensor:
        return C.adaptive_avg_pool2d(input, self.output_size)


class _AdaptiveMaxPool(_AdaptivePool):
    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    """Max pooling to a fixed output length (optionally returning the argmax positions)."""

    def forward(self, input: Tensor) -> Any:
        return C.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    """Max pooling to a fixed (H, W) (optionally returning flat argmax positions)."""

    def forward(self, input: Tensor) -> Any:
        return C.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class MaxPool3d(_MaxPoolNd):
    """Max over sliding windows of an (N, C, D, H, W) or (C, D, H, W) input.

    Args: kernel_size; stride (default kernel_size); padding (-inf, at most half the kernel);
    dilation; return_indices (also return flat argmax positions (d * H + h) * W + w); ceil_mode.
    """

    def forward(self, input: Tensor) -> Any:
        return C.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool3d(AvgPool2d):
    """Mean over sliding windows of an (N, C, D, H, W) or (C, D, H, W) input (arguments as
    ``AvgPool2d``)."""

    def forward(self, input: Tensor) -> Tensor:
        return C.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(_AdaptivePool):
    """Average pooling to a fixed (D, H, W) (an int for all; None keeps that dim)."""

    def forward(self, input: Tensor) -> Tensor:
        return C.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    """Max pooling to a fixed (D, H, W) (optionally returning flat argmax positions)."""

    def forward(self, input: Tensor) -> Any:
        return C.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _LPPoolNd(Module):
    _nd = 1

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")

    def forward(self, input: Tensor) -> Tensor:
        from ...ops import nn as NF

        fn = {1: NF.lp_pool1d, 2: NF.lp_pool2d, 3: NF.lp_pool3d}[self._nd]
        return fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool1d(_LPPoolNd):
    """Power-average pooling ``(sum over the window of x^p)^(1/p)`` over (N, C, L)."""

    _nd = 1


class LPPool2d(_LPPoolNd):
    """Power-average pooling over 2-D windows of (N, C, H, W)."""

    _nd = 2


class LPPool3d(_LPPoolNd):
    """Power-average pooling over 3-D windows of (N, C, D, H, W)."""

    _nd = 3


class _MaxUnpoolNd(Module):
    _nd = 1

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        n = self._nd

        def tup(v: Any) -> tuple:
            return (v,) * n if isinstance(v, int) else tuple(v)

        self.kernel_size = tup(kernel_size)
        self.stride = tup(stride if stride is not None else kernel_size)
        self.padding = tup(padding)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        from ...ops import nn as NF

        fn = {1: NF.max_unpool1d, 2: NF.max_unpool2d, 3: NF.max_unpool3d}[self._nd]
        return fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    """The inverse of ``MaxPool1d``: values back at their indices, zeros elsewhere."""

    _nd = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """The inverse of ``MaxPool2d`` (indices flat over each H x W plane)."""

    _nd = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """The inverse of ``MaxPool3d`` (indices flat over each D x H x W volume)."""

    _nd = 3


class _FractionalMaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        super().__init__()
        n = self._nd
        self.kernel_size = kernel_size
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = output_size
        self.output_ratio = None
        if output_ratio is not None:
            ratio = (output_ratio,) * n if isinstance(output_ratio, (float, int)) else \
                tuple(output_ratio)
            if not all(0 < r < 1 for r in ratio):
                raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")
            self.output_ratio = ratio
        if output_size is None and output_ratio is None:
            raise ValueError(f"FractionalMaxPool{n}d requires specifying either an output size, "
                             "or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")

    def forward(self, input: Tensor) -> Any:
        fn = C.fractional_max_pool2d if self._nd == 2 else C.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio,
                  self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling (Graham, 2014) of an (N, C, H, W) input to ``output_size`` or
    ``output_ratio`` of it, with pseudo-random window starts drawn per forward."""

    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling of an (N, C, D, H, W) input (see ``FractionalMaxPool2d``)."""

    _nd = 3
