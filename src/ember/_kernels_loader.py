"""The eager kernels ``ember._kernels``: single-pass C loops over float32/float64 NumPy arrays, for
the ops where NumPy needs many passes (erf, GELU, softmax, layer_norm; docs/design.md, "Eager
kernels"). Optional, as ``ember._native``: the ops' NumPy formulas are the reference and the
fallback, and every function here returns None where the kernel does not apply, so a caller reads

    out = _kernels_loader.gelu(x)
    if out is None:
        ...  # the NumPy formula

Large kernels split over ``set_num_threads`` threads (``ember.set_num_threads``; by default the
CPUs the process may use, as PyTorch's), each element or row computed alone, so a result does not
depend on the count. ``active`` is the C module, or None: ``EMBER_PURE_PYTHON=1`` in the environment, not built (no C
compiler at install), or stale (its C file changed since it was built: an editable install after
a ``git pull``; one ``RuntimeWarning`` says how to rebuild). ``disabled()`` turns the kernels off
within a block (the tests compare both paths in one process). A kernel takes C-contiguous host
arrays of one dtype, float32 (or float64 where it says so), with at least one element; anything
else (CuPy arrays, other dtypes, strided views) gets None.
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from ._native_core import source_hash

# relative to the package (setup.py's KERNELS_C_SOURCES)
C_SOURCES = ("_kernels.h", "_kernels.c", "_kernels_blas.c", "_kernels_gemm.c")

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def _load() -> tuple[Any, str]:
    """(the extension module or None, why)."""
    if os.environ.get("EMBER_PURE_PYTHON", "") not in ("", "0"):
        return None, "EMBER_PURE_PYTHON is set"
    try:
        import ember._kernels as mod  # the C extension (absolute: a .so, not a module of the tree)
    except ImportError as e:
        if getattr(e, "name", None) == "ember._kernels":
            return None, "ember._kernels was not built (install from source with a C compiler)"
        return None, f"ember._kernels did not import ({e})"
    if getattr(mod, "__file__", None) is None or not hasattr(mod, "C_HASH"):
        return None, "ember._kernels is not the extension (a folder of that name shadows it?)"
    now = source_hash(C_SOURCES)
    if now is not None and now != mod.C_HASH:  # the C file is present: an editable install
        why = ("ember._kernels is stale: its C source changed since it was built; rebuild it with "
               "`pip install -e .` (or `python setup.py build_ext --inplace`)")
        warnings.warn(f"{why}. Using the NumPy formulas until then.", RuntimeWarning, stacklevel=2)
        return None, why
    fma = "" if mod.fma_in_hardware() else " without fma (the fma-based kernels off)"
    return mod, f"ember._kernels {mod.BUILT_WITH}, running {mod.isa()}{fma}"


_module, reason = _load() if __name__ == "ember._kernels_loader" else (None, "not loaded")
active: Any = _module  # what the functions below use; None while disabled()
# The kernels whose loops are built on fmaf (exp, tanh, erf's family, GELU, the float32-arithmetic
# activations, softmax's exp, erfinv, attention's softmax) leave their ops to the NumPy formulas
# where the variant that runs has no fma instruction (an x86-64 CPU without AVX2 and FMA): there
# each fmaf is a call into the C library and the loop stays scalar, 1.5-10x slower than the
# formulas (docs/benchmarks.md, "Session 2026-12-07 (g)"). They ask ``_fma_kernels()``.
soft_fma = _module is not None and not _module.fma_in_hardware()


def _fma_kernels() -> Any:
    """``active``, or None where ``soft_fma`` holds."""
    return None if soft_fma else active


def default_threads() -> int:
    """PyTorch's default thread count: ``OMP_NUM_THREADS`` (at most the usable CPUs), else the
    CPUs this process may use (``ember.get_num_threads``'s rule, which sets it afterwards)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cpus = cpus or 1
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    return min(int(env), cpus) if env.isdigit() and int(env) > 0 else cpus


def set_num_threads(n: int) -> None:
    """The threads a large kernel splits over (``ember.set_num_threads`` calls this). A kernel's
    results do not depend on it: every element, row or column is computed on its own."""
    if _module is not None:
        _module.set_num_threads(int(n))


set_num_threads(default_threads())


def describe() -> str:
    """One line: whether the eager kernels run, and why."""
    return f"eager kernels: {'on' if active is not None else 'off'} ({reason})"


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Run the block with the NumPy formulas (the kernels off), then restore."""
    global active
    saved, active = active, None
    try:
        yield
    finally:
        active = saved


@contextlib.contextmanager
def enabled() -> Iterator[None]:
    """Run the block with the kernels when they are built (the reverse of ``disabled``)."""
    global active
    saved, active = active, _module
    try:
        yield
    finally:
        active = saved


def _ok(x: Any, f64: bool = False) -> bool:
    """A C-contiguous, non-empty host array of float32 (or float64 where ``f64``)."""
    return (type(x) is np.ndarray and (x.dtype == _F32 or (f64 and x.dtype == _F64))
            and x.flags.c_contiguous and x.size > 0)


def _ok2(x: Any, g: Any, f64: bool = False) -> bool:
    return _ok(x, f64) and _ok(g, f64) and g.dtype == x.dtype and g.shape == x.shape


def _dense(x: Any, f64: bool = False) -> np.ndarray | None:
    """``x`` where ``_ok`` holds, else a C-ordered copy of a non-empty float32 (or float64) host
    array laid out otherwise (a broadcast gradient, a transposed view), else None."""
    if _ok(x, f64):
        return x
    if type(x) is np.ndarray and (x.dtype == _F32 or (f64 and x.dtype == _F64)) and x.size:
        return np.ascontiguousarray(x)
    return None


_EACH_CHUNK = 1 << 18  # elements a call where an elementwise kernel's gradient repeats one value


def _each(fn: Any, x: Any, g: Any, f64: bool, *params: Any) -> np.ndarray | None:
    """A new array written by the elementwise kernel ``fn(x, g, out, *params)``, with ``g`` as
    ``_grad_for`` takes it, except a gradient that repeats one value (a sum's or mean's, every
    stride 0): that runs over chunks of x with one chunk of the value as g, so no array of x's
    size is made for it (an activation's backward keeps its peak at y, the gradient and .grad).
    None where x or g does not fit."""
    if (type(g) is np.ndarray and g.size > _EACH_CHUNK and not any(g.strides)
            and g.shape == x.shape and g.dtype == x.dtype and _ok(x, f64)):
        out = np.empty_like(x)
        xf, of = x.reshape(-1), out.reshape(-1)
        one = np.full(_EACH_CHUNK, g[(0,) * g.ndim], x.dtype)
        for i in range(0, x.size, _EACH_CHUNK):
            j = min(i + _EACH_CHUNK, x.size)
            fn(xf[i:j], one[:j - i], of[i:j], *params)
        return out
    if (g := _grad_for(x, g, f64)) is None:
        return None
    out = np.empty_like(x)
    fn(x, g, out, *params)
    return out


def _grad_for(x: Any, g: Any, f64: bool = False) -> np.ndarray | None:
    """``g`` as a backward kernel reads it beside ``x`` (C-contiguous, x's shape and dtype):
    g itself, or a C-ordered copy of a host array of x's shape and dtype laid out otherwise (a
    sum's or mean's gradient is a stride-0 broadcast view: one pass to copy, where the NumPy
    formula the kernel replaces takes several); None where x or g does not fit."""
    if _ok(x, f64) and type(g) is np.ndarray and g.shape == x.shape and g.dtype == x.dtype:
        return _dense(g, f64)
    return None


# -- elementwise -----------------------------------------------------------------------------
def _unary32(name: str, x: Any) -> np.ndarray | None:
    """The float32 kernel ``name`` (exp, tanh, erf, erfc, erfinv: fma-based) of x into a new
    array; None where it does not apply."""
    k = _fma_kernels()
    if k is None or not _ok(x):
        return None
    out = np.empty_like(x)
    getattr(k, name)(x, out)
    return out


def exp(x: Any) -> np.ndarray | None:
    """exp(x) of a float32 array, within 0.56 ulp (0.75 where subnormal), split over the threads:
    NumPy's float32 exp runs on one, and without AVX-512 at 2-5 ns a value (docs/benchmarks.md,
    "Session 2026-12-07 (h)"); fma-based. None where the kernel does not apply."""
    return _unary32("exp", x)


def tanh(x: Any) -> np.ndarray | None:
    """tanh(x) of a float32 array, within 1 ulp, split over the threads (NumPy's float32 tanh: one
    thread, 2.8 ns a value with AVX2); fma-based. None where the kernel does not apply."""
    return _unary32("tanh", x)


def lstm_step(g: Any, c: Any, tc: Any, h: Any) -> bool:
    """An LSTM time step's pointwise work in place (ops/nn/recurrent.py ``LSTMSequence``): the
    gate pre-activations ``g`` (rows x 4 hid) become the activations, the cell state ``c`` (rows x
    hid) is updated, tanh(c) goes into ``tc`` and the output into ``h``; the NumPy path's
    operations and order with the kernels' tanh. False (nothing done) where it does not apply
    (float32 C-contiguous host arrays only; fma-based)."""
    k = _fma_kernels()
    if k is None or not (_ok(g) and _ok(c) and _ok(tc) and _ok(h)) or g.size != 4 * c.size:
        return False
    k.lstm_step(g, c, tc, h, c.shape[-1])
    return True


def lstm_step_backward(a: Any, tc: Any, cprev: Any, dm: Any, dc: Any, da: Any) -> bool:
    """The backward of ``lstm_step``: the gate gradients into ``da`` and the cell state's
    gradient ``dc`` carried one step back, in place; False where it does not apply."""
    k = _fma_kernels()
    if (k is None or not all(_ok(v) for v in (a, tc, cprev, dm, dc, da))
            or a.size != 4 * dc.size or da.size != a.size):
        return False
    k.lstm_step_backward(a, tc, cprev, dm, dc, da, dc.shape[-1])
    return True


def gru_step(gi: Any, gh: Any, hp: Any, rz: Any, n: Any, h: Any) -> bool:
    """A GRU time step's pointwise work (ops/nn/recurrent.py ``GRUSequence``): from the input
    projection ``gi`` and the step's product ``gh`` (rows x 3 hid) and the state ``hp``, the gates
    r, z into ``rz``, n into ``n`` and the output into ``h``; the NumPy path's operations with the
    kernels' tanh. False (nothing done) where it does not apply."""
    k = _fma_kernels()
    if (k is None or not all(_ok(v) for v in (gi, gh, hp, rz, n, h))
            or gi.size != 3 * hp.size or gh.size != gi.size or rz.size != 2 * hp.size):
        return False
    k.gru_step(gi, gh, hp, rz, n, h, hp.shape[-1])
    return True


def gru_step_backward(rz: Any, n: Any, ghn: Any, hp: Any, dh: Any, dgi: Any, dgh: Any) -> bool:
    """The backward of ``gru_step``'s pointwise work: the gate gradients into ``dgi`` (of gi) and
    ``dgh`` (of the step's product); False where it does not apply."""
    k = _fma_kernels()
    if (k is None or not all(_ok(v) for v in (rz, n, ghn, hp, dh, dgi, dgh))
            or rz.size != 2 * n.size or dgi.size != 3 * n.size or dgh.size != dgi.size):
        return False
    k.gru_step_backward(rz, n, ghn, hp, dh, dgi, dgh, n.shape[-1])
    return True


def erf(x: Any) -> np.ndarray | None:
    """erf(x) of a float32 array, within 1 ulp; None where the kernel does not apply."""
    return _unary32("erf", x)


def erfc(x: Any) -> np.ndarray | None:
    """erfc(x) of a float32 array, within 1 ulp (relative, also in the tail)."""
    return _unary32("erfc", x)


def erfinv(x: Any) -> np.ndarray | None:
    """erfinv(x) of a float32 array, within 1 ulp; None where the kernel does not apply."""
    return _unary32("erfinv", x)


def erfinv_backward(y: Any, grad: Any) -> np.ndarray | None:
    """grad * sqrt(pi)/2 * exp(y^2) from erfinv's output y (its derivative), float32, one
    rounding; None where the kernel does not apply."""
    k = _fma_kernels()
    return None if k is None else _each(k.erfinv_backward, y, grad, False)


def erf_backward(x: Any, grad: Any, complement: bool = False) -> np.ndarray | None:
    """grad * 2/sqrt(pi) * exp(-x^2) (erf's derivative; negated for erfc), float32."""
    k = _fma_kernels()
    return None if k is None else _each(k.erfc_backward if complement else k.erf_backward, x,
                                        grad, False)


def gelu(x: Any, approximate: str = "none") -> np.ndarray | None:
    """GELU's forward, exact (float32; fma-based) or tanh form (float32 and float64: faster than
    NumPy's blockwise passes, which run on one thread and, with NumPy's AVX2 tanh, at 1.8x the
    kernel's time)."""
    tanh = approximate == "tanh"
    k = active if tanh else _fma_kernels()
    if k is None or not _ok(x, tanh):
        return None
    out = np.empty_like(x)
    (k.gelu_tanh if approximate == "tanh" else k.gelu)(x, out)
    return out


def gelu_backward(x: Any, grad: Any, approximate: str = "none") -> np.ndarray | None:
    """grad times GELU's derivative at x (x and grad of one dtype and shape)."""
    tanh = approximate == "tanh"
    k = active if tanh else _fma_kernels()
    return None if k is None else _each(k.gelu_tanh_backward if tanh else k.gelu_backward, x,
                                        grad, tanh)


_ACT_F64 = frozenset(("sigmoid", "silu", "tanh"))
_ACT_FMA = frozenset(("sigmoid", "silu", "softplus", "elu", "logsigmoid"))  # (not mish)
_ACT_FMA_BACKWARD = _ACT_FMA - {"sigmoid"}  # (sigmoid's backward: arithmetic on y, no fma)


def activation(name: str, x: Any, *params: float) -> np.ndarray | None:
    """The activation ``name`` of a float32 array (float64 too for sigmoid and silu), within 1
    ulp: sigmoid, silu, mish, logsigmoid, softplus (params beta, threshold) or elu (params alpha,
    scale, input_scale: elu, selu and celu)."""
    k = _fma_kernels() if name in _ACT_FMA else active
    if k is None or not _ok(x, name in _ACT_F64):
        return None
    out = np.empty_like(x)
    getattr(k, name)(x, out, *params)
    return out


def activation_backward(name: str, x: Any, grad: Any, *params: float) -> np.ndarray | None:
    """grad times the derivative of the activation ``name`` at x (float32; float64 too for
    silu), or, for "tanh" and "sigmoid", from the saved result y: grad (1 - y y) and
    (grad y) (1 - y), bit for bit the NumPy formulas (float32 and float64)."""
    k = _fma_kernels() if name in _ACT_FMA_BACKWARD else active
    return None if k is None else _each(getattr(k, name + "_backward"), x, grad,
                                        name in _ACT_F64, *params)


# -- over the last dim -----------------------------------------------------------------------
def _mid(x: Any, axis: int) -> tuple[int, int, int] | None:
    """(outer, C, inner) of a C-ordered float32 array over a dim with more than one position
    after it (the middle-axis kernels' layout), else None."""
    if x.dtype != _F32 or x.ndim < 2:
        return None
    axis %= x.ndim
    inner = math.prod(x.shape[axis + 1:])
    if inner < 2:
        return None
    return math.prod(x.shape[:axis]), x.shape[axis], inner


def _last(x: Any, axis: int) -> bool:
    """Whether ``axis`` is x's last dim, or only size-1 dims follow it (the row kernels' case)."""
    return axis % x.ndim == x.ndim - 1 or math.prod(x.shape[axis % x.ndim + 1:]) == 1


def softmax(x: Any, log: bool = False, axis: int = -1) -> np.ndarray | None:
    """softmax (or log_softmax) over ``axis`` of a float32/float64 array (a dim other than the
    last: float32, by the middle-axis kernel; fma-based)."""
    k = _fma_kernels()
    if k is None or not _ok(x, True) or x.ndim == 0:
        return None
    out = np.empty_like(x)
    if _last(x, axis):
        (k.log_softmax if log else k.softmax)(x, out, x.shape[axis])
    elif (mid := _mid(x, axis)) is not None:
        k.softmax_mid(1 if log else 0, x, None, out, None, *mid)
    else:
        return None
    return out


def softmax_backward(y: Any, grad: Any, log: bool = False, axis: int = -1
                     ) -> np.ndarray | None:
    """The gradient of softmax (or log_softmax) over ``axis``, from its output y."""
    k = active
    if k is None or y.ndim == 0 or not _ok(y, True):
        return None
    mid = None if _last(y, axis) else _mid(y, axis)
    if (mid is None and not _last(y, axis)) or (grad := _grad_for(y, grad, True)) is None:
        return None
    out = np.empty_like(y)
    if mid is None:
        (k.log_softmax_backward if log else k.softmax_backward)(y, grad, out, y.shape[axis])
    else:
        k.softmax_mid(3 if log else 2, y, grad, out, None, *mid)
    return out


def softmax_lse(x: Any, need_p: bool, axis: int = -1) -> tuple[Any, np.ndarray] | None:
    """(softmax(x) or None, logsumexp(x)) over ``axis`` (lse with it kept as 1): the max taken
    as 0 where it is not finite, as cross_entropy's formula; lse rounded once (fma-based)."""
    mod = _fma_kernels()
    if mod is None or not _ok(x, True) or x.ndim == 0:
        return None
    axis %= x.ndim
    mid = None if _last(x, axis) else _mid(x, axis)
    if mid is None and not _last(x, axis):
        return None
    p = np.empty_like(x) if need_p else None
    lse = np.empty(x.shape[:axis] + (1,) + x.shape[axis + 1:], x.dtype)
    if mid is None:
        mod.softmax_lse(x, p, lse, x.shape[axis])
    else:
        mod.softmax_mid(4, x, None, p, lse, *mid)
    return p, lse


# -- attention -------------------------------------------------------------------------------
def _rows_dense(a: Any) -> Any:
    """``a`` itself where its matrices' columns are adjacent (any other strides: the kernel
    reads views, such as a transposed (B, T, H, E) -> (B, H, T, E) head split), else a copy."""
    if (a.strides[-1] == a.itemsize or a.shape[-1] == 1) and a.flags.aligned:
        return a
    return np.ascontiguousarray(a)


def _grads_like(q: Any, k: Any, v: Any, need: tuple) -> list:
    """New arrays for the gradients of q, k, v, each in its input's memory order. Where all three
    are views of one C-ordered array (a head split of one projection's output), the three are
    views of one new array of that shape, at their inputs' places: the split's backward then
    finds its pieces tiling one buffer and concatenates nothing (ops/joining.py)."""
    base = q.base
    if (all(need) and base is not None and k.base is base and v.base is base
            and type(base) is np.ndarray and base.flags.c_contiguous and base.dtype == _F32):
        whole = np.empty(base.shape, _F32)
        at = base.__array_interface__["data"][0]
        return [np.ndarray(a.shape, _F32, whole, a.__array_interface__["data"][0] - at,
                           a.strides) for a in (q, k, v)]
    return [np.empty_like(a) if n else None for a, n in zip((q, k, v), need)]


def attention(q: Any, k: Any, v: Any, scale: float, causal: bool,
              out: Any = None) -> tuple | None:
    """softmax(scale q k^T (causal: key j <= query i)) v of float32 (..., L, D), (..., S, D),
    (..., S, Ev) with equal leading dims, into ``out`` (..., L, Ev) (any layout with adjacent
    columns; None: a new C-ordered array): (out, p) with p the probabilities (..., L, S), a
    transposed view of C-ordered (..., S, L); None where the kernel does not apply (its
    softmax is fma-based)."""
    mod = _fma_kernels()
    if (mod is None or type(q) is not np.ndarray or type(k) is not np.ndarray
            or type(v) is not np.ndarray or not q.dtype == k.dtype == v.dtype == _F32
            or q.ndim < 2 or not q.ndim == k.ndim == v.ndim or q.shape[:-2] != k.shape[:-2]
            or k.shape[:-1] != v.shape[:-1] or q.shape[-1] != k.shape[-1]
            or not (q.size and k.size and v.size)):
        return None
    L, D = q.shape[-2:]
    S, Ev = v.shape[-2:]
    if out is None:
        out = np.empty(q.shape[:-1] + (Ev,), _F32)
    pt = np.empty(q.shape[:-2] + (S, L), _F32)
    mod.attention(_rows_dense(q), _rows_dense(k), _rows_dense(v), out, pt, q.size // (L * D),
                  L, S, D, Ev, scale, causal)
    return out, pt.swapaxes(-1, -2)


def attention_backward(q: Any, k: Any, v: Any, p: Any, grad: Any, scale: float, causal: bool,
                       need: tuple) -> tuple | None:
    """(grad_q, grad_k, grad_v) of ``attention`` from its inputs and probabilities ``p`` (its
    transposed view), each in its input's memory order (``empty_like``: a head split's
    transposed view gets a gradient whose transpose back is C-ordered, so the view's backward
    reshapes without a copy), None for those ``need`` leaves out."""
    mod = active
    pt = p.swapaxes(-1, -2)
    if (mod is None or type(grad) is not np.ndarray or grad.dtype != _F32
            or grad.shape != q.shape[:-1] + (v.shape[-1],) or not _ok(pt)
            or pt.shape != k.shape[:-1] + (q.shape[-2],)):
        return None
    L, D = q.shape[-2:]
    S, Ev = v.shape[-2:]
    q, k, v = _rows_dense(q), _rows_dense(k), _rows_dense(v)
    gq, gk, gv = _grads_like(q, k, v, need)
    mod.attention_backward(q, k, v, _rows_dense(grad), pt, gq, gk, gv, q.size // (L * D), L, S,
                           D, Ev, scale, causal)
    return gq, gk, gv


def dense_copy(x: Any) -> np.ndarray | None:
    """``x`` copied into C order where its fastest-moving axis is not its last (a transposed
    or permuted view: NumPy's copy reads it a stride apart), by tiles; the same bits.
    None elsewhere (then ``x.copy()``)."""
    k = active
    if (k is None or type(x) is not np.ndarray or x.ndim < 2 or x.size < 4096
            or x.flags.c_contiguous or x.dtype.hasobject):
        return None
    out = np.empty(x.shape, x.dtype)
    return out if k.transpose_copy(x, out) else None


def gather_dim(x: Any, index: Any, dim: int) -> np.ndarray | None:
    """``take_along_axis`` of ``x`` (index's shape at most x's off ``dim``: the leading part of
    x) in one pass, items copied (any dtype of 1 to 8 bytes); None where the kernel does not
    apply or an index is out of range (NumPy's path then raises)."""
    k = active
    if (k is None or type(x) is not np.ndarray or type(index) is not np.ndarray
            or index.dtype != np.int64 or not index.flags.c_contiguous or index.ndim != x.ndim
            or index.size < 64 or x.dtype.hasobject or x.dtype.itemsize not in (1, 2, 4, 8)):
        return None
    out = np.empty(index.shape, x.dtype)
    return out if k.gather_dim(x, index, out, dim) else None


def scatter_add_dim(out: Any, index: Any, src: Any, dim: int) -> bool:
    """``out`` += ``src`` scattered along ``dim`` by ``index`` (src of index's shape), each value
    added in the index's C order as ``np.add.at`` adds them (the same bits); False where the
    kernel does not apply (the caller's NumPy path runs)."""
    k = active
    if (k is None or type(out) is not np.ndarray or type(index) is not np.ndarray
            or type(src) is not np.ndarray or index.dtype != np.int64
            or not index.flags.c_contiguous or not out.flags.c_contiguous
            or not out.flags.writeable or out.dtype != src.dtype
            or out.dtype not in (_F32, _F64) or index.ndim != out.ndim or not index.size):
        return False
    return bool(k.scatter_add_dim(out, index, src, dim))


def cross_entropy_rows(x: Any, target: Any, need_p: bool) -> tuple | None:
    """cross_entropy's common call on (N, C) logits and N class indices, no weight or
    smoothing, in one kernel call: (softmax or None, logsumexp (N,), per-row loss (N,), their
    sum as np.add.reduce gives it); None where the kernel does not apply or a target is outside
    [0, C) (ignore_index rows, bad labels: the general path). fma-based."""
    k = _fma_kernels()
    if (k is None or type(x) is not np.ndarray or x.ndim != 2 or not x.size
            or (x.dtype != _F32 and x.dtype != _F64) or not x.flags.c_contiguous
            or type(target) is not np.ndarray or target.dtype != np.int64 or target.ndim != 1
            or not target.flags.c_contiguous or target.shape[0] != x.shape[0]):
        return None
    n, c = x.shape
    p = np.empty((n, c), x.dtype) if need_p else None
    lse, loss, total = np.empty(n, x.dtype), np.empty(n, x.dtype), np.empty(1, x.dtype)
    if not k.cross_entropy_rows(x, target, p, lse, loss, total, c):
        return None
    return p, lse, loss, total[0]


def cross_entropy_rows_backward(p: Any, target: Any, s: Any) -> np.ndarray | None:
    """The logits' gradient for ``cross_entropy_rows``: p * s[i], and s[i] (p - 1) at each
    row's target (``s``: one value, or one per row); None where the kernel does not apply."""
    k = active
    if (k is None or type(p) is not np.ndarray or p.ndim != 2 or not p.flags.c_contiguous
            or type(target) is not np.ndarray or target.dtype != np.int64
            or not target.flags.c_contiguous or target.size != p.shape[0]):
        return None
    s = np.ascontiguousarray(s, p.dtype) if type(s) is not np.ndarray or s.dtype != p.dtype \
        or not s.flags.c_contiguous else s
    if s.size != 1 and s.size != p.shape[0]:
        return None
    out = np.empty(p.shape, p.dtype)
    return out if k.cross_entropy_rows_backward(p, target, s, out, p.shape[1]) else None


def relu_backward(out: Any, grad: Any) -> np.ndarray | None:
    """grad where relu's output is > 0 (or NaN), else +0, in one pass (float32/float64, one
    dtype and shape); None where the kernel does not apply."""
    k = active
    return None if k is None else _each(k.relu_backward, out, grad, True)


def clamp(x: Any, lo: Any, hi: Any, inplace: bool = False) -> np.ndarray | None:
    """``minimum(hi, maximum(lo, x))`` (a None bound: none) of a float32/float64 array in one
    pass, the same values as NumPy's (bound first: a tie keeps x), into a new array or into x
    itself (``inplace``: x must be writeable); None where the kernel does not apply (other
    dtypes, non-number or NaN bounds, small arrays: NumPy's call is as fast)."""
    k = active
    if k is None or not _ok(x, True) or x.size < 4096:
        return None
    for b in (lo, hi):  # (ints past 2^53 would round twice on the way to float32)
        if b is not None and (type(b) not in _NUMBERS or (type(b) is int and abs(b) > 1 << 53)):
            return None
    lo = -math.inf if lo is None else float(lo)
    hi = math.inf if hi is None else float(hi)
    if lo != lo or hi != hi:
        return None
    out = x if inplace else np.empty_like(x)
    k.clamp(x, out, lo, hi)
    return out


_NUMBERS = (int, float, np.float32, np.float64)
_ARITH_OPS = {np.add: 0, np.subtract: 1, np.multiply: 2, np.divide: 3}


def arith(f: Any, a: Any, b: Any, out: np.ndarray, scale: Any = None) -> bool:
    """``f(a, b, out=out)`` for ``f`` NumPy's add, subtract, multiply or divide, or ``out[...] =
    b`` (``f`` None, ``a`` None), on the kernels' pool: the same values (IEEE arithmetic rounds
    exactly), split at a few microseconds' cost. ``out``: a C-ordered float32/float64 array;
    ``a`` one of its shape and dtype (``out`` itself for an in-place op); ``b`` likewise, or an
    array of the dtype whose shape is ``out``'s trailing one (a bias: leading 1s allowed), or a
    Python number (within 2^53 for an int). With ``scale`` (a number; add and subtract only):
    ``a +/- b * scale``, the product rounded first, as NumPy's two calls. An array operand that
    shares memory with ``out`` must be ``out`` itself (the parts run at once). False where that
    does not hold (nothing written)."""
    k = active
    if k is None or not _ok(out, True) or not out.flags.writeable:
        return False
    op = 4 if f is None else _ARITH_OPS.get(f)
    if op is None or (a is None) != (op == 4):
        return False
    if scale is not None:
        if op > 1 or not (type(scale) is float or (type(scale) is int
                                                   and -(1 << 53) <= scale <= 1 << 53)):
            return False
        op += 5
    if a is not None and not (_ok(a, True) and a.dtype == out.dtype and a.shape == out.shape
                              and (a is out or not np.may_share_memory(a, out))):
        return False
    if type(b) is float or (type(b) is int and -(1 << 53) <= b <= 1 << 53):
        pass
    elif not (_ok(b, True) and b.dtype == out.dtype
              and (b is out or not np.may_share_memory(b, out))):
        return False
    elif b.shape != out.shape:
        if b.ndim > out.ndim:
            return False
        shape = b.shape
        while shape and shape[0] == 1:
            shape = shape[1:]
        if not shape or len(shape) > out.ndim or out.shape[out.ndim - len(shape):] != shape:
            return False
    if scale is None:
        k.arith(op, a, b, out)
    else:
        k.arith(op, a, b, out, scale)
    return True


PIECEWISE = {"hardtanh": 0, "hardsigmoid": 1, "hardswish": 2, "threshold": 3, "hardshrink": 4,
             "softshrink": 5, "sign": 6, "leaky_relu": 7}
_F32_MAX = float(np.finfo(np.float32).max)


def piecewise(name: str, x: Any, a: Any = 0.0, b: Any = 0.0, grad: Any = None
              ) -> np.ndarray | None:
    """The piecewise-linear activation ``name`` (a key of ``PIECEWISE``) of a C-ordered
    float32/float64 array, or given ``grad`` its gradient, in one pass: the values of its NumPy
    formula (ops/nn/activation.py; the parameters ``a``, ``b`` rounded to the dtype first, as
    NumPy takes Python numbers). None where the kernel does not apply (other dtypes, layouts,
    parameters that are not plain numbers or that overflow float32)."""
    k = active
    if k is None or not _ok(x, True):
        return None
    for v in (a, b):
        if not (type(v) is float or (type(v) is int and -(1 << 53) <= v <= 1 << 53)) or v != v:
            return None
        if x.dtype == _F32 and abs(v) > _F32_MAX and abs(v) != math.inf:
            return None
    op = PIECEWISE[name]
    if grad is not None:
        return _each(lambda x1, g1, out: k.piecewise(op, x1, g1, out, a, b), x, grad, True)
    out = np.empty_like(x)
    k.piecewise(op, x, None, out, a, b)
    return out


def select(cond: Any, a: Any, b: Any) -> np.ndarray | None:
    """``np.where(cond, a, b)`` in one pass: ``cond`` a bool host array, broadcast to the result
    (a bool copy where it is smaller: a causal mask over a batch); ``a`` and ``b`` float32/float64
    arrays of one dtype and the result's shape (another layout read as a C-ordered copy: a sum's
    gradient), or numbers (Python floats, ints within 2^53, 0-d arrays of the dtype), one at
    least an array. The same values, C-ordered; None where it does not apply (operands that
    broadcast, other dtypes, under 256 elements)."""
    k = active
    if k is None or type(cond) is not np.ndarray or cond.dtype != np.bool_:
        return None
    arrays = [v for v in (a, b) if type(v) is np.ndarray and v.ndim]
    if not arrays or arrays[0].dtype not in (_F32, _F64) or arrays[0].size < 256:
        return None
    dt, shape = arrays[0].dtype, arrays[0].shape
    if any(v.dtype != dt or v.shape != shape for v in arrays):
        return None
    nums, ops = [], []
    for v in (a, b):
        if type(v) is np.ndarray and v.ndim:
            nums.append(0.0)
            ops.append(v if v.flags.c_contiguous else np.ascontiguousarray(v))
            continue
        if type(v) is np.ndarray and v.dtype == dt:
            v = float(v)
        elif not (type(v) is float or (type(v) is int and -(1 << 53) <= v <= 1 << 53)):
            return None
        if dt == _F32 and abs(v) > _F32_MAX and abs(v) != math.inf:
            return None
        nums.append(float(v))
        ops.append(None)
    if cond.shape != shape:
        if cond.ndim > len(shape) or np.broadcast_shapes(cond.shape, shape) != shape:
            return None
        cond = np.ascontiguousarray(np.broadcast_to(cond, shape))
    elif not cond.flags.c_contiguous:
        cond = np.ascontiguousarray(cond)
    out = np.empty(shape, dt)
    k.select(cond, ops[0], ops[1], out, nums[0], nums[1])
    return out


def select_grads(cond: Any, grad: Any, need: tuple[bool, bool]) -> tuple | None:
    """where's gradients by ``select``: (grad where cond, else 0; 0 where cond, else grad), each
    None where ``need`` says so; None where the kernel does not apply."""
    if not any(need):
        return None
    ga = select(cond, grad, 0) if need[0] else None
    gb = select(cond, 0, grad) if need[1] and (ga is not None or not need[0]) else None
    return None if (need[0] and ga is None) or (need[1] and gb is None) else (ga, gb)


def prelu(mode: int, x: Any, w: Any, grad: Any = None) -> np.ndarray | None:
    """PReLU of a C-ordered float32/float64 ``x`` with weight ``w`` (one value, or one per
    channel of dim 1), in one pass: mode 0 the output, 1 the input's gradient, 2 the weight's
    gradient terms before their sum (``grad`` given for 1 and 2); Prelu's NumPy formulas'
    values. None where the kernel does not apply."""
    k = active
    if k is None or not _ok(x, True) or x.ndim == 0 or not (
            type(w) is np.ndarray and w.dtype == x.dtype and w.flags.c_contiguous and w.size):
        return None
    if w.size == 1:
        inner = 1
    elif x.ndim < 2 or w.size != x.shape[1]:
        return None
    else:
        inner = math.prod(x.shape[2:])
    if (grad is None) != (mode == 0) or (grad is not None and not (
            _ok(grad, True) and grad.dtype == x.dtype and grad.shape == x.shape)):
        return None
    if inner == 0:
        return None
    out = np.empty_like(x)
    k.prelu(mode, x, w, grad, out, inner)
    return out


def lerp(start: Any, end: Any, w: Any, out: Any = None) -> np.ndarray | None:
    """``start + w * (end - start)`` for a Python number ``w`` and C-ordered float32/float64
    arrays of one shape, in one pass: ``Lerp``'s values (into ``out``, which may be ``start``
    or ``end`` but overlap neither otherwise; a new array by default); None where the kernel
    does not apply."""
    k = active
    if k is None or not (type(w) is float or (type(w) is int and -(1 << 53) <= w <= 1 << 53)):
        return None
    if not (_ok2(start, end, True) and start.size >= 4096):
        return None
    if out is None:
        out = np.empty_like(start)
    elif not (_ok(out, True) and out.dtype == start.dtype and out.shape == start.shape
              and out.flags.writeable and all(v is out or not np.may_share_memory(v, out)
                                              for v in (start, end))):
        return None
    k.lerp(start, end, out, w)
    return out


def smooth_l1(huber: bool, x: Any, t: Any, beta: float, grad: Any = None) -> np.ndarray | None:
    """SmoothL1Loss's (or with ``huber`` HuberLoss's) elementwise terms of C-ordered
    float32/float64 ``x`` and ``t`` of one shape, or given ``grad`` (an array of their shape,
    or 0-d: a mean's or sum's) the input's gradient, in one pass: the NumPy path's values;
    None where the kernel does not apply."""
    k = active
    if k is None or not _ok2(x, t, True) or type(beta) is not float or not beta > 0:
        return None
    gs = 0.0
    if grad is not None:
        if not isinstance(grad, (np.ndarray, np.generic)) or grad.dtype != x.dtype:
            return None
        if grad.ndim == 0:  # (a mean's gradient: a 0-d array or a NumPy scalar)
            gs, grad = float(grad), None
        elif not (_ok(grad, True) and grad.shape == x.shape):
            return None
        mode = 3 if huber else 2
    else:
        mode = 1 if huber else 0
    out = np.empty_like(x)
    k.smooth_l1(mode, x, t, grad, out, beta, gs)
    return out


def addc(div: bool, x: Any, t1: Any, t2: Any, out: np.ndarray, value: Any) -> bool:
    """``out = x + (t1 * t2) * value`` (addcmul), or ``(t1 / t2)`` where ``div`` (addcdiv), in
    one pass on the kernels' pool: NumPy's three calls' values (the product, its scaling by
    ``value`` rounded to the dtype, the sum; division by zero gives NumPy's inf and nan, without
    its warning). x, t1, t2 and out: C-ordered float32/float64 arrays of one dtype and shape;
    out may be any of the others itself but overlap none otherwise; ``value`` a Python number
    (within 2^53 for an int). False where that does not hold (nothing written)."""
    k = active
    if k is None or not _ok(out, True) or not out.flags.writeable or not (
            type(value) is float or (type(value) is int and -(1 << 53) <= value <= 1 << 53)):
        return False
    for v in (x, t1, t2):
        if not (_ok(v, True) and v.dtype == out.dtype and v.shape == out.shape
                and (v is out or not np.may_share_memory(v, out))):
            return False
    k.addc(div, x, t1, t2, out, value)
    return True


def row_sum(x: Any, axes: tuple[int, ...] | None, keepdim: bool,
            square: bool = False) -> np.ndarray | None:
    """``np.add.reduce(x, axes, keepdims=keepdim)`` (of ``x * x`` where ``square``, without
    the temporary) of a C-contiguous float32/float64 array over
    its trailing axes (sorted non-negative ``axes``; None: all), in NumPy's pairwise order with
    its 8 running sums in a vector: the same bits, several times faster; None where the kernel
    does not apply (other axes, dtypes, layouts, small arrays)."""
    k = active
    if k is None or not _ok(x, True) or x.size < 4096:
        return None
    nd = x.ndim
    if axes is not None and (type(axes) is not tuple or (axes and axes[0] < 0)):
        axes = tuple(axes) if isinstance(axes, (tuple, list)) else (int(axes),)  # (an int...)
        axes = tuple(sorted({a % nd for a in axes}))
    lead = 0 if axes is None else nd - len(axes)
    if axes is not None and (lead == nd or axes != tuple(range(lead, nd))):
        return None
    shape = x.shape[:lead]
    out = np.empty(shape + (1,) * (nd - lead) if keepdim else shape, x.dtype)
    k.row_sum(x, out, x.size // out.size, square)
    return out if out.ndim else out[()]  # (a full sum: a NumPy scalar, as add.reduce's)


def cumsum(x: Any, axis: int, reverse: bool = False) -> np.ndarray | None:
    """``np.cumsum(x, axis, dtype=float64).astype(x.dtype)`` (from the end where ``reverse``:
    ``flip(cumsum(flip(x)))``) of a float32/float64 array in one pass (another layout than C
    order read as a C-ordered copy: a sum's broadcast gradient), the same bits (PyTorch's CPU
    cumsum: double sums, each output rounded once); None where the kernel does not apply."""
    k = active
    if k is None or x.ndim == 0 or x.size < 4096 or (x := _dense(x, True)) is None:
        return None
    axis = axis % x.ndim
    n = x.shape[axis]
    inner = math.prod(x.shape[axis + 1:])
    out = np.empty_like(x)
    k.cumsum(x, out, x.size // (n * inner), n, inner, reverse)
    return out


def topk(x: Any, k: int, largest: bool) -> np.ndarray | None:
    """The indices (int64, best first) of the ``k`` largest (smallest) values along the last
    axis of a C-contiguous float32/float64 array, by one scan per row; None where the kernel
    does not apply (k above 64, small arrays) or a row's answer depends on how ties are broken
    (a NaN, equal values among the k best or at the k-th place): the NumPy path's choice then."""
    a = active
    if a is None or not _ok(x, True) or x.ndim == 0 or x.size < 4096 or not 0 < k <= 64:
        return None
    n = x.shape[-1]
    if k >= n:
        return None
    idx = np.empty(x.shape[:-1] + (k,), np.int64)
    a.topk_rows(x, idx, n, k, largest)
    return None if (idx[..., 0] < 0).any() else idx


def triangle(x: Any, k: int, lower: bool) -> np.ndarray | None:
    """``where(tri mask, x, 0)`` (tril where ``lower``, else triu, diagonal ``k``) of a
    C-contiguous host array of any numeric dtype, row by row as bytes: the same bits; None
    where the kernel does not apply (object dtypes, small or empty arrays)."""
    a = active
    if (a is None or type(x) is not np.ndarray or x.ndim < 2 or x.size < 4096
            or not x.flags.c_contiguous or x.dtype.hasobject):
        return None
    out = np.empty(x.shape, x.dtype)
    n, m = x.shape[-2:]
    k = max(min(k, m + 1), -n - 1)  # (beyond the matrix: all kept or all zero)
    a.tri_copy(x.reshape(-1).view(np.uint8), out.reshape(-1).view(np.uint8), n, m,
               x.dtype.itemsize, k, lower)
    return out


def outer(a: Any, b: Any) -> np.ndarray | None:
    """``a[:, None] * b[None, :]`` of two 1-D float32 (or two float64) arrays in one pass, the
    same bits; None where the kernel does not apply (mixed dtypes, small results)."""
    k = active
    if (k is None or not _ok(a, True) or not _ok(b, True) or a.dtype != b.dtype
            or a.ndim != 1 or b.ndim != 1 or a.size * b.size < 4096):
        return None
    out = np.empty((a.size, b.size), a.dtype)
    k.outer(a, b, out)
    return out


def nan_to_num(x: Any, nan: float, posinf: float, neginf: float) -> np.ndarray | None:
    """``np.nan_to_num(x, nan=, posinf=, neginf=)`` of a float32/float64 array in one pass, the
    same bits; None where the kernel does not apply (other dtypes, small arrays)."""
    k = active
    if k is None or not _ok(x, True) or x.size < 4096:
        return None
    out = np.empty_like(x)
    k.nan_to_num(x, out, float(nan), float(posinf), float(neginf))
    return out


def box_muller16(u: Any, mean: float, std: float) -> np.ndarray | None:
    """normal_'s float32 or float64 normals from uniforms in blocks of 16 (ops/_mt19937.py
    ``box_muller16_f32``/``_f64``), bit for bit PyTorch's at every size; None where the kernel
    does not apply (then the NumPy path: exact up to 2^18 values, within a few ulps beyond)."""
    k = active
    if k is None or not _ok(u, True) or u.size % 16:
        return None
    out = np.empty_like(u)
    k.box_muller16(u, out, float(mean), float(std), float(mean != 0.0 or std != 1.0))
    return out


def bernoulli53(bg: np.random.MT19937, limit: int, n: int, dtype: Any,
                scale: float) -> np.ndarray | None:
    """Dropout's noise, n values of ``dtype`` (float32/float64): ``scale`` where a 64-bit draw's
    low 53 bits fall below ``limit``, else 0, drawn from ``bg`` in the order ``words64`` draws."""
    global _direct_mt
    mod = active
    if mod is None or dtype not in (_F32, _F64):
        return None
    if _direct_mt is None:
        _direct_mt = _check_direct_mt(mod)
    out = np.empty(n, dtype)
    with bg.lock:  # (NumPy's own draws take it, and release the GIL while they run)
        mod.bernoulli53(bg.capsule, limit, out, scale, _direct_mt)
    return out


def mt_uniform(bg: np.random.MT19937, n: int, dtype: Any) -> np.ndarray | None:
    """n uniforms on [0, 1) from ``bg`` as ops/_mt19937.py's ``unit24`` (float32) and ``unit53``
    (float64) make them (the same words, the same values), or None where the kernels are off."""
    global _direct_mt
    mod = active
    if mod is None:
        return None
    if _direct_mt is None:
        _direct_mt = _check_direct_mt(mod)
    out = np.empty(n, dtype)
    with bg.lock:
        mod.mt_uniform(bg.capsule, out, _direct_mt)
    return out


_direct_mt: bool | None = None  # whether the kernel may step NumPy's MT19937 state itself


def _check_direct_mt(mod: Any) -> bool:
    """Whether drawing from NumPy's MT19937 state in C gives the words NumPy's own calls give
    (the state's layout is NumPy's internal: checked once per process, across twists)."""
    a, b = np.random.MT19937(12345), np.random.MT19937(12345)
    a.random_raw(100)
    b.random_raw(100)
    here = np.empty(1000, np.float64)  # 2,000 words: three twists
    there = np.empty(1000, np.float64)
    mod.bernoulli53(a.capsule, 1 << 52, here, 1.0, True)
    mod.bernoulli53(b.capsule, 1 << 52, there, 1.0, False)
    return bool(np.array_equal(here, there) and np.array_equal(a.random_raw(700),
                                                                   b.random_raw(700)))


def layer_norm(x: Any, w: Any, b: Any, k: int,
               eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(y, mean, rstd) of layer_norm over the last ``k`` dims (mean and rstd with those dims
    kept as 1), y = (x - mean) * rstd * w + b; w and b of the normalized shape, or None."""
    mod = active
    if mod is None or not _ok(x, True) or k < 1 or k > x.ndim:
        return None
    for p in (w, b):
        if p is not None and not (_ok(p, True) and p.dtype == x.dtype
                                  and p.shape == x.shape[x.ndim - k:]):
            return None
    n = math.prod(x.shape[x.ndim - k:])
    kept = x.shape[:x.ndim - k] + (1,) * k
    out = np.empty_like(x)
    mean = np.empty(kept, x.dtype)
    rstd = np.empty(kept, x.dtype)
    mod.layer_norm(x, w, b, out, mean, rstd, n, float(eps))
    return out, mean, rstd


def layer_norm_backward(x: Any, w: Any, mean: Any, rstd: Any, grad: Any, k: int,
                        need: tuple) -> tuple[Any, Any, Any] | None:
    """(grad_x, grad_w, grad_b) of layer_norm over the last ``k`` dims, each None where
    ``need`` (three flags) says so; None where the kernel does not apply."""
    mod = active
    if mod is None or k < 1 or k > x.ndim or (grad := _grad_for(x, grad, True)) is None:
        return None
    if w is not None and not (_ok(w, True) and w.dtype == x.dtype):
        return None
    if not (_ok(mean, True) and _ok(rstd, True) and mean.dtype == rstd.dtype == x.dtype):
        return None
    kshape = x.shape[x.ndim - k:]
    n = math.prod(x.shape[x.ndim - k:])
    gx = np.empty_like(x) if need[0] else None
    gw = np.empty(kshape, x.dtype) if need[1] else None
    gb = np.empty(kshape, x.dtype) if need[2] else None
    mod.layer_norm_backward(x, w, mean, rstd, grad, gx, gw, gb, n)
    return gx, gw, gb


def rms_norm(x: Any, w: Any, k: int, eps: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(y, rstd) of rms_norm over the last ``k`` dims (rstd with those dims kept as 1),
    y = x * rstd * w; w of the normalized shape, or None."""
    mod = active
    if mod is None or not _ok(x, True) or k < 1 or k > x.ndim:
        return None
    if w is not None and not (_ok(w, True) and w.dtype == x.dtype
                              and w.shape == x.shape[x.ndim - k:]):
        return None
    n = math.prod(x.shape[x.ndim - k:])
    out = np.empty_like(x)
    rstd = np.empty(x.shape[:x.ndim - k] + (1,) * k, x.dtype)
    mod.rms_norm(x, w, out, rstd, n, float(eps))
    return out, rstd


def rms_norm_backward(x: Any, w: Any, rstd: Any, grad: Any, k: int,
                      need: tuple) -> tuple[Any, Any] | None:
    """(grad_x, grad_w) of rms_norm over the last ``k`` dims (grad_w of w's shape, summed in
    float64), each None where ``need`` says so; None where the kernel does not apply."""
    mod = active
    if mod is None or k < 1 or k > x.ndim or (grad := _grad_for(x, grad, True)) is None:
        return None
    if w is not None and not (_ok(w, True) and w.dtype == x.dtype):
        return None
    if not (_ok(rstd, True) and rstd.dtype == x.dtype):
        return None
    kshape = x.shape[x.ndim - k:]
    gx = np.empty_like(x) if need[0] else None
    gw = np.empty(kshape, x.dtype) if need[1] and w is not None else None
    mod.rms_norm_backward(x, w, rstd, grad, gx, gw, math.prod(kshape))
    return gx, gw


# -- over channels: x as (N, C, hw) ------------------------------------------------------------
def _channel_params(x: Any, *params: Any) -> bool:
    """x an (N, C, *) kernel array; each of params None or a C-contiguous array of x's dtype
    with C elements."""
    if not (_ok(x, True) and x.ndim >= 2):
        return False
    c = x.shape[1]
    for p in params:
        if p is not None and not (_ok(p, True) and p.dtype == x.dtype and p.size == c):
            return False
    return True


def batch_norm(x: Any, w: Any, b: Any,
               eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(y, mean, biased var, rstd) of batch_norm's training forward over every dim but 1 (the
    statistics of shape (C,)), y = (x - mean) * rstd * w + b; w and b of C elements, or None."""
    mod = active
    if mod is None or not _channel_params(x, w, b):
        return None
    c = x.shape[1]
    y = np.empty_like(x)
    mean, var, rstd = (np.empty(c, x.dtype) for _ in range(3))
    mod.batch_norm(x, w, b, y, mean, var, rstd, c, x.size // (x.shape[0] * c), float(eps))
    return y, mean, var, rstd


def batch_norm_backward(x: Any, w: Any, mean: Any, rstd: Any, grad: Any,
                        need: tuple) -> tuple[Any, Any, Any] | None:
    """(grad_x, grad_w, grad_b) of batch_norm over every dim but 1 from the saved mean and rstd
    (C elements each), each None where ``need`` says so: grad_w = sum(grad * x_hat) and grad_b
    = sum(grad) per channel in float64 (also with w None: the evaluation mode's sums)."""
    mod = active
    if (mod is None or not _channel_params(x, w, mean, rstd)
            or (grad := _grad_for(x, grad, True)) is None):
        return None
    if mean is None or rstd is None:
        return None
    c = x.shape[1]
    gx = np.empty_like(x) if need[0] else None
    gw = np.empty(c, x.dtype) if need[1] else None
    gb = np.empty(c, x.dtype) if need[2] else None
    mod.batch_norm_backward(x, w, mean, rstd, grad, gx, gw, gb, c, x.size // (x.shape[0] * c))
    return gx, gw, gb


def channel_affine(x: Any, scale: Any, shift: Any) -> np.ndarray | None:
    """x * scale[c] (+ shift[c]) over an (N, C, *) array, one pass (batch_norm in evaluation,
    and its backward's grad * scale): bit for bit NumPy's broadcast x * scale + shift."""
    mod = active
    if mod is None or scale is None or not _channel_params(x, scale, shift):
        return None
    c = x.shape[1]
    y = np.empty_like(x)
    mod.channel_affine(x, scale, shift, y, c, x.size // (x.shape[0] * c))
    return y


def group_norm(x: Any, w: Any, b: Any, groups: int,
               eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(y, mean, rstd) of group_norm (mean and rstd of shape (N, groups, 1)), y = (x - mean) *
    rstd * w[c] + b[c]; w and b of C elements, or None (also for an (N, C) input: one element
    per channel, where the NumPy formula's row passes are faster)."""
    mod = active
    if (mod is None or not _channel_params(x, w, b) or groups < 1 or x.shape[1] % groups
            or x.ndim == 2 or x.size == x.shape[0] * x.shape[1]):
        return None
    n, c = x.shape[0], x.shape[1]
    y = np.empty_like(x)
    mean = np.empty((n, groups, 1), x.dtype)
    rstd = np.empty((n, groups, 1), x.dtype)
    mod.group_norm(x, w, b, y, mean, rstd, c, x.size // (n * c), groups, float(eps))
    return y, mean, rstd


def group_norm_backward(x: Any, w: Any, mean: Any, rstd: Any, grad: Any, groups: int,
                        need: tuple) -> tuple[Any, Any, Any] | None:
    """(grad_x, grad_w, grad_b) of group_norm from the saved mean and rstd ((N, groups, 1)),
    each None where ``need`` says so; grad_w and grad_b summed in float64."""
    mod = active
    if (mod is None or not _channel_params(x, w) or x.size == x.shape[0] * x.shape[1]
            or (grad := _grad_for(x, grad, True)) is None):
        return None
    n, c = x.shape[0], x.shape[1]
    for s in (mean, rstd):
        if not (_ok(s, True) and s.dtype == x.dtype and s.size == n * groups):
            return None
    gx = np.empty_like(x) if need[0] else None
    gw = np.empty(c, x.dtype) if need[1] and w is not None else None
    gb = np.empty(c, x.dtype) if need[2] else None
    mod.group_norm_backward(x, w, mean, rstd, grad, gx, gw, gb, c, x.size // (n * c), groups)
    return gx, gw, gb



# -- scatter-add -------------------------------------------------------------------------------
def scatter_rows(num: int, idx: Any, src: Any, scale: Any = None,
                 take: Any = None) -> np.ndarray | None:
    """A (num, d) array of zeros with out[idx[i]] += src[i] (row take[i] of src where given),
    times scale[i] where given: embedding's backward, bit for bit NumPy's add.at over the rows
    in index order. src a (m, d) float32/float64 array, idx (and take) integer arrays; None
    where the kernel does not apply."""
    mod = active
    if (mod is None or type(src) is not np.ndarray or src.ndim != 2 or type(idx) is not np.ndarray
            or idx.dtype.kind not in "iu" or num < 1):
        return None
    if src.strides[0] == 0 and take is None and src.size:  # one row repeated (a sum's gradient):
        take = np.zeros(src.shape[0], np.int64)  # row 0 taken for each index, no copy of the rows
        src = src[:1]
    if (src := _dense(src, True)) is None:
        return None
    if scale is not None and not (_ok(scale, True) and scale.dtype == src.dtype
                                  and scale.size == idx.size):
        return None
    if take is not None and not (type(take) is np.ndarray and take.dtype.kind in "iu"):
        return None
    out = np.zeros((num, src.shape[1]), src.dtype)
    i64 = np.ascontiguousarray(idx.reshape(-1), np.int64)
    t64 = None if take is None else np.ascontiguousarray(take.reshape(-1), np.int64)
    mod.scatter_rows(i64, t64, src, scale, out, src.shape[1])
    return out


# -- convolution columns -------------------------------------------------------------------------
def im2col(x: Any, shape: tuple, geom: tuple, out: Any = None) -> np.ndarray | None:
    """A convolution's columns of ``shape`` from an (N, C, H, W) float32/float64 image ``x``
    (padding read as zeros, no padded copy), in the layout ``geom`` states (``ember._kernels``'s
    19 ints: sizes, then the columns' strides; into ``out`` where given, a C-contiguous array
    of ``shape``): the values of ops/nn/_kernels.py's strided copies; None where the kernel does
    not apply."""
    mod = active
    if mod is None or not _ok(x, True):
        return None
    cols = np.empty(shape, x.dtype) if out is None else out
    mod.im2col(x, cols, geom)
    return cols


def col2im(cols: Any, shape: tuple, geom: tuple, out: Any = None) -> np.ndarray | None:
    """The (N, C, H, W) image of ``shape`` that sums convolution columns back where they were
    read, each pixel's taps added in tap order from zero (onto ``out`` where given, a
    C-contiguous array of ``shape``): bit for bit the NumPy path's one add per tap; None where
    the kernel does not apply."""
    mod = active
    if mod is None or not _ok(cols, True):
        return None
    acc = out is not None
    if out is None:
        out = np.empty(shape, cols.dtype)
    mod.col2im(cols, out, geom, acc)
    return out


def _into(kernel: str, src: Any, shape: tuple, geom: tuple) -> np.ndarray | None:
    """``kernel(src, out, geom)`` into a new ``out`` of ``shape`` and src's dtype (the convolution
    layout kernels' common call); None where the kernels are off or src is not theirs."""
    mod = active
    if mod is None or not _ok(src, True):
        return None
    out = np.empty(shape, src.dtype)
    getattr(mod, kernel)(src, out, geom)
    return out


def im2row(x: Any, shape: tuple, geom: tuple) -> np.ndarray | None:
    """Row-major convolution columns of ``shape`` (N * OH * OW, kh * kw * C) from an (N, C, H, W)
    float32/float64 image ``x`` (``geom`` as ``col2im_rows``'), taps (i, j, c), the padding read
    as zeros: the values of ops/nn/_kernels.py's strided copy; None where the kernel does not
    apply."""
    return _into("im2row", x, shape, geom)


def col2im_rows(rows: Any, shape: tuple, geom: tuple) -> np.ndarray | None:
    """The (N, C, H, W) image of ``shape`` that sums row-major convolution columns (N * OH * OW,
    kh * kw * C) back where they were read (``geom``: ``ember._kernels``' 14 ints N, C, H, W,
    kh, kw, sh, sw, pt, pl, dh, dw, OH, OW), each pixel's taps added in (i, j) order from zero:
    bit for bit ops/nn/_kernels.py's one add per tap; None where the kernel does not apply."""
    return _into("col2im_rows", rows, shape, geom)


# output channels per tile of ``conv_direct`` (the C file's CD_OB)
_CD_OB = 3


def conv_direct(x: Any, w: Any, b: Any, geom: tuple) -> np.ndarray | None:
    """The convolution of an (N, C, H, W) float32 / float64 image ``x`` by the weight ``w``
    (O, C, kh, kw) plus the bias ``b`` (O,) or None, one group, column stride 1, without columns:
    each output one fma per tap from the bias, the taps in (c, i, j) order. ``geom``: (N, C, H,
    W, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW). None where the kernel does not apply."""
    mod = active
    if (mod is None or not _ok(x, True) or type(w) is not np.ndarray or w.dtype != x.dtype
            or (b is not None and (type(b) is not np.ndarray or b.dtype != x.dtype))):
        return None
    O = w.shape[0]
    K = w[0].size
    Ob = -(-O // _CD_OB)
    wt = np.zeros((Ob * _CD_OB, K), x.dtype)
    wt[:O] = w.reshape(O, K)
    wt = np.ascontiguousarray(wt.reshape(Ob, _CD_OB, K).transpose(0, 2, 1))
    bp = np.zeros(Ob * _CD_OB, x.dtype)
    if b is not None:
        bp[:O] = b
    y = np.empty((x.shape[0], O, geom[12], geom[13]), x.dtype)
    mod.conv_direct(x, wt, bp, y, tuple(geom) + (O,))
    return y


def to_batch_inner(x: Any, shape: tuple, pad: tuple[int, int]) -> np.ndarray | None:
    """The batch-inner buffer of ``shape`` (C, Hp, Wp, N) holding the (N, C, H, W) float32 /
    float64 image ``x`` at (top, left) ``pad``, its border zeros: the values of the NumPy path's
    zeros and transposing copy; None where the kernel does not apply."""
    mod = active
    if mod is None or not _ok(x, True) or x.ndim != 4:
        return None
    buf = np.empty(shape, x.dtype)
    mod.to_batch_inner(x, buf, x.shape + shape[1:3] + tuple(pad))
    return buf


def from_batch_inner(buf: Any, shape: tuple, pad: tuple[int, int] = (0, 0)) -> np.ndarray | None:
    """The (N, C, H, W) image of ``shape`` in the window at (top, left) ``pad`` of a batch-inner
    (C, Hp, Wp, N) float32 / float64 buffer: a transposing copy; None where the kernel does not
    apply."""
    mod = active
    if mod is None or not _ok(buf, True) or buf.ndim != 4:
        return None
    x = np.empty(shape, buf.dtype)
    mod.from_batch_inner(buf, x, tuple(shape) + buf.shape[1:3] + tuple(pad))
    return x


def im2col_batch_inner(x: Any, shape: tuple, geom: tuple) -> np.ndarray | None:
    """Batch-inner convolution columns of ``shape`` ((C * kh * kw) x OH * OW * N elements) from an
    (N, C, H, W) float32 / float64 image ``x`` (``geom`` as ``col2im_rows``'), the padding read as
    zeros: the values of ops/nn/_kernels.py's strided copy; None where the kernel does not
    apply."""
    return _into("im2col_batch_inner", x, shape, geom)


def col2im_batch_inner(cols: Any, shape: tuple, geom: tuple) -> np.ndarray | None:
    """The (N, C, H, W) image of ``shape`` that sums batch-inner columns (C * kh * kw, OH * OW * N)
    back where they were read (``geom`` as ``col2im_rows``'), each pixel's taps added in (i, j)
    order from zero: bit for bit ops/nn/_kernels.py's one add per tap; None where the kernel does
    not apply."""
    return _into("col2im_batch_inner", cols, shape, geom)


def max_pool(x: Any, geom: tuple, need_idx: bool) -> tuple[np.ndarray, Any] | None:
    """Max pooling of an (N, C, H, W) float32/float64 array over windows of ``geom``
    (``ember._kernels``' 12 ints: H, W, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW) -> (maxima
    (N, C, OH, OW), their flat indices h * W + w in the plane as int64, or None without
    ``need_idx``): PyTorch's rule (ties keep the first, NaN propagates and reports the last
    NaN), in one pass; None where the kernel does not apply."""
    mod = active
    if mod is None or not _ok(x, True) or x.ndim != 4:
        return None
    shape = x.shape[:2] + geom[10:12]
    y = np.empty(shape, x.dtype)
    idx = np.empty(shape, np.int64) if need_idx else None
    mod.max_pool(x, y, idx, geom)
    return y, idx


def max_pool_backward(gy: Any, idx: Any, shape: tuple, unique: bool) -> np.ndarray | None:
    """Max pooling's input gradient of ``shape`` (planes, n): each plane's ``gy`` (planes, m)
    put at ``idx`` (int64, same shape), assigned where ``unique`` (no index twice in a plane),
    else summed in float64 in output order and rounded once (NumPy's bincount, bit for bit);
    None where the kernel does not apply."""
    mod = active
    if mod is None or not _ok(gy, True) or type(idx) is not np.ndarray or \
            idx.dtype != np.int64 or not idx.flags.c_contiguous or idx.size != gy.size:
        return None
    out = np.empty(shape, gy.dtype)
    mod.max_pool_backward(gy, idx, out, unique, shape[-1])
    return out


# -- half-precision casts ------------------------------------------------------------------------
_F16 = np.dtype(np.float16)


def half_cast(a: Any, dtype: Any) -> np.ndarray | None:
    """``a.astype(dtype)`` for a C-contiguous float32 array to bfloat16 or float16, or back to
    float32, in one pass (bit for bit ml_dtypes'/NumPy's casts: round to nearest even, NaN as
    they make it; no RuntimeWarning for overflow or NaN, as PyTorch's casts give none); None
    where the kernel does not apply."""
    mod = active
    if mod is None or type(a) is not np.ndarray or not a.flags.c_contiguous or a.size == 0:
        return None
    if _ROUNDED:
        kept = _ROUNDED.pop(id(a), None)
        if kept is not None:
            if kept[0] is a and dtype == _F32:
                return kept[1]
            _ROUNDED[id(a)] = kept
    key = (a.dtype, dtype)
    mode = _HALF_MODES.get(key, -1)
    if mode == -1:  # (a dict: autocast casts ~40 times a step, the name checks cost 1.5 us each)
        mode = _HALF_MODES[key] = _half_mode(a.dtype, np.dtype(dtype))
    if mode is None:
        return None
    if mode == 0 or mode == 2:
        out = np.empty(a.shape, dtype)
        if keep_rounded and a.size >= ROUND_MIN:  # (autocast's casts for its lower-precision ops)
            wide = np.empty(a.shape, _F32)
            mod.half_round(a, out.view(np.uint16), wide, mode)
            _keep(out, wide)
        else:
            mod.half_cast(a, out.view(np.uint16), mode)
    else:
        out = np.empty(a.shape, _F32)
        mod.half_cast(a.view(np.uint16), out, mode)
    return out


_HALF_MODES: dict = {}  # (source dtype, target) -> half_cast's mode, None where none applies


def bf16_gemm_ready(dtype: Any) -> bool:
    """Whether ``bf16_gemm`` runs for arrays of ``dtype``: bfloat16, the kernels on, and a CPU
    with AVX512-BF16 (checked once per module: ``disabled()`` swaps the module)."""
    mod = active
    if mod is None or dtype.itemsize != 2 or dtype.name != "bfloat16":
        return False
    ok = _BF16_GEMM.get(id(mod))
    if ok is None:
        ok = _BF16_GEMM[id(mod)] = bool(mod.bf16_gemm_supported())
    return ok


_BF16_GEMM: dict = {}


def bf16_gemm(a: Any, b: Any, out: Any = None) -> np.ndarray | None:
    """``a @ b`` of bfloat16 host arrays in float32, from the bfloat16 values themselves
    (AVX512-BF16 products, float32 sums; _kernels_gemm.c): (..., M, K) @ (..., K, N) ->
    (..., M, N), batch dims broadcast as matmul's. Any strides: a transposed or broadcast
    operand is not copied. ``out``: a C-contiguous float32 array of the result's shape to write
    (else a new one). None where it does not apply (other dtypes, 1-D operands, batch dims that
    do not broadcast, an ``out`` of another shape or layout, CPUs without the instruction)."""
    if (type(a) is not np.ndarray or type(b) is not np.ndarray or a.dtype != b.dtype
            or not bf16_gemm_ready(a.dtype) or a.ndim < 2 or b.ndim < 2
            or a.shape[-1] != b.shape[-2]):
        return None
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None
    m, n = a.shape[-2], b.shape[-1]
    if out is None:
        out = np.empty(batch + (m, n), _F32)
    elif (type(out) is not np.ndarray or out.dtype != _F32 or out.shape != batch + (m, n)
            or not out.flags.c_contiguous or not out.flags.writeable):
        return None
    if not batch:
        active.bf16_gemm(a.view(np.uint16)[None], b.view(np.uint16)[None], out[None])
        return out
    # one call per stack of the last batch dim (the kernel's batch: strides, 0 where broadcast)
    a = np.broadcast_to(a.view(np.uint16), batch + a.shape[-2:])
    b = np.broadcast_to(b.view(np.uint16), batch + b.shape[-2:])
    for idx in np.ndindex(batch[:-1]):
        active.bf16_gemm(a[idx], b[idx], out[idx])
    return out


# A half array's float32 values computed in the same pass that rounded it (``half_round``), for
# the cast back that follows (autocast: a weight's bfloat16 copy, then its float32 values for the
# GEMM; a weight gradient rounded to bfloat16, then its float32 values for ``.grad``): id(half
# array) -> (it, its float32 values), taken by ``half_cast(half array, float32)`` once. The entry
# holds the half array, so its id stays its own, and the engine never adds into it in place (it
# does so only where nothing else holds a buffer). At most ROUND_KEEP entries (the oldest go);
# autocast's exit drops them all.
_ROUNDED: dict = {}
ROUND_KEEP = 8
ROUND_MIN = 1 << 16  # elements: below this, the separate passes cost no more
keep_rounded = False  # set by autocast around its casts to its lower-precision dtype (another
# thread's large casts meanwhile keep their values too: memory for a while, the same results)


def _keep(half: np.ndarray, wide: np.ndarray) -> None:
    if len(_ROUNDED) >= ROUND_KEEP:  # (pop, not del: another thread may have taken it)
        _ROUNDED.pop(next(iter(_ROUNDED), None), None)
    _ROUNDED[id(half)] = (half, wide)


def drop_rounded() -> None:
    """Forget the kept float32 values of rounded half arrays (autocast's exit)."""
    _ROUNDED.clear()


def half_round(a: Any, dtype: Any) -> np.ndarray | None:
    """``a`` (a C-contiguous float32 array that nothing else reads: a gradient just computed)
    rounded to ``dtype`` (bfloat16 or float16) and, in the same pass, overwritten with the
    rounded values as float32; the half array returned, ``a`` kept for the next
    ``half_cast(half array, float32)``, which returns it instead of a new cast (the same bits).
    None where the kernel does not apply or ``a`` is small (then ``a`` is unchanged)."""
    mod = active
    if (mod is None or type(a) is not np.ndarray or a.dtype != _F32 or a.size < ROUND_MIN
            or not a.flags.c_contiguous or not a.flags.writeable):
        return None
    mode = _HALF_MODES.get((a.dtype, dtype), -1)
    if mode == -1:
        mode = _HALF_MODES[(a.dtype, dtype)] = _half_mode(a.dtype, np.dtype(dtype))
    if mode != 0 and mode != 2:
        return None
    out = np.empty(a.shape, dtype)
    mod.half_round(a, out.view(np.uint16), a, mode)
    _keep(out, a)
    return out


def _half_mode(src: np.dtype, dt: np.dtype) -> int | None:
    """The kernel's mode: float32 to bfloat16 0, back 1; float32 to float16 2, back 3."""
    if src == _F32:
        if dt == _F16:
            return 2
        return 0 if dt.name == "bfloat16" and dt.itemsize == 2 else None
    if dt != _F32 or src.itemsize != 2:
        return None
    if src == _F16:
        return 3
    return 1 if src.name == "bfloat16" else None


# -- optimizer steps -------------------------------------------------------------------------
def _same(d: Any, *arrays: Any) -> bool:
    """Host arrays of d's float dtype and size, C-contiguous (d writable)."""
    if not (_ok(d, True) and d.flags.writeable):
        return False
    dt, n = d.dtype, d.size
    for a in arrays:  # (a loop, not all() over a generator: this runs per parameter and step)
        if type(a) is not np.ndarray or a.dtype != dt or a.size != n or not a.flags.c_contiguous:
            return False
    return True


def adam_step(d: Any, g: Any, m: Any, v: Any, vmax: Any, decay: float, b1: float, b2: float,
              bc2: float, eps: float, step: float) -> bool:
    """One Adam/AdamW step in place (optim/adam.py's blocked path, bit for bit); False where the
    kernel does not apply (the caller runs the NumPy path)."""
    k = active
    if k is None or not _same(d, g, m, v, *(() if vmax is None else (vmax,))):
        return False
    k.adam(d, g, m, v, vmax, decay, b1, 1.0 - b1, 1.0 - b2, b2, bc2, eps, step)
    return True


def adam_many(ds: list, gs: list, ms: list, vs: list, steps: list, decay: float, b1: float,
              b2: float, eps: float, lr: float) -> bool:
    """A parameter group's Adam/AdamW steps in one call (``adam_step`` for each, after
    ``step += 1``), all or nothing: False (nothing changed) where the kernels are off or an
    array is not a C-contiguous float32/float64 NumPy array (the caller steps them one by one)."""
    k = active
    if k is None:
        return False
    return k.adam_many(np.ndarray, ds, gs, ms, vs, steps, decay, b1, b2, eps, lr)


def sgd_many(ds: list, gs: list, bufs: list | None, momentum: float, damp: float | None,
             lr: float, nesterov: bool) -> bool:
    """A parameter group's SGD steps in one call (without ``bufs``: d -= g lr; with them the
    momentum step, ``damp`` = 1 - dampening or None), all or nothing: False (nothing changed)
    where the kernels are off or an array does not fit (the caller steps them one by one)."""
    k = active
    if k is None:
        return False
    return k.sgd_many(np.ndarray, ds, gs, bufs, momentum, damp, lr, nesterov)


def rmsprop_many(ds: list, gs: list, vs: list, avgs: list | None, bufs: list | None,
                 steps: list, alpha: float, eps: float, momentum: float, lr: float) -> bool:
    """A parameter group's RMSprop steps in one call (``rmsprop_step`` for each after
    ``step += 1``; ``avgs`` the centered form's grad_avg, ``bufs`` the momentum buffers, None
    where unused), all or nothing: False (nothing changed) where the kernels are off or an array
    does not fit (the caller steps them one by one)."""
    k = active
    if k is None:
        return False
    return k.rmsprop_many(np.ndarray, ds, gs, vs, avgs, bufs, steps, alpha, eps, momentum, lr)


def sgd_momentum_step(d: Any, g: Any, buf: Any, momentum: float, dampening: float, lr: float,
                      nesterov: bool) -> bool:
    """buf = momentum buf + (1 - dampening) g; d -= lr (g + momentum buf if nesterov else buf),
    in place, bit for bit optim/sgd.py's NumPy path; False where the kernel does not apply."""
    k = active
    if k is None or not _same(d, g, buf):
        return False
    k.sgd_momentum(d, g, buf, momentum, 1.0 - dampening if dampening != 0 else None, lr,
                   bool(nesterov))
    return True


def rmsprop_step(d: Any, g: Any, v: Any, a: Any, buf: Any, alpha: float, eps: float,
                 momentum: float, lr: float) -> bool:
    """One RMSprop step in place (optim/rmsprop.py's NumPy path, bit for bit): ``a`` the
    centered form's grad_avg and ``buf`` the momentum buffer, each None where unused; False
    where the kernel does not apply (the caller runs the NumPy path)."""
    k = active
    if k is None or not _same(d, g, v, *(() if a is None else (a,)),
                              *(() if buf is None else (buf,))):
        return False
    k.rmsprop(d, g, v, a, buf, alpha, 1.0 - alpha, eps, momentum, lr)
    return True
