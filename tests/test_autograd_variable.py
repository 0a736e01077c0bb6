"""``torch.autograd.Variable``: the deprecated alias behaves as in PyTorch."""

import pytest

import ember
from ember.autograd import Variable

torch = pytest.importorskip("torch")


def test_variable_returns_detached_leaf_sharing_data():
    x = ember.ones(3)
    v = Variable(x, requires_grad=True)
    assert type(v) is ember.Tensor and v is not x
    assert v.requires_grad and not x.requires_grad and v.is_leaf
    v.data[0] = 5.0
    assert float(x[0]) == 5.0  # shares memory, as torch's does
    (v * 2).sum().backward()
    assert v.grad.tolist() == [2.0, 2.0, 2.0]


def test_variable_of_non_leaf_is_detached():
    y = ember.ones(2, requires_grad=True) * 3
    w = Variable(y)
    wt = torch.autograd.Variable(torch.ones(2, requires_grad=True) * 3)
    assert w.grad_fn is None and not w.requires_grad
    assert wt.grad_fn is None and not wt.requires_grad


def test_isinstance_and_errors_match_torch():
    assert isinstance(ember.zeros(1), Variable)
    assert isinstance(torch.zeros(1), torch.autograd.Variable)
    assert not isinstance(3, Variable)
    with pytest.raises(TypeError):
        torch.autograd.Variable(3)
    with pytest.raises(TypeError, match="tensor"):
        Variable(3)
    assert tuple(Variable().shape) == tuple(torch.autograd.Variable().shape) == (0,)
    with pytest.warns(UserWarning, match="volatile"):
        Variable(ember.ones(1), volatile=True)
