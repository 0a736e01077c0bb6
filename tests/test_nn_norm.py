"""Normalization layers and scaled dot-product attention against NumPy and PyTorch."""

import numpy as np
import pytest

import ember
import ember.nn  # noqa: F401
import ember.nn.functional as EF
from helpers import HAVE_TORCH, check, positive, randn

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="needs torch")


def F(m):
    return m.nn.functional




def _ln_ref(x, k, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    mu = x.mean(axes, keepdims=True)
    var = x.var(axes, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


# ---------------------------------------------------------------------------------------------
# layer / group / rms norm


@pytest.mark.parametrize("shape,norm", [((3, 5), (5,)), ((2, 3, 4), (3, 4)), ((6,), (6,)),
                                        ((2, 1, 4), (4,))])
def test_layer_norm(shape, norm):
    k = len(norm)
    check(lambda m, x, w, b: F(m).layer_norm(x, norm, w, b), randn(*shape), randn(*norm, seed=1),
             randn(*norm, seed=2), ref=lambda x, w, b: _ln_ref(x, k, w, b), gradgrad=True)
    check(lambda m, x: F(m).layer_norm(x, norm, eps=1e-2), randn(*shape),
             ref=lambda x: _ln_ref(x, k, eps=1e-2), gradgrad=True)


def test_layer_norm_constant_rows_and_errors():
    x = ember.ones(2, 4, requires_grad=True)
    y = EF.layer_norm(x, (4,))
    y.sum().backward()
    assert not y.detach().numpy().any() and np.isfinite(x.grad.numpy()).all()
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input with "
                                           r"shape \[\*, 5\], but got input of size\[3, 4\]"):
        EF.layer_norm(ember.randn(3, 4), (5,))
    with pytest.raises(RuntimeError, match=r"expected weight of shape \[4\]"):
        EF.layer_norm(ember.randn(3, 4), (4,), weight=ember.ones(3))


@pytest.mark.parametrize("shape,groups", [((2, 6, 3), 3), ((2, 4), 2), ((3, 4, 2, 2), 1),
                                          ((2, 4, 3), 4)])
def test_group_norm(shape, groups):
    C = shape[1]
    check(lambda m, x, w, b: F(m).group_norm(x, groups, w, b), randn(*shape), randn(C, seed=1),
             randn(C, seed=2), gradgrad=True)
    check(lambda m, x: F(m).group_norm(x, groups, eps=0.1), randn(*shape))
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        EF.group_norm(ember.randn(2, 6), 4)


@pytest.mark.parametrize("shape,norm", [((3, 5), (5,)), ((2, 3, 4), (3, 4))])
def test_rms_norm(shape, norm):
    k = len(norm)
    axes = tuple(range(len(shape) - k, len(shape)))

    def ref(x, w, eps=np.finfo(np.float64).eps):
        return x / np.sqrt((x * x).mean(axes, keepdims=True) + eps) * w

    check(lambda m, x, w: F(m).rms_norm(x, norm, w), randn(*shape), randn(*norm, seed=1),
             ref=ref, gradgrad=True)
    check(lambda m, x: F(m).rms_norm(x, norm, eps=0.5), randn(*shape),
             ref=lambda x: ref(x, 1.0, 0.5))


def test_rms_norm_default_eps_is_finfo_eps():
    x = ember.zeros(2, 3)
    assert not EF.rms_norm(x, (3,)).numpy().any()
    x = ember.tensor([[1e-4, 0.0, 0.0]])
    expected = 1e-4 / np.sqrt(1e-8 / 3 + np.finfo(np.float32).eps)
    np.testing.assert_allclose(EF.rms_norm(x, (3,)).numpy()[0, 0], expected, rtol=1e-5)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8])
def test_local_response_norm(size):
    check(lambda m, x: F(m).local_response_norm(x, size, alpha=0.3, beta=0.8, k=1.5),
             randn(2, 6, 3), gradgrad=size == 3)
    check(lambda m, x: F(m).local_response_norm(x, size), randn(2, 4, 2, 2))


@needs_torch
@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("LayerNorm", (5,), {}, (3, 5)),
    ("LayerNorm", ((3, 4),), {"eps": 1e-3, "bias": False}, (2, 3, 4)),
    ("LayerNorm", (4,), {"elementwise_affine": False}, (2, 4)),
    ("GroupNorm", (2, 6), {}, (3, 6, 4)),
    ("GroupNorm", (3, 6), {"affine": False}, (2, 6, 2, 2)),
    ("GroupNorm", (3, 6), {"bias": False}, (2, 6, 2)),
    ("RMSNorm", ([2, 3],), {}, (4, 2, 3)),
    ("RMSNorm", (3,), {"eps": 1e-3, "elementwise_affine": False}, (4, 3)),
    ("LocalResponseNorm", (3,), {"alpha": 0.1}, (2, 5, 3)),
])
def test_norm_modules_match_torch(name, args, kwargs, shape):
    import torch

    e_mod = getattr(ember.nn, name)(*args, **kwargs).double()
    t_mod = getattr(torch.nn, name)(*args, **kwargs).double()
    assert repr(e_mod) == repr(t_mod)
    t_sd = t_mod.state_dict()
    assert list(e_mod.state_dict()) == list(t_sd)
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for p in t_mod.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape))))
    e_mod.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t_mod.state_dict().items()})
    x = rng.standard_normal(shape)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eo, to = e_mod(ex), t_mod(tx)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-7, atol=1e-10)
    g = rng.standard_normal(shape)
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-7, atol=1e-10)
    for (n, ep), (_, tp) in zip(e_mod.named_parameters(), t_mod.named_parameters()):
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), rtol=1e-7, atol=1e-10,
                                   err_msg=n)


def test_layer_norm_float32_and_module_defaults():
    ln = ember.nn.LayerNorm(4)
    assert ln.weight.dtype == ember.float32 and (ln.weight.detach().numpy() == 1).all()
    assert not ln.bias.detach().numpy().any()
    assert ln(ember.randn(2, 4)).dtype == ember.float32
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        ember.nn.GroupNorm(4, 6)


# ---------------------------------------------------------------------------------------------
# batch norm


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 6), (2, 3, 4, 5)])
def test_batch_norm_functional_training(shape):
    C = shape[1]
    check(lambda m, x, w, b: F(m).batch_norm(x, None, None, w, b, training=True),
             randn(*shape), randn(C, seed=1), randn(C, seed=2), gradgrad=True)
    check(lambda m, x: F(m).batch_norm(x, None, None, training=True, eps=0.1), randn(*shape))


def test_batch_norm_functional_eval_and_running_update():
    x = randn(6, 3, 2)
    rm, rv = randn(3, seed=3), positive(3, seed=4)
    check(lambda m, x, w, b: F(m).batch_norm(x, m.tensor(rm), m.tensor(rv), w, b,
                                                training=False),
             x, randn(3, seed=1), randn(3, seed=2), gradgrad=True)
    erm, erv = ember.tensor(rm), ember.tensor(rv)
    alias = erm[:]  # a view: the update must be in place
    EF.batch_norm(ember.tensor(x), erm, erv, training=True, momentum=0.25)
    mean = x.mean((0, 2))
    var = x.var((0, 2), ddof=1)  # unbiased, as PyTorch
    np.testing.assert_allclose(erm.numpy(), 0.75 * rm + 0.25 * mean)
    np.testing.assert_allclose(erv.numpy(), 0.75 * rv + 0.25 * var)
    np.testing.assert_allclose(alias.numpy(), erm.numpy())


def test_batch_norm_errors():
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, "
                                         r"got input size torch.Size\(\[1, 3\]\)"):
        EF.batch_norm(ember.randn(1, 3), ember.zeros(3), ember.ones(3), training=True)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        EF.batch_norm(ember.randn(4, 3), ember.zeros(4), ember.ones(3))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input"):
        ember.nn.BatchNorm1d(3)(ember.randn(2, 3, 4, 4))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input"):
        ember.nn.BatchNorm2d(3)(ember.randn(2, 3, 4))
    with pytest.raises(ValueError, match=r"expected 5D input"):
        ember.nn.BatchNorm3d(3)(ember.randn(2, 3, 4))


@needs_torch
@pytest.mark.parametrize("name,shape", [("BatchNorm1d", (8, 3)), ("BatchNorm1d", (6, 3, 5)),
                                        ("BatchNorm2d", (4, 3, 2, 3)),
                                        ("BatchNorm3d", (2, 3, 2, 2, 3))])
@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
def test_batch_norm_modules_match_torch_over_steps(name, shape, momentum):
    """Several training steps (outputs, grads, running stats), then eval outputs."""
    import torch

    rng = np.random.default_rng(0)
    e_bn = getattr(ember.nn, name)(3, momentum=momentum).double()
    t_bn = getattr(torch.nn, name)(3, momentum=momentum).double()
    assert repr(e_bn) == repr(t_bn)
    with torch.no_grad():
        t_bn.weight.copy_(torch.tensor(rng.standard_normal(3)))
        t_bn.bias.copy_(torch.tensor(rng.standard_normal(3)))
    e_bn.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t_bn.state_dict().items()})
    for _ in range(4):
        x = rng.standard_normal(shape) * 2 + 1
        g = rng.standard_normal(shape)
        ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        eo, to = e_bn(ex), t_bn(tx)
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-7, atol=1e-9)
        eo.backward(ember.tensor(g))
        to.backward(torch.tensor(g))
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(e_bn.weight.grad.numpy(), t_bn.weight.grad.numpy(), rtol=1e-7)
    np.testing.assert_allclose(e_bn.bias.grad.numpy(), t_bn.bias.grad.numpy(), rtol=1e-7)
    e_sd, t_sd = e_bn.state_dict(), t_bn.state_dict()
    assert list(e_sd) == list(t_sd) == ["weight", "bias", "running_mean", "running_var",
                                        "num_batches_tracked"]
    for k in t_sd:
        np.testing.assert_allclose(e_sd[k].numpy(), t_sd[k].numpy(), rtol=1e-10, err_msg=k)
    assert e_sd["num_batches_tracked"].dtype == ember.int64
    assert e_sd["num_batches_tracked"].item() == 4
    e_bn.eval()
    t_bn.eval()
    x = rng.standard_normal(shape)
    np.testing.assert_allclose(e_bn(ember.tensor(x)).detach().numpy(),
                               t_bn(torch.tensor(x)).detach().numpy(), rtol=1e-7, atol=1e-10)


@needs_torch
def test_batch_norm_options_match_torch():
    import torch

    rng = np.random.default_rng(1)
    for kw in [{"affine": False}, {"track_running_stats": False}, {"bias": False},
               {"eps": 0.1, "momentum": 0.9}]:
        e_bn, t_bn = ember.nn.BatchNorm1d(4, **kw).double(), torch.nn.BatchNorm1d(4, **kw).double()
        assert repr(e_bn) == repr(t_bn)
        assert list(e_bn.state_dict()) == list(t_bn.state_dict())
        for training in [True, True, False]:
            e_bn.train(training)
            t_bn.train(training)
            x = rng.standard_normal((5, 4))
            np.testing.assert_allclose(e_bn(ember.tensor(x)).detach().numpy(),
                                       t_bn(torch.tensor(x)).detach().numpy(), rtol=1e-7,
                                       err_msg=str(kw))


def test_batch_norm_module_details():
    bn = ember.nn.BatchNorm2d(3)
    assert bn.weight.dtype == ember.float32 and bn.running_mean.dtype == ember.float32
    out = bn(ember.randn(4, 3, 2, 2) * 3 + 2)
    assert out.dtype == ember.float32
    assert not (bn.running_mean.numpy() == 0).all()
    bn.reset_running_stats()
    assert not bn.running_mean.numpy().any() and (bn.running_var.numpy() == 1).all()
    assert bn.num_batches_tracked.item() == 0
    # old checkpoints without num_batches_tracked still load
    sd = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
    sd = type(bn.state_dict())(sd)
    sd._metadata = {"": {"version": 1}}
    bn.load_state_dict(sd)
    # eval mode without running stats uses the batch statistics
    bn2 = ember.nn.BatchNorm1d(2, track_running_stats=False).eval()
    y = bn2(ember.tensor([[1.0, 2.0], [3.0, 6.0]]))
    np.testing.assert_allclose(y.detach().numpy(), [[-1, -1], [1, 1]], atol=1e-4)


# ---------------------------------------------------------------------------------------------
# scaled dot-product attention


def _sdpa_ref(q, k, v, mask=None, causal=False, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (scale if scale is not None else 1 / np.sqrt(q.shape[-1]))
    L, S = s.shape[-2:]
    if causal:
        mask = np.tril(np.ones((L, S), bool))
    if mask is not None and mask.dtype == bool:
        s = np.where(mask, s, -np.inf)
    elif mask is not None:
        s = s + mask
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(s - m)
    den = e.sum(-1, keepdims=True)
    return (e / np.where(den == 0, 1, den)) @ v


Q, K, V = randn(2, 3, 4, 5), randn(2, 3, 6, 5, seed=1), randn(2, 3, 6, 7, seed=2)


def test_sdpa_plain():
    check(lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v), Q, K, V,
             ref=_sdpa_ref, gradgrad=True)


@pytest.mark.parametrize("L,S", [(4, 6), (5, 5), (6, 4)])
def test_sdpa_causal_and_scale(L, S):
    q, k, v = randn(2, L, 3), randn(2, S, 3, seed=1), randn(2, S, 2, seed=2)
    check(lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                  scale=0.7),
             q, k, v, ref=lambda q, k, v: _sdpa_ref(q, k, v, causal=True, scale=0.7))


def test_sdpa_bool_mask_with_fully_masked_row():
    mask = np.random.default_rng(0).random((4, 6)) > 0.4
    mask[1] = False  # nothing to attend: PyTorch returns zeros (and zero gradients)
    check(lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v,
                                                                  attn_mask=m.tensor(mask)),
             Q, K, V, ref=lambda q, k, v: _sdpa_ref(q, k, v, mask), gradgrad=True)
    out = EF.scaled_dot_product_attention(ember.tensor(Q), ember.tensor(K), ember.tensor(V),
                                          attn_mask=ember.tensor(mask))
    assert not out.numpy()[:, :, 1].any()


def test_sdpa_float_mask_gets_gradient():
    check(lambda m, q, k, v, msk: F(m).scaled_dot_product_attention(q, k, v, attn_mask=msk),
             Q, K, V, randn(3, 4, 6, seed=5), ref=lambda q, k, v, msk: _sdpa_ref(q, k, v, msk))
    big = np.where(np.random.default_rng(2).random((4, 6)) > 0.5, 0.0, -np.inf)
    big[:, 0] = 0.0
    check(lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v,
                                                                  attn_mask=m.tensor(big)),
             Q, K, V, ref=lambda q, k, v: _sdpa_ref(q, k, v, big))


def test_sdpa_broadcast_batch_and_heads():
    check(lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v),
             randn(2, 1, 4, 5), randn(1, 3, 6, 5, seed=1), randn(3, 6, 7, seed=2),
             ref=_sdpa_ref)
    check(lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v),
             randn(4, 5), randn(6, 5, seed=1), randn(6, 2, seed=2), ref=_sdpa_ref)


def test_sdpa_grouped_query_attention():
    q, k, v = randn(2, 6, 4, 5), randn(2, 2, 6, 5, seed=1), randn(2, 2, 6, 3, seed=2)
    ref = lambda q, k, v: _sdpa_ref(q, np.repeat(k, 3, axis=1), np.repeat(v, 3, axis=1))
    check(lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v, enable_gqa=True),
             q, k, v, ref=ref, gradgrad=True)
    with pytest.raises(RuntimeError, match="must be a multiple of the key/value heads"):
        EF.scaled_dot_product_attention(ember.randn(1, 5, 2, 3), ember.randn(1, 2, 2, 3),
                                        ember.randn(1, 2, 2, 3), enable_gqa=True)
    with pytest.raises(RuntimeError, match="enable_gqa=True"):
        EF.scaled_dot_product_attention(ember.randn(1, 6, 2, 3), ember.randn(1, 2, 2, 3),
                                        ember.randn(1, 2, 2, 3))


def test_sdpa_float32_large_scores_and_errors():
    q = ember.randn(2, 4, 8) * 100
    out = EF.scaled_dot_product_attention(q, q, ember.randn(2, 4, 8), is_causal=True)
    assert out.dtype == ember.float32 and np.isfinite(out.numpy()).all()
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when "
                                           "is_causal=True"):
        EF.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones(4, 4, dtype=ember.bool),
                                        is_causal=True)
    with pytest.raises(RuntimeError, match="must agree in E"):
        EF.scaled_dot_product_attention(ember.randn(2, 4), ember.randn(3, 5), ember.randn(3, 5))
    with pytest.raises(RuntimeError, match="does not broadcast"):
        EF.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones(3, 4, dtype=ember.bool))


def test_sdpa_dropout():
    ember.manual_seed(0)
    q, k = ember.randn(1, 2, 64, 8), ember.randn(1, 2, 64, 8)
    v = ember.ones(1, 2, 64, 8, requires_grad=True)
    out = EF.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    # rows of attention weights sum to 1 on average after inverted dropout
    assert abs(out.detach().numpy().mean() - 1.0) < 0.1
    assert not np.allclose(out.detach().numpy(), 1.0)
    out.sum().backward()
    assert v.grad is not None and np.isfinite(v.grad.numpy()).all()
    np.testing.assert_allclose(v.grad.numpy().sum(), out.detach().numpy().sum() / 1.0 * 1.0,
                               rtol=1e-4)
    # dropout_p=0 is deterministic
    a = EF.scaled_dot_product_attention(q, k, v, dropout_p=0.0)
    b = EF.scaled_dot_product_attention(q, k, v)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_instance_norm():
    check(lambda m, x, w, b: F(m).instance_norm(x, weight=w, bias=b), randn(2, 3, 4, 2),
          randn(3, seed=1), randn(3, seed=2))
    if HAVE_TORCH:
        import torch

        x = randn(2, 3, 5)
        erm, erv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
        trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
        EF.instance_norm(ember.tensor(x), erm, erv, momentum=0.3)
        torch.nn.functional.instance_norm(torch.tensor(x), trm, trv, momentum=0.3)
        np.testing.assert_allclose(erm.numpy(), trm.numpy(), atol=1e-12)
        np.testing.assert_allclose(erv.numpy(), trv.numpy(), atol=1e-12)


@pytest.mark.parametrize("shape,k", [((16, 64, 128), 1), ((5, 3, 4, 6), 2), ((7,), 1)])
def test_layer_norm_float32_rows_path_matches_float64_and_torch(shape, k):
    """float32 C-ordered inputs take the rows path (ops/nn/normalization.py: row means by BLAS);
    forward and gradients agree with a float64 computation to float32 rounding and with
    PyTorch."""
    from ember.ops.nn import normalization as N

    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    xhat, rstd, _ = N._norm_stats_rows(x, k, 1e-5)
    axes = tuple(range(x.ndim - k, x.ndim))
    ref_hat, ref_rstd = N._norm_stats(x.astype(np.float64), axes, 1e-5, np)
    assert xhat.dtype == rstd.dtype == np.float32 and rstd.shape == ref_rstd.shape
    np.testing.assert_allclose(xhat, ref_hat, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(rstd, ref_rstd, rtol=1e-6)
    g = rng.standard_normal(shape).astype(np.float32)
    n = int(np.prod(shape[x.ndim - k:]))
    gx = N._norm_input_grad_rows(g, xhat, rstd, n)
    ref_gx = N._norm_input_grad(g.astype(np.float64), ref_hat, ref_rstd, axes, n)
    np.testing.assert_allclose(gx, ref_gx, rtol=1e-4, atol=1e-5)
    w = ember.tensor(rng.standard_normal(shape[x.ndim - k:]).astype(np.float32), requires_grad=True)
    b = ember.tensor(rng.standard_normal(shape[x.ndim - k:]).astype(np.float32), requires_grad=True)
    xt = ember.tensor(x, requires_grad=True)
    y = ember.nn.functional.layer_norm(xt, shape[x.ndim - k:], w, b)
    (y * ember.tensor(g)).sum().backward()
    assert y.dtype == ember.float32
    if HAVE_TORCH:
        import torch

        tx, tw, tb = (torch.tensor(a.detach().numpy(), requires_grad=True) for a in (xt, w, b))
        ty = torch.nn.functional.layer_norm(tx, shape[x.ndim - k:], tw, tb)
        (ty * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
        for a, t in ((xt, tx), (w, tw), (b, tb)):
            np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch not installed")
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("params", ["float32", "low"])
@pytest.mark.parametrize("norm", ["layer", "group", "batch_train", "batch_eval", "rms"])
def test_norms_on_half_inputs_compute_in_float32_and_return_the_input_dtype(dtype, params, norm):
    """PyTorch's norms take a float16/bfloat16 input with float32 (or equal) parameters, compute
    in float32 and return the input's dtype; gradients come back in each tensor's own dtype.
    Values: ember's outputs and gradients are at least as close to a float64 computation as
    PyTorch's (PyTorch's composite rms_norm rounds intermediates to bfloat16, ember does not)."""
    import torch

    x_np = np.random.default_rng(3).standard_normal((6, 8, 5)).astype(np.float32)

    def run(m, kind):
        m.manual_seed(0)
        mod = {"layer": lambda: m.nn.LayerNorm(5), "group": lambda: m.nn.GroupNorm(2, 8),
               "batch_train": lambda: m.nn.BatchNorm1d(8),
               "batch_eval": lambda: m.nn.BatchNorm1d(8), "rms": lambda: m.nn.RMSNorm(5)}[norm]()
        if norm == "rms":
            mod.eps = float(np.finfo(np.float16).eps) if dtype == "float16" else 0.0078125
        with m.no_grad():
            for i, p in enumerate(mod.parameters()):
                p.copy_(m.tensor(np.linspace(0.5, 1.5, p.numel()).astype(np.float32) + i))
            if norm == "batch_eval":
                mod.running_mean.copy_(m.tensor(np.linspace(-0.2, 0.2, 8).astype(np.float32)))
                mod.running_var.copy_(m.tensor(np.linspace(0.5, 2.0, 8).astype(np.float32)))
        if norm == "batch_eval":
            mod.eval()
        low = getattr(m, dtype)
        if kind == "float64":
            xr = m.tensor(x_np).to(low).double()
            mod = mod.double() if params == "float32" else mod.to(low).double()
        else:
            xr = m.tensor(x_np).to(low)
            if params == "low":
                mod = mod.to(low)
        x = xr.detach().requires_grad_(True)
        y = mod(x)
        (y.double() * m.tensor(x_np).double()).sum().backward()
        return y, x.grad, [p.grad for p in mod.parameters()], mod

    ye, gxe, gpe, me = run(ember, "low")
    yt, gxt, gpt, mt = run(torch, "low")
    yr, gxr, gpr, _ = run(torch, "float64")
    assert str(ye.dtype) == str(yt.dtype) == f"torch.{dtype}"
    assert str(gxe.dtype) == str(gxt.dtype)
    for a, b in zip(gpe, gpt):
        assert str(a.dtype) == str(b.dtype)

    def close(ours, theirs, ref, tol):
        ours, theirs, ref = (v.detach().double().numpy() for v in (ours, theirs, ref))
        scale = np.abs(ref).max() + 1e-12
        assert np.abs(ours - ref).max() / scale <= max(1.5 * np.abs(theirs - ref).max() / scale,
                                                        tol)

    close(ye, yt, yr, 1e-2)
    close(gxe, gxt, gxr, 2e-2)
    for a, b, r in zip(gpe, gpt, gpr):
        close(a, b, r, 2e-2)
    if norm == "batch_train":
        assert str(me.running_mean.dtype) == str(mt.running_mean.dtype)
        np.testing.assert_allclose(me.running_mean.float().numpy(),
                                   mt.running_mean.float().numpy(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("fn", ["layer", "group", "batch"])
def test_half_input_with_mixed_parameter_dtypes_raises_as_pytorch(fn):
    """A bfloat16 input takes parameters all bfloat16 or all float32; a mix raises (PyTorch:
    "mixed dtype (CPU): expect parameter to have scalar type of Float")."""
    def call(m, x, w, b):
        if fn == "layer":
            return m.nn.functional.layer_norm(x, (8,), w, b)
        if fn == "group":
            return m.nn.functional.group_norm(x, 2, w, b)
        return m.nn.functional.batch_norm(x, m.zeros(8), m.ones(8), w, b, training=True)

    for m in [ember] + ([__import__("torch")] if HAVE_TORCH else []):
        x = m.randn(4, 8).to(m.bfloat16)
        with pytest.raises(RuntimeError, match="mixed dtype"):
            call(m, x, m.ones(8), m.zeros(8).to(m.bfloat16))
