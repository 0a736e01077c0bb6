"""``RelaxedOneHotCategorical(temperature, probs=None, logits=None)``: the Gumbel-softmax
(Concrete) distribution on the simplex, and its log-space base ``ExpRelaxedCategorical``."""

from __future__ import annotations

import math
from typing import Any

from .._tensor_base import TensorBase
from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    """The log of a Gumbel-softmax sample (event_shape ``(K,)``), reparameterised."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        param = self._categorical._param()
        super().__init__(param.size()[:-1], param.size()[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __getattr__(self, name: str) -> Any:
        if name in ("probs", "logits") and "_categorical" in self.__dict__:
            return getattr(self._categorical, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(temperature: {float(self.temperature)})" \
            if not hasattr(self.temperature, "numel") or self.temperature.numel() == 1 \
            else f"{type(self).__name__}()"

    @property
    def param_shape(self) -> Any:
        return self._categorical.param_shape

    def rsample(self, sample_shape: Any = ()) -> Any:
        import ember

        shape = self._extended_shape(sample_shape)
        logits = self._categorical.logits
        u = clamp_probs(ember.rand(shape, dtype=logits.dtype, device=logits.device))
        gumbels = -(-u.log()).log()
        scores = (logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value: Any) -> Any:
        import ember

        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits = self._categorical.logits
        temp = self.temperature
        if not isinstance(temp, TensorBase):
            temp = ember.tensor(float(temp), dtype=logits.dtype, device=logits.device)
        log_scale = math.lgamma(k) + temp.log() * (k - 1)
        score = logits - value * temp
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """Gumbel-softmax samples on the simplex: ``softmax((logits + Gumbel noise) / temperature)``;
    reparameterised (the straight road to discrete latent variables in a VAE)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
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
        return repr(self.base_dist).replace("ExpRelaxedCategorical", "RelaxedOneHotCategorical")


