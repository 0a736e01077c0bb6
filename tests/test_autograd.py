"""Engine property tests: the seeds' autograd snippets, graph shapes, modes, hooks, errors."""

import gc
import weakref

import numpy as np
import pytest

import ember
from ember.autograd import Function

# -- the seeds ---------------------------------------------------------------------------------


def test_seed_scalar_autograd():
    x = ember.tensor(2.0, requires_grad=True)
    w = ember.tensor(3.0, requires_grad=True)
    y = w * x**2 + 1
    assert y.item() == 13
    y.backward()
    assert x.grad.item() == 12 and w.grad.item() == 4
    assert repr(x.grad) == "tensor(12.)" and repr(w.grad) == "tensor(4.)"
    assert y.grad_fn.name() == "AddBackward0"
    assert repr(y.grad_fn).startswith("<AddBackward0 object at 0x")


def test_seed_accumulation():
    w = ember.tensor(1.0, requires_grad=True)
    seen = []
    for _ in range(2):
        (w * 3).backward()
        seen.append(w.grad.item())
    assert seen == [3.0, 6.0]


# -- graph structure ---------------------------------------------------------------------------


def test_leaf_and_grad_fn():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    assert a.is_leaf and not b.is_leaf
    assert b.requires_grad and b.grad_fn.name() == "MulBackward0"
    fn, nr = b.grad_fn.next_functions[0]
    assert type(fn).__name__ == "AccumulateGrad" and fn.variable is a and nr == 0
    c = ember.tensor([1.0])
    assert (c * 2).grad_fn is None and not (c * 2).requires_grad


def test_reuse_and_fan_out():
    x = ember.tensor(3.0, requires_grad=True)
    (x * x).backward()
    assert x.grad.item() == 6
    x.grad = None
    y = x * 2
    (y + y * y).backward()  # d/dx (2x + 4x^2) = 2 + 8x
    assert x.grad.item() == 26


def test_diamond():
    x = ember.tensor(2.0, requires_grad=True)
    a = x * 3
    b = a.exp()
    c = a * a
    (b + c).backward()
    expected = 3 * np.exp(6.0) + 2 * 6 * 3
    assert np.isclose(x.grad.item(), expected, rtol=1e-5)


def test_deep_chain_no_recursion():
    x = ember.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0


def test_broadcast_grads_reduce_to_input_shape():
    a = ember.ones(3, 1, requires_grad=True)
    b = ember.ones(4, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.shape == (3, 1) and np.all(a.grad.numpy() == 4)
    assert b.grad.shape == (4,) and np.all(b.grad.numpy() == 3)


def test_grads_are_not_shared_between_leaves():
    a = ember.ones(3, requires_grad=True)
    b = ember.ones(3, requires_grad=True)
    (a + b).sum().backward()
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    a.grad.mul_(5)
    assert b.grad.numpy().tolist() == [1, 1, 1]


def test_grad_dtype_matches_leaf():
    a = ember.ones(3, requires_grad=True)
    (a * ember.ones(3, dtype=ember.float64)).sum().backward()
    assert a.grad.dtype == ember.float32


# -- modes -------------------------------------------------------------------------------------


def test_no_grad_records_nothing():
    w = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        y = w * 2
    assert y.grad_fn is None and not y.requires_grad
    assert ember.is_grad_enabled()

    @ember.no_grad()
    def f(t):
        return t * 2

    assert f(w).grad_fn is None

    @ember.no_grad
    def g(t):
        return t * 2

    assert g(w).grad_fn is None


def test_set_grad_enabled_and_inference_mode():
    w = ember.ones(2, requires_grad=True)
    with ember.set_grad_enabled(False):
        assert (w * 2).grad_fn is None
    assert ember.is_grad_enabled()
    ember.set_grad_enabled(False)
    assert not ember.is_grad_enabled()
    ember.set_grad_enabled(True)
    with ember.inference_mode():
        assert (w * 2).grad_fn is None
    with ember.no_grad():
        with ember.enable_grad():
            assert (w * 2).grad_fn is not None


# -- errors ------------------------------------------------------------------------------------


def test_backward_twice_raises_without_retain_graph():
    x = ember.tensor(2.0, requires_grad=True)
    y = x * x
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.item() == 8
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_non_scalar_backward_raises():
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"scalar outputs.*shape \(3,\).*mean\(\)"):
        (x * 2).backward()
    (x * 2).backward(ember.ones(3))
    assert x.grad.tolist() == [2, 2, 2]


def test_backward_on_tensor_without_grad_explains():
    with pytest.raises(RuntimeError, match="does not require grad.*requires_grad=True"):
        ember.ones(1).backward()


def test_inplace_on_leaf_requiring_grad_raises():
    w = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.add_(1)
    with ember.no_grad():
        w.add_(1)
    assert w.tolist() == [2, 2]


def test_modified_saved_tensor_raises():
    a = ember.ones(3, requires_grad=True)
    b = a * 1
    c = b * b  # saves b
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_inplace_on_non_leaf_joins_graph():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    b.mul_(3)
    assert b.grad_fn.name() == "MulBackward0"
    b.sum().backward()
    assert a.grad.tolist() == [6, 6]


def test_inplace_without_grad_writes_shared_buffer():
    arr = np.zeros(3, np.float32)
    t = ember.from_numpy(arr)
    t.add_(2)
    t += 1
    assert arr.tolist() == [3, 3, 3]
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.zeros(2, dtype=ember.int64).add_(1.5)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        ember.zeros(3).add_(ember.zeros(2, 3))


# -- hooks and retain_grad ---------------------------------------------------------------------


def test_register_hook_changes_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    h = x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [20, 20]
    h.remove()
    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2, 2]


def test_hook_on_non_leaf_and_retain_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    (y * y).sum().backward()
    assert seen == [[6.0, 12.0]]
    assert y.grad.tolist() == [6.0, 12.0]
    assert x.grad.tolist() == [18.0, 36.0]


def test_grad_of_non_leaf_is_none_without_retain():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    y.sum().backward()
    assert y.grad is None


# -- autograd.grad and higher order ------------------------------------------------------------


def test_autograd_grad_does_not_touch_dot_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (g,) = ember.autograd.grad((x * x).sum(), x)
    assert g.tolist() == [2, 4] and x.grad is None


def test_autograd_grad_unused_input():
    x = ember.ones(2, requires_grad=True)
    z = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        ember.autograd.grad((x * 2).sum(), [x, z])
    gx, gz = ember.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)
    assert gz is None and gx.tolist() == [2, 2]


def test_second_derivative_and_hvp():
    x = ember.tensor(3.0, requires_grad=True)
    y = x**3
    (g,) = ember.autograd.grad(y, x, create_graph=True)
    assert g.item() == 27
    (h,) = ember.autograd.grad(g, x)
    assert h.item() == 18
    # Hessian-vector product of f(w) = sum(w^2 * exp(w))
    w = ember.tensor([0.5, -1.0, 2.0], dtype=ember.float64, requires_grad=True)
    v = ember.tensor([1.0, 2.0, -1.0], dtype=ember.float64)
    f = (w * w * w.exp()).sum()
    (gw,) = ember.autograd.grad(f, w, create_graph=True)
    (hv,) = ember.autograd.grad((gw * v).sum(), w)
    wn = w.detach().numpy()
    hess_diag = np.exp(wn) * (2 + 4 * wn + wn**2)
    np.testing.assert_allclose(hv.numpy(), hess_diag * v.numpy(), rtol=1e-10)


def test_gradient_penalty():
    w = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    x = ember.tensor([3.0, -1.0], dtype=ember.float64, requires_grad=True)
    out = (w * x).exp().sum()
    (gx,) = ember.autograd.grad(out, x, create_graph=True)
    penalty = (gx * gx).sum()
    penalty.backward()
    # d/dw sum((w e^{wx})^2) = sum(2 w e^{2wx} (1 + w x))
    wn, xn = w.detach().numpy(), x.detach().numpy()
    expected = 2 * wn * np.exp(2 * wn * xn) * (1 + wn * xn)
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-10)


def test_backward_create_graph_double_backward():
    x = ember.tensor(2.0, requires_grad=True)
    y = x**3
    y.backward(create_graph=True)
    g = x.grad
    assert g.requires_grad and g.item() == 12
    x.grad = None
    g.backward()
    assert x.grad.item() == 12  # d2/dx2 x^3 = 6x


# -- custom Function ---------------------------------------------------------------------------


class MyExp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


class Clamp01(Function):
    @staticmethod
    def forward(ctx, x, lo):
        ctx.lo = lo
        ctx.save_for_backward(x)
        return x.clamp(min=lo)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        assert ctx.needs_input_grad == (True, False)
        return grad * (x >= ctx.lo), None


class SortWithIndex(Function):
    @staticmethod
    def forward(ctx, x):
        idx = ember.tensor(np.argsort(x.detach().numpy()))
        out = x.clone()
        ctx.mark_non_differentiable(idx)
        return out, idx

    @staticmethod
    def backward(ctx, g_out, g_idx):
        return g_out


def test_custom_function():
    x = ember.tensor([0.0, 1.0], dtype=ember.float64, requires_grad=True)
    y = MyExp.apply(x)
    assert y.grad_fn.name() == "MyExpBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.0, 1.0]))
    assert ember.autograd.gradcheck(MyExp.apply, (x,))
    x2 = ember.tensor([-1.0, 2.0], requires_grad=True)
    Clamp01.apply(x2, 0.0).sum().backward()
    assert x2.grad.tolist() == [0, 1]
    out, idx = SortWithIndex.apply(ember.tensor([2.0, 1.0], requires_grad=True))
    assert out.requires_grad and not idx.requires_grad


def test_custom_function_double_backward():
    x = ember.tensor([0.3, -0.2], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradgradcheck(MyExp.apply, (x,))


# -- memory --------------------------------------------------------------------------------------


def test_graph_freed_after_backward():
    x = ember.ones(1000, requires_grad=True)
    y = (x * 2).exp()
    node = y.grad_fn
    y.sum().backward()
    assert node._saved is None  # saved arrays released
    ref = weakref.ref(node)
    del y, node
    gc.collect()
    assert ref() is None


def test_training_loop_does_not_grow_graph():
    w = ember.ones(10, requires_grad=True)
    x = ember.ones(10)
    refs = []
    for _ in range(200):
        loss = ((w * x).exp() * 0.001).sum()
        refs.append(weakref.ref(loss.grad_fn))
        loss.backward()
        with ember.no_grad():
            w -= 0.01 * w.grad
        w.grad = None
    del loss
    assert sum(r() is not None for r in refs) == 0  # no cycles: freed by refcount alone


# -- anomaly -------------------------------------------------------------------------------------


def test_detect_anomaly_names_op_and_line():
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = ember.sqrt(x) * 0  # this line
        with pytest.raises(RuntimeError, match=r"SqrtBackward0.*nan(.|\n)*this line"):
            with np.errstate(all="ignore"):
                y.sum().backward()


def test_view_made_without_graph_shares_version():
    w = ember.randn(3, requires_grad=True)
    x = ember.randn(3)
    y = (w * x).sum()
    x.view(-1).mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_wrongly_shaped_backward_rule_raises():
    from ember.autograd.function import Op

    class BadRule(Op):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad[:1]  # wrong: one element for a (3,) input

    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"BadRuleBackward.*shape \(1,\).*shape \(3,\)"):
        BadRule.apply(x).sum().backward()


def test_long_training_loop_keeps_memory_flat():
    import tracemalloc

    w = ember.randn(64, 64, requires_grad=True)
    x = ember.randn(32, 64)

    def step():
        loss = (x @ w).tanh().pow(2).mean()
        loss.backward()
        with ember.no_grad():
            w.sub_(0.01 * w.grad)
        w.grad = None

    for _ in range(50):
        step()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for _ in range(2000):
        step()
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert grown < 1_000_000, grown


def test_second_backward_through_metadata_only_nodes_works_like_pytorch():
    x = ember.randn(2, 3, requires_grad=True)
    y = x.reshape(3, 2)  # ViewBackward0 keeps only a shape
    y.sum().backward()
    y.sum().backward()
    assert x.grad.tolist() == [[2.0] * 3] * 2
    z = x.exp()  # ExpBackward0 saves its output: freed after backward
    z.sum().backward()
    with pytest.raises(RuntimeError, match="second time"):
        z.sum().backward()


@pytest.mark.parametrize("case", ["fill_column", "view_mul", "slice_iadd", "setitem_then_view"])
def test_inplace_through_views_matches_pytorch(case):
    torch = pytest.importorskip("torch")

    def run(m):
        w = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        x = w * 1
        if case == "fill_column":
            x[:, 0].fill_(0)
        elif case == "view_mul":
            x.view(-1).mul_(3)
        elif case == "slice_iadd":
            s = x[:, 1:]
            s += w[:, :2] * 2
        else:
            x[0] = 7.0
            x[1, 1:].mul_(w[0, :2])
        (x * x).sum().backward()
        return x.detach().numpy().copy(), w.grad.numpy().copy()

    (ex, eg), (tx, tg) = run(ember), run(torch)
    np.testing.assert_allclose(ex, tx)
    np.testing.assert_allclose(eg, tg)


def test_view_taken_before_inplace_on_base_rederives_its_history():
    w = ember.ones(2, 3, requires_grad=True)
    x = w * 1
    v = x[0]
    x.mul_(2)
    assert type(v.grad_fn).__name__ == "AsStridedBackward0"  # PyTorch's name too
    (v * 1).sum().backward()
    assert w.grad.tolist() == [[2, 2, 2], [0, 0, 0]]


def test_views_of_parameters_survive_optimizer_updates():
    w = ember.ones(4, requires_grad=True)
    v = w.view(2, 2)
    with ember.no_grad():
        w.mul_(2)
    (v * 1).sum().backward()
    assert w.grad.tolist() == [1, 1, 1, 1]


def test_anomaly_finds_user_frames_in_a_folder_named_ember(tmp_path):
    import subprocess
    import sys

    folder = tmp_path / "ember" / "work"
    folder.mkdir(parents=True)
    script = folder / "train.py"
    script.write_text(
        "import numpy as np\n"
        "import ember\n"
        "x = ember.tensor([0.0, 1.0], requires_grad=True)\n"
        "with ember.autograd.detect_anomaly():\n"
        "    y = ember.sqrt(x) * 0  # the user's line\n"
        "    try:\n"
        "        with np.errstate(all='ignore'):\n"
        "            y.sum().backward()\n"
        "    except RuntimeError as e:\n"
        "        print(e)\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         cwd=folder, timeout=120)
    assert "the user's line" in out.stdout, out.stdout + out.stderr
    assert "function.py" not in out.stdout  # ember's own frames are left out


# -- grad mode per thread --------------------------------------------------------------------


def test_grad_mode_is_per_thread():
    import threading

    seen = {}
    inside = threading.Event()
    release = threading.Event()

    def worker():
        with ember.no_grad():
            inside.set()
            release.wait(10)
            seen["worker"] = ember.is_grad_enabled()

    t = threading.Thread(target=worker)
    t.start()
    inside.wait(10)
    seen["main"] = ember.is_grad_enabled()  # the worker's no_grad does not reach this thread
    w = ember.ones(2, requires_grad=True)
    y = (w * 2).sum()
    release.set()
    t.join()
    assert seen == {"main": True, "worker": False}
    assert y.requires_grad
    fresh = {}
    with ember.no_grad():  # a new thread starts with grad mode on, as in PyTorch
        th = threading.Thread(target=lambda: fresh.setdefault("on", ember.is_grad_enabled()))
        th.start()
        th.join()
    assert fresh == {"on": True}


def test_two_threads_training_never_lose_gradients():
    import threading

    errors = []

    def train(seed):
        try:
            g = ember.Generator().manual_seed(seed)
            w = ember.randn(8, 8, generator=g, requires_grad=True)
            for _ in range(200):
                w.grad = None
                loss = (w @ w).sum()
                loss.backward()
                assert w.grad is not None
                with ember.no_grad():
                    w -= 1e-4 * w.grad
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=train, args=(s,)) for s in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_inference_mode_is_not_no_grad():
    assert not ember.is_inference_mode_enabled()
    with ember.no_grad():
        assert not ember.is_inference_mode_enabled()
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled() and not ember.is_grad_enabled()
        with ember.inference_mode(False):
            assert not ember.is_inference_mode_enabled() and ember.is_grad_enabled()
    assert not ember.is_inference_mode_enabled() and ember.is_grad_enabled()


def test_function_split_form_forward_without_ctx_and_setup_context():
    """PyTorch 2's split form (the one torch.func needs): forward(*args) takes no ctx, then
    setup_context(ctx, inputs, output) saves what backward needs; as PyTorch's, in both cores."""
    torch = pytest.importorskip("torch")

    def run(m):
        class Cube(m.autograd.Function):
            @staticmethod
            def forward(x, k):
                return x ** 3 * k, x * 2

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, k = inputs
                ctx.save_for_backward(x)
                ctx.k = k
                ctx.mark_non_differentiable(output[1])

            @staticmethod
            def backward(ctx, g, g2):
                (x,) = ctx.saved_tensors
                return g * 3 * x ** 2 * ctx.k, None

        class Child(Cube):  # inherits the split form
            pass

        x = m.tensor([1.0, 2.0], requires_grad=True)
        y, z = Child.apply(x, 2.0)
        y.sum().backward()
        with m.no_grad():
            w = Cube.apply(x, 1.0)[0]
        return x.grad.tolist(), z.requires_grad, w.tolist(), type(y.grad_fn).__name__

    ours, theirs = run(ember), run(torch)
    assert ours == theirs == ([6.0, 24.0], False, [1.0, 8.0], "ChildBackward")
    with pytest.raises(NotImplementedError):
        ember.autograd.Function.setup_context(None, (), None)


def test_grad_with_batched_grad_outputs_as_pytorchs():
    """autograd.grad(is_grads_batched=True): the leading dim of each grad_output is a batch, and
    each gradient comes back stacked over it (zuko's exact CNF trace takes a Jacobian so);
    under create_graph the stacked result differentiates again. Compared with torch."""
    torch = pytest.importorskip("torch")

    def run(m):
        x = m.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], dtype=m.float64, requires_grad=True)
        w = m.tensor([[1.0, 2.0, 0.0], [0.5, -1.0, 3.0], [2.0, 0.0, 1.0]], dtype=m.float64,
                     requires_grad=True)
        unused = m.ones(2, requires_grad=True)
        y = m.tanh(x @ w) * x
        eye = m.eye(3, dtype=m.float64).expand(2, 3, 3).movedim(-1, 0)  # (3, 2, 3)
        jac, gw, gu = m.autograd.grad(y, (x, w, unused), eye, create_graph=True,
                                      is_grads_batched=True, materialize_grads=True)
        trace = m.einsum("i...i", jac)
        (gx2,) = m.autograd.grad(trace.sum(), x)
        with pytest.raises(RuntimeError, match="is_grads_batched=True"):
            m.autograd.grad(y, x, m.ones(3, 2, 2), is_grads_batched=True, retain_graph=True)
        return [a.detach().numpy() for a in (jac, gw, gu, trace, gx2)]

    for a, b in zip(run(ember), run(torch)):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
