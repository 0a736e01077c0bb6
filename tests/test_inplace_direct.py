"""In-place ops written straight into the tensor's memory (ops/inplace_direct.py) and gradient
sums split over the threads (autograd/engine.py's _grad_sum): the values are the general path's
(the out-of-place op, then a copy) bit for bit, at one and two threads, split or not."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels_loader as L
from ember import _threads, ops
from ember.autograd import engine
from ember.ops import inplace_direct
from helpers import count_calls


@pytest.fixture
def threads():
    saved = ember.get_num_threads()
    yield
    ember.set_num_threads(saved)


def _count_splits(monkeypatch) -> dict:
    """Calls split over the threads: on the Python pool, or the kernels' (arith's True)."""
    calls = count_calls(monkeypatch, _threads, "_parallel")
    for name in ("arith", "addc", "lerp"):
        kernel = getattr(L, name)

        def spy(*a, kernel=kernel, **k):
            done = kernel(*a, **k)
            calls["n"] += (done is not None and done is not False) and ember.get_num_threads() > 1
            return done
        monkeypatch.setattr(L, name, spy)
    return calls


def _general(monkeypatch):
    """The general path only: the out-of-place op, then its copy into the tensor."""
    monkeypatch.setattr(inplace_direct, "run", lambda *a: False)
    monkeypatch.setattr(inplace_direct, "record", lambda *a: None)


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


RNG = np.random.default_rng(7)


def _arr(shape, dt):
    a = RNG.standard_normal(shape).astype(dt)
    a.flat[::17] = 0.0
    a.flat[5::97] = -0.0
    a.flat[3::131] = np.nan
    return a


CASES = {  # name: (method call, operand shape or None for a number)
    "add_": (lambda x, y: x.add_(y), "same"),
    "add_ alpha": (lambda x, y: x.add_(y, alpha=-0.37), "same"),
    "add_ number": (lambda x, y: x.add_(0.1), None),
    "iadd row": (lambda x, y: x.__iadd__(y), "row"),
    "sub_ alpha": (lambda x, y: x.sub_(y, alpha=3), "col"),
    "isub": (lambda x, y: x.__isub__(y), "same"),
    "mul_": (lambda x, y: x.mul_(y), "same"),
    "mul_ number": (lambda x, y: x.mul_(1.7), None),
    "imul row": (lambda x, y: x.__imul__(y), "row"),
    "div_": (lambda x, y: x.div_(y), "same"),
    "itruediv number": (lambda x, y: x.__itruediv__(0.0), None),
    "relu_": (lambda x, y: x.relu_(), None),
    "F.relu inplace": (lambda x, y: ember.nn.functional.relu(x, inplace=True), None),
    "zero_": (lambda x, y: x.zero_(), None),
    "fill_": (lambda x, y: x.fill_(-2.5), None),
    "fill_ int": (lambda x, y: x.fill_(3), None),
    "copy_": (lambda x, y: x.copy_(y), "same"),
    "copy_ row": (lambda x, y: x.copy_(y), "row"),
    "addcmul_": (lambda x, y: x.addcmul_(y, y, value=-0.5), "same"),
    "addcdiv_": (lambda x, y: x.addcdiv_(x, y, value=0.3), "same"),
    "addcmul_ row": (lambda x, y: x.addcmul_(y, y), "row"),
    "lerp_": (lambda x, y: x.lerp_(y, 0.3), "same"),
    "lerp_ from the end": (lambda x, y: x.lerp_(y, 0.9), "same"),
}
SHAPES = {"same": lambda s: s, "row": lambda s: s[1:], "col": lambda s: s[:1] + (1,)}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape, n_threads, split", [
    ((6, 37), 1, False), ((256, 1100), 2, True), ((256, 1100), 1, False)])
@pytest.mark.parametrize("layout", ["c", "transposed"])
def test_direct_equals_the_general_path(threads, monkeypatch, name, dt, shape, n_threads, split,
                                        layout):
    ember.set_num_threads(n_threads)
    if split:
        for name_ in ("cut_cheap", "cut", "cut_arith"):
            monkeypatch.setattr(_threads, name_, 4096)
    call, kind = CASES[name]
    if layout == "transposed":
        shape = shape[::-1]
    x0 = _arr(shape, dt)
    y0 = None if kind is None else _arr(SHAPES[kind](shape), dt)

    def run():
        x = ember.tensor(x0.T.copy()).t() if layout == "transposed" else ember.tensor(x0)
        y = None if y0 is None else ember.tensor(y0)
        with ember.no_grad():
            r = call(x, y)
        assert r is x and x._version == [1]  # (bumped once)
        return x.numpy()

    direct_calls = count_calls(monkeypatch, inplace_direct, "run")
    parts = _count_splits(monkeypatch)
    got = run()
    assert direct_calls["n"] == 1
    # (relu_: the clamp kernel's own threads; a broadcast operand with a scale: one call)
    whole = {"relu_", "F.relu inplace", "sub_ alpha", "addcmul_ row"}
    if split and layout == "c" and name not in whole:
        assert parts["n"] >= 1
    elif layout == "transposed" or not split:
        assert parts["n"] == 0
    with monkeypatch.context() as m:
        _general(m)
        want = run()
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_the_direct_path_writes_through_views_and_numpy(threads):
    base = ember.zeros(4, 6)
    arr = base.numpy()
    view = base[1:3, ::2]
    view.add_(ember.ones(2, 3))
    view.mul_(3.0)
    expect = np.zeros((4, 6), np.float32)
    expect[1:3, ::2] = 3.0
    np.testing.assert_array_equal(arr, expect)
    np.testing.assert_array_equal(base.numpy(), expect)


@pytest.mark.parametrize("fn, args, kwargs", [
    (ops.add, (ember.ones(3, dtype=ember.float64),), {}),  # another dtype: promotes, casts back
    (ops.add, (ember.ones(2, 3),), {}),                    # grows the shape: PyTorch's error
    (ops.add, (1,), {"alpha": True}),
    (ops.div, (2.0,), {"rounding_mode": "floor"}),
    (ops.fill, (1e39,), {}),                               # past float32's range
    (ops.mul, (ember.ones(3, dtype=ember.int64),), {}),
    (ops.add, (np.ones(3, np.float32),), {}),              # not a tensor
])
def test_cases_the_direct_path_leaves_to_the_general_one(fn, args, kwargs):
    x = ember.ones(3)
    assert not inplace_direct.run(x, fn, args, kwargs)
    np.testing.assert_array_equal(x.numpy(), np.ones(3, np.float32))
    assert not inplace_direct.run(ember.ones(3, dtype=ember.int32), ops.add, (1,), {})
    assert not inplace_direct.run(ember.ones(3, dtype=ember.float16), ops.add, (1,), {})


def test_the_direct_path_keeps_pytorchs_errors():
    x = ember.ones(3)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        x.add_(ember.ones(2, 3))
    x = ember.ones(4)
    with pytest.raises(RuntimeError, match="single memory location"):
        x[1:].add_(x[:3])


@pytest.mark.parametrize("op", ["add_", "sub_", "relu_", "iadd", "zero_", "fill_", "copy_",
                                "mul_ number", "div_ constant", "addcmul_", "addcdiv_"])
def test_recorded_add_sub_relu_run_on_the_tensors_memory_and_keep_gradients(monkeypatch, op):
    rng = np.random.default_rng(1)
    a0 = rng.standard_normal((5, 7))
    b0 = rng.standard_normal((5, 7))

    def grads(general):
        with monkeypatch.context() as m:
            if general:
                _general(m)
            snaps = count_calls(m, __import__("ember.ops.inplace", fromlist=["x"]), "_snapshot")
            a = ember.tensor(a0, requires_grad=True)
            b = ember.tensor(b0, requires_grad=True)
            x = a * 2
            if op == "relu_":
                x.relu_()
            elif op == "iadd":
                x += b
            elif op == "zero_":
                x.zero_()
            elif op == "fill_":
                x.fill_(0.25)
            elif op == "copy_":
                x.copy_(b)
            elif op == "mul_ number":
                x.mul_(-1.5)
            elif op == "div_ constant":
                x.div_(b.detach() + 3.0)
            elif op == "addcmul_":
                x.addcmul_(b, b, value=0.5)
            elif op == "addcdiv_":
                x.addcdiv_(b, b * b + 1.0, value=0.5)
            else:
                getattr(x, op)(b, alpha=0.5)
            (x * x + a).sum().backward()
            return snaps["n"], a.grad.numpy(), b.grad.numpy() if b.grad is not None else None

    n_direct, ga, gb = grads(False)
    n_general, ga2, gb2 = grads(True)
    assert (n_direct, n_general) == (0, 1)
    np.testing.assert_array_equal(ga, ga2)
    if gb2 is not None:
        np.testing.assert_array_equal(gb, gb2)
    x = a0 * 2
    if op == "relu_":
        want_a = 2 * 2 * np.maximum(x, 0) * (x > 0) + 1
    elif op == "mul_ number":
        want_a = 2 * 2 * 2.25 * x + 1
    elif op == "div_ constant":
        want_a = 2 * 2 * x / (b0 + 3.0) ** 2 + 1
    elif op == "addcmul_":
        want_a = 2 * 2 * (x + 0.5 * b0 * b0) + 1
    elif op == "addcdiv_":
        want_a = 2 * 2 * (x + 0.5 * b0 / (b0 * b0 + 1.0)) + 1
    elif op in ("zero_", "fill_", "copy_"):  # the old value is overwritten: a's gradient is 1
        want_a = np.ones_like(x)
        if op == "copy_":
            np.testing.assert_allclose(gb, 2 * b0, rtol=1e-12)
    else:
        s = -0.5 if op == "sub_" else (1.0 if op == "iadd" else 0.5)
        want_a = 2 * 2 * (x + s * b0) + 1
    np.testing.assert_allclose(ga, want_a, rtol=1e-12)


@pytest.mark.parametrize("op", ["mul_", "div_"])
def test_a_recorded_mul_by_a_tensor_that_requires_grad_keeps_the_snapshot(monkeypatch, op):
    snaps = count_calls(monkeypatch, __import__("ember.ops.inplace", fromlist=["x"]), "_snapshot")
    a = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = ember.tensor([4.0, 5.0, 8.0], requires_grad=True)
    x = a * 1
    getattr(x, op)(b)
    x.sum().backward()
    assert snaps["n"] == 1
    want_b = [1.0, 2.0, 3.0] if op == "mul_" else [-1.0 / 16, -2.0 / 25, -3.0 / 64]
    np.testing.assert_allclose(b.grad.numpy(), want_b, rtol=1e-6)


def test_a_recorded_mul_still_saves_a_copy_of_the_old_value():
    a = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = ember.tensor([4.0, 5.0, 6.0], requires_grad=True)
    x = a * 1
    x.mul_(b)
    x.sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 2.0, 3.0])  # x's old value
    np.testing.assert_array_equal(a.grad.numpy(), [4.0, 5.0, 6.0])


def test_a_recorded_relu_saved_output_follows_later_writes():
    a = ember.tensor([-1.0, 2.0], requires_grad=True)
    x = a * 1
    x.relu_()
    x.add_(1.0)  # relu saved its result, now changed: backward must refuse, as PyTorch's
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        x.sum().backward()


@pytest.mark.parametrize("native", [True, False])
def test_gradient_sums_split_over_the_threads_equal_one_thread(threads, monkeypatch, native):
    if not native:
        monkeypatch.setattr(engine, "run_backward", engine._run_backward_python)
    monkeypatch.setattr(engine, "GRAD_SUM_SPLIT_FROM", 4096)
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((64, 300)).astype(np.float32)
    y0 = rng.standard_normal((64, 300)).astype(np.float32)

    def run(n):
        ember.set_num_threads(n)
        if n > 1:
            for name_ in ("cut_cheap", "cut", "cut_arith"):
                monkeypatch.setattr(_threads, name_, 4096)
        x = ember.tensor(x0, requires_grad=True)
        y = ember.tensor(y0)
        for _ in range(2):  # the second backward adds into the existing .grad
            (x * y + x.exp() + x).sum().backward()
        return x.grad.numpy().copy()

    one = run(1)
    calls = count_calls(monkeypatch, engine, "_grad_sum")
    parts = _count_splits(monkeypatch)
    two = run(2)
    assert calls["n"] >= 3 and parts["n"] >= 3
    np.testing.assert_array_equal(one, two)
    np.testing.assert_allclose(one, 2 * (y0 + np.exp(x0) + 1), rtol=1e-6, atol=1e-5)


RECORDED = {  # name: the in-place call on x (b requires grad; c does not)
    "add_": lambda x, b, c: x.add_(b), "add_ alpha": lambda x, b, c: x.add_(c, alpha=-0.5),
    "add_ number alpha": lambda x, b, c: x.add_(2.0, alpha=3), "isub": lambda x, b, c: x.__isub__(b),
    "sub_ alpha": lambda x, b, c: x.sub_(b, alpha=2), "mul_": lambda x, b, c: x.mul_(c),
    "div_ number": lambda x, b, c: x.div_(4.0), "relu_": lambda x, b, c: x.relu_(),
    "zero_": lambda x, b, c: x.zero_(), "fill_": lambda x, b, c: x.fill_(1.5),
    "copy_": lambda x, b, c: x.copy_(b), "addcmul_": lambda x, b, c: x.addcmul_(b, c, value=0.5),
    "addcdiv_": lambda x, b, c: x.addcdiv_(b, c * c + 1.0, value=0.5),
}


@pytest.mark.parametrize("name", list(RECORDED))
def test_recorded_ops_write_in_one_pass_with_the_general_paths_node(monkeypatch, name):
    """Recorded: no snapshot, no new array copied back, the same node (name, values, first and
    second derivatives) as the out-of-place op's."""
    rng = np.random.default_rng(3)
    a0, b0, c0 = (rng.standard_normal((4, 6)) for _ in range(3))
    inplace_mod = __import__("ember.ops.inplace", fromlist=["x"])

    def run(general):
        with monkeypatch.context() as m:
            if general:
                _general(m)
            writes = count_calls(m, inplace_mod, "_write")
            a = ember.tensor(a0, requires_grad=True)
            b = ember.tensor(b0, requires_grad=True)
            c = ember.tensor(c0)
            x = a * a
            view = x.view(24)
            r = RECORDED[name](x, b, c)
            assert r is x and view._version == x._version
            node = x.grad_fn.name()
            ga, gb = ember.autograd.grad((x * x).sum(), (a, b), create_graph=True,
                                         allow_unused=True)
            gg = ember.autograd.grad((ga.sum() + (gb.sum() if gb is not None else 0)), a,
                                     allow_unused=True)[0]
            out = [x.detach().numpy().copy(), view.detach().numpy().copy(), ga.detach().numpy()]
            out += [g.detach().numpy() if g is not None else None for g in (gb, gg)]
            return writes["n"], node, out

    n_direct, node_direct, direct = run(False)
    n_general, node_general, general = run(True)
    assert (n_direct, n_general) == (0, 1) and node_direct == node_general
    for got, want in zip(direct, general):
        if want is None:
            assert got is None
        else:
            np.testing.assert_array_equal(got, want)


def test_recorded_ops_keep_pytorchs_version_rules():
    a = ember.tensor([1.0, -2.0, 3.0], requires_grad=True)
    x = a * 1
    y = x * x  # saves x
    x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    x = a * 1
    x.relu_()
    z = x.exp()  # saves its result; x is still fine to read
    x.mul_(2.0)  # relu's saved result changes: relu's backward must refuse
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (x.sum() + z.sum()).backward()


def test_a_scaled_add_computes_no_gradient_for_an_operand_without_one():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    for op in ("add", "sub"):
        node = getattr(a, op)(ember.tensor([3.0, 4.0]), alpha=2.0).grad_fn
        ga, gc, _ = type(node)._fn.backward(node, np.ones(2))
        assert gc is None and ga.tolist() == [1.0, 1.0]
        c = ember.tensor([3.0, 4.0], requires_grad=True)
        node = getattr(a, op)(c, alpha=2.0).grad_fn
        assert type(node)._fn.backward(node, np.ones(2))[1].tolist() == [
            2.0 if op == "add" else -2.0] * 2
    node = (a - ember.tensor([3.0, 4.0])).grad_fn
    assert type(node)._fn.backward(node, np.ones(2))[1] is None


@pytest.mark.parametrize("w", [0.25, 0.75])
def test_a_recorded_lerp_is_written_in_place_with_lerps_gradients(monkeypatch, w):
    rng = np.random.default_rng(5)
    a0, e0 = rng.standard_normal((64, 100)), rng.standard_normal((64, 100))
    inplace_mod = __import__("ember.ops.inplace", fromlist=["x"])

    def run(general):
        with monkeypatch.context() as m:
            if general:
                _general(m)
            writes = count_calls(m, inplace_mod, "_write")
            a = ember.tensor(a0, requires_grad=True)
            e = ember.tensor(e0, requires_grad=True)
            x = a * 2
            x.lerp_(e, w)
            name = x.grad_fn.name()
            (x * x).sum().backward()
            return writes["n"], name, x.detach().numpy(), a.grad.numpy(), e.grad.numpy()

    direct, general = run(False), run(True)
    assert (direct[0], general[0]) == (0, 1) and direct[1] == general[1] == "LerpBackward0"
    for got, want in zip(direct[2:], general[2:]):
        np.testing.assert_array_equal(got, want)
    x = 2 * a0 + w * (e0 - 2 * a0)
    np.testing.assert_allclose(direct[3], 2 * x * (1 - w) * 2, rtol=1e-12)
    np.testing.assert_allclose(direct[4], 2 * x * w, rtol=1e-12)
