"""Linear algebra, the matrix functions of ``torch.linalg`` and their ``torch`` names: inverse,
det, slogdet/logdet, solve, cholesky, qr and svd (and pinverse), eigh/eigvalsh and svdvals (the op
classes ``ember.linalg`` builds on), matrix_power and matrix_norm; ``LinAlgError``. qr has no
derivative for mode 'r' (as in PyTorch).

Neighbours: ``blas.py`` (the matmul family), ``other_matrix.py`` (einsum, triangles, diagonals,
cross), ``reduction_stats.py`` (vector_norm); the public ``torch.linalg`` namespace is
``ember/linalg.py``; shared argument checks in ``_matrix.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._tensor_base import TensorBase, wrap_dim
from ..autograd.function import Op
from . import pointwise_piecewise as _pp
from . import return_types
from ._autocast import cast as _amp_cast
from ._autocast import flag as _amp
from ._matrix import _broadcast_batch, _const, _is_low, _legacy, _result, _shape, _tensor
from ._promote import conjugated
from .blas import Matmul, matmul
from .creation import eye, zeros_like
from .other_matrix import Tril, Triu
from .reduction_stats import vector_norm

__all__ = [
    "inverse",
    "det",
    "logdet",
    "slogdet",
    "cholesky",
    "qr",
    "svd",
    "pinverse",
    "matrix_power",
]


# ---------------------------------------------------------------------------------------------
# inverse, determinants, solve (the matrix functions with cheap derivatives)


def inverse(input: Any, *, out: Any = None) -> Any:
    """The inverse of a square matrix (or of each matrix in a batch)."""
    if _amp.active:
        (input,) = _amp_cast("inverse", input)
    x = _tensor(input, "inverse", "input", 1)
    _check_float("linalg.inv", x)
    _check_square("linalg.inv", x)
    return _result(Inverse.apply(x), out, "inverse")


def det(input: Any) -> Any:
    """The determinant of a square matrix (or of each matrix in a batch)."""
    x = _tensor(input, "det", "input", 1)
    _check_float("linalg.det", x)
    _check_square("linalg.det", x)
    return Det.apply(x)


def slogdet(input: Any, *, out: Any = None) -> Any:
    """(sign, log|det|) of a square matrix (or each in a batch): log|det| stays finite."""
    if out is not None:
        return _result(slogdet(input), out, "slogdet")
    x = _tensor(input, "slogdet", "input", 1)
    _check_float("linalg.slogdet", x)
    _check_square("linalg.slogdet", x)
    sign, logabs = Slogdet.apply(x)
    return return_types.slogdet(sign, logabs)


def logdet(input: Any) -> Any:
    """log det(A): -inf for a singular matrix, nan for a negative determinant; complex A: the
    principal log, log|det| + i arg(det)."""
    sign, logabs = slogdet(input)
    if sign._data.dtype.kind == "c":  # a singular matrix: -inf+nanj, as PyTorch's
        return _pp.where(sign == 0, complex(-math.inf, math.nan), logabs + 1j * sign.angle())
    return _pp.where(sign < 0, float("nan"), logabs)


def solve(A: Any, B: Any, *, left: bool = True, out: Any = None) -> Any:
    """X with A @ X = B (``left=False``: X @ A = B); B is a vector, a matrix or a batch of them."""
    if _amp.active:
        A, B = _amp_cast("solve", A, B)
    a = _tensor(A, "linalg.solve", "A", 1)
    b = _tensor(B, "linalg.solve", "B", 2)
    _check_float("linalg.solve", a)
    _check_square("linalg.solve", a)
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
            f"{_legacy(a)} and B of type {_legacy(b)} instead; convert "
            "one first, e.g. B.to(A.dtype)"
        )
    sa, sb = _shape(a), _shape(b)
    vector = _solve_is_vector(sa, sb)
    if not left:
        a = a.mT
    bm = b.unsqueeze(-1) if vector else b
    if not vector and not left:
        bm = bm.mT
    smat = _shape(bm)
    if len(smat) < 2 or smat[-2] != sa[-1]:
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({sa[-2]}x{sa[-1]} and "
            f"{'x'.join(str(v) for v in (sb[-2:] if not vector else sb[-1:]))}) (shapes {sa} and "
            f"{sb})"
        )
    _broadcast_batch("linalg.solve", sa[:-2], smat[:-2], sa, sb)
    x = Solve.apply(a, bm)
    if vector:
        x = x.squeeze(-1)
    elif not left:
        x = x.mT
    return _result(x, out, "linalg.solve")


def cholesky(input: Any, upper: bool = False, *, out: Any = None) -> Any:
    """The Cholesky factor L (lower; U = L^H with ``upper``) of a Hermitian (real: symmetric)
    positive-definite A."""
    if _amp.active:
        (input,) = _amp_cast("cholesky", input)
    a = _tensor(input, "linalg.cholesky", "A", 1)
    _check_float("linalg.cholesky", a)
    _check_square("linalg.cholesky", a)
    low = Cholesky.apply(a)
    return _result(low.mH if upper else low, out, "cholesky")


class LinAlgError(RuntimeError):
    """A linear-algebra routine could not complete (singular or not positive-definite input)."""


class Inverse(Op):
    """out = A^-1          grad_A = -out^H @ grad @ out^H  (^H: conjugate transpose; ^T if real)"""

    node_name = "LinalgInvExBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any) -> Any:
        xp = ctx.xp
        out = _lapack("linalg.inv", lambda: xp.linalg.inv(a), a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (inv,) = ctx.saved
        it = _mh(inv)
        return -_mm(ctx, _mm(ctx, it, grad), it)


class Det(Op):
    """out = det(A)          grad_A = grad * conj(det(A)) * A^-H  (the cofactor matrix; via the SVD
    A = U S V^H as conj(det(U) det(V^H)) U diag(prod_{j != i} s_j) V^H, so singular A works too)"""

    node_name = "LinalgDetBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any) -> Any:
        xp = ctx.xp
        out = xp.asarray(xp.linalg.det(a))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, det = ctx.saved
        shape = tuple(grad.shape) + (1, 1)
        if isinstance(a, TensorBase):  # create_graph: differentiable form (A invertible)
            inv_t = _mh(ctx.call(Inverse, a))
            return (grad * (det.conj() if _kind(det) == "c" else det)).reshape(shape) * inv_t
        xp = ctx.xp
        if a.shape[-1] == 0:
            return xp.zeros(a.shape, dtype=a.dtype)
        if not bool(xp.isfinite(a).all()):  # PyTorch's gradient is nan there, not an error
            return xp.full(a.shape, xp.nan, dtype=a.dtype)
        u, s, vh = _lapack("linalg.det", lambda: xp.linalg.svd(a), a)
        sign = xp.linalg.det(u) * xp.linalg.det(vh)
        sign = xp.conj(sign) if sign.dtype.kind == "c" else sign
        cof = (u * _prod_except(xp, s)[..., None, :]) @ vh
        return (grad * sign).reshape(shape) * cof


class Slogdet(Op):
    """(sign, logabsdet) = slogdet(A)          grad_A = grad_logabsdet * A^-T  (real A: sign has
    no gradient); complex A: grad_A = (grad_logabsdet + i Im(grad_sign conj(sign))) * A^-H (the
    gradient of log det = log|det| + i arg det, holomorphic)"""

    node_name = "LinalgSlogdetBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any) -> Any:
        xp = ctx.xp
        sign, logabs = xp.linalg.slogdet(a)
        sign, logabs = xp.asarray(sign), xp.asarray(logabs)
        ctx.save_for_backward(a, sign)
        if a.dtype.kind != "c":
            ctx.mark_non_differentiable(sign)
        return sign, logabs

    @staticmethod
    def backward(ctx: Any, gsign: Any, glog: Any) -> Any:
        a, sign = ctx.saved
        inv_t = _mh(ctx.call(Inverse, a))
        if _kind(a) == "c" and gsign is not None:
            glog = glog + 1j * (gsign * sign.conj()).imag
        return glog.reshape(tuple(glog.shape) + (1, 1)) * inv_t


class Solve(Op):
    """X = A^-1 B  (B: (*, n, k))          grad_B = A^-H grad          grad_A = -grad_B X^H"""

    node_name = "LinalgSolveExBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        xp = ctx.xp
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        aa = xp.broadcast_to(a, batch + a.shape[-2:])
        bb = xp.broadcast_to(b, batch + b.shape[-2:])
        x = _lapack("linalg.solve", lambda: xp.linalg.solve(aa, bb), a)
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, x = ctx.saved
        need = ctx.needs_input_grad
        gb = ctx.call(Solve, _mh(a), grad)
        ga = -_mm(ctx, gb, _mh(x)) if need[0] else None
        return ga, (gb if need[1] else None)


class Cholesky(Op):
    """L = cholesky(A), A = L L^H
    grad_A = L^-H Phi(L^H grad) L^-1, Phi(P) = (S + S^H + diag(P)) / 2 with S the strict lower
    triangle of P (^H: conjugate transpose; ^T for real A). For complex A, diag(P) may be
    complex: the skew-Hermitian part of PyTorch's gradient, kept as PyTorch keeps it"""

    node_name = "LinalgCholeskyExBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any) -> Any:
        xp = ctx.xp
        try:
            low = xp.linalg.cholesky(a)
        except Exception as e:  # numpy.linalg.LinAlgError
            if type(e).__name__ != "LinAlgError":
                raise
            i, order = _chol_order(a)
            where = f"(Batch element {i}): " if a.ndim > 2 else ""
            raise LinAlgError(
                f"linalg.cholesky: {where}The factorization could not be completed because the "
                f"input is not positive-definite (the leading minor of order {order} is not "
                f"positive-definite). Input shape {tuple(a.shape)}: check that A is symmetric "
                "positive-definite; adding a small multiple of the identity often helps"
            ) from None
        ctx.save_for_backward(low)
        return low

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (low,) = ctx.saved
        p = _mm(ctx, _mh(low), grad)
        strict = ctx.call(Tril, p, -1)
        phi = 0.5 * (strict + _mh(strict) + ctx.call(Triu, ctx.call(Tril, p, 0), 0))
        inv = ctx.call(Inverse, low)
        return _mm(ctx, _mm(ctx, _mh(inv), phi), inv)


def _check_square(fn: str, x: Any, what: str = "A") -> None:
    s = _shape(x)
    if len(s) < 2 or s[-1] != s[-2]:
        raise RuntimeError(
            f"{fn}: {what} must be batches of square matrices, but they are "
            f"{s[-2] if len(s) > 1 else 1} by {s[-1] if s else 1} matrices (shape {s})"
        )


def _check_float(fn: str, x: Any) -> None:
    k = x._data.dtype
    if k.kind not in "fcV":
        raise RuntimeError(
            f"{fn}: Expected a floating point or complex tensor as input. Got "
            f"{_legacy(x)}; convert first, e.g. A.double() or A.float()"
        )
    if _is_low(k):
        raise RuntimeError(
            f"{fn}: Low precision dtypes not supported. Got {_legacy(x)}; use "
            "A.float() (and convert the result back if needed)"
        )


def _lapack(fn: str, call: Any, x: Any) -> Any:
    """Run a NumPy/CuPy linalg routine, turning its LinAlgError into ember's (PyTorch's message,
    then the shape and a way out): NumPy's exception class never leaks."""
    try:
        return call()
    except Exception as e:  # numpy.linalg.LinAlgError / cupy's
        if type(e).__name__ != "LinAlgError":
            raise
        if "singular" not in str(e).lower():
            if not bool(np.isfinite(_host(x)).all()):
                raise LinAlgError(
                    f"{fn}: The algorithm failed to converge because the input matrix contained "
                    f"non-finite values. (input shape {tuple(x.shape)})") from None
            raise LinAlgError(f"{fn}: {e} (input shape {tuple(x.shape)})") from None
    from ._matrix import _lu_raw

    info = np.asarray(_lu_raw(np, _host(x))[2]).reshape(-1)
    bad = np.flatnonzero(info > 0)
    i = int(bad[0]) if bad.size else 0
    where = f"(Batch element {i}): " if x.ndim > 2 else ""
    if fn == "linalg.inv":
        what = (f"The diagonal element {int(info[i]) if bad.size else 1} is zero, the inversion "
                "could not be completed because the input matrix is singular.")
    else:
        fn = "torch." + fn if fn.startswith("linalg.") else fn
        what = "The solver failed because the input matrix is singular."
    raise LinAlgError(
        f"{fn}: {where}{what} (input shape {tuple(x.shape)}; use torch.linalg.pinv / lstsq for "
        "a least-squares answer, or regularise it: A + eps * I)"
    ) from None


def _chol_order(a: Any) -> tuple:
    """(batch element, order) of the first leading minor that is not positive-definite."""
    flat = _host(a).reshape((-1,) + tuple(a.shape[-2:]))
    for i, m in enumerate(flat):
        for order in range(1, m.shape[-1] + 1):
            try:
                np.linalg.cholesky(m[:order, :order])
            except np.linalg.LinAlgError:
                return i, order
    return 0, 1


def _host(x: Any) -> Any:
    """A NumPy copy of a NumPy/CuPy array (for an error message's details)."""
    return np.asarray(x.get() if hasattr(x, "get") else x)


def _prod_except(xp: Any, s: Any) -> Any:
    """p[..., i] = prod_{j != i} s[..., j], without dividing (s may hold zeros)."""
    n = s.shape[-1]
    ones = xp.ones(s.shape[:-1] + (1,), dtype=s.dtype)
    left = xp.concatenate([ones, xp.cumprod(s[..., : n - 1], axis=-1)], axis=-1)
    right = xp.concatenate([xp.cumprod(s[..., :0:-1], axis=-1)[..., ::-1], ones], axis=-1)
    return left * right


def _solve_is_vector(sa: tuple, sb: tuple) -> bool:
    """PyTorch's rule: B is a (batch of) vector(s) when it is 1-D or has A's shape minus one dim."""
    return len(sb) == 1 or (len(sb) == len(sa) - 1 and sb == sa[:-1])


# ---------------------------------------------------------------------------------------------
# the decompositions: qr, svd, eigh, pinv (and their torch names)


def qr(input: Any, some: bool = True, *, out: Any = None) -> Any:
    """(Q, R) with A = Q R (reduced when ``some``); prefer torch.linalg.qr."""
    if out is not None:
        return _result(qr(input, some=some), out, "qr")
    if _amp.active:
        (input,) = _amp_cast("qr", input)
    a = _tensor(input, "qr", "input", 1)
    _check_decomposable("linalg.qr", a)
    q, r = Qr.apply(a, "reduced" if some else "complete")
    return return_types.qr(q, r)


def svd(input: Any, some: bool = True, compute_uv: bool = True, *, out: Any = None) -> Any:
    """(U, S, V) with A = U diag(S) V^T (note: V, not Vh); prefer torch.linalg.svd."""
    if out is not None:
        return _result(svd(input, some=some, compute_uv=compute_uv), out, "svd")
    if _amp.active:
        (input,) = _amp_cast("svd", input)
    a = _tensor(input, "svd", "input", 1)
    _check_decomposable("linalg.svd", a)
    u, s, vh = Svd.apply(a, not some)
    if not compute_uv:
        return return_types.svd(zeros_like(u), s, zeros_like(vh.mT))
    return return_types.svd(u, s, vh.mT)


def pinverse(input: Any, rcond: float = 1e-15) -> Any:
    """The Moore-Penrose pseudo-inverse; prefer torch.linalg.pinv."""
    if _amp.active:
        (input,) = _amp_cast("pinverse", input)
    a = _tensor(input, "pinverse", "input", 1)
    _check_decomposable("linalg.pinv", a)
    return Pinv.apply(a, rcond, False)


class Qr(Op):
    """(Q, R) = qr(A), A = Q R (m >= n; a wide A = Q [X | Y] differentiates X's part and Y = Q V)
    grad_A = Q (gR + tril(K) R^-T) + (gQ - Q Q^T gQ) R^-T, K = Q^T gQ - gQ^T Q + R gR^T - gR R^T
    (mode 'r', and 'complete' with m > n, have no derivative, as in PyTorch)"""

    node_name = "LinalgQrBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, mode: str) -> Any:
        xp = ctx.xp
        ctx.mode = mode
        if mode == "r":
            r = _lapack("linalg.qr", lambda: xp.linalg.qr(a, mode="r"), a)
            return xp.zeros((0,), dtype=a.dtype), r
        q, r = _lapack("linalg.qr", lambda: xp.linalg.qr(a, mode=mode), a)
        ctx.save_for_backward(q, r)
        return q, r

    @staticmethod
    def backward(ctx: Any, gq: Any, gr: Any) -> Any:
        if ctx.mode == "r":
            raise RuntimeError(
                "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                "through linalg.qr.")
        q, r = ctx.saved
        m, n = q.shape[-2], r.shape[-1]
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                               "and nrows > ncols.")
        if m >= n:
            return _qr_grad(ctx, q, r, gq, gr), None
        u, v = r[..., :m], r[..., m:]
        gu, gv = gr[..., :m], gr[..., m:]
        y = _mm(ctx, q, v)
        gx = _qr_grad(ctx, q, u, gq + _mm(ctx, y, _mh(gv)), gu)
        gy = _mm(ctx, q, gv)
        if isinstance(gx, TensorBase):
            from .joining import cat

            return cat([gx, gy], -1), None
        return ctx.xp.concatenate([gx, gy], axis=-1), None


class Svd(Op):
    """(U, S, Vh) = svd(A), A = U diag(S) Vh  (reduced; full_matrices uses the first k columns)
    grad_A = U [ (skew(U^T gU) S + S skew(V^T gV)) / E + diag(gS) ] Vh, E_ij = S_j^2 - S_i^2,
    skew(X) = X - X^T, plus the parts of gU (m > n) or gV (m < n) outside the column spaces:
    (I - U U^T) gU S^-1 Vh and U S^-1 gV^T (I - V V^T). Finite for distinct S only."""

    node_name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, full_matrices: bool) -> Any:
        u, s, vh = _lapack("linalg.svd", lambda: ctx.xp.linalg.svd(
            a, full_matrices=full_matrices), a)
        ctx.save_for_backward(u, s, vh)
        ctx.set_materialize_grads(False)
        ctx.full = full_matrices
        return u, s, vh

    @staticmethod
    def backward(ctx: Any, gu: Any, gs: Any, gvh: Any) -> Any:
        u, s, vh = ctx.saved
        if gu is None and gs is None and gvh is None:
            return None, None
        k = s.shape[-1]
        if ctx.full:
            u, vh = u[..., :k], vh[..., :k, :]
            gu = gu[..., :k] if gu is not None else None
            gvh = gvh[..., :k, :] if gvh is not None else None
        m, n = u.shape[-2], vh.shape[-1]
        if gu is None and gvh is None:  # singular values only
            return _mm(ctx, u * _row(gs), vh), None
        eye = _eye_like(s)
        v = _mh(vh)
        s2 = s * s
        e = _row(s2) - _col(s2) + eye  # 1 on the diagonal, where the numerators are 0
        num = None
        if gu is not None:
            uhgu = _mm(ctx, _mh(u), gu)
            num = (uhgu - _mh(uhgu)) * _row(s)
        if gvh is not None:
            gv = _mh(gvh)
            vhgv = _mm(ctx, vh, gv)
            term = _col(s) * (vhgv - _mh(vhgv))
            num = term if num is None else num + term
        inner = num / e
        if _kind(u) == "c":  # the phase of each pair (u_i, v_i): PyTorch's gauge, Im diag / s
            x = uhgu if gu is not None else -vhgv
            inner = inner + eye * (1j * (x * eye).sum(-1).imag / s).reshape(
                tuple(s.shape[:-1]) + (1, k))
        if gs is not None:
            inner = inner + eye * _row(gs)
        if m > n and gu is not None:
            ga = _mm(ctx, u, inner)
            gus = gu / _row(s)
            ga = ga + gus - _mm(ctx, u, _mm(ctx, _mh(u), gus))
            return _mm(ctx, ga, vh), None
        if m < n and gvh is not None:
            ga = _mm(ctx, inner, vh)
            gvs = gv / _row(s)
            rest = gvs - _mm(ctx, v, _mm(ctx, vh, gvs))
            return _mm(ctx, u, ga + _mh(rest)), None
        return _mm(ctx, u, _mm(ctx, inner, vh)), None


class Svdvals(Op):
    """S = the singular values of A, descending          grad_A = U diag(gS) Vh"""

    node_name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any) -> Any:
        xp = ctx.xp
        need = getattr(ctx, "needs_input_grad", None)
        if not need or not need[0]:
            return _lapack("linalg.svdvals", lambda: xp.linalg.svd(a, compute_uv=False), a)
        u, s, vh = _lapack("linalg.svdvals", lambda: xp.linalg.svd(a, full_matrices=False), a)
        ctx.save_for_backward(a, u, vh)
        return s

    @staticmethod
    def backward(ctx: Any, gs: Any) -> Any:
        a, u, vh = ctx.saved
        if isinstance(gs, TensorBase):  # under create_graph: U, Vh carry their dependence on A
            u, _, vh = ctx.call(Svd, a, False)
        return _mm(ctx, u * _row(gs), vh)


class Eigh(Op):
    """(L, V) = eigh(A), A = V diag(L) V^T for symmetric A
    grad_A = V (diag(gL) + F o (X - X^T) / 2) V^T, X = V^T gV, F_ij = 1 / (L_j - L_i) (i != j),
    F_ii = 0: symmetric, as PyTorch's. Finite for distinct eigenvalues only."""

    node_name = "LinalgEighBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, uplo: str) -> Any:
        w, v = _lapack("linalg.eigh", lambda: ctx.xp.linalg.eigh(a, UPLO=uplo), a)
        ctx.save_for_backward(w, v)
        ctx.set_materialize_grads(False)
        return w, v

    @staticmethod
    def backward(ctx: Any, gw: Any, gv: Any) -> Any:
        w, v = ctx.saved
        vt = _mh(v)
        if gv is None:
            if gw is None:
                return None, None
            return _mm(ctx, v * _row(gw), vt), None
        eye = _eye_like(w)
        f = 1.0 / (_row(w) - _col(w) + eye) - eye
        x = _mm(ctx, vt, gv)
        inner = f * (0.5 * (x - _mh(x)))
        if gw is not None:
            inner = inner + eye * _row(gw)
        return _mm(ctx, _mm(ctx, v, inner), vt), None


class Eigvalsh(Op):
    """L = the eigenvalues of symmetric A, ascending          grad_A = V diag(gL) V^T"""

    node_name = "LinalgEighBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, uplo: str) -> Any:
        xp = ctx.xp
        need = getattr(ctx, "needs_input_grad", None)
        if not need or not need[0]:
            return _lapack("linalg.eigvalsh", lambda: xp.linalg.eigvalsh(a, UPLO=uplo), a)
        w, v = _lapack("linalg.eigvalsh", lambda: xp.linalg.eigh(a, UPLO=uplo), a)
        ctx.save_for_backward(a, v)
        ctx.uplo = uplo
        return w

    @staticmethod
    def backward(ctx: Any, gw: Any) -> Any:
        a, v = ctx.saved
        if isinstance(gw, TensorBase):  # under create_graph: V carries its dependence on A
            _, v = ctx.call(Eigh, a, ctx.uplo)
        return _mm(ctx, v * _row(gw), _mh(v)), None


class Pinv(Op):
    """P = A^+ (the Moore-Penrose pseudo-inverse)
    grad_A = -P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A)  (G = grad; valid where the
    rank of A does not change)"""

    node_name = "LinalgPinvBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, rtol: float, hermitian: bool) -> Any:
        xp = ctx.xp
        if hermitian:  # CuPy's pinv has no `hermitian`; the result is the same without it
            out = _lapack("linalg.pinv", lambda: xp.linalg.pinv(a, rcond=rtol, hermitian=True), a)
        else:
            out = _lapack("linalg.pinv", lambda: xp.linalg.pinv(a, rcond=rtol), a)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        a, p = ctx.saved

        def mm(x: Any, y: Any) -> Any:
            return _mm(ctx, x, y)

        pt, gt = _mh(p), _mh(g)
        term1 = -mm(mm(pt, g), pt)
        gt_ppt = mm(gt, mm(p, pt))
        term2 = gt_ppt - mm(a, mm(p, gt_ppt))  # (I - A P) G^T P P^T
        ptp_gt = mm(mm(pt, p), gt)
        term3 = ptp_gt - mm(mm(ptp_gt, p), a)  # P^T P G^T (I - P A)
        return term1 + term2 + term3, None, None


def _qr_grad(ctx: Any, q: Any, r: Any, gq: Any, gr: Any) -> Any:
    """The QR derivative for a tall or square A = Q R (R square, invertible)."""
    def mm(x: Any, y: Any) -> Any:
        return _mm(ctx, x, y)

    def r_inv_t(x: Any) -> Any:  # x R^-H = (R^-1 x^H)^H
        return _mh(ctx.call(Solve, r, _mh(x)))

    qdq = mm(_mh(q), gq)
    rdr = mm(r, _mh(gr))
    k = qdq - _mh(qdq) + rdr - _mh(rdr)
    low = ctx.call(Tril, k, -1)
    if _kind(k) == "c":  # the diagonal of K is imaginary; half of it, as R's diagonal is real
        low = low + 0.5 * k * _eye_like(k[..., 0, :])
    return mm(q, gr + r_inv_t(low)) + r_inv_t(gq - mm(q, qdq))


def _kind(x: Any) -> str:
    """The NumPy kind of an array's or a tensor's dtype ("c": complex)."""
    return (x._data if isinstance(x, TensorBase) else x).dtype.kind


def _mm(ctx: Any, x: Any, y: Any) -> Any:
    """x @ y inside a backward rule (recorded under ``create_graph``): the complex Matmul
    (``conjugated``: PyTorch's conjugate Wirtinger gradient) when an operand is complex."""
    return ctx.call(conjugated(Matmul) if "c" in (_kind(x), _kind(y)) else Matmul, x, y)


def _mh(x: Any) -> Any:
    """The conjugate transpose of the last two dims (the transpose for real ``x``)."""
    t = x.swapaxes(-1, -2)
    return t.conj() if _kind(x) == "c" else t


def _row(v: Any) -> Any:
    """(..., k) -> (..., 1, k)"""
    return v.reshape(tuple(v.shape[:-1]) + (1, v.shape[-1]))


def _col(v: Any) -> Any:
    """(..., k) -> (..., k, 1)"""
    return v.reshape(tuple(v.shape) + (1,))


def _eye_like(v: Any) -> Any:
    """The k x k identity for a (..., k) array or tensor ``v``."""
    return _const(v, lambda xp, dt, k=v.shape[-1]: xp.eye(k, dtype=dt))


def _check_decomposable(fn: str, x: Any) -> None:
    _check_float(fn, x)
    if x._data.ndim < 2:
        raise RuntimeError(
            f"{fn}: The input tensor A must have at least 2 dimensions (got shape {_shape(x)})"
        )


# ---------------------------------------------------------------------------------------------
# matrix norms and powers


def matrix_norm(input: Any, ord: Any = "fro", dim: tuple = (-2, -1), keepdim: bool = False, *,
                dtype: Any = None, out: Any = None) -> Any:
    """A matrix norm over the two dims ``dim``: 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2."""
    A = input
    a = _tensor(A, "linalg.matrix_norm", "A", 1)
    if dtype is not None:
        a = a.to(dtype)
    _check_float("linalg.matrix_norm", a)
    nd = a.ndim
    if nd < 2:
        raise RuntimeError(
            f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions (got shape "
            f"{tuple(a.shape)}); use torch.linalg.vector_norm for vectors"
        )
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    d0, d1 = wrap_dim(dim[0], nd), wrap_dim(dim[1], nd)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        res = vector_norm(a, 2, (d0, d1), keepdim)
    elif ord in ("nuc", 2, -2):
        s = Svdvals.apply(_move_to_end(a, d0, d1))
        r = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        res = _restore_dims(r, d0, d1, keepdim)
    elif ord in (math.inf, -math.inf, 1, -1):
        # inf: max over rows of the row sums |A|; 1: max over columns of the column sums
        inner, outer_ = (d1, d0) if ord in (math.inf, -math.inf) else (d0, d1)
        sums = a.abs().sum(inner, keepdim=True)
        r = sums.amax(outer_, keepdim=True) if ord > 0 else sums.amin(outer_, keepdim=True)
        res = r if keepdim else r.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    else:
        raise RuntimeError(
            f"linalg.matrix_norm: Order {ord} not supported; use 'fro', 'nuc', inf, -inf, 1, -1, "
            "2 or -2"
        )
    return _result(res, out, "linalg.matrix_norm")


def matrix_power(input: Any, n: int, *, out: Any = None) -> Any:
    """A^n for square matrices (batches allowed); n < 0 uses the inverse, n = 0 the identity."""
    if out is not None:
        return _result(matrix_power(input, n=n), out, "matrix_power")
    a = _tensor(input, "matrix_power", "input", 1)
    s = _shape(a)
    if len(s) < 2 or s[-1] != s[-2]:
        raise RuntimeError(
            f"linalg.matrix_power: A must be batches of square matrices, but they are "
            f"{s[-2] if len(s) > 1 else s[-1] if s else 1} by {s[-1] if s else 1} matrices "
            f"(shape {s})"
        )
    n = int(n)
    if n == 0:
        e = eye(s[-1], dtype=a.dtype, device=a.device)
        return e.expand(*s).clone() if len(s) > 2 else e
    if n < 0:
        a = inverse(a)
        n = -n
    result = None
    base = a
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def _move_to_end(a: Any, d0: int, d1: int) -> Any:
    return a.movedim((d0, d1), (-2, -1))


def _restore_dims(r: Any, d0: int, d1: int, keepdim: bool) -> Any:
    if keepdim:
        for d in sorted((d0, d1)):
            r = r.unsqueeze(d)
    return r
