"""Ops that the op-table memory sweep (``python -m bench.memory_sweep``) found above PyTorch's
peak: each now builds no more full-size arrays than its formula needs, with values unchanged
(compared with PyTorch where it is installed)."""

import numpy as np
import pytest

import ember
from ember import _special
from helpers import HAVE_TORCH, peak_bytes, torch

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="needs PyTorch")

MB = 1 << 20
N = 1 << 20  # 4 MB of float32


def _fwd_bwd(fn, *xs):
    def step():
        for x in xs:
            x.grad = None
        out = fn(*xs)
        (out if out.dim() == 0 else out.sum()).backward()
    step()
    return step


@pytest.mark.parametrize("name", ["lgamma", "digamma", "erfcx", "bessel_j0"])
def test_series_functions_run_in_blocks(name):
    """Block by block the values are the one-call values (elementwise), and the float64 working
    arrays take a block's room (12-24 MB here): the one-call forms peak at 57-125 MB."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(N) * 20).astype(np.float32).reshape(1024, 1024)
    x[0, :8] = [0.0, -1.0, -2.5, np.inf, -np.inf, np.nan, 1e-30, -0.0]
    fn = getattr(_special, name)
    whole = fn.__wrapped__(x)
    blocked = fn(x)
    assert blocked.dtype == whole.dtype == np.float32 and blocked.shape == x.shape
    np.testing.assert_array_equal(blocked, whole)
    assert peak_bytes(lambda: fn(x)) < 28 * MB
    assert peak_bytes(lambda: fn.__wrapped__(x)) > 50 * MB  # the test bites
    strided = x[:, ::2]  # not contiguous: copied once, values the same
    np.testing.assert_array_equal(fn(strided), fn.__wrapped__(strided))


def test_polygamma_blocks_keep_the_order():
    x = np.linspace(0.1, 30, N, dtype=np.float64)
    np.testing.assert_array_equal(_special.polygamma(2, x), _special.polygamma.__wrapped__(2, x))


def test_lgamma_digamma_backward_peaks():
    x = ember.rand(N, requires_grad=True) * 5
    x = x.detach().requires_grad_()
    # result, gradient and the gradient's digamma: a few 4 MB arrays, no float64 working set
    assert peak_bytes(_fwd_bwd(ember.lgamma, x)) < 20 * MB
    assert peak_bytes(_fwd_bwd(ember.digamma, x)) < 20 * MB


@needs_torch
def test_maximum_minimum_gradients_and_peak():
    a = ember.randn(N, requires_grad=True)
    b = ember.randn(N, requires_grad=True)
    with ember.no_grad():
        b[:1000] = a[:1000]  # ties: half the gradient to each side
    for name in ("maximum", "minimum"):
        a.grad = b.grad = None
        getattr(ember, name)(a, b).sum().backward()
        ta = torch.tensor(a.detach().numpy(), requires_grad=True)
        tb = torch.tensor(b.detach().numpy(), requires_grad=True)
        getattr(torch, name)(ta, tb).sum().backward()
        assert a.grad.dtype == ember.float32
        np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())
        np.testing.assert_array_equal(b.grad.numpy(), tb.grad.numpy())
    # output, both gradients (12 MB) and two bool masks; the float64 share took 8 MB more
    assert peak_bytes(_fwd_bwd(ember.maximum, a, b)) < 18 * MB


@needs_torch
def test_number_base_pow_gradient():
    x = ember.randn(N, requires_grad=True)
    for base in (2.0, 0.5, 10):
        x.grad = None
        (base ** x).sum().backward()
        tx = torch.tensor(x.detach().numpy(), requires_grad=True)
        (base ** tx).sum().backward()
        assert x.grad.dtype == ember.float32
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    assert peak_bytes(_fwd_bwd(lambda t: 2.0 ** t, x)) < 10 * MB
    for base in (-2.0, 0.0):  # nan / zero gradients, as PyTorch
        x.grad = None
        (base ** x).sum().backward()
        tx = torch.tensor(x.detach().numpy(), requires_grad=True)
        (base ** tx).sum().backward()
        np.testing.assert_array_equal(np.isnan(x.grad.numpy()), np.isnan(tx.grad.numpy()))


@needs_torch
@pytest.mark.parametrize("p", [2, 3, 0.5, 1.5])
def test_vector_norm_gradient_and_peak(p):
    rng = np.random.default_rng(1)
    v = rng.standard_normal((1024, 1024)).astype(np.float32)
    v[3] = 0.0  # a zero row: zero gradient
    v[5, :7] = 0.0  # zero entries: sign(0) = 0
    x = ember.tensor(v, requires_grad=True)
    ember.linalg.vector_norm(x, p, dim=1).sum().backward()
    tx = torch.tensor(v, requires_grad=True)
    torch.linalg.vector_norm(tx, p, dim=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=2e-5, atol=1e-7)
    x.grad = None
    # the gradient (4 MB) and |x|^p's one buffer; the composite built four more
    assert peak_bytes(_fwd_bwd(lambda t: ember.linalg.vector_norm(t, p, dim=1), x)) < 11 * MB


@needs_torch
@pytest.mark.parametrize("n", [5, 1 << 18, (1 << 18) + 1, 700_001])
def test_dropout_noise_in_blocks_is_pytorchs_stream(n):
    torch.manual_seed(3)
    ember.manual_seed(3)
    a = torch.nn.functional.dropout(torch.ones(n), 0.3)
    b = ember.nn.functional.dropout(ember.ones(n), 0.3)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert float(torch.rand(1)) == float(ember.rand(1))  # the generator advanced alike


def test_dropout_peak():
    x = ember.randn(N, requires_grad=True)
    # output and the float mask (PyTorch's noise), 8 MB; the raw draws were 16 MB at once
    assert peak_bytes(_fwd_bwd(lambda t: ember.nn.functional.dropout(t, 0.1), x)) < 14 * MB


# -- grid_sample (bilinear, 4-D): one op over the corners -----------------------------------


def _grids(rng):
    zoom = np.stack(np.meshgrid(np.linspace(-1, 1, 12), np.linspace(-1, 1, 10)), -1)
    yield "random", (rng.random((2, 6, 5, 2)) * 2.6 - 1.3).astype(np.float32)  # some outside
    yield "zoom", np.broadcast_to(zoom, (2, 10, 12, 2)).astype(np.float32)  # repeated corners
    yield "piled", np.full((2, 9, 9, 2), 0.13, np.float32)  # 81 samples on one pixel


@needs_torch
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_bilinear_matches_torch(padding_mode, align):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    for name, grid in _grids(rng):
        got = []
        w = rng.standard_normal((2, 3) + grid.shape[1:3]).astype(np.float32)
        for m in (ember, torch):
            xt, gt = m.tensor(x, requires_grad=True), m.tensor(grid.copy(), requires_grad=True)
            out = m.nn.functional.grid_sample(xt, gt, padding_mode=padding_mode,
                                              align_corners=align)
            (out * m.tensor(w)).sum().backward()
            got.append((out.detach().numpy(), xt.grad.numpy(), gt.grad.numpy()))
        for a, b in zip(*got):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-5, err_msg=name)


def test_grid_sample_bilinear_saves_input_and_positions_only():
    x = ember.randn(4, 64, 64, 64, requires_grad=True)  # 4 MB
    grid = (ember.rand(4, 64, 64, 2) * 2 - 1).requires_grad_()
    out = ember.nn.functional.grid_sample(x, grid, align_corners=False)
    assert type(out.grad_fn).__name__ == "GridSampler2DBackward0"
    from ember.autograd.graph import saved_tensors
    saved = sum(b for _, arrs in saved_tensors(out) for *_, b in arrs)
    assert saved < x.nbytes + 8 * grid.nbytes  # x and the pixel positions, no corner values
    # forward + backward: result, input gradient, the grid's gradients and an image's scratch
    # (the composite kept four corners' values and weights: above 6x)
    assert peak_bytes(_fwd_bwd(lambda a, g: ember.nn.functional.grid_sample(
        a, g, align_corners=False), x, grid)) < 4.5 * x.nbytes


@needs_torch
def test_grid_sample_bilinear_double_backward_matches_torch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 4, 5))
    grid = rng.random((1, 3, 3, 2)) * 1.8 - 0.9
    got = []
    for m in (ember, torch):
        xt = m.tensor(x, requires_grad=True)
        gt = m.tensor(grid, requires_grad=True)
        out = m.nn.functional.grid_sample(xt, gt, align_corners=True)
        gx, gg = m.autograd.grad(out.pow(2).sum(), (xt, gt), create_graph=True)
        (gx.sum() + gg.pow(2).sum()).backward()
        got.append((xt.grad.numpy(), gt.grad.numpy()))
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


@needs_torch
def test_relu_backward_in_blocks_matches_torch_and_builds_no_full_mask():
    """ReLU's backward on a large host gradient selects a block at a time (a NaN output passes
    the gradient, an inf gradient at a zero output gives 0, as PyTorch's select)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(N).astype(np.float32)
    x[:4] = [np.nan, 0.0, -0.0, 1.0]
    g = rng.standard_normal(N).astype(np.float32)
    g[1] = np.inf
    got = []
    for m in (ember, torch):
        t = m.tensor(x, requires_grad=True)
        m.relu(t).backward(m.tensor(g))
        got.append(t.grad.numpy())
    np.testing.assert_array_equal(got[0], got[1])
    t = ember.tensor(x, requires_grad=True)
    y = ember.relu(t)
    gt = ember.tensor(g)
    # the gradient (4 MB) and a block's masks: a whole-array mask pair took 1.5 MB more
    assert peak_bytes(lambda: y.backward(gt, retain_graph=True)) < 4 * MB + (1 << 19)
