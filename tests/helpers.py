"""Shared checks for the op tests: one lambda runs on ember and on torch (tinygrad's trick).

``check_op(fn, *arrays)`` where ``fn(m, *tensors)`` uses module ``m`` (ember or torch), e.g.
``check_op(lambda m, x, y: m.maximum(x, y), a, b)``. It checks, in order:

1. forward against a NumPy reference (``ref(*arrays)``), when given;
2. float32 in -> float32 out (no silent float64 upcast);
3. float64 gradcheck with a random cotangent (central differences);
4. gradgradcheck when ``gradgrad=True``;
5. parity with PyTorch (values, dtypes, gradients for the same random cotangent), when torch
   is importable.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import subprocess
import sys
import tracemalloc
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import ember

try:
    import torch

    HAVE_TORCH = True
except ImportError:  # pragma: no cover - CI installs torch
    torch = None
    HAVE_TORCH = False

# bfloat16 tensors need the bf16 extra (ml_dtypes); the core-only CI step runs without it
HAVE_ML_DTYPES = importlib.util.find_spec("ml_dtypes") is not None


def _to_ember(a: Any, requires_grad: bool, dtype: Any = None) -> Any:
    if isinstance(a, np.ndarray):
        arr = a if dtype is None else a.astype(dtype)
        t = ember.tensor(arr)
        if requires_grad and t.is_floating_point():
            t.requires_grad_()
        return t
    return a


def _to_torch(a: Any, requires_grad: bool, dtype: Any = None) -> Any:
    if isinstance(a, np.ndarray):
        arr = a if dtype is None else a.astype(dtype)
        t = torch.tensor(arr)
        if requires_grad and t.is_floating_point():
            t.requires_grad_()
        return t
    return a


def _outs(x: Any) -> list:
    if isinstance(x, tuple | list):
        return [o for o in x if hasattr(o, "shape") and not isinstance(o, np.ndarray)]
    return [x]


def check_op(
    fn: Callable,
    *arrays: Any,
    ref: Callable | None = None,
    grad: bool = True,
    gradgrad: bool = False,
    torch_fn: Callable | None = None,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    grad_atol: float = 1e-5,
    grad_rtol: float = 1e-3,
    check_float32: bool = True,
    grad_inputs: tuple[int, ...] | None = None,
) -> None:
    """See the module docstring. ``arrays`` are float64 NumPy arrays (ints stay ints) or scalars."""
    arrays = tuple(np.asarray(a) if isinstance(a, np.generic) else a for a in arrays)
    wants = lambda i, a: isinstance(a, np.ndarray) and a.dtype.kind == "f" and (
        grad_inputs is None or i in grad_inputs)

    # 1. forward vs NumPy
    e_in = [_to_ember(a, False) for a in arrays]
    e_out = fn(ember, *e_in)
    if ref is not None:
        expected = ref(*arrays)
        for o, r in zip(_outs(e_out), expected if isinstance(expected, tuple) else (expected,)):
            np.testing.assert_allclose(o.detach().numpy(), r, atol=atol, rtol=rtol)

    # 2. float32 stays float32
    if check_float32 and any(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in arrays):
        f32 = [_to_ember(a, False, np.float32 if isinstance(a, np.ndarray) and a.dtype == np.float64 else None)
               for a in arrays]
        for o in _outs(fn(ember, *f32)):
            if o.is_floating_point():
                assert o.dtype == ember.float32, f"float32 inputs gave {o.dtype}"

    # 3./4. gradients
    if grad:
        g_in = [_to_ember(a, wants(i, a)) for i, a in enumerate(arrays)]
        if any(getattr(t, "requires_grad", False) for t in g_in):
            ember.autograd.gradcheck(lambda *xs: fn(ember, *xs), tuple(g_in),
                                     atol=grad_atol, rtol=grad_rtol)
            if gradgrad:
                ember.autograd.gradgradcheck(lambda *xs: fn(ember, *xs), tuple(g_in),
                                             atol=grad_atol, rtol=grad_rtol)
            _check_odd_cotangents(fn, g_in)

    # 5. parity with PyTorch
    if HAVE_TORCH:
        tfn = torch_fn or fn
        e_in = [_to_ember(a, grad and wants(i, a)) for i, a in enumerate(arrays)]
        t_in = [_to_torch(a, grad and wants(i, a)) for i, a in enumerate(arrays)]
        e_o, t_o = _outs(fn(ember, *e_in)), _outs(quiet_reference(tfn, torch, *t_in))
        assert len(e_o) == len(t_o)
        rng = np.random.default_rng(0)
        e_roots, t_roots, e_gs, t_gs = [], [], [], []
        for eo, to in zip(e_o, t_o):
            assert tuple(eo.shape) == tuple(to.shape), f"shape {tuple(eo.shape)} vs torch {tuple(to.shape)}"
            assert str(eo.dtype) == str(to.dtype), f"dtype {eo.dtype} vs torch {to.dtype}"
            tv = to.detach().numpy()
            ev = eo.detach().numpy()
            if tv.dtype.kind == "f":
                np.testing.assert_allclose(ev, tv, atol=atol, rtol=rtol, equal_nan=True)
            else:
                np.testing.assert_array_equal(ev, tv)
            if grad and getattr(eo, "requires_grad", False) and to.requires_grad:
                v = rng.standard_normal(tuple(eo.shape))
                e_roots.append(eo)
                t_roots.append(to)
                e_gs.append(ember.tensor(v, dtype=eo.dtype))
                t_gs.append(torch.tensor(v, dtype=to.dtype))
        if e_roots:
            e_leaves = [t for t in e_in if getattr(t, "requires_grad", False)]
            t_leaves = [t for t in t_in if getattr(t, "requires_grad", False)]
            eg = ember.autograd.grad(e_roots, e_leaves, e_gs, allow_unused=True)
            tg = torch.autograd.grad(t_roots, t_leaves, t_gs, allow_unused=True)
            for a, b in zip(eg, tg):
                if b is None:
                    assert a is None or not a.numpy().any()
                    continue
                assert a is not None, "ember gave no gradient where torch did"
                np.testing.assert_allclose(a.numpy(), b.numpy(), atol=grad_atol, rtol=grad_rtol)


def _check_odd_cotangents(fn: Callable, g_in: list) -> None:
    """6. A gradient may arrive broadcast (``sum``'s backward hands out a stride-0 array) or
    non-contiguous: the op's backward must give the same result as for a contiguous copy."""
    roots = [o for o in _outs(fn(ember, *g_in)) if getattr(o, "requires_grad", False)]
    leaves = [t for t in g_in if getattr(t, "requires_grad", False)]
    if not roots or not leaves:
        return
    rng = np.random.default_rng(1)
    for layout in ("broadcast", "fortran"):
        odd, plain = [], []
        for o in roots:
            shape = tuple(o.shape)
            dt = o.detach().numpy().dtype
            if layout == "broadcast":
                row = rng.standard_normal((1,) + shape[1:]).astype(dt) if shape else np.ones((), dt)
                arr = np.broadcast_to(row, shape)
            else:  # column-major (asfortranarray would make a 0-d array 1-d)
                arr = np.asarray(rng.standard_normal(shape), dtype=dt)
                arr = np.asfortranarray(arr) if arr.ndim else arr
            odd.append(ember.Tensor._make(arr))
            plain.append(ember.Tensor._make(np.array(arr, order="C")))
        outs = [o for o in _outs(fn(ember, *g_in)) if getattr(o, "requires_grad", False)]
        got = ember.autograd.grad(outs, leaves, odd, allow_unused=True)
        outs = [o for o in _outs(fn(ember, *g_in)) if getattr(o, "requires_grad", False)]
        want = ember.autograd.grad(outs, leaves, plain, allow_unused=True)
        for a, b in zip(got, want):
            if a is None or b is None:
                assert a is None and b is None
                continue
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12,
                                       err_msg=f"{layout} cotangent gave another gradient")


def randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + 7 * len(shape) + sum(shape)).standard_normal(shape)


def positive(*shape: int, seed: int = 0) -> np.ndarray:
    return np.abs(randn(*shape, seed=seed)) + 0.5


def quiet_reference(fn: Callable, *args: Any) -> Any:
    """Run the PyTorch side of a comparison with PyTorch's own warnings silenced (its deprecation
    notices and notes about its behaviour are not ember's; ember's warnings are compared with
    PyTorch's in tests/test_warnings.py, where they are the point)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def strict_parity(fn, *arrays, grad_inputs=None, grad=True, **_):
    """float64 values and gradients (random cotangent) equal PyTorch's to rtol 1e-6."""
    if not HAVE_TORCH:
        return
    import torch

    def wants(i, a):
        return (grad and isinstance(a, np.ndarray) and a.dtype.kind == "f"
                and (grad_inputs is None or i in grad_inputs))

    e_in = [ember.tensor(a, requires_grad=wants(i, a)) if isinstance(a, np.ndarray) else a
            for i, a in enumerate(arrays)]
    t_in = [torch.tensor(a, requires_grad=wants(i, a)) if isinstance(a, np.ndarray) else a
            for i, a in enumerate(arrays)]
    eo, to = fn(ember, *e_in), quiet_reference(fn, torch, *t_in)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-6, atol=1e-10)
    e_leaves = [t for t in e_in if getattr(t, "requires_grad", False)]
    t_leaves = [t for t in t_in if getattr(t, "requires_grad", False)]
    if not e_leaves:
        return
    v = np.random.default_rng(1).standard_normal(tuple(to.shape))
    eg = ember.autograd.grad([eo], e_leaves, [ember.tensor(v)], allow_unused=True)
    tg = torch.autograd.grad([to], t_leaves, [torch.tensor(v)], allow_unused=True)
    for a, b in zip(eg, tg):
        if b is None:
            assert a is None or not a.numpy().any()
        else:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-10)


def check(fn, *arrays, **kw):
    """check_op (reference, float32, gradcheck, loose parity) plus strict float64 parity."""
    check_op(fn, *arrays, **kw)
    strict_parity(fn, *arrays, **kw)


def peak_bytes(step: Callable[[], Any]) -> int:
    """Bytes allocated above the start while ``step`` runs (NumPy reports its arrays to
    tracemalloc; ``step``'s result is dropped inside it)."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        step()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def rerun_on_pure_python(path: str, deselect: str = "not pure_python") -> None:
    """Run the test file ``path`` again in a subprocess with ``EMBER_PURE_PYTHON=1`` (the files
    that CI's pure-Python step does not list), the tests ``-k deselect`` keeps."""
    env = dict(os.environ, EMBER_PURE_PYTHON="1")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           path, "-k", deselect], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def count_calls(monkeypatch: Any, module: Any, name: str) -> dict:
    """Replace ``module.name`` (for the test) with a wrapper that counts its calls in
    ``["n"]`` and then calls the original: which path a call took."""
    calls = {"n": 0}
    orig = getattr(module, name)

    def spy(*a: Any, **k: Any) -> Any:
        calls["n"] += 1
        return orig(*a, **k)

    monkeypatch.setattr(module, name, spy)
    return calls
