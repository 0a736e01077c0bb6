"""``Poisson(rate)``: counts of events with mean ``rate``."""

from __future__ import annotations

from typing import Any

from . import constraints
from ._special import lgamma
from .distribution import ExponentialFamily
from .utils import broadcast_all, xlogy

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """P(k) = rate^k exp(-rate) / k! for k = 0, 1, 2, ... (samples from ember's generator)."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.size(), validate_args=validate_args)

    @property
    def mean(self) -> Any:
        return self.rate

    @property
    def mode(self) -> Any:
        return self.rate.floor()

    @property
    def variance(self) -> Any:
        return self.rate

    def sample(self, sample_shape: Any = ()) -> Any:
        import ember

        shape = tuple(self._extended_shape(sample_shape))
        with ember.no_grad():
            return ember.poisson(self.rate.expand(shape))  # PyTorch's

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - lgamma(value + 1)

    # exponential-family form: theta = log(rate), F(theta) = e^theta
    @property
    def _natural_params(self) -> tuple:
        return (self.rate.log(),)

    def _log_normalizer(self, x: Any) -> Any:
        return x.exp()
