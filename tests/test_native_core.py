"""The optional C core ``ember._native`` (docs/design.md, "The native core").

It must be an implementation, never a behaviour: the engine's walk in C gives the same gradients,
the same errors and the same hook calls as the Python loop it mirrors. These tests run with
whichever core is active (CI runs the suite both ways, once with ``EMBER_PURE_PYTHON=1``); the
comparisons swap the walk in-process so both loops run on the same graphs. Also here: reference
counting (a million small ops with flat memory, stable ``sys.getrefcount``), cyclic graphs
collected, a run under ``python -X dev`` with ``PYTHONMALLOC=debug``, the stale-extension check
and a build without a C compiler.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import warnings
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import _native_core
from ember.autograd import engine

ROOT = Path(__file__).resolve().parent.parent
NATIVE = _native_core.native
needs_native = pytest.mark.skipif(NATIVE is None, reason=f"ember._native inactive: "
                                                         f"{_native_core.reason}")
WALKS = {"python": engine._walk_nodes_python}
if NATIVE is not None:
    WALKS["native"] = NATIVE.walk_nodes


def _run(script: str, env: dict | None = None, args: tuple = ()) -> subprocess.CompletedProcess:
    full = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, *args, "-c", script], capture_output=True, text=True,
                          timeout=600, env=full, cwd=ROOT)


# -- which core, and why ------------------------------------------------------------------

def test_the_active_core_is_reported() -> None:
    line = _native_core.describe()
    assert line.startswith("core: native (" if NATIVE is not None else "core: pure Python (")
    out = _run("import sys; from ember.cli import main; sys.exit(main(['--version']))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1].startswith("core: ")


def test_pure_python_env_selects_the_python_walk() -> None:
    out = _run("from ember import _native_core as c; from ember.autograd import engine as e\n"
               "print(c.native is None, e._walk_nodes is e._walk_nodes_python, c.describe())",
               env={"EMBER_PURE_PYTHON": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("True True core: pure Python (EMBER_PURE_PYTHON is set)")


@needs_native
def test_the_native_walk_runs_when_built() -> None:
    assert engine._walk_nodes is NATIVE.walk_nodes
    assert NATIVE.PY_HASH == _native_core.source_hash(_native_core.MIRRORED)


@needs_native
def test_a_stale_extension_warns_and_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """A mirrored Python module changed since the build: the Python core runs, one warning."""
    real = _native_core.source_hash
    monkeypatch.setattr(_native_core, "source_hash",
                        lambda files, root=_native_core.PACKAGE_DIR: "0" + (real(files, root) or ""))
    with pytest.warns(RuntimeWarning, match="stale.*pip install -e"):
        mod, why = _native_core._load()
    assert mod is None and "stale" in why


def test_a_build_without_a_compiler_installs_the_python_core(tmp_path: Path) -> None:
    """setup.py never fails for want of a compiler: one line, a note for ``ember --version``."""
    pytest.importorskip("setuptools")
    out = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(tmp_path / "lib"),
         "--build-temp", str(tmp_path / "tmp")],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, "CC": "/bin/false"})
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stderr.splitlines() if "ember._native was not built" in line]
    assert len(lines) == 1 and "installed the pure-Python core" in lines[0]
    note = tmp_path / "lib" / "ember" / _native_core.BUILD_INFO
    assert "no working C compiler" in note.read_text()
    assert not list((tmp_path / "lib").rglob("_native*.so"))


# -- identical by construction --------------------------------------------------------------

def _fields(t: Any) -> tuple:
    return (type(t), t._data, t._rg, t._grad_fn, t._output_nr, t.__dict__)


@pytest.mark.parametrize("core", ["python", "native"])
def test_make_sets_the_same_fields(core: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from ember import _tensor_base

    if core == "native" and NATIVE is None:
        pytest.skip("ember._native inactive")
    make = _tensor_base._make_python if core == "python" else NATIVE.tensor_make
    arr = np.ones((2, 3), np.float32)
    node = (ember.ones(1, requires_grad=True) * 2).grad_fn
    for args, kwargs in [((arr,), {}), ((arr, True, node, 1), {}), ((arr, True), {"grad_fn": node}),
                         ((np.float32(2.0),), {}), (([1.0, 2.0],), {})]:
        t, ref = make(*args, **kwargs), _tensor_base._make_python(*args, **kwargs)
        assert _fields(t)[2:] == _fields(ref)[2:] and type(t) is type(ref) is ember.Tensor
        assert t._data is args[0] if type(args[0]) is np.ndarray else t._data.dtype == ref._data.dtype
    seen = []  # compile's tracer hook sees every tensor made, whichever core makes it
    monkeypatch.setattr(_tensor_base, "_on_make", seen.append)
    t = make(arr)
    assert seen == [t]



def _graphs() -> list[tuple[str, Callable[[], list]]]:
    """Programs whose gradients (and hook calls, errors) both walks must reproduce exactly.
    Each returns a list of arrays/strings to compare."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((4, 3)).astype(np.float32)
    B = rng.standard_normal((3,)).astype(np.float32)

    def leaves() -> tuple:
        return (ember.tensor(A, requires_grad=True), ember.tensor(B, requires_grad=True))

    def broadcast() -> list:
        a, b = leaves()
        ((a * b + b).tanh().sum() * 2).backward()
        return [a.grad.numpy(), b.grad.numpy()]

    def dtype_cast() -> list:
        a = ember.tensor(A, requires_grad=True)
        d = ember.tensor(A.astype(np.float64), requires_grad=True)
        (a * d).sum().backward()
        return [a.grad.numpy(), str(a.grad.dtype), d.grad.numpy(), str(d.grad.dtype)]

    def shared_and_accumulated() -> list:
        a, b = leaves()
        y = a @ b
        (y * y + y).sum().backward()
        (a.exp().mean()).backward()
        return [a.grad.numpy(), b.grad.numpy()]

    def hooks_and_retain() -> list:
        a, b = leaves()
        seen = []
        h = a * 3
        h.retain_grad()
        h.register_hook(lambda g: seen.append(("tensor", g.numpy().copy())) or g * 2)
        out = (h + b).relu()
        out.grad_fn.register_hook(lambda gi, go: seen.append(("post", len(gi))))
        out.grad_fn.register_prehook(lambda go: seen.append(("pre", len(go))))
        a.register_hook(lambda g: g + 1)
        out.sum().backward()
        return [a.grad.numpy(), b.grad.numpy(), h.grad.numpy(), repr(seen)]

    def multi_output_and_views() -> list:
        a, b = leaves()
        p, q = a.split([1, 3], dim=0)
        m, i = a.max(dim=1)
        (p.sum() * 2 + q.t().sum() + m.sum() + a[1:, ::2].sum()).backward()
        return [a.grad.numpy(), i.numpy()]

    def custom_function() -> list:
        class Cube(ember.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                (x,) = ctx.saved_tensors
                return 3 * x ** 2 * g

        a, b = leaves()
        (Cube.apply(a) * b).sum().backward()
        return [a.grad.numpy(), b.grad.numpy()]

    def create_graph_and_grad() -> list:
        a, b = leaves()
        y = (a.sin() * b).sum()
        (ga,) = ember.autograd.grad(y, [a], create_graph=True)
        (gga,) = ember.autograd.grad(ga.sum(), [a])
        gb = ember.autograd.grad(y, [b, a], allow_unused=True, retain_graph=False)
        return [ga.detach().numpy(), gga.numpy(), gb[0].numpy()]

    def retain_graph_and_freed() -> list:
        a, b = leaves()
        y = (a.exp() * b).sum()
        y.backward(retain_graph=True)
        y.backward()
        try:
            y.backward()
        except RuntimeError as e:
            return [a.grad.numpy(), str(e)]
        return [a.grad.numpy(), "no error"]

    def version_error() -> list:
        a, b = leaves()
        e = a.exp()
        y = e.sum()
        with ember.no_grad():
            e.add_(1)
        try:
            y.backward()
        except RuntimeError as err:
            return [str(err)]
        return ["no error"]

    def bad_grad_count() -> list:
        class Wrong(ember.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any, y: Any) -> Any:
                return x * y

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g

        a, b = leaves()
        try:
            Wrong.apply(a, b).sum().backward()
        except RuntimeError as err:
            return [str(err)]
        return ["no error"]

    def anomaly_mode() -> list:
        a, b = leaves()
        with ember.autograd.detect_anomaly(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (a.log().nan_to_num() * b).sum().backward()
        return [a.grad.numpy(), b.grad.numpy()]

    def no_grad_leaf_and_unused() -> list:
        a, b = leaves()
        c = ember.tensor(A)  # requires no grad
        (a * c + b * 0).sum().backward(inputs=[b])
        return [b.grad.numpy(), repr(a.grad)]

    def leaves_never_share_a_grad() -> list:
        a, b = leaves()
        c = ember.tensor(A, requires_grad=True)
        (a + c).sum().backward()  # Add hands one array to both leaves: the second gets a copy
        e = ember.tensor(2.0, requires_grad=True)  # 0-d: NumPy scalars on the way
        (b.sum() * e + e * e).backward()
        (b.sum() * e).backward()  # accumulates into existing .grads
        return [a.grad.numpy(), c.grad.numpy(), a.grad._data is not c.grad._data,
                a.grad._data.flags.writeable, b.grad.numpy(), e.grad.numpy(), type(e.grad._data)]

    return [(f.__name__, f) for f in (
        leaves_never_share_a_grad, broadcast, dtype_cast, shared_and_accumulated, hooks_and_retain, multi_output_and_views,
        custom_function, create_graph_and_grad, retain_graph_and_freed, version_error,
        bad_grad_count, anomaly_mode, no_grad_leaf_and_unused)]


def _same(x: list, y: list) -> bool:
    if len(x) != len(y):
        return False
    for u, v in zip(x, y):
        if isinstance(u, np.ndarray):
            if not (isinstance(v, np.ndarray) and u.dtype == v.dtype and u.shape == v.shape
                    and np.array_equal(u, v, equal_nan=True)):
                return False
        elif u != v:
            return False
    return True


def _use_core(core: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch, in this process, every function the native core replaces to ``core``'s."""
    from ember import _tensor_base
    from ember.autograd import function

    native = core == "native"
    monkeypatch.setattr(engine, "_walk_nodes", WALKS[core])
    monkeypatch.setattr(engine, "run_backward",
                        NATIVE.run_backward if native else engine._run_backward_python)
    monkeypatch.setattr(engine, "_dependencies",
                        NATIVE.dependencies if native else engine._dependencies_python)
    make = NATIVE.tensor_make if native else _tensor_base._make_python
    monkeypatch.setattr(_tensor_base.TensorBase, "_make", staticmethod(make))
    monkeypatch.setattr(function, "_make", make)
    monkeypatch.setattr(function, "_accumulator",
                        NATIVE.accumulator if native else function._accumulator_python)
    if hasattr(function, "_apply_python"):
        monkeypatch.setattr(function.Function, "apply", classmethod(
            NATIVE.function_apply if native else function._apply_python))


@needs_native
@pytest.mark.parametrize("name", [n for n, _ in _graphs()])
def test_both_cores_give_identical_results(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    program = dict(_graphs())[name]
    results = {}
    for core in ("python", "native"):
        _use_core(core, monkeypatch)
        results[core] = program()
    assert _same(results["python"], results["native"]), results


@needs_native
def test_both_dependency_counts_agree() -> None:
    a, b = ember.ones(3, requires_grad=True), ember.ones(3, requires_grad=True)
    h = a * b
    roots = [(h * h + h.exp()).sum().grad_fn, (h - b).sum().grad_fn]
    assert NATIVE.dependencies(roots) == engine._dependencies_python(roots)
    assert len(NATIVE.dependencies(roots)) == 7  # the roots themselves have none


@pytest.mark.parametrize("core", list(WALKS))
def test_a_replaced_engine_function_is_called_by_either_walk(core: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The C walk looks engine.py's functions up when it needs them: one spelling of each rule."""
    monkeypatch.setattr(engine, "_walk_nodes", WALKS[core])
    calls = []
    real = engine.sum_to_shape

    def spy(g: Any, shape: tuple, node: Any = None) -> Any:
        calls.append(tuple(shape))
        return real(g, shape, node)

    monkeypatch.setattr(engine, "sum_to_shape", spy)
    b = ember.ones(3, requires_grad=True)
    (ember.ones(2, 3) * b).sum().backward()
    assert calls == [(3,)] and b.grad.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("core", list(WALKS))
def test_broadcast_gradients_sum_to_the_input_shape_in_either_walk(
        core: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """sum_to_shape's common case (a CPU array that broadcasts) runs in C in the native walk,
    without engine.py's Python body (its _broadcasts_to test), with the same gradients."""
    monkeypatch.setattr(engine, "_walk_nodes", WALKS[core])
    checks = []
    real = engine._broadcasts_to

    def spy(src: tuple, dst: tuple) -> bool:
        checks.append(src)
        return real(src, dst)

    monkeypatch.setattr(engine, "_broadcasts_to", spy)
    rng = np.random.default_rng(0)
    shapes = [(4, 2, 3), (3,), (2, 1), (1, 2, 1), (1,), ()]
    leaves = [ember.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
              for s in shapes]
    y = leaves[0]
    for t in leaves[1:]:
        y = y * t
    (y * y).sum().backward()
    seen = list(checks)
    want = np.ones(shapes[0], np.float32)
    arrays = [t.detach().numpy() for t in leaves]
    prod = np.prod(np.broadcast_arrays(*arrays), axis=0)
    for t, a in zip(leaves, arrays):
        g = t.grad.numpy()
        assert g.shape == a.shape and g.dtype == np.float32
        full = 2 * prod * prod / np.where(a == 0, 1, a) * want
        np.testing.assert_allclose(g, engine.sum_to_shape(full, a.shape), rtol=1e-5)
    assert (seen == []) == (core == "native")


@pytest.mark.parametrize("core", list(WALKS))
def test_a_long_chain_needs_no_recursion(core: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "_walk_nodes", WALKS[core])
    x = ember.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0


def test_queued_callbacks_run_after_the_walk_in_either_core() -> None:
    """engine.queue_callback (DistributedDataParallel's hook): run once the walk is done, before
    backward returns, a callback may queue another; an error leaves no callback list behind."""
    x = ember.ones(3, requires_grad=True)
    order = []

    def hook(g: Any) -> None:
        order.append("hook")
        engine.queue_callback(lambda: order.append(("first", x.grad is not None))
                              or engine.queue_callback(lambda: order.append("second")))

    y = x * 2
    y.register_hook(hook)
    y.sum().backward()
    assert order == ["hook", ("first", True), "second"] and engine._final_callbacks == []
    z = (x * 3).sum()
    z.backward()
    with pytest.raises(RuntimeError, match="second time"):
        z.backward()
    assert engine._final_callbacks == [] and ember.is_grad_enabled()
    with pytest.raises(RuntimeError, match="during backward"):
        engine.queue_callback(lambda: None)


def test_grad_mode_is_per_thread_in_either_core() -> None:
    """The C paths read grad mode where the Python does (a thread-local): a thread under
    no_grad records nothing while the main thread records, and the other way round."""
    import threading

    x = ember.ones(3, requires_grad=True)
    seen: dict = {}
    go, done = threading.Event(), threading.Event()

    def worker() -> None:
        with ember.no_grad():
            go.wait(10)
            seen["thread"] = (x * 2).requires_grad
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    y = x * 2  # the main thread is in grad mode while the worker sits in no_grad
    go.set()
    done.wait(10)
    t.join()
    assert seen["thread"] is False and y.requires_grad and y.grad_fn is not None
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


# -- reference counting and GC ----------------------------------------------------------------

def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc (Linux)")
def test_a_million_small_ops_keep_memory_flat() -> None:
    """~1,000,000 ops (forward and backward nodes), memory and reference counts flat."""
    a = ember.ones(4, requires_grad=True)
    b = ember.ones(4, requires_grad=True)
    kept = (a * b).sum()  # a node kept alive across the loop: its count must not creep
    node = kept.grad_fn

    def step() -> None:
        y = a * b + a
        z = (y * 0.5 - b).sum()
        z.backward()
        try:  # the error path too: a second backward through freed saved arrays
            z.backward()
        except RuntimeError:
            pass
        kept.backward(retain_graph=True)

    for _ in range(2000):
        step()
    gc.collect()
    counts = (sys.getrefcount(a), sys.getrefcount(b), sys.getrefcount(node))
    before = _rss_mib()
    for _ in range(100_000):  # ~10 ops each
        step()
        a.grad = None
        b.grad = None
    gc.collect()
    assert (sys.getrefcount(a), sys.getrefcount(b), sys.getrefcount(node)) == counts
    assert _rss_mib() - before < 8, f"grew {_rss_mib() - before:.1f} MiB"


def test_cyclic_graphs_are_collected() -> None:
    """A ctx that keeps its own output (tensor -> grad_fn -> ctx field -> tensor) is a cycle:
    the cycle collector frees it, before and after backward."""

    class Keep(ember.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            y = x * 2
            ctx.out = y
            return y

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g * 2

    for run_backward in (False, True):
        x = ember.ones(3, requires_grad=True)
        y = Keep.apply(x)
        (y.sum() * 1).backward(retain_graph=True) if run_backward else None
        refs = [weakref.ref(y), weakref.ref(y.grad_fn)]
        del y
        gc.collect()
        assert all(r() is None for r in refs)


def test_the_walk_under_python_dev_mode_and_debug_malloc() -> None:
    """Reference-counting errors show up as crashes or assertion failures under
    ``-X dev`` with ``PYTHONMALLOC=debug``; a clean run of graphs with hooks, errors and
    create_graph, in whichever core is active."""
    script = (
        "import sys; sys.path.insert(0, 'tests')\n"
        "import gc, warnings, test_native_core as t\n"
        "warnings.simplefilter('ignore')\n"
        "for _ in range(3):\n"
        "    for name, program in t._graphs():\n"
        "        program()\n"
        "    gc.collect()\n"
        "print('ok')\n")
    out = _run(script, env={"PYTHONMALLOC": "debug"}, args=("-X", "dev"))
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")


def test_a_gradient_view_of_a_temporary_becomes_grad_without_a_copy() -> None:
    """A gather's backward returns a reshape of its scatter buffer: nothing else holds that
    buffer, so .grad keeps it (no second gradient-sized array); a view whose base is held
    elsewhere is copied, so .grad never shares memory with it."""
    x = ember.randn(100, 50, requires_grad=True)
    idx = ember.randint(0, 5000, (3000,))
    x.reshape(-1)[idx].sum().backward()  # (take's backward builds x's shape directly)
    assert x.grad._data.base is not None and x.grad.sum().item() == 3000.0

    keep = np.zeros(6, dtype=np.float32)

    class Leak(ember.autograd.Function):
        @staticmethod
        def forward(ctx: Any, a: Any) -> Any:
            return a * 1

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return ember.from_numpy(keep).view(2, 3)  # a view of an array held elsewhere

    w = ember.ones(2, 3, requires_grad=True)
    Leak.apply(w).sum().backward()
    keep[:] = 7
    assert w.grad.sum().item() == 0.0


def test_gradient_buffers_add_in_place_only_when_nothing_else_holds_them() -> None:
    from ember.autograd import engine

    a = np.ones(4, dtype=np.float32)
    buf = [a]
    del a
    out = engine._add_into_buffer(buf, 0, np.ones(4, dtype=np.float32))
    assert out.tolist() == [2.0] * 4
    kept = np.ones(4, dtype=np.float32)
    buf = [kept]
    out = engine._add_into_buffer(buf, 0, np.ones(4, dtype=np.float32))
    assert out is not kept and kept.tolist() == [1.0] * 4  # held elsewhere: a new array
    base = np.ones(8, dtype=np.float32)
    buf = [base[:4]]
    engine._add_into_buffer(buf, 0, np.ones(4, dtype=np.float32))
    assert base.tolist() == [1.0] * 8  # a view: never written through


def _branches(m: Any) -> list:
    x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1.0
    a.retain_grad()
    b = a + a                      # Add's backward hands the same gradient to both slots
    c = (a * 2).sum() + (b * 3).sum() + (a.exp() * a).sum()
    seen = []
    a.register_hook(lambda g: seen.append(g.clone()))
    c.backward()
    return [x.grad.tolist(), a.grad.tolist(), [s.tolist() for s in seen]]


def test_branching_gradients_sum_as_on_torch() -> None:
    torch = pytest.importorskip("torch")
    got, want = _branches(ember), _branches(torch)
    np.testing.assert_allclose(np.array(got[0]), np.array(want[0]), rtol=1e-6)
    np.testing.assert_allclose(np.array(got[1]), np.array(want[1]), rtol=1e-6)
    np.testing.assert_allclose(np.array(got[2]), np.array(want[2]), rtol=1e-6)


def _accumulated(m: Any) -> list:
    p = m.ones(3, requires_grad=True)
    (p * 2).sum().backward()
    g0 = p.grad
    (p * 3).sum().backward()
    out = [g0 is p.grad, g0.tolist()]
    del g0
    (p * 4).sum().backward()
    return out + [p.grad.tolist()]


def test_grad_accumulates_as_on_torch_and_in_place_when_unshared() -> None:
    torch = pytest.importorskip("torch")
    assert _accumulated(ember) == _accumulated(torch)
    p = ember.randn(1000, requires_grad=True)
    (p * 2).sum().backward()
    before = id(p.grad._data)
    (p * 3).sum().backward()
    assert id(p.grad._data) == before  # added in place: no second gradient-sized array
    keep = p.grad._data  # now an alias exists: the next sum is a new array, keep stays
    snapshot = keep.copy()
    (p * 1).sum().backward()
    assert p.grad._data is not keep and np.array_equal(keep, snapshot)


def test_randperm_loop_in_c_equals_the_python_loop(monkeypatch: Any) -> None:
    from ember._native_core import native
    from ember.ops import _mt19937

    if native is None:
        pytest.skip("the Python core is active")
    g = ember.Generator().manual_seed(7)
    a = _mt19937.randperm(g, 5000)
    monkeypatch.setattr(_mt19937, "native", None)
    g.manual_seed(7)
    assert np.array_equal(a, _mt19937.randperm(g, 5000))
    with pytest.raises(ValueError, match="out of range"):
        native.fisher_yates(np.array([5], dtype=np.int64), np.arange(2, dtype=np.int64))
    with pytest.raises(TypeError):
        native.fisher_yates(np.array([0], dtype=np.int32), np.arange(2, dtype=np.int64))


@needs_native
def test_both_accumulators_make_the_same_node_and_reuse_it_while_a_graph_holds_it() -> None:
    """function.py's _accumulator (C in the native core): a leaf's AccumulateGrad with
    AccumulateGrad.__init__'s fields, the same node while one is alive, a new one after."""
    from ember.autograd import function
    from ember.autograd.node import AccumulateGrad

    assert function._accumulator is NATIVE.accumulator
    for make in (NATIVE.accumulator, function._accumulator_python):
        w = ember.ones(2, 3, requires_grad=True)
        acc = make(w)
        ref = AccumulateGrad(w)
        assert type(acc) is AccumulateGrad and acc.variable is w
        for name in ("_edges", "_saved", "_versions", "_n_out", "shape"):
            assert getattr(acc, name) == getattr(ref, name), name
        assert acc.__dict__ == {} and make(w) is acc and w._accum() is acc
        y = w * 2
        assert y.grad_fn.next_functions[0][0] is acc
        del acc, ref, y
        assert w._accum() is None and type(make(w)) is AccumulateGrad
