"""``Geometric(probs=None, logits=None)``: the number of failures before the first success."""

from __future__ import annotations

from typing import Any

from . import constraints
from .bernoulli import _one_of
from .distribution import Distribution
from .utils import broadcast_all, finfo_tiny, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Geometric"]


class Geometric(Distribution):
    """P(k) = (1 - p)^k p for k = 0, 1, 2, ..."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

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
        if self._validate_args and probs is not None:
            if not bool((self.probs > 0).all()):
                raise ValueError(
                    f"Expected parameter probs ({type(self.probs).__name__} of shape "
                    f"{tuple(self.probs.shape)}) of distribution {self!r} to satisfy the constraint "
                    f"Interval(lower_bound=0.0, upper_bound=1.0), but found invalid values:\n"
                    f"{self.probs}"
                )

    @lazy_property
    def logits(self) -> Any:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Any:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def mean(self) -> Any:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Any:
        import ember

        return ember.zeros_like(self.probs)

    @property
    def variance(self) -> Any:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Any = ()) -> Any:
        import ember

        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            p = self.probs
            u = ember.rand(shape, dtype=p.dtype, device=p.device).clamp(min=finfo_tiny(p))
            return (u.log() / (-p).log1p()).floor()

    def log_prob(self, value: Any) -> Any:
        import ember

        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        safe = ember.where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-safe).log1p() + probs.log()

    def entropy(self) -> Any:
        from ..nn.functional import binary_cross_entropy_with_logits

        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
