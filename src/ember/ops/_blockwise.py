"""Fused elementwise kernels on the host: an activation's forward or backward formula as in-place
NumPy passes over blocks of 65,536 elements, so the only full-size array built is the result
(PyTorch's fused kernels allocate just that too) and the passes run in the L2 cache.

``run(kernel, scratch, x, *more)`` drives a kernel ``kernel(out, x, *more, *scratch_rows)`` over
the blocks (``np.nditer`` in memory order: any layout, a broadcast gradient included); small
inputs and mixed dtypes take one call on whole arrays. Each kernel keeps the rounding of the
plain NumPy expression it replaces (the same operations in the same order), except GELU's
backward, which recomputes the normal CDF from x (PyTorch saves only x for it).

A kernel with a ``c_kernel`` attribute (``_c``) has an eager kernel of ``ember._kernels`` in
front of it: ``run`` calls it first and runs the passes where it returns None (no extension,
other dtypes, strided or broadcast operands; docs/design.md, "Eager kernels").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _kernels_loader as _kernels
from .. import _threads as threads

BLOCK = 65536  # elements per block: a kernel's few scratch rows stay in the L2 cache


_UINT = {2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}


def fast_unary(name: str, xp: Any, x: Any) -> Any:
    """The elementwise function ``name`` (exp, tanh) of x: its eager kernel where that applies
    (float32 host arrays), else NumPy's ufunc split over the threads from ``threads.cut``
    elements, else ``xp``'s own (one call; CuPy's on a GPU)."""
    out = getattr(_kernels, name)(x)
    if out is None:
        f = getattr(xp, name)
        out = threads.call(getattr(np, name), f, x) if x.size >= threads.cut else f(x)
    return out


def run(kernel: Any, scratch: str, x: Any, *more: Any) -> Any:
    """A new array of x's shape, dtype and layout written by ``kernel(out, x, *more, *rows)``;
    ``scratch`` names the kernel's scratch rows, one character each: ``f`` x's dtype, ``?`` bool,
    ``u`` the unsigned integer of x's size. Host arrays only (the ops call it when
    ``type(x) is np.ndarray``)."""
    c = getattr(kernel, "c_kernel", None)
    if c is not None:  # (name, params): the activation's kernel, or its backward's
        out = (_kernels.activation_backward(c[0], x, *more, *c[1]) if more
               else _kernels.activation(c[0], x, *c[1]))
        if out is not None:
            return out
    dt = x.dtype
    kinds = [dt if c == "f" else _UINT[dt.itemsize] if c == "u" else np.dtype(bool)
             for c in scratch]
    if x.size <= BLOCK or any(m.dtype != dt for m in more):
        out = np.empty_like(x)
        kernel(out, x, *more, *[np.empty_like(x, k) for k in kinds])
        return out
    out = np.empty_like(x)  # (x's layout, as a ufunc's result: PyTorch's too)
    rows = [np.empty(BLOCK, k) for k in kinds]
    it = np.nditer((x, *more, out), flags=("external_loop", "buffered", "zerosize_ok"),
                   op_flags=[["readonly"]] * (1 + len(more)) + [["writeonly"]],
                   buffersize=BLOCK, order="K")
    with it:
        for ops in it:
            k = ops[0].shape[0]
            kernel(ops[-1], *ops[:-1], *[r[:k] for r in rows])
    return out


def _c(kernel: Any, name: str, *params: float) -> Any:
    """Put the eager kernel ``name`` (``_kernels_loader.activation``; its backward where the
    blockwise kernel takes a gradient) in front of ``kernel``."""
    kernel.c_kernel = (name, params)
    return kernel


# ---------------------------------------------------------------------------------------------
# kernels: out first, then the operands, then the scratch rows


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


_K = 0.044715


# GELU's derivative D = Phi(x) + x phi(x) with Phi(-|x|) = erfc(|x|/sqrt2)/2 by Abramowitz and
# Stegun 7.1.26: erfc(z) = t (a1 + a2 t + ... + a5 t^4) exp(-z^2), t = 1/(1 + p z), |error| <=
# 1.5e-7 (the approximation PyTorch's float32 CPU kernels use for erf). exp(-z^2) = exp(-x^2/2) is
# phi's too, so one exponential serves both: with w = exp(-x^2/2) (|x|/sqrt(2pi) - h) + 1/2,
# h = t (a1 + ... + a5 t^4) / 2 (w >= 0), D = 1/2 + w for x >= +0 and 1/2 - w for x <= -0 (the
# sign flipped as a bit: no masked copy, no copysign, both slow in NumPy).
_AS_K = math.sqrt(2.0) / 0.3275911  # t = K / (K + |x|)


_AS_H = tuple(0.5 * a for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027,
                                 1.061405429))


_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def sig_into(s: Any, x: Any, e: Any, b: Any) -> None:
    """s = sigmoid(x), stably: where(x >= 0, 1, e) / (1 + e), e = exp(-|x|)."""
    np.abs(x, out=e)
    np.negative(e, out=e)
    np.exp(e, out=e)
    np.greater_equal(x, 0, out=b)
    np.maximum(e, b, out=s)  # 1 where x >= 0 (e <= 1), e elsewhere (nan stays nan)
    e += 1
    s /= e


_c(sig_into, "sigmoid")  # float32 (1 ulp) and float64


def sigmoid_backward(o: Any, y: Any, g: Any, s: Any) -> None:
    """grad * y * (1 - y), y = sigmoid(x) (the saved result)."""
    np.subtract(1, y, out=s)
    np.multiply(g, y, out=o)
    o *= s


_c(sigmoid_backward, "sigmoid")  # (bit for bit these passes, in one)


def tanh_backward(o: Any, y: Any, g: Any, s: Any) -> None:
    """grad * (1 - y^2), y = tanh(x) (the saved result)."""
    np.multiply(y, y, out=s)
    np.subtract(1, s, out=s)
    np.multiply(g, s, out=o)


_c(tanh_backward, "tanh")  # (bit for bit)


def silu(o: Any, x: Any, e: Any, b: Any) -> None:
    """x * sigmoid(x)."""
    sig_into(o, x, e, b)
    o *= x


_c(silu, "silu")


def silu_backward(o: Any, x: Any, g: Any, s: Any, e: Any, b: Any) -> None:
    """grad * s * (1 + x (1 - s)), s = sigmoid(x)."""
    sig_into(s, x, e, b)
    np.subtract(1, s, out=e)
    e *= x
    e += 1
    np.multiply(g, s, out=o)
    o *= e


_c(silu_backward, "silu")


def mish(o: Any, x: Any, a: Any, c: Any) -> None:
    """x * tanh(softplus(x))."""
    _softplus_into(a, x, c)
    np.tanh(a, out=a)
    np.multiply(x, a, out=o)


_c(mish, "mish")


def mish_backward(o: Any, x: Any, g: Any, t: Any, c: Any, e: Any, b: Any) -> None:
    """grad * (t + x sigmoid(x) (1 - t^2)), t = tanh(softplus(x))."""
    _softplus_into(t, x, c)
    np.tanh(t, out=t)
    sig_into(c, x, e, b)
    c *= x
    np.multiply(t, t, out=e)
    np.subtract(1, e, out=e)
    c *= e
    c += t
    np.multiply(g, c, out=o)


_c(mish_backward, "mish")


def softplus(beta: float, threshold: float) -> Any:
    """The kernel of log(1 + exp(beta x)) / beta, x where beta x > threshold."""
    def kernel(o: Any, x: Any, bx: Any, c: Any, b: Any) -> None:
        np.multiply(x, beta, out=bx)
        _softplus_into(o, bx, c)
        o /= beta
        np.greater(bx, threshold, out=b)
        np.copyto(o, x, where=b)
    return _c(kernel, "softplus", beta, threshold)


def softplus_backward(beta: float, threshold: float) -> Any:
    """The kernel of grad * sigmoid(beta x), grad where beta x > threshold."""
    def kernel(o: Any, x: Any, g: Any, bx: Any, s: Any, e: Any, b: Any) -> None:
        np.multiply(x, beta, out=bx)
        sig_into(s, bx, e, b)
        np.multiply(g, s, out=o)
        np.greater(bx, threshold, out=b)
        np.copyto(o, g, where=b)
    return _c(kernel, "softplus", beta, threshold)


def elu(alpha: float, scale: float, input_scale: float) -> Any:
    """The kernel of scale * (x if x > 0 else alpha * expm1(x * input_scale)), as
    max(x, 0) * scale + expm1(min(x, 0) * input_scale) * (alpha * scale) (one term is 0)."""
    def kernel(o: Any, x: Any, s: Any) -> None:
        np.minimum(x, 0, out=s)
        s *= input_scale
        np.expm1(s, out=s)
        s *= alpha * scale
        np.maximum(x, 0, out=o)
        o *= scale
        o += s
    return _c(kernel, "elu", alpha, scale, input_scale)


def elu_backward(alpha: float, scale: float, input_scale: float) -> Any:
    """The kernel of grad * (exp(x * input_scale) * (alpha * scale * input_scale)) where x <= 0,
    grad * scale elsewhere (nan x too, as PyTorch); the branches as masks (no masked copy)."""
    def kernel(o: Any, x: Any, g: Any, s: Any, b: Any) -> None:
        np.fmin(x, 0, out=s)  # (0 for nan x: the masked-out branch stays finite)
        s *= input_scale
        np.exp(s, out=s)
        s *= alpha * scale * input_scale
        np.less_equal(x, 0, out=b)
        s *= b
        np.logical_not(b, out=b)
        np.multiply(b, scale, out=o)  # scale where not x <= 0, else 0
        o += s
        o *= g
    return _c(kernel, "elu", alpha, scale, input_scale)


def hardswish(o: Any, x: Any) -> None:
    """x * min(max(x + 3, 0), 6) / 6."""
    np.add(x, 3, out=o)
    np.maximum(o, 0, out=o)
    np.minimum(o, 6, out=o)
    o *= x
    o /= 6


def hardswish_backward(o: Any, x: Any, g: Any, b: Any) -> None:
    """0 where x <= -3, grad * (x / 3 + 1/2) where -3 < x < 3, grad elsewhere (nan x: grad)."""
    np.divide(x, 3, out=o)
    o += 0.5
    o *= g
    np.less(x, 3, out=b)
    np.logical_not(b, out=b)
    np.copyto(o, g, where=b)
    np.less_equal(x, -3, out=b)
    np.copyto(o, 0, where=b)


def logsigmoid(o: Any, x: Any, a: Any) -> None:
    """min(x, 0) - log1p(exp(-|x|))."""
    np.abs(x, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    np.log1p(a, out=a)
    np.minimum(x, 0, out=o)
    o -= a


_c(logsigmoid, "logsigmoid")  # float32


def logsigmoid_backward(o: Any, x: Any, g: Any, n: Any, e: Any, b: Any) -> None:
    """grad * sigmoid(-x)."""
    np.negative(x, out=n)
    sig_into(o, n, e, b)
    o *= g


_c(logsigmoid_backward, "logsigmoid")


def gelu_tanh(o: Any, x: Any) -> None:
    """x/2 (1 + tanh(u))."""
    _gelu_tanh_t(o, x)
    o += 1
    o *= x
    o *= 0.5


def gelu_tanh_backward(o: Any, x: Any, g: Any, t: Any, a: Any) -> None:
    """grad * (0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3k x^2)), t recomputed from x."""
    _gelu_tanh_t(t, x)
    np.multiply(x, x, out=a)
    a *= 3 * _K * 0.5 * _SQRT_2_OVER_PI
    a += 0.5 * _SQRT_2_OVER_PI              # 0.5 c (1 + 3k x^2)
    np.multiply(t, t, out=o)
    o -= 1
    o *= x
    o *= a                                  # -0.5 c x (1 - t^2)(1 + 3k x^2)
    np.multiply(t, 0.5, out=a)
    o -= a
    o -= 0.5                                # -(derivative)
    o *= g
    np.negative(o, out=o)


def gelu_backward(o: Any, x: Any, g: Any, a: Any, t: Any, u: Any) -> None:
    """grad * (Phi(x) + x phi(x)), Phi from x (nothing saved but x); nan at +-inf as PyTorch.
    Scratch: a, t of x's dtype, u its unsigned integer of the same size."""
    f = x.dtype.type
    np.abs(x, out=a)
    np.add(a, f(_AS_K), out=t)
    np.divide(f(_AS_K), t, out=t)
    np.multiply(t, f(_AS_H[4]), out=o)
    for c in _AS_H[3::-1]:
        o += f(c)
        o *= t
    a *= f(_INV_SQRT_2PI)
    a -= o                                  # |x|/sqrt(2pi) - h
    np.multiply(x, x, out=t)
    t *= f(-0.5)
    np.exp(t, out=t)
    a *= t
    a += f(0.5)                             # w
    ints = u.dtype.type
    np.bitwise_and(x.view(u.dtype), ints(1 << (8 * u.itemsize - 1)), out=u)
    ab = a.view(u.dtype)
    np.bitwise_xor(ab, u, out=ab)           # -w where x's sign bit is set
    np.add(a, f(0.5), out=o)
    o *= g


def _softplus_into(a: Any, x: Any, c: Any) -> None:
    """a = where(x > 0, x, 0) + log1p(exp(-|x|)) (c: scratch)."""
    np.abs(x, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    np.log1p(a, out=a)
    np.maximum(x, 0, out=c)
    a += c


def _gelu_tanh_t(t: Any, x: Any) -> None:
    """t = tanh(sqrt(2/pi) * (x + 0.044715 x^3)), as (x^2 * k + 1) * x * c."""
    np.multiply(x, x, out=t)
    t *= _K
    t += 1
    t *= x
    t *= _SQRT_2_OVER_PI
    np.tanh(t, out=t)
