"""nn.utils.parametrize and nn.utils.parametrizations.{weight_norm, spectral_norm} vs PyTorch."""

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.utils import parametrizations as P
from ember.nn.utils import parametrize

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)


def _load(ours, theirs):
    ours.load_state_dict({k: ember.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})


def _grads_match(ours, theirs, x, steps=1):
    for _ in range(steps):
        ours.zero_grad()
        theirs.zero_grad()
        ye = ours(ember.tensor(x))
        yt = theirs(torch.tensor(x))
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
        (ye * ye).sum().backward()
        (yt * yt).sum().backward()
        for (n, p), (m, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            assert n == m
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-3, atol=1e-5,
                                       err_msg=n)


LAYERS = [(lambda m: m.Linear(3, 4), (5, 3)), (lambda m: m.Conv2d(2, 3, 3), (2, 2, 5, 5)),
          (lambda m: m.ConvTranspose2d(2, 3, 3), (2, 2, 4, 4))]


@pytest.mark.parametrize("layer,xshape", LAYERS)
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization(layer, xshape, dim):
    ours = P.weight_norm(layer(nn), dim=dim)
    theirs = torch.nn.utils.parametrizations.weight_norm(layer(torch.nn), dim=dim)
    assert type(ours).__name__ == type(theirs).__name__
    assert repr(ours) == repr(theirs)
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    with torch.no_grad():
        theirs.parametrizations.weight.original0.mul_(1.7)
    _load(ours, theirs)
    x = rng.standard_normal(xshape).astype(np.float32)
    _grads_match(ours, theirs, x)


@pytest.mark.parametrize("layer,xshape", LAYERS)
def test_spectral_norm_parametrization(layer, xshape):
    ours = P.spectral_norm(layer(nn), n_power_iterations=2)
    theirs = torch.nn.utils.parametrizations.spectral_norm(layer(torch.nn), n_power_iterations=2)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    _load(ours, theirs)
    x = rng.standard_normal(xshape).astype(np.float32)
    _grads_match(ours, theirs, x, steps=2)  # training: power iterations each forward
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[k].numpy(), v.numpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=k)
    ours.eval()
    theirs.eval()
    _grads_match(ours, theirs, x)


def test_spectral_norm_parametrization_normalizes():
    m = P.spectral_norm(nn.Linear(6, 5))
    s = np.linalg.svd(m.weight.detach().numpy(), compute_uv=False)
    assert abs(s[0] - 1) < 1e-2  # 15 power iterations at registration


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(0, 1)

    def right_inverse(self, a):
        return a.triu()


def test_register_custom_parametrization_assign_and_remove():
    m = nn.Linear(3, 3)
    w0 = m.weight
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    w = m.weight.detach().numpy()
    np.testing.assert_allclose(w, w.T)
    assert m.parametrizations.weight.original is w0  # the same Parameter object
    a = np.arange(9.0, dtype=np.float32).reshape(3, 3)
    m.weight = ember.tensor(a + a.T)  # stored through right_inverse
    np.testing.assert_allclose(m.weight.detach().numpy(), a + a.T)
    with parametrize.cached():
        assert m.weight is m.weight
    assert m.weight is not m.weight
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and list(m.state_dict()) == ["bias", "weight"]
    assert isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(m.weight.detach().numpy(), a + a.T)


def test_chained_parametrizations_and_unparametrized_removal():
    class Double(nn.Module):
        def forward(self, x):
            return 2 * x

    m = nn.Linear(2, 2)
    orig = m.weight.detach().numpy().copy()
    parametrize.register_parametrization(m, "weight", Double())
    parametrize.register_parametrization(m, "weight", Double())
    np.testing.assert_allclose(m.weight.detach().numpy(), 4 * orig, rtol=1e-6)
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    np.testing.assert_allclose(m.weight.detach().numpy(), orig)


def test_shape_change_needs_unsafe_and_missing_name():
    class Flat(nn.Module):
        def forward(self, x):
            return x.reshape(-1)

    with pytest.raises(ValueError, match="shape"):
        parametrize.register_parametrization(nn.Linear(2, 2), "weight", Flat())
    m = parametrize.register_parametrization(nn.Linear(2, 2), "weight", Flat(), unsafe=True)
    assert m.weight.shape == (4,)
    with pytest.raises(ValueError, match="does not have"):
        parametrize.register_parametrization(nn.Linear(2, 2), "nope", Flat())
    with pytest.raises(ValueError):
        parametrize.remove_parametrizations(nn.Linear(2, 2), "weight")


def test_weight_norm_parametrization_removal_keeps_value():
    m = P.weight_norm(nn.Linear(3, 2))
    w = m.weight.detach().numpy().copy()
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and list(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(m.weight.detach().numpy(), w, rtol=1e-6)
