"""Discrete Fourier transforms (``torch.fft``, exposed as ``ember.fft``) on NumPy's pocketfft:
fft/ifft, rfft/irfft, hfft/ihfft and their 2-D and n-D forms, with PyTorch's ``n``/``s``/``dim``
and ``norm`` ("backward": unscaled forward transform, 1/n on the inverse; "ortho": 1/sqrt(n)
both ways; "forward": 1/n on the forward transform), fftfreq/rfftfreq and fftshift/ifftshift.
float32 and complex64 inputs give complex64 (float64/complex128: complex128; integers compute
in the default dtype; half types are refused, as PyTorch's CPU build refuses them).

Every transform is one of three ops (PyTorch's own split), each of whose gradient is another
transform, the adjoint (PyTorch's convention for complex gradients: ``grad_x = A^H grad_out``
for a linear map A), with ``norm`` swapped for its dual ("backward" <-> "forward"):

- ``FftC2C``: complex -> complex over ``dims``; grad = the opposite-direction C2C of grad.
- ``FftR2C``: real -> complex (rfft: the last dim's first n//2+1 frequencies); grad = the real
  part of the opposite-direction C2C of grad zero-filled back to n frequencies.
- ``FftC2R``: complex (n//2+1 frequencies) -> real n points along one dim (irfft, Hermitian
  input); grad = R2C of grad, doubled on the frequencies that stand for two (all but 0 and n/2).

Sizes given by ``n``/``s`` trim or zero-pad the input first (``Resize``, whose gradient trims or
pads back). hfft is irfft of the conjugate with the dual norm, ihfft the conjugate of rfft.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtype
from .._tensor_base import TensorBase, wrap_dim
from ..autograd.function import Op
from . import _out
from .casting import as_tensor_arg, cast
from .creation import tensor
from .joining import roll
from .pointwise_complex import conj

__all__ = [
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2",
    "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq", "rfftfreq",
    "fftshift", "ifftshift",
]


# ---------------------------------------------------------------------------------------------
# one-dimensional transforms


def fft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None, *,
        out: Any = None) -> Any:
    """The discrete Fourier transform along ``dim`` (``n`` points: trimmed or zero-padded)."""
    return _out_of(_c2c("fft", input, _s1(n), (dim,), norm, True), out, "fft_fft")


def ifft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None, *,
         out: Any = None) -> Any:
    """The inverse discrete Fourier transform along ``dim``."""
    return _out_of(_c2c("ifft", input, _s1(n), (dim,), norm, False), out, "fft_ifft")


def rfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None, *,
         out: Any = None) -> Any:
    """The Fourier transform of a real signal: the n//2 + 1 non-negative frequencies."""
    return _out_of(_r2c("rfft", input, _s1(n), (dim,), norm), out, "fft_rfft")


def irfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None, *,
          out: Any = None) -> Any:
    """The inverse of ``rfft``: ``n`` real points (default 2 * (m - 1) from m frequencies)."""
    return _out_of(_c2r("irfft", input, _s1(n), (dim,), norm), out, "fft_irfft")


def hfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None, *,
         out: Any = None) -> Any:
    """The Fourier transform of a Hermitian-symmetric signal given by its first half: ``n`` real
    points (irfft of the conjugate, with the dual norm)."""
    return _out_of(_hermitian("hfft", input, _s1(n), (dim,), norm), out, "fft_hfft")


def ihfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None, *,
          out: Any = None) -> Any:
    """The inverse of ``hfft``: the n//2 + 1 frequencies of a real signal (the conjugate of rfft,
    with the dual norm)."""
    return _out_of(_ihermitian("ihfft", input, _s1(n), (dim,), norm), out, "fft_ihfft")


# ---------------------------------------------------------------------------------------------
# two- and n-dimensional transforms


def fft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *,
         out: Any = None) -> Any:
    """``fftn`` over two dims (the last two by default)."""
    return _out_of(_c2c("fft2", input, s, dim, norm, True), out, "fft_fft2")


def ifft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *,
          out: Any = None) -> Any:
    """``ifftn`` over two dims (the last two by default)."""
    return _out_of(_c2c("ifft2", input, s, dim, norm, False), out, "fft_ifft2")


def rfft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *,
          out: Any = None) -> Any:
    """``rfftn`` over two dims (the last two by default)."""
    return _out_of(_r2c("rfft2", input, s, dim, norm), out, "fft_rfft2")


def irfft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *,
           out: Any = None) -> Any:
    """``irfftn`` over two dims (the last two by default)."""
    return _out_of(_c2r("irfft2", input, s, dim, norm), out, "fft_irfft2")


def hfft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *,
          out: Any = None) -> Any:
    """``hfftn`` over two dims (the last two by default)."""
    return _out_of(_hermitian("hfft2", input, s, dim, norm), out, "fft_hfft2")


def ihfft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *,
           out: Any = None) -> Any:
    """``ihfftn`` over two dims (the last two by default)."""
    return _out_of(_ihermitian("ihfft2", input, s, dim, norm), out, "fft_ihfft2")


def fftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None, *,
         out: Any = None) -> Any:
    """The n-dimensional Fourier transform over ``dim`` (all dims, or the last ``len(s)``)."""
    return _out_of(_c2c("fftn", input, s, dim, norm, True), out, "fft_fftn")


def ifftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None, *,
          out: Any = None) -> Any:
    """The n-dimensional inverse Fourier transform."""
    return _out_of(_c2c("ifftn", input, s, dim, norm, False), out, "fft_ifftn")


def rfftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None, *,
          out: Any = None) -> Any:
    """The n-dimensional transform of a real signal (the last dim keeps n//2 + 1 frequencies)."""
    return _out_of(_r2c("rfftn", input, s, dim, norm), out, "fft_rfftn")


def irfftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None, *,
           out: Any = None) -> Any:
    """The inverse of ``rfftn``: a real signal (the last dim: 2 * (m - 1) points by default)."""
    return _out_of(_c2r("irfftn", input, s, dim, norm), out, "fft_irfftn")


def hfftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None, *,
          out: Any = None) -> Any:
    """The n-dimensional transform of a Hermitian-symmetric signal given by its half."""
    return _out_of(_hermitian("hfftn", input, s, dim, norm), out, "fft_hfftn")


def ihfftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None, *,
           out: Any = None) -> Any:
    """The inverse of ``hfftn``: the half spectrum of a real signal."""
    return _out_of(_ihermitian("ihfftn", input, s, dim, norm), out, "fft_ihfftn")


# ---------------------------------------------------------------------------------------------
# frequencies and shifts


def fftfreq(n: int, d: float = 1.0, *, out: Any = None, dtype: Any = None, layout: Any = None,
            device: Any = None, requires_grad: bool = False) -> Any:
    """The sample frequencies of an ``n``-point transform: ``[0, 1, ..., -1] / (d * n)``."""
    return _freqs(np.fft.fftfreq(int(n), float(d)), out, dtype, device, requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, out: Any = None, dtype: Any = None, layout: Any = None,
             device: Any = None, requires_grad: bool = False) -> Any:
    """The sample frequencies of ``rfft``: ``[0, 1, ..., n // 2] / (d * n)``."""
    return _freqs(np.fft.rfftfreq(int(n), float(d)), out, dtype, device, requires_grad)


def fftshift(input: Any, dim: Any = None) -> Any:
    """The zero frequency moved to the centre: a roll by n // 2 along ``dim`` (all dims)."""
    return _shift(input, dim, 1)


def ifftshift(input: Any, dim: Any = None) -> Any:
    """The inverse of ``fftshift``: a roll by -(n // 2)."""
    return _shift(input, dim, -1)


# ---------------------------------------------------------------------------------------------
# op classes


class FftC2C(Op):
    """out = fftn(x) or ifftn(x) over dims (numpy.fft, with norm)
    grad_x = the opposite transform of grad with the dual norm (the adjoint, A^H grad)"""

    @staticmethod
    def forward(ctx: Any, x: Any, dims: tuple, norm: str, forward: bool) -> Any:
        ctx.dims, ctx.norm, ctx.fwd = dims, norm, forward
        return (np.fft.fftn if forward else np.fft.ifftn)(x, axes=dims, norm=norm)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(FftC2C, grad, ctx.dims, _DUAL[ctx.norm], not ctx.fwd), None, None, None


class FftR2C(Op):
    """out = the transform of a real x over dims (onesided: the last dim's n//2 + 1 frequencies)
    grad_x = real(the opposite C2C of grad, zero-filled back to n frequencies, dual norm)"""

    @staticmethod
    def forward(ctx: Any, x: Any, dims: tuple, norm: str, onesided: bool, forward: bool) -> Any:
        ctx.dims, ctx.norm, ctx.onesided, ctx.fwd = dims, norm, onesided, forward
        ctx.shape = x.shape
        if onesided:
            return np.fft.rfftn(x, axes=dims, norm=norm)
        return (np.fft.fftn if forward else np.fft.ifftn)(x, axes=dims, norm=norm)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        if ctx.onesided:
            grad = ctx.call(Resize, grad, tuple(ctx.shape))
        full = ctx.call(FftC2C, grad, ctx.dims, _DUAL[ctx.norm], not ctx.fwd)
        return full.real, None, None, None, None


class FftC2R(Op):
    """out = irfft(x, n) along one dim (x: n//2 + 1 frequencies of a Hermitian signal)
    grad_x = rfft(grad) with the dual norm, doubled on the frequencies that stand for two
    (all but 0 and, for even n, n/2: the imaginary parts there are ignored, as NumPy does)"""

    @staticmethod
    def forward(ctx: Any, x: Any, dim: int, norm: str, n: int) -> Any:
        ctx.dim, ctx.norm, ctx.n = dim, norm, n
        out = np.fft.irfft(x, n=n, axis=dim, norm=norm)
        ctx.real = out.dtype
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        half = ctx.call(FftR2C, grad, (ctx.dim,), _DUAL[ctx.norm], True, True)
        n, m = ctx.n, ctx.n // 2 + 1
        twice = np.full(m, 2, ctx.real)
        twice[0] = 1
        if n % 2 == 0:
            twice[-1] = 1
        shape = [1] * len(half.shape)
        shape[ctx.dim] = m
        twice = twice.reshape(shape)
        if isinstance(half, TensorBase):
            twice = TensorBase._make(twice)
        return half * twice, None, None, None


class Resize(Op):
    """out = x trimmed or zero-padded (at the end of each dim) to shape
    grad_x = grad trimmed or zero-padded back to x's shape"""

    node_name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, shape: tuple) -> Any:
        ctx.shape = x.shape
        out = np.zeros(shape, x.dtype)
        common = tuple(slice(0, min(a, b)) for a, b in zip(x.shape, shape))
        out[common] = x[common]
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(Resize, grad, tuple(ctx.shape)), None


# ---------------------------------------------------------------------------------------------
# helpers

_NORMS = ("backward", "ortho", "forward")
_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _c2c(name: str, input: Any, s: Any, dim: Any, norm: Any, forward: bool) -> Any:
    x = _input(name, input)
    dims, sizes = _plan(name, x, s, dim)
    x = _resized(x, dims, sizes)
    if not dims:
        return cast(x, x.dtype.to_complex()) if not x.is_complex() else x.clone()
    if x.is_complex():
        return FftC2C.apply(x, dims, _norm(norm), forward)
    return FftR2C.apply(x, dims, _norm(norm), False, forward)


def _r2c(name: str, input: Any, s: Any, dim: Any, norm: Any) -> Any:
    x = _input(name, input, real=True)
    dims, sizes = _plan(name, x, s, dim)
    x = _resized(x, dims, sizes)
    if not dims:
        return cast(x, x.dtype.to_complex())
    return FftR2C.apply(x, dims, _norm(norm), True, True)


def _c2r(name: str, input: Any, s: Any, dim: Any, norm: Any) -> Any:
    x = _input(name, input)
    if not x.is_complex():
        x = cast(x, x.dtype.to_complex())
    dims, sizes = _plan(name, x, s, dim)
    if not dims:
        return x.real.clone()
    last = dims[-1]
    n = sizes[-1] if sizes is not None else 2 * (x._data.shape[last] - 1)
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    target = list(sizes) if sizes is not None else [x._data.shape[d] for d in dims]
    target[-1] = n // 2 + 1
    x = _resized(x, dims, target)
    nm = _norm(norm)
    if len(dims) > 1:
        x = FftC2C.apply(x, dims[:-1], nm, False)
    return FftC2R.apply(x, last, nm, n)


def _hermitian(name: str, input: Any, s: Any, dim: Any, norm: Any) -> Any:
    x = _input(name, input)
    return _c2r(name, conj(x), s, dim, _DUAL[_norm(norm)])


def _ihermitian(name: str, input: Any, s: Any, dim: Any, norm: Any) -> Any:
    return conj(_r2c(name, input, s, dim, _DUAL[_norm(norm)]))


def _input(name: str, input: Any, real: bool = False) -> Any:
    """The transform's input: integers and bools in the default float dtype; half types
    refused (as PyTorch's CPU build), complex ones too for the real-input transforms."""
    x = as_tensor_arg(input)
    if not isinstance(x, TensorBase):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    dt = x._data.dtype
    if dt.kind == "c":
        if real:
            raise RuntimeError(f"{name.rstrip('n2')} expects a real input tensor, but got "
                               f"{_dtype.legacy_name(x.dtype)}")
        return x
    if dt.kind in "biu":
        return cast(x, _dtype.get_default_dtype())
    if dt.itemsize == 2:
        raise RuntimeError(f"Unsupported dtype {_dtype.legacy_name(x.dtype)} (torch.fft on the "
                           "CPU takes float32/float64/complex tensors); convert first: x.float()")
    return x


def _plan(name: str, x: Any, s: Any, dim: Any) -> tuple[tuple, list | None]:
    """The transformed dims and their sizes (None: as they are), PyTorch's rules: ``dim`` given
    (with ``s`` of its length), or the last ``len(s)`` dims, or all dims."""
    nd = x._data.ndim
    if isinstance(dim, int):
        dim = (dim,)
    if s is not None:
        s = [int(v) for v in s]
    if dim is not None:
        dims = tuple(wrap_dim(d, nd) for d in dim)
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > nd:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} "
                               "dimensions.")
        dims = tuple(range(nd - len(s), nd))
    else:
        dims = tuple(range(nd))
    if len(set(dims)) != len(dims):
        raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = [x._data.shape[d] if v == -1 else v for d, v in zip(dims, s)]
        for v in s:
            if v < 1:
                raise RuntimeError(f"Invalid number of data points ({v}) specified")
    return dims, s


def _resized(x: Any, dims: tuple, sizes: Any) -> Any:
    if sizes is None:
        return x
    shape = list(x._data.shape)
    for d, v in zip(dims, sizes):
        shape[d] = v
    if tuple(shape) == tuple(x._data.shape):
        return x
    return Resize.apply(x, tuple(shape))


def _norm(norm: Any) -> str:
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}" (one of "backward", "ortho", '
                           '"forward", or None)')
    return norm


def _s1(n: Any) -> Any:
    return None if n is None else (n,)


def _out_of(res: Any, out: Any, name: str) -> Any:
    return res if out is None else _out.write(out, res, name)


def _freqs(values: np.ndarray, out: Any, dtype: Any, device: Any, requires_grad: bool) -> Any:
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
    res = tensor(values, dtype=dt, device=device, requires_grad=requires_grad)
    return res if out is None else _out.write(out, res, "fftfreq")


def _shift(input: Any, dim: Any, sign: int) -> Any:
    x = as_tensor_arg(input)
    nd = x._data.ndim
    if dim is None:
        dims = tuple(range(nd))
    else:
        dims = tuple(wrap_dim(d, nd) for d in ((dim,) if isinstance(dim, int) else dim))
    if not dims:
        return x.clone() if nd == 0 else x
    shifts = tuple(sign * (x._data.shape[d] // 2) for d in dims)
    return roll(x, shifts, dims)

