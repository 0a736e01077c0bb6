"""``Bernoulli(probs=None, logits=None)``: one coin flip (0 or 1)."""

from __future__ import annotations

from typing import Any

from . import constraints
from .distribution import ExponentialFamily
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli"]


def _one_of(probs: Any, logits: Any) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class Bernoulli(ExponentialFamily):
    """1 with probability ``probs`` (or ``sigmoid(logits)``), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            shape = self.probs.size()
        else:
            (self.logits,) = broadcast_all(logits)
            shape = self.logits.size()
        super().__init__(shape, validate_args=validate_args)

    @lazy_property
    def logits(self) -> Any:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Any:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Any:
        return (self.probs if "probs" in self.__dict__ else self.logits).size()

    @property
    def mean(self) -> Any:
        return self.probs

    @property
    def mode(self) -> Any:
        import ember

        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return ember.where(self.probs == 0.5, float("nan"), mode)

    @property
    def variance(self) -> Any:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Any:
        import ember

        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            p = self.probs.expand(shape)
            u = ember.rand(shape, dtype=p.dtype, device=p.device)
            return (u < p).to(p.dtype)

    def log_prob(self, value: Any) -> Any:
        from ..nn.functional import binary_cross_entropy_with_logits

        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Any:
        from ..nn.functional import binary_cross_entropy_with_logits

        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Any:
        import ember

        values = ember.arange(2, dtype=self._param_dtype(), device=self._param_device())
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values

    def _param_dtype(self) -> Any:
        return (self.probs if "probs" in self.__dict__ else self.logits).dtype

    def _param_device(self) -> Any:
        return (self.probs if "probs" in self.__dict__ else self.logits).device

    # exponential-family form: theta = logits, F(theta) = log(1 + e^theta)
    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple:
        return (self.logits,)

    def _log_normalizer(self, x: Any) -> Any:
        from ..nn.functional import softplus

        return softplus(x)
