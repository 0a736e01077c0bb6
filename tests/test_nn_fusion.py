"""nn.utils fusion (conv/linear + batch norm), skip_init, memory-format conversion vs PyTorch."""

import numpy as np
import pytest

import ember
from ember import nn

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)


def _copy(ours, theirs):
    ours.load_state_dict({k: ember.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})


def _trained_bn(cls, n):
    bn = cls(n)
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-1, 1)
    return bn.eval()


@pytest.mark.parametrize("kind", ["conv", "transpose", "conv1d", "conv_nobias"])
def test_fuse_conv_bn_eval_matches_torch_and_the_pair(kind):
    make = {"conv": lambda m: m.Conv2d(2, 3, 3), "transpose": lambda m: m.ConvTranspose2d(2, 3, 3),
            "conv1d": lambda m: m.Conv1d(2, 3, 3),
            "conv_nobias": lambda m: m.Conv2d(2, 3, 3, bias=False)}[kind]
    tconv = make(torch.nn).eval()
    tbn = _trained_bn(torch.nn.BatchNorm1d if kind == "conv1d" else torch.nn.BatchNorm2d, 3)
    conv, bn = make(nn).eval(), (nn.BatchNorm1d(3) if kind == "conv1d" else nn.BatchNorm2d(3))
    _copy(conv, tconv)
    _copy(bn, tbn)
    bn.eval()
    transpose = kind == "transpose"
    fused = nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transpose)
    tfused = torch.nn.utils.fuse_conv_bn_eval(tconv, tbn, transpose=transpose)
    assert fused is not conv and type(fused) is type(conv)
    assert isinstance(fused.weight, nn.Parameter) and isinstance(fused.bias, nn.Parameter)
    np.testing.assert_allclose(fused.weight.detach().numpy(), tfused.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fused.bias.detach().numpy(), tfused.bias.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    x = ember.tensor(rng.standard_normal((2, 2, 6) if kind == "conv1d" else (2, 2, 6, 6)),
                     dtype=ember.float32)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def test_fuse_linear_bn_eval():
    tl, tbn = torch.nn.Linear(4, 3).eval(), _trained_bn(torch.nn.BatchNorm1d, 3)
    lin, bn = nn.Linear(4, 3), nn.BatchNorm1d(3)
    _copy(lin, tl)
    _copy(bn, tbn)
    lin.eval()
    bn.eval()
    fused = nn.utils.fuse_linear_bn_eval(lin, bn)
    tfused = torch.nn.utils.fuse_linear_bn_eval(tl, tbn)
    np.testing.assert_allclose(fused.weight.detach().numpy(), tfused.weight.detach().numpy(),
                               rtol=1e-5)
    x = ember.tensor(rng.standard_normal((5, 4)), dtype=ember.float32)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(lin(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_fusion_errors_match_torch():
    with pytest.raises(AssertionError, match="eval"):
        torch.nn.utils.fuse_conv_bn_eval(torch.nn.Conv2d(1, 2, 1), torch.nn.BatchNorm2d(2))
    with pytest.raises(AssertionError, match="eval"):
        nn.utils.fuse_conv_bn_eval(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2))
    with pytest.raises(AssertionError, match="num_features"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(4).eval())


def test_skip_init_and_memory_format():
    m = nn.utils.skip_init(nn.Linear, 2, 3, bias=False)
    assert type(m) is nn.Linear and m.weight.shape == (3, 2) and m.bias is None

    class NoDevice(nn.Module):
        def __init__(self, n):
            super().__init__()

    with pytest.raises(RuntimeError, match="device"):
        nn.utils.skip_init(NoDevice, 2)
    net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Sequential(nn.Conv2d(2, 2, 1)))
    before = net[0].weight.detach().numpy().copy()
    assert nn.utils.convert_conv2d_weight_memory_format(net, ember.channels_last) is net
    np.testing.assert_array_equal(net[0].weight.detach().numpy(), before)
    assert nn.utils.convert_conv3d_weight_memory_format(net, ember.channels_last_3d) is net
