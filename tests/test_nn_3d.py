"""3-D convolution and pooling (functional and modules): NumPy reference, float64 gradcheck,
float32 dtype, PyTorch parity (values, gradients, indices, state dict shapes, reprs)."""

import numpy as np
import pytest

import ember
from ember import nn
from helpers import check_op

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)


def _conv3d_ref(x, w, b, stride, pad, dil):
    """Direct sum over kernel taps (groups=1)."""
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    N, C, D, H, W = x.shape
    O, _, kt, kh, kw = w.shape
    out = [(n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip((D, H, W), (kt, kh, kw),
                                                                stride, dil)]
    y = np.zeros((N, O, *out))
    for a in range(kt):
        for b_ in range(kh):
            for c in range(kw):
                sl = x[:, :, a * dil[0]: a * dil[0] + stride[0] * (out[0] - 1) + 1: stride[0],
                       b_ * dil[1]: b_ * dil[1] + stride[1] * (out[1] - 1) + 1: stride[1],
                       c * dil[2]: c * dil[2] + stride[2] * (out[2] - 1) + 1: stride[2]]
                y += np.einsum("ncdhw,oc->nodhw", sl, w[:, :, a, b_, c])
    return y + b.reshape(1, -1, 1, 1, 1)


@pytest.mark.parametrize("stride,pad,dil", [
    ((1, 1, 1), (0, 0, 0), (1, 1, 1)), ((2, 1, 2), (1, 0, 1), (1, 1, 1)),
    ((1, 2, 1), (1, 1, 0), (1, 1, 1)), ((1, 1, 1), (0, 1, 0), (2, 1, 1))])
def test_conv3d(stride, pad, dil):
    x = rng.standard_normal((2, 2, 5, 4, 5))
    w = rng.standard_normal((3, 2, 2, 3, 2))
    b = rng.standard_normal(3)
    check_op(lambda m, x, w, b: m.nn.functional.conv3d(x, w, b, stride, pad, dil), x, w, b,
             ref=lambda x, w, b: _conv3d_ref(x, w, b, stride, pad, dil))


def test_conv3d_groups_same_padding_unbatched_and_gradgrad():
    x = rng.standard_normal((4, 4, 3, 5))
    w = rng.standard_normal((2, 2, 2, 2, 3))
    check_op(lambda m, x, w: m.nn.functional.conv3d(x, w, None, 1, "same", 1, 2), x, w)
    x = rng.standard_normal((1, 2, 3, 3, 3))
    w = rng.standard_normal((2, 2, 2, 1, 2))
    check_op(lambda m, x, w: m.nn.functional.conv3d(x, w), x, w, gradgrad=True)


@pytest.mark.parametrize("kw", [dict(stride=2), dict(stride=(2, 1, 3), padding=(1, 0, 1),
                                                    output_padding=(1, 0, 2), dilation=(1, 2, 1)),
                                dict(padding=1, dilation=2, groups=2)])
def test_conv_transpose3d(kw):
    x = rng.standard_normal((2, 4, 3, 3, 2))
    w = rng.standard_normal((4, 2, 3, 2, 2))
    b = rng.standard_normal(2 * kw.get("groups", 1))
    check_op(lambda m, x, w, b: m.nn.functional.conv_transpose3d(x, w, b, **kw), x, w, b)


def test_conv_transpose3d_is_the_adjoint_of_conv3d():
    x = ember.tensor(rng.standard_normal((2, 3, 5, 6, 4)))
    w = ember.tensor(rng.standard_normal((4, 3, 3, 2, 2)))
    y = ember.tensor(rng.standard_normal((2, 4, 3, 4, 3)))
    F = nn.functional
    lhs = (F.conv3d(x, w, stride=2, padding=1) * y).sum()
    rhs = (x * F.conv_transpose3d(y, w, stride=2, padding=1)).sum()
    np.testing.assert_allclose(float(lhs), float(rhs), rtol=1e-10)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(2, 3, 2), stride=(2, 1, 2), ceil_mode=True),
                                dict(kernel_size=2, dilation=(2, 1, 2))])
def test_max_pool3d_values_indices_grads(kw):
    x = rng.standard_normal((2, 2, 5, 6, 5))
    check_op(lambda m, x: m.nn.functional.max_pool3d(x, **kw, return_indices=True), x,
             grad_atol=1e-4)
    check_op(lambda m, x: m.nn.functional.max_pool3d(x[0], **kw), x)  # unbatched


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                     count_include_pad=False),
                                dict(kernel_size=(2, 3, 2), divisor_override=5)])
def test_avg_pool3d(kw):
    x = rng.standard_normal((2, 2, 5, 6, 5))
    check_op(lambda m, x: m.nn.functional.avg_pool3d(x, **kw), x)


def test_avg_pool3d_reference():
    x = rng.standard_normal((1, 2, 4, 4, 4))
    ref = x.reshape(1, 2, 2, 2, 2, 2, 2, 2).mean(axis=(3, 5, 7))
    check_op(lambda m, x: m.nn.functional.avg_pool3d(x, 2), x, ref=lambda x: ref)


@pytest.mark.parametrize("size", [(3, 2, 4), 1, (None, 2, 1)])
def test_adaptive_pools3d(size):
    x = rng.standard_normal((2, 2, 5, 4, 6))
    check_op(lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, size), x)
    check_op(lambda m, x: m.nn.functional.adaptive_max_pool3d(x, size, True), x)


def test_adaptive_avg_pool3d_global_mean_reference():
    x = rng.standard_normal((2, 3, 3, 4, 5))
    check_op(lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, 1), x,
             ref=lambda x: x.mean(axis=(2, 3, 4), keepdims=True))


MODULES = [
    ("Conv3d", (3, 4, 3), dict(padding=1, stride=(1, 2, 1))),
    ("Conv3d", (4, 6, (1, 2, 3)), dict(groups=2, bias=False, dilation=(1, 1, 2))),
    ("Conv3d", (2, 3, 3), dict(padding=1, padding_mode="reflect")),
    ("ConvTranspose3d", (3, 4, 3), dict(stride=2, padding=1, output_padding=1)),
    ("ConvTranspose3d", (4, 2, (2, 1, 2)), dict(groups=2, bias=False)),
]


@pytest.mark.parametrize("name,args,kw", MODULES)
def test_conv_modules_match_torch(name, args, kw):
    ours, theirs = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    ours.load_state_dict({k: ember.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    x = rng.standard_normal((2, args[0], 4, 5, 6)).astype(np.float32)
    ye, yt = ours(ember.tensor(x)), theirs(torch.tensor(x))
    assert ye.dtype == ember.float32
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    ye.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-4,
                               atol=1e-4)


def test_conv_transpose3d_output_size():
    m = nn.ConvTranspose3d(2, 2, 3, stride=2, padding=1)
    assert m(ember.ones(1, 2, 3, 3, 3), output_size=(6, 5, 6)).shape == (1, 2, 6, 5, 6)


@pytest.mark.parametrize("name,args,kw", [
    ("MaxPool3d", (2,), {}), ("MaxPool3d", (3,), dict(stride=2, padding=1, ceil_mode=True)),
    ("AvgPool3d", (3,), dict(stride=(1, 2, 2), padding=1, count_include_pad=False)),
    ("AvgPool3d", ((1, 2, 2),), {}), ("AdaptiveAvgPool3d", ((1, 2, None),), {}),
    ("AdaptiveMaxPool3d", (2,), {}), ("MaxPool3d", (2,), dict(return_indices=True)),
])
def test_pool_modules_match_torch(name, args, kw):
    ours, theirs = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    x = rng.standard_normal((2, 3, 5, 6, 7)).astype(np.float32)
    ye, yt = ours(ember.tensor(x)), theirs(torch.tensor(x))
    if isinstance(yt, tuple):
        np.testing.assert_array_equal(ye[1].numpy(), yt[1].numpy())
        ye, yt = ye[0], yt[0]
    assert ye.dtype == ember.float32
    np.testing.assert_allclose(ye.numpy(), yt.numpy(), rtol=1e-5, atol=1e-6)


def test_3d_errors():
    F = nn.functional
    with pytest.raises(RuntimeError, match="5D"):
        F.conv3d(ember.ones(1, 2, 3), ember.ones(1, 2, 1, 1, 1))
    with pytest.raises(RuntimeError, match="channels"):
        F.conv3d(ember.ones(1, 3, 3, 3, 3), ember.ones(1, 2, 1, 1, 1))
    with pytest.raises(RuntimeError, match="half"):
        F.max_pool3d(ember.ones(1, 1, 4, 4, 4), 2, padding=2)
    with pytest.raises(RuntimeError, match="too small"):
        F.avg_pool3d(ember.ones(1, 1, 1, 4, 4), 2)
    with pytest.raises(RuntimeError, match="4D or 5D"):
        F.max_pool3d(ember.ones(4, 4, 4), 2)


def test_top_level_3d_functions():
    x = rng.standard_normal((1, 2, 4, 4, 4))
    w = rng.standard_normal((3, 2, 2, 2, 2))
    check_op(lambda m, x, w: m.conv3d(x, w, None, 2), x, w)
    check_op(lambda m, x, w: m.conv_transpose3d(x, w), x[:, :, :2, :2, :2],
             w.transpose(1, 0, 2, 3, 4))
    check_op(lambda m, x: m.max_pool3d(x, 2, 1, 1), x)
