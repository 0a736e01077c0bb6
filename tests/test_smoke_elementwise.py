import numpy as np
import pytest

from helpers import check_op, positive, randn


@pytest.mark.parametrize("shape_a,shape_b", [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (3,))])
def test_mul_broadcast(shape_a, shape_b):
    check_op(lambda m, a, b: a * b, randn(*shape_a), randn(*shape_b, seed=1), ref=np.multiply, gradgrad=True)


def test_exp():
    check_op(lambda m, x: m.exp(x), randn(3, 4), ref=np.exp, gradgrad=True)


def test_div():
    check_op(lambda m, a, b: a / b, randn(3, 4), positive(4), ref=np.divide, gradgrad=True)
