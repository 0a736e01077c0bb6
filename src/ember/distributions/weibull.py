"""``Weibull(scale, concentration)``: scale * E^(1 / concentration) for E ~ Exponential(1)."""

from __future__ import annotations

from typing import Any

from . import constraints
from ._special import lgamma
from .distribution import Distribution
from .exponential import Exponential
from .gumbel import _EULER
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """The two-parameter Weibull distribution; reparameterised."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, scale: Any, concentration: Any, validate_args: bool | None = None) -> None:
        import ember

        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(ember.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal),
                      AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        import ember

        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(tuple(batch_shape))
        new.concentration = self.concentration.expand(tuple(batch_shape))
        new.concentration_reciprocal = new.concentration.reciprocal()
        base = self.base_dist.expand(batch_shape)
        base.rate = ember.ones_like(new.scale)
        transforms = [PowerTransform(exponent=new.concentration_reciprocal),
                      AffineTransform(loc=0, scale=new.scale)]
        TransformedDistribution.__init__(new, base, transforms, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __repr__(self) -> str:
        return Distribution.__repr__(self)

    @property
    def mean(self) -> Any:
        return self.scale * lgamma(1 + self.concentration_reciprocal).exp()

    @property
    def mode(self) -> Any:
        c = self.concentration
        return self.scale * ((c - 1) / c) ** c.reciprocal()

    @property
    def variance(self) -> Any:
        r = self.concentration_reciprocal
        return self.scale.pow(2) * (lgamma(1 + 2 * r).exp() - lgamma(1 + r).exp().pow(2))

    def entropy(self) -> Any:
        return (_EULER * (1 - self.concentration_reciprocal)
                + (self.scale * self.concentration_reciprocal).log() + 1)
