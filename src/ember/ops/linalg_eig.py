"""The eigendecomposition of a general square matrix (``torch.linalg.eig`` / ``eigvals``):
complex results (complex64 for float32 or complex64 input, complex128 for float64 or
complex128), LAPACK's geev through NumPy, eigenvectors of unit norm as PyTorch's (each is
defined up to a phase, so a loss must not depend on it).

Neighbours: ``linalg.py`` (the Hermitian eigh/eigvalsh, svd, qr...), ``linalg_factor.py``.
"""

from __future__ import annotations

from typing import Any

from .._tensor_base import TensorBase
from ..autograd.function import Op
from . import return_types
from ._matrix import _result, _tensor
from .linalg import Solve, _check_float, _check_square, _col, _eye_like, _lapack, _mh, _mm, _row

__all__: list[str] = []


def linalg_eig(input: Any, *, out: Any = None) -> Any:
    """(eigenvalues, eigenvectors) of a square matrix, complex: A V = V diag(L), each column of
    V of unit norm (its phase is LAPACK's)."""
    if out is not None:
        return _result(linalg_eig(input), out, "linalg.eig")
    a = _input("linalg.eig", input)
    w, v = Eig.apply(a)
    return return_types.linalg_eig(w, v)


def linalg_eigvals(input: Any, *, out: Any = None) -> Any:
    """The eigenvalues of a square matrix, complex (in LAPACK's order, as PyTorch's)."""
    a = _input("linalg.eigvals", input)
    return _result(Eigvals.apply(a), out, "linalg.eigvals")


class Eig(Op):
    """(L, V) = eig(A), A V = V diag(L), ||v_i|| = 1
    grad_A = V^-H (diag(gL) + (X - V^H V Re(diag(X))) / conj(E)) V^H, X = V^H gV,
    E_ij = L_j - L_i off the diagonal (the diagonal of the quotient is diag(gL)); the real part
    for a real A. Finite for distinct eigenvalues, and for losses that do not depend on the
    eigenvectors' phases (PyTorch's formula and caveat)."""

    node_name = "LinalgEigBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any) -> Any:
        w, v = _eig(ctx.xp, a)
        ctx.save_for_backward(w, v)
        ctx.set_materialize_grads(False)
        ctx.real = a.dtype.kind != "c"
        return w, v

    @staticmethod
    def backward(ctx: Any, gw: Any, gv: Any) -> Any:
        w, v = ctx.saved
        if gw is None and gv is None:
            return None
        vh = _mh(v)
        eye = _eye_like(w)
        if gv is None:
            inner = eye * _row(gw)
        else:
            x = _mm(ctx, vh, gv)
            re_diag = (x * eye).sum(-1).real
            inner = x - _mm(ctx, vh, v * _row(re_diag))
            e = (_row(w) - _col(w)).conj() + eye
            inner = inner / e * (1 - eye)
            if gw is not None:
                inner = inner + eye * _row(gw)
        ga = ctx.call(Solve, vh, _mm(ctx, inner, vh))
        return ga.real if ctx.real else ga


class Eigvals(Op):
    """L = the eigenvalues of A          grad_A = V^-H diag(gL) V^H (the real part for real A;
    under create_graph V comes from a recorded ``Eig`` of A, so the rule differentiates again)"""

    node_name = "LinalgEigBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any) -> Any:
        w, v = _eig(ctx.xp, a)
        ctx.save_for_backward(v, a)
        ctx.real = a.dtype.kind != "c"
        return w

    @staticmethod
    def backward(ctx: Any, gw: Any) -> Any:
        v, a = ctx.saved
        if isinstance(v, TensorBase):  # create_graph: V as a function of A
            v = Eig.apply(a)[1]
        vh = _mh(v)
        ga = ctx.call(Solve, vh, _mm(ctx, _row(gw) * _eye_like(gw), vh))
        return ga.real if ctx.real else ga


def _input(fn: str, A: Any) -> Any:
    a = _tensor(A, fn, "A", 1)
    _check_float(fn, a)
    _check_square(fn, a)
    return a


def _eig(xp: Any, a: Any) -> tuple:
    """NumPy's eig, always complex: complex64 for float32/complex64 input (no upcast)."""
    cdt = xp.complex64 if a.dtype in (xp.float32, xp.complex64) else xp.complex128
    w, v = _lapack("linalg.eig", lambda: xp.linalg.eig(a), a)
    return w.astype(cdt, copy=False), v.astype(cdt, copy=False)
