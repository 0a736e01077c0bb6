"""Shape and view ops (ember/ops/shape.py) and joining ops (ember/ops/joining.py): values,
gradients, double backward, torch parity, views sharing memory, version counters, node names and
error messages."""

import numpy as np
import pytest

import ember
from helpers import HAVE_TORCH, check_op, randn

if HAVE_TORCH:
    import torch


def _np_split(a, sizes, axis):
    return tuple(np.split(a, np.cumsum(sizes)[:-1], axis=axis))


# ---------------------------------------------------------------------------------------------
# check_op: forward vs NumPy, float32, gradcheck, gradgradcheck, torch parity


@pytest.mark.parametrize(
    "fn,ref,shape",
    [
        (lambda m, x: x.reshape(4, 6), lambda a: a.reshape(4, 6), (2, 3, 4)),
        (lambda m, x: x.reshape(-1), lambda a: a.reshape(-1), (2, 3, 4)),
        (lambda m, x: m.reshape(x, (3, -1)), lambda a: a.reshape(3, -1), (2, 3, 4)),
        (lambda m, x: x.view(3, 8), lambda a: a.reshape(3, 8), (2, 3, 4)),
        (lambda m, x: x.view(x.shape[::-1]), lambda a: a.reshape(4, 3, 2), (2, 3, 4)),
        (lambda m, x: x.view(()), lambda a: a.reshape(()), (1, 1)),
        (lambda m, x: x.transpose(0, 1).reshape(6, 4), lambda a: a.swapaxes(0, 1).reshape(6, 4),
         (2, 3, 4)),
        (lambda m, x: x.flatten(), lambda a: a.reshape(-1), (2, 3, 4)),
        (lambda m, x: x.flatten(1), lambda a: a.reshape(2, 12), (2, 3, 4)),
        (lambda m, x: m.flatten(x, 0, -2), lambda a: a.reshape(6, 4), (2, 3, 4)),
        (lambda m, x: x.flatten(), lambda a: a.reshape(1), ()),
        (lambda m, x: x.unflatten(1, (2, -1)), lambda a: a.reshape(2, 2, 2, 3), (2, 4, 3)),
        (lambda m, x: m.ravel(x.transpose(0, 1)), lambda a: a.swapaxes(0, 1).reshape(-1),
         (2, 3)),
        (lambda m, x: x.squeeze(), lambda a: a.squeeze(), (1, 3, 1, 2)),
        (lambda m, x: x.squeeze(2), lambda a: a.squeeze(2), (1, 3, 1, 2)),
        (lambda m, x: x.squeeze(1), lambda a: a, (1, 3, 1, 2)),
        (lambda m, x: x.squeeze((0, -2)), lambda a: a.squeeze((0, 2)), (1, 3, 1, 2)),
        (lambda m, x: x.squeeze(0), lambda a: a, ()),
        (lambda m, x: x.unsqueeze(0), lambda a: a[None], (2, 3)),
        (lambda m, x: x.unsqueeze(-1), lambda a: a[..., None], (2, 3)),
        (lambda m, x: m.unsqueeze(x, 1), lambda a: a[:, None], (2, 3)),
        (lambda m, x: x.unsqueeze(0), lambda a: a[None], ()),
        (lambda m, x: x.expand(4, 2, 3), lambda a: np.broadcast_to(a, (4, 2, 3)), (2, 3)),
        (lambda m, x: x.expand(-1, 4), lambda a: np.broadcast_to(a, (3, 4)), (3, 1)),
        (lambda m, x: x.expand(2, -1, 3), lambda a: np.broadcast_to(a, (2, 3, 3)), (3, 1)),
        (lambda m, x: x.expand(3, 2), lambda a: np.broadcast_to(a, (3, 2)), ()),
        (lambda m, x: m.broadcast_to(x, (2, 3, 4)), lambda a: np.broadcast_to(a, (2, 3, 4)),
         (1, 4)),
        (lambda m, x: x.repeat(2, 3), lambda a: np.tile(a, (2, 3)), (2, 3)),
        (lambda m, x: x.repeat(2, 1, 2), lambda a: np.tile(a, (2, 1, 2)), (2, 3)),
        (lambda m, x: x.repeat(3), lambda a: np.tile(a, 3), ()),
        (lambda m, x: x.tile((2,)), lambda a: np.tile(a, (1, 2)), (2, 3)),
        (lambda m, x: m.tile(x, (2, 1, 1)), lambda a: np.tile(a, (2, 1, 1)), (2, 3)),
        (lambda m, x: x.repeat_interleave(2), lambda a: np.repeat(a, 2), (2, 3)),
        (lambda m, x: x.repeat_interleave(3, dim=1), lambda a: np.repeat(a, 3, 1), (2, 3)),
        (lambda m, x: x.repeat_interleave(2, dim=-2), lambda a: np.repeat(a, 2, 0), (2, 3)),
        (lambda m, x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), (2, 3, 4)),
        (lambda m, x: m.permute(x, (1, 2, 0)), lambda a: a.transpose(1, 2, 0), (2, 3, 4)),
        (lambda m, x: x.permute(-1, 0, -2), lambda a: a.transpose(2, 0, 1), (2, 3, 4)),
        (lambda m, x: x.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1), (2, 3, 4)),
        (lambda m, x: m.moveaxis(x, (0, 1), (2, 0)), lambda a: np.moveaxis(a, (0, 1), (2, 0)),
         (2, 3, 4)),
        (lambda m, x: x.transpose(0, 2), lambda a: a.swapaxes(0, 2), (2, 3, 4)),
        (lambda m, x: x.swapaxes(-1, 0), lambda a: a.swapaxes(-1, 0), (2, 3, 4)),
        (lambda m, x: m.swapdims(x, 1, 1), lambda a: a, (2, 3)),
        (lambda m, x: x.transpose(0, 1).contiguous(), lambda a: a.T.copy(), (2, 3)),
        (lambda m, x: x.flip(0), lambda a: a[::-1], (2, 3, 4)),
        (lambda m, x: x.flip(0, -1), lambda a: a[::-1, :, ::-1], (2, 3, 4)),
        (lambda m, x: m.flip(x, (1,)), lambda a: a[:, ::-1], (2, 3)),
        (lambda m, x: m.fliplr(x), lambda a: a[:, ::-1], (2, 3)),
        (lambda m, x: m.flipud(x), lambda a: a[::-1], (2, 3)),
        (lambda m, x: x.roll(1), lambda a: np.roll(a, 1), (2, 3)),
        (lambda m, x: x.roll(-2, 1), lambda a: np.roll(a, -2, 1), (2, 3)),
        (lambda m, x: x.roll((1, 5), (0, 1)), lambda a: np.roll(a, (1, 5), (0, 1)), (2, 3)),
        (lambda m, x: x.narrow(1, 1, 2), lambda a: a[:, 1:3], (2, 4)),
        (lambda m, x: x.narrow(-1, -3, 3), lambda a: a[:, 1:], (2, 4)),
        (lambda m, x: x.narrow(0, 2, 0), lambda a: a[2:2], (2, 4)),
        (lambda m, x: x.select(1, 2), lambda a: a[:, 2], (2, 4)),
        (lambda m, x: x.select(0, -1), lambda a: a[-1], (3,)),
        (lambda m, x: x.unfold(1, 2, 1), lambda a: np.lib.stride_tricks.sliding_window_view(
            a, 2, axis=1), (2, 4)),
        (lambda m, x: x.unfold(0, 3, 2), lambda a: np.lib.stride_tricks.sliding_window_view(
            a, 3, axis=0)[::2], (7, 2)),
        (lambda m, x: x.unfold(-1, 4, 1), lambda a: np.lib.stride_tricks.sliding_window_view(
            a, 4, axis=1)[:, ::1], (2, 5)),
        (lambda m, x: x.unfold(0, 2, 5), lambda a: a[None, :2], (4,)),
        (lambda m, x: x.rot90(), lambda a: np.rot90(a), (2, 3)),
        (lambda m, x: x.rot90(2, (1, 2)), lambda a: np.rot90(a, 2, (1, 2)), (2, 3, 4)),
        (lambda m, x: x.rot90(-1), lambda a: np.rot90(a, -1), (2, 3)),
        (lambda m, x: x.rot90(4), lambda a: a, (2, 3)),
        (lambda m, x: m.atleast_1d(x), lambda a: a.reshape(1), ()),
        (lambda m, x: m.atleast_2d(x), lambda a: a[None], (3,)),
        (lambda m, x: m.atleast_3d(x), lambda a: a[None, :, None], (3,)),
        (lambda m, x: m.atleast_3d(x), lambda a: a[..., None], (2, 3)),
        (lambda m, x: x.view_as(x.reshape(3, 2) * 1), lambda a: a.reshape(3, 2), (2, 3)),
        (lambda m, x: x.expand_as(m.ones(4, 2, 3)), lambda a: np.broadcast_to(a, (4, 2, 3)),
         (1, 3)),
    ],
)
def test_unary_shape_ops(fn, ref, shape):
    check_op(fn, randn(*shape), ref=ref, gradgrad=True)


def test_empty_and_zero_dim_views():
    check_op(lambda m, x: x.reshape(3, 0), randn(0, 3), ref=lambda a: a.reshape(3, 0),
             gradgrad=True)
    check_op(lambda m, x: x.permute(1, 0), randn(0, 3), ref=lambda a: a.T, gradgrad=True)
    check_op(lambda m, x: x.flip(0), randn(0, 3), ref=lambda a: a, gradgrad=True)
    check_op(lambda m, x: x.transpose(0, -1), randn(), ref=lambda a: a)
    check_op(lambda m, x: x.permute(()), randn(), ref=lambda a: a)
    check_op(lambda m, x: x.flip(0), randn(), ref=lambda a: a)
    check_op(lambda m, x: x.roll(3), randn(), ref=lambda a: a)
    check_op(lambda m, x: x.unfold(0, 1, 1), randn(), ref=lambda a: a.reshape(1))
    check_op(lambda m, x: x.expand(2, 0), randn(1, 1), ref=lambda a: np.zeros((2, 0)))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(dim):
    shapes = [(2, 3, 2), (2, 3, 2), (2, 3, 2)]
    s = list(shapes[1])
    s[dim] = 1
    arrs = [randn(*shapes[0]), randn(*s, seed=1), randn(*shapes[2], seed=2)]
    check_op(lambda m, a, b, c: m.cat([a, b, c], dim), *arrs,
             ref=lambda a, b, c: np.concatenate([a, b, c], dim), gradgrad=True)
    check_op(lambda m, a, b, c: m.concat((a, b, c), dim=dim), *arrs,
             ref=lambda a, b, c: np.concatenate([a, b, c], dim))


def test_cat_single_and_skipped_empty():
    check_op(lambda m, a: m.cat([a]), randn(2, 3), ref=lambda a: a, gradgrad=True)
    check_op(lambda m, a, e, b: m.concatenate([a, e, b], 1), randn(2, 3), randn(0),
             randn(2, 1, seed=3), ref=lambda a, e, b: np.concatenate([a, b], 1), gradgrad=True)
    check_op(lambda m, e, f: m.cat([e, f]), randn(0), randn(0, seed=1), ref=lambda e, f: e)


def test_cat_type_promotion():
    i = ember.tensor([[1, 2]])
    f = ember.tensor([[0.5, 1.5]])
    h = ember.tensor([[0.5, 1.5]], dtype=ember.float16)
    b = ember.tensor([[True, False]])
    assert ember.cat([i, f]).dtype == ember.float32
    assert ember.cat([i, h]).dtype == ember.float16
    assert ember.cat([b, i]).dtype == ember.int64
    assert ember.cat([f, ember.zeros(0, dtype=ember.float64)]).dtype == ember.float64
    assert ember.stack([i, f]).dtype == ember.float32
    np.testing.assert_array_equal(ember.cat([i, f]).numpy(), [[1, 2], [0.5, 1.5]])
    # gradient flows to the floating input and comes back in its dtype
    g = ember.tensor([[1.0, 2.0]], dtype=ember.float64, requires_grad=True)
    ember.cat([f, g]).sum().backward()
    assert g.grad.dtype == ember.float64


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack(dim):
    arrs = [randn(2, 3), randn(2, 3, seed=1)]
    check_op(lambda m, a, b: m.stack([a, b], dim), *arrs,
             ref=lambda a, b: np.stack([a, b], dim), gradgrad=True)


@pytest.mark.parametrize(
    "name,shapes",
    [
        ("hstack", [(2, 3), (2, 1)]),
        ("hstack", [(3,), (2,)]),
        ("hstack", [(), ()]),
        ("vstack", [(3,), (3,)]),
        ("vstack", [(2, 3), (1, 3)]),
        ("row_stack", [(2, 3), (1, 3)]),
        ("dstack", [(3,), (3,)]),
        ("dstack", [(2, 3), (2, 3)]),
        ("dstack", [(2, 3, 1), (2, 3, 2)]),
        ("column_stack", [(3,), (3, 2)]),
        ("column_stack", [(), ()]),
    ],
)
def test_dir_stacks(name, shapes):
    arrs = [randn(*s, seed=i) for i, s in enumerate(shapes)]
    ref = getattr(np, name if name != "row_stack" else "vstack")
    if name == "row_stack" and HAVE_TORCH and not hasattr(torch, "row_stack"):
        pytest.skip("torch without row_stack")
    check_op(lambda m, a, b: getattr(m, name)([a, b]), *arrs, ref=lambda a, b: ref([a, b]),
             gradgrad=True)


@pytest.mark.parametrize(
    "fn,ref",
    [
        (lambda m, x: x.split(2), lambda a: _np_split(a, [2, 2, 1], 0)),
        (lambda m, x: m.split(x, [1, 3, 1]), lambda a: _np_split(a, [1, 3, 1], 0)),
        (lambda m, x: x.split((2, 1), dim=1), lambda a: _np_split(a, [2, 1], 1)),
        (lambda m, x: x.split(5), lambda a: (a,)),
        (lambda m, x: x.chunk(2), lambda a: _np_split(a, [3, 2], 0)),
        (lambda m, x: x.chunk(3, -1), lambda a: _np_split(a, [1, 1, 1], 1)),
        (lambda m, x: x.chunk(4, 1), lambda a: _np_split(a, [1, 1, 1], 1)),
        (lambda m, x: x.tensor_split(3), lambda a: tuple(np.array_split(a, 3))),
        (lambda m, x: x.tensor_split(7), lambda a: tuple(np.array_split(a, 7))),
        (lambda m, x: x.tensor_split([1, 4]), lambda a: tuple(np.split(a, [1, 4]))),
        (lambda m, x: x.tensor_split([3, 1], 0), lambda a: tuple(np.split(a, [3, 1]))),
        (lambda m, x: x.tensor_split((-1, 9), 1), lambda a: tuple(np.split(a, [2, 9], 1))),
        (lambda m, x: m.tensor_split(x, m.tensor([1, 2]), 1), lambda a: tuple(
            np.split(a, [1, 2], 1))),
        (lambda m, x: m.tensor_split(x, m.tensor(2)), lambda a: tuple(np.array_split(a, 2))),
        (lambda m, x: x.unbind(), lambda a: tuple(a)),
        (lambda m, x: m.unbind(x, -1), lambda a: tuple(a.T)),
        (lambda m, x: x.hsplit(3), lambda a: tuple(np.hsplit(a, 3))),
        (lambda m, x: m.hsplit(x, [1]), lambda a: tuple(np.hsplit(a, [1]))),
        (lambda m, x: m.vsplit(x.narrow(0, 0, 4), 2), lambda a: tuple(np.vsplit(a[:4], 2))),
    ],
)
def test_split_family(fn, ref):
    check_op(fn, randn(5, 3), ref=ref, gradgrad=True)


def test_split_partial_use_and_1d():
    # only one output used: the others get zero gradients (materialized by the engine)
    check_op(lambda m, x: x.split(2)[1], randn(5, 2), ref=lambda a: a[2:4], gradgrad=True)
    check_op(lambda m, x: x.unbind(0)[2] * 2, randn(3, 2), ref=lambda a: a[2] * 2, gradgrad=True)
    check_op(lambda m, x: x.tensor_split([3, 1])[1], randn(5), ref=lambda a: a[3:1])
    check_op(lambda m, x: m.hsplit(x, 2), randn(4), ref=lambda a: tuple(np.hsplit(a, 2)))
    check_op(lambda m, x: m.dsplit(x, [1]), randn(1, 2, 3),
             ref=lambda a: tuple(np.dsplit(a, [1])))


def test_split_empty_and_chunk_empty():
    x = ember.zeros(0)
    assert [tuple(p.shape) for p in x.split(2)] == [(0,)]
    assert [tuple(p.shape) for p in x.chunk(3)] == [(0,)] * 3
    assert ember.zeros(0, 2).unbind() == ()
    if HAVE_TORCH:
        assert len(torch.zeros(0).chunk(3)) == 3


def test_repeat_interleave_tensor_repeats():
    r = np.array([2, 0, 3])
    check_op(lambda m, x: x.repeat_interleave(m.tensor(r), dim=0), randn(3, 2),
             ref=lambda a: np.repeat(a, r, 0), gradgrad=True)
    check_op(lambda m, x: m.repeat_interleave(x, m.tensor([1, 2]), dim=1), randn(2, 2),
             ref=lambda a: np.repeat(a, [1, 2], 1), gradgrad=True)
    check_op(lambda m, x: x.repeat_interleave(m.tensor([3])), randn(2, 2),
             ref=lambda a: np.repeat(a, 3), gradgrad=True)
    check_op(lambda m, x: x.repeat_interleave(m.tensor(2)), randn(3), ref=lambda a: np.repeat(a, 2))
    check_op(lambda m, x: x.repeat_interleave(m.tensor([0, 0])), randn(2),
             ref=lambda a: a[:0], gradgrad=True)
    check_op(lambda m, x: x.repeat_interleave(0, 1), randn(2, 3), ref=lambda a: a[:, :0])
    got = ember.repeat_interleave(ember.tensor([1, 0, 2]))
    np.testing.assert_array_equal(got.numpy(), [0, 2, 2])
    assert got.dtype == ember.int64
    ints = ember.tensor([[1, 2]]).repeat_interleave(2, dim=1)
    np.testing.assert_array_equal(ints.numpy(), [[1, 1, 2, 2]])


def test_repeat_interleave_float32_stays():
    x = ember.randn(3, 2, requires_grad=True)
    y = x.repeat_interleave(ember.tensor([1, 2, 0]), dim=0)
    assert y.dtype == ember.float32
    y.backward(ember.ones(3, 2))
    assert x.grad.dtype == ember.float32
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 1], [2, 2], [0, 0]])


def test_broadcast_tensors_and_shapes():
    check_op(lambda m, a, b: m.broadcast_tensors(a, b), randn(3, 1), randn(1, 4, seed=1),
             ref=lambda a, b: np.broadcast_arrays(a, b), gradgrad=True)
    check_op(lambda m, a, b, c: m.broadcast_tensors(a, b, c), randn(2, 1, 3), randn(4, 1, seed=1),
             randn(seed=2), ref=lambda a, b, c: np.broadcast_arrays(a, b, c))
    assert ember.broadcast_shapes((2, 1), (3, 1, 4)) == ember.Size([3, 2, 4])
    assert ember.broadcast_shapes(3, (2, 1)) == (2, 3)
    assert ember.broadcast_shapes() == ()
    assert isinstance(ember.broadcast_shapes((1,), (2,)), ember.Size)
    with pytest.raises(RuntimeError, match="Shape mismatch"):
        ember.broadcast_shapes((2, 3), (4,))
    with pytest.raises(RuntimeError, match=r"\[2, 3\].*\[4\]"):
        ember.broadcast_tensors(ember.zeros(2, 3), ember.zeros(4))


# ---------------------------------------------------------------------------------------------
# as_strided


def test_as_strided_forward_and_grad():
    check_op(lambda m, x: m.as_strided(x, (3, 2), (1, 2)), randn(2, 3),
             ref=lambda a: np.lib.stride_tricks.as_strided(a, (3, 2), (8, 16)), gradgrad=True)
    # overlapping windows: the gradient adds up
    check_op(lambda m, x: x.as_strided((3, 3), (1, 1), 1), randn(6),
             ref=lambda a: np.lib.stride_tricks.sliding_window_view(a[1:], 3)[:3],
             gradgrad=True)
    # on a view with its own offset, with and without an explicit storage_offset
    base = ember.arange(12.0)
    v = base.narrow(0, 2, 10)
    np.testing.assert_array_equal(v.as_strided((2,), (3,)).numpy(), [2.0, 5.0])
    np.testing.assert_array_equal(v.as_strided((2,), (3,), 0).numpy(), [0.0, 3.0])
    np.testing.assert_array_equal(v.as_strided((2, 2), (4, 1), 5).numpy(), [[5, 6], [9, 10]])
    if HAVE_TORCH:
        tb = torch.arange(12.0)
        assert tb.narrow(0, 2, 10).as_strided((2,), (3,), 0).tolist() == [0.0, 3.0]


def test_as_strided_of_non_contiguous_input_grad_matches_torch():
    if not HAVE_TORCH:
        pytest.skip("needs torch")
    a = randn(3, 4)
    e = ember.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    ye = e.transpose(0, 1).as_strided((2, 3), (2, 1), 1)
    yt = t.transpose(0, 1).as_strided((2, 3), (2, 1), 1)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy())
    v = randn(2, 3, seed=5)
    ye.backward(ember.tensor(v))
    yt.backward(torch.tensor(v))
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy())


def test_as_strided_errors():
    x = ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.as_strided((3, 3), (3, 1))
    with pytest.raises(RuntimeError, match="mismatch in length"):
        x.as_strided((3, 3), (3,))
    e = ember.zeros(3, 1, requires_grad=True)
    y = e.expand(3, 2).as_strided((2,), (1,))
    with pytest.raises(NotImplementedError, match="overlapping"):
        y.sum().backward()


# ---------------------------------------------------------------------------------------------
# views share memory and the version counter; copies do not


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.view(6, 4),
        lambda x: x.reshape(-1),
        lambda x: x.view_as(ember.zeros(4, 6)),
        lambda x: x.flatten(),
        lambda x: x.unflatten(2, (2, 2)),
        lambda x: x.ravel(),
        lambda x: x.narrow(1, 0, 1).squeeze(1),
        lambda x: x.unsqueeze(1),
        lambda x: x.narrow(0, 0, 1).expand(5, 3, 4),
        lambda x: x.permute(2, 1, 0),
        lambda x: x.transpose(0, 1),
        lambda x: x.mT,
        lambda x: x.movedim(0, 2),
        lambda x: x.narrow(1, 1, 2),
        lambda x: x.select(2, 1),
        lambda x: x.unfold(2, 2, 1),
        lambda x: x.as_strided((2, 2), (1, 2)),
        lambda x: x.split(1)[1],
        lambda x: x.chunk(2, 2)[1],
        lambda x: x.unbind(1)[2],
        lambda x: x.tensor_split(2, 1)[0],
        lambda x: ember.atleast_3d(x.select(0, 1)),
        lambda x: x.broadcast_to((2, 2, 3, 4)),
        lambda x: x.view(ember.int32),
    ],
)
def test_views_share_memory_and_version(fn):
    x = ember.randn(2, 3, 4)
    y = fn(x)
    assert np.shares_memory(y.numpy(), x.numpy())
    xr = ember.randn(2, 3, 4, requires_grad=True)
    if fn(xr.detach()).dtype == xr.dtype:
        base = xr * 1  # a non-leaf, so that views of it are recorded
        yr = fn(base)
        assert yr._version is base._version_counter()
        assert yr._base is base


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.transpose(0, 1).reshape(-1),
        lambda x: x.flip(0),
        lambda x: x.roll(1),
        lambda x: x.repeat(1, 1, 1),
        lambda x: x.repeat_interleave(1, 0),
        lambda x: x.transpose(0, 1).contiguous(),
        lambda x: ember.cat([x]),
        lambda x: ember.stack([x]),
        lambda x: x.rot90(0),
        lambda x: x.tile((1,)),
    ],
)
def test_copies_do_not_share_memory(fn):
    x = ember.randn(2, 3, 4, requires_grad=True)
    y = fn(x)
    assert not np.shares_memory(y.numpy() if not y.requires_grad else y.detach().numpy(),
                                x.detach().numpy())
    assert y._version is not x._version or x._version is None


def test_view_version_counter_shared_and_inplace_detected():
    x = ember.randn(2, 3, requires_grad=True)
    a = x * 1
    v = a.view(-1)
    assert v._version is a._version_counter()
    assert a.transpose(0, 1)._version is a._version_counter()
    assert all(p._version is a._version_counter() for p in a.split(1))
    y = a.exp()  # saves its output; modifying a view of a after that is caught
    w = y.view(6)
    w.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_contiguous_returns_self_or_copy():
    x = ember.randn(2, 3)
    assert x.contiguous() is x
    assert ember.ops.shape.contiguous(x) is x
    t = x.transpose(0, 1)
    assert not t.is_contiguous()
    c = t.contiguous()
    assert c.is_contiguous() and c.numpy().flags.c_contiguous
    np.testing.assert_array_equal(c.numpy(), x.numpy().T)


def test_flatten_same_dim_returns_input():
    x = ember.randn(2, 3)
    assert x.flatten(1, 1) is x


# ---------------------------------------------------------------------------------------------
# node names follow PyTorch


@pytest.mark.parametrize(
    "fn,name",
    [
        (lambda x: x.view(-1), "ViewBackward0"),
        (lambda x: x.reshape(3, 2), "ViewBackward0"),
        (lambda x: x.transpose(0, 2).reshape(-1), "UnsafeViewBackward0"),
        (lambda x: x.flatten(), "ViewBackward0"),
        (lambda x: x.squeeze(), "SqueezeBackward0"),
        (lambda x: x.squeeze(1), "SqueezeBackward1"),
        (lambda x: x.squeeze((1,)), "SqueezeBackward2"),
        (lambda x: x.unsqueeze(0), "UnsqueezeBackward0"),
        (lambda x: x.expand(2, 2, 1, 3), "ExpandBackward0"),
        (lambda x: x.broadcast_to((2, 2, 1, 3)), "ExpandBackward0"),
        (lambda x: x.permute(2, 0, 1), "PermuteBackward0"),
        (lambda x: x.movedim(0, 1), "PermuteBackward0"),
        (lambda x: x.transpose(0, 1), "TransposeBackward0"),
        (lambda x: x.transpose(0, 2).contiguous(), "CloneBackward0"),
        (lambda x: ember.cat([x, x]) if x.__class__ is ember.Tensor else torch.cat([x, x]),
         "CatBackward0"),
        (lambda x: ember.stack([x, x]) if x.__class__ is ember.Tensor else torch.stack([x, x]),
         "StackBackward0"),
        (lambda x: x.split(1)[0], "SplitBackward0"),
        (lambda x: x.split([1, 1])[0], "SplitWithSizesBackward0"),
        (lambda x: x.chunk(2)[0], "SplitBackward0"),
        (lambda x: x.unbind()[0], "UnbindBackward0"),
        (lambda x: x.narrow(2, 0, 1), "SliceBackward0"),
        (lambda x: x.select(0, 1), "SelectBackward0"),
        (lambda x: x.flip(0), "FlipBackward0"),
        (lambda x: x.roll(1), "RollBackward0"),
        (lambda x: x.repeat(2, 1, 1), "RepeatBackward0"),
        (lambda x: x.unfold(2, 2, 1), "UnfoldBackward0"),
        (lambda x: x.as_strided((2,), (1,)), "AsStridedBackward0"),
    ],
)
def test_node_names(fn, name):
    x = ember.randn(2, 1, 3, requires_grad=True)
    assert type(fn(x).grad_fn).__name__ == name
    if HAVE_TORCH:
        assert type(fn(torch.randn(2, 1, 3, requires_grad=True)).grad_fn).__name__ == name


# ---------------------------------------------------------------------------------------------
# errors: PyTorch's exception types and conditions, messages naming the shapes


def _both(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn(ember)
    if HAVE_TORCH:
        with pytest.raises(exc):
            fn(torch)


@pytest.mark.parametrize(
    "fn,exc,match",
    [
        (lambda m: m.zeros(2, 3).view(4, 2), RuntimeError, r"shape '\[4, 2\]' is invalid"),
        (lambda m: m.zeros(2, 3).reshape(-1, -1), RuntimeError, "only one dimension"),
        (lambda m: m.zeros(0, 3).reshape(-1, 0), RuntimeError, "ambiguous"),
        (lambda m: m.zeros(2, 3).reshape(-2, 3), RuntimeError, "invalid shape dimension -2"),
        (lambda m: m.zeros(2, 3).reshape(2.0, 3), TypeError, "float"),
        (lambda m: m.zeros(2, 3).t().view(-1) if m is not ember else m.zeros(2, 3).transpose(
            0, 1).view(-1), RuntimeError, r"(?s)\[3, 2\].*Use \.reshape\(\.\.\.\) instead"),
        (lambda m: m.zeros(2, 3).flatten(1, 0), RuntimeError, "start_dim cannot come after"),
        (lambda m: m.zeros(2, 6).unflatten(1, (4, 2)), RuntimeError, "don't multiply up"),
        (lambda m: m.zeros(2, 6).unflatten(1, ()), RuntimeError, "non-empty"),
        (lambda m: m.zeros(2, 3).squeeze(2), IndexError, "Dimension out of range"),
        (lambda m: m.zeros(2, 3).unsqueeze(3), IndexError, r"\[-3, 2\].*got 3"),
        (lambda m: m.zeros(2, 3).expand(2, 4), RuntimeError,
         r"expanded size of the tensor \(4\) must match the existing size \(3\)"),
        (lambda m: m.zeros(2, 3).expand(3), RuntimeError, "number of sizes provided"),
        (lambda m: m.zeros(3).expand(-1, 3), RuntimeError, "leading, non-existing dimension"),
        (lambda m: m.zeros(2, 3).broadcast_to((2, 2)), RuntimeError, "must match"),
        (lambda m: m.zeros(2, 3).permute(1, 0, 2), RuntimeError, "number of dims"),
        (lambda m: m.zeros(2, 3).permute(0, 0), RuntimeError, "duplicate dims"),
        (lambda m: m.zeros(2, 3).permute(0, 2), IndexError, "Dimension out of range"),
        (lambda m: m.zeros(2, 3).transpose(0, 2), IndexError, "Dimension out of range"),
        (lambda m: m.zeros(2, 3).movedim((0, 1), (0,)), RuntimeError, "same number of dims"),
        (lambda m: m.zeros(2, 3).movedim((0, 0), (0, 1)), RuntimeError, "repeated dim"),
        (lambda m: m.cat([]), ValueError, "non-empty"),
        (lambda m: m.cat([m.zeros(2, 3), m.zeros(2, 4)]), RuntimeError,
         r"Sizes of tensors must match except in dimension 0\. Expected size 3 but got size 4 "
         r"for tensor number 1"),
        (lambda m: m.cat([m.zeros(2, 3), m.zeros(2, 3, 1)]), RuntimeError,
         "same number of dimensions"),
        (lambda m: m.cat([m.zeros(2), m.tensor(1.0)]), RuntimeError, "zero-dimensional"),
        (lambda m: m.cat([m.zeros(2, 3)], 2), IndexError, "Dimension out of range"),
        (lambda m: m.cat(m.zeros(2, 3)), TypeError, "Tensor"),
        (lambda m: m.cat([m.zeros(2), 3]), TypeError, "element 1"),
        (lambda m: m.stack([m.zeros(2, 3), m.zeros(3, 2)]), RuntimeError,
         r"stack expects each tensor to be equal size, but got \[2, 3\] at entry 0 and \[3, 2\]"),
        (lambda m: m.stack([]), RuntimeError, "non-empty"),
        (lambda m: m.stack([m.zeros(2)], 2), IndexError, "Dimension out of range"),
        (lambda m: m.zeros(5).split([2, 2]), RuntimeError, r"sum exactly to 5.*\[2, 2\]"),
        (lambda m: m.zeros(5).split(0), RuntimeError, "split_size can only be 0"),
        (lambda m: m.zeros(5).chunk(0), RuntimeError, "greater than 0"),
        (lambda m: m.zeros(5).tensor_split(0), RuntimeError, "larger than 0"),
        (lambda m: m.zeros(5).tensor_split(m.tensor([1.0])), RuntimeError, "integral"),
        (lambda m: m.zeros(2, 5).hsplit(2), RuntimeError, "not divisible by the split_size 2"),
        (lambda m: m.zeros(5).vsplit(5), RuntimeError, "at least 2 dimension"),
        (lambda m: m.tensor(1.0).unbind(), IndexError, "no dimensions"),
        (lambda m: m.zeros(2, 3).flip(0, 0), RuntimeError, "dims has duplicates"),
        (lambda m: m.zeros(3).fliplr(), RuntimeError, ">= 2-d"),
        (lambda m: m.zeros(2, 3).roll((1, 2), 0), RuntimeError, "shifts and dimensions must align"),
        (lambda m: m.zeros(2, 3).roll((1, 2)), RuntimeError, "shifts and dimensions must align"),
        (lambda m: m.zeros(5).narrow(0, 4, 2), RuntimeError, r"start \(4\) \+ length \(2\)"),
        (lambda m: m.zeros(5).narrow(0, 7, 0), IndexError, "start out of range"),
        (lambda m: m.zeros(5).narrow(0, 1, -1), RuntimeError, "non-negative"),
        (lambda m: m.tensor(1.0).narrow(0, 0, 1), RuntimeError, "0-dim"),
        (lambda m: m.zeros(3, 4).select(0, 3), IndexError,
         r"index 3 out of range for tensor of size \[3, 4\] at dimension 0"),
        (lambda m: m.tensor(1.0).select(0, 0), IndexError, "0-dim"),
        (lambda m: m.zeros(3, 4).unfold(1, 5, 1), RuntimeError, "maximum size for tensor"),
        (lambda m: m.zeros(3, 4).unfold(1, 2, 0), RuntimeError, "step is 0"),
        (lambda m: m.zeros(2, 3).rot90(1, (0, 0)), RuntimeError, "rotation dims to be different"),
        (lambda m: m.zeros(2, 3).rot90(1, (0,)), RuntimeError, "total rotation dims == 2"),
        (lambda m: m.zeros(3).rot90(), RuntimeError, "total dims >= 2"),
        (lambda m: m.zeros(2, 3).repeat(2), RuntimeError, "can not be smaller"),
        (lambda m: m.zeros(3, 3).repeat_interleave(m.tensor([1, 2]), 0), RuntimeError,
         "same size as input along dim"),
        (lambda m: m.zeros(2).repeat_interleave(-1), RuntimeError, "negative"),
        (lambda m: m.zeros(2).repeat_interleave(m.tensor([1, -1])), RuntimeError, "negative"),
    ],
)
def test_errors(fn, exc, match):
    _both(fn, exc, match)


def test_view_error_says_use_reshape():
    x = ember.randn(4, 6).narrow(1, 0, 3)
    with pytest.raises(RuntimeError, match=r"view size is not compatible.*reshape"):
        x.view(12)
    # but splitting a dim of a sliced tensor is fine (no copy)
    assert np.shares_memory(x.view(2, 2, 3).numpy(), x.numpy())
    y = x.reshape(12)
    assert not np.shares_memory(y.numpy(), x.numpy())
    np.testing.assert_array_equal(y.numpy(), x.numpy().reshape(12))


def test_view_accepts_size_tensor_and_tuple():
    x = ember.randn(2, 3)
    assert x.view(ember.Size([3, 2])).shape == (3, 2)
    assert x.view([6]).shape == (6,)
    assert x.reshape(ember.tensor(3), 2).shape == (3, 2)
    assert x.view(3, -1).shape == (3, 2)


# ---------------------------------------------------------------------------------------------
# gradients through chains, multi-output ops, create_graph uses


def test_grad_of_transposed_matrix_property():
    x = ember.randn(2, 3, 4, requires_grad=True)
    y = x.mT * ember.arange(12.0).reshape(4, 3)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(),
                                  np.broadcast_to(np.arange(12.0).reshape(4, 3).T, (2, 3, 4)))


def test_double_backward_through_expand_and_split():
    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    y = (x.expand(2, 3) ** 3).split(1)
    z = (y[0] * y[1]).sum()
    (g,) = ember.autograd.grad(z, x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)
    # z = sum x^6 -> g = 6 x^5 -> gg = 30 x^4
    np.testing.assert_allclose(gg.numpy(), 30 * x.detach().numpy() ** 4)


def test_iter_and_reversed_use_unbind_and_flip():
    x = ember.randn(3, 2, requires_grad=True)
    rows = list(x)
    assert len(rows) == 3 and rows[0].grad_fn is not None
    (rows[0] * 2 + rows[2]).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2, 2], [0, 0], [1, 1]])


def test_large_cat_and_split_roundtrip_float32():
    xs = [ember.randn(64, 32) for _ in range(8)]
    c = ember.cat(xs, 1)
    assert c.dtype == ember.float32 and c.shape == (64, 256)
    back = c.split(32, 1)
    for a, b in zip(xs, back):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_xp_namespace_shape_helpers_record_graph():
    from ember.ops import _xp

    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    y = _xp.broadcast_to(x, (4, 2, 3))
    z = _xp.expand_dims(x, (0, -1))
    w = _xp.transpose(x)
    assert y.shape == (4, 2, 3) and z.shape == (1, 2, 3, 1) and w.shape == (3, 2)
    s = _xp.concatenate([x, x], axis=1)
    t = _xp.stack([x, x], axis=-1)
    assert s.shape == (2, 6) and t.shape == (2, 3, 2)
    (y.sum() + z.sum() + w.sum() + s.sum() + t.sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 4 + 1 + 1 + 2 + 2))


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, x: m.reshape(x, shape=(3, 2)),
        lambda m, x: m.permute(x, dims=(1, 0)),
        lambda m, x: m.flip(x, dims=[0]),
        lambda m, x: m.flip(x, dims=(0, 1)),
        lambda m, x: m.roll(x, shifts=1, dims=0),
        lambda m, x: m.narrow(x, dim=1, start=1, length=1),
        lambda m, x: m.select(x, dim=1, index=0),
        lambda m, x: m.movedim(x, source=0, destination=1),
        lambda m, x: m.squeeze(x.unsqueeze(dim=0), dim=[0]),
        lambda m, x: m.cat(tensors=[x, x], dim=-1),
        lambda m, x: m.stack(tensors=(x, x), dim=1),
        lambda m, x: m.chunk(x, chunks=2, dim=1),
        lambda m, x: m.tensor_split(x, [1], dim=1),
        lambda m, x: m.unflatten(x, dim=1, sizes=(1, 2)),
        lambda m, x: m.repeat_interleave(x, repeats=2, dim=0),
        lambda m, x: x.unfold(dimension=1, size=1, step=1),
    ],
)
def test_keyword_forms(fn):
    check_op(fn, randn(3, 2), gradgrad=False)


def test_view_dtype():
    x = ember.tensor([1.0, -2.0])
    v = x.view(ember.int32)
    assert v.dtype == ember.int32 and np.shares_memory(v.numpy(), x.numpy())
    np.testing.assert_array_equal(v.numpy(), np.array([1.0, -2.0], np.float32).view(np.int32))
    assert x.view(ember.float32).shape == (2,)
    # between sizes, as PyTorch: the last dim scales by the ratio, and must divide by it
    assert x.view(ember.float64).shape == (1,) and x.view(ember.uint8).shape == (8,)
    np.testing.assert_array_equal(x.view(ember.uint8).numpy(),
                                  np.array([1.0, -2.0], np.float32).view(np.uint8))
    with pytest.raises(RuntimeError, match="must be divisible by 2 to view Float as Double"):
        ember.tensor([1.0, 2.0, 3.0]).view(ember.float64)
    with pytest.raises(RuntimeError, match="stride.-1. must be 1"):
        ember.zeros(3, 2).t().view(ember.uint8)
    with pytest.raises(RuntimeError, match="cannot be 0"):
        ember.tensor(1.0).view(ember.uint8)
    for d in (ember.int32, ember.float32, ember.uint8):  # PyTorch's: no history, no error
        w = ember.tensor([1.0, 2.0], requires_grad=True).view(d)
        assert not w.requires_grad and w.grad_fn is None


def test_view_of_int_sizes_refuses_what_pytorch_refuses():
    """``x.view(ints)`` takes a fast path (NumPy's reshape without a copy): a negative size other
    than -1, two -1s, a wrong count and a layout that needs a copy still raise PyTorch's errors,
    and size-1 dims get PyTorch's strides"""
    x = ember.arange(6.0)
    for bad in [(-2, 3), (-1, -1), (4,), (0, -1)]:
        with pytest.raises(RuntimeError):
            x.view(*bad)
        if HAVE_TORCH:
            with pytest.raises(RuntimeError):
                torch.arange(6.0).view(*bad)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.reshape(2, 3).t().view(-1)
    assert tuple(x.view(3, -1).shape) == (3, 2)
    z = ember.zeros(2, 1, 3)
    assert z.view(2, 3, 1).stride() == (3, 1, 1) and z.view(1, 6, 1).stride() == (6, 1, 1)
    if HAVE_TORCH:
        t = torch.zeros(2, 1, 3)
        assert t.view(2, 3, 1).stride() == (3, 1, 1) and t.view(1, 6, 1).stride() == (6, 1, 1)
