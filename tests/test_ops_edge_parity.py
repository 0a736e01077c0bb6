"""Op values and gradients at edge inputs (±0, ±inf, NaN, domain ends) match PyTorch 2.13's.

Each case runs one call on ember and on torch with the same inputs, then compares the forward
values, the dtype, the node name and the gradients of every input (NaN equal to NaN, signed
zeros and infinities compared exactly).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

INF, NAN = math.inf, math.nan
EDGE = [-0.0, 0.0, -INF, INF, NAN, -1.0, 0.5, 1.0, 2.0, 1000.0, -2.5, 1e-9]
POS = [0.0, 1e-9, 0.5, 1.0, 2.0, INF, NAN, -1.0, -0.0]


def _same(a: np.ndarray, b: np.ndarray, what: str) -> None:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs torch {b.shape}"
    np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6, equal_nan=True, err_msg=what)
    # infinities and signed zeros exactly
    inf = np.isinf(b)
    assert np.array_equal(a[inf], b[inf]), f"{what}: infinities {a} vs torch {b}"
    zero = b == 0
    assert np.array_equal(np.signbit(a[zero]), np.signbit(b[zero])), (
        f"{what}: signed zeros {a} vs torch {b}")


def _run(m, fn, inputs):
    ts = [m.tensor(np.asarray(v, dtype=np.float32), requires_grad=True) for v in inputs]
    out = fn(m, *ts)
    out.backward(m.ones_like(out))
    return out, ts


def check(fn, *inputs, name: bool = True) -> None:
    """Compare value, dtype, node name and input gradients of ``fn(m, *tensors)``."""
    eo, ets = _run(ember, fn, inputs)
    to, tts = _run(torch, fn, inputs)
    assert str(eo.dtype).split(".")[-1] == str(to.dtype).split(".")[-1]
    _same(eo.detach().numpy(), to.detach().numpy(), "value")
    if name:
        assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__
    for k, (e, t) in enumerate(zip(ets, tts)):
        if t.grad is None:
            assert e.grad is None or not np.any(e.grad.numpy()), f"grad {k}: torch None"
            continue
        _same(e.grad.numpy(), t.grad.numpy(), f"grad {k}")


@pytest.mark.parametrize("p", [0.5, -0.5, 1.5, -1.5, 2.0, 3.0, -1.0, -2.0, 0.0, 2.5])
def test_pow_scalar_exponent_edges(p):
    check(lambda m, x: x ** p, EDGE)


def test_pow_tensor_exponent_and_scalar_base():
    check(lambda m, x, y: x.abs() ** y, EDGE, list(reversed(EDGE)))
    check(lambda m, x: 2 ** x, EDGE)


def test_logit_edges():
    check(lambda m, x: x.logit(), POS + [1000.0, 1.0 - 1e-7])
    check(lambda m, x: x.logit(0.1), POS + [0.1, 0.9, 1000.0])


def test_gelu_tanh_edges():
    check(lambda m, x: m.nn.functional.gelu(x, approximate="tanh"), EDGE)


def test_gelu_edges_as_pytorch_float64():
    """PyTorch's float32 exact gelu gives different answers at the edges on different CPUs
    (nan at +inf and -0.0 with its AVX-512 kernel; inf and +0.0 with AVX2): ember follows its
    float64 gelu, the same everywhere (inf at +inf, nan at -inf, -0.0 at -0.0)."""
    def fn(m, x):
        if m is torch:
            return m.nn.functional.gelu(x.double()).float()
        return m.nn.functional.gelu(x)

    check(fn, EDGE, name=False)
    check(lambda m, x: m.nn.functional.gelu(x.double()), EDGE)  # ember's float64 path too


def test_xlogy_edges():
    xs = [0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, -0.0, 2.0, 3.0]
    ys = [2.0, 0.0, -1.0, 0.0, NAN, -1.0, INF, 0.0, -INF, 0.5]
    check(lambda m, x, y: m.xlogy(x, y), xs, ys)
    check(lambda m, x: m.xlogy(x, 2.0), xs)
    check(lambda m, y: m.xlogy(2.0, y), ys)


def test_composites_edges():
    check(lambda m, x: x.sinc(), [0.0, -0.0, 1e-9, 0.5, 1.0, -2.5, INF, NAN])
    check(lambda m, x: x.nan_to_num(), [1.0, NAN, INF, -INF, -0.0])
    check(lambda m, x: x.nan_to_num(1.0, 2.0, -2.0), [1.0, NAN, INF, -INF])
    check(lambda m, x, y: m.copysign(x, y), [0.0, -0.0, 1.0, -2.0, 3.0], [-1.0, 1.0, -0.0, 3.0, NAN])
    check(lambda m, x: m.copysign(x, -2.0), [0.0, -0.0, 1.0, -2.0])
    check(lambda m, x, y: m.hypot(x, y), [0.0, 3.0, INF, -3.0], [1.0, 4.0, 1.0, 4.0])
    check(lambda m, x, y: m.fmax(x, y), [1.0, 2.0, NAN, NAN, 1.0], [1.0, NAN, 1.0, NAN, 3.0])
    check(lambda m, x, y: m.fmin(x, y), [1.0, 2.0, NAN, NAN, 1.0], [1.0, NAN, 1.0, NAN, 3.0])
    check(lambda m, x, y, w: m.lerp(x, y, w), [0.0, 1.0, 2.0], [1.0, 3.0, -1.0], [0.5, 0.1, 2.0])
    check(lambda m, x, y: m.lerp(x, y, 0.3), [0.0, 1.0, 2.0], [1.0, 3.0, -1.0])
    check(lambda m, x, y, z: m.addcmul(x, y, z, value=2), [0.0, 1.0], [1.0, 3.0], [2.0, -1.0])
    check(lambda m, x, y, z: m.addcdiv(x, y, z, value=2), [0.0, 1.0], [1.0, 3.0], [2.0, -1.0])
    check(lambda m, x: x.clamp(-0.5, 0.5), EDGE)
    check(lambda m, x: m.clamp_min(x, 0.1), EDGE)
    check(lambda m, x: m.clamp_max(x, 0.1), EDGE)
    check(lambda m, x, y: m.clamp_min(x, y), [1.0, 2.0], [1.5, 0.0])
    check(lambda m, x: 2 - x, EDGE)
    check(lambda m, x: 2 / x, EDGE)
    check(lambda m, x: x.square(), EDGE)
    for f in ("floor", "ceil", "round", "trunc", "sign"):
        check(lambda m, x, f=f: getattr(x, f)(), EDGE)
    check(lambda m, x: x.abs().log1p(), EDGE)
    check(lambda m, x, y: m.logaddexp(x, y), [0.0, 1.0, -INF], [1.0, 1.0, -INF])


def test_double_backward_through_new_ops():
    """create_graph: the backward of the new ops is itself differentiable."""
    for m in (ember, torch):
        x = m.tensor([0.3, 0.6], requires_grad=True)
        (g,) = m.autograd.grad((x.logit() + x.sinc() + m.xlogy(x, x + 1)).sum(), x,
                               create_graph=True)
        (h,) = m.autograd.grad(g.sum(), x)
        if m is ember:
            got = h.numpy()
        else:
            want = h.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_div_divisor_gradient_edges():
    """grad_b = -grad * ((a / b) / b), PyTorch's form: dividing by b * b instead underflows for
    tiny float32 b (1e-30 ** 2 is 0: -inf where PyTorch's is finite)."""
    b = [0.0, -0.0, 1e-30, -1e-30, 1e-20, 2.0, INF, NAN, 1e30]
    check(lambda m, x, y: x / y, [1.0, 1.0, 1e-10, 1e-10, 3.0, 0.0, 1.0, 1.0, 1e30], b)
    check(lambda m, x, y: x / y, [0.0] * len(b), b)


def test_div_second_derivative_at_a_zero_divisor():
    """d2/db2 of (c / b)**2 at b == 0 is +inf in PyTorch; with grad_b = -grad * a / (b * b) the
    double backward multiplied inf by b * b's derivative 2b == 0 and gave nan (a long
    differential run, views family, seed 27139003)."""
    got = []
    for m in (ember, torch):
        b = m.tensor([0.0, 0.5, -2.0], dtype=m.float64, requires_grad=True)
        y = 1.5 / b if m is torch else m.tensor([1.5] * 3, dtype=m.float64) / b
        (g,) = m.autograd.grad((y * y).sum(), b, create_graph=True)
        g.sum().backward()
        got.append((g.detach().numpy(), b.grad.numpy()))
    for e, t in zip(got[0], got[1]):
        _same(e, t, "double backward of a division")
    assert np.isposinf(got[0][1][0])


KEYS = ["[:]", "[...]", "[0]", "[:, 0]", "[0, :]", "[0, 1:]", "[1:, 0]", "[None]", "[None, 0]",
        "[0, None]", "[..., None]", "[:, None, :]", "[0, ...]", "[..., 0]", "[:, :2]", "[:, :]",
        "[::2]", "[0:3]", "[:, 0:4]", "[0, 0, 0]", "[None, :]", "[True]", "[0, [0, 1]]",
        "[..., None, :]", "[-1]", "[:, -2:]"]


@pytest.mark.parametrize("key", KEYS)
def test_getitem_node_names(key):
    """PyTorch names a basic index's node after its last effective step (select, unsqueeze,
    slice; alias when every dim is kept whole)."""
    names = []
    for m in (ember, torch):
        x = m.tensor(np.arange(60, dtype=np.float32).reshape(3, 4, 5), requires_grad=True)
        out = eval("x" + key)
        out.sum().backward()
        names.append((type(out.grad_fn).__name__, out.detach().numpy(), x.grad.numpy()))
    assert names[0][0] == names[1][0]
    np.testing.assert_array_equal(names[0][1], names[1][1])
    np.testing.assert_array_equal(names[0][2], names[1][2])


@pytest.mark.parametrize("call", [
    lambda m, x: x.sort(1)[0], lambda m, x: x.sort(0, descending=True)[0],
    lambda m, x: x.topk(2, 1)[0], lambda m, x: x.topk(1, 0, largest=False)[0],
    lambda m, x: x.kthvalue(2, 1)[0], lambda m, x: x.kthvalue(2, 0, keepdim=True)[0],
    lambda m, x: x[0, 0].sort()[0], lambda m, x: x[0, 0].topk(1)[0],
    lambda m, x: x[0, 0].kthvalue(1)[0], lambda m, x: x.msort(),
    lambda m, x: x.scatter(1, m.tensor([[0], [2], [1]]), 1.5),
    lambda m, x: x.scatter(1, m.tensor([[0], [2], [1]]), x[:, :1] * 2),
    lambda m, x: x.scatter_add(1, m.tensor([[0, 0], [2, 1], [1, 1]]), x[:, :2] * 2),
    lambda m, x: x.index_add(0, m.tensor([0, 2, 0]), x * 3),
    lambda m, x: x.index_add(0, m.tensor([0, 2, 0]), x * 3, alpha=2),
    lambda m, x: x.index_select(1, m.tensor([3, 0])),
    lambda m, x: x.masked_select(x > 0),
    lambda m, x: x.take(m.tensor([0, 5, 5])),
])
def test_selection_nodes_values_grads(call):
    res = []
    for m in (ember, torch):
        x = m.tensor(np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32),
                     requires_grad=True)
        out = call(m, x)
        (out * m.arange(out.numel()).reshape(out.shape)).sum().backward()
        res.append((type(out.grad_fn).__name__, tuple(out.shape), out.detach().numpy(),
                    x.grad.numpy()))
    assert res[0][:2] == res[1][:2]
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-6)
    np.testing.assert_allclose(res[0][3], res[1][3], rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda m, x: x.rot90(), lambda m, x: x.rot90(0), lambda m, x: x.rot90(2),
    lambda m, x: x.rot90(3), lambda m, x: x.rot90(-1, [1, 0]), lambda m, x: x.rot90(5, [0, 2]),
    lambda m, x: x.repeat_interleave(2), lambda m, x: x.repeat_interleave(2, 1),
    lambda m, x: x.repeat_interleave(m.tensor([1, 0, 2]), 0),
    lambda m, x: x.repeat_interleave(m.tensor([3]), 2), lambda m, x: x.repeat_interleave(m.tensor(2), 0),
    lambda m, x: x.broadcast_to(2, 3, 4, 2), lambda m, x: x.broadcast_to((2, 3, 4, 2)),
    lambda m, x: x.broadcast_to(size=(2, 3, 4, 2)), lambda m, x: m.broadcast_to(x, (2, 3, 4, 2)),
])
def test_shape_nodes_values_grads(call):
    res = []
    for m in (ember, torch):
        x = m.tensor(np.random.default_rng(0).standard_normal((3, 4, 2)).astype(np.float32),
                     requires_grad=True)
        out = call(m, x)
        (out * m.arange(out.numel()).reshape(out.shape)).sum().backward()
        res.append((type(out.grad_fn).__name__, tuple(out.shape), out.detach().numpy(),
                    x.grad.numpy()))
    assert res[0][:2] == res[1][:2]
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-6)
    np.testing.assert_allclose(res[0][3], res[1][3], rtol=1e-6)


def test_rot90_is_a_copy_and_broadcast_to_function_takes_one_size():
    x = ember.ones(2, 2)
    y = x.rot90(0)
    y[0, 0] = 5.0
    assert x[0, 0].item() == 1.0
    for m in (ember, torch):
        with pytest.raises(TypeError):
            m.broadcast_to(m.ones(2), 2, 2)


@pytest.mark.parametrize("call", [
    lambda m, x, y: m.rsub(x, 2), lambda m, x, y: m.rsub(x, y), lambda m, x, y: m.rsub(x, y, alpha=2),
    lambda m, x, y: x.remainder(y), lambda m, x, y: x.remainder(2.0), lambda m, x, y: x.fmod(y),
    lambda m, x, y: x.fmod(2.0), lambda m, x, y: x.sgn(), lambda m, x, y: m.sgn(x),
    lambda m, x, y: x.deg2rad(), lambda m, x, y: x.rad2deg(), lambda m, x, y: m.logaddexp2(x, y),
    lambda m, x, y: x.index_fill(0, m.tensor([0, 2]), 1.5),
    lambda m, x, y: x.index_fill(1, m.tensor([1]), m.tensor(-1.0)),
    lambda m, x, y: x.index_copy(0, m.tensor([2, 0, 1]), y),
    lambda m, x, y: x.norm(1), lambda m, x, y: x.norm(float("inf"), dim=1),
    lambda m, x, y: m.linalg.vector_norm(x, -float("inf")),
])
def test_more_nodes_values_grads(call):
    res = []
    for m in (ember, torch):
        x = m.tensor(np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32),
                     requires_grad=True)
        y = m.tensor(np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32) + 3,
                     requires_grad=True)
        out = call(m, x, y)
        (out * m.arange(out.numel()).reshape(out.shape)).sum().backward()
        res.append((type(out.grad_fn).__name__, tuple(out.shape), out.detach().numpy(),
                    x.grad.numpy(force=True),  # (torch's sgn gradient is a ZeroTensor)
                    None if y.grad is None else y.grad.numpy(force=True)))
    assert res[0][:2] == res[1][:2]
    for k in (2, 3, 4):
        if res[1][k] is None:
            assert res[0][k] is None or not np.any(res[0][k])
        else:
            np.testing.assert_allclose(res[0][k], res[1][k], rtol=1e-5, atol=1e-6)
