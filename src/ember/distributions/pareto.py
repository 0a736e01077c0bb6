"""``Pareto(scale, alpha)``: scale * exp(E) for E ~ Exponential(alpha)."""

from __future__ import annotations

from typing import Any

from . import constraints
from .distribution import Distribution
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .utils import broadcast_all

__all__ = ["Pareto"]


class Pareto(TransformedDistribution):
    """Density alpha scale^alpha / x^(alpha + 1) for x >= scale; reparameterised."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    has_rsample = True

    def __init__(self, scale: Any, alpha: Any, validate_args: bool | None = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(tuple(batch_shape))
        new.alpha = self.alpha.expand(tuple(batch_shape))
        base = self.base_dist.expand(batch_shape)
        TransformedDistribution.__init__(new, base, [ExpTransform(),
                                                     AffineTransform(loc=0, scale=new.scale)],
                                         validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __repr__(self) -> str:
        return Distribution.__repr__(self)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self) -> Any:
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Any:
        return self.scale

    @property
    def variance(self) -> Any:
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self) -> Any:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())
