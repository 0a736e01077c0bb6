"""NumPy functions and operators meet a Tensor as they meet PyTorch 2.13's, and ``==`` / ``!=``
with objects that are not numbers answer as PyTorch's do.

PyTorch's Tensor has ``__array__`` (NumPy reads a CPU tensor without a copy), ``__array_wrap__``
(a ufunc's result comes back as a tensor, a bool one as uint8) and ``__array_priority__`` (NumPy's
operators defer to the tensor's reflected ones, which take numbers and NumPy scalars but no
arrays: ``np.ones(3) + t`` is a TypeError, ``np.float64(2) * t`` a float32 tensor). Each case
runs on both libraries and compares the result's type, dtype and values, or that both raise.
"""

from __future__ import annotations

import enum
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


class Color(enum.Enum):
    RED = 1


CASES = {
    # ufuncs: __array__ in, __array_wrap__ out
    "log_of_maximum": lambda m: np.log(np.maximum(m.tensor(0.5), 1e-10)),
    "maximum": lambda m: np.maximum(m.tensor(0.5), 1e-10),
    "log_float32": lambda m: np.log(m.tensor([0.5, 2.0])),
    "log_float64": lambda m: np.log(m.tensor([0.5, 2.0], dtype=m.float64)),
    "exp_int64": lambda m: np.exp(m.arange(3)),
    "add_ufunc": lambda m: np.add(m.ones(3), m.ones(3)),
    "sin_0d": lambda m: np.sin(m.tensor([1.0, 2.0])[0]),
    "sqrt_0d": lambda m: np.sqrt(m.tensor(4.0)),
    "isnan_gives_uint8": lambda m: np.isnan(m.tensor([1.0, float("nan")])),
    "modf_tuple": lambda m: np.modf(m.tensor([1.5, -2.25]))[0],
    "clip": lambda m: np.clip(m.tensor([-1.0, 0.5, 2.0]), 0, 1),
    "argmax": lambda m: np.argmax(m.tensor([1.0, 3.0, 2.0])),
    "asarray": lambda m: np.asarray(m.tensor([1.0, 2.0])),
    "asarray_float64": lambda m: np.asarray(m.tensor([1.0, 2.0]), dtype=np.float64),
    "array_copy": lambda m: np.array(m.tensor([1.0, 2.0]), copy=True),
    "concatenate": lambda m: np.concatenate([m.ones(2), m.zeros(2)]),
    "where": lambda m: np.where(m.tensor([1.0, -1.0]) > 0, m.tensor([1.0, -1.0]), 0),
    # requires_grad: refused as numpy() is
    "asarray_requires_grad": lambda m: np.asarray(m.ones(2, requires_grad=True)),
    "log_requires_grad": lambda m: np.log(m.ones(2, requires_grad=True)),
    # NumPy scalars on either side: numbers, the tensor's dtype wins
    "float64_times_t": lambda m: np.float64(2.0) * m.ones(3),
    "float32_times_t": lambda m: np.float32(2) * m.ones(3),
    "float16_times_t": lambda m: np.float16(2) * m.ones(3),
    "t_times_float64": lambda m: m.ones(3) * np.float64(2),
    "int64_times_t": lambda m: np.int64(2) * m.ones(3),
    "int64_plus_int_t": lambda m: np.int64(2) + m.arange(3),
    "float64_plus_int_t": lambda m: np.float64(2) + m.arange(3),
    "float64_minus_t": lambda m: np.float64(2) - m.ones(3),
    "float64_div_t": lambda m: np.float64(2) / m.tensor([1.0, 4.0]),
    "float64_pow_t": lambda m: np.float64(2) ** m.tensor([1.0, 3.0]),
    "t_pow_float64": lambda m: m.tensor([1.0, 3.0]) ** np.float64(2),
    "float64_plus_0d": lambda m: np.float64(2) + m.tensor(1.0),
    "float64_times_t_requires_grad": lambda m: np.float64(2) * m.ones(3, requires_grad=True),
    "float64_lt_t": lambda m: np.float64(2) < m.tensor([1.0, 3.0]),
    "t_lt_float64": lambda m: m.tensor([1.0, 3.0]) < np.float64(2),
    "float64_eq_t": lambda m: np.float64(1) == m.tensor([1.0, 3.0]),
    # arrays on the left: NumPy defers to the tensor, whose reflected operators refuse arrays
    # (true division and == excepted, as in PyTorch)
    "array_plus_t": lambda m: np.ones(3) + m.ones(3),
    "array_minus_t": lambda m: np.ones(3) - m.ones(3),
    "array0d_times_t": lambda m: np.array(2.0) * m.ones(3),
    "array_pow_t": lambda m: np.ones(3) ** m.ones(3),
    "array_matmul_t": lambda m: np.ones((3, 3)) @ m.ones(3),
    "array_floordiv_t": lambda m: np.ones(3) // m.ones(3),
    "array_and_t": lambda m: np.ones(3, dtype=bool) & m.ones(3, dtype=m.bool),
    "array_div_t": lambda m: np.ones(3) / m.tensor([1.0, 2.0, 4.0]),
    "array_eq_t": lambda m: np.ones(3) == m.ones(3),
    "array_ne_t": lambda m: np.ones(3) != m.ones(3),
    "array_lt_t": lambda m: np.ones(3) < m.ones(3),
    "t_gt_array": lambda m: m.ones(3) > np.ones(3),
    "t_plus_array": lambda m: m.ones(3) + np.ones(3),
    "t_eq_array": lambda m: m.ones(3) == np.ones(3),
    "t_ne_array": lambda m: m.ones(3) != np.ones(3),
    # == / != with objects that are not numbers: Python's answer, a plain bool
    "eq_none": lambda m: m.ones(3) == None,  # noqa: E711
    "ne_none": lambda m: m.ones(3) != None,  # noqa: E711
    "eq_str": lambda m: m.ones(3) == "abc",
    "ne_str": lambda m: m.ones(3) != "abc",
    "eq_object": lambda m: m.ones(3) == object(),
    "ne_enum": lambda m: m.ones(3) != Color.RED,
    "eq_enum": lambda m: m.ones(3) == Color.RED,
    "eq_list": lambda m: m.ones(3) == [1, 1, 1],
    "eq_tuple": lambda m: m.ones(1) == (1,),
    "lt_str": lambda m: m.ones(3) < "abc",
    "ge_none": lambda m: m.ones(3) >= None,
    "eq_bool": lambda m: m.tensor([1.0, 0.0]) == True,  # noqa: E712
    # arithmetic with lists, tuples, None: NotImplemented, so Python raises TypeError, or the
    # other operand answers (a tuple subclass with __rmul__, as zuko's NestedTensor)
    "t_times_list": lambda m: m.ones(2) * [1, 2],
    "list_times_t": lambda m: [1, 2] * m.ones(2),
    "t_plus_tuple": lambda m: m.ones(2) + (1, 2),
    "t_pow_list": lambda m: m.ones(2) ** [1, 2],
    "t_minus_none": lambda m: m.ones(2) - None,
    "t_matmul_list": lambda m: m.ones(2) @ [1.0, 2.0],
    "t_iadd_list": lambda m: _iadd(m.ones(2), [1, 2]),
    "t_times_nested": lambda m: sum(m.tensor(2.0) * _Nested((m.ones(2), m.ones(2)))),
    "t_rtruediv_nested": lambda m: sum(_Nested((m.ones(2),)) / m.tensor(2.0)),
    # shifts, as bitwise_left_shift/bitwise_right_shift
    "lshift": lambda m: m.tensor([1, 2]) << 1,
    "rlshift": lambda m: 1 << m.tensor([1, 2]),
    "rshift_negative": lambda m: m.tensor([-8, 8]) >> 1,
    "lshift_tensor_int32": lambda m: m.tensor([1], dtype=m.int32) << m.tensor([2]),
    "lshift_float": lambda m: m.tensor([1.5]) << 1,
    "ilshift": lambda m: _ilshift(m.tensor([1, 2]), 2),
}


class _Nested(tuple):
    """zuko's NestedTensor: a tuple of tensors that scales by a tensor from the left."""

    def __rmul__(self, other):
        return _Nested(other * x for x in self)

    def __truediv__(self, other):
        return _Nested(x / other for x in self)


def _iadd(t, o):
    t += o
    return t


def _ilshift(t, o):
    t <<= o
    return t



def _outcome(m, case: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's __array_wrap__ warns on NumPy 2
        try:
            return CASES[case](m)
        except (TypeError, RuntimeError, ValueError, NotImplementedError) as e:
            return type(e)


@pytest.mark.parametrize("case", list(CASES))
def test_numpy_meets_a_tensor_as_pytorch(case):
    want = _outcome(torch, case)
    got = _outcome(ember, case)
    if isinstance(want, type):
        assert got is want, f"{case}: PyTorch raises {want.__name__}, ember gives {got!r}"
        return
    if isinstance(want, torch.Tensor):
        assert isinstance(got, ember.Tensor), f"{case}: ember gives {type(got).__name__}"
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        assert got.requires_grad == want.requires_grad
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    elif isinstance(want, np.ndarray):
        assert type(got) is np.ndarray and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
    else:
        assert type(got) is type(want) and got == want, f"{case}: ember {got!r}, torch {want!r}"


def test_asarray_shares_memory_and_copy_false_is_honoured():
    """NumPy 2's protocol: no copy unless asked; ``copy=False`` with another dtype refuses.
    (PyTorch's ``__array__`` takes no ``copy`` and NumPy 2 refuses ``copy=False`` for it.)"""
    t = ember.tensor([1.0, 2.0])
    a = np.asarray(t)
    a[0] = 5.0
    assert t.tolist() == [5.0, 2.0]
    assert np.shares_memory(np.array(t, copy=False), t.numpy())
    assert not np.shares_memory(np.array(t, copy=True), t.numpy())
    with pytest.raises(ValueError, match="copy"):
        np.array(t, dtype=np.float64, copy=False)


def test_a_ufunc_result_is_a_new_tensor_that_does_not_track_gradients():
    t = ember.tensor([0.5, 2.0])
    r = np.log(t)
    assert type(r) is ember.Tensor and r.dtype == ember.float32 and not r.requires_grad
    np.testing.assert_allclose(r.numpy(), np.log(np.float32([0.5, 2.0])))


def test_the_issue_log_of_maximum():
    r = np.log(np.maximum(ember.tensor(0.5), 1e-10))
    assert isinstance(r, ember.Tensor) and r.shape == () and r.dtype == ember.float32
    assert abs(r.item() + 0.6931) < 1e-4


def test_a_device_never_equals_a_string():
    for m in (torch, ember):
        d = m.zeros(2).device
        assert d != "cpu" and not (d == "cpu") and not ("cpu" == d)
        assert d == m.device("cpu") and hash(d) == hash(m.device("cpu"))
        assert d.type == "cpu" and str(d) == "cpu"
