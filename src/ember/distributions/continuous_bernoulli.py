"""``ContinuousBernoulli(probs=None, logits=None, lims=(0.499, 0.501))``: a density on [0, 1]
proportional to p^x (1 - p)^(1 - x) (Loaiza-Ganem and Cunningham, 2019)."""

from __future__ import annotations

import math
from typing import Any

from . import constraints
from .bernoulli import _one_of
from .distribution import ExponentialFamily
from .utils import (
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """Density C(p) p^x (1 - p)^(1 - x) on [0, 1], reparameterised through its inverse CDF.
    Near p = 1/2 (inside ``lims``) the normaliser, mean, variance and inverse CDF use their
    Taylor expansions, where the closed forms divide 0 by 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs: Any = None, logits: Any = None, lims: tuple = (0.499, 0.501),
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            # PyTorch checks probs (before clamping them) whenever validate_args is given,
            # True or False, and not at all when it is left None
            if validate_args is not None and not bool(
                    constraints.unit_interval.check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
            shape = self.probs.size()
        else:
            (self.logits,) = broadcast_all(logits)
            shape = self.logits.size()
        self._lims = lims
        super().__init__(shape, validate_args=validate_args)

    @lazy_property
    def logits(self) -> Any:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Any:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> Any:
        return (self.probs if "probs" in self.__dict__ else self.logits).size()

    # -- helpers: the closed forms away from p = 1/2 ------------------------------------------------
    def _outside(self) -> Any:
        return (self.probs <= self._lims[0]) | (self.probs >= self._lims[1])

    def _cut(self) -> Any:
        import ember

        return ember.where(self._outside(), self.probs,
                           ember.full_like(self.probs, self._lims[0]))

    def _cont_bern_log_norm(self) -> Any:
        """log C(p), C(p) = 2 atanh(1 - 2p) / (1 - 2p) (2 at p = 1/2)."""
        import ember

        cut = self._cut()
        below = ember.where(cut <= 0.5, cut, ember.zeros_like(cut))
        above = ember.where(cut >= 0.5, cut, ember.ones_like(cut))
        log_norm = (ember.log1p(-cut) - cut.log()).abs().log() - ember.where(
            cut <= 0.5, ember.log1p(-2.0 * below), (2.0 * above - 1.0).log())
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return ember.where(self._outside(), log_norm, taylor)

    # -- statistics ---------------------------------------------------------------------------
    @property
    def mean(self) -> Any:
        import ember

        cut = self._cut()
        closed = cut / (2.0 * cut - 1.0) + 1.0 / (ember.log1p(-cut) - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return ember.where(self._outside(), closed, taylor)

    @property
    def stddev(self) -> Any:
        return self.variance.sqrt()

    @property
    def variance(self) -> Any:
        import ember

        cut = self._cut()
        closed = (cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2)
                  + 1.0 / (ember.log1p(-cut) - cut.log()).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return ember.where(self._outside(), closed, taylor)

    def sample(self, sample_shape: Any = ()) -> Any:
        import ember

        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Any:
        import ember

        shape = self._extended_shape(sample_shape)
        u = ember.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value: Any) -> Any:
        from ..nn.functional import binary_cross_entropy_with_logits

        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return (-binary_cross_entropy_with_logits(logits, value, reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value: Any) -> Any:
        import ember

        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut()
        closed = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = ember.where(self._outside(), closed, value)
        return ember.where(value <= 0.0, ember.zeros_like(value),
                           ember.where(value >= 1.0, ember.ones_like(value), unbounded))

    def icdf(self, value: Any) -> Any:
        import ember

        cut = self._cut()
        closed = ((ember.log1p(-cut + value * (2.0 * cut - 1.0)) - ember.log1p(-cut))
                  / (cut.log() - ember.log1p(-cut)))
        return ember.where(self._outside(), closed, value)

    def entropy(self) -> Any:
        import ember

        log_p0 = ember.log1p(-self.probs)
        log_p1 = self.probs.log()
        return self.mean * (log_p0 - log_p1) - self._cont_bern_log_norm() - log_p0

    @property
    def _natural_params(self) -> tuple:
        return (self.logits,)

    def _log_normalizer(self, x: Any) -> Any:
        """log of the normaliser as a function of the natural parameter (the logit)."""
        import ember

        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = ember.where(outside, x, ember.full_like(x, self._lims[0] - 0.5))
        closed = cut.expm1().abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return ember.where(outside, closed, taylor)
