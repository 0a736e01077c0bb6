"""``biject_to`` and ``transform_to``: from an unconstrained real space onto a constraint.

``biject_to(c)`` gives a bijective transform (for densities: it has a log-abs-det Jacobian);
``transform_to(c)`` may be non-bijective (``SoftmaxTransform`` for the simplex). Both are
``ConstraintRegistry`` objects, extendable with ``register(constraint_type, factory)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """Maps constraint types (or singleton constraints) to factories of transforms."""

    def __init__(self) -> None:
        self._registry: dict = {}

    def register(self, constraint: Any, factory: Callable | None = None) -> Any:
        """Register ``factory(constraint) -> Transform`` for a constraint class or instance
        (usable as a decorator when ``factory`` is omitted)."""
        if factory is None:
            return lambda f: self.register(constraint, f)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not (isinstance(constraint, type) and issubclass(constraint, constraints.Constraint)):
            raise TypeError("Expected constraint to be either a Constraint subclass or instance, "
                            f"but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: Any) -> transforms.Transform:
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _real(c: Any) -> Any:
    return transforms.identity_transform


def _independent_biject(c: Any) -> Any:
    return transforms.IndependentTransform(biject_to(c.base_constraint), c.reinterpreted_batch_ndims)


def _independent_transform(c: Any) -> Any:
    return transforms.IndependentTransform(transform_to(c.base_constraint),
                                           c.reinterpreted_batch_ndims)


def _greater_than(c: Any) -> Any:
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(c.lower_bound, 1)])


def _less_than(c: Any) -> Any:
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(c.upper_bound, -1)])


def _interval(c: Any) -> Any:
    lo, hi = c.lower_bound, c.upper_bound
    if isinstance(lo, (int, float)) and lo == 0 and isinstance(hi, (int, float)) and hi == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([transforms.SigmoidTransform(),
                                        transforms.AffineTransform(lo, hi - lo)])


for _registry in (biject_to, transform_to):
    _registry.register(constraints.real, _real)
    _registry.register(constraints.greater_than, _greater_than)
    _registry.register(constraints.greater_than_eq, _greater_than)
    _registry.register(constraints.less_than, _less_than)
    _registry.register(constraints.interval, _interval)
    _registry.register(constraints.half_open_interval, _interval)
biject_to.register(constraints.independent, _independent_biject)
transform_to.register(constraints.independent, _independent_transform)
biject_to.register(constraints.simplex, lambda c: transforms.StickBreakingTransform())
transform_to.register(constraints.simplex, lambda c: transforms.SoftmaxTransform())
transform_to.register(constraints.lower_cholesky, lambda c: transforms.LowerCholeskyTransform())
transform_to.register(constraints.positive_definite,
                      lambda c: transforms.PositiveDefiniteTransform())
transform_to.register(constraints.positive_semidefinite,
                      lambda c: transforms.PositiveDefiniteTransform())
for _registry in (biject_to, transform_to):
    _registry.register(constraints.corr_cholesky, lambda c: transforms.CorrCholeskyTransform())
biject_to.register(constraints.cat, lambda c: transforms.CatTransform(
    [biject_to(x) for x in c.cseq], c.dim, c.lengths))
transform_to.register(constraints.cat, lambda c: transforms.CatTransform(
    [transform_to(x) for x in c.cseq], c.dim, c.lengths))
biject_to.register(constraints.stack, lambda c: transforms.StackTransform(
    [biject_to(x) for x in c.cseq], c.dim))
transform_to.register(constraints.stack, lambda c: transforms.StackTransform(
    [transform_to(x) for x in c.cseq], c.dim))
