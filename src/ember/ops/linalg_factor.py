"""The factorizations and solves beside ``linalg.py``: LU (``lu_factor``/``lu_factor_ex``,
``lu``, ``lu_unpack``, ``lu_solve`` and the legacy ``torch.lu``/``torch.lu_solve``), LDL^T
(``ldl_factor``/``ldl_factor_ex``/``ldl_solve``), triangular
solves (``linalg.solve_triangular``, legacy ``triangular_solve``), ``cholesky_solve``,
``cholesky_inverse``, ``matrix_exp``, and ``eig``/``eigvals``, which need complex tensors.

LU is LAPACK getrf's partial pivoting done in NumPy/CuPy (``_matrix._lu_raw``): the pivots are
LAPACK's 1-based int32 row swaps, as PyTorch returns them; LDL^T is sytrf's Bunch-Kaufman
pivoting (``_sytf2_lower``). Derivatives: LU (full-rank input of any shape), triangular and
Cholesky solves, and everything built from them; LDL^T has none, as in PyTorch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._tensor_base import TensorBase
from ..autograd import function as _function
from ..autograd.function import Op
from . import return_types
from ._autocast import cast as _amp_cast
from ._autocast import flag as _amp
from ._matrix import _const, _lu_raw, _perm_matrix, _result, _shape, _tensor
from ._promote import conjugated
from .blas import Matmul
from .linalg import LinAlgError, _check_float, _check_square, _mh, _mm
from .other_matrix import Tril, Triu, diag_embed, diagonal, tril, triu

__all__ = [
    "lu",
    "lu_unpack",
    "lu_solve",
    "cholesky_solve",
    "cholesky_inverse",
    "triangular_solve",
    "matrix_exp",
    "eig",
    "orgqr",
]


# ---------------------------------------------------------------------------------------------
# LU


def lu_factor_ex(A: Any, *, pivot: bool = True, check_errors: bool = False,
                 out: Any = None) -> Any:
    """(LU, pivots, info): A = P L U packed as LAPACK's getrf (L's unit diagonal implied);
    ``pivots`` 1-based int32 row swaps; ``info`` the first zero pivot's column (1-based), else 0."""
    if out is not None:
        res = lu_factor_ex(A, pivot=pivot, check_errors=check_errors)
        return _result(res, out, "linalg.lu_factor_ex")
    if _amp.active:
        (A,) = _amp_cast("lu_factor", A)
    a = _lu_input("linalg.lu_factor_ex", A, pivot)
    lu, piv, info = LuFactor.apply(a)
    if check_errors:
        _raise_singular("linalg.lu_factor_ex", info)
    return return_types.linalg_lu_factor_ex(lu, piv, info)


def lu_factor(A: Any, *, pivot: bool = True, out: Any = None) -> Any:
    """(LU, pivots) of A = P L U; a RuntimeError when U has a zero on its diagonal."""
    if out is not None:
        return _result(lu_factor(A, pivot=pivot), out, "linalg.lu_factor")
    if _amp.active:
        (A,) = _amp_cast("lu_factor", A)
    a = _lu_input("linalg.lu_factor", A, pivot)
    lu, piv, info = LuFactor.apply(a)
    _raise_singular("torch.linalg.lu_factor", info)
    return return_types.linalg_lu_factor(lu, piv)


def linalg_lu(A: Any, *, pivot: bool = True, out: Any = None) -> Any:
    """(P, L, U) with A = P L U: L (*, m, k) unit lower, U (*, k, n) upper, k = min(m, n)."""
    if out is not None:
        return _result(linalg_lu(A, pivot=pivot), out, "linalg.lu")
    a = _lu_input("linalg.lu", A, pivot)
    lu_, piv, _ = LuFactor.apply(a)
    p, lo, up = lu_unpack(lu_, piv)
    return return_types.linalg_lu(p, lo, up)


def lu(A: Any, pivot: bool = True, get_infos: bool = False, out: Any = None) -> Any:
    """The legacy ``torch.lu``: (LU, pivots), with ``get_infos`` (LU, pivots, infos); without
    it a singular matrix raises. Prefer torch.linalg.lu_factor / lu_factor_ex."""
    if out is not None:
        return _result(lu(A, pivot=pivot, get_infos=get_infos), out, "lu")
    _deprecated("lu")
    a = _lu_input("lu", A, pivot)
    lu_, piv, info = LuFactor.apply(a)
    if get_infos:
        return return_types._lu_with_info(lu_, piv, info)
    _raise_singular("torch.linalg.lu_factor", info)
    return lu_, piv


def lu_unpack(LU_data: Any, LU_pivots: Any, unpack_data: bool = True,
              unpack_pivots: bool = True, *, out: Any = None) -> Any:
    """(P, L, U) from ``lu_factor``'s packed result (differentiable in LU_data); an element not
    asked for is an empty tensor."""
    if out is not None:
        res = lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots)
        return _result(res, out, "lu_unpack")
    a = _tensor(LU_data, "lu_unpack", "LU_data", 1)
    piv = _tensor(LU_pivots, "lu_unpack", "LU_pivots", 2)
    s = _shape(a)
    if len(s) < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{s} instead")
    if piv._data.dtype != np.int32:
        raise RuntimeError(f"torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                           f"torch.int32 dtype. Note: this function is intended to be used with the "
                           f"output produced by torch.linalg.lu_factor, got {piv.dtype}")
    m, n = s[-2], s[-1]
    k = min(m, n)
    empty = a.new_zeros((0,))
    if unpack_data:
        eye = _const(a, lambda xp, dt: xp.eye(m, k, dtype=dt))
        lo = tril(a[..., :, :k], -1) + TensorBase._make(eye)
        up = triu(a[..., :k, :])
    else:
        lo = up = empty
    if unpack_pivots:
        xp = _xp(a)
        pm = _perm_matrix(xp, piv._data, m, a._data.dtype)
        p = TensorBase._make(xp.ascontiguousarray(xp.broadcast_to(pm, s[:-2] + (m, m))))
    else:
        p = empty
    return return_types.lu_unpack(p, lo, up)


def linalg_lu_solve(LU: Any, pivots: Any, B: Any, *, left: bool = True, adjoint: bool = False,
                    out: Any = None) -> Any:
    """X with A X = B (``adjoint``: A^H X = B; ``left=False``: X A = B) from A's ``lu_factor``;
    differentiable in LU and B."""
    if out is not None:
        res = linalg_lu_solve(LU, pivots, B, left=left, adjoint=adjoint)
        return _result(res, out, "linalg.lu_solve")
    if _amp.active:
        LU, B = _amp_cast("lu_solve", LU, B)
    a = _tensor(LU, "linalg.lu_solve", "LU", 1)
    piv = _tensor(pivots, "linalg.lu_solve", "pivots", 2)
    b = _tensor(B, "linalg.lu_solve", "B", 3)
    _check_float("linalg.lu_solve", a)
    _check_square("linalg.lu_solve", a, "LU")
    if b.dim() < 2 or (b.shape[-2] if left else b.shape[-1]) != a.shape[-1]:
        raise RuntimeError(
            f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({a.shape[-2]}x{a.shape[-1]} and "
            f"{'x'.join(str(v) for v in tuple(b.shape)[-2:])}); B must be a matrix or a batch")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found "
                           f"LU of type {a.dtype} and B of type {b.dtype} instead")
    if not left:  # X A = B  <=>  A^H X^H = B^H
        return linalg_lu_solve(a, piv, b.mH, adjoint=not adjoint).mH
    xp = _xp(a)
    p = TensorBase._make(_perm_matrix(xp, piv._data, a.shape[-1], a._data.dtype))
    mm = _matmul_op(a).apply
    if not adjoint:  # X = U^-1 L^-1 P^T B
        y = SolveTriangular.apply(a, mm(p.mT, b), False, True)
        return SolveTriangular.apply(a, y, True, False)
    y = SolveTriangular.apply(a.mH, b, False, False)  # X = P L^-H U^-H B
    return mm(p, SolveTriangular.apply(a.mH, y, True, True))


def lu_solve(input: Any, LU_data: Any, LU_pivots: Any, *, out: Any = None) -> Any:
    """The legacy ``torch.lu_solve(b, LU_data, LU_pivots)``: X with A X = b; prefer
    torch.linalg.lu_solve(LU, pivots, B)."""
    _deprecated("lu_solve")
    return _result(linalg_lu_solve(LU_data, LU_pivots, input), out, "lu_solve")


# ---------------------------------------------------------------------------------------------
# triangular and Cholesky solves


def solve_triangular(input: Any, B: Any, *, upper: bool, left: bool = True,
                     unitriangular: bool = False, out: Any = None) -> Any:
    """X with A X = B (``left=False``: X A = B), reading only A's upper or lower triangle (a unit
    diagonal when ``unitriangular``); a zero on the diagonal gives inf/nan, as LAPACK's trsm."""
    if _amp.active:
        input, B = _amp_cast("solve_triangular", input, B)
    a = _tensor(input, "linalg.solve_triangular", "A", 1)
    b = _tensor(B, "linalg.solve_triangular", "B", 2)
    _check_float("linalg.solve_triangular", a)
    _check_square("linalg.solve_triangular", a)
    if b.dim() < 2 or (b.shape[-2] if left else b.shape[-1]) != a.shape[-1]:
        raise RuntimeError(
            f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({a.shape[-2]}x{a.shape[-1]} and "
            f"{'x'.join(str(v) for v in tuple(b.shape)[-2:])}); B must be a matrix or a batch")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same dtype, but "
                           f"found A of type {a.dtype} and B of type {b.dtype} instead")
    if left:
        res = SolveTriangular.apply(a, b, bool(upper), bool(unitriangular))
    else:
        res = SolveTriangular.apply(a.mT, b.mT, not upper, bool(unitriangular)).mT
    return _result(res, out, "linalg.solve_triangular")


def triangular_solve(input: Any, A: Any, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False, *, out: Any = None) -> Any:
    """The legacy form: (solution, cloned_coefficient) with op(A) X = input, op(A) = A or A^T;
    prefer torch.linalg.solve_triangular(A, B, upper=...)."""
    _deprecated("triangular_solve")
    if _amp.active:
        input, A = _amp_cast("triangular_solve", input, A)
    b = _tensor(input, "triangular_solve", "input", 1)
    a = _tensor(A, "triangular_solve", "A", 2)
    if b.dim() < 2 or a.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, "
                           f"but it has {b.dim()} dimensions instead (A: {a.dim()})")
    x = solve_triangular(a.mT if transpose else a, b, upper=bool(upper) != bool(transpose),
                         unitriangular=unitriangular)
    coef = a.expand(*tuple(x.shape[:-2]), *tuple(a.shape[-2:])).clone()  # broadcast, as PyTorch
    return _result(return_types.triangular_solve(x, coef), out, "triangular_solve")


def cholesky_solve(input: Any, input2: Any, upper: bool = False, *, out: Any = None) -> Any:
    """X with A X = B from A's Cholesky factor ``input2`` (L, or U with ``upper``); B = input."""
    if _amp.active:
        input, input2 = _amp_cast("cholesky_solve", input, input2)
    b = _tensor(input, "cholesky_solve", "input", 1)
    c = _tensor(input2, "cholesky_solve", "input2", 2)
    if b.dim() < 2 or c.dim() < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {b.dim()} dimensions "
                           f"instead (A: {c.dim()}); make B a column, e.g. b.unsqueeze(-1)")
    _check_float("cholesky_solve", c)
    _check_square("cholesky_solve", c, "input2")
    if b.shape[-2] != c.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{c.shape[-1]} by {c.shape[-1]} but each b matrix is "
                           f"{b.shape[-2]} by {b.shape[-1]}")
    if b._data.dtype != c._data.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{b.dtype} and A of type {c.dtype} instead.")
    res = CholeskySolve.apply(b, c, bool(upper))
    return _result(res, out, "cholesky_solve")


def cholesky_inverse(input: Any, upper: bool = False, *, out: Any = None) -> Any:
    """A^-1 from A's Cholesky factor (L, or U with ``upper``)."""
    if _amp.active:
        (input,) = _amp_cast("cholesky_inverse", input)
    c = _tensor(input, "cholesky_inverse", "input", 1)
    _check_float("cholesky_inverse", c)
    _check_square("cholesky_inverse", c, "input")
    d = _xp(c).diagonal(c._data, 0, -2, -1)
    if d.size and bool((d == 0).any()):
        k = int(np.argmax(np.asarray(d == 0).reshape(-1, d.shape[-1]).any(0))) + 1
        raise LinAlgError(f"cholesky_inverse: The diagonal element {k} is zero, the inversion "
                          f"could not be completed because the input matrix is singular.")
    n = c.shape[-1]
    eye = TensorBase._make(_const(c._data, lambda xp, dt: xp.eye(n, dtype=dt)))
    return _result(cholesky_solve(eye, c, upper), out, "cholesky_inverse")


# ---------------------------------------------------------------------------------------------
# LDL^T (Bunch-Kaufman)


def ldl_factor_ex(input: Any, *, hermitian: bool = False, check_errors: bool = False,
                  out: Any = None) -> Any:
    """(LD, pivots, info): A = P L D L^T P^T for symmetric A (its lower triangle is read), as
    LAPACK's sytrf (complex ``hermitian=True``: A = P L D L^H P^T, hetrf): L unit lower below the diagonal of LD, D's 1x1 and 2x2 blocks on and next to
    it; ``pivots`` 1-based int32 (a 2x2 block's two entries negative); ``info`` the first zero
    block's index (1-based), else 0. No derivative (as in PyTorch)."""
    if out is not None:
        res = ldl_factor_ex(input, hermitian=hermitian, check_errors=check_errors)
        return _result(res, out, "linalg.ldl_factor_ex")
    a = _tensor(input, "linalg.ldl_factor_ex", "A", 1)
    _check_float("linalg.ldl_factor_ex", a)
    _check_square("linalg.ldl_factor_ex", a)
    ld, piv, info = LdlFactor.apply(a, bool(hermitian))
    if check_errors:
        _raise_ldl_singular("linalg.ldl_factor_ex", info)
    return return_types.linalg_ldl_factor_ex(ld, piv, info)


def ldl_factor(input: Any, *, hermitian: bool = False, out: Any = None) -> Any:
    """(LD, pivots) of A = P L D L^T P^T (see ``ldl_factor_ex``); a singular D raises."""
    if out is not None:
        return _result(ldl_factor(input, hermitian=hermitian), out, "linalg.ldl_factor")
    ld, piv, info = ldl_factor_ex(input, hermitian=hermitian)
    _raise_ldl_singular("torch.linalg.ldl_factor", info)
    return return_types.linalg_ldl_factor(ld, piv)


def ldl_solve(LD: Any, pivots: Any, B: Any, *, hermitian: bool = False, out: Any = None) -> Any:
    """X with A X = B from ``ldl_factor``'s (LD, pivots), as LAPACK's sytrs. No derivative."""
    ld = _tensor(LD, "linalg.ldl_solve", "LD", 1)
    piv = _tensor(pivots, "linalg.ldl_solve", "pivots", 2)
    b = _tensor(B, "linalg.ldl_solve", "B", 3)
    _check_float("linalg.ldl_solve", ld)
    _check_square("linalg.ldl_solve", ld, "LD")
    if piv._data.dtype != np.int32:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected pivots to be integers. Got "
                           f"{piv.dtype}")
    if b.dim() < 2 or b.shape[-2] != ld.shape[-1]:
        raise RuntimeError(f"torch.linalg.ldl_solve: Incompatible shapes of LD and B for the "
                           f"equation AX = B ({tuple(ld.shape)} and {tuple(b.shape)}); B must be "
                           "a matrix or a batch of them")
    if ld._data.dtype != b._data.dtype:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected LD and B to have the same dtype, "
                           f"but found LD of type {ld.dtype} and B of type {b.dtype} instead")
    return _result(LdlSolve.apply(ld, b, piv._data, bool(hermitian)), out, "linalg.ldl_solve")


# ---------------------------------------------------------------------------------------------
# matrix_exp, householder_product


def matrix_exp(input: Any) -> Any:
    """exp(A) = sum_k A^k / k!, by scaling and squaring: the Taylor series (18 terms) of
    A / 2^s with ||A / 2^s||_1 <= 1/2, squared s times (differentiable through its ops)."""
    a = _tensor(input, "matrix_exp", "input", 1)
    _check_float("linalg.matrix_exp", a)
    _check_square("linalg.matrix_exp", a)
    if a.shape[-1] == 0:
        return a * 1
    if _function.tracer is not None:  # the squarings follow the data: compile stays eager
        _function.tracer.data_read("linalg.matrix_exp")
    raw = np.asarray(a._data) if a._data.size else np.zeros((1,))
    norm = float(np.abs(raw).sum(-2).max()) if a._data.size else 0.0
    s = max(0, int(math.ceil(math.log2(norm))) + 1) if norm > 0 and math.isfinite(norm) else 0
    x = a * (0.5 ** s)
    eye = diag_embed(diagonal(a, 0, -2, -1) * 0 + 1)
    term = eye
    res = eye
    mm = _matmul_op(a).apply
    for k in range(1, 19):
        term = mm(term, x) * (1.0 / k)
        res = res + term
    for _ in range(s):
        res = mm(res, res)
    return res


def householder_product(input: Any, tau: Any, *, out: Any = None) -> Any:
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H, v_i = (0, ..., 1,
    input[i+1:, i]) (LAPACK's orgqr; ``torch.orgqr``), differentiable in input and tau."""
    if _amp.active:
        input, tau = _amp_cast("householder_product", input, tau)
    a = _tensor(input, "linalg.householder_product", "input", 1)
    t = _tensor(tau, "linalg.householder_product", "tau", 2)
    fn = "torch.linalg.householder_product"
    if a.dim() < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    m, n = a.shape[-2], a.shape[-1]
    if m < n:
        raise RuntimeError(f"{fn}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if t.dim() < 1 or t.shape[-1] > n:
        raise RuntimeError(f"{fn}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if a._data.dtype != t._data.dtype:
        raise RuntimeError(f"{fn}: tau dtype {t.dtype} does not match input dtype {a.dtype}")
    q = TensorBase._make(_const(a._data, lambda xp, dt: xp.eye(m, n, dtype=dt)))
    mm = _matmul_op(a).apply
    for i in range(t.shape[-1] - 1, -1, -1):
        below = TensorBase._make(_const(a._data, lambda xp, dt, i=i: (xp.arange(m) > i).astype(
            dt)))
        unit = TensorBase._make(_const(a._data, lambda xp, dt, i=i: (xp.arange(m) == i).astype(
            dt)))
        v = (a[..., :, i] * below + unit).unsqueeze(-1)  # (*, m, 1)
        q = q - (t[..., i, None, None] * v) * mm(v.mH, q)
    return _result(q, out, "linalg.householder_product")


def orgqr(input: Any, input2: Any, *, out: Any = None) -> Any:
    """``torch.orgqr(input, tau)``: ``torch.linalg.householder_product`` (the same result)."""
    return householder_product(input, input2, out=out)


def eig(self: Any, eigenvectors: bool = False, *, e: Any = None, v: Any = None) -> Any:
    """Removed from PyTorch (1.9): raises its RuntimeError naming the replacement."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. `torch.linalg.eig` "
        "returns complex tensors of dtype `cfloat` or `cdouble` rather than real tensors "
        "mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\n"
        "L_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) "
        "should be replaced with:\nL_complex, V_complex = torch.linalg.eig(A)"
    )


class CholeskySolve(Op):
    """X = (L L^H)^-1 B (``upper``: (U^H U)^-1 B), reading one triangle of the factor
    grad_B = cholesky_solve(grad), grad_L = -(grad_B X^H + X grad_B^H) L (upper: -U (...)),
    the whole matrix, as PyTorch's  (^H: conjugate transpose; ^T for real)"""

    node_name = "CholeskySolveBackward0"

    @staticmethod
    def forward(ctx: Any, b: Any, c: Any, upper: bool) -> Any:
        xp = ctx.xp
        ct = _mh(c)
        if upper:
            x = _trsolve(xp, c, _trsolve(xp, ct, b, False, False), True, False)
        else:
            x = _trsolve(xp, ct, _trsolve(xp, c, b, False, False), True, False)
        ctx.save_for_backward(c, x)
        ctx.upper = upper
        return x

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        c, x = ctx.saved
        gb = ctx.call(CholeskySolve, grad, c, ctx.upper)
        need = ctx.needs_input_grad
        gc = None
        if need[1]:
            common = _mm(ctx, gb, _mh(x))
            common = common + _mh(common)
            gc = -(_mm(ctx, c, common) if ctx.upper else _mm(ctx, common, c))
        return (gb if need[0] else None), gc, None


class LdlFactor(Op):
    """(LD, pivots, info) = sytrf(A) (lower)          no derivative, as in PyTorch"""

    node_name = "LinalgLdlFactorExBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, herm: bool) -> Any:
        xp = ctx.xp
        host = _host(a)
        n = host.shape[-1]
        flat = host.reshape((-1, n, n))
        ld = np.zeros_like(flat)
        piv = np.zeros(flat.shape[:-1], np.int32)
        info = np.zeros(flat.shape[:1], np.int32)
        for i, m in enumerate(flat):
            ld[i], piv[i], info[i] = _sytf2_lower(m, herm)
        batch = tuple(host.shape[:-2])
        ld = xp.asarray(ld.reshape(host.shape))
        piv, info = xp.asarray(piv.reshape(batch + (n,))), xp.asarray(info.reshape(batch))
        ctx.mark_non_differentiable(piv, info)
        return ld, piv, info

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError("derivative for aten::linalg_ldl_factor_ex is not implemented")


class LdlSolve(Op):
    """X = A^-1 B from sytrf's (LD, pivots), as sytrs          no derivative, as in PyTorch"""

    node_name = "LinalgLdlSolveBackward0"

    @staticmethod
    def forward(ctx: Any, ld: Any, b: Any, piv: Any, herm: bool) -> Any:
        hl, hb, hp = _host(ld), _host(b), _host(piv)
        batch = tuple(np.broadcast_shapes(hl.shape[:-2], hb.shape[:-2], hp.shape[:-1]))
        n = hl.shape[-1]
        fl = np.broadcast_to(hl, batch + (n, n)).reshape((-1, n, n))
        fp = np.broadcast_to(hp, batch + (n,)).reshape((-1, n))
        fb = np.array(np.broadcast_to(hb, batch + hb.shape[-2:]), copy=True)
        fb = fb.reshape((-1,) + hb.shape[-2:])
        for i in range(fb.shape[0]):
            _sytrs_lower(fl[i], fp[i], fb[i], herm)
        return ctx.xp.asarray(fb.reshape(batch + hb.shape[-2:]))

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError("derivative for aten::linalg_ldl_solve is not implemented")


class LuFactor(Op):
    """(LU, pivots, info) = getrf(A), A = P L U
    square: grad_A = P L^-H [tril(L^H gL, -1) + triu(gU U^H)] U^-H (gL = tril(gLU, -1),
    gU = triu(gLU)); wide A = P L [U1 | U2]: the square rule on (L, U1) with L^H gL less
    gU2 U2^H, and grad_A2 = P L^-H gU2; tall P^T A = [L1; L2] U: the square rule on (L1, U) with
    gU U^H less L2^H gL2, and grad_A2 = P gL2 U^-H (full-rank A; ^H: ^T for real A)"""

    node_name = "LinalgLuFactorExBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any) -> Any:
        lu_, piv, info = _lu_raw(ctx.xp, a)
        ctx.save_for_backward(lu_, piv)
        ctx.mark_non_differentiable(piv, info)
        return lu_, piv, info

    @staticmethod
    def backward(ctx: Any, glu: Any, gpiv: Any, ginfo: Any) -> Any:
        lu_, piv = ctx.saved
        m, n = lu_.shape[-2], lu_.shape[-1]
        k = min(m, n)

        def mm(x: Any, y: Any) -> Any:
            return _mm(ctx, x, y)

        t = _mh

        praw = piv._data if isinstance(piv, TensorBase) else piv
        p = _const(lu_, lambda xp, dt: _perm_matrix(xp, praw, m, dt))
        eye = _const(lu_, lambda xp, dt: xp.eye(k, dtype=dt))
        sq, gsq = lu_[..., :k, :k], glu[..., :k, :k]
        lo = ctx.call(Tril, sq, -1) + eye
        up = ctx.call(Triu, sq, 0)
        inner_l = mm(t(lo), ctx.call(Tril, gsq, -1))
        inner_u = mm(ctx.call(Triu, gsq, 0), t(up))
        if m < n:
            inner_l = inner_l - mm(glu[..., k:], t(lu_[..., k:]))
        elif m > n:
            inner_u = inner_u - mm(t(lu_[..., k:, :]), glu[..., k:, :])
        phi = ctx.call(Tril, inner_l, -1) + ctx.call(Triu, inner_u, 0)
        y = ctx.call(SolveTriangular, t(lo), phi, True, True)  # L^-T phi
        g1 = t(ctx.call(SolveTriangular, up, t(y), True, False))  # ... U^-T
        if m == n:
            return mm(p, g1)
        if m < n:
            g2 = ctx.call(SolveTriangular, t(lo), glu[..., k:], True, True)  # L^-T gU2
            return mm(p, _cat(ctx, [g1, g2], -1))
        g2 = t(ctx.call(SolveTriangular, up, t(glu[..., k:, :]), True, False))  # gL2 U^-T
        return mm(p, _cat(ctx, [g1, g2], -2))


class SolveTriangular(Op):
    """X = A^-1 B for triangular A (its ``upper`` or lower triangle; unit diagonal if ``unit``)
    grad_B = A^-H grad          grad_A = -tri(grad_B X^H) (the strict triangle when ``unit``;
    ^H: ^T for real A)"""

    node_name = "LinalgSolveTriangularBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, upper: bool, unit: bool) -> Any:
        x = _trsolve(ctx.xp, a, b, upper, unit)
        ctx.save_for_backward(a, x)
        ctx.tri = (upper, unit)
        return x

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, x = ctx.saved
        upper, unit = ctx.tri
        need = ctx.needs_input_grad
        gb = ctx.call(SolveTriangular, _mh(a), grad, not upper, unit)
        ga = None
        if need[0]:
            ga = -_mm(ctx, gb, _mh(x))
            ga = ctx.call(Triu, ga, int(unit)) if upper else ctx.call(Tril, ga, -int(unit))
        return ga, (gb if need[1] else None), None, None


def _cat(ctx: Any, parts: list, dim: int) -> Any:
    if isinstance(parts[0], TensorBase):  # under create_graph
        from .joining import cat

        return cat(parts, dim)
    return ctx.xp.concatenate(parts, axis=dim)


_DEPRECATED = {
    "lu": "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex "
          "and will be removed in a future PyTorch release.\nLU, pivots = torch.lu(A, "
          "compute_pivots)\nshould be replaced with\nLU, pivots = torch.linalg.lu_factor(A, "
          "compute_pivots)\nand\nLU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)"
          "\nshould be replaced with\nLU, pivots, info = torch.linalg.lu_factor_ex(A, "
          "compute_pivots)",
    "lu_solve": "torch.lu_solve is deprecated in favor of torch.linalg.lu_solve and will be "
                "removed in a future PyTorch release.\nNote that torch.linalg.lu_solve has its "
                "arguments reversed.\nX = torch.lu_solve(B, LU, pivots)\nshould be replaced "
                "with\nX = torch.linalg.lu_solve(LU, pivots, B)",
    "triangular_solve": "torch.triangular_solve is deprecated in favor of "
                        "torch.linalg.solve_triangular and will be removed in a future PyTorch "
                        "release.\ntorch.linalg.solve_triangular has its arguments reversed and "
                        "does not return a copy of one of the inputs.\nX = "
                        "torch.triangular_solve(B, A).solution\nshould be replaced with\nX = "
                        "torch.linalg.solve_triangular(A, B).",
}
_warned: set = set()


def _deprecated(name: str) -> None:
    """PyTorch's deprecation warning for a legacy function, once per process (as its
    TORCH_WARN_ONCE)."""
    if name not in _warned:
        import warnings

        _warned.add(name)
        warnings.warn(_DEPRECATED[name], UserWarning, stacklevel=3)


def _lu_input(fn: str, A: Any, pivot: bool) -> Any:
    a = _tensor(A, fn, "A", 1)
    _check_float(fn, a)
    if a.dim() < 2:
        raise RuntimeError(f"{fn}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{tuple(a.shape)} instead")
    if not pivot:
        raise RuntimeError(f"{fn}: LU without pivoting is not implemented on the CPU")
    return a


def _raise_singular(fn: str, info: Any) -> None:
    bad = np.asarray(info._data).reshape(-1)
    if bad.size and bool((bad > 0).any()):
        i = int(np.argmax(bad > 0))
        k = int(bad[i])
        where = f"(Batch element {i}): " if info.dim() else ""
        raise RuntimeError(
            f"{fn}: {where}U[{k},{k}] is zero and using it on lu_solve would result in a division "
            "by zero. If you still want to perform the factorization, consider calling "
            "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def _trsolve(xp: Any, a: Any, b: Any, upper: bool, unit: bool) -> Any:
    """A^-1 B reading one triangle of A, batched with broadcasting: LAPACK's solve when every
    diagonal entry is nonzero, else substitution row by row (inf/nan where it divides by 0)."""
    n = a.shape[-1]
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    t = xp.triu(a) if upper else xp.tril(a)
    if unit:
        t = t - xp.einsum("...ii->...i", t)[..., None] * xp.eye(n, dtype=a.dtype) + xp.eye(
            n, dtype=a.dtype)
    t = xp.broadcast_to(t, batch + (n, n))
    bb = xp.broadcast_to(b, batch + tuple(b.shape[-2:]))
    if n == 0 or bb.size == 0:
        return xp.zeros(bb.shape, dtype=a.dtype)
    if bool((xp.einsum("...ii->...i", t) != 0).all()):
        return xp.linalg.solve(t, bb)
    x = xp.zeros(bb.shape, dtype=a.dtype)
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        if upper:
            s = bb[..., i, :] - (t[..., i:i + 1, i + 1:] @ x[..., i + 1:, :])[..., 0, :]
        else:
            s = bb[..., i, :] - (t[..., i:i + 1, :i] @ x[..., :i, :])[..., 0, :]
        x[..., i, :] = s / t[..., i, i, None]
    return x


def _matmul_op(a: Any) -> Any:
    """The Matmul op for ``a``'s dtype (complex: ``conjugated``, PyTorch's gradient)."""
    return conjugated(Matmul) if a._data.dtype.kind == "c" else Matmul


def _xp(t: Any) -> Any:
    from .. import _backend

    return _backend.xp_of(t._data)


def _host(x: Any) -> Any:
    return np.asarray(x.get() if hasattr(x, "get") else x)


def _raise_ldl_singular(fn: str, info: Any) -> None:
    bad = np.asarray(_host(info._data)).reshape(-1)
    if bad.size and bool((bad > 0).any()):
        i = int(np.argmax(bad > 0))
        where = f"(Batch element {i}): " if info.dim() else ""
        raise RuntimeError(f"{fn}: {where}D[{int(bad[i])},{int(bad[i])}] is zero: the matrix is "
                           "singular, so the factorization could not be used to solve; call "
                           "torch.linalg.ldl_factor_ex to get the factors anyway")


_BK_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0


def _sytf2_lower(m: Any, herm: bool = False) -> tuple:
    """LAPACK sytf2 (uplo 'L'; ``herm``: hetf2, A = L D L^H with a real diagonal): Bunch-Kaufman
    diagonal pivoting of one symmetric (Hermitian) matrix, its lower triangle; complex entries
    are sized by |re| + |im| as LAPACK's. Returns (LD with the upper triangle zeroed, 1-based
    pivots, info)."""
    a = np.tril(m).astype(m.dtype, copy=True)
    n = a.shape[0]
    cplx = a.dtype.kind == "c"
    herm = herm and cplx
    size = (lambda x: np.abs(np.real(x)) + np.abs(np.imag(x))) if cplx else np.abs
    cj = np.conj if herm else (lambda x: x)
    if herm:
        a[np.diag_indices(n)] = a.diagonal().real
    piv = np.zeros(n, np.int32)
    info = 0
    k = 0
    while k < n:
        kstep = 1
        absakk = abs(a[k, k].real) if herm else size(a[k, k])
        if k < n - 1:
            imax = k + 1 + int(np.argmax(size(a[k + 1:, k])))
            colmax = size(a[imax, k])
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0 or np.isnan(absakk):
            if info == 0:
                info = k + 1
            kp = k
        else:
            if absakk >= _BK_ALPHA * colmax:
                kp = k
            else:
                rowmax = size(a[imax, k:imax]).max()
                if imax < n - 1:
                    rowmax = max(rowmax, size(a[imax + 1:, imax]).max())
                if absakk >= _BK_ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif (abs(a[imax, imax].real) if herm else size(a[imax, imax])) >= (
                        _BK_ALPHA * rowmax):
                    kp = imax
                else:
                    kp, kstep = imax, 2
            kk = k + kstep - 1
            if kp != kk:  # swap rows and columns kk and kp of the trailing lower triangle
                if kp < n - 1:
                    a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
                seg = a[kk + 1:kp, kk].copy()
                a[kk + 1:kp, kk] = cj(a[kp, kk + 1:kp])
                a[kp, kk + 1:kp] = cj(seg)
                a[kp, kk] = cj(a[kp, kk])
                a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
                if kstep == 2:
                    a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]
            if kstep == 1:
                if k < n - 1:
                    r1 = 1.0 / a[k, k]
                    x = a[k + 1:, k].copy()
                    a[k + 1:, k + 1:] += np.tril(np.outer(x, -r1 * cj(x)))
                    a[k + 1:, k] = x * r1
            elif k < n - 2:
                d21 = a[k + 1, k]
                scale = abs(d21) if herm else d21
                d11 = a[k + 1, k + 1] / scale
                d22 = a[k, k] / scale
                t = 1.0 / (d11 * d22 - 1.0)
                u21 = d21 / scale if herm else 1.0
                d21 = t / scale
                for j in range(k + 2, n):
                    wk = d21 * (d11 * a[j, k] - u21 * a[j, k + 1])
                    wkp1 = d21 * (d22 * a[j, k + 1] - cj(u21) * a[j, k])
                    a[j:, j] -= a[j:, k] * cj(wk) + a[j:, k + 1] * cj(wkp1)
                    a[j, k] = wk
                    a[j, k + 1] = wkp1
                    if herm:
                        a[j, j] = a[j, j].real
        if kstep == 1:
            piv[k] = kp + 1
        else:
            piv[k] = piv[k + 1] = -(kp + 1)
        k += kstep
    return a, piv, info


def _sytrs_lower(a: Any, piv: Any, b: Any, herm: bool = False) -> None:
    """LAPACK sytrs (uplo 'L'; ``herm``: hetrs): overwrite ``b`` (n, k) with A^-1 b from
    ``_sytf2_lower``'s factors."""
    herm = herm and a.dtype.kind == "c"
    cj = np.conj if herm else (lambda x: x)
    n = a.shape[0]
    k = 0
    while k < n:  # L D y = P^T b
        if piv[k] > 0:
            kp = piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            b[k + 1:] -= np.outer(a[k + 1:, k], b[k])
            b[k] /= a[k, k]
            k += 1
        else:
            kp = -piv[k] - 1
            b[[k + 1, kp]] = b[[kp, k + 1]]
            if k < n - 2:
                b[k + 2:] -= np.outer(a[k + 2:, k], b[k]) + np.outer(a[k + 2:, k + 1], b[k + 1])
            akm1k = a[k + 1, k]
            akm1 = a[k, k] / cj(akm1k)
            ak = a[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1.0
            bkm1 = b[k] / cj(akm1k)
            bk = b[k + 1] / akm1k
            b[k] = (ak * bkm1 - bk) / denom
            b[k + 1] = (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:  # L^T P^T x = y (L^H when ``herm``)
        if piv[k] > 0:
            if k < n - 1:
                b[k] -= cj(a[k + 1:, k]) @ b[k + 1:]
            kp = piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 1
        else:
            if k < n - 1:
                b[k] -= cj(a[k + 1:, k]) @ b[k + 1:]
                b[k - 1] -= cj(a[k + 1:, k - 1]) @ b[k + 1:]
            kp = -piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 2
