"""Every index kind PyTorch accepts, read (``x[key]``), written (``x[key] = v``) and
differentiated, against PyTorch: explicit cases, then random index expressions (hypothesis)."""

import numpy as np
import pytest

import ember
from ember import _backend

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

SHAPE = (3, 4, 5)
X = np.arange(60.0).reshape(SHAPE) / 7 - 3


class T:
    """An index tensor described once, built for either library."""

    def __init__(self, data, dtype="int64"):
        self.arr = np.asarray(data, dtype=dtype)

    def make(self, m):
        return m.tensor(self.arr.copy())

    def __repr__(self):
        return f"T({self.arr.tolist()!r}, {self.arr.dtype})"


def build(m, key):
    if isinstance(key, tuple):
        return tuple(build(m, k) for k in key)
    if isinstance(key, list):
        return [build(m, k) for k in key]
    if isinstance(key, T):
        return key.make(m)
    if isinstance(key, np.ndarray):
        return key.copy()
    return key


def _read(m, x_np, key, cot_seed=0):
    """x[key] and the gradient of sum(x[key] * cotangent) with module m (float64)."""
    x = m.tensor(x_np, dtype=m.float64, requires_grad=True)
    y = x[build(m, key)]
    cot = np.random.default_rng(cot_seed).standard_normal(tuple(y.shape))
    (y * m.tensor(cot, dtype=m.float64)).sum().backward()
    return y.detach().numpy(), x.grad.numpy()


def check_read(key, x_np=X):
    try:
        want_y, want_g = _read(torch, x_np, key)
    except Exception as e:  # noqa: BLE001 - the same key must fail the same way in ember
        with pytest.raises(type(e)):
            _read(ember, x_np, key)
        return
    got_y, got_g = _read(ember, x_np, key)
    assert got_y.shape == want_y.shape, (key, got_y.shape, want_y.shape)
    np.testing.assert_array_equal(got_y, want_y)
    np.testing.assert_allclose(got_g, want_g, rtol=1e-12, atol=1e-12)


def _unique_positions(key, x_np=X):
    pos = torch.arange(x_np.size).reshape(x_np.shape)[build(torch, key)]
    return pos.numel() == pos.unique().numel()


def _write(m, x_np, key, v_np):
    """x[key] = v without autograd, then with it: y = x * 1; y[key] = v; gradients of x, v."""
    plain = m.tensor(x_np, dtype=m.float64)
    plain[build(m, key)] = m.tensor(v_np, dtype=m.float64)
    x = m.tensor(x_np, dtype=m.float64, requires_grad=True)
    v = m.tensor(v_np, dtype=m.float64, requires_grad=True)
    y = x * 1
    y[build(m, key)] = v
    cot = np.random.default_rng(1).standard_normal(x_np.shape)
    (y * m.tensor(cot, dtype=m.float64)).sum().backward()
    # (PyTorch leaves v.grad None when nothing is written, e.g. x[False] = v: count it as 0)
    gv = v.grad.numpy() if v.grad is not None else np.zeros(v_np.shape)
    return plain.numpy(), y.detach().numpy(), x.grad.numpy(), gv


def check_write(key, v_shape=None, x_np=X):
    """Write random values (of x[key]'s shape, or ``v_shape`` broadcast to it)."""
    target = tuple(torch.tensor(x_np)[build(torch, key)].shape)
    v_np = np.random.default_rng(2).standard_normal(target if v_shape is None else v_shape)
    want = _write(torch, x_np, key, v_np)
    got = _write(ember, x_np, key, v_np)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=repr(key))


# ---------------------------------------------------------------------------------------------
# explicit kinds

KINDS = [
    range(2), range(1, 3), range(0, 3, 2), range(0), (range(2), [0, 1]), [range(2), [0, 1]],
    (slice(None), range(1, 4), range(2)), (slice(None), range(1, 3), range(2)), (range(3), slice(None), range(3, 0, -1)),
    np.int64(1), np.int32(-1), (np.int64(1), slice(None), np.array([0, 1])),
    np.array([1, 0]), np.array([[0, 2], [1, 1]]), np.array([True, False, True]),
    np.array(1), np.array(True), np.array([1, 0], dtype=np.int16),
    np.array([1, 0], dtype=np.uint16), np.array([1, 0], dtype=np.uint8), np.array([1.7, 0.2]),
    True, False, (True, 0), (None, True, Ellipsis, 0), (Ellipsis, 0, Ellipsis),
    (Ellipsis, None, Ellipsis), [True, False, True], [[0, 1], [1, 0]], ([0, 1], [1, 2]),
    [1.5], [1.7, 0.2], [-0.5], [True, 0], [np.int64(0), 1], [np.float64(1.0)],
    [T(0), 1], [T(True, "bool")], [None, 0], [0, slice(None)], [0, [1, 2]], [0] * 33,
    ([True, False, True], slice(None), [True, False, True, True, False]),
    ([0, 1], slice(None), [1, 2]), (slice(None), [0, 1], slice(None)), ([0, 1], 1, [1, 2]),
    (0, slice(None), [1, 2]), ([0, 1], slice(None), 0), (T([True, False, True], "bool"),
                                                         slice(None), T([1, 2])),
    T(1), T(-1), T(True, "bool"), T(False, "bool"), T([1, 0], "int32"), T([1, 0], "uint8"),
    T(np.ones((3, 4), bool), "bool"), (T([[0], [2]]), T([1, 3])), (slice(1, None), T([[0, 1]])),
    (slice(None), slice(None), [[0, 4], [1, 3]]), (None, [0, 2], None, slice(None), [1, -1]),
    (slice(None, None, 2), Ellipsis, np.array([4, 0])), ([], slice(None)), (), Ellipsis, None,
    slice(-2, None), (slice(1, 10, 3), -1), (slice(None), slice(None, None, 3), 2),
]


@pytest.mark.parametrize("key", KINDS, ids=repr)
def test_read_matches_torch(key):
    check_read(key)


@pytest.mark.parametrize("key", [k for k in KINDS if not isinstance(k, list) or len(k) < 30],
                         ids=repr)
def test_write_matches_torch(key):
    try:
        unique = _unique_positions(key)
    except Exception as e:  # noqa: BLE001 - an invalid key fails the same way in ember
        with pytest.raises(type(e)):
            ember.tensor(X)[build(ember, key)] = 1.0
        return
    if not unique:
        pytest.skip("repeated positions: which write wins is unspecified in PyTorch")
    check_write(key)


def test_range_in_the_classic_nll_idiom():
    """``logprobs[range(n), Yb]`` (makemore), read and written, with gradients."""
    n = 4
    logits = np.random.default_rng(0).standard_normal((n, 6))
    yb = [1, 5, 0, 5]
    for m in (ember, torch):
        lp = m.tensor(logits, requires_grad=True)
        loss = -lp.log_softmax(1)[range(n), m.tensor(yb)].mean()
        loss.backward()
        if m is ember:
            got_loss, got_grad = loss.item(), lp.grad.numpy()
        else:
            np.testing.assert_allclose(got_loss, loss.item(), rtol=1e-6)
            np.testing.assert_allclose(got_grad, lp.grad.numpy(), rtol=1e-5, atol=1e-7)
    d = ember.zeros(n, 6)
    d[range(n), ember.tensor(yb)] = 1.0
    assert d.sum().item() == n and d[2, 0].item() == 1.0


@pytest.mark.parametrize("key,v_shape", [
    ((slice(None), [0, 2]), ()), ((slice(None), [0, 2]), (5,)), ((slice(None), [0, 2]), (2, 1)),
    (([0, 2], slice(None), [1, 3]), (4,)), ((range(3), 0), (1,)), (np.array([True, False, True]),
                                                                   (4, 5)),
    ((Ellipsis, [4]), (1, 1, 1, 1)), ((0, [1, 2], slice(1, 3)), (1, 2)),
])
def test_write_broadcasts_the_value(key, v_shape):
    check_write(key, v_shape)


def test_index_put_accumulate_adds_duplicates():
    idx = ([0, 0, 2, 0], [1, 1, 3, 1])
    vals = np.random.default_rng(3).standard_normal(4)
    outs = []
    for m in (ember, torch):
        x = m.tensor(X[:, :, 0].copy())
        x.index_put_(tuple(m.tensor(i) for i in idx), m.tensor(vals), accumulate=True)
        outs.append(x.numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12)


@pytest.mark.parametrize("key,exc", [
    (3, IndexError), (-4, IndexError), ([3], IndexError), ((0, range(6)), IndexError),
    ((slice(None), 5), IndexError), (np.array([-4]), IndexError),
    (T([True, False], "bool"), IndexError), ((slice(None), T([True] * 5, "bool")), IndexError),
    (T(np.ones((3, 5), bool), "bool"), IndexError), (T([1.0], "float32"), IndexError),
    (T([1], "int16"), IndexError), (T([1], "int8"), IndexError), (1.0, IndexError),
    (np.float64(1), IndexError), (np.bool_(True), IndexError), ("a", TypeError),
    (([T(1.0, "float32"), T(0.0, "float32")],), TypeError),
    ([T(1.0, "float32"), T(0.0, "float32")], IndexError), (np.array(["a"]), TypeError),
    (slice(None, None, -1), ValueError), (slice(None, None, 0), ValueError),
    (([0, 1], [0, 1, 2]), IndexError), ((0, 0, 0, 0), IndexError), ({0}, IndexError),
])
def test_errors_match_torch(key, exc):
    x = torch.tensor(X)
    with pytest.raises(exc):
        x[build(torch, key)]
    with pytest.raises(exc):
        ember.tensor(X)[build(ember, key)]
    with pytest.raises(exc):
        ember.tensor(X)[build(ember, key)] = 0.0


def test_mask_mismatch_message_names_the_dims():
    x = ember.tensor(X)
    with pytest.raises(IndexError, match=r"mask \[3, 5\] at index 1 does not match the shape of "
                                         r"the indexed tensor \[3, 4, 5\] at index 1"):
        x[ember.ones(3, 5, dtype=ember.bool)]


def test_negative_slice_step_says_how_to_reverse():
    with pytest.raises(ValueError, match=r"step must be greater than zero.*flip"):
        ember.tensor(X)[::-1]


# ---------------------------------------------------------------------------------------------
# index tensors on another device (FakeCudaArray reports cuda:0)


def _fake_cuda(t):
    return ember.Tensor._make(t._data.view(_backend.FakeCudaArray))


def test_cpu_index_on_a_cuda_tensor():
    x = _fake_cuda(ember.tensor(X))
    y = x[ember.tensor([2, 0])]
    assert str(y.device) == "cuda:0"
    np.testing.assert_array_equal(np.asarray(y._data), X[[2, 0]])
    x[ember.tensor([1])] = 0.0
    assert float(np.asarray(x._data)[1].sum()) == 0.0


def test_cuda_index_on_a_cpu_tensor_is_refused():
    x = ember.tensor(X)
    with pytest.raises(RuntimeError, match=r"indices should be either on cpu or on the same "
                                           r"device as the indexed tensor \(cpu\)"):
        x[_fake_cuda(ember.tensor([0, 1]))]
    # a 0-d index is a number: allowed
    np.testing.assert_array_equal(x[_fake_cuda(ember.tensor(1))].numpy(), X[1])


# ---------------------------------------------------------------------------------------------
# random index expressions


@st.composite
def index_keys(draw):
    """A random key for a tensor of SHAPE: basic parts (ints, slices, None, Ellipsis, bools)
    and advanced parts (lists, ranges, NumPy arrays, int/bool tensors) whose shapes broadcast."""
    ndim = len(SHAPE)
    n_parts = draw(st.integers(0, 5))
    b_shape = draw(st.sampled_from([(), (1,), (2,), (3,), (2, 1), (1, 3), (2, 3)]))
    key, d = [], 0
    used_ellipsis = False
    mask_used = False
    for _ in range(n_parts):
        kinds = ["none", "bool"]
        if not used_ellipsis:
            kinds.append("ellipsis")
        if d < ndim:
            kinds += ["int", "slice", "slice", "adv", "adv", "np_int"]
            if not mask_used:
                kinds.append("mask")
        kind = draw(st.sampled_from(kinds))
        if kind == "none":
            key.append(None)
        elif kind == "bool":
            key.append(draw(st.booleans()))
        elif kind == "ellipsis":
            used_ellipsis = True
            key.append(Ellipsis)
            d = max(d, ndim - sum(1 for k in key if _consumes(k)) + _consumed_before(key))
        elif kind == "int" or kind == "np_int":
            size = SHAPE[d]
            i = draw(st.integers(-size, size - 1))
            key.append(i if kind == "int" else np.int64(i))
            d += 1
        elif kind == "slice":
            size = SHAPE[d]
            start = draw(st.one_of(st.none(), st.integers(-size - 1, size + 1)))
            stop = draw(st.one_of(st.none(), st.integers(-size - 1, size + 1)))
            step = draw(st.one_of(st.none(), st.integers(1, 3)))
            key.append(slice(start, stop, step))
            d += 1
        elif kind == "mask":
            k = draw(st.integers(1, min(2, ndim - d)))
            shape = SHAPE[d:d + k]
            mask = draw(st.lists(st.booleans(), min_size=int(np.prod(shape)),
                                 max_size=int(np.prod(shape))))
            arr = np.array(mask, dtype=bool).reshape(shape)
            key.append(draw(st.sampled_from([T(arr, "bool"), arr])) if k > 1 else
                       draw(st.sampled_from([T(arr, "bool"), arr, arr.tolist()])))
            mask_used = True
            b_shape = (int(arr.sum()),) if b_shape != () else ()
            d += k
        else:  # an integer array index broadcasting to b_shape
            size = SHAPE[d]
            shape = draw(st.sampled_from(_broadcastable_to(b_shape)))
            n = int(np.prod(shape)) if shape else 1
            vals = draw(st.lists(st.integers(-size, size - 1), min_size=n, max_size=n))
            arr = np.array(vals, dtype=np.int64).reshape(shape)
            form = draw(st.sampled_from(["tensor", "np", "list", "range", "int32"]))
            if form == "range" and shape == (n,) and n > 0:
                key.append(range(0, min(n, size)) if n <= size else arr.tolist())
            elif form == "list" and shape != ():
                key.append(arr.tolist())
            elif form == "np":
                key.append(arr)
            else:
                key.append(T(arr, "int32" if form == "int32" else "int64"))
            d += 1
    return tuple(key) if draw(st.booleans()) or len(key) != 1 else key[0]


def _consumes(k):
    return k is not None and k is not Ellipsis and not isinstance(k, bool)


def _consumed_before(key):
    return sum(1 for k in key[:-1] if _consumes(k))


def _broadcastable_to(shape):
    out = [shape]
    if shape:
        out.append((1,) * len(shape))
        out.append(shape[1:])
    return out


@hypothesis.settings(max_examples=120, deadline=None, derandomize=True,
                     suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(index_keys())
def test_random_keys_read_like_torch(key):
    check_read(key)


@hypothesis.settings(max_examples=80, deadline=None, derandomize=True,
                     suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(index_keys())
def test_random_keys_write_like_torch(key):
    try:
        ok = _unique_positions(key)
    except Exception:  # noqa: BLE001 - an invalid key: check_read covers its error
        return
    if ok:
        check_write(key)


# ---------------------------------------------------------------------------------------------
# the value of a write


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64", "bool",
                                   "float16", "float32"])
@pytest.mark.parametrize("value", [300, -1, 2**40, float("inf"), float("nan"), 1e10, -129,
                                   2**63, -2.5, 255.9, -1.5, 40000, True])
def test_written_number_fits_the_dtype_like_torch(dtype, value):
    def run(m):
        x = m.zeros(2, dtype=getattr(m, dtype))
        x[0] = value
        return x

    try:
        want = run(torch)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            run(ember)
        return
    np.testing.assert_array_equal(run(ember).numpy(), want.numpy())


@pytest.mark.parametrize("value", [[1.0, 2.0, 3.0, 4.0, 5.0], np.ones(5), np.float32(3.5), "a",
                                   (1.0,) * 5])
def test_written_value_must_be_a_number_or_tensor(value):
    with pytest.raises(TypeError):
        torch.zeros(3, 5)[0] = value
    with pytest.raises(TypeError, match=r"can't assign a .* x\[key\] = torch.tensor\(value\)"):
        ember.zeros(3, 5)[0] = value


def test_basic_write_copies_across_devices():
    """``x[0] = v`` copies into a view of x, which PyTorch does across devices (``copy_``)."""
    x = _fake_cuda(ember.zeros(3, 4))
    x[0] = ember.arange(4.0)
    x[1:, ::2] = ember.ones(2, 2)
    np.testing.assert_array_equal(np.asarray(x._data)[0], np.arange(4.0))
    assert np.asarray(x._data)[1:, ::2].sum() == 4.0 and str(x.device) == "cuda:0"
    # the gradient flows back to the value's device
    v = ember.ones(4, requires_grad=True)
    y = _fake_cuda(ember.zeros(3, 4)) * 1
    y[2] = v * 3
    y.sum().backward()
    assert str(v.grad.device) == "cpu" and v.grad.tolist() == [3.0] * 4
    # an advanced key needs the values on x's device (a 0-d CPU value may join, as in PyTorch)
    with pytest.raises(RuntimeError, match="same device"):
        x[ember.tensor([0, 1])] = ember.ones(2, 4)
    x[ember.tensor([0, 1])] = ember.tensor(5.0)
    assert np.asarray(x._data)[:2].sum() == 40.0


@pytest.mark.parametrize("bounds", [
    ("i", "i+3"), ("i", None), (None, "i"), ("i", "i+3", "s"), ("n", "i+3"), ("i", "i+3", "np"),
])
def test_slice_bounds_given_as_tensors(bounds):
    """nanoGPT's get_batch: data[i:i+block_size] for i in a tensor of starts. 0-d integer
    tensors (and NumPy integers) as slice bounds read and write as their ints; the result is a
    view, as in PyTorch."""
    got = []
    for m in (ember, torch):
        data = m.arange(20.0).reshape(10, 2)
        i = m.randint(1, 2, ()) * 3  # 0-d int64 tensor 3
        env = {"i": i, "s": m.tensor(2), "n": -i, "np": np.int64(2)}
        parts = [eval(b, {}, env) if b is not None else None for b in bounds]
        part = parts[2] if len(parts) > 2 else None
        v = data[parts[0]:parts[1]:part]
        v2 = data[parts[0]:parts[1]:part, 1]
        data[parts[0]:parts[1]:part, 0] = -1.0
        got.append((v.numpy().copy(), v2.numpy().copy(), data.numpy().copy(), v._base is not None))
    for e, t in zip(*got):
        np.testing.assert_array_equal(e, t)


@pytest.mark.parametrize("bound, exc", [("f", TypeError), ("v", TypeError), ("z", ValueError)])
def test_slice_bounds_that_are_not_indices_fail_like_torch(bound, exc):
    for m in (ember, torch):
        env = {"f": m.tensor(1.0), "v": m.tensor([1, 2]), "z": m.tensor(0)}
        data = m.arange(6.0)
        key = slice(None, None, env[bound]) if bound == "z" else slice(env[bound], None)
        with pytest.raises(exc):
            data[key]
