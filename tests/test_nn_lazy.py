"""Lazy modules and UninitializedParameter against PyTorch."""

import copy

import numpy as np
import pytest

import ember
from ember import nn

torch = pytest.importorskip("torch")

CASES = [
    ("LazyLinear", (4,), {}, (2, 3)),
    ("LazyLinear", (4,), dict(bias=False), (2, 5, 3)),
    ("LazyConv1d", (4, 3), dict(padding=1), (2, 3, 7)),
    ("LazyConv2d", (8, 3), dict(padding=1, groups=2), (1, 4, 6, 6)),
    ("LazyConv2d", (8, 3), {}, (4, 6, 6)),  # unbatched
    ("LazyConv3d", (2, 2), {}, (1, 3, 3, 4, 4)),
    ("LazyConvTranspose1d", (4, 3), dict(stride=2), (2, 3, 5)),
    ("LazyConvTranspose2d", (4, 3), dict(groups=1), (1, 5, 3, 3)),
    ("LazyConvTranspose3d", (2, 2), {}, (1, 3, 2, 3, 3)),
    ("LazyBatchNorm1d", (), {}, (4, 3)),
    ("LazyBatchNorm1d", (), dict(affine=False), (4, 3, 5)),
    ("LazyBatchNorm2d", (), {}, (2, 3, 4, 4)),
    ("LazyBatchNorm3d", (), dict(track_running_stats=False), (2, 3, 2, 3, 3)),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 6)),
    ("LazyInstanceNorm2d", (), dict(affine=False), (2, 3, 4, 4)),
]


@pytest.mark.parametrize("name,args,kw,xshape", CASES)
def test_lazy_module_matches_torch(name, args, kw, xshape):
    ours, theirs = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    assert type(ours).__name__ == type(theirs).__name__ == name
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.has_uninitialized_params() and theirs.has_uninitialized_params()
    x = np.random.default_rng(0).standard_normal(xshape).astype(np.float32)
    ye, yt = ours(ember.tensor(x)), theirs(torch.tensor(x))
    # now ordinary modules with PyTorch's shapes
    assert type(ours).__name__ == type(theirs).__name__ == name[4:]
    assert repr(ours) == repr(theirs)
    assert tuple(ye.shape) == tuple(yt.shape)
    assert not any(nn.parameter.is_lazy(t) for t in ours.state_dict(keep_vars=True).values())
    shapes = {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == shapes
    for p in ours.parameters():
        assert type(p) is nn.Parameter and p.dtype == ember.float32 and p.requires_grad
    # same parameters: same output
    fresh = getattr(nn, name)(*args, **kw)
    fresh(ember.tensor(x))
    fresh.load_state_dict({k: ember.tensor(v.detach().numpy())
                           for k, v in theirs.state_dict().items()})
    fresh.train(False)
    theirs.train(False)
    np.testing.assert_allclose(fresh(ember.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_lazy_linear_initialization_scale():
    m = nn.LazyLinear(200)
    m(ember.ones(1, 50))
    w = m.weight.detach().numpy()
    bound = 1 / np.sqrt(50)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(m.bias.detach().numpy()).max() <= bound


def test_optimizer_built_before_materialization_trains():
    m = nn.LazyLinear(1)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    x = ember.ones(4, 3)
    m(x)
    before = m.weight.detach().numpy().copy()
    m(x).sum().backward()
    opt.step()
    np.testing.assert_allclose(m.weight.detach().numpy(), before - 0.1 * 4, rtol=1e-6)


def test_uninitialized_parameter_behaviour():
    p = nn.UninitializedParameter()
    assert isinstance(p, nn.Parameter) and nn.parameter.is_lazy(p)
    assert repr(p) == repr(torch.nn.UninitializedParameter()) == "<UninitializedParameter>"
    with pytest.raises(RuntimeError, match="uninitialized"):
        _ = p.shape
    with pytest.raises(ValueError):
        p.numel()
    p.materialize((2, 3))
    assert type(p) is nn.Parameter and p.shape == (2, 3) and not nn.parameter.is_lazy(p)
    b = nn.UninitializedBuffer(dtype=ember.float64)
    b.materialize(4)
    assert type(b) is ember.Tensor and b.dtype == ember.float64 and b.shape == (4,)


def test_load_state_dict_materializes_and_deepcopy_keeps_lazy():
    m = nn.LazyLinear(4)
    c = copy.deepcopy(m)
    assert nn.parameter.is_lazy(c.weight)
    m.load_state_dict(nn.Linear(3, 4).state_dict())
    t = torch.nn.LazyLinear(4)
    t.load_state_dict(torch.nn.Linear(3, 4).state_dict())
    assert type(m).__name__ == type(t).__name__ == "LazyLinear"
    assert m.weight.shape == (4, 3) and not m.has_uninitialized_params()
    assert m(ember.ones(2, 3)).shape == (2, 4)
    assert type(m) is nn.Linear


def test_lazy_conv_rejects_bad_input():
    with pytest.raises(RuntimeError, match="4D"):
        nn.LazyConv2d(4, 3)(ember.ones(3, 3))
    with pytest.raises(ValueError, match="groups"):
        nn.LazyConv2d(4, 3, groups=2)(ember.ones(1, 3, 5, 5))


def test_lazy_state_dict_holds_placeholders_like_torch():
    sd = nn.LazyLinear(4).state_dict()
    tsd = torch.nn.LazyLinear(4).state_dict()
    assert [repr(v) for v in sd.values()] == [repr(v) for v in tsd.values()]
    m = nn.LazyLinear(4)
    m.load_state_dict(sd)  # placeholders into placeholders: nothing to shape yet
    assert nn.parameter.is_lazy(m.weight)
    assert m(ember.ones(2, 3)).shape == (2, 4)
    with pytest.raises(RuntimeError, match="uninitialized"):
        nn.Linear(3, 4).load_state_dict(sd)


@pytest.mark.parametrize("cast", ["double", "to64"])
def test_casting_a_lazy_module_before_its_first_forward(cast):
    for ours, theirs, x in [(nn.LazyLinear(4), torch.nn.LazyLinear(4), (2, 3)),
                            (nn.LazyBatchNorm1d(), torch.nn.LazyBatchNorm1d(), (4, 3))]:
        if cast == "double":
            ours, theirs = ours.double(), theirs.double()
        else:
            ours, theirs = ours.to(ember.float64), theirs.to(torch.float64)
        assert nn.parameter.is_lazy(ours.weight)
        ours(ember.ones(*x, dtype=ember.float64))
        theirs(torch.ones(*x, dtype=torch.float64))
        for (k, a), b in zip(ours.state_dict().items(), theirs.state_dict().values()):
            assert str(a.dtype) == str(b.dtype), k
    p = nn.UninitializedParameter().half()
    assert nn.parameter.is_lazy(p) and p.requires_grad
    p.materialize((2,))
    assert p.dtype == ember.float16 and type(p) is nn.Parameter
