"""MultiheadAttention and the Transformer layers against PyTorch (float64, same weights);
autocast, GradScaler and compile."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn as enn

torch = pytest.importorskip("torch")

ATOL = 1e-6  # the tolerance for float64 parity; results agree to ~1e-14


def _copy(tm, em) -> None:
    """Load torch module ``tm``'s weights into ember module ``em`` (keys must match)."""
    t_sd = tm.state_dict()
    assert list(t_sd) == list(em.state_dict())
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t_sd.items()})


def _pair(t_cls, e_cls, *args, **kwargs):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = t_cls(*args, **kwargs).double()
        em = e_cls(*args, **kwargs).double()
    _copy(tm, em)
    return tm, em


def _close(e, t, atol=ATOL) -> None:
    if t is None:
        assert e is None
        return
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), atol=atol, rtol=0,
                               equal_nan=True)


def _grads_close(e_params, t_params) -> None:
    for (en, ep), (tn, tp) in zip(e_params, t_params):
        assert en == tn
        if tp.grad is None:
            assert ep.grad is None or not ep.grad.numpy().any(), en
            continue
        assert ep.grad is not None, f"no gradient for {en}"
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), atol=ATOL, rtol=0,
                                   err_msg=en)


def _run_both(tm, em, arrays, call, masks=()):
    """Run ``call(module, *tensors, *masks)`` on both; compare outputs and all gradients for a
    random cotangent on the first output."""
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    e_in = [ember.tensor(a, requires_grad=True) for a in arrays]
    t_masks = [None if m is None else torch.tensor(m) for m in masks]
    e_masks = [None if m is None else ember.tensor(m) for m in masks]
    t_out = call(tm, *t_in, *t_masks)
    e_out = call(em, *e_in, *e_masks)
    t_out = t_out if isinstance(t_out, tuple) else (t_out,)
    e_out = e_out if isinstance(e_out, tuple) else (e_out,)
    for e, t in zip(e_out, t_out):
        _close(e, t)
    g = np.random.default_rng(1).standard_normal(tuple(t_out[0].shape))
    t_out[0].backward(torch.tensor(g))
    e_out[0].backward(ember.tensor(g))
    for e, t in zip(e_in, t_in):
        _close(e.grad, t.grad)
    _grads_close(list(em.named_parameters()), list(tm.named_parameters()))
    return e_out, t_out


# ---------------------------------------------------------------------------------------------
# MultiheadAttention


MHA_CONFIGS = [
    dict(),
    dict(batch_first=True),
    dict(bias=False),
    dict(kdim=6, vdim=5),
    dict(add_bias_kv=True),
    dict(add_zero_attn=True),
    dict(add_bias_kv=True, add_zero_attn=True, batch_first=True),
]


@pytest.mark.parametrize("kw", MHA_CONFIGS)
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_parity_with_masks(kw, need_weights):
    tm, em = _pair(torch.nn.MultiheadAttention, enn.MultiheadAttention, 8, 2, **kw)
    rng = np.random.default_rng(0)
    N, L, S = 3, 4, 5
    kd, vd = kw.get("kdim", 8), kw.get("vdim", 8)
    bf = kw.get("batch_first", False)
    shape = (lambda n, s, e: (n, s, e)) if bf else (lambda n, s, e: (s, n, e))
    q, k, v = (rng.standard_normal(shape(N, L, 8)), rng.standard_normal(shape(N, S, kd)),
               rng.standard_normal(shape(N, S, vd)))
    kpm = np.zeros((N, S), bool)
    kpm[1, 3:] = True
    am = rng.standard_normal((L, S))
    _run_both(tm, em, [q, k, v],
              lambda m, q, k, v, kpm, am: m(q, k, v, key_padding_mask=kpm, attn_mask=am,
                                            need_weights=need_weights),
              masks=(kpm, am))


@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_self_attention_bool_and_3d_masks(batch_first):
    tm, em = _pair(torch.nn.MultiheadAttention, enn.MultiheadAttention, 8, 2,
                   batch_first=batch_first)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 8) if batch_first else (5, 3, 8))
    causal = np.triu(np.ones((5, 5), bool), 1)
    am3 = rng.standard_normal((3 * 2, 5, 5))
    for am in (causal, am3):
        for nw, avg in ((True, True), (True, False), (False, True)):
            tm.zero_grad()
            em.zero_grad()
            # self-attention: the same tensor as query, key and value
            _run_both(tm, em, [x], lambda m, x, am, nw=nw, avg=avg: m(
                x, x, x, attn_mask=am, need_weights=nw, average_attn_weights=avg), masks=(am,))


def test_mha_is_causal_float_key_padding_and_unbatched():
    tm, em = _pair(torch.nn.MultiheadAttention, enn.MultiheadAttention, 8, 4, batch_first=True)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 6, 8))
    causal = torch.nn.Transformer.generate_square_subsequent_mask(6).double().numpy()
    e_causal = enn.Transformer.generate_square_subsequent_mask(6).double().numpy()
    np.testing.assert_array_equal(causal, e_causal)
    _run_both(tm, em, [x], lambda m, x, am: m(x, x, x, attn_mask=am, is_causal=True,
                                              need_weights=False), masks=(causal,))
    kpm = np.zeros((2, 6))
    kpm[0, 4:] = -np.inf
    _run_both(tm, em, [x], lambda m, x, kpm: m(x, x, x, key_padding_mask=kpm), masks=(kpm,))
    # unbatched (L, E) input with a 1-D key padding mask
    x1 = rng.standard_normal((6, 8))
    kpm1 = np.array([False] * 5 + [True])
    for nw in (True, False):
        _run_both(tm, em, [x1], lambda m, x, kpm, nw=nw: m(x, x, x, key_padding_mask=kpm,
                                                           need_weights=nw), masks=(kpm1,))


def test_mha_dropout_in_training_only():
    m = enn.MultiheadAttention(8, 2, dropout=0.5)
    x = ember.randn(4, 2, 8)
    a, wa = m(x, x, x)
    b, wb = m(x, x, x)
    assert not np.allclose(wa.detach().numpy(), wb.detach().numpy())  # dropout differs
    m.eval()
    with ember.no_grad():
        a, wa = m(x, x, x)
        b, wb = m(x, x, x)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_allclose(wa.numpy().sum(-1), 1.0, atol=1e-6)


def test_mha_float32_stays_float32_and_init():
    m = enn.MultiheadAttention(16, 4)
    assert not m.in_proj_bias.detach().numpy().any()
    assert not m.out_proj.bias.detach().numpy().any()
    bound = math.sqrt(6 / (16 + 48))  # xavier_uniform on (3E, E)
    assert np.abs(m.in_proj_weight.detach().numpy()).max() <= bound
    x = ember.randn(5, 2, 16)
    out, w = m(x, x, x, need_weights=True)
    assert out.dtype == ember.float32 and w.dtype == ember.float32
    assert repr(m.out_proj).startswith("NonDynamicallyQuantizableLinear(")


def test_mha_errors():
    m = enn.MultiheadAttention(8, 2)
    x = ember.randn(4, 2, 8)
    with pytest.raises(AssertionError, match="divisible by num_heads"):
        enn.MultiheadAttention(8, 3)
    with pytest.raises(ValueError, match="greater than 0"):
        enn.MultiheadAttention(0, 2)
    with pytest.raises(AssertionError, match="expecting embedding dimension of 8, but got 6"):
        m(ember.randn(4, 2, 6), ember.randn(4, 2, 6), ember.randn(4, 2, 6))
    with pytest.raises(RuntimeError, match="2D attn_mask is"):
        m(x, x, x, attn_mask=ember.zeros(3, 3))
    with pytest.raises(RuntimeError, match="3D attn_mask is"):
        m(x, x, x, attn_mask=ember.zeros(3, 4, 4))
    with pytest.raises(AssertionError, match="key_padding_mask shape of"):
        m(x, x, x, key_padding_mask=ember.zeros(2, 3, dtype=ember.bool))
    with pytest.raises(AssertionError, match="only bool and floating"):
        m(x, x, x, key_padding_mask=ember.zeros(2, 4, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal"):
        m(x, x, x, is_causal=True)
    with pytest.raises(AssertionError, match="batched \\(3-D\\) `query`"):
        m(x, ember.randn(4, 8), ember.randn(4, 8))
    with pytest.raises(AssertionError, match="unbatched 2D or batched 3D"):
        m(ember.randn(8), ember.randn(8), ember.randn(8))


# ---------------------------------------------------------------------------------------------
# Transformer layers


LAYER_CONFIGS = [
    dict(),
    dict(batch_first=True, activation="gelu"),
    dict(norm_first=True),
    dict(norm_first=True, batch_first=True, bias=False),
    dict(activation=lambda x: x.tanh(), layer_norm_eps=1e-3),
]


@pytest.mark.parametrize("kw", LAYER_CONFIGS)
def test_encoder_layer_parity(kw):
    act = kw.get("activation")
    t_kw, e_kw = dict(kw), dict(kw)
    if callable(act):  # the same function for both, spelled per library
        t_kw["activation"] = torch.tanh
        e_kw["activation"] = ember.tanh
    torch.manual_seed(0)
    tm = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **t_kw).double().eval()
    em = enn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **e_kw).double().eval()
    _copy(tm, em)
    rng = np.random.default_rng(3)
    bf = kw.get("batch_first", False)
    x = rng.standard_normal((2, 5, 8) if bf else (5, 2, 8))
    kpm = np.zeros((2, 5), bool)
    kpm[1, 3:] = True
    mask = np.triu(np.full((5, 5), -np.inf), 1)
    _run_both(tm, em, [x], lambda m, x, mask, kpm: m(x, src_mask=mask, src_key_padding_mask=kpm),
              masks=(mask, kpm))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_parity_eval_with_masks(batch_first, norm_first):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, activation="gelu",
                                                   batch_first=batch_first, norm_first=norm_first)
        tm = torch.nn.TransformerEncoder(t_layer, 2, norm=torch.nn.LayerNorm(8)).double().eval()
        e_layer = enn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, activation="gelu",
                                              batch_first=batch_first, norm_first=norm_first)
        em = enn.TransformerEncoder(e_layer, 2, norm=enn.LayerNorm(8)).double().eval()
    _copy(tm, em)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 8) if batch_first else (5, 2, 8))
    kpm = np.zeros((2, 5), bool)
    kpm[1, 3:] = True
    mask = np.triu(np.full((5, 5), -np.inf), 1)
    # with gradients (PyTorch's reference path)
    _run_both(tm, em, [x], lambda m, x, mask, kpm: m(x, mask=mask, src_key_padding_mask=kpm),
              masks=(mask, kpm))
    _run_both(tm, em, [x], lambda m, x, kpm: m(x, src_key_padding_mask=kpm), masks=(kpm,))
    # inference: PyTorch's nested-tensor path zeroes the padded positions (batch-first,
    # post-norm only); ember reproduces what it returns
    with torch.no_grad(), ember.no_grad():
        t_out = tm(torch.tensor(x), src_key_padding_mask=torch.tensor(kpm))
        e_out = em(ember.tensor(x), src_key_padding_mask=ember.tensor(kpm))
        _close(e_out, t_out)
        t_out = tm(torch.tensor(x), mask=torch.tensor(mask), is_causal=True)
        e_out = em(ember.tensor(x), mask=ember.tensor(mask), is_causal=True)
        _close(e_out, t_out)


def test_encoder_nested_tensor_flag_and_warning():
    layer = enn.TransformerEncoderLayer(8, 2, 16)
    with pytest.warns(UserWarning, match="batch_first was not True"):
        enc = enn.TransformerEncoder(layer, 2)
    assert not enc.use_nested_tensor
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc = enn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        enc = enn.TransformerEncoder(enn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 3)
    assert enc.use_nested_tensor and len(enc.layers) == 3
    assert enc.layers[0].self_attn is not enc.layers[1].self_attn  # deep copies


def test_encoder_training_dropout_and_activation_errors():
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        enn.TransformerEncoderLayer(8, 2, activation="tanh")
    layer = enn.TransformerEncoderLayer(8, 2, 16, dropout=0.5, batch_first=True)
    x = ember.randn(2, 5, 8, requires_grad=True)
    a, b = layer(x), layer(x)
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    a.sum().backward()
    assert x.grad is not None and np.isfinite(x.grad.numpy()).all()
    assert enn.TransformerEncoderLayer(8, 2, activation="gelu").activation_relu_or_gelu == 2
    assert enn.TransformerEncoderLayer(8, 2, activation=enn.ReLU()).activation_relu_or_gelu == 1


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_and_transformer_parity(norm_first):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = torch.nn.Transformer(8, 2, 1, 2, 16, dropout=0.0, norm_first=norm_first).double()
        em = enn.Transformer(8, 2, 1, 2, 16, dropout=0.0, norm_first=norm_first).double()
    _copy(tm, em)
    rng = np.random.default_rng(5)
    src, tgt = rng.standard_normal((6, 2, 8)), rng.standard_normal((4, 2, 8))
    tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(4).double().numpy()
    skpm = np.zeros((2, 6), bool)
    skpm[0, 5:] = True
    _run_both(tm, em, [src, tgt],
              lambda m, s, t, tm_, kp: m(s, t, tgt_mask=tm_, src_key_padding_mask=kp,
                                         memory_key_padding_mask=kp),
              masks=(tgt_mask, skpm))


def test_transformer_errors_and_decoder_layer_alone():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = enn.Transformer(8, 2, 1, 1, 16, batch_first=True)
    with pytest.raises(RuntimeError, match="batch number of src and tgt must be equal"):
        model(ember.randn(2, 5, 8), ember.randn(3, 4, 8))
    with pytest.raises(RuntimeError, match="feature number of src and tgt"):
        model(ember.randn(2, 5, 8), ember.randn(2, 4, 6))
    layer = enn.TransformerDecoderLayer(8, 2, 16, batch_first=True)
    assert layer(ember.randn(2, 4, 8), ember.randn(2, 6, 8)).shape == (2, 4, 8)
    sd = list(layer.state_dict())
    t_sd = list(torch.nn.TransformerDecoderLayer(8, 2, 16).state_dict())
    assert sd == t_sd


# ---------------------------------------------------------------------------------------------
# autocast


def test_autocast_state_nesting_and_decorator():
    assert not ember.amp.autocast_mode.is_autocast_enabled("cpu")
    with ember.amp.autocast(device_type="cpu", dtype=ember.bfloat16) as ac:
        assert ember.amp.autocast_mode.is_autocast_enabled("cpu")
        assert ember.amp.autocast_mode.get_autocast_dtype("cpu") is ember.bfloat16
        with ember.amp.autocast("cpu", enabled=False):
            assert not ember.amp.autocast_mode.is_autocast_enabled("cpu")
        assert ember.amp.autocast_mode.is_autocast_enabled("cpu")
        assert ac.fast_dtype is ember.bfloat16
    assert not ember.amp.autocast_mode.is_autocast_enabled("cpu")
    assert not ember.amp.autocast_mode.state.active

    @ember.amp.autocast("cpu", dtype=ember.float16)
    def f():
        return ember.amp.autocast_mode.get_autocast_dtype("cpu")

    assert f() is ember.float16
    assert ember.amp.autocast_mode.get_autocast_dtype("cpu") is ember.bfloat16  # restored
    with pytest.warns(UserWarning, match="CPU autocast"):
        ac = ember.amp.autocast("cpu", dtype=ember.float64)
    with ac:
        assert not ember.amp.autocast_mode.is_autocast_enabled("cpu")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ember.amp.autocast("cuda")
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'xpu'"):
        ember.amp.autocast("xpu")
    with pytest.raises(ValueError, match="of type `str`"):
        ember.amp.autocast(ember.device("cpu"))


def test_autocast_hooks_cast_with_correct_gradients():
    lower, fp32 = ember.amp.autocast_mode.lower, ember.amp.autocast_mode.fp32
    x = ember.randn(4, 8, requires_grad=True)
    w = ember.randn(3, 8, requires_grad=True)
    d = ember.randn(3, 8, dtype=ember.float64)
    assert lower(x, w)[0] is x  # outside autocast: untouched
    with ember.amp.autocast("cpu", dtype=ember.bfloat16):
        xl, wl, dl, none = lower(x, w, d, None)
        assert xl.dtype is ember.bfloat16 and wl.dtype is ember.bfloat16
        assert dl is d and none is None  # float64 and None pass through
        y = ember.nn.functional.linear(xl.float(), wl.float())
        (up,) = fp32(xl)
        assert up.dtype is ember.float32
    y.sum().backward()
    assert x.grad.dtype is ember.float32 and w.grad.dtype is ember.float32
    # d/dx sum(x W^T) = column sums of W, rounded through bfloat16
    expected = w.detach().numpy().sum(0)
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(expected, (4, 8)), rtol=2e-2,
                               atol=2e-2)


# ---------------------------------------------------------------------------------------------
# GradScaler


def _scaler_setup(init_scale=4.0, growth_interval=2):
    p = enn.Parameter(ember.ones(3))
    opt = ember.optim.SGD([p], lr=0.1)
    return p, opt, ember.amp.GradScaler("cpu", init_scale=init_scale,
                                        growth_interval=growth_interval)


def test_grad_scaler_disabled_is_identity():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        s = ember.amp.GradScaler()  # 'cuda' without CUDA: disabled
    assert not s.is_enabled()
    s = ember.amp.GradScaler("cpu", enabled=False)
    p = enn.Parameter(ember.ones(3))
    opt = ember.optim.SGD([p], lr=0.1)
    loss = (p * 2).sum()
    assert s.scale(loss) is loss
    loss.backward()
    s.unscale_(opt)
    np.testing.assert_allclose(p.grad.numpy(), 2.0)
    s.step(opt)
    s.update()
    np.testing.assert_allclose(p.detach().numpy(), 0.8)
    assert s.get_scale() == 1.0 and s.state_dict() == {}
    s.load_state_dict({})  # disabled: ignored


def test_grad_scaler_scale_unscale_step_update_like_torch():
    p, opt, s = _scaler_setup()
    sl = s.scale((p * 2).sum())
    assert float(sl) == 24.0
    sl.backward()
    np.testing.assert_allclose(p.grad.numpy(), 8.0)
    s.unscale_(opt)
    np.testing.assert_allclose(p.grad.numpy(), 2.0)
    with pytest.raises(RuntimeError, match="already been called on this optimizer"):
        s.unscale_(opt)
    assert s.step(opt) is None  # SGD.step returns None
    np.testing.assert_allclose(p.detach().numpy(), 0.8)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        s.step(opt)
    with pytest.raises(RuntimeError, match="after step"):
        s.unscale_(opt)
    s.update()
    assert s.get_scale() == 4.0 and s.state_dict()["_growth_tracker"] == 1
    # a second clean step grows the scale (growth_interval=2)
    opt.zero_grad()
    s.scale((p * 2).sum()).backward()
    s.step(opt)
    s.update()
    assert s.get_scale() == 8.0 and s.state_dict()["_growth_tracker"] == 0
    with pytest.raises(AssertionError, match="No inf checks were recorded prior to update"):
        s.update()


def test_grad_scaler_skips_inf_and_backs_off():
    p, opt, s = _scaler_setup()
    for bad in (float("inf"), float("nan")):
        opt.zero_grad()
        before = p.detach().numpy().copy()
        scale = s.get_scale()
        s.scale((p * bad).sum()).backward()
        assert s.step(opt) is None
        np.testing.assert_array_equal(p.detach().numpy(), before)  # step skipped
        s.update()
        assert s.get_scale() == scale * 0.5
    s.update(new_scale=8.0)
    assert s.get_scale() == 8.0
    s.update(new_scale=ember.tensor(3.0))
    assert s.get_scale() == 3.0


def test_grad_scaler_misc_matches_torch():
    p, opt, s = _scaler_setup()
    out = s.scale([ember.ones(2), (ember.ones(1),)])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    np.testing.assert_allclose(out[0].numpy(), 4.0)
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable"):
        s.scale(3.0)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        s.step(opt, closure=lambda: 0)
    assert s.scale(ember.ones(2, dtype=ember.float16)).dtype is ember.float16
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        s.load_state_dict({})
    s2 = ember.amp.GradScaler("cpu")
    s2.load_state_dict({"scale": 2.0, "growth_factor": 3.0, "backoff_factor": 0.25,
                        "growth_interval": 7, "_growth_tracker": 5})
    assert s2.get_scale() == 2.0 and s2.get_growth_factor() == 3.0
    assert s2.state_dict()["_growth_tracker"] == 5
    # the same numbers as torch's scaler for the same sequence of steps
    tp = torch.nn.Parameter(torch.ones(3))
    topt = torch.optim.SGD([tp], lr=0.1)
    ts = torch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    p, opt, s = _scaler_setup()
    for bad in (1.0, float("inf"), 1.0, 1.0, 1.0):
        for sc, par, o in ((ts, tp, topt), (s, p, opt)):
            o.zero_grad()
            sc.scale((par * bad).sum()).backward()
            sc.step(o)
            sc.update()
        assert s.state_dict() == ts.state_dict()
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy())


# ---------------------------------------------------------------------------------------------
# compile


def test_compile_returns_working_module_and_function():
    from ember._compile import OptimizedModule, compile

    m = enn.Linear(2, 3)
    c = compile(m)
    assert isinstance(c, OptimizedModule) and c._orig_mod is m
    x = ember.randn(4, 2)
    np.testing.assert_array_equal(c(x).detach().numpy(), m(x).detach().numpy())
    assert list(c.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
    assert c.in_features == 2 and c.weight is m.weight
    c.eval()
    assert not m.training
    assert list(c.parameters()) == list(m.parameters())
    f = compile(lambda t: t + 1)
    assert float(f(ember.zeros(()))) == 1.0

    @compile(mode="max-autotune")
    def g(t):
        return t * 2

    assert g.__name__ == "g" and float(g(ember.ones(()))) == 2.0
    with pytest.raises(RuntimeError, match="Unrecognized mode=bad"):
        compile(m, mode="bad")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        compile(m, mode="default", options={})
    assert compile(m, disable=True) is m
