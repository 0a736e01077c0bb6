"""Tests for ember/ops/linalg.py and the ember.linalg namespace (check_op: NumPy reference,
float32 stays float32, float64 gradcheck, gradgradcheck, torch parity), plus error messages."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.linalg  # noqa: F401 - the namespace under test
from helpers import HAVE_TORCH, check_op, randn

if HAVE_TORCH:
    import torch


def spd(n, seed=0, batch=()):
    """A well-conditioned symmetric positive-definite matrix (or batch)."""
    a = randn(*batch, n, n, seed=seed)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def well(n, seed=0, batch=()):
    """A well-conditioned square matrix (or batch)."""
    return randn(*batch, n, n, seed=seed) + 3 * n * np.eye(n) * 0.5


def msg(excinfo):
    return str(excinfo.value)


# ---------------------------------------------------------------------------------------------
# matmul: every rank combination, broadcasting, empty

MATMUL_SHAPES = [
    ((3, 4), (4, 2)),
    ((4,), (4,)),
    ((3, 4), (4,)),
    ((4,), (4, 2)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((1, 3, 4), (2, 4, 2)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 3)),
    ((2, 2, 3, 4), (4,)),
    ((0, 4), (4, 3)),
    ((3, 0), (0, 2)),
    ((0, 3, 4), (4, 2)),
    ((1, 1), (1, 1)),
    ((2, 3, 0), (0, 4)),
    ((2, 0, 3), (3,)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul(sa, sb):
    check_op(lambda m, a, b: m.matmul(a, b), randn(*sa), randn(*sb, seed=1), ref=np.matmul,
             gradgrad=max(len(sa), len(sb)) <= 3)


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 2)), ((2, 3, 4), (4,)), ((4,), (4,))])
def test_matmul_operator(sa, sb):
    check_op(lambda m, a, b: a @ b, randn(*sa), randn(*sb, seed=1), ref=np.matmul)


def test_matmul_same_tensor_and_big_batch_shared_weight():
    x = randn(5, 7, 6)
    w = randn(6, 3, seed=2)
    check_op(lambda m, x, w: m.matmul(x, w), x, w, ref=np.matmul, gradgrad=True)
    check_op(lambda m, w, x: m.matmul(w.mT, x.mT), w, x, ref=lambda w, x: w.T @ np.swapaxes(x, 1, 2))
    check_op(lambda m, a: a @ a, randn(3, 3), ref=lambda a: a @ a, gradgrad=True)


def test_matmul_node_names():
    a = ember.randn(3, 4, requires_grad=True)
    v = ember.randn(4, requires_grad=True)
    b3 = ember.randn(2, 4, 5, requires_grad=True)
    assert type((a @ ember.randn(4, 2)).grad_fn).__name__ == "MmBackward0"
    assert type((v @ v).grad_fn).__name__ == "DotBackward0"
    assert type((a @ v).grad_fn).__name__ == "MvBackward0"
    assert type(ember.bmm(ember.randn(2, 3, 4), b3).grad_fn).__name__ == "BmmBackward0"
    assert type(ember.addmm(ember.randn(3, 2), a, ember.randn(4, 2)).grad_fn).__name__ == \
        "AddmmBackward0"
    assert type(ember.t(a).grad_fn).__name__ == "TBackward0"
    assert type(ember.tril(a).grad_fn).__name__ == "TrilBackward0"
    assert type(ember.diagonal(a).grad_fn).__name__ == "DiagonalBackward0"
    assert type(ember.trace(a).grad_fn).__name__ == "TraceBackward0"


def test_matmul_no_grad_records_nothing():
    a = ember.randn(3, 4, requires_grad=True)
    with ember.no_grad():
        y = a @ ember.randn(4, 2)
    assert y.grad_fn is None and not y.requires_grad


def test_matmul_only_one_side_needs_grad():
    x = ember.tensor(randn(5, 3, 4))
    w = ember.tensor(randn(4, 2, seed=1), requires_grad=True)
    (x @ w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), x.numpy().reshape(-1, 4).T @ np.ones((15, 2)),
                               rtol=1e-6)
    x2 = ember.tensor(randn(5, 3, 4), requires_grad=True)
    (x2 @ ember.tensor(randn(4, 2, seed=1))).sum().backward()
    assert x2.grad.shape == (5, 3, 4)


@pytest.mark.parametrize("dt", ["int64", "int32", "int16", "uint8"])
def test_matmul_integers(dt):
    a = np.arange(12).reshape(3, 4).astype(dt)
    b = np.arange(8).reshape(4, 2).astype(dt)
    out = ember.matmul(ember.tensor(a), ember.tensor(b))
    assert str(out.dtype) == f"torch.{dt}"
    np.testing.assert_array_equal(out.numpy(), a @ b)
    v = ember.tensor(np.arange(3, dtype=dt))
    assert (v @ v).item() == 5


@pytest.mark.parametrize("dt", [ember.float16, ember.bfloat16])
def test_matmul_half_types(dt):
    a = ember.randn(2, 3, 4).to(dt)
    b = ember.randn(4, 5).to(dt)
    out = a @ b
    assert out.dtype == dt
    ref = a.float().numpy() @ b.float().numpy()
    np.testing.assert_allclose(out.float().numpy(), ref, rtol=2e-2, atol=2e-2)


def test_matmul_dtype_error():
    a = ember.ones(3, 4, dtype=ember.int64)
    b = ember.ones(4, 2)
    with pytest.raises(RuntimeError) as e:
        ember.matmul(a, b)
    assert "expected m1 and m2 to have the same dtype, but got: long int != float" in msg(e)
    assert ".float()" in msg(e) and "(3, 4)" in msg(e) and "(4, 2)" in msg(e)
    with pytest.raises(RuntimeError, match="float != double"):
        ember.ones(2, 2) @ ember.ones(2, 2, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype, but "
                                           "found Long and Float"):
        ember.dot(ember.ones(3, dtype=ember.int64), ember.ones(3))
    with pytest.raises(NotImplementedError, match="Bool"):
        ember.ones(2, 2, dtype=ember.bool) @ ember.ones(2, 2, dtype=ember.bool)


def test_matmul_shape_errors():
    with pytest.raises(RuntimeError) as e:
        ember.randn(3, 4) @ ember.randn(5, 2)
    assert "matmul: (3, 4) @ (5, 2): inner dimensions 4 and 5 differ" in msg(e)
    assert "mat1 and mat2 shapes cannot be multiplied (3x4 and 5x2)" in msg(e)
    with pytest.raises(RuntimeError, match=r"\(4,\) @ \(5,\): inner dimensions 4 and 5 differ"):
        ember.randn(4) @ ember.randn(5)
    with pytest.raises(RuntimeError, match=r"\(3, 4\) @ \(5,\): inner dimensions 4 and 5"):
        ember.randn(3, 4) @ ember.randn(5)
    with pytest.raises(RuntimeError, match=r"size of tensor a \(2\) must match the size of tensor "
                                           r"b \(3\) at non-singleton dimension 0"):
        ember.randn(2, 3, 4) @ ember.randn(3, 4, 6)
    with pytest.raises(RuntimeError, match="at least 1D, but they are 0D and 1D"):
        ember.matmul(ember.tensor(1.0), ember.randn(3))
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        ember.matmul([1.0, 2.0], ember.ones(2))


# ---------------------------------------------------------------------------------------------
# mm, bmm, mv, dot, vdot, inner, outer, tensordot


def test_mm_bmm_mv():
    check_op(lambda m, a, b: m.mm(a, b), randn(3, 4), randn(4, 5, seed=1), ref=np.matmul,
             gradgrad=True)
    check_op(lambda m, a, b: m.bmm(a, b), randn(2, 3, 4), randn(2, 4, 5, seed=1), ref=np.matmul,
             gradgrad=True)
    check_op(lambda m, a, b: m.mv(a, b), randn(3, 4), randn(4, seed=1), ref=np.matmul,
             gradgrad=True)
    check_op(lambda m, a, b: a.mm(b), randn(2, 2), randn(2, 2, seed=1), ref=np.matmul)


def test_mm_bmm_mv_errors():
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        ember.mm(ember.randn(3), ember.randn(3, 3))
    with pytest.raises(RuntimeError, match="mat2 must be a matrix"):
        ember.mm(ember.randn(3, 3), ember.randn(2, 3, 3))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(3x4 and "
                                           r"5x3\)"):
        ember.mm(ember.randn(3, 4), ember.randn(5, 3))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        ember.bmm(ember.randn(3, 3), ember.randn(3, 3))
    with pytest.raises(RuntimeError, match=r"batch2 tensor to be: \[2, 4\] but got: \[3, 4\]"):
        ember.bmm(ember.randn(2, 3, 4), ember.randn(3, 4, 3))
    with pytest.raises(RuntimeError, match="float != double"):
        ember.bmm(ember.randn(2, 3, 4), ember.randn(2, 4, 3).double())
    with pytest.raises(RuntimeError, match="vector \\+ matrix @ vector expected, got 2, 2"):
        ember.mv(ember.randn(3, 4), ember.randn(4, 1))
    with pytest.raises(RuntimeError, match="inner dimensions 4 and 5"):
        ember.mv(ember.randn(3, 4), ember.randn(5))


def test_dot_vdot_inner_outer():
    check_op(lambda m, a, b: m.dot(a, b), randn(5), randn(5, seed=1), ref=np.dot, gradgrad=True)
    check_op(lambda m, a, b: m.vdot(a, b), randn(5), randn(5, seed=1), ref=np.vdot)
    check_op(lambda m, a, b: m.outer(a, b), randn(3), randn(4, seed=1), ref=np.outer,
             gradgrad=True)
    check_op(lambda m, a, b: m.ger(a, b), randn(3), randn(2, seed=1), ref=np.outer)
    check_op(lambda m, a, b: m.inner(a, b), randn(2, 3), randn(4, 3, seed=1), ref=np.inner)
    check_op(lambda m, a, b: m.inner(a, b), randn(3), randn(2, 4, 3, seed=1), ref=np.inner)
    check_op(lambda m, a, b: m.inner(a, b), randn(3), randn(3, seed=1), ref=np.inner)
    check_op(lambda m, a, b: m.inner(a, b), randn(), randn(2, 3, seed=1), ref=np.inner)
    # outer promotes dtypes, as torch does
    assert ember.outer(ember.ones(2, dtype=ember.int64), ember.ones(3)).dtype == ember.float32


def test_dot_errors():
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        ember.dot(ember.randn(3, 1), ember.randn(3))
    with pytest.raises(RuntimeError, match=r"expected tensor \[3\] and src \[4\]"):
        ember.dot(ember.randn(3), ember.randn(4))
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
        ember.outer(ember.randn(3, 1), ember.randn(4))
    with pytest.raises(RuntimeError, match=r"inner\(\) the last dimension must match"):
        ember.inner(ember.randn(2, 3), ember.randn(4, 4))


@pytest.mark.parametrize("dims", [2, 1, 0, ([1, 2], [1, 0]), ([0], [2])])
def test_tensordot(dims):
    a = randn(2, 3, 4)
    b = randn(4, 3, 5, seed=1) if dims != 2 else randn(3, 4, 5, seed=1)
    if dims == ([0], [2]):
        b = randn(4, 3, 2, seed=1)
    check_op(lambda m, a, b: m.tensordot(a, b, dims=dims), a, b,
             ref=lambda a, b: np.tensordot(a, b, axes=dims))


def test_tensordot_error():
    with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has "
                                           "size 4 in dim 2 and second has size 3 in dim 0"):
        ember.tensordot(ember.randn(2, 3, 4), ember.randn(3, 3, 5), dims=([1, 2], [1, 0]))


# ---------------------------------------------------------------------------------------------
# einsum

EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("iii->i", [(2, 2, 2)]),
    ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ba", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("i,i->", [(4,), (4,)]),
    ("ij,ij->ij", [(2, 3), (1, 3)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]),
    ("b...a->...", [(2, 4, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ik,jk->k", [(2, 3), (4, 3)]),
    ("ij,j->i", [(3, 4), (4,)]),
    ("ii,i->i", [(3, 3), (3,)]),
    ("...", [()]),
    # two operands as one batched matmul (attention's forms, odd output orders, letters summed
    # in one operand alone, size-1 broadcasts)
    ("bhid,bhjd->bhij", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("bhij,bhjd->bhid", [(2, 2, 3, 5), (2, 2, 5, 4)]),
    ("bij,bjk->kbi", [(2, 3, 4), (2, 4, 2)]),
    ("ijk,jl->il", [(2, 3, 4), (3, 2)]),
    ("bij,bjk->bik", [(1, 2, 3), (2, 3, 4)]),
    ("ij,kj->ik", [(2, 3), (4, 3)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUMS)
def test_einsum(eq, shapes):
    arrays = [randn(*s, seed=i) for i, s in enumerate(shapes)]
    check_op(lambda m, *xs: m.einsum(eq, *xs), *arrays,
             ref=lambda *xs: np.einsum(eq, *xs), gradgrad=True)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_einsum_pairs_match_numpy(data):
    """Random two-operand equations (the batched-matmul path) against NumPy's einsum."""
    letters = "abcde"
    sa = "".join(data.draw(st.permutations(letters))[:data.draw(st.integers(1, 4))])
    sb = "".join(data.draw(st.permutations(letters))[:data.draw(st.integers(1, 4))])
    pool = sorted(set(sa + sb))
    out = "".join(data.draw(st.permutations(pool))[:data.draw(st.integers(0, len(pool)))])
    sizes = {c: data.draw(st.integers(1, 3)) for c in pool}
    rng = np.random.default_rng(0)
    a = rng.standard_normal([sizes[c] for c in sa])
    b = rng.standard_normal([sizes[c] for c in sb])
    eq = f"{sa},{sb}->{out}"
    got = ember.einsum(eq, ember.tensor(a), ember.tensor(b))
    want = np.einsum(eq, a, b)
    assert got.shape == want.shape and got.dtype == ember.float64
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    got32 = ember.einsum(eq, ember.tensor(a, dtype=ember.float32),
                         ember.tensor(b, dtype=ember.float32))
    assert got32.dtype == ember.float32


def test_einsum_forms():
    a, b = randn(2, 3), randn(3, 4, seed=1)
    check_op(lambda m, a, b: m.einsum("ij,jk->ik", [a, b]), a, b, ref=np.matmul)
    check_op(lambda m, a, b: m.einsum(a, [0, 1], b, [1, 2], [0, 2]), a, b, ref=np.matmul)
    check_op(lambda m, a, b: m.einsum(a, [..., 1], b, [1, 2]), a, b, ref=np.matmul)
    check_op(lambda m, a, b: m.einsum("i j , j k -> i k", a, b), a, b, ref=np.matmul)


def test_einsum_integers():
    a = ember.tensor(np.arange(6).reshape(2, 3))
    out = ember.einsum("ij->j", a)
    np.testing.assert_array_equal(out.numpy(), [3, 5, 7])
    assert out.dtype == ember.int64
    a32 = a.int()
    assert ember.einsum("ij->j", a32).dtype == ember.int64  # a sum, as torch.sum
    assert ember.einsum("ij->ji", a32).dtype == ember.int32
    assert ember.einsum("ij,kj->ik", a32, a32).dtype == ember.int32
    b = ember.ones(2, 3, dtype=ember.bool)
    assert ember.einsum("ij->j", b).tolist() == [2, 2, 2]
    assert ember.einsum("ij->ji", b).dtype == ember.bool
    with pytest.raises(NotImplementedError, match="Bool"):
        ember.einsum("ij,jk", b, b.mT)


def test_einsum_errors():
    with pytest.raises(RuntimeError, match="output subscript i appears more than once"):
        ember.einsum("ij,jk->ii", ember.randn(2, 3), ember.randn(3, 4))
    with pytest.raises(RuntimeError, match="output subscript z does not appear"):
        ember.einsum("ij,jk->iz", ember.randn(2, 3), ember.randn(3, 4))
    with pytest.raises(RuntimeError, match="fewer operands were provided"):
        ember.einsum("ij,jk", ember.randn(2, 3))
    with pytest.raises(RuntimeError, match=r"number of subscripts in the equation \(3\) does not "
                                           r"match the number of dimensions \(2\)"):
        ember.einsum("ijk", ember.randn(2, 3))
    with pytest.raises(RuntimeError, match="subscript i is repeated for operand 0 but the sizes "
                                           "don't match, 3 != 2"):
        ember.einsum("ii->i", ember.randn(2, 3))
    with pytest.raises(RuntimeError, match="subscript j has size 4 for operand 1 which does not "
                                           "broadcast with previously seen size 3"):
        ember.einsum("ij,jk", ember.randn(2, 3), ember.randn(4, 4))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.einsum("ij,jk", ember.randn(2, 3), ember.randn(3, 4).double())


# ---------------------------------------------------------------------------------------------
# addmm family


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1.5), (2, 0)])
def test_addmm(beta, alpha):
    check_op(lambda m, i, a, b: m.addmm(i, a, b, beta=beta, alpha=alpha),
             randn(3, 2), randn(3, 4, seed=1), randn(4, 2, seed=2),
             ref=lambda i, a, b: beta * i + alpha * (a @ b), gradgrad=True)


def test_addmm_broadcast_input_and_nan_ignored():
    check_op(lambda m, i, a, b: m.addmm(i, a, b), randn(2), randn(3, 4, seed=1),
             randn(4, 2, seed=2), ref=lambda i, a, b: i + a @ b, gradgrad=True)
    nan = ember.full((3, 2), float("nan"))
    out = ember.addmm(nan, ember.randn(3, 4), ember.randn(4, 2), beta=0)
    assert not ember.isnan(out).any()
    ints = [ember.ones(*s, dtype=ember.int64) for s in ((3, 2), (3, 4), (4, 2))]
    out = ember.addmm(*ints, beta=0.5, alpha=1.5)  # integer tensors take integer scalars
    assert out.dtype == ember.int64 and out.numpy().tolist() == [[4, 4]] * 3


def test_addmv_addbmm_baddbmm_addr():
    check_op(lambda m, i, a, v: m.addmv(i, a, v, beta=0.5, alpha=2.0), randn(3),
             randn(3, 4, seed=1), randn(4, seed=2), ref=lambda i, a, v: 0.5 * i + 2 * a @ v,
             gradgrad=True)
    check_op(lambda m, i, a, b: m.addbmm(i, a, b, alpha=0.5), randn(3, 2), randn(5, 3, 4, seed=1),
             randn(5, 4, 2, seed=2), ref=lambda i, a, b: i + 0.5 * (a @ b).sum(0), gradgrad=True)
    check_op(lambda m, i, a, b: m.baddbmm(i, a, b, beta=2.0), randn(3, 2), randn(5, 3, 4, seed=1),
             randn(5, 4, 2, seed=2), ref=lambda i, a, b: 2 * i + a @ b, gradgrad=True)
    check_op(lambda m, i, a, b: m.addr(i, a, b, beta=2.0, alpha=0.5), randn(3, 2), randn(3, seed=1),
             randn(2, seed=2), ref=lambda i, a, b: 2 * i + 0.5 * np.outer(a, b))
    check_op(lambda m, i, a, b: i.addmm(a, b), randn(3, 2), randn(3, 4, seed=1),
             randn(4, 2, seed=2), ref=lambda i, a, b: i + a @ b)


def test_addmm_errors():
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        ember.addmm(ember.randn(2, 2), ember.randn(3, 4), ember.randn(4, 2))
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype"):
        ember.addmm(ember.randn(3, 2).double(), ember.randn(3, 4), ember.randn(4, 2))
    with pytest.raises(RuntimeError, match="addmv input tensors must have the same dtype"):
        ember.addmv(ember.randn(3), ember.randn(3, 4), ember.randn(4).double())
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        ember.baddbmm(ember.randn(3, 2), ember.randn(3, 4), ember.randn(4, 2))


# ---------------------------------------------------------------------------------------------
# t, tril, triu


def test_t():
    check_op(lambda m, x: m.t(x), randn(2, 3), ref=np.transpose, gradgrad=True)
    check_op(lambda m, x: x.t(), randn(3), ref=lambda x: x)
    check_op(lambda m, x: x.T, randn(2, 3), ref=np.transpose)
    x = ember.tensor(2.0)
    assert ember.t(x).item() == 2.0
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions, but "
                                           "self is 3D"):
        ember.t(ember.randn(2, 3, 4))


def test_t_is_a_view():
    x = ember.zeros(2, 3)
    y = x.t()
    y[0, 1] = 5.0
    assert x[1, 0].item() == 5.0


@pytest.mark.parametrize("k", [0, 1, -1, 2, -3, 10, -10])
def test_tril_triu(k):
    check_op(lambda m, x: m.tril(x, k), randn(3, 4), ref=lambda x: np.tril(x, k), gradgrad=True)
    check_op(lambda m, x: m.triu(x, k), randn(2, 3, 4), ref=lambda x: np.triu(x, k),
             gradgrad=True)
    check_op(lambda m, x: x.tril(diagonal=k), randn(4, 3), ref=lambda x: np.tril(x, k))


def test_tril_triu_edge_cases():
    b = ember.ones(3, 3, dtype=ember.bool)
    assert ember.tril(b).dtype == ember.bool and ember.tril(b).sum().item() == 6
    assert ember.triu(ember.ones(0, 4)).shape == (0, 4)
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        ember.tril(ember.randn(3))
    x = ember.randn(3, 3)
    x.triu_(1)
    assert np.all(np.tril(x.numpy()) == 0)


def test_tril_triu_indices():
    for r, c, o in ((3, 3, 0), (4, 3, 1), (3, 5, -1), (0, 3, 0)):
        np.testing.assert_array_equal(ember.tril_indices(r, c, o).numpy(),
                                      np.stack(np.tril_indices(r, o, c)))
        np.testing.assert_array_equal(ember.triu_indices(r, c, o).numpy(),
                                      np.stack(np.triu_indices(r, o, c)))
    assert ember.tril_indices(3, 3).dtype == ember.int64


# ---------------------------------------------------------------------------------------------
# diagonals, trace


@pytest.mark.parametrize("k", [0, 1, -1, 2, -2])
def test_diag(k):
    check_op(lambda m, x: m.diag(x, k), randn(3), ref=lambda x: np.diag(x, k), gradgrad=True)
    check_op(lambda m, x: m.diag(x, k), randn(3, 4), ref=lambda x: np.diag(x, k), gradgrad=True)


def test_diag_edges():
    assert ember.diag(ember.randn(3, 4), 5).shape == (0,)
    check_op(lambda m, x: m.diagflat(x, 1), randn(2, 2), ref=lambda x: np.diagflat(x, 1))
    with pytest.raises(RuntimeError, match="diag\\(\\): Supports 1D or 2D tensors. Got 3D"):
        ember.diag(ember.randn(2, 3, 4))
    with pytest.raises(RuntimeError, match="Got 0D"):
        ember.diag(ember.tensor(1.0))


@pytest.mark.parametrize("offset,d1,d2", [(0, 0, 1), (1, 0, 1), (-1, 0, 1), (0, 1, 0),
                                          (1, -1, -2), (0, 0, 2), (2, -1, 0), (5, 0, 1)])
def test_diagonal(offset, d1, d2):
    check_op(lambda m, x: m.diagonal(x, offset, d1, d2), randn(3, 4, 5) if d1 == 0 and d2 == 2
             or d1 == -1 and d2 == 0 else randn(4, 3),
             ref=lambda x: np.diagonal(x, offset, d1, d2), gradgrad=True)


def test_diagonal_method_and_linalg_diagonal():
    check_op(lambda m, x: x.diagonal(offset=1, dim1=1, dim2=2), randn(2, 3, 4),
             ref=lambda x: np.diagonal(x, 1, 1, 2))
    check_op(lambda m, x: m.linalg.diagonal(x, offset=-1), randn(2, 3, 4),
             ref=lambda x: np.diagonal(x, -1, -2, -1))


def test_diagonal_errors_and_view():
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 1, 1"):
        ember.diagonal(ember.randn(3, 4), 0, 1, 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.diagonal(ember.randn(3, 4), 0, -1, 3)
    x = ember.zeros(3, 3)
    x.diagonal().fill_(1.0)  # writes through the view, as in PyTorch
    np.testing.assert_array_equal(x.numpy(), np.eye(3))


@pytest.mark.parametrize("offset,d1,d2", [(0, -2, -1), (1, 0, 2), (-1, -2, -1), (0, -1, -2),
                                          (2, 1, 0)])
def test_diag_embed(offset, d1, d2):
    x = randn(2, 3)

    def ref(x):
        n = x.shape[-1] + abs(offset)
        out = np.zeros((2, n, n))
        for b in range(2):
            out[b] = np.diag(x[b], offset)
        perm = [0, 0, 0]
        dd1, dd2 = d1 % 3, d2 % 3
        rest = [i for i in range(3) if i not in (dd1, dd2)][0]
        perm[rest], perm[dd1], perm[dd2] = 0, 1, 2
        return np.transpose(out, perm)

    check_op(lambda m, x: m.diag_embed(x, offset, d1, d2), x, ref=ref, gradgrad=True)


def test_diag_embed_errors():
    with pytest.raises(IndexError):
        ember.diag_embed(ember.tensor(2.0))
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical"):
        ember.diag_embed(ember.randn(3), 0, 0, 0)


def test_trace():
    check_op(lambda m, x: m.trace(x), randn(3, 3), ref=np.trace, gradgrad=True)
    check_op(lambda m, x: m.trace(x), randn(3, 5), ref=np.trace, gradgrad=True)
    check_op(lambda m, x: x.trace(), randn(4, 2), ref=np.trace)
    out = ember.trace(ember.ones(3, 3, dtype=ember.int32))
    assert out.dtype == ember.int64 and out.item() == 3
    with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with dim 1"):
        ember.trace(ember.randn(3))
    with pytest.raises(NotImplementedError, match="Bool"):
        ember.trace(ember.ones(2, 2, dtype=ember.bool))


# ---------------------------------------------------------------------------------------------
# kron, cross


@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 5)), ((2,), (3,)), ((2,), (4, 5)),
                                   ((2, 1, 3), (2, 2)), ((), (3,))])
def test_kron(sa, sb):
    check_op(lambda m, a, b: m.kron(a, b), randn(*sa), randn(*sb, seed=1),
             ref=lambda a, b: np.kron(a, b), gradgrad=True)


def test_cross():
    check_op(lambda m, a, b: m.cross(a, b, dim=1), randn(4, 3), randn(4, 3, seed=1),
             ref=lambda a, b: np.cross(a, b, axis=1), gradgrad=True)
    check_op(lambda m, a, b: m.cross(a, b, dim=0), randn(3, 4), randn(3, 4, seed=1),
             ref=lambda a, b: np.cross(a, b, axis=0))
    check_op(lambda m, a, b: m.linalg.cross(a, b), randn(2, 3), randn(1, 3, seed=1),
             ref=lambda a, b: np.cross(a, b))
    check_op(lambda m, a, b: a.cross(b, dim=-1), randn(3), randn(3, seed=1), ref=np.cross)


def test_cross_default_dim_and_errors():
    a, b = randn(3, 4), randn(3, 4, seed=1)
    with pytest.warns(UserWarning, match="without specifying the dim"):
        import ember.ops.other_matrix as la

        la._cross_warned = False
        out = ember.cross(ember.tensor(a), ember.tensor(b))
    np.testing.assert_allclose(out.numpy(), np.cross(a, b, axis=0), rtol=1e-6)
    with pytest.raises(RuntimeError, match="inputs dimension 1 must have length 3. Got 4 and 4"):
        ember.cross(ember.randn(3, 4), ember.randn(3, 4), dim=1)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.cross(ember.randn(2, 3), ember.randn(2, 3).double(), dim=1)
    with pytest.raises(RuntimeError, match="inputs must have the same number of dimensions"):
        ember.cross(ember.randn(2, 3), ember.randn(3), dim=-1)
    with pytest.raises(RuntimeError, match="inputs must have the same number of dimensions"):
        ember.linalg.cross(ember.randn(2, 3), ember.randn(3))


# ---------------------------------------------------------------------------------------------
# chain_matmul, matrix_power, multi_dot, vecdot


def test_chain_and_power():
    a, b, c = randn(2, 3), randn(3, 4, seed=1), randn(4, 2, seed=2)
    check_op(lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), a, b, c,
             ref=lambda a, b, c: a @ b @ c)
    check_op(lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), randn(3), b, randn(4, seed=3),
             ref=lambda a, b, c: a @ b @ c)
    for n in (0, 1, 2, 3, 5, -1, -2):
        check_op(lambda m, x, n=n: m.matrix_power(x, n), well(3), grad=n != 0,
                 ref=lambda x, n=n: np.linalg.matrix_power(x, n), rtol=1e-4, atol=1e-5)
    check_op(lambda m, x: m.linalg.matrix_power(x, 3), randn(2, 3, 3),
             ref=lambda x: np.linalg.matrix_power(x, 3), rtol=1e-4)
    check_op(lambda m, x, y: m.linalg.vecdot(x, y, dim=0), randn(3, 2), randn(3, 1, seed=1),
             ref=lambda x, y: (x * y).sum(0))


# ---------------------------------------------------------------------------------------------
# ember.linalg: inverse, det, slogdet, solve, cholesky


def test_inv_det_slogdet():
    check_op(lambda m, a: m.linalg.inv(a), well(3), ref=np.linalg.inv, gradgrad=True,
             rtol=1e-4)
    check_op(lambda m, a: m.inverse(a), well(3, batch=(2,)), ref=np.linalg.inv, rtol=1e-4)
    check_op(lambda m, a: m.linalg.det(a), well(3), ref=np.linalg.det, gradgrad=True, rtol=1e-4)
    check_op(lambda m, a: m.det(a), randn(2, 4, 4), ref=np.linalg.det, rtol=1e-4)
    check_op(lambda m, a: m.linalg.slogdet(a), randn(3, 3), ref=np.linalg.slogdet, rtol=1e-4)
    check_op(lambda m, a: m.logdet(a), spd(3), ref=lambda a: np.linalg.slogdet(a)[1], rtol=1e-4)


def _det3(m, a):
    """det of a 3x3 matrix by cofactor expansion: its autograd gives the exact derivative."""
    return (a[0, 0] * (a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1])
            - a[0, 1] * (a[1, 0] * a[2, 2] - a[1, 2] * a[2, 0])
            + a[0, 2] * (a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0]))


def test_det_singular_gradient():
    # the derivative of det is the cofactor matrix, non-zero at rank n-1 (torch 2.x returns
    # zeros here; the explicit polynomial is the reference)
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])  # rank 2
    check_op(lambda m, a: m.linalg.det(a), a, ref=np.linalg.det, atol=1e-6, torch_fn=_det3)
    z = np.zeros((3, 3))
    z[0, 0] = 1.0  # rank 1: the cofactors, and so the gradient, are zero
    check_op(lambda m, a: m.linalg.det(a), z, ref=np.linalg.det, torch_fn=_det3)


def test_logdet_negative_is_nan():
    a = ember.tensor([[0.0, 1.0], [1.0, 0.0]])
    assert math.isnan(ember.logdet(a).item())
    assert ember.logdet(ember.zeros(2, 2)).item() == -math.inf


@pytest.mark.parametrize("sa,sb,left", [((3, 3), (3,), True), ((3, 3), (3, 2), True),
                                        ((2, 3, 3), (2, 3), True), ((2, 3, 3), (3, 4), True),
                                        ((3, 3), (2, 3, 1), True), ((3, 3), (2, 3), False),
                                        ((2, 3, 3), (2, 4, 3), False)])
def test_solve(sa, sb, left):
    a = randn(*sa) + 3 * np.eye(sa[-1])
    b = randn(*sb, seed=1)

    def ref(a, b):
        vector = len(sb) == 1 or (len(sb) == len(sa) - 1 and sb == sa[:-1])
        if not left:
            a = np.swapaxes(a, -1, -2)
            b = b if vector else np.swapaxes(b, -1, -2)
        bb = b[..., None] if vector else b
        a_, b_ = np.broadcast_arrays(a, bb) if False else (a, bb)
        batch = np.broadcast_shapes(a_.shape[:-2], b_.shape[:-2])
        x = np.linalg.solve(np.broadcast_to(a_, batch + a_.shape[-2:]),
                            np.broadcast_to(b_, batch + b_.shape[-2:]))
        x = x[..., 0] if vector else x
        return x if left or vector else np.swapaxes(x, -1, -2)

    check_op(lambda m, a, b: m.linalg.solve(a, b, left=left), a, b, ref=ref, rtol=1e-4,
             gradgrad=sa == (3, 3))


def test_linalg_errors():
    with pytest.raises(ember.linalg.LinAlgError, match="singular"):
        ember.linalg.inv(ember.zeros(3, 3))
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)
    with pytest.raises(RuntimeError, match="must be batches of square matrices, but they are 3 "
                                           "by 4 matrices"):
        ember.linalg.det(ember.randn(3, 4))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. "
                                           "Got Long"):
        ember.linalg.inv(ember.ones(2, 2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got Half"):
        ember.linalg.inv(ember.ones(2, 2, dtype=ember.float16))
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B"):
        ember.linalg.solve(ember.randn(3, 3), ember.randn(4))
    with pytest.raises(ember.linalg.LinAlgError, match="not positive-definite"):
        ember.linalg.cholesky(-ember.eye(3))
    with pytest.raises(NotImplementedError, match="torch.linalg.common_notes"):
        ember.linalg.common_notes  # noqa: B018
    assert not hasattr(ember.linalg, "common_notes")


def _sym(a):
    """A symmetric positive-definite function of a (the input cholesky and eigh are defined on:
    they read one triangle only, so a gradcheck must perturb symmetrically)."""
    return a @ a.mT + 3 * a.shape[-1] ** 0.5


@pytest.mark.filterwarnings("ignore:torch.cholesky is deprecated")
def test_cholesky():
    def sym_np(a):
        return a @ np.swapaxes(a, -1, -2) + 3 * a.shape[-1] ** 0.5

    check_op(lambda m, a: m.linalg.cholesky(_sym(a)), randn(3, 3), rtol=1e-4, gradgrad=True,
             ref=lambda a: np.linalg.cholesky(sym_np(a)))
    check_op(lambda m, a: m.linalg.cholesky(_sym(a), upper=True), randn(2, 3, 3), rtol=1e-4,
             ref=lambda a: np.swapaxes(np.linalg.cholesky(sym_np(a)), -1, -2))
    check_op(lambda m, a: m.cholesky(_sym(a)), randn(2, 2), rtol=1e-4,
             ref=lambda a: np.linalg.cholesky(sym_np(a)))
    # the gradient itself is symmetric, as PyTorch's
    a = ember.tensor(spd(3), requires_grad=True)
    g = ember.randn(3, 3, dtype=ember.float64)
    (ember.linalg.cholesky(a) * g).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), a.grad.numpy().T, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# norms


@pytest.mark.parametrize("ord", ["fro", math.inf, -math.inf, 1, -1])
def test_matrix_norm_differentiable(ord):
    ref = {"fro": "fro", math.inf: np.inf, -math.inf: -np.inf, 1: 1, -1: -1}[ord]
    check_op(lambda m, a: m.linalg.matrix_norm(a, ord), randn(3, 4),
             ref=lambda a: np.linalg.norm(a, ref), rtol=1e-5)
    check_op(lambda m, a: m.linalg.matrix_norm(a, ord, dim=(0, 2), keepdim=True), randn(3, 2, 4),
             ref=lambda a: np.linalg.norm(a, ref, axis=(0, 2), keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("ord", ["nuc", 2, -2])
def test_matrix_norm_spectral(ord):
    check_op(lambda m, a: m.linalg.matrix_norm(a, ord), randn(3, 4),
             ref=lambda a: np.linalg.norm(a, ord), rtol=1e-5, gradgrad=True)
    check_op(lambda m, a: m.linalg.matrix_norm(a, ord, dim=(2, 0), keepdim=True), randn(3, 2, 4),
             ref=lambda a: np.linalg.norm(a, ord, axis=(2, 0), keepdims=True), rtol=1e-5)


def test_norm_dispatch():
    check_op(lambda m, a: m.linalg.norm(a), randn(2, 3, 4), ref=lambda a: np.sqrt((a * a).sum()))
    check_op(lambda m, a: m.linalg.norm(a, 3), randn(5), ref=lambda a: np.linalg.norm(a, 3))
    check_op(lambda m, a: m.linalg.norm(a, math.inf), randn(3, 4),
             ref=lambda a: np.linalg.norm(a, np.inf))
    check_op(lambda m, a: m.linalg.norm(a, dim=1, keepdim=True), randn(3, 4),
             ref=lambda a: np.linalg.norm(a, axis=1, keepdims=True))
    check_op(lambda m, a: m.linalg.norm(a, 1, dim=(0, 1)), randn(3, 4, 2),
             ref=lambda a: np.linalg.norm(a, 1, axis=(0, 1)))
    check_op(lambda m, a: m.linalg.vector_norm(a, 1.5, dim=(0, 2)), randn(3, 4, 2),
             ref=lambda a: (np.abs(a) ** 1.5).sum((0, 2)) ** (1 / 1.5))
    with pytest.raises(RuntimeError, match="input must be 1D or 2D. Got 3D"):
        ember.linalg.norm(ember.randn(2, 3, 4), 2)
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        ember.linalg.matrix_norm(ember.randn(2, 3), 3)
    # torch.norm(p='nuc') reaches matrix_norm through ember.ops.linalg
    np.testing.assert_allclose(ember.norm(ember.tensor(randn(3, 3)), p="nuc").item(),
                               np.linalg.norm(randn(3, 3), "nuc"), rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# decompositions (qr's derivative: tests/test_linalg_more.py)


def test_decompositions_forward():
    a = randn(4, 3)
    q, r = ember.linalg.qr(ember.tensor(a))
    np.testing.assert_allclose((q @ r).numpy(), a, atol=1e-10)
    assert q.shape == (4, 3) and r.shape == (3, 3)
    q, r = ember.linalg.qr(ember.tensor(a), mode="complete")
    assert q.shape == (4, 4) and r.shape == (4, 3)
    u, s, vh = ember.linalg.svd(ember.tensor(a), full_matrices=False)
    np.testing.assert_allclose((u * s @ vh).numpy(), a, atol=1e-10)
    np.testing.assert_allclose(ember.linalg.svdvals(ember.tensor(a)).numpy(),
                               np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    u, s, v = ember.svd(ember.tensor(a))
    np.testing.assert_allclose((u * s @ v.mT).numpy(), a, atol=1e-10)
    w, v = ember.linalg.eigh(ember.tensor(spd(3)))
    np.testing.assert_allclose((v * w @ v.mT).numpy(), spd(3), atol=1e-10)
    np.testing.assert_allclose(ember.linalg.eigvalsh(ember.tensor(spd(3))).numpy(), w.numpy())
    np.testing.assert_allclose(ember.linalg.pinv(ember.tensor(a)).numpy(), np.linalg.pinv(a),
                               atol=1e-10)
    assert ember.linalg.matrix_rank(ember.tensor(np.outer(randn(3), randn(4)))).item() == 1
    assert ember.linalg.matrix_rank(ember.tensor(a)).dtype == ember.int64
    q32, _ = ember.linalg.qr(ember.tensor(a, dtype=ember.float32))
    assert q32.dtype == ember.float32


def test_qr_backward_error():
    a = ember.randn(3, 3, requires_grad=True)
    q, r = ember.linalg.qr(a, mode="r")
    with pytest.raises(RuntimeError, match="derivative of linalg.qr depends on Q"):
        r.sum().backward()


def _svd_f(m, a):
    """A function of the SVD that does not depend on the singular vectors' signs."""
    u, s, vh = m.linalg.svd(a, full_matrices=False)
    return (u * (s + 1.0).unsqueeze(-2)) @ vh, u @ u.mT, vh.mT @ (vh * s.unsqueeze(-1))


def _svd_ref(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    v = np.swapaxes(vh, -1, -2)
    return ((u * (s + 1.0)[..., None, :]) @ vh, u @ np.swapaxes(u, -1, -2),
            v @ (vh * s[..., :, None]))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 4, 3)])
def test_svd_gradients(shape):
    check_op(_svd_f, randn(*shape), ref=_svd_ref, gradgrad=shape == (4, 3), rtol=1e-4)
    check_op(lambda m, a: m.linalg.svdvals(a), randn(*shape), gradgrad=True,
             ref=lambda a: np.linalg.svd(a, compute_uv=False))


def test_svd_full_matrices_gradient():
    def f(m, a):
        u, s, vh = m.linalg.svd(a, full_matrices=True)
        k = s.shape[-1]
        return (u[..., :k] * s) @ vh[..., :k, :]

    check_op(f, randn(4, 3), ref=lambda a: a)
    check_op(f, randn(2, 5), ref=lambda a: a)


def test_eigh_gradients():
    # exp(w / 4), not exp(w): _sym's largest eigenvalue is near 15.6, and exp(15.6) ~ 6e6 terms
    # cancelling in the first gradient left the second-order finite differences ~1e-4 of noise
    # (they passed or failed by the machine's last bits)
    def f(m, a):
        w, v = m.linalg.eigh(_sym(a))
        return (v * (w / 4).exp().unsqueeze(-2)) @ v.mT, w

    def ref(a):
        s = a @ np.swapaxes(a, -1, -2) + 3 * a.shape[-1] ** 0.5
        w, v = np.linalg.eigh(s)
        return (v * np.exp(w / 4)[..., None, :]) @ np.swapaxes(v, -1, -2), w

    check_op(f, randn(3, 3) * 0.3, ref=ref, gradgrad=True, rtol=1e-4)
    check_op(f, randn(2, 3, 3) * 0.3, ref=ref, rtol=1e-4)
    check_op(lambda m, a: m.linalg.eigvalsh(_sym(a)), randn(3, 3), gradgrad=True, rtol=1e-4,
             ref=lambda a: ref(a)[1])


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
def test_pinv_gradients(shape):
    check_op(lambda m, a: m.linalg.pinv(a), randn(*shape), ref=np.linalg.pinv, rtol=1e-4,
             gradgrad=shape == (4, 3))
    check_op(lambda m, a: m.pinverse(a), randn(*shape), ref=np.linalg.pinv, rtol=1e-4)


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch")
def test_decompositions_match_torch():
    a = randn(2, 4, 3)
    for fn in (lambda m, x: m.linalg.svdvals(x), lambda m, x: m.linalg.matrix_norm(x, "nuc"),
               lambda m, x: m.linalg.matrix_rank(x)):
        e = fn(ember, ember.tensor(a)).numpy()
        t = fn(torch, torch.tensor(a)).numpy()
        np.testing.assert_allclose(e, t, rtol=1e-10)
    s = spd(3)
    np.testing.assert_allclose(ember.linalg.eigvalsh(ember.tensor(s)).numpy(),
                               torch.linalg.eigvalsh(torch.tensor(s)).numpy(), rtol=1e-10)


# ---------------------------------------------------------------------------------------------
# double backward through matmul-based graphs, Tensor methods


def test_gradgrad_composite():
    check_op(lambda m, x, w: (m.tanh(x @ w) @ w.mT).sum(-1), randn(2, 3, 4), randn(4, 4, seed=1),
             gradgrad=True, ref=lambda x, w: (np.tanh(x @ w) @ w.T).sum(-1))


def test_tensor_methods():
    x = ember.tensor(randn(3, 3))
    v = ember.tensor(randn(3))
    np.testing.assert_allclose(x.matmul(x).numpy(), x.numpy() @ x.numpy())
    np.testing.assert_allclose(x.mv(v).numpy(), x.numpy() @ v.numpy())
    np.testing.assert_allclose(v.dot(v).numpy(), v.numpy() @ v.numpy())
    np.testing.assert_allclose(x.diag().numpy(), np.diag(x.numpy()))
    np.testing.assert_allclose(v.outer(v).numpy(), np.outer(v.numpy(), v.numpy()))
    np.testing.assert_allclose(x.kron(x).numpy(), np.kron(x.numpy(), x.numpy()))
    np.testing.assert_allclose(x.diag_embed().numpy(), np.stack([np.diag(r) for r in x.numpy()]))
    y = x.clone()
    y @= x
    np.testing.assert_allclose(y.numpy(), x.numpy() @ x.numpy())
