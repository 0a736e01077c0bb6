"""``Gumbel(loc, scale)``: the distribution of maxima (type-I extreme value)."""

from __future__ import annotations

import math
from typing import Any

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, finfo_eps, finfo_tiny

__all__ = ["Gumbel"]

_EULER = 0.57721566490153286060


class Gumbel(Distribution):
    """Density exp(-(z + exp(-z))) / scale with z = (x - loc) / scale; reparameterised.

    (PyTorch builds it as a TransformedDistribution of a Uniform; ember computes it directly, so
    ``isinstance(d, TransformedDistribution)`` is False here.)"""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.size(), validate_args=validate_args)

    @property
    def mean(self) -> Any:
        return self.loc + self.scale * _EULER

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def stddev(self) -> Any:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Any:
        return self.stddev.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Any:
        import ember

        shape = self._extended_shape(sample_shape)
        u = ember.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        u = u.clamp(min=finfo_tiny(u), max=1 - finfo_eps(u))
        return self.loc - self.scale * (-u.log()).log()

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -(z + (-z).exp()) - self.scale.log()

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return (-(-(value - self.loc) / self.scale).exp()).exp()

    def icdf(self, value: Any) -> Any:
        return self.loc - self.scale * (-value.log()).log()

    def entropy(self) -> Any:
        return self.scale.log() + (1 + _EULER)
