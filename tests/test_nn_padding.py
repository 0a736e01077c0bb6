"""Padding modules against PyTorch: values, gradients, reprs, errors."""

import numpy as np
import pytest

import ember
from ember import nn

torch = pytest.importorskip("torch")

KINDS = ["Zero", "Constant", "Reflection", "Replication", "Circular"]


def _make(mod, kind, nd, padding):
    cls = getattr(mod.nn, f"{kind}Pad{nd}d")
    return cls(padding, 1.5) if kind == "Constant" else cls(padding)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("batched", [True, False])
def test_forward_backward_match_torch(kind, nd, batched):
    rng = np.random.default_rng(nd)
    shape = (2, 3) + (4,) * nd if batched else (3,) + (4,) * nd
    x = rng.standard_normal(shape)
    padding = tuple(int(v) for v in rng.integers(0, 3, 2 * nd))
    for p in (2, padding):
        ours = _make(ember, kind, nd, p)
        theirs = _make(torch, kind, nd, p)
        assert repr(ours) == repr(theirs)
        assert ours.padding == theirs.padding
        xe = ember.tensor(x, dtype=ember.float32, requires_grad=True)
        xt = torch.tensor(x, dtype=torch.float32, requires_grad=True)
        ye, yt = ours(xe), theirs(xt)
        assert ye.dtype == ember.float32
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-6)
        g = rng.standard_normal(tuple(yt.shape))
        ye.backward(ember.tensor(g, dtype=ember.float32))
        yt.backward(torch.tensor(g, dtype=torch.float32))
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_zero_pad_is_a_constant_pad_and_has_no_state():
    m = nn.ZeroPad2d((1, 2, 3, 4))
    assert isinstance(m, nn.ConstantPad2d) and m.value == 0.0
    assert m.state_dict() == {} and list(m.parameters()) == []
    assert m(ember.ones(1, 1, 2, 2)).shape == (1, 1, 9, 5)


def test_reflection_pad_too_large_raises_like_torch():
    with pytest.raises(RuntimeError):
        torch.nn.ReflectionPad2d(2)(torch.ones(1, 1, 2, 2))
    with pytest.raises(RuntimeError):
        nn.ReflectionPad2d(2)(ember.ones(1, 1, 2, 2))


def test_negative_constant_padding_crops():
    x = np.arange(24.0).reshape(1, 2, 3, 4)
    ye = nn.ZeroPad2d((-1, 1, 0, -1))(ember.tensor(x))
    yt = torch.nn.ZeroPad2d((-1, 1, 0, -1))(torch.tensor(x))
    np.testing.assert_array_equal(ye.numpy(), yt.numpy())
