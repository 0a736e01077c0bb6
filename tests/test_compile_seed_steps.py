"""The small-tensor seed loops' per-step costs (issue 30): the optimizer step's options read once
and reused while the group is unchanged, Adam's kernel on the arrays whole, the compiled node
freed without a Python call, the module guard built in C-level passes. Each shortcut must give
PyTorch's numbers and notice every change."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember._dynamo
from ember import nn
from ember._compile import stats

torch = pytest.importorskip("torch")


def _params(lib, seed=0):
    rng = np.random.default_rng(seed)
    return [lib.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
            for s in ((4, 3), (3,), (2, 4))]


def _run(lib, make_opt, change, steps=6, seed=0):
    """``steps`` steps on fixed gradients; ``change(opt, k)`` edits the options before step k."""
    ps = _params(lib, seed)
    opt = make_opt(lib, ps)
    rng = np.random.default_rng(seed + 1)
    grads = [[rng.standard_normal(tuple(p.shape)).astype(np.float32) for p in ps]
             for _ in range(steps)]
    for k in range(steps):
        change(lib, opt, k)
        for p, g in zip(ps, grads[k]):
            p.grad = lib.tensor(g)
        opt.step()
    return [p.detach().numpy().copy() for p in ps]


def _scheduler_floats(lib, opt, k):
    opt.param_groups[0]["lr"] = 0.1 / (k + 1)  # a new float object each step


def _lr_tensor_in_place(lib, opt, k):
    if k == 0:
        opt.param_groups[0]["lr"] = lib.tensor(0.05)
    else:  # the same tensor object, a new value: must be read again
        opt.param_groups[0]["lr"].fill_(0.05 / (k + 1))


def _betas_and_flags(lib, opt, k):
    g = opt.param_groups[0]
    if k == 2:
        g["betas"] = (0.8, 0.99)
    if k == 3:
        g["weight_decay"] = 0.1
    if k == 4:
        g["maximize"] = True


def _momentum_list(lib, opt, k):
    if k == 3:
        opt.param_groups[0]["momentum"] = 0.5
    if k == 4:
        opt.defaults["nesterov"] = False  # (a default the group already has: no effect)


@pytest.mark.parametrize("make_opt,change", [
    (lambda lib, ps: lib.optim.SGD(ps, lr=0.1), _scheduler_floats),
    (lambda lib, ps: lib.optim.SGD(ps, lr=0.1, momentum=0.9), _momentum_list),
    (lambda lib, ps: lib.optim.Adam(ps, lr=0.01), _lr_tensor_in_place),
    (lambda lib, ps: lib.optim.Adam(ps, lr=0.01), _betas_and_flags),
    (lambda lib, ps: lib.optim.AdamW(ps, lr=0.01), _betas_and_flags),
    (lambda lib, ps: lib.optim.Adam(ps, lr=0.01, amsgrad=True), _scheduler_floats),
], ids=["sgd-scheduler", "sgd-momentum", "adam-lr-tensor", "adam-betas", "adamw-betas",
        "amsgrad-scheduler"])
def test_options_changed_between_steps_are_read_again(make_opt, change):
    """The step's options are reused while the group holds the same objects; a new float, a
    0-d lr tensor changed in place, new betas or flags all take effect at once, as PyTorch's."""
    got = _run(ember, make_opt, change)
    want = _run(torch, make_opt, change)
    for a, b in zip(got, want):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-7)


def test_options_are_reused_only_while_the_group_is_unchanged():
    from ember.optim import optimizer as optmod

    ps = _params(ember)
    opt = ember.optim.SGD(ps, lr=0.1)
    for p in ps:
        p.grad = ember.ones_like(p)
    opt.step()
    first = opt._options_cache[id(opt.param_groups[0])][3]
    opt.step()
    assert optmod._cached_step_options(opt._options_cache, opt.param_groups[0],
                                       opt.defaults) is first
    opt.param_groups[0]["lr"] = 0.2
    again = optmod._cached_step_options(opt._options_cache, opt.param_groups[0], opt.defaults)
    assert again is not first and again.lr == 0.2
    opt.param_groups[0]["lr"] = ember.tensor(0.3)  # a tensor can change in place: not kept
    optmod._cached_step_options(opt._options_cache, opt.param_groups[0], opt.defaults)
    assert id(opt.param_groups[0]) not in opt._options_cache
    assert "_options_cache" not in opt.__getstate__()  # (not pickled, not in state_dict)


@pytest.mark.parametrize("shape", [(4, 3), (65536 + 5,), (7,)])
def test_adam_kernel_on_whole_arrays_equals_the_plain_path(shape, monkeypatch):
    """Adam's eager kernel takes a parameter's arrays whole (no reshaped views): bit for bit the
    plain NumPy path, for 2-d, multi-block and small parameters."""
    from ember.optim import adam as adam_mod

    rng = np.random.default_rng(3)
    init = rng.standard_normal(shape).astype(np.float32)
    grads = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]

    def run(blocked):
        monkeypatch.setattr(adam_mod, "_BLOCKED", blocked)
        p = ember.tensor(init.copy(), requires_grad=True)
        opt = ember.optim.Adam([p], lr=1e-2, amsgrad=True)
        for g in grads:
            p.grad = ember.tensor(g)
            opt.step()
        return p.detach().numpy().copy()

    np.testing.assert_array_equal(run(True), run(False))


@pytest.fixture
def _fresh():
    ember._dynamo.reset()
    yield
    ember._dynamo.reset()


def test_compiled_node_has_no_instance_fields_and_unused_outputs_get_none(_fresh):
    """The region's node keeps its fields in slots (``_materialize`` is a class default), so the
    engine frees it without a Python call; an output that gets no gradient still passes None
    to the region's backward (no zeros), as before."""
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    f = ember.compile(lambda w: (w * 3 + 1, w * w))
    for _ in range(3):
        a, b = f(w)
    assert stats["replays"] >= 1
    node = a.grad_fn
    assert type(node).__name__ == "CompiledFunctionBackward"
    assert node.__dict__ == {} and node._materialize is False
    a.sum().backward()  # b gets no gradient
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 3.0])
    w.grad = None
    a, b = f(w)
    (a.sum() + b.sum()).backward()
    np.testing.assert_array_equal(w.grad.numpy(), [3.0 + 2.0, 3.0 + 4.0])


class _Shift(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("b", ember.zeros(4))

    def forward(self, x):
        return x + self.b


@pytest.mark.parametrize("through", ["module", "closure"])
def test_module_guard_sees_buffers_new_parameters_and_nested_modes(through, _fresh):
    """The module guard's C-level passes: a replaced buffer, a parameter registered on a module
    that had none, a nested child's train/eval and a deleted parameter each recompile."""
    ember.manual_seed(0)
    inner = nn.Sequential(nn.Linear(3, 4), _Shift(), nn.Dropout(0.5))
    model = nn.Sequential(inner, nn.ReLU(), nn.Linear(4, 2))
    c = ember.compile(model) if through == "module" else ember.compile(lambda x: model(x))
    x = ember.randn(6, 3)

    def check():
        for _ in range(3):
            ember.manual_seed(1)
            got = c(x)
            ember.manual_seed(1)
            want = model(x)
            np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())

    model.eval()
    check()
    n = stats["compiled"]
    inner[1].b = ember.full((4,), 0.5)  # a new buffer object
    check()
    assert stats["compiled"] == n + 1
    model[1].register_parameter("unused", nn.Parameter(ember.ones(1)))
    check()
    assert stats["compiled"] == n + 2
    inner[2].train()  # a nested child's mode
    check()
    assert stats["compiled"] == n + 3
    del model[1].unused
    check()
    assert stats["compiled"] == n + 4
    inner[2].eval()
    check()  # back to the key after the new buffer: its program is reused
    assert stats["compiled"] == n + 4


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("target_grad", [False, True])
def test_mse_written_into_the_replay_is_bit_for_bit_eager(reduction, dtype, target_grad, _fresh):
    """MSE's forward and backward written into the generated replay (the rule's arithmetic
    without its calls): loss, input and target gradients and SGD steps equal eager's bits."""
    from ember._compile import codegen

    def run(compiled):
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(1, 8), nn.ReLU(), nn.Linear(8, 1)).to(dtype)
        x = ember.rand(16, 1, dtype=dtype) * 4 - 2
        t = ember.sin(2 * x).requires_grad_(target_grad)
        opt = ember.optim.SGD(model.parameters(), lr=0.02)

        def loss_fn(x, t):
            out = nn.functional.mse_loss(model(x), t, reduction=reduction)
            return out if reduction != "none" else out.sum()

        f = ember.compile(loss_fn) if compiled else loss_fn
        losses = []
        for _ in range(5):
            opt.zero_grad()
            t.grad = None
            loss = f(x, t)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().numpy().copy() for p in model.parameters()], \
            None if t.grad is None else t.grad.numpy().copy(), f

    got, want = run(True), run(False)
    assert got[0] == want[0]
    for a, b in zip(got[1], want[1]):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    if target_grad:
        np.testing.assert_array_equal(got[2], want[2])
    if codegen.enabled and reduction != "none":
        prog = next(e.prog for e in got[3]._ember_compiled.cache.values()
                    if e.state == "compiled")
        assert "ADDRED(d" in prog.source and "sa = sa - sb" in prog.source


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_written_into_the_replay_keeps_eager_bits(dtype, _fresh):
    """ReLU's forward written into the generated replay: -0.0 stays -0.0, NaN passes, the
    saved output drives the backward as the rule's does (same bits as eager, and as PyTorch)."""
    from ember._compile import codegen

    a = np.array([[-1.5, -0.0, 0.0, 2.0], [np.nan, 3.0, -np.inf, np.inf]], dtype)
    lin = nn.Linear(4, 4).to(ember.float64 if dtype == np.float64 else ember.float32)

    def f(x):
        return (lin(nn.functional.relu(x)) * 2).sum()

    c = ember.compile(f)
    for _ in range(3):
        x = ember.tensor(a, requires_grad=True)
        got = c(x)
        got.backward()
        gx = x.grad.numpy().copy()
        x2 = ember.tensor(a, requires_grad=True)
        want = f(x2)
        want.backward()
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        np.testing.assert_array_equal(gx, x2.grad.numpy())
    r = ember.compile(lambda x: nn.functional.relu(x) * 1)
    for _ in range(3):
        out = r(ember.tensor(a)).numpy()
    ta = torch.tensor(a)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(torch.relu(ta).numpy()))
    np.testing.assert_array_equal(out, torch.relu(ta).numpy())
    if codegen.enabled:
        prog = next(e.prog for e in c._ember_compiled.cache.values() if e.state == "compiled")
        assert "MAX(0, " in prog.source


_SCALE = ember.tensor(2.0)


def test_function_reaching_nothing_skips_the_module_guard(_fresh):
    """A plain function with no closure that names no globals (the scalar seed's
    ``w * x ** 2 + 1``) has an empty module guard without looking; one that names a global or
    closes over a tensor is still guarded (a rebound global recompiles)."""
    global _SCALE
    f = ember.compile(lambda w, x: w * x ** 2 + 1)
    assert f._ember_compiled._reaches_nothing
    w = ember.tensor(3.0, requires_grad=True)
    x = ember.tensor(2.0, requires_grad=True)
    for _ in range(3):
        y = f(w, x)
        y.backward()
        assert y.item() == 13.0 and w.grad.item() == 4.0 and x.grad.item() == 12.0
        w.grad = x.grad = None
    assert stats["replays"] == 1

    g = ember.compile(lambda x: x * _SCALE)
    assert not g._ember_compiled._reaches_nothing
    for _ in range(3):
        assert g(x).item() == 4.0
    old = _SCALE
    try:
        _SCALE = ember.tensor(5.0)
        assert g(x).item() == 10.0
    finally:
        _SCALE = old
    k = ember.tensor(7.0)
    h = ember.compile(lambda x: x * k)
    assert not h._ember_compiled._reaches_nothing
    m = nn.Linear(1, 1)
    assert not ember.compile(m)._compiled._reaches_nothing
