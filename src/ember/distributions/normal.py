"""``Normal(loc, scale)``: the Gaussian, reparameterised."""

from __future__ import annotations

import math
from typing import Any

from . import constraints
from .distribution import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Normal"]


class Normal(ExponentialFamily):
    """The normal distribution with mean ``loc`` and standard deviation ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.size(), validate_args=validate_args)

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def stddev(self) -> Any:
        return self.scale

    @property
    def variance(self) -> Any:
        return self.scale.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Any:
        import ember

        shape = self._extended_shape(sample_shape)
        eps = ember.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale**2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - 0.5 * math.log(2 * math.pi)

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)).erf())

    def icdf(self, value: Any) -> Any:
        return self.loc + self.scale * (2 * value - 1).erfinv() * math.sqrt(2)

    def entropy(self) -> Any:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    # exponential-family form: theta = (loc / scale^2, -1 / (2 scale^2)),
    # F = -theta_1^2 / (4 theta_2) + log(pi / -theta_2) / 2
    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple:
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x: Any, y: Any) -> Any:
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()
