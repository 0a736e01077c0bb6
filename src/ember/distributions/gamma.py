"""``Gamma(concentration, rate)``: reparameterised by implicit differentiation."""

from __future__ import annotations

from typing import Any

from . import constraints
from ._special import digamma, lgamma, standard_gamma
from .distribution import ExponentialFamily
from .utils import broadcast_all, finfo_tiny, xlogy

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Density rate^c x^(c-1) exp(-rate x) / Gamma(c). ``rsample`` differentiates the draw with
    respect to ``concentration`` implicitly (see ``ember/distributions/_special.py``)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.size(), validate_args=validate_args)

    @property
    def mean(self) -> Any:
        return self.concentration / self.rate

    @property
    def mode(self) -> Any:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Any:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Any:
        shape = tuple(self._extended_shape(sample_shape))
        value = standard_gamma(self.concentration, shape) / self.rate.expand(shape)
        return value.clamp(min=finfo_tiny(value))

    def log_prob(self, value: Any) -> Any:
        import ember

        if self._validate_args:
            self._validate_sample(value)
        value = ember.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        c, r = self.concentration, self.rate
        return xlogy(c, r) + xlogy(c - 1, value) - r * value - lgamma(c)

    def entropy(self) -> Any:
        c = self.concentration
        return c - self.rate.log() + lgamma(c) + (1.0 - c) * digamma(c)

    def cdf(self, value: Any) -> Any:
        """P(X <= value): the regularised incomplete gamma function, differentiable in the
        value, the rate and the concentration (PyTorch: not in the concentration)."""
        from ._special import gammainc_t

        if self._validate_args:
            self._validate_sample(value)
        c, x = broadcast_all(self.concentration, value * self.rate)
        return gammainc_t(c, x)

    # exponential-family form: theta = (concentration - 1, -rate),
    # F = lgamma(theta_1 + 1) - (theta_1 + 1) log(-theta_2)
    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x: Any, y: Any) -> Any:
        return lgamma(x + 1) - (x + 1) * (-y).log()
