"""The Tensor methods that are plain calls into an op function, one per method.

``x.sum(1)`` is ``ember.ops.reduction.sum(x, 1)``: each method below says which module holds its
op, where the forward and backward sit side by side. ``Tensor`` inherits these methods; its own
file (``_tensor.py``) holds the tensor's identity, conversions and autograd fields.
"""

from __future__ import annotations

from typing import Any

from . import _functions as _fn
from .ops import elementwise as _ew
from .ops import extra as _extra
from .ops import indexing as _ix
from .ops import linalg as _la
from .ops import reduction as _red
from .ops import shape as _sh


class TensorMethods:
    """Math, shape and indexing methods of ``Tensor`` (see each op's module for the math)."""

    __slots__ = ()

    # -- elementwise: ember/ops/elementwise.py -----------------------------------------------

    def add(self, *args: Any, **kwargs: Any) -> Any:
        """``add(b, *, alpha=1, out=None)``: see ``ember.ops.elementwise.add``."""
        return _ew.add(self, *args, **kwargs)

    def sub(self, *args: Any, **kwargs: Any) -> Any:
        """``sub(b, *, alpha=1, out=None)``: see ``ember.ops.elementwise.sub``."""
        return _ew.sub(self, *args, **kwargs)

    def mul(self, *args: Any, **kwargs: Any) -> Any:
        """``mul(b, *, out=None)``: see ``ember.ops.elementwise.mul``."""
        return _ew.mul(self, *args, **kwargs)

    def div(self, *args: Any, **kwargs: Any) -> Any:
        """``div(b, *, rounding_mode=None, out=None)``: see ``ember.ops.elementwise.div``."""
        return _ew.div(self, *args, **kwargs)

    def true_divide(self, *args: Any, **kwargs: Any) -> Any:
        """``true_divide(b, *, rounding_mode=None, out=None)``: see ``ember.ops.elementwise.div``."""
        return _ew.div(self, *args, **kwargs)

    def floor_divide(self, *args: Any, **kwargs: Any) -> Any:
        """``floor_divide(b)``: see ``ember.ops.elementwise.floor_divide``."""
        return _ew.floor_divide(self, *args, **kwargs)

    def remainder(self, *args: Any, **kwargs: Any) -> Any:
        """``remainder(b)``: see ``ember.ops.elementwise.remainder``."""
        return _ew.remainder(self, *args, **kwargs)

    def fmod(self, *args: Any, **kwargs: Any) -> Any:
        """``fmod(b)``: see ``ember.ops.elementwise.fmod``."""
        return _ew.fmod(self, *args, **kwargs)

    def pow(self, *args: Any, **kwargs: Any) -> Any:
        """``pow(b)``: see ``ember.ops.elementwise.pow``."""
        return _ew.pow(self, *args, **kwargs)

    def neg(self, *args: Any, **kwargs: Any) -> Any:
        """``neg()``: see ``ember.ops.elementwise.neg``."""
        return _ew.neg(self, *args, **kwargs)

    def negative(self, *args: Any, **kwargs: Any) -> Any:
        """``negative()``: see ``ember.ops.elementwise.neg``."""
        return _ew.neg(self, *args, **kwargs)

    def abs(self, *args: Any, **kwargs: Any) -> Any:
        """``abs()``: see ``ember.ops.elementwise.abs``."""
        return _ew.abs(self, *args, **kwargs)

    def absolute(self, *args: Any, **kwargs: Any) -> Any:
        """``absolute()``: see ``ember.ops.elementwise.abs``."""
        return _ew.abs(self, *args, **kwargs)

    def exp(self, *args: Any, **kwargs: Any) -> Any:
        """``exp(*, out=None)``: see ``ember.ops.elementwise.exp``."""
        return _ew.exp(self, *args, **kwargs)

    def exp2(self, *args: Any, **kwargs: Any) -> Any:
        """``exp2(*, out=None)``: see ``ember.ops.elementwise.exp2``."""
        return _ew.exp2(self, *args, **kwargs)

    def log(self, *args: Any, **kwargs: Any) -> Any:
        """``log(*, out=None)``: see ``ember.ops.elementwise.log``."""
        return _ew.log(self, *args, **kwargs)

    def log1p(self, *args: Any, **kwargs: Any) -> Any:
        """``log1p(*, out=None)``: see ``ember.ops.elementwise.log1p``."""
        return _ew.log1p(self, *args, **kwargs)

    def expm1(self, *args: Any, **kwargs: Any) -> Any:
        """``expm1(*, out=None)``: see ``ember.ops.elementwise.expm1``."""
        return _ew.expm1(self, *args, **kwargs)

    def log2(self, *args: Any, **kwargs: Any) -> Any:
        """``log2(*, out=None)``: see ``ember.ops.elementwise.log2``."""
        return _ew.log2(self, *args, **kwargs)

    def log10(self, *args: Any, **kwargs: Any) -> Any:
        """``log10(*, out=None)``: see ``ember.ops.elementwise.log10``."""
        return _ew.log10(self, *args, **kwargs)

    def sqrt(self, *args: Any, **kwargs: Any) -> Any:
        """``sqrt(*, out=None)``: see ``ember.ops.elementwise.sqrt``."""
        return _ew.sqrt(self, *args, **kwargs)

    def rsqrt(self, *args: Any, **kwargs: Any) -> Any:
        """``rsqrt(*, out=None)``: see ``ember.ops.elementwise.rsqrt``."""
        return _ew.rsqrt(self, *args, **kwargs)

    def sin(self, *args: Any, **kwargs: Any) -> Any:
        """``sin(*, out=None)``: see ``ember.ops.elementwise.sin``."""
        return _ew.sin(self, *args, **kwargs)

    def cos(self, *args: Any, **kwargs: Any) -> Any:
        """``cos(*, out=None)``: see ``ember.ops.elementwise.cos``."""
        return _ew.cos(self, *args, **kwargs)

    def tan(self, *args: Any, **kwargs: Any) -> Any:
        """``tan(*, out=None)``: see ``ember.ops.elementwise.tan``."""
        return _ew.tan(self, *args, **kwargs)

    def asin(self, *args: Any, **kwargs: Any) -> Any:
        """``asin(*, out=None)``: see ``ember.ops.elementwise.asin``."""
        return _ew.asin(self, *args, **kwargs)

    def acos(self, *args: Any, **kwargs: Any) -> Any:
        """``acos(*, out=None)``: see ``ember.ops.elementwise.acos``."""
        return _ew.acos(self, *args, **kwargs)

    def atan(self, *args: Any, **kwargs: Any) -> Any:
        """``atan(*, out=None)``: see ``ember.ops.elementwise.atan``."""
        return _ew.atan(self, *args, **kwargs)

    def atan2(self, *args: Any, **kwargs: Any) -> Any:
        """``atan2(b)``: see ``ember.ops.elementwise.atan2``."""
        return _ew.atan2(self, *args, **kwargs)

    def arcsin(self, *args: Any, **kwargs: Any) -> Any:
        """``arcsin(*, out=None)``: see ``ember.ops.elementwise.asin``."""
        return _ew.asin(self, *args, **kwargs)

    def arccos(self, *args: Any, **kwargs: Any) -> Any:
        """``arccos(*, out=None)``: see ``ember.ops.elementwise.acos``."""
        return _ew.acos(self, *args, **kwargs)

    def arctan(self, *args: Any, **kwargs: Any) -> Any:
        """``arctan(*, out=None)``: see ``ember.ops.elementwise.atan``."""
        return _ew.atan(self, *args, **kwargs)

    def arctan2(self, *args: Any, **kwargs: Any) -> Any:
        """``arctan2(b)``: see ``ember.ops.elementwise.atan2``."""
        return _ew.atan2(self, *args, **kwargs)

    def sinh(self, *args: Any, **kwargs: Any) -> Any:
        """``sinh(*, out=None)``: see ``ember.ops.elementwise.sinh``."""
        return _ew.sinh(self, *args, **kwargs)

    def cosh(self, *args: Any, **kwargs: Any) -> Any:
        """``cosh(*, out=None)``: see ``ember.ops.elementwise.cosh``."""
        return _ew.cosh(self, *args, **kwargs)

    def tanh(self, *args: Any, **kwargs: Any) -> Any:
        """``tanh(*, out=None)``: see ``ember.ops.elementwise.tanh``."""
        return _ew.tanh(self, *args, **kwargs)

    def asinh(self, *args: Any, **kwargs: Any) -> Any:
        """``asinh(*, out=None)``: see ``ember.ops.elementwise.asinh``."""
        return _ew.asinh(self, *args, **kwargs)

    def acosh(self, *args: Any, **kwargs: Any) -> Any:
        """``acosh(*, out=None)``: see ``ember.ops.elementwise.acosh``."""
        return _ew.acosh(self, *args, **kwargs)

    def atanh(self, *args: Any, **kwargs: Any) -> Any:
        """``atanh(*, out=None)``: see ``ember.ops.elementwise.atanh``."""
        return _ew.atanh(self, *args, **kwargs)

    def sigmoid(self, *args: Any, **kwargs: Any) -> Any:
        """``sigmoid(*, out=None)``: see ``ember.ops.elementwise.sigmoid``."""
        return _ew.sigmoid(self, *args, **kwargs)

    def relu(self, *args: Any, **kwargs: Any) -> Any:
        """``relu()``: see ``ember.ops.elementwise.relu``."""
        return _ew.relu(self, *args, **kwargs)

    def erf(self, *args: Any, **kwargs: Any) -> Any:
        """``erf(*, out=None)``: see ``ember.ops.elementwise.erf``."""
        return _ew.erf(self, *args, **kwargs)

    def erfc(self, *args: Any, **kwargs: Any) -> Any:
        """``erfc(*, out=None)``: see ``ember.ops.elementwise.erfc``."""
        return _ew.erfc(self, *args, **kwargs)

    def erfinv(self, *args: Any, **kwargs: Any) -> Any:
        """``erfinv(*, out=None)``: see ``ember.ops.elementwise.erfinv``."""
        return _ew.erfinv(self, *args, **kwargs)

    def reciprocal(self, *args: Any, **kwargs: Any) -> Any:
        """``reciprocal()``: see ``ember.ops.elementwise.reciprocal``."""
        return _ew.reciprocal(self, *args, **kwargs)

    def sign(self, *args: Any, **kwargs: Any) -> Any:
        """``sign()``: see ``ember.ops.elementwise.sign``."""
        return _ew.sign(self, *args, **kwargs)

    def sgn(self, *args: Any, **kwargs: Any) -> Any:
        """``sgn()``: see ``ember.ops.elementwise.sgn``."""
        return _ew.sgn(self, *args, **kwargs)

    def signbit(self, *args: Any, **kwargs: Any) -> Any:
        """``signbit()``: see ``ember.ops.elementwise.signbit``."""
        return _ew.signbit(self, *args, **kwargs)

    def floor(self, *args: Any, **kwargs: Any) -> Any:
        """``floor()``: see ``ember.ops.elementwise.floor``."""
        return _ew.floor(self, *args, **kwargs)

    def ceil(self, *args: Any, **kwargs: Any) -> Any:
        """``ceil()``: see ``ember.ops.elementwise.ceil``."""
        return _ew.ceil(self, *args, **kwargs)

    def round(self, *args: Any, **kwargs: Any) -> Any:
        """``round(*, decimals=0)``: see ``ember.ops.elementwise.round``."""
        return _ew.round(self, *args, **kwargs)

    def trunc(self, *args: Any, **kwargs: Any) -> Any:
        """``trunc()``: see ``ember.ops.elementwise.trunc``."""
        return _ew.trunc(self, *args, **kwargs)

    def fix(self, *args: Any, **kwargs: Any) -> Any:
        """``fix()``: see ``ember.ops.elementwise.trunc``."""
        return _ew.trunc(self, *args, **kwargs)

    def frac(self, *args: Any, **kwargs: Any) -> Any:
        """``frac(*, out=None)``: see ``ember.ops.elementwise.frac``."""
        return _ew.frac(self, *args, **kwargs)

    def clamp(self, *args: Any, **kwargs: Any) -> Any:
        """``clamp(min=None, max=None)``: see ``ember.ops.elementwise.clamp``."""
        return _ew.clamp(self, *args, **kwargs)

    def clip(self, *args: Any, **kwargs: Any) -> Any:
        """``clip(min=None, max=None)``: see ``ember.ops.elementwise.clamp``."""
        return _ew.clamp(self, *args, **kwargs)

    def clamp_min(self, *args: Any, **kwargs: Any) -> Any:
        """``clamp_min(min)``: see ``ember.ops.elementwise.clamp_min``."""
        return _ew.clamp_min(self, *args, **kwargs)

    def clamp_max(self, *args: Any, **kwargs: Any) -> Any:
        """``clamp_max(max)``: see ``ember.ops.elementwise.clamp_max``."""
        return _ew.clamp_max(self, *args, **kwargs)

    def maximum(self, *args: Any, **kwargs: Any) -> Any:
        """``maximum(b)``: see ``ember.ops.elementwise.maximum``."""
        return _ew.maximum(self, *args, **kwargs)

    def minimum(self, *args: Any, **kwargs: Any) -> Any:
        """``minimum(b)``: see ``ember.ops.elementwise.minimum``."""
        return _ew.minimum(self, *args, **kwargs)

    def fmax(self, *args: Any, **kwargs: Any) -> Any:
        """``fmax(b)``: see ``ember.ops.elementwise.fmax``."""
        return _ew.fmax(self, *args, **kwargs)

    def fmin(self, *args: Any, **kwargs: Any) -> Any:
        """``fmin(b)``: see ``ember.ops.elementwise.fmin``."""
        return _ew.fmin(self, *args, **kwargs)

    def lerp(self, *args: Any, **kwargs: Any) -> Any:
        """``lerp(end, weight)``: see ``ember.ops.elementwise.lerp``."""
        return _ew.lerp(self, *args, **kwargs)

    def square(self, *args: Any, **kwargs: Any) -> Any:
        """``square()``: see ``ember.ops.elementwise.square``."""
        return _ew.square(self, *args, **kwargs)

    def logaddexp(self, *args: Any, **kwargs: Any) -> Any:
        """``logaddexp(b)``: see ``ember.ops.elementwise.logaddexp``."""
        return _ew.logaddexp(self, *args, **kwargs)

    def logaddexp2(self, *args: Any, **kwargs: Any) -> Any:
        """``logaddexp2(b)``: see ``ember.ops.elementwise.logaddexp2``."""
        return _ew.logaddexp2(self, *args, **kwargs)

    def nan_to_num(self, *args: Any, **kwargs: Any) -> Any:
        """``nan_to_num(nan=0.0, posinf=None, neginf=None)``: see ``ember.ops.elementwise.nan_to_num``."""
        return _ew.nan_to_num(self, *args, **kwargs)

    def isnan(self, *args: Any, **kwargs: Any) -> Any:
        """``isnan()``: see ``ember.ops.elementwise.isnan``."""
        return _ew.isnan(self, *args, **kwargs)

    def isinf(self, *args: Any, **kwargs: Any) -> Any:
        """``isinf()``: see ``ember.ops.elementwise.isinf``."""
        return _ew.isinf(self, *args, **kwargs)

    def isposinf(self, *args: Any, **kwargs: Any) -> Any:
        """``isposinf()``: see ``ember.ops.elementwise.isposinf``."""
        return _ew.isposinf(self, *args, **kwargs)

    def isneginf(self, *args: Any, **kwargs: Any) -> Any:
        """``isneginf()``: see ``ember.ops.elementwise.isneginf``."""
        return _ew.isneginf(self, *args, **kwargs)

    def isfinite(self, *args: Any, **kwargs: Any) -> Any:
        """``isfinite()``: see ``ember.ops.elementwise.isfinite``."""
        return _ew.isfinite(self, *args, **kwargs)

    def isreal(self, *args: Any, **kwargs: Any) -> Any:
        """``isreal()``: see ``ember.ops.elementwise.isreal``."""
        return _ew.isreal(self, *args, **kwargs)

    def eq(self, *args: Any, **kwargs: Any) -> Any:
        """``eq(b, *, out=None)``: see ``ember.ops.elementwise.eq``."""
        return _ew.eq(self, *args, **kwargs)

    def ne(self, *args: Any, **kwargs: Any) -> Any:
        """``ne(b, *, out=None)``: see ``ember.ops.elementwise.ne``."""
        return _ew.ne(self, *args, **kwargs)

    def lt(self, *args: Any, **kwargs: Any) -> Any:
        """``lt(b, *, out=None)``: see ``ember.ops.elementwise.lt``."""
        return _ew.lt(self, *args, **kwargs)

    def le(self, *args: Any, **kwargs: Any) -> Any:
        """``le(b, *, out=None)``: see ``ember.ops.elementwise.le``."""
        return _ew.le(self, *args, **kwargs)

    def gt(self, *args: Any, **kwargs: Any) -> Any:
        """``gt(b, *, out=None)``: see ``ember.ops.elementwise.gt``."""
        return _ew.gt(self, *args, **kwargs)

    def ge(self, *args: Any, **kwargs: Any) -> Any:
        """``ge(b, *, out=None)``: see ``ember.ops.elementwise.ge``."""
        return _ew.ge(self, *args, **kwargs)

    def greater(self, *args: Any, **kwargs: Any) -> Any:
        """``greater(b, *, out=None)``: see ``ember.ops.elementwise.gt``."""
        return _ew.gt(self, *args, **kwargs)

    def less(self, *args: Any, **kwargs: Any) -> Any:
        """``less(b, *, out=None)``: see ``ember.ops.elementwise.lt``."""
        return _ew.lt(self, *args, **kwargs)

    def greater_equal(self, *args: Any, **kwargs: Any) -> Any:
        """``greater_equal(b, *, out=None)``: see ``ember.ops.elementwise.ge``."""
        return _ew.ge(self, *args, **kwargs)

    def less_equal(self, *args: Any, **kwargs: Any) -> Any:
        """``less_equal(b, *, out=None)``: see ``ember.ops.elementwise.le``."""
        return _ew.le(self, *args, **kwargs)

    def not_equal(self, *args: Any, **kwargs: Any) -> Any:
        """``not_equal(b, *, out=None)``: see ``ember.ops.elementwise.ne``."""
        return _ew.ne(self, *args, **kwargs)

    def equal(self, *args: Any, **kwargs: Any) -> Any:
        """``equal(b)``: see ``ember.ops.elementwise.equal``."""
        return _ew.equal(self, *args, **kwargs)

    def allclose(self, *args: Any, **kwargs: Any) -> Any:
        """``allclose(b, rtol=1e-05, atol=1e-08, equal_nan=False)``: see ``ember.ops.elementwise.allclose``."""
        return _ew.allclose(self, *args, **kwargs)

    def isclose(self, *args: Any, **kwargs: Any) -> Any:
        """``isclose(b, rtol=1e-05, atol=1e-08, equal_nan=False)``: see ``ember.ops.elementwise.isclose``."""
        return _ew.isclose(self, *args, **kwargs)

    def logical_and(self, *args: Any, **kwargs: Any) -> Any:
        """``logical_and(b)``: see ``ember.ops.elementwise.logical_and``."""
        return _ew.logical_and(self, *args, **kwargs)

    def logical_or(self, *args: Any, **kwargs: Any) -> Any:
        """``logical_or(b)``: see ``ember.ops.elementwise.logical_or``."""
        return _ew.logical_or(self, *args, **kwargs)

    def logical_xor(self, *args: Any, **kwargs: Any) -> Any:
        """``logical_xor(b)``: see ``ember.ops.elementwise.logical_xor``."""
        return _ew.logical_xor(self, *args, **kwargs)

    def logical_not(self, *args: Any, **kwargs: Any) -> Any:
        """``logical_not()``: see ``ember.ops.elementwise.logical_not``."""
        return _ew.logical_not(self, *args, **kwargs)

    def bitwise_and(self, *args: Any, **kwargs: Any) -> Any:
        """``bitwise_and(b)``: see ``ember.ops.elementwise.bitwise_and``."""
        return _ew.bitwise_and(self, *args, **kwargs)

    def bitwise_or(self, *args: Any, **kwargs: Any) -> Any:
        """``bitwise_or(b)``: see ``ember.ops.elementwise.bitwise_or``."""
        return _ew.bitwise_or(self, *args, **kwargs)

    def bitwise_xor(self, *args: Any, **kwargs: Any) -> Any:
        """``bitwise_xor(b)``: see ``ember.ops.elementwise.bitwise_xor``."""
        return _ew.bitwise_xor(self, *args, **kwargs)

    def bitwise_not(self, *args: Any, **kwargs: Any) -> Any:
        """``bitwise_not()``: see ``ember.ops.elementwise.bitwise_not``."""
        return _ew.bitwise_not(self, *args, **kwargs)

    def addcmul(self, *args: Any, **kwargs: Any) -> Any:
        """``addcmul(t1, t2, *, value=1)``: see ``ember.ops.elementwise.addcmul``."""
        return _ew.addcmul(self, *args, **kwargs)

    def addcdiv(self, *args: Any, **kwargs: Any) -> Any:
        """``addcdiv(t1, t2, *, value=1)``: see ``ember.ops.elementwise.addcdiv``."""
        return _ew.addcdiv(self, *args, **kwargs)

    def hypot(self, *args: Any, **kwargs: Any) -> Any:
        """``hypot(b)``: see ``ember.ops.elementwise.hypot``."""
        return _ew.hypot(self, *args, **kwargs)

    def xlogy(self, *args: Any, **kwargs: Any) -> Any:
        """``xlogy(b)``: see ``ember.ops.elementwise.xlogy``."""
        return _ew.xlogy(self, *args, **kwargs)

    def copysign(self, *args: Any, **kwargs: Any) -> Any:
        """``copysign(b)``: see ``ember.ops.elementwise.copysign``."""
        return _ew.copysign(self, *args, **kwargs)

    def heaviside(self, *args: Any, **kwargs: Any) -> Any:
        """``heaviside(values)``: see ``ember.ops.elementwise.heaviside``."""
        return _ew.heaviside(self, *args, **kwargs)

    def deg2rad(self, *args: Any, **kwargs: Any) -> Any:
        """``deg2rad()``: see ``ember.ops.elementwise.deg2rad``."""
        return _ew.deg2rad(self, *args, **kwargs)

    def rad2deg(self, *args: Any, **kwargs: Any) -> Any:
        """``rad2deg()``: see ``ember.ops.elementwise.rad2deg``."""
        return _ew.rad2deg(self, *args, **kwargs)

    def logit(self, *args: Any, **kwargs: Any) -> Any:
        """``logit(eps=None)``: see ``ember.ops.elementwise.logit``."""
        return _ew.logit(self, *args, **kwargs)

    def sinc(self, *args: Any, **kwargs: Any) -> Any:
        """``sinc()``: see ``ember.ops.elementwise.sinc``."""
        return _ew.sinc(self, *args, **kwargs)

    def float_power(self, *args: Any, **kwargs: Any) -> Any:
        """``float_power(b)``: see ``ember.ops.elementwise.float_power``."""
        return _ew.float_power(self, *args, **kwargs)

    def positive(self, *args: Any, **kwargs: Any) -> Any:
        """``positive()``: see ``ember.ops.elementwise.positive``."""
        return _ew.positive(self, *args, **kwargs)

    def subtract(self, *args: Any, **kwargs: Any) -> Any:
        """``subtract(b, *, alpha=1, out=None)``: see ``ember.ops.elementwise.sub``."""
        return _ew.sub(self, *args, **kwargs)

    def multiply(self, *args: Any, **kwargs: Any) -> Any:
        """``multiply(b, *, out=None)``: see ``ember.ops.elementwise.mul``."""
        return _ew.mul(self, *args, **kwargs)

    def divide(self, *args: Any, **kwargs: Any) -> Any:
        """``divide(b, *, rounding_mode=None, out=None)``: see ``ember.ops.elementwise.div``."""
        return _ew.div(self, *args, **kwargs)

    def mvlgamma(self, *args: Any, **kwargs: Any) -> Any:
        """``mvlgamma(p)``: see ``ember.ops.extra.mvlgamma``."""
        return _extra.mvlgamma(self, *args, **kwargs)

    def lgamma(self, *args: Any, **kwargs: Any) -> Any:
        """``lgamma()``: see ``ember.ops.extra.lgamma``."""
        return _extra.lgamma(self, *args, **kwargs)

    def digamma(self, *args: Any, **kwargs: Any) -> Any:
        """``digamma()``: see ``ember.ops.extra.digamma``."""
        return _extra.digamma(self, *args, **kwargs)

    # -- reductions: ember/ops/reduction.py --------------------------------------------------

    def sum(self, *args: Any, **kwargs: Any) -> Any:
        """``sum(...)``: see ``ember.ops.reduction.sum``."""
        return _red.sum(self, *args, **kwargs)

    def mean(self, *args: Any, **kwargs: Any) -> Any:
        """``mean(...)``: see ``ember.ops.reduction.mean``."""
        return _red.mean(self, *args, **kwargs)

    def nansum(self, *args: Any, **kwargs: Any) -> Any:
        """``nansum(...)``: see ``ember.ops.reduction.nansum``."""
        return _red.nansum(self, *args, **kwargs)

    def nanmean(self, *args: Any, **kwargs: Any) -> Any:
        """``nanmean(...)``: see ``ember.ops.reduction.nanmean``."""
        return _red.nanmean(self, *args, **kwargs)

    def prod(self, *args: Any, **kwargs: Any) -> Any:
        """``prod(...)``: see ``ember.ops.reduction.prod``."""
        return _red.prod(self, *args, **kwargs)

    def max(self, *args: Any, **kwargs: Any) -> Any:
        """``max(...)``: see ``ember.ops.reduction.max``."""
        return _red.max(self, *args, **kwargs)

    def min(self, *args: Any, **kwargs: Any) -> Any:
        """``min(...)``: see ``ember.ops.reduction.min``."""
        return _red.min(self, *args, **kwargs)

    def amax(self, *args: Any, **kwargs: Any) -> Any:
        """``amax(dim=(), keepdim=False, *, axis=None, keepdims=None)``: see ``ember.ops.reduction.amax``."""
        return _red.amax(self, *args, **kwargs)

    def amin(self, *args: Any, **kwargs: Any) -> Any:
        """``amin(dim=(), keepdim=False, *, axis=None, keepdims=None)``: see ``ember.ops.reduction.amin``."""
        return _red.amin(self, *args, **kwargs)

    def aminmax(self, *args: Any, **kwargs: Any) -> Any:
        """``aminmax(*, dim=None, keepdim=False, axis=None, keepdims=None)``: see ``ember.ops.reduction.aminmax``."""
        return _red.aminmax(self, *args, **kwargs)

    def argmax(self, *args: Any, **kwargs: Any) -> Any:
        """``argmax(dim=None, keepdim=False, *, axis=None, keepdims=None)``: see ``ember.ops.reduction.argmax``."""
        return _red.argmax(self, *args, **kwargs)

    def argmin(self, *args: Any, **kwargs: Any) -> Any:
        """``argmin(dim=None, keepdim=False, *, axis=None, keepdims=None)``: see ``ember.ops.reduction.argmin``."""
        return _red.argmin(self, *args, **kwargs)

    def var(self, *args: Any, **kwargs: Any) -> Any:
        """``var(...)``: see ``ember.ops.reduction.var``."""
        return _red.var(self, *args, **kwargs)

    def std(self, *args: Any, **kwargs: Any) -> Any:
        """``std(...)``: see ``ember.ops.reduction.std``."""
        return _red.std(self, *args, **kwargs)

    def norm(self, *args: Any, **kwargs: Any) -> Any:
        """``norm(p='fro', dim=None, keepdim=False, out=None, dtype=None)``: see ``ember.ops.reduction.norm``."""
        return _red.norm(self, *args, **kwargs)

    def logsumexp(self, *args: Any, **kwargs: Any) -> Any:
        """``logsumexp(dim, keepdim=False, *, axis=None, keepdims=None)``: see ``ember.ops.reduction.logsumexp``."""
        return _red.logsumexp(self, *args, **kwargs)

    def cumsum(self, *args: Any, **kwargs: Any) -> Any:
        """``cumsum(dim=None, *, dtype=None, axis=None)``: see ``ember.ops.reduction.cumsum``."""
        return _red.cumsum(self, *args, **kwargs)

    def cumprod(self, *args: Any, **kwargs: Any) -> Any:
        """``cumprod(dim=None, *, dtype=None, axis=None)``: see ``ember.ops.reduction.cumprod``."""
        return _red.cumprod(self, *args, **kwargs)

    def cummax(self, *args: Any, **kwargs: Any) -> Any:
        """``cummax(dim=None, *, axis=None)``: see ``ember.ops.reduction.cummax``."""
        return _red.cummax(self, *args, **kwargs)

    def cummin(self, *args: Any, **kwargs: Any) -> Any:
        """``cummin(dim=None, *, axis=None)``: see ``ember.ops.reduction.cummin``."""
        return _red.cummin(self, *args, **kwargs)

    def all(self, *args: Any, **kwargs: Any) -> Any:
        """``all(dim=None, keepdim=False, *, axis=None, keepdims=None)``: see ``ember.ops.reduction.all``."""
        return _red.all(self, *args, **kwargs)

    def any(self, *args: Any, **kwargs: Any) -> Any:
        """``any(dim=None, keepdim=False, *, axis=None, keepdims=None)``: see ``ember.ops.reduction.any``."""
        return _red.any(self, *args, **kwargs)

    def count_nonzero(self, *args: Any, **kwargs: Any) -> Any:
        """``count_nonzero(dim=None, *, axis=None)``: see ``ember.ops.reduction.count_nonzero``."""
        return _red.count_nonzero(self, *args, **kwargs)

    def median(self, *args: Any, **kwargs: Any) -> Any:
        """``median(dim=None, keepdim=False, *, axis=None, keepdims=None)``: see ``ember.ops.reduction.median``."""
        return _red.median(self, *args, **kwargs)

    def nanmedian(self, *args: Any, **kwargs: Any) -> Any:
        """``nanmedian(dim=None, keepdim=False, *, axis=None, keepdims=None)``: see ``ember.ops.reduction.nanmedian``."""
        return _red.nanmedian(self, *args, **kwargs)

    def mode(self, *args: Any, **kwargs: Any) -> Any:
        """``mode(dim=-1, keepdim=False, *, axis=None, keepdims=None)``: see ``ember.ops.reduction.mode``."""
        return _red.mode(self, *args, **kwargs)

    def softmax(self, *args: Any, **kwargs: Any) -> Any:
        """``softmax(dim=None, dtype=None)``: see ``ember.ops.reduction.softmax``."""
        return _red.softmax(self, *args, **kwargs)

    def log_softmax(self, *args: Any, **kwargs: Any) -> Any:
        """``log_softmax(dim=None, dtype=None)``: see ``ember.ops.reduction.log_softmax``."""
        return _red.log_softmax(self, *args, **kwargs)

    def var_mean(self, *args: Any, **kwargs: Any) -> Any:
        """``var_mean(...)``: see ``ember.ops.reduction.var_mean``."""
        return _red.var_mean(self, *args, **kwargs)

    def std_mean(self, *args: Any, **kwargs: Any) -> Any:
        """``std_mean(...)``: see ``ember.ops.reduction.std_mean``."""
        return _red.std_mean(self, *args, **kwargs)

    # -- linear algebra: ember/ops/linalg.py -------------------------------------------------

    def matmul(self, *args: Any, **kwargs: Any) -> Any:
        """``matmul(other, *, out=None)``: see ``ember.ops.linalg.matmul``."""
        return _la.matmul(self, *args, **kwargs)

    def mm(self, *args: Any, **kwargs: Any) -> Any:
        """``mm(mat2, *, out=None)``: see ``ember.ops.linalg.mm``."""
        return _la.mm(self, *args, **kwargs)

    def bmm(self, *args: Any, **kwargs: Any) -> Any:
        """``bmm(mat2, *, out=None)``: see ``ember.ops.linalg.bmm``."""
        return _la.bmm(self, *args, **kwargs)

    def mv(self, *args: Any, **kwargs: Any) -> Any:
        """``mv(vec, *, out=None)``: see ``ember.ops.linalg.mv``."""
        return _la.mv(self, *args, **kwargs)

    def dot(self, *args: Any, **kwargs: Any) -> Any:
        """``dot(tensor, *, out=None)``: see ``ember.ops.linalg.dot``."""
        return _la.dot(self, *args, **kwargs)

    def vdot(self, *args: Any, **kwargs: Any) -> Any:
        """``vdot(other, *, out=None)``: see ``ember.ops.linalg.vdot``."""
        return _la.vdot(self, *args, **kwargs)

    def inner(self, *args: Any, **kwargs: Any) -> Any:
        """``inner(other, *, out=None)``: see ``ember.ops.linalg.inner``."""
        return _la.inner(self, *args, **kwargs)

    def outer(self, *args: Any, **kwargs: Any) -> Any:
        """``outer(vec2, *, out=None)``: see ``ember.ops.linalg.outer``."""
        return _la.outer(self, *args, **kwargs)

    def ger(self, *args: Any, **kwargs: Any) -> Any:
        """``ger(vec2, *, out=None)``: see ``ember.ops.linalg.outer``."""
        return _la.outer(self, *args, **kwargs)

    def addmm(self, *args: Any, **kwargs: Any) -> Any:
        """``addmm(mat1, mat2, *, beta=1, alpha=1, out=None)``: see ``ember.ops.linalg.addmm``."""
        return _la.addmm(self, *args, **kwargs)

    def addmv(self, *args: Any, **kwargs: Any) -> Any:
        """``addmv(mat, vec, *, beta=1, alpha=1, out=None)``: see ``ember.ops.linalg.addmv``."""
        return _la.addmv(self, *args, **kwargs)

    def addbmm(self, *args: Any, **kwargs: Any) -> Any:
        """``addbmm(batch1, batch2, *, beta=1, alpha=1, out=None)``: see ``ember.ops.linalg.addbmm``."""
        return _la.addbmm(self, *args, **kwargs)

    def baddbmm(self, *args: Any, **kwargs: Any) -> Any:
        """``baddbmm(batch1, batch2, *, beta=1, alpha=1, out=None)``: see ``ember.ops.linalg.baddbmm``."""
        return _la.baddbmm(self, *args, **kwargs)

    def t(self, *args: Any, **kwargs: Any) -> Any:
        """``t()``: see ``ember.ops.linalg.t``."""
        return _la.t(self, *args, **kwargs)

    def tril(self, *args: Any, **kwargs: Any) -> Any:
        """``tril(diagonal=0, *, out=None)``: see ``ember.ops.linalg.tril``."""
        return _la.tril(self, *args, **kwargs)

    def triu(self, *args: Any, **kwargs: Any) -> Any:
        """``triu(diagonal=0, *, out=None)``: see ``ember.ops.linalg.triu``."""
        return _la.triu(self, *args, **kwargs)

    def diag(self, *args: Any, **kwargs: Any) -> Any:
        """``diag(diagonal=0, *, out=None)``: see ``ember.ops.linalg.diag``."""
        return _la.diag(self, *args, **kwargs)

    def diagonal(self, *args: Any, **kwargs: Any) -> Any:
        """``diagonal(offset=0, dim1=0, dim2=1)``: see ``ember.ops.linalg.diagonal``."""
        return _la.diagonal(self, *args, **kwargs)

    def diag_embed(self, *args: Any, **kwargs: Any) -> Any:
        """``diag_embed(offset=0, dim1=-2, dim2=-1)``: see ``ember.ops.linalg.diag_embed``."""
        return _la.diag_embed(self, *args, **kwargs)

    def trace(self, *args: Any, **kwargs: Any) -> Any:
        """``trace()``: see ``ember.ops.linalg.trace``."""
        return _la.trace(self, *args, **kwargs)

    def kron(self, *args: Any, **kwargs: Any) -> Any:
        """``kron(other, *, out=None)``: see ``ember.ops.linalg.kron``."""
        return _la.kron(self, *args, **kwargs)

    def cross(self, *args: Any, **kwargs: Any) -> Any:
        """``cross(other, dim=None, *, out=None)``: see ``ember.ops.linalg.cross``."""
        return _la.cross(self, *args, **kwargs)

    def inverse(self, *args: Any, **kwargs: Any) -> Any:
        """See ``ember.ops.linalg.inverse``."""
        return _la.inverse(self, *args, **kwargs)

    def det(self, *args: Any, **kwargs: Any) -> Any:
        """See ``ember.ops.linalg.det``."""
        return _la.det(self, *args, **kwargs)

    def logdet(self, *args: Any, **kwargs: Any) -> Any:
        """See ``ember.ops.linalg.logdet``."""
        return _la.logdet(self, *args, **kwargs)

    def slogdet(self, *args: Any, **kwargs: Any) -> Any:
        """See ``ember.ops.linalg.slogdet``."""
        return _la.slogdet(self, *args, **kwargs)

    def matrix_power(self, *args: Any, **kwargs: Any) -> Any:
        """See ``ember.ops.linalg.matrix_power``."""
        return _la.matrix_power(self, *args, **kwargs)

    def addr(self, *args: Any, **kwargs: Any) -> Any:
        """See ``ember.ops.linalg.addr``."""
        return _la.addr(self, *args, **kwargs)

    def cholesky(self, *args: Any, **kwargs: Any) -> Any:
        """See ``ember.ops.linalg.cholesky``."""
        return _la.cholesky(self, *args, **kwargs)

    def qr(self, *args: Any, **kwargs: Any) -> Any:
        """See ``ember.ops.linalg.qr``."""
        return _la.qr(self, *args, **kwargs)

    def svd(self, *args: Any, **kwargs: Any) -> Any:
        """See ``ember.ops.linalg.svd``."""
        return _la.svd(self, *args, **kwargs)

    def pinverse(self, *args: Any, **kwargs: Any) -> Any:
        """See ``ember.ops.linalg.pinverse``."""
        return _la.pinverse(self, *args, **kwargs)

    def diagflat(self, *args: Any, **kwargs: Any) -> Any:
        """See ``ember.ops.linalg.diagflat``."""
        return _la.diagflat(self, *args, **kwargs)

    # -- shapes and views: ember/ops/shape.py ------------------------------------------------

    def reshape(self, *args: Any, **kwargs: Any) -> Any:
        """``reshape(*size, shape=None)``: see ``ember.ops.shape.reshape``."""
        return _sh.reshape(self, *args, **kwargs)

    def view(self, *args: Any, **kwargs: Any) -> Any:
        """``view(*shape, size=None)``: see ``ember.ops.shape.view``."""
        return _sh.view(self, *args, **kwargs)

    def view_as(self, *args: Any, **kwargs: Any) -> Any:
        """``view_as(other)``: see ``ember.ops.shape.view_as``."""
        return _sh.view_as(self, *args, **kwargs)

    def flatten(self, *args: Any, **kwargs: Any) -> Any:
        """``flatten(start_dim=0, end_dim=-1)``: see ``ember.ops.shape.flatten``."""
        return _sh.flatten(self, *args, **kwargs)

    def unflatten(self, *args: Any, **kwargs: Any) -> Any:
        """``unflatten(dim, sizes)``: see ``ember.ops.shape.unflatten``."""
        return _sh.unflatten(self, *args, **kwargs)

    def squeeze(self, *args: Any, **kwargs: Any) -> Any:
        """``squeeze(dim=None)``: see ``ember.ops.shape.squeeze``."""
        return _sh.squeeze(self, *args, **kwargs)

    def unsqueeze(self, *args: Any, **kwargs: Any) -> Any:
        """``unsqueeze(dim)``: see ``ember.ops.shape.unsqueeze``."""
        return _sh.unsqueeze(self, *args, **kwargs)

    def expand(self, *args: Any, **kwargs: Any) -> Any:
        """``expand(*sizes)``: see ``ember.ops.shape.expand``."""
        return _sh.expand(self, *args, **kwargs)

    def expand_as(self, *args: Any, **kwargs: Any) -> Any:
        """``expand_as(other)``: see ``ember.ops.shape.expand_as``."""
        return _sh.expand_as(self, *args, **kwargs)

    def repeat(self, *args: Any, **kwargs: Any) -> Any:
        """``repeat(*sizes)``: see ``ember.ops.shape.repeat``."""
        return _sh.repeat(self, *args, **kwargs)

    def repeat_interleave(self, *args: Any, **kwargs: Any) -> Any:
        """``repeat_interleave(repeats=None, dim=None, *, output_size=None)``: see ``ember.ops.shape.repeat_interleave``."""
        return _sh.repeat_interleave(self, *args, **kwargs)

    def permute(self, *args: Any, **kwargs: Any) -> Any:
        """``permute(*order, dims=None)``: see ``ember.ops.shape.permute``."""
        return _sh.permute(self, *args, **kwargs)

    def movedim(self, *args: Any, **kwargs: Any) -> Any:
        """``movedim(source, destination)``: see ``ember.ops.shape.movedim``."""
        return _sh.movedim(self, *args, **kwargs)

    def moveaxis(self, *args: Any, **kwargs: Any) -> Any:
        """``moveaxis(source, destination)``: see ``ember.ops.shape.movedim``."""
        return _sh.movedim(self, *args, **kwargs)

    def transpose(self, *args: Any, **kwargs: Any) -> Any:
        """``transpose(dim0, dim1)``: see ``ember.ops.shape.transpose``."""
        return _sh.transpose(self, *args, **kwargs)

    def swapaxes(self, *args: Any, **kwargs: Any) -> Any:
        """``swapaxes(dim0, dim1)``: see ``ember.ops.shape.transpose``."""
        return _sh.transpose(self, *args, **kwargs)

    def swapdims(self, *args: Any, **kwargs: Any) -> Any:
        """``swapdims(dim0, dim1)``: see ``ember.ops.shape.transpose``."""
        return _sh.transpose(self, *args, **kwargs)

    def split(self, *args: Any, **kwargs: Any) -> Any:
        """``split(split_size_or_sections, dim=0)``: see ``ember.ops.shape.split``."""
        return _sh.split(self, *args, **kwargs)

    def tensor_split(self, *args: Any, **kwargs: Any) -> Any:
        """``tensor_split(indices_or_sections, dim=0)``: see ``ember.ops.shape.tensor_split``."""
        return _sh.tensor_split(self, *args, **kwargs)

    def chunk(self, *args: Any, **kwargs: Any) -> Any:
        """``chunk(chunks, dim=0)``: see ``ember.ops.shape.chunk``."""
        return _sh.chunk(self, *args, **kwargs)

    def unbind(self, *args: Any, **kwargs: Any) -> Any:
        """``unbind(dim=0)``: see ``ember.ops.shape.unbind``."""
        return _sh.unbind(self, *args, **kwargs)

    def flip(self, *args: Any, **kwargs: Any) -> Any:
        """``flip(*order, dims=None)``: see ``ember.ops.shape.flip``."""
        return _sh.flip(self, *args, **kwargs)

    def fliplr(self, *args: Any, **kwargs: Any) -> Any:
        """``fliplr()``: see ``ember.ops.shape.fliplr``."""
        return _sh.fliplr(self, *args, **kwargs)

    def flipud(self, *args: Any, **kwargs: Any) -> Any:
        """``flipud()``: see ``ember.ops.shape.flipud``."""
        return _sh.flipud(self, *args, **kwargs)

    def roll(self, *args: Any, **kwargs: Any) -> Any:
        """``roll(shifts, dims=None)``: see ``ember.ops.shape.roll``."""
        return _sh.roll(self, *args, **kwargs)

    def narrow(self, *args: Any, **kwargs: Any) -> Any:
        """``narrow(dim, start, length)``: see ``ember.ops.shape.narrow``."""
        return _sh.narrow(self, *args, **kwargs)

    def select(self, *args: Any, **kwargs: Any) -> Any:
        """``select(dim, index)``: see ``ember.ops.shape.select``."""
        return _sh.select(self, *args, **kwargs)

    def tile(self, *args: Any, **kwargs: Any) -> Any:
        """``tile(dims)``: see ``ember.ops.shape.tile``."""
        return _sh.tile(self, *args, **kwargs)

    def broadcast_to(self, *args: Any, **kwargs: Any) -> Any:
        """``broadcast_to(size)``: see ``ember.ops.shape.broadcast_to``."""
        return _sh.broadcast_to_method(self, *args, **kwargs)

    def ravel(self, *args: Any, **kwargs: Any) -> Any:
        """``ravel()``: see ``ember.ops.shape.ravel``."""
        return _sh.ravel(self, *args, **kwargs)

    def unfold(self, *args: Any, **kwargs: Any) -> Any:
        """``unfold(dimension, size, step)``: see ``ember.ops.shape.unfold``."""
        return _sh.unfold(self, *args, **kwargs)

    def rot90(self, *args: Any, **kwargs: Any) -> Any:
        """``rot90(k=1, dims=(0, 1))``: see ``ember.ops.shape.rot90``."""
        return _sh.rot90(self, *args, **kwargs)

    def as_strided(self, *args: Any, **kwargs: Any) -> Any:
        """``as_strided(size, stride, storage_offset=None)``: see ``ember.ops.shape.as_strided``."""
        return _sh.as_strided(self, *args, **kwargs)

    def hsplit(self, *args: Any, **kwargs: Any) -> Any:
        """``hsplit(indices_or_sections)``: see ``ember.ops.shape.hsplit``."""
        return _sh.hsplit(self, *args, **kwargs)

    def vsplit(self, *args: Any, **kwargs: Any) -> Any:
        """``vsplit(indices_or_sections)``: see ``ember.ops.shape.vsplit``."""
        return _sh.vsplit(self, *args, **kwargs)

    # -- indexing: ember/ops/indexing.py -----------------------------------------------------

    def gather(self, *args: Any, **kwargs: Any) -> Any:
        """``gather(dim, index, *, sparse_grad=False)``: see ``ember.ops.indexing.gather``."""
        return _ix.gather(self, *args, **kwargs)

    def scatter(self, *args: Any, **kwargs: Any) -> Any:
        """``scatter(dim, index, src=None, value=None, *, reduce=None)``: see ``ember.ops.indexing.scatter``."""
        return _ix.scatter(self, *args, **kwargs)

    def scatter_add(self, *args: Any, **kwargs: Any) -> Any:
        """``scatter_add(dim, index, src)``: see ``ember.ops.indexing.scatter_add``."""
        return _ix.scatter_add(self, *args, **kwargs)

    def scatter_reduce(self, *args: Any, **kwargs: Any) -> Any:
        """``scatter_reduce(dim, index, src, reduce, *, include_self=True)``: see ``ember.ops.indexing.scatter_reduce``."""
        return _ix.scatter_reduce(self, *args, **kwargs)

    def index_select(self, *args: Any, **kwargs: Any) -> Any:
        """``index_select(dim, index)``: see ``ember.ops.indexing.index_select``."""
        return _ix.index_select(self, *args, **kwargs)

    def index_add(self, *args: Any, **kwargs: Any) -> Any:
        """``index_add(dim, index, source, *, alpha=1)``: see ``ember.ops.indexing.index_add``."""
        return _ix.index_add(self, *args, **kwargs)

    def index_fill(self, *args: Any, **kwargs: Any) -> Any:
        """``index_fill(dim, index, value)``: see ``ember.ops.indexing.index_fill``."""
        return _ix.index_fill(self, *args, **kwargs)

    def index_copy(self, *args: Any, **kwargs: Any) -> Any:
        """``index_copy(dim, index, source)``: see ``ember.ops.indexing.index_copy``."""
        return _ix.index_copy(self, *args, **kwargs)

    def index_put(self, *args: Any, **kwargs: Any) -> Any:
        """``index_put(indices, values, accumulate=False)``: see ``ember.ops.indexing.index_put``."""
        return _ix.index_put(self, *args, **kwargs)

    def masked_fill(self, *args: Any, **kwargs: Any) -> Any:
        """``masked_fill(mask, value)``: see ``ember.ops.indexing.masked_fill``."""
        return _ix.masked_fill(self, *args, **kwargs)

    def masked_select(self, *args: Any, **kwargs: Any) -> Any:
        """``masked_select(mask)``: see ``ember.ops.indexing.masked_select``."""
        return _ix.masked_select(self, *args, **kwargs)

    def masked_scatter(self, *args: Any, **kwargs: Any) -> Any:
        """``masked_scatter(mask, source)``: see ``ember.ops.indexing.masked_scatter``."""
        return _ix.masked_scatter(self, *args, **kwargs)

    def take(self, *args: Any, **kwargs: Any) -> Any:
        """``take(index)``: see ``ember.ops.indexing.take``."""
        return _ix.take(self, *args, **kwargs)

    def take_along_dim(self, *args: Any, **kwargs: Any) -> Any:
        """``take_along_dim(indices, dim=None)``: see ``ember.ops.indexing.take_along_dim``."""
        return _ix.take_along_dim(self, *args, **kwargs)

    def nonzero(self, *args: Any, **kwargs: Any) -> Any:
        """``nonzero(*, as_tuple=False)``: see ``ember.ops.indexing.nonzero``."""
        return _ix.nonzero(self, *args, **kwargs)

    def argwhere(self, *args: Any, **kwargs: Any) -> Any:
        """``argwhere()``: see ``ember.ops.indexing.argwhere``."""
        return _ix.argwhere(self, *args, **kwargs)

    def topk(self, *args: Any, **kwargs: Any) -> Any:
        """``topk(k, dim=-1, largest=True, sorted=True)``: see ``ember.ops.indexing.topk``."""
        return _ix.topk(self, *args, **kwargs)

    def sort(self, *args: Any, **kwargs: Any) -> Any:
        """``sort(dim=-1, descending=False, stable=False)``: see ``ember.ops.indexing.sort``."""
        return _ix.sort(self, *args, **kwargs)

    def argsort(self, *args: Any, **kwargs: Any) -> Any:
        """``argsort(dim=-1, descending=False, stable=False)``: see ``ember.ops.indexing.argsort``."""
        return _ix.argsort(self, *args, **kwargs)

    def msort(self, *args: Any, **kwargs: Any) -> Any:
        """``msort()``: see ``ember.ops.indexing.msort``."""
        return _ix.msort(self, *args, **kwargs)

    def unique(self, *args: Any, **kwargs: Any) -> Any:
        """``unique(...)``: see ``ember.ops.indexing.unique``."""
        return _ix.unique(self, *args, **kwargs)

    def unique_consecutive(self, *args: Any, **kwargs: Any) -> Any:
        """``unique_consecutive(return_inverse=False, return_counts=False, dim=None)``: see ``ember.ops.indexing.unique_consecutive``."""
        return _ix.unique_consecutive(self, *args, **kwargs)

    def kthvalue(self, *args: Any, **kwargs: Any) -> Any:
        """``kthvalue(k, dim=-1, keepdim=False)``: see ``ember.ops.indexing.kthvalue``."""
        return _ix.kthvalue(self, *args, **kwargs)

    def searchsorted(self, *args: Any, **kwargs: Any) -> Any:
        """``searchsorted(...)``: see ``ember.ops.indexing.searchsorted``."""
        return _ix.searchsorted(self, *args, **kwargs)

    def bincount(self, *args: Any, **kwargs: Any) -> Any:
        """``bincount(weights=None, minlength=0)``: see ``ember.ops.indexing.bincount``."""
        return _ix.bincount(self, *args, **kwargs)

    def histc(self, *args: Any, **kwargs: Any) -> Any:
        """``histc(bins=100, min=0, max=0)``: see ``ember.ops.indexing.histc``."""
        return _ix.histc(self, *args, **kwargs)

    def put(self, *args: Any, **kwargs: Any) -> Any:
        """``put(index, source, accumulate=False)``: see ``ember.ops.indexing.put``."""
        return _ix.put(self, *args, **kwargs)

    # -- composites and small names: ember/_functions.py, ember/ops/extra.py --------------------

    def where(self, condition: Any, other: Any) -> Any:
        """``where(condition, other)``: ``self`` where ``condition``, else ``other``."""
        return _ew.where(condition, self, other)

    def reshape_as(self, other: Any) -> Any:
        """``reshape_as(other)``: ``self.reshape(other.shape)``."""
        return _sh.reshape(self, tuple(other.shape))

    def i0(self) -> Any:
        """``i0()``: see ``ember.ops.extra.i0``."""
        return _extra.i0(self)

    def polygamma(self, n: int) -> Any:
        """``polygamma(n)``: see ``ember.ops.extra.polygamma``."""
        return _extra.polygamma(n, self)

    def gcd(self, other: Any) -> Any:
        """``gcd(other)``: see ``ember._functions.gcd``."""
        return _fn.gcd(self, other)

    def lcm(self, other: Any) -> Any:
        """``lcm(other)``: see ``ember._functions.lcm``."""
        return _fn.lcm(self, other)

    def diff(self, *args: Any, **kwargs: Any) -> Any:
        """``diff(n=1, dim=-1, prepend=None, append=None)``: see ``ember._functions.diff``."""
        return _fn.diff(self, *args, **kwargs)

    def angle(self) -> Any:
        """``angle()``: see ``ember._functions.angle``."""
        return _fn.angle(self)

    def dist(self, other: Any, p: float = 2) -> Any:
        """``dist(other, p=2)``: see ``ember._functions.dist``."""
        return _fn.dist(self, other, p)

    def cov(self, *args: Any, **kwargs: Any) -> Any:
        """``cov(*, correction=1, fweights=None, aweights=None)``: see ``ember._functions.cov``."""
        return _fn.cov(self, *args, **kwargs)

    def corrcoef(self) -> Any:
        """``corrcoef()``: see ``ember._functions.corrcoef``."""
        return _fn.corrcoef(self)

    def quantile(self, *args: Any, **kwargs: Any) -> Any:
        """``quantile(q, dim=None, keepdim=False, *, interpolation='linear')``."""
        return _fn.quantile(self, *args, **kwargs)

    def nanquantile(self, *args: Any, **kwargs: Any) -> Any:
        """``nanquantile(q, dim=None, keepdim=False, *, interpolation='linear')``."""
        return _fn.nanquantile(self, *args, **kwargs)

    def logcumsumexp(self, dim: int) -> Any:
        """``logcumsumexp(dim)``: see ``ember._functions.logcumsumexp``."""
        return _fn.logcumsumexp(self, dim)

    def histogram(self, *args: Any, **kwargs: Any) -> Any:
        """``histogram(bins, *, range=None, weight=None, density=False)``."""
        return _fn.histogram(self, *args, **kwargs)

    def multinomial(self, *args: Any, **kwargs: Any) -> Any:
        """``multinomial(num_samples, replacement=False, *, generator=None)``."""
        from ._random import multinomial

        return multinomial(self, *args, **kwargs)

    def split_with_sizes(self, split_sizes: Any, dim: int = 0) -> Any:
        """``split_with_sizes(split_sizes, dim=0)``: sizes must add up to the dim's length."""
        return _fn.split_with_sizes(self, split_sizes, dim)

    def unsafe_chunk(self, chunks: int, dim: int = 0) -> Any:
        return _fn.unsafe_chunk(self, chunks, dim)

    def unsafe_split(self, split_size: Any, dim: int = 0) -> Any:
        return _fn.unsafe_split(self, split_size, dim)

    def unsafe_split_with_sizes(self, split_sizes: Any, dim: int = 0) -> Any:
        return _fn.unsafe_split_with_sizes(self, split_sizes, dim)

    def sum_to_size(self, *size: Any) -> Any:
        """``sum_to_size(*size)``: sum down to ``size`` (undo a broadcast)."""
        return _fn.sum_to_size(self, *size)

    def renorm(self, p: float, dim: int, maxnorm: float) -> Any:
        """``renorm(p, dim, maxnorm)``: see ``ember._functions.renorm``."""
        return _fn.renorm(self, p, dim, maxnorm)

    def ldexp(self, other: Any) -> Any:
        """``ldexp(other)``: ``self * 2 ** other``."""
        return _fn.ldexp(self, other)

    def frexp(self) -> Any:
        """``frexp()``: ``(mantissa, exponent)``."""
        return _fn.frexp(self)

    def nextafter(self, other: Any) -> Any:
        """``nextafter(other)``: the next float towards ``other``."""
        return _fn.nextafter(self, other)

    def bitwise_left_shift(self, other: Any) -> Any:
        """``bitwise_left_shift(other)``: ``self << other``."""
        return _fn.bitwise_left_shift(self, other)

    def bitwise_right_shift(self, other: Any) -> Any:
        """``bitwise_right_shift(other)``: ``self >> other``."""
        return _fn.bitwise_right_shift(self, other)

    def select_scatter(self, src: Any, dim: int, index: int) -> Any:
        return _fn.select_scatter(self, src, dim, index)

    def slice_scatter(self, src: Any, *args: Any, **kwargs: Any) -> Any:
        return _fn.slice_scatter(self, src, *args, **kwargs)

    def diagonal_scatter(self, src: Any, *args: Any, **kwargs: Any) -> Any:
        return _fn.diagonal_scatter(self, src, *args, **kwargs)

    def adjoint(self) -> Any:
        """``adjoint()``: the conjugate transpose of the last two dims (a transpose here)."""
        return _sh.transpose(self, -2, -1)

    def narrow_copy(self, dim: int, start: int, length: int) -> Any:
        return _fn.narrow_copy(self, dim, start, length)

    def resize_as_(self, other: Any) -> Any:
        """``resize_as_(other)``: ``self.resize_(other.shape)``."""
        return self.resize_(tuple(other.shape))

    def new_empty_strided(self, size: Any, stride: Any, **kwargs: Any) -> Any:
        """``new_empty_strided(size, stride, ...)``: ember arrays pick their own strides."""
        return self.new_empty(tuple(size), **kwargs)

    # real tensors: the conjugate is the tensor itself
    def conj(self) -> Any:
        return self

    def conj_physical(self) -> Any:
        return _ew.clone(self)

    def resolve_conj(self) -> Any:
        return self

    def resolve_neg(self) -> Any:
        return self

    def is_conj(self) -> bool:
        return False

    def is_neg(self) -> bool:
        return False

    @property
    def real(self) -> Any:
        """The tensor itself (a real tensor is its own real part)."""
        return self

    @property
    def imag(self) -> Any:
        """Raises as in PyTorch: real tensors have no imaginary part."""
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")

    def dequantize(self) -> Any:
        """The tensor itself: ember has no quantized tensors."""
        return self

    def to_dense(self, dtype: Any = None, *, masked_grad: Any = None) -> Any:
        """The tensor itself (already dense), or a copy in ``dtype``."""
        return self if dtype is None else self.to(dtype)

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    def is_nonzero(self) -> bool:
        """``bool`` of a one-element tensor; more or fewer elements raise."""
        n = self.numel()
        if n != 1:
            more = "more than one value" if n else "no values"
            raise RuntimeError(f"Boolean value of Tensor with {more} is ambiguous")
        return bool(self.item())

    def is_same_size(self, other: Any) -> bool:
        return tuple(self.shape) == tuple(other.shape)

    def is_inference(self) -> bool:
        return False

    def is_set_to(self, tensor: Any) -> bool:
        """True when both tensors view the same memory with the same shape and strides."""
        return (self.data_ptr() == tensor.data_ptr() and tuple(self.shape) == tuple(tensor.shape)
                and self.stride() == tensor.stride())

    def dim_order(self) -> tuple:
        """The dims from outermost to innermost in memory (largest stride first)."""
        st = self.stride()
        return tuple(sorted(range(self.dim()), key=lambda d: -st[d]))

    def const_data_ptr(self) -> int:
        return self.data_ptr()

    @property
    def layout(self) -> Any:
        return _fn.strided

    # device and storage predicates: ember tensors live on the CPU (NumPy) or CUDA (CuPy) and
    # are dense, unquantized and not nested
    is_sparse = property(lambda self: False, doc="False: ember tensors are dense.")
    is_sparse_csr = property(lambda self: False, doc="False: ember tensors are dense.")
    is_quantized = property(lambda self: False, doc="False: ember has no quantized tensors.")
    is_nested = property(lambda self: False, doc="False: ember has no nested tensors.")
    is_meta = property(lambda self: False, doc="False: ember has no meta device.")
    is_mkldnn = property(lambda self: False, doc="False: no MKL-DNN layout.")
    is_xpu = property(lambda self: False, doc="False: ember runs on cpu and cuda only.")
    is_mps = property(lambda self: False, doc="False: ember runs on cpu and cuda only.")
    is_vulkan = property(lambda self: False, doc="False: ember runs on cpu and cuda only.")
    is_ipu = property(lambda self: False, doc="False: ember runs on cpu and cuda only.")
    is_xla = property(lambda self: False, doc="False: ember runs on cpu and cuda only.")
    is_mtia = property(lambda self: False, doc="False: ember runs on cpu and cuda only.")
    is_maia = property(lambda self: False, doc="False: ember runs on cpu and cuda only.")

    def is_distributed(self) -> bool:
        return False

    def arccosh(self) -> Any:
        """``arccosh()``: alias of ``acosh``."""
        return _ew.acosh(self)

    def arcsinh(self) -> Any:
        """``arcsinh()``: alias of ``asinh``."""
        return _ew.asinh(self)

    def arctanh(self) -> Any:
        """``arctanh()``: alias of ``atanh``."""
        return _ew.atanh(self)

    def dsplit(self, *args: Any, **kwargs: Any) -> Any:
        """``dsplit(indices_or_sections)``: see ``ember.ops.shape.dsplit``."""
        return _sh.dsplit(self, *args, **kwargs)

    def hardshrink(self, lambd: float = 0.5) -> Any:
        """``hardshrink(lambd=0.5)``: see ``ember.ops.activation.hardshrink``."""
        from .ops.activation import hardshrink

        return hardshrink(self, lambd)

    def prelu(self, weight: Any) -> Any:
        """``prelu(weight)``: see ``ember.ops.activation.prelu``."""
        from .ops.activation import prelu

        return prelu(self, weight)

    def bernoulli(self, *args: Any, **kwargs: Any) -> Any:
        """``bernoulli(p=None, *, generator=None)``: 0/1 draws with probabilities ``self``."""
        from ._random import bernoulli

        return bernoulli(self, *args, **kwargs)

    def put_(self, index: Any, source: Any, accumulate: bool = False) -> Any:
        """``put_(index, source, accumulate=False)``: in-place ``put``."""
        return self._inplace(_ix.put, index, source, accumulate)

    def index_reduce(self, dim: int, index: Any, source: Any, reduce: str, *,
                     include_self: bool = True) -> Any:
        """``index_reduce(dim, index, source, reduce)``: reduce ('prod', 'mean', 'amax',
        'amin') the slices of ``source`` into the slices of ``self`` that ``index`` names."""
        if reduce not in ("prod", "mean", "amax", "amin"):
            raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax "
                               f"or amin but got {reduce}.")
        if index.dim() != 1:
            raise IndexError(f"index_reduce_(): Index is supposed to be a vector, got "
                             f"{index.dim()}-D")
        d = dim % max(self.dim(), 1)
        shape = [1] * source.dim()
        shape[d] = index.shape[0]
        full = index.reshape(shape).expand(tuple(source.shape))
        return _ix.scatter_reduce(self, d, full, source, reduce, include_self=include_self)

    def index_reduce_(self, dim: int, index: Any, source: Any, reduce: str, *,
                      include_self: bool = True) -> Any:
        """In-place ``index_reduce``."""
        return self._inplace(lambda t: t.index_reduce(dim, index, source, reduce,
                                                      include_self=include_self))

    def apply_(self, callable: Any) -> Any:
        """``apply_(fn)``: replace each element by ``fn(element)`` (CPU tensors; slow, as in
        PyTorch)."""
        if self.device.type != "cpu":
            raise TypeError("apply_ is only implemented on CPU tensors")
        flat = self._data.reshape(-1)
        flat[...] = [callable(v) for v in flat.tolist()]
        return self

    def map_(self, tensor: Any, callable: Any) -> Any:
        """``map_(other, fn)``: ``self[i] = fn(self[i], other[i])`` (``other`` broadcast)."""
        import numpy as np

        if self.device.type != "cpu":
            raise TypeError("map_ is only implemented on CPU tensors")
        other = np.broadcast_to(tensor._data, self._data.shape).reshape(-1).tolist()
        flat = self._data.reshape(-1)
        flat[...] = [callable(a, b) for a, b in zip(flat.tolist(), other, strict=True)]
        return self

    def record_stream(self, stream: Any) -> None:
        """Nothing to record: ember's CuPy arrays are freed by reference counting."""

    def conj_physical_(self) -> Any:
        """The tensor itself: a real tensor is its own conjugate."""
        return self

    def new(self, *args: Any, **kwargs: Any) -> Any:
        """Legacy constructor: ``x.new(2, 3)`` (uninitialised, x's dtype and device),
        ``x.new([1, 2])`` or ``x.new(tensor)`` (data in x's dtype), ``x.new()`` (empty)."""
        from ._creation import tensor

        if kwargs.get("device") is not None and str(kwargs["device"]) != str(self.device):
            raise RuntimeError(f"Expected device {self.device} but got {kwargs['device']}")
        if not args:
            return self.new_empty((0,))
        first = args[0]
        if len(args) == 1 and hasattr(first, "_data"):
            if first.dtype != self.dtype:
                raise TypeError(f"expected {self.dtype} (got {first.dtype}) for x.new(tensor); "
                                "use x.new_tensor(t) to convert")
            return first.detach()
        from ._size import Size

        if len(args) == 1 and isinstance(first, Size):
            return self.new_empty(tuple(first))
        if len(args) == 1 and isinstance(first, (list, tuple)):
            return tensor(first, dtype=self.dtype, device=self.device)
        return self.new_empty(tuple(int(a) for a in args))


def _inplace_method(name: str) -> Any:
    """``x.name_(*args)``: ``x.name(*args)`` written back into ``x`` (``Tensor._inplace``)."""
    base = getattr(TensorMethods, name, None)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        fn = base if base is not None else getattr(type(self), name)
        return self._inplace(fn, *args, **kwargs)

    method.__name__ = method.__qualname__ = f"{name}_"
    method.__doc__ = f"``{name}_(...)``: in-place ``{name}``."
    return method


# In-place forms PyTorch has whose out-of-place op ember has; each is the out-of-place op written
# back into the tensor (float results into an integer tensor raise, as in PyTorch).
_INPLACE = (
    "absolute acos acosh addbmm addmm addmv addr arccos arccosh arcsin arcsinh arctan arctan2 "
    "arctanh asin asinh atan atan2 atanh baddbmm bitwise_and bitwise_not bitwise_or bitwise_xor "
    "bitwise_left_shift bitwise_right_shift copysign cos cosh cumprod cumsum deg2rad digamma "
    "divide eq erf erfc erfinv exp2 expm1 fix floor_divide fmod frac gcd ge greater i0 "
    "greater_equal gt heaviside hypot le lcm ldexp less less_equal lgamma log10 log1p log2 "
    "logical_and logical_not logical_or logical_xor logit lt multiply mvlgamma nan_to_num ne "
    "negative nextafter not_equal polygamma rad2deg remainder renorm rsqrt sgn sign sin sinc sinh "
    "subtract tan true_divide xlogy"
).split()
for _name in _INPLACE:
    if f"{_name}_" not in TensorMethods.__dict__:
        setattr(TensorMethods, f"{_name}_", _inplace_method(_name))
del _name
