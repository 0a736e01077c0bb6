"""``VonMises(loc, concentration)``: the circular normal distribution on [-pi, pi)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["VonMises"]


def _log_modified_bessel_fn(x: Any, order: int = 0) -> Any:
    """log I_order(x) for order 0 or 1 and x > 0, from the scaled functions (no overflow):
    log(I_order e^-x) + x (PyTorch has this private helper under the same name; callers use it)."""
    import ember

    if order not in (0, 1):
        raise ValueError(f"_log_modified_bessel_fn: order must be 0 or 1, got {order}")
    scaled = ember.special.i0e(x) if order == 0 else ember.special.i1e(x)
    return scaled.log() + x


def _log_i0(k: Any) -> Any:
    return _log_modified_bessel_fn(k, 0)


class VonMises(Distribution):
    """Density exp(k cos(x - loc)) / (2 pi I0(k)) on the circle, k = ``concentration``.
    Sampling uses Best and Fisher's rejection method (no ``rsample``, as in PyTorch)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.size(), validate_args=validate_args)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        return k * ((value - self.loc).cos() - 1) - math.log(2 * math.pi) - _log_i0(k) + k

    def sample(self, sample_shape: Any = ()) -> Any:
        """Draws in float64 by rejection (Best and Fisher 1979), returned in loc's dtype."""
        import ember

        shape = tuple(self._extended_shape(sample_shape))
        with ember.no_grad():
            loc = self.loc.expand(shape).detach().cpu().numpy().astype(np.float64).ravel()
            k = self.concentration.expand(shape).detach().cpu().numpy().astype(np.float64).ravel()
        with np.errstate(all="ignore"):
            tau = 1.0 + np.sqrt(1.0 + 4.0 * k * k)
            rho = (tau - np.sqrt(2.0 * tau)) / (2.0 * k)
            r = np.where(k < 1e-5, 1.0 / k + k, (1.0 + rho * rho) / (2.0 * rho))
        # PyTorch's rounds: float64 uniforms (3, *shape) for every element each round; an
        # acceptance overwrites the element, done or not, until all are done
        out = np.zeros_like(loc)
        done = np.zeros(loc.shape, bool)
        while not done.all():
            u = ember.rand((3, loc.size), dtype=ember.float64).numpy()
            z = np.cos(math.pi * u[0])
            f = (1.0 + r * z) / (r + z)
            c = k * (r - f)
            with np.errstate(all="ignore"):
                ok = (c * (2.0 - c) - u[1] > 0) | (np.log(c / u[1]) + 1.0 - c >= 0)
                theta = np.sign(u[2] - 0.5) * np.arccos(f)
            out = np.where(ok, theta, out)
            done |= ok
        x = np.mod(out + math.pi + loc, 2 * math.pi) - math.pi
        return ember.as_tensor(x.reshape(shape), dtype=self.loc.dtype, device=self.loc.device)

    @property
    def mean(self) -> Any:
        """The circular mean: ``loc``."""
        return self.loc

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def variance(self) -> Any:
        """The circular variance 1 - I1(k) / I0(k)."""
        import ember

        k = self.concentration
        return 1 - ember.special.i1e(k) / ember.special.i0e(k)
