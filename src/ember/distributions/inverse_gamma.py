"""``InverseGamma(concentration, rate)``: 1 / X for X ~ Gamma(concentration, rate)."""

from __future__ import annotations

from typing import Any

from . import constraints
from ._special import digamma, lgamma
from .distribution import Distribution
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """Density rate^c x^(-c-1) exp(-rate / x) / Gamma(c); reparameterised (implicitly)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        import ember

        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -ember.ones_like(base.rate)
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    def __repr__(self) -> str:
        return repr(self.base_dist).replace("Gamma(", "InverseGamma(", 1)

    @property
    def concentration(self) -> Any:
        return self.base_dist.concentration

    @property
    def rate(self) -> Any:
        return self.base_dist.rate

    @property
    def mean(self) -> Any:
        import ember

        c = self.concentration
        return ember.where(c > 1, self.rate / (c - 1), float("inf"))

    @property
    def mode(self) -> Any:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Any:
        import ember

        c = self.concentration
        return ember.where(c > 2, self.rate.pow(2) / ((c - 1).pow(2) * (c - 2)), float("inf"))

    def entropy(self) -> Any:
        c = self.concentration
        return c + self.rate.log() + lgamma(c) - (1 + c) * digamma(c)
