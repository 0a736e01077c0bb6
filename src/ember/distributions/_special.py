"""Differentiable special functions and the Gamma sampler the distributions need.

``lgamma``, ``digamma`` and ``polygamma`` here carry gradients (lgamma' = digamma,
digamma' = polygamma(1), polygamma(n)' = polygamma(n + 1)), to any order. The values come from
``ember._special``.

``standard_gamma(alpha)`` draws Gamma(alpha, 1) samples as PyTorch does (``_sampling.py``) and is
reparameterised by *implicit differentiation*: for a sample x with CDF F(x; alpha),
dx/dalpha = -(dF/dalpha) / f(x; alpha). F is the regularised lower incomplete gamma function
(series below x < alpha + 1, continued fraction above, in float64), and dF/dalpha is its central
difference in alpha.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _backend
from .. import _special as sp
from ..autograd.function import Op


class _Polygamma(Op):
    """out = polygamma(n, x)          grad_x = grad * polygamma(n + 1, x)"""

    @staticmethod
    def forward(ctx: Any, x: Any, n: int) -> Any:
        ctx.save_for_backward(x)
        ctx.n = n
        if n == -1:
            return sp.lgamma(x)
        if n == 0:
            return sp.digamma(x)
        return sp.polygamma(n, x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad * ctx.call(_Polygamma, x, ctx.n + 1), None


def _float(x: Any) -> Any:
    if x._data.dtype.kind != "f":
        return x.float()
    return x


def lgamma(x: Any) -> Any:
    """log|Gamma(x)|, differentiable."""
    return _Polygamma.apply(_float(x), -1)


def digamma(x: Any) -> Any:
    """The derivative of lgamma, differentiable."""
    return _Polygamma.apply(_float(x), 0)


def polygamma(n: int, x: Any) -> Any:
    """The n-th derivative of digamma, differentiable."""
    return _Polygamma.apply(_float(x), int(n))


# ---------------------------------------------------------------------------------------------
def gammainc(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(a, x) = gamma(a, x) / Gamma(a) for a > 0, x >= 0, as float64 (``ember._special``'s
    kernel, the one ``torch.special.gammainc`` uses)."""
    return np.asarray(sp.gammainc(np.asarray(a, np.float64), np.asarray(x, np.float64)))


def _host(x: Any) -> np.ndarray:
    return _backend.to_numpy(x)


def _like(ref: Any, arr: np.ndarray) -> Any:
    """``arr`` in ``ref``'s dtype, on ``ref``'s device."""
    return _backend.to_device(arr.astype(ref.dtype), _backend.device_of(ref))


class _GammaInc(Op):
    """out = P(a, x)      grad_x = x^(a-1) e^-x / Gamma(a)      grad_a = dP/da (central difference)"""

    @staticmethod
    def forward(ctx: Any, a: Any, x: Any) -> Any:
        ctx.save_for_backward(a, x)
        a64, x64 = _host(a).astype(np.float64), np.maximum(_host(x).astype(np.float64), 0.0)
        return _like(a, gammainc(a64, x64))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, x = ctx.saved
        return grad * ctx.call(_GammaIncGrad, a, x, 0), grad * ctx.call(_GammaIncGrad, a, x, 1)


class _GammaIncGrad(Op):
    """The partial derivatives of P(a, x) (not differentiable further)."""

    @staticmethod
    def forward(ctx: Any, a: Any, x: Any, which: int) -> Any:
        a64 = _host(a).astype(np.float64)
        x64 = np.maximum(_host(x).astype(np.float64), 0.0)
        a64, x64 = np.broadcast_arrays(a64, x64)
        if which == 1:
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                d = np.exp((a64 - 1) * np.log(x64) - x64 - np.asarray(sp.lgamma(a64)))
            d = np.where(x64 > 0, d, 0.0)
        else:
            h = np.maximum(a64, 1e-3) * 1e-5
            d = (gammainc(a64 + h, x64) - gammainc(a64 - h, x64)) / (2 * h)
        return _like(a, np.where(np.isfinite(d), d, 0.0))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        raise RuntimeError("second derivatives of the incomplete gamma function are not "
                           "implemented in ember")


def gammainc_t(a: Any, x: Any) -> Any:
    """The regularised lower incomplete gamma P(a, x) of tensors, differentiable in a and x."""
    import ember

    a, x = ember.broadcast_tensors(a, x)
    return _GammaInc.apply(a, x)


def standard_gamma_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dx/dalpha for a Gamma(alpha, 1) sample x, by implicit differentiation (float64)."""
    a = np.asarray(alpha, np.float64)
    x = np.asarray(x, np.float64)
    h = np.maximum(a, 1e-3) * 1e-5
    dP = (gammainc(a + h, x) - gammainc(a - h, x)) / (2 * h)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_pdf = (a - 1) * np.log(x) - x - np.asarray(sp.lgamma(a))
        g = -dP * np.exp(-log_pdf)
    return np.where(np.isfinite(g), g, 0.0)


class _StandardGamma(Op):
    """out = a Gamma(alpha, 1) sample (drawn before)      grad_alpha = grad * dx/dalpha"""

    node_name = "StandardGammaBackward0"

    @staticmethod
    def forward(ctx: Any, alpha: Any, sample: Any) -> Any:
        ctx.save_for_backward(alpha, sample)
        return sample

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        alpha, sample = ctx.saved
        return grad * ctx.call(_StandardGammaGrad, alpha, sample), None


class _StandardGammaGrad(Op):
    """dx/dalpha of a Gamma sample (not differentiable further)."""

    @staticmethod
    def forward(ctx: Any, alpha: Any, sample: Any) -> Any:
        # computed on the host; a CUDA sample's gradient goes back to its device
        g = standard_gamma_grad(_host(alpha), _host(sample))
        return _like(alpha, g)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        raise RuntimeError("the second derivative of a Gamma sample with respect to its "
                           "concentration is not implemented in ember")


def standard_gamma(alpha: Any, shape: tuple, generator: Any = None) -> Any:
    """Gamma(alpha, 1) samples of ``shape`` (alpha broadcast to it), from ember's generator,
    reparameterised: gradients flow to ``alpha``."""
    import ember

    from ..ops.random import default_generator
    from ._sampling import standard_gamma as _draw

    a = np.array(alpha.detach().expand(shape).cpu().numpy(), order="C")  # (0-d stays 0-d)
    gen = default_generator if generator is None else generator
    draw = _draw(gen, a.reshape(-1)).reshape(a.shape)  # PyTorch's sampler
    sample = ember.as_tensor(draw, device=alpha.device)
    if alpha.requires_grad and ember.is_grad_enabled():
        return _StandardGamma.apply(alpha.expand(shape), sample)
    return sample


def _standard_gamma(input: Any, generator: Any = None) -> Any:
    """``torch._standard_gamma``: a Gamma(input, 1) sample of input's shape, PyTorch's sampler
    and stream, differentiable in ``input`` (zuko's generalised normal draws through it)."""
    return standard_gamma(input, tuple(input.shape), generator)


def _standard_gamma_grad(input: Any, output: Any) -> Any:
    """``torch._standard_gamma_grad``: d(sample)/d(concentration) at a sample ``output``."""
    return _StandardGammaGrad.apply(input, output)


def dirichlet(conc: Any, shape: tuple) -> Any:
    """PyTorch's ``_sample_dirichlet`` of ``conc`` broadcast to ``shape`` (..., K): float64
    gammas normalised in float64, rounded to conc's dtype, clamped to [its smallest normal, the
    float below 1]; reparameterised through the gammas."""
    g = standard_gamma(conc.double(), shape)
    x = (g / g.sum(-1, keepdim=True)).to(conc.dtype)
    dt = np.dtype(conc._data.dtype)
    return x.clamp(min=float(np.finfo(dt).tiny), max=float(np.nextafter(dt.type(1), dt.type(0))))
