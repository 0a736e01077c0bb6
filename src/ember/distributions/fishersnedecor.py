"""``FisherSnedecor(df1, df2)``: the F distribution (a ratio of scaled chi-squares)."""

from __future__ import annotations

from typing import Any

from . import constraints
from ._special import lgamma, standard_gamma
from .distribution import Distribution
from .utils import broadcast_all, finfo_tiny

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """(X1 / df1) / (X2 / df2) with X_i chi-squared; reparameterised through Gammas."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Any, df2: Any, validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        super().__init__(self.df1.size(), validate_args=validate_args)

    @property
    def mean(self) -> Any:
        import ember

        return ember.where(self.df2 > 2, self.df2 / (self.df2 - 2), float("nan"))

    @property
    def mode(self) -> Any:
        import ember

        m = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return ember.where(self.df1 > 2, m, float("nan"))

    @property
    def variance(self) -> Any:
        import ember

        d1, d2 = self.df1, self.df2
        v = 2 * d2.pow(2) * (d1 + d2 - 2) / (d1 * (d2 - 2).pow(2) * (d2 - 4))
        return ember.where(d2 > 4, v, float("nan"))

    def rsample(self, sample_shape: Any = ()) -> Any:
        shape = tuple(self._extended_shape(sample_shape))
        x1 = standard_gamma(0.5 * self.df1, shape) / (0.5 * self.df1)
        x2 = standard_gamma(0.5 * self.df2, shape) / (0.5 * self.df2)
        tiny = finfo_tiny(x1)
        return (x1.clamp(min=tiny) / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        ct1, ct2 = 0.5 * self.df1, 0.5 * self.df2
        ct3 = self.df1 / self.df2
        t1 = lgamma(ct1 + ct2) - lgamma(ct1) - lgamma(ct2)
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3
