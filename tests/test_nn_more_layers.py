"""LPPool1d/2d/3d, MaxUnpool1d/2d/3d, ChannelShuffle, MultiMarginLoss, MultiLabelMarginLoss,
TripletMarginWithDistanceLoss modules (and F.lp_pool3d / F.max_unpool3d) against PyTorch."""

import numpy as np
import pytest

import ember
from ember import nn
from helpers import check_op

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)


def _same(ours, theirs, *arrays, grad=True):
    ins_e = [ember.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    ins_t = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    ye, yt = ours(*ins_e), theirs(*ins_t)
    assert repr(ours) == repr(theirs)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    if grad:
        ye.sum().backward()
        yt.sum().backward()
        for a, b in zip(ins_e, ins_t):
            if b.grad is not None:
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4,
                                           atol=1e-6)


@pytest.mark.parametrize("nd,args", [(1, (2, 3)), (2, (2, 2, 1)), (3, (1.5, 2)),
                                     (3, (2, (1, 2, 2), (1, 2, 1), True))])
def test_lp_pool(nd, args):
    x = np.abs(rng.standard_normal((2, 2) + (5,) * nd)).astype(np.float32) + 0.1
    _same(getattr(nn, f"LPPool{nd}d")(*args), getattr(torch.nn, f"LPPool{nd}d")(*args), x)


def test_lp_pool3d_check_op():
    x = np.abs(rng.standard_normal((1, 2, 4, 4, 4))) + 0.5
    check_op(lambda m, x: m.nn.functional.lp_pool3d(x, 2.0, 2), x,
             ref=lambda x: np.sqrt((x ** 2).reshape(1, 2, 2, 2, 2, 2, 2, 2).sum(axis=(3, 5, 7))))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_inverts_max_pool(nd):
    x = rng.standard_normal((2, 3) + (4,) * nd).astype(np.float32)
    pool_t = getattr(torch.nn, f"MaxPool{nd}d")(2, return_indices=True)
    yt, it = pool_t(torch.tensor(x))
    ours = getattr(nn, f"MaxUnpool{nd}d")(2)
    theirs = getattr(torch.nn, f"MaxUnpool{nd}d")(2)
    assert repr(ours) == repr(theirs)
    ue = ours(ember.tensor(yt.numpy()), ember.tensor(it.numpy()))
    ut = theirs(yt, it)
    np.testing.assert_array_equal(ue.numpy(), ut.numpy())
    ue2 = ours(ember.tensor(yt.numpy()), ember.tensor(it.numpy()),
               output_size=(5,) * nd)
    assert tuple(ue2.shape) == tuple(theirs(yt, it, output_size=(5,) * nd).shape)
    if nd == 3:  # ember's own max_pool3d indices round-trip too
        ve, ie = nn.MaxPool3d(2, return_indices=True)(ember.tensor(x))
        np.testing.assert_array_equal(ours(ve, ie).numpy(), ut.numpy())


def test_channel_shuffle():
    x = rng.standard_normal((2, 6, 3, 3)).astype(np.float32)
    _same(nn.ChannelShuffle(3), torch.nn.ChannelShuffle(3), x)


@pytest.mark.parametrize("p,margin,weighted,reduction", [(1, 1.0, False, "mean"),
                                                         (2, 0.5, True, "sum"),
                                                         (1, 2.0, True, "none")])
def test_multi_margin_loss(p, margin, weighted, reduction):
    w = rng.uniform(0.5, 1.5, 4).astype(np.float32)
    kw = dict(p=p, margin=margin, reduction=reduction)
    ours = nn.MultiMarginLoss(weight=ember.tensor(w) if weighted else None, **kw)
    theirs = torch.nn.MultiMarginLoss(weight=torch.tensor(w) if weighted else None, **kw)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = rng.standard_normal((5, 4)).astype(np.float32)
    t = rng.integers(0, 4, 5)
    _same(ours, theirs, x, t)
    with pytest.raises(ValueError):
        nn.MultiMarginLoss(p=3)


def test_multilabel_margin_loss():
    x = rng.standard_normal((3, 4)).astype(np.float32)
    t = np.array([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 0, 0, 0]])
    _same(nn.MultiLabelMarginLoss(), torch.nn.MultiLabelMarginLoss(), x, t)


def test_triplet_margin_with_distance_loss():
    a, p, n = (rng.standard_normal((4, 5)).astype(np.float32) for _ in range(3))
    _same(nn.TripletMarginWithDistanceLoss(), torch.nn.TripletMarginWithDistanceLoss(), a, p, n)
    ours = nn.TripletMarginWithDistanceLoss(
        distance_function=lambda x, y: 1 - nn.functional.cosine_similarity(x, y), swap=True,
        margin=0.5)
    theirs = torch.nn.TripletMarginWithDistanceLoss(
        distance_function=lambda x, y: 1 - torch.nn.functional.cosine_similarity(x, y),
        swap=True, margin=0.5)
    ye = ours(*(ember.tensor(v) for v in (a, p, n)))
    yt = theirs(*(torch.tensor(v) for v in (a, p, n)))
    np.testing.assert_allclose(ye.numpy(), yt.numpy(), rtol=1e-5)
    with pytest.raises(ValueError, match="margin"):
        nn.TripletMarginWithDistanceLoss(margin=0)


def test_conv_tbc_and_native_channel_shuffle():
    x = rng.standard_normal((7, 2, 3))
    w = rng.standard_normal((3, 3, 4))
    b = rng.standard_normal(4)
    check_op(lambda m, x, w, b: m.nn.functional.conv_tbc(x, w, b, 1), x, w, b)
    y = rng.standard_normal((1, 4, 2))
    check_op(lambda m, y: m.nn.functional.native_channel_shuffle(y, 2), y, grad=False)


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("k,size,ratio", [(2, 4, None), (3, None, 0.5), ((2, 3, 2), (5, 3, 4),
                                                                        None)])
def test_fractional_max_pool_matches_torch_for_given_samples(nd, k, size, ratio):
    k = k if isinstance(k, int) else k[:nd]
    size = size if size is None or isinstance(size, int) else tuple(v - 2 for v in size[:nd])
    u = rng.random((1, 2, nd))
    x = rng.standard_normal((1, 2) + (7, 6, 7)[:nd])
    kw = dict(output_size=size, output_ratio=None if ratio is None else (ratio,) * nd,
              return_indices=True)
    check_op(lambda m, x, u: getattr(m.nn.functional, f"fractional_max_pool{nd}d")(
        x, k, _random_samples=u, **kw), x, u, grad_inputs=(0,))
    ours = getattr(nn, f"FractionalMaxPool{nd}d")(k, size, ratio, True,
                                                  _random_samples=ember.tensor(u))
    theirs = getattr(torch.nn, f"FractionalMaxPool{nd}d")(k, size, ratio, True,
                                                          _random_samples=torch.tensor(u))
    assert repr(ours) == repr(theirs)
    (ye, ie), (yt, it) = ours(ember.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_array_equal(ye.numpy(), yt.numpy())
    np.testing.assert_array_equal(ie.numpy(), it.numpy())


def test_fractional_max_pool_random_and_errors():
    m = nn.FractionalMaxPool2d(2, output_ratio=0.5)
    y = m(ember.randn(2, 3, 10, 10))
    assert y.shape == (2, 3, 5, 5) and y.dtype == ember.float32
    with pytest.raises(ValueError, match="either"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.FractionalMaxPool3d(2, output_ratio=1.5)
    with pytest.raises(RuntimeError, match="too large"):
        nn.functional.fractional_max_pool2d(ember.ones(1, 1, 4, 4), 3, output_size=3)


def test_functional_constants_and_helpers():
    F, TF = nn.functional, torch.nn.functional
    assert F.GRID_SAMPLE_INTERPOLATION_MODES == TF.GRID_SAMPLE_INTERPOLATION_MODES
    assert F.GRID_SAMPLE_PADDING_MODES == TF.GRID_SAMPLE_PADDING_MODES
    F.assert_int_or_pair(3, "k", "{} bad")
    F.assert_int_or_pair((1, 2), "k", "{} bad")
    with pytest.raises(AssertionError, match="k bad"):
        F.assert_int_or_pair((1, 2, 3), "k", "{} bad")
