"""Tensor API: identity, dtypes and promotion, devices, creation, conversions, errors."""

import copy
import pickle

import numpy as np
import pytest

import ember
from ember import _backend
from helpers import HAVE_TORCH, torch

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch not installed")


# -- identity and metadata ---------------------------------------------------------------------


def test_seed_tensor_attributes():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert repr(x.shape) == "torch.Size([2, 2])" and x.shape == (2, 2)
    assert repr(x.dtype) == "torch.float32" and x.dtype == ember.float32
    assert str(x.device) == "cpu" and x.device == ember.device("cpu") and x.device != "cpu"
    assert x.size() == (2, 2) and x.size(1) == 2 and x.size(-1) == 2
    assert x.ndim == 2 and x.dim() == 2 and x.numel() == 4 and len(x) == 2
    assert isinstance(x.shape, ember.Size) and isinstance(x.shape, tuple)
    assert x.shape[1:] == (2,) and isinstance(x.shape[1:], ember.Size)
    assert x.element_size() == 4 and x.dtype.itemsize == 4 and x.dtype.is_floating_point


def test_inference_of_dtypes():
    assert ember.tensor(1.5).dtype == ember.float32
    assert ember.tensor([1, 2]).dtype == ember.int64
    assert ember.tensor([True]).dtype == ember.bool
    assert ember.tensor([1, 2.5]).dtype == ember.float32
    assert ember.tensor(np.zeros(2)).dtype == ember.float64  # NumPy dtype is kept
    assert ember.tensor(np.zeros(2, np.int32)).dtype == ember.int32
    assert ember.tensor([[1, 2]], dtype=ember.float64).dtype == ember.float64
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor(1.5).dtype == ember.float64
        assert ember.zeros(2).dtype == ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    assert ember.get_default_dtype() == ember.float32


def test_dtype_aliases():
    assert ember.float is ember.float32 and ember.double is ember.float64
    assert ember.long is ember.int64 and ember.int is ember.int32 and ember.half is ember.float16
    assert ember.bool is not bool and ember.tensor([1]).bool().dtype == ember.bool
    assert ember.bfloat16.itemsize == 2


@pytest.mark.parametrize(
    "a,b",
    [
        ("float32", "float64"), ("int64", "float32"), ("int32", "int64"), ("uint8", "int8"),
        ("bool", "int64"), ("float16", "bfloat16"), ("bool", "float16"), ("int8", "float16"),
    ],
)
@needs_torch
def test_promotion_matches_torch(a, b):
    ea = ember.ones(2, dtype=getattr(ember, a))
    eb = ember.ones(2, dtype=getattr(ember, b))
    ta = torch.ones(2, dtype=getattr(torch, a))
    tb = torch.ones(2, dtype=getattr(torch, b))
    assert str(ember.result_type(ea, eb)) == str(torch.result_type(ta, tb))
    if a != "bool" or b != "bool":
        assert str((ea + eb).dtype) == str((ta + tb).dtype)


@needs_torch
@pytest.mark.parametrize("dt", ["float16", "float32", "float64", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("scalar", [2, 2.5, True])
def test_scalar_promotion_matches_torch(dt, scalar):
    e = ember.ones(3, dtype=getattr(ember, dt))
    t = torch.ones(3, dtype=getattr(torch, dt))
    assert str((e * scalar).dtype) == str((t * scalar).dtype)
    assert str((e / 2).dtype) == str((t / 2).dtype)
    if dt != "bool":
        assert str((e // 2).dtype) == str((t // 2).dtype)
    z = ember.tensor(2.0, dtype=ember.float64)
    assert str((e + z).dtype) == str((t + torch.tensor(2.0, dtype=torch.float64)).dtype)


def test_float32_never_upcasts():
    x = ember.ones(3)
    assert (x * 2.5).dtype == ember.float32
    assert (x * np.float64(2.5)).dtype == ember.float32
    assert (2.5 * x).dtype == ember.float32
    assert (x / 3).dtype == ember.float32
    assert ember.exp(x).dtype == ember.float32
    assert (ember.tensor([1, 2]) / ember.tensor([2, 4])).dtype == ember.float32
    assert ember.sqrt(ember.tensor([4])).dtype == ember.float32
    assert (ember.tensor([7]) // 2).dtype == ember.int64 and (ember.tensor([7]) // 2).item() == 3


# -- conversions -------------------------------------------------------------------------------


def test_numpy_shares_memory_and_refuses_grad():
    x = ember.zeros(3)
    arr = x.numpy()
    arr[0] = 5
    assert x[0].item() == 5
    a = np.arange(3.0)
    t = ember.from_numpy(a)
    t[1] = 9
    assert a[1] == 9 and t.dtype == ember.float64
    w = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"detach\(\)\.numpy\(\)"):
        w.numpy()
    assert w.detach().numpy().tolist() == [1, 1]


def test_item_tolist_scalars_format():
    x = ember.tensor([[1.5]])
    assert x.item() == 1.5 and float(x) == 1.5 and int(x) == 1 and bool(x)
    assert ember.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert f"{ember.tensor(0.123456):.4f}" == "0.1235"
    assert [1, 2, 3][ember.tensor(1)] == 2
    with pytest.raises(RuntimeError, match=r"3 elements cannot be converted.*shape \(3,\)"):
        ember.ones(3).item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(ember.ones(2))


def test_to_and_type_conversions():
    x = ember.tensor([1.7, -2.2])
    assert x.to(ember.float64).dtype == ember.float64
    assert x.long().tolist() == [1, -2] and x.int().dtype == ember.int32
    assert x.double().dtype == ember.float64 and x.half().dtype == ember.float16
    assert x.to("cpu") is x and x.cpu() is x and x.to(ember.float32) is x
    assert x.to(ember.zeros(1, dtype=ember.int64)).dtype == ember.int64
    assert x.to("cpu", ember.float64).dtype == ember.float64
    assert x.to(dtype=ember.float16, copy=True).dtype == ember.float16
    assert x.type() == "torch.FloatTensor" and x.type(ember.float64).dtype == ember.float64
    assert x.type_as(ember.tensor([1])).dtype == ember.int64
    assert x.bfloat16().dtype == ember.bfloat16


def test_to_keeps_graph():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    (w.double() * 3).sum().backward()
    assert w.grad.dtype == ember.float32 and w.grad.tolist() == [3, 3]


def test_clone_detach_data():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    c = w.clone()
    assert c.grad_fn.name() == "CloneBackward0"
    d = w.detach()
    assert not d.requires_grad and np.shares_memory(d.numpy(), w.detach().numpy())
    w.data.mul_(2)
    assert w.tolist() == [2, 4] and w.requires_grad
    w.data = ember.tensor([7.0])
    assert w.tolist() == [7.0]
    e = (w * 2).detach_()
    assert e.grad_fn is None and not e.requires_grad


def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="floating point"):
        ember.tensor([1, 2]).requires_grad_()
    y = ember.ones(1, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad = False
    z = ember.zeros(2, requires_grad=True)
    assert z.requires_grad and z.is_leaf


def test_hash_iteration_contains():
    x = ember.tensor([1.0, 2.0, 3.0])
    assert len({x, x}) == 1 and hash(x) == id(x)
    assert [t.item() for t in x] == [1, 2, 3]
    assert 2.0 in x
    with pytest.raises(TypeError):
        len(ember.tensor(1.0))


def test_numpy_does_not_swallow_tensors():
    x = ember.ones(2)
    r = np.float64(2.0) * x
    assert isinstance(r, ember.Tensor) and r.dtype == ember.float32
    with pytest.raises(TypeError):  # as PyTorch: an array on the left defers, then refuses
        np.ones(2) + x
    assert np.asarray(x).tolist() == [1, 1]


def test_isinstance_and_legacy_constructors():
    assert isinstance(ember.ones(1), ember.Tensor)
    assert ember.Tensor([1, 2]).dtype == ember.float32
    assert ember.Tensor(2, 3).shape == (2, 3)
    assert ember.FloatTensor([1, 2]).dtype == ember.float32
    assert ember.LongTensor([1, 2]).dtype == ember.int64
    assert isinstance(ember.LongTensor([1]), ember.Tensor)
    assert ember.is_tensor(ember.ones(1)) and not ember.is_tensor(1)


def test_new_constructors():
    x = ember.ones(2, dtype=ember.float64)
    assert x.new_zeros(3).dtype == ember.float64 and x.new_zeros((2, 2)).shape == (2, 2)
    assert x.new_ones(2).tolist() == [1, 1] and x.new_full((2,), 7).tolist() == [7, 7]
    assert x.new_tensor([1, 2]).dtype == ember.float64 and x.new_empty(4).shape == (4,)


def test_pickle_and_deepcopy():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = pickle.loads(pickle.dumps(x))
    assert y.tolist() == [1, 2] and y.requires_grad
    z = copy.deepcopy(x)
    assert z.tolist() == [1, 2] and z is not x and z.requires_grad
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(x * 2)


def test_allclose_isclose_equal():
    a = ember.tensor([1.0, 2.0])
    assert ember.allclose(a, a + 1e-9) and ember.equal(a, a.clone())
    assert not ember.equal(a, ember.tensor([1.0]))
    assert ember.isclose(a, ember.tensor([1.0, 2.1])).tolist() == [True, False]


# -- creation ----------------------------------------------------------------------------------


def test_creation_functions():
    assert ember.zeros(2, 3).shape == (2, 3) and ember.zeros((2, 3)).shape == (2, 3)
    assert ember.zeros([2]).dtype == ember.float32 and ember.ones(ember.Size([2, 1])).shape == (2, 1)
    assert ember.full((2,), 3).dtype == ember.int64 and ember.full((2,), 1.5).dtype == ember.float32
    assert ember.full((1,), True).dtype == ember.bool
    assert ember.arange(5).tolist() == [0, 1, 2, 3, 4] and ember.arange(5).dtype == ember.int64
    assert ember.arange(0, 1, 0.25).tolist() == [0, 0.25, 0.5, 0.75]
    assert ember.arange(0, 1, 0.25).dtype == ember.float32
    assert ember.linspace(0, 1, 5).tolist() == [0, 0.25, 0.5, 0.75, 1.0]
    assert ember.eye(2).tolist() == [[1, 0], [0, 1]] and ember.eye(2, 3).shape == (2, 3)
    z = ember.zeros_like(ember.ones(2, dtype=ember.int32))
    assert z.dtype == ember.int32 and z.tolist() == [0, 0]
    assert ember.empty(3).shape == (3,) and ember.ones(2, requires_grad=True).requires_grad
    assert ember.tensor([]).shape == (0,) and ember.zeros(0, 3).numel() == 0


def test_random_reproducible():
    ember.manual_seed(123)
    a = ember.randn(3, 4)
    ember.manual_seed(123)
    b = ember.randn(3, 4)
    assert ember.equal(a, b) and a.dtype == ember.float32
    g = ember.Generator().manual_seed(5)
    r1 = ember.rand(3, generator=g)
    g.manual_seed(5)
    assert ember.equal(r1, ember.rand(3, generator=g))
    state = ember.get_rng_state()
    x = ember.rand(5)
    ember.set_rng_state(state)
    assert ember.equal(x, ember.rand(5))
    assert ember.randint(0, 10, (100,)).max().item() < 10
    assert ember.randint(3, (4,)).dtype == ember.int64
    assert sorted(ember.randperm(10).tolist()) == list(range(10))
    assert ember.rand(2, 2).min().item() >= 0
    assert ember.randn_like(a).shape == a.shape and ember.rand_like(a).dtype == a.dtype
    assert ember.normal(0.0, 1.0, size=(3,)).shape == (3,)
    assert ember.normal(ember.zeros(4), ember.ones(4)).shape == (4,)
    assert set(ember.bernoulli(ember.full((100,), 0.5)).tolist()) <= {0.0, 1.0}
    s = ember.multinomial(ember.tensor([0.0, 1.0, 0.0]), 3, replacement=True)
    assert s.tolist() == [1, 1, 1]
    s2 = ember.multinomial(ember.tensor([[1.0, 1.0, 1.0]]), 3)
    assert sorted(s2[0].tolist()) == [0, 1, 2]


def test_inplace_random_fills():
    w = ember.empty(1000)
    w.uniform_(-2, 2)
    assert -2 <= w.min().item() and w.max().item() <= 2
    w.normal_(0, 0.1)
    assert abs(w.std().item() - 0.1) < 0.02
    w.zero_()
    assert w.sum().item() == 0
    w.fill_(3)
    assert w.mean().item() == 3


# -- devices -----------------------------------------------------------------------------------


def test_devices():
    assert ember.device("cuda:1").index == 1 and ember.device("cuda", 0).type == "cuda"
    assert repr(ember.device("cpu")) == "device(type='cpu')"
    assert str(ember.device("cuda:0")) == "cuda:0"
    assert ember.backends.mps.is_available() is False
    with pytest.raises(RuntimeError, match="mps"):
        ember.zeros(2, device="mps")
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match="CuPy|GPU"):
            ember.ones(2).cuda()
        assert ember.cuda.device_count() == 0 and not ember.accelerator.is_available()
        assert ember.accelerator.current_accelerator() is None
    with pytest.raises(RuntimeError):
        ember.device("tpu")


def _fake_cuda(t):
    return ember.Tensor._make(t._data.view(_backend.FakeCudaArray))


def test_device_mismatch_error_names_devices_and_fix():
    a = _fake_cuda(ember.ones(2, 3))
    b = ember.ones(2, 3)
    assert str(a.device) == "cuda:0"
    with pytest.raises(RuntimeError, match=r"same device.*cuda:0 and cpu.*\(2, 3\).*\.to\("):
        a + b
    # a 0-d CPU tensor may join a CUDA op, as in PyTorch
    assert str((a * ember.tensor(2.0)).device) == "cuda:0"


# -- error messages for the classic mistakes ---------------------------------------------------


def test_non_broadcastable_shapes():
    with pytest.raises(RuntimeError, match=r"tensor a \(3\) must match.*tensor b \(4\).*dimension 1.*\(2, 3\) and \(4,\)"):
        ember.ones(2, 3) + ember.ones(4)


def test_where_requires_bool():
    with pytest.raises(RuntimeError, match="boolean"):
        ember.where(ember.ones(2), ember.ones(2), ember.zeros(2))
    assert ember.where(ember.tensor([True, False]), 1.0, 0.0).tolist() == [1, 0]


def test_requested_dtype_applies_before_default():
    assert ember.tensor(0.1, dtype=ember.float64).item() == 0.1
    assert ember.tensor([0.1, 0.2], dtype=ember.float64).tolist() == [0.1, 0.2]


def test_dtypes_pickle_to_the_same_object():
    for d in (ember.bool, ember.float32, ember.int64, ember.bfloat16):
        assert pickle.loads(pickle.dumps(d)) is d


def test_format_of_zero_dim_tensor_is_the_number():
    loss = ember.tensor(0.5)
    assert f"{loss}" == "0.5" and f"{loss:.3f}" == "0.500"
    assert f"{ember.tensor([1.0])}" == "tensor([1.])"


def test_grad_of_non_leaf_warns_like_pytorch():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    y.sum().backward()
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert y.grad is None
    with pytest.raises(RuntimeError, match="different size"):
        x.grad = ember.zeros(3)


def test_device_mismatch_hint_points_to_the_parameters_device():
    w = ember.Tensor._make(ember.ones(3, 2)._data.view(_backend.FakeCudaArray)).requires_grad_()
    x = ember.ones(4, 3)
    with pytest.raises(RuntimeError, match=r"parameters are on cuda:0.*x\.to\('cuda:0'\)"):
        x @ w


def test_num_threads():
    before = ember.get_num_threads()
    ember.set_num_threads(1)
    assert ember.get_num_threads() == 1
    with pytest.raises(RuntimeError):
        ember.set_num_threads(0)
    ember.set_num_threads(before)


@pytest.mark.parametrize("omp", ["1", "2", "64", None])
def test_default_num_threads_follows_omp_num_threads_as_pytorch(omp):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    if omp is not None:
        env["OMP_NUM_THREADS"] = omp
    code = "import ember; print(ember.get_num_threads())"
    ours = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert ours.returncode == 0, ours.stderr
    cpus = len(os.sched_getaffinity(0))
    expect = cpus if omp is None else min(int(omp), cpus)
    assert int(ours.stdout) == expect
    if HAVE_TORCH:
        theirs = subprocess.run([sys.executable, "-c", code.replace("ember", "torch")], env=env,
                                capture_output=True, text=True, timeout=120)
        assert int(theirs.stdout) == int(ours.stdout)


def test_legacy_type_isinstance_as_pytorch():
    torch = pytest.importorskip("torch")
    for mod in (ember, torch):
        assert isinstance(mod.zeros(1), mod.FloatTensor)
        assert not isinstance(mod.zeros(1, dtype=mod.float64), mod.FloatTensor)
        assert isinstance(mod.zeros(1, dtype=mod.int64), mod.LongTensor)
        assert mod.FloatTensor([1, 2]).dtype == mod.float32
