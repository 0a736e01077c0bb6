"""``StudentT(df, loc=0.0, scale=1.0)``: heavy-tailed, reparameterised through a Gamma."""

from __future__ import annotations

import math
from typing import Any

from . import constraints
from ._special import digamma, lgamma, standard_gamma
from .distribution import Distribution
from .utils import broadcast_all, finfo_tiny

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t with ``df`` degrees of freedom, location ``loc`` and scale ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0,
                 validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(self.df.size(), validate_args=validate_args)

    @property
    def mean(self) -> Any:
        import ember

        return ember.where(self.df > 1, self.loc, float("nan"))

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def variance(self) -> Any:
        import ember

        m = ember.where(self.df > 2, self.scale.pow(2) * self.df / (self.df - 2), float("inf"))
        return ember.where(self.df <= 1, float("nan"), m)

    def rsample(self, sample_shape: Any = ()) -> Any:
        import ember

        shape = tuple(self._extended_shape(sample_shape))
        x = ember.randn(shape, dtype=self.df.dtype, device=self.df.device)
        chi2 = 2 * standard_gamma(0.5 * self.df, shape)  # chi-squared with df degrees
        y = x * (self.df / chi2.clamp(min=finfo_tiny(chi2))).sqrt()
        return self.loc + self.scale * y

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + lgamma(0.5 * self.df) - lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - z

    def entropy(self) -> Any:
        df = self.df
        lbeta = lgamma(0.5 * df) + math.lgamma(0.5) - lgamma(0.5 * (df + 1))
        return (self.scale.log() + 0.5 * (df + 1) * (digamma(0.5 * (df + 1)) - digamma(0.5 * df))
                + 0.5 * df.log() + lbeta)
