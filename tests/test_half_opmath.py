"""float16/bfloat16 arithmetic as PyTorch's "opmath": computed in float32, rounded once.

Every case runs on ember and on the installed PyTorch (CPU) and compares bit for bit, result
dtypes included. The inputs hold 256 elements per row block (a multiple of 64): PyTorch's
vectorised CPU loops then cover every element (its scalar tail loop for the last
``n % 64`` elements rounds some ops, e.g. ``add`` with ``alpha``, differently). A 1-ulp
tolerance (in the half type) is used only where PyTorch's kernel differs from "compute in
float32, round once" in a way that depends on its vectorised transcendental functions or on
intermediate values it stores in the half type; each such case says why.

The float32 scatter-accumulation cases (index_add_, scatter_add_, index_put_/put_ with
accumulate, scatter_reduce sum, bincount) check that repeated indices add up in index order,
in float32, onto the input's values, as PyTorch's CPU kernels do.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

HALVES = ("float16", "bfloat16")

_RNG = np.random.default_rng(1234)
X = (_RNG.standard_normal((4, 64)) * 3).astype(np.float32)
Y = (_RNG.standard_normal((4, 64)) * 3).astype(np.float32)
P = (np.abs(_RNG.standard_normal((4, 64))) * 2 + 0.25).astype(np.float32)
M = _RNG.standard_normal((64, 8)).astype(np.float32)


def _both(fn: Any, dt: str, *arrays: np.ndarray) -> tuple[Any, Any]:
    outs = []
    for m in (torch, ember):
        args = [m.tensor(a).to(getattr(m, dt)) for a in arrays]
        outs.append(fn(m, *args))
    return outs[0], outs[1]


def _bits(t: Any) -> np.ndarray:
    """The half values' bit patterns as int32 (ordered like the floats for ulp distances)."""
    b = t.detach().contiguous().view(t.__class__ is torch.Tensor and torch.int16 or ember.int16)
    b = np.asarray(b.numpy() if hasattr(b, "numpy") else b).astype(np.int32)
    return np.where(b < 0, -32768 - b, b)


def _same(t: Any, e: Any, ulp: int = 0) -> None:
    assert str(t.dtype) == str(e.dtype), (t.dtype, e.dtype)
    assert tuple(t.shape) == tuple(e.shape)
    a, b = t.detach().float().numpy(), e.detach().float().numpy()
    nan = np.isnan(a) & np.isnan(b)
    if ulp == 0:
        bad = ~((a == b) | nan)
        assert not bad.any(), f"{bad.sum()} of {bad.size} differ: torch {a[bad][:4]} ember {b[bad][:4]}"
        return
    d = np.abs(_bits(t) - _bits(e))
    assert (d[~nan] <= ulp).all(), f"up to {d[~nan].max()} ulps apart"


# ---------------------------------------------------------------------------------------------
# elementwise: numbers are not rounded to the half type first; compound ops round once

BINARY = {
    "mul_number": lambda m, x, y, p: x * 0.1,
    "rmul_number": lambda m, x, y, p: 0.1 * x,
    "div_number": lambda m, x, y, p: x / 3.3,
    "number_div": lambda m, x, y, p: 3.3 / p,
    "add_number": lambda m, x, y, p: x + 0.1,  # (PyTorch rounds an added number: so do we)
    "sub_number": lambda m, x, y, p: x - 0.1,
    "rsub_number": lambda m, x, y, p: 0.1 - x,
    "add": lambda m, x, y, p: x + y,
    "mul": lambda m, x, y, p: x * y,
    "div": lambda m, x, y, p: x / p,
    "add_alpha": lambda m, x, y, p: m.add(x, y, alpha=0.3),
    "sub_alpha": lambda m, x, y, p: m.sub(x, y, alpha=1.7),
    "iadd_alpha": lambda m, x, y, p: x.clone().add_(y, alpha=0.3),
    "imul_number": lambda m, x, y, p: x.clone().mul_(0.1),
    "addcmul": lambda m, x, y, p: m.addcmul(x, y, p, value=0.3),
    "addcdiv": lambda m, x, y, p: m.addcdiv(x, y, p, value=0.3),
    "lerp_tensor": lambda m, x, y, p: m.lerp(x, y, p / 4),
    "deg2rad": lambda m, x, y, p: m.deg2rad(x),
    "remainder_number": lambda m, x, y, p: m.remainder(x, 0.7),
    "fmod_number": lambda m, x, y, p: m.fmod(x, 0.7),
    "number_pow": lambda m, x, y, p: 1.3 ** x,
    "pow_tensor": lambda m, x, y, p: p ** (y / 4),
    "where_number": lambda m, x, y, p: m.where(x > 0, 0.1, x),
}

POWERS = (2, 3, -1, -2, 0.5, 1.5, 2.5, 0.3, 0.7, 4)

UNARY = {
    "exp": lambda m, x, p: m.exp(x), "log": lambda m, x, p: m.log(p),
    "sqrt": lambda m, x, p: m.sqrt(p), "rsqrt": lambda m, x, p: m.rsqrt(p),
    "sin": lambda m, x, p: m.sin(x), "tanh": lambda m, x, p: m.tanh(x),
    "sigmoid": lambda m, x, p: m.sigmoid(x), "log1p": lambda m, x, p: m.log1p(p),
    "expm1": lambda m, x, p: m.expm1(x), "reciprocal": lambda m, x, p: m.reciprocal(p),
    "silu": lambda m, x, p: m.nn.functional.silu(x),
    "softplus": lambda m, x, p: m.nn.functional.softplus(x),
    "elu": lambda m, x, p: m.nn.functional.elu(x),
    "leaky_relu": lambda m, x, p: m.nn.functional.leaky_relu(x, 0.1),
    "mish": lambda m, x, p: m.nn.functional.mish(x),
    "hardswish": lambda m, x, p: m.nn.functional.hardswish(x),
    "logsigmoid": lambda m, x, p: m.nn.functional.logsigmoid(x),
}


@pytest.mark.parametrize("dt", HALVES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_and_number_operands_match_pytorch(name: str, dt: str) -> None:
    t, e = _both(BINARY[name], dt, X, Y, P)
    _same(t, e)


@pytest.mark.parametrize("dt", HALVES)
@pytest.mark.parametrize("exponent", POWERS)
def test_pow_by_a_number_matches_pytorch(exponent: float, dt: str) -> None:
    t, e = _both(lambda m, x: x ** exponent, dt, X)
    _same(t, e)


@pytest.mark.parametrize("dt", HALVES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_and_activations_match_pytorch(name: str, dt: str) -> None:
    t, e = _both(UNARY[name], dt, X, P)
    _same(t, e)


@pytest.mark.parametrize("dt", HALVES)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_within_one_ulp(approximate: str, dt: str) -> None:
    # 1 ulp: PyTorch's vectorised erf/tanh (float32, a few float32 ulps from libm's) moves a
    # few results across a half rounding boundary; inputs stay in [-3, 3], where gelu is not
    # tiny (far out on the left PyTorch's erf gives exactly -1 and gelu exactly 0)
    x = np.clip(X, -3, 3)
    t, e = _both(lambda m, a: m.nn.functional.gelu(a, approximate=approximate), dt, x)
    _same(t, e, ulp=1)


def test_the_issue_examples() -> None:
    x = ember.tensor([0.123456], dtype=ember.bfloat16) * 0.1
    assert x.dtype == ember.bfloat16 and x.item() == 0.0123291015625
    a = ember.tensor([[3.265625, -2.734375], [-2.734375, 2.640625]], dtype=ember.bfloat16)
    assert ember.addmm(a, a, a, beta=-4.775, alpha=2.0315)[0, 0].item() == 21.25
    for dt in (ember.bfloat16, ember.float16):
        s = ember.full((1000,), 0.01, dtype=dt).sum()
        assert s.dtype == dt and s.item() == 10.0


@pytest.mark.parametrize("dt", HALVES)
@pytest.mark.parametrize("weight", [0.3, 0.7])
def test_lerp_within_one_ulp(weight: float, dt: str) -> None:
    # 1 ulp: PyTorch's lerp is a fused multiply-add in float32 (one rounding before the half
    # one); ember multiplies and adds in float32 (two)
    t, e = _both(lambda m, x, y: m.lerp(x, y, weight), dt, X, Y)
    _same(t, e, ulp=1)


# ---------------------------------------------------------------------------------------------
# reductions accumulate in float32 and round once

REDUCTIONS = {
    "sum": lambda m, x: x.sum(), "sum_dim1": lambda m, x: x.sum(1),
    "sum_dim0": lambda m, x: x.sum(0), "mean": lambda m, x: x.mean(),
    "mean_dim1": lambda m, x: x.mean(1), "nansum": lambda m, x: m.nansum(x, 1),
    "var": lambda m, x: x.var(), "var_dim1": lambda m, x: x.var(1),
    "std": lambda m, x: x.std(), "std_dim1": lambda m, x: x.std(1),
    "norm": lambda m, x: x.norm(), "norm_dim1": lambda m, x: x.norm(dim=1),
    "norm_p1": lambda m, x: x.norm(p=1, dim=1), "logsumexp": lambda m, x: m.logsumexp(x, 1),
    "softmax": lambda m, x: m.softmax(x, 1), "softmax_f": lambda m, x: m.nn.functional.softmax(x, -1),
    "cumsum": lambda m, x: x.cumsum(1), "cumprod": lambda m, x: (x.abs() / 2 + 0.5).cumprod(1),
    "long_sum": lambda m, x: x.reshape(-1).repeat(40).sum(),
    "stalled_mean": lambda m, x: m.full((4096,), 0.01, dtype=x.dtype).mean(),
}


@pytest.mark.parametrize("dt", HALVES)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_match_pytorch(name: str, dt: str) -> None:
    t, e = _both(REDUCTIONS[name], dt, X)
    _same(t, e)


@pytest.mark.parametrize("dt", HALVES)
@pytest.mark.parametrize("name", ["log_softmax", "softmax_dim0", "log_softmax_dim0"])
def test_softmax_family_within_one_ulp(name: str, dt: str) -> None:
    # 1 ulp: PyTorch's softmax kernels keep some intermediates in the half type (the log of the
    # sum along the last dim; exp(x - max) along an inner dim) before the last step, where
    # ember rounds once
    fn = {"log_softmax": lambda m, x: m.log_softmax(x, 1),
          "softmax_dim0": lambda m, x: m.softmax(x, 0),
          "log_softmax_dim0": lambda m, x: m.log_softmax(x, 0)}[name]
    t, e = _both(fn, dt, X)
    _same(t, e, ulp=1)


# ---------------------------------------------------------------------------------------------
# matrix products: float32 accumulation, alpha/beta and bias in float32, one rounding

MATMULS = {
    "mm": lambda m, x, w: x @ w,
    "mv": lambda m, x, w: m.mv(x, w[:, 0].contiguous()),
    "bmm": lambda m, x, w: m.bmm(x.reshape(2, 2, 64), m.stack([w, w])),
    "addmm": lambda m, x, w: m.addmm(x[:, :8], x, w),
    "addmm_scaled": lambda m, x, w: m.addmm(x[:, :8], x, w, beta=0.7, alpha=1.3),
    "baddbmm_scaled": lambda m, x, w: m.baddbmm(x[:, :8].reshape(2, 2, 8), x.reshape(2, 2, 64),
                                                m.stack([w, w]), beta=0.5, alpha=-1.1),
    "linear": lambda m, x, w: m.nn.functional.linear(x, w.t(), w[0]),
    "linear_no_bias": lambda m, x, w: m.nn.functional.linear(x, w.t()),
    "linear_3d": lambda m, x, w: m.nn.functional.linear(x.reshape(2, 2, 64), w.t(), w[1]),
}


@pytest.mark.parametrize("dt", HALVES)
@pytest.mark.parametrize("name", sorted(MATMULS))
def test_matrix_products_match_pytorch(name: str, dt: str) -> None:
    t, e = _both(MATMULS[name], dt, X, M)
    _same(t, e)


@pytest.mark.parametrize("dt", HALVES)
def test_addmv_within_one_ulp(dt: str) -> None:
    # 1 ulp: PyTorch's bfloat16 matrix-vector kernel with beta/alpha sums in its own order
    fn = lambda m, x, w: m.addmv(x[:, 0], x, w[:, 0].contiguous(), beta=-0.3, alpha=2.1)  # noqa: E731
    t, e = _both(fn, dt, X, M)
    _same(t, e, ulp=1)


# ---------------------------------------------------------------------------------------------
# gradients: PyTorch's fused backward kernels also compute in float32

GRADS = {
    "mul_number": (lambda m, x, w: x * 0.1, 1),
    "div_number": (lambda m, x, w: x / 3.3, 1),
    "sum": (lambda m, x, w: x.sum(1), 1),
    "mean": (lambda m, x, w: x.mean(1), 1),
    "cumsum": (lambda m, x, w: x.cumsum(1), 1),
    "softmax": (lambda m, x, w: m.softmax(x, 1), 1),
    "logsumexp": (lambda m, x, w: m.logsumexp(x, 1), 1),
    "softplus": (lambda m, x, w: m.nn.functional.softplus(x), 1),
    # (float16 sigmoid is left out: PyTorch's float16 sigmoid backward rounds each step in
    # float16, its bfloat16 one computes in float32 as here)
    "sigmoid_bfloat16": (lambda m, x, w: m.sigmoid(x), 1),
    "mm": (lambda m, x, w: x @ w, 2),
    "linear": (lambda m, x, w: m.nn.functional.linear(x, w.t(), w[0]), 2),
}


@pytest.mark.parametrize("dt", HALVES)
@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_pytorch(name: str, dt: str) -> None:
    fn, n_in = GRADS[name]
    if name.endswith("bfloat16") and dt != "bfloat16":
        pytest.skip("bfloat16 only")
    grads = []
    for m in (torch, ember):
        x = m.tensor(X).to(getattr(m, dt)).requires_grad_()
        w = m.tensor(M).to(getattr(m, dt)).requires_grad_()
        out = fn(m, x, w)
        g = np.random.default_rng(7).standard_normal(tuple(out.shape)).astype(np.float32)
        out.backward(m.tensor(g).to(out.dtype))
        grads.append([x.grad, w.grad][:n_in])
    for t, e in zip(*grads):
        _same(t, e)


@pytest.mark.parametrize("dt", HALVES)
def test_silu_gradient_within_one_ulp(dt: str) -> None:
    # 1 ulp: PyTorch's silu backward takes sigmoid as 1 / (1 + exp(-x)), ember's stable form
    # exp(x) / (1 + exp(x)) for x < 0 (a few results land across a rounding boundary)
    grads = []
    for m in (torch, ember):
        x = m.tensor(X).to(getattr(m, dt)).requires_grad_()
        out = m.nn.functional.silu(x)
        g = np.random.default_rng(7).standard_normal(tuple(out.shape)).astype(np.float32)
        out.backward(m.tensor(g).to(out.dtype))
        grads.append(x.grad)
    _same(*grads, ulp=1)


def test_float32_paths_keep_float32() -> None:
    x = ember.tensor(X)
    for out in (x * 0.1, x.sum(), ember.softmax(x, 1), x @ ember.tensor(M), x.cumsum(1)):
        assert out.dtype == ember.float32


# ---------------------------------------------------------------------------------------------
# scatter accumulation: in index order, in the tensor's dtype, onto its values


def test_float32_index_add_adds_in_order_in_float32() -> None:
    idx = ember.zeros(4, dtype=ember.long)
    src = ember.tensor([1e8, 1.0, -1e8, 1.0])
    out = ember.zeros(1).index_add_(0, idx, src)
    assert out.dtype == ember.float32 and out.tolist() == [1.0]  # float64 sums gave 2.0
    assert ember.zeros(1).scatter_add_(0, idx, src).tolist() == [1.0]
    assert ember.zeros(1).index_put_((idx,), src, accumulate=True).tolist() == [1.0]
    assert ember.zeros(1).put_(idx, src, accumulate=True).tolist() == [1.0]
    assert ember.bincount(idx, weights=src).tolist() == [1.0]


SCATTERS = {
    "index_add": lambda m, b, i, s: b.clone().index_add_(0, i, s),
    "index_add_zero": lambda m, b, i, s: m.zeros_like(b).index_add_(0, i, s),
    "index_add_2d": lambda m, b, i, s: m.zeros(7, 3, dtype=b.dtype).index_add_(
        0, i, m.stack([s, s * 0.5, -s], 1)),
    "scatter_add": lambda m, b, i, s: b.clone().scatter_add_(0, i, s),
    "scatter_add_zero": lambda m, b, i, s: m.zeros_like(b).scatter_add_(0, i, s),
    "scatter_add_2d": lambda m, b, i, s: m.zeros(3, 4, dtype=b.dtype).scatter_add_(
        0, i[:48].reshape(12, 4) % 3, s[:48].reshape(12, 4)),
    "index_put": lambda m, b, i, s: b.clone().index_put_((i,), s, accumulate=True),
    "put": lambda m, b, i, s: b.clone().put_(i, s, accumulate=True),
    "scatter_reduce_sum": lambda m, b, i, s: b.clone().scatter_reduce_(0, i, s, "sum"),
    "scatter_reduce_sum_excl": lambda m, b, i, s: b.clone().scatter_reduce_(
        0, i, s, "sum", include_self=False),
    "bincount": lambda m, b, i, s: m.bincount(i, weights=s),
}


@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(SCATTERS))
def test_scatter_accumulation_matches_pytorch(name: str, dt: str) -> None:
    rng = np.random.default_rng(3)
    base = (rng.standard_normal(7) * 1000).astype(np.float32)
    src = (rng.standard_normal(64) * 10.0 ** rng.integers(-3, 5, 64)).astype(np.float32)
    if dt == "float16":
        src = np.clip(src, -6e4, 6e4)
    idx = rng.integers(0, 7, 64)
    res = []
    for m in (torch, ember):
        d = getattr(m, dt)
        res.append(SCATTERS[name](m, m.tensor(base).to(d), m.tensor(idx), m.tensor(src).to(d)))
    _same(*res)


@pytest.mark.parametrize("dt", HALVES)
@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_and_max_pool_compute_in_float32(dt: str, groups: int) -> None:
    """conv2d of half tensors: the float32 convolution of the half values (exact products,
    float32 sums, the bias joined there), rounded once, forward and gradients; max_pool2d: the
    float32 kernel's search (the maxima are half values: exact). Against the float32
    computation in ember, and PyTorch within one half ulp (its sums run in another order)."""
    rng = np.random.default_rng(77)
    x = rng.standard_normal((3, 4, 10, 10)).astype(np.float32)
    w = rng.standard_normal((6, 4 // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)

    def run(m: Any, half: bool) -> list:
        d = getattr(m, dt) if half else m.float32
        xs, ws, bs = (m.tensor(v).to(getattr(m, dt)).to(d).requires_grad_() for v in (x, w, b))
        y = m.nn.functional.conv2d(xs, ws, bs, padding=1, groups=groups)
        p = m.nn.functional.max_pool2d(y, 2)
        (p.float() * m.linspace(-1, 1, 5)).sum().backward()
        return [v.detach().float().numpy() for v in (y, p, xs.grad, ws.grad, bs.grad)]

    got = run(ember, True)
    wide = run(ember, False)  # the same half values, computed and kept in float32
    half = ember.bfloat16.np if dt == "bfloat16" else np.float16
    for g, r in zip(got[:2], wide[:2]):
        np.testing.assert_array_equal(g, r.astype(half).astype(np.float32))
    # PyTorch's bfloat16 convolution backward on a CPU without AVX512-BF16 rounds on the way
    # (its input gradient there up to 0.076 from its float32 one, ember's 0.029): the bound
    # widens by PyTorch's own distance from its float32 computation
    rtol = 2.0**-7 if dt == "bfloat16" else 2.0**-10
    for g, r, rw in zip(got, run(torch, True), run(torch, False)):
        slack = np.abs(r - rw.astype(half).astype(np.float32))
        assert (np.abs(g - r) <= 1e-2 + rtol * np.abs(r) + slack).all()
