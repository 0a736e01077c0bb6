"""F.ctc_loss / nn.CTCLoss: NumPy brute-force reference, float64 gradcheck (through
log_softmax), float32 dtype, PyTorch parity including its gradient convention for log_probs."""

import itertools

import numpy as np
import pytest

import ember
from ember import nn
from helpers import check_op

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)


def _collapse(path, blank):
    out, prev = [], None
    for p in path:
        if p != prev and p != blank:
            out.append(p)
        prev = p
    return out


def _brute_nll(lp, target, blank=0):
    """-log sum over every length-T path that collapses to ``target`` (tiny T and C only)."""
    T, C = lp.shape
    total = 0.0
    for path in itertools.product(range(C), repeat=T):
        if _collapse(path, blank) == list(target):
            total += np.exp(sum(lp[t, c] for t, c in enumerate(path)))
    return -np.log(total)


def test_forward_matches_brute_force():
    logits = rng.standard_normal((5, 2, 3))
    targets = np.array([[1, 2], [1, 1]])
    lengths, tl = [5, 4], [2, 2]

    def ref(x):
        lp = x - np.log(np.exp(x).sum(-1, keepdims=True))
        return np.array([_brute_nll(lp[:lengths[n], n], targets[n, :tl[n]]) for n in range(2)])

    check_op(lambda m, x: m.nn.functional.ctc_loss(
        x.log_softmax(2), m.tensor(targets), m.tensor(lengths), m.tensor(tl), reduction="none"),
        logits, ref=ref, atol=1e-10)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("blank", [0, 4])
def test_gradcheck_and_torch_parity(reduction, blank):
    T, N, C = 7, 3, 5
    logits = rng.standard_normal((T, N, C))
    lo, hi = (1, C) if blank == 0 else (0, C - 1)
    targets = rng.integers(lo, hi, (N, 3))
    lengths, tl = [7, 5, 6], [3, 1, 0]
    check_op(lambda m, x: m.nn.functional.ctc_loss(
        x.log_softmax(2), m.tensor(targets), m.tensor(lengths), m.tensor(tl), blank=blank,
        reduction=reduction), logits)


def test_concatenated_targets_and_repeats():
    logits = rng.standard_normal((8, 2, 4))
    flat = np.array([1, 1, 2, 3, 3])
    check_op(lambda m, x: m.nn.functional.ctc_loss(
        x.log_softmax(2), m.tensor(flat), (8, 6), (3, 2), reduction="sum"), logits)


def test_gradient_wrt_log_probs_follows_torch_convention():
    lp = torch.randn(6, 2, 4, dtype=torch.float64).log_softmax(2)
    t, il, tl = torch.tensor([[1, 2], [3, 3]]), torch.tensor([6, 6]), torch.tensor([2, 2])
    lt = lp.clone().requires_grad_()
    torch.nn.functional.ctc_loss(lt, t, il, tl).backward()
    le = ember.tensor(lp.numpy(), requires_grad=True)
    nn.functional.ctc_loss(le, ember.tensor(t.numpy()), ember.tensor(il.numpy()),
                           ember.tensor(tl.numpy())).backward()
    np.testing.assert_allclose(le.grad.numpy(), lt.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_zero_infinity_and_impossible_alignments():
    lp = torch.randn(3, 2, 4, dtype=torch.float64).log_softmax(2)
    t = torch.tensor([[1, 1, 1], [1, 2, 3]])  # repeats need blanks between: 5 frames > 3
    args_t = (t, torch.tensor([3, 3]), torch.tensor([3, 3]))
    args_e = tuple(ember.tensor(a.numpy()) for a in args_t)
    for zi in (False, True):
        lt = lp.clone().requires_grad_()
        le = ember.tensor(lp.numpy(), requires_grad=True)
        yt = torch.nn.functional.ctc_loss(lt, *args_t, reduction="none", zero_infinity=zi)
        ye = nn.functional.ctc_loss(le, *args_e, reduction="none", zero_infinity=zi)
        np.testing.assert_array_equal(ye.detach().numpy(), yt.detach().numpy())
        if zi:
            yt.sum().backward()
            ye.sum().backward()
            np.testing.assert_allclose(le.grad.numpy(), lt.grad.numpy(), atol=1e-12)


def test_unbatched_module_and_float32():
    lp = rng.standard_normal((6, 5)).astype(np.float32)
    lp = lp - np.log(np.exp(lp).sum(-1, keepdims=True))
    ours = nn.CTCLoss(reduction="none")(ember.tensor(lp), ember.tensor([1, 2]), ember.tensor(6),
                                        ember.tensor(2))
    theirs = torch.nn.CTCLoss(reduction="none")(torch.tensor(lp), torch.tensor([1, 2]),
                                                torch.tensor(6), torch.tensor(2))
    assert ours.dtype == ember.float32 and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5)
    assert repr(nn.CTCLoss(blank=2)) == repr(torch.nn.CTCLoss(blank=2))


def test_errors():
    lp = ember.zeros(4, 1, 3)
    with pytest.raises(RuntimeError, match="at most 4"):
        nn.functional.ctc_loss(lp, ember.tensor([[1]]), [5], [1])
    with pytest.raises(RuntimeError):
        nn.functional.ctc_loss(lp, ember.tensor([[1]]), [4], [2])
    with pytest.raises(RuntimeError, match="floating"):
        nn.functional.ctc_loss(ember.zeros(4, 1, 3, dtype=ember.int64), ember.tensor([[1]]),
                               [4], [1])
