"""Tensor printing matches PyTorch's text exactly."""

import numpy as np
import pytest

import ember
from helpers import HAVE_TORCH, torch

CASES = [
    lambda m: m.tensor(12.0),
    lambda m: m.tensor([1.0, 2.0, 3.0]),
    lambda m: m.tensor([[1.0, -2.5], [3.25, 4.0]]),
    lambda m: m.tensor([1e-5, 1.0]),
    lambda m: m.tensor([1e9, 1.0]),
    lambda m: m.tensor([0.1, 1234.5678]),
    lambda m: m.tensor([1, 2, 3]),
    lambda m: m.tensor([1, 2, 3], dtype=m.int32),
    lambda m: m.tensor([True, False]),
    lambda m: m.tensor([1.0, 2.0], dtype=m.float64),
    lambda m: m.tensor([1.5, 2.0], dtype=m.float16),
    lambda m: m.tensor([float("nan"), float("inf"), -float("inf"), 1.0]),
    lambda m: m.tensor([float("nan")]),
    lambda m: m.tensor([0.0, 0.0]),
    lambda m: m.tensor([]),
    lambda m: m.zeros(0, 3),
    lambda m: m.zeros(0, dtype=m.int64),
    lambda m: m.arange(2000).reshape(40, 50),
    lambda m: m.arange(1500.0),
    lambda m: m.arange(60.0).reshape(3, 4, 5) / 7,
    lambda m: m.arange(30.0) * 1000.123,
    lambda m: m.tensor([[1.0, 2.0]], requires_grad=True),
    lambda m: m.tensor(-0.5),
    lambda m: m.tensor([123456789.0, 1.0]),
    lambda m: m.tensor([-1, 200000, 3]),
]


@pytest.mark.skipif(not HAVE_TORCH, reason="needs PyTorch")
@pytest.mark.parametrize("i", range(len(CASES)))
def test_repr_matches_torch(i):
    assert repr(CASES[i](ember)) == repr(CASES[i](torch))


@pytest.mark.skipif(not HAVE_TORCH, reason="needs PyTorch")
def test_repr_grad_fn_matches_torch():
    e = ember.tensor([1.0, 2.0], requires_grad=True) * 2
    t = torch.tensor([1.0, 2.0], requires_grad=True) * 2
    assert repr(e) == repr(t) == "tensor([2., 4.], grad_fn=<MulBackward0>)"


def test_print_options():
    x = ember.tensor([1.23456789])
    ember.set_printoptions(precision=2)
    try:
        assert repr(x) == "tensor([1.23])"
    finally:
        ember.set_printoptions(profile="default")
    assert repr(x) == "tensor([1.2346])"


def test_str_and_format():
    x = ember.tensor(3.14159)
    assert str(x) == "tensor(3.1416)" and f"{x:.2f}" == "3.14"
    assert np.isclose(float(x), 3.14159)
