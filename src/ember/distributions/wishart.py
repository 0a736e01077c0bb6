"""``Wishart(df, covariance_matrix=None, precision_matrix=None, scale_tril=None)``: the
distribution of sums of ``df`` outer products of Gaussian vectors."""

from __future__ import annotations

import math
from typing import Any

from . import constraints
from .chi2 import Chi2
from .distribution import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import lazy_property

__all__ = ["Wishart"]


class Wishart(ExponentialFamily):
    """Positive-definite p x p matrices with density proportional to
    |X|^((df - p - 1)/2) exp(-tr(S^-1 X)/2), S given by exactly one of ``covariance_matrix``,
    ``precision_matrix`` (S^-1) or ``scale_tril`` (S's Cholesky factor); df > p - 1.
    ``rsample`` uses Bartlett's decomposition, reparameterised in ``df`` and S."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0
    _param_event_dims = {"covariance_matrix": 2, "precision_matrix": 2, "scale_tril": 2}

    def __init__(self, df: Any, covariance_matrix: Any = None, precision_matrix: Any = None,
                 scale_tril: Any = None, validate_args: bool | None = None) -> None:
        import ember

        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril "
                             "may be specified.")
        mat = next(m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None)
        if mat.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading "
                             "batch dimensions")
        if not isinstance(df, ember.Tensor):
            df = ember.tensor(df, dtype=mat.dtype, device=mat.device)
        p = mat.shape[-1]
        batch_shape = ember.broadcast_shapes(tuple(mat.shape[:-2]), tuple(df.shape))
        self.df = df.expand(batch_shape)
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(tuple(batch_shape) + (-1, -1))
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(tuple(batch_shape) + (-1, -1))
        else:
            self.precision_matrix = precision_matrix.expand(tuple(batch_shape) + (-1, -1))
        validate = self._validate_args if validate_args is None else validate_args
        if validate and bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        super().__init__(batch_shape, (p, p), validate_args=validate_args)
        # factor after validation, so an invalid matrix gets the ValueError, not a LinAlgError
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    @property
    def arg_constraints(self) -> dict:  # type: ignore[override]
        p = self._event_shape[-1]
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(p - 1)}

    @lazy_property
    def scale_tril(self) -> Any:
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + (-1, -1))

    @lazy_property
    def covariance_matrix(self) -> Any:
        low = self._unbroadcasted_scale_tril
        return (low @ low.mT).expand(tuple(self._batch_shape) + (-1, -1))

    @lazy_property
    def precision_matrix(self) -> Any:
        import ember

        low = self._unbroadcasted_scale_tril
        return ember.linalg.inv(low @ low.mT).expand(tuple(self._batch_shape) + (-1, -1))

    @property
    def mean(self) -> Any:
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def mode(self) -> Any:
        import ember

        factor = self.df - self._event_shape[-1] - 1
        factor = ember.where(factor <= 0, ember.full_like(factor, math.nan), factor)
        return factor.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self) -> Any:
        v = self.covariance_matrix
        d = v.diagonal(dim1=-2, dim2=-1)
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * (v.pow(2)
                                                                 + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett(self, sample_shape: Any) -> Any:
        """L A A^T L^T with A lower triangular: sqrt(chi2(df - i)) on the diagonal, standard
        normals below (Bartlett's decomposition)."""
        import ember

        p = self._event_shape[-1]
        sample_shape = tuple(sample_shape)
        df = self.df.unsqueeze(-1) - ember.arange(p, dtype=self.df.dtype, device=self.df.device)
        diag = Chi2(df).rsample(sample_shape).sqrt()
        diag = diag.clamp(min=float(ember.finfo(diag.dtype).eps))
        noise = diag.diag_embed()
        # PyTorch's draw: normals for the strict lower triangle only, row by row
        i, j = ember.tril_indices(p, p, offset=-1)
        noise[..., i, j] = ember.randn(sample_shape + tuple(self._batch_shape) + (p * (p - 1) // 2,),
                                       dtype=noise.dtype, device=noise.device)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.mT

    def rsample(self, sample_shape: Any = (), max_try_correction: int | None = None) -> Any:
        """Bartlett draws, then PyTorch 2.13's correction loop (up to ``max_try_correction``
        redraws, 10 by default, with its "Singular sample detected." warning). PyTorch's loop
        flags the samples that pass the positive-definite check, so it warns and redraws once
        in every call; ember does the same, so that the numbers (and the stream) are PyTorch's,
        and then also redraws a sample that is still singular."""
        import warnings

        tries = 10 if max_try_correction is None else int(max_try_correction)
        batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]

        def flags(x: Any, singular: bool) -> Any:
            f = self.support.check(x)
            f = ~f if singular else f
            return f.amax(batch_dims) if self._batch_shape else f

        sample = self._bartlett(sample_shape)
        warned = False
        # PyTorch 2.13's loop flags the samples that pass the check (sic), then the redraws
        # that fail it; ember runs it as is (for PyTorch's numbers), then redraws any sample
        # still singular, where PyTorch would return it
        for first_singular in (False, True):
            flagged = flags(sample, first_singular)
            if not bool(flagged.any()):
                continue
            if not warned:
                warnings.warn("Singular sample detected.", stacklevel=2)
                warned = True
            for _ in range(tries):
                fresh = self._bartlett(tuple(flagged[flagged].shape))
                sample[flagged.clone()] = fresh  # (the mask changes below; backward keeps it)
                flagged[flagged.clone()] = flags(fresh, True)
                if not bool(flagged.any()):
                    break
        return sample

    def log_prob(self, value: Any) -> Any:
        import ember

        if self._validate_args:
            self._validate_sample(value)
        p = self._event_shape[-1]
        nu = self.df
        low = self._unbroadcasted_scale_tril
        log_det_s = 2 * low.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        log_det_x = ember.linalg.slogdet(value)[1]
        shape = ember.broadcast_shapes(tuple(low.shape), tuple(value.shape))
        cov = (low @ low.mT).expand(shape)
        trace = ember.linalg.solve(cov, value.expand(shape)).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (0.5 * (nu - p - 1) * log_det_x - 0.5 * trace - 0.5 * nu * p * math.log(2)
                - 0.5 * nu * log_det_s - ember.mvlgamma(0.5 * nu, p=p))

    def entropy(self) -> Any:
        import ember

        p = self._event_shape[-1]
        nu = self.df
        low = self._unbroadcasted_scale_tril
        log_det_s = 2 * low.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        half = 0.5 * nu
        psi_p = sum(ember.digamma(half - 0.5 * i) for i in range(p))
        return (0.5 * (p + 1) * log_det_s + 0.5 * p * (p + 1) * math.log(2)
                + ember.mvlgamma(half, p=p) - 0.5 * (nu - p - 1) * psi_p + 0.5 * nu * p)

    @property
    def _natural_params(self) -> tuple:
        p = self._event_shape[-1]
        return -0.5 * self.precision_matrix, 0.5 * (self.df - p - 1)

    def _log_normalizer(self, x: Any, y: Any) -> Any:
        import ember

        p = self._event_shape[-1]
        return (-(y + 0.5 * (p + 1)) * (ember.linalg.slogdet(-2 * x)[1] - p * math.log(2))
                + ember.mvlgamma(y + 0.5 * (p + 1), p=p))


def _is_positive_definite(x: Any) -> Any:
    """Per matrix: is it symmetric positive definite (smallest eigenvalue > 0)? Batched."""
    import numpy as np

    import ember

    arr = x.detach().cpu().numpy().astype(np.float64)
    with np.errstate(all="ignore"):
        ok = np.isfinite(arr).all((-2, -1))
        safe = np.where(ok[..., None, None], arr, np.eye(arr.shape[-1]))
        ok &= np.linalg.eigvalsh(safe).min(-1) > 0
    return ember.as_tensor(ok, device=x.device)
