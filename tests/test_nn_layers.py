"""nn.functional activations and layers (ember/ops/nn/{activation,linear,dropout,sparse}.py,
nn/modules/{linear,activation,dropout,sparse,flatten}.py, nn/utils): NumPy references, gradcheck,
gradgradcheck, torch parity."""

import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from helpers import HAVE_TORCH, check_op, randn

if HAVE_TORCH:
    import torch

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="parity test needs torch")

# values that sit on (and next to) every kink the activations have
KINKS = np.array([-21.0, -6.0, -3.0, -2.9, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 2.9, 3.0, 6.0,
                  10.0, 21.0])


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _erf(x):
    return np.vectorize(math.erf, otypes=[float])(x)


SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

# name -> (fn(m, x) on ember.nn.functional / torch.nn.functional, NumPy reference)
ACTIVATIONS = {
    "relu": (lambda F, x: F.relu(x), lambda x: np.maximum(x, 0)),
    "relu6": (lambda F, x: F.relu6(x), lambda x: np.clip(x, 0, 6)),
    "leaky_relu": (lambda F, x: F.leaky_relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    "elu": (lambda F, x: F.elu(x, 1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x))),
    "selu": (lambda F, x: F.selu(x),
             lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(x))),
    "celu": (lambda F, x: F.celu(x, 0.7),
             lambda x: np.maximum(x, 0) + np.minimum(0, 0.7 * np.expm1(x / 0.7))),
    "gelu": (lambda F, x: F.gelu(x), lambda x: x * 0.5 * (1 + _erf(x / math.sqrt(2)))),
    "gelu_tanh": (lambda F, x: F.gelu(x, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))),
    "silu": (lambda F, x: F.silu(x), lambda x: x * _sig(x)),
    "mish": (lambda F, x: F.mish(x), lambda x: x * np.tanh(np.logaddexp(0, x))),
    "hardtanh": (lambda F, x: F.hardtanh(x, -2.0, 2.5), lambda x: np.clip(x, -2, 2.5)),
    "hardswish": (lambda F, x: F.hardswish(x), lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "hardsigmoid": (lambda F, x: F.hardsigmoid(x), lambda x: np.clip(x + 3, 0, 6) / 6),
    "softplus": (lambda F, x: F.softplus(x), lambda x: np.where(x > 20, x, np.logaddexp(0, x))),
    "softplus_beta": (lambda F, x: F.softplus(x, 2.0, 10.0),
                      lambda x: np.where(2 * x > 10, x, np.logaddexp(0, 2 * x) / 2)),
    "softsign": (lambda F, x: F.softsign(x), lambda x: x / (1 + np.abs(x))),
    "tanhshrink": (lambda F, x: F.tanhshrink(x), lambda x: x - np.tanh(x)),
    "threshold": (lambda F, x: F.threshold(x, 0.5, -2.0), lambda x: np.where(x > 0.5, x, -2.0)),
    "logsigmoid": (lambda F, x: F.logsigmoid(x), lambda x: -np.logaddexp(0, -x)),
    "softshrink": (lambda F, x: F.softshrink(x, 0.5),
                   lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0))),
    "hardshrink": (lambda F, x: F.hardshrink(x, 0.5), lambda x: np.where(np.abs(x) > 0.5, x, 0)),
    "sigmoid": (lambda F, x: F.sigmoid(x), _sig),
    "tanh": (lambda F, x: F.tanh(x), np.tanh),
}


def _tf():
    return torch.nn.functional


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_check_op(name):
    fn, ref = ACTIVATIONS[name]
    # random values away from kinks: gradcheck, gradgradcheck, torch parity with a random cotangent
    x = randn(3, 5) * 2
    x = x + 0.05 * np.sign(x)  # keep off the exact kink points for finite differences
    check_op(lambda m, t: fn(F if m is ember else _tf(), t), x, ref=ref, gradgrad=True)


@needs_torch
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_kinks_match_torch(name):
    fn, ref = ACTIVATIONS[name]
    check_op(lambda m, t: fn(F if m is ember else _tf(), t), KINKS.copy(), ref=ref, grad=False)
    te = torch.tensor(KINKS, requires_grad=True)
    ee = ember.tensor(KINKS, requires_grad=True)
    v = np.random.default_rng(1).standard_normal(KINKS.shape)
    fn(_tf(), te).backward(torch.tensor(v))
    fn(F, ee).backward(ember.tensor(v))
    np.testing.assert_allclose(ee.grad.numpy(), te.grad.numpy(), rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_edge_shapes(name):
    fn, ref = ACTIVATIONS[name]
    for shape in [(), (0,), (2, 0, 3)]:
        x = randn(*shape) if shape else np.array(0.75)
        out = fn(F, ember.tensor(x))
        assert tuple(out.shape) == shape
        np.testing.assert_allclose(out.numpy(), ref(x), rtol=1e-6, atol=1e-7)
    big = np.array([-1e4, -100.0, 100.0, 1e4], dtype=np.float32)
    out = fn(F, ember.tensor(big))
    assert out.dtype == ember.float32
    if HAVE_TORCH:
        # atol: float32 denormals (ember's stable sigmoid keeps exp(-100) = 3.8e-44, torch flushes)
        np.testing.assert_allclose(out.numpy(), fn(_tf(), torch.tensor(big)).numpy(), rtol=1e-6,
                                   atol=1e-37)


def test_activation_integer_input_errors():
    with pytest.raises(RuntimeError, match="not implemented for 'Long'.*x.float"):
        F.gelu(ember.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="approximate"):
        F.gelu(ember.randn(3), approximate="fast")
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(ember.randn(3), 2.0, 1.0)


def test_activation_inplace_variants():
    for fn, ref in [
        (lambda t: F.relu(t, inplace=True), lambda a: np.maximum(a, 0)),
        (lambda t: F.leaky_relu_(t, 0.2), lambda a: np.where(a > 0, a, 0.2 * a)),
        (lambda t: F.elu(t, inplace=True), lambda a: np.where(a > 0, a, np.expm1(a))),
        (lambda t: F.hardtanh_(t), lambda a: np.clip(a, -1, 1)),
        (lambda t: F.threshold_(t, 0.1, 5.0), lambda a: np.where(a > 0.1, a, 5.0)),
        (lambda t: F.silu(t, inplace=True), lambda a: a * _sig(a)),
    ]:
        a = randn(4, 3)
        t = ember.tensor(a)
        arr = t.numpy()
        out = fn(t)
        assert out is t
        np.testing.assert_allclose(arr, ref(a), rtol=1e-6)  # written into the same buffer
    # in-place on a non-leaf is differentiable, as in PyTorch
    x = ember.tensor(randn(5), requires_grad=True)
    y = x * 2
    F.relu(y, inplace=True).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * (randn(5) > 0))


@needs_torch
def test_activation_modules_match_torch():
    x = randn(2, 3, 4)
    pairs = [
        ("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.2,)), ("ELU", (0.5,)), ("SELU", ()),
        ("CELU", (1.3,)), ("GELU", ("tanh",)), ("SiLU", ()), ("Mish", ()), ("Sigmoid", ()),
        ("Tanh", ()), ("Hardtanh", (-0.5, 0.5)), ("Hardswish", ()), ("Hardsigmoid", ()),
        ("Softplus", (2.0, 5.0)), ("Softsign", ()), ("Tanhshrink", ()), ("Threshold", (0.1, -1.0)),
        ("LogSigmoid", ()), ("GLU", (-1,)), ("Softshrink", (0.3,)), ("Hardshrink", (0.3,)),
        ("Softmax", (1,)), ("LogSoftmax", (-1,)), ("Softmin", (0,)), ("Softmax2d", ()),
    ]
    for name, args in pairs:
        em, tm = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
        assert repr(em) == repr(tm)
        eo = em(ember.tensor(x))
        to = tm(torch.tensor(x))
        np.testing.assert_allclose(eo.numpy(), to.numpy(), rtol=1e-6, atol=1e-7, err_msg=name)
    for name, kw in [("ReLU", {"inplace": True}), ("ELU", {"alpha": 2.0, "inplace": True}),
                     ("Hardtanh", {"min_val": -2, "max_val": 2, "inplace": True}),
                     ("Threshold", {"threshold": 1, "value": 2, "inplace": True}),
                     ("RReLU", {"lower": 0.1, "upper": 0.3}), ("PReLU", {"num_parameters": 3}),
                     ("Softmax", {}), ("GELU", {}), ("SiLU", {"inplace": True})]:
        assert repr(getattr(nn, name)(**kw)) == repr(getattr(torch.nn, name)(**kw))


def test_glu_errors_and_dims():
    check_op(lambda m, x: m.nn.functional.glu(x, 1), randn(2, 6, 3), gradgrad=True)
    check_op(lambda m, x: m.nn.functional.glu(x, -1), randn(4, 2))
    with pytest.raises(RuntimeError, match="Halving dimension must be even.*size 5"):
        F.glu(ember.randn(2, 5))


@pytest.mark.parametrize("shape,nparam", [((4, 3), 3), ((2, 3, 5), 3), ((2, 3, 2, 2), 1), ((5,), 1)])
def test_prelu(shape, nparam):
    w = np.array([0.25, -0.5, 1.5][:nparam])
    check_op(lambda m, x, w: m.nn.functional.prelu(x, w), randn(*shape), w, gradgrad=True)


def test_prelu_errors():
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size"):
        F.prelu(ember.randn(2, 4), ember.randn(3))


@pytest.mark.parametrize("xshape", [(5, 4), (2, 3, 4), (4,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(xshape, bias):
    arrays = [randn(*xshape), randn(3, 4, seed=1)] + ([randn(3, seed=2)] if bias else [])
    check_op(lambda m, *a: m.nn.functional.linear(*a), *arrays,
             ref=lambda x, w, *b: x @ w.T + (b[0] if b else 0), gradgrad=True)


def test_linear_errors_name_shapes_and_dtypes():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(4x3 and 2x5\)"):
        F.linear(ember.randn(4, 3), ember.randn(5, 2))
    with pytest.raises(RuntimeError, match="mat1 and mat2 must have the same dtype, but got Long and Float"):
        nn.Linear(2, 2)(ember.tensor([[1, 2]]))
    with pytest.raises(RuntimeError, match="same dtype.*Double and Float"):
        nn.Linear(2, 2)(ember.randn(3, 2, dtype=ember.float64))


def test_linear_empty_and_float32():
    lin = nn.Linear(3, 2)
    out = lin(ember.randn(0, 3))
    assert tuple(out.shape) == (0, 2) and out.dtype == ember.float32
    assert lin(ember.randn(7, 3)).dtype == ember.float32
    with pytest.warns(UserWarning, match="zero-element"):
        z = nn.Linear(0, 2)  # PyTorch warns too
    assert tuple(z(ember.randn(4, 0)).shape) == (4, 2)


def test_bilinear():
    check_op(lambda m, a, b, w, c: m.nn.functional.bilinear(a, b, w, c), randn(5, 3), randn(5, 2),
             randn(4, 3, 2), randn(4), ref=lambda a, b, w, c: np.einsum("ni,kij,nj->nk", a, w, b) + c,
             gradgrad=True)
    check_op(lambda m, a, b, w: m.nn.functional.bilinear(a, b, w), randn(2, 5, 3), randn(2, 5, 2),
             randn(4, 3, 2))


@needs_torch
def test_linear_and_bilinear_modules_match_torch_weights():
    for ecls, tcls, args, inputs in [
        (nn.Linear, torch.nn.Linear, (6, 4), [randn(5, 6)]),
        (nn.Bilinear, torch.nn.Bilinear, (3, 2, 4), [randn(5, 3), randn(5, 2)]),
    ]:
        tm = tcls(*args).double()
        em = ecls(*args).double()
        assert repr(em) == repr(tm)
        sd = {k: v.detach().numpy() for k, v in tm.state_dict().items()}
        em.load_state_dict({k: ember.tensor(v) for k, v in sd.items()})
        eo = em(*[ember.tensor(a) for a in inputs])
        to = tm(*[torch.tensor(a) for a in inputs])
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10)
        v = randn(*tuple(to.shape), seed=5)
        eo.backward(ember.tensor(v))
        to.backward(torch.tensor(v))
        for (k, p), (_, q) in zip(em.named_parameters(), tm.named_parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, err_msg=k)


def test_dropout_train_eval_and_scaling():
    ember.manual_seed(0)
    x = ember.ones(200, 500)
    d = nn.Dropout(0.3)
    y = d(x)
    vals = np.unique(y.numpy())
    np.testing.assert_allclose(vals, [0.0, 1 / 0.7], rtol=1e-6)
    frac = (y.numpy() == 0).mean()
    assert abs(frac - 0.3) < 0.01
    assert y.dtype == ember.float32
    d.eval()
    assert d(x) is x
    assert F.dropout(x, 0.5, training=False) is x
    assert (F.dropout(x, 1.0).numpy() == 0).all()
    assert F.dropout(x, 0.0) is x
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)


def test_dropout_grad_uses_the_same_mask():
    x = ember.randn(50, 40, requires_grad=True)
    y = F.dropout(x, 0.4)
    y.backward(ember.ones(50, 40))
    mask = (y.detach().numpy() != 0)
    np.testing.assert_allclose(x.grad.numpy(), mask / 0.6, rtol=1e-6)
    # reproducible under manual_seed
    ember.manual_seed(3)
    a = F.dropout(ember.ones(10, 10), 0.5).numpy()
    ember.manual_seed(3)
    b = F.dropout(ember.ones(10, 10), 0.5).numpy()
    np.testing.assert_array_equal(a, b)


def test_feature_dropout():
    x = ember.ones(8, 16, 5, 5)
    y = F.dropout2d(x, 0.5).numpy()
    per_channel = y.reshape(8, 16, -1)
    assert ((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1)).all()
    y1 = nn.Dropout1d(0.5)(ember.ones(4, 6, 7)).numpy()
    assert ((y1 == 0).all(-1) | (y1 == 2.0).all(-1)).all()
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(ember.ones(2, 3, 4, 5))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        F.dropout2d(ember.ones(2, 3, 4), 0.5)
    assert any("Received a 3D input to dropout2d" in str(x.message) for x in w)
    assert nn.Dropout2d(0.5).eval()(x) is x


def test_alpha_dropout_keeps_moments():
    x = ember.randn(400, 400)
    y = nn.AlphaDropout(0.2)(x).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    assert nn.AlphaDropout(0.2).eval()(x) is x
    assert F.alpha_dropout(x, 0.2) is x  # training=False by default, as in PyTorch
    xg = ember.randn(30, 30, requires_grad=True)
    out = F.alpha_dropout(xg, 0.5, training=True)
    out.sum().backward()
    kept = xg.grad.numpy() != 0
    assert 0.3 < kept.mean() < 0.7


def test_embedding_lookup_and_grad():
    idx = np.array([[0, 2, 2], [4, 2, 1]])
    w = randn(5, 3)
    check_op(lambda m, w: m.nn.functional.embedding(m.tensor(idx), w), w,
             ref=lambda w: w[idx], gradgrad=True)
    # padding_idx / scale_grad_by_freq change the gradient on purpose (no gradcheck): vs torch
    for kw in [{"padding_idx": 2}, {"padding_idx": -1, "scale_grad_by_freq": True},
               {"scale_grad_by_freq": True}]:
        ew = ember.tensor(w, requires_grad=True)
        eo = F.embedding(ember.tensor(idx), ew, **kw)
        np.testing.assert_array_equal(eo.detach().numpy(), w[idx])
        v = randn(2, 3, 3, seed=4)
        eo.backward(ember.tensor(v))
        if HAVE_TORCH:
            tw = torch.tensor(w, requires_grad=True)
            torch.nn.functional.embedding(torch.tensor(idx), tw, **kw).backward(torch.tensor(v))
            np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


def test_embedding_module_padding_idx():
    emb = nn.Embedding(10, 4, padding_idx=3)
    np.testing.assert_array_equal(emb.weight.detach().numpy()[3], 0)
    idx = ember.tensor([[3, 1, 3], [2, 3, 1]])
    emb(idx).sum().backward()
    g = emb.weight.grad.numpy()
    np.testing.assert_array_equal(g[3], 0)
    np.testing.assert_array_equal(g[1], 2)
    np.testing.assert_array_equal(g[2], 1)
    np.testing.assert_array_equal(g[0], 0)
    assert nn.Embedding(10, 4, padding_idx=-1).padding_idx == 9
    assert repr(nn.Embedding(10, 3, padding_idx=2, max_norm=1.0)) == \
        "Embedding(10, 3, padding_idx=2, max_norm=1.0)"
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(5, 2, padding_idx=5)


def test_embedding_from_pretrained_and_errors():
    w = ember.tensor(randn(4, 2))
    emb = nn.Embedding.from_pretrained(w)
    assert not emb.weight.requires_grad
    np.testing.assert_array_equal(emb(ember.tensor([1, 3])).numpy(), w.numpy()[[1, 3]])
    assert nn.Embedding.from_pretrained(w, freeze=False).weight.requires_grad
    with pytest.raises(IndexError, match="index out of range in self"):
        emb(ember.tensor([4]))
    with pytest.raises(RuntimeError, match="Long, Int; but got torch.FloatTensor"):
        emb(ember.tensor([1.0]))


def test_embedding_max_norm_renormalises_in_place():
    w = ember.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    emb = nn.Embedding.from_pretrained(w, max_norm=1.0)
    emb(ember.tensor([0, 1]))
    norms = np.linalg.norm(emb.weight.detach().numpy(), axis=1)
    np.testing.assert_allclose(norms[:2], [1.0, 0.5], rtol=1e-5)
    np.testing.assert_allclose(norms[2], 10.0)  # not looked up: untouched


def test_embedding_backward_is_vectorised():
    import time

    emb = nn.Embedding(50000, 64)
    idx = ember.randint(0, 50000, (64, 256))
    emb(idx).sum().backward()  # warm-up (first touches of fresh memory)
    emb.weight.grad = None
    out = emb(idx)
    t0 = time.perf_counter()
    out.sum().backward()
    assert time.perf_counter() - t0 < 2.0  # a per-row Python loop would take far longer
    counts = np.bincount(idx.numpy().ravel(), minlength=50000)
    np.testing.assert_allclose(emb.weight.grad.numpy()[:, 0], counts)


@needs_torch
def test_embedding_matches_torch():
    tm = torch.nn.Embedding(7, 3, padding_idx=1).double()
    em = nn.Embedding(7, 3, padding_idx=1).double()
    assert list(em.state_dict()) == list(tm.state_dict())
    em.load_state_dict({"weight": ember.tensor(tm.weight.detach().numpy())})
    idx = np.array([[1, 2, 6], [0, 1, 2]])
    v = randn(2, 3, 3)
    eo, to = em(ember.tensor(idx)), tm(torch.tensor(idx))
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy())
    eo.backward(ember.tensor(v))
    to.backward(torch.tensor(v))
    np.testing.assert_allclose(em.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-12)


def test_one_hot():
    y = ember.tensor([0, 2, 1, 2])
    out = F.one_hot(y)
    assert out.dtype == ember.int64 and tuple(out.shape) == (4, 3)
    np.testing.assert_array_equal(out.numpy(), np.eye(3, dtype=np.int64)[[0, 2, 1, 2]])
    assert tuple(F.one_hot(ember.tensor([[1], [0]]), num_classes=5).shape) == (2, 1, 5)
    with pytest.raises(RuntimeError, match="LongTensor"):
        F.one_hot(ember.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(y, 2)
    with pytest.raises(RuntimeError, match="non-negative"):
        F.one_hot(ember.tensor([-1, 0]))
    with pytest.raises(RuntimeError, match="empty tensor"):
        F.one_hot(ember.tensor([], dtype=ember.int64))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", [((2, 3, 5), (2, 1)), ((1, 2, 4, 5), (1, 2, 3, 0)),
                                       ((1, 1, 3, 4, 4), (1, 1, 2, 0, 1, 2))])
def test_pad_modes(mode, shape, pad):
    check_op(lambda m, x: m.nn.functional.pad(x, pad, mode=mode), randn(*shape), gradgrad=True)


def test_pad_constant_value_negative_and_errors():
    check_op(lambda m, x: m.nn.functional.pad(x, (1, -1, -1, 2), value=3.5), randn(3, 4),
             gradgrad=True)
    check_op(lambda m, x: m.nn.functional.pad(x, (0, 0, 2, 0, 1, 1)), randn(2, 3, 4))
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        F.pad(ember.randn(1, 2, 3), (3, 3), mode="reflect")
    with pytest.raises(RuntimeError, match="divisible by 2"):
        F.pad(ember.randn(2, 3), (1,))
    with pytest.raises(NotImplementedError, match="non-constant padding"):
        F.pad(ember.randn(3), (1, 1), mode="reflect")


def test_normalize_and_distances():
    check_op(lambda m, x: m.nn.functional.normalize(x, dim=1), randn(4, 5),
             ref=lambda x: x / np.linalg.norm(x, axis=1, keepdims=True))
    check_op(lambda m, x: m.nn.functional.normalize(x, p=1.0, dim=0), randn(4, 5))
    check_op(lambda m, a, b: m.nn.functional.cosine_similarity(a, b), randn(4, 5), randn(4, 5, seed=1))
    check_op(lambda m, a, b: m.nn.functional.cosine_similarity(a, b, dim=-1), randn(3, 4),
             randn(1, 4, seed=1))
    check_op(lambda m, a, b: m.nn.functional.pairwise_distance(a, b), randn(4, 5), randn(4, 5, seed=1))
    check_op(lambda m, a, b: m.nn.functional.pairwise_distance(a, b, p=1.0, keepdim=True),
             randn(4, 5), randn(4, 5, seed=1))
    z = F.normalize(ember.zeros(2, 3))
    assert np.isfinite(z.numpy()).all()


@needs_torch
def test_softmax_family_and_implicit_dim_warning():
    x = randn(2, 3, 4)
    for name in ["softmax", "log_softmax", "softmin"]:
        for dim in [0, 1, -1]:
            check_op(lambda m, t, name=name, dim=dim: getattr(m.nn.functional, name)(t, dim), x)
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            out = getattr(F, name)(ember.tensor(x))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = getattr(torch.nn.functional, name)(torch.tensor(x))
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)
    out = F.softmax(ember.randn(3, 4), 1, dtype=ember.float64)
    assert out.dtype == ember.float64


def test_rrelu_and_gumbel():
    x = ember.tensor(randn(100, 100))
    ev = F.rrelu(x)
    np.testing.assert_allclose(ev.numpy(), np.where(x.numpy() > 0, x.numpy(), x.numpy() * (1 / 8 + 1 / 3) / 2),
                               rtol=1e-6)
    tr = F.rrelu(x, training=True).numpy()
    neg = x.numpy() < 0
    ratio = tr[neg] / x.numpy()[neg]
    assert ratio.min() >= 1 / 8 - 1e-6 and ratio.max() <= 1 / 3 + 1e-6
    g = F.gumbel_softmax(ember.randn(5, 4), hard=True)
    np.testing.assert_allclose(g.numpy().sum(1), 1)
    assert set(np.unique(g.numpy())) <= {0.0, 1.0}


def test_flatten_unflatten_identity():
    x = ember.randn(2, 3, 4, 5)
    assert tuple(nn.Flatten()(x).shape) == (2, 60)
    assert tuple(nn.Flatten(0, 2)(x).shape) == (24, 5)
    assert tuple(nn.Unflatten(1, (3, 1))(ember.randn(2, 3)).shape) == (2, 3, 1)
    assert repr(nn.Unflatten(1, (2, 5))) == "Unflatten(dim=1, unflattened_size=(2, 5))"
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints"):
        nn.Unflatten(1, (2.0, 3))
    assert nn.Identity(54, unused="x")(x) is x


# -- nn.utils ------------------------------------------------------------------------------------


def _grad_pairs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) * 3 for s in shapes]
    eps = [ember.tensor(a, requires_grad=True) for a in arrays]
    for p, a in zip(eps, arrays):
        p.grad = ember.tensor(a * 2)
    tps = None
    if HAVE_TORCH:
        tps = [torch.tensor(a, requires_grad=True) for a in arrays]
        for p, a in zip(tps, arrays):
            p.grad = torch.tensor(a * 2)
    return eps, tps


@needs_torch
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    eps, tps = _grad_pairs([(3, 4), (5,), ()])
    en = nn.utils.clip_grad_norm_(eps, max_norm, norm_type)
    tn = torch.nn.utils.clip_grad_norm_(tps, max_norm, norm_type)
    assert isinstance(en, ember.Tensor) and en.ndim == 0
    np.testing.assert_allclose(en.item(), tn.item(), rtol=1e-10)
    for p, q in zip(eps, tps):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10)


def test_clip_grad_norm_behaviour():
    eps, _ = _grad_pairs([(4,)])
    p = eps[0]
    before = np.linalg.norm(p.grad.numpy())
    total = nn.utils.clip_grad_norm_(p, 1.0)  # a single tensor is accepted
    assert total.item() == pytest.approx(before)
    assert np.linalg.norm(p.grad.numpy()) == pytest.approx(1.0, rel=1e-5)
    q = ember.zeros(3, requires_grad=True)
    assert nn.utils.clip_grad_norm_([q], 1.0).item() == 0.0  # no grads: norm 0
    q.grad = ember.tensor([float("nan"), 1.0, 2.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([q], 1.0, error_if_nonfinite=True)
    f = ember.zeros(3, requires_grad=True)
    f.grad = ember.tensor([3.0, 4.0, 0.0])
    t = nn.utils.clip_grad_norm_([f], 1.0)
    assert t.dtype == ember.float32 and f.grad.dtype == ember.float32


def test_clip_grad_value_and_vectors():
    eps, _ = _grad_pairs([(3, 4), (5,)])
    nn.utils.clip_grad_value_(eps, 0.5)
    for p in eps:
        assert np.abs(p.grad.numpy()).max() <= 0.5
    lin = nn.Linear(3, 2)
    vec = nn.utils.parameters_to_vector(lin.parameters())
    assert tuple(vec.shape) == (8,)
    np.testing.assert_array_equal(vec.detach().numpy()[:6], lin.weight.detach().numpy().ravel())
    nn.utils.vector_to_parameters(ember.arange(8, dtype=ember.float32), lin.parameters())
    np.testing.assert_array_equal(lin.bias.detach().numpy(), [6, 7])
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        nn.utils.vector_to_parameters([1.0], lin.parameters())


def test_pad_sequence():
    from ember.nn.utils.rnn import pad_sequence

    a, b, c = randn(3, 2), randn(1, 2, seed=1), randn(2, 2, seed=2)
    check_op(lambda m, a, b, c: m.nn.utils.rnn.pad_sequence([a, b, c]), a, b, c)
    check_op(lambda m, a, b, c: m.nn.utils.rnn.pad_sequence([a, b, c], batch_first=True,
                                                             padding_value=-1.0), a, b, c)
    out = pad_sequence([ember.tensor(a), ember.tensor(b)], batch_first=True, padding_side="left")
    np.testing.assert_allclose(out.numpy()[1, 2], b[0])
    np.testing.assert_array_equal(out.numpy()[1, :2], 0)


@needs_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_matches_torch(mode, padding_idx):
    w = randn(6, 3)
    cases = [(np.array([1, 2, 4, 5, 4, 3, 2, 0]), np.array([0, 2, 2, 5])),
             (np.array([[1, 2, 4], [5, 2, 3]]), None)]
    for idx, off in cases:
        ew = ember.tensor(w, requires_grad=True)
        tw = torch.tensor(w, requires_grad=True)
        eo = F.embedding_bag(ember.tensor(idx), ew, None if off is None else ember.tensor(off),
                             mode=mode, padding_idx=padding_idx)
        to = torch.nn.functional.embedding_bag(torch.tensor(idx), tw,
                                               None if off is None else torch.tensor(off),
                                               mode=mode, padding_idx=padding_idx)
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-12)
        v = randn(*tuple(to.shape), seed=2)
        eo.backward(ember.tensor(v))
        to.backward(torch.tensor(v))
        np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-12, atol=1e-15)


@needs_torch
def test_embedding_bag_module_and_weights():
    eb, tb = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2, max_norm=1.0), \
        torch.nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2, max_norm=1.0)
    assert repr(eb) == repr(tb) and repr(nn.EmbeddingBag(4, 2)) == repr(torch.nn.EmbeddingBag(4, 2))
    idx, off, psw = np.array([1, 3, 3, 7]), np.array([0, 1]), randn(4)
    w = randn(10, 3)
    ew = ember.tensor(w, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    e_psw, t_psw = ember.tensor(psw, requires_grad=True), torch.tensor(psw, requires_grad=True)
    eo = F.embedding_bag(ember.tensor(idx), ew, ember.tensor(off), mode="sum",
                         per_sample_weights=e_psw)
    to = torch.nn.functional.embedding_bag(torch.tensor(idx), tw, torch.tensor(off), mode="sum",
                                           per_sample_weights=t_psw)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-12)
    eo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(e_psw.grad.numpy(), t_psw.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        F.embedding_bag(ember.tensor(idx), ew, ember.tensor(off), per_sample_weights=e_psw)
    out = nn.EmbeddingBag(10, 3)(ember.tensor([[1, 2], [3, 4]]))
    assert tuple(out.shape) == (2, 3)


def test_pdist_and_channel_shuffle():
    check_op(lambda m, x: m.nn.functional.pdist(x), randn(5, 3))
    check_op(lambda m, x: m.nn.functional.pdist(x, p=1.0), randn(4, 2))
    check_op(lambda m, x: m.nn.functional.channel_shuffle(x, 2), randn(2, 6, 3))
    with pytest.raises(RuntimeError, match="divisible by groups"):
        F.channel_shuffle(ember.randn(1, 5, 2), 2)
