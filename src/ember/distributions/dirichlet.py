"""``Dirichlet(concentration)``: a point on the simplex, reparameterised through Gammas."""

from __future__ import annotations

from typing import Any

from . import constraints
from ._special import digamma, dirichlet, lgamma
from .distribution import ExponentialFamily
from .utils import xlogy

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Density prod x_i^(c_i - 1) / B(c) on the simplex; event_shape ``(K,)``."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True
    _param_event_dims = {"concentration": 1}

    def __init__(self, concentration: Any, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = concentration.size()
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    @property
    def mean(self) -> Any:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Any:
        import ember

        from ..nn.functional import one_hot

        c = self.concentration
        cm1 = (c - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, keepdim=True)
        all_below = (c < 1).all(-1, keepdim=True)
        hot = one_hot(c.argmax(-1), c.shape[-1]).to(mode.dtype)
        return ember.where(all_below, hot, mode)

    @property
    def variance(self) -> Any:
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0.pow(2) * (c0 + 1))

    def rsample(self, sample_shape: Any = ()) -> Any:
        shape = tuple(self._extended_shape(sample_shape))
        return dirichlet(self.concentration, shape)  # PyTorch's sampler

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (xlogy(c - 1, value).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1))

    def entropy(self) -> Any:
        c = self.concentration
        k = c.size(-1)
        c0 = c.sum(-1)
        return (lgamma(c).sum(-1) - lgamma(c0) - (k - c0) * digamma(c0)
                - ((c - 1.0) * digamma(c)).sum(-1))

    # exponential-family form: theta = concentration, F = sum lgamma(theta) - lgamma(sum theta)
    @property
    def _natural_params(self) -> tuple:
        return (self.concentration,)

    def _log_normalizer(self, x: Any) -> Any:
        return lgamma(x).sum(-1) - lgamma(x.sum(-1))
