"""torch.compile's generated C (ember/_compile/cgen.py, cc.py): fused elementwise chains give
the very bits of the NumPy replay and of eager mode, forward and backward; the kernel cache is
reused across processes, rebuilt when corrupt; no compiler means one warning and NumPy."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember._dynamo
from ember import nn
from ember._compile import cc, config

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

ROOT = pathlib.Path(__file__).resolve().parents[1]
# (EMBER_PURE_PYTHON=1 or EMBER_COMPILE_NATIVE=0 switch code generation off: config.native)
HAVE_CC = cc.compiler() is not None and config.native
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no C compiler (or EMBER_PURE_PYTHON=1, "
                              "EMBER_COMPILE_NATIVE=0)")


@pytest.fixture(autouse=True)
def _fresh(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernels"))
    # every fused output a pool may take is pooled (by default only those of 4 MiB and more):
    # the comparisons below cover the pools too (tests/test_compile_buffers.py)
    from ember._compile import codegen

    monkeypatch.setattr(codegen, "POOL_MIN_BYTES", 0)
    ember._dynamo.reset()
    yield
    ember._dynamo.reset()


def _prog(compiled):
    (entry,) = compiled._ember_compiled.cache.values()
    return entry.prog


def _run(fn, make_args, native, calls=4):
    """``fn`` compiled with generated C on or off (or eager when native is None): the last of
    ``calls`` calls' outputs and the inputs' gradients."""
    saved = config.native
    config.native = bool(native)
    try:
        f = fn if native is None else ember.compile(fn)
        for _ in range(calls):
            args = make_args()
            out = f(*args)
        outs = out if isinstance(out, tuple) else (out,)
        seeds = [ember.tensor(np.random.default_rng(7).standard_normal(o.shape)).to(o.dtype)
                 for o in outs]
        if any(o.requires_grad for o in outs):
            ember.autograd.backward([o for o in outs if o.requires_grad],
                                    [g for o, g in zip(outs, seeds) if o.requires_grad])
        grads = [a.grad.numpy().copy() if isinstance(a, ember.Tensor) and a.grad is not None
                 else None for a in args]
        return [o.detach().numpy().copy() for o in outs], grads, (
            None if native is None else _prog(f))
    finally:
        config.native = saved


def _calls(source, name):
    """How many times the generated Python calls kernel ``name`` whole (through the native
    core's call_kernel, or its ctypes function when the core is off)."""
    return source.count(f"{name}(") + source.count(f"CALLK({name}P,")


def _same_bits(a, b):
    for x, y in zip(a, b):
        if x is None or y is None:
            assert x is None and y is None
            continue
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)
        if x.dtype.kind == "f":  # every bit: signed zeros and NaN payloads too
            np.testing.assert_array_equal(x.reshape(-1).view(f"u{x.itemsize}"),
                                          y.reshape(-1).view(f"u{y.itemsize}"))


def _check_three_ways(fn, make_args, expect_native=True):
    eager = _run(fn, make_args, None)
    replay = _run(fn, make_args, False)
    native = _run(fn, make_args, True)
    assert replay[2].c_source == ""
    if expect_native:
        assert "ember_k" in native[2].c_source, native[2].source
    _same_bits(replay[0], native[0])  # what the generated C promises: the replay's very bits
    _same_bits(replay[1], native[1])
    _same_bits(eager[0], native[0])
    _same_bits(eager[1], native[1])  # (a value's gradients added in the engine's order)
    return native[2]


# -- a fixed chain, and what it generates -------------------------------------------------------

@needs_cc
def test_chain_is_one_kernel_and_bitwise_equal():
    rng = np.random.default_rng(0)
    xa = rng.standard_normal((33, 17)).astype(np.float32)
    ba = rng.standard_normal(17).astype(np.float32)
    xa[0, :4] = [0.0, -0.0, np.inf, -np.inf]

    def make():
        return (ember.tensor(xa, requires_grad=True), ember.tensor(ba, requires_grad=True))

    def f(x, b):
        y = (x * 0.1 + b).relu() - x / 3
        return ember.clamp(y * y, max=2.5).sqrt() + ember.maximum(x, b).abs()

    prog = _check_three_ways(f, make)
    assert prog.c_source.count("ops over shape") == 1  # one forward kernel
    assert prog.c_source.count("/* backward, ") >= 1 and _calls(prog.source, "KB0")
    assert "-ffast-math" not in " ".join(cc.FLAGS) and "-ffp-contract=off" in cc.FLAGS


@needs_cc
def test_equal_groups_share_one_function_and_raw_pointer_path(monkeypatch):
    from ember._compile import codegen

    a = np.linspace(-3, 3, 48, dtype=np.float32).reshape(6, 8)

    def make():
        return ember.tensor(a, requires_grad=True), ember.tensor(a[::-1].copy())

    def f(x, y):  # two equal chains, a transcendental between them
        u = (x * 2 + 1).relu()
        return (u.tanh() * 2 + 1).relu()

    prog = _check_three_ways(f, make)
    assert prog.c_by_object and prog.c_source.count("ops over shape") == 1
    assert _calls(prog.source, "KG0") == 1 and _calls(prog.source, "KG1") == 1
    # the fallback when the array layout check fails: raw pointers from ctypes.data
    monkeypatch.setattr(codegen, "_data_offset_ok", lambda lib: False)
    ember._dynamo.reset()
    prog = _check_three_ways(f, make)
    assert not prog.c_by_object and ".ctypes.data" in prog.source


@needs_cc
def test_backward_run_with_a_missing_gradient_falls_back():
    a = np.linspace(-2, 2, 40, dtype=np.float32).reshape(5, 8)

    def f(x):
        h = (x * 3 - 1).relu()
        return h * h + x, (h - x) * 0.5

    results = []
    saved = config.native
    for native in (None, False, True):
        config.native = bool(native)
        ember._dynamo.reset()
        try:
            g = f if native is None else ember.compile(f)
            for _ in range(4):
                x = ember.tensor(a, requires_grad=True)
                out = g(x)
            out[1].sum().backward()  # no gradient reaches the first output
            results.append((out[0].detach().numpy(), x.grad.numpy().copy()))
            if native:
                prog = _prog(g)
                assert "/* backward, " in prog.c_source and _calls(prog.source, "KB0")
        finally:
            config.native = saved
    for r in results[1:]:
        _same_bits(results[0], r)


@needs_cc
def test_large_kernels_split_over_threads_give_the_same_bits():
    from ember import _threads

    rng = np.random.default_rng(4)
    a = rng.standard_normal((520, 1030)).astype(np.float32)  # over _threads.THRESHOLD
    b = rng.standard_normal(1030).astype(np.float32)

    def make():
        return ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)

    def f(x, w):
        h = (x * w + 0.5).relu()
        return (h * h - x).clamp(-2, 2) * 0.25

    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = _run(f, make, True)
        ember.set_num_threads(3)
        assert _threads.cut <= a.size
        three = _run(f, make, True)
        replay = _run(f, make, False)
    finally:
        ember.set_num_threads(before)
    assert "SPLIT(KG0" in three[2].source and "SPLIT(KB0" in three[2].source
    for got in (three, replay):
        _same_bits(one[0], got[0])
        _same_bits(one[1], got[1])


@needs_cc
def test_signed_zeros_nans_and_ties():
    vals = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 3.0], np.float32)
    a = np.repeat(vals, len(vals))
    b = np.tile(vals, len(vals))

    def make():
        return ember.tensor(a), ember.tensor(b)

    def f(x, y):
        return (ember.maximum(x, y) + 0.0, ember.minimum(x, y) * 1.0, (x - y).relu() * 1.0,
                ember.where(x > 0, x, y) * 1.0, ember.clamp(x, -0.5, 0.5) - y)

    eager = _run(f, make, None)
    native = _run(f, make, True)
    assert native[2].c_source
    for e, n in zip(eager[0], native[0]):
        np.testing.assert_array_equal(np.signbit(e), np.signbit(n))
        np.testing.assert_array_equal(e, n)


@needs_cc
def test_non_contiguous_input_runs_numpy_and_agrees():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 24)).astype(np.float32)

    def f(x):
        return (x * 2 - 1).relu() * x

    cf = ember.compile(f)
    for _ in range(3):
        cf(ember.tensor(a))
    assert _prog(cf).c_source
    x_t = ember.tensor(np.ascontiguousarray(a.T)).t()  # same shape, another layout
    assert not x_t.is_contiguous()
    np.testing.assert_array_equal(cf(x_t).numpy(), f(x_t).numpy())
    np.testing.assert_array_equal(cf(ember.tensor(a)).numpy(), f(ember.tensor(a)).numpy())


# -- many random chains -------------------------------------------------------------------------

_UNARY = [
    ("neg", lambda x: -x), ("abs", lambda x: x.abs()), ("relu", lambda x: x.relu()),
    ("square", lambda x: x.square()), ("sqrt", lambda x: x.abs().sqrt()),
    ("scale", lambda x: x * 0.37), ("shift", lambda x: 1.5 - x), ("half", lambda x: x / 2),
    ("clamp", lambda x: x.clamp(-1.0, 0.75)), ("clamp_min", lambda x: x.clamp(min=0.1)),
    ("tanh", lambda x: x.tanh()),  # not fused: NumPy runs it between two groups
    ("pow2", lambda x: x ** 2), ("pow3", lambda x: x ** 3.0), ("pow-1", lambda x: x ** -1),
    ("pow-2", lambda x: x ** -2), ("pow.5", lambda x: x.abs() ** 0.5),
    ("pow-.5", lambda x: x ** -0.5), ("pow1.5", lambda x: x.abs() ** 1.5),  # (1.5: NumPy's)
]
_BINARY = [
    ("add", lambda x, y: x + y), ("sub", lambda x, y: x - y), ("mul", lambda x, y: x * y),
    ("div", lambda x, y: x / (y.abs() + 1)), ("max", ember.maximum), ("min", ember.minimum),
    ("alpha", lambda x, y: ember.add(x, y, alpha=0.25)),
    ("where", lambda x, y: ember.where(x > y, x, y)),
]
_SHAPES = [(6, 5), (5,), (6, 1), (1, 5), (), (3, 6, 5), (3, 1, 5)]


@st.composite
def _chains(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    n_in = draw(st.integers(1, 3))
    shapes = [draw(st.sampled_from(_SHAPES)) for _ in range(n_in)]
    ops = []
    for _ in range(draw(st.integers(2, 7))):
        if draw(st.booleans()):
            ops.append(("u", draw(st.integers(0, len(_UNARY) - 1)), draw(st.integers(0, 20))))
        else:
            ops.append(("b", draw(st.integers(0, len(_BINARY) - 1)), draw(st.integers(0, 20)),
                        draw(st.integers(0, 20))))
    cast = draw(st.sampled_from([None, "double", "float"]))
    seed = draw(st.integers(0, 2 ** 16))
    return dtype, shapes, ops, cast, seed


@needs_cc
@hypothesis.settings(max_examples=25, deadline=None, derandomize=True,
                     phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate])
@hypothesis.given(_chains())
def test_random_chains_bitwise(chain):
    dtype, shapes, ops, cast, seed = chain
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    if arrays[0].size > 2:
        arrays[0].flat[:3] = [0.0, -0.0, 0.5]  # ties and signed zeros

    def make():
        return tuple(ember.tensor(a, requires_grad=True) for a in arrays)

    def f(*xs):
        vals = list(xs)
        for op in ops:
            if op[0] == "u":
                vals.append(_UNARY[op[1]][1](vals[op[2] % len(vals)]))
            else:
                vals.append(_BINARY[op[1]][1](vals[op[2] % len(vals)], vals[op[3] % len(vals)]))
            if cast and len(vals) == len(xs) + 2:
                vals[-1] = getattr(vals[-1], cast)()
        return vals[-1] * 1.0 + vals[-2]

    _check_three_ways(f, make, expect_native=False)


# -- values read several times: gradients added in the engine's order ---------------------------

_READERS = [
    ("tanh", lambda h, y: h.tanh()), ("sin", lambda h, y: h.sin()),
    ("exp", lambda h, y: (h * 0.25).exp()), ("scale", lambda h, y: h * 1.7),
    ("square", lambda h, y: h.square()), ("relu", lambda h, y: h.relu()),
    ("mul y", lambda h, y: h * y), ("add y", lambda h, y: h + y), ("div", lambda h, y: h / 3),
    ("neg", lambda h, y: -h), ("sum", lambda h, y: h.sum(-1, keepdim=True)),
]


@st.composite
def _multi_reads(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    shared = draw(st.sampled_from(["input", "op"]))  # the value read: x itself or x * y
    reads = [(draw(st.integers(0, len(_READERS) - 1)), draw(st.integers(0, 2)))
             for _ in range(draw(st.integers(2, 5)))]  # (reader, extra ops after it)
    order = draw(st.permutations(list(range(len(reads)))))
    nest = [draw(st.booleans()) for _ in reads]  # left- or right-nested sums
    two_outputs = draw(st.booleans())
    return dtype, shared, reads, order, nest, two_outputs, draw(st.integers(0, 2 ** 16))


def _multi_read_fn(shared, reads, order, nest, two_outputs):
    def f(x, y):
        h = x if shared == "input" else x * y
        terms = []
        for r, extra in reads:  # (in forward order; summed below in another)
            t = _READERS[r][1](h, y)
            for _ in range(extra):
                t = (t * 0.5).sin()
            terms.append(t)
        acc = terms[order[0]]
        for j, i in enumerate(order[1:]):
            acc = acc + terms[i] if nest[j] else terms[i] + acc
        return (acc, terms[order[-1]] * 2.0) if two_outputs else acc
    return f


def _check_multi_read(case, calls=3):
    dtype, shared, reads, order, nest, two_outputs, seed = case
    rng = np.random.default_rng(seed)
    xa = rng.standard_normal((37, 29)).astype(dtype)
    ya = rng.standard_normal((37, 29)).astype(dtype)

    def make():
        return ember.tensor(xa, requires_grad=True), ember.tensor(ya, requires_grad=True)

    f = _multi_read_fn(shared, reads, order, nest, two_outputs)
    eager = _run(f, make, None, calls)
    modes = [False] + [True] * HAVE_CC
    for native in modes:
        ember._dynamo.reset()
        got = _run(f, make, native, calls)
        _same_bits(eager[0], got[0])
        _same_bits(eager[1], got[1])
    return got[2]


@hypothesis.settings(max_examples=40, deadline=None, derandomize=True,
                     phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate])
@hypothesis.given(_multi_reads())
def test_values_read_several_times_sum_gradients_in_eager_order(case):
    # the replay (and the generated C) add a value's gradients in the order the engine runs the
    # readers' nodes: float addition is not associative, so from three reads on another order
    # rounds apart in the last bit
    _check_multi_read(case)


def test_values_read_three_times_known_case():
    # (exp + sin) + tanh of h, made in the order tanh, sin, exp: the engine runs the tanh node
    # first (the last add's last edge), then sin, then exp's scale; the reverse op order would
    # add the scale's gradient first and tanh's last
    prog = _check_multi_read((np.float32, "op", [(0, 0), (1, 0), (2, 0)], [2, 1, 0],
                              [True, True, True], False, 0))
    names = [e[6] for e in prog.bsched]
    assert names.index("Tanh") < names.index("Sin")


# -- reductions ending a chain: NumPy's pairwise order in C -------------------------------------

_CHAIN_OPS = [
    lambda a, b: a - b, lambda a, b: a * b, lambda a, b: (a - b) ** 2, lambda a, b: a.relu() + b,
    lambda a, b: a * 0.5 - b / 3, lambda a, b: ember.maximum(a, b) * a,
]


@st.composite
def _reductions(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    nd = draw(st.integers(1, 3))
    if nd == 1:
        shape = (draw(st.integers(1, 5000)),)
    else:
        last = draw(st.sampled_from([1, 2, 7, 8, 9, 127, 128, 129, 130, 1000, 5000]))
        last = draw(st.one_of(st.just(last), st.integers(1, 300)))
        lead = tuple(draw(st.integers(1, 40)) for _ in range(nd - 1))
        shape = lead + (last,)
    # the second operand: the same shape, the last dim only, or the leading dims (last: 1)
    other = draw(st.sampled_from(["same", "last", "rows"]))
    ops = [draw(st.integers(0, len(_CHAIN_OPS) - 1)) for _ in range(draw(st.integers(1, 3)))]
    kind = draw(st.sampled_from(["sum", "mean"]))
    dim = draw(st.sampled_from([None, -1, "keep"]))
    layout = draw(st.sampled_from(["contiguous", "transposed", "strided"]))
    return dtype, shape, other, ops, kind, dim, layout, draw(st.integers(0, 2 ** 16))


def _noncontiguous(a, layout):
    """``a``'s values in another memory layout (the last call's: the C's layout check fails)."""
    if layout == "transposed" and a.ndim >= 2:
        return ember.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    wide[..., ::2] = a
    return ember.tensor(wide)[..., ::2]


def _check_reduction(case, threads):
    from ember import _threads

    dtype, shape, other, ops, kind, dim, layout, seed = case
    rng = np.random.default_rng(seed)
    xa = rng.standard_normal(shape).astype(dtype)
    ya = rng.standard_normal({"same": shape, "last": shape[-1:],
                              "rows": shape[:-1] + (1,)}[other]).astype(dtype)
    calls = []

    def make():
        return ember.tensor(xa, requires_grad=True), ember.tensor(ya, requires_grad=True)

    def make_other():  # each run's last call in another layout: NumPy runs the group
        calls.append(None)
        if len(calls) % 4 == 0:
            return _noncontiguous(xa, layout).requires_grad_(), ember.tensor(ya, requires_grad=True)
        return make()

    def f(x, y):
        for k in ops:
            x = _CHAIN_OPS[k](x, y)
        red = getattr(x, kind)
        return red() if dim is None else red(-1, keepdim=dim == "keep")

    before, threshold = ember.get_num_threads(), _threads.THRESHOLD
    try:
        _threads.THRESHOLD = 256  # (so that small kernels split too)
        ember.set_num_threads(threads)
        for make_args in [make] + [make_other] * (layout != "contiguous"):
            eager = _run(f, make_args, None)
            replay = _run(f, make_args, False)
            ember._dynamo.reset()
            native = _run(f, make_args, True)
            for got in (replay, native):
                _same_bits(eager[0], got[0])
                _same_bits(eager[1], got[1])
    finally:
        _threads.THRESHOLD = threshold
        ember.set_num_threads(before)
    return native[2]


@needs_cc
@pytest.mark.parametrize("threads", [1, 2])
@hypothesis.settings(max_examples=25, deadline=None, derandomize=True,
                     phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate])
@hypothesis.given(_reductions())
def test_reductions_ending_a_chain_are_fused_bitwise(threads, case):
    prog = _check_reduction(case, threads)
    dtype, shape, other, ops, kind, dim, layout, seed = case
    assert f"then {kind} over" in prog.c_source, prog.c_source


@needs_cc
def test_mse_and_row_dot_fuse_their_reduction():
    rng = np.random.default_rng(5)
    p, y = rng.standard_normal((2, 3000, 7)).astype(np.float32)
    x, w = rng.standard_normal((700, 129)).astype(np.float32), rng.standard_normal(129)

    def mse(pred, target):  # as users write it
        return ((pred - target) ** 2).mean()

    def dot(a, b):
        return (a * b).sum(-1)

    for fn, arrays in ((mse, (p, y)), (dot, (x, w.astype(np.float32)))):
        prog = _check_three_ways(fn, lambda arrays=arrays: tuple(
            ember.tensor(a, requires_grad=True) for a in arrays))
        assert prog.c_source.count("ops over shape") == 1
        assert "then mean over all elements" in prog.c_source or \
            "then sum over the last dim" in prog.c_source
        if fn is mse:  # its backward: pow's rule (grad * 2 * a) and sub's in one kernel
            assert "rules over shape (3000, 7) (21000 elements): pow, sub */" in prog.c_source


@needs_cc
def test_broadcast_incoming_gradient_runs_the_backward_kernel():
    # a mean's backward hands a broadcast view (over 4096 elements): the backward kernel of
    # pow and sub takes a C-ordered copy of it instead of leaving the rules to NumPy
    rng = np.random.default_rng(8)
    p, y = rng.standard_normal((2, 300, 70)).astype(np.float32)

    def mse(a, b):
        return ((a - b) ** 2).mean()

    f = ember.compile(mse)
    for _ in range(3):
        f(ember.tensor(p, requires_grad=True), ember.tensor(y))
    ns = _prog(f).bwd_fn.__globals__
    calls = []
    kernel = ns["KB0"]
    ns["KB0"] = lambda *a: (calls.append(1), kernel(*a))[1]
    if "KB0P" in ns:  # (called through the native core's call_kernel)
        callk = ns["CALLK"]
        ns["CALLK"] = lambda f, *a: (f == ns["KB0P"] and calls.append(1), callk(f, *a))[1]
    x = ember.tensor(p, requires_grad=True)
    f(x, ember.tensor(y)).backward()
    x_eager = ember.tensor(p, requires_grad=True)
    mse(x_eager, ember.tensor(y)).backward()
    assert calls == [1]
    _same_bits([x_eager.grad.numpy()], [x.grad.numpy()])


@needs_cc
def test_fused_reductions_through_raw_pointers(monkeypatch):
    from ember._compile import codegen

    monkeypatch.setattr(codegen, "_data_offset_ok", lambda lib: False)
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((300, 50)).astype(np.float32), rng.standard_normal(50)

    def make():
        return ember.tensor(a, requires_grad=True), ember.tensor(b.astype(np.float32))

    for f in (lambda x, y: ((x - y) ** 2).mean(), lambda x, y: (x * y).sum(-1)):
        ember._dynamo.reset()
        prog = _check_three_ways(f, make)
        assert not prog.c_by_object and ".ctypes.data" in prog.source


# -- training steps: eager vs NumPy replay vs generated C ---------------------------------------

class _TinyGPT(nn.Module):
    """Hand-written attention (masked_fill + softmax), a tanh GELU written out, dropout."""

    def __init__(self, vocab=11, block=8, width=16, heads=2):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(block, width)
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.fc1, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(width, vocab)
        self.register_buffer("mask", ember.tril(ember.ones(block, block)).view(1, 1, block, block))

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.tok(idx) + self.pos(ember.arange(T))
        C = x.shape[-1]
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (C // self.heads) ** 0.5)
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf")).softmax(dim=-1)
        y = (self.drop(att) @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.drop(self.proj(y))
        h = self.fc1(self.ln2(x))
        h = 0.5 * h * (1.0 + ember.tanh(0.7978845608 * (h + 0.044715 * h * h * h)))
        x = x + self.drop(self.fc2(h))
        logits = self.head(x)
        return nn.functional.cross_entropy(logits.view(B * T, -1), targets.view(B * T))


def _mlp():
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 32),
                         nn.ReLU(), nn.Linear(32, 5))


def _train(make_model, batch, native, steps=5):
    ember.manual_seed(0)
    model = make_model()
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    saved = config.native
    config.native = bool(native)
    try:
        if isinstance(model, _TinyGPT):
            fwd = model if native is None else ember.compile(model)
        else:
            loss_fn = nn.CrossEntropyLoss()

            def step(x, y):
                return loss_fn(model(x), y)

            fwd = step if native is None else ember.compile(step)
        ember.manual_seed(1)  # the dropout stream: the same in every mode
        losses, grads = [], []
        for _ in range(steps):
            x, y = batch()
            loss = fwd(x, y)
            opt.zero_grad()
            loss.backward()
            losses.append(loss.detach().numpy().copy())
            grads.append([p.grad.numpy().copy() for p in model.parameters()])
            opt.step()
        prog = None
        if native is not None:
            comp = fwd._compiled if hasattr(fwd, "_compiled") else fwd._ember_compiled
            prog = next(iter(comp.cache.values())).prog
        return losses, grads, prog
    finally:
        config.native = saved


@needs_cc
@pytest.mark.parametrize("which", ["mlp", "gpt"])
def test_training_steps_bitwise(which):
    rng = np.random.default_rng(3)
    if which == "mlp":
        xs, ys = rng.standard_normal((16, 20)).astype(np.float32), rng.integers(0, 5, 16)
        make = _mlp
    else:
        xs, ys = rng.integers(0, 11, (4, 8)), rng.integers(0, 11, (4, 8))
        make = _TinyGPT

    def batch():
        return ember.tensor(xs), ember.tensor(ys)

    eager = _train(make, batch, None)
    replay = _train(make, batch, False)
    native = _train(make, batch, True)
    assert "ops over shape" in native[2].c_source and "/* backward, " in native[2].c_source
    for got in (replay, native):
        for a, b in zip(eager[0], got[0]):
            np.testing.assert_array_equal(a, b)
        for ga, gb in zip(eager[1], got[1]):
            for a, b in zip(ga, gb):
                np.testing.assert_array_equal(a, b)


# -- the compiler and the cache -----------------------------------------------------------------

_SCRIPT = textwrap.dedent("""
    import json, warnings
    import numpy as np
    import ember
    from ember._compile import cc
    warnings.simplefilter("always")
    x = ember.tensor(np.linspace(-2, 2, 60, dtype=np.float32).reshape(6, 10))
    f = ember.compile(lambda x: (x * 3 - 1).relu() / 2 + x)
    with warnings.catch_warnings(record=True) as w:
        for _ in range(4):
            out = f(x)
        g = ember.compile(lambda x: (x + 1).abs() * x - 2)
        for _ in range(4):
            g(x)
    prog = next(iter(f._ember_compiled.cache.values())).prog
    ok = bool(np.array_equal(out.numpy(), ((x * 3 - 1).relu() / 2 + x).numpy()))
    print(json.dumps({"stats": cc.stats, "native": bool(prog.c_source), "ok": ok,
                      "warnings": [str(m.message) for m in w]}))
""")


def _child(cache, **env):
    e = dict(os.environ, EMBER_CACHE_DIR=str(cache), **env)
    for switch in ("EMBER_PURE_PYTHON", "EMBER_COMPILE_NATIVE"):  # (the test's own, not ours)
        if switch not in env:
            e.pop(switch, None)
    r = subprocess.run([sys.executable, "-c", _SCRIPT], env=e, capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@needs_cc
def test_cache_reused_by_a_second_process_and_corrupt_entry_rebuilt(tmp_path):
    first = _child(tmp_path)
    assert first["native"] and first["ok"] and first["warnings"] == []
    assert first["stats"]["builds"] == 2 and first["stats"]["cache_hits"] == 0
    second = _child(tmp_path)
    assert second["native"] and second["ok"]
    assert second["stats"]["builds"] == 0 and second["stats"]["cache_hits"] == 2
    libs = sorted(tmp_path.glob("k*.so"))
    assert len(libs) == 2
    for lib in libs:  # truncated and garbled: rebuilt, never loaded
        lib.write_bytes(lib.read_bytes()[:100] + b"garbage")
    third = _child(tmp_path)
    assert third["native"] and third["ok"]
    assert third["stats"]["builds"] == 2 and third["stats"]["cache_hits"] == 0


@needs_cc
def test_two_processes_compiling_at_once(tmp_path):
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path))
    env.pop("EMBER_PURE_PYTHON", None)
    procs = [subprocess.Popen([sys.executable, "-c", _SCRIPT], env=env, cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        res = json.loads(out.strip().splitlines()[-1])
        assert res["ok"] and res["native"] and res["warnings"] == []
    assert len(list(tmp_path.glob("k*.so"))) == 2 and not list(tmp_path.glob(".tmp-*"))
    after = _child(tmp_path)  # every entry whole: all loaded from the cache
    assert after["stats"]["cache_hits"] == 2 and after["stats"]["builds"] == 0


def test_no_compiler_warns_once_and_replays_numpy(tmp_path):
    res = _child(tmp_path, CC="/nonexistent/cc")
    assert res["ok"] and not res["native"]
    assert len(res["warnings"]) == 1 and "no working C compiler" in res["warnings"][0]


def test_switched_off_by_environment(tmp_path):
    for env in ({"EMBER_COMPILE_NATIVE": "0"}, {"EMBER_PURE_PYTHON": "1"}):
        res = _child(tmp_path, **env)
        assert res["ok"] and not res["native"] and res["warnings"] == []
        assert res["stats"]["builds"] == 0 and res["stats"]["cache_hits"] == 0


@needs_cc
def test_compile_time_is_counted(tmp_path, monkeypatch):
    from ember import _compile

    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "cold"))
    builds, secs = cc.stats["builds"], cc.stats["build_seconds"]
    f = ember.compile(lambda x: ((x * 2 - 1).relu() ** 2).mean())
    for _ in range(3):
        f(ember.randn(40, 30, requires_grad=True))
    st = _compile.stats
    assert st["compiled"] == 1 and cc.stats["builds"] == builds + 1
    assert cc.stats["build_seconds"] > secs
    assert st["compile_seconds"] >= st["run_seconds"] + st["codegen_seconds"] - 1e-9
    assert st["run_seconds"] > 0 and st["codegen_seconds"] >= cc.stats["build_seconds"] - secs
    ember._dynamo.reset()
    assert st["compile_seconds"] == st["run_seconds"] == st["codegen_seconds"] == 0.0


@needs_cc
def test_bench_compile_time_cold_then_warm(tmp_path):
    sys.path.insert(0, str(ROOT))
    try:
        from bench import compile_time
    finally:
        sys.path.remove(str(ROOT))
    cold = compile_time.run_one("sine_regression", str(tmp_path))
    warm = compile_time.run_one("sine_regression", str(tmp_path))
    assert "error" not in cold and "error" not in warm, (cold, warm)
    assert cold["builds"] >= 1 and cold["build_s"] > 0 and cold["replays"] > 0
    assert warm["builds"] == 0 and warm["cache_hits"] >= 1 and warm["build_s"] == 0
    assert cold["compile_s"] >= cold["run_s"] and warm["compile_s"] >= warm["run_s"]


@needs_cc
def test_a_lone_relu_backward_runs_as_c_and_equals_eager():
    """Between two Linear layers ReLU's backward is a run of one rule: its NumPy path takes
    several passes (compare, negate, bitwise and), so it is built as C alone; same bits as the
    replay and eager, zeros, NaN and infinities included."""
    rng = np.random.default_rng(3)
    xa = rng.standard_normal((8, 5)).astype(np.float32)
    xa[0, :4] = [0.0, -0.0, np.inf, np.nan]
    ember.manual_seed(0)
    l1, l2 = nn.Linear(5, 6), nn.Linear(6, 2)

    def make():
        return (ember.tensor(xa, requires_grad=True),)

    def f(x):
        return l2(l1(x).relu())

    prog = _check_three_ways(f, make)
    assert prog.c_source.count("/* backward, 1 rules") == 1 and "relu" in prog.c_source
    assert _calls(prog.source, "KB0")


def test_a_second_batch_size_reuses_the_generated_python():
    """Shapes and loop counts are bound by name, so the same model at another batch size
    generates the same Python text and reuses its code object (Python compiles ~11 us a line);
    each size keeps its own kernels and constants, and both equal eager."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Dropout(0.2), nn.Linear(8, 3))
    f = ember.compile(lambda a: model(a).relu().sum())
    outs = {}
    for n in (6, 4):
        x = ember.randn(n, 5)
        for _ in range(3):
            ember.manual_seed(1)
            y = f(x)
        ember.manual_seed(1)
        outs[n] = (y.item(), model(x).relu().sum().item())
    p6, p4 = (e.prog for e in f._ember_compiled.cache.values())
    assert p6.source == p4.source and p6.fwd_fn.__code__ is p4.fwd_fn.__code__
    assert p6.fwd_fn.__globals__ is not p4.fwd_fn.__globals__
    for got, want in outs.values():
        assert got == want


@needs_cc
def test_kernels_called_through_the_native_core_equal_ctypes_calls(monkeypatch):
    """Unsplit kernels run through ``ember._native.call_kernel`` (no ctypes conversions per
    call) where the native core is active: the same bits as through ctypes, forward and
    backward (test_random_chains_bitwise runs kernels of many arities through it)."""
    from ember import _native_core
    from ember._compile import codegen

    if _native_core.native is None:
        pytest.skip("the native core is off")
    rng = np.random.default_rng(11)
    xa, ba = rng.standard_normal((2, 6, 5)).astype(np.float32)

    def fn(x, b):
        return ((x * b + 1).tanh() * x - b).exp().sum()

    def make():
        return (ember.tensor(xa, requires_grad=True), ember.tensor(ba, requires_grad=True))

    via_core = _run(fn, make, True)
    assert "CALLK(KG0P, 0, KG0_N, " in via_core[2].source
    assert "CALLK(KB0P, 0, KB0_N, " in via_core[2].source
    ember._dynamo.reset()
    monkeypatch.setattr(codegen, "_call_kernel", lambda: None)
    via_ctypes = _run(fn, make, True)
    assert "CALLK" not in via_ctypes[2].source and _calls(via_ctypes[2].source, "KG0") == 1
    _same_bits(via_core[0] + via_core[1], via_ctypes[0] + via_ctypes[1])
    call = _native_core.native.call_kernel
    with pytest.raises(TypeError, match="up to 12"):
        call(1, 0, 1, *([None] * 13))
    with pytest.raises(ValueError, match="NULL"):
        call(0, 0, 1)


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_zero_d_backward_runs_as_one_kernel(dtype):
    """The scalar seed (`w * x ** 2 + 1` on 0-d tensors): its backward rules (add, mul, pow by
    2) are one generated C function over one element, as the forward's ops are; gradients bit
    for bit eager's and the replay's."""
    def f(w, x):
        return w * x ** 2 + 1

    def make():
        return (ember.tensor(np.array(3.0, dtype), requires_grad=True),
                ember.tensor(np.array(-2.5, dtype), requires_grad=True))

    prog = _check_three_ways(f, make)
    assert "/* backward, 3 rules over shape ()" in prog.c_source
    assert _calls(prog.source, "KB0") == 1
