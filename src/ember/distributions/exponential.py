"""``Exponential(rate)``: waiting times of a Poisson process."""

from __future__ import annotations

from typing import Any

from . import constraints
from .distribution import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """The exponential distribution with ``rate`` (mean ``1 / rate``), reparameterised."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.size(), validate_args=validate_args)

    @property
    def mean(self) -> Any:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Any:
        import ember

        return ember.zeros_like(self.rate)

    @property
    def stddev(self) -> Any:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Any:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: Any = ()) -> Any:
        import ember

        shape = self._extended_shape(sample_shape)
        e = ember.empty(shape, dtype=self.rate.dtype, device=self.rate.device).exponential_()
        return e / self.rate  # PyTorch's

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Any) -> Any:
        return -(-value).log1p() / self.rate

    def entropy(self) -> Any:
        return 1.0 - self.rate.log()

    # exponential-family form: theta = -rate, F(theta) = -log(-theta)
    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple:
        return (-self.rate,)

    def _log_normalizer(self, x: Any) -> Any:
        return -(-x).log()
