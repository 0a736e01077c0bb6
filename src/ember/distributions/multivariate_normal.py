"""``MultivariateNormal(loc, covariance_matrix=None, precision_matrix=None, scale_tril=None)``."""

from __future__ import annotations

import math
from typing import Any

from . import constraints
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(mat: Any, vec: Any) -> Any:
    """Matrix-vector product broadcasting the batch dimensions."""
    return (mat @ vec.unsqueeze(-1)).squeeze(-1)


def _tri_solve(low: Any, rhs: Any) -> Any:
    """low^-1 rhs for lower-triangular ``low`` (..., n, n) and vectors ``rhs`` (..., n), batched."""
    import ember

    shape = ember.broadcast_shapes(tuple(low.shape[:-2]), tuple(rhs.shape[:-1]))
    n = low.shape[-1]
    a = low.tril().expand(tuple(shape) + (n, n))  # only the lower triangle is read
    b = rhs.expand(tuple(shape) + (n,)).unsqueeze(-1)
    return ember.linalg.solve(a, b).squeeze(-1)


def _batch_mahalanobis(low: Any, diff: Any) -> Any:
    """diff^T (low low^T)^-1 diff, batched."""
    return _tri_solve(low, diff).pow(2).sum(-1)


def _precision_to_scale_tril(p: Any) -> Any:
    import ember

    return ember.linalg.cholesky(ember.linalg.inv(p))


class MultivariateNormal(Distribution):
    """A Gaussian over vectors (event_shape ``(k,)``), given by exactly one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``; reparameterised."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True
    _param_event_dims = {"loc": 1, "covariance_matrix": 2, "precision_matrix": 2, "scale_tril": 2}

    def __init__(self, loc: Any, covariance_matrix: Any = None, precision_matrix: Any = None,
                 scale_tril: Any = None, validate_args: bool | None = None) -> None:
        import ember

        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified."
            )
        mat = next(m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None)
        if mat.dim() < 2:
            name = ["covariance_matrix", "precision_matrix", "scale_tril"][given.index(True)]
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        batch_shape = ember.broadcast_shapes(tuple(mat.shape[:-2]), tuple(loc.shape[:-1]))
        k = loc.shape[-1]
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(tuple(batch_shape) + (-1, -1))
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(tuple(batch_shape) + (-1, -1))
        else:
            self.precision_matrix = precision_matrix.expand(tuple(batch_shape) + (-1, -1))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, (k,), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    @lazy_property
    def scale_tril(self) -> Any:
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def covariance_matrix(self) -> Any:
        low = self._unbroadcasted_scale_tril
        return (low @ low.mT).expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def precision_matrix(self) -> Any:
        import ember

        return ember.linalg.inv(self.covariance_matrix)

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def variance(self) -> Any:
        low = self._unbroadcasted_scale_tril
        return low.pow(2).sum(-1).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape: Any = ()) -> Any:
        import ember

        shape = self._extended_shape(sample_shape)
        eps = ember.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self) -> Any:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        k = self._event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self) -> Any:
        k = self._event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        if len(self._batch_shape) == 0:
            return h
        return h.expand(self._batch_shape)
