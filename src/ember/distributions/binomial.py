"""``Binomial(total_count=1, probs=None, logits=None)``: successes in ``total_count`` trials."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import constraints
from ._special import lgamma
from .bernoulli import _one_of
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Binomial"]


class Binomial(Distribution):
    """The number of successes in ``total_count`` independent trials of probability ``probs``."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count: Any = 1, probs: Any = None, logits: Any = None,
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

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> Any:
        return constraints.integer_interval(0, self.total_count)

    @lazy_property
    def logits(self) -> Any:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Any:
        return logits_to_probs(self.logits, is_binary=True)

    def __repr__(self) -> str:
        parts = []
        for p in ("total_count", "probs", "logits"):
            if p in self.__dict__:
                v = self.__dict__[p]
                parts.append(f"{p}: {v if v.numel() == 1 else v.size()}")
        return f"Binomial({', '.join(parts)})"

    @property
    def mean(self) -> Any:
        return self.total_count * self.probs

    @property
    def mode(self) -> Any:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Any:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Any:
        import ember

        from ..ops.random import default_generator
        from ._sampling import binomial

        shape = tuple(self._extended_shape(sample_shape))
        with ember.no_grad():
            p = np.ascontiguousarray(self.probs.detach().expand(shape).cpu().numpy())
            n = np.ascontiguousarray(self.total_count.expand(shape).cpu().numpy()).astype(p.dtype)
        draw = binomial(default_generator, n.reshape(-1), p.reshape(-1))  # PyTorch's sampler
        return ember.as_tensor(draw.reshape(shape), device=self.probs.device)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        logits = self.logits
        log_binom = lgamma(n + 1) - lgamma(value + 1) - lgamma(n - value + 1)
        # log(1 - p) = -softplus(l); softplus(l) = (l + |l|) / 2 + log1p(exp(-|l|)) never
        # overflows, and its gradient at l = 0 is the right 1/2 (max(l, 0) would give 1)
        normalize = n * (0.5 * (logits + logits.abs()) + (-logits.abs()).exp().log1p())
        return log_binom + value * logits - normalize

    def entropy(self) -> Any:
        total = int(self.total_count.max())
        if not bool((self.total_count == total).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Any:
        import ember

        total = int(self.total_count.max())
        if not bool((self.total_count == total).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = ember.arange(1 + total, dtype=self.total_count.dtype, device=self.total_count.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
