"""``kl_divergence(p, q)`` and ``register_kl``: closed-form KL(p || q) for pairs of families."""

from __future__ import annotations

import math
import warnings
from typing import Any

from ._special import digamma, lgamma
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution, ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import _EULER, Gumbel
from .half_normal import HalfNormal
from .independent import Independent, _sum_rightmost
from .laplace import Laplace
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal, _tri_solve
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}
_KL_MEMOIZE: dict = {}


def register_kl(type_p: type, type_q: type) -> Any:
    """Decorator registering ``fn(p, q)`` as KL(p || q) for ``type_p`` x ``type_q`` (and their
    subclasses, the most specific registration winning). Any classes may be registered, not only
    Distribution subclasses, as PyTorch allows; anything else is a TypeError."""
    for name, t in (("type_p", type_p), ("type_q", type_q)):
        if not isinstance(t, type):
            raise TypeError(f"register_kl: {name} must be a class (e.g. Normal), not "
                            f"{type(t).__name__} {t!r}")

    def decorator(fun: Any) -> Any:
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


def _dispatch_kl(type_p: type, type_q: type) -> Any:
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented
    mro_p, mro_q = type_p.__mro__, type_q.__mro__

    def rank(m: tuple) -> tuple:
        return (mro_p.index(m[0]), mro_q.index(m[1]))

    ranked = sorted(matches, key=rank)
    best = ranked[0]
    left = min(matches, key=lambda m: (mro_p.index(m[0]), mro_q.index(m[1])))
    right = min(matches, key=lambda m: (mro_q.index(m[1]), mro_p.index(m[0])))
    if _KL_REGISTRY[left] is not _KL_REGISTRY[right]:
        warnings.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please register_kl"
            f"({left[0].__name__}, {right[1].__name__})", RuntimeWarning, stacklevel=3
        )
    return _KL_REGISTRY[best]


def kl_divergence(p: Distribution, q: Distribution) -> Any:
    """KL(p || q), batched over ``batch_shape``; NotImplementedError for unregistered pairs."""
    key = (type(p), type(q))
    fun = _KL_MEMOIZE.get(key)
    if fun is None:
        fun = _dispatch_kl(*key)
        _KL_MEMOIZE[key] = fun
    if fun is NotImplemented:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
            f"{type(q).__name__} (register one with torch.distributions.register_kl)"
        )
    return fun(p, q)


def _inf_like(t: Any) -> Any:
    import ember

    return ember.full_like(t, float("inf"))


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Any:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Any:
    import ember

    from ..nn.functional import softplus

    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = ember.where(p.probs == 0, 0.0, t1)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = ember.where(p.probs == 1, 0.0, t2)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Any:
    import ember

    t = p.probs * (p.logits - q.logits)
    t = ember.where((q.probs == 0).expand_as(t), float("inf"), t)
    t = ember.where((p.probs == 0).expand_as(t), 0.0, t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p: OneHotCategorical, q: OneHotCategorical) -> Any:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Any:
    import ember

    result = ((q.high - q.low) / (p.high - p.low)).log()
    return ember.where((q.low > p.low) | (q.high < p.high), float("inf"), result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Any:
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Any:
    scale_ratio = p.scale / q.scale
    diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + diff / q.scale + scale_ratio * (-diff / p.scale).exp() - 1


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Any:
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = lgamma(q.concentration) - lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Any:
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    s1, s2 = a1 + b1, a2 + b2
    t1 = lgamma(a2) + lgamma(b2) + lgamma(s1)
    t2 = lgamma(a1) + lgamma(b1) + lgamma(s2)
    return t1 - t2 + (a1 - a2) * digamma(a1) + (b1 - b2) * digamma(b1) + (s2 - s1) * digamma(s1)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Any:
    cp, cq = p.concentration, q.concentration
    sp, sq = cp.sum(-1), cq.sum(-1)
    t1 = lgamma(sp) - lgamma(sq)
    t2 = (lgamma(cp) - lgamma(cq)).sum(-1)
    t4 = digamma(cp) - digamma(sp).unsqueeze(-1)
    return t1 - t2 + ((cp - cq) * t4).sum(-1)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Any:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Any:
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Any:
    import ember

    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event "
                         "shapes cannot be computed")
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_det_diff = q._half_log_det() - p._half_log_det()
    k = p.event_shape[0]
    shape = ember.broadcast_shapes(tuple(lq.shape[:-2]), tuple(lp.shape[:-2]))
    a = lq.tril().expand(tuple(shape) + (k, k))
    b = lp.expand(tuple(shape) + (k, k))
    term_tr = ember.linalg.solve(a, b).pow(2).sum((-2, -1))  # ||Lq^-1 Lp||_F^2
    term_m = _tri_solve(lq, q.loc - p.loc).pow(2).sum(-1)
    return half_det_diff + 0.5 * (term_tr + term_m - k)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Any:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Any:
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)




@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Any:
    num = (p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)
    return (num / (4 * p.scale * q.scale)).log()


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Any:
    ratio = p.scale / q.scale
    shift = (p.loc - q.loc) / q.scale
    t3 = (lgamma(1 + ratio) - shift).exp()
    return -ratio.log() + shift + ratio * _EULER + t3 - (1 + _EULER)


def _as_mvn(d: Any) -> MultivariateNormal:
    """A LowRankMultivariateNormal as a full MultivariateNormal (same density)."""
    if isinstance(d, MultivariateNormal):
        return d
    return MultivariateNormal(d.loc, scale_tril=d.scale_tril, validate_args=False)


def _kl_via_full_mvn(p: Any, q: Any) -> Any:
    return _kl_mvn_mvn(_as_mvn(p), _as_mvn(q))


for _p, _q in ((LowRankMultivariateNormal, LowRankMultivariateNormal),
               (LowRankMultivariateNormal, MultivariateNormal),
               (MultivariateNormal, LowRankMultivariateNormal)):
    register_kl(_p, _q)(_kl_via_full_mvn)


# -- ContinuousBernoulli ------------------------------------------------------------------------
def _cb_cross(p: Any, q: ContinuousBernoulli) -> Any:
    """-E_p[log q(x)] + H... : E_p[-log q(x)] for any p on [0, 1] with mean p.mean."""
    import ember

    return -p.mean * q.logits - ember.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Any:
    import ember

    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + ember.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - ember.log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_cb(p: Beta, q: ContinuousBernoulli) -> Any:
    return -p.entropy() + _cb_cross(p, q)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cb(p: Uniform, q: ContinuousBernoulli) -> Any:
    import ember

    result = -p.entropy() + _cb_cross(p, q)
    # PyTorch's condition: inf unless the uniform lies strictly inside (0, 1)
    outside = (p.high >= 1.0) | (p.low <= 0.0)
    return ember.where(outside, _inf_like(result), result)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_cb_exponential(p: ContinuousBernoulli, q: Exponential) -> Any:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_cb_normal(p: ContinuousBernoulli, q: Normal) -> Any:
    t1 = -p.entropy()
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).pow(2)) + q.scale.log()
    t3 = (p.variance + p.mean.pow(2) - 2.0 * q.loc * p.mean) / (2.0 * q.scale.pow(2))
    return t1 + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p: ContinuousBernoulli, q: Uniform) -> Any:
    import ember

    result = -p.entropy() + (q.high - q.low).log()
    # PyTorch's condition: inf unless the uniform strictly contains [0, 1]
    outside = (q.low >= 0.0) | (q.high <= 1.0)
    return ember.where(outside, _inf_like(result), result)


def _kl_cb_infinite(p: Any, q: Any) -> Any:
    return _inf_batch(p, q)


register_kl(ContinuousBernoulli, Pareto)(_kl_cb_infinite)
for _p in (Exponential, Gamma, Gumbel, Laplace, Normal, Pareto):
    register_kl(_p, ContinuousBernoulli)(_kl_cb_infinite)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> Any:
    """The Bregman divergence of the log normaliser, for two members of one family."""
    import ember

    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_params = [t.detach().requires_grad_() for t in p._natural_params]
    q_params = q._natural_params
    with ember.enable_grad():
        p_norm = p._log_normalizer(*p_params)
        grads = ember.autograd.grad(p_norm.sum(), p_params)
    result = q._log_normalizer(*q_params) - p_norm
    for pp, qp, g in zip(p_params, q_params, grads):
        result = result - _sum_rightmost((qp - pp) * g, len(q.event_shape))
    return result


# -- pairs across families (PyTorch's set). E_p[...] are p's moments; -H(p) - E_p[log q] ----------
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _inf_batch(p: Any, q: Any) -> Any:
    """inf over p's batch shape (as PyTorch's infinite pairs: ``inf`` like p's parameter)."""
    import ember

    dt = next((t.dtype for t in p.__dict__.values()
               if isinstance(t, ember.Tensor) and t.is_floating_point()), ember.get_default_dtype())
    return ember.full(tuple(p.batch_shape), math.inf, dtype=dt)


def _where_inf(cond: Any, result: Any) -> Any:
    import ember

    return ember.where(cond, _inf_like(result), result)


def _normal_cross(mean: Any, var: Any, q: Normal) -> Any:
    """E_p[-log q(x)] for a Normal q, from p's mean and variance."""
    return q.scale.log() + _HALF_LOG_2PI + (var + (mean - q.loc).pow(2)) / (2 * q.scale.pow(2))


def _gamma_cross(mean: Any, mean_log: Any, q: Gamma) -> Any:
    """E_p[-log q(x)] for a Gamma q, from E_p[x] and E_p[log x]."""
    c, r = q.concentration, q.rate
    return lgamma(c) - c * r.log() - (c - 1) * mean_log + r * mean


def _gumbel_cross(mean: Any, mgf_neg: Any, q: Gumbel) -> Any:
    """E_p[-log q(x)] for a Gumbel q, from E_p[x] and E_p[exp(-x / scale)]."""
    return q.scale.log() + (mean - q.loc) / q.scale + (q.loc / q.scale).exp() * mgf_neg


def _beta_moments(p: Beta) -> tuple:
    a, b = p.concentration1, p.concentration0
    total = a + b
    return a / total, a * b / (total.pow(2) * (total + 1)), digamma(a) - digamma(total)


def _uniform_mean_log(p: Uniform) -> Any:
    """E[log x] for x ~ U(low, high), 0 <= low."""
    from .utils import xlogy

    h, lo = p.high, p.low
    return (xlogy(h, h) - h - xlogy(lo, lo) + lo) / (h - lo)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Any:
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p: Beta, q: Exponential) -> Any:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Any:
    mean, _, mean_log = _beta_moments(p)
    return -p.entropy() + _gamma_cross(mean, mean_log, q)


@register_kl(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> Any:
    mean, var, _ = _beta_moments(p)
    return -p.entropy() + _normal_cross(mean, var, q)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Any:
    result = -p.entropy() + (q.high - q.low).log()
    return _where_inf((q.low > 0) | (q.high < 1), result)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Any:
    import ember

    n_p, n_q = p.total_count, q.total_count
    if bool(ember.as_tensor(n_p < n_q).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is "
                                  "not implemented")
    kl = n_p * (p.probs * (p.logits - q.logits) + ember.log1p(-p.probs) - ember.log1p(-q.probs))
    return _where_inf(ember.as_tensor(n_p > n_q), kl)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Any:
    mean_log = -_EULER - p.rate.log()
    return -p.entropy() + _gamma_cross(p.rate.reciprocal(), mean_log, q)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Any:
    mgf = p.rate / (p.rate + q.scale.reciprocal())
    return -p.entropy() + _gumbel_cross(p.rate.reciprocal(), mgf, q)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p: Exponential, q: Normal) -> Any:
    mean = p.rate.reciprocal()
    return -p.entropy() + _normal_cross(mean, mean.pow(2), q)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Any:
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Any:
    mgf = (p.rate / (p.rate + q.scale.reciprocal())).pow(p.concentration)
    return -p.entropy() + _gumbel_cross(p.concentration / p.rate, mgf, q)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> Any:
    mean = p.concentration / p.rate
    return -p.entropy() + _normal_cross(mean, mean / p.rate, q)


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> Any:
    mean = p.loc + p.scale * _EULER
    var = (math.pi * p.scale).pow(2) / 6
    return -p.entropy() + _normal_cross(mean, var, q)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Any:
    ratio = (p.scale / q.scale).pow(2)
    return 0.5 * (ratio - 1 - ratio.log())


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p: Laplace, q: Normal) -> Any:
    return -p.entropy() + _normal_cross(p.loc, 2 * p.scale.pow(2), q)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Any:
    mgf = (-p.loc / q.scale + 0.5 * (p.scale / q.scale).pow(2)).exp()
    return -p.entropy() + _gumbel_cross(p.loc, mgf, q)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Any:
    d = p.loc - q.loc
    mean_abs = (p.scale * math.sqrt(2 / math.pi) * (-(d / p.scale).pow(2) / 2).exp()
                + d * (d / (p.scale * math.sqrt(2))).erf())
    return -p.entropy() + (2 * q.scale).log() + mean_abs / q.scale


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Any:
    a, s = p.alpha, p.scale
    result = -p.entropy() - q.rate.log() + q.rate * a * s / (a - 1)
    return _where_inf(a <= 1, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Any:
    a, s = p.alpha, p.scale
    result = -p.entropy() + _gamma_cross(a * s / (a - 1), s.log() + a.reciprocal(), q)
    return _where_inf(a <= 1, result)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> Any:
    a, s = p.alpha, p.scale
    mean = a * s / (a - 1)
    var = a * s.pow(2) / (a - 2) - mean.pow(2)
    return _where_inf(a <= 2, -p.entropy() + _normal_cross(mean, var, q))


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Any:
    ap, aq = p.alpha, q.alpha
    result = (ap / aq).log() + aq * (p.scale / q.scale).log() + (aq - ap) / ap
    return _where_inf(p.scale < q.scale, result)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Any:
    import ember

    a, b = q.concentration1, q.concentration0
    h, lo = p.high, p.low
    one_minus = Uniform.__new__(Uniform)
    one_minus.high, one_minus.low = 1 - lo, 1 - h
    cross = (lgamma(a) + lgamma(b) - lgamma(a + b) - (a - 1) * _uniform_mean_log(p)
             - (b - 1) * _uniform_mean_log(one_minus))
    result = -(h - lo).log() + cross
    return ember.where((h > 1) | (lo < 0), _inf_like(result), result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p: Uniform, q: Exponential) -> Any:
    result = -p.entropy() - q.rate.log() + q.rate * (p.high + p.low) / 2
    return _where_inf(p.low < 0, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Any:
    result = -p.entropy() + _gamma_cross((p.high + p.low) / 2, _uniform_mean_log(p), q)
    return _where_inf(p.low < 0, result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Any:
    h, lo, b = p.high, p.low, q.scale
    mgf = b * ((-lo / b).exp() - (-h / b).exp()) / (h - lo)
    return -p.entropy() + _gumbel_cross((h + lo) / 2, mgf, q)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Any:
    return -p.entropy() + _normal_cross((p.high + p.low) / 2, (p.high - p.low).pow(2) / 12, q)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Any:
    a, s = q.alpha, q.scale
    cross = -a.log() - a * s.log() + (a + 1) * _uniform_mean_log(p)
    return _where_inf(p.low < s, -p.entropy() + cross)


def _kl_infinite(p: Any, q: Any) -> Any:
    return _inf_batch(p, q)


for _p, _q in [(Beta, Pareto), (Exponential, Beta), (Exponential, Pareto), (Exponential, Uniform),
               (Gamma, Beta), (Gamma, Pareto), (Gamma, Uniform), (Gumbel, Beta),
               (Gumbel, Exponential), (Gumbel, Gamma), (Gumbel, Pareto), (Gumbel, Uniform),
               (Laplace, Beta), (Laplace, Exponential), (Laplace, Gamma), (Laplace, Pareto),
               (Laplace, Uniform), (Normal, Beta), (Normal, Exponential), (Normal, Gamma),
               (Normal, Pareto), (Normal, Uniform), (Pareto, Beta), (Pareto, Uniform),
               (Poisson, Bernoulli), (Poisson, Binomial)]:
    register_kl(_p, _q)(_kl_infinite)
