"""Activations and the other ``nn.functional`` building blocks: linear, bilinear, dropout,
embedding, one_hot, pad, normalize, distances.

Each differentiable op is an ``Op`` (forward and backward side by side, the derivative as math
in its docstring); kinks follow PyTorch (written next to each rule). ``ember.nn.functional``
re-exports everything in ``__all__``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .._tensor_base import TensorBase
from ..autograd import grad_mode
from ..autograd.function import Op
from . import pointwise_math as _pm
from . import pointwise_piecewise as _pp
from .inplace import inplace
from .softmax_family import LogSoftmax, Softmax, softmax_along

__all__ = [
    "relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_",
    "celu", "celu_", "gelu", "silu", "mish", "hardtanh", "hardtanh_", "hardswish",
    "hardsigmoid", "softplus", "softsign", "tanhshrink", "threshold", "threshold_",
    "logsigmoid", "glu", "prelu", "rrelu", "rrelu_", "softshrink", "hardshrink", "sigmoid",
    "tanh", "softmax", "log_softmax", "softmin", "gumbel_softmax", "linear", "bilinear",
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
    "embedding", "embedding_bag", "one_hot", "pad", "normalize", "cosine_similarity",
    "pairwise_distance", "pdist", "channel_shuffle",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

_LEGACY = {
    "float64": "Double", "float32": "Float", "float16": "Half", "bfloat16": "BFloat16",
    "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
    "bool": "Bool",
}


def _float_input(x: Any, name: str) -> TensorBase:
    """Activations are defined for floating tensors only (PyTorch's 'not implemented' error)."""
    if not isinstance(x, TensorBase):
        raise TypeError(
            f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}; wrap it first, "
            "e.g. torch.tensor(values)"
        )
    if not x.is_floating_point():
        raise RuntimeError(
            f"\"{name}\" not implemented for '{_LEGACY.get(x.dtype.name, x.dtype.name)}' "
            f"(input dtype {x.dtype}, shape {tuple(x.shape)}); convert it first, e.g. x.float()"
        )
    return x


def _sig(xp: Any, x: Any) -> Any:
    """Numerically stable logistic sigmoid on arrays (or tensors, under create_graph)."""
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _xp(ctx: Any, arr: Any) -> Any:
    # ctx.xp, or the array's namespace when the op runs through ctx.call from another op's
    # backward (Node.call does not set xp on the fresh node)
    xp = getattr(ctx, "xp", None)
    return xp if xp is not None else _backend.xp_of(arr)


def _inplace(x: TensorBase, fn: Any, *args: Any, **kwargs: Any) -> TensorBase:
    return inplace(x, fn, *args, **kwargs)


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


class Hardtanh(Op):
    """out = clamp(x, lo, hi)          grad_x = grad where lo < x < hi, else 0
    (PyTorch: zero gradient at exactly lo and hi)"""

    @staticmethod
    def forward(ctx: Any, x: Any, lo: float, hi: float) -> Any:
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        # (bound first: on a tie NumPy returns the second argument, so -0.0 stays -0.0 as in
        # PyTorch's hardtanh)
        return ctx.xp.minimum(hi, ctx.xp.maximum(lo, x))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return ctx.xp.where((x > ctx.lo) & (x < ctx.hi), grad, 0), None, None


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


class LeakyRelu(Op):
    """out = x if x > 0 else slope * x          grad_x = grad if x > 0 else slope * grad
    (at x = 0 the slope branch, as in PyTorch)"""

    @staticmethod
    def forward(ctx: Any, x: Any, slope: float) -> Any:
        ctx.save_for_backward(x)
        ctx.slope = slope
        return ctx.xp.where(x > 0, x, x * slope)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return ctx.xp.where(x > 0, grad, grad * ctx.slope), None


def leaky_relu(input: TensorBase, negative_slope: float = 0.01, inplace: bool = False) -> TensorBase:
    """x for x > 0, ``negative_slope * x`` otherwise."""
    _float_input(input, "leaky_relu")
    if inplace:
        return _inplace(input, lambda t: LeakyRelu.apply(t, negative_slope))
    return LeakyRelu.apply(input, negative_slope)


def leaky_relu_(input: TensorBase, negative_slope: float = 0.01) -> TensorBase:
    """In-place ``leaky_relu``."""
    return leaky_relu(input, negative_slope, inplace=True)


class Elu(Op):
    """out = scale * (x if x > 0 else alpha * (exp(x * s) - 1))   (s = input_scale)
    grad_x = grad * scale if x > 0 else grad * scale * alpha * s * exp(x * s)
    (x = 0 takes the exponential branch, as in PyTorch)"""

    @staticmethod
    def forward(ctx: Any, x: Any, alpha: float, scale: float, input_scale: float) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        ctx.args = (alpha, scale, input_scale)
        neg = xp.expm1(xp.minimum(x, 0) * input_scale) * (alpha * scale)
        return xp.where(x > 0, x * scale, neg)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        alpha, scale, s = ctx.args
        xp = ctx.xp
        neg = grad * (xp.exp(xp.where(x < 0, x, 0) * s) * (alpha * scale * s))
        return xp.where(x > 0, grad * scale, neg), None, None, None


def elu(input: TensorBase, alpha: float = 1.0, inplace: bool = False) -> TensorBase:
    """x for x > 0, ``alpha * (exp(x) - 1)`` otherwise."""
    _float_input(input, "elu")
    if inplace:
        return _inplace(input, lambda t: Elu.apply(t, alpha, 1.0, 1.0))
    return Elu.apply(input, alpha, 1.0, 1.0)


def elu_(input: TensorBase, alpha: float = 1.0) -> TensorBase:
    """In-place ``elu``."""
    return elu(input, alpha, inplace=True)


def selu(input: TensorBase, inplace: bool = False) -> TensorBase:
    """scale * elu(x, alpha) with the self-normalising constants (1.0507..., 1.6733...)."""
    _float_input(input, "selu")
    if inplace:
        return _inplace(input, lambda t: Elu.apply(t, _SELU_ALPHA, _SELU_SCALE, 1.0))
    return Elu.apply(input, _SELU_ALPHA, _SELU_SCALE, 1.0)


def selu_(input: TensorBase) -> TensorBase:
    """In-place ``selu``."""
    return selu(input, inplace=True)


class Celu(Elu):
    """celu is elu with scale 1 and input scale 1/alpha (the rule is Elu's)."""

    node_name = "CeluBackward0"


def celu(input: TensorBase, alpha: float = 1.0, inplace: bool = False) -> TensorBase:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: celu: alpha must be nonzero (got alpha=0)")
    _float_input(input, "celu")
    if inplace:
        return _inplace(input, lambda t: Celu.apply(t, alpha, 1.0, 1.0 / alpha))
    return Celu.apply(input, alpha, 1.0, 1.0 / alpha)


def celu_(input: TensorBase, alpha: float = 1.0) -> TensorBase:
    """In-place ``celu``."""
    return celu(input, alpha, inplace=True)


class Gelu(Op):
    """exact: out = x * Phi(x)          grad_x = grad * (Phi(x) + x * phi(x))
    tanh:  out = x/2 * (1 + tanh(u)), u = sqrt(2/pi) * (x + 0.044715 x^3)
           grad_x = grad * (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2))"""

    @staticmethod
    def forward(ctx: Any, x: Any, approximate: str) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        ctx.approximate = approximate
        if approximate == "tanh":
            # in-place steps on fresh temporaries: this runs on every GPT MLP activation
            u = x * x
            u *= 0.044715
            u += 1
            u *= x
            u *= _SQRT_2_OVER_PI
            t = xp.tanh(u)
            if any(ctx.needs_input_grad):
                ctx.t = t  # reused by backward (recomputed from x under create_graph)
            out = t + 1
            out *= x
            out *= 0.5
            return out
        cdf = ctx.call(_pm.Erf, x * _INV_SQRT2)
        cdf += 1
        cdf *= 0.5
        if any(ctx.needs_input_grad):
            ctx.cdf = cdf  # reused by backward (recomputed from x under create_graph)
        out = x * cdf
        out -= x - x  # NaN at +inf, as PyTorch's exact gelu (-0.0 - 0.0 keeps the sign of zero)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        xp = ctx.xp
        if ctx.approximate == "tanh":
            if ctx._tensor_mode:  # create_graph: build d from x with recorded ops
                t = xp.tanh((x + x * x * x * 0.044715) * _SQRT_2_OVER_PI)
                d = 0.5 * (1 + t) + x * 0.5 * (1 - t * t) * _SQRT_2_OVER_PI * (
                    1 + x * x * (3 * 0.044715))
                return grad * d, None
            t = ctx.t
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
        d = x * x
        d *= -0.5
        d = xp.exp(d, out=d)
        d *= x
        d *= _INV_SQRT_2PI
        d += ctx.cdf
        d *= grad
        return d, None


def gelu(input: TensorBase, approximate: str = "none") -> TensorBase:
    """x * Phi(x) (``approximate='tanh'``: the tanh approximation)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError(
            f"approximate argument must be either none or tanh (got {approximate!r})"
        )
    _float_input(input, "gelu")
    return Gelu.apply(input, approximate)


class Silu(Op):
    """out = x * sigmoid(x)          grad_x = grad * s * (1 + x * (1 - s)), s = sigmoid(x)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return x * _sig(ctx.xp, x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        s = _sig(ctx.xp, x)
        return grad * (s * (1 + x * (1 - s)))


def silu(input: TensorBase, inplace: bool = False) -> TensorBase:
    """x * sigmoid(x) (a.k.a. swish)."""
    _float_input(input, "silu")
    if inplace:
        return _inplace(input, Silu.apply)
    return Silu.apply(input)


def _softplus_arr(xp: Any, x: Any) -> Any:
    # log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)); written with where
    # because backward rules also run on tensors (create_graph), where minimum needs two tensors
    return xp.where(x > 0, x, 0) + xp.log1p(xp.exp(-xp.abs(x)))


class Mish(Op):
    """out = x * tanh(softplus(x))
    grad_x = grad * (t + x * sigmoid(x) * (1 - t^2)), t = tanh(softplus(x))"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        return x * xp.tanh(_softplus_arr(xp, x))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        xp = ctx.xp
        t = xp.tanh(_softplus_arr(xp, x))
        return grad * (t + x * _sig(xp, x) * (1 - t * t))


def mish(input: TensorBase, inplace: bool = False) -> TensorBase:
    """x * tanh(softplus(x))."""
    _float_input(input, "mish")
    if inplace:
        return _inplace(input, Mish.apply)
    return Mish.apply(input)


class Hardswish(Op):
    """out = x * relu6(x + 3) / 6
    grad_x = 0 if x <= -3; grad * (x / 3 + 1/2) if -3 < x < 3; grad if x >= 3   (PyTorch's kinks)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        return x * xp.minimum(xp.maximum(x + 3, 0), 6) / 6

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        xp = ctx.xp
        mid = grad * (x / 3 + 0.5)
        return xp.where(x <= -3, grad * 0, xp.where(x < 3, mid, grad))


def hardswish(input: TensorBase, inplace: bool = False) -> TensorBase:
    """x * relu6(x + 3) / 6."""
    _float_input(input, "hardswish")
    if inplace:
        return _inplace(input, Hardswish.apply)
    return Hardswish.apply(input)


class Hardsigmoid(Op):
    """out = relu6(x + 3) / 6          grad_x = grad / 6 where -3 < x < 3, else 0"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        return xp.minimum(xp.maximum(x + 3, 0), 6) / 6

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad * ((x > -3) & (x < 3)) / 6


def hardsigmoid(input: TensorBase, inplace: bool = False) -> TensorBase:
    """relu6(x + 3) / 6."""
    _float_input(input, "hardsigmoid")
    if inplace:
        return _inplace(input, Hardsigmoid.apply)
    return Hardsigmoid.apply(input)


class Softplus(Op):
    """out = log(1 + exp(beta x)) / beta   (x where beta x > threshold)
    grad_x = grad * sigmoid(beta x)       (grad where beta x > threshold)"""

    @staticmethod
    def forward(ctx: Any, x: Any, beta: float, threshold: float) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        ctx.beta, ctx.threshold = beta, threshold
        bx = x * beta
        return xp.where(bx > threshold, x, _softplus_arr(xp, bx) / beta)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        xp = ctx.xp
        bx = x * ctx.beta
        return xp.where(bx > ctx.threshold, grad, grad * _sig(xp, bx)), None, None


def softplus(input: TensorBase, beta: float = 1.0, threshold: float = 20.0) -> TensorBase:
    """log(1 + exp(beta x)) / beta, linear above ``threshold``."""
    _float_input(input, "softplus")
    return Softplus.apply(input, beta, threshold)


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


def softsign(input: TensorBase) -> TensorBase:
    """x / (1 + |x|)."""
    _float_input(input, "softsign")
    return Softsign.apply(input)


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


def tanhshrink(input: TensorBase) -> TensorBase:
    """x - tanh(x)."""
    _float_input(input, "tanhshrink")
    return Tanhshrink.apply(input)


class Threshold(Op):
    """out = x if x > threshold else value          grad_x = grad where x > threshold, else 0"""

    @staticmethod
    def forward(ctx: Any, x: Any, threshold: float, value: float) -> Any:
        ctx.save_for_backward(x)
        ctx.threshold = threshold
        return ctx.xp.where(x > threshold, x, ctx.xp.asarray(value, dtype=x.dtype))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return ctx.xp.where(x > ctx.threshold, grad, 0), None, None


def _threshold(input: TensorBase, th: float, value: float, inplace: bool) -> TensorBase:
    if not isinstance(input, TensorBase):
        raise TypeError(f"threshold(): argument 'input' must be Tensor, not {type(input).__name__}")

    def fn(t: TensorBase) -> TensorBase:
        if t.is_floating_point():
            return Threshold.apply(t, th, value)
        arr = t._data  # integer tensors: no gradient to track
        xp = _backend.xp_of(arr)
        return TensorBase._make(xp.where(arr > th, arr, xp.asarray(value).astype(arr.dtype)))

    return _inplace(input, fn) if inplace else fn(input)


def threshold(input: TensorBase, threshold: float, value: float, inplace: bool = False) -> TensorBase:
    """x where x > threshold, else ``value``."""
    return _threshold(input, threshold, value, inplace)


def threshold_(input: TensorBase, threshold: float, value: float) -> TensorBase:
    """In-place ``threshold``."""
    return _threshold(input, threshold, value, True)


class LogSigmoid(Op):
    """out = log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))          grad_x = grad * sigmoid(-x)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        return xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad * _sig(ctx.xp, -x)


def logsigmoid(input: TensorBase) -> TensorBase:
    """log(1 / (1 + exp(-x))), computed stably."""
    _float_input(input, "log_sigmoid_forward")
    return LogSigmoid.apply(input)


class Glu(Op):
    """out = a * sigmoid(b), (a, b) = the two halves of x along dim
    grad_a = grad * sigmoid(b)          grad_b = grad * a * sigmoid(b) * (1 - sigmoid(b))"""

    @staticmethod
    def forward(ctx: Any, x: Any, dim: int) -> Any:
        ctx.save_for_backward(x)
        ctx.dim = dim
        a, b = _halves(x, dim, x.shape[dim] // 2)
        return a * _sig(ctx.xp, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        xp = ctx.xp
        dim = ctx.dim
        h = x.shape[dim] // 2
        a, b = _halves(x, dim, h)
        s = _sig(xp, b)
        return xp.concatenate([grad * s, grad * a * s * (1 - s)], axis=dim), None


def _halves(x: Any, dim: int, h: int) -> tuple[Any, Any]:
    nd = x.ndim
    first = tuple(slice(0, h) if i == dim else slice(None) for i in range(nd))
    second = tuple(slice(h, None) if i == dim else slice(None) for i in range(nd))
    return x[first], x[second]


def glu(input: TensorBase, dim: int = -1) -> TensorBase:
    """a * sigmoid(b) where a, b are the first and second halves of ``input`` along ``dim``."""
    _float_input(input, "glu")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {d} is size {n} (glu splits "
            f"input of shape {tuple(input.shape)} into two equal halves along dim {dim})"
        )
    return Glu.apply(input, d)


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
        return ctx.xp.where(x > 0, x, w.reshape(ctx.bshape) * x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, w = ctx.saved
        xp = ctx.xp
        pos = x > 0
        gx = xp.where(pos, grad, w.reshape(ctx.bshape) * grad)
        gw = None
        if ctx.needs_input_grad[1]:
            contrib = xp.where(pos, grad * 0, grad * x)
            if ctx.bshape == ():
                gw = contrib.sum().reshape(ctx.wshape)
            else:
                axes = tuple(i for i in range(x.ndim) if i != 1)
                gw = contrib.sum(axis=axes).reshape(ctx.wshape)
        return gx, gw


def prelu(input: TensorBase, weight: TensorBase) -> TensorBase:
    """x if x > 0 else weight * x, weight per channel (dim 1) or shared."""
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


def rrelu(
    input: TensorBase, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
    inplace: bool = False,
) -> TensorBase:
    """Randomized leaky ReLU: slope ~ U(lower, upper) per element in training, else the mean."""
    _float_input(input, "rrelu")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    from . import random as _random

    xp = _backend.xp_of(input._data)
    draw = _random._rng(None).uniform(lower, upper, tuple(input.shape))
    slope = xp.asarray(draw.astype(input._data.dtype))
    mask = xp.where(input._data > 0, xp.ones((), input._data.dtype), slope)
    if inplace:
        return _inplace(input, lambda t: _MulMask.apply(t, mask))
    return _MulMask.apply(input, mask)


def rrelu_(input: TensorBase, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> TensorBase:
    """In-place ``rrelu``."""
    return rrelu(input, lower, upper, training, inplace=True)


class Shrink(Op):
    """softshrink: out = x - l if x > l; x + l if x < -l; else 0
    hardshrink: out = x if |x| > l else 0          grad_x = grad where |x| > l, else 0"""

    @staticmethod
    def forward(ctx: Any, x: Any, lambd: float, soft: bool) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        ctx.lambd = lambd
        keep = (x > lambd) | (x < -lambd)
        if soft:
            return xp.where(x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, x * 0))
        return xp.where(keep, x, x * 0)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad * ((x > ctx.lambd) | (x < -ctx.lambd)), None, None


class Softshrink(Shrink):
    node_name = "SoftshrinkBackward0"


class Hardshrink(Shrink):
    node_name = "HardshrinkBackward0"


def softshrink(input: TensorBase, lambd: float = 0.5) -> TensorBase:
    """x - lambd for x > lambd, x + lambd for x < -lambd, 0 otherwise."""
    if lambd < 0:
        raise RuntimeError(
            f"lambda must be greater or equal to 0, but found to be {lambd}."
        )
    _float_input(input, "softshrink")
    return Softshrink.apply(input, lambd, True)


def hardshrink(input: TensorBase, lambd: float = 0.5) -> TensorBase:
    """x where |x| > lambd, else 0."""
    _float_input(input, "hardshrink")
    return Hardshrink.apply(input, lambd, False)


def sigmoid(input: TensorBase) -> TensorBase:
    """1 / (1 + exp(-x))."""
    return _pm.sigmoid(input)


def tanh(input: TensorBase) -> TensorBase:
    """tanh(x)."""
    return _pm.tanh(input)


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
    from . import random as _random

    xp = _backend.xp_of(logits._data)
    u = _random._rng(None).exponential(1.0, tuple(logits.shape)).astype(logits._data.dtype)
    gumbels = TensorBase._make(-xp.log(xp.asarray(u)))
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    d = _wrap_dim(dim, y_soft.ndim)
    idx = y_soft._data.argmax(axis=d)
    hard_arr = (xp.arange(y_soft.shape[d]).reshape(
        (-1,) + (1,) * (y_soft.ndim - d - 1)) == xp.expand_dims(idx, d)).astype(y_soft._data.dtype)
    return TensorBase._make(hard_arr) - y_soft.detach() + y_soft


# ---------------------------------------------------------------------------------------------
# linear layers


class Linear(Op):
    """out = x W^T + b   (one GEMM over the flattened batch)
    grad_x = grad W          grad_W = grad^T x (summed over batch dims)          grad_b = sum grad"""

    node_name = "AddmmBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any, b: Any) -> Any:
        ctx.save_for_backward(x, w)
        rows = math.prod(x.shape[:-1])
        out = x.reshape(rows, x.shape[-1]) @ w.T
        if out.dtype != x.dtype:  # NumPy computes bfloat16 products in float32
            out = out.astype(x.dtype)
        if b is not None:
            out += b
        return out.reshape(x.shape[:-1] + (w.shape[0],))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, w = ctx.saved
        need = ctx.needs_input_grad
        rows = math.prod(tuple(x.shape[:-1]))
        g2 = grad.reshape(rows, w.shape[0])
        gx = gw = gb = None
        if need[0]:
            gx = (g2 @ w).reshape(tuple(x.shape))
        if need[1]:
            gw = g2.swapaxes(0, 1) @ x.reshape(rows, x.shape[-1])
        if need[2]:
            gb = g2.sum(axis=0)
        return gx, gw, gb


# PyTorch's node for linear depends on the input's rank and the bias (it lowers to mm/addmm with
# views around them); the rule is Linear's in every case.
class LinearMm(Linear):
    node_name = "MmBackward0"


class LinearView(Linear):
    node_name = "ViewBackward0"


class LinearUnsafeView(Linear):
    node_name = "UnsafeViewBackward0"


class LinearSqueeze(Linear):
    node_name = "SqueezeBackward4"


def _linear_op(ndim: int, bias: Any) -> type:
    if ndim == 2:
        return Linear if bias is not None else LinearMm
    if bias is not None:
        return LinearView
    return LinearSqueeze if ndim == 1 else LinearUnsafeView


def linear(input: TensorBase, weight: TensorBase, bias: TensorBase | None = None) -> TensorBase:
    """x W^T + b, x of shape (*, in_features), W of shape (out_features, in_features)."""
    try:
        x, w = input._data, weight._data
    except AttributeError:
        raise TypeError(
            f"linear(): input and weight must be Tensors, got {type(input).__name__} and "
            f"{type(weight).__name__}"
        ) from None
    b = None if bias is None else bias._data
    # the common case in one test: matching dtypes, 2-D weight, in_features that agree
    if (x.dtype == w.dtype and w.ndim == 2 and x.ndim and x.shape[-1] == w.shape[1]
            and (b is None or (b.dtype == w.dtype and b.shape == (w.shape[0],)))):
        return _linear_op(x.ndim, b).apply(input, weight, bias)
    return _linear_checked(input, weight, bias)


def _linear_checked(input: TensorBase, weight: TensorBase, bias: TensorBase | None) -> TensorBase:
    if input.dtype != weight.dtype or (bias is not None and bias.dtype != weight.dtype):
        other = bias.dtype if bias is not None and input.dtype == weight.dtype else input.dtype
        raise RuntimeError(
            f"mat1 and mat2 must have the same dtype, but got {_LEGACY.get(other.name)} and "
            f"{_LEGACY.get(weight.dtype.name)} (linear: input {tuple(input.shape)} {input.dtype}, "
            f"weight {tuple(weight.shape)} {weight.dtype}). Convert the input, e.g. x = x.float(), "
            "or the model, e.g. model.double()"
        )
    if weight.ndim not in (1, 2):
        raise RuntimeError(
            f"linear(): weight must be 1-D or 2-D (out_features, in_features), got shape "
            f"{tuple(weight.shape)}"
        )
    squeeze_out = weight.ndim == 1
    if squeeze_out:
        weight = weight.reshape(1, -1)
        if bias is not None and bias.ndim == 0:
            bias = bias.reshape(1)
    if input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        cols = input.shape[-1] if input.ndim else 1
        rows = math.prod(input.shape[:-1]) if input.ndim > 1 else 1
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} and "
            f"{weight.shape[1]}x{weight.shape[0]}) (linear: input of shape "
            f"{tuple(input.shape)}, weight of shape {tuple(weight.shape)}: the last dim of the "
            f"input must equal in_features={weight.shape[1]})"
        )
    if bias is not None and tuple(bias.shape) not in ((weight.shape[0],), (), (1,)):
        raise RuntimeError(
            f"linear(): bias of shape {tuple(bias.shape)} does not match out_features="
            f"{weight.shape[0]} (weight of shape {tuple(weight.shape)})"
        )
    out = _linear_op(input.ndim, bias).apply(input, weight, bias)
    if squeeze_out:
        out = out.squeeze(-1)
    return out


class Bilinear(Op):
    """out_k = x1^T W_k x2 + b_k   (batch dims flattened; every contraction is one GEMM)
    grad_x1 = sum_k grad_k W_k x2          grad_x2 = sum_k grad_k W_k^T x1
    grad_W_k = sum over batch of grad_k x1 x2^T          grad_b = sum grad"""

    @staticmethod
    def forward(ctx: Any, x1: Any, x2: Any, w: Any, b: Any) -> Any:
        ctx.save_for_backward(x1, x2, w)
        k, i, j = w.shape
        a1, a2 = x1.reshape(-1, i), x2.reshape(-1, j)
        u = _x1_w(a1, w)  # (B, K, J)
        out = (u * a2.reshape(-1, 1, j)).sum(axis=2)
        if b is not None:
            out = out + b
        return out.reshape(x1.shape[:-1] + (k,))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x1, x2, w = ctx.saved
        need = ctx.needs_input_grad
        k, i, j = tuple(w.shape)
        g = grad.reshape(-1, k)
        n = g.shape[0]
        a1, a2 = x1.reshape(n, i), x2.reshape(n, j)
        g1 = g2 = gw = gb = None
        if need[0]:
            t = (a2 @ w.reshape(k * i, j).swapaxes(0, 1)).reshape(n, k, i)
            g1 = (g.reshape(n, k, 1) * t).sum(axis=1).reshape(tuple(x1.shape))
        if need[1]:
            g2 = (g.reshape(n, k, 1) * _x1_w(a1, w)).sum(axis=1).reshape(tuple(x2.shape))
        if need[2]:
            gk_a1 = (g.reshape(n, k, 1) * a1.reshape(n, 1, i)).reshape(n, k * i)
            gw = (gk_a1.swapaxes(0, 1) @ a2).reshape(k, i, j)
        if need[3]:
            gb = g.sum(axis=0)
        return g1, g2, gw, gb


def _x1_w(a1: Any, w: Any) -> Any:
    """(B, I) x (K, I, J) -> (B, K, J): sum_i a1[b, i] w[k, i, j], as one GEMM."""
    k, i, j = tuple(w.shape)
    return (a1 @ w.swapaxes(0, 1).reshape(i, k * j)).reshape(a1.shape[0], k, j)


def bilinear(input1: TensorBase, input2: TensorBase, weight: TensorBase, bias: TensorBase | None = None) -> TensorBase:
    """y_k = x1^T W_k x2 + b_k; W of shape (out, in1, in2)."""
    if weight.ndim != 3:
        raise RuntimeError(
            f"bilinear(): weight must be 3-D (out_features, in1_features, in2_features), got "
            f"shape {tuple(weight.shape)}"
        )
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(
            f"bilinear(): input batch dimensions do not match: got {tuple(input1.shape[:-1])} "
            f"and {tuple(input2.shape[:-1])}"
        )
    if input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(
            f"bilinear(): input sizes ({input1.shape[-1]}, {input2.shape[-1]}) do not match the "
            f"weight's (in1_features, in2_features) = ({weight.shape[1]}, {weight.shape[2]})"
        )
    return Bilinear.apply(input1, input2, weight, bias)


# ---------------------------------------------------------------------------------------------
# dropout


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(x: TensorBase, p: float, shape: tuple[int, ...]) -> Any:
    """A mask in x's dtype: 0 with probability p, else 1/(1-p) (drawn from the global RNG)."""
    from . import random as _random

    keep = _random._rng(None).random(shape, dtype=np.float32) >= p
    scale = 0.0 if p >= 1.0 else 1.0 / (1.0 - p)
    arr = keep.astype(x._data.dtype) * x._data.dtype.type(scale)
    if type(x._data) is not type(arr):
        arr = _backend.to_device(arr, x.device)
    return arr


def _apply_mask(input: TensorBase, mask: Any, inplace: bool) -> TensorBase:
    if inplace:
        return _inplace(input, lambda t: _MulMask.apply(t, mask))
    return _MulMask.apply(input, mask)


def dropout(input: TensorBase, p: float = 0.5, training: bool = True, inplace: bool = False) -> TensorBase:
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p) (only in training)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    _float_input(input, "dropout")
    return _apply_mask(input, _keep_mask(input, p, tuple(input.shape)), inplace)


def _feature_dropout(input: TensorBase, p: float, training: bool, inplace: bool, batched: bool) -> TensorBase:
    _check_p(p)
    if not training or p == 0.0:
        return input
    _float_input(input, "dropout")
    lead = 2 if batched else 1
    shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
    return _apply_mask(input, _keep_mask(input, p, shape), inplace)


def dropout1d(input: TensorBase, p: float = 0.5, training: bool = True, inplace: bool = False) -> TensorBase:
    """Zero whole channels of (N, C, L) or (C, L) input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, "
            "a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs)."
        )
    return _feature_dropout(input, p, training, inplace, input.ndim == 3)


def dropout2d(input: TensorBase, p: float = 0.5, training: bool = True, inplace: bool = False) -> TensorBase:
    """Zero whole channels of (N, C, H, W) or (C, H, W) input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _feature_dropout(input, p, training, inplace, input.ndim >= 3)


def dropout3d(input: TensorBase, p: float = 0.5, training: bool = True, inplace: bool = False) -> TensorBase:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    return _feature_dropout(input, p, training, inplace, input.ndim == 5)


class _AffineMask(Op):
    """out = x * a + c (a, c fixed arrays)          grad_x = grad * a"""

    node_name = "AddBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, a: Any, c: Any) -> Any:
        ctx.save_for_backward(a)
        return x * a + c

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (a,) = ctx.saved
        return grad * a, None, None


def _alpha_dropout(input: TensorBase, p: float, training: bool, inplace: bool,
                   shape: tuple[int, ...]) -> TensorBase:
    _check_p(p)
    if not training or p == 0.0:
        return input
    _float_input(input, "alpha_dropout")
    if p == 1.0:
        return input * 0.0
    from . import random as _random

    dt = input._data.dtype
    keep = (_random._rng(None).random(shape) >= p).astype(dt)
    alpha = -_SELU_ALPHA * _SELU_SCALE
    a = ((1 - p) * (1 + p * alpha * alpha)) ** -0.5
    b = -a * alpha * p  # dropped units become alpha; then affine a * (.) + b
    mult = keep * dt.type(a)
    add = (1 - keep) * dt.type(a * alpha) + dt.type(b)
    if type(input._data) is not type(mult):
        mult = _backend.to_device(mult, input.device)
        add = _backend.to_device(add, input.device)
    if inplace:
        return _inplace(input, lambda t: _AffineMask.apply(t, mult, add))
    return _AffineMask.apply(input, mult, add)


def alpha_dropout(input: TensorBase, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> TensorBase:
    """Dropout that keeps SELU's mean and variance (dropped units take SELU's negative limit)."""
    return _alpha_dropout(input, p, training, inplace, tuple(input.shape))


def feature_alpha_dropout(input: TensorBase, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> TensorBase:
    """``alpha_dropout`` of whole channels (dim 1)."""
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha_dropout(input, p, training, inplace, shape)


# ---------------------------------------------------------------------------------------------
# embedding


class EmbeddingBackward(Op):
    """out = the (V, D) gradient of ``weight[idx]``: rows of grad summed per index (scatter-add)
    grad_grad = grad_out[idx]   (a gather: the adjoint of the scatter)"""

    node_name = "EmbeddingDenseBackward0"

    @staticmethod
    def forward(ctx: Any, grad: Any, idx: Any, num_weights: int) -> Any:
        xp = _xp(ctx, grad)
        ctx.save_for_backward(idx)
        d = grad.shape[-1]
        g2 = grad.reshape(-1, d)
        # one bincount over (index, column) pairs: a vectorised scatter-add
        flat = (idx.reshape(-1, 1).astype(xp.int64) * d + xp.arange(d)).reshape(-1)
        sums = xp.bincount(flat, weights=g2.reshape(-1), minlength=num_weights * d)
        return sums.reshape(num_weights, d).astype(grad.dtype)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (idx,) = ctx.saved
        return ctx.call(EmbeddingLookup, grad, idx), None, None


class EmbeddingLookup(Op):
    """out = weight[idx]          grad_weight = scatter-add of grad rows at idx"""

    node_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx: Any, w: Any, idx: Any) -> Any:
        ctx.save_for_backward(idx)
        ctx.num = w.shape[0]
        return w[idx]

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (idx,) = ctx.saved
        return ctx.call(EmbeddingBackward, grad, idx, ctx.num), None


def embedding(
    input: TensorBase, weight: TensorBase, padding_idx: int | None = None, max_norm: float | None = None,
    norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
) -> TensorBase:
    """Look up rows of ``weight`` (num_embeddings, dim) at integer ``input`` indices.

    The row at ``padding_idx`` gets no gradient; ``max_norm`` renormalises looked-up rows in place.
    """
    if not isinstance(input, TensorBase):
        raise TypeError(f"embedding(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {input.type()} instead (while checking arguments for embedding). "
            "Convert the indices, e.g. idx.long()"
        )
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got shape {tuple(weight.shape)}")
    n = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= n:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -n:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = n + padding_idx
    idx = input._data
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise IndexError(
                f"index out of range in self (embedding: index {bad} with num_embeddings={n}; "
                f"valid indices are 0..{n - 1})"
            )
    if max_norm is not None:
        _embedding_renorm(weight, idx, max_norm, norm_type)
    if padding_idx is None and not scale_grad_by_freq:
        return EmbeddingLookup.apply(weight, idx)
    return _EmbeddingMasked.apply(weight, idx, padding_idx, scale_grad_by_freq)


class _EmbeddingMasked(Op):
    """out = weight[idx]
    grad_weight = scatter-add of grad rows at idx, rows at padding_idx dropped, each row divided
    by its index's count in the batch when scale_grad_by_freq"""

    node_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx: Any, w: Any, idx: Any, padding_idx: Any, by_freq: bool) -> Any:
        xp = ctx.xp
        ctx.num = w.shape[0]
        scale = None
        flat = idx.reshape(-1)
        if padding_idx is not None or by_freq:
            scale = xp.ones(flat.shape, dtype=w.dtype)
            if by_freq:
                counts = xp.bincount(flat, minlength=w.shape[0])
                scale = scale / counts[flat].astype(w.dtype)
            if padding_idx is not None:
                scale = scale * (flat != padding_idx)
            scale = scale.reshape(idx.shape + (1,))
        ctx.save_for_backward(idx, scale)
        return w[idx]

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        idx, scale = ctx.saved
        if scale is not None:
            grad = grad * scale
        return ctx.call(EmbeddingBackward, grad, idx, ctx.num), None, None, None


def _embedding_renorm(weight: TensorBase, idx: Any, max_norm: float, norm_type: float) -> None:
    xp = _backend.xp_of(weight._data)
    rows = xp.unique(idx.reshape(-1))
    w = weight._data
    sel = w[rows]
    if norm_type == math.inf:
        norms = xp.abs(sel).max(axis=1)
    else:
        norms = (xp.abs(sel) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(w.dtype)
    with grad_mode.no_grad():
        w[rows] = sel * scale[:, None]
    weight._bump_version()


class _BagMax(Op):
    """out[b] = max over the rows of bag b (rows (B, L, D), mask (B, L): valid positions; an
    empty bag gives 0)          grad_rows = grad at each bag's first argmax, 0 elsewhere"""

    node_name = "EmbeddingBagBackward0"

    @staticmethod
    def forward(ctx: Any, rows: Any, mask: Any) -> Any:
        xp = ctx.xp
        filled = xp.where(mask[..., None], rows, -xp.inf)
        arg = filled.argmax(axis=1)  # (B, D)
        out = xp.take_along_axis(rows, arg[:, None, :], axis=1)[:, 0, :]
        empty = ~mask.any(axis=1)
        ctx.save_for_backward(xp.where(empty[:, None], -1, arg))  # empty bags: no gradient
        ctx.shape = rows.shape
        return xp.where(empty[:, None], 0, out).astype(rows.dtype)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (arg,) = ctx.saved
        xp = ctx.xp
        b, length, d = ctx.shape
        pos = xp.arange(length).reshape(1, length, 1)
        onehot = pos == arg.reshape(b, 1, d)
        return xp.where(onehot, grad.reshape(b, 1, d), 0), None


def embedding_bag(
    input: TensorBase, weight: TensorBase, offsets: TensorBase | None = None, max_norm: float | None = None,
    norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean",
    sparse: bool = False, per_sample_weights: TensorBase | None = None,
    include_last_offset: bool = False, padding_idx: int | None = None,
) -> TensorBase:
    """Sums, means or maxes of embedding rows per bag: (B, N) input (one bag per row) or a 1-D
    input split by ``offsets``; returns (B, embedding_dim)."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max (got {mode!r})")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub."
        )
    xp = _backend.xp_of(input._data)
    idx = input._data
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                "of fixed length sequences. However, found offsets of type "
                f"{type(offsets).__name__}"
            )
        nbags, length = idx.shape
        flat = idx.reshape(-1)
        bag_ids = xp.repeat(xp.arange(nbags), length)
    elif idx.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        off = offsets._data.astype(xp.int64)
        if off.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        if off.shape[0] and int(off[0]) != 0:
            raise RuntimeError(
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                f"from position 0. However, got {int(off[0])}"
            )
        if include_last_offset:
            off = off[:-1]
        nbags = off.shape[0]
        flat = idx
        bag_ids = xp.searchsorted(off, xp.arange(idx.shape[0]), side="right") - 1
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {idx.ndim}")
    valid = xp.ones(flat.shape, dtype=bool)
    if padding_idx is not None:
        n = weight.shape[0]
        padding_idx = padding_idx + n if padding_idx < 0 else padding_idx
        valid = flat != padding_idx
    rows = embedding(TensorBase._make(flat), weight, padding_idx, max_norm, norm_type,
                     scale_grad_by_freq)
    if mode == "max":
        # a (bags, longest bag) matrix of row numbers (and its mask) over the valid entries
        counts = xp.bincount(bag_ids[valid], minlength=nbags)
        length = int(counts.max()) if counts.size else 0
        starts = xp.zeros(nbags + 1, dtype=xp.int64)
        starts[1:] = xp.cumsum(xp.bincount(bag_ids, minlength=nbags))
        before = xp.cumsum(valid) - valid  # valid entries before each position
        slot = before - before[starts[bag_ids]]  # rank among its bag's valid entries
        order = xp.nonzero(valid)[0]
        mat = xp.zeros((nbags, max(length, 1)), dtype=xp.int64)
        mask = xp.zeros((nbags, max(length, 1)), dtype=bool)
        mat[bag_ids[order], slot[order]] = order
        mask[bag_ids[order], slot[order]] = True
        from .indexing import getitem

        return _BagMax.apply(getitem(rows, TensorBase._make(mat)), mask)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1)
    if padding_idx is not None:
        rows = _MulMask.apply(rows, valid.reshape(-1, 1).astype(rows._data.dtype))
    out = EmbeddingBackward.apply(rows, bag_ids, nbags)
    if mode == "mean":
        counts = xp.bincount(bag_ids[valid], minlength=nbags).astype(out._data.dtype)
        out = _MulMask.apply(out, (1 / xp.maximum(counts, 1)).reshape(-1, 1).astype(out._data.dtype))
    return out


def one_hot(tensor: TensorBase, num_classes: int = -1) -> TensorBase:
    """int64 one-hot encoding: shape (*, num_classes); ``num_classes=-1`` infers max + 1."""
    if not isinstance(tensor, TensorBase) or tensor.dtype != _dtype.int64:
        got = tensor.dtype if isinstance(tensor, TensorBase) else type(tensor).__name__
        raise RuntimeError(
            f"one_hot is only applicable to index tensor of type LongTensor. (got {got}; "
            "convert with labels.long())"
        )
    arr = tensor._data
    xp = _backend.xp_of(arr)
    if num_classes == -1:
        if arr.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(arr.max()) + 1
    if arr.size:
        if int(arr.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(arr.max()) >= num_classes:
            raise RuntimeError(
                f"Class values must be smaller than num_classes. (max class {int(arr.max())}, "
                f"num_classes={num_classes})"
            )
    out = (arr[..., None] == xp.arange(num_classes)).astype(xp.int64)
    return TensorBase._make(out)


# ---------------------------------------------------------------------------------------------
# padding


class ConstantPad(Op):
    """out = x padded with ``value`` (negative pads crop)
    grad_x = grad with the padding removed (a constant pad by the negated amounts)"""

    node_name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, pads: tuple, value: float) -> Any:
        xp = _xp(ctx, x)
        ctx.pads = pads
        widths = [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
        crop = tuple(slice(max(-lo, 0), x.shape[i] - max(-hi, 0)) for i, (lo, hi) in enumerate(pads))
        x = x[crop]
        if any(w != (0, 0) for w in widths):
            out = xp.full(tuple(s + lo + hi for s, (lo, hi) in zip(x.shape, widths)), value,
                          dtype=x.dtype)
            out[tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape, widths))] = x
            return out
        return x.copy()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        neg = tuple((-lo, -hi) for lo, hi in ctx.pads)
        return ctx.call(ConstantPad, grad, neg, 0.0), None, None


class GatherAlong(Op):
    """out = take(x, idx, axis)          grad_x = scatter-add of grad along axis (one GEMM with
    the one-hot matrix of idx)"""

    node_name = "ReflectionPadBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, idx: Any, axis: int) -> Any:
        ctx.save_for_backward(idx)
        ctx.axis, ctx.n = axis, x.shape[axis]
        return _xp(ctx, x).take(x, idx, axis=axis)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (idx,) = ctx.saved
        return ctx.call(ScatterAlong, grad, idx, ctx.axis, ctx.n), None, None


class ScatterAlong(Op):
    """out[..., j, ...] = sum over k with idx[k] = j of x[..., k, ...] (along axis)
    grad_x = take(grad, idx, axis)"""

    @staticmethod
    def forward(ctx: Any, x: Any, idx: Any, axis: int, n: int) -> Any:
        xp = _xp(ctx, x)
        ctx.save_for_backward(idx)
        ctx.axis = axis
        onehot = (idx[:, None] == xp.arange(n)).astype(x.dtype)  # (len(idx), n)
        moved = xp.moveaxis(x, axis, -1)
        return xp.moveaxis(moved @ onehot, -1, axis)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (idx,) = ctx.saved
        return ctx.call(GatherAlong, grad, idx, ctx.axis), None, None, None


def _pad_index(xp: Any, n: int, lo: int, hi: int, mode: str) -> Any:
    pos = xp.arange(-lo, n + hi)
    if mode == "reflect":
        period = 2 * (n - 1)
        pos = xp.abs(pos) % period if period else pos * 0
        return xp.where(pos >= n, period - pos, pos)
    if mode == "replicate":
        return xp.clip(pos, 0, n - 1)
    return pos % n  # circular


def pad(input: TensorBase, pad: Any, mode: str = "constant", value: float | None = None) -> TensorBase:
    """Pad the last ``len(pad) // 2`` dims; ``pad = (left_last, right_last, left_prev, ...)``.

    Modes: ``constant`` (with ``value``), ``reflect``, ``replicate``, ``circular``.
    """
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError(
            f"Padding length must be divisible by 2 (got pad={pad}): give (left, right) per dim, "
            "starting from the last dim"
        )
    k = len(pad) // 2
    if k > input.ndim:
        raise RuntimeError(
            f"Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(pad)} and input of dimension {input.ndim}"
        )
    pads = [(0, 0)] * input.ndim
    for i in range(k):
        pads[input.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if mode == "constant":
        for d, (lo, hi) in enumerate(pads):
            if input.shape[d] + lo + hi < 0:
                raise RuntimeError(
                    f"The input size {input.shape[d]}, plus negative padding {lo} and {hi} "
                    f"resulted in a negative output size, which is invalid. Check dimension {d} "
                    "of your input."
                )
        return ConstantPad.apply(input, tuple(pads), 0.0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(
            f"Unrecognised padding mode {mode} (choose constant, reflect, replicate or circular)"
        )
    if value is not None and value != 0:
        raise ValueError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if k > 3 or input.ndim < k + 1:
        raise NotImplementedError(
            f"Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now "
            f"(got input of shape {tuple(input.shape)} and pad={pad}; mode={mode!r} pads at most "
            "the last 3 dims and needs one more leading dim)"
        )
    xp = _backend.xp_of(input._data)
    out = input
    for d in range(input.ndim - k, input.ndim):
        lo, hi = pads[d]
        n = input.shape[d]
        if lo == 0 and hi == 0:
            continue
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({lo}, {hi}) at dimension {d} of input "
                f"{list(input.shape)}"
            )
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError(
                "Padding value causes wrapping around more than once. (circular padding "
                f"({lo}, {hi}) at dimension {d} of input {list(input.shape)})"
            )
        if n == 0:
            raise RuntimeError(
                f"{mode} padding of an empty dimension {d} (input {list(input.shape)})"
            )
        out = GatherAlong.apply(out, _pad_index(xp, n, lo, hi, mode), d)
    return out


# ---------------------------------------------------------------------------------------------
# normalisation and distances (composites)


def normalize(input: TensorBase, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: TensorBase | None = None) -> TensorBase:
    """x / max(||x||_p, eps) along ``dim``."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps)
    res = input / denom
    if out is not None:
        with grad_mode.no_grad():
            out.copy_(res)
        return out
    return res


def cosine_similarity(x1: TensorBase, x2: TensorBase, dim: int = 1, eps: float = 1e-8) -> TensorBase:
    """sum(x1/||x1|| * x2/||x2||) along ``dim`` (each norm clamped to at least ``eps``)."""
    n1 = x1.norm(2, dim, keepdim=True).clamp_min(eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: TensorBase, x2: TensorBase, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> TensorBase:
    """||x1 - x2 + eps||_p along the last dim."""
    dim = max(x1.ndim, x2.ndim) - 1
    return (x1 - x2 + eps).norm(p, dim if dim >= 0 else None, keepdim=keepdim)


def pdist(input: TensorBase, p: float = 2) -> TensorBase:
    """||x_i - x_j||_p for every row pair i < j of a 2-D input (the condensed upper triangle)."""
    if input.ndim != 2:
        raise RuntimeError(
            f"pdist only supports 2D tensors, got: {input.ndim}D (shape {tuple(input.shape)})"
        )
    xp = _backend.xp_of(input._data)
    i, j = xp.triu_indices(input.shape[0], 1)
    from .indexing import getitem

    diff = getitem(input, TensorBase._make(i)) - getitem(input, TensorBase._make(j))
    return diff.norm(p, 1)


def channel_shuffle(input: TensorBase, groups: int) -> TensorBase:
    """Split the channels (dim 1) into ``groups`` and interleave them (ShuffleNet)."""
    c = input.shape[1]
    if groups <= 0 or c % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {c} channels and {groups} "
            "groups."
        )
    shape = tuple(input.shape)
    x = input.reshape(shape[0], groups, c // groups, *shape[2:])
    return x.transpose(1, 2).reshape(shape)


def _wrap_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n
