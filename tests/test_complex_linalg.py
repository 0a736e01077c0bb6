"""Complex linear algebra (issue 32): ``torch.linalg.eig``/``eigvals`` (complex results from real
or complex input) and inv, det, slogdet, solve, cholesky, eigh/eigvalsh, svd/svdvals, qr, pinv,
lu/lu_factor/lu_solve, solve_triangular, cholesky_solve, lstsq and matrix_exp on
complex64/complex128 matrices, compared with the installed PyTorch: values (or invariants where
a result is defined up to phases: A V = V diag(L), |V|), result dtypes, and gradients for
losses that do not depend on those phases. Both cores (a subprocess reruns this file with
``EMBER_PURE_PYTHON=1``).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from helpers import rerun_on_pure_python

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3232)
N = 4


def _c(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


SQ = _c(N, N)
HERM = SQ @ SQ.conj().T + N * np.eye(N)
RHS = _c(N, 2)
TALL = _c(5, 3)
WIDE = _c(3, 5)
BATCH = _c(2, 3, 3)
TRI = SQ + 3 * np.eye(N)  # a well-conditioned triangle either way
RHS5 = _c(5, 2)
RHS3 = _c(3, 2)


def _svd_loss(lib, a):
    u, s, vh = lib.linalg.svd(a, full_matrices=False)
    return (u[..., :2] @ vh[..., :2, :]).abs().sum() + (vh.abs() ** 3).sum() + s.sum()


def _lu_parts(lib, a):
    p, lo, up = lib.linalg.lu(a)
    assert p.dtype == a.dtype and not p.requires_grad
    return lib.cat([lo, up], -1 if a.shape[-2] <= a.shape[-1] else -2)


def _lu_solve(lib, a, b, **kw):
    lu, piv = lib.linalg.lu_factor(a)
    return lib.linalg.lu_solve(lu, piv, b if kw.get("left", True) else b.mT, **kw)


def _eig_loss(lib, a):
    w, v = lib.linalg.eig(a)
    return w.sum() + (v.abs() ** 2 * w).sum()


# name -> (fn(lib, *tensors) -> tensor, inputs, the results compared as sorted values)
CASES = {
    "inv": (lambda lib, a: lib.linalg.inv(a), [SQ], False),
    "inv_batched": (lambda lib, a: lib.linalg.inv(a), [BATCH], False),
    "det": (lambda lib, a: lib.linalg.det(a), [SQ], False),
    "slogdet": (lambda lib, a: (lambda r: 2 * r[1] + (r[0] * (0.3 + 0.7j)).real)(
        lib.linalg.slogdet(a)), [SQ], False),
    "logdet": (lambda lib, a: lib.logdet(a), [SQ], False),
    "solve": (lambda lib, a, b: lib.linalg.solve(a, b), [SQ, RHS], False),
    "solve_left_false": (lambda lib, a, b: lib.linalg.solve(a, b.mT, left=False), [SQ, RHS],
                         False),
    "eigvalsh": (lambda lib, a: lib.linalg.eigvalsh(a), [HERM], False),
    "eigh": (lambda lib, a: (lambda r: r[0].sum() + (r[1].abs() ** 2 * r[0]).sum())(
        lib.linalg.eigh(a)), [HERM], False),
    "svdvals": (lambda lib, a: lib.linalg.svdvals(a), [TALL], False),
    "svd_tall": (_svd_loss, [TALL], False),
    "svd_wide": (_svd_loss, [WIDE], False),
    "qr_tall": (lambda lib, a: lib.linalg.qr(a)[0].sum() + lib.linalg.qr(a)[1].sum(), [TALL],
                False),
    "qr_wide": (lambda lib, a: lib.linalg.qr(a)[0].sum() + lib.linalg.qr(a)[1].sum(), [WIDE],
                False),
    "pinv": (lambda lib, a: lib.linalg.pinv(a), [TALL], False),
    "cholesky_of_gram": (lambda lib, a: lib.linalg.cholesky(a @ a.mH + 4 * lib.eye(5)), [TALL],
                         False),
    "eigvals": (lambda lib, a: lib.linalg.eigvals(a), [SQ], True),
    "eigvals_of_real": (lambda lib, a: lib.linalg.eigvals(a.real), [SQ], True),
    "eig": (_eig_loss, [SQ], False),
    "eig_of_real": (lambda lib, a: _eig_loss(lib, a.real), [SQ], False),
    "cholesky_upper": (lambda lib, a: lib.linalg.cholesky(a, upper=True), [HERM], False),
    "solve_triangular_upper": (lambda lib, a, b: lib.linalg.solve_triangular(
        lib.triu(a), b, upper=True), [TRI, RHS], False),
    "solve_triangular_lower_right_unit": (lambda lib, a, b: lib.linalg.solve_triangular(
        a, b.mT, upper=False, left=False, unitriangular=True), [TRI, RHS], False),
    "lu_square": (_lu_parts, [SQ], False),
    "lu_tall": (_lu_parts, [TALL], False),
    "lu_wide": (_lu_parts, [WIDE], False),
    "lu_factor": (lambda lib, a: lib.linalg.lu_factor(a).LU, [SQ], False),
    "lu_factor_ex_batched": (lambda lib, a: lib.linalg.lu_factor_ex(a).LU, [BATCH], False),
    "lu_solve": (_lu_solve, [SQ, RHS], False),
    "lu_solve_adjoint": (lambda lib, a, b: _lu_solve(lib, a, b, adjoint=True), [SQ, RHS], False),
    "lu_solve_right": (lambda lib, a, b: _lu_solve(lib, a, b, left=False), [SQ, RHS], False),
    "lu_solve_right_adjoint": (lambda lib, a, b: _lu_solve(lib, a, b, left=False, adjoint=True),
                               [SQ, RHS], False),
    "cholesky_solve": (lambda lib, a, b: lib.cholesky_solve(b, lib.linalg.cholesky(a)),
                       [HERM, RHS], False),
    "cholesky_solve_upper": (lambda lib, a, b: lib.cholesky_solve(
        b, lib.linalg.cholesky(a, upper=True), upper=True), [HERM, RHS], False),
    "cholesky_solve_of_a_triangle": (lambda lib, a, b: lib.cholesky_solve(b, lib.tril(a)),
                                     [TRI, RHS], False),
    "lstsq_tall": (lambda lib, a, b: lib.linalg.lstsq(a, b).solution, [TALL, RHS5], False),
    "lstsq_square": (lambda lib, a, b: lib.linalg.lstsq(a, b).solution, [SQ, RHS], False),
    "lstsq_wide": (lambda lib, a, b: lib.linalg.lstsq(a, b).solution, [WIDE, RHS3], False),
    "matrix_exp": (lambda lib, a: lib.linalg.matrix_exp(a), [SQ], False),
    "matrix_exp_batched": (lambda lib, a: lib.linalg.matrix_exp(0.3 * a), [BATCH], False),
    "cholesky_inverse": (lambda lib, a: lib.cholesky_inverse(lib.linalg.cholesky(a)), [HERM],
                         False),
    "householder_product": (lambda lib, a, t: lib.linalg.householder_product(a, t),
                            [TALL, _c(2)], False),
}


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_pytorch(name, dt):
    fn, inputs, as_set = CASES[name]
    te = [ember.tensor(a, dtype=getattr(ember, dt), requires_grad=True) for a in inputs]
    tt = [torch.tensor(a, dtype=getattr(torch, dt), requires_grad=True) for a in inputs]
    oe, ot = fn(ember, *te), fn(torch, *tt)
    assert str(oe.dtype) == str(ot.dtype) and tuple(oe.shape) == tuple(ot.shape)
    tol = dict(rtol=2e-3, atol=2e-3) if dt == "complex64" else dict(rtol=1e-8, atol=1e-8)
    ve, vt = oe.detach().numpy(), ot.detach().resolve_conj().numpy()
    if as_set:
        ve, vt = np.sort_complex(ve.ravel()), np.sort_complex(vt.ravel())
        g = np.ones(tuple(ot.shape))  # a loss that does not depend on the order
    else:
        g = RNG.standard_normal(tuple(ot.shape))
        if ot.is_complex():
            g = g + 1j * RNG.standard_normal(tuple(ot.shape))
    np.testing.assert_allclose(ve, vt, **tol)
    ge, gt = ember.tensor(g.astype(vt.dtype)), torch.tensor(g.astype(vt.dtype))
    le, lt = (oe * ge).sum(), (ot * gt).sum()
    (le.real if le.is_complex() else le).backward()
    (lt.real if lt.is_complex() else lt).backward()
    for a, b in zip(te, tt):
        assert str(a.grad.dtype) == str(b.grad.dtype)
        np.testing.assert_allclose(a.grad.numpy(), b.grad.resolve_conj().numpy(), **tol)


@pytest.mark.parametrize("real_dt, complex_dt", [("float32", "complex64"),
                                                 ("float64", "complex128")])
def test_eig_results_are_complex_with_pytorchs_invariants(real_dt, complex_dt):
    # its own seed: with the module's stream (drawn in whatever order the tests run) some float32
    # matrices come out of the two engines' eig with their eigenpairs in different orders
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2, N, N))
    for arr in (a, a + 1j * rng.standard_normal((2, N, N))):
        dt = real_dt if arr.dtype.kind == "f" else complex_dt
        w, v = ember.linalg.eig(ember.tensor(arr, dtype=getattr(ember, dt)))
        wt, vt = torch.linalg.eig(torch.tensor(arr, dtype=getattr(torch, dt)))
        assert w.dtype == v.dtype == getattr(ember, complex_dt)
        tol = 1e-4 if real_dt == "float32" else 1e-10
        m = arr.astype(np.complex128)
        np.testing.assert_allclose(m @ v.numpy(), v.numpy() * w.numpy()[..., None, :],
                                   atol=tol * 10)
        np.testing.assert_allclose(np.linalg.norm(v.numpy(), axis=-2), 1, atol=tol)
        np.testing.assert_allclose(np.sort_complex(w.numpy().ravel()),
                                   np.sort_complex(wt.numpy().ravel()), atol=tol * 10)
        # the same LAPACK routine: the same order and |V| entry by entry
        np.testing.assert_allclose(np.abs(v.numpy()), np.abs(vt.numpy()), atol=tol * 10)
    assert type(ember.linalg.eig(ember.eye(2))).__name__ == "linalg_eig"
    assert ember.linalg.eig(ember.eye(2)).eigenvalues.dtype == ember.complex64


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_gradient_equals_pytorchs_skew_hermitian_part_included(upper):
    """PyTorch's complex cholesky gradient carries a skew-Hermitian part (an imaginary diagonal in
    L^H grad) that no Hermitian perturbation of A sees; ember's is the same matrix."""
    g = _c(N, N)
    grads = []
    for lib in (ember, torch):
        a = lib.tensor(HERM, requires_grad=True)
        (lib.linalg.cholesky(a, upper=upper) * lib.tensor(g)).sum().real.backward()
        grads.append(a.grad.resolve_conj().numpy())
    assert np.abs(grads[1] - grads[1].conj().T).max() > 1e-3  # the upstream is not Hermitian
    np.testing.assert_allclose(grads[0], grads[1], atol=1e-10)
    np.testing.assert_allclose(ember.linalg.cholesky(ember.tensor(HERM), upper=upper).numpy(),
                               torch.linalg.cholesky(torch.tensor(HERM), upper=upper)
                               .resolve_conj().numpy(), atol=1e-10)


def _gram(lib, a):
    return a @ a.mH + 3 * lib.eye(a.shape[-1], dtype=a.dtype)


SQ3 = _c(3, 3) + 2 * np.eye(3)
TALL3 = _c(4, 3)
# name -> (fn(lib, *tensors) -> tensor or tuple, inputs): second order through the
# decompositions (gradients of gradients), losses that do not depend on eigenvector phases
SECOND_ORDER = {
    "inv": (lambda lib, a: lib.linalg.inv(a), [SQ3]),
    "det": (lambda lib, a: lib.linalg.det(a), [SQ3]),
    "slogdet": (lambda lib, a: lib.linalg.slogdet(a), [SQ3]),
    "solve": (lambda lib, a, b: lib.linalg.solve(a, b), [SQ3, _c(3, 2)]),
    "cholesky": (lambda lib, a: lib.linalg.cholesky(_gram(lib, a)), [SQ3]),
    "cholesky_upper": (lambda lib, a: lib.linalg.cholesky(_gram(lib, a), upper=True), [SQ3]),
    "eigh": (lambda lib, a: (lambda r: (r[0], r[1].abs()))(lib.linalg.eigh(_gram(lib, a))),
             [SQ3]),
    "eigvalsh": (lambda lib, a: lib.linalg.eigvalsh(_gram(lib, a)), [SQ3]),
    "eigvals": (lambda lib, a: lib.linalg.eigvals(a), [SQ3]),
    "eig": (lambda lib, a: (lambda r: (r[0], r[1].abs() ** 2 * r[0]))(lib.linalg.eig(a)), [SQ3]),
    "svd": (lambda lib, a: (lambda r: ((r[0][:, :2] @ r[2][:2]).abs(), r[1]))(
        lib.linalg.svd(a, full_matrices=False)), [TALL3]),
    "qr": (lambda lib, a: lib.linalg.qr(a), [TALL3]),
    "pinv": (lambda lib, a: lib.linalg.pinv(a), [TALL3]),
    "lu": (lambda lib, a: lib.linalg.lu(a)[1:], [TALL3]),
    "lu_solve_adjoint": (lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b,
                                                                adjoint=True), [SQ3, _c(3, 2)]),
    "solve_triangular": (lambda lib, a, b: lib.linalg.solve_triangular(a.triu(), b, upper=True),
                         [SQ3, _c(3, 2)]),
    "cholesky_solve": (lambda lib, a, b: lib.cholesky_solve(b, lib.linalg.cholesky(
        _gram(lib, a))), [SQ3, _c(3, 2)]),
    "lstsq": (lambda lib, a, b: lib.linalg.lstsq(a, b).solution, [TALL3, _c(4, 2)]),
    "matrix_exp": (lambda lib, a: lib.linalg.matrix_exp(0.3 * a), [SQ3]),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_order_matches_pytorch(name):
    """create_graph through each complex decomposition: the gradient of |grad|^2 equals
    PyTorch's, and ember's gradcheck/gradgradcheck (complex: real and imaginary parts
    perturbed) pass."""
    fn, inputs = SECOND_ORDER[name]
    results = []
    for lib in (ember, torch):
        xs = [lib.tensor(a, dtype=lib.complex128, requires_grad=True) for a in inputs]
        outs = fn(lib, *xs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        loss = sum((o * lib.tensor(np.cos(np.arange(o.numel())).reshape(tuple(o.shape)) + 0.5j,
                                   dtype=o.dtype)).sum().real for o in outs if o.requires_grad)
        gs = lib.autograd.grad(loss, xs, create_graph=True)
        sum((g.abs() ** 2).sum() for g in gs).backward()
        results.append([x.grad.resolve_conj().numpy() for x in xs]
                       + [g.detach().resolve_conj().numpy() for g in gs])
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-7, atol=1e-9)
    xs = [ember.tensor(a, dtype=ember.complex128, requires_grad=True) for a in inputs]
    assert ember.autograd.gradcheck(lambda *a: fn(ember, *a), xs)
    assert ember.autograd.gradgradcheck(lambda *a: fn(ember, *a), xs)


@pytest.mark.parametrize("hermitian", [True, False])
@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_ldl_factor_and_solve_match_pytorch(hermitian, dt):
    """Bunch-Kaufman on complex matrices: sytrf (symmetric, |re| + |im| pivoting) or, with
    hermitian=True, hetrf (A = L D L^H): the same LD, pivots (2x2 blocks too) and solutions."""
    rng = np.random.default_rng(5)
    two_by_two = 0
    for _ in range(12):
        n = int(rng.integers(1, 7))
        s = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
        s[0, 0] = s[-1, -1] = 0  # small diagonals: 2x2 pivots
        a = s + (s.conj().T if hermitian else s.T)
        b = rng.standard_normal((n, 2)) + 1j * rng.standard_normal((n, 2))
        got = []
        for lib in (ember, torch):
            ld, piv, info = lib.linalg.ldl_factor_ex(lib.tensor(a, dtype=getattr(lib, dt)),
                                                     hermitian=hermitian)
            x = lib.linalg.ldl_solve(ld, piv, lib.tensor(b, dtype=getattr(lib, dt)),
                                     hermitian=hermitian)
            got.append((ld.numpy(), piv.numpy(), x.numpy(), info.numpy()))
        tol = 1e-4 if dt == "complex64" else 1e-10
        for e, t in zip(*got):
            if e is got[0][2] and got[1][3].any():
                continue  # singular: a division by a zero pivot (inf/nan patterns vary)
            np.testing.assert_allclose(e, t, rtol=tol, atol=tol)
        two_by_two += int((got[0][1] < 0).any())
        assert got[0][2].dtype == np.dtype(dt)
    assert two_by_two >= 3


def test_errors_as_pytorch():
    for lib in (ember, torch):
        z = lib.zeros(3, 3, dtype=lib.complex64)
        for fn, args in ((lib.linalg.inv, (z,)), (lib.linalg.cholesky, (z,)),
                         (lib.linalg.solve, (z, lib.ones(3, dtype=lib.complex64)))):
            with pytest.raises(lib.linalg.LinAlgError):
                fn(*args)
        with pytest.raises(RuntimeError, match="square"):
            lib.linalg.eig(lib.ones(2, 3))
        with pytest.raises(RuntimeError):
            lib.linalg.eigvals(lib.ones(3, 3, dtype=lib.int64))


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_logdet_of_a_singular_complex_matrix_is_pytorchs(dt):
    """log det of a singular complex matrix is -inf + nan j in PyTorch (0's phase is undefined),
    batched too; a regular one in the same batch keeps its value."""
    a = np.array([[[1, 2], [2, 4]], [[0, 0], [0, 0]], [[1j, 0], [0, 2]]])
    out = []
    for lib in (ember, torch):
        r = lib.logdet(lib.tensor(a, dtype=getattr(lib, dt)))
        out.append((str(r.dtype), r.numpy()))
    assert out[0][0] == out[1][0]
    np.testing.assert_array_equal(out[0][1][:2], out[1][1][:2])
    np.testing.assert_allclose(out[0][1][2], out[1][1][2], rtol=1e-6)


@pytest.mark.skipif(os.environ.get("EMBER_PURE_PYTHON") == "1", reason="already the Python core")
def test_this_file_passes_on_the_pure_python_core():
    rerun_on_pure_python(__file__)
