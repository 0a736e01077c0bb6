"""Global adaptive average pooling (output size 1) is the mean over the pooled dimensions, as in
PyTorch: same values to the last bit as ``x.mean(...)`` and PyTorch's graph node (an image-model
library's test compares the two with ``allclose``, which fails on float32 rounding otherwise)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_global_adaptive_avg_pool_is_the_mean(nd):
    rng = np.random.default_rng(nd)
    x = ember.tensor(rng.standard_normal((2, 64) + (7,) * nd).astype(np.float32),
                     requires_grad=True)
    pool = getattr(F, f"adaptive_avg_pool{nd}d")
    out = pool(x, 1)
    dims = tuple(range(-1, -nd - 1, -1))
    assert out.shape == (2, 64) + (1,) * nd and out.dtype == ember.float32
    assert np.array_equal(out.detach().numpy(), x.mean(dim=dims, keepdim=True).detach().numpy())
    assert ember.allclose(out, x.mean(dim=dims, keepdim=True))
    out.sum().backward()
    assert np.allclose(x.grad.numpy(), 1 / 7 ** nd)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_global_adaptive_avg_pool_graph_node_as_pytorchs(nd):
    torch = pytest.importorskip("torch")
    shape = (2, 3) + (5,) * nd
    ours = getattr(F, f"adaptive_avg_pool{nd}d")(ember.ones(shape, requires_grad=True), 1)
    theirs = getattr(torch.nn.functional, f"adaptive_avg_pool{nd}d")(
        torch.ones(shape, requires_grad=True), 1)
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    assert tuple(ours.shape) == tuple(theirs.shape)
    if nd == 2:  # a pooling that is not global keeps its own node
        part = F.adaptive_avg_pool2d(ember.ones(shape, requires_grad=True), 2)
        assert type(part.grad_fn).__name__ == "AdaptiveAvgPool2DBackward0"
