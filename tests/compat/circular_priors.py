"""The distributions a probabilistic-programming model reaches for beyond the Gaussian: a von
Mises likelihood for angles, an LKJ prior on a correlation matrix through its unconstrained
parameters (CorrCholeskyTransform), a Wishart precision, a continuous-Bernoulli decoder, a
generalized-Pareto tail, the KL divergences between them, and the special functions and Poisson
draws that come with them. Written for ember's compatibility corpus."""
import math
import warnings

import torch
import torch.distributions as D
from torch.distributions import biject_to, constraints, kl_divergence
from torch.distributions.transforms import CatTransform, CorrCholeskyTransform


def fill(*shape, scale=1.0, phase=0.0):
    n = math.prod(shape)
    return (torch.sin(torch.arange(n, dtype=torch.float64) * 0.7 + phase) * scale).reshape(shape)


def show(name, t):
    t = t.detach().double().reshape(-1)
    print(name, tuple(t.shape), " ".join(f"{v:.6g}" for v in t.tolist()))


# a von Mises likelihood for angles, fitted by a few gradient steps
angles = fill(16, scale=2.5)
loc = torch.zeros((), dtype=torch.float64, requires_grad=True)
log_kappa = torch.zeros((), dtype=torch.float64, requires_grad=True)
opt = torch.optim.Adam([loc, log_kappa], lr=0.05)
for _step in range(30):
    opt.zero_grad()
    nll = -D.VonMises(loc, log_kappa.exp()).log_prob(angles).mean()
    nll.backward()
    opt.step()
print("vonmises nll", round(nll.item(), 5), "kappa", round(log_kappa.exp().item(), 5))
vm = D.VonMises(loc.detach(), log_kappa.exp().detach())
show("vonmises variance", vm.variance)
print("~ vonmises sample", tuple(vm.sample((3,)).shape))

# an LKJ prior on a 4 x 4 correlation, through unconstrained parameters
raw = fill(6, scale=0.8).requires_grad_()
to_corr = biject_to(constraints.corr_cholesky)
print("biject_to(corr_cholesky)", type(to_corr).__name__)
chol = to_corr(raw)
lkj = D.LKJCholesky(4, concentration=torch.tensor(2.0, dtype=torch.float64))
log_p = lkj.log_prob(chol) + to_corr.log_abs_det_jacobian(raw, chol)
log_p.backward()
show("lkj log_p", log_p)
show("lkj grad", raw.grad)
show("corr", chol @ chol.mT)
print("in support", bool(constraints.corr_cholesky.check(chol)))
print("~ lkj sample", tuple(lkj.sample((2,)).shape))

# a Wishart precision prior
cov = torch.eye(3, dtype=torch.float64) + 0.3 * fill(3, 3).mT @ fill(3, 3)
w = D.Wishart(torch.tensor(5.5, dtype=torch.float64), covariance_matrix=cov)
x = torch.eye(3, dtype=torch.float64) * 4 + fill(3, 3, phase=1.0) @ fill(3, 3, phase=1.0).mT
show("wishart log_prob", w.log_prob(x))
show("wishart entropy", w.entropy())
show("wishart mean diag", w.mean.diagonal())
w2 = D.Wishart(torch.tensor(7.0, dtype=torch.float64), covariance_matrix=cov * 2)
show("kl wishart", kl_divergence(w, w2))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # PyTorch may call a draw singular and redraw it
    print("~ wishart rsample", tuple(w.rsample((2,)).shape))

# a continuous-Bernoulli decoder and its KL terms
logits = fill(5, scale=3.0, phase=0.3)
cb = D.ContinuousBernoulli(logits=logits)
pixels = (fill(5, phase=2.0) + 1) / 2
show("cb log_prob", cb.log_prob(pixels))
show("cb mean", cb.mean)
show("cb entropy", cb.entropy())
show("cb cdf", cb.cdf(pixels))
show("kl cb-cb", kl_divergence(cb, D.ContinuousBernoulli(probs=torch.full((5,), 0.5,
                                                                         dtype=torch.float64))))
show("kl beta-cb", kl_divergence(D.Beta(torch.tensor(2.0, dtype=torch.float64),
                                        torch.tensor(3.0, dtype=torch.float64)), cb))

# a generalized-Pareto tail
gp = D.GeneralizedPareto(torch.tensor(1.0), torch.tensor(2.0), torch.tensor([-0.2, 0.0, 0.3]))
show("gpd log_prob", gp.log_prob(torch.tensor(1.5)))
show("gpd icdf", gp.icdf(torch.tensor(0.9)))
show("gpd mean", gp.mean)

# cross-family KL pairs
n = D.Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.5]))
show("kl normal-gumbel", kl_divergence(n, D.Gumbel(torch.tensor(0.5), torch.tensor(2.0))))
show("kl normal-laplace", kl_divergence(n, D.Laplace(torch.tensor(0.0), torch.tensor(1.0))))
show("kl gamma-normal", kl_divergence(D.Gamma(torch.tensor(3.0), torch.tensor(2.0)), n))
show("kl normal-uniform", kl_divergence(n, D.Uniform(torch.tensor(-1.0), torch.tensor(1.0))))

# transforms stacked along a dimension
cat = CatTransform([D.transforms.ExpTransform(), D.transforms.identity_transform], dim=-1,
                   lengths=[2, 1])
y = cat(fill(2, 3).float())
show("cat", y)
show("cat ljd", cat.log_abs_det_jacobian(fill(2, 3).float(), y))
print("corr shape", CorrCholeskyTransform().forward_shape((6,)))

# special functions
grid = torch.linspace(0.25, 12.0, 6, dtype=torch.float64)
for name in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
             "scaled_modified_bessel_k1", "airy_ai"):
    show(name, getattr(torch.special, name)(grid))
a = torch.tensor([0.5, 2.0, 7.0], dtype=torch.float64)
xs = torch.tensor([0.3, 2.5, 4.0], dtype=torch.float64, requires_grad=True)
p = torch.special.gammainc(a, xs)
p.sum().backward()
show("gammainc", p)
show("gammainc grad", xs.grad)
show("gammaincc", torch.special.gammaincc(a, xs.detach()))
show("zeta", torch.special.zeta(torch.tensor([2.0, 3.0, 4.5]), torch.tensor([1.0, 2.0, 0.5])))

# Poisson draws (the stream differs; only the shape is compared) and Tensor.as_subclass
draws = torch.poisson(torch.full((1000,), 4.0))
print("~ poisson mean near 4", round(float(draws.mean()), 1))
print("poisson shape", tuple(draws.shape), draws.dtype)


class Tagged(torch.Tensor):
    pass


v = torch.ones(3, requires_grad=True)
tv = (v * 2).as_subclass(Tagged)
tv.sum().backward()
print("as_subclass", type(tv).__name__, tv.requires_grad, v.grad.tolist())
