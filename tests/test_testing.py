"""ember.testing: assert_close (decisions and messages as PyTorch's) and make_tensor."""

from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest

import ember
from ember.testing import assert_close, make_tensor

# --- without PyTorch: decisions and exact messages ---------------------------------------------


def _message(actual, expected, **kwargs) -> tuple[str, str]:
    try:
        assert_close(actual, expected, **kwargs)
    except Exception as e:  # noqa: BLE001 - the type is part of what is checked
        return type(e).__name__, str(e)
    return "PASS", ""


def test_message_format_for_close_float32():
    kind, msg = _message(ember.tensor([1.0, 2.0, 3.0, 4.0]), ember.tensor([1.0, 2.1, 3.0, 4.0]))
    assert kind == "AssertionError"
    assert msg == (
        "Tensor-likes are not close!\n\n"
        "Mismatched elements: 1 / 4 (25.0%)\n"
        "Greatest absolute difference: 0.09999990463256836 at index (1,) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.04761900380253792 at index (1,) (up to 1.3e-06 allowed)"
    )


def test_integers_are_compared_exactly():
    kind, msg = _message(ember.tensor([[1, 2]]), ember.tensor([[3, 2]]))
    assert msg == ("Tensor-likes are not equal!\n\n"
                   "Mismatched elements: 1 / 2 (50.0%)\n"
                   "Greatest absolute difference: 2 at index (0, 0)\n"
                   "Greatest relative difference: 0.6666666865348816 at index (0, 0)")


@pytest.mark.parametrize("dtype,rtol,atol", [
    (ember.float32, 1.3e-6, 1e-5), (ember.float64, 1e-7, 1e-7), (ember.float16, 1e-3, 1e-5),
    (ember.bfloat16, 1.6e-2, 1e-5),
])
def test_default_tolerances_per_dtype(dtype, rtol, atol):
    e = ember.tensor([100.0], dtype=ember.float64)
    inside = e * (1 + rtol * 0.5)
    outside = e * (1 + rtol * 4) + atol * 4
    assert_close(inside.to(dtype), e.to(dtype))
    with pytest.raises(AssertionError, match=rf"up to {rtol} allowed"):
        assert_close(outside.to(dtype), e.to(dtype))


def test_scalars_sequences_mappings_and_none():
    assert_close(1.0, 1.0 + 1e-9)
    assert _message(1, 1.0)[1] == "The (d)types do not match: <class 'int'> != <class 'float'>."
    assert_close(1, 1.0, check_dtype=False)
    kind, msg = _message([ember.tensor(1.0), ember.tensor(2.0)], [ember.tensor(1.0), ember.tensor(3.0)])
    assert msg.endswith("\n\nThe failure occurred for item [1]")
    assert msg.startswith("Scalars are not close!\n\nExpected 3.0 but got 2.0.")
    kind, msg = _message({"a": [1.0, 2.0]}, {"a": [1.0, 2.5]})
    assert msg.endswith("The failure occurred for item ['a'][1]")
    assert _message({"a": 1}, {"b": 1})[1] == (
        "The keys of the mappings do not match:\nMissing keys in the actual mapping: ['b']\n"
        "Additional keys in the actual mapping: ['a']")
    assert _message([1, 2], [1, 2, 3])[1] == "The length of the sequences mismatch: 2 != 3"
    assert _message(None, 1)[1] == "None mismatch: None is not 1"
    assert _message(True, False)[1] == "Booleans mismatch: True is not False"
    assert_close(None, None)
    assert_close((1, 2), [1, 2])
    assert_close(collections.OrderedDict(a=1.0), {"a": 1.0})


def test_argument_errors_and_unsupported_pairs():
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or "
                                         "omitted, but got no atol"):
        assert_close(ember.ones(1), ember.ones(1), rtol=0.1)
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs of type"):
        assert_close(ember.ones(2), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="No comparison pair"):
        assert_close("a", "a")


def test_attribute_mismatches():
    assert _message(ember.ones(2), ember.ones(3))[1] == (
        "The values for attribute 'shape' do not match: torch.Size([2]) != torch.Size([3]).")
    assert _message(ember.ones(2), ember.ones(2, dtype=ember.int64))[1] == (
        "The values for attribute 'dtype' do not match: torch.float32 != torch.int64.")
    assert_close(ember.ones(2), ember.ones(2, dtype=ember.int64), check_dtype=False)
    a = ember.ones(2, 2)
    assert _message(a, a.t(), check_stride=True)[1] == (
        "The values for attribute 'stride()' do not match: (2, 1) != (1, 2).")
    b = ember.arange(6.0).reshape(2, 3)
    kind, msg = _message(b.t().contiguous(), b.t(), check_stride=True)
    assert msg == "The values for attribute 'stride()' do not match: (2, 1) != (1, 3)."
    assert_close(b.t().contiguous(), b.t())  # strides are ignored by default


def test_nan_inf_and_msg():
    nan = float("nan")
    with pytest.raises(AssertionError):
        assert_close(ember.tensor([1.0, nan]), ember.tensor([1.0, nan]))
    assert_close(ember.tensor([1.0, nan]), ember.tensor([1.0, nan]), equal_nan=True)
    assert_close(ember.tensor([float("inf")]), ember.tensor([float("inf")]))
    with pytest.raises(AssertionError, match="^custom$"):
        assert_close(ember.ones(1), ember.zeros(1), msg="custom")
    with pytest.raises(AssertionError, match="^<Tensor-likes are not close!"):
        assert_close(ember.ones(1), ember.zeros(1), msg=lambda m: f"<{m}>")


def test_requires_grad_tensors_compare_by_value():
    assert_close(ember.ones(2, requires_grad=True), ember.ones(2))


# --- parity with PyTorch on the same NumPy data ------------------------------------------------


def T(values, dtype=np.float32):  # noqa: N802 - reads like a constructor
    return ("T", np.array(values, dtype=dtype))


f32 = np.float32
CASES = [
    (T([1, 2, 3, 4]), T([1, 2.1, 3, 4]), {}),
    (T([[1, 2], [3, 4]]), T([[1, 2], [3, 5]]), {}),
    (T([1, 2], np.int64), T([1, 3], np.int64), {}),
    (T([1, 2]), T([1, 2], np.int64), {}),
    (T([1, 2]), T([1, 2], np.int64), {"check_dtype": False}),
    (T([1, 2]), T([1, 2, 3]), {}),
    (T(1.0), T(2.0), {}),
    (1.0, 1.0 + 1e-9, {}), (1.0, 1.1, {}), (1, 2, {}), (1, 1.0, {}),
    ([T(1.0), T(2.0)], [T(1.0), T(3.0)], {}),
    ({"a": T(1.0)}, {"a": T(2.0)}, {}),
    ({"a": T(1.0)}, {"b": T(1.0)}, {}),
    ([1, 2], [1, 2, 3], {}),
    (np.array([1.0, 2]), np.array([1.0, 2.5]), {}),
    (T([1.0, np.nan]), T([1.0, np.nan]), {}),
    (T([1.0, np.nan]), T([1.0, np.nan]), {"equal_nan": True}),
    (T([1, 2]), T([1, 2.5]), {"msg": "custom"}),
    (T([1, 2]), T([1, 2.5]), {"rtol": 0.1}),
    (T([1, 2]), T([1, 2.5]), {"rtol": 0.5, "atol": 0}),
    (T([True, False], bool), T([True, True], bool), {}),
    (T([1, 2], np.float16), T([1, 2.5], np.float16), {}),
    (T([0, 0]), T([0, 1e-6]), {}),
    (T([np.inf]), T([np.inf]), {}), (T([np.inf]), T([-np.inf]), {}),
    (T([]), T([]), {}),
    ((1, 2), [1, 2], {}),
    (T([1, 2]), T([[1], [2]]), {}),
    (np.zeros((3, 4), f32), np.ones((3, 4), f32), {}),
    (T([[1, 2]], np.int64), T([[3, 2]], np.int64), {}),
    (None, None, {}), (None, 1, {}),
    (T([0.0, 100.01]), T([1e-7, 100.0]), {}),
    (T([1, 2], np.float64), T([1, 2.5], np.float64), {}),
    ({"a": [T(1.0), T(2.0)]}, {"a": [T(1.0), T(3.0)]}, {}),
    (T([1, 2]), T([1, 0]), {}),
    (T(1.0), T(1.5), {}),
    (T([1, 2], np.int32), T([1, 2], np.int64), {}),
    (True, False, {}),
    (np.float32(1.0), np.float32(1.5), {}),
    (np.array([1, 2]), np.array([1, 3]), {}),
    (T([1, 2]), T([1, 2.5]), {"atol": 0.1, "rtol": 0}),
    (T([1, 2]), T([1, 2.5]), {"atol": 0, "rtol": 0}),
    (T([1, 2], np.float64), T([1, 2]), {"check_dtype": False}),
    (T([1, 2], np.int64), T([1, 2.0000001]), {"check_dtype": False}),
    (T([1, -2]), T([1, 2]), {}), (T([5, 2]), T([3, 2]), {}),
    ([1.0, 2.0], (1.0, 2.5), {}), (1.0, np.float64(1.0), {}),
    (collections.OrderedDict(a=1.0), {"a": 1.0}, {}),
    (T([1.0]), T([1.5]), {}), (T([[1.0]]), T([[1.5]]), {}),
    (T(1, np.int64), T(2, np.int64), {}),
    (float("nan"), float("nan"), {}), (float("nan"), float("nan"), {"equal_nan": True}),
    (T(True, bool), T(False, bool), {}),
    (1.0, 1.5, {"rtol": 0.5, "atol": 0}), (np.int64(2), 2, {}),
    (T([1, 2]), T([1, 2], np.float64), {"check_dtype": False}),
    (T([1e-6]), T([0.0], np.float64), {"check_dtype": False}),
    (T([2e-5]), T([0.0], np.float64), {"check_dtype": False}),
    (T([1, 2, 3]), T([1.1, 2.2, 3.0]), {}), (T([1, 2, 3, 4, 5, 6]), T([1, 2.2, 3, 4, 5, 6.1]), {}),
    (T([1, 2], np.uint8), T([3, 2], np.uint8), {}),
    (T([1, 2], np.int8), T([-3, 2], np.int8), {}),
    (T([1, np.nan]), T([2, 1]), {}), (T([1, 2]), T([1.5, np.nan]), {}),
    ({"b": 1.0, "a": 2.0}, {"a": 2.5, "b": 1.5}, {}),  # (unsortable keys: PyTorch's order
    # follows string hashing, which varies between runs, so no such case here)
    ({"a": 1, "c": 2, "b": 3}, {"d": 1, "a": 1, "e": 1}, {}), ({"a": 1}, {"a": 1, "b": 2}, {}),
    (1, 1.0, {"check_dtype": False}), (1, 1.5, {"check_dtype": False}),
    (T([1, 2], np.int64), T([1, 3], np.int64), {"rtol": 0.5, "atol": 0}),
    (T(1.0, np.float16), T(1.5, np.float16), {}),
    ([T([1.0])], [T([3.0])], {"msg": "fixed"}),
    ("a", "a", {}), (T([1.0]), 1.0, {}), (T([1, 2]), np.array([1, 2], f32), {}),
    (T([1, 2]), [1.0, 2], {}),
    (T([1, 2]), T([1, 2.5]), {"rtol": 0.1, "atol": 0.1, "msg": "m"}),
    (T(np.arange(12).reshape(3, 4)), T(np.arange(12).reshape(3, 4) + np.eye(3, 4) * 1e-3), {}),
]


def _convert(x, lib):
    if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) and x[0] == "T":
        return lib.from_numpy(x[1].copy())
    if isinstance(x, list):
        return [_convert(v, lib) for v in x]
    if isinstance(x, dict):
        return type(x)((k, _convert(v, lib)) for k, v in x.items())
    return x


def _outcome(fn, actual, expected, kwargs):
    try:
        fn(actual, expected, **kwargs)
    except Exception as e:  # noqa: BLE001 - type and text are compared
        return type(e).__name__, str(e)
    return "PASS", ""


@pytest.mark.parametrize("case", range(len(CASES)))
def test_assert_close_parity_with_pytorch(case):
    torch = pytest.importorskip("torch")
    a, e, kwargs = CASES[case]
    theirs = _outcome(torch.testing.assert_close, _convert(a, torch), _convert(e, torch), kwargs)
    ours = _outcome(assert_close, _convert(a, ember), _convert(e, ember), kwargs)
    ours = (ours[0], ours[1].replace("ember._tensor.Tensor", "torch.Tensor"))
    assert ours == theirs


def test_parity_on_random_data_near_the_tolerance():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for _ in range(40):
        e = rng.standard_normal((3, 5)).astype(np.float32)
        noise = rng.standard_normal((3, 5)).astype(np.float32) * rng.choice([1e-7, 1e-6, 1e-5, 1e-4])
        a = (e + noise).astype(np.float32)
        theirs = _outcome(torch.testing.assert_close, torch.from_numpy(a), torch.from_numpy(e), {})
        ours = _outcome(assert_close, ember.from_numpy(a), ember.from_numpy(e), {})
        assert ours == theirs


# --- make_tensor -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,low,high", [
    (ember.float32, -9, 9), (ember.float64, -9, 9), (ember.int64, -9, 10), (ember.uint8, 0, 10),
    (ember.int8, -9, 10), (ember.float16, -9, 9),
])
def test_make_tensor_default_ranges(dtype, low, high):
    t = make_tensor((40, 50), dtype=dtype, device="cpu")
    assert t.dtype == dtype and t.shape == (40, 50)
    v = t.to(ember.float64).numpy()
    assert v.min() >= low and v.max() < high
    assert len(np.unique(v)) > 5  # actually random


def test_make_tensor_options():
    t = make_tensor(3, 4, dtype=ember.float32, device="cpu", low=0, high=1, requires_grad=True)
    assert t.shape == (3, 4) and t.requires_grad and t.is_leaf
    assert 0 <= float(t.min()) and float(t.max()) < 1
    b = make_tensor([6], dtype=ember.bool, device="cpu")
    assert b.dtype == ember.bool
    z = make_tensor((200,), dtype=ember.int64, device="cpu", low=-1, high=2, exclude_zero=True)
    assert not (z == 0).any()
    zb = make_tensor((50,), dtype=ember.bool, device="cpu", exclude_zero=True)
    assert zb.all()  # bool zeros (False) become True
    nc = make_tensor((3, 4), dtype=ember.float32, device="cpu", noncontiguous=True)
    assert nc.shape == (3, 4) and not nc.is_contiguous()
    with pytest.raises(ValueError, match="`low` must be less than `high`, but got 2 >= 1"):
        make_tensor((2,), dtype=ember.float32, device="cpu", low=2, high=1)
    with pytest.raises(TypeError):
        make_tensor((2,), dtype=ember.float32)  # device is required, as in PyTorch
    with pytest.raises(ValueError, match="requires_grad"):
        make_tensor((2,), dtype=ember.int64, device="cpu", requires_grad=True)
    ember.manual_seed(3)
    a = make_tensor((4,), dtype=ember.float32, device="cpu")
    ember.manual_seed(3)
    b2 = make_tensor((4,), dtype=ember.float32, device="cpu")
    assert_close(a, b2, rtol=0, atol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        f = make_tensor((3,), dtype=ember.float32, device="cpu", low=2.0, high=2.0)
    assert (f == 2.0).all()


def test_make_tensor_signature_matches_pytorch():
    torch = pytest.importorskip("torch")
    import inspect

    theirs = inspect.signature(torch.testing.make_tensor).parameters
    ours = inspect.signature(make_tensor).parameters
    assert list(theirs) == list(ours)
    for name in theirs:
        assert theirs[name].default == ours[name].default, name
    theirs = inspect.signature(torch.testing.assert_close).parameters
    ours = inspect.signature(assert_close).parameters
    assert list(theirs) == list(ours)


def test_testing_reachable_as_attribute():
    assert ember.testing.assert_close is assert_close


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("a,e", [([1.0, 2.0], [1.0, 2.5]), ([1.0, 2.0, 3.0], [1.01, 2.0, 3.1]),
                                 ([0.1, 100.0], [0.1001, 101.0]), ([1.0, 2.0], [1.0, 2.0])])
def test_half_precision_parity(dtype, a, e):
    torch = pytest.importorskip("torch")
    theirs = _outcome(torch.testing.assert_close, torch.tensor(a, dtype=getattr(torch, dtype)),
                      torch.tensor(e, dtype=getattr(torch, dtype)), {})
    ours = _outcome(assert_close, ember.tensor(a, dtype=getattr(ember, dtype)),
                    ember.tensor(e, dtype=getattr(ember, dtype)), {})
    assert ours == theirs


def test_device_mismatch_with_a_fake_cuda_tensor():
    from ember import _backend

    cpu = ember.ones(2)
    fake = ember.Tensor._make(np.ones(2, np.float32).view(_backend.FakeCudaArray))
    kind, msg = _message(cpu, fake)
    assert (kind, msg) == ("AssertionError",
                           "The values for attribute 'device' do not match: cpu != cuda:0.")
    assert_close(cpu, fake, check_device=False)


@pytest.mark.parametrize("case", range(8))
def test_assert_allclose_parity(case):
    torch = pytest.importorskip("torch")
    nan = float("nan")
    cases = [
        (lambda lib: (lib.tensor([1.0, 2.0]), [1.0, 2.0])),
        (lambda lib: (lib.tensor([1.0, 2.0]), lib.tensor([1, 2]))),
        (lambda lib: (lib.tensor([1.0, nan]), lib.tensor([1.0, nan]))),
        (lambda lib: (lib.tensor([1.0, 2.0]), 2.0)),
        (lambda lib: ([1.0, 2.0], lib.tensor([1.0, 2.5]))),
        (lambda lib: (lib.tensor([1.0, 2.0], dtype=lib.float64), lib.tensor([1.0, 2.00001]))),
        (lambda lib: (lib.tensor([1.0, 2.0], dtype=lib.float16), lib.tensor([1.0, 2.5],
                                                                          dtype=lib.float16))),
        (lambda lib: (lib.tensor([1.0, 2.0], dtype=lib.bfloat16), lib.tensor([1.0, 2.5],
                                                                           dtype=lib.bfloat16))),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        theirs = _outcome(torch.testing.assert_allclose, *cases[case](torch), {})
        ours = _outcome(ember.testing.assert_allclose, *cases[case](ember), {})
    assert ours == theirs
