"""Losses: ember.nn.functional and the loss modules against NumPy references and PyTorch."""

import warnings

import numpy as np
import pytest

import ember
import ember.nn  # noqa: F401
import ember.nn.functional as EF
from helpers import HAVE_TORCH, check, positive, randn

REDS = ["mean", "sum", "none"]


def F(m):
    return m.nn.functional




def _ce_ref(x, t):
    m = x.max(1, keepdims=True)
    lse = np.log(np.exp(x - m).sum(1)) + m[:, 0]
    return (lse - x[np.arange(len(t)), t]).mean()


def probs(*shape, seed=0):
    p = np.random.default_rng(seed).random(shape) + 0.05
    return p / p.sum(1, keepdims=True)


T = np.array([1, 0, 4, 2])
T_IGN = np.array([1, -100, 4, 2])


# ---------------------------------------------------------------------------------------------
# cross entropy / nll


def test_cross_entropy_reference():
    check(lambda m, x, t: F(m).cross_entropy(x, t), randn(4, 5), T,
             ref=lambda x, t: _ce_ref(x, t), gradgrad=True)


@pytest.mark.parametrize("reduction", REDS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
@pytest.mark.parametrize("ignore", [False, True])
def test_cross_entropy_indices(reduction, weighted, smoothing, ignore):
    t = T_IGN if ignore else T
    w = positive(5, seed=3)
    if weighted:
        fn = lambda m, x, w: F(m).cross_entropy(x, m.tensor(t), weight=w, reduction=reduction,
                                                label_smoothing=smoothing)
        check(fn, randn(4, 5), w, grad_inputs=(0,), gradgrad=True)
    else:
        fn = lambda m, x: F(m).cross_entropy(x, m.tensor(t), reduction=reduction,
                                             label_smoothing=smoothing)
        check(fn, randn(4, 5), gradgrad=True)


@pytest.mark.parametrize("reduction", REDS)
def test_cross_entropy_spatial(reduction):
    t = np.random.default_rng(1).integers(0, 5, (2, 3, 2))
    t[0, 1, 1] = -100
    check(lambda m, x, w: F(m).cross_entropy(x, m.tensor(t), weight=w, reduction=reduction,
                                                label_smoothing=0.1),
             randn(2, 5, 3, 2), positive(5), grad_inputs=(0,))


@pytest.mark.parametrize("reduction", REDS)
def test_cross_entropy_single_sample(reduction):
    check(lambda m, x: F(m).cross_entropy(x, m.tensor(3), reduction=reduction), randn(5))
    check(lambda m, x, p: F(m).cross_entropy(x, p, reduction=reduction), randn(5),
             probs(1, 5)[0])


@pytest.mark.parametrize("reduction", REDS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_probabilities(reduction, weighted, smoothing):
    """Class-probability targets (differentiable in both inputs)."""
    w = positive(5, seed=2) if weighted else None
    fn = lambda m, x, p: F(m).cross_entropy(
        x, p, weight=None if w is None else m.tensor(w), reduction=reduction,
        label_smoothing=smoothing)
    check(fn, randn(4, 5), probs(4, 5), gradgrad=True)
    check(fn, randn(4, 5), probs(4, 5), grad_inputs=(1,))  # only the target needs a grad
    check(lambda m, x, p: F(m).cross_entropy(x, p, reduction=reduction),
             randn(2, 5, 3), probs(2, 5, 3))


def test_cross_entropy_uint8_target():
    check(lambda m, x: F(m).cross_entropy(x, m.tensor(T.astype(np.uint8))), randn(4, 5))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_cross_entropy_huge_logits_are_finite(dtype):
    x = ember.tensor(randn(4, 5) * 1e4, dtype=dtype, requires_grad=True)
    t = ember.tensor(T)
    loss = EF.cross_entropy(x, t, label_smoothing=0.1)
    loss.backward()
    assert loss.dtype == dtype
    assert np.isfinite(loss.item())
    assert np.isfinite(x.grad.numpy()).all()
    p = ember.tensor(probs(4, 5), dtype=dtype)
    x.grad = None
    EF.cross_entropy(x, p).backward()
    assert np.isfinite(x.grad.numpy()).all()
    if HAVE_TORCH:
        import torch

        tx = torch.tensor(x.detach().numpy(), requires_grad=True)
        tl = torch.nn.functional.cross_entropy(tx, torch.tensor(T), label_smoothing=0.1)
        np.testing.assert_allclose(loss.item(), tl.item(), rtol=1e-6)


def test_cross_entropy_ignored_and_empty_are_nan_like_torch():
    x = ember.tensor(randn(4, 5))
    assert np.isnan(EF.cross_entropy(x, ember.full((4,), -100)).item())
    assert np.isnan(EF.cross_entropy(x[:0], ember.tensor(T)[:0]).item())
    assert EF.cross_entropy(x[:0], ember.tensor(T)[:0], reduction="sum").item() == 0


def test_cross_entropy_weight_requires_grad_raises():
    w = ember.ones(5, requires_grad=True)
    x = ember.randn(4, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        EF.cross_entropy(x, ember.tensor(T), weight=w)


def test_cross_entropy_errors():
    x = ember.randn(3, 5)
    with pytest.raises(RuntimeError, match=r"expected target dtype to be Long or Byte, but got "
                                           r"Float.*target\.long\(\).*class probabilities"):
        EF.cross_entropy(x, ember.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match=r"but got Int.*target\.long\(\)"):
        EF.cross_entropy(x, ember.tensor([1, 2, 3], dtype=ember.int32))
    with pytest.raises(IndexError, match=r"Target 7 is out of bounds.*5 classes"):
        EF.cross_entropy(x, ember.tensor([1, 7, 3]))
    with pytest.raises(IndexError, match=r"Target -3 is out of bounds"):
        EF.cross_entropy(x, ember.tensor([1, -3, 3]))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target "
                                         r"batch_size \(4\).*\[3, 5\].*\[4\]"):
        EF.cross_entropy(x, ember.tensor([1, 2, 3, 4]))
    with pytest.raises(RuntimeError, match=r"\[3, 4\] is read as class probabilities.*\[3, 5\]"):
        EF.cross_entropy(x, ember.randn(3, 4))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        EF.cross_entropy(x, ember.tensor([1, 2, 3]), label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5"):
        EF.cross_entropy(x, ember.tensor([1, 2, 3]), weight=ember.ones(3))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 4\], got \[2, 3\]"):
        EF.cross_entropy(ember.randn(2, 5, 4), ember.zeros(2, 3, dtype=ember.int64))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        EF.cross_entropy(x, ember.tensor([1, 2, 3]), reduction="avg")


@pytest.mark.parametrize("reduction", REDS)
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(reduction, weighted):
    if weighted:
        check(lambda m, x, w: F(m).nll_loss(x, m.tensor(T_IGN), weight=w, reduction=reduction),
                 randn(4, 5), positive(5), grad_inputs=(0,), gradgrad=True)
    else:
        check(lambda m, x: F(m).nll_loss(x, m.tensor(T_IGN), reduction=reduction),
                 randn(4, 5), gradgrad=True)
    t = np.random.default_rng(1).integers(0, 5, (2, 3))
    check(lambda m, x: F(m).nll_loss(x, m.tensor(t), reduction=reduction), randn(2, 5, 3))


def test_nll_loss_errors():
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        EF.nll_loss(ember.randn(2, 5), ember.tensor([0, 5]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte"):
        EF.nll_loss(ember.randn(2, 5), ember.tensor([0.0, 1.0]))


def test_legacy_size_average_reduce():
    x, t = ember.randn(4, 5), ember.tensor(T)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        s = EF.cross_entropy(x, t, size_average=False)
    np.testing.assert_allclose(s.item(), EF.cross_entropy(x, t, reduction="sum").item())
    with pytest.warns(UserWarning):
        n = EF.mse_loss(x, x * 2, reduce=False)
    assert tuple(n.shape) == (4, 5)
    with pytest.warns(UserWarning):
        loss = ember.nn.MSELoss(size_average=False)
    assert loss.reduction == "sum"


# ---------------------------------------------------------------------------------------------
# binary cross entropy


@pytest.mark.parametrize("reduction", REDS)
def test_binary_cross_entropy(reduction):
    p = np.random.default_rng(0).random((3, 4)) * 0.9 + 0.05
    t = np.random.default_rng(1).random((3, 4))
    check(lambda m, x, y: F(m).binary_cross_entropy(x, y, reduction=reduction), p, t,
             ref=None if reduction != "none" else
             lambda x, y: -(y * np.log(x) + (1 - y) * np.log(1 - x)), gradgrad=True)
    check(lambda m, x, y, w: F(m).binary_cross_entropy(x, y, weight=w, reduction=reduction),
             p, t, positive(4), grad_inputs=(0, 1))


def test_binary_cross_entropy_clamps_at_edges():
    """log is clamped at -100 and the gradient uses max(x(1-x), 1e-12), as in PyTorch."""
    x = np.array([0.0, 1.0, 1e-30, 1 - 1e-16, 0.5])
    t = np.array([0.0, 1.0, 1.0, 0.0, 0.3])
    check(lambda m, x, y: F(m).binary_cross_entropy(x, y, reduction="none"), x, t,
             grad=False, check_float32=False)
    ex = ember.tensor(x, requires_grad=True)
    loss = EF.binary_cross_entropy(ex, ember.tensor(t), reduction="sum")
    loss.backward()
    if HAVE_TORCH:
        import torch

        tx = torch.tensor(x, requires_grad=True)
        tl = torch.nn.functional.binary_cross_entropy(tx, torch.tensor(t), reduction="sum")
        tl.backward()
        np.testing.assert_allclose(loss.item(), tl.item())
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-7)


def test_binary_cross_entropy_errors():
    with pytest.raises(ValueError, match=r"Using a target size \(torch.Size\(\[3\]\)\) that is "
                                         r"different to the input size \(torch.Size\(\[3, 1\]\)\)"):
        EF.binary_cross_entropy(ember.rand(3, 1), ember.rand(3))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1.*"
                                           "with_logits"):
        EF.binary_cross_entropy(ember.tensor([1.5]), ember.tensor([1.0]))
    with pytest.raises(RuntimeError, match=r"Found dtype Long but expected Float.*target.float"):
        EF.binary_cross_entropy(ember.rand(3), ember.tensor([0, 1, 1]))


@pytest.mark.parametrize("reduction", REDS)
def test_binary_cross_entropy_with_logits(reduction):
    x = randn(3, 4) * 3
    t = np.random.default_rng(1).random((3, 4))
    check(lambda m, x, y: F(m).binary_cross_entropy_with_logits(x, y, reduction=reduction),
             x, t, ref=None if reduction != "none" else
             lambda x, y: np.logaddexp(0, x) - x * y, gradgrad=True)
    check(lambda m, x, y, w, pw: F(m).binary_cross_entropy_with_logits(
        x, y, weight=w, pos_weight=pw, reduction=reduction),
        x, t, positive(3, 1), positive(4, seed=5) * 2, grad_inputs=(0, 1), gradgrad=True)


def test_binary_cross_entropy_with_logits_is_stable():
    x = ember.tensor([-1000.0, -100.0, 100.0, 1000.0], requires_grad=True)
    t = ember.tensor([0.0, 1.0, 0.0, 1.0])
    loss = EF.binary_cross_entropy_with_logits(x, t, reduction="none",
                                               pos_weight=ember.tensor([2.0]))
    loss.sum().backward()
    np.testing.assert_allclose(loss.detach().numpy(), [0.0, 200.0, 100.0, 0.0], atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), [0.0, -2.0, 1.0, 0.0], atol=1e-6)
    with pytest.raises(ValueError, match=r"Target size \(torch.Size\(\[3\]\)\) must be the same "
                                         r"as input size \(torch.Size\(\[3, 1\]\)\)"):
        EF.binary_cross_entropy_with_logits(ember.randn(3, 1), ember.rand(3))


# ---------------------------------------------------------------------------------------------
# regression losses


def _with_ties(a, b):
    b = b.copy()
    b[0, 0] = a[0, 0]  # d == 0: the kink of |d|
    b[1, 1] = a[1, 1] - 1.0  # |d| == 1: where smooth_l1 / huber switch branches
    b[2, 2] = a[2, 2] + 0.5
    return b


@pytest.mark.parametrize("reduction", REDS)
def test_mse_l1(reduction):
    a = randn(3, 4)
    b = _with_ties(a, randn(3, 4, seed=1))
    check(lambda m, x, y: F(m).mse_loss(x, y, reduction=reduction), a, b,
             ref=None if reduction != "none" else lambda x, y: (x - y) ** 2, gradgrad=True)
    check(lambda m, x, y: F(m).l1_loss(x, y, reduction=reduction), a, b,
             ref=None if reduction != "none" else lambda x, y: np.abs(x - y))


@pytest.mark.parametrize("reduction", REDS)
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 2.0])
def test_smooth_l1_and_huber(reduction, beta):
    a = randn(3, 4)
    b = _with_ties(a, randn(3, 4, seed=1))
    check(lambda m, x, y: F(m).smooth_l1_loss(x, y, reduction=reduction, beta=beta), a, b)
    if beta > 0:
        check(lambda m, x, y: F(m).huber_loss(x, y, reduction=reduction, delta=beta), a, b)


def test_smooth_l1_at_kinks_matches_torch_exactly():
    """Gradients exactly at d == 0 and |d| == beta (no finite differences there)."""
    if not HAVE_TORCH:
        pytest.skip("needs torch")
    import torch

    d = np.array([0.0, 1.0, -1.0, 0.5, -2.0])
    for name, kw in [("smooth_l1_loss", {"beta": 1.0}), ("huber_loss", {"delta": 1.0}),
                     ("l1_loss", {}), ("mse_loss", {})]:
        ex = ember.tensor(d, requires_grad=True)
        tx = torch.tensor(d, requires_grad=True)
        getattr(EF, name)(ex, ember.zeros(5, dtype=ember.float64), **kw).backward()
        getattr(torch.nn.functional, name)(tx, torch.zeros(5, dtype=torch.float64), **kw).backward()
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), err_msg=name)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_broadcast_target_warns_with_fix(name):
    """The seeds' trap: prediction [32, 1] vs target [32] silently becomes a [32, 32] loss."""
    pred, target = ember.randn(32, 1), ember.randn(32)
    with pytest.warns(UserWarning) as rec:
        loss = getattr(EF, name)(pred, target)
    msg = str(rec[0].message)
    assert ("Using a target size (torch.Size([32])) that is different to the input size "
            "(torch.Size([32, 1])). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.") in msg
    assert "[32, 32]" in msg and "every prediction with every target" in msg
    assert "target.view(-1, 1)" in msg and "pred.squeeze(1)" in msg
    assert rec[0].filename == __file__  # points at the caller's line
    # the value is still PyTorch's (broadcast) value
    expected = getattr(EF, name)(pred.reshape(32, 1) * ember.ones(1, 32),
                                 target.reshape(1, 32) * ember.ones(32, 1))
    np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-6)


def test_broadcast_warning_from_module_points_at_user_code():
    with pytest.warns(UserWarning, match="target.view") as rec:
        ember.nn.MSELoss()(ember.randn(32, 1), ember.randn(32))
    assert rec[0].filename == __file__
    with pytest.warns(UserWarning, match=r"target.squeeze\(1\)"):
        EF.mse_loss(ember.randn(8), ember.randn(8, 1))


def test_same_shape_does_not_warn_and_bad_shapes_raise():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        EF.mse_loss(ember.randn(32, 1), ember.randn(32, 1))
    with pytest.raises(RuntimeError, match=r"input of shape \[3, 2\] and the target of shape "
                                           r"\[3\] cannot be broadcast"):
        EF.mse_loss(ember.randn(3, 2), ember.randn(3))


# ---------------------------------------------------------------------------------------------
# other losses


@pytest.mark.parametrize("reduction", REDS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    lp = np.log(probs(4, 5))
    tgt = np.log(probs(4, 5, seed=1)) if log_target else probs(4, 5, seed=1)
    tgt = tgt.copy()
    if not log_target:
        tgt[0, 0] = 0.0  # 0 * log 0 = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda m, x, y: F(m).kl_div(x, y, reduction=reduction, log_target=log_target),
                 lp, tgt, gradgrad=True, grad_inputs=(0,) if not log_target else None)


def test_kl_div_mean_warns():
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        EF.kl_div(ember.randn(2, 3), ember.rand(2, 3))


@pytest.mark.parametrize("reduction", REDS)
def test_cosine_embedding_loss(reduction):
    y = np.array([1.0, -1.0, 1.0, -1.0])
    check(lambda m, a, b: F(m).cosine_embedding_loss(a, b, m.tensor(y), margin=0.1,
                                                         reduction=reduction),
             randn(4, 3), randn(4, 3, seed=1))
    check(lambda m, a, b: F(m).cosine_embedding_loss(a, b, m.tensor(-1.0), margin=-0.5,
                                                         reduction=reduction),
             randn(3), randn(3, seed=1))


@pytest.mark.parametrize("reduction", REDS)
def test_margin_ranking_loss(reduction):
    y = np.array([1.0, -1.0, 1.0, -1.0])
    check(lambda m, a, b, y: F(m).margin_ranking_loss(a, b, y, margin=0.2, reduction=reduction),
             randn(4), randn(4, seed=1), y, grad_inputs=(0, 1))
    with pytest.raises(RuntimeError, match="All input tensors should have same dimension"):
        EF.margin_ranking_loss(ember.randn(4), ember.randn(4), ember.randn(4, 1))


@pytest.mark.parametrize("reduction", REDS)
@pytest.mark.parametrize("p,swap", [(2, False), (2, True), (1, False), (3, True)])
def test_triplet_margin_loss(reduction, p, swap):
    check(lambda m, a, b, c: F(m).triplet_margin_loss(a, b, c, margin=1.5, p=p, swap=swap,
                                                         reduction=reduction),
             randn(5, 3), randn(5, 3, seed=1), randn(5, 3, seed=2))
    with pytest.raises(RuntimeError, match="anchor 2D, positive 2D, and negative 1D"):
        EF.triplet_margin_loss(ember.randn(2, 3), ember.randn(2, 3), ember.randn(3))


@pytest.mark.parametrize("reduction", REDS)
def test_soft_margin_hinge_multilabel(reduction):
    y = np.array([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]])
    check(lambda m, x, y: F(m).soft_margin_loss(x, y, reduction=reduction), randn(2, 3) * 4,
             y, grad_inputs=(0,), gradgrad=True)
    check(lambda m, x, y: F(m).hinge_embedding_loss(x, y, margin=0.7, reduction=reduction),
             randn(2, 3), y, grad_inputs=(0,))
    check(lambda m, x, y, w: F(m).multilabel_soft_margin_loss(x, y, weight=w,
                                                                 reduction=reduction),
             randn(2, 3), (y > 0) * 1.0, positive(3), grad_inputs=(0,))


@pytest.mark.parametrize("reduction", REDS)
def test_poisson_and_gaussian_nll(reduction):
    rates = np.random.default_rng(3).random((4, 3)) * 4
    check(lambda m, x, y: F(m).poisson_nll_loss(x, y, full=True, reduction=reduction),
             randn(4, 3), rates, grad_inputs=(0,))
    check(lambda m, x, y: F(m).poisson_nll_loss(x, y, log_input=False, reduction=reduction),
             positive(4, 3), rates, grad_inputs=(0,))
    var = positive(4, 1)
    var[0, 0] = 0.1  # clamped to eps, gradient passes straight through (PyTorch)
    check(lambda m, x, y, v: F(m).gaussian_nll_loss(x, y, v, full=True, eps=0.3,
                                                       reduction=reduction),
             randn(4, 3), randn(4, 3, seed=1), var, grad_inputs=(0, 1))
    check(lambda m, x, y, v: F(m).gaussian_nll_loss(x, y, v, reduction=reduction),
             randn(4, 3), randn(4, 3, seed=1), positive(4, 3), gradgrad=True)
    check(lambda m, x, y, v: F(m).gaussian_nll_loss(x, y, v, reduction=reduction),
             randn(4, 3), randn(4, 3, seed=1), positive(4))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        EF.gaussian_nll_loss(ember.randn(4, 3), ember.randn(4, 3), ember.ones(2))
    with pytest.raises(ValueError, match="var has negative entry"):
        EF.gaussian_nll_loss(ember.randn(4, 3), ember.randn(4, 3), -ember.ones(4, 3))


# ---------------------------------------------------------------------------------------------
# modules


MODULE_CASES = [
    ("MSELoss", {}, "reg"),
    ("L1Loss", {"reduction": "sum"}, "reg"),
    ("SmoothL1Loss", {"beta": 0.5}, "reg"),
    ("HuberLoss", {"delta": 0.7, "reduction": "none"}, "reg"),
    ("SoftMarginLoss", {}, "sign"),
    ("CrossEntropyLoss", {"label_smoothing": 0.1, "ignore_index": 0}, "cls"),
    ("NLLLoss", {"reduction": "sum"}, "cls"),
    ("BCELoss", {}, "prob"),
    ("BCEWithLogitsLoss", {}, "logit"),
    ("KLDivLoss", {"reduction": "batchmean", "log_target": True}, "kl"),
    ("HingeEmbeddingLoss", {"margin": 0.5}, "sign"),
    ("MultiLabelSoftMarginLoss", {}, "multi"),
    ("PoissonNLLLoss", {"full": True}, "rate"),
]


def _module_inputs(kind):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5))
    if kind == "reg":
        return x, rng.standard_normal((4, 5))
    if kind == "sign":
        return x, np.sign(rng.standard_normal((4, 5)))
    if kind == "cls":
        return x, np.array([1, 0, 4, 2])
    if kind == "prob":
        return rng.random((4, 5)) * 0.9 + 0.05, rng.random((4, 5))
    if kind == "logit":
        return x, rng.random((4, 5))
    if kind == "kl":
        return np.log(probs(4, 5)), np.log(probs(4, 5, seed=1))
    if kind == "multi":
        return x, (rng.random((4, 5)) > 0.5) * 1.0
    return x, rng.random((4, 5)) * 3


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch")
@pytest.mark.parametrize("name,kwargs,kind", MODULE_CASES)
def test_loss_modules_match_torch(name, kwargs, kind):
    import torch

    x, y = _module_inputs(kind)
    e_mod, t_mod = getattr(ember.nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    assert repr(e_mod) == repr(t_mod)
    assert e_mod.reduction == t_mod.reduction
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eo, to = e_mod(ex, ember.tensor(y)), t_mod(tx, torch.tensor(y))
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-6, atol=1e-9)
    eo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch")
def test_loss_modules_three_inputs_and_buffers():
    import torch

    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal((4, 3)) for _ in range(3))
    y = np.array([1.0, -1.0, -1.0, 1.0])
    for name, kw, args in [
        ("CosineEmbeddingLoss", {"margin": 0.2}, (a, b, y)),
        ("MarginRankingLoss", {"margin": 0.1}, (a[:, 0], b[:, 0], y)),
        ("TripletMarginLoss", {"margin": 2.0, "p": 1.0, "swap": True}, (a, b, c)),
        ("GaussianNLLLoss", {"full": True}, (a, b, np.abs(c) + 0.1)),
    ]:
        eo = getattr(ember.nn, name)(**kw)(*(ember.tensor(v) for v in args))
        to = getattr(torch.nn, name)(**kw)(*(torch.tensor(v) for v in args))
        np.testing.assert_allclose(eo.numpy(), to.numpy(), rtol=1e-6, err_msg=name)
        assert repr(getattr(ember.nn, name)(**kw)) == repr(getattr(torch.nn, name)(**kw))
    w = np.array([1.0, 2.0, 0.5])
    for name, kw in [("CrossEntropyLoss", {"weight": w}), ("NLLLoss", {"weight": w}),
                     ("BCELoss", {"weight": w}), ("BCEWithLogitsLoss", {"pos_weight": w}),
                     ("CrossEntropyLoss", {}), ("BCEWithLogitsLoss", {"weight": w,
                                                                      "pos_weight": w})]:
        e_sd = getattr(ember.nn, name)(**{k: ember.tensor(v) for k, v in kw.items()}).state_dict()
        t_sd = getattr(torch.nn, name)(**{k: torch.tensor(v) for k, v in kw.items()}).state_dict()
        assert list(e_sd) == list(t_sd), name
        for k in t_sd:
            np.testing.assert_array_equal(e_sd[k].numpy(), t_sd[k].numpy())


def test_cross_entropy_module_trains():
    """A tiny classifier with CrossEntropyLoss learns a separable problem."""
    ember.manual_seed(0)
    x = ember.randn(64, 2)
    y = (x[:, 0] > 0).long()
    w = ember.zeros(2, 2, requires_grad=True)
    loss_fn = ember.nn.CrossEntropyLoss()
    first = None
    for _ in range(50):
        loss = loss_fn(x @ w, y)
        first = first if first is not None else loss.item()
        w.grad = None
        loss.backward()
        with ember.no_grad():
            w -= 1.0 * w.grad
    assert loss.item() < first / 3


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDS)
def test_cross_entropy_plain_branch_equals_the_masked_one(dtype, reduction):
    """(N, C) logits with every target a class take a branch without masks; weights of ones (the
    masked branch) give the same bits, forward and backward, and a target outside [0, C) still
    raises there."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((37, 6)).astype(dtype) * 4
    t = ember.tensor(rng.integers(0, 6, 37))
    outs = []
    for w in (None, ember.ones(6, dtype=getattr(ember, dtype))):
        xe = ember.tensor(x, requires_grad=True)
        loss = EF.cross_entropy(xe, t, weight=w, reduction=reduction)
        loss.sum().backward()
        assert loss.dtype == xe.dtype
        outs.append((loss.detach().numpy(), xe.grad.numpy()))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    if HAVE_TORCH:
        import torch

        xt = torch.tensor(x, requires_grad=True)
        lt = torch.nn.functional.cross_entropy(xt, torch.tensor(t.numpy()), reduction=reduction)
        lt.sum().backward()
        np.testing.assert_allclose(outs[0][0], lt.detach().numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(outs[0][1], xt.grad.numpy(), rtol=1e-6, atol=1e-7)
    for bad in (-1, 6):
        tb = t.clone()
        tb[3] = bad
        with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
            EF.cross_entropy(ember.tensor(x), tb, reduction=reduction)
    # an ignore_index inside [0, C) takes the masked branch: class 2 ignored
    kept = t.numpy() != 2
    got = EF.cross_entropy(ember.tensor(x), t, ignore_index=2, reduction="sum").item()
    want = EF.cross_entropy(ember.tensor(x[kept]), ember.tensor(t.numpy()[kept]),
                            reduction="sum").item()
    assert got == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("pos_weight", [None, 2.5])
def test_bce_with_logits_kernels_agree_with_the_numpy_formula_and_pytorch(pos_weight) -> None:
    """float32 takes the softplus and sigmoid kernels (one pass each) for logaddexp(0, -x) and
    sigmoid(-x): within an ulp of NumPy's logaddexp formula, per element and through backward,
    over the whole range (saturated logits included)."""
    from ember import _kernels_loader as L

    rng = np.random.default_rng(11)
    x = (rng.standard_normal(50_000) * 12).astype(np.float32)
    x[:4] = [0.0, -0.0, 90.0, -90.0]
    t = rng.random(50_000).astype(np.float32)
    pw = None if pos_weight is None else ember.full((50_000,), pos_weight)
    runs = []
    for off in (False, True):
        xe, te = ember.tensor(x, requires_grad=True), ember.tensor(t, requires_grad=True)
        if off:
            with L.disabled():
                loss = EF.binary_cross_entropy_with_logits(xe, te, pos_weight=pw, reduction="none")
                loss.sum().backward()
        else:
            loss = EF.binary_cross_entropy_with_logits(xe, te, pos_weight=pw, reduction="none")
            loss.sum().backward()
        runs.append((loss.detach().numpy(), xe.grad.numpy(), te.grad.numpy()))
    for a, b in zip(*runs):
        np.testing.assert_allclose(a, b, rtol=4e-6, atol=1e-6)
    if HAVE_TORCH:
        import torch

        xt, tt = torch.tensor(x, requires_grad=True), torch.tensor(t, requires_grad=True)
        pwt = None if pos_weight is None else torch.full((50_000,), pos_weight)
        lt = torch.nn.functional.binary_cross_entropy_with_logits(xt, tt, pos_weight=pwt,
                                                                   reduction="none")
        lt.sum().backward()
        np.testing.assert_allclose(runs[0][0], lt.detach().numpy(), rtol=4e-6, atol=1e-6)
        np.testing.assert_allclose(runs[0][1], xt.grad.numpy(), rtol=4e-6, atol=1e-6)
        np.testing.assert_allclose(runs[0][2], tt.grad.numpy(), rtol=4e-6, atol=1e-5)


@pytest.mark.parametrize("reduction", REDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_smoothing_gradient_in_three_passes_keeps_the_formulas_bits(
        monkeypatch, reduction, dtype):
    """Label smoothing without class weights, (N, C) logits: the backward's three-pass form
    gives the bits of the formula g * (p * rowsum - (1 - eps) * wt * onehot - smooth), ignored
    targets included."""
    from ember.ops.nn import loss as L

    rng = np.random.default_rng(8)
    x0 = (rng.standard_normal((64, 37)) * 3).astype(dtype)
    t = rng.integers(0, 37, 64)
    t[[3, 10]] = -100

    def grad() -> np.ndarray:
        x = ember.tensor(x0, requires_grad=True)
        EF.cross_entropy(x, ember.tensor(t), label_smoothing=0.2, reduction=reduction
                         ).backward(None if reduction != "none" else ember.ones(64, dtype=x.dtype))
        return x.grad.numpy()

    fast = grad()

    def formula(p, rowsum, hit, smooth, tk, g):
        onehot = np.arange(p.shape[1]).reshape(1, -1) == tk
        return g * (p * rowsum - hit * onehot - smooth)

    monkeypatch.setattr(L, "_smoothed_class_grad", formula)
    slow = grad()
    assert fast.dtype == slow.dtype == dtype and fast.tobytes() == slow.tobytes()


@pytest.mark.parametrize("reduction", REDS)
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_image_logits_gradient_keeps_the_formulas_bits(reduction, weighted):
    """(N, C, H, W) logits with class-index targets (ignored ones too): the backward's one pass
    (s p, then s (p - 1) at the targets along dim 1) gives the bits of the formula
    g * wt * where(onehot, p - 1, p), which create_graph's recorded path still computes."""
    rng = np.random.default_rng(9)
    x0 = (rng.standard_normal((3, 6, 5, 7)) * 2).astype(np.float32)
    t = rng.integers(0, 6, (3, 5, 7))
    t[0, 1, 2] = -100
    w = ember.tensor(positive(6, seed=4).astype(np.float32)) if weighted else None
    grads = []
    for create_graph in (False, True):
        x = ember.tensor(x0, requires_grad=True)
        loss = EF.cross_entropy(x, ember.tensor(t), weight=w, reduction=reduction)
        if reduction == "none":
            loss = (loss * ember.full(tuple(loss.shape), 1.5)).sum()
        (g,) = ember.autograd.grad(loss, x, create_graph=create_graph)
        grads.append(g.detach().numpy())
    assert grads[0].dtype == np.float32 and grads[0].tobytes() == grads[1].tobytes()
