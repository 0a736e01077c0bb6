"""AdaptiveLogSoftmaxWithLoss and NLLLoss2d against PyTorch."""

import numpy as np
import pytest

import ember
from ember import nn

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)


def _pair(*args, **kw):
    ours = nn.AdaptiveLogSoftmaxWithLoss(*args, **kw)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(*args, **kw)
    assert repr(ours) == repr(theirs)
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    ours.load_state_dict({k: ember.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("cutoffs,div,bias", [([4, 7], 2.0, False), ([3], 4.0, True),
                                              ([2, 5, 8], 1.5, False)])
def test_adaptive_softmax_matches_torch(cutoffs, div, bias):
    ours, theirs = _pair(8, 10, cutoffs, div_value=div, head_bias=bias)
    x = rng.standard_normal((12, 8)).astype(np.float32)
    t = rng.integers(0, 10, 12)
    oe = ours(ember.tensor(x), ember.tensor(t))
    ot = theirs(torch.tensor(x), torch.tensor(t))
    assert type(oe).__name__ == "_ASMoutput" and oe._fields == ("output", "loss")
    np.testing.assert_allclose(oe.output.detach().numpy(), ot.output.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(float(oe.loss.detach()), float(ot.loss.detach()), rtol=1e-5)
    oe.loss.backward()
    ot.loss.backward()
    for (n, p), q in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=n)
    lp_e, lp_t = ours.log_prob(ember.tensor(x)), theirs.log_prob(torch.tensor(x))
    np.testing.assert_allclose(lp_e.detach().numpy(), lp_t.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(np.exp(lp_e.detach().numpy()).sum(1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(ours.predict(ember.tensor(x)).numpy(),
                                  theirs.predict(torch.tensor(x)).numpy())
    # the target log-probabilities are the full table's entries
    np.testing.assert_allclose(oe.output.detach().numpy(),
                               lp_e.detach().numpy()[np.arange(12), t], rtol=1e-5, atol=1e-6)


def test_adaptive_softmax_unbatched_and_errors():
    ours, theirs = _pair(6, 5, [2])
    x = rng.standard_normal(6).astype(np.float32)
    oe, ot = ours(ember.tensor(x), ember.tensor(3)), theirs(torch.tensor(x), torch.tensor(3))
    assert tuple(oe.output.shape) == tuple(ot.output.shape) == ()
    np.testing.assert_allclose(float(oe.loss.detach()), float(ot.loss.detach()), rtol=1e-5)
    with pytest.raises(RuntimeError, match="Target values"):
        ours(ember.ones(2, 6), ember.tensor([0, 5]))
    with pytest.raises(ValueError, match="cutoffs"):
        nn.AdaptiveLogSoftmaxWithLoss(6, 5, [3, 2])
    with pytest.raises(ValueError, match="cutoffs"):
        nn.AdaptiveLogSoftmaxWithLoss(6, 5, [5])


def test_nll_loss_2d_is_nll_loss():
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    t = rng.integers(0, 3, (2, 4, 4))
    ye = nn.NLLLoss2d()(ember.tensor(x), ember.tensor(t))
    yt = torch.nn.NLLLoss2d()(torch.tensor(x), torch.tensor(t))
    np.testing.assert_allclose(float(ye), float(yt), rtol=1e-6)
    assert isinstance(nn.NLLLoss2d(), nn.NLLLoss)
