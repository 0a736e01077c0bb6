"""ember.utils.checkpoint: no activations kept, recomputation with the same RNG, same gradients."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.utils.checkpoint import checkpoint, checkpoint_sequential


def _net() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.5), nn.Linear(8, 3))


def _grads(net: nn.Module, x: ember.Tensor) -> list[np.ndarray]:
    return [p.grad.numpy().copy() for p in net.parameters()] + [x.grad.numpy().copy()]


def _zero(net: nn.Module, x: ember.Tensor) -> None:
    for p in net.parameters():
        p.grad = None
    x.grad = None


def _graph_nodes(t: ember.Tensor) -> list[str]:
    names, stack, seen = [], [t.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(node.name())
        stack.extend(n for n, _ in node.next_functions)
    return names


@pytest.mark.parametrize("reentrant", [True, False])
def test_same_gradients_as_without_checkpoint_with_dropout(reentrant):
    net = _net()
    x = ember.randn(5, 4, requires_grad=True)
    state = ember.get_rng_state()
    net(x).pow(2).sum().backward()
    plain = _grads(net, x)
    _zero(net, x)
    ember.set_rng_state(state)
    loss = checkpoint(net, x, use_reentrant=reentrant).pow(2).sum()
    ember.randn(7)  # move the generator between forward and backward
    loss.backward()
    for a, b in zip(plain, _grads(net, x)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("reentrant", [True, False])
def test_forward_keeps_no_activations_and_backward_recomputes_with_grad(reentrant):
    calls = []
    lin = nn.Linear(3, 3)

    def f(a):
        calls.append(ember.is_grad_enabled())
        return lin(a).relu().sin()

    x = ember.randn(2, 3, requires_grad=True)
    y = checkpoint(f, x, use_reentrant=reentrant)
    assert calls == [False]  # forward without a graph
    nodes = _graph_nodes(y)
    assert nodes[0] == "CheckpointFunctionBackward"
    assert set(nodes[1:]) == {"AccumulateGrad"}  # nothing of lin/relu/sin was recorded
    y.sum().backward()
    assert calls == [False, True]  # recomputed once, with autograd on
    assert x.grad is not None and lin.weight.grad is not None


def test_rng_state_is_replayed_and_restored():
    drop = nn.Dropout(0.5)
    x = ember.ones(1000, requires_grad=True)
    y = checkpoint(drop, x, use_reentrant=False)
    mask = (y.detach().numpy() != 0)
    before = ember.get_rng_state().numpy().copy()
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy() != 0, mask)  # the same mask in recomputation
    np.testing.assert_array_equal(ember.get_rng_state().numpy(), before)  # outer stream untouched

    x.grad = None
    y = checkpoint(drop, x, use_reentrant=False, preserve_rng_state=False)
    before = ember.get_rng_state().numpy().copy()
    y.sum().backward()
    assert not np.array_equal(ember.get_rng_state().numpy(), before)  # recomputation drew


def test_warns_like_pytorch_when_use_reentrant_is_omitted():
    x = ember.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed "
                                         "explicitly"):
        y = checkpoint(lambda a: a * 2, x)
    assert y.grad_fn.name() == "CheckpointFunctionBackward"  # reentrant by default
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint(lambda a: a * 2, x, use_reentrant=True)
        checkpoint(lambda a: a * 2, x, use_reentrant=False)


def test_reentrant_rules():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: b,c"):
        checkpoint(lambda a, b=1, c=2: a * b, x, b=2, c=3, use_reentrant=True)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lambda a: a, x, use_reentrant=True, debug=True)
    lin = nn.Linear(2, 2)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = checkpoint(lin, ember.ones(2), use_reentrant=True)
    assert not y.requires_grad


def test_non_reentrant_parameters_work_with_autograd_grad_and_kwargs():
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    x = ember.randn(5, 3)  # no input requires grad: the parameters carry the graph
    y = checkpoint(net, x, use_reentrant=False)
    assert y.requires_grad
    grads = ember.autograd.grad(y.sum(), list(net.parameters()))
    ref = ember.autograd.grad(net(x).sum(), list(net.parameters()))
    for a, b in zip(grads, ref):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    out = checkpoint(lambda a, scale=1.0: (a * scale, 3, None), ember.ones(2, requires_grad=True),
                     scale=2.0, use_reentrant=False)
    assert out[1] == 3 and out[2] is None
    np.testing.assert_array_equal(out[0].detach().numpy(), [2.0, 2.0])


def test_parameters_reached_through_globals_still_get_gradients():
    x = ember.randn(4, 3, requires_grad=True)
    _GLOBAL_NET.zero_grad()
    checkpoint(_global_forward, x, use_reentrant=False).sum().backward()
    got = _GLOBAL_NET.weight.grad.numpy().copy()
    _GLOBAL_NET.zero_grad()
    _global_forward(x).sum().backward()
    np.testing.assert_allclose(got, _GLOBAL_NET.weight.grad.numpy(), rtol=1e-6)


_GLOBAL_NET = nn.Linear(3, 2)


def _global_forward(a):
    return _GLOBAL_NET(a).tanh()


def test_nested_inputs_and_multiple_outputs():
    a = ember.randn(3, requires_grad=True)
    b = ember.randn(3, requires_grad=True)

    def f(pair, scale):
        return {"sum": pair[0] + pair[1] * scale, "prod": pair[0] * pair[1]}

    out = checkpoint(f, (a, b), 2.0, use_reentrant=False)
    (out["sum"].sum() + out["prod"].sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), 1 + b.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), 2 + a.detach().numpy(), rtol=1e-6)


def test_in_place_change_of_an_input_is_detected():
    x = ember.randn(3, requires_grad=True)
    h = x * 1
    y = checkpoint(lambda a: a.exp(), h, use_reentrant=True)
    with ember.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_double_backward_is_refused_with_a_clear_error():
    x = ember.randn(3, requires_grad=True)
    y = checkpoint(lambda a: a.pow(3), x, use_reentrant=False).sum()
    with pytest.raises(RuntimeError, match="double backward"):
        ember.autograd.grad(y, x, create_graph=True)


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_sequential_matches_plain(reentrant):
    net = nn.Sequential(*[m for _ in range(3) for m in (nn.Linear(4, 4), nn.Tanh())])
    x = ember.randn(2, 4, requires_grad=True)
    net(x).sum().backward()
    plain = _grads(net, x)
    _zero(net, x)
    y = checkpoint_sequential(net, 3, x, use_reentrant=reentrant)
    y.sum().backward()
    for a, b in zip(plain, _grads(net, x)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="segments=9"):
        checkpoint_sequential(net, 9, x, use_reentrant=reentrant)
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant parameter"):
        checkpoint_sequential(list(net), 2, x)


@pytest.mark.parametrize("reentrant", [True, False])
def test_gradients_match_pytorch_on_the_same_weights(reentrant):
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp

    rng = np.random.default_rng(0)
    w1, b1 = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    w2, b2 = rng.standard_normal((2, 6)).astype(np.float32), rng.standard_normal(2).astype(np.float32)
    xv = rng.standard_normal((5, 4)).astype(np.float32)

    def build(lib, nn_mod):
        net = nn_mod.Sequential(nn_mod.Linear(4, 6), nn_mod.GELU(), nn_mod.Linear(6, 2))
        with lib.no_grad():
            for p, v in zip(net.parameters(), (w1, b1, w2, b2)):
                p.copy_(lib.from_numpy(v.copy()))
        x = lib.from_numpy(xv.copy()).requires_grad_()
        return net, x

    tnet, tx = build(torch, torch.nn)
    enet, ex = build(ember, nn)
    tcp.checkpoint(tnet, tx, use_reentrant=reentrant).square().sum().backward()
    checkpoint(enet, ex, use_reentrant=reentrant).square().sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    for ep, tp in zip(enet.parameters(), tnet.parameters()):
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_warning_text_matches_pytorch():
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp

    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        tcp.checkpoint(lambda a: a * 2, torch.ones(1, requires_grad=True))
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        checkpoint(lambda a: a * 2, ember.ones(1, requires_grad=True))
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]


def test_recomputation_repeats_the_autocast_state():
    seen = []

    def f(a):
        on = ember.is_autocast_enabled("cpu")
        seen.append((on, ember.get_autocast_dtype("cpu")))
        return (a.to(ember.bfloat16) if on else a) * 3  # what a lowered op would do

    x = ember.randn(3, 4, requires_grad=True)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        y = checkpoint(f, x, use_reentrant=True)
    assert y.dtype == ember.bfloat16
    y.float().sum().backward()  # outside autocast: the recomputation runs under it again
    assert seen == [(True, ember.bfloat16), (True, ember.bfloat16)]
    assert not ember.is_autocast_enabled("cpu")
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 3.0, np.float32))
