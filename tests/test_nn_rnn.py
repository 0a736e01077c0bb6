"""The RNN family (ember/nn/modules/rnn.py, ember/ops/nn/recurrent.py, ember/nn/utils/rnn_packing.py):
NumPy references, gradcheck / gradgradcheck, PyTorch parity of outputs, final states and every
parameter gradient, state-dict interchange, packed sequences, dropout, long sequences, errors."""

import time
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.utils import rnn_packing as P
from ember.ops.nn import recurrent as R
from helpers import HAVE_TORCH, check_op

if HAVE_TORCH:
    import torch
    import torch.nn.utils.rnn as TP

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="parity test needs torch")

I, H, T, B = 3, 4, 5, 3


def _rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------------
# NumPy references (one layer, one direction)


def _sig(x):
    return 1 / (1 + np.exp(-x))


def np_layer(kind, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse=False, relu=False):
    """out (T, B, H), h_n, c_n of one layer over a padded (T, B, I) sequence."""
    b_ih = 0 if b_ih is None else b_ih
    b_hh = 0 if b_hh is None else b_hh
    h, c = h0, c0
    outs = [None] * x.shape[0]
    for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        gi = x[t] @ w_ih.T + b_ih
        gh = h @ w_hh.T + b_hh
        if kind == "rnn":
            a = gi + gh
            h = np.maximum(a, 0) if relu else np.tanh(a)
        elif kind == "lstm":
            i, f, g, o = np.split(gi + gh, 4, axis=1)
            c = _sig(f) * c + _sig(i) * np.tanh(g)
            h = _sig(o) * np.tanh(c)
        else:
            ir, iz, in_ = np.split(gi, 3, axis=1)
            hr, hz, hn = np.split(gh, 3, axis=1)
            r, z = _sig(ir + hr), _sig(iz + hz)
            n = np.tanh(in_ + r * hn)
            h = (1 - z) * n + z * h
        outs[t] = h
    return np.stack(outs), h, c


def _params(kind, rng, in_size=I, hidden=H, bias=True, scale=0.6):
    g = {"lstm": 4, "gru": 3}.get(kind, 1) * hidden
    ps = [rng.standard_normal((g, in_size)) * scale, rng.standard_normal((g, hidden)) * scale]
    if bias:
        ps += [rng.standard_normal(g) * scale, rng.standard_normal(g) * scale]
    return ps


# ---------------------------------------------------------------------------------------------
# the functional ops through check_op: NumPy reference, float32, gradcheck, gradgradcheck, torch


def _fns(kind, relu=False, bias=True):
    name = {"lstm": "lstm", "gru": "gru"}.get(kind, "rnn_relu" if relu else "rnn_tanh")

    def fn(m, x, h0, c0, *ps):
        mod = R if m is ember else m
        params = list(ps)
        if kind == "lstm":
            return getattr(mod, name)(x, (h0, c0), params, bias, 1, 0.0, False, False, False)
        out, h = getattr(mod, name)(x, h0, params, bias, 1, 0.0, False, False, False)
        return out, h

    def ref(x, h0, c0, *ps):
        ps = list(ps) + [None, None] * (not bias)
        out, h, c = np_layer(kind, x, h0[0], c0[0], *ps, relu=relu)
        return (out, h[None], c[None]) if kind == "lstm" else (out, h[None])

    return fn, ref


@pytest.mark.parametrize("kind,relu", [("rnn", False), ("rnn", True), ("lstm", False),
                                       ("gru", False)])
@pytest.mark.parametrize("bias", [True, False])
def test_sequence_op_check_op(kind, relu, bias):
    rng = _rng(1)
    hid = 3
    x = rng.standard_normal((3, 2, 2))
    h0 = rng.standard_normal((1, 2, hid)) * 0.5
    c0 = rng.standard_normal((1, 2, hid)) * 0.5
    fn, ref = _fns(kind, relu, bias)
    # double backward (the recompute path) is slow to check numerically: once per kind
    check_op(fn, x, h0, c0, *_params(kind, rng, 2, hid, bias=bias), ref=ref, gradgrad=bias,
             atol=1e-10, rtol=1e-7, grad_atol=1e-6, grad_rtol=1e-4)


def _cell_fn(name):
    def fn(m, x, h, c, *ps):
        mod = R if m is ember else m
        if name == "lstm_cell":
            return getattr(mod, name)(x, (h, c), *ps)
        return getattr(mod, name)(x, h, *ps)

    return fn


@pytest.mark.parametrize("name", ["rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell"])
def test_cell_ops_check_op(name):
    rng = _rng(2)
    kind = {"lstm_cell": "lstm", "gru_cell": "gru"}.get(name, "rnn")
    x, h, c = rng.standard_normal((2, I)), rng.standard_normal((2, H)), rng.standard_normal((2, H))
    ps = _params(kind, rng)

    def ref(x, h, c, *ps):
        out, hn, cn = np_layer(kind, x[None], h, c, *ps, relu=name == "rnn_relu_cell")
        return (hn, cn) if kind == "lstm" else hn

    check_op(_cell_fn(name), x, h, c, *ps, ref=ref, gradgrad=True, atol=1e-10, rtol=1e-7,
             grad_atol=1e-6, grad_rtol=1e-4)


def test_relu_kink_matches_pytorch():
    """relu'(0) = 0 at an exactly-zero pre-activation, as in PyTorch."""
    w_ih = np.zeros((H, I))
    w_hh = np.eye(H)
    x = np.zeros((2, 1, I))
    h0 = np.array([[[0.0, 1.0, -1.0, 0.0]]])
    xe = ember.tensor(x, requires_grad=True)
    he = ember.tensor(h0, requires_grad=True)
    out, hn = R.rnn_relu(xe, he, [ember.tensor(w_ih), ember.tensor(w_hh)], False, 1, 0.0,
                         False, False, False)
    out.sum().backward()
    np.testing.assert_array_equal(he.grad.numpy(), [[[0.0, 2.0, 0.0, 0.0]]])


# ---------------------------------------------------------------------------------------------
# modules vs PyTorch


MODES = {
    "RNN": ("RNN", {}),
    "RNN_relu": ("RNN", {"nonlinearity": "relu"}),
    "LSTM": ("LSTM", {}),
    "LSTM_proj": ("LSTM", {"proj_size": 3}),
    "GRU": ("GRU", {}),
}
CONFIGS = [
    {},
    {"num_layers": 2, "bidirectional": True},
    {"batch_first": True},
    {"bias": False, "num_layers": 2},
    {"num_layers": 2, "batch_first": True, "bidirectional": True, "bias": False},
]


def _pair(mode, **kw):
    cls, extra = MODES[mode]
    tm = getattr(torch.nn, cls)(I, H, **extra, **kw).double()
    em = getattr(nn, cls)(I, H, **extra, **kw).double()
    res = em.load_state_dict({k: ember.tensor(v.detach().numpy())
                              for k, v in tm.state_dict().items()})
    assert not res.missing_keys and not res.unexpected_keys
    return tm, em


def _state_shapes(mode, kw, batch):
    cls, extra = MODES[mode]
    n = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    hs = (n, batch, extra.get("proj_size") or H)
    return [hs, (n, batch, H)] if cls == "LSTM" else [hs]


def _flat(x):
    if isinstance(x, tuple | list) and not hasattr(x, "batch_sizes"):  # PackedSequence: a leaf
        return [t for item in x for t in _flat(item)]
    return [x]


def _compare_run(tm, em, t_args, e_args, leaves_t, leaves_e, seed=0, tol=1e-6):
    """Same forward on both, outputs equal; a random cotangent; all input and parameter grads
    equal."""
    t_out, e_out = _flat(tm(*t_args)), _flat(em(*e_args))
    assert len(t_out) == len(e_out)
    rng = _rng(seed)
    t_loss, e_loss = 0, 0
    for a, b in zip(t_out, e_out):
        if isinstance(a, TP.PackedSequence):
            assert isinstance(b, P.PackedSequence)
            np.testing.assert_array_equal(b.batch_sizes.numpy(), a.batch_sizes.numpy())
            a, b = a.data, b.data
        assert tuple(a.shape) == tuple(b.shape)
        assert str(a.dtype) == str(b.dtype)
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), atol=tol, rtol=tol)
        v = rng.standard_normal(tuple(a.shape))
        t_loss = t_loss + (a * torch.tensor(v)).sum()
        e_loss = e_loss + (b * ember.tensor(v)).sum()
    t_loss.backward()
    e_loss.backward()
    for a, b in zip(leaves_t, leaves_e):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), atol=tol, rtol=tol)
    named_t = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        assert p.grad is not None, name
        np.testing.assert_allclose(p.grad.numpy(), named_t[name].grad.numpy(), atol=tol, rtol=tol,
                                   err_msg=name)


@needs_torch
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("cfg", range(len(CONFIGS)))
@pytest.mark.parametrize("given_state", [False, True])
def test_module_parity(mode, cfg, given_state):
    kw = CONFIGS[cfg]
    tm, em = _pair(mode, **kw)
    rng = _rng(cfg)
    shape = (B, T, I) if kw.get("batch_first") else (T, B, I)
    x = rng.standard_normal(shape)
    xt, xe = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    leaves_t, leaves_e = [xt], [xe]
    t_args, e_args = [xt], [xe]
    if given_state:
        st = [rng.standard_normal(s) for s in _state_shapes(mode, kw, B)]
        ts = [torch.tensor(s, requires_grad=True) for s in st]
        es = [ember.tensor(s, requires_grad=True) for s in st]
        leaves_t += ts
        leaves_e += es
        t_args.append(tuple(ts) if len(ts) == 2 else ts[0])
        e_args.append(tuple(es) if len(es) == 2 else es[0])
    _compare_run(tm, em, t_args, e_args, leaves_t, leaves_e, seed=cfg)


@needs_torch
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("given_state", [False, True])
def test_module_unbatched_parity(mode, batch_first, given_state):
    tm, em = _pair(mode, num_layers=2, bidirectional=True, batch_first=batch_first)
    rng = _rng(3)
    x = rng.standard_normal((T, I))
    xt, xe = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    leaves_t, leaves_e, t_args, e_args = [xt], [xe], [xt], [xe]
    if given_state:
        st = [rng.standard_normal(s[:1] + s[2:])
              for s in _state_shapes(mode, {"num_layers": 2, "bidirectional": True}, 1)]
        ts = [torch.tensor(s, requires_grad=True) for s in st]
        es = [ember.tensor(s, requires_grad=True) for s in st]
        leaves_t += ts
        leaves_e += es
        t_args.append(tuple(ts) if len(ts) == 2 else ts[0])
        e_args.append(tuple(es) if len(es) == 2 else es[0])
    _compare_run(tm, em, t_args, e_args, leaves_t, leaves_e)
    out = em(xe)[0]
    assert tuple(out.shape) == (T, 2 * (3 if mode == "LSTM_proj" else H))


@needs_torch
@pytest.mark.parametrize("cls,kw", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}),
                                    ("RNNCell", {"bias": False}), ("LSTMCell", {}),
                                    ("LSTMCell", {"bias": False}), ("GRUCell", {}),
                                    ("GRUCell", {"bias": False})])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("given_state", [False, True])
def test_cell_parity(cls, kw, batched, given_state):
    tm = getattr(torch.nn, cls)(I, H, **kw).double()
    em = getattr(nn, cls)(I, H, **kw).double()
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    rng = _rng(4)
    lead = (B,) if batched else ()
    x = rng.standard_normal(lead + (I,))
    xt, xe = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    leaves_t, leaves_e, t_args, e_args = [xt], [xe], [xt], [xe]
    if given_state:
        n = 2 if cls == "LSTMCell" else 1
        st = [rng.standard_normal(lead + (H,)) for _ in range(n)]
        ts = [torch.tensor(s, requires_grad=True) for s in st]
        es = [ember.tensor(s, requires_grad=True) for s in st]
        leaves_t += ts
        leaves_e += es
        t_args.append(tuple(ts) if n == 2 else ts[0])
        e_args.append(tuple(es) if n == 2 else es[0])
    _compare_run(tm, em, t_args, e_args, leaves_t, leaves_e)


@needs_torch
def test_cell_loop_matches_lstm_module():
    """Stepping an LSTMCell with the LSTM's layer-0 weights reproduces the LSTM's output."""
    lstm = nn.LSTM(I, H).double()
    cell = nn.LSTMCell(I, H).double()
    cell.load_state_dict({k[:-3]: v for k, v in lstm.state_dict().items()})
    x = ember.tensor(_rng(5).standard_normal((T, B, I)))
    out, (hn, cn) = lstm(x)
    h = c = ember.zeros(B, H, dtype=ember.float64)
    for t in range(T):
        h, c = cell(x[t], (h, c))
        np.testing.assert_allclose(h.detach().numpy(), out[t].detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(c.detach().numpy(), cn[0].detach().numpy(), atol=1e-12)


# ---------------------------------------------------------------------------------------------
# parameters, state dicts, init, repr


@needs_torch
@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("cfg", range(len(CONFIGS)))
def test_state_dict_interchange(mode, cfg):
    kw = CONFIGS[cfg]
    cls, extra = MODES[mode]
    tm = getattr(torch.nn, cls)(I, H, **extra, **kw)
    em = getattr(nn, cls)(I, H, **extra, **kw)
    t_sd, e_sd = tm.state_dict(), em.state_dict()
    assert list(t_sd) == list(e_sd)
    for k in t_sd:
        assert tuple(t_sd[k].shape) == tuple(e_sd[k].shape), k
        assert e_sd[k].dtype == ember.float32
    assert em._flat_weights_names == tm._flat_weights_names
    assert em._all_weights == tm._all_weights
    assert [[tuple(p.shape) for p in g] for g in em.all_weights] == \
        [[tuple(p.shape) for p in g] for g in tm.all_weights]
    # ember -> torch
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in e_sd.items()})
    x = _rng(6).standard_normal((B, T, I) if kw.get("batch_first") else (T, B, I))
    xf = x.astype(np.float32)
    t_out = _flat(tm(torch.tensor(xf)))
    e_out = _flat(em(ember.tensor(xf)))
    for a, b in zip(t_out, e_out):
        assert b.dtype == ember.float32
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), atol=2e-5, rtol=1e-4)


@needs_torch
@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("bias", [True, False])
def test_cell_state_dict_keys(cls, bias):
    t_sd = getattr(torch.nn, cls)(I, H, bias=bias).state_dict()
    e_sd = getattr(nn, cls)(I, H, bias=bias).state_dict()
    assert list(t_sd) == list(e_sd)
    assert all(tuple(t_sd[k].shape) == tuple(e_sd[k].shape) for k in t_sd)


@pytest.mark.parametrize("make", [lambda: nn.LSTM(3, 16, 2, bidirectional=True, proj_size=5),
                                  lambda: nn.GRU(3, 16), lambda: nn.RNN(3, 16, bias=False),
                                  lambda: nn.LSTMCell(3, 16), lambda: nn.GRUCell(3, 16)])
def test_default_init_is_uniform(make):
    m = make()
    bound = 1 / np.sqrt(16)
    vals = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert vals.min() >= -bound and vals.max() <= bound
    assert abs(vals.std() - bound / np.sqrt(3)) < 0.1 * bound  # U(-b, b) has std b / sqrt(3)
    assert all(p.requires_grad for p in m.parameters())


@needs_torch
@pytest.mark.parametrize("make", [
    lambda nn: nn.LSTM(3, 4), lambda nn: nn.LSTM(3, 4, 2, bias=False, batch_first=True,
                                                 dropout=0.5, bidirectional=True, proj_size=2),
    lambda nn: nn.RNN(3, 4, nonlinearity="relu"), lambda nn: nn.RNN(3, 4, 2, "relu", False),
    lambda nn: nn.GRU(3, 4, num_layers=3, dropout=0.25), lambda nn: nn.RNNCell(2, 3, False, "relu"),
    lambda nn: nn.GRUCell(3, 4), lambda nn: nn.LSTMCell(3, 4, bias=False)])
def test_repr_matches_pytorch(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert repr(make(nn)) == repr(make(torch.nn))


def test_module_housekeeping():
    m = nn.LSTM(3, 4, 2)
    assert m.flatten_parameters() is None
    assert len(m.all_weights) == 2 and len(m.all_weights[0]) == 4
    assert m.all_weights[1][0] is m.weight_ih_l1
    assert isinstance(m, nn.RNNBase) and isinstance(nn.GRUCell(2, 3), nn.RNNCellBase)
    # converting the module in place keeps the forward working in the new dtype
    m.double()
    out, (h, c) = m(ember.randn(2, 1, 3, dtype=ember.float64))
    assert out.dtype == h.dtype == c.dtype == ember.float64
    # replacing a parameter is seen by the next forward
    m.weight_hh_l1 = nn.Parameter(ember.zeros(16, 4, dtype=ember.float64))
    assert m.all_weights[1][1] is m.weight_hh_l1


# ---------------------------------------------------------------------------------------------
# dtypes, no_grad, dropout, long sequences


@pytest.mark.parametrize("make", [lambda: nn.LSTM(I, H, 2, proj_size=2), lambda: nn.GRU(I, H),
                                  lambda: nn.RNN(I, H, bidirectional=True)])
def test_float32_stays_float32_and_no_grad_records_nothing(make):
    m = make()
    x = ember.randn(T, B, I, requires_grad=True)
    outs = _flat(m(x))
    assert all(o.dtype == ember.float32 for o in outs)
    sum(o.sum() for o in outs).backward()
    assert x.grad.dtype == ember.float32
    assert all(p.grad.dtype == ember.float32 for p in m.parameters())
    with ember.no_grad():
        outs = _flat(m(x))
    assert all(not o.requires_grad and o.grad_fn is None for o in outs)


def test_half_precision_runs_close_to_float32():
    m = nn.LSTM(I, H, 2)
    x = ember.randn(T, B, I)
    ref = m(x)[0].detach().numpy()
    for dt in (ember.float16, ember.bfloat16):
        mh = nn.LSTM(I, H, 2)
        mh.load_state_dict(m.state_dict())
        mh.to(dt)
        xh = x.to(dt).requires_grad_()
        out, (h, c) = mh(xh)
        assert out.dtype == h.dtype == c.dtype == dt
        np.testing.assert_allclose(out.float().detach().numpy(), ref, atol=3e-2)
        out.float().sum().backward()
        assert xh.grad.dtype == dt and mh.weight_hh_l0.grad.dtype == dt


def test_dropout_between_layers_only_in_training():
    ember.manual_seed(0)
    m = nn.GRU(I, H, num_layers=2, dropout=1.0).double()
    x1 = ember.tensor(_rng(7).standard_normal((T, B, I)))
    x2 = ember.tensor(_rng(8).standard_normal((T, B, I)))
    m.train()
    o1, h1 = m(x1)
    o2, h2 = m(x2)
    # p = 1 zeroes layer 0's output: layer 1 sees zeros whatever the input
    np.testing.assert_allclose(o1.detach().numpy(), o2.detach().numpy())
    assert not np.allclose(h1[0].detach().numpy(), h2[0].detach().numpy())  # h_n not dropped
    m.eval()
    e1, _ = m(x1)
    e2, _ = m(x2)
    assert not np.allclose(e1.detach().numpy(), e2.detach().numpy())
    # eval equals a dropout-free twin
    twin = nn.GRU(I, H, num_layers=2).double()
    twin.load_state_dict(m.state_dict())
    np.testing.assert_allclose(twin(x1)[0].detach().numpy(), e1.detach().numpy())
    # p = 0.5 in training: random, and different from eval
    m5 = nn.LSTM(I, H, num_layers=2, dropout=0.5).double()
    m5.load_state_dict({k: v for k, v in nn.LSTM(I, H, 2).double().state_dict().items()})
    a = m5(x1)[0].detach().numpy()
    b = m5(x1)[0].detach().numpy()
    assert not np.allclose(a, b)
    m5.eval()
    np.testing.assert_allclose(m5(x1)[0].detach().numpy(), m5(x1)[0].detach().numpy())


def test_dropout_single_layer_warns_and_is_not_applied():
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        m = nn.LSTM(I, H, dropout=0.5)
    x = ember.randn(T, B, I)
    a = m(x)[0].detach().numpy()
    m.eval()
    np.testing.assert_allclose(m(x)[0].detach().numpy(), a)


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_long_sequence_backward(cls):
    steps = 500
    m = getattr(nn, cls)(8, 16, num_layers=2)
    x = ember.randn(steps, 4, 8, requires_grad=True)
    t0 = time.perf_counter()
    out = m(x)[0]
    t1 = time.perf_counter()
    (out[-1].sum() + out.mean()).backward()
    t2 = time.perf_counter()
    print(f"{cls} {steps} steps: forward {1e3 * (t1 - t0):.1f} ms, "
          f"backward {1e3 * (t2 - t1):.1f} ms")
    assert x.grad.shape == x.shape and np.isfinite(x.grad.numpy()).all()
    assert np.abs(x.grad.numpy()[0]).sum() > 0  # the gradient reached the first step
    assert all(np.isfinite(p.grad.numpy()).all() for p in m.parameters())


@needs_torch
def test_long_sequence_matches_pytorch():
    tm, em = _pair("LSTM", num_layers=2, bidirectional=True)
    x = _rng(9).standard_normal((200, 2, I))
    xt, xe = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    _compare_run(tm, em, [xt], [xe], [xt], [xe])


def test_weights_modified_in_place_before_backward_raise():
    m = nn.GRU(I, H)
    out = m(ember.randn(T, B, I))[0]
    with ember.no_grad():
        m.weight_hh_l0.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


# ---------------------------------------------------------------------------------------------
# packed sequences


@needs_torch
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
@pytest.mark.parametrize("given_state", [False, True])
def test_packed_module_parity(mode, batch_first, enforce_sorted, given_state):
    kw = {"num_layers": 2, "bidirectional": True, "batch_first": batch_first}
    tm, em = _pair(mode, **kw)
    rng = _rng(10)
    lengths = [5, 4, 2, 2] if enforce_sorted else [2, 5, 1, 4]
    nb = len(lengths)
    x = rng.standard_normal((nb, 5, I) if batch_first else (5, nb, I))
    xt, xe = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    pt = TP.pack_padded_sequence(xt, lengths, batch_first=batch_first,
                                 enforce_sorted=enforce_sorted)
    pe = P.pack_padded_sequence(xe, lengths, batch_first=batch_first,
                                enforce_sorted=enforce_sorted)
    np.testing.assert_array_equal(pe.batch_sizes.numpy(), pt.batch_sizes.numpy())
    assert pe.batch_sizes.dtype == ember.int64
    for a, b in ((pe.sorted_indices, pt.sorted_indices),
                 (pe.unsorted_indices, pt.unsorted_indices)):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_allclose(pe.data.detach().numpy(), pt.data.detach().numpy())
    leaves_t, leaves_e, t_args, e_args = [xt], [xe], [pt], [pe]
    if given_state:
        st = [rng.standard_normal(s) for s in _state_shapes(mode, kw, nb)]
        ts = [torch.tensor(s, requires_grad=True) for s in st]
        es = [ember.tensor(s, requires_grad=True) for s in st]
        leaves_t += ts
        leaves_e += es
        t_args.append(tuple(ts) if len(ts) == 2 else ts[0])
        e_args.append(tuple(es) if len(es) == 2 else es[0])
    _compare_run(tm, em, t_args, e_args, leaves_t, leaves_e)
    # unpacking gives torch's padded output and lengths
    to = tm(*t_args)[0]
    eo = em(*e_args)[0]
    assert isinstance(eo, P.PackedSequence)
    a, la = TP.pad_packed_sequence(to, batch_first=batch_first, total_length=7)
    b, lb = P.pad_packed_sequence(eo, batch_first=batch_first, total_length=7)
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), atol=1e-10)
    np.testing.assert_array_equal(lb.numpy(), la.numpy())


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_packed_sequence_gradient_and_padding_value(batch_first):
    rng = _rng(11)
    seqs = [rng.standard_normal((n, 2)) for n in (3, 1, 4)]
    ts = [torch.tensor(s, requires_grad=True) for s in seqs]
    es = [ember.tensor(s, requires_grad=True) for s in seqs]
    pt = TP.pack_sequence(ts, enforce_sorted=False)
    pe = P.pack_sequence(es, enforce_sorted=False)
    a, la = TP.pad_packed_sequence(pt, batch_first, padding_value=-9.0)
    b, lb = P.pad_packed_sequence(pe, batch_first, padding_value=-9.0)
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy())
    np.testing.assert_array_equal(lb.numpy(), la.numpy())
    v = rng.standard_normal(tuple(a.shape))
    (a * torch.tensor(v)).sum().backward()
    (b * ember.tensor(v)).sum().backward()
    for s_t, s_e in zip(ts, es):
        np.testing.assert_allclose(s_e.grad.numpy(), s_t.grad.numpy())
    for u, w in zip(P.unpack_sequence(pe), seqs):
        np.testing.assert_allclose(u.detach().numpy(), w)
    for u, w in zip(P.unpad_sequence(b, lb, batch_first=batch_first), seqs):
        np.testing.assert_allclose(u.detach().numpy()[..., :], w)


def test_packed_sequence_object():
    p = P.pack_sequence([ember.ones(3, 2), ember.ones(1, 2)])
    np.testing.assert_array_equal(p.batch_sizes.numpy(), [2, 1, 1])
    assert p.sorted_indices is None and p.unsorted_indices is None
    data, bs, si, ui = p  # a named tuple
    assert data.shape == (4, 2)
    q = p.double()
    assert q.data.dtype == ember.float64 and q.batch_sizes is p.batch_sizes
    assert p.to(ember.float32) is p
    assert not p.is_cuda and not p.is_pinned()
    perm = ember.tensor([2, 0, 1])
    np.testing.assert_array_equal(P.invert_permutation(perm).numpy(), [1, 2, 0])
    assert P.invert_permutation(None) is None
    r = P.PackedSequence(p.data, p.batch_sizes, perm)
    np.testing.assert_array_equal(r.unsorted_indices.numpy(), [1, 2, 0])


def test_packed_sequence_errors():
    x = ember.zeros(4, 3, 2)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        P.pack_padded_sequence(x, [2, 4, 3])
    with pytest.raises(RuntimeError, match="greater than 0"):
        P.pack_padded_sequence(x, [4, 3, 0])
    with pytest.raises(RuntimeError, match="exceeds the padded sequence length 4"):
        P.pack_padded_sequence(x, [5, 3, 2])
    with pytest.raises(RuntimeError, match="equal to batch_size"):
        P.pack_padded_sequence(x, [4, 3])
    p = P.pack_padded_sequence(x, [4, 3, 1])
    with pytest.raises(ValueError, match="total_length=3 and max sequence length being 4"):
        P.pad_packed_sequence(p, total_length=3)


# ---------------------------------------------------------------------------------------------
# gradcheck on packed sequences and reversed directions (the fused ops directly)


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("reverse", [False, True])
def test_packed_sequence_op_gradcheck(kind, reverse):
    rng = _rng(12)
    sizes = (3, 2, 2, 1)
    n = sum(sizes)
    g = {"lstm": 4, "gru": 3}.get(kind, 1) * 2
    t = [ember.tensor(a, requires_grad=True) for a in (
        rng.standard_normal((n, g)), rng.standard_normal((3, 2)), rng.standard_normal((3, 2)),
        rng.standard_normal((g, 2)) * 0.7, rng.standard_normal(g))]

    def fn(xw, h0, c0, w, b):
        if kind == "lstm":
            return R.LSTMSequence.apply(xw, h0, c0, w, b, None, sizes, reverse)
        if kind == "gru":
            return R.GRUSequence.apply(xw, h0, w, b, sizes, reverse)
        return R.RNNSequence.apply(xw, h0, w, b, sizes, reverse, False)

    assert ember.autograd.gradcheck(fn, tuple(t))
    if reverse:  # double backward through the packed recompute (slow to check: once per kind)
        assert ember.autograd.gradgradcheck(fn, tuple(t))
    # the composite (used for double backward) agrees with the fused forward
    outs = fn(*t)
    comp = R._composite(kind, *t[:3] if kind == "lstm" else (t[0], t[1], None),
                        t[3], t[4], None, sizes, reverse, False)
    for a, b in zip(outs, comp):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-12)


# ---------------------------------------------------------------------------------------------
# errors (PyTorch's exception types and messages)


def test_constructor_errors():
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(3, 4, 2, dropout=1.5)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(3, 4, 2, dropout=True)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="proj_size should be a positive integer"):
        nn.LSTM(3, 4, proj_size=-1)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.RNN(3, 0)
    with pytest.raises(TypeError, match="hidden_size should be of type int"):
        nn.GRU(3, 4.0)
    with pytest.raises(ValueError, match="num_layers must be greater than zero"):
        nn.GRU(3, 4, 0)
    with pytest.raises(TypeError, match="bias should be of type bool"):
        nn.GRU(3, 4, bias=1)
    with pytest.raises(RuntimeError, match="Unknown nonlinearity: gelu"):
        nn.RNNCell(3, 4, nonlinearity="gelu")(ember.randn(2, 3))


def test_forward_errors():
    rnn, lstm, gru = nn.RNN(3, 4), nn.LSTM(3, 4, 2), nn.GRU(3, 4)
    with pytest.raises(ValueError, match="RNN: Expected input to be 2D or 3D, got 4D tensor"):
        rnn(ember.randn(2, 3, 4, 3))
    with pytest.raises(ValueError, match="GRU: Expected input to be 2D or 3D, got 1D instead"):
        gru(ember.randn(3))
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D instead"):
        lstm(ember.randn(2, 3, 4, 3))
    with pytest.raises(RuntimeError, match="For unbatched 2-D input, hx should also be 2-D but "
                                           "got 3-D tensor"):
        rnn(ember.randn(2, 3), ember.randn(1, 2, 4))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx should also be 3-D"):
        gru(ember.randn(5, 2, 3), ember.randn(2, 4))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 4, 4\), got \[1, 2, 4\]"):
        rnn(ember.randn(2, 4, 3), ember.randn(1, 2, 4))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(2, 2, 4\), got "
                                           r"\[2, 3, 4\]"):
        lstm(ember.randn(5, 2, 3), (ember.randn(2, 2, 4), ember.randn(2, 3, 4)))
    with pytest.raises(RuntimeError, match=r"hx and cx should also be 3-D but got \(3-D, 2-D\)"):
        lstm(ember.randn(5, 2, 3), (ember.randn(2, 2, 4), ember.randn(2, 4)))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. "
                                           "Expected 3, got 7"):
        lstm(ember.randn(5, 2, 7))
    with pytest.raises(ValueError, match="RNN input dtype \\(torch.float64\\) does not match "
                                         "weight dtype \\(torch.float32\\)"):
        gru(ember.randn(5, 2, 3, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="hidden state dtype"):
        gru(ember.randn(5, 2, 3), ember.randn(1, 2, 4, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0"):
        gru(ember.randn(0, 2, 3))
    with pytest.raises(RuntimeError, match="tuple \\(h_0, c_0\\)"):
        lstm(ember.randn(5, 2, 3), ember.randn(2, 2, 4))


def test_cell_errors():
    lstm, gru = nn.LSTMCell(3, 4), nn.GRUCell(3, 4)
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 3"):
        lstm(ember.randn(2, 5))
    with pytest.raises(RuntimeError, match="Input batch size 2 doesn't match hidden0 batch size 3"):
        gru(ember.randn(2, 3), ember.randn(3, 4))
    with pytest.raises(RuntimeError, match="hidden1 has inconsistent hidden_size: got 5, "
                                           "expected 4"):
        lstm(ember.randn(2, 3), (ember.randn(2, 4), ember.randn(2, 5)))
    with pytest.raises(ValueError, match="GRUCell: Expected input to be 1D or 2D, got 3D instead"):
        gru(ember.randn(1, 2, 3))
    with pytest.raises(ValueError, match="GRUCell: Expected hidden to be 1D or 2D, got 3D"):
        gru(ember.randn(2, 3), ember.randn(1, 2, 4))
    with pytest.raises(ValueError, match=r"LSTMCell: Expected hx\[1\] to be 1D or 2D, got 3D"):
        lstm(ember.randn(2, 3), (ember.randn(2, 4), ember.randn(1, 2, 4)))
    with pytest.raises(RuntimeError, match="mat1 and mat2 must have the same dtype"):
        gru(ember.randn(2, 3, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="hidden0 has dtype"):
        gru(ember.randn(2, 3), ember.randn(2, 4, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="expected 4 \\(w_ih, w_hh, b_ih, b_hh"):
        R.gru(ember.randn(2, 1, 3), ember.zeros(1, 1, 4), list(gru.parameters())[:3], True, 1,
              0.0, False, False, False)


@pytest.mark.parametrize("make", [lambda: nn.LSTM(I, H, proj_size=2), lambda: nn.GRU(I, H),
                                  lambda: nn.RNN(I, H, nonlinearity="relu")])
def test_retain_graph_second_backward_accumulates(make):
    m = make()
    x = ember.randn(T, B, I, requires_grad=True)
    out = m(x)[0]
    out.sum().backward(retain_graph=True)
    first = [p.grad.numpy().copy() for p in m.parameters()] + [x.grad.numpy().copy()]
    out.sum().backward()
    second = [p.grad.numpy() for p in m.parameters()] + [x.grad.numpy()]
    for a, b in zip(first, second):
        np.testing.assert_allclose(b, 2 * a, rtol=1e-5, atol=1e-6)
