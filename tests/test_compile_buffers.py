"""Buffers planned once per compiled program and reused between calls (codegen.py's pools).

A fused group's output that lives only inside one call is written into a buffer the program
keeps; what escapes (outputs, saved tensors, gradients handed to the engine) stays fresh, and a
buffer is only rewritten when nothing else holds it. Each test compares against eager ember (or
the program without pools), bit for bit.
"""

import contextlib
import sys
import threading

import numpy as np
import pytest
from devices import cuda_available

import ember
import ember._dynamo
from ember._compile import cc, codegen, config
from ember.testing import fake_cuda

HAVE_CC = cc.compiler() is not None and config.native
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no C compiler (or EMBER_PURE_PYTHON=1, "
                              "EMBER_COMPILE_NATIVE=0)")
DEVICES = ["fake_cuda"] + (["cuda"] if cuda_available() else [])


@pytest.fixture(autouse=True)
def _fresh(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernels"))
    # (small arrays here: every value a pool may take is pooled, whatever its size)
    monkeypatch.setattr(codegen, "POOL_MIN_BYTES", 0)
    ember._dynamo.reset()
    yield
    ember._dynamo.reset()


def _progs(compiled):
    return [e.prog for e in compiled._ember_compiled.cache.values()]


def _on(device):
    return fake_cuda() if device == "fake_cuda" else contextlib.nullcontext()


def _host(t):
    return ember._backend.to_numpy(t.detach()._data).copy()


def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.reshape(-1).view(f"u{a.itemsize}"),
                                  b.reshape(-1).view(f"u{b.itemsize}"))


def _data(rng, shape=(48, 40)):
    return rng.standard_normal(shape).astype(np.float32)


def chain(x, w):
    """Fused groups whose outputs live only inside the call (each read once, by a
    transcendental that saves its output), between ones that escape."""
    h = (x * 2 + 1) * w
    h = h.exp()
    h = (h - 3) * 0.5
    h = h.tanh()
    h = (h * w + x).relu() * 1.5
    return h.sin() + 1, (h * h).sum()


def _call(f, xa, wa, grad=True):
    x = ember.tensor(xa, requires_grad=grad)
    w = ember.tensor(wa, requires_grad=grad)
    outs = f(x, w)
    if not grad:
        return [o.numpy().copy() for o in outs], []
    (outs[0].sum() * 0.5 + outs[1]).backward()
    return [o.detach().numpy().copy() for o in outs], [x.grad.numpy(), w.grad.numpy()]


def _eager_and_compiled(fn, datas, grad=True):
    eager = [_call(fn, xa, wa, grad) for xa, wa in datas]
    f = ember.compile(fn)
    comp = [_call(f, xa, wa, grad) for xa, wa in datas]
    return eager, comp, f


@needs_cc
@pytest.mark.parametrize("grad", [True, False])
@pytest.mark.parametrize("use_pool", [True, False])
def test_bitwise_equal_with_and_without_pool(monkeypatch, grad, use_pool):
    monkeypatch.setattr(codegen, "pool", use_pool)
    rng = np.random.default_rng(0)
    datas = [(_data(rng), _data(rng)) for _ in range(6)]
    eager, comp, f = _eager_and_compiled(chain, datas, grad)
    for (eo, eg), (co, cg) in zip(eager, comp):
        for a, b in zip(eo + eg, co + cg):
            _same_bits(a, b)
    (prog,) = _progs(f)
    fwd_bufs, bwd_bufs = prog.pool_sizes
    if use_pool:  # the exp's and the tanh's inputs share one buffer; gradients share too
        assert fwd_bufs == 1 and "PB[0]" in prog.source
        assert bwd_bufs == (2 if grad else 0)
        assert prog.source.count("if GRC(") == (6 if grad else 3)
    else:
        assert prog.pool_sizes == (0, 0) and "PB[" not in prog.source


@needs_cc
def test_pool_is_really_used():
    """From the first replay on, the pooled values are written into the same array each call
    and nothing is allocated for them (the generated code's EMPTY is counted)."""
    rng = np.random.default_rng(1)
    xa, wa = _data(rng), _data(rng)
    f = ember.compile(chain)
    for _ in range(3):
        _call(f, xa, wa)
    (prog,) = _progs(f)
    ns = prog.fwd_fn.__globals__
    made = []
    empty = ns["EMPTY"]

    def counting(shape, dtype):
        a = empty(shape, dtype)
        made.append(a.shape)
        return a

    ns["EMPTY"] = counting
    ((fset,), (bset,)) = prog.pools  # (one set each: one call was in flight at a time)
    # (ids and addresses only: a reference held here would make the buffers not free)
    bufs = [(id(b), b.ctypes.data) for b in [*fset, *bset]]
    assert len(set(bufs)) == 3
    del fset, bset
    out = _call(f, xa, wa)
    first = len(made)
    out2 = _call(f, xa, wa)
    assert len(made) - first == first  # each call allocates alike (the escaping values only)
    assert bufs == [(id(b), b.ctypes.data) for s in prog.pools for b in s[0]]
    for a, b in zip(out[0] + out[1], out2[0] + out2[1]):
        _same_bits(a, b)
    codegen_pool = codegen.pool
    try:  # without pools: two arrays more a call, forward and backward alike
        codegen.pool = False
        ember._dynamo.reset()
        g = ember.compile(chain)
        for _ in range(3):
            _call(g, xa, wa)
        (gprog,) = _progs(g)
        gmade = []
        gempty = gprog.fwd_fn.__globals__["EMPTY"]
        gprog.fwd_fn.__globals__["EMPTY"] = lambda s, d: gmade.append(s) or gempty(s, d)
        _call(g, xa, wa)
        assert len(gmade) == first + prog.source.count("if GRC(")  # (each site, once a call)
    finally:
        codegen.pool = codegen_pool


@needs_cc
def test_pooled_buffers_never_escape():
    """Outputs and gradients of one call are unchanged by the next calls (held by the caller),
    and a value saved for backward is not overwritten by a second forward before its backward."""
    rng = np.random.default_rng(2)
    datas = [(_data(rng), _data(rng)) for _ in range(5)]
    f = ember.compile(chain)
    held = []
    for xa, wa in datas:
        x = ember.tensor(xa, requires_grad=True)
        w = ember.tensor(wa, requires_grad=True)
        outs = f(x, w)
        (outs[0].sum() * 0.5 + outs[1]).backward()
        held.append((outs, x.grad, w.grad, [o.detach().numpy().copy() for o in outs],
                     [x.grad.numpy().copy(), w.grad.numpy().copy()]))
    for outs, gx, gw, out_copy, grad_copy in held:
        for o, c in zip(outs, out_copy):
            _same_bits(o.detach().numpy(), c)
        _same_bits(gx.numpy(), grad_copy[0])
        _same_bits(gw.numpy(), grad_copy[1])
    eager = [_call(chain, xa, wa) for xa, wa in datas]
    for (eo, eg), (_outs, gx, gw, out_copy, _g) in zip(eager, held):
        for a, b in zip(eo + eg, out_copy + [gx.numpy(), gw.numpy()]):
            _same_bits(a, b)


def viewed(x, w):
    """A pooled value read through a view after its own last read: the next group of its
    shape would share its buffer; the view must keep it from being rewritten."""
    c = (x * 2 + 1) * w
    ct = c.t()
    y = (x * 3 - 2) * w
    return ct.exp().t() * y.exp(), ((x - w) * 0.25).tanh()


@needs_cc
@pytest.mark.parametrize("grad", [True, False])
def test_a_view_keeps_its_buffer(grad):
    rng = np.random.default_rng(3)
    datas = [(_data(rng, (32, 32)), _data(rng, (32, 32))) for _ in range(5)]

    def run(fn, xa, wa):
        x = ember.tensor(xa, requires_grad=grad)
        w = ember.tensor(wa, requires_grad=grad)
        outs = fn(x, w)
        res = [o.detach().numpy().copy() for o in outs]
        if grad:
            (outs[0].sum() + outs[1].sum()).backward()
            res += [x.grad.numpy(), w.grad.numpy()]
        return res

    f = ember.compile(viewed)
    for xa, wa in datas:
        for a, b in zip(run(viewed, xa, wa), run(f, xa, wa)):
            _same_bits(a, b)
    (prog,) = _progs(f)
    assert prog.pool_sizes[0] >= 1  # (what the test is about: c's buffer is offered to y)


@needs_cc
def test_two_forwards_then_two_backwards():
    rng = np.random.default_rng(4)
    (xa, wa), (xb, wb) = [(_data(rng), _data(rng)) for _ in range(2)]

    def both(fn):
        xs = [ember.tensor(a, requires_grad=True) for a in (xa, wa, xb, wb)]
        o1 = fn(xs[0], xs[1])
        o2 = fn(xs[2], xs[3])
        (o2[0].sum() + o2[1]).backward()
        (o1[0].sum() * 0.5 + o1[1]).backward()
        return [o.detach().numpy() for o in o1 + o2] + [t.grad.numpy() for t in xs]

    eager = both(chain)
    f = ember.compile(chain)
    for _ in range(3):  # (trace, trace, replay: then the pools exist)
        _call(f, xa, wa)
    for _ in range(2):
        for a, b in zip(eager, both(f)):
            _same_bits(a, b)


@needs_cc
def test_calls_from_two_threads():
    """Two threads call one compiled function (forward and backward) at once: each call in
    flight has its own buffers, and every result equals eager's."""
    old = sys.getswitchinterval()
    rng = np.random.default_rng(5)
    datas = [(_data(rng, (96, 80)), _data(rng, (96, 80))) for _ in range(4)]
    f = ember.compile(chain)
    for _ in range(3):
        _call(f, *datas[0])
    want = []
    for xa, wa in datas:
        x = ember.tensor(xa, requires_grad=True)
        w = ember.tensor(wa, requires_grad=True)
        outs = chain(x, w)
        gx, gw = ember.autograd.grad(outs[0].sum() * 0.5 + outs[1], (x, w))
        want.append([o.detach().numpy() for o in outs] + [gx.numpy(), gw.numpy()])
    errors = []

    def worker(t):
        try:
            for n in range(40):
                j = (n + t) % len(datas)
                x = ember.tensor(datas[j][0], requires_grad=True)
                w = ember.tensor(datas[j][1], requires_grad=True)
                outs = f(x, w)
                gx, gw = ember.autograd.grad(outs[0].sum() * 0.5 + outs[1], (x, w))
                got = [o.detach().numpy() for o in outs] + [gx.numpy(), gw.numpy()]
                for a, b in zip(want[j], got):
                    _same_bits(a, b)
        except BaseException as e:  # reported below
            errors.append(e)

    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors[0]
    (prog,) = _progs(f)
    fsets, bsets = prog.pools
    assert 1 <= len(fsets) <= 3 and 1 <= len(bsets) <= 3  # a set per call that was in flight


@needs_cc
def test_only_large_values_are_pooled(monkeypatch):
    """By default a value is pooled from POOL_MIN_BYTES on (smaller ones ran as fast or faster
    fresh): the chain at 48 x 40 has no pooled buffer, at 1024 x 1024 float32 (4 MiB) it has."""
    monkeypatch.setattr(codegen, "POOL_MIN_BYTES", 4 << 20)
    rng = np.random.default_rng(8)
    sizes = {}
    for shape in ((48, 40), (1024, 1024)):
        xa, wa = _data(rng, shape), _data(rng, shape)
        f = ember.compile(chain)
        for _ in range(3):
            out = _call(f, xa, wa)
        for a, b in zip(out[0] + out[1], sum(_call(chain, xa, wa), [])):
            _same_bits(a, b)
        (prog,) = _progs(f)
        sizes[shape] = prog.pool_sizes
    assert sizes == {(48, 40): (0, 0), (1024, 1024): (1, 2)}


def test_replay_without_native_code_keeps_allocating(monkeypatch):
    """The NumPy replay (no generated C) has no fused groups: nothing is pooled."""
    monkeypatch.setattr(config, "native", False)
    rng = np.random.default_rng(6)
    datas = [(_data(rng), _data(rng)) for _ in range(4)]
    eager, comp, f = _eager_and_compiled(chain, datas)
    for (eo, eg), (co, cg) in zip(eager, comp):
        for a, b in zip(eo + eg, co + cg):
            _same_bits(a, b)
    (prog,) = _progs(f)
    assert prog.pool_sizes == (0, 0) and "PB[" not in prog.source


@needs_cc
@pytest.mark.parametrize("device", DEVICES)
def test_pools_on_cuda(device):
    """A CUDA program's fused groups (cudagen.py; fake CUDA compiles them as C on the host)
    take their pooled buffers through the same generated code, allocated by the device's
    EMPTY: the same bits as eager, and the same buffers from call to call."""
    rng = np.random.default_rng(7)
    datas = [(_data(rng), _data(rng)) for _ in range(5)]

    def run(fn, xa, wa):
        x = ember.tensor(xa, device="cuda", requires_grad=True)
        w = ember.tensor(wa, device="cuda", requires_grad=True)
        outs = fn(x, w)
        (outs[0].sum() * 0.5 + outs[1]).backward()
        return [_host(t) for t in (*outs, x.grad, w.grad)]

    with _on(device):
        f = ember.compile(chain)
        for xa, wa in datas:
            for a, b in zip(run(chain, xa, wa), run(f, xa, wa)):
                _same_bits(a, b)
        (prog,) = _progs(f)
        assert prog.pool_sizes[0] >= 1 and prog.pool_sizes[1] >= 1, prog.source
        before = [(id(b), type(b)) for s in prog.pools for b in s[0]]
        run(f, *datas[0])
        assert before == [(id(b), type(b)) for s in prog.pools for b in s[0]]
        assert all(t is ember._backend.cuda_array_type() for _i, t in before)
