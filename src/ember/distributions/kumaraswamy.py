"""``Kumaraswamy(concentration1, concentration0)``: a Beta look-alike with a closed-form CDF."""

from __future__ import annotations

from typing import Any

from . import constraints
from ._special import digamma, lgamma
from .distribution import Distribution
from .gumbel import _EULER
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Kumaraswamy"]


def _moment(a: Any, b: Any, n: int) -> Any:
    """E[X^n] = b B(1 + n / a, b)."""
    arg1 = 1 + n / a
    return b * (lgamma(arg1) + lgamma(b) - lgamma(arg1 + b)).exp()


class Kumaraswamy(TransformedDistribution):
    """Density a b x^(a-1) (1 - x^a)^(b-1) on (0, 1), a = ``concentration1``,
    b = ``concentration0``; reparameterised."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: bool | None = None) -> None:
        import ember

        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(ember.zeros_like(self.concentration0), ember.ones_like(self.concentration0),
                       validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(tuple(batch_shape))
        new.concentration0 = self.concentration0.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    def __repr__(self) -> str:
        return Distribution.__repr__(self)

    @property
    def mean(self) -> Any:
        return _moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Any:
        import ember

        a, b = self.concentration1, self.concentration0
        log_mode = (a.reciprocal() * ((a - 1).log() - (a * b - 1).log()))
        return ember.where((a < 1) | (b < 1), float("nan"), log_mode.exp())

    @property
    def variance(self) -> Any:
        a, b = self.concentration1, self.concentration0
        return _moment(a, b, 2) - self.mean.pow(2)

    def entropy(self) -> Any:
        a, b = self.concentration1, self.concentration0
        harmonic_b = digamma(b + 1) + _EULER
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic_b - (a * b).log()


