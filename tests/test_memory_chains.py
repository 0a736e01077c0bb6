"""Issue 28: elementwise chains in eager mode. What each activation saves for backward (PyTorch's
formula: GELU, SiLU, Mish, ELU, Softplus, Hardswish keep their input only; tanh and sigmoid
their result), by identity, with no hidden full-size array on the node; values and gradients
against PyTorch; peaks (tracemalloc: NumPy reports its allocations to it) with bounds the old
code exceeded; the optimizers' steps and activation checkpointing."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from helpers import peak_bytes

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
MB = 1 << 20
rng = np.random.default_rng(0)


_peak = peak_bytes


def _arrays_on(node: object) -> list:
    """Every array a node keeps: its saved tensors and any array among its context's fields."""
    found = [s for s in node._saved if isinstance(s, np.ndarray)]
    found += [v for v in vars(node).values() if isinstance(v, np.ndarray)]
    return found


ACTIVATIONS: dict[str, tuple[Callable, str]] = {
    # name: (fn(module, F, x), what PyTorch's formula saves: "self" or "result")
    "gelu": (lambda m, f, x: f.gelu(x), "self"),
    "gelu_tanh": (lambda m, f, x: f.gelu(x, approximate="tanh"), "self"),
    "silu": (lambda m, f, x: f.silu(x), "self"),
    "mish": (lambda m, f, x: f.mish(x), "self"),
    "softplus": (lambda m, f, x: f.softplus(x, beta=2.0, threshold=3.0), "self"),
    "elu": (lambda m, f, x: f.elu(x, 0.7), "self"),
    "selu": (lambda m, f, x: f.selu(x), "self"),
    "celu": (lambda m, f, x: f.celu(x, 0.5), "self"),
    "hardswish": (lambda m, f, x: f.hardswish(x), "self"),
    "logsigmoid": (lambda m, f, x: f.logsigmoid(x), "self"),
    "tanh": (lambda m, f, x: m.tanh(x), "result"),
    "sigmoid": (lambda m, f, x: m.sigmoid(x), "result"),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_saves_only_what_pytorchs_formula_saves(name):
    fn, what = ACTIVATIONS[name]
    x = ember.randn(70_000, requires_grad=True)  # past one block of the fused kernels
    y = fn(ember, F, x)
    kept = _arrays_on(y.grad_fn)
    want = x._data if what == "self" else y._data
    assert len(kept) == 1 and kept[0] is want, [(a.shape, a is x._data) for a in kept]
    if torch is not None:
        node = fn(torch, TF, torch.randn(3, requires_grad=True)).grad_fn
        assert hasattr(node, f"_saved_{what}")


@needs_torch
@pytest.mark.parametrize("name", list(ACTIVATIONS))
@pytest.mark.parametrize("layout", ["small", "blocks", "transposed", "broadcast_grad"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activation_values_and_gradients_match_torch(name, layout, dtype):
    fn, _ = ACTIVATIONS[name]
    shape = (37, 5) if layout == "small" else (300, 700)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    x.reshape(-1)[:8] = [0.0, -0.0, 3.0, -3.0, 25.0, -25.0, 1e-30, -13.5]
    if layout == "transposed":
        x = x.T
    g = rng.standard_normal(x.shape).astype(dtype)
    res = []
    for m, f in ((ember, F), (torch, TF)):
        t = m.tensor(x, requires_grad=True)
        y = fn(m, f, t)
        if layout == "broadcast_grad":
            y.sum().backward()
        else:
            y.backward(m.tensor(g))
        res.append((y.detach().numpy(), t.grad.numpy()))
    (ye, ge), (yt, gt) = res
    assert ye.dtype == yt.dtype == ge.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(ye, yt, rtol=tol, atol=tol)
    np.testing.assert_allclose(ge, gt, rtol=tol, atol=tol * (20 if name == "gelu" else 1))


@needs_torch
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_special_values_match_torch(name):
    fn, _ = ACTIVATIONS[name]
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, -3.0, 3.0, -13.5, 13.5], np.float32)
    res = []
    for m, f in ((ember, F), (torch, TF)):
        t = m.tensor(x, requires_grad=True)
        fn(m, f, t).backward(m.ones(9))
        res.append(t.grad.numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", ["gelu", "gelu_tanh", "silu", "mish", "softplus", "elu",
                                  "hardswish", "logsigmoid", "sigmoid", "tanh"])
def test_activation_forward_backward_peak(name):
    """forward + backward of one activation: the result, its gradient and .grad, nothing more
    (the fused kernels' scratch is a few blocks); the old formulas built 3-4 more full arrays."""
    fn, _ = ACTIVATIONS[name]
    n = 1 << 21  # 8 MB per float32 array
    x = ember.randn(n, requires_grad=True)

    def step() -> None:
        fn(ember, F, x).sum().backward()

    step()
    x.grad = None
    assert _peak(step) < 2 * 8 * MB + 3 * MB


def test_gelu_times_tanh_peak_as_pytorchs():
    """The issue's chain ``gelu(x) * tanh(x)``, the product held through backward: PyTorch's
    peak is five arrays (gelu's and tanh's results, the product, two gradients); ember kept
    GELU's CDF and built tanh's gradient in two steps (seven)."""
    n = 1 << 21
    x = ember.randn(n, requires_grad=True)

    def step() -> None:
        y = F.gelu(x) * ember.tanh(x)
        y.sum().backward()

    step()
    x.grad = None
    assert _peak(step) < 5 * 8 * MB + 2 * MB


# -- optimizers' steps --------------------------------------------------------------------------

OPTIMIZERS: dict[str, tuple[str, dict, float]] = {
    # name: (class, options, the most temporaries a step may build, in parameter sizes;
    # PyTorch's single-tensor steps build 0 (SGD momentum: in-place lerp/add), 1 (RMSprop,
    # Adagrad: the denominator), 2 (Adam: sqrt, then the division by the bias correction))
    "sgd_momentum": ("SGD", dict(lr=0.1, momentum=0.9), 0.1),
    "adam": ("Adam", dict(lr=1e-3), 0.1),
    "adamw": ("AdamW", dict(lr=1e-3, weight_decay=0.01), 0.1),
    "rmsprop": ("RMSprop", dict(lr=1e-3), 1.1),
    "adagrad": ("Adagrad", dict(lr=1e-2), 1.1),
    # PyTorch 2.13 measured (16 MB parameter, foreach=False): amsgrad 2, centered RMSprop with
    # momentum 1, Adamax 1, NAdam 2, Adadelta 2
    "adam_amsgrad": ("Adam", dict(lr=1e-3, amsgrad=True), 0.1),
    "adamw_amsgrad": ("AdamW", dict(lr=1e-3, amsgrad=True), 0.1),
    "rmsprop_centered_momentum": ("RMSprop", dict(lr=1e-3, momentum=0.9, centered=True), 1.1),
    "adamax": ("Adamax", dict(lr=1e-3), 1.1),
    "nadam": ("NAdam", dict(lr=1e-3), 2.1),
    "adadelta": ("Adadelta", dict(), 2.1),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_step_peak(name):
    cls, kw, most = OPTIMIZERS[name]
    n = 1 << 21
    p = ember.randn(n, requires_grad=True)
    p.grad = ember.randn(n)
    opt = getattr(ember.optim, cls)([p], **kw)
    opt.step()
    opt.step()
    assert _peak(opt.step) < most * 8 * MB + MB


@needs_torch
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_trajectory_matches_torch(name):
    cls, kw, _ = OPTIMIZERS[name]
    w0 = rng.standard_normal((300, 301)).astype(np.float32)
    grads = [rng.standard_normal(w0.shape).astype(np.float32) for _ in range(4)]
    out = []
    for m in (ember, torch):
        p = m.tensor(w0.copy(), requires_grad=True)
        opt = getattr(m.optim, cls)([p], **kw)
        for g in grads:
            p.grad = m.tensor(g)
            opt.step()
        out.append(p.detach().numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-6, atol=1e-6)
