"""``torch.distributions.transforms``: invertible maps with log-abs-det Jacobians.

Implemented: ``ExpTransform``, ``AffineTransform``, ``SigmoidTransform``, ``TanhTransform``,
``SoftplusTransform``, ``PowerTransform``, ``AbsTransform``, ``SoftmaxTransform``,
``StickBreakingTransform``, ``LowerCholeskyTransform``, ``PositiveDefiniteTransform``,
``IndependentTransform``, ``ComposeTransform``, ``CorrCholeskyTransform``, ``ReshapeTransform``,
``CumulativeDistributionTransform``, ``CatTransform``, ``StackTransform`` and
``identity_transform``. With ``cache_size=1`` a transform remembers its last (x, y) pair, so
``inv(t(x))`` returns ``x`` exactly (what keeps SAC's tanh-squashed log-probabilities finite).
"""

from __future__ import annotations

import math
import weakref
from typing import Any

from . import constraints

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
           "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
           "ReshapeTransform", "StackTransform",
           "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "PowerTransform", "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform",
           "StickBreakingTransform", "TanhTransform", "Transform", "identity_transform"]


def _sum_rightmost(value: Any, dim: int) -> Any:
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[: value.dim() - dim]) + (-1,)).sum(-1)


class Transform:
    """An invertible (or at least injective) map y = t(x) with ``log_abs_det_jacobian(x, y)``.

    Args:
        cache_size: 0 (no cache) or 1 (remember the latest pair).
    """

    bijective = False
    domain: Any = constraints.real
    codomain: Any = constraints.real

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y: Any = (None, None)
        self._inv: Any = None
        super().__init__()  # cooperative: ``class T(Transform, nn.Module)`` gets Module's init

    @property
    def sign(self) -> Any:
        """The sign of the Jacobian's determinant (+1 or -1), for bijective transforms that
        define it; NotImplementedError otherwise (as PyTorch), e.g. ``AbsTransform``."""
        raise NotImplementedError(
            f"{type(self).__name__} does not define sign (the sign of its Jacobian's determinant)")

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform (``t.inv(t(x)) == x``)."""
        inv = None if self._inv is None else self._inv()
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x: Any) -> Any:
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = (x, y)
        return y

    def _inv_call(self, y: Any) -> Any:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = (x, y)
        return x

    def _call(self, x: Any) -> Any:
        raise NotImplementedError

    def _inverse(self, y: Any) -> Any:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        raise NotImplementedError

    def forward_shape(self, shape: Any) -> Any:
        return shape

    def inverse_shape(self, shape: Any) -> Any:
        return shape

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of another transform."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv_t = transform

    @property
    def domain(self) -> Any:  # type: ignore[override]
        return self._inv_t.codomain

    @property
    def codomain(self) -> Any:  # type: ignore[override]
        return self._inv_t.domain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self._inv_t.bijective

    @property
    def sign(self) -> Any:  # type: ignore[override]
        return self._inv_t.sign

    @property
    def inv(self) -> Transform:
        return self._inv_t

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _InverseTransform) and self._inv_t == other._inv_t

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inv_t!r})"

    def __call__(self, x: Any) -> Any:
        return self._inv_t._inv_call(x)

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return -self._inv_t.log_abs_det_jacobian(y, x)


class ComposeTransform(Transform):
    """Apply ``parts`` in order: ``ComposeTransform([f, g])(x) == g(f(x))``."""

    def __init__(self, parts: list, cache_size: int = 0) -> None:
        if cache_size:
            parts = [p.with_cache(cache_size) for p in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self) -> Any:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self) -> Any:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(p.bijective for p in self.parts)

    @property
    def sign(self) -> Any:  # type: ignore[override]
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self) -> Transform:
        return ComposeTransform([p.inv for p in reversed(self.parts)])

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x: Any) -> Any:
        for part in self.parts:
            x = part(x)
        return x

    def forward_shape(self, shape: Any) -> Any:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: Any) -> Any:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        import ember

        if not self.parts:
            return ember.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(_sum_rightmost(part.log_abs_det_jacobian(a, b),
                                        event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        return total

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class ExpTransform(Transform):
    """y = exp(x)."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__

    def _call(self, x: Any) -> Any:
        return x.exp()

    def _inverse(self, y: Any) -> Any:
        return y.log()

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return x


class PowerTransform(Transform):
    """y = x ** exponent (for positive x)."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.exponent = exponent

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else PowerTransform(self.exponent, cache_size)

    @property
    def sign(self) -> Any:  # type: ignore[override]
        return self.exponent.sign() if hasattr(self.exponent, "sign") else (1 if self.exponent > 0 else -1)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PowerTransform):
            return False
        return bool((self.exponent == other.exponent) if not hasattr(self.exponent, "all")
                    else (self.exponent == other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x: Any) -> Any:
        return x.pow(self.exponent)

    def _inverse(self, y: Any) -> Any:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return (self.exponent * y / x).abs().log()


class SigmoidTransform(Transform):
    """y = sigmoid(x)."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__

    def _call(self, x: Any) -> Any:
        from .utils import clamp_probs

        return clamp_probs(x.sigmoid())

    def _inverse(self, y: Any) -> Any:
        from .utils import clamp_probs

        y = clamp_probs(y)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        from ..nn.functional import softplus

        return -softplus(-x) - softplus(x)


class SoftplusTransform(Transform):
    """y = log(1 + exp(x))."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftplusTransform)

    __hash__ = object.__hash__

    def _call(self, x: Any) -> Any:
        from ..nn.functional import softplus

        return softplus(x)

    def _inverse(self, y: Any) -> Any:
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        from ..nn.functional import softplus

        return -softplus(-x)


class TanhTransform(Transform):
    """y = tanh(x) (the squashing of SAC-style policies; use ``cache_size=1`` there)."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__

    def _call(self, x: Any) -> Any:
        return x.tanh()

    def _inverse(self, y: Any) -> Any:
        return y.atanh()

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        from ..nn.functional import softplus

        # log(1 - tanh(x)^2), stable for large |x|
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AbsTransform(Transform):
    """y = |x| (not bijective)."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x: Any) -> Any:
        return x.abs()

    def _inverse(self, y: Any) -> Any:
        return y


class AffineTransform(Transform):
    """y = loc + scale * x, over ``event_dim`` trailing dimensions."""

    bijective = True

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def domain(self) -> Any:  # type: ignore[override]
        if self._event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self._event_dim)

    @property
    def codomain(self) -> Any:  # type: ignore[override]
        return self.domain

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            eq = a == b
            if not (bool(eq.all()) if hasattr(eq, "all") else bool(eq)):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self) -> Any:  # type: ignore[override]
        if isinstance(self.scale, (int, float)):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x: Any) -> Any:
        return self.loc + self.scale * x

    def _inverse(self, y: Any) -> Any:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        import ember

        shape = x.shape
        scale = self.scale
        if isinstance(scale, (int, float)):
            result = ember.full_like(x, math.log(abs(scale)))
        else:
            result = scale.abs().log()
        if self._event_dim:
            result_size = tuple(result.shape[: result.dim() - self._event_dim]) + (-1,)
            result = result.reshape(result_size).sum(-1)
            shape = shape[: len(shape) - self._event_dim]
        return result.expand(shape)

    def forward_shape(self, shape: Any) -> Any:
        import ember

        return ember.broadcast_shapes(tuple(shape), tuple(getattr(self.loc, "shape", ())),
                                      tuple(getattr(self.scale, "shape", ())))

    inverse_shape = forward_shape


class IndependentTransform(Transform):
    """Treat ``reinterpreted_batch_ndims`` extra right-most dimensions as part of the event
    (the log-abs-det Jacobian is summed over them)."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @property
    def domain(self) -> Any:  # type: ignore[override]
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self) -> Any:  # type: ignore[override]
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self.base_transform.bijective

    @property
    def sign(self) -> Any:  # type: ignore[override]
        return self.base_transform.sign

    def _call(self, x: Any) -> Any:
        return self.base_transform(x)

    def _inverse(self, y: Any) -> Any:
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                              self.reinterpreted_batch_ndims)

    def forward_shape(self, shape: Any) -> Any:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: Any) -> Any:
        return self.base_transform.inverse_shape(shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last dimension (not bijective: no log-abs-det Jacobian)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x: Any) -> Any:
        return x.softmax(-1)

    def _inverse(self, y: Any) -> Any:
        return y.log()


class StickBreakingTransform(Transform):
    """A bijection from R^(K-1) onto the K-simplex by stick breaking (``biject_to(simplex)``)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    @staticmethod
    def _offset(x: Any, n: int) -> Any:
        import ember

        return ember.arange(n, 0, -1, dtype=x.dtype, device=x.device)  # n, n-1, ..., 1

    def _call(self, x: Any) -> Any:
        from ..nn.functional import pad

        n = x.shape[-1]
        z = (x - self._offset(x, n).log()).sigmoid()
        rest = (1 - z).cumprod(-1)
        return pad(z, (0, 1), value=1.0) * pad(rest, (1, 0), value=1.0)

    def _inverse(self, y: Any) -> Any:
        from .utils import finfo_tiny

        crop = y[..., :-1]
        n = crop.shape[-1]
        stick = (1 - crop.cumsum(-1)).clamp(min=finfo_tiny(y))
        return crop.log() - stick.log() + self._offset(y, n).log()

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        from ..nn.functional import logsigmoid

        x = x - self._offset(x, x.shape[-1]).log()
        return (-x + logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: Any) -> Any:
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape: Any) -> Any:
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """Square matrices -> lower-triangular with a positive diagonal (exp of the diagonal)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x: Any) -> Any:
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y: Any) -> Any:
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Square matrices -> positive-definite matrices, L L^T with L = LowerCholeskyTransform(x)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x: Any) -> Any:
        low = LowerCholeskyTransform()(x)
        return low @ low.mT

    def _inverse(self, y: Any) -> Any:
        import ember

        return LowerCholeskyTransform().inv(ember.linalg.cholesky(y))


class CorrCholeskyTransform(Transform):
    """A vector of D(D-1)/2 reals -> the Cholesky factor of a D x D correlation matrix: tanh
    maps each entry to a partial correlation r_ij in (-1, 1), placed row by row below the
    diagonal; then y_ij = r_ij sqrt(1 - sum_{k<j} y_ik^2) and y_ii = sqrt(1 - sum_{k<i} y_ik^2),
    so every row has unit norm (``biject_to(constraints.corr_cholesky)``)."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x: Any) -> Any:
        import ember

        from ..nn.functional import pad
        from .utils import finfo_eps, vec_to_tril_matrix

        eps = finfo_eps(x)
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        eye = ember.eye(r.shape[-1], dtype=x.dtype, device=x.device)
        keep = (1 - r.pow(2)).sqrt().cumprod(-1)  # prod_{k<=j} sqrt(1 - r_ik^2)
        return (r + eye) * pad(keep[..., :-1], (1, 0), value=1.0)

    def _inverse(self, y: Any) -> Any:
        from ..nn.functional import pad
        from .utils import finfo_eps, tril_matrix_to_vec

        left = 1 - y.pow(2).cumsum(-1)
        left = pad(left[..., :-1], (1, 0), value=1.0)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left, diag=-1).sqrt()
        eps = finfo_eps(y)
        return t.clamp(min=-1 + eps, max=1 - eps).atanh()

    def log_abs_det_jacobian(self, x: Any, y: Any, intermediates: Any = None) -> Any:
        from ..nn.functional import pad, softplus
        from .utils import tril_matrix_to_vec

        # the stick-breaking part: prod over i > j of sqrt(1 - sum_{k<j} y_ik^2)
        left = 1 - y.pow(2).cumsum(-1)
        left = pad(left[..., :-1], (1, 0), value=1.0)
        stick = 0.5 * tril_matrix_to_vec(left, diag=-1).log().sum(-1)
        tanh_part = (2.0 * (math.log(2.0) - x - softplus(-2.0 * x))).sum(-1)
        return stick + tanh_part

    def forward_shape(self, shape: Any) -> Any:
        if len(shape) < 1:
            raise ValueError("CorrCholeskyTransform: the input needs at least one dimension")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError(f"CorrCholeskyTransform: the last dimension ({n}) is not a "
                             "triangular number D(D-1)/2")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape: Any) -> Any:
        if len(shape) < 2 or shape[-2] != shape[-1]:
            raise ValueError(f"CorrCholeskyTransform: expected square matrices, got {tuple(shape)}")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


class ReshapeTransform(Transform):
    """Reshapes the right-most ``in_shape`` dimensions to ``out_shape`` (same number of
    elements); the log-abs-det Jacobian is 0."""

    bijective = True

    def __init__(self, in_shape: Any, out_shape: Any, cache_size: int = 0) -> None:
        import ember

        self.in_shape = ember.Size(in_shape)
        self.out_shape = ember.Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self) -> Any:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self) -> Any:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.out_shape))

    @property
    def sign(self) -> Any:  # type: ignore[override]
        return 1

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x: Any) -> Any:
        batch = tuple(x.shape[: x.dim() - len(self.in_shape)])
        return x.reshape(batch + tuple(self.out_shape))

    def _inverse(self, y: Any) -> Any:
        batch = tuple(y.shape[: y.dim() - len(self.out_shape)])
        return y.reshape(batch + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        batch = tuple(x.shape[: x.dim() - len(self.in_shape)])
        return x.new_zeros(batch)

    def forward_shape(self, shape: Any) -> Any:
        return self._move(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape: Any) -> Any:
        return self._move(shape, self.out_shape, self.in_shape)

    @staticmethod
    def _move(shape: Any, src: Any, dst: Any) -> Any:
        shape = tuple(shape)
        if len(shape) < len(src):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(src)
        if shape[cut:] != tuple(src):
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got "
                             f"{tuple(src)}")
        return shape[:cut] + tuple(dst)


class CumulativeDistributionTransform(Transform):
    """x -> ``distribution.cdf(x)``, onto the unit interval; its inverse is ``icdf`` and its
    log-abs-det Jacobian is ``distribution.log_prob(x)``."""

    bijective = True
    codomain = constraints.unit_interval

    def __init__(self, distribution: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> Any:  # type: ignore[override]
        return self.distribution.support

    @property
    def sign(self) -> Any:  # type: ignore[override]
        return 1

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _call(self, x: Any) -> Any:
        return self.distribution.cdf(x)

    def _inverse(self, y: Any) -> Any:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return self.distribution.log_prob(x)


class CatTransform(Transform):
    """Applies ``tseq[i]`` to the i-th slice (``lengths[i]`` long, 1 by default) of dimension
    ``dim``, as ``torch.cat`` joins them."""

    def __init__(self, tseq: Any, dim: int = 0, lengths: Any = None, cache_size: int = 0) -> None:
        tseq = list(tseq)
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("CatTransform: every element of tseq must be a Transform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.lengths = [1] * len(tseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"CatTransform: {len(self.lengths)} lengths for "
                             f"{len(self.transforms)} transforms")
        self.dim = dim

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _check(self, x: Any) -> None:
        if not -x.dim() <= self.dim < x.dim():
            raise ValueError(f"CatTransform: dim {self.dim} out of range for {x.dim()}-d input")
        if x.shape[self.dim] != self.length:
            raise ValueError(f"CatTransform: size {x.shape[self.dim]} of dimension {self.dim} "
                             f"is not the sum of lengths {self.lengths}")

    def _map(self, x: Any, fns: list) -> Any:
        import ember

        self._check(x)
        parts, start = [], 0
        for fn, n in zip(fns, self.lengths):
            parts.append(fn(x.narrow(self.dim, start, n)))
            start += n
        return ember.cat(parts, dim=self.dim)

    def _call(self, x: Any) -> Any:
        return self._map(x, self.transforms)

    def _inverse(self, y: Any) -> Any:
        return self._map(y, [t.inv for t in self.transforms])

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        import ember

        self._check(x)
        parts, start = [], 0
        for t, n in zip(self.transforms, self.lengths):
            ljd = t.log_abs_det_jacobian(x.narrow(self.dim, start, n), y.narrow(self.dim, start, n))
            if t.event_dim < self.event_dim:
                ljd = _sum_rightmost(ljd, self.event_dim - t.event_dim)
            parts.append(ljd)
            start += n
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        dim += self.event_dim
        if dim < 0:
            return ember.cat(parts, dim=dim)
        return sum(parts)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self) -> Any:  # type: ignore[override]
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self) -> Any:  # type: ignore[override]
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Applies ``tseq[i]`` to the i-th slice of dimension ``dim``, as ``torch.stack`` joins
    them."""

    def __init__(self, tseq: Any, dim: int = 0, cache_size: int = 0) -> None:
        tseq = list(tseq)
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("StackTransform: every element of tseq must be a Transform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.dim = dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, z: Any) -> list:
        if not -z.dim() <= self.dim < z.dim():
            raise ValueError(f"StackTransform: dim {self.dim} out of range for {z.dim()}-d input")
        if z.shape[self.dim] != len(self.transforms):
            raise ValueError(f"StackTransform: size {z.shape[self.dim]} of dimension {self.dim} "
                             f"!= {len(self.transforms)} transforms")
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _call(self, x: Any) -> Any:
        import ember

        return ember.stack([t(s) for t, s in zip(self.transforms, self._slices(x))], dim=self.dim)

    def _inverse(self, y: Any) -> Any:
        import ember

        return ember.stack([t.inv(s) for t, s in zip(self.transforms, self._slices(y))],
                           dim=self.dim)

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        import ember

        parts = [t.log_abs_det_jacobian(xs, ys)
                 for t, xs, ys in zip(self.transforms, self._slices(x), self._slices(y))]
        return ember.stack(parts, dim=self.dim)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self) -> Any:  # type: ignore[override]
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self) -> Any:  # type: ignore[override]
        return constraints.stack([t.codomain for t in self.transforms], self.dim)
