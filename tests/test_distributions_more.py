"""The distributions and transforms PyTorch 2.13 has beyond the common ones: VonMises,
ContinuousBernoulli, GeneralizedPareto, Wishart, LKJCholesky, CorrCholeskyTransform,
Cat/Stack/Reshape/CumulativeDistributionTransform, MixtureSameFamilyConstraint and the KL pairs
of ContinuousBernoulli, against torch.distributions (values, shapes, validation, gradients;
samples statistically, as ember's random stream is its own)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.distributions as ED

torch = pytest.importorskip("torch")
TD = torch.distributions


def E(x, dtype=ember.float64):
    return ember.tensor(np.asarray(x, dtype=np.float64), dtype=dtype)


def P(x, dtype=torch.float64):
    return torch.tensor(np.asarray(x, dtype=np.float64), dtype=dtype)


def close(a, b, rtol=1e-12, atol=1e-12):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


# -- VonMises -----------------------------------------------------------------------------------
def test_von_mises_values_shapes_and_expand():
    loc, conc = [[0.0, 1.0, -2.0]], [[0.5], [3.0], [50.0]]
    e, t = ED.VonMises(E(loc), E(conc)), TD.VonMises(P(loc), P(conc))
    assert e.batch_shape == t.batch_shape == (3, 3)
    v = [4.0, -3.0, -2.1]
    # PyTorch evaluates log I0 with a polynomial fit good to ~1e-7; ember uses i0e
    close(e.log_prob(E(v)), t.log_prob(P(v)), rtol=1e-6, atol=1e-6)
    close(e.variance, t.variance, rtol=1e-6, atol=1e-6)
    close(e.mean, t.mean)
    close(e.mode, t.mode)
    assert repr(e.support) == repr(t.support) and not e.has_rsample
    x = e.expand((2, 3, 3))
    assert x.batch_shape == (2, 3, 3) and x.log_prob(E(v)).shape == (2, 3, 3)
    with pytest.raises(NotImplementedError):
        e.rsample()


def test_von_mises_samples_match_the_circular_moments():
    ember.manual_seed(0)
    loc, conc = E([0.0, 1.0, -3.0, 2.0]), E([0.01, 0.5, 4.0, 200.0])
    s = ED.VonMises(loc, conc).sample((100000,))
    assert s.shape == (100000, 4) and s.dtype == ember.float64
    assert bool((s >= -math.pi).all()) and bool((s < math.pi).all())
    # E[cos(x - loc)] = I1(k) / I0(k); E[sin(x - loc)] = 0
    want = (ember.special.i1e(conc) / ember.special.i0e(conc)).numpy()
    d = s.numpy() - loc.numpy()
    np.testing.assert_allclose(np.cos(d).mean(0), want, atol=0.01)
    np.testing.assert_allclose(np.sin(d).mean(0), 0.0, atol=0.01)
    s32 = ED.VonMises(ember.tensor([0.0]), ember.tensor([1.0])).sample((3,))
    assert s32.dtype == ember.float32


def test_von_mises_validation():
    with pytest.raises(ValueError):
        ED.VonMises(E([0.0]), E([-1.0]), validate_args=True)
    with pytest.raises(ValueError):
        TD.VonMises(P([0.0]), P([-1.0]), validate_args=True)


# -- ContinuousBernoulli ------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(probs=[0.2, 0.5, 0.4995, 0.9, 1e-3, 0.5004]),
                                dict(logits=[0.3, -2.0, 0.001, 5.0, -30.0, 0.0])])
def test_continuous_bernoulli_values(kw):
    ((k, v),) = kw.items()
    e, t = ED.ContinuousBernoulli(**{k: E(v)}), TD.ContinuousBernoulli(**{k: P(v)})
    for name in ("mean", "variance", "stddev", "probs", "logits"):
        close(getattr(e, name), getattr(t, name), rtol=1e-10, atol=1e-12)
    close(e.entropy(), t.entropy(), rtol=1e-10, atol=1e-12)
    x = np.linspace(0.0, 1.0, len(v))
    for name in ("log_prob", "cdf", "icdf"):
        close(getattr(e, name)(E(x)), getattr(t, name)(P(x)), rtol=1e-10, atol=1e-12)
    nat = np.linspace(-3, 3, len(v))
    close(e._log_normalizer(E(nat)), t._log_normalizer(P(nat)), rtol=1e-10, atol=1e-12)
    assert e.expand((2, len(v))).log_prob(E(x)).shape == (2, len(v))


def test_continuous_bernoulli_rsample_gradient_and_statistics():
    probs = E([0.1, 0.3, 0.8], ember.float64).requires_grad_()

    def draw(p):
        ember.manual_seed(1)
        return ED.ContinuousBernoulli(probs=p).rsample((4,))

    assert ember.autograd.gradcheck(draw, (probs,))
    ember.manual_seed(2)
    d = ED.ContinuousBernoulli(probs=E([0.1, 0.5, 0.8]))
    s = d.sample((100000,))
    np.testing.assert_allclose(s.mean(0).numpy(), d.mean.numpy(), atol=0.005)
    np.testing.assert_allclose(s.var(0).numpy(), d.variance.numpy(), atol=0.003)


def test_continuous_bernoulli_validation():
    for validate in (None, True, False):  # PyTorch's (quirky) rule, whatever it does
        try:
            TD.ContinuousBernoulli(probs=P([1.5]), validate_args=validate)
        except ValueError:
            with pytest.raises(ValueError, match="probs has invalid values"):
                ED.ContinuousBernoulli(probs=E([1.5]), validate_args=validate)
        else:
            d = ED.ContinuousBernoulli(probs=E([1.5]), validate_args=validate)
            assert float(d.probs) < 1.0
    with pytest.raises(ValueError):
        ED.ContinuousBernoulli(probs=E([0.5]), logits=E([0.0]))
    d = ED.ContinuousBernoulli(probs=E([0.3]), validate_args=True)
    with pytest.raises(ValueError):
        d.log_prob(E([1.5]))
    with pytest.raises(ValueError):
        TD.ContinuousBernoulli(probs=P([0.3]), validate_args=True).log_prob(P([1.5]))


# -- GeneralizedPareto --------------------------------------------------------------------------
GP = ([0.0, 1.0, -1.0, 0.5, 0.0], [1.0, 2.0, 0.5, 1.0, 3.0], [-0.5, 0.0, 1.5, 0.3, 1e-9])


def test_generalized_pareto_values():
    # float32: PyTorch 2.13's GeneralizedPareto compares with a float32 zero (float64 fails)
    e = ED.GeneralizedPareto(*[E(p, ember.float32) for p in GP], validate_args=False)
    t = TD.GeneralizedPareto(*[P(p, torch.float32) for p in GP], validate_args=False)
    for name in ("mean", "variance", "mode"):
        close(getattr(e, name), getattr(t, name), rtol=1e-6, atol=1e-6)
    close(e.entropy(), t.entropy(), rtol=1e-6, atol=1e-6)
    for v in ([0.3, 1.5, -0.5, 2.0, 0.1], [-1.0, 10.0, 3.0, -2.0, 50.0]):
        for name in ("log_prob", "cdf", "log_survival_function"):
            close(getattr(e, name)(E(v, ember.float32)), getattr(t, name)(P(v, torch.float32)),
                  rtol=1e-5, atol=1e-6)
    u = [0.1, 0.5, 0.9, 0.0, 0.99]
    close(e.icdf(E(u, ember.float32)), t.icdf(P(u, torch.float32)), rtol=1e-5, atol=1e-6)
    assert e.expand((3, 5)).batch_shape == (3, 5)


def test_generalized_pareto_support_rsample_and_statistics():
    d = ED.GeneralizedPareto(E([0.0, 1.0]), E([1.0, 2.0]), E([-0.5, 0.2]), validate_args=True)
    assert d.support.check(E([1.9, 1.0])).tolist() == [True, True]
    assert d.support.check(E([2.1, 0.9])).tolist() == [False, False]
    with pytest.raises(ValueError):
        d.log_prob(E([2.5, 0.0]))
    scale = E([1.0, 2.0]).requires_grad_()

    def draw(s):
        ember.manual_seed(3)
        return ED.GeneralizedPareto(E([0.0, 1.0]), s, E([-0.5, 0.2])).rsample((5,))

    assert ember.autograd.gradcheck(draw, (scale,))
    ember.manual_seed(4)
    s = d.sample((200000,))
    np.testing.assert_allclose(s.mean(0).numpy(), d.mean.numpy(), rtol=0.01)
    np.testing.assert_allclose(s.var(0).numpy(), d.variance.numpy(), rtol=0.05)


# -- Wishart ------------------------------------------------------------------------------------
def _spd():
    rs = np.random.RandomState(0)
    a = rs.randn(2, 3, 3)
    return a @ a.transpose(0, 2, 1) + np.eye(3)


@pytest.mark.parametrize("kw", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_values(kw):
    s = _spd()
    m = np.linalg.cholesky(s) if kw == "scale_tril" else s
    df = [4.5, 7.0]
    e, t = ED.Wishart(E(df), **{kw: E(m)}), TD.Wishart(P(df), **{kw: P(m)})
    assert e.batch_shape == t.batch_shape and e.event_shape == t.event_shape
    for name in ("mean", "mode", "variance", "covariance_matrix", "precision_matrix",
                 "scale_tril"):
        close(getattr(e, name), getattr(t, name), rtol=1e-10, atol=1e-10)
    x = s[::-1].copy() + np.eye(3)
    close(e.log_prob(E(x)), t.log_prob(P(x)), rtol=1e-10)
    close(e.entropy(), t.entropy(), rtol=1e-10)
    assert e.expand((4, 2)).log_prob(E(x)).shape == (4, 2)


def test_wishart_samples_gradient_and_validation():
    s = _spd()
    ember.manual_seed(5)
    d = ED.Wishart(E([4.5, 7.0]), covariance_matrix=E(s))
    x = d.sample((40000,))
    assert x.shape == (40000, 2, 3, 3)
    np.testing.assert_allclose(x.mean(0).numpy(), d.mean.numpy(),
                               atol=0.03 * float(d.mean.abs().max()))
    np.testing.assert_allclose(x.var(0).numpy(), d.variance.numpy(),
                               atol=0.08 * float(d.variance.abs().max()))
    low = E(np.linalg.cholesky(s[0])).requires_grad_()

    def draw(low):
        ember.manual_seed(6)
        return ED.Wishart(E(5.0), scale_tril=low.tril()).rsample((2,))

    # (in df the gradient is the implicit one of the Gamma draws, which is not the pathwise
    # derivative of a fixed-noise sampler, so finite differences cannot check it)
    assert ember.autograd.gradcheck(draw, (low,))
    df = E(5.0).requires_grad_()
    ED.Wishart(df, covariance_matrix=E(s[0])).rsample((3,)).sum().backward()
    assert df.grad is not None and math.isfinite(float(df.grad))
    with pytest.raises(ValueError, match="greater than ndim - 1"):
        ED.Wishart(E(0.5), covariance_matrix=E(np.eye(2)), validate_args=True)
    with pytest.raises(ValueError):
        ED.Wishart(E(3.0))


# -- LKJCholesky --------------------------------------------------------------------------------
def test_lkj_cholesky_log_prob_and_samples():
    conc = [0.5, 2.0]
    e, t = ED.LKJCholesky(4, E(conc)), TD.LKJCholesky(4, P(conc))
    assert e.batch_shape == t.batch_shape == (2,) and e.event_shape == t.event_shape == (4, 4)
    v = t.sample((5,))
    close(e.log_prob(E(v.numpy())), t.log_prob(v), rtol=1e-10)
    ember.manual_seed(7)
    s = e.sample((40000,))
    assert bool(ED.constraints.corr_cholesky.check(s).all())
    c = (s @ s.mT).numpy()
    # the first row's correlations are Beta(eta - 1 + d/2, same) on (-1, 1): variance
    # 1/(2 eta + d - 1); the other entries follow PyTorch's onion sampler (compared with its draws)
    np.testing.assert_allclose(c.var(0)[:, 0, 1], [1 / 4, 1 / 7], rtol=0.03)
    torch.manual_seed(0)
    st = t.sample((40000,))
    ct = (st @ st.mT).numpy()
    np.testing.assert_allclose(c.var(0), ct.var(0), atol=0.012)
    assert e.expand((3, 2)).sample().shape == (3, 2, 4, 4)
    with pytest.raises(ValueError, match="greater than or equal to 2"):
        ED.LKJCholesky(1)
    with pytest.raises(ValueError):
        ED.LKJCholesky(3, E(-1.0), validate_args=True)


# -- transforms ---------------------------------------------------------------------------------
def test_corr_cholesky_transform_matches_pytorch():
    x = np.random.RandomState(1).randn(4, 6) * 2
    te, tt = ED.transforms.CorrCholeskyTransform(), TD.transforms.CorrCholeskyTransform()
    ye, yt = te(E(x)), tt(P(x))
    close(ye, yt)
    close(te.inv(ye), x, rtol=1e-9, atol=1e-9)
    close(te.log_abs_det_jacobian(E(x), ye), tt.log_abs_det_jacobian(P(x), yt), rtol=1e-10)
    assert te.forward_shape((2, 6)) == tuple(tt.forward_shape((2, 6)))
    assert te.inverse_shape((4, 4)) == tuple(tt.inverse_shape((4, 4)))
    assert bool(ED.constraints.corr_cholesky.check(ye).all())
    assert te.bijective and te.domain.event_dim == 1 and te.codomain.event_dim == 2
    with pytest.raises(ValueError):
        te.forward_shape((5,))
    xg = E(x[:1]).requires_grad_()
    assert ember.autograd.gradcheck(lambda z: te(z), (xg,))
    assert type(ED.biject_to(ED.constraints.corr_cholesky)) is ED.CorrCholeskyTransform
    assert type(ED.transform_to(ED.constraints.corr_cholesky)) is ED.CorrCholeskyTransform
    assert type(ED.transform_to(ED.constraints.positive_semidefinite)) is \
        ED.PositiveDefiniteTransform


def test_cat_and_stack_transforms_match_pytorch():
    def parts(lib):
        return [lib.transforms.ExpTransform(), lib.transforms.identity_transform,
                lib.transforms.SigmoidTransform()]

    x = np.random.RandomState(2).randn(3, 6)
    ce = ED.transforms.CatTransform(parts(ED), dim=-1, lengths=[2, 3, 1])
    ct = TD.transforms.CatTransform(parts(TD), dim=-1, lengths=[2, 3, 1])
    close(ce(E(x)), ct(P(x)))
    close(ce.inv(ce(E(x))), x, rtol=1e-10, atol=1e-10)
    close(ce.log_abs_det_jacobian(E(x), ce(E(x))), ct.log_abs_det_jacobian(P(x), ct(P(x))))
    assert ce.bijective and ce.event_dim == 0
    xs = np.random.RandomState(3).randn(4, 3)
    se = ED.transforms.StackTransform(parts(ED), dim=1)
    st = TD.transforms.StackTransform(parts(TD), dim=1)
    close(se(E(xs)), st(P(xs)))
    close(se.inv(se(E(xs))), xs, rtol=1e-10, atol=1e-10)
    close(se.log_abs_det_jacobian(E(xs), se(E(xs))), st.log_abs_det_jacobian(P(xs), st(P(xs))))
    ok = se.codomain.check(se(E(xs)))
    assert bool(ok.all())
    with pytest.raises(ValueError):
        se(E(np.zeros((4, 2))))
    cat_c = ED.constraints.cat([ED.constraints.real, ED.constraints.positive], 0, [1, 1])
    b = ED.biject_to(cat_c)
    assert type(b) is ED.CatTransform
    close(b(E([0.5, 0.0])), [0.5, 1.0])
    assert type(ED.biject_to(ED.constraints.stack([ED.constraints.real]))) is ED.StackTransform


def test_reshape_and_cumulative_distribution_transforms():
    re, rt = ED.transforms.ReshapeTransform((2, 3), (6,)), TD.transforms.ReshapeTransform((2, 3), (6,))
    x = np.arange(24.0).reshape(4, 2, 3)
    close(re(E(x)), rt(P(x)))
    close(re.inv(re(E(x))), x)
    close(re.log_abs_det_jacobian(E(x), re(E(x))), rt.log_abs_det_jacobian(P(x), rt(P(x))))
    assert tuple(re.forward_shape((4, 2, 3))) == tuple(rt.forward_shape((4, 2, 3))) == (4, 6)
    assert tuple(re.inverse_shape((4, 6))) == (4, 2, 3)
    with pytest.raises(ValueError):
        ED.transforms.ReshapeTransform((2, 3), (5,))
    with pytest.raises(ValueError):
        re.forward_shape((4, 3, 2))
    ce = ED.transforms.CumulativeDistributionTransform(ED.Normal(E(0.5), E(2.0)))
    ct = TD.transforms.CumulativeDistributionTransform(TD.Normal(P(0.5), P(2.0)))
    v = [-1.0, 0.3, 4.0]
    close(ce(E(v)), ct(P(v)))
    close(ce.inv(ce(E(v))), v, rtol=1e-10)
    close(ce.log_abs_det_jacobian(E(v), ce(E(v))), ct.log_abs_det_jacobian(P(v), ct(P(v))))
    assert ce.sign == 1 and ce.codomain is ED.constraints.unit_interval
    td_ = ED.TransformedDistribution(ED.Normal(E(0.0), E(1.0)),
                                     [ED.transforms.CumulativeDistributionTransform(
                                         ED.Normal(E(0.0), E(1.0)))])
    close(td_.log_prob(E([0.2, 0.7])), [0.0, 0.0])  # the CDF of a variable is uniform


# -- constraints and KL -------------------------------------------------------------------------
def test_mixture_same_family_constraint():
    cat_e, cat_t = ED.Categorical(ember.ones(3)), TD.Categorical(torch.ones(3))
    me = ED.MixtureSameFamily(cat_e, ED.Uniform(E([0, 0, 0]), E([1, 2, 3])))
    mt = TD.MixtureSameFamily(cat_t, TD.Uniform(P([0, 0, 0]), P([1, 2, 3])))
    assert type(me.support).__name__ == "MixtureSameFamilyConstraint"
    v = [0.5, 2.5, 3.5]
    assert me.support.check(E(v)).tolist() == mt.support.check(P(v)).tolist()
    mi = ED.MixtureSameFamily(cat_e, ED.Independent(ED.Normal(ember.zeros(3, 2),
                                                              ember.ones(3, 2)), 1))
    assert mi.support.event_dim == 1 and mi.support.check(ember.zeros(4, 2)).shape == (4,)
    assert repr(mi.support) == repr(TD.MixtureSameFamily(cat_t, TD.Independent(
        TD.Normal(torch.zeros(3, 2), torch.ones(3, 2)), 1)).support)


def _pair(name, *params):
    return getattr(ED, name)(*[E(p) for p in params]), getattr(TD, name)(*[P(p) for p in params])


def test_continuous_bernoulli_kl_pairs():
    cbe = ED.ContinuousBernoulli(probs=E([0.2, 0.7, 0.5]))
    cbt = TD.ContinuousBernoulli(probs=P([0.2, 0.7, 0.5]))
    cbe2 = ED.ContinuousBernoulli(logits=E([1.0, -0.5, 0.0]))
    cbt2 = TD.ContinuousBernoulli(logits=P([1.0, -0.5, 0.0]))
    others = [
        _pair("Exponential", [0.5, 2.0, 1.0]),
        _pair("Normal", [0.0, 0.5, 2.0], [1.0, 0.3, 2.0]),
        _pair("Uniform", [-1.0, 0.0, -0.5], [2.0, 2.0, 1.5]),
        _pair("Pareto", [0.5, 2.0, 1.0], [1.0, 3.0, 2.0]),
    ]
    close(ED.kl_divergence(cbe, cbe2), TD.kl_divergence(cbt, cbt2), rtol=1e-10)
    for qe, qt in others:
        close(ED.kl_divergence(cbe, qe), TD.kl_divergence(cbt, qt), rtol=1e-10)
    into = others + [
        _pair("Beta", [0.5, 2.0, 1.0], [1.0, 3.0, 2.0]),
        _pair("Gamma", [0.5, 2.0, 1.0], [1.0, 3.0, 2.0]),
        _pair("Gumbel", [0.0, 1.0, 2.0], [1.0, 3.0, 2.0]),
        _pair("Laplace", [0.0, 1.0, 2.0], [1.0, 3.0, 2.0]),
        _pair("Uniform", [0.1, 0.0, 0.2], [0.9, 1.0, 0.3]),
    ]
    for pe, pt in into:
        close(ED.kl_divergence(pe, cbe), TD.kl_divergence(pt, cbt), rtol=1e-10)


def test_every_pytorch_distribution_and_transform_name_exists():
    for name in dir(TD):
        if not name.startswith("_") and isinstance(getattr(TD, name), type):
            assert hasattr(ED, name), name
    for name in dir(TD.transforms):
        obj = getattr(TD.transforms, name)
        if isinstance(obj, type) and name.endswith("Transform"):
            assert hasattr(ED.transforms, name), name
    assert ED.exp_family.ExponentialFamily is ED.ExponentialFamily
    assert hasattr(ED.constraints, "MixtureSameFamilyConstraint")


# -- KL pairs across families, the exponential-family base --------------------------------------
KL_PARAMS = {
    "Bernoulli": ([0.2, 0.7, 0.0],), "Poisson": ([0.5, 3.0, 1.0],),
    "Beta": ([0.5, 2.0, 3.0], [1.0, 3.0, 0.7]), "Exponential": ([0.5, 2.0, 1.0],),
    "Gamma": ([0.5, 2.0, 3.0], [1.0, 3.0, 0.7]), "Normal": ([0.0, 0.5, -1.0], [1.0, 0.3, 2.0]),
    "Uniform": ([0.1, 0.0, -0.5], [0.9, 1.0, 1.5]), "Pareto": ([0.5, 2.0, 1.0], [1.5, 3.0, 0.8]),
    "Gumbel": ([0.0, 1.0, -2.0], [1.0, 3.0, 0.5]), "Laplace": ([0.0, 1.0, 2.0], [1.0, 3.0, 0.5]),
    "HalfNormal": ([1.0, 3.0, 0.5],), "Binomial": ([5.0, 5.0, 5.0], [0.2, 0.7, 0.5]),
}


def _make(lib, name, params, validate=None):
    conv = E if lib is ED else P
    return getattr(lib, name)(*[conv(p) for p in params], validate_args=validate)


def test_every_pytorch_kl_pair_of_these_families_matches():
    from torch.distributions.kl import _KL_REGISTRY

    seen = 0
    for tp, tq in _KL_REGISTRY:
        pn, qn = tp.__name__, tq.__name__
        if pn not in KL_PARAMS or qn not in KL_PARAMS:
            continue
        want = TD.kl_divergence(_make(TD, pn, KL_PARAMS[pn]), _make(TD, qn, KL_PARAMS[qn]))
        got = ED.kl_divergence(_make(ED, pn, KL_PARAMS[pn]), _make(ED, qn, KL_PARAMS[qn]))
        close(got, want, rtol=1e-10)
        seen += 1
    assert seen >= 60


@pytest.mark.parametrize("p,q", [
    (("Beta", [2.0] * 3, [3.0] * 3), ("Uniform", [0.0, 0.1, -1.0], [1.0, 2.0, 0.9])),
    (("Uniform", [0.0, 0.1, -0.1], [1.0, 1.1, 0.5]), ("Beta", [2.0] * 3, [3.0] * 3)),
    (("Uniform", [0.0, 0.1, -0.1], [1.0, 1.1, 0.5]), ("Exponential", [2.0] * 3)),
    (("Uniform", [0.0, 0.1, -0.1], [1.0, 1.1, 0.5]), ("Gamma", [2.0] * 3, [3.0] * 3)),
    (("Uniform", [1.0, 0.9, 2.0], [2.0, 1.1, 3.0]), ("Pareto", [1.0] * 3, [2.0] * 3)),
    (("Pareto", [1.0, 0.9, 2.0], [1.0, 2.0, 2.5]), ("Pareto", [1.0] * 3, [2.0] * 3)),
    (("Pareto", [1.0] * 3, [1.0, 2.0, 0.5]), ("Normal", [0.0] * 3, [1.0] * 3)),
    (("Pareto", [1.0] * 3, [1.0, 2.0, 0.5]), ("Exponential", [1.0] * 3)),
    (("Pareto", [1.0] * 3, [1.0, 2.0, 0.5]), ("Gamma", [1.0] * 3, [1.0, 2.0, 3.0])),
    (("Binomial", [5.0, 5.0, 7.0], [0.2, 0.7, 0.5]), ("Binomial", [5.0] * 3, [0.4, 0.1, 0.5])),
    (("Bernoulli", [0.0, 1.0, 0.5]), ("Poisson", [1.0, 2.0, 3.0])),
])
def test_kl_support_edges_match_pytorch(p, q):
    (pn, *pp), (qn, *qp) = p, q
    want = TD.kl_divergence(_make(TD, pn, pp, False), _make(TD, qn, qp, False))
    got = ED.kl_divergence(_make(ED, pn, pp, False), _make(ED, qn, qp, False))
    close(got, want, rtol=1e-10)


def test_kl_infinite_pairs_shape_and_binomial_refusal():
    got = ED.kl_divergence(ED.Normal(ember.zeros(2, 1), 1.0), ED.Beta(ember.ones(3), 1.0))
    want = TD.kl_divergence(TD.Normal(torch.zeros(2, 1), 1.0), TD.Beta(torch.ones(3), 1.0))
    assert got.shape == want.shape and bool(got.isinf().all())
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
        ED.kl_divergence(ED.Binomial(5, E([0.2])), ED.Binomial(6, E([0.2])))


def test_exponential_family_entropy_and_bregman_kl():
    s = _spd()
    w1 = ED.Wishart(E([4.5, 6.0]), covariance_matrix=E(s))
    w2 = ED.Wishart(E([5.0, 3.5]), covariance_matrix=E(s[::-1].copy()))
    t1 = TD.Wishart(P([4.5, 6.0]), covariance_matrix=P(s))
    t2 = TD.Wishart(P([5.0, 3.5]), covariance_matrix=P(s[::-1].copy()))
    close(ED.kl_divergence(w1, w2), TD.kl_divergence(t1, t2), rtol=1e-9)
    close(ED.ExponentialFamily.entropy(w1), w1.entropy(), rtol=1e-10)
    cb = ED.ContinuousBernoulli(probs=E([0.2, 0.7]))
    close(ED.ExponentialFamily.entropy(cb), cb.entropy(), rtol=1e-10)
    # different families: no Bregman divergence (PyTorch's error)
    with pytest.raises(NotImplementedError, match="different exponential families"):
        ED.kl_divergence(w1, cb)
    with pytest.raises(NotImplementedError):
        TD.kl_divergence(t1, TD.ContinuousBernoulli(probs=P([0.2, 0.7])))


@pytest.mark.parametrize("name,params", [
    ("Bernoulli", ([0.2, 0.7],)), ("Beta", ([0.5, 2.0], [1.5, 3.0])),
    ("Dirichlet", ([[0.5, 2.0, 1.0], [1.0, 1.0, 4.0]],)), ("Exponential", ([0.5, 2.0],)),
    ("Gamma", ([0.5, 2.0], [1.5, 3.0])), ("Normal", ([0.3, -1.0], [0.5, 2.0])),
    ("Poisson", ([0.5, 4.0],)),
])
def test_exponential_family_parts_match_pytorch(name, params):
    e, t = _make(ED, name, params), _make(TD, name, params)
    assert len(e._natural_params) == len(t._natural_params)
    for a, b in zip(e._natural_params, t._natural_params):
        close(a, b)
    close(e._log_normalizer(*e._natural_params), t._log_normalizer(*t._natural_params),
          rtol=1e-10)
    if "_mean_carrier_measure" in type(t).__dict__:
        close(ED.ExponentialFamily.entropy(e), e.entropy(), rtol=1e-10)
        assert e._mean_carrier_measure == t._mean_carrier_measure


def test_utils_names():
    assert ED.utils.euler_constant == TD.utils.euler_constant
    assert ED.utils.is_tensor_like(ember.ones(1)) and not ED.utils.is_tensor_like(1.0)
    close(ED.utils._sum_rightmost(ember.ones(2, 3, 4), 2), [12.0, 12.0])


def test_wishart_redraws_singular_samples(monkeypatch):
    import warnings

    d = ED.Wishart(E(3.0), covariance_matrix=E(np.eye(2)))
    calls = []
    real = ED.Wishart._bartlett

    def first_singular(self, shape):
        calls.append(1)
        out = real(self, shape)
        return out * 0 if len(calls) == 1 else out

    monkeypatch.setattr(ED.Wishart, "_bartlett", first_singular)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        s = d.rsample((4,))
    assert any("Singular sample detected" in str(w.message) for w in seen)
    assert len(calls) == 2 and bool((ember.linalg.eigvalsh(s) > 0).all())


def test_von_mises_log_modified_bessel_helper():
    from torch.distributions.von_mises import _log_modified_bessel_fn as theirs

    from ember.distributions.von_mises import _log_modified_bessel_fn as mine

    x = [0.1, 1.0, 5.0, 50.0, 500.0]
    for order in (0, 1):
        # PyTorch's polynomial fit is good to ~1e-7 relative
        close(mine(E(x), order), theirs(P(x), order), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError):
        mine(E(x), 2)


@pytest.mark.parametrize("build", [
    lambda D, L: D.Wishart(L.tensor(3.0), covariance_matrix=-L.eye(2)),
    lambda D, L: D.Wishart(L.tensor(3.0), covariance_matrix=L.eye(2)).log_prob(-L.eye(2)),
    lambda D, L: D.LKJCholesky(2, L.tensor(1.0)).log_prob(L.eye(2) * 2),
    lambda D, L: D.GeneralizedPareto(L.tensor(0.0), L.tensor(1.0), L.tensor(0.1)).cdf(
        L.tensor(-1.0)),
    lambda D, L: D.VonMises(L.tensor(0.0), L.tensor(1.0)).log_prob(L.tensor(float("nan"))),
    lambda D, L: D.ContinuousBernoulli(probs=L.tensor(0.3)).cdf(L.tensor(1.5)),
])
def test_validation_errors_as_pytorch(build):
    with pytest.raises(ValueError):
        build(TD, torch)
    with pytest.raises(ValueError):
        build(ED, ember)


def test_lkj_dim_must_be_an_int():
    with pytest.raises(TypeError):
        TD.LKJCholesky(2.0)
    with pytest.raises(TypeError, match="dim must be an int"):
        ED.LKJCholesky(2.0)


def test_binomial_with_a_python_int_total_count_samples():
    ember.manual_seed(8)
    d = ED.Binomial(10, ember.tensor([0.2, 0.7]))
    s = d.sample((50000,))
    t = TD.Binomial(10, torch.tensor([0.2, 0.7])).sample((3,))
    assert s.dtype == ember.float32 and str(t.dtype) == "torch.float32"
    assert s.shape == (50000, 2)
    arr = s.numpy()
    assert (arr == np.round(arr)).all() and arr.min() >= 0 and arr.max() <= 10
    np.testing.assert_allclose(arr.mean(0), [2.0, 7.0], rtol=0.01)
    np.testing.assert_allclose(arr.var(0), [1.6, 2.1], rtol=0.05)
    assert ED.Binomial(10, probs=0.3).sample((4,)).shape == (4,)


def test_gamma_family_samples_of_scalar_parameters_are_0d():
    """Gamma, Chi2, Beta and StudentT with 0-d parameters sample 0-d values, as PyTorch's
    (a 1-element array once came back: pyro's MultivariateStudentT then sampled (1, d))."""
    for m in (ember, torch):
        a = m.tensor(1.5)
        shapes = [tuple(d.rsample().shape) for d in (
            m.distributions.Gamma(a, m.tensor(0.5)), m.distributions.Chi2(a),
            m.distributions.Beta(a, a), m.distributions.StudentT(a))]
        assert shapes == [()] * 4, (m.__name__, shapes)
        assert tuple(m.distributions.Gamma(a, m.tensor(0.5)).rsample((3,)).shape) == (3,)


def test_private_standard_gamma_as_pytorchs():
    """torch._standard_gamma (zuko draws through it): PyTorch's sampler and stream, with a
    generator or the default one, StandardGammaBackward0 and its reparameterised gradient
    (ember's implicit derivative by central differences: within 1e-4 of PyTorch's)."""
    torch = pytest.importorskip("torch")

    def run(m):
        a = m.tensor([0.5, 2.0, 3.0], requires_grad=True)
        x = m._standard_gamma(a, generator=m.Generator().manual_seed(0))
        x.sum().backward()
        m.manual_seed(1)
        y = m._standard_gamma(m.tensor([[1.5], [0.2]], dtype=m.float64))
        dg = m._standard_gamma_grad(m.tensor([0.5, 2.0]), m.tensor([0.3, 1.0]))
        return x.detach().numpy(), x.grad_fn.name(), a.grad.numpy(), y.numpy(), y.dtype, dg.numpy()

    e, t = run(ember), run(torch)
    np.testing.assert_array_equal(e[0], t[0])
    assert e[1] == t[1] == "StandardGammaBackward0"
    np.testing.assert_allclose(e[2], t[2], rtol=1e-4)
    np.testing.assert_array_equal(e[3], t[3])
    assert str(e[4]).split(".")[-1] == str(t[4]).split(".")[-1] == "float64"
    np.testing.assert_allclose(e[5], t[5], rtol=1e-4)
