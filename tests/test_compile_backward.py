"""The backward of a compiled step (issue 30): a chain of nodes on leaves (a compiled region's
node, the loss outside it, a chain of eager ops) runs without the walk's dependency counts and
buffer dicts (engine.py's ``_shallow``/``_run_shallow_python``, the C ``run_backward``'s
``run_shallow``). Every gradient, hook call and error must equal what the general walk gives,
in both cores, compiled and eager, bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
import ember._dynamo
from ember import _native_core, nn
from ember.autograd import engine

NATIVE = _native_core.native
CORES = ["python"] + (["native"] if NATIVE is not None else [])


@pytest.fixture(autouse=True)
def _fresh():
    ember._dynamo.reset()
    yield
    ember._dynamo.reset()


def _use(core: str, shallow: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The core's run_backward; with ``shallow=False`` its walk is bound behind a wrapper, so
    that every backward takes the general walk (the shortcut runs only while the core's own walk
    is bound)."""
    walk = NATIVE.walk_nodes if core == "native" else engine._walk_nodes_python
    monkeypatch.setattr(engine, "run_backward",
                        NATIVE.run_backward if core == "native" else engine._run_backward_python)
    monkeypatch.setattr(engine, "_dependencies",
                        NATIVE.dependencies if core == "native" else engine._dependencies_python)
    monkeypatch.setattr(engine, "_walk_nodes", walk if shallow else (lambda *a: walk(*a)))


def _leaves(seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    return [ember.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
            for s in ((3, 4), (4,), (3, 1))]


def _region(w: Any, b: Any, c: Any) -> Any:
    return ((w * c + b).tanh() * w).sum()


def _outputs(ts: list, log: list) -> list:
    got = [None if t.grad is None else t.grad.numpy().copy() for t in ts]
    return got + [np.asarray(x) for x in log]


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(
        (x is None and y is None) or (x is not None and y is not None and x.dtype == y.dtype
                                      and x.shape == y.shape and x.tobytes() == y.tobytes())
        for x, y in zip(a, b))


def _program_hooks(f: Any) -> list:
    """Leaf hooks (one replaces the gradient), a post-accumulate hook, retain_grad on a leaf."""
    ts = _leaves()
    log: list = []
    ts[0].register_hook(lambda g: g * 2)
    ts[1].register_hook(lambda g: log.append(g.numpy().copy()))
    ts[2].register_post_accumulate_grad_hook(lambda t: log.append(t.grad.numpy().copy()))
    ts[1].retain_grad()
    for _ in range(3):
        f(*ts).backward()
    return _outputs(ts, log)


def _program_accumulate(f: Any) -> list:
    """Two backward calls into the same .grad: the second adds in place (the same tensor)."""
    ts = _leaves()
    f(*ts).backward()
    first = [t.grad for t in ts]
    y = f(*ts)
    y.backward(retain_graph=True)
    y.backward()
    assert all(t.grad is g for t, g in zip(ts, first))
    return _outputs(ts, [])


def _program_retain_output(f: Any) -> list:
    """retain_grad and a hook on the region's output (the root node's pre-hooks: the walk)."""
    ts = _leaves()
    log: list = []
    y = f(*ts)
    y.retain_grad()
    y.register_hook(lambda g: log.append(g.numpy().copy()))
    (y * 3).backward()
    return _outputs(ts, log + [y.grad.numpy()])


def _program_shared_leaf(f: Any) -> list:
    """Leaves shared by two regions (two nodes send to one leaf: the walk sums first)."""
    ts = _leaves()
    g = ember.compile(lambda w, b, c: (w * w + c).sum() * b.sum()) if f is not _region else \
        (lambda w, b, c: (w * w + c).sum() * b.sum())
    for _ in range(3):
        (f(*ts) + g(*ts)).backward()
    return _outputs(ts, [])


def _program_loss_outside(f: Any) -> list:
    """A compiled model with the loss outside it (a chain of two: loss node, region node)."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    x, y = ember.randn(5, 4), ember.randn(5, 2)
    m = ember.compile(model) if f is not _region else model
    loss_fn = nn.MSELoss()
    for _ in range(3):
        loss_fn(m(x), y).backward()
    return _outputs(list(model.parameters()), [])


def _program_unused_leaf(f: Any) -> list:
    """A leaf that gets no gradient (its edge's gradient is None) and one used twice."""
    ts = _leaves()

    def h(w: Any, b: Any, c: Any) -> Any:
        return (w * w).sum() + (c.detach() * 0).sum()

    hh = ember.compile(h) if f is not _region else h
    for _ in range(3):
        hh(*ts).backward()
    return _outputs(ts, [])


PROGRAMS = {"hooks": _program_hooks, "accumulate": _program_accumulate,
            "retain_output": _program_retain_output, "shared_leaf": _program_shared_leaf,
            "loss_outside": _program_loss_outside, "unused_leaf": _program_unused_leaf}


@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_compiled_backward_equals_eager_and_the_general_walk(name: str, core: str,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    program = PROGRAMS[name]
    results = {}
    for shallow in (True, False):
        _use(core, shallow, monkeypatch)
        for compiled in (True, False):
            ember._dynamo.reset()
            f = ember.compile(_region) if compiled else _region
            results[(shallow, compiled)] = program(f)
    for compiled in (True, False):  # the shortcut changes nothing
        assert _same(results[(True, compiled)], results[(False, compiled)]), (compiled, name)
    if name != "shared_leaf":  # (there a region sums its own terms before the engine adds)
        assert _same(results[(True, True)], results[(True, False)]), name


@pytest.mark.parametrize("core", CORES)
def test_a_chain_skips_the_dependency_counts(core: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails without the shortcut: a compiled region on leaves, the loss outside a compiled
    model, and an eager chain of ops run without ``_dependencies``; a graph where a node feeds
    two others does not."""
    _use(core, True, monkeypatch)
    calls = []
    real = engine._dependencies

    def spy(roots: list) -> dict:
        calls.append(len(roots))
        return real(roots)

    w, b, c = _leaves()
    f = ember.compile(_region)
    model = ember.compile(nn.Linear(4, 2))
    for _ in range(2):  # (the traced calls run eagerly: w feeds two of the region's ops)
        f(w, b, c).backward()
        model(ember.ones(3, 4))
    monkeypatch.setattr(engine, "_dependencies", spy)
    f(w, b, c).backward()
    ((w * c + b) ** 2).mean().backward()  # mean <- pow <- add <- mul: a chain on leaves
    nn.MSELoss()(model(ember.ones(3, 4)), ember.zeros(3, 2)).backward()
    assert calls == []
    h = w * c
    (h * h).sum().backward()  # h feeds one node twice: dependency counts
    assert calls == [1]


@pytest.mark.parametrize("core", CORES)
def test_create_graph_through_a_region_raises_and_no_grad_makes_no_node(
        core: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(core, True, monkeypatch)
    w, b, c = _leaves()
    f = ember.compile(_region)
    for _ in range(3):
        f(w, b, c)
    with pytest.raises(RuntimeError, match="double backward"):
        f(w, b, c).backward(create_graph=True)
    with ember.no_grad():
        y = f(w, b, c)
    assert y.grad_fn is None and not y.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward()
    assert w.grad is None


@pytest.mark.parametrize("core", CORES)
def test_a_freed_region_raises_on_a_second_backward(core: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _use(core, True, monkeypatch)
    w, b, c = _leaves()
    x = ember.tensor(np.float32(2.0), requires_grad=True)
    for y in (ember.compile(_region)(w, b, c), ember.compile(_region)(w, b, c),
              ember.compile(_region)(w, b, c), (x * x).exp()):
        y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


@pytest.mark.parametrize("core", CORES)
def test_scalar_seed_compiled_equals_eager_and_torch(core: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    _use(core, True, monkeypatch)
    got = {}
    for lib, compiled in ((ember, True), (ember, False), (torch, False)):
        x = lib.tensor(2.0, requires_grad=True)
        w = lib.tensor(3.0, requires_grad=True)

        def f(w: Any, x: Any) -> Any:
            return w * x ** 2 + 1

        ff = ember.compile(f) if compiled else f
        for _ in range(4):
            ff(w, x).backward()
        got[(lib.__name__, compiled)] = (w.grad.item(), x.grad.item(), w.grad.dtype)
    assert got[("ember", True)] == got[("ember", False)]
    assert got[("ember", True)][:2] == got[("torch", False)][:2] == (16.0, 48.0)


@pytest.mark.parametrize("exponent", [2, 2.0, 3, 0.5])
def test_pow_written_into_the_backward_equals_eager_bit_for_bit(exponent: Any) -> None:
    """``x ** 2`` has its rule's ``grad * 2 * a`` written into the generated backward (no rule
    call), under the rule's own test of the exponent; other exponents call the rule. Gradients equal eager's bit for bit, broadcasting
    included."""
    rng = np.random.default_rng(3)
    got = {}
    for compiled in (True, False):
        ember._dynamo.reset()
        x = ember.tensor(rng.random((3, 4)).astype(np.float32) + 0.5, requires_grad=True)
        s = ember.tensor(rng.random((4,)).astype(np.float32), requires_grad=True)
        rng = np.random.default_rng(3)

        def f(x: Any, s: Any) -> Any:
            return ((x * s) ** exponent).sum()

        ff = ember.compile(f) if compiled else f
        for _ in range(3):
            ff(x, s).backward()
        got[compiled] = [x.grad.numpy(), s.grad.numpy()]
        if compiled:
            (entry,) = ff._ember_compiled.cache.values()
            assert "c._saved[1] == 2:" in entry.prog.source  # (taken when the exponent is 2)
    assert _same(got[True], got[False])


def test_loss_backward_takes_the_native_entry_and_sees_a_replaced_run_backward(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``backward()``'s common call runs in C in the native core and calls engine.py's
    ``run_backward`` as bound at the call (compile's tracer replaces it); other calls go to
    ``_backward_python``."""
    if NATIVE is not None:
        assert engine.backward is NATIVE.backward
    calls = []
    real = engine.run_backward

    def spy(roots: list, retain: bool, create: bool, capture: Any = None) -> None:
        calls.append((len(roots), retain, create))
        return real(roots, retain, create, capture)

    monkeypatch.setattr(engine, "run_backward", spy)
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward(retain_graph=True)
    (w * 3).backward(ember.ones(2))  # a gradient given: the Python function
    (w * w).sum().backward(inputs=[w])
    assert calls[:2] == [(1, True, False), (1, False, False)]
    assert w.grad.tolist() == [3.0 + 2 + 2, 3.0 + 4 + 4]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_implicit_ones_of_backward_are_fresh_arrays(dtype: Any) -> None:
    """``backward()`` on a one-element output seeds a new array of ones each call (the native
    entry copies one kept per dtype): a .grad that takes it and accumulates in place changes
    no later seed."""
    x = ember.tensor(np.asarray(3.0, dtype), requires_grad=True)
    for _ in range(3):
        x.reshape(()).backward()  # the seed may become x.grad, then += in place
        x.backward()
    assert x.grad.item() == 6.0 and x.grad.dtype == ember.tensor(np.asarray(0, dtype)).dtype
    z = ember.tensor(np.asarray(5.0, dtype), requires_grad=True)
    (z * 1).backward()
    z.reshape(()).backward()
    assert z.grad.item() == 2.0
    y = ember.tensor(np.ones((1, 1), dtype), requires_grad=True)
    y.sum().backward()
    y.backward()
    assert y.grad.tolist() == [[2.0]]


def test_region_node_records_its_edges_shapes_and_dtypes() -> None:
    """The region node's per-edge (shape, dtype), which the engine sums and casts each input's
    gradient to (fixed at code generation: the guards hold them): mixed dtypes and a broadcast
    input give eager's gradients bit for bit."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((4, 3))
    got = {}
    for compiled in (True, False):
        ember._dynamo.reset()
        x = ember.tensor(a, requires_grad=True)  # float64
        b = ember.tensor(a[0].astype(np.float32), requires_grad=True)  # broadcast, float32

        def f(x: Any, b: Any) -> Any:
            return (x * b).tanh().sum()

        ff = ember.compile(f) if compiled else f
        for _ in range(3):
            y = ff(x, b)
            y.backward()
        if compiled:
            shapes = sorted(tuple(m[0]) for m in y.grad_fn._meta)
            assert shapes == [(3,), (4, 3)]
            assert {np.dtype(m[1]) for m in y.grad_fn._meta} == {np.dtype(np.float64),
                                                                 np.dtype(np.float32)}
        got[compiled] = [x.grad.numpy(), b.grad.numpy()]
    assert got[True][1].dtype == np.float32 and got[True][1].shape == (3,)
    assert _same(got[True], got[False])
