"""torch.compile on CUDA (ember/_compile/cudagen.py): a CUDA program's fused elementwise groups
run as CuPy ``ElementwiseKernel`` launches and give eager mode's bits, forward and backward.

Each test runs on fake CUDA (its ``ElementwiseKernel`` compiles the emitted operation text as C
on the host: ember/testing/_fake_kernels.py) and, where CuPy and a GPU are usable, on the real
device (``scripts/gpu_check.sh`` runs this file there)."""

import contextlib

import numpy as np
import pytest
from devices import cuda_available
from test_compile_native import _same_bits as _same_list

import ember
import ember._dynamo
from ember import nn
from ember._compile import cc, config, cudagen
from ember.testing import _fake_kernels, fake_cuda

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

HAVE_CC = cc.compiler() is not None and config.native
DEVICES = ["fake_cuda"] + (["cuda"] if cuda_available() else [])
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no C compiler (or EMBER_PURE_PYTHON=1, "
                              "EMBER_COMPILE_NATIVE=0): fake CUDA's kernels are built as C")


@pytest.fixture(autouse=True)
def _fresh(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernels"))
    ember._dynamo.reset()
    yield
    ember._dynamo.reset()


def _on(device):
    return fake_cuda() if device == "fake_cuda" else contextlib.nullcontext()


def _host(t):
    return None if t is None else ember._backend.to_numpy(t.detach()._data).copy()


def _prog(compiled):
    (entry,) = compiled._ember_compiled.cache.values()
    return entry.prog


def _run(fn, arrays, native, calls=3):
    """``fn`` on CUDA tensors made from ``arrays``: eager (native None), or compiled with
    generated kernels on or off; the outputs, the inputs' gradients and the program."""
    saved = config.native
    config.native = bool(native)
    try:
        f = fn if native is None else ember.compile(fn)
        for _ in range(calls):
            args = [ember.tensor(a, device="cuda", requires_grad=True) for a in arrays]
            out = f(*args)
        seed = ember.tensor(np.random.default_rng(7).standard_normal(out.shape),
                            device="cuda").to(out.dtype)
        out.backward(seed)
        return _host(out), [_host(a.grad) for a in args], (None if native is None else _prog(f))
    finally:
        config.native = saved


def _same_bits(a, b):
    _same_list([a], [b])  # (every bit: signed zeros and NaN payloads too)


def _three_ways(fn, arrays):
    """Eager, the replay without kernels and the replay with them: the same bits."""
    eager = _run(fn, arrays, None)
    replay = _run(fn, arrays, False)
    native = _run(fn, arrays, True)
    for got in (replay, native):
        _same_bits(eager[0], got[0])
        for a, b in zip(eager[1], got[1]):
            _same_bits(a, b)
    return native[2]


class _Spy:
    """Counts the launches of fake CUDA's ElementwiseKernel (and the kernels made)."""

    def __init__(self, monkeypatch):
        self.made, self.launches = [], 0
        orig_init, orig_call = _fake_kernels.ElementwiseKernel.__init__, \
            _fake_kernels.ElementwiseKernel.__call__
        spy = self

        def init(k, *a, **kw):
            orig_init(k, *a, **kw)
            spy.made.append(k)

        def call(k, *a, **kw):
            spy.launches += 1
            return orig_call(k, *a, **kw)

        monkeypatch.setattr(_fake_kernels.ElementwiseKernel, "__init__", init)
        monkeypatch.setattr(_fake_kernels.ElementwiseKernel, "__call__", call)
        cudagen._BUILT.clear()


@needs_cc
@pytest.mark.parametrize("device", DEVICES)
def test_chain_is_one_kernel_forward_and_backward(device, monkeypatch):
    spy = _Spy(monkeypatch) if device == "fake_cuda" else None
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 32)).astype(np.float32)
    w = rng.standard_normal(32).astype(np.float32)
    x.flat[:3] = [0.0, -0.0, -1.0]  # relu's tie and signed zeros

    def f(x, w):
        y = (x * w + 1.0).relu() * 2 - x
        return y * y / 3

    with _on(device):
        prog = _three_ways(f, [x, w])
    src = prog.c_source
    assert "cudagen.py" in src and src.count("ElementwiseKernel(") == 2
    assert "in:  float32 x0, float32 x1" in src and "max_f((float)0, v1)" in src
    assert "0x" not in src.split("#endif")[-1]  # constants in decimal (NVRTC's C++)
    if spy is not None:
        assert len(spy.made) == 2 and all(k.options == cudagen.OPTIONS for k in spy.made)
        assert "--fmad=false" in cudagen.OPTIONS
        assert spy.launches == 2  # the third call replays: its forward kernel, then backward's


_UNARY = [lambda x: -x, lambda x: x.abs(), lambda x: x * x, lambda x: (x.abs() + 0.1).sqrt(),
          lambda x: x.relu(), lambda x: x.clamp(-0.5, 0.7), lambda x: x * 2.5 - 1,
          lambda x: x / 3, lambda x: x ** 2, lambda x: (x.abs() + 1) ** -0.5]
_BINARY = [lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y,
           lambda x, y: x / (y.abs() + 1), ember.maximum, ember.minimum,
           lambda x, y: ember.add(x, y, alpha=0.25), lambda x, y: ember.where(x > y, x, y)]
_SHAPES = [(6, 5), (5,), (6, 1), (1, 5), (3, 6, 5), (3, 1, 5)]


@st.composite
def _chains(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    shapes = [draw(st.sampled_from(_SHAPES)) for _ in range(draw(st.integers(1, 3)))]
    ops = [("u", draw(st.integers(0, len(_UNARY) - 1)), draw(st.integers(0, 20)))
           if draw(st.booleans()) else
           ("b", draw(st.integers(0, len(_BINARY) - 1)), draw(st.integers(0, 20)),
            draw(st.integers(0, 20))) for _ in range(draw(st.integers(2, 6)))]
    return dtype, shapes, ops, draw(st.integers(0, 2 ** 16))


@needs_cc
@pytest.mark.parametrize("device", DEVICES)
@hypothesis.settings(max_examples=15, deadline=None, derandomize=True,
                     phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate])
@hypothesis.given(_chains())
def test_random_chains_bitwise(device, chain):
    dtype, shapes, ops, seed = chain
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]

    def f(*xs):
        vals = list(xs)
        for op in ops:
            if op[0] == "u":
                vals.append(_UNARY[op[1]](vals[op[2] % len(vals)]))
            else:
                vals.append(_BINARY[op[1]](vals[op[2] % len(vals)], vals[op[3] % len(vals)]))
        return vals[-1] * 1.0 + vals[-2]

    with _on(device):
        _three_ways(f, arrays)


@needs_cc
@pytest.mark.parametrize("device", DEVICES)
def test_a_sum_ending_a_chain_stays_cupys(device):
    """On the CPU a sum ends the group in NumPy's pairwise order; on CUDA it is CuPy's own
    reduction (a fused one would round differently), so the group stops before it."""
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((8, 300)).astype(np.float32) for _ in range(2))

    def f(x, y):
        d = x - y
        return (d * d * 0.5).sum(-1)

    with _on(device):
        prog = _three_ways(f, [a, b])
    assert prog.c_source.count("ElementwiseKernel(") >= 1 and "pairwise" not in prog.c_source


@needs_cc
@pytest.mark.parametrize("device", DEVICES)
def test_a_cpu_scalar_joining_a_cuda_op_is_left_out(device):
    """A 0-d CPU tensor may join a CUDA op (as in PyTorch): it is no kernel argument."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((5, 7)).astype(np.float32)
    scale = ember.tensor(1.5)

    def f(x):
        return ((x * scale) + 1).relu() * x

    with _on(device):
        _three_ways(f, [a])


def _mlp():
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 32),
                         nn.GELU(approximate="tanh"), nn.Linear(32, 5))


@needs_cc
@pytest.mark.parametrize("device", DEVICES)
def test_training_steps_bitwise(device):
    rng = np.random.default_rng(3)
    xs, ys = rng.standard_normal((16, 20)).astype(np.float32), rng.integers(0, 5, 16)

    def train(native):
        saved = config.native
        config.native = bool(native)
        try:
            ember.manual_seed(0)
            model = _mlp().cuda()
            opt = ember.optim.AdamW(model.parameters(), lr=1e-2)

            def step(x, y):
                return nn.functional.cross_entropy(model(x), y)

            fwd = step if native is None else ember.compile(step)
            ember.manual_seed(1)
            losses, grads = [], []
            for _ in range(4):
                loss = fwd(ember.tensor(xs, device="cuda"), ember.tensor(ys, device="cuda"))
                opt.zero_grad()
                loss.backward()
                losses.append(_host(loss))
                grads.append([_host(p.grad) for p in model.parameters()])
                opt.step()
            return losses, grads
        finally:
            config.native = saved

    with _on(device):
        eager, native = train(None), train(True)
    for a, b in zip(eager[0], native[0]):
        _same_bits(a, b)
    for ga, gb in zip(eager[1], native[1]):
        for a, b in zip(ga, gb):
            _same_bits(a, b)


def test_decimal_constants_are_exact():
    for v in (0.1, 1 / 3, 2.5e-300, -1e300, 3.4028234663852886e38, float(np.float32(0.1))):
        text = cudagen._decimal(f"x * {v.hex()} + ({(-v).hex()})")
        lhs, rhs = text[4:].split(" + ")
        assert float(lhs) == v and float(rhs.strip("()")) == -v


@needs_cc
def test_fake_elementwise_kernel_follows_cupys_rules():
    with fake_cuda():
        k = ember._backend._cupy.ElementwiseKernel(
            "float32 x, float32 y", "float32 z", "z = x * y + (float)1;", "ember_test_k",
            preamble="", options=cudagen.OPTIONS)
        x = ember.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device="cuda")._data
        y = ember.tensor(np.array([1, 2, 3], np.float32), device="cuda")._data
        z = k(x, y)  # inputs broadcast; the output made
        assert isinstance(z, ember._backend.FakeCudaArray)
        np.testing.assert_array_equal(np.asarray(z), np.asarray(x) * np.asarray(y) + 1)
        with pytest.raises(TypeError, match="float64"):
            k(x.astype(np.float64), y)
        with pytest.raises(TypeError, match="not a CUDA array"):
            k(np.asarray(x), y)


def test_gpu_check_script_and_cuda_benchmark_run_here():
    """The GPU machine's script parses, and its benchmark runs on fake CUDA (its smoke mode)."""
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[1]
    r = subprocess.run(["bash", "-n", str(root / "scripts" / "gpu_check.sh")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "bench.compile_cuda", "--fake", "--quick"],
                       capture_output=True, text=True, cwd=root, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [line for line in r.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 3 and all('"compiled_ms"' in row for row in rows)
