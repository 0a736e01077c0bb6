"""``LogisticNormal(loc, scale)``: stick-breaking of a Normal vector onto the simplex."""

from __future__ import annotations

from typing import Any

from . import constraints
from .distribution import Distribution
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """X = StickBreakingTransform(Y) for Y ~ Normal(loc, scale) in R^(K-1); event_shape (K,)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand((1,))
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self) -> Any:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Any:
        return self.base_dist.base_dist.scale

    def __repr__(self) -> str:
        return repr(self.base_dist.base_dist).replace("Normal(", "LogisticNormal(", 1)


