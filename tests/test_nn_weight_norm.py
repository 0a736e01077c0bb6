"""nn.utils.weight_norm / spectral_norm (+ remove_*) and stateless.functional_call vs PyTorch."""

import warnings

import numpy as np
import pytest

import ember
from ember import nn

torch = pytest.importorskip("torch")


def _twins(make_ours, make_theirs):
    """An ember module and a torch module with the same parameters."""
    theirs = make_theirs()
    ours = make_ours()
    ours.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    return ours, theirs


def _shapes(m):
    return {k: tuple(v.shape) for k, v in m.state_dict().items()}


LAYERS = [
    (lambda m: m.Linear(3, 4), (5, 3)),
    (lambda m: m.Conv2d(2, 3, 3), (2, 2, 5, 5)),
    (lambda m: m.ConvTranspose2d(2, 3, 3), (2, 2, 4, 4)),
    (lambda m: m.Conv1d(2, 4, 3), (2, 2, 6)),
]


@pytest.mark.parametrize("layer,xshape", LAYERS)
@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_matches_torch(layer, xshape, dim):
    ours, theirs = _twins(lambda: layer(nn), lambda: layer(torch.nn))
    with pytest.warns(FutureWarning, match="deprecated"):
        nn.utils.weight_norm(ours, dim=dim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.nn.utils.weight_norm(theirs, dim=dim)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert _shapes(ours) == {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[k].numpy(), v.numpy(), rtol=1e-6, err_msg=k)
    # train a step's worth of gradient through g and v
    with torch.no_grad():
        theirs.weight_g.mul_(1.5)
    ours.weight_g.data.mul_(1.5)
    x = np.random.default_rng(0).standard_normal(xshape)
    ye = ours(ember.tensor(x, dtype=ember.float32))
    yt = theirs(torch.tensor(x, dtype=torch.float32))
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    (ye * ye).sum().backward()
    (yt * yt).sum().backward()
    for n in ("weight_g", "weight_v"):
        np.testing.assert_allclose(getattr(ours, n).grad.numpy(), getattr(theirs, n).grad.numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=n)
    nn.utils.remove_weight_norm(ours)
    torch.nn.utils.remove_weight_norm(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert isinstance(ours.weight, nn.Parameter)
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert len(ours._forward_pre_hooks) == 0


def test_weight_norm_errors():
    m = nn.Linear(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nn.utils.weight_norm(m)
        with pytest.raises(RuntimeError, match="two weight_norm"):
            nn.utils.weight_norm(m)
    nn.utils.remove_weight_norm(m)
    with pytest.raises(ValueError, match="not found"):
        nn.utils.remove_weight_norm(m)


@pytest.mark.parametrize("layer,xshape", LAYERS)
def test_spectral_norm_matches_torch(layer, xshape):
    ours, theirs = _twins(lambda: layer(nn), lambda: layer(torch.nn))
    nn.utils.spectral_norm(ours, n_power_iterations=2)
    torch.nn.utils.spectral_norm(theirs, n_power_iterations=2)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert _shapes(ours) == {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    # u and v start random: take torch's
    ours.load_state_dict({k: ember.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(1).standard_normal(xshape)
    for train in (True, True, False):
        ours.train(train)
        theirs.train(train)
        ours.zero_grad()
        theirs.zero_grad()
        ye = ours(ember.tensor(x, dtype=ember.float32))
        yt = theirs(torch.tensor(x, dtype=torch.float32))
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
        (ye * ye).sum().backward()
        (yt * yt).sum().backward()
        np.testing.assert_allclose(ours.weight_orig.grad.numpy(),
                                   theirs.weight_orig.grad.numpy(), rtol=1e-3, atol=1e-5)
        for k in ("weight_u", "weight_v"):
            np.testing.assert_allclose(getattr(ours, k).numpy(), getattr(theirs, k).numpy(),
                                       rtol=1e-4, atol=1e-6, err_msg=k)
    nn.utils.remove_spectral_norm(ours)
    torch.nn.utils.remove_spectral_norm(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(),
                               rtol=1e-4, atol=1e-6)


def test_spectral_norm_normalizes_and_errors():
    ember.manual_seed(0)
    m = nn.utils.spectral_norm(nn.Linear(6, 5), n_power_iterations=30)
    m(ember.ones(1, 6))
    s = np.linalg.svd(m.weight.detach().numpy(), compute_uv=False)
    assert abs(s[0] - 1) < 1e-3
    with pytest.raises(ValueError, match="positive"):
        nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(RuntimeError, match="two spectral_norm"):
        nn.utils.spectral_norm(m)
    with pytest.raises(ValueError, match="not found"):
        nn.utils.remove_spectral_norm(nn.Linear(2, 2))


def test_stateless_functional_call():
    m = nn.Linear(2, 1)
    w = {"weight": ember.ones(1, 2), "bias": ember.zeros(1)}
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        y = nn.utils.stateless.functional_call(m, w, (ember.tensor([[1.0, 2.0]]),))
    assert float(y) == 3.0
    assert not np.allclose(m.weight.detach().numpy(), 1.0)
