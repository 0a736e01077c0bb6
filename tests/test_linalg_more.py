"""LU, triangular and Cholesky solves, matrix_exp, qr's derivative, eig (no complex yet) and
LinAlgError: ember/ops/linalg_factor.py and ember.linalg against the installed PyTorch (check_op:
values, dtypes, shapes, pivots exactly, float64 gradcheck, gradients vs torch)."""

import numpy as np
import pytest

import ember
import ember.linalg  # noqa: F401 - the namespace under test
from helpers import HAVE_TORCH, check_op, randn

if HAVE_TORCH:
    import torch

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="needs PyTorch as the reference")


def well(*shape, seed=0):
    """Well-conditioned square matrices (pivoting still happens: the diagonal is not dominant)."""
    return randn(*shape, seed=seed) + 1.5 * np.eye(shape[-1])


def lower(*shape, seed=0):
    """Lower-triangular-ish matrices with a diagonal far from 0 (the upper part is noise the
    solves must ignore)."""
    a = randn(*shape, seed=seed)
    return a + 3 * np.eye(shape[-1]) * np.sign(np.diagonal(a, 0, -2, -1))[..., None, :]


def spd(*shape, seed=0):
    a = randn(*shape, seed=seed)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


# ---------------------------------------------------------------------------------------------
# LU


LU_SHAPES = [(3, 3), (4, 4), (2, 3, 3), (2, 1, 4, 4), (3, 5), (5, 3), (0, 3, 3), (1, 1)]


@needs_torch
@pytest.mark.parametrize("shape", LU_SHAPES)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_lu_factor_ex_matches_torch(shape, dt):
    a = randn(*shape).astype(dt)
    e = ember.linalg.lu_factor_ex(ember.tensor(a))
    t = torch.linalg.lu_factor_ex(torch.tensor(a))
    assert type(e).__name__ == "linalg_lu_factor_ex" and e._fields == ("LU", "pivots", "info")
    tol = 1e-5 if dt == np.float32 else 1e-12
    np.testing.assert_allclose(e.LU.numpy(), t.LU.numpy(), atol=tol, rtol=tol)
    assert e.LU.dtype == (ember.float32 if dt == np.float32 else ember.float64)
    assert e.pivots.dtype == ember.int32 and e.info.dtype == ember.int32
    np.testing.assert_array_equal(e.pivots.numpy(), t.pivots.numpy())
    np.testing.assert_array_equal(e.info.numpy(), t.info.numpy())
    lu, piv = ember.linalg.lu_factor(ember.tensor(a))
    np.testing.assert_array_equal(piv.numpy(), t.pivots.numpy())


@needs_torch
@pytest.mark.parametrize("shape", LU_SHAPES)
def test_linalg_lu_and_unpack_match_torch(shape):
    a = randn(*shape)
    for m in (ember, torch):
        r = m.linalg.lu(m.tensor(a))
        u = m.lu_unpack(*m.linalg.lu_factor(m.tensor(a)))
        if m is ember:
            e, eu = r, u
        else:
            t, tu = r, u
    assert type(e).__name__ == "linalg_lu" and type(eu).__name__ == "lu_unpack"
    for x, y in zip(list(e) + list(eu), list(t) + list(tu)):
        assert tuple(x.shape) == tuple(y.shape) and str(x.dtype) == str(y.dtype)
        np.testing.assert_allclose(x.numpy(), y.numpy(), atol=1e-12)
    p, lo, up = e
    np.testing.assert_allclose((p @ lo @ up).numpy(), a, atol=1e-12)


@needs_torch
def test_lu_unpack_flags_and_legacy_lu():
    a = randn(2, 3, 3)
    lu, piv = ember.linalg.lu_factor(ember.tensor(a))
    p, lo, up = ember.lu_unpack(lu, piv, unpack_data=False)
    assert lo.shape == (0,) and up.shape == (0,) and p.shape == (2, 3, 3)
    p, lo, up = ember.lu_unpack(lu, piv, unpack_pivots=False)
    assert p.shape == (0,) and lo.shape == (2, 3, 3)
    e = ember.lu(ember.tensor(a), get_infos=True)
    with pytest.warns(UserWarning):
        t = torch.lu(torch.tensor(a), get_infos=True)
    assert type(e).__name__ == type(t).__name__ == "_lu_with_info"
    np.testing.assert_array_equal(e.pivots.numpy(), t.pivots.numpy())
    LU, piv2 = ember.lu(ember.tensor(a))
    np.testing.assert_allclose(LU.numpy(), t.LU.numpy(), atol=1e-12)
    LU_m, _ = ember.tensor(a).lu()
    np.testing.assert_allclose(LU_m.numpy(), t.LU.numpy(), atol=1e-12)
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented"):
        ember.linalg.lu_factor(ember.tensor(a), pivot=False)


@needs_torch
def test_lu_singular():
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    e = ember.linalg.lu_factor_ex(ember.tensor(s))
    t = torch.linalg.lu_factor_ex(torch.tensor(s))
    np.testing.assert_array_equal(e.pivots.numpy(), t.pivots.numpy())
    assert e.info.item() == t.info.item() == 2
    np.testing.assert_allclose(e.LU.numpy(), t.LU.numpy())
    batch = np.stack([np.eye(2), np.zeros((2, 2)), s])
    e = ember.linalg.lu_factor_ex(ember.tensor(batch))
    t = torch.linalg.lu_factor_ex(torch.tensor(batch))
    np.testing.assert_array_equal(e.info.numpy(), t.info.numpy())
    np.testing.assert_array_equal(e.pivots.numpy(), t.pivots.numpy())
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\): U\[1,1\] is zero"):
        ember.linalg.lu_factor(ember.tensor(batch))
    with pytest.raises(RuntimeError, match=r"U\[2,2\] is zero"):
        ember.linalg.lu_factor(ember.tensor(s))
    with pytest.raises(RuntimeError, match=r"U\[2,2\] is zero"):
        ember.linalg.lu_factor_ex(ember.tensor(s), check_errors=True)
    with pytest.raises(RuntimeError, match=r"U\[2,2\] is zero"):
        ember.lu(ember.tensor(s))
    # the P L U of a singular matrix is still returned
    p, lo, up = ember.linalg.lu(ember.tensor(s))
    np.testing.assert_allclose((p @ lo @ up).numpy(), s)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (3, 5), (5, 3), (2, 3, 4), (2, 4, 2)])
def test_lu_factor_gradient(shape):
    a = well(*shape) if shape[-1] == shape[-2] else randn(*shape)
    check_op(lambda m, a: m.linalg.lu_factor(a)[0], a, rtol=1e-6, atol=1e-10,
             gradgrad=len(shape) == 2)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (3, 5), (5, 3)])
def test_linalg_lu_gradient(shape):
    a = well(*shape) if shape[-1] == shape[-2] else randn(*shape)
    check_op(lambda m, a: m.linalg.lu(a)[1:], a, rtol=1e-6, atol=1e-10)


LU_SOLVE_CASES = [((3, 3), (3, 2), True, False), ((3, 3), (3, 2), True, True),
                  ((3, 3), (2, 3), False, False), ((3, 3), (2, 3), False, True),
                  ((2, 3, 3), (3, 1), True, False), ((3, 3), (2, 3, 4), True, True),
                  ((2, 1, 3, 3), (4, 3, 2), True, False)]


@pytest.mark.parametrize("sa,sb,left,adjoint", LU_SOLVE_CASES)
def test_lu_solve(sa, sb, left, adjoint):
    def f(m, a, b):
        lu, piv = m.linalg.lu_factor(a)
        return m.linalg.lu_solve(lu, piv, b, left=left, adjoint=adjoint)

    def ref(a, b):
        at = np.swapaxes(a, -1, -2) if adjoint else a
        if left:
            return np.linalg.solve(at, np.broadcast_to(b, np.broadcast_shapes(
                a.shape[:-2], b.shape[:-2]) + b.shape[-2:]))
        bt = np.swapaxes(b, -1, -2)
        x = np.linalg.solve(np.swapaxes(at, -1, -2), np.broadcast_to(bt, np.broadcast_shapes(
            a.shape[:-2], b.shape[:-2]) + bt.shape[-2:]))
        return np.swapaxes(x, -1, -2)

    check_op(f, well(*sa), randn(*sb, seed=1), ref=ref, rtol=1e-5, atol=1e-8)


def test_lu_solve_on_the_packed_factor_and_legacy_form():
    a, b = well(3, 3), randn(3, 2, seed=1)

    def f(m, lu, b):  # gradients reach LU directly
        return m.linalg.lu_solve(lu, m.linalg.lu_factor(m.tensor(a))[1], b)

    lu0 = ember.linalg.lu_factor(ember.tensor(a))[0].numpy()
    check_op(f, lu0, b, check_float32=False)
    check_op(lambda m, b, a: m.lu_solve(b, *m.linalg.lu_factor(a)), b, a,
             ref=lambda b, a: np.linalg.solve(a, b))
    lu, piv = ember.linalg.lu_factor(ember.tensor(a))
    np.testing.assert_allclose(ember.tensor(b).lu_solve(lu, piv).numpy(), np.linalg.solve(a, b))


# ---------------------------------------------------------------------------------------------
# triangular and Cholesky solves


TRI_CASES = [((3, 3), (3, 2), True, True, False), ((3, 3), (3, 2), False, True, False),
             ((3, 3), (2, 3), True, False, False), ((3, 3), (2, 3), False, False, True),
             ((3, 3), (3, 2), True, True, True), ((2, 3, 3), (3, 4), False, True, False),
             ((3, 3), (2, 3, 1), True, True, False)]


@pytest.mark.parametrize("sa,sb,upper,left,unit", TRI_CASES)
def test_solve_triangular(sa, sb, upper, left, unit):
    def ref(a, b):
        t = np.triu(a) if upper else np.tril(a)
        if unit:
            t = t - np.einsum("...ii->...i", t)[..., None] * np.eye(3) + np.eye(3)
        if left:
            return np.linalg.solve(t, np.broadcast_to(b, np.broadcast_shapes(
                a.shape[:-2], b.shape[:-2]) + b.shape[-2:]))
        return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1,
                           -2)

    check_op(lambda m, a, b: m.linalg.solve_triangular(a, b, upper=upper, left=left,
                                                       unitriangular=unit),
             lower(*sa), randn(*sb, seed=1), ref=ref, rtol=1e-6, atol=1e-10, gradgrad=sa == (3, 3))


@needs_torch
def test_solve_triangular_singular_gives_inf_nan_as_torch():
    a = np.zeros((2, 2))
    e = ember.linalg.solve_triangular(ember.tensor(a), ember.ones(2, 1, dtype=ember.float64),
                                      upper=True)
    t = torch.linalg.solve_triangular(torch.tensor(a), torch.ones(2, 1, dtype=torch.float64),
                                      upper=True)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("upper,transpose,unit", [(True, False, False), (False, False, False),
                                                  (True, True, False), (False, True, True)])
def test_triangular_solve_legacy(upper, transpose, unit):
    import warnings

    def f(m, b, a):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return m.triangular_solve(b, a, upper=upper, transpose=transpose,
                                      unitriangular=unit)

    check_op(f, randn(2, 3, 2, seed=1), lower(3, 3), rtol=1e-6, atol=1e-10)
    r = ember.triangular_solve(ember.ones(3, 1), ember.eye(3))
    assert type(r).__name__ == "triangular_solve" and r._fields == ("solution",
                                                                     "cloned_coefficient")
    assert r.solution.dtype == ember.float32
    r2 = ember.ones(3, 1).triangular_solve(ember.eye(3))
    np.testing.assert_array_equal(r2.solution.numpy(), np.ones((3, 1)))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("sb,sa", [((3, 2), (3, 3)), ((2, 3, 1), (2, 3, 3)), ((2, 3, 2), (3, 3))])
def test_cholesky_solve(upper, sb, sa):
    def f(m, b, a):  # (cholesky reads one triangle: gradcheck perturbs A symmetrically)
        return m.cholesky_solve(b, m.linalg.cholesky(a + a.mT, upper=upper), upper=upper)

    def ref(b, a):
        return np.linalg.solve(a + np.swapaxes(a, -1, -2), b)

    check_op(f, randn(*sb, seed=1), spd(*sa) / 2, ref=ref, rtol=1e-6, atol=1e-10)
    # the factor's gradient is PyTorch's (the whole matrix, not one triangle)
    c = np.linalg.cholesky(spd(*sa))
    c = np.swapaxes(c, -1, -2) if upper else c
    check_op(lambda m, b, c: m.cholesky_solve(b, c, upper=upper), randn(*sb, seed=1), c,
             grad_inputs=(0,))
    if HAVE_TORCH:
        e_c, t_c = ember.tensor(c, requires_grad=True), torch.tensor(c, requires_grad=True)
        ember.cholesky_solve(ember.tensor(randn(*sb)), e_c, upper).sum().backward()
        torch.cholesky_solve(torch.tensor(randn(*sb)), t_c, upper).sum().backward()
        np.testing.assert_allclose(e_c.grad.numpy(), t_c.grad.numpy(), atol=1e-10)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_cholesky_inverse(upper, shape):
    check_op(lambda m, a: m.cholesky_inverse(m.linalg.cholesky(a + a.mT, upper=upper),
                                             upper=upper),
             spd(*shape) / 2, ref=lambda a: np.linalg.inv(a + np.swapaxes(a, -1, -2)), rtol=1e-6,
             atol=1e-10)
    if HAVE_TORCH:
        c = np.linalg.cholesky(spd(*shape))
        c = np.swapaxes(c, -1, -2) if upper else c
        e_c, t_c = ember.tensor(c, requires_grad=True), torch.tensor(c, requires_grad=True)
        (ember.cholesky_inverse(e_c, upper) ** 2).sum().backward()
        (torch.cholesky_inverse(t_c, upper) ** 2).sum().backward()
        np.testing.assert_allclose(e_c.grad.numpy(), t_c.grad.numpy(), atol=1e-10)
    lo = ember.linalg.cholesky(ember.tensor(spd(3, 3)))
    np.testing.assert_allclose(lo.cholesky_inverse().numpy(), np.linalg.inv(spd(3, 3)),
                               atol=1e-12)


def test_cholesky_inverse_singular_is_linalg_error():
    with pytest.raises(ember.linalg.LinAlgError, match="cholesky_inverse: The diagonal element 1 "
                                                       "is zero"):
        ember.cholesky_inverse(ember.zeros(2, 2))


# ---------------------------------------------------------------------------------------------
# matrix_exp


@pytest.mark.parametrize("shape,scale", [((3, 3), 0.3), ((3, 3), 5.0), ((2, 4, 4), 1.0),
                                         ((1, 1), 2.0)])
def test_matrix_exp(shape, scale):
    check_op(lambda m, a: m.matrix_exp(a), scale * randn(*shape), rtol=1e-5, atol=1e-6,
             grad_rtol=1e-3)
    check_op(lambda m, a: m.linalg.matrix_exp(a), scale * randn(*shape), rtol=1e-5, atol=1e-6)
    check_op(lambda m, a: a.matrix_exp(), scale * randn(*shape), rtol=1e-5, atol=1e-6,
             grad=False)


# ---------------------------------------------------------------------------------------------
# qr's derivative


@pytest.mark.parametrize("shape,mode", [((4, 3), "reduced"), ((3, 3), "reduced"),
                                        ((3, 5), "reduced"), ((3, 5), "complete"),
                                        ((2, 4, 3), "reduced"), ((3, 3), "complete")])
def test_qr_gradient(shape, mode):
    check_op(lambda m, a: m.linalg.qr(a, mode=mode), randn(*shape), rtol=1e-6, atol=1e-10,
             gradgrad=shape == (3, 3))
    check_op(lambda m, a: m.qr(a, some=mode == "reduced"), randn(*shape), rtol=1e-6, atol=1e-10)


@needs_torch
def test_qr_without_derivative_as_torch():
    for mode, shape, pattern in [("r", (3, 3), "mode='r'"), ("complete", (4, 3), "nrows > ncols")]:
        for m in (ember, torch):
            a = m.randn(*shape, requires_grad=True)
            q, r = m.linalg.qr(a, mode=mode)
            with pytest.raises(RuntimeError, match=pattern):
                r.sum().backward()


# ---------------------------------------------------------------------------------------------
# eig / eigvals: complex results, which ember has no tensors for yet


def test_eig_gives_complex_results_and_the_removed_names_raise():
    a = ember.randn(3, 3)
    assert ember.linalg.eigvals(a).dtype == ember.complex64  # tests/test_complex_linalg.py
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        ember.linalg.eig(ember.randn(3, 4))
    with pytest.raises(RuntimeError, match="removed.*torch.linalg.eig"):
        ember.eig(a)


# ---------------------------------------------------------------------------------------------
# LinAlgError: PyTorch's class, message and conditions, never NumPy's


def test_linalg_error_is_torch_C_LinAlgError():
    assert ember._C._LinAlgError is ember.linalg.LinAlgError
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)
    assert not issubclass(ember.linalg.LinAlgError, np.linalg.LinAlgError)


@needs_torch
@pytest.mark.parametrize("call", [
    lambda m, a: m.linalg.solve(a, m.ones(*a.shape[:-1], 1, dtype=a.dtype)),
    lambda m, a: m.linalg.inv(a),
    lambda m, a: m.inverse(a),
    lambda m, a: m.linalg.cholesky(a),
])
@pytest.mark.parametrize("batched", [False, True])
def test_singular_errors_match_torch(call, batched):
    s = np.array([[1.0, 2.0], [2.0, 4.0]]) if not batched else np.stack(
        [np.eye(2), np.array([[1.0, 2.0], [2.0, 1.0]]), np.zeros((2, 2))])
    with pytest.raises(torch.linalg.LinAlgError) as t:
        call(torch, torch.tensor(s))
    with pytest.raises(ember.linalg.LinAlgError) as e:
        call(ember, ember.tensor(s))
    assert type(e.value) is ember._C._LinAlgError
    assert str(e.value).startswith(str(t.value).rstrip(".")), (str(e.value), str(t.value))


# ---------------------------------------------------------------------------------------------
# LDL^T (Bunch-Kaufman, as LAPACK's sytrf): pivots equal to PyTorch's, 2x2 blocks included


def _sym_cases():
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 5, 8):
        for small_diag in (False, True):
            a = rng.standard_normal((n, n))
            a = a + a.T
            if small_diag:
                a[np.diag_indices(n)] *= 0.01
            yield a
    yield np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 0.0]])  # 2x2 blocks


@needs_torch
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_ldl_factor_and_solve_match_torch(dt):
    saw_block = False
    tol = dict(rtol=1e-4, atol=1e-4) if dt == np.float32 else dict(rtol=1e-9, atol=1e-10)
    for a in _sym_cases():
        x = a.astype(dt)
        e = ember.linalg.ldl_factor_ex(ember.tensor(x))
        t = torch.linalg.ldl_factor_ex(torch.tensor(x))
        assert type(e).__name__ == "linalg_ldl_factor_ex" and e.LD.dtype == ember.tensor(x).dtype
        np.testing.assert_array_equal(e.pivots.numpy(), t.pivots.numpy())
        assert e.pivots.dtype == e.info.dtype == ember.int32
        np.testing.assert_array_equal(e.info.numpy(), t.info.numpy())
        np.testing.assert_allclose(e.LD.numpy(), t.LD.numpy(), **tol)
        saw_block |= bool((t.pivots < 0).any())
        b = randn(a.shape[0], 2, seed=3).astype(dt)
        ld, piv = ember.linalg.ldl_factor(ember.tensor(x))
        xe = ember.linalg.ldl_solve(ld, piv, ember.tensor(b))
        xt = torch.linalg.ldl_solve(t.LD, t.pivots, torch.tensor(b))
        np.testing.assert_allclose(xe.numpy(), xt.numpy(), **tol)
        assert xe.dtype == ember.tensor(x).dtype
    assert saw_block  # the cases reach the 2x2 pivots


@needs_torch
def test_ldl_batched_singular_and_no_derivative():
    a = randn(4, 3, 3, seed=5)
    a = a + np.swapaxes(a, -1, -2)
    a[1:3] -= np.eye(3) * np.diagonal(a[1:3], 0, -2, -1)[..., None, :]  # zero diagonals: pivoting
    e = ember.linalg.ldl_factor_ex(ember.tensor(a))
    t = torch.linalg.ldl_factor_ex(torch.tensor(a))
    np.testing.assert_array_equal(e.pivots.numpy(), t.pivots.numpy())
    np.testing.assert_allclose(e.LD.numpy(), t.LD.numpy(), atol=1e-12)
    b = randn(4, 3, 2, seed=2)
    xe = ember.linalg.ldl_solve(e.LD, e.pivots, ember.tensor(b))
    xt = torch.linalg.ldl_solve(t.LD, t.pivots, torch.tensor(b))
    np.testing.assert_allclose(xe.numpy(), xt.numpy(), atol=1e-10)
    # a broadcast batch (PyTorch 2.13's CPU kernel reads past B here: compared with NumPy only)
    b = randn(2, 1, 3, 2, seed=2)
    xe = ember.linalg.ldl_solve(e.LD, e.pivots, ember.tensor(b))
    assert xe.shape == (2, 4, 3, 2)
    np.testing.assert_allclose(xe.numpy(), np.linalg.solve(a, b), atol=1e-10)
    z = ember.linalg.ldl_factor_ex(ember.zeros(3, 3))
    assert z.info.item() == torch.linalg.ldl_factor_ex(torch.zeros(3, 3)).info.item() == 1
    with pytest.raises(RuntimeError, match="D\\[1,1\\] is zero"):
        ember.linalg.ldl_factor(ember.zeros(3, 3))
    x = ember.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex"):
        ember.linalg.ldl_factor(x).LD.sum().backward()


@needs_torch
def test_inv_ex_solve_ex_report_singular_matrices_in_info():
    s = np.stack([np.eye(2), np.array([[1.0, 2.0], [2.0, 4.0]])])
    for m in (ember, torch):
        r = m.linalg.inv_ex(m.tensor(s))
        q = m.linalg.solve_ex(m.tensor(s), m.ones(2, 2, 3, dtype=m.float64))
        v = m.linalg.solve_ex(m.tensor(s[1]), m.ones(2, dtype=m.float64))
        if m is ember:
            e = (r, q, v)
    for x, y in zip(e, (r, q, v)):
        np.testing.assert_array_equal(x.info.numpy(), y.info.numpy())
        assert x.info.dtype == ember.int32
        np.testing.assert_array_equal(x[0].numpy(), y[0].numpy())  # the same inf/-inf
    with pytest.raises(ember.linalg.LinAlgError, match="singular"):
        ember.linalg.inv_ex(ember.tensor(s), check_errors=True)
    with pytest.raises(ember.linalg.LinAlgError, match="singular"):
        ember.linalg.solve_ex(ember.tensor(s), ember.ones(2, 2, 1, dtype=ember.float64),
                              check_errors=True)


@pytest.mark.parametrize("shape,k", [((4, 3), 2), ((4, 3), 3), ((2, 5, 5), 5), ((3, 3), 0)])
def test_householder_product(shape, k):
    tau = randn(*shape[:-2], k, seed=4)
    check_op(lambda m, a, t: m.linalg.householder_product(a, t), randn(*shape), tau, rtol=1e-6,
             atol=1e-10, gradgrad=shape == (4, 3))
    check_op(lambda m, a, t: m.orgqr(a, t), randn(*shape), tau, grad=False)
    check_op(lambda m, a, t: a.orgqr(t), randn(*shape), tau, grad=False)


def test_householder_product_errors():
    with pytest.raises(RuntimeError, match="greater than or equal to input.shape\\[-1\\]"):
        ember.linalg.householder_product(ember.randn(3, 4), ember.randn(2))
    with pytest.raises(RuntimeError, match="greater than or equal to tau.shape\\[-1\\]"):
        ember.linalg.householder_product(ember.randn(4, 3), ember.randn(4))


def test_autocast_runs_the_solves_in_float32():
    a = ember.randn(3, 3) + 3 * ember.eye(3)
    b = ember.randn(3, 2)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        lu, piv = ember.linalg.lu_factor(a)
        outs = [lu, ember.linalg.lu_solve(lu, piv, b.bfloat16()),
                ember.linalg.solve_triangular(a, b.bfloat16(), upper=True),
                ember.cholesky_solve(b.bfloat16(), a.bfloat16()), ember.cholesky_inverse(a),
                ember.linalg.householder_product(a, b[:, 0]), ember.matrix_exp(a)]
    assert [o.dtype for o in outs] == [ember.float32] * len(outs)


@needs_torch
def test_non_finite_input_as_torch():
    nan = np.array([[np.nan, 1.0], [1.0, 1.0]])
    with pytest.raises(torch.linalg.LinAlgError) as t:
        torch.linalg.svd(torch.tensor(nan))
    with pytest.raises(ember.linalg.LinAlgError) as e:
        ember.linalg.svd(ember.tensor(nan))
    assert str(e.value).startswith(str(t.value))
    for m in (ember, torch):
        a = m.tensor(nan, requires_grad=True)
        m.linalg.det(a).backward()
        assert np.isnan(a.grad.numpy()).all()


def test_legacy_forms_warn_once_as_torch():
    import ember.ops.linalg_factor as lf

    a = ember.eye(3)
    lf._warned.clear()
    calls = [lambda: ember.lu(a), lambda: ember.lu_solve(ember.ones(3, 1), *ember.lu(a)),
             lambda: ember.triangular_solve(ember.ones(3, 1), a)]
    for name, call in zip(("torch.lu is", "torch.lu_solve is", "torch.triangular_solve is"), calls):
        with pytest.warns(UserWarning, match=name):
            call()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for call in calls:
            call()  # once per process, as PyTorch's TORCH_WARN_ONCE


@needs_torch
@pytest.mark.parametrize("shape", [(100, 100), (70, 150), (150, 70), (2, 80, 80)])
def test_lu_blocked_sizes_match_torch(shape):
    """Past one panel (32 columns) the factorization is blocked, as getrf: same pivots."""
    a = randn(*shape, seed=7)
    a[..., :, 40] = 0  # a zero pivot in the second panel
    e = ember.linalg.lu_factor_ex(ember.tensor(a))
    t = torch.linalg.lu_factor_ex(torch.tensor(a))
    np.testing.assert_array_equal(e.pivots.numpy(), t.pivots.numpy())
    np.testing.assert_array_equal(e.info.numpy(), t.info.numpy())
    np.testing.assert_allclose(e.LU.numpy(), t.LU.numpy(), atol=1e-10)
