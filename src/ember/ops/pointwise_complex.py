"""Complex numbers: making them (``complex``, ``polar``), seeing their parts (``real``, ``imag``,
``view_as_real``, ``view_as_complex``: views that share memory), and the ops that are not
holomorphic, whose gradients need their own rules: ``conj``, ``abs``, ``angle``, ``sgn``.

Gradients follow PyTorch's convention (its docs, "Autograd for Complex Numbers"): the gradient of
a real loss L with respect to z = x + iy is dL/dx + i dL/dy (the conjugate Wirtinger derivative,
times 2), so ``z - lr * z.grad`` descends; a real input of a complex op gets the real part of what
flows back. Holomorphic ops (mul, exp, matmul...) keep their real rules between two conjugations
(``_promote.conjugated``).

ember conjugates eagerly: ``conj()`` returns a conjugated copy (PyTorch returns a lazy view with
its conjugate bit set), so ``is_conj()`` is always False and ``resolve_conj()`` returns its input.

Neighbours: arithmetic in ``ops/pointwise.py``, math functions in ``ops/pointwise_math.py``, abs
and sgn's real forms in ``ops/pointwise_piecewise.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _dtype
from .._tensor_base import TensorBase
from ..autograd.function import Op
from . import _out
from .casting import as_tensor_arg

__all__ = [
    "complex", "polar", "view_as_real", "view_as_complex", "real", "imag", "conj",
    "conj_physical", "resolve_conj", "resolve_neg", "is_conj", "is_neg", "angle",
]


# ---------------------------------------------------------------------------------------------
# making complex tensors and seeing their parts


def complex(real: Any, imag: Any, *, out: Any = None) -> Any:  # noqa: A001 - PyTorch's name
    """``real + 1j * imag`` from two float tensors of one dtype (float32 -> complex64,
    float64 -> complex128), broadcast together."""
    for name, t in (("real", real), ("imag", imag)):
        if not isinstance(t, TensorBase):
            raise TypeError(f"complex(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    kr, ki = real._data.dtype, imag._data.dtype
    if kr.kind != "f" or ki.kind != "f":
        raise RuntimeError(
            "Expected both inputs to be Half, Float or Double tensors but got "
            f"{_dtype.legacy_name(real.dtype)} and {_dtype.legacy_name(imag.dtype)}; convert "
            "them first, e.g. real.float()")
    if kr != ki:
        raise RuntimeError(
            f"Expected object of scalar type {_dtype.legacy_name(real.dtype)} but got scalar type "
            f"{_dtype.legacy_name(imag.dtype)} for second argument; give both parts one dtype")
    real.dtype.to_complex().np  # noqa: B018 - float16 parts: complex32, which has no tensors
    res = Complex.apply(real, imag)
    return res if out is None else _out.write(out, res, "complex")


def polar(abs: Any, angle: Any, *, out: Any = None) -> Any:  # noqa: A002 - PyTorch's names
    """``abs * (cos(angle) + 1j * sin(angle))``: the complex numbers of these moduli and
    arguments (float tensors of one dtype)."""
    for name, t in (("abs", abs), ("angle", angle)):
        if not isinstance(t, TensorBase):
            raise TypeError(f"polar(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if abs._data.dtype != angle._data.dtype or abs._data.dtype.kind != "f":
        complex(abs, angle)  # the same errors as complex()
    res = Polar.apply(abs, angle)
    return res if out is None else _out.write(out, res, "polar")


def view_as_real(input: Any) -> Any:
    """A real view of a complex tensor: shape ``(*input.shape, 2)`` (real and imaginary parts
    last), float32 for complex64; it shares ``input``'s memory."""
    if not isinstance(input, TensorBase) or input._data.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return ViewAsReal.apply(input)


def view_as_complex(input: Any) -> Any:
    """A complex view of a real tensor whose last dimension (size 2, stride 1) holds real and
    imaginary parts: float32 (..., 2) -> complex64 (...); it shares ``input``'s memory."""
    d = input._data
    if d.dtype.kind != "f" or d.dtype.itemsize not in (4, 8):
        if d.dtype == np.float16:
            _dtype.complex32.np  # noqa: B018 - raises: complex32 has no tensors
        raise RuntimeError(
            "view_as_complex is only supported for half, float and double tensors, but got a "
            f"tensor of scalar type: {_dtype.legacy_name(input.dtype)}")
    if d.ndim == 0 or d.shape[-1] != 2:
        raise RuntimeError(f"Tensor must have a last dimension of size 2 (got shape "
                           f"{tuple(d.shape)})")
    if d.strides[-1] != d.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1; call .contiguous() "
                           "first")
    if any(s % (2 * d.itemsize) for s, n in zip(d.strides[:-1], d.shape[:-1]) if n > 1):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    return ViewAsComplex.apply(input)


def real(input: Any) -> Any:
    """The real parts of a complex tensor (a view: writing it writes ``input``); a real tensor
    itself, as PyTorch returns it."""
    if input._data.dtype.kind != "c":
        return input
    return view_as_real(input).select(-1, 0)


def imag(input: Any) -> Any:
    """The imaginary parts of a complex tensor (a view: writing it writes ``input``)."""
    if input._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return view_as_real(input).select(-1, 1)


def conj(input: Any) -> Any:
    """The complex conjugate (computed now: a copy, where PyTorch returns a lazy view); a real
    tensor itself."""
    if input._data.dtype.kind != "c":
        return input
    return Conj.apply(input)


def conj_physical(input: Any, *, out: Any = None) -> Any:
    """The complex conjugate, computed (a real tensor itself, as PyTorch returns it)."""
    if input._data.dtype.kind == "c":
        res = ConjPhysical.apply(input)
    else:
        res = input
    return res if out is None else _out.write(out, res, "conj_physical")


def resolve_conj(input: Any) -> Any:
    """``input`` itself: ember's ``conj`` is never lazy, so there is no conjugate bit to resolve."""
    return input


def resolve_neg(input: Any) -> Any:
    """``input`` itself: ember has no lazy negation."""
    return input


def is_conj(input: Any) -> bool:
    """False: ember conjugates eagerly, so no tensor carries PyTorch's conjugate bit."""
    return False


def is_neg(input: Any) -> bool:
    """False: ember has no lazy negation bit."""
    return False


def angle(input: Any, *, out: Any = None) -> Any:
    """The argument of each element, ``atan2(imag, real)``, in (-pi, pi]; for real tensors
    ``pi`` where ``input < 0``, else 0 (NaN stays NaN), with a zero gradient, as PyTorch's;
    integer inputs give the default float dtype."""
    x = as_tensor_arg(input)
    k = x._data.dtype.kind
    if k == "c":
        res = Angle.apply(x)
    else:
        if k not in "fV":
            x = x.to(_dtype.get_default_dtype())
        res = RealAngle.apply(x)
    return res if out is None else _out.write(out, res, "angle")


# ---------------------------------------------------------------------------------------------
# op classes


class Complex(Op):
    """out = re + i im          grad_re = real(grad)          grad_im = imag(grad)"""

    @staticmethod
    def forward(ctx: Any, re: Any, im: Any) -> Any:
        xp = ctx.xp
        out = xp.empty(xp.broadcast_shapes(re.shape, im.shape), _COMPLEX_OF[re.dtype])
        out.real = re
        out.imag = im
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        need = ctx.needs_input_grad
        return (grad.real if need[0] else None), (_imag_of(grad) if need[1] else None)


class Polar(Op):
    """out = r (cos t + i sin t)
    grad_r = real(grad * conj(sgn(out)))          grad_t = real(grad * conj(i out))
    (sgn(out), as PyTorch's rule: e^{it} for r > 0, its negative for r < 0, 0 at r = 0)"""

    @staticmethod
    def forward(ctx: Any, r: Any, t: Any) -> Any:
        xp = ctx.xp
        unit = xp.empty(xp.broadcast_shapes(r.shape, t.shape), _COMPLEX_OF[r.dtype])
        unit.real = xp.cos(t)
        unit.imag = xp.sin(t)
        out = r * unit
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        xp = ctx.xp
        need = ctx.needs_input_grad
        gr = (grad * xp.conj(_sgn(xp, out, xp.abs(out)))).real if need[0] else None
        # real(grad * conj(i out)) = real(grad * -i conj(out)) = imag(grad * conj(out))
        gt = _imag_of(grad * xp.conj(out)) if need[1] else None
        return gr, gt


class ViewAsReal(Op):
    """out = the (..., 2) real view of a complex x          grad_x = view_as_complex(grad)"""

    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return _as_real(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        if isinstance(grad, TensorBase):
            return view_as_complex(grad.contiguous())
        return _as_complex(np.ascontiguousarray(grad))


class ViewAsComplex(Op):
    """out = the complex view of a real (..., 2) x          grad_x = view_as_real(grad)"""

    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return _as_complex(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        if isinstance(grad, TensorBase):
            return view_as_real(grad)
        return _as_real(grad)


class Conj(Op):
    """out = conj(x)          grad_x = conj(grad)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return ctx.xp.conj(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.xp.conj(grad)


class ConjPhysical(Conj):
    """conj_physical (same rule as Conj)."""


class ComplexAbs(Op):
    """out = |z| (real)          grad_z = grad * z / |z|   (0 at z = 0)"""

    node_name = "AbsBackward0"

    @staticmethod
    def forward(ctx: Any, z: Any) -> Any:
        out = ctx.xp.abs(z)
        ctx.save_for_backward(z, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        z, out = ctx.saved
        return grad * _sgn(ctx.xp, z, out)


class ComplexSgn(Op):
    """out = z / |z| (0 at z = 0)
    grad_z = (grad - real(grad * conj(out)) * out) / |z|   (0 at z = 0)"""

    node_name = "SgnBackward0"

    @staticmethod
    def forward(ctx: Any, z: Any) -> Any:
        out = _sgn(ctx.xp, z, ctx.xp.abs(z))
        ctx.save_for_backward(z, out)  # (|z| recomputed: under create_graph, a function of z)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        z, out = ctx.saved
        xp = ctx.xp
        r = xp.abs(z)
        g = (grad - (grad * xp.conj(out)).real * out) / xp.where(r == 0, 1, r)
        return xp.where(r == 0, 0, g)


class Angle(Op):
    """out = atan2(imag(z), real(z))          grad_z = grad * i z / |z|^2   (0 at z = 0)"""

    @staticmethod
    def forward(ctx: Any, z: Any) -> Any:
        ctx.save_for_backward(z)
        return ctx.xp.angle(z)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (z,) = ctx.saved
        xp = ctx.xp
        r2 = (z * xp.conj(z)).real
        zero = r2 == 0
        return xp.where(zero, 0, grad * (z * 1j) / xp.where(zero, 1, r2))


class RealAngle(Op):
    """out = pi where x < 0, else 0 (NaN stays NaN)          grad_x = 0"""

    node_name = "AngleBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        xp = ctx.xp
        out = xp.where(x < 0, x.dtype.type(math.pi), x.dtype.type(0))
        return xp.where(xp.isnan(x), x, out)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.xp.zeros_like(grad)


# ---------------------------------------------------------------------------------------------
# helpers

_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128)}


def abs_complex(z: Any) -> Any:
    """``abs`` of a complex tensor (``ops.abs`` hands complex inputs here)."""
    return ComplexAbs.apply(z)


def sgn_complex(z: Any) -> Any:
    """``sgn`` of a complex tensor (``ops.sgn`` hands complex inputs here)."""
    return ComplexSgn.apply(z)


def _sgn(xp: Any, z: Any, r: Any) -> Any:
    """z / |z|, 0 where z == 0."""
    zero = r == 0
    return xp.where(zero, 0, z / xp.where(zero, 1, r))


def _imag_of(a: Any) -> Any:
    """The imaginary part of an array (or, under create_graph, a tensor)."""
    return a.imag


def _as_real(x: Any) -> Any:
    """The (..., 2) real view of a complex array (any strides)."""
    re = x.real
    item = re.itemsize
    return np.lib.stride_tricks.as_strided(re, x.shape + (2,), re.strides + (item,),
                                           writeable=x.flags.writeable)


def _as_complex(x: Any) -> Any:
    """The complex view of a real (..., 2) array whose last dim is contiguous."""
    return x.view(_COMPLEX_OF[x.dtype])[..., 0]
