"""``ember.nn.init``: in-place parameter initialisation (PyTorch's distributions and bounds).

Every function fills its tensor in place under ``no_grad`` and returns it. Random ones accept
``generator=`` (an ``ember.Generator``); without it the global generator (``manual_seed``) is used.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import _backend
from .._tensor import Tensor
from ..autograd import grad_mode
from ..ops import creation as _creation
from ..ops import random as _random
from ..ops.pointwise_piecewise import where as _where

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
    "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
    "orthogonal_", "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform",
    "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse",
]


def _write(tensor: Tensor, values: np.ndarray) -> Tensor:
    """Copy NumPy ``values`` into ``tensor`` in place (any device), without recording a graph."""
    with grad_mode.no_grad():
        tensor.copy_(Tensor._make(np.ascontiguousarray(values)))
    return tensor


def _check_tensor(tensor: Any, fn: str) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{fn} expects an ember Tensor, got {type(tensor).__name__}")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (``relu`` -> sqrt(2), ``tanh`` -> 5/3, ...)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    num_input_fmaps = tensor.shape[1]
    num_output_fmaps = tensor.shape[0]
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with U(a, b): ``tensor.uniform_(a, b)`` (PyTorch's stream)."""
    _check_tensor(tensor, "uniform_")
    with grad_mode.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with N(mean, std^2): ``tensor.normal_(mean, std)`` (PyTorch's stream)."""
    _check_tensor(tensor, "normal_")
    with grad_mode.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
    generator: Any = None,
) -> Tensor:
    """Fill with N(mean, std^2) truncated to [a, b] (absolute bounds), by rejection as PyTorch
    2.13 draws it: when [a, b] holds more than 30% of the mass, whole-tensor normals redrawn
    where out of bounds; otherwise uniform candidates on [a, b] accepted against the density
    (a second uniform per element), the rejected ones redrawn."""
    _check_tensor(tensor, "trunc_normal_")
    if tensor.is_meta:
        return tensor

    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
            "The distribution of values may be incorrect.",
            stacklevel=2,
        )
    with grad_mode.no_grad():
        if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
            # the bounds as the tensor's dtype rounds them
            lo = tensor.new_tensor(a, device="cpu").item()
            hi = tensor.new_tensor(b, device="cpu").item()
            result = tensor.normal_(mean, std, generator=generator)
            while True:
                out = (result < lo) | (result > hi)
                if not out.any():
                    break
                redraw = _creation.empty_like(result).normal_(mean, std, generator=generator)
                result = _where(out, redraw, result)
            if result is not tensor:
                tensor.copy_(result)
            return tensor
        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2
        cand = _creation.empty_like(tensor)
        accept = _creation.empty_like(tensor)

        def log_density(x: Tensor) -> Tensor:  # minus the peak's
            return x.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)

        tensor.uniform_(a, b, generator=generator)
        cand.copy_(tensor)
        pending = accept.uniform_(generator=generator).log_().gt(log_density(cand))
        if pending.any():
            result = tensor
            while pending.any():
                cand.uniform_(a, b, generator=generator)
                result = _where(pending, cand, result)
                again = accept.uniform_(generator=generator).log_().gt(log_density(cand))
                pending = _where(pending, again, pending)
            tensor.copy_(result)
        return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    _check_tensor(tensor, "constant_")
    with grad_mode.no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix (ones on the main diagonal)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _write(tensor, np.eye(*tuple(tensor.shape)))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-5-D conv weight with the Dirac delta (convolution becomes identity per group)."""
    dimensions = tensor.ndimension()
    if dimensions not in [3, 4, 5]:
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    min_dim = min(out_per_group, sizes[1])
    vals = np.zeros(sizes)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        d = np.arange(min_dim)
        vals[(g * out_per_group + d, d) + centre] = 1
    return _write(tensor, vals)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot uniform: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot normal: N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(
    tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
    generator: Any = None,
) -> Tensor:
    """He uniform: U(-bound, bound), bound = gain(nonlinearity, a) * sqrt(3 / fan_mode)."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
    generator: Any = None,
) -> Tensor:
    """He normal: N(0, std^2), std = gain(nonlinearity, a) / sqrt(fan_mode)."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix, scaled by ``gain``: the Q of a QR of a (rows, numel // rows)
    standard-normal matrix (transposed when wide), its columns' signs those of R's diagonal."""
    if tensor.ndimension() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0 or tensor.is_meta:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with grad_mode.no_grad():
        flat = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
    # the QR in float64 (LAPACK's float32 QR differs between builds anyway: PyTorch's values
    # are matched within float32 rounding)
    a = _backend.to_numpy(flat._data).astype(np.float64)
    if rows < cols:
        a = a.T
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    _write(tensor, q.reshape(tuple(tensor.shape)))
    with grad_mode.no_grad():
        return tensor.mul_(gain)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Any = None) -> Tensor:
    """N(0, std^2) with ``ceil(sparsity * rows)`` entries of each column set to zero: the first
    rows of a ``randperm(rows)`` per column, drawn (as in PyTorch) from the default generator."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    if tensor.is_meta:
        return tensor
    rows, cols = tuple(tensor.shape)
    num_zeros = int(math.ceil(sparsity * rows))
    with grad_mode.no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            zero_rows = _random.randperm(rows)[:num_zeros]
            tensor[zero_rows, col] = 0
    return tensor


def _deprecated(fn: Any, old: str) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(
            f"`nn.init.{old}` is now deprecated in favor of `nn.init.{fn.__name__}`.",
            FutureWarning,
            stacklevel=2,
        )
        return fn(*args, **kwargs)

    wrapper.__name__ = old
    wrapper.__doc__ = f"Deprecated: use ``{fn.__name__}``."
    return wrapper


uniform = _deprecated(uniform_, "uniform")
normal = _deprecated(normal_, "normal")
constant = _deprecated(constant_, "constant")
eye = _deprecated(eye_, "eye")
dirac = _deprecated(dirac_, "dirac")
xavier_uniform = _deprecated(xavier_uniform_, "xavier_uniform")
xavier_normal = _deprecated(xavier_normal_, "xavier_normal")
kaiming_uniform = _deprecated(kaiming_uniform_, "kaiming_uniform")
kaiming_normal = _deprecated(kaiming_normal_, "kaiming_normal")
orthogonal = _deprecated(orthogonal_, "orthogonal")
sparse = _deprecated(sparse_, "sparse")
