"""ember.distributions against torch.distributions: densities, moments, samples, gradients, KL,
validation errors, and two small training losses (a VAE, REINFORCE)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.distributions as ED

torch = pytest.importorskip("torch")
TD = torch.distributions


def T(lib, x, dtype="float64"):
    lib = {ED: ember, TD: torch}.get(lib, lib)
    return lib.tensor(np.asarray(x), dtype=getattr(lib, dtype))


def close(a, b, tol=1e-6):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True)


# name -> (parameters as nested lists, a batch of values, value dtype)
CASES = {
    "Normal": (dict(loc=[[0.0, 1.0, -2.0]], scale=[[1.0], [2.0]]), [[0.3, -1.0, 2.5]], None),
    "Uniform": (dict(low=[0.0, 1.0], high=[1.0, 3.0]), [0.3, 2.0], None),
    "Exponential": (dict(rate=[0.5, 2.0, 7.0]), [0.3, 2.0, 0.01], None),
    "Laplace": (dict(loc=[0.0, 1.0], scale=[1.0, 2.0]), [0.3, -2.0], None),
    "Bernoulli": (dict(probs=[0.2, 0.7, 0.5]), [0.0, 1.0, 1.0], None),
    "Geometric": (dict(probs=[0.2, 0.7]), [0.0, 3.0], None),
    "Poisson": (dict(rate=[0.5, 4.0, 10.0]), [0.0, 3.0, 12.0], None),
    "Binomial": (dict(total_count=[5.0, 5.0, 3.0], probs=[0.2, 0.7, 0.5]), [0.0, 3.0, 2.0], None),
    "Gamma": (dict(concentration=[0.5, 4.0, 30.0], rate=[1.0, 2.0, 0.5]), [0.3, 3.0, 50.0], None),
    "Beta": (dict(concentration1=[0.5, 4.0, 2.0], concentration0=[1.0, 2.0, 0.3]),
             [0.3, 0.9, 0.99], None),
    "Dirichlet": (dict(concentration=[[0.5, 4.0, 1.0], [2.0, 2.0, 2.0]]),
                  [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], None),
    "Categorical": (dict(logits=[[0.5, 4.0, 1.0], [2.0, 2.0, 2.0]]), [2, 0], "int64"),
    "OneHotCategorical": (dict(probs=[[0.5, 4.0, 1.0], [2.0, 2.0, 2.0]]),
                          [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], None),
    "StudentT": (dict(df=[0.5, 4.0, 3.0], loc=[0.0, 1.0, 2.0], scale=[1.0, 2.0, 3.0]),
                 [0.3, -2.0, 1.0], None),
    "LogNormal": (dict(loc=[0.0, 1.0], scale=[1.0, 2.0]), [0.3, 2.0], None),
    "Cauchy": (dict(loc=[0.0, 1.0], scale=[1.0, 2.0]), [0.3, -2.0], None),
    "HalfNormal": (dict(scale=[1.0, 2.0]), [0.3, 2.0], None),
    "Chi2": (dict(df=[1.0, 5.0]), [0.3, 2.0], None),
    "Gumbel": (dict(loc=[0.0, 1.0], scale=[1.0, 2.0]), [0.3, -2.0], None),
    "Multinomial": (dict(total_count=5, probs=[[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]),
                    [[1.0, 1.0, 3.0], [0.0, 5.0, 0.0]], None),
    "HalfCauchy": (dict(scale=[1.0, 2.0]), [0.3, 2.0], None),
    "InverseGamma": (dict(concentration=[0.5, 4.0, 2.5], rate=[1.0, 2.0, 0.5]), [0.3, 3.0, 5.0],
                     None),
    "Kumaraswamy": (dict(concentration1=[0.5, 4.0, 2.0], concentration0=[1.5, 2.0, 0.3]),
                    [0.3, 0.9, 0.5], None),
    "LogisticNormal": (dict(loc=[[0.0, 1.0], [1.0, -1.0]], scale=[[1.0, 0.5], [2.0, 1.0]]),
                       [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], None),
    "FisherSnedecor": (dict(df1=[1.0, 5.0, 3.0], df2=[3.0, 6.0, 10.0]), [0.3, 2.0, 1.0], None),
    "LowRankMultivariateNormal": (dict(loc=[[0.0, 1.0, 2.0], [1.0, -1.0, 0.0]],
                                       cov_factor=[[1.0, 0.2], [0.3, -0.5], [0.0, 1.0]],
                                       cov_diag=[1.0, 0.5, 2.0]),
                                  [[[0.3, 2.0, 1.0], [1.0, 1.0, -1.0]]], None),
    "Weibull": (dict(scale=[1.0, 2.0], concentration=[0.5, 3.0]), [0.3, 2.0], None),
    "Pareto": (dict(scale=[1.0, 2.0], alpha=[0.5, 3.0]), [1.3, 2.5], None),
    "NegativeBinomial": (dict(total_count=[3.0, 0.5], probs=[0.2, 0.7]), [0.0, 4.0], None),
    "RelaxedBernoulli": (dict(temperature=[0.5], probs=[0.2, 0.7]), [0.3, 0.9], None),
    "RelaxedOneHotCategorical": (dict(temperature=[0.7], logits=[[0.5, 4.0, 1.0], [2.0, 2.0, 2.0]]),
                                 [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], None),
    "MultivariateNormal": (dict(loc=[[0.0, 1.0], [1.0, -1.0]],
                                covariance_matrix=[[2.0, 0.5], [0.5, 1.0]]),
                           [[[0.3, 2.0], [1.0, 1.0]]], None),
}


def make(lib, name, dtype="float64"):
    params, _, _ = CASES[name]
    kwargs = {k: v if isinstance(v, int) else T(lib, v, dtype) for k, v in params.items()}
    mod = ED if lib is ember else TD
    return getattr(mod, name)(**kwargs)


def value(lib, name, dtype="float64"):
    _, val, vdt = CASES[name]
    return T(lib, val, vdt or dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_densities_and_moments_match_pytorch(name, dtype):
    tol = 1e-9 if dtype == "float64" else 2e-5
    e, t = make(ember, name, dtype), make(torch, name, dtype)
    assert tuple(e.batch_shape) == tuple(t.batch_shape)
    assert tuple(e.event_shape) == tuple(t.event_shape)
    lp = e.log_prob(value(ember, name, dtype))
    assert str(lp.dtype) == f"torch.{dtype}"
    close(lp, t.log_prob(value(torch, name, dtype)), tol)
    for attr in ("mean", "variance", "stddev", "mode"):
        try:
            expected = getattr(t, attr)
        except NotImplementedError:
            continue
        got = getattr(e, attr)
        if name == "Kumaraswamy" and attr == "mode":
            # PyTorch's Kumaraswamy.mode is nan whenever concentration0 > 1; ours is the mode,
            # ((a - 1) / (a b - 1))^(1 / a) for a, b >= 1
            a, b = np.array(CASES[name][0]["concentration1"]), np.array(
                CASES[name][0]["concentration0"])
            with np.errstate(invalid="ignore"):
                expected = np.where((a < 1) | (b < 1), np.nan, ((a - 1) / (a * b - 1)) ** (1 / a))
            expected = expected.astype(dtype)
        close(got, expected, tol)
    try:
        expected = t.entropy()
    except NotImplementedError:
        expected = None
    if expected is not None:
        got = e.entropy()
        assert str(got.dtype) == f"torch.{dtype}"
        # PyTorch's Multinomial entropy is ~3e-8 (relative) off the exact sum; ours is not
        close(got, expected, max(tol, 1e-7) if name == "Multinomial" else tol)


@pytest.mark.parametrize("name", ["Normal", "Uniform", "Exponential", "Laplace", "LogNormal",
                                  "Gamma"])
def test_cdf_icdf_match_pytorch(name):
    e, t = make(ember, name), make(torch, name)
    close(e.cdf(value(ember, name)), t.cdf(value(torch, name)), 1e-9)
    if name == "Gamma":
        return
    q = np.linspace(0.1, 0.95, e.batch_shape[-1])
    close(e.icdf(T(ember, q)), t.icdf(T(torch, q)), 1e-9)


@pytest.mark.parametrize("name", sorted(CASES))
def test_sample_shapes_dtypes_and_expand(name):
    e, t = make(ember, name, "float32"), make(torch, name, "float32")
    for shape in [(), (4,), (2, 3)]:
        s, st = e.sample(shape), t.sample(shape)
        assert tuple(s.shape) == tuple(st.shape)
        assert s.dtype == getattr(ember, str(st.dtype).removeprefix("torch."))
        lp = e.log_prob(s)  # samples lie in the support (validation is on) and score per draw
        assert tuple(lp.shape) == tuple(t.log_prob(st).shape)
        # (float32 Kumaraswamy draws saturate to exactly 1 for small concentration0, as PyTorch's)
        assert bool(lp.isfinite().all()) or name == "Kumaraswamy"
    if e.has_rsample:
        r = e.rsample((5,))
        assert tuple(r.shape) == tuple(t.rsample((5,)).shape)
    else:
        with pytest.raises(NotImplementedError):
            e.rsample()
    assert e.has_rsample == t.has_rsample
    assert e.has_enumerate_support == t.has_enumerate_support
    big = (3,) + tuple(e.batch_shape)
    ee, tt = e.expand(big), t.expand(big)
    assert tuple(ee.batch_shape) == tuple(tt.batch_shape)
    close(ee.log_prob(value(ember, name, "float32")), tt.log_prob(value(torch, name, "float32")),
          2e-5)


STATS = {
    "Normal": lambda m: m.Normal(T(m, [1.0, -2.0]), T(m, [0.5, 2.0])),
    "Uniform": lambda m: m.Uniform(T(m, [0.0, -1.0]), T(m, [1.0, 3.0])),
    "Exponential": lambda m: m.Exponential(T(m, [0.5, 3.0])),
    "Laplace": lambda m: m.Laplace(T(m, [0.0, 2.0]), T(m, [1.0, 0.5])),
    "Bernoulli": lambda m: m.Bernoulli(logits=T(m, [-1.0, 2.0])),
    "Geometric": lambda m: m.Geometric(T(m, [0.3, 0.8])),
    "Poisson": lambda m: m.Poisson(T(m, [0.7, 6.0])),
    "Binomial": lambda m: m.Binomial(10, T(m, [0.3, 0.9])),
    "Gamma": lambda m: m.Gamma(T(m, [0.4, 5.0]), T(m, [1.0, 2.0])),
    "Beta": lambda m: m.Beta(T(m, [0.5, 3.0]), T(m, [2.0, 1.5])),
    "Dirichlet": lambda m: m.Dirichlet(T(m, [0.5, 2.0, 3.0])),
    "OneHotCategorical": lambda m: m.OneHotCategorical(T(m, [0.2, 0.5, 0.3])),
    "StudentT": lambda m: m.StudentT(T(m, [5.0, 9.0]), T(m, [1.0, 0.0]), T(m, [1.0, 2.0])),
    "LogNormal": lambda m: m.LogNormal(T(m, [0.0, 0.5]), T(m, [0.25, 0.5])),
    "MultivariateNormal": lambda m: m.MultivariateNormal(
        T(m, [1.0, -1.0]), scale_tril=T(m, [[1.0, 0.0], [0.8, 0.5]])),
    "HalfNormal": lambda m: m.HalfNormal(T(m, [1.0, 0.3])),
    "Chi2": lambda m: m.Chi2(T(m, [1.0, 6.0])),
    "Gumbel": lambda m: m.Gumbel(T(m, [0.0, 2.0]), T(m, [1.0, 0.5])),
    "Multinomial": lambda m: m.Multinomial(7, T(m, [0.2, 0.5, 0.3])),
    "Weibull": lambda m: m.Weibull(T(m, [1.0, 2.0]), T(m, [1.5, 3.0])),
    "Pareto": lambda m: m.Pareto(T(m, [1.0, 2.0]), T(m, [6.0, 8.0])),
    "NegativeBinomial": lambda m: m.NegativeBinomial(T(m, [3.0, 0.5]), T(m, [0.2, 0.7])),
    "InverseGamma": lambda m: m.InverseGamma(T(m, [5.0, 8.0]), T(m, [1.0, 3.0])),
    "Kumaraswamy": lambda m: m.Kumaraswamy(T(m, [0.5, 3.0]), T(m, [2.0, 1.5])),
    "FisherSnedecor": lambda m: m.FisherSnedecor(T(m, [5.0, 8.0]), T(m, [9.0, 12.0])),
    "LowRankMVN": lambda m: m.LowRankMultivariateNormal(
        T(m, [1.0, -1.0, 0.0]), T(m, [[1.0], [0.5], [-0.3]]), T(m, [0.5, 1.0, 0.2])),
    "Mixture": lambda m: m.MixtureSameFamily(m.Categorical(T(m, [0.3, 0.7])),
                                             m.Normal(T(m, [-1.0, 2.0]), T(m, [0.5, 1.0]))),
}


@pytest.mark.parametrize("name", sorted(STATS))
def test_sample_statistics(name):
    ember.manual_seed(1234)
    d = STATS[name](ED)
    n = 40000
    s = d.sample((n,)).double()
    mean, var = d.mean, d.variance
    se = (var / n).sqrt()
    assert bool(((s.mean(0) - mean).abs() <= 5 * se + 1e-9).all()), (s.mean(0), mean)
    # the sample variance of a heavy-tailed draw converges slowly: a loose relative check
    close(s.var(0) / var, ember.ones_like(var), 0.1)


def test_categorical_sample_frequencies_batched():
    ember.manual_seed(0)
    probs = T(ember, [[0.1, 0.6, 0.3], [0.5, 0.0, 0.5]])
    s = ED.Categorical(probs).sample((20000,))
    assert s.dtype == ember.int64 and tuple(s.shape) == (20000, 2)
    freq = np.stack([np.bincount(s.numpy()[:, b], minlength=3) for b in range(2)]) / 20000
    np.testing.assert_allclose(freq, probs.numpy(), atol=0.015)
    assert (s.numpy()[:, 1] != 1).all()


def test_manual_seed_reproduces_every_sampler():
    for name in sorted(STATS):
        ember.manual_seed(7)
        a = STATS[name](ED).sample((6,))
        ember.manual_seed(7)
        b = STATS[name](ED).sample((6,))
        assert bool((a == b).all()), name


# -- gradients ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_prob_and_entropy_gradients_match_pytorch(name):
    params, _, _ = CASES[name]
    grads = []
    for lib in (ember, torch):
        kw = {k: v if isinstance(v, int) else T(lib, v).requires_grad_(k != "total_count")
              for k, v in params.items()}
        mod = ED if lib is ember else TD
        d = getattr(mod, name)(**kw)
        loss = (d.log_prob(value(lib, name)) * T(lib, 1.5)).sum()
        try:
            loss = loss + d.entropy().sum()
        except NotImplementedError:
            pass
        wrt = [v for k, v in kw.items() if k != "total_count"]
        grads.append(lib.autograd.grad(loss, wrt))
    for g_e, g_t in zip(*grads):
        close(g_e, g_t, 1e-8)


def _eps_from(sample, loc, scale):
    return ((sample - loc) / scale).detach()


def test_normal_rsample_gradient_matches_pytorch(monkeypatch):
    loc_e, scale_e = T(ember, [0.5, -1.0]).requires_grad_(), T(ember, [2.0, 0.3]).requires_grad_()
    z = ED.Normal(loc_e, scale_e).rsample((3,))
    assert z.requires_grad and tuple(z.shape) == (3, 2)
    ((z.sin() * z).sum()).backward()
    eps = _eps_from(z, loc_e, scale_e).numpy()
    monkeypatch.setattr(TD.normal, "_standard_normal",
                        lambda shape, dtype, device: torch.tensor(eps, dtype=dtype))
    loc_t, scale_t = T(torch, [0.5, -1.0]).requires_grad_(), T(torch, [2.0, 0.3]).requires_grad_()
    zt = TD.Normal(loc_t, scale_t).rsample((3,))
    ((zt.sin() * zt).sum()).backward()
    close(z, zt, 1e-12)
    close(loc_e.grad, loc_t.grad, 1e-10)
    close(scale_e.grad, scale_t.grad, 1e-10)


def test_sample_has_no_graph_and_rsample_has_one():
    loc = ember.zeros(2, requires_grad=True)
    d = ED.Normal(loc, 1.0)
    assert not d.sample().requires_grad
    assert d.rsample().requires_grad
    with pytest.raises(NotImplementedError, match="has_rsample=False"):
        ED.Bernoulli(0.3).rsample()


def test_gamma_implicit_reparameterisation_matches_pytorch_formula():
    alpha = T(ember, [0.3, 1.0, 2.5, 10.0, 100.0]).requires_grad_()
    ember.manual_seed(3)
    x = ED.Gamma(alpha, 1.0).rsample((4,))
    (g,) = ember.autograd.grad(x.sum(), alpha)
    at = torch.tensor(alpha.detach().numpy()).expand(4, 5)
    expected = torch._standard_gamma_grad(at, torch.tensor(x.detach().numpy())).sum(0)
    close(g, expected, 2e-3)  # PyTorch's is an approximation; ours differentiates the CDF


@pytest.mark.parametrize("family", ["Gamma", "Beta", "Dirichlet"])
def test_reparameterised_gradient_of_the_mean(family):
    """d/dparam E[x] estimated from rsample must equal the exact derivative of the mean."""
    ember.manual_seed(11)
    n = 20000
    if family == "Gamma":
        p = T(ember, [0.5, 3.0]).requires_grad_()
        d, exact = ED.Gamma(p, 2.0), np.array([0.5, 0.5])  # d(c/r)/dc = 1/r
    elif family == "Beta":
        p = T(ember, [2.0, 0.7]).requires_grad_()
        d = ED.Beta(p, 3.0)
        exact = 3.0 / (p.detach().numpy() + 3.0) ** 2
    else:
        p = T(ember, [1.0, 2.0, 3.0]).requires_grad_()
        d = ED.Dirichlet(p)  # E[x_0] = c_0 / sum(c): derivatives (S - c_0) / S^2, -c_0 / S^2
        exact = np.array([5.0 / 36.0, -1.0 / 36.0, -1.0 / 36.0])
    x = d.rsample((n,))
    target = x[:, 0].mean() if family == "Dirichlet" else x.mean(0).sum()
    (g,) = ember.autograd.grad(target, p)
    np.testing.assert_allclose(g.numpy(), exact, atol=0.02)


@pytest.mark.parametrize("fam", ["Exponential", "Laplace", "Uniform", "MultivariateNormal",
                                 "StudentT"])
def test_rsample_gradients_flow(fam):
    if fam == "MultivariateNormal":
        loc = T(ember, [0.0, 1.0]).requires_grad_()
        lt = T(ember, [[1.0, 0.0], [0.3, 2.0]]).requires_grad_()
        d, params = ED.MultivariateNormal(loc, scale_tril=lt), [loc, lt]
    elif fam == "Uniform":
        lo, hi = T(ember, 0.0).requires_grad_(), T(ember, 2.0).requires_grad_()
        d, params = ED.Uniform(lo, hi), [lo, hi]
    elif fam == "StudentT":
        df = T(ember, 4.0).requires_grad_()
        d, params = ED.StudentT(df), [df]
    else:
        a, b = T(ember, 1.0).requires_grad_(), T(ember, 2.0).requires_grad_()
        d, params = (ED.Exponential(a), [a]) if fam == "Exponential" else (ED.Laplace(a, b), [a, b])
    gs = ember.autograd.grad((d.rsample((50,)) ** 2).mean(), params)
    assert all(g is not None and bool(g.isfinite().all()) and float(g.abs().sum()) > 0 for g in gs)


# -- KL -----------------------------------------------------------------------------------------

KL_PAIRS = [
    ("Normal", lambda m: (m.Normal(T(m, [0.0, 1.0]), T(m, [1.0, 2.0])),
                          m.Normal(T(m, [0.5, -1.0]), T(m, [2.0, 0.3])))),
    ("Bernoulli", lambda m: (m.Bernoulli(T(m, [0.2, 0.0, 1.0])), m.Bernoulli(T(m, [0.6, 0.5, 0.3])))),
    ("Categorical", lambda m: (m.Categorical(T(m, [[0.2, 0.8, 0.0], [0.3, 0.3, 0.4]])),
                               m.Categorical(logits=T(m, [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])))),
    ("OneHot", lambda m: (m.OneHotCategorical(T(m, [0.2, 0.8])), m.OneHotCategorical(T(m, [0.5, 0.5])))),
    ("Uniform", lambda m: (m.Uniform(T(m, [0.0, 0.0]), T(m, [1.0, 2.0])),
                           m.Uniform(T(m, [-1.0, 0.5]), T(m, [2.0, 3.0])))),
    ("Exponential", lambda m: (m.Exponential(T(m, [0.5, 2.0])), m.Exponential(T(m, [1.5, 0.2])))),
    ("Laplace", lambda m: (m.Laplace(T(m, [0.0]), T(m, [1.0])), m.Laplace(T(m, [1.0]), T(m, [2.0])))),
    ("Gamma", lambda m: (m.Gamma(T(m, [0.5, 3.0]), T(m, [1.0, 2.0])),
                         m.Gamma(T(m, [2.0, 1.0]), T(m, [0.5, 3.0])))),
    ("Beta", lambda m: (m.Beta(T(m, [0.5, 3.0]), T(m, [1.0, 2.0])),
                        m.Beta(T(m, [2.0, 1.0]), T(m, [0.5, 3.0])))),
    ("Dirichlet", lambda m: (m.Dirichlet(T(m, [[0.5, 3.0, 1.0]])), m.Dirichlet(T(m, [[2.0, 1.0, 1.0]])))),
    ("Poisson", lambda m: (m.Poisson(T(m, [0.5, 3.0])), m.Poisson(T(m, [2.0, 1.0])))),
    ("Geometric", lambda m: (m.Geometric(T(m, [0.5, 0.3])), m.Geometric(T(m, [0.2, 0.9])))),
    ("MVN", lambda m: (m.MultivariateNormal(T(m, [[0.0, 1.0], [1.0, 2.0]]),
                                            covariance_matrix=T(m, [[2.0, 0.5], [0.5, 1.0]])),
                       m.MultivariateNormal(T(m, [1.0, -1.0]),
                                            scale_tril=T(m, [[1.0, 0.0], [0.3, 0.7]])))),
    ("Independent", lambda m: (m.Independent(m.Normal(T(m, [[0.0, 1.0]]), T(m, [[1.0, 2.0]])), 1),
                               m.Independent(m.Normal(T(m, [[0.5, 1.0]]), T(m, [[1.5, 1.0]])), 1))),
    ("LowRank", lambda m: (m.LowRankMultivariateNormal(T(m, [[0.0, 1.0, 2.0]]),
                                                     T(m, [[1.0], [0.5], [-0.3]]),
                                                     T(m, [0.5, 1.0, 0.2])),
                           m.LowRankMultivariateNormal(T(m, [1.0, 0.0, 0.0]),
                                                     T(m, [[0.2, 1.0], [0.0, 0.5], [1.0, 0.0]]),
                                                     T(m, [1.0, 1.0, 2.0])))),
    ("LowRank-MVN", lambda m: (m.LowRankMultivariateNormal(T(m, [0.0, 1.0]), T(m, [[1.0], [0.5]]),
                                                         T(m, [0.5, 1.0])),
                               m.MultivariateNormal(T(m, [1.0, -1.0]),
                                                    scale_tril=T(m, [[1.0, 0.0], [0.3, 0.7]])))),
    ("MVN-LowRank", lambda m: (m.MultivariateNormal(T(m, [1.0, -1.0]),
                                                    scale_tril=T(m, [[1.0, 0.0], [0.3, 0.7]])),
                               m.LowRankMultivariateNormal(T(m, [0.0, 1.0]), T(m, [[1.0], [0.5]]),
                                                         T(m, [0.5, 1.0])))),
    ("Cauchy", lambda m: (m.Cauchy(T(m, [0.0, 1.0]), T(m, [1.0, 0.5])),
                          m.Cauchy(T(m, [1.0, 1.0]), T(m, [2.0, 3.0])))),
    ("Gumbel", lambda m: (m.Gumbel(T(m, [0.0, 1.0]), T(m, [1.0, 0.5])),
                          m.Gumbel(T(m, [1.0, -1.0]), T(m, [2.0, 3.0])))),
    ("HalfNormal", lambda m: (m.HalfNormal(T(m, [1.0, 0.5])), m.HalfNormal(T(m, [2.0, 3.0])))),
    ("Chi2", lambda m: (m.Chi2(T(m, [1.0, 4.0])), m.Chi2(T(m, [2.0, 3.0])))),
    ("LogNormal", lambda m: (m.LogNormal(T(m, [0.0]), T(m, [1.0])), m.LogNormal(T(m, [1.0]), T(m, [0.5])))),
]


@pytest.mark.parametrize("name,build", KL_PAIRS, ids=[p[0] for p in KL_PAIRS])
def test_kl_divergence_matches_pytorch(name, build):
    pe, qe = build(ED)
    pt, qt = build(TD)
    close(ED.kl_divergence(pe, qe), TD.kl_divergence(pt, qt), 1e-9)


def test_kl_gradients_and_registry():
    mu = T(ember, [0.3, -0.2]).requires_grad_()
    kl = ED.kl_divergence(ED.Normal(mu, 1.0), ED.Normal(0.0, 2.0)).sum()
    (g,) = ember.autograd.grad(kl, mu)
    close(g, mu.detach() / 4.0, 1e-12)
    with pytest.raises(NotImplementedError):
        ED.kl_divergence(ED.Normal(0.0, 1.0), ED.Poisson(1.0))
    assert float(ED.kl_divergence(ED.Normal(0.0, 1.0), ED.Gamma(1.0, 1.0))) == math.inf

    class MyNormal(ED.Normal):
        pass

    # a subclass uses its parent's rule, until a more specific one is registered
    close(ED.kl_divergence(MyNormal(0.0, 1.0), ED.Normal(1.0, 1.0)), T(ember, 0.5, "float32"))

    @ED.register_kl(MyNormal, ED.Normal)
    def _kl(p, q):
        return ember.tensor(42.0)

    assert float(ED.kl_divergence(MyNormal(0.0, 1.0), ED.Normal(1.0, 1.0))) == 42.0
    assert float(ED.kl_divergence(ED.Normal(0.0, 1.0), ED.Normal(1.0, 1.0))) == 0.5


# -- validation --------------------------------------------------------------------------------


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("case", [
    lambda m: m.Normal(0.0, -1.0),
    lambda m: m.Normal(0.0, 1.0).log_prob(3.0),
    lambda m: m.Normal(m.zeros(2), 1.0).log_prob(m.zeros(3)),
    lambda m: m.Bernoulli(0.3).log_prob(m.tensor(0.5)),
    lambda m: m.Categorical(m.tensor([0.2, 0.8])).log_prob(m.tensor([[3]])),
    lambda m: m.Dirichlet(m.ones(3)).log_prob(m.ones(2)),
    lambda m: m.Bernoulli(probs=0.5, logits=0.0),
    lambda m: m.Bernoulli(),
    lambda m: m.MultivariateNormal(m.zeros(2)),
    lambda m: m.Gamma(m.tensor([1.0, -2.0]), 1.0),
    lambda m: m.Beta(1.0, 2.0).log_prob(m.tensor(1.5)),
    lambda m: m.Exponential(2.0).log_prob(m.tensor(-1.0)),
    lambda m: m.Poisson(2.0).log_prob(m.tensor(1.5)),
    lambda m: m.Uniform(0.0, 1.0).log_prob(m.tensor(2.0)),
    lambda m: m.Uniform(1.0, 0.0),
    lambda m: m.Uniform(m.tensor([0.0, 2.0]), m.tensor([1.0, 1.0])),
    lambda m: m.Categorical(m.tensor([-0.2, 0.8])),
    lambda m: m.MultivariateNormal(m.zeros(2), covariance_matrix=m.tensor([[1.0, 2.0], [2.0, 1.0]])),
])
def test_validation_errors_match_pytorch(case):
    mods = [(ED, ember), (TD, torch)]
    got = [_error(lambda d=d, lib=lib: case(_Both(d, lib))) for d, lib in mods]
    assert got[0][0] is got[1][0] is ValueError
    # PyTorch prints Beta as "Beta()"; ember names its parameters: compare the rest
    assert got[0][1] == got[1][1].replace("Beta()", "Beta(concentration1: 1.0, concentration0: 2.0)")


class _Both:
    """Distribution classes from one module and tensor constructors from the matching library."""

    def __init__(self, dists, lib):
        self._d, self._lib = dists, lib

    def __getattr__(self, name):
        return getattr(self._d, name) if hasattr(self._d, name) and name[0].isupper() \
            else getattr(self._lib, name)


def test_validate_args_switches():
    d = ED.Normal(0.0, -1.0, validate_args=False)  # no error
    assert math.isnan(float(d.log_prob(ember.tensor(0.0))))
    try:
        ED.Distribution.set_default_validate_args(False)
        ED.Normal(0.0, -1.0)
        ED.Bernoulli(0.5).log_prob(ember.tensor(0.3))
    finally:
        ED.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        ED.Normal(0.0, -1.0)


def test_constraints_match_pytorch():
    C, Ct = ED.constraints, TD.constraints
    names = ["real", "positive", "nonnegative", "unit_interval", "simplex", "real_vector",
             "boolean", "nonnegative_integer", "positive_integer", "lower_cholesky",
             "positive_definite", "one_hot"]
    for n in names:
        assert repr(getattr(C, n)) == repr(getattr(Ct, n)), n
        assert getattr(C, n).event_dim == getattr(Ct, n).event_dim, n
        assert getattr(C, n).is_discrete == getattr(Ct, n).is_discrete, n
    assert repr(C.interval(0, 1)) == repr(Ct.interval(0, 1))
    assert repr(C.independent(C.positive, 1)) == repr(Ct.independent(Ct.positive, 1))
    x = [[0.5, 0.5], [0.2, 0.3]]
    close(C.simplex.check(T(ember, x)), Ct.simplex.check(T(torch, x)))
    y = [1.0, -1.0, float("nan"), 0.0]
    for n in ["real", "positive", "nonnegative", "unit_interval", "boolean", "nonnegative_integer"]:
        close(getattr(C, n).check(T(ember, y)), getattr(Ct, n).check(T(torch, y)))
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    assert repr(ED.Uniform(0.0, 2.0).support) == repr(TD.Uniform(0.0, 2.0).support)
    assert repr(ED.Categorical(ember.ones(3)).support) == repr(TD.Categorical(torch.ones(3)).support)


def test_enumerate_support_and_repr_match_pytorch():
    for build in [lambda m, lib: m.Bernoulli(lib.tensor([0.2, 0.5])),
                  lambda m, lib: m.Categorical(lib.tensor([[0.2, 0.8], [0.5, 0.5]])),
                  lambda m, lib: m.OneHotCategorical(lib.tensor([0.2, 0.3, 0.5])),
                  lambda m, lib: m.Binomial(3, lib.tensor([0.2, 0.5]))]:
        e, t = build(ED, ember), build(TD, torch)
        for expand in (True, False):
            a, b = e.enumerate_support(expand), t.enumerate_support(expand)
            close(a, b)
            assert str(a.dtype) == str(b.dtype)
    assert repr(ED.Normal(0.0, 1.0)) == repr(TD.Normal(0.0, 1.0))
    assert repr(ED.Normal(ember.zeros(1), 1.0)) == repr(TD.Normal(torch.zeros(1), 1.0))
    assert repr(ED.Binomial(3, ember.tensor([0.5]))) == repr(TD.Binomial(3, torch.tensor([0.5])))
    assert repr(ED.Normal(ember.zeros(2), 1.0)) == repr(TD.Normal(torch.zeros(2), 1.0))
    assert repr(ED.Categorical(logits=ember.zeros(3))) == repr(TD.Categorical(logits=torch.zeros(3)))


# -- transforms ------------------------------------------------------------------------------


def _tanh_normal(m, lib, loc, scale, cache):
    base = m.Normal(lib.tensor(loc, dtype=lib.float64), lib.tensor(scale, dtype=lib.float64))
    return m.TransformedDistribution(base, [m.TanhTransform(cache_size=cache),
                                            m.AffineTransform(lib.tensor(1.0, dtype=lib.float64),
                                                              2.0)])


def test_transformed_distribution_matches_pytorch():
    e = _tanh_normal(ED, ember, [0.1, -0.5], [1.0, 0.3], 0)
    t = _tanh_normal(TD, torch, [0.1, -0.5], [1.0, 0.3], 0)
    v = [[1.5, 0.2], [-0.3, 2.9]]
    close(e.log_prob(T(ember, v)), t.log_prob(T(torch, v)), 1e-9)
    close(e.cdf(T(ember, v)), t.cdf(T(torch, v)), 1e-9)
    for tr, trt in [(ED.ExpTransform(), TD.ExpTransform()),
                    (ED.SigmoidTransform(), TD.SigmoidTransform()),
                    (ED.TanhTransform(), TD.TanhTransform()),
                    (ED.SoftplusTransform(), TD.SoftplusTransform()),
                    (ED.AffineTransform(T(ember, [1.0, 2.0]), T(ember, [-0.5, 3.0])),
                     TD.AffineTransform(T(torch, [1.0, 2.0]), T(torch, [-0.5, 3.0]))),
                    (ED.ComposeTransform([ED.ExpTransform(), ED.AffineTransform(0.0, 3.0)]),
                     TD.ComposeTransform([TD.ExpTransform(), TD.AffineTransform(0.0, 3.0)]))]:
        x = [0.3, -1.2]
        y, yt = tr(T(ember, x)), trt(T(torch, x))
        close(y, yt, 1e-12)
        close(tr.inv(y), trt.inv(yt), 1e-9)
        close(tr.log_abs_det_jacobian(T(ember, x), y), trt.log_abs_det_jacobian(T(torch, x), yt),
              1e-9)
        assert repr(tr.codomain) == repr(trt.codomain)
    e = ED.TransformedDistribution(ED.Normal(T(ember, 0.0), 1.0), ED.ExpTransform())
    assert repr(e.support) == "GreaterThan(lower_bound=0.0)"


def test_sac_style_tanh_policy_log_prob_is_finite_with_cache():
    mu = T(ember, [0.0, 3.0]).requires_grad_()
    std = T(ember, [1.0, 4.0]).requires_grad_()
    pi = ED.TransformedDistribution(ED.Normal(mu, std), [ED.TanhTransform(cache_size=1)])
    ember.manual_seed(0)
    a = pi.rsample((64,))
    lp = pi.log_prob(a)  # uses the cached pre-tanh value, even where tanh saturated to 1
    assert bool(lp.isfinite().all())
    (gm, gs) = ember.autograd.grad((lp - a).mean(), (mu, std))
    assert bool(gm.isfinite().all()) and bool(gs.isfinite().all())


# -- training losses ---------------------------------------------------------------------------


def test_tiny_vae_loss_gradients_match_pytorch(monkeypatch):
    rng = np.random.default_rng(0)
    x = (rng.random((5, 6)) > 0.5).astype(np.float64)
    w_enc = rng.normal(size=(6, 4)) * 0.5
    w_dec = rng.normal(size=(2, 6)) * 0.5

    def loss_fn(lib, D, eps_hook):
        we = lib.tensor(w_enc, requires_grad=True)
        wd = lib.tensor(w_dec, requires_grad=True)
        xb = lib.tensor(x)
        h = xb @ we
        mu, logvar = h[:, :2], h[:, 2:]
        q = D.Normal(mu, (0.5 * logvar).exp())
        z = q.rsample()
        eps_hook(z, mu, (0.5 * logvar).exp())
        recon = D.Bernoulli(logits=z @ wd).log_prob(xb).sum(-1)
        prior = D.Normal(lib.zeros_like(mu), lib.ones_like(mu))
        kl = D.kl_divergence(q, prior).sum(-1)
        loss = (kl - recon).mean()
        loss.backward()
        return loss, we.grad, wd.grad

    holder = {}
    le, ge1, ge2 = loss_fn(ember, ED, lambda z, m, s: holder.update(eps=_eps_from(z, m, s).numpy()))
    monkeypatch.setattr(TD.normal, "_standard_normal",
                        lambda shape, dtype, device: torch.tensor(holder["eps"], dtype=dtype))
    lt, gt1, gt2 = loss_fn(torch, TD, lambda *a: None)
    close(le, lt, 1e-10)
    close(ge1, gt1, 1e-10)
    close(ge2, gt2, 1e-10)


def test_reinforce_loss_gradients_match_pytorch():
    rng = np.random.default_rng(1)
    states = rng.normal(size=(8, 3))
    w = rng.normal(size=(3, 4))
    actions = rng.integers(0, 4, size=8)
    returns = rng.normal(size=8)

    def loss_fn(lib, D):
        wt = lib.tensor(w, requires_grad=True)
        logits = lib.tensor(states) @ wt
        dist = D.Categorical(logits=logits)
        lp = dist.log_prob(lib.tensor(actions))
        loss = -(lp * lib.tensor(returns)).mean() - 0.01 * dist.entropy().mean()
        loss.backward()
        return loss, wt.grad

    le, ge = loss_fn(ember, ED)
    lt, gt = loss_fn(torch, TD)
    close(le, lt, 1e-12)
    close(ge, gt, 1e-10)
    ember.manual_seed(0)
    a = ED.Categorical(logits=ember.tensor(states @ w)).sample()
    assert a.dtype == ember.int64 and tuple(a.shape) == (8,)


def test_diagonal_gaussian_policy_with_independent():
    mu_e = T(ember, [[0.1, 0.2], [0.3, -0.4]]).requires_grad_()
    mu_t = T(torch, [[0.1, 0.2], [0.3, -0.4]]).requires_grad_()
    a = [[0.0, 1.0], [0.5, 0.5]]
    de = ED.Independent(ED.Normal(mu_e, 0.5), 1)
    dt = TD.Independent(TD.Normal(mu_t, 0.5), 1)
    assert tuple(de.batch_shape) == (2,) and tuple(de.event_shape) == (2,)
    lpe, lpt = de.log_prob(T(ember, a)), dt.log_prob(T(torch, a))
    close(lpe, lpt, 1e-12)
    close(de.entropy(), dt.entropy(), 1e-12)
    lpe.sum().backward()
    lpt.sum().backward()
    close(mu_e.grad, mu_t.grad, 1e-12)


def test_mvn_parameterisations_agree_with_pytorch():
    cov = [[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 0.7]]
    v = [[0.3, -1.0, 0.5]]
    for kw in ["covariance_matrix", "precision_matrix", "scale_tril"]:
        c = np.array(cov)
        mat = {"covariance_matrix": c, "precision_matrix": np.linalg.inv(c),
               "scale_tril": np.linalg.cholesky(c)}[kw]
        e = ED.MultivariateNormal(T(ember, [0.0, 1.0, 2.0]), **{kw: T(ember, mat)})
        t = TD.MultivariateNormal(T(torch, [0.0, 1.0, 2.0]), **{kw: T(torch, mat)})
        close(e.log_prob(T(ember, v)), t.log_prob(T(torch, v)), 1e-9)
        close(e.covariance_matrix, t.covariance_matrix, 1e-9)
        close(e.precision_matrix, t.precision_matrix, 1e-9)
        close(e.scale_tril, t.scale_tril, 1e-9)
        close(e.entropy(), t.entropy(), 1e-9)


def _gmm(m, lib):
    mix = m.Categorical(T(lib, [[0.3, 0.7], [0.5, 0.5]]))
    loc = T(lib, [[[0.0, 1.0], [2.0, 3.0]], [[1.0, 1.0], [0.0, 0.0]]])
    scale = T(lib, [[[1.0, 2.0], [0.5, 1.0]], [[1.0, 1.0], [2.0, 2.0]]])
    return m.MixtureSameFamily(mix, m.Independent(m.Normal(loc, scale), 1))


def test_mixture_same_family_matches_pytorch():
    e, t = _gmm(ED, ember), _gmm(TD, torch)
    assert tuple(e.batch_shape) == tuple(t.batch_shape) == (2,)
    assert tuple(e.event_shape) == tuple(t.event_shape) == (2,)
    v = [[[0.5, 0.5]], [[2.0, -1.0]]]
    close(e.log_prob(T(ember, v)), t.log_prob(T(torch, v)), 1e-12)
    close(e.mean, t.mean, 1e-12)
    close(e.variance, t.variance, 1e-12)
    assert tuple(e.sample((4,)).shape) == tuple(t.sample((4,)).shape)
    assert tuple(e.expand((3, 2)).sample().shape) == (3, 2, 2)
    e1 = ED.MixtureSameFamily(ED.Categorical(T(ember, [0.3, 0.7])),
                              ED.Normal(T(ember, [-1.0, 2.0]), T(ember, [0.5, 1.0])))
    t1 = TD.MixtureSameFamily(TD.Categorical(T(torch, [0.3, 0.7])),
                              TD.Normal(T(torch, [-1.0, 2.0]), T(torch, [0.5, 1.0])))
    close(e1.cdf(T(ember, [0.5, 2.0])), t1.cdf(T(torch, [0.5, 2.0])), 1e-12)
    # gradients of a GMM negative log-likelihood reach the mixture logits and the components
    logits = T(ember, [0.1, -0.2]).requires_grad_()
    loc = T(ember, [-1.0, 2.0]).requires_grad_()
    nll = -ED.MixtureSameFamily(ED.Categorical(logits=logits),
                                ED.Normal(loc, 1.0)).log_prob(T(ember, [0.0, 1.5])).sum()
    logits_t = T(torch, [0.1, -0.2]).requires_grad_()
    loc_t = T(torch, [-1.0, 2.0]).requires_grad_()
    nll_t = -TD.MixtureSameFamily(TD.Categorical(logits=logits_t),
                                  TD.Normal(loc_t, 1.0)).log_prob(T(torch, [0.0, 1.5])).sum()
    for a, b in zip(ember.autograd.grad(nll, (logits, loc)),
                    torch.autograd.grad(nll_t, (logits_t, loc_t))):
        close(a, b, 1e-12)


def test_multinomial_entropy_is_the_exact_sum():
    from math import comb, lgamma, log

    p = [0.2, 0.3, 0.5]
    n = 5
    exact = -lgamma(n + 1) - n * sum(q * log(q) for q in p)
    for q in p:
        exact += sum(comb(n, k) * q**k * (1 - q) ** (n - k) * lgamma(k + 1) for k in range(n + 1))
    got = ED.Multinomial(n, T(ember, p)).entropy()
    assert abs(float(got) - exact) < 1e-12


def test_gamma_cdf_gradients():
    got = []
    for lib, D in ((ember, ED), (torch, TD)):
        c = T(lib, [2.0, 0.5, 30.0])
        r = T(lib, 1.5).requires_grad_()
        x = T(lib, [1.2, 0.3, 25.0]).requires_grad_()
        y = D.Gamma(c, r).cdf(x)
        got.append((y,) + lib.autograd.grad(y.sum(), (x, r)))
    for a, b in zip(*got):
        close(a, b, 1e-9)
    # the concentration derivative (PyTorch has none) against a finite difference of the cdf
    c = T(ember, [2.0, 0.5, 30.0]).requires_grad_()
    x = T(ember, [1.2, 0.3, 25.0])
    (g,) = ember.autograd.grad(ED.Gamma(c, 1.5).cdf(x).sum(), c)
    h = 1e-6
    fd = (TD.Gamma(T(torch, [2.0 + h, 0.5 + h, 30.0 + h]), 1.5).cdf(T(torch, x.numpy()))
          - TD.Gamma(T(torch, [2.0 - h, 0.5 - h, 30.0 - h]), 1.5).cdf(T(torch, x.numpy()))) / (2 * h)
    close(g, fd, 1e-6)


def test_gumbel_softmax_samples():
    logits = T(ember, [[1.0, 2.0, 0.5]]).requires_grad_()
    ember.manual_seed(0)
    d = ED.RelaxedOneHotCategorical(ember.tensor(0.1, dtype=ember.float64), logits=logits)
    y = d.rsample((2000,))
    close(y.sum(-1), ember.ones(2000, 1, dtype=ember.float64), 1e-9)
    assert float(y.max(-1).values.mean()) > 0.9  # nearly one-hot at a low temperature
    freq = np.bincount(y.argmax(-1).numpy().ravel(), minlength=3) / 2000
    np.testing.assert_allclose(freq, ED.Categorical(logits=logits).probs.detach().numpy()[0],
                               atol=0.04)  # argmax of Gumbel-perturbed logits is Categorical
    (g,) = ember.autograd.grad((y * T(ember, [1.0, -1.0, 2.0])).sum(), logits)
    assert bool(g.isfinite().all()) and float(g.abs().sum()) > 0
    b = ED.RelaxedBernoulli(0.5, logits=logits[0, :2]).rsample((10,))
    assert bool(((b > 0) & (b < 1)).all()) and b.requires_grad


@pytest.mark.parametrize("kw", ["covariance_matrix", "scale_tril", "precision_matrix"])
def test_batched_mvn_log_prob_entropy_gradients_match_pytorch(kw):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 1, 4, 4))
    cov = a @ a.transpose(0, 1, 3, 2) + 4 * np.eye(4)
    mat = {"covariance_matrix": cov, "scale_tril": np.linalg.cholesky(cov),
           "precision_matrix": np.linalg.inv(cov)}[kw]
    loc = rng.normal(size=(2, 4))
    v = rng.normal(size=(5, 3, 2, 4))
    res = []
    for lib, D in ((ember, ED), (torch, TD)):
        lt, mt = lib.tensor(loc, requires_grad=True), lib.tensor(mat, requires_grad=True)
        d = D.MultivariateNormal(lt, **{kw: mt})
        lp = d.log_prob(lib.tensor(v))
        q = D.MultivariateNormal(lib.zeros(4, dtype=lib.float64), scale_tril=lib.tensor(
            np.linalg.cholesky(cov[0, 0]) * 1.5))
        kl = D.kl_divergence(d, q)
        loss = lp.sum() + d.entropy().sum() + kl.sum()
        res.append((lp, d.variance, kl) + lib.autograd.grad(loss, (lt, mt)))
        assert tuple(d.batch_shape) == (3, 2)
        assert tuple(d.sample((2,)).shape) == (2, 3, 2, 4)
    for x, y in zip(*res):
        close(x, y, 1e-9)


CONSTRAINTS = ["real", "positive", "nonnegative", "unit_interval", "simplex", "real_vector",
               ("greater_than", 2.0), ("greater_than_eq", 1.0), ("less_than", 3.0),
               ("interval", -1.0, 2.0), ("half_open_interval", 0.0, 1.0), "lower_cholesky",
               "positive_definite", ("independent_positive", 1)]


def _constraint(C, spec):
    if isinstance(spec, str):
        return getattr(C, spec)
    if spec[0] == "independent_positive":
        return C.independent(C.positive, spec[1])
    return getattr(C, spec[0])(*spec[1:])


@pytest.mark.parametrize("which", ["biject_to", "transform_to"])
@pytest.mark.parametrize("spec", CONSTRAINTS, ids=str)
def test_biject_to_and_transform_to_match_pytorch(which, spec):
    ce, ct = _constraint(ED.constraints, spec), _constraint(TD.constraints, spec)
    fe, ft = getattr(ED, which), getattr(TD, which)
    try:
        tt = ft(ct)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            fe(ce)
        return
    te = fe(ce)
    assert repr(te) == repr(tt)
    shape = (2, 3, 3) if "cholesky" in str(spec) or "definite" in str(spec) else (2, 3)
    x = np.random.default_rng(0).normal(size=shape)
    y, yt = te(T(ember, x)), tt(T(torch, x))
    close(y, yt, 1e-10)
    assert bool(ce.check(y).all())
    close(te.inv(y), tt.inv(yt), 1e-8)
    try:
        expected = tt.log_abs_det_jacobian(T(torch, x), yt)
    except NotImplementedError:
        return
    close(te.log_abs_det_jacobian(T(ember, x), y), expected, 1e-10)


def test_stick_breaking_transform_shapes_and_dirichlet_density():
    t = ED.StickBreakingTransform()
    assert tuple(t.forward_shape((4, 2))) == (4, 3)
    x = T(ember, [[0.3, -1.0], [2.0, 0.0]]).requires_grad_()
    y = t(x)
    close(y.sum(-1), T(ember, [1.0, 1.0]), 1e-12)
    # a density over R^(K-1) obtained by pulling a Dirichlet back through the bijection
    d = ED.TransformedDistribution(ED.Independent(ED.Normal(ember.zeros(2, dtype=ember.float64),
                                                            1.0), 1), t)
    dt = TD.TransformedDistribution(TD.Independent(TD.Normal(torch.zeros(2, dtype=torch.float64),
                                                             1.0), 1), TD.StickBreakingTransform())
    v = [[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]
    close(d.log_prob(T(ember, v)), dt.log_prob(T(torch, v)), 1e-10)
    assert tuple(d.event_shape) == (3,) and tuple(d.sample((5,)).shape) == (5, 3)


def test_one_hot_straight_through_gradient_matches_pytorch():
    grads = []
    for lib, D in ((ember, ED), (torch, TD)):
        logits = T(lib, [[0.3, -1.0, 2.0], [0.0, 0.0, 0.5]]).requires_grad_()
        d = D.OneHotCategoricalStraightThrough(logits=logits)
        y = d.rsample((4,))
        assert tuple(y.shape) == (4, 2, 3) and bool((y.detach().sum(-1) == 1).all())
        (g,) = lib.autograd.grad((y * T(lib, [1.0, 2.0, -1.0])).sum(), logits)
        grads.append(g)  # the draw itself has no gradient: equal for any sample
    close(grads[0], grads[1], 1e-12)
    assert ED.OneHotCategoricalStraightThrough.has_rsample
