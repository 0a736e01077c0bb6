"""The LSTM and GRU step kernels (ember/_kernels.c, "An LSTM time step's pointwise work" and the
GRU's): bit for bit the NumPy path's operations with the kernels' tanh in place of NumPy's,
within a few float32 ulps of the NumPy path itself, the same bits at 1 and 2 threads, and
nn.LSTM's and nn.GRU's results (forward, every gradient, projections and packed sequences)
against the NumPy path."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels_loader as L

needs_kernels = pytest.mark.skipif(L.active is None or L.soft_fma,
                                   reason=f"kernels off or without fma: {L.reason}")
F32 = np.float32


def _emulated_step(g, c, tanh):
    """LSTMSequence.forward's NumPy operations for one step, with ``tanh``."""
    hid = c.shape[1]
    s = np.full(4 * hid, 0.5, F32)
    s[2 * hid:3 * hid] = 1.0
    shift = 1.0 - s
    g = g * s
    g = tanh(g)
    g *= s
    g += shift
    c = c * g[:, hid:2 * hid]
    c += g[:, :hid] * g[:, 2 * hid:3 * hid]
    tc = tanh(c)
    return g, c, tc, g[:, 3 * hid:] * tc


def _emulated_backward(a, tc, cprev, dm, dc):
    hid = tc.shape[1]
    i, f, g, o = a[:, :hid], a[:, hid:2 * hid], a[:, 2 * hid:3 * hid], a[:, 3 * hid:]
    tmp = tc * tc
    np.subtract(1.0, tmp, out=tmp)
    tmp *= o
    tmp *= dm
    dc = dc + tmp
    da = np.concatenate([dc * g, dc * cprev, dc * i, dm * tc], axis=1)
    deriv = a * a
    np.subtract(a, deriv, out=deriv)
    deriv[:, 2 * hid:3 * hid] += 1.0 - g
    da *= deriv
    return da, dc * f


def _inputs(rows, hid, seed):
    rng = np.random.default_rng(seed)
    g = (rng.standard_normal((rows, 4 * hid)) * 3).astype(F32)
    edges = np.array([0.0, -0.0, 40.0, -40.0, np.inf, -np.inf, 1e-30, -1e-30], F32)
    g.reshape(-1)[:min(8, g.size)] = edges[:g.size]
    c = (rng.standard_normal((rows, hid)) * 2).astype(F32)
    return g, c


@needs_kernels
@pytest.mark.parametrize("rows, hid", [(1, 1), (3, 7), (32, 256), (200, 160)])
def test_lstm_step_is_the_numpy_path_with_the_kernels_tanh(rows, hid) -> None:
    g, c = _inputs(rows, hid, rows + hid)
    want = _emulated_step(g.copy(), c.copy(), L.tanh)
    gk, ck = g.copy(), c.copy()
    tc, h = np.empty_like(c), np.empty_like(c)
    assert L.lstm_step(gk, ck, tc, h)
    for got, w in zip((gk, ck, tc, h), want):
        assert got.tobytes() == w.tobytes()
    ref = _emulated_step(g.copy(), c.copy(), np.tanh)  # NumPy's tanh: within its ulps
    for got, w in zip((gk, ck, tc, h), ref):
        np.testing.assert_allclose(got, w, rtol=1e-6, atol=2e-7)
    # the backward from these activations
    rng = np.random.default_rng(rows)
    dm = rng.standard_normal((rows, hid)).astype(F32)
    dc = rng.standard_normal((rows, hid)).astype(F32)
    da_want, dc_want = _emulated_backward(gk, tc, c, dm, dc)
    da = np.empty_like(gk)
    dck = dc.copy()
    assert L.lstm_step_backward(gk, tc, c, dm, dck, da)
    assert da.tobytes() == da_want.tobytes() and dck.tobytes() == dc_want.tobytes()


@needs_kernels
def test_lstm_step_refuses_what_it_does_not_take() -> None:
    g, c = _inputs(4, 8, 0)
    tc, h = np.empty_like(c), np.empty_like(c)
    assert not L.lstm_step(g.astype(np.float64), c.astype(np.float64), tc.astype(np.float64),
                           h.astype(np.float64))
    assert not L.lstm_step(g[:, ::2], c[:, :16], tc, h)  # strided gates
    assert not L.lstm_step(g[:2], c, tc, h)  # sizes that do not match
    with pytest.raises(ValueError):
        L.active.lstm_step(g, c, tc, h, 3)  # a hidden size that does not divide the state
    with pytest.raises(ValueError):
        L.active.lstm_step(g, c, tc[:2], h, 8)


@needs_kernels
def test_lstm_step_gives_the_same_bits_at_1_and_2_threads() -> None:
    g, c = _inputs(512, 256, 9)
    before = ember.get_num_threads()
    res = []
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            gk, ck = g.copy(), c.copy()
            tc, h = np.empty_like(c), np.empty_like(c)
            L.lstm_step(gk, ck, tc, h)
            da, dck = np.empty_like(g), c.copy()
            L.lstm_step_backward(gk, tc, c, h, dck, da)
            res.append([gk, ck, tc, h, da, dck])
    finally:
        ember.set_num_threads(before)
    for a, b in zip(*res):
        assert a.tobytes() == b.tobytes()


def _lstm_run(proj_size: int, packed: bool, cell: str = "LSTM"):
    ember.manual_seed(3)
    kw = {"proj_size": proj_size} if proj_size else {}
    net = getattr(ember.nn, cell)(12, 16, num_layers=2, batch_first=True, **kw)
    x = ember.randn(5, 9, 12, requires_grad=True)
    inp = x
    if packed:
        inp = ember.nn.utils.rnn.pack_padded_sequence(x, [9, 7, 7, 3, 1], batch_first=True)
    out, state = net(inp)
    hn, cn = state if cell == "LSTM" else (state, state * 0)
    if packed:
        out = ember.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)[0]
    (out.square().sum() + hn.sum() + cn.square().sum()).backward()
    return [out.detach().numpy(), hn.detach().numpy(), cn.detach().numpy(), x.grad.numpy()] + \
        [p.grad.numpy() for p in net.parameters()]


@needs_kernels
@pytest.mark.parametrize("proj_size, packed", [(0, False), (6, False), (0, True)])
def test_nn_lstm_with_the_kernels_agrees_with_the_numpy_path(proj_size, packed) -> None:
    on = _lstm_run(proj_size, packed)
    with L.disabled():
        off = _lstm_run(proj_size, packed)
    for a, b in zip(on, off):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


@needs_kernels
@pytest.mark.parametrize("packed", [False, True])
def test_nn_gru_with_the_kernels_agrees_with_the_numpy_path(packed) -> None:
    on = _lstm_run(0, packed, "GRU")
    with L.disabled():
        off = _lstm_run(0, packed, "GRU")
    for a, b in zip(on, off):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def _emulated_gru(gi, gh, hp, tanh):
    """GRUSequence.forward's NumPy operations for one step, with ``tanh``."""
    hid = hp.shape[1]
    rz = gi[:, :2 * hid] + gh[:, :2 * hid]
    rz *= 0.5
    rz = tanh(rz)
    rz *= 0.5
    rz += 0.5
    n = rz[:, :hid] * gh[:, 2 * hid:]
    n += gi[:, 2 * hid:]
    n = tanh(n)
    o = hp - n
    o *= rz[:, hid:]
    o += n
    return rz, n, o


def _emulated_gru_backward(rz, n, ghn, hp, dht):
    hid = n.shape[1]
    r, z = rz[:, :hid], rz[:, hid:]
    dan = n * n
    np.subtract(1.0, dan, out=dan)
    dan *= 1.0 - z
    dan *= dht
    dz = hp - n
    dz *= dht
    dz *= z - z * z
    dr = dan * ghn
    dr *= r - r * r
    return np.concatenate([dr, dz, dan], 1), np.concatenate([dr, dz, dan * r], 1)


@needs_kernels
@pytest.mark.parametrize("rows, hid", [(1, 1), (3, 7), (32, 256), (50, 700)])
def test_gru_step_is_the_numpy_path_with_the_kernels_tanh(rows, hid) -> None:
    rng = np.random.default_rng(rows * hid)
    gi = (rng.standard_normal((rows, 3 * hid)) * 3).astype(F32)
    gh = (rng.standard_normal((rows, 3 * hid)) * 3).astype(F32)
    gi.reshape(-1)[:4] = [0.0, -0.0, np.inf, -40.0][:gi.size]
    hp = rng.standard_normal((rows, hid)).astype(F32)
    want = _emulated_gru(gi, gh, hp, L.tanh)
    rz, n, h = np.empty((rows, 2 * hid), F32), np.empty_like(hp), np.empty_like(hp)
    assert L.gru_step(gi, gh, hp, rz, n, h)
    for got, w in zip((rz, n, h), want):
        assert got.tobytes() == w.tobytes()
    # (NumPy's tanh: an ulp or two apart in r, times gh_n up to 10 in n's argument)
    for got, w in zip((rz, n, h), _emulated_gru(gi, gh, hp, np.tanh)):
        np.testing.assert_allclose(got, w, rtol=1e-6, atol=2e-6)
    dht = rng.standard_normal((rows, hid)).astype(F32)
    ghn = np.ascontiguousarray(gh[:, 2 * hid:])
    dgi, dgh = np.empty_like(gi), np.empty_like(gi)
    assert L.gru_step_backward(rz, n, ghn, hp, dht, dgi, dgh)
    wi, wh = _emulated_gru_backward(rz, n, ghn, hp, dht)
    assert dgi.tobytes() == wi.tobytes() and dgh.tobytes() == wh.tobytes()
    assert not L.gru_step(gi[:, ::3], gh, hp, rz, n, h)  # strided: the NumPy path
    with pytest.raises(ValueError):
        L.active.gru_step(gi, gh, hp, rz.reshape(-1)[:hid], n, h, hid)
