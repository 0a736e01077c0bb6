"""``LowRankMultivariateNormal(loc, cov_factor, cov_diag)``: covariance W W^T + diag(D)."""

from __future__ import annotations

import math
from typing import Any

from . import constraints
from .distribution import Distribution
from .multivariate_normal import _batch_mv, _tri_solve
from .utils import lazy_property

__all__ = ["LowRankMultivariateNormal"]


class LowRankMultivariateNormal(Distribution):
    """A Gaussian whose covariance is low rank plus diagonal; densities use the Woodbury
    identity and the matrix determinant lemma (a Cholesky of the r x r capacitance matrix)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True
    _param_event_dims = {"loc": 1, "cov_factor": 2, "cov_diag": 1}

    def __init__(self, loc: Any, cov_factor: Any, cov_diag: Any,
                 validate_args: bool | None = None) -> None:
        import ember

        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        k = loc.shape[-1]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != (k,):
            raise ValueError(f"cov_factor must be a batch of matrices with shape {k} x m")
        if tuple(cov_diag.shape[-1:]) != (k,):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {(k,)}")
        batch_shape = tuple(ember.broadcast_shapes(tuple(loc.shape[:-1]),
                                                   tuple(cov_factor.shape[:-2]),
                                                   tuple(cov_diag.shape[:-1])))
        self.loc = loc.expand(batch_shape + (k,))
        self.cov_factor = cov_factor.expand(batch_shape + tuple(cov_factor.shape[-2:]))
        self.cov_diag = cov_diag.expand(batch_shape + (k,))
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = self._capacitance(cov_factor, cov_diag)
        super().__init__(batch_shape, (k,), validate_args=validate_args)

    @staticmethod
    def _capacitance(w: Any, d: Any) -> Any:
        """cholesky(I + W^T D^-1 W)."""
        import ember

        m = w.shape[-1]
        wt_dinv = w.mT / d.unsqueeze(-2)
        cap = wt_dinv @ w + ember.eye(m, dtype=w.dtype, device=w.device)
        return ember.linalg.cholesky(cap)

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def mode(self) -> Any:
        return self.loc

    @lazy_property
    def variance(self) -> Any:
        w = self._unbroadcasted_cov_factor
        v = w.pow(2).sum(-1) + self._unbroadcasted_cov_diag
        return v.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def covariance_matrix(self) -> Any:
        w = self._unbroadcasted_cov_factor
        cov = w @ w.mT + self._unbroadcasted_cov_diag.diag_embed()
        return cov.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def precision_matrix(self) -> Any:
        import ember

        return ember.linalg.inv(self.covariance_matrix)

    @lazy_property
    def scale_tril(self) -> Any:
        import ember

        return ember.linalg.cholesky(self.covariance_matrix)

    def rsample(self, sample_shape: Any = ()) -> Any:
        import ember

        shape = tuple(self._extended_shape(sample_shape))
        w = self._unbroadcasted_cov_factor
        eps_w = ember.randn(shape[:-1] + (w.shape[-1],), dtype=self.loc.dtype,
                            device=self.loc.device)
        eps_d = ember.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(w, eps_w) + self._unbroadcasted_cov_diag.sqrt() * eps_d

    def _log_det(self) -> Any:
        return (2 * self._capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                + self._unbroadcasted_cov_diag.log().sum(-1))

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        wt_dinv_diff = _batch_mv(w.mT, diff / d)
        m = (diff.pow(2) / d).sum(-1) - _tri_solve(self._capacitance_tril, wt_dinv_diff).pow(2).sum(-1)
        k = self._event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + self._log_det() + m)

    def entropy(self) -> Any:
        k = self._event_shape[0]
        h = 0.5 * (k * (1.0 + math.log(2 * math.pi)) + self._log_det())
        if len(self._batch_shape) == 0:
            return h
        return h.expand(self._batch_shape)
