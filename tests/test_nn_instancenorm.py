"""InstanceNorm1d/2d/3d and SyncBatchNorm against PyTorch (values, grads, running stats, keys)."""

import warnings

import numpy as np
import pytest

import ember
from ember import nn

torch = pytest.importorskip("torch")


def _pair(name, *args, **kwargs):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    sd = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    ours.load_state_dict({k: ember.tensor(v) for k, v in sd.items()})
    return ours, theirs


def _check_keys(ours, theirs):
    a, b = ours.state_dict(), theirs.state_dict()
    assert list(a) == list(b)
    for k in a:
        assert tuple(a[k].shape) == tuple(b[k].shape), k
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]


def _run(ours, theirs, x, steps=2):
    for _ in range(steps):
        xe = ember.tensor(x, dtype=ember.float32, requires_grad=True)
        xt = torch.tensor(x, dtype=torch.float32, requires_grad=True)
        ye, yt = ours(xe), theirs(xt)
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
        g = np.cos(np.arange(yt.numel())).reshape(tuple(yt.shape))
        ye.backward(ember.tensor(g, dtype=ember.float32))
        yt.backward(torch.tensor(g, dtype=torch.float32))
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (k, a), b in zip(ours.state_dict().items(), theirs.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    for (n, p), q in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=n)


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("track", [False, True])
def test_instance_norm_matches_torch(nd, affine, track):
    ours, theirs = _pair(f"InstanceNorm{nd}d", 3, affine=affine, track_running_stats=track)
    _check_keys(ours, theirs)
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(nd).standard_normal((2, 3) + (5,) * nd) * 2 + 1
    _run(ours, theirs, x)
    ours.eval()
    theirs.eval()
    _run(ours, theirs, x, steps=1)
    _run(ours, theirs, x[0], steps=1)  # unbatched


def test_instance_norm_input_checks():
    with pytest.raises(ValueError, match="3D"):
        nn.InstanceNorm1d(3)(ember.ones(2, 3, 4, 5))
    with pytest.raises(ValueError, match="num_features"):
        nn.InstanceNorm1d(4, affine=True)(ember.ones(2, 3, 5))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nn.InstanceNorm1d(4)(ember.randn(2, 3, 5))
    assert any("num_features" in str(m.message) for m in w)


@pytest.mark.parametrize("shape", [(6, 3), (6, 3, 5), (4, 3, 2, 5)])
def test_sync_batch_norm_single_process_is_batch_norm(shape):
    ours, theirs = _pair("SyncBatchNorm", 3)
    _check_keys(ours, theirs)
    assert repr(ours) == repr(theirs) and ours.process_group is None
    x = np.random.default_rng(0).standard_normal(shape)
    _run(ours, theirs, x)
    ours.eval()
    theirs.eval()
    _run(ours, theirs, x, steps=1)
    with pytest.raises(ValueError, match="2D"):
        ours(ember.ones(4))


def test_convert_sync_batchnorm_shares_parameters_and_buffers():
    net = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4), nn.Sequential(nn.BatchNorm1d(2)))
    net[1].running_mean.fill_(0.5)
    net.eval()
    bn_w = net[1].weight
    out = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert out is net
    assert type(out[1]) is nn.SyncBatchNorm and type(out[2][0]) is nn.SyncBatchNorm
    assert out[1].weight is bn_w and not out[1].training
    assert float(out[1].running_mean[0]) == 0.5
    assert list(out.state_dict()) == list(
        torch.nn.SyncBatchNorm.convert_sync_batchnorm(torch.nn.Sequential(
            torch.nn.Conv2d(3, 4, 1), torch.nn.BatchNorm2d(4),
            torch.nn.Sequential(torch.nn.BatchNorm1d(2)))).state_dict())
    single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(5))
    assert isinstance(single, nn.SyncBatchNorm) and single.num_features == 5
