"""``LKJCholesky(dim, concentration=1.0)``: Cholesky factors of correlation matrices whose
density is proportional to det(corr)^(concentration - 1) (Lewandowski, Kurowicka and Joe 2009)."""

from __future__ import annotations

import math
from typing import Any

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all, finfo_tiny

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """Lower-triangular ``dim`` x ``dim`` factors L of correlation matrices L L^T, LKJ
    distributed with ``concentration`` (1: uniform over correlation matrices). Sampling uses
    the onion method; there is no ``rsample``, as in PyTorch."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Any = 1.0,
                 validate_args: bool | None = None) -> None:
        if isinstance(dim, (int, float)) and dim < 2:  # (PyTorch checks this first: 1.5 too)
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"LKJCholesky: dim must be an int (>= 2), not {type(dim).__name__}")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        super().__init__(self.concentration.size(), (dim, dim), validate_args=validate_args)

    def _beta(self) -> Beta:
        """The marginal Beta distributions of the squared row norms of the onion method."""
        import ember

        c = self.concentration
        offset = ember.cat([ember.zeros(1, dtype=c.dtype, device=c.device),
                            ember.arange(self.dim - 1, dtype=c.dtype, device=c.device)])
        marginal = c + 0.5 * (self.dim - 2)
        return Beta(offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset)

    def sample(self, sample_shape: Any = ()) -> Any:
        import ember

        with ember.no_grad():
            y = self._beta().sample(sample_shape).unsqueeze(-1)
            normal = ember.randn(tuple(y.shape[:-1]) + (self.dim,), dtype=y.dtype,
                                 device=y.device).tril(-1)
            sphere = normal / normal.norm(dim=-1, keepdim=True).clamp(min=finfo_tiny(y))
            sphere[..., 0, :] = 0.0
            w = y.sqrt() * sphere
            diag = (1 - w.pow(2).sum(-1)).clamp(min=finfo_tiny(w)).sqrt()
            return w + diag.diag_embed()

    def log_prob(self, value: Any) -> Any:
        import ember

        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-2, dim2=-1)[..., 1:]
        order = ember.arange(2, self.dim + 1, dtype=value.dtype, device=value.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = ember.lgamma(alpha) * dm1
        numerator = ember.mvlgamma(alpha - 0.5, p=dm1)
        normalize = 0.5 * dm1 * math.log(math.pi) + numerator - denominator
        return unnormalized - normalize
