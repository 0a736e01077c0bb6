"""``Categorical(probs=None, logits=None)``: one of K classes, batched over leading dimensions."""

from __future__ import annotations

from typing import Any

from . import constraints
from .bernoulli import _one_of
from .distribution import Distribution
from .utils import finfo_min, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


class Categorical(Distribution):
    """Class indices 0..K-1 with probabilities ``probs`` (normalised over the last dimension) or
    ``softmax(logits)``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True
    _param_event_dims = {"probs": 1, "logits": 1}

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            param = self.probs
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            param = self.logits
        self._num_events = param.size()[-1]
        batch_shape = param.size()[:-1] if param.dim() > 1 else ()
        super().__init__(batch_shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> Any:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Any:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Any:
        return logits_to_probs(self.logits)

    def _param(self) -> Any:
        return self.probs if "probs" in self.__dict__ else self.logits

    @property
    def param_shape(self) -> Any:
        return self._param().size()

    @property
    def mean(self) -> Any:
        import ember

        p = self._param()
        return ember.full(self._extended_shape(), float("nan"), dtype=p.dtype, device=p.device)

    @property
    def mode(self) -> Any:
        return self.probs.argmax(dim=-1)

    @property
    def variance(self) -> Any:
        return self.mean

    def sample(self, sample_shape: Any = ()) -> Any:
        import ember

        # PyTorch's: multinomial with replacement over the rows, one column per sample
        n = 1
        for d in tuple(sample_shape):
            n *= int(d)
        with ember.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = ember.multinomial(probs_2d, n, True).T
            return samples_2d.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value: Any) -> Any:
        import ember

        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = ember.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self) -> Any:
        logits = self.logits.clamp(min=finfo_min(self.logits))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Any:
        import ember

        values = ember.arange(self._num_events, dtype=ember.int64, device=self._param().device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
