"""``OneHotCategorical(probs=None, logits=None)``: a Categorical draw as a one-hot vector."""

from __future__ import annotations

from typing import Any

from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["OneHotCategorical"]


class OneHotCategorical(Distribution):
    """Samples are one-hot vectors of length K (event_shape ``(K,)``)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        param = self._categorical._param()
        super().__init__(param.size()[:-1], param.size()[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(OneHotCategorical, _instance)
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
        return f"OneHotCategorical({name}: {v if v.numel() == 1 else v.size()})"

    @property
    def _num_events(self) -> int:
        return self._categorical._num_events

    @property
    def param_shape(self) -> Any:
        return self._categorical.param_shape

    @property
    def mean(self) -> Any:
        return self._categorical.probs

    @property
    def mode(self) -> Any:
        from ..nn.functional import one_hot

        probs = self._categorical.probs
        return one_hot(probs.argmax(dim=-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self) -> Any:
        p = self._categorical.probs
        return p * (1 - p)

    def sample(self, sample_shape: Any = ()) -> Any:
        from ..nn.functional import one_hot

        probs = self._categorical.probs
        idx = self._categorical.sample(sample_shape)
        return one_hot(idx, self._num_events).to(probs.dtype)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        indices = value.max(-1)[1]
        return self._categorical.log_prob(indices)

    def entropy(self) -> Any:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Any:
        import ember

        n = self._num_events
        p = self._categorical._param()
        values = ember.eye(n, dtype=p.dtype, device=p.device)
        values = values.view((n,) + (1,) * len(self._batch_shape) + (n,))
        if expand:
            values = values.expand((n,) + tuple(self._batch_shape) + (n,))
        return values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose ``rsample`` passes gradients straight through: the forward value
    is the one-hot draw, the gradient is that of ``probs``."""

    has_rsample = True

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(OneHotCategoricalStraightThrough, _instance)
        return super().expand(batch_shape, _instance=new)

    def rsample(self, sample_shape: Any = ()) -> Any:
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())

    def __repr__(self) -> str:
        return super().__repr__().replace("OneHotCategorical(", "OneHotCategoricalStraightThrough(", 1)
