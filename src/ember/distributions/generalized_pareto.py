"""``GeneralizedPareto(loc, scale, concentration)``: the distribution of threshold excesses."""

from __future__ import annotations

import math
from typing import Any

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """CDF 1 - (1 + xi z)^(-1/xi), z = (x - loc) / scale, xi = ``concentration`` (1 - e^-z at
    xi = 0); support [loc, inf) for xi >= 0, [loc, loc - scale / xi] for xi < 0. As in PyTorch,
    values outside the support give the formulas' values (NaN where undefined), not -inf."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, concentration: Any,
                 validate_args: bool | None = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.size(), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        import ember

        upper = ember.where(self.concentration < 0,
                            self.loc - self.scale / self.concentration,
                            ember.full_like(self.loc, math.inf))
        return constraints.interval(self.loc, upper)

    def _parts(self) -> tuple:
        import ember

        zero = self.concentration.abs() <= 1e-8  # PyTorch: isclose(concentration, 0)
        safe = ember.where(zero, ember.ones_like(self.concentration), self.concentration)
        return zero, safe

    def rsample(self, sample_shape: Any = ()) -> Any:
        import ember

        shape = self._extended_shape(sample_shape)
        u = ember.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value: Any) -> Any:
        import ember

        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, xi = self._parts()
        lp = ember.where(zero, -z, -(1.0 / xi + 1.0) * ember.log1p(xi * z))
        return lp - self.scale.log()

    def log_survival_function(self, value: Any) -> Any:
        import ember

        z = (value - self.loc) / self.scale
        zero, xi = self._parts()
        return ember.where(zero, -z, -ember.log1p(xi * z) / xi)

    def cdf(self, value: Any) -> Any:
        import ember

        if self._validate_args:
            self._validate_sample(value)
        c = -ember.expm1(self.log_survival_function(value))
        return ember.where(c >= 0, c, ember.full_like(c, math.nan))

    def icdf(self, value: Any) -> Any:
        import ember

        zero, xi = self._parts()
        log1m = ember.log1p(-value)
        z = ember.where(zero, -log1m, ember.expm1(-xi * log1m) / xi)
        return self.loc + self.scale * z

    @property
    def mean(self) -> Any:
        import ember

        xi = self.concentration
        m = self.loc + self.scale / (1 - xi)
        return ember.where(xi < 1, m, ember.full_like(m, math.nan))

    @property
    def variance(self) -> Any:
        import ember

        xi = self.concentration
        v = self.scale.pow(2) / ((1 - xi).pow(2) * (1 - 2 * xi))
        return ember.where(xi < 0.5, v, ember.full_like(v, math.nan))

    @property
    def mode(self) -> Any:
        return self.loc

    def entropy(self) -> Any:
        return self.scale.log() + self.concentration + 1
