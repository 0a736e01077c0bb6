"""``HalfNormal(scale)``: |X| for X ~ Normal(0, scale)."""

from __future__ import annotations

import math
from typing import Any

from . import constraints
from .distribution import Distribution
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfNormal"]


class HalfNormal(TransformedDistribution):
    """The absolute value of a zero-mean Normal; reparameterised."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        base = Normal(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def scale(self) -> Any:
        return self.base_dist.scale

    def __repr__(self) -> str:
        s = self.scale
        return f"HalfNormal(scale: {s if s.numel() == 1 else s.size()})"

    @property
    def mean(self) -> Any:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def mode(self) -> Any:
        import ember

        return ember.zeros_like(self.scale)

    @property
    def variance(self) -> Any:
        return self.scale.pow(2) * (1 - 2 / math.pi)

    def log_prob(self, value: Any) -> Any:
        import ember

        if self._validate_args:
            self._validate_sample(value)
        lp = self.base_dist.log_prob(value) + math.log(2)
        return ember.where(value >= 0, lp, float("-inf"))

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Any) -> Any:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Any:
        return self.base_dist.entropy() - math.log(2)
