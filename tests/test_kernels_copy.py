"""The tiled copy into C order (ember/_kernels.c "transpose_copy", `_kernels_loader.dense_copy`)
behind ``contiguous()`` and a reshape that must copy: every layout a permutation, a negative or
a stepped slice makes, every item size, the same bits as NumPy's copy; where it does not apply
it declines and NumPy copies."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import _kernels_loader as L
from helpers import HAVE_TORCH, torch

needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.uint8,
                                   np.complex64, np.bool_])
def test_transposes_of_every_item_size_copy_the_same_bits(dtype) -> None:
    rng = np.random.default_rng(0)
    base = (rng.standard_normal((37, 129, 67)) * 50).astype(dtype)
    for perm in itertools.permutations(range(3)):
        for view in (base.transpose(perm), base[::-1, ::2].transpose(perm),
                     base[:, 3:-5, ::-3].transpose(perm)):
            got = L.dense_copy(view)
            if got is None:  # (the last axis already the fastest, or small)
                continue
            assert got.flags.c_contiguous and got.dtype == view.dtype
            assert got.tobytes() == view.copy().tobytes(), (perm, view.strides)


@needs_kernels
@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(1, 70), min_size=2, max_size=5), data=st.data())
def test_random_permuted_views(shape, data) -> None:
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    perm = data.draw(st.permutations(range(len(shape))))
    steps = data.draw(st.lists(st.sampled_from([1, -1, 2, -3]), min_size=len(shape),
                               max_size=len(shape)))
    view = a[tuple(slice(None, None, s) for s in steps)].transpose(perm)
    out = np.empty(view.shape, view.dtype)
    if L.active.transpose_copy(view, out):
        np.testing.assert_array_equal(out, view)


@needs_kernels
def test_declines_what_it_does_not_handle() -> None:
    a = np.random.default_rng(1).standard_normal((128, 128)).astype(np.float32)
    assert L.dense_copy(a) is None  # already C order
    assert L.dense_copy(a[:, ::2]) is None  # the last axis is still the fastest: NumPy copies
    assert L.dense_copy(a[:8, :8].T) is None  # small
    assert L.dense_copy(np.empty((100, 100), object).T) is None  # references, not bits
    assert L.active.transpose_copy(a, np.empty_like(a)) is False  # nothing to tile
    # an expand()ed row (stride 0 down the rows) is copied by NumPy row after row: a broadcast
    # axis is not a reading direction (it was taken for the fastest one, tiles 3.5x slower)
    row = np.broadcast_to(a[0], (128, 128))
    assert L.dense_copy(row) is None
    col = np.broadcast_to(a[:, :1], (128, 128))  # stride 0 along the last axis: tiled, exact
    got = L.dense_copy(col)
    assert got is not None and got.tobytes() == col.copy().tobytes()
    with pytest.raises(ValueError, match="sizes differ"):
        L.active.transpose_copy(a.T, np.empty((64, 64), np.float32))


@needs_kernels
def test_the_same_bits_at_1_and_2_threads() -> None:
    x = np.random.default_rng(2).standard_normal((16, 96, 64, 64)).astype(np.float32)
    view = x.transpose(0, 2, 3, 1)
    before = ember.get_num_threads()
    try:
        outs = []
        for n in (1, 2):
            ember.set_num_threads(n)
            outs.append(L.dense_copy(view))
    finally:
        ember.set_num_threads(before)
    assert outs[0].tobytes() == outs[1].tobytes() == view.copy().tobytes()


def test_contiguous_and_reshape_of_transposed_tensors() -> None:
    x = ember.randn(300, 200, requires_grad=True)
    y = x.t().contiguous()
    assert y.is_contiguous() and y.stride() == (300, 1)
    np.testing.assert_array_equal(y.detach().numpy(), x.detach().numpy().T)
    z = x.t().reshape(-1)
    np.testing.assert_array_equal(z.detach().numpy(), x.detach().numpy().T.reshape(-1))
    (y.sum() + (z * 2).sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((300, 200), 3, np.float32))
    img = ember.randn(4, 8, 16, 16)
    nhwc = img.permute(0, 2, 3, 1).contiguous()
    np.testing.assert_array_equal(nhwc.numpy(), img.numpy().transpose(0, 2, 3, 1))


@needs_kernels
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64])
@pytest.mark.parametrize("dims", [(-1,), (0, -1), (1, 2), (0, 1, 2)])
def test_flip_of_the_last_axis_copies_rows_backwards(dtype, dims) -> None:
    """A view whose last axis runs backwards (flip(-1)) is copied row by row in reverse by the
    kernel: the NumPy copy's bits, C order, at 1 and 2 threads; x.flip() gives PyTorch's values
    and strides."""
    x = (np.arange(3 * 40 * 129) % 251).astype(dtype).reshape(3, 40, 129)
    view = np.flip(x, [d % 3 for d in dims])
    before = ember.get_num_threads()
    try:
        outs = []
        for n in (1, 2):
            ember.set_num_threads(n)
            out = L.dense_copy(view)
            if -1 in dims or 2 in dims:
                assert out is not None
            outs.append(view.copy() if out is None else out)
    finally:
        ember.set_num_threads(before)
    for out in outs:
        assert out.flags.c_contiguous and out.tobytes() == view.copy().tobytes()
    got = ember.tensor(x).flip(dims)
    np.testing.assert_array_equal(got.numpy(), view)
    if HAVE_TORCH and dtype != np.float16:
        ref = torch.tensor(x).flip(dims)
        assert got.stride() == ref.stride()
        np.testing.assert_array_equal(got.numpy(), ref.numpy())
