"""Indexing ops (ember/ops/indexing.py, indexing_scatter.py, sorting.py): getitem/setitem,
gather/scatter, index_*, masked_*, sort/topk, unique..."""

import time

import numpy as np
import pytest
import torch

import ember
from helpers import check_op, randn

RNG = np.random.default_rng(0)


def distinct(*shape, seed=0):
    """Random float64 values without ties (sort/topk parity does not depend on tie order)."""
    n = int(np.prod(shape)) if shape else 1
    return np.random.default_rng(seed).permutation(n).astype(np.float64).reshape(shape) / 7 - 1


def _conv(m, k, masks):
    """A key description -> a key for module m (lists -> index tensors, 'name' -> mask)."""
    if isinstance(k, tuple):
        return tuple(_conv(m, e, masks) for e in k)
    if isinstance(k, list):
        return m.tensor(k)
    if isinstance(k, str):
        return m.tensor(masks[k])
    return k


# ---------------------------------------------------------------------------------------------
# getitem

X3 = np.arange(60.0).reshape(3, 4, 5)
MASKS = {
    "all": X3 > 30,
    "d01": X3[:, :, 0] > 7,
    "d1": X3[0, :, 0] > 7,
    "d2": X3[0, 0] > 2,
    "none": X3 > 1000,
}
KEYS = [
    0, -1, 2, (slice(None), -2), (0, 1, 2), (-1, -1, -1), (Ellipsis,), (None,), (),
    slice(1, None), (slice(None, None, 2), slice(1, 4, 2)), (Ellipsis, 1), (Ellipsis, None, 0),
    (None, 1, None, slice(0, 3)), slice(5, 10), slice(-2, None),
    [0, 2], [2, 0, 0, -1], [[0, 1], [2, 2]], (slice(None), [3, 3, 0]), (Ellipsis, [1, -1]),
    (0, slice(None), [1, 2]),  # the integer is a select first: shape (4, 2), unlike NumPy
    ([0, 1], slice(None), 0), (slice(None), 0, [1, 2]), (None, [0, 1], slice(None), [1, 2]),
    ([0, 1], None, [1, 2]), ([[0, 1]], slice(None), [1, 2]), (slice(None, None, 2), [0, 0, 1]),
    ([0, 0, 2], [1, 1, -1]), (slice(1, 3), [[0], [3]], slice(None)), ([1, 1], slice(None), [2, 2]),
    ([0, 2], [[1], [3]], [4, 0]), (True,), (False,), (None, True), ("all",), ("d01",),
    (slice(None), "d1"), ("d01", [1]), ([0, 2], "d1"), ([1], slice(None), "d2"), ("none",),
    (1, "d1", [0, 4]), (1, "d1", [3]),
]


@pytest.mark.parametrize("key", KEYS, ids=[str(k) for k in KEYS])
def test_getitem_matches_torch(key):
    x = ember.tensor(X3, requires_grad=True)
    tx = torch.tensor(X3, requires_grad=True)
    ey, ty = x[_conv(ember, key, MASKS)], tx[_conv(torch, key, MASKS)]
    assert tuple(ey.shape) == tuple(ty.shape)
    assert str(ey.dtype) == str(ty.dtype)
    np.testing.assert_array_equal(ey.detach().numpy(), ty.detach().numpy())
    g = RNG.standard_normal(tuple(ty.shape))
    (eg,) = ember.autograd.grad(ey, x, ember.tensor(g))
    (tg,) = torch.autograd.grad(ty, tx, torch.tensor(g))
    np.testing.assert_allclose(eg.numpy(), tg.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("key", [
    (1, slice(None, None, 2)), ([0, 0, 2, -1],), (slice(None), [1, 1, 1], slice(1, 3)),
    ("d01",), ([0, 2], [[1], [3]], [4, 0]), (slice(None), 0, [2, 2, 4]),
], ids=str)
def test_getitem_check_op_gradgrad(key):
    conv = lambda m: _conv(m, key, MASKS)
    check_op(lambda m, x: x[conv(m)], randn(3, 4, 5), gradgrad=True,
             ref=lambda x: np.asarray(torch.tensor(x)[conv(torch)]))


def test_getitem_index_tensor_args_repeated_and_negative():
    idx = np.array([0, 4, 4, -1, 2, 0])
    check_op(lambda m, x, i: x[i], randn(5, 3), idx, ref=lambda x, i: x[i], gradgrad=True)
    check_op(lambda m, x, i, j: x[i, :, j], randn(5, 2, 4), idx, np.array([[1], [3]]),
             gradgrad=True)


def test_getitem_numpy_and_zero_dim_keys():
    x = ember.tensor(X3)
    np.testing.assert_array_equal(x[np.array([2, 0])].numpy(), X3[[2, 0]])
    np.testing.assert_array_equal(x[np.int64(1)].numpy(), X3[1])
    np.testing.assert_array_equal(x[X3 > 10].numpy(), X3[X3 > 10])  # a numpy mask
    np.testing.assert_array_equal(x[ember.tensor(1)].numpy(), X3[1])  # 0-d tensor = integer
    assert x[ember.tensor(1), :, [1, 2]].shape == (4, 2)
    np.testing.assert_array_equal(x[[True, False, True]].numpy(), X3[[0, 2]])
    np.testing.assert_array_equal(x[ember.tensor([1, 0, 1], dtype=ember.uint8)].numpy(), X3[[0, 2]])
    np.testing.assert_array_equal(x[ember.tensor([1, 0], dtype=ember.int32)].numpy(), X3[[1, 0]])
    np.testing.assert_array_equal(x[[ember.tensor([0, 1]), ember.tensor([1, 2])]].numpy(),
                                  X3[[0, 1], [1, 2]])  # a list of tensors is a tuple
    assert x[[]].shape == (0, 4, 5)
    s = ember.tensor(5.0)
    assert s[()].item() == 5.0 and s[None].shape == (1,) and s[...].shape == ()
    assert s[s > 1].shape == (1,) and s[s > 9].shape == (0,)


def test_getitem_basic_is_a_view_advanced_is_a_copy():
    x = ember.tensor(X3.copy())
    for v in (x[1], x[:, 1:3], x[..., None, ::2], x[0, 0, 0]):
        assert np.shares_memory(v.numpy(), x.numpy())
    for v in (x[[0, 1]], x[x > 3], x[:, [1]]):
        assert not np.shares_memory(v.numpy(), x.numpy())
    xr = ember.tensor(X3, requires_grad=True)
    v = xr[1:]
    assert v.grad_fn is not None and v._base is xr
    assert v._version is xr._version  # shares the version counter


def test_getitem_empty_and_zero_size():
    check_op(lambda m, x: x[1:1], randn(4, 3))
    check_op(lambda m, x, i: x[i], randn(4, 3), np.zeros(0, np.int64))
    check_op(lambda m, x: x[:, [0, 0]], randn(0, 3))


@pytest.mark.parametrize("key,exc,msg", [
    (slice(None, None, -1), ValueError, "step must be greater than zero"),
    (slice(None, None, 0), ValueError, "slice step cannot be zero"),
    (1.0, IndexError, "only integers, slices"),
    (5, IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ((slice(None), -5), IndexError, "index -5 is out of bounds for dimension 1 with size 4"),
    ((slice(None), [0, 7]), IndexError, "index 7 is out of bounds for dimension 1 with size 4"),
    ([0, -4], IndexError, "index -4 is out of bounds for dimension 0 with size 3"),
    ((0, 0, 0, 0), IndexError, "too many indices for tensor of dimension 3"),
    ("bad_mask", IndexError, "The shape of the mask [2] at index 0 does not match"),
    (([0, 1], [0, 1, 2]), IndexError, "shape mismatch"),
    ("float_index", IndexError, "tensors used as indices must be long, int, byte or bool"),
], ids=str)
def test_getitem_errors(key, exc, msg):
    x = ember.tensor(X3)
    if key == "bad_mask":
        key = ember.tensor([True, False])
    elif key == "float_index":
        key = ember.tensor([0.0, 1.0])
    elif isinstance(key, tuple) and any(isinstance(k, list) for k in key):
        key = tuple(ember.tensor(k) if isinstance(k, list) else k for k in key)
    elif isinstance(key, list):
        key = ember.tensor(key)
    with pytest.raises(exc, match=msg.replace("[", r"\[").replace("(", r"\(")):
        x[key]


def test_getitem_zero_dim_tensor_error():
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        ember.tensor(1.0)[0]


def test_getitem_float32_stays_float32():
    x = ember.randn(5, 4)
    assert x[[0, 1]].dtype == ember.float32 and x[1:].dtype == ember.float32


def test_getitem_backward_double_grad_and_indexing_of_grads():
    x = ember.tensor(randn(6, 3), requires_grad=True)
    idx = ember.tensor([0, 0, 5])
    y = (x[idx] ** 2).sum()
    (g,) = ember.autograd.grad(y, x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)
    expect = np.zeros((6, 3))
    expect[0] = 4.0
    expect[5] = 2.0
    np.testing.assert_allclose(gg.numpy(), expect)


# ---------------------------------------------------------------------------------------------
# setitem


SET_CASES = [
    (0, ()),
    ((slice(None), 1), (5,)),
    ([0, 2], (4, 1)),
    ("mask", ()),
    ("mask", (5,)),
    ((slice(None), [1, 3]), (2, 1)),
    ((Ellipsis, slice(1, 3)), (2,)),
    ((1, [0, 2], slice(None)), (2, 1)),
]


@pytest.mark.parametrize("key,vshape", SET_CASES, ids=str)
def test_setitem_check_op(key, vshape):
    mask = X3[:, :, 0] > 20  # (3, 4)

    def fn(m, x, v):
        y = x * 1
        k = m.tensor(mask) if key == "mask" else _conv(m, key, {})
        y[k] = v
        return y

    check_op(fn, randn(3, 4, 5), randn(*vshape, seed=2), gradgrad=True)


def test_setitem_number_and_semantics():
    x = ember.tensor(randn(3, 4), requires_grad=True)
    y = x * 1
    y[0] = 5
    assert y._version == 1 if isinstance(y._version, int) else True
    y.sum().backward()
    expect = np.ones((3, 4))
    expect[0] = 0
    np.testing.assert_array_equal(x.grad.numpy(), expect)
    np.testing.assert_array_equal(y.detach().numpy()[0], 5)


def test_setitem_leaf_under_no_grad_and_leaf_error():
    w = ember.tensor(randn(3, 4), requires_grad=True)
    with ember.no_grad():
        w[w > 0] = 0
    assert (w.detach().numpy() <= 0).all() and w.requires_grad and w.grad_fn is None
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w[0] = 1.0


def test_setitem_plain_tensor_writes_in_place_and_through_views():
    x = ember.zeros(3, 4)
    view = x[1]
    arr = x.numpy()
    x[1, [0, 2]] = ember.tensor([7.0, 8.0])
    x[:, 3] = 1
    x[x == 0] = -1
    assert arr[1, 0] == 7 and arr[1, 2] == 8 and (arr[:, 3] == 1).all() and arr[0, 0] == -1
    np.testing.assert_array_equal(view.numpy(), arr[1])
    view[0] = 3.0
    assert arr[1, 0] == 3.0


def test_setitem_casts_and_broadcasts():
    x = ember.zeros(2, 3, dtype=ember.int64)
    x[0] = 2.7
    x[1] = ember.tensor([1.5, 2.5, 3.5], dtype=ember.float64)
    assert x.dtype == ember.int64 and x.tolist() == [[2, 2, 2], [1, 2, 3]]
    y = ember.zeros(2, 3)
    y[0] = ember.ones(1, 3)  # leading 1-dims of the value are dropped, as in PyTorch
    y[:, 1] = ember.tensor(4.0, dtype=ember.float64)
    assert y.dtype == ember.float32 and y.tolist() == [[1, 4, 1], [0, 4, 0]]
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[2\]"):
        y[0] = ember.ones(2)


def test_setitem_value_grad_sums_broadcast_and_repeats():
    x = ember.tensor(randn(4, 3), requires_grad=True)
    v = ember.tensor(randn(3), requires_grad=True)
    y = x * 1
    y[[0, 2]] = v
    g = RNG.standard_normal((4, 3))
    y.backward(ember.tensor(g))
    np.testing.assert_allclose(v.grad.numpy(), g[0] + g[2])
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    tv = torch.tensor(v.detach().numpy(), requires_grad=True)
    ty = tx * 1
    ty[[0, 2]] = tv
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy())


# ---------------------------------------------------------------------------------------------
# gather / scatter


def test_gather():
    idx = np.array([[0, 2, 2, 1], [1, 1, 0, 0]])
    check_op(lambda m, x, i: m.gather(x, 0, i), randn(3, 4), idx, gradgrad=True,
             ref=lambda x, i: np.take_along_axis(x, i, 0))
    check_op(lambda m, x, i: x.gather(-1, i), randn(2, 5), idx,
             ref=lambda x, i: np.take_along_axis(x, i, 1), gradgrad=True)
    # index smaller than input in the other dims
    check_op(lambda m, x, i: m.gather(x, 1, i), randn(4, 6), np.array([[5, 0], [1, 1]]),
             gradgrad=True)
    check_op(lambda m, x, i: m.gather(x, 0, i), randn(3), np.array(2))


def test_gather_errors():
    x = ember.randn(3, 4)
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x.gather(0, ember.tensor([[0, 5]]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        x.gather(0, ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="Expected dtype int32 or int64 for index"):
        x.gather(0, ember.tensor([[0.0]]))
    with pytest.raises(RuntimeError, match="to be no larger than self"):
        x.gather(0, ember.zeros(1, 5, dtype=ember.int64))
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.gather(2, ember.zeros(1, 1, dtype=ember.int64))


def test_scatter_src_and_value():
    idx = np.array([[0, 1, 2, 0], [2, 0, 1, 1]])  # no repeats within a column
    check_op(lambda m, x, i, s: m.scatter(x, 0, i, s), randn(3, 4), idx, randn(2, 4, seed=1),
             gradgrad=True)
    check_op(lambda m, x, i: x.scatter(0, i, 2.5), randn(3, 4), idx)
    check_op(lambda m, x, i: x.scatter(1, i, value=-1.0), randn(2, 5), idx % 4)


def test_scatter_src_larger_than_index_gets_zero_grad():
    x = ember.tensor(randn(3, 5), requires_grad=True)
    src = ember.tensor(randn(3, 5, seed=1), requires_grad=True)
    y = x.scatter(0, ember.tensor([[0, 1], [2, 0]]), src)
    y.backward(ember.ones_like(y))
    expect = np.zeros((3, 5))
    expect[:2, :2] = 1
    np.testing.assert_array_equal(src.grad.numpy(), expect)
    ember.autograd.gradcheck(lambda s: x.detach().double().scatter(
        0, ember.tensor([[0, 1], [2, 0]]), s), (src.detach().double().requires_grad_(),))


def test_scatter_add():
    idx = np.array([[0, 1, 0, 0], [0, 2, 2, 1], [1, 1, 1, 1]])  # repeats
    check_op(lambda m, x, i, s: m.scatter_add(x, 0, i, s), randn(3, 4), idx, randn(3, 4, seed=1),
             gradgrad=True)
    check_op(lambda m, x, i, s: x.scatter_add(1, i, s), randn(3, 4), idx[:2, :3] % 4,
             randn(2, 3, seed=1))
    # src larger than index: the unused part of src gets a zero gradient (PyTorch errors here)
    src = ember.tensor(randn(3, 3, seed=1), requires_grad=True)
    ember.zeros(3, 4, dtype=ember.float64).scatter_add(1, ember.tensor(idx[:, :2]), src).backward(
        ember.ones(3, 4, dtype=ember.float64))
    expect = np.zeros((3, 3))
    expect[:, :2] = 1
    np.testing.assert_array_equal(src.grad.numpy(), expect)
    # int tensors are summed exactly
    big = 2**60
    x = ember.tensor([0, 0], dtype=ember.int64)
    out = x.scatter_add(0, ember.tensor([0, 0, 1]), ember.tensor([big, 1, 3]))
    assert out.tolist() == [big + 1, 3]


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("inc", [True, False])
def test_scatter_reduce_modes_match_torch(reduce, inc):
    idx = np.array([2, 2, 0, 2, 4])
    check_op(lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, reduce, include_self=inc),
             distinct(5), idx, distinct(5, seed=1) + 0.05, gradgrad=reduce != "prod")
    check_op(lambda m, x, i, s: x.scatter_reduce(1, i, s, reduce, include_self=inc),
             distinct(2, 4, seed=3), np.array([[0, 0, 3], [1, 3, 3]]), distinct(2, 3) + 0.05)


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("inc", [True, False])
def test_scatter_reduce_ties(reduce, inc):
    x = np.array([1.0, 2.0, 3.0])
    s = np.array([3.0, 3.0, 1.0])
    i = np.array([2, 2, 0])
    g = np.array([1.0, 10.0, 100.0])
    # values only: central differences are meaningless at ties
    check_op(lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, reduce, include_self=inc),
             x, i, s, grad=False)
    ex, es = ember.tensor(x, requires_grad=True), ember.tensor(s, requires_grad=True)
    ex.scatter_reduce(0, ember.tensor(i), es, reduce, include_self=inc).backward(ember.tensor(g))
    # the gradient is split evenly among the tied members of each group
    # (every group is a full tie here: out[2] = 3 from x and src, out[0] = 1)
    exp_x = [0.5, 10, 100 / 3] if inc else [0, 10, 0]
    exp_s = [100 / 3, 100 / 3, 0.5] if inc else [50, 50, 1]
    np.testing.assert_allclose(ex.grad.numpy(), exp_x)
    np.testing.assert_allclose(es.grad.numpy(), exp_s)
    if inc:  # PyTorch agrees (without include_self it also counts the excluded self value)
        tx, ts = torch.tensor(x, requires_grad=True), torch.tensor(s, requires_grad=True)
        tx.scatter_reduce(0, torch.tensor(i), ts, reduce, include_self=inc).backward(
            torch.tensor(g))
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy())
        np.testing.assert_allclose(es.grad.numpy(), ts.grad.numpy())


def test_scatter_reduce_prod_with_zeros():
    x = np.array([1.0, 2.0, 3.0])
    i = np.array([2, 2, 0])
    # one and two zeros in a group
    for sv in ([0.0, 2.0, 5.0], [0.0, 0.0, 5.0]):
        check_op(lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, "prod"), x, i, np.array(sv))
        check_op(lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, "prod", include_self=False),
                 x, i, np.array(sv))


def test_scatter_reduce_prod_double_backward_is_refused():
    x = ember.tensor(randn(3), requires_grad=True)
    y = x.scatter_reduce(0, ember.tensor([0, 0]), x[:2] * 1, "prod")
    with pytest.raises(RuntimeError, match="does not support double backward"):
        ember.autograd.grad(y.sum(), x, create_graph=True)


def test_scatter_reduce_int_mean_floors_and_errors():
    x = ember.tensor([1, 2, 3])
    out = x.scatter_reduce(0, ember.tensor([0, 0]), ember.tensor([-5, -9]), "mean")
    assert out.tolist() == [-5, 2, 3]
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean"):
        x.scatter_reduce(0, ember.tensor([0]), ember.tensor([1]), "max")
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        ember.zeros(3).scatter_add(0, ember.tensor([0]), ember.ones(1, dtype=ember.float64))


def test_scatter_reduce_argument_of_deprecated_scatter():
    x = ember.tensor(randn(3, 4))
    idx = ember.tensor([[0, 1], [0, 0]])
    s = ember.tensor(randn(2, 2, seed=1))
    tx, ti, ts = (torch.tensor(t.numpy()) for t in (x, idx, s))
    for r in ("add", "multiply"):
        np.testing.assert_allclose(x.scatter(0, idx, s, reduce=r).numpy(),
                                   tx.scatter(0, ti, ts, reduce=r).numpy())


def test_take_along_dim():
    idx = np.array([[0, 2, 1], [2, 2, 0]])
    check_op(lambda m, x, i: m.take_along_dim(x, i, 1), randn(2, 3), idx, gradgrad=True)
    check_op(lambda m, x, i: m.take_along_dim(x, i), randn(2, 3), idx)
    # broadcasting in the other dims
    check_op(lambda m, x, i: m.take_along_dim(x, i, 1), randn(1, 4), np.array([[0, 3], [1, 1]]))
    check_op(lambda m, x, i: m.take_along_dim(x, i, 0), randn(3, 4), np.array([[2], [0]]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        ember.take_along_dim(ember.randn(2, 3), ember.tensor([0]), 1)


# ---------------------------------------------------------------------------------------------
# index_* ops


def test_index_select():
    idx = np.array([2, 0, 2, -0, 1])
    check_op(lambda m, x, i: m.index_select(x, 0, i), randn(3, 4), idx, gradgrad=True,
             ref=lambda x, i: x[i])
    check_op(lambda m, x, i: x.index_select(-1, i), randn(2, 3), idx, gradgrad=True)
    check_op(lambda m, x, i: x.index_select(1, i), randn(2, 3), np.array(1))
    check_op(lambda m, x, i: x.index_select(0, i), randn(2, 3), np.array([1, 0], np.int32))
    check_op(lambda m, x, i: x.index_select(0, i), np.array(3.0), np.array([0]))


def test_index_select_errors():
    x = ember.randn(3, 4)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x.index_select(0, ember.tensor([5]))
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        x.index_select(0, ember.tensor([0.0]))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        x.index_select(0, ember.tensor([[0]]))


def test_index_add():
    idx = np.array([0, 2, 0, 0])
    check_op(lambda m, x, i, s: m.index_add(x, 0, i, s), randn(3, 2), idx, randn(4, 2, seed=1),
             gradgrad=True)
    check_op(lambda m, x, i, s: x.index_add(1, i, s, alpha=-2.5), randn(2, 3), idx,
             randn(2, 4, seed=1))
    with pytest.raises(RuntimeError, match="must have the same scalar type"):
        ember.zeros(3, 4).index_add(0, ember.tensor([0]), ember.ones(1, 4, dtype=ember.float64))
    with pytest.raises(RuntimeError, match=r"source must have shape \[2, 4\]"):
        ember.zeros(3, 4).index_add(0, ember.tensor([0, 0]), ember.ones(3, 4))


def test_index_copy_and_fill():
    idx = np.array([2, 0])
    check_op(lambda m, x, i, s: m.index_copy(x, 0, i, s), randn(3, 2), idx, randn(2, 2, seed=1),
             gradgrad=True)
    check_op(lambda m, x, i: m.index_fill(x, 1, i, -3.0), randn(2, 3), idx)
    check_op(lambda m, x, i, v: x.index_fill(1, i, v), randn(2, 3), idx, np.array(1.5))
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        ember.zeros(2, 3).index_fill(1, ember.tensor([0]), ember.ones(2))


def test_index_put():
    i0, i1 = np.array([0, 2, 0]), np.array([1, 1, 1])
    check_op(lambda m, x, a, b, v: m.index_put(x, (a, b), v, accumulate=True), randn(3, 2),
             i0, i1, randn(3, seed=1), gradgrad=True)
    check_op(lambda m, x, a, v: x.index_put((a,), v, True), randn(3, 2), i0, randn(2, seed=1))
    check_op(lambda m, x, a, b, v: x.index_put((a, b), v), randn(3, 2), np.array([0, 2]),
             np.array([1, 0]), randn(2, seed=1))
    x = ember.zeros(3)
    x.index_put_((ember.tensor([0, 0, 2]),), ember.tensor(1.0), accumulate=True)
    assert x.tolist() == [2.0, 0.0, 1.0]
    with pytest.raises(TypeError, match="expected Tensor as element 0"):
        x.index_put((None,), ember.tensor(1.0))


def test_take_and_put():
    idx = np.array([[0, 11], [-1, 3], [3, 3]])
    check_op(lambda m, x, i: m.take(x, i), randn(3, 4), idx, gradgrad=True,
             ref=lambda x, i: x.reshape(-1)[i])
    check_op(lambda m, x, i: m.take(x, i), randn(3, 4), np.array(5))
    check_op(lambda m, x, i, s: x.put(i, s), randn(3, 4), np.array([[0, 11], [-2, 3]]),
             randn(2, 2, seed=1))
    check_op(lambda m, x, i, s: x.put(i, s, accumulate=True), randn(3, 4), np.array([0, 0, 5]),
             randn(3, seed=1))
    with pytest.raises(IndexError, match="tried to access index 12 on a tensor of 12 elements"):
        ember.zeros(3, 4).take(ember.tensor([12]))
    with pytest.raises(RuntimeError, match="same number of elements"):
        ember.zeros(3, 4).put(ember.tensor([1]), ember.ones(2))


# ---------------------------------------------------------------------------------------------
# masked ops


def test_masked_fill():
    mask = randn(3, 4, seed=5) > 0
    check_op(lambda m, x, k: x.masked_fill(k, -2.0), randn(3, 4), mask, gradgrad=True,
             ref=lambda x, k: np.where(k, -2.0, x))
    # broadcasting mask, and a 0-d tensor value that gets a gradient
    check_op(lambda m, x, k, v: m.masked_fill(x, k, v), randn(3, 4), mask[0], np.array(0.7),
             gradgrad=True)
    # the mask may broadcast the input (out of place)
    check_op(lambda m, x, k: x.masked_fill(k, 1.0), randn(4), mask)


def test_masked_fill_of_a_causal_mask_is_where_bit_for_bit():
    """The attention form: a (1, 1, T, T) mask over (B, H, T, T) scores, filled by copies
    (the input, then the value where masked): np.where's bits, NaN and -0.0 kept; backward
    +0.0 where masked (where's)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    x[0, 0, 5, :2] = [np.nan, -0.0]
    g = rng.standard_normal(x.shape).astype(np.float32)
    g[1, 2, 0, 7] = -0.0
    mask = (np.tri(8, 8) == 0).reshape(1, 1, 8, 8)
    t = ember.tensor(x, requires_grad=True)
    out = t.masked_fill(ember.tensor(mask), float("-inf"))
    assert out.is_contiguous()
    assert out.detach().numpy().tobytes() == np.where(mask, np.float32(-np.inf), x).tobytes()
    out.backward(ember.tensor(g))
    assert t.grad.numpy().tobytes() == np.where(mask, 0, g).tobytes()
    # an int input and a mask that broadcasts it
    n = ember.arange(4).masked_fill(ember.tensor(np.eye(4, dtype=bool)), -1)
    assert n.tolist() == np.where(np.eye(4, dtype=bool), -1, np.arange(4)).tolist()


def test_masked_fill_dtypes_and_errors():
    x = ember.arange(4)
    out = x.masked_fill(x > 1, 2.7)
    assert out.dtype == ember.int64 and out.tolist() == [0, 1, 2, 2]
    y = ember.zeros(3).masked_fill(ember.tensor([True, False, True]), ember.tensor(2.0).double())
    assert y.dtype == ember.float32 and y.tolist() == [2.0, 0.0, 2.0]
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        x.masked_fill(ember.tensor([1, 0, 0, 1], dtype=ember.uint8), 1)
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        x.masked_fill(x > 1, ember.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="must match the size"):
        x.masked_fill(ember.tensor([True, False]), 1)
    # in place on a leaf under no_grad
    w = ember.ones(2, 2, requires_grad=True)
    with ember.no_grad():
        w.masked_fill_(ember.tensor([[True, False], [False, True]]), 0.0)
    assert w.tolist() == [[0.0, 1.0], [1.0, 0.0]]


def test_masked_select_and_scatter():
    mask = randn(3, 4, seed=5) > 0
    check_op(lambda m, x, k: x.masked_select(k), randn(3, 4), mask, gradgrad=True,
             ref=lambda x, k: x[k])
    check_op(lambda m, x, k: m.masked_select(x, k), randn(4), mask)  # broadcast input
    check_op(lambda m, x, k, s: x.masked_scatter(k, s), randn(3, 4), mask, randn(13, seed=1))
    check_op(lambda m, x, k, s: x.masked_scatter(k, s), randn(3, 4), mask[1], randn(2, 7, seed=1))
    with pytest.raises(RuntimeError, match="Number of elements of source"):
        ember.zeros(4).masked_scatter(ember.ones(4, dtype=ember.bool), ember.ones(2))


# ---------------------------------------------------------------------------------------------
# nonzero, sort, topk, unique...


def test_nonzero_argwhere():
    a = (randn(3, 4, seed=2) > 0).astype(np.float64) * randn(3, 4)
    x, t = ember.tensor(a), torch.tensor(a)
    np.testing.assert_array_equal(x.nonzero().numpy(), t.nonzero().numpy())
    assert x.nonzero().dtype == ember.int64
    np.testing.assert_array_equal(ember.argwhere(x).numpy(), torch.argwhere(t).numpy())
    for e, tt in zip(x.nonzero(as_tuple=True), t.nonzero(as_tuple=True)):
        np.testing.assert_array_equal(e.numpy(), tt.numpy())
    assert ember.tensor(3.0).nonzero().shape == (1, 0)
    assert ember.tensor(0.0).nonzero(as_tuple=True)[0].shape == (0,)
    assert ember.where(x > 0)[0].tolist() == torch.where(t > 0)[0].tolist()


@pytest.mark.parametrize("descending", [False, True])
def test_sort(descending):
    check_op(lambda m, x: m.sort(x, descending=descending), distinct(3, 5), gradgrad=True)
    check_op(lambda m, x: x.sort(0, descending), distinct(4, 2))
    check_op(lambda m, x: m.sort(x), np.array(2.0))
    r = ember.sort(ember.tensor([3.0, 1.0]))
    assert type(r).__name__ == "sort" and r.values.tolist() == [1.0, 3.0]
    assert r.indices.tolist() == [1, 0] and r.indices.dtype == ember.int64


def test_sort_stable_ties_and_nan_like_torch():
    a = np.array([2.0, np.nan, 1.0, 2.0, -np.inf, 1.0, np.nan])
    for desc in (False, True):
        e = ember.sort(ember.tensor(a), descending=desc, stable=True)
        t = torch.sort(torch.tensor(a), descending=desc, stable=True)
        np.testing.assert_array_equal(e.values.numpy(), t.values.numpy())
        np.testing.assert_array_equal(e.indices.numpy(), t.indices.numpy())
        np.testing.assert_array_equal(ember.argsort(ember.tensor(a), descending=desc).numpy(),
                                      torch.argsort(torch.tensor(a), descending=desc,
                                                    stable=True).numpy())
    b = ember.tensor([True, False, True])
    assert b.sort(descending=True).indices.tolist() == [0, 2, 1]
    u = ember.tensor([3, 0, 255], dtype=ember.uint8)
    assert u.sort(descending=True).values.tolist() == [255, 3, 0]


def test_argsort_msort():
    check_op(lambda m, x: m.argsort(x, dim=0), distinct(4, 3), grad=False)
    check_op(lambda m, x: m.msort(x), distinct(4, 3))


@pytest.mark.parametrize("shape,k,dim", [((7,), 3, 0), ((2, 80), 5, 1), ((66, 2), 66, 0),
                                         ((4, 6), 0, 1), ((2, 70), 69, -1)])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(shape, k, dim, largest):
    check_op(lambda m, x: m.topk(x, k, dim, largest), distinct(*shape), gradgrad=True)


def test_topk_edge_cases():
    check_op(lambda m, x: x.topk(1), np.array(3.0))
    nan = ember.tensor([3.0, float("nan"), 1.0, 2.0])
    assert np.isnan(nan.topk(2).values[0].item()) and nan.topk(2).indices.tolist()[0] == 1
    assert nan.topk(2, largest=False).values.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        ember.randn(3).topk(4)
    r = ember.randn(5).topk(2)
    assert type(r).__name__ == "topk" and r.indices.requires_grad is False


def test_kthvalue():
    check_op(lambda m, x: m.kthvalue(x, 2, 1), distinct(3, 5))
    check_op(lambda m, x: x.kthvalue(3, 0, True), distinct(4, 2))
    check_op(lambda m, x: x.kthvalue(1), np.array(2.0))
    with pytest.raises(RuntimeError, match="selected number k out of range"):
        ember.randn(3).kthvalue(4)


def test_unique():
    a = np.array([[3, 1, 2], [1, 3, 3], [3, 1, 2]])
    x, t = ember.tensor(a), torch.tensor(a)
    for ri in (False, True):
        for rc in (False, True):
            for dim in (None, 0, 1):
                e = ember.unique(x, return_inverse=ri, return_counts=rc, dim=dim)
                tt = torch.unique(t, return_inverse=ri, return_counts=rc, dim=dim)
                e, tt = (e, tt) if isinstance(tt, tuple) else ((e,), (tt,))
                assert len(e) == len(tt)
                for u, v in zip(e, tt):
                    assert str(u.dtype) == str(v.dtype)
                    np.testing.assert_array_equal(u.numpy(), v.numpy())
    f = torch.tensor([np.nan, np.nan, 1.0])
    np.testing.assert_array_equal(ember.unique(ember.tensor(f.numpy())).numpy(),
                                  torch.unique(f).numpy())


def test_unique_consecutive():
    a = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    for kw in ({}, {"return_inverse": True}, {"return_counts": True},
               {"return_inverse": True, "return_counts": True}):
        e = ember.unique_consecutive(ember.tensor(a), **kw)
        t = torch.unique_consecutive(torch.tensor(a), **kw)
        e, t = (e, t) if isinstance(t, tuple) else ((e,), (t,))
        for u, v in zip(e, t):
            np.testing.assert_array_equal(u.numpy(), v.numpy())
    m = np.array([[1, 2], [1, 2], [0, 1], [1, 2]])
    e = ember.tensor(m).unique_consecutive(return_inverse=True, return_counts=True, dim=0)
    t = torch.tensor(m).unique_consecutive(return_inverse=True, return_counts=True, dim=0)
    for u, v in zip(e, t):
        np.testing.assert_array_equal(u.numpy(), v.numpy())
    assert ember.unique_consecutive(ember.tensor([], dtype=ember.int64)).shape == (0,)


def test_searchsorted():
    seq1 = np.array([1.0, 3.0, 3.0, 5.0, 7.0])
    vals = np.array([[3.0, 6.0, 0.0], [7.0, 3.0, 9.0]])
    seq2 = np.sort(RNG.integers(0, 6, (2, 6)), axis=1).astype(np.float64)
    for seq, v in ((seq1, vals), (seq2, vals), (seq2.astype(np.int64), vals.astype(np.int64))):
        for kw in ({}, {"right": True}, {"side": "right"}, {"out_int32": True}):
            e = ember.searchsorted(ember.tensor(seq), ember.tensor(v), **kw)
            t = torch.searchsorted(torch.tensor(seq), torch.tensor(v), **kw)
            assert str(e.dtype) == str(t.dtype)
            np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert ember.searchsorted(ember.tensor(seq1), 3).tolist() == 1
    perm = np.array([3, 0, 4, 1, 2])
    unsorted = np.empty(5)
    unsorted[perm] = seq1
    e = ember.searchsorted(ember.tensor(unsorted), ember.tensor([4.0]),
                           sorter=ember.tensor(np.argsort(unsorted, kind="stable")))
    assert e.tolist() == [3]
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        ember.searchsorted(ember.tensor(seq1), ember.tensor([1.0]), right=True, side="left")
    with pytest.raises(RuntimeError, match="boundaries tensor should be 1 dimension"):
        ember.searchsorted(ember.tensor(seq2), ember.tensor([1.0]))


def test_bincount_histc():
    a = np.array([0, 1, 1, 5, 3])
    w = np.array([0.5, 1.0, 2.0, 0.25, 1.0], np.float32)
    for args in ((), (None, 8)):
        e, t = ember.bincount(ember.tensor(a), *args), torch.bincount(torch.tensor(a), *args)
        assert str(e.dtype) == str(t.dtype) and e.tolist() == t.tolist()
    for ww in (w, w.astype(np.float64), np.array([1, 2, 3, 4, 5])):
        e = ember.tensor(a).bincount(ember.tensor(ww))
        t = torch.tensor(a).bincount(torch.tensor(ww))
        assert str(e.dtype) == str(t.dtype)
        np.testing.assert_allclose(e.numpy(), t.numpy())
    with pytest.raises(RuntimeError, match="1-d non-negative integral"):
        ember.bincount(ember.tensor([0, -1]))
    with pytest.raises(RuntimeError, match="1-d non-negative integral"):
        ember.bincount(ember.tensor([0.0]))
    data = np.array([0.0, 1.0, 2.0, 2.0, 5.0, -1.0, 9.0, 4.0], np.float32)
    for kw in ({"bins": 4}, {"bins": 4, "min": 0, "max": 4}, {"bins": 7, "min": -1, "max": 9}):
        e, t = ember.histc(ember.tensor(data), **kw), torch.histc(torch.tensor(data), **kw)
        assert e.dtype == ember.float32
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert ember.histc(ember.tensor([1.0, 1.0]), bins=4).tolist() == [0, 0, 2, 0]
    with pytest.raises(NotImplementedError, match="histc needs a floating tensor"):
        ember.histc(ember.tensor([1, 2]))


def test_fill_diagonal():
    for shape, wrap in (((3, 4), False), ((7, 3), True), ((7, 3), False), ((3, 3, 3), False)):
        a = randn(*shape)
        e = ember.tensor(a).fill_diagonal_(5.0, wrap)
        t = torch.tensor(a).fill_diagonal_(5.0, wrap)
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    x = ember.tensor(randn(3, 4), requires_grad=True)
    y = x * 2
    y.fill_diagonal_(0.0)
    y.backward(ember.ones_like(y))
    expect = np.full((3, 4), 2.0)
    np.fill_diagonal(expect, 0)
    np.testing.assert_array_equal(x.grad.numpy(), expect)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        ember.zeros(2, 3, 4).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        ember.zeros(3).fill_diagonal_(1)


def test_in_place_methods_route_here():
    x = ember.zeros(3, 4)
    x.index_fill_(1, ember.tensor([0, 3]), 2.0)
    x.index_add_(0, ember.tensor([1, 1]), ember.ones(2, 4), alpha=3)
    x.scatter_(1, ember.tensor([[1], [1], [2]]), 7.0)
    x.masked_fill_(x > 6, -1.0)
    t = torch.zeros(3, 4)
    t.index_fill_(1, torch.tensor([0, 3]), 2.0)
    t.index_add_(0, torch.tensor([1, 1]), torch.ones(2, 4), alpha=3)
    t.scatter_(1, torch.tensor([[1], [1], [2]]), 7.0)
    t.masked_fill_(t > 6, -1.0)
    np.testing.assert_array_equal(x.numpy(), t.numpy())


def test_embedding_style_gather_is_fast():
    """Timing sanity (printed, not asserted): gather + scatter-add backward of 10k rows."""
    w = ember.randn(1000, 64, requires_grad=True)
    idx = ember.randint(0, 1000, (10000,))
    g = ember.randn(10000, 64)
    w[idx].backward(g)
    expect = np.zeros((1000, 64))
    np.add.at(expect, idx.numpy(), g.numpy().astype(np.float64))
    np.testing.assert_allclose(w.grad.numpy(), expect, rtol=1e-5, atol=1e-5)
    assert w.grad.dtype == ember.float32
    t0 = time.perf_counter()
    for _ in range(10):
        w.grad = None
        w[idx].backward(g)
    ms = (time.perf_counter() - t0) / 10 * 1e3
    print(f"\nembedding gather (10k x 64 from 1000 x 64) forward+backward: {ms:.2f} ms")


def test_scatter_add_into_a_transposed_tensor_sums_into_it():
    """The sums land in the result when the base is a transposed view (a regression: the
    blocked float path once added into a copy of an F-ordered result)."""
    base = ember.arange(12.0).reshape(4, 3).t()
    idx = ember.tensor([[0, 1, 2, 0], [1, 2, 3, 3], [0, 0, 0, 0]])
    out = ember.scatter_add(base, 1, idx, ember.ones(3, 4))
    want = base.numpy().copy()
    np.add.at(want, (np.arange(3)[:, None].repeat(4, 1), idx.numpy()), 1.0)
    np.testing.assert_array_equal(out.numpy(), want)
    assert out.is_contiguous()
