"""Non-linear activations: ``nn.functional``'s activation functions and the softmax family.

Each differentiable op is an ``Op`` (forward and backward side by side, the derivative as math
in its docstring); kinks follow PyTorch (written next to each rule). The softmax kernels
themselves live with the tensor ops (``ops/softmax_family.py``); ``F.softmax`` adds the
functional's ``_stacklevel`` and implicit-dim warning.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import _backend, _dtype, _special
from ... import _kernels_loader as _kernels
from ..._tensor_base import TensorBase, wrap_dim
from ...autograd.function import Op
from .. import _blockwise as _bw
from .. import _mt19937, _out
from .. import pointwise_math as _pm
from .. import pointwise_piecewise as _pp
from .. import random as _random
from .._autocast import cast as _amp_cast
from .._autocast import flag as _amp
from .._promote import opmath
from ..inplace import inplace as _inplace
from ..softmax_family import LogSoftmax, Softmax, softmax_along

__all__ = [
    "relu", "relu_", "hardtanh", "hardtanh_", "relu6", "leaky_relu", "leaky_relu_", "elu", "elu_",
    "selu", "selu_", "celu", "celu_", "gelu", "mish", "hardswish", "hardsigmoid",
    "softplus", "threshold", "threshold_", "logsigmoid", "glu", "prelu",
    "rrelu", "rrelu_", "softshrink", "hardshrink", "sigmoid", "tanh", "softmax", "log_softmax",
    "softmin", "gumbel_softmax",
]


_SELU_ALPHA = 1.6732632423543772848170429916717


_SELU_SCALE = 1.0507009873554804934193349852946


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


_INV_SQRT2 = _special._INV_SQRT2
_INV_SQRT_2PI = _special._INV_SQRT_2PI


def _float_input(x: Any, name: str) -> TensorBase:
    """Activations are defined for floating tensors only (PyTorch's 'not implemented' error)."""
    if not isinstance(x, TensorBase):
        raise TypeError(
            f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}; wrap it first, "
            "e.g. torch.tensor(values)"
        )
    if not x.is_floating_point():
        raise (NotImplementedError if x.is_complex() else RuntimeError)(  # as PyTorch's classes
            f"\"{name}\" not implemented for '{_dtype.legacy_name(x.dtype)}' (input dtype "
            f"{x.dtype}, shape {tuple(x.shape)}); convert it first, e.g. "
            + ("x.real or x.abs()" if x.is_complex() else "x.float()"))
    return x


def _act(cls: Any, x: Any, name: str) -> Any:
    """``cls`` after ``_float_input``'s checks, or ``opmath(cls)`` for a float16/bfloat16 input
    (PyTorch computes activations in float32 and rounds once)."""
    if not isinstance(x, TensorBase) or not x.is_floating_point():
        _float_input(x, name)
    return opmath(cls) if x._data.dtype.itemsize == 2 else cls


def _sig(xp: Any, x: Any) -> Any:
    """Numerically stable logistic sigmoid on arrays (or tensors, under create_graph)."""
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _sigmoid(xp: Any, x: Any) -> Any:
    """``_sig``, by the sigmoid op's own kernel for a host float array (within 1 ulp: one pass
    where the formula makes five)."""
    if type(x) is np.ndarray and x.dtype.kind == "f":
        return _bw.run(_bw.sig_into, "f?", x)
    return _sig(xp, x)


# ---------------------------------------------------------------------------------------------
# pointwise activations


def relu(input: TensorBase, inplace: bool = False) -> TensorBase:
    """max(x, 0) elementwise (relu'(0) = 0)."""
    if inplace:
        return _inplace(input, _pp.relu)
    return _pp.relu(input)


def relu_(input: TensorBase) -> TensorBase:
    """In-place ``relu``."""
    return relu(input, inplace=True)


def hardtanh(
    input: TensorBase, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> TensorBase:
    """Clamp to [min_val, max_val] (gradient 0 at the corners, as in PyTorch)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    _float_input(input, "hardtanh")
    if inplace:
        return _inplace(input, lambda t: Hardtanh.apply(t, min_val, max_val))
    return Hardtanh.apply(input, min_val, max_val)


def hardtanh_(input: TensorBase, min_val: float = -1.0, max_val: float = 1.0) -> TensorBase:
    """In-place ``hardtanh``."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: TensorBase, inplace: bool = False) -> TensorBase:
    """min(max(x, 0), 6) (``hardtanh(x, 0, 6)``: gradient 0 at 0 and 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: TensorBase, negative_slope: float = 0.01, inplace: bool = False) -> TensorBase:
    """x for x > 0, ``negative_slope * x`` otherwise."""
    op = _act(LeakyRelu, input, "leaky_relu")
    if inplace:
        return _inplace(input, lambda t: op.apply(t, negative_slope))
    return op.apply(input, negative_slope)


def leaky_relu_(input: TensorBase, negative_slope: float = 0.01) -> TensorBase:
    """In-place ``leaky_relu``."""
    return leaky_relu(input, negative_slope, inplace=True)


def elu(input: TensorBase, alpha: float = 1.0, inplace: bool = False) -> TensorBase:
    """x for x > 0, ``alpha * (exp(x) - 1)`` otherwise."""
    op = _act(Elu, input, "elu")
    if inplace:
        return _inplace(input, lambda t: op.apply(t, alpha, 1.0, 1.0))
    return op.apply(input, alpha, 1.0, 1.0)


def elu_(input: TensorBase, alpha: float = 1.0) -> TensorBase:
    """In-place ``elu``."""
    return elu(input, alpha, inplace=True)


def selu(input: TensorBase, inplace: bool = False) -> TensorBase:
    """scale * elu(x, alpha) with the self-normalising constants (1.0507..., 1.6733...)."""
    op = _act(Elu, input, "selu")
    if inplace:
        return _inplace(input, lambda t: op.apply(t, _SELU_ALPHA, _SELU_SCALE, 1.0))
    return op.apply(input, _SELU_ALPHA, _SELU_SCALE, 1.0)


def selu_(input: TensorBase) -> TensorBase:
    """In-place ``selu``."""
    return selu(input, inplace=True)


def celu(input: TensorBase, alpha: float = 1.0, inplace: bool = False) -> TensorBase:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: celu: alpha must be nonzero (got alpha=0)")
    op = _act(Celu, input, "celu")
    if inplace:
        return _inplace(input, lambda t: op.apply(t, alpha, 1.0, 1.0 / alpha))
    return op.apply(input, alpha, 1.0, 1.0 / alpha)


def celu_(input: TensorBase, alpha: float = 1.0) -> TensorBase:
    """In-place ``celu``."""
    return celu(input, alpha, inplace=True)


def gelu(input: TensorBase, *, approximate: str = "none", out: Any = None) -> TensorBase:
    """x * Phi(x) (``approximate='tanh'``: the tanh approximation)."""
    if out is not None:
        return _out.write(out, gelu(input, approximate=approximate), "gelu")
    if approximate not in ("none", "tanh"):
        raise RuntimeError(
            f"approximate argument must be either none or tanh (got {approximate!r})"
        )
    op = _act(Gelu, input, "gelu")
    return op.apply(input, approximate)


def mish(input: TensorBase, inplace: bool = False) -> TensorBase:
    """x * tanh(softplus(x))."""
    op = _act(Mish, input, "mish")
    if inplace:
        return _inplace(input, op.apply)
    return op.apply(input)


def hardswish(input: TensorBase, inplace: bool = False) -> TensorBase:
    """x * relu6(x + 3) / 6."""
    op = _act(Hardswish, input, "hardswish")
    if inplace:
        return _inplace(input, op.apply)
    return op.apply(input)


def hardsigmoid(input: TensorBase, inplace: bool = False) -> TensorBase:
    """relu6(x + 3) / 6."""
    op = _act(Hardsigmoid, input, "hardsigmoid")
    if inplace:
        return _inplace(input, op.apply)
    return op.apply(input)


def softplus(input: TensorBase, beta: float = 1.0, threshold: float = 20.0,
             *, out: Any = None) -> TensorBase:
    """log(1 + exp(beta x)) / beta, linear above ``threshold``."""
    if out is not None:
        return _out.write(out, softplus(input, beta=beta, threshold=threshold), "softplus")
    if _amp.active:
        (input,) = _amp_cast("softplus", input)
    op = _act(Softplus, input, "softplus")
    return op.apply(input, beta, threshold)


def threshold(input: TensorBase, threshold: float, value: float, inplace: bool = False) -> TensorBase:
    """x where x > threshold, else ``value``."""
    return _threshold(input, threshold, value, inplace)


def threshold_(input: TensorBase, threshold: float, value: float) -> TensorBase:
    """In-place ``threshold``."""
    return _threshold(input, threshold, value, True)


def logsigmoid(input: TensorBase) -> TensorBase:
    """log(1 / (1 + exp(-x))), computed stably."""
    op = _act(LogSigmoid, input, "log_sigmoid_forward")
    return op.apply(input)


def glu(input: TensorBase, dim: int = -1) -> TensorBase:
    """a * sigmoid(b) where a, b are the first and second halves of ``input`` along ``dim``."""
    op = _act(Glu, input, "glu")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {d} is size {n} (glu splits "
            f"input of shape {tuple(input.shape)} into two equal halves along dim {dim})"
        )
    return op.apply(input, d)


def prelu(input: TensorBase, weight: TensorBase) -> TensorBase:
    """x if x > 0 else weight * x, weight per channel (dim 1) or shared."""
    if _amp.active:
        input, weight = _amp_cast("prelu", input, weight)
    _float_input(input, "prelu")
    n = weight.numel()
    if weight.ndim > 1:
        raise RuntimeError(
            f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}"
        )
    if n != 1:
        if input.ndim == 0:
            raise RuntimeError(
                "prelu: Not allow zero-dim input tensor when weight has more than one element"
            )
        channels = input.shape[1] if input.ndim >= 2 else 1
        if channels != n:
            raise RuntimeError(
                f"Mismatch of parameter numbers and input channel size. Found parameter "
                f"numbers = {n} and channel size = {channels} (input shape {tuple(input.shape)}; "
                "the channel dim is dim 1). Use nn.PReLU(num_parameters=channels)."
            )
    if weight.dtype != input.dtype:
        weight = weight.to(input.dtype)
    return Prelu.apply(input, weight)


def rrelu(
    input: TensorBase, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
    inplace: bool = False,
) -> TensorBase:
    """Randomized leaky ReLU: slope ~ U(lower, upper) per element in training, else the mean."""
    return _rrelu(input, lower, upper, training, inplace, None)


def rrelu_(input: TensorBase, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> TensorBase:
    """In-place ``rrelu``."""
    return rrelu(input, lower, upper, training, inplace=True)


def softshrink(input: TensorBase, lambd: float = 0.5, *, out: Any = None) -> TensorBase:
    """x - lambd for x > lambd, x + lambd for x < -lambd, 0 otherwise."""
    if out is not None:
        return _out.write(out, softshrink(input, lambd=lambd), "softshrink")
    if lambd < 0:
        raise RuntimeError(
            f"lambda must be greater or equal to 0, but found to be {lambd}."
        )
    _float_input(input, "softshrink")
    return Softshrink.apply(input, lambd, True)


def hardshrink(input: TensorBase, lambd: float = 0.5, *, out: Any = None) -> TensorBase:
    """x where |x| > lambd, else 0."""
    if out is not None:
        return _out.write(out, hardshrink(input, lambd=lambd), "hardshrink")
    _float_input(input, "hardshrink")
    return Hardshrink.apply(input, lambd, False)


def sigmoid(input: TensorBase) -> TensorBase:
    """1 / (1 + exp(-x))."""
    return _pm.sigmoid(input)


def tanh(input: TensorBase) -> TensorBase:
    """tanh(x)."""
    return _pm.tanh(input)


class Hardtanh(Op):
    """out = clamp(x, lo, hi)          grad_x = grad where lo < x < hi, else 0
    (PyTorch: zero gradient at exactly lo and hi)"""
    @staticmethod
    def forward(ctx: Any, x: Any, lo: float, hi: float) -> Any:
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        if (out := _kernels.piecewise("hardtanh", x, lo, hi)) is not None:
            return out  # (one pass, the same values)
        # (bound first: on a tie NumPy returns the second argument, so -0.0 stays -0.0 as in
        # PyTorch's hardtanh)
        return ctx.xp.minimum(hi, ctx.xp.maximum(lo, x))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        if (out := _kernels.piecewise("hardtanh", x, ctx.lo, ctx.hi, grad)) is not None:
            return out, None, None
        return ctx.xp.where((x > ctx.lo) & (x < ctx.hi), grad, 0), None, None


class LeakyRelu(Op):
    """out = x if x > 0 else slope * x          grad_x = grad if x > 0 else slope * grad
    (at x = 0 the slope branch, as in PyTorch)"""
    @staticmethod
    def forward(ctx: Any, x: Any, slope: float) -> Any:
        ctx.save_for_backward(x)
        ctx.slope = slope
        if (out := _kernels.piecewise("leaky_relu", x, slope)) is not None:  # (one pass)
            return out
        return ctx.xp.where(x > 0, x, x * slope)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        if (out := _kernels.piecewise("leaky_relu", x, ctx.slope, grad=grad)) is not None:
            return out, None
        return ctx.xp.where(x > 0, grad, grad * ctx.slope), None


class Elu(Op):
    """out = scale * (x if x > 0 else alpha * (exp(x * s) - 1))   (s = input_scale)
    grad_x = grad * scale if x > 0 else grad * scale * alpha * s * exp(x * s)
    (x = 0 takes the exponential branch, as in PyTorch)"""
    @staticmethod
    def forward(ctx: Any, x: Any, alpha: float, scale: float, input_scale: float) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        ctx.args = (alpha, scale, input_scale)
        if type(x) is np.ndarray:
            return _bw.run(_bw.elu(alpha, scale, input_scale), "f", x)
        neg = xp.expm1(xp.minimum(x, 0) * input_scale) * (alpha * scale)
        return xp.where(x > 0, x * scale, neg)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        alpha, scale, s = ctx.args
        xp = ctx.xp
        if type(x) is np.ndarray and type(grad) is np.ndarray:
            return _bw.run(_bw.elu_backward(alpha, scale, s), "f?", x, grad), None, None, None
        neg = grad * (xp.exp(xp.where(x < 0, x, 0) * s) * (alpha * scale * s))
        return xp.where(x > 0, grad * scale, neg), None, None, None


class Celu(Elu):
    """celu is elu with scale 1 and input scale 1/alpha (the rule is Elu's)."""
    node_name = "CeluBackward0"


class Gelu(Op):
    """exact: out = x * Phi(x)          grad_x = grad * (Phi(x) + x * phi(x))
    tanh:  out = x/2 * (1 + tanh(u)), u = sqrt(2/pi) * (x + 0.044715 x^3)
           grad_x = grad * (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2))
    Saves x only, as PyTorch: backward recomputes Phi(x) or t from it."""
    @staticmethod
    def forward(ctx: Any, x: Any, approximate: str) -> Any:
        ctx.save_for_backward(x)
        ctx.approximate = approximate
        out = _kernels.gelu(x, approximate)  # the eager kernel: float32 (tanh: float64 too)
        if out is not None:
            return out
        if approximate == "tanh":
            if type(x) is np.ndarray:
                return _bw.run(_bw.gelu_tanh, "", x)
            u = x * x
            u *= 0.044715
            u += 1
            u *= x
            u *= _SQRT_2_OVER_PI
            out = ctx.xp.tanh(u)
            out += 1
            out *= x
            out *= 0.5
            return out
        if type(x) is np.ndarray and x.dtype == np.float32:  # the common case: one fused kernel
            return _special.gelu32(x, False)[0]
        cdf = ctx.call(_pm.Erf, x * _INV_SQRT2)
        cdf += 1
        cdf *= 0.5
        cdf *= x
        return cdf  # inf at +inf, nan at -inf, -0.0 at -0.0: PyTorch's float64 gelu

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        xp = ctx.xp
        if not ctx._tensor_mode:
            d = _kernels.gelu_backward(x, grad, ctx.approximate)
            if d is not None:
                return d, None
        if ctx.approximate == "tanh":
            if ctx._tensor_mode:  # create_graph: build d from x with recorded ops
                t = xp.tanh((x + x * x * x * 0.044715) * _SQRT_2_OVER_PI)
                d = 0.5 * (1 + t) + x * 0.5 * (1 - t * t) * _SQRT_2_OVER_PI * (
                    1 + x * x * (3 * 0.044715))
                return grad * d, None
            if type(x) is np.ndarray and type(grad) is np.ndarray:
                return _bw.run(_bw.gelu_tanh_backward, "ff", x, grad), None
            t = xp.tanh((x * x * 0.044715 + 1) * x * _SQRT_2_OVER_PI)
            a = x * x
            a *= 3 * 0.044715 * 0.5 * _SQRT_2_OVER_PI
            a += 0.5 * _SQRT_2_OVER_PI          # 0.5 c (1 + 3k x^2)
            d = t * t
            d -= 1
            d *= x
            d *= a                              # -0.5 c x (1 - t^2)(1 + 3k x^2)
            d -= t * 0.5
            d -= 0.5                            # -(derivative)
            d *= grad
            return -d, None
        if ctx._tensor_mode:
            cdf = 0.5 * (1 + ctx.call(_pm.Erf, x * _INV_SQRT2))
            pdf = xp.exp(x * x * -0.5) * _INV_SQRT_2PI
            return grad * (cdf + x * pdf), None
        if type(x) is np.ndarray and x.dtype == np.float32 and type(grad) is np.ndarray:
            return _bw.run(_bw.gelu_backward, "ffu", x, grad), None
        cdf = ctx.call(_pm.Erf, x * _INV_SQRT2)
        cdf += 1
        cdf *= 0.5
        d = x * x
        d *= -0.5
        d = xp.exp(d, out=d)
        d *= x
        d *= _INV_SQRT_2PI
        d += cdf
        d *= grad
        return d, None


class Mish(Op):
    """out = x * tanh(softplus(x))
    grad_x = grad * (t + x * sigmoid(x) * (1 - t^2)), t = tanh(softplus(x))"""
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        if type(x) is np.ndarray:
            return _bw.run(_bw.mish, "ff", x)
        return x * xp.tanh(_softplus_arr(xp, x))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        xp = ctx.xp
        if type(x) is np.ndarray and type(grad) is np.ndarray:
            return _bw.run(_bw.mish_backward, "fff?", x, grad)
        t = xp.tanh(_softplus_arr(xp, x))
        return grad * (t + x * _sig(xp, x) * (1 - t * t))


class Hardswish(Op):
    """out = x * relu6(x + 3) / 6
    grad_x = 0 if x <= -3; grad * (x / 3 + 1/2) if -3 < x < 3; grad if x >= 3   (PyTorch's kinks)"""
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        if (out := _kernels.piecewise("hardswish", x)) is not None:
            return out
        if type(x) is np.ndarray:
            return _bw.run(_bw.hardswish, "", x)
        return x * xp.minimum(xp.maximum(x + 3, 0), 6) / 6

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        xp = ctx.xp
        if (out := _kernels.piecewise("hardswish", x, grad=grad)) is not None:
            return out
        if type(x) is np.ndarray and type(grad) is np.ndarray:
            return _bw.run(_bw.hardswish_backward, "?", x, grad)
        mid = grad * (x / 3 + 0.5)
        return xp.where(x <= -3, grad * 0, xp.where(x < 3, mid, grad))


class Hardsigmoid(Op):
    """out = relu6(x + 3) / 6          grad_x = grad / 6 where -3 < x < 3, else 0"""
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        if (out := _kernels.piecewise("hardsigmoid", x)) is not None:
            return out
        return xp.minimum(xp.maximum(x + 3, 0), 6) / 6

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        if (out := _kernels.piecewise("hardsigmoid", x, grad=grad)) is not None:
            return out
        return grad * ((x > -3) & (x < 3)) / 6


class Softplus(Op):
    """out = log(1 + exp(beta x)) / beta   (x where beta x > threshold)
    grad_x = grad * sigmoid(beta x)       (grad where beta x > threshold)"""
    @staticmethod
    def forward(ctx: Any, x: Any, beta: float, threshold: float) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        ctx.beta, ctx.threshold = beta, threshold
        if type(x) is np.ndarray:
            return _bw.run(_bw.softplus(beta, threshold), "ff?", x)
        bx = x * beta
        return xp.where(bx > threshold, x, _softplus_arr(xp, bx) / beta)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        xp = ctx.xp
        if type(x) is np.ndarray and type(grad) is np.ndarray:
            return _bw.run(_bw.softplus_backward(ctx.beta, ctx.threshold), "fff?", x,
                           grad), None, None
        bx = x * ctx.beta
        return xp.where(bx > ctx.threshold, grad, grad * _sig(xp, bx)), None, None


class Threshold(Op):
    """out = x if x > threshold else value          grad_x = grad where x > threshold, else 0"""
    @staticmethod
    def forward(ctx: Any, x: Any, threshold: float, value: float) -> Any:
        ctx.save_for_backward(x)
        ctx.threshold = threshold
        if (out := _kernels.piecewise("threshold", x, threshold, value)) is not None:
            return out
        return ctx.xp.where(x > threshold, x, ctx.xp.asarray(value, dtype=x.dtype))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        if (out := _kernels.piecewise("threshold", x, ctx.threshold, 0.0, grad)) is not None:
            return out, None, None
        return ctx.xp.where(x > ctx.threshold, grad, 0), None, None


class LogSigmoid(Op):
    """out = log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))          grad_x = grad * sigmoid(-x)"""
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        if type(x) is np.ndarray and x.flags.c_contiguous:
            return _bw.run(_bw.logsigmoid, "f", x)
        out = xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))
        # PyTorch's kernel writes a contiguous result whatever x's layout
        return out if out.flags.c_contiguous else xp.ascontiguousarray(out)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        if type(x) is np.ndarray and type(grad) is np.ndarray:
            return _bw.run(_bw.logsigmoid_backward, "ff?", x, grad)
        return grad * _sig(ctx.xp, -x)


class Glu(Op):
    """out = a * sigmoid(b), (a, b) = the two halves of x along dim
    grad_a = grad * sigmoid(b)          grad_b = grad * a * sigmoid(b) * (1 - sigmoid(b))"""
    @staticmethod
    def forward(ctx: Any, x: Any, dim: int) -> Any:
        ctx.save_for_backward(x)
        ctx.dim = dim
        a, b = _halves(x, dim, x.shape[dim] // 2)
        return a * _sigmoid(ctx.xp, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        xp = ctx.xp
        dim = ctx.dim
        h = x.shape[dim] // 2
        a, b = _halves(x, dim, h)
        s = _sigmoid(xp, b)
        return xp.concatenate([grad * s, grad * a * s * (1 - s)], axis=dim), None


class Prelu(Op):
    """out = x if x > 0 else w * x   (w broadcast along the channel dim 1)
    grad_x = grad if x > 0 else w * grad          grad_w = sum over non-channel dims of
    grad * x where x <= 0"""
    @staticmethod
    def forward(ctx: Any, x: Any, w: Any) -> Any:
        # the weight's broadcast shape: a scalar, or (C, 1, ..., 1) for channel dim 1
        ctx.wshape = tuple(w.shape)
        ctx.bshape = () if w.size == 1 else (-1,) + (1,) * (x.ndim - 2)
        ctx.save_for_backward(x, w)
        if (out := _kernels.prelu(0, x, w)) is not None:  # (one pass, the same values)
            return out
        return ctx.xp.where(x > 0, x, w.reshape(ctx.bshape) * x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, w = ctx.saved
        xp = ctx.xp
        gx = _kernels.prelu(1, x, w, grad)
        if gx is None:
            gx = xp.where(x > 0, grad, w.reshape(ctx.bshape) * grad)
        gw = None
        if ctx.needs_input_grad[1]:
            contrib = _kernels.prelu(2, x, w, grad)
            if contrib is None:
                contrib = xp.where(x > 0, grad * 0, grad * x)
            if ctx.bshape == ():
                gw = contrib.sum().reshape(ctx.wshape)
            else:
                axes = tuple(i for i in range(x.ndim) if i != 1)
                gw = contrib.sum(axis=axes).reshape(ctx.wshape)
        return gx, gw


class _MulMask(Op):
    """out = x * mask (mask fixed)          grad_x = grad * mask"""
    node_name = "MulBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, mask: Any) -> Any:
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (mask,) = ctx.saved
        return grad * mask, None


class Shrink(Op):
    """softshrink: out = x - l if x > l; x + l if x < -l; else 0
    hardshrink: out = x if |x| > l else 0          grad_x = grad where |x| > l, else 0"""
    @staticmethod
    def forward(ctx: Any, x: Any, lambd: float, soft: bool) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        ctx.lambd = lambd
        name = "softshrink" if soft else "hardshrink"
        if (out := _kernels.piecewise(name, x, lambd)) is not None:
            return out
        keep = (x > lambd) | (x < -lambd)
        if soft:
            return xp.where(x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, x * 0))
        return xp.where(keep, x, x * 0)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        if (out := _kernels.piecewise("hardshrink", x, ctx.lambd, grad=grad)) is not None:
            return out, None, None
        return grad * ((x > ctx.lambd) | (x < -ctx.lambd)), None, None


class Softshrink(Shrink):
    node_name = "SoftshrinkBackward0"


class Hardshrink(Shrink):
    node_name = "HardshrinkBackward0"


class _RReLUNoise(Op):
    """rrelu in training: out (computed with the drawn slopes)          grad_x = grad * noise"""
    node_name = "RreluWithNoiseBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, noise: Any, out: Any) -> Any:
        ctx.save_for_backward(noise)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (noise,) = ctx.saved
        return grad * noise, None, None


def _rrelu(input: TensorBase, lower: float, upper: float, training: bool, inplace: bool,
           generator: Any) -> TensorBase:
    """``rrelu`` drawing its slopes from ``generator`` (``torch.rrelu``'s own parameter)."""
    _float_input(input, "rrelu")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)

    # PyTorch's draw: for each element <= 0, in C order, a float64 uniform on the bounds as
    # the input's compute type rounds them (float32 below float64), ``lo + u * (hi - lo)``
    xp = _backend.xp_of(input._data)
    x = _backend.to_numpy(input._data)
    op = np.float64 if x.dtype == np.float64 else np.float32
    lo, hi = float(op(lower)), float(op(upper))
    draws = x <= 0
    slope = np.ones(x.shape, op)
    slope[draws] = lo + _mt19937.unit53(_random._gen(generator)._bg,
                                        int(np.count_nonzero(draws))) * (hi - lo)
    out = xp.asarray((x.astype(op, copy=False) * slope).astype(x.dtype, copy=False))
    mask = xp.asarray(slope.astype(x.dtype, copy=False))  # PyTorch's noise, in x's dtype
    if inplace:
        return _inplace(input, lambda t: _RReLUNoise.apply(t, mask, out))
    return _RReLUNoise.apply(input, mask, out)


def _softplus_arr(xp: Any, x: Any) -> Any:
    # log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)); written with where
    # because backward rules also run on tensors (create_graph), where minimum needs two tensors
    return xp.where(x > 0, x, 0) + xp.log1p(xp.exp(-xp.abs(x)))


def _threshold(input: TensorBase, th: float, value: float, inplace: bool) -> TensorBase:
    if not isinstance(input, TensorBase):
        raise TypeError(f"threshold(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.is_complex():  # PyTorch's threshold kernel has no complex form
        _float_input(input, "threshold")

    def fn(t: TensorBase) -> TensorBase:
        if t.is_floating_point():
            return Threshold.apply(t, th, value)
        arr = t._data  # integer tensors: no gradient to track
        xp = _backend.xp_of(arr)
        return TensorBase._make(xp.where(arr > th, arr, xp.asarray(value).astype(arr.dtype)))

    return _inplace(input, fn) if inplace else fn(input)


def _halves(x: Any, dim: int, h: int) -> tuple[Any, Any]:
    nd = x.ndim
    first = tuple(slice(0, h) if i == dim else slice(None) for i in range(nd))
    second = tuple(slice(h, None) if i == dim else slice(None) for i in range(nd))
    return x[first], x[second]


# ---------------------------------------------------------------------------------------------
# softmax family (kernels in ops/softmax_family.py; these are nn.functional's entries:
# ``dim=None`` warns and picks a dim, ``_stacklevel`` aims that warning at the caller)


def softmax(
    input: TensorBase, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None
) -> TensorBase:
    """exp(x) / sum(exp(x)) along ``dim``."""
    return softmax_along(Softmax, input, dim, dtype, "softmax", _stacklevel - 1)


def log_softmax(
    input: TensorBase, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None
) -> TensorBase:
    """x - logsumexp(x) along ``dim``."""
    return softmax_along(LogSoftmax, input, dim, dtype, "log_softmax", _stacklevel - 1)


def softmin(
    input: TensorBase, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None
) -> TensorBase:
    """softmax(-x) along ``dim``."""
    x = input if dtype is None else input.to(dtype)
    return softmax_along(Softmax, -x, dim, None, "softmin", _stacklevel - 1)


def gumbel_softmax(
    logits: TensorBase, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> TensorBase:
    """Sample from the Gumbel-softmax distribution (straight-through one-hot when ``hard``)."""
    xp = _backend.xp_of(logits._data)
    # PyTorch's noise: -log of a contiguous exponential_() (one float64 uniform per element)
    e = TensorBase._make(xp.empty(tuple(logits.shape), logits._data.dtype))
    _random.exponential_(e)
    gumbels = TensorBase._make(-xp.log(e._data))
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    d = wrap_dim(dim, y_soft.ndim)
    idx = y_soft._data.argmax(axis=d)
    hard_arr = (xp.arange(y_soft.shape[d]).reshape(
        (-1,) + (1,) * (y_soft.ndim - d - 1)) == xp.expand_dims(idx, d)).astype(y_soft._data.dtype)
    return TensorBase._make(hard_arr) - y_soft.detach() + y_soft
