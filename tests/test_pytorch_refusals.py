"""Where ember refused what PyTorch accepts, or accepted what it refuses (issue 31): each case runs
on ember and on the installed PyTorch and must agree (result flags, gradients, error classes)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

MODULES = [ember, torch]


def _outcome(fn, m):
    """What ``fn(m)`` does: ('ok', value) or ('raise', exception class name)."""
    try:
        return "ok", fn(m)
    except Exception as e:  # noqa: BLE001 - every exception is data here
        return "raise", type(e).__name__


# ---- zero-gradient ops stay in the graph ---------------------------------------------------

_ZERO_GRAD_OPS = {
    "floordiv": lambda m, x, b: x // 2,
    "floordiv_tensor": lambda m, x, b: x // b,
    "rfloordiv": lambda m, x, b: 2 // x,
    "floor_divide": lambda m, x, b: m.floor_divide(x, b),
    "div_floor": lambda m, x, b: m.div(x, b, rounding_mode="floor"),
    "div_trunc": lambda m, x, b: m.div(x, b, rounding_mode="trunc"),
    "div_floor_scalar": lambda m, x, b: m.div(x, 2, rounding_mode="floor"),
    "rdiv_trunc": lambda m, x, b: m.div(5, x, rounding_mode="trunc"),
    "heaviside": lambda m, x, b: m.heaviside(x, m.tensor(0.5)),
    "heaviside_values": lambda m, x, b: m.heaviside(x.detach(), b),
    "ifloordiv": lambda m, x, b: _inplace(x, lambda y: y.__ifloordiv__(b)),
    "floor_divide_": lambda m, x, b: _inplace(x, lambda y: y.floor_divide_(2)),
    "div_trunc_": lambda m, x, b: _inplace(x, lambda y: y.div_(b, rounding_mode="trunc")),
    "div_floor_": lambda m, x, b: _inplace(x, lambda y: y.div_(2, rounding_mode="floor")),
    "heaviside_": lambda m, x, b: _inplace(x, lambda y: y.heaviside_(m.tensor(0.5))),
}


def _inplace(x, op):
    y = x * 1
    op(y)
    return y


def _zero_grad_run(m, name):
    x = m.tensor([1.5, 2.5, -3.5, 0.0], requires_grad=True)
    b = m.tensor([2.0, -3.0, 4.0, 0.5], requires_grad=True)
    y = _ZERO_GRAD_OPS[name](m, x, b)
    flags = (y.requires_grad, y.is_leaf, type(y.grad_fn).__name__, str(y.dtype).split(".")[-1])
    y.retain_grad()  # (refused by ember when the result was detached)
    try:
        (y * m.tensor([0.5, 1.0, 1.5, 2.0])).sum().backward()
    except RuntimeError as e:
        return flags, y.detach().numpy(), ("raises", str(e).split(" (")[0].replace("_ is", " is"))
    grads = tuple(None if t.grad is None else t.grad.numpy() for t in (x, b, y))
    return flags, y.detach().numpy(), grads


@pytest.mark.parametrize("name", sorted(_ZERO_GRAD_OPS))
def test_zero_gradient_ops_stay_in_the_graph(name):
    """``//``, floor_divide, div(rounding_mode=...), heaviside (and in-place forms) record a node
    as PyTorch's do: div's rounding modes give zero gradients; ``//`` and heaviside raise at
    backward (PyTorch has no derivative for them), instead of a detached result."""
    e_flags, e_val, e_grads = _zero_grad_run(ember, name)
    t_flags, t_val, t_grads = _zero_grad_run(torch, name)
    assert e_flags == t_flags
    np.testing.assert_array_equal(e_val, t_val)
    if isinstance(t_grads[0], str):
        assert e_grads == t_grads
        return
    for ge, gt in zip(e_grads, t_grads):
        assert (ge is None) == (gt is None)
        if gt is not None:
            np.testing.assert_array_equal(ge, gt)


def test_div_rounding_mode_keeps_its_inputs_as_pytorch():
    """div(rounding_mode=...) saves its operands as PyTorch's DivBackward2 does: a second
    backward raises, and so does backward after an operand changed in place."""
    for m in MODULES:
        x = m.tensor([1.5, 2.5], requires_grad=True)
        y = m.div(x, 2, rounding_mode="floor")
        y.sum().backward()
        with pytest.raises(RuntimeError, match="second time"):
            y.sum().backward()
        b = m.tensor([2.0, 3.0]) * 1
        y = m.div(x, b, rounding_mode="trunc")
        b.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_rounded_division_values_and_dtypes():
    """The recorded paths keep the values and dtypes (float16 computes in float32, ints stay
    ints and are not recorded)."""
    for fn in (
        lambda m, h: m.div(h, 0.7, rounding_mode="floor"),
        lambda m, h: m.div(h, 0.7, rounding_mode="trunc"),
        lambda m, h: h // 0.7,
        lambda m, h: m.div(m.tensor([5, -7]), 2, rounding_mode="trunc"),
        lambda m, h: m.tensor([5, -7]) // 2,
        lambda m, h: m.div(m.tensor([5, -7]), 2.5, rounding_mode="floor"),
    ):
        res = []
        for m in MODULES:
            h = m.tensor([1.5, 2.5, -3.5, 100.3], dtype=m.float16, requires_grad=True)
            y = fn(m, h)
            res.append((y.detach().numpy(), str(y.dtype), y.requires_grad))
        np.testing.assert_array_equal(res[0][0], res[1][0])
        assert res[0][1:] == res[1][1:]


# ---- errors raised where PyTorch raises, with PyTorch's classes ------------------------------

_ERROR_CASES = {
    "bce_nan_input": lambda m: m.nn.functional.binary_cross_entropy(
        m.tensor([float("nan"), 0.5]), m.tensor([1.0, 0.0])),
    "bce_out_of_range": lambda m: m.nn.functional.binary_cross_entropy(
        m.tensor([1.5, 0.5]), m.tensor([1.0, 0.0])),
    "ones_str_dtype": lambda m: m.ones(3, dtype="float32"),
    "zeros_str_dtype": lambda m: m.zeros(3, dtype="int64"),
    "tensor_str_dtype": lambda m: m.tensor([1.0], dtype="float32"),
    "full_str_dtype": lambda m: m.full((2,), 1, dtype="float32"),
    "new_ones_str_dtype": lambda m: m.ones(2).new_ones(2, dtype="float32"),
    "zeros_like_str_dtype": lambda m: m.zeros_like(m.ones(2), dtype="float64"),
    "ragged": lambda m: m.tensor([[1, 2], [3]]),
    "ragged_long": lambda m: m.tensor([[1, 2], [3, 4, 5]]),
    "ragged_deep": lambda m: m.tensor([[[1, 2], [3, 4]], [[1, 2], [3]]]),
    "number_among_lists": lambda m: m.tensor([[1, 2], 3]),
    "tensor_dataset_sizes": lambda m: m.utils.data.TensorDataset(m.ones(3), m.ones(4)),
}


@pytest.mark.parametrize("name", sorted(_ERROR_CASES))
def test_errors_as_pytorch(name):
    """The same exception class as PyTorch (ember's class may subclass it)."""
    t_kind, t_cls = _outcome(_ERROR_CASES[name], torch)
    assert t_kind == "raise"
    with pytest.raises(Exception) as info:  # noqa: PT011 - the class is checked below
        _ERROR_CASES[name](ember)
    expected = {"RuntimeError": RuntimeError, "TypeError": TypeError, "ValueError": ValueError,
                "AssertionError": AssertionError}[t_cls]
    assert isinstance(info.value, expected), (type(info.value), t_cls)


def test_ragged_message_is_pytorchs():
    """PyTorch's sentence first, then where the short row is."""
    for data in ([[1, 2], [3]], [[[1, 2], [3, 4]], [[1, 2], [3]]]):
        with pytest.raises(ValueError) as te:
            torch.tensor(data)
        with pytest.raises(ValueError) as ee:
            ember.tensor(data)
        assert str(ee.value).startswith(str(te.value))
    with pytest.raises(ValueError, match=r"data\[1\]\[1\] differs"):
        ember.tensor([[[1, 2], [3, 4]], [[1, 2], [3]]])


def test_tensor_dataset_mismatch_is_caught_both_ways():
    """AssertionError as PyTorch's, and still the ValueError ember raised before."""
    for cls in (AssertionError, ValueError):
        with pytest.raises(cls, match="Size mismatch between tensors"):
            ember.utils.data.TensorDataset(ember.ones(3), ember.ones(4))


@pytest.mark.skipif(ember.cuda.is_available(), reason="this machine has a CUDA device")
@pytest.mark.parametrize("how", ["randn", "cuda", "to", "tensor", "device_kw"])
def test_cuda_request_without_cuda_raises_assertion_error(how):
    """PyTorch (CPU build) raises AssertionError; ember's error is also a RuntimeError (its
    class before), with ember's text saying what is missing."""
    calls = {
        "randn": lambda m: m.randn(2, device="cuda"),
        "cuda": lambda m: m.ones(2).cuda(),
        "to": lambda m: m.ones(2).to("cuda"),
        "tensor": lambda m: m.tensor([1.0], device="cuda"),
        "device_kw": lambda m: m.zeros(2, device=m.device("cuda", 0)),
    }
    if not torch.cuda.is_available():
        with pytest.raises(AssertionError):
            calls[how](torch)
    for cls in (AssertionError, RuntimeError):
        with pytest.raises(cls, match="CUDA"):
            calls[how](ember)


# ---- writes through expanded views ----------------------------------------------------------

_EXPANDED_WRITES = {
    "row": lambda m, v, val: v.__setitem__(0, val),
    "row_slice": lambda m, v, val: v.__setitem__(slice(0, 1), val),
    "second_row": lambda m, v, val: v.__setitem__(1, val),
    "row_number": lambda m, v, val: v.__setitem__(0, 5.0),
    "row_int_tensor": lambda m, v, val: v.__setitem__(0, m.tensor([1, 2, 3])),
    "row_broadcast": lambda m, v, val: v.__setitem__(0, val[:1]),
    "none_row": lambda m, v, val: v.__setitem__((None, 0), val),
    "element": lambda m, v, val: v.__setitem__((0, 1), val[1]),
    "block": lambda m, v, val: v.__setitem__((slice(1, None), slice(0, 2)), val[:2]),
    "row_then_advanced": lambda m, v, val: v.__setitem__((0, [1]), val[:1]),
    "column": lambda m, v, val: v.__setitem__((slice(None), 1), 5.0),  # repeats: refused
    "whole": lambda m, v, val: v.__setitem__(slice(None), 5.0),  # refused
    "ellipsis": lambda m, v, val: v.__setitem__(Ellipsis, val),  # refused
    "advanced": lambda m, v, val: v.__setitem__([0], val),  # forward runs, backward refused
    "mask": lambda m, v, val: v.__setitem__(
        m.tensor([[True, False, False], [False, False, False]]), val[0]),
    "row_scatter_": lambda m, v, val: v[0:1].scatter_(1, m.tensor([[2]]), val[:1].reshape(1, 1)),
    "row_mul_": lambda m, v, val: v[0].mul_(val),
    "self_copy": lambda m, v, val: v[0:2].copy_(v),  # copies nothing: runs, backward refuses
}


def _expanded_write(m, name, grad):
    x = m.tensor([1.0, 2.0, 3.0], requires_grad=grad)
    val = m.tensor([10.0, 20.0, 30.0], requires_grad=grad)
    b = x * 1
    v = b.unsqueeze(0).expand(2, 3)
    try:
        _EXPANDED_WRITES[name](m, v, val)
    except RuntimeError as e:
        return "forward raises", str(e)[:60]
    out = [b.detach().numpy().copy(), v.detach().numpy().copy()]
    if not grad:
        return "ok", out
    try:
        (v * m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    except RuntimeError as e:
        return "backward raises", str(e)[:60]
    return "ok", [*out, x.grad.numpy(), None if val.grad is None else val.grad.numpy()]


@pytest.mark.filterwarnings("ignore:Use of .* on expanded tensors is deprecated")
@pytest.mark.parametrize("grad", [True, False])
@pytest.mark.parametrize("name", sorted(_EXPANDED_WRITES))
def test_writes_through_expanded_views(name, grad):
    """``v = b.unsqueeze(0).expand(2, n); v[0] = val``: as PyTorch, the basic part of the key
    takes a view first and the value is copied into it, so b is written once and gradients
    flow; a write that itself repeats memory (``v[:, 1] = 5``, ``v[:] = 5``) is refused."""
    e_kind, e_out = _expanded_write(ember, name, grad)
    t_kind, t_out = _expanded_write(torch, name, grad)
    assert e_kind == t_kind, (e_out, t_out)
    if e_kind == "ok":
        for a, b in zip(e_out, t_out):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_array_equal(a, b)


# ---- a custom Function's backward returns one gradient per forward argument -----------------


def _grad_count_run(m, returned, k_is_tensor):
    class Scale(m.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            out = tuple(g * 2 if r == "g" else None for r in returned)
            return out[0] if len(out) == 1 else out

    x = m.ones(2, requires_grad=True)
    k = m.ones(2) if k_is_tensor else 3.0
    try:
        Scale.apply(x, k).sum().backward()
    except RuntimeError as e:
        return "raises", str(e).split(" (expected")[0].replace("Scale", "F"), str(e)
    return "ok", x.grad.numpy().tolist(), None


@pytest.mark.parametrize("k_is_tensor", [True, False])
@pytest.mark.parametrize("returned", ["g", "gg", "ggg", "gNN", "gN", "gNg", "N"])
def test_custom_function_gradient_count(returned, k_is_tensor):
    """``backward`` must return one gradient per ``forward`` argument: too many (unless the
    extras are None) or too few raise PyTorch's 'returned an incorrect number of gradients
    (expected 2, got 3)', also when the other argument is a number."""
    e = _grad_count_run(ember, returned, k_is_tensor)
    t = _grad_count_run(torch, returned, k_is_tensor)
    if returned == "gg" and not k_is_tensor:
        # PyTorch also refuses a gradient for a non-tensor argument; ember cannot tell a
        # number from a tensor that needs no grad there, and accepts it
        assert t[0] == "raises" and e[0] == "ok"
        return
    assert e[:2] == t[:2]
    if e[0] == "raises":
        n = len(returned)
        assert f"(expected 2, got {n})" in e[2]


def test_custom_function_gradient_count_in_both_cores(tmp_path):
    """The check runs in the native core and in the pure-Python one."""
    import os
    import subprocess
    import sys

    code = (
        "import ember\n"
        "class F(ember.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x, k):\n"
        "        return x * k\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        return g, g, g\n"
        "x = ember.ones(2, requires_grad=True)\n"
        "try:\n"
        "    F.apply(x, 2.0).sum().backward()\n"
        "except RuntimeError as e:\n"
        "    print(e)\n"
    )
    for pure in ("1", ""):
        env = dict(os.environ, EMBER_PURE_PYTHON=pure)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout
        assert "FBackward returned an incorrect number of gradients (expected 2, got 3)" in out


# ---- what an op keeps for backward decides which in-place changes backward refuses ----------

_SAVING = {
    "addcdiv_x_only_t2": lambda m, x, c, d: (m.addcdiv(x, c, d, value=0.5), d),
    "addcdiv_x_only_t1": lambda m, x, c, d: (m.addcdiv(x, c, d, value=0.5), c),
    "addcmul_x_only": lambda m, x, c, d: (m.addcmul(x, c, d, value=0.5), d),
    "addcmul_self_operand": lambda m, x, c, d: (m.addcmul(x * 1, c, d), c),
    "linear_const_weight": lambda m, x, c, d: (m.nn.functional.linear(x, c.view(1, 4)), c),
    "linear_const_input": lambda m, x, c, d: (m.nn.functional.linear(c, x.view(1, 4)), c),
    "matmul_1d": lambda m, x, c, d: (x @ c, c),
    "einsum_outer": lambda m, x, c, d: (m.einsum("i,j->ij", x, c), c),
    "conv1d_const_weight": lambda m, x, c, d: (
        m.nn.functional.conv1d(x.view(1, 1, 4), c[:2].view(1, 1, 2)), c),
    "conv1d_const_input": lambda m, x, c, d: (
        m.nn.functional.conv1d(c.view(1, 1, 4), x[:2].view(1, 1, 2)), c),
}


@pytest.mark.parametrize("name", sorted(_SAVING))
def test_inplace_change_after_forward_as_pytorch(name):
    """An operand changed in place between forward and backward: backward raises exactly
    where PyTorch's does (its node saved that operand), and otherwise gives its gradient."""
    res = []
    for m in MODULES:
        x = m.tensor([0.5, -1.0, 2.0, 1.5], requires_grad=True)
        c = m.tensor([1.5, 0.25, -0.75, 2.0])
        d = m.tensor([2.0, -0.5, 1.25, 0.75])
        y, changed = _SAVING[name](m, x, c, d)
        changed.mul_(2)
        try:
            y.sum().backward()
            res.append(("ok", x.grad.numpy()))
        except RuntimeError as e:
            res.append(("raises", "modified by an inplace operation" in str(e)))
    assert res[0][0] == res[1][0]
    if res[0][0] == "ok":
        np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-6)
    else:
        assert res[0][1] and res[1][1]


def test_addcmul_with_a_detached_alias_keeps_it_detached_in_double_backward():
    """addcmul(y, y.detach(), x): the detached operand is y's very array; double backward must
    not carry y's history through it (found by the long differential run)."""
    res = []
    for m in MODULES:
        x = m.tensor([[0.25, 1.25], [-0.125, 0.75]], dtype=m.float64, requires_grad=True)
        for op in ("addcmul", "addcdiv"):
            y = x * 1.5
            out = getattr(m, op)(y, y.detach(), x, value=0.5)
            (g,) = m.autograd.grad((out * out).sum(), [x], create_graph=True)
            g.sum().backward()
        res.append(x.grad.numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-10)


def test_addcmul_keeping_nothing_runs_a_second_backward_and_casts_value_for_integers():
    """addcmul_ whose operands need no gradient keeps only ``value`` in PyTorch, a scalar:
    a second backward through it runs; on integer tensors a float value is cast to their dtype
    (``k.addcmul_(k, k, value=0.5)`` leaves k unchanged; long differential run, views seed
    204418873)."""
    res = []
    for m in MODULES:
        x = m.tensor([0.5, -1.0, 2.0], dtype=m.float64, requires_grad=True)
        y = x + x
        c = m.tensor([1.5, 0.25, -0.75], dtype=m.float32)
        y.addcmul_(c, c, value=0.5)
        y.sum().backward()
        y.sum().backward()
        k = m.tensor([3, 3, 3, 1])
        k.addcmul_(k, k, value=0.5)
        u = m.tensor([3, 10], dtype=m.uint8)
        r = m.addcmul(u, u, u, value=1.5)
        res.append((x.grad.tolist(), k.tolist(), r.tolist(), str(r.dtype).split(".")[-1]))
    assert res[0] == res[1]


def test_copy_into_the_same_memory_through_a_size_one_stride():
    """v[-1].copy_(s) where v = s.unsqueeze(0).expand(2, -1) and s has one element: the same
    memory (a size-1 dim's stride never steps), not a partial overlap (long differential run)."""
    for m in MODULES:
        s = (m.tensor([1.0, 2.0], requires_grad=True) * 1).sum(0, keepdim=True)
        v = s.unsqueeze(0).expand(2, -1)
        v[-1].copy_(s)
        assert s.detach().numpy().tolist() == [3.0]
        c = m.tensor([0.125], dtype=m.float64)  # c[::2]: the same element, another stride:
        with pytest.raises(RuntimeError, match="single memory location"):  # a partial overlap
            c.sub_(c[::2], alpha=2)
