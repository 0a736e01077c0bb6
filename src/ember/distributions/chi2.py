"""``Chi2(df)``: Gamma(df / 2, 1 / 2)."""

from __future__ import annotations

from typing import Any

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["Chi2"]


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom (a Gamma)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Any, validate_args: bool | None = None) -> None:
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(Chi2, _instance)
        return Gamma.expand(self, batch_shape, _instance=new)

    @property
    def df(self) -> Any:
        return self.concentration * 2

    def __repr__(self) -> str:
        d = self.df
        return f"Chi2(df: {d if d.numel() == 1 else d.size()})"
