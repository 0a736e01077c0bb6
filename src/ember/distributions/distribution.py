"""``Distribution``: the base class (shapes, sampling, validation) every distribution builds on."""

from __future__ import annotations

import warnings
from typing import Any

from .. import _size
from .._tensor_base import TensorBase
from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


def _fmt(value: Any) -> str:
    """A value as PyTorch's f-strings show it (a 0-d tensor prints as its number)."""
    if hasattr(value, "dim") and value.dim() == 0:
        return str(value.item())
    return str(value)


def _as_size(shape: Any) -> Any:
    if isinstance(shape, int):
        shape = (shape,)
    return _size.Size(tuple(int(s) for s in shape))


class Distribution:
    """Abstract base class for probability distributions (``torch.distributions.Distribution``).

    Args:
        batch_shape: the shape over which parameters are batched.
        event_shape: the shape of a single sample (without batching).
        validate_args: check parameters (and values passed to ``log_prob``...) against their
            constraints; defaults to ``Distribution.set_default_validate_args`` (True).
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = True
    arg_constraints: dict = {}
    support: Any = None
    # per parameter: how many trailing dimensions are not batch dimensions (for ``expand``)
    _param_event_dims: dict = {}

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions created afterwards."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: Any = (), event_shape: Any = (),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = _as_size(batch_shape)
        self._event_shape = _as_size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{type(self)} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param, None),
                                                             lazy_property):
                    continue  # not given: computed from another parameter
                value = getattr(self, param)
                valid = constraint.check(value)
                if not bool(valid.all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                        f"{constraint!r}, but found invalid values:\n{_fmt(value)}"
                    )

    # -- shapes ---------------------------------------------------------------------------------
    @property
    def batch_shape(self) -> Any:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Any:
        """The shape of a single sample."""
        return self._event_shape

    def _extended_shape(self, sample_shape: Any = ()) -> Any:
        return _as_size(tuple(_as_size(sample_shape)) + tuple(self._batch_shape)
                        + tuple(self._event_shape))

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        """A new distribution whose parameters are expanded to ``batch_shape`` (no copy).

        As in PyTorch, a subclass must define ``expand`` itself (usually with
        ``_get_checked_instance``); ember's own distributions share this implementation, which
        a subclass of one of them inherits unless it defines its own ``__init__``."""
        owner = _builtin_owner(type(self))
        if owner is None:
            raise NotImplementedError(
                f"{type(self).__name__}.expand(): a Distribution subclass must implement expand "
                "(new = self._get_checked_instance(Cls, _instance), set its expanded parameters, "
                "then Distribution.__init__(new, batch_shape, self.event_shape, "
                "validate_args=False))")
        batch_shape = _as_size(batch_shape)
        new = self._get_checked_instance(owner, _instance)
        for name, value in list(self.__dict__.items()):
            if name in ("_batch_shape", "_event_shape"):
                continue
            if name.startswith("_") or not isinstance(value, TensorBase):
                new.__dict__[name] = value  # plain attributes and private (unbroadcast) tensors
                continue
            # trailing non-batch dims: stored tensors are batch_shape + their own event part
            n = self._param_event_dims.get(name, max(value.dim() - len(self._batch_shape), 0))
            tail = tuple(value.shape[value.dim() - n:]) if n else ()
            new.__dict__[name] = value.expand(tuple(batch_shape) + tail)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    # -- statistics -----------------------------------------------------------------------------
    @property
    def mean(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement mean")

    @property
    def mode(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement mode")

    @property
    def variance(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement variance")

    @property
    def stddev(self) -> Any:
        return self.variance.sqrt()

    # -- sampling and densities -----------------------------------------------------------------
    def sample(self, sample_shape: Any = ()) -> Any:
        """Draw a sample of shape ``sample_shape + batch_shape + event_shape`` (no gradient)."""
        from ..autograd.grad_mode import no_grad

        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Any:
        """A reparameterised sample: gradients flow back to the parameters."""
        raise NotImplementedError(
            f"{type(self).__name__} has no reparameterised sampler (has_rsample=False): use "
            ".sample() with a score-function (REINFORCE) estimator, e.g. "
            "-(log_prob(sample) * advantage).mean()"
        )

    def sample_n(self, n: int) -> Any:
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning,
                      stacklevel=2)
        return self.sample(_size.Size((n,)))

    def log_prob(self, value: Any) -> Any:
        raise NotImplementedError

    def cdf(self, value: Any) -> Any:
        raise NotImplementedError

    def icdf(self, value: Any) -> Any:
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Any:
        raise NotImplementedError

    def entropy(self) -> Any:
        raise NotImplementedError

    def perplexity(self) -> Any:
        return self.entropy().exp()

    # -- validation -----------------------------------------------------------------------------
    def _validate_sample(self, value: Any) -> None:
        from .._tensor import Tensor

        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.shape) - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(
                "The right-most size of value must match event_shape: "
                f"{value.size()} vs {self._event_shape}."
            )
        actual = tuple(value.size())
        expected = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    "Value is not broadcastable with batch_shape+event_shape: "
                    f"{_as_size(actual)} vs {_as_size(expected)}."
                )
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{type(self)} does not define `support` to enable sample validation. "
                          "Please initialize the distribution with `validate_args=False` to turn "
                          "off validation.", stacklevel=2)
            return
        if support is None:
            return
        valid = support.check(value)
        if not bool(valid.all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) of the distribution {self!r}, but found "
                f"invalid values:\n{_fmt(value)}"
            )

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        parts = []
        for p in names:
            v = self.__dict__[p]
            parts.append(f"{p}: {v if v.numel() == 1 else v.size()}")
        return f"{type(self).__name__}({', '.join(parts)})"


def _builtin_owner(cls: type) -> type | None:
    """The nearest of ember's own distributions in ``cls``'s MRO (None for a user's direct
    subclass of Distribution, which must implement expand itself, as in PyTorch)."""
    for c in cls.__mro__:
        if c is Distribution or c is ExponentialFamily:
            return None
        if c.__module__.startswith(("ember.distributions.", "torch.distributions.")):
            return c
    return None


class ExponentialFamily(Distribution):
    """Marker base for exponential-family distributions (``torch.distributions.ExponentialFamily``)."""

    # p(x; theta) = h(x) exp(<theta, t(x)> - F(theta)): a family defines its natural parameters
    # theta (``_natural_params``), the log normaliser F (``_log_normalizer``) and
    # E[log h(x)] (``_mean_carrier_measure``); entropy and KL then follow from F's gradient.

    @property
    def _natural_params(self) -> tuple:
        raise NotImplementedError(f"{type(self).__name__} does not define _natural_params")

    def _log_normalizer(self, *natural_params: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define _log_normalizer")

    @property
    def _mean_carrier_measure(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define _mean_carrier_measure")

    def entropy(self) -> Any:
        """H = F(theta) - <theta, grad F(theta)> - E[log h(x)] (Bregman form), differentiable."""
        import ember

        params = [p.detach().requires_grad_() for p in self._natural_params]
        with ember.enable_grad():
            log_norm = self._log_normalizer(*params)
            grads = ember.autograd.grad(log_norm.sum(), params, create_graph=True)
        result = log_norm - self._mean_carrier_measure
        for p, g in zip(params, grads):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
