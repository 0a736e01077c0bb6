"""``Multinomial(total_count=1, probs=None, logits=None)``: class counts of ``total_count`` draws."""

from __future__ import annotations

from typing import Any

from . import constraints
from ._special import lgamma
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """Counts over K classes (event_shape ``(K,)``) of ``total_count`` Categorical draws.
    ``total_count`` is a Python int shared by the batch, as in PyTorch."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}

    def __init__(self, total_count: int = 1, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        param = self._categorical._param()
        super().__init__(param.size()[:-1], param.size()[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(Multinomial, _instance)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __getattr__(self, name: str) -> Any:
        if name in ("probs", "logits") and "_categorical" in self.__dict__:
            return getattr(self._categorical, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __repr__(self) -> str:
        p = self._categorical
        name = "probs" if "probs" in p.__dict__ else "logits"
        v = p.__dict__[name]
        return f"Multinomial({name}: {v if v.numel() == 1 else v.size()})"

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> Any:
        return constraints.multinomial(self.total_count)

    @property
    def mean(self) -> Any:
        return self._categorical.probs * self.total_count

    @property
    def variance(self) -> Any:
        p = self._categorical.probs
        return self.total_count * p * (1 - p)

    def sample(self, sample_shape: Any = ()) -> Any:
        import ember

        # PyTorch's: total_count categorical draws per sample, counted
        sample_shape = tuple(sample_shape)
        with ember.no_grad():
            samples = self._categorical.sample((self.total_count,) + sample_shape)
            samples = samples.permute(*range(1, samples.dim()), 0)
            counts = ember.zeros(tuple(self._extended_shape(sample_shape)), dtype=samples.dtype,
                                 device=samples.device)
            counts.scatter_add_(-1, samples, ember.ones_like(samples))
            return counts.type_as(self._categorical.probs)

    def log_prob(self, value: Any) -> Any:
        import ember

        if self._validate_args:
            self._validate_sample(value)
        logits = self._categorical.logits
        logits, value = ember.broadcast_tensors(logits, value)
        logits = ember.where((value == 0) & logits.isinf(), 0.0, logits)
        log_factorial_n = lgamma(value.sum(-1) + 1)
        log_factorial_xs = lgamma(value + 1).sum(-1)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)

    def entropy(self) -> Any:
        """-log n! + sum_i E[log x_i!] + n H(categorical), each x_i Binomial(n, p_i)."""
        import math

        import ember

        from .binomial import Binomial

        n = self.total_count
        probs = self._categorical.probs
        ks = ember.arange(n + 1, dtype=probs.dtype, device=probs.device)
        ks = ks.reshape((n + 1,) + (1,) * probs.dim())
        marginal = Binomial(n, probs, validate_args=False)
        expected_log_fact = (marginal.log_prob(ks).exp() * lgamma(ks + 1)).sum(0).sum(-1)
        return n * self._categorical.entropy() - math.lgamma(n + 1) + expected_log_fact
