"""``ember.linalg``: PyTorch's ``torch.linalg`` namespace.

Differentiable (also twice): matmul, multi_dot, vecdot, cross, diagonal, vector_norm,
matrix_norm, norm, inv, det, slogdet, solve, cholesky, matrix_power, svd, svdvals, eigh, eigvalsh,
pinv, qr (not mode='r'), lu_factor, lu, lu_solve, solve_triangular, matrix_exp, and eig/eigvals
(complex results, ``ops/linalg_eig.py``); complex inputs take conjugate-transposed rules. Without
a derivative, as in PyTorch: ldl_factor, ldl_solve. matrix_rank is an integer.
The gradients of svd and eigh are finite for distinct singular values / eigenvalues only, as in
PyTorch. The ops themselves live in ``ember/ops/linalg.py``, ``linalg_factor.py``, ``blas.py`` and
``other_matrix.py``.
"""

from __future__ import annotations

from typing import Any

from . import _dtype
from .ops import _matrix as _mx
from .ops import linalg as _la
from .ops import linalg_eig as _le
from .ops import linalg_factor as _lf
from .ops import other_matrix as _om
from .ops import return_types
from .ops._autocast import cast as _amp_cast
from .ops._autocast import flag as _amp
from .ops._promote import conjugated as _conjugated
from .ops.blas import Matmul as _Matmul
from .ops.blas import matmul
from .ops.linalg import (  # noqa: F401
    LinAlgError,
    matrix_norm,
    matrix_power,
    solve,
)
from .ops.linalg_factor import (  # noqa: F401
    householder_product,
    ldl_factor,
    ldl_factor_ex,
    ldl_solve,
    lu_factor,
    lu_factor_ex,
    matrix_exp,
    solve_triangular,
)

__all__ = [
    "LinAlgError",
    "matmul",
    "multi_dot",
    "vecdot",
    "cross",
    "diagonal",
    "vector_norm",
    "matrix_norm",
    "norm",
    "inv",
    "inv_ex",
    "det",
    "slogdet",
    "solve",
    "cholesky",
    "matrix_power",
    "qr",
    "svd",
    "svdvals",
    "eigh",
    "eigvalsh",
    "pinv",
    "matrix_rank",
    "solve_triangular",
    "solve_ex",
    "cholesky_ex",
    "vander",
    "matrix_exp",
    "cond",
    "tensorinv",
    "tensorsolve",
    "lstsq",
    "lu_factor",
    "lu_factor_ex",
    "lu",
    "lu_solve",
    "eig",
    "eigvals",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
    "householder_product",
]

lu = _lf.linalg_lu
lu_solve = _lf.linalg_lu_solve
eig = _le.linalg_eig
eigvals = _le.linalg_eigvals



def _t(x: Any, fn: str, arg: str = "A") -> Any:
    return _mx._tensor(x, fn, arg, 1)


def _square_float(fn: str, a: Any) -> Any:
    a = _t(a, fn)
    _la._check_float(fn, a)
    _la._check_square(fn, a)
    return a


def vector_norm(input: Any, ord: float = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None, out: Any = None) -> Any:
    """The vector ``ord``-norm of ``input`` over ``dim`` (all elements when None); ``x=`` is
    NumPy's name for it, as PyTorch's builtin takes."""
    from .ops.reduction_stats import vector_norm as _vector_norm

    res = _vector_norm(input, ord, dim, keepdim, dtype=dtype)
    return _mx._result(res, out, "linalg.vector_norm")


def norm(input: Any, ord: Any = None, dim: Any = None, keepdim: bool = False, *, out: Any = None,
         dtype: Any = None) -> Any:
    """A vector norm (1-D input or an int ``dim``) or a matrix norm (2-D input or two dims)."""
    A = input
    a = _t(A, "linalg.norm")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        dim = tuple(dim)
        if len(dim) == 1:
            if isinstance(ord, str):
                raise RuntimeError(
                    f"linalg.norm: If dim is specified, it mut be of length 1 or 2. Got {dim} "
                    f"with a matrix norm ord={ord!r}; pass two dims for a matrix norm"
                )
            return vector_norm(a, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
        if len(dim) == 2:
            return matrix_norm(a, "fro" if ord is None else ord, dim, keepdim, dtype=dtype,
                               out=out)
        raise RuntimeError(f"linalg.norm: If dim is specified, it mut be of length 1 or 2. Got {dim}")
    if ord is None:
        return vector_norm(a, 2, None, keepdim, dtype=dtype, out=out)
    if a.ndim == 1 and not isinstance(ord, str):
        return vector_norm(a, ord, None, keepdim, dtype=dtype, out=out)
    if a.ndim == 2:
        return matrix_norm(a, ord, (-2, -1), keepdim, dtype=dtype, out=out)
    raise RuntimeError(
        f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
        f"{a.ndim}D (shape {tuple(a.shape)}); pass dim="
    )


def multi_dot(tensors: Any, *, out: Any = None) -> Any:
    """The product of a chain of matrices (the first may be a row vector, the last a column)."""
    if _amp.active and out is None:
        (tensors,) = _amp_cast("linalg_multi_dot", tensors)
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, x in enumerate(ts):
        _t(x, "linalg.multi_dot", "tensors")
        ok = x.ndim == 2 or (x.ndim == 1 and i in (0, len(ts) - 1))
        if not ok:
            where = "first and last" if i in (0, len(ts) - 1) else "middle"
            raise RuntimeError(
                f"multi_dot(): tensor {i} must be 2D{' or 1D' if where != 'middle' else ''} but "
                f"got {x.ndim}D (shape {tuple(x.shape)})"
            )
    res = ts[0]
    for x in ts[1:]:
        res = matmul(res, x)
    return _mx._result(res, out, "linalg.multi_dot")


def vecdot(x: Any, y: Any, *, dim: int = -1, out: Any = None) -> Any:
    """sum(conj(x) * y) over ``dim`` (broadcasting), the batched dot product (x conjugated
    when complex, as PyTorch)."""
    if _amp.active and out is None:
        x, y = _amp_cast("linalg_vecdot", x, y)
    x = _t(x, "linalg.vecdot", "x")
    y = _t(y, "linalg.vecdot", "y")
    return _mx._result(((x.conj() if x.is_complex() else x) * y).sum(dim), out, "linalg.vecdot")


def cross(input: Any, other: Any, *, dim: int = -1, out: Any = None) -> Any:
    """Cross product of 3-vectors along ``dim`` (default the last), broadcasting the rest."""
    return _mx._result(_om._cross("linalg.cross", input, other, dim), out, "linalg.cross")


def diagonal(A: Any, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Any:
    """The ``offset`` diagonal of each matrix (default: over the last two dims)."""
    return _om.diagonal(A, offset, dim1, dim2)


def inv(A: Any, *, out: Any = None) -> Any:
    """The inverse of a square matrix (or of each in a batch); LinAlgError when singular."""
    if _amp.active:
        (A,) = _amp_cast("inv", A)
    return _la.inverse(A, out=out)


def inv_ex(A: Any, *, check_errors: bool = False, out: Any = None) -> Any:
    """(inverse, info): the inverse and LAPACK's error code per matrix (the 1-based index of a
    zero pivot, 0 when none); a singular matrix gives inf/nan there, or raises with
    ``check_errors``."""
    if out is not None:
        return _mx._result(inv_ex(A, check_errors=check_errors), out, "linalg.inv_ex")
    if _amp.active:
        (A,) = _amp_cast("inv_ex", A)
    from .ops.creation import zeros

    try:
        res = _la.inverse(A)
    except _la.LinAlgError:
        if check_errors:
            raise
        lu_, piv, info = lu_factor_ex(A)
        eye = _om.diag_embed(_om.diagonal(lu_, 0, -2, -1) * 0 + 1)
        return return_types.linalg_inv_ex(_lf.linalg_lu_solve(lu_, piv, eye), info)
    info = zeros(tuple(res.shape[:-2]), dtype=_dtype.int32, device=res.device)
    return return_types.linalg_inv_ex(res, info)


def det(A: Any, *, out: Any = None) -> Any:
    """The determinant of a square matrix (or of each in a batch)."""
    return _mx._result(_la.det(A), out, "linalg.det")


def slogdet(A: Any, *, out: Any = None) -> Any:
    """(sign, log|det|) of a square matrix (or of each in a batch)."""
    if out is not None:
        return _mx._result(slogdet(A), out, "linalg.slogdet")
    sign, logabs = _la.slogdet(A)
    return return_types.linalg_slogdet(sign, logabs)


def qr(A: Any, mode: str = "reduced", *, out: Any = None) -> Any:
    """(Q, R) with A = Q R; ``mode`` 'reduced', 'complete' or 'r' (Q empty). No derivative yet."""
    if out is not None:
        return _mx._result(qr(A, mode=mode), out, "linalg.qr")
    if _amp.active:
        (A,) = _amp_cast("linalg_qr", A)
    a = _t(A, "linalg.qr")
    _la._check_decomposable("linalg.qr", a)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
            "'r', or 'complete'"
        )
    q, r = _la.Qr.apply(a, mode)
    return return_types.linalg_qr(q, r)


def svd(A: Any, full_matrices: bool = True, *, driver: Any = None, out: Any = None) -> Any:
    """(U, S, Vh) with A = U diag(S) Vh, S descending (the columns' signs are LAPACK's)."""
    if out is not None:
        res = svd(A, full_matrices=full_matrices, driver=driver)
        return _mx._result(res, out, "linalg.svd")
    if _amp.active:
        (A,) = _amp_cast("linalg_svd", A)
    a = _t(A, "linalg.svd")
    _la._check_decomposable("linalg.svd", a)
    u, s, vh = _la.Svd.apply(a, bool(full_matrices))
    return return_types.linalg_svd(u, s, vh)


def svdvals(A: Any, *, driver: Any = None, out: Any = None) -> Any:
    """The singular values of A, descending."""
    if _amp.active:
        (A,) = _amp_cast("svdvals", A)
    a = _t(A, "linalg.svdvals")
    _la._check_decomposable("linalg.svdvals", a)
    return _mx._result(_la.Svdvals.apply(a), out, "linalg.svdvals")


def _check_uplo(fn: str, uplo: str) -> str:
    if uplo not in ("L", "U"):
        raise RuntimeError(f"{fn}: Expected UPLO argument to be 'L' or 'U', but got {uplo}")
    return uplo


def eigh(input: Any, UPLO: str = "L", *, out: Any = None) -> Any:
    """(eigenvalues ascending, eigenvectors) of a symmetric matrix (reads the UPLO triangle)."""
    if out is not None:
        return _mx._result(eigh(input, UPLO=UPLO), out, "linalg.eigh")
    A = input
    if _amp.active:
        (A,) = _amp_cast("eigh", A)
    a = _square_float("linalg.eigh", A)
    w, v = _la.Eigh.apply(a, _check_uplo("linalg.eigh", UPLO))
    return return_types.linalg_eigh(w, v)


def eigvalsh(input: Any, UPLO: str = "L", *, out: Any = None) -> Any:
    """The eigenvalues of a symmetric matrix, ascending."""
    A = input
    if _amp.active:
        (A,) = _amp_cast("eigvalsh", A)
    a = _square_float("linalg.eigvalsh", A)
    res = _la.Eigvalsh.apply(a, _check_uplo("linalg.eigvalsh", UPLO))
    return _mx._result(res, out, "linalg.eigvalsh")


def pinv(input: Any, rcond: Any = None, hermitian: bool = False, *, atol: Any = None,
         rtol: Any = None, out: Any = None) -> Any:
    """The Moore-Penrose pseudo-inverse (singular values below rtol * max are dropped).

    ``rcond`` is PyTorch's older name for ``rtol`` (its positional overload).
    """
    A = input
    if rcond is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg.pinv(): give rcond, or atol=/rtol=, not both")
        rtol = rcond
    a = _t(A, "linalg.pinv")
    _la._check_decomposable("linalg.pinv", a)
    if atol is not None:
        raise NotImplementedError(
            "ember's linalg.pinv supports rtol only; pass rtol= (relative to the largest "
            "singular value) instead of atol="
        )
    if rtol is None:
        import numpy as np

        rtol = float(np.finfo(a._data.dtype).eps) * max(a.shape[-2:])
    res = _la.Pinv.apply(a, float(rtol), bool(hermitian))
    return _mx._result(res, out, "linalg.pinv")


def matrix_rank(input: Any, tol: Any = None, hermitian: bool = False, *, atol: Any = None,
                rtol: Any = None, out: Any = None) -> Any:
    """The number of singular values above max(atol, rtol * largest) per matrix (int64).

    ``tol`` is PyTorch's older absolute tolerance (its positional overload): ``atol=tol, rtol=0``.
    """
    A = input
    if tol is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg.matrix_rank(): give tol, or atol=/rtol=, not both")
        atol, rtol = tol, 0.0
    if _amp.active:
        (A,) = _amp_cast("matrix_rank", A)
    import numpy as np

    a = _t(A, "linalg.matrix_rank")
    _la._check_decomposable("linalg.matrix_rank", a)
    from .autograd.grad_mode import no_grad

    with no_grad():
        s = eigvalsh(a).abs() if hermitian else svdvals(a)
        if s.shape[-1] == 0:
            smax = s.sum(-1)
        else:
            smax = s.amax(-1)
        if atol is None and rtol is None:
            rtol = float(np.finfo(a._data.dtype).eps) * max(a.shape[-2:])
        tol = smax * (0.0 if rtol is None else rtol)
        if atol is not None:
            tol = tol.clamp_min(atol)
        res = (s > tol.unsqueeze(-1)).sum(-1)
    return _mx._result(res, out, "linalg.matrix_rank")


# -- composites of the ops above (their gradients come from those ops) ------------------------

def _info(like: Any) -> Any:
    from .ops.creation import zeros

    return zeros(tuple(like.shape[:-2]), dtype=_dtype.int32, device=like.device)


def solve_ex(A: Any, B: Any, *, left: bool = True, check_errors: bool = False,
             out: Any = None) -> Any:
    """(result, info): ``solve`` and LAPACK's error code per matrix (the 1-based index of a zero
    pivot, 0 when none); a singular matrix gives inf/nan there, or raises with ``check_errors``."""
    if out is not None:
        res = solve_ex(A, B=B, left=left, check_errors=check_errors)
        return _mx._result(res, out, "linalg.solve_ex")
    try:
        res = _la.solve(A, B, left=left)
    except _la.LinAlgError:
        if check_errors:
            raise
        a, b = _t(A, "linalg.solve_ex"), _t(B, "linalg.solve_ex", "B")
        lu_, piv, info = lu_factor_ex(a)
        vec = _la._solve_is_vector(tuple(a.shape), tuple(b.shape))
        x = _lf.linalg_lu_solve(lu_, piv, b.unsqueeze(-1) if vec else b, left=left or vec)
        return return_types.linalg_solve_ex(x.squeeze(-1) if vec else x, info)
    return return_types.linalg_solve_ex(res, _info(_t(A, "linalg.solve_ex")))


def cholesky(input: Any, *, upper: bool = False, out: Any = None) -> Any:
    """L with A = L L^T (``upper=True``: U with A = U^T U) of a symmetric positive-definite A."""
    return _la.cholesky(input, upper, out=out)


def cholesky_ex(input: Any, *, upper: bool = False, check_errors: bool = False,
                out: Any = None) -> Any:
    """(L, info): ``cholesky`` and an error code per matrix (the order of the first minor that
    is not positive-definite, 0 when none; with ``check_errors`` that raises instead)."""
    if out is not None:
        res = cholesky_ex(input, upper=upper, check_errors=check_errors)
        return _mx._result(res, out, "linalg.cholesky_ex")
    A = input
    if _amp.active:
        (A,) = _amp_cast("cholesky_ex", A)
    a = _square_float("linalg.cholesky_ex", A)
    try:
        L = _la.cholesky(a, upper=upper)
        return return_types.linalg_cholesky_ex(L, _info(a))
    except _la.LinAlgError:
        if check_errors:
            raise
    import numpy as np

    from .ops.creation import tensor

    data = a.detach().cpu().numpy()
    batch = data.shape[:-2]
    n = data.shape[-1]
    flat = data.reshape(-1, n, n)
    infos = np.zeros(len(flat), np.int32)
    for k, m in enumerate(flat):
        for order in range(1, n + 1):
            try:
                np.linalg.cholesky(m[:order, :order])
            except np.linalg.LinAlgError:
                infos[k] = order
                break
    info = tensor(infos.reshape(batch), device=a.device)
    return return_types.linalg_cholesky_ex(a.new_zeros(tuple(a.shape)), info)


def vander(x: Any, *, N: int | None = None) -> Any:
    """Columns x^0, x^1, ..., x^(N-1) along a new last dim: shape (*, n, N)."""
    from .ops.joining import stack

    x = _t(x, "linalg.vander", "x")
    if x.dim() == 0:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x.shape[-1] if N is None else int(N)
    if n <= 1 and N is not None and n < 1:
        raise RuntimeError(f"N must be greater than 1. got {n}")
    cols = [x * 0 + 1] if n else []
    for _ in range(1, n):
        cols.append(cols[-1] * x)
    return stack(cols, -1) if cols else x.unsqueeze(-1)[..., :0]


def cond(input: Any, p: Any = None, *, out: Any = None) -> Any:
    """The condition number of A in the p-norm: sigma_max / sigma_min for p = None or 2
    (p = -2: the inverse), else ||A||_p ||A^-1||_p ('fro', 'nuc', inf, -inf, 1, -1)."""
    if out is not None:
        return _mx._result(cond(input, p=p), out, "linalg.cond")
    A = input
    if _amp.active:
        (A,) = _amp_cast("linalg_cond", A)
    a = _t(A, "linalg.cond")
    if p is None or p in (2, -2):
        sv = svdvals(a)
        hi, lo = sv[..., 0], sv[..., -1]
        return lo / hi if p == -2 else hi / lo
    if p not in ("fro", "nuc", float("inf"), float("-inf"), 1, -1):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    _la._check_square("linalg.cond", a)
    return _la.matrix_norm(a, p) * _la.matrix_norm(_la.inverse(a), p)


def tensorinv(input: Any, ind: int = 2, *, out: Any = None) -> Any:
    """The inverse of A for ``tensordot(A, ., ind)``: shape A.shape[ind:] + A.shape[:ind]."""
    if out is not None:
        return _mx._result(tensorinv(input, ind=ind), out, "linalg.tensorinv")
    A = input
    if _amp.active:
        (A,) = _amp_cast("tensorinv", A)
    import math

    a = _t(A, "linalg.tensorinv")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    lead, rest = tuple(a.shape[:ind]), tuple(a.shape[ind:])
    if math.prod(lead) != math.prod(rest):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {math.prod(rest)} != "
                           f"{math.prod(lead)}")
    m = a.reshape(math.prod(lead), math.prod(rest))
    return _la.inverse(m).reshape(*rest, *lead)


def tensorsolve(input: Any, other: Any, dims: Any = None, *, out: Any = None) -> Any:
    """X with ``tensordot(A, X, X.ndim) == B``; ``dims`` of A move to the end first."""
    if out is not None:
        res = tensorsolve(input, other=other, dims=dims)
        return _mx._result(res, out, "linalg.tensorsolve")
    A = input
    B = other
    if _amp.active:
        A, B = _amp_cast("tensorsolve", A, B)
    import math

    a = _t(A, "linalg.tensorsolve")
    b = _t(B, "linalg.tensorsolve", "B")
    if dims is not None:
        dims = [d % a.dim() for d in dims]
        a = a.permute(*[d for d in range(a.dim()) if d not in dims], *dims)
    rest = tuple(a.shape[b.dim():])
    m = a.reshape(b.numel(), math.prod(rest))
    return _la.solve(m, b.reshape(-1)).reshape(rest)


def lstsq(input: Any, b: Any, rcond: Any = None, *, driver: str | None = None,
          out: Any = None) -> Any:
    """Least-squares solution of A X = B (through the pseudo-inverse), with PyTorch's result
    fields: ``residuals`` and ``singular_values`` are filled for drivers 'gelsd'/'gelss' (as on
    PyTorch's CPU; the default 'gelsy' leaves them empty)."""
    if out is not None:
        return _mx._result(lstsq(input, b=b, rcond=rcond, driver=driver), out, "linalg.lstsq")
    A = input
    B = b
    if _amp.active:
        A, B = _amp_cast("lstsq", A, B)
    a = _t(A, "linalg.lstsq")
    b = _t(B, "linalg.lstsq", "B")
    drivers = ("gels", "gelsy", "gelsd", "gelss")
    drv = "gelsy" if driver is None else driver
    if drv not in drivers:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of "
                           f"{drivers}, got {driver}")
    vec = b.dim() == a.dim() - 1
    bm = b.unsqueeze(-1) if vec else b
    # the product as one op, not through matmul's autocast hook: lstsq runs in float32 under
    # CPU autocast, as PyTorch's single kernel does
    mm = _conjugated(_Matmul) if a._data.dtype.kind == "c" else _Matmul  # PyTorch's gradient
    x = mm.apply(pinv(a, rtol=rcond) if rcond is not None else pinv(a), bm)
    sol = x.squeeze(-1) if vec else x
    empty = a.new_zeros((0,))
    rank = matrix_rank(a)
    if drv in ("gelsd", "gelss"):
        sv = svdvals(a)
        m, n = a.shape[-2], a.shape[-1]
        res = empty
        if m > n and bool((rank == n).all()):
            res = ((matmul(a, x) - bm) ** 2).sum(-2)  # (*, k); a vector B gives k = 1
        return return_types.linalg_lstsq(sol, res, rank, sv)
    return return_types.linalg_lstsq(sol, empty, rank if drv != "gels" else a.new_zeros((0,), dtype=_dtype.int64),
                         empty)


def __getattr__(name: str) -> Any:
    from ._missing import attribute_error

    raise attribute_error("torch.linalg", name)


# PyTorch's torch.linalg functions are builtins, which do not bind as methods: ember's neither;
# they take NumPy's names (x= for input, axis= for dim, keepdims=): ops/_aliases.py
from . import _as_builtins  # noqa: E402
from .ops._aliases import numpy_names as _numpy_names  # noqa: E402

for _name in __all__:  # (all builtins: linalg.norm takes them where torch.norm does not)
    globals()[_name] = _numpy_names(globals()[_name], "linalg." + _name)
del _name
_as_builtins(globals(), __name__)
