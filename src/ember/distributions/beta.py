"""``Beta(concentration1, concentration0)``: a probability, reparameterised through Gammas."""

from __future__ import annotations

from typing import Any

from . import constraints
from ._special import digamma, dirichlet, lgamma
from .distribution import ExponentialFamily
from .utils import broadcast_all, xlogy

__all__ = ["Beta"]


class Beta(ExponentialFamily):
    """Density x^(a-1) (1-x)^(b-1) / B(a, b) with a = ``concentration1``, b = ``concentration0``."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        super().__init__(self.concentration1.size(), validate_args=validate_args)

    @property
    def mean(self) -> Any:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Any:
        import ember

        a, b = self.concentration1, self.concentration0
        am1, bm1 = (a - 1).clamp(min=0.0), (b - 1).clamp(min=0.0)
        mode = am1 / (am1 + bm1)  # nan when a <= 1 and b <= 1 without both below 1, as PyTorch
        return ember.where((a < 1) & (b < 1), (a >= b).to(mode.dtype), mode)

    @property
    def variance(self) -> Any:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Any = ()) -> Any:
        shape = tuple(self._extended_shape(sample_shape))
        import ember

        # PyTorch's: a Dirichlet over (concentration1, concentration0), its first coordinate
        conc = ember.stack([self.concentration1, self.concentration0], -1)
        return dirichlet(conc, shape + (2,)).select(-1, 0)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return (xlogy(a - 1, value) + xlogy(b - 1, 1 - value)
                + lgamma(a + b) - lgamma(a) - lgamma(b))

    def entropy(self) -> Any:
        a, b = self.concentration1, self.concentration0
        total = a + b
        return (lgamma(a) + lgamma(b) - lgamma(total) - (a - 1) * digamma(a)
                - (b - 1) * digamma(b) + (total - 2) * digamma(total))

    # exponential-family form: theta = (a, b), F = lgamma(a) + lgamma(b) - lgamma(a + b)
    @property
    def _natural_params(self) -> tuple:
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x: Any, y: Any) -> Any:
        return lgamma(x) + lgamma(y) - lgamma(x + y)
