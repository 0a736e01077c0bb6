"""Correctness errors: out-of-range indices in the index ops, integer division by zero,
cross-device copies, and optimizer states that do not fit (issue 10), against PyTorch."""

import warnings

import numpy as np
import pytest

import ember
from ember import _backend

torch = pytest.importorskip("torch")

X = np.arange(12.0).reshape(3, 4)


def _same_outcome(fn):
    """Run ``fn(module)`` on PyTorch and ember: the same exception type, or equal results."""
    try:
        want = fn(torch)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            fn(ember)
        return type(e)
    got = fn(ember)
    np.testing.assert_allclose(np.asarray(got.numpy()), want.numpy(), rtol=1e-6)
    assert str(got.dtype) == str(want.dtype)
    return None


# ---------------------------------------------------------------------------------------------
# index ops: which accept negative indices, and the exception when out of range

IDX_CASES = {
    "index_select": lambda m, i: m.index_select(m.tensor(X), 0, m.tensor([i])),
    "index_add_": lambda m, i: m.tensor(X).index_add_(0, m.tensor([i]), m.ones(1, 4,
                                                                               dtype=m.float64)),
    "index_copy_": lambda m, i: m.tensor(X).index_copy_(0, m.tensor([i]), m.ones(1, 4,
                                                                                 dtype=m.float64)),
    "index_fill_": lambda m, i: m.tensor(X).index_fill_(0, m.tensor([i]), 5.0),
    "gather": lambda m, i: m.gather(m.tensor(X), 1, m.tensor([[i]])),
    "scatter_": lambda m, i: m.tensor(X).scatter_(1, m.tensor([[i]]), 1.0),
    "scatter_add_": lambda m, i: m.tensor(X).scatter_add_(1, m.tensor([[i]]),
                                                          m.ones(1, 1, dtype=m.float64)),
    "scatter_reduce_": lambda m, i: m.tensor(X).scatter_reduce_(
        1, m.tensor([[i]]), m.ones(1, 1, dtype=m.float64), "sum"),
    "take": lambda m, i: m.take(m.tensor(X), m.tensor([i])),
    "take_along_dim": lambda m, i: m.take_along_dim(m.tensor(X), m.tensor([[i]]), 1),
    "index_put_": lambda m, i: m.tensor(X).index_put_((m.tensor([i]),), m.tensor(9.0,
                                                                                 dtype=m.float64)),
    "index_put_acc": lambda m, i: m.tensor(X).index_put_(
        (m.tensor([i]),), m.tensor(9.0, dtype=m.float64), accumulate=True),
    "embedding": lambda m, i: m.nn.functional.embedding(m.tensor([i]), m.tensor(X)),
    "getitem": lambda m, i: m.tensor(X)[m.tensor([i])],
}


@pytest.mark.parametrize("name", list(IDX_CASES))
@pytest.mark.parametrize("i", [-1, -3, -4, 2, 3, 4, -13, 12])
def test_index_ops_range_matches_torch(name, i):
    if name == "take_along_dim" and not -4 <= i < 4:
        pytest.skip("PyTorch reads unchecked memory here; ember refuses (RuntimeError)")
    _same_outcome(lambda m: IDX_CASES[name](m, i))


def test_negative_index_messages_say_why():
    x = ember.tensor(X)
    with pytest.raises(IndexError, match=r"index -1 is out of bounds for dimension 0 with size 3"
                                         r".*does not count negative indices.*index % 3.*"
                                         r"index out of range in self"):
        ember.index_select(x, 0, ember.tensor([-1]))
    with pytest.raises(RuntimeError, match=r"index_add\(\): index -1 is out of bounds"):
        x.index_add(0, ember.tensor([-1]), ember.ones(1, 4, dtype=ember.float64))
    with pytest.raises(IndexError, match=r"index_copy\(\): index -2 is out of bounds"):
        x.index_copy(0, ember.tensor([-2]), ember.ones(1, 4, dtype=ember.float64))


@pytest.mark.parametrize("case", [
    lambda m: m.index_select(m.tensor(5.0), 0, m.tensor([0])),
    lambda m: m.index_select(m.tensor(5.0), 0, m.tensor([-1])),
    lambda m: m.tensor(5.0).index_copy_(0, m.tensor([0]), m.tensor([1.0])),
    lambda m: m.tensor(5.0).index_copy_(0, m.tensor([0]), m.tensor(1.0)),
    lambda m: m.tensor(5.0).index_copy_(0, m.tensor([-1]), m.tensor(1.0)),
    lambda m: m.tensor(5.0).index_add_(0, m.tensor([0]), m.tensor(1.0)),
    lambda m: m.tensor(5.0).index_add_(0, m.tensor([0]), m.tensor([1.0])),
    lambda m: m.tensor(5.0).index_add_(0, m.tensor([-1]), m.tensor(1.0)),
    lambda m: m.tensor(5.0).index_fill_(0, m.tensor([-1]), 1.0),
    lambda m: m.tensor(5.0).index_fill_(0, m.tensor([1]), 1.0),
    lambda m: m.index_select(m.tensor(X), 0, m.tensor(-1)),
    lambda m: m.tensor(X).index_fill_(1, m.tensor(-1), 0.0),
])
def test_zero_dim_index_ops_match_torch(case):
    _same_outcome(case)


def test_take_along_dim_counts_negatives_from_the_end():
    got = ember.take_along_dim(ember.tensor(X), ember.tensor([[-1], [-4], [0]]), 1)
    want = torch.take_along_dim(torch.tensor(X), torch.tensor([[-1], [-4], [0]]), 1)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---------------------------------------------------------------------------------------------
# integer division by zero

INT_DTYPES = ["int64", "int32", "int8", "uint8"]
DIV_OPS = {
    "div_floor": lambda m, a, b: m.div(a, b, rounding_mode="floor"),
    "div_trunc": lambda m, a, b: m.div(a, b, rounding_mode="trunc"),
    "floordiv": lambda m, a, b: a // b,
    "mod": lambda m, a, b: a % b,
    "remainder": lambda m, a, b: m.remainder(a, b),
    "fmod": lambda m, a, b: m.fmod(a, b),
    "floor_divide": lambda m, a, b: m.floor_divide(a, b),
    "true_div": lambda m, a, b: a / b,
}


@pytest.mark.parametrize("op", list(DIV_OPS))
@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("divisor", ["tensor", "scalar", "rscalar"])
def test_integer_division_by_zero_matches_torch(op, dtype, divisor):
    if op == "fmod" and divisor == "rscalar":
        pytest.skip("torch.fmod(number, tensor) is a TypeError in PyTorch; ember accepts it")
    a_np = np.array([5, 7, 0]) if dtype == "uint8" else np.array([5, -7, 0])

    def run(m):
        dt = getattr(m, dtype)
        a = m.tensor(a_np, dtype=dt)
        if divisor == "tensor":
            return DIV_OPS[op](m, a, m.tensor([2, 0, 3], dtype=dt))
        if divisor == "scalar":
            return DIV_OPS[op](m, a, 0)
        return DIV_OPS[op](m, 7, m.tensor([2, 0, 3], dtype=dt))

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # never a NumPy RuntimeWarning
        exc = _same_outcome(run)
    if op != "true_div":
        assert exc is RuntimeError
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            run(ember)


@pytest.mark.parametrize("op", [k for k in DIV_OPS if k != "true_div"])
def test_bool_integer_division_is_not_implemented_like_torch(op):
    for m in (torch, ember):
        with pytest.raises(NotImplementedError):
            DIV_OPS[op](m, m.tensor([True, False]), m.tensor([True, True]))
    assert _same_outcome(lambda m: DIV_OPS[op](m, m.tensor([True, False]), 2)) is None


def test_integer_division_without_zero_still_works():
    a, b = ember.tensor([7, -7, 6]), ember.tensor([2, 2, -4])
    assert (a // b).tolist() == [3, -4, -2] and (a % b).tolist() == [1, 1, -2]
    assert ember.div(a, b, rounding_mode="trunc").tolist() == [3, -3, -1]
    assert ember.fmod(a, b).tolist() == [1, -1, 2]
    assert (ember.tensor([], dtype=ember.int64) // 0).shape == (0,)  # nothing to divide


def test_in_place_integer_division_by_zero_raises():
    a = ember.tensor([4, 2])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a //= 0
    assert a.tolist() == [4, 2]


@pytest.mark.parametrize("expr", [
    lambda m, x: x / 0, lambda m, x: x // 0, lambda m, x: x % 0, lambda m, x: m.fmod(x, 0),
    lambda m, x: m.div(x, 0, rounding_mode="floor"), lambda m, x: m.div(x, 0, rounding_mode="trunc"),
    lambda m, x: x / m.zeros(3), lambda m, x: m.tensor([1, -1, 0]) / 0,
    lambda m, x: m.tensor([1, -1, 0]) // 0.0, lambda m, x: m.tensor([1, -1, 0]) % 0.0,
])
def test_float_division_by_zero_is_quiet_inf_nan(expr):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = expr(ember, ember.tensor([1.0, -1.0, 0.0]))
    want = expr(torch, torch.tensor([1.0, -1.0, 0.0]))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert str(got.dtype) == str(want.dtype)


def test_quiet_division_leaves_numpys_error_state_alone():
    before = np.geterr()
    ember.tensor([1.0]) / ember.tensor([0.0])
    assert np.geterr() == before
    with np.errstate(divide="raise"):
        ember.tensor([1.0]) / ember.tensor([0.0])  # ember's own ops stay quiet
        with pytest.raises(FloatingPointError):
            np.array([1.0]) / np.array([0.0])  # the user's setting still holds for NumPy


def test_float_division_by_zero_gradient_is_quiet():
    x = ember.tensor([1.0, 0.0], requires_grad=True)
    d = ember.tensor([0.0, 0.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x / d).sum().backward()
        (ember.remainder(x, d)).sum().backward()


# ---------------------------------------------------------------------------------------------
# copies across devices (FakeCudaArray reports cuda:0)


def _fake_cuda(t):
    return ember.Tensor._make(np.asarray(t._data).view(_backend.FakeCudaArray))


def test_copy_from_another_device_moves_the_values():
    dst = _fake_cuda(ember.zeros(2, 3))
    dst.copy_(ember.arange(6.0).reshape(2, 3))
    assert str(dst.device) == "cuda:0" and isinstance(dst._data, _backend.FakeCudaArray)
    np.testing.assert_array_equal(np.asarray(dst._data), np.arange(6.0).reshape(2, 3))
    back = ember.zeros(2, 3)
    back.copy_(dst)
    assert str(back.device) == "cpu" and type(back._data) is np.ndarray
    np.testing.assert_array_equal(back.numpy(), np.arange(6.0).reshape(2, 3))


def test_copy_across_devices_casts_and_broadcasts():
    dst = _fake_cuda(ember.zeros(2, 3, dtype=ember.float64))
    dst.copy_(ember.tensor([1, 2, 3]))
    assert dst.dtype == ember.float64
    np.testing.assert_array_equal(np.asarray(dst._data), [[1, 2, 3], [1, 2, 3]])


def test_copy_across_devices_keeps_autograd():
    src = _fake_cuda(ember.ones(2, 3)).requires_grad_()
    dst = ember.zeros(2, 3)
    dst.copy_(src * 2)
    (dst * ember.arange(6.0).reshape(2, 3)).sum().backward()
    assert str(src.grad.device) == "cuda:0"
    np.testing.assert_array_equal(np.asarray(src.grad._data), 2 * np.arange(6.0).reshape(2, 3))


def test_load_cpu_state_dict_into_a_cuda_model():
    ember.manual_seed(0)
    cpu_model = ember.nn.Linear(3, 2)
    model = ember.nn.Linear(3, 2)
    for p in model.parameters():
        p._data = np.asarray(p._data).view(_backend.FakeCudaArray)
    model.load_state_dict(cpu_model.state_dict())
    assert str(model.weight.device) == "cuda:0" and isinstance(model.weight._data,
                                                           _backend.FakeCudaArray)
    np.testing.assert_array_equal(np.asarray(model.weight._data), cpu_model.weight.detach().numpy())
    # and back: a CUDA state dict into a CPU model
    cpu2 = ember.nn.Linear(3, 2)
    cpu2.load_state_dict(model.state_dict())
    assert str(cpu2.weight.device) == "cpu"
    np.testing.assert_array_equal(cpu2.bias.detach().numpy(), cpu_model.bias.detach().numpy())


# ---------------------------------------------------------------------------------------------
# optimizer states that do not fit


def _trained(m, cls, shapes, **kw):
    ps = [m.nn.Parameter(m.ones(*s)) for s in shapes]
    opt = cls(m)(ps, **kw)
    for p in ps:
        p.grad = m.ones_like(p)
    opt.step()
    return opt


def _adam(m):
    return m.optim.Adam


def _sgd(m):
    return m.optim.SGD


@pytest.mark.parametrize("saved,loaded,cls,kw", [
    ([(3,), (2,)], [(4,), (2,)], _adam, {}),
    ([(3,), (2,)], [(3, 1), (2,)], _adam, {}),
    ([(1,)], [(3,)], _adam, {}),
    ([(3,)], [(4,)], _sgd, {"lr": 0.1, "momentum": 0.9}),
    ([(3,), (2,)], [(2,), (3,)], _adam, {}),
])
def test_mismatched_state_loads_then_fails_at_step_like_torch(saved, loaded, cls, kw):
    for m in (torch, ember):
        sd = _trained(m, cls, saved, **kw).state_dict()
        ps = [m.nn.Parameter(m.ones(*s)) for s in loaded]
        opt = cls(m)(ps, **kw)
        opt.load_state_dict(sd)  # PyTorch accepts the load
        for p in ps:
            p.grad = m.ones_like(p)
        with pytest.raises(RuntimeError) as info:
            opt.step()
    msg = str(info.value)
    assert "parameter 0" in msg and "has shape" in msg and "load the optimizer state" in msg
    assert "state['exp_avg']" in msg or "state['momentum_buffer']" in msg


def test_mismatched_state_message_names_index_key_and_shapes():
    sd = _trained(ember, _adam, [(2,), (3,)]).state_dict()
    ps = [ember.nn.Parameter(ember.ones(2)), ember.nn.Parameter(ember.ones(5))]
    opt = ember.optim.Adam(ps)
    opt.load_state_dict(sd)
    for p in ps:
        p.grad = ember.ones_like(p)
    with pytest.raises(RuntimeError, match=r"parameter 1: state\['exp_avg'\] has shape \[3\] but "
                                           r"the parameter has shape \[5\]"):
        opt.step()


def test_mismatched_state_of_a_parameter_without_grad_is_not_an_error():
    """PyTorch only fails when the parameter is updated."""
    for m in (torch, ember):
        sd = _trained(m, _adam, [(3,), (2,)]).state_dict()
        ps = [m.nn.Parameter(m.ones(4)), m.nn.Parameter(m.ones(2))]
        opt = m.optim.Adam(ps)
        opt.load_state_dict(sd)
        ps[1].grad = m.ones(2)
        opt.step()


def test_fixing_the_state_by_hand_clears_the_error():
    sd = _trained(ember, _adam, [(3,)]).state_dict()
    p = ember.nn.Parameter(ember.ones(4))
    opt = ember.optim.Adam([p])
    opt.load_state_dict(sd)
    p.grad = ember.ones(4)
    with pytest.raises(RuntimeError):
        opt.step()
    opt.state[p]["exp_avg"] = ember.zeros(4)
    opt.state[p]["exp_avg_sq"] = ember.zeros(4)
    opt.step()


@pytest.mark.parametrize("src,dst", [(_adam, _sgd), (_sgd, _adam)])
def test_another_optimizers_state_fails_at_step_like_torch(src, dst):
    kw = {"lr": 0.1, "momentum": 0.9} if src is _sgd else {}
    dkw = {"lr": 0.1} if dst is _sgd else {}
    for m in (torch, ember):
        sd = _trained(m, src, [(3,)], **kw).state_dict()
        p = m.nn.Parameter(m.ones(3))
        opt = dst(m)([p], **dkw)
        p.grad = m.ones(3)
        with pytest.raises(KeyError) as info:  # PyTorch: at load (SGD -> Adam) or at step
            opt.load_state_dict(sd)
            opt.step()
    msg = str(info.value)
    assert "parameter group 0" in msg and "another optimizer class" in msg
    assert np.all(p.detach().numpy() == 1.0)  # nothing was updated


def test_group_count_and_size_mismatch_raise_at_load_like_torch():
    for m in (torch, ember):
        sd = _trained(m, _adam, [(3,), (2,)]).state_dict()
        with pytest.raises(ValueError, match="doesn't match the size"):
            m.optim.Adam([m.nn.Parameter(m.ones(3))]).load_state_dict(sd)
        a, b = m.nn.Parameter(m.ones(3)), m.nn.Parameter(m.ones(2))
        with pytest.raises(ValueError, match="different number of parameter groups"):
            m.optim.Adam([{"params": [a]}, {"params": [b]}]).load_state_dict(sd)


def test_matching_state_still_resumes_exactly():
    sd = _trained(ember, _adam, [(3,), (2,)]).state_dict()
    ps = [ember.nn.Parameter(ember.ones(3)), ember.nn.Parameter(ember.ones(2))]
    opt = ember.optim.Adam(ps)
    opt.load_state_dict(sd)
    for p in ps:
        p.grad = ember.ones_like(p)
    opt.step()
    assert float(opt.state[ps[0]]["step"]) == 2.0
