"""``NegativeBinomial(total_count, probs=None, logits=None)``: successes before ``total_count``
failures (a Gamma-Poisson mixture)."""

from __future__ import annotations

from typing import Any

from . import constraints
from ._special import lgamma
from .bernoulli import _one_of
from .distribution import Distribution
from .utils import broadcast_all, finfo_tiny, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    """P(k) = C(k + r - 1, k) (1 - p)^r p^k with r = ``total_count``, p = ``probs``."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
            shape = self.probs.size()
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
            shape = self.logits.size()
        super().__init__(shape, validate_args=validate_args)

    @lazy_property
    def logits(self) -> Any:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Any:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def mean(self) -> Any:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Any:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Any:
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape: Any = ()) -> Any:
        import ember

        from ._special import standard_gamma

        shape = tuple(self._extended_shape(sample_shape))
        with ember.no_grad():
            # PyTorch's: Gamma(total_count, rate=exp(-logits)).sample(), then poisson
            rate = standard_gamma(self.total_count.detach(), shape) / (-self.logits.detach()).exp()
            rate = rate.clamp(min=finfo_tiny(rate))
            return ember.poisson(rate)

    def log_prob(self, value: Any) -> Any:
        import ember

        from ..nn.functional import logsigmoid

        if self._validate_args:
            self._validate_sample(value)
        r, logits = self.total_count, self.logits
        log_unnormalized = r * logsigmoid(-logits) + value * logsigmoid(logits)
        log_norm = -lgamma(r + value) + lgamma(1.0 + value) + lgamma(r)
        log_norm = ember.where(r + value == 0, 0.0, log_norm)
        return log_unnormalized - log_norm
