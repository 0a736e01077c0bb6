"""``RelaxedBernoulli(temperature, probs=None, logits=None)``: the binary Concrete distribution,
and its logit-space base ``LogitRelaxedBernoulli``."""

from __future__ import annotations

from typing import Any

from . import constraints
from .bernoulli import _one_of
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(Distribution):
    """(logistic noise + logits) / temperature, reparameterised."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        self.temperature = temperature
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

    def rsample(self, sample_shape: Any = ()) -> Any:
        import ember

        shape = self._extended_shape(sample_shape)
        logits = self.logits
        u = clamp_probs(ember.rand(shape, dtype=logits.dtype, device=logits.device))
        return (u.log() - (-u).log1p() + logits) / self.temperature

    def log_prob(self, value: Any) -> Any:
        import ember

        from ..nn.functional import softplus

        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        temp = self.temperature
        if not hasattr(temp, "_data"):
            temp = ember.tensor(float(temp), dtype=logits.dtype, device=logits.device)
        diff = logits - value * temp
        return temp.log() + diff - 2 * softplus(diff)


class RelaxedBernoulli(TransformedDistribution):
    """sigmoid of a LogitRelaxedBernoulli: values in (0, 1) that approach {0, 1} as the
    temperature goes to 0; reparameterised."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self) -> Any:
        return self.base_dist.temperature

    @property
    def logits(self) -> Any:
        return self.base_dist.logits

    @property
    def probs(self) -> Any:
        return self.base_dist.probs

    def __repr__(self) -> str:
        return repr(self.base_dist).replace("LogitRelaxedBernoulli", "RelaxedBernoulli")
