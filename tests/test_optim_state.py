"""``Optimizer.load_state_dict`` casts what PyTorch's casts and nothing else: state tensors go to
the parameter's dtype and device, ``'step'`` is kept as saved (an int stays an int, a tensor keeps
its dtype), other objects are untouched; a built-in optimizer turns a number ``'step'`` into a
tensor. A resumed run equals an uninterrupted one, for a user's optimizer with an integer step and
for the built-ins. Each case runs on ember and, when installed, on PyTorch."""

from __future__ import annotations

import copy
import math
import pickle
from typing import Any

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

MODULES = [ember] if torch is None else [ember, torch]
ids = lambda m: m.__name__  # noqa: E731


def _adabelief(m: Any) -> Any:
    class AdaBelief(m.optim.Optimizer):
        """An AdaBelief-style optimizer as users write them: an int step in the state."""

        def __init__(self, params: Any, lr: float = 1e-2, betas: tuple = (0.9, 0.999),
                     eps: float = 1e-8) -> None:
            super().__init__(params, dict(lr=lr, betas=betas, eps=eps))

        @m.no_grad()
        def step(self, closure: Any = None) -> None:
            for group in self.param_groups:
                b1, b2 = group["betas"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    state["step"] = state.get("step", 0) + 1
                    if "exp_avg" not in state:
                        state["exp_avg"] = m.zeros_like(p)
                        state["exp_avg_var"] = m.zeros_like(p)
                    m1, v = state["exp_avg"], state["exp_avg_var"]
                    m1.mul_(b1).add_(p.grad, alpha=1 - b1)
                    d = p.grad - m1
                    v.mul_(b2).addcmul_(d, d, value=1 - b2)
                    t = state["step"]
                    denom = (v / (1 - b2 ** t)).sqrt().add_(group["eps"])
                    p.addcdiv_(m1, denom, value=-group["lr"] / (1 - b1 ** t))

    return AdaBelief


def _train(m: Any, opt: Any, p: Any, grads: list, steps: range) -> None:
    for i in steps:
        opt.zero_grad()
        p.grad = m.tensor(grads[i] * (1.0 + float(p.detach().sum())), dtype=p.dtype)
        opt.step()


def _grads(n: int = 12) -> list:
    rng = np.random.default_rng(3)
    return [rng.standard_normal(4) for _ in range(n)]


@pytest.mark.parametrize("m", MODULES, ids=ids)
def test_custom_optimizer_keeps_an_int_step(m: Any) -> None:
    p = m.nn.Parameter(m.ones(4))
    opt = _adabelief(m)([p])
    _train(m, opt, p, _grads(), range(1))
    q = m.nn.Parameter(m.ones(4))
    opt2 = _adabelief(m)([q])
    opt2.load_state_dict(opt.state_dict())
    step = opt2.state[q]["step"]
    assert type(step) is int and step == 1


@pytest.mark.parametrize("m", MODULES, ids=ids)
@pytest.mark.parametrize("name", ["AdaBelief", "Adam", "AdamW"])
def test_resumed_run_equals_uninterrupted(m: Any, name: str) -> None:
    make = _adabelief(m) if name == "AdaBelief" else getattr(m.optim, name)
    grads, start = _grads(), np.linspace(-1.0, 1.0, 4)
    straight = m.nn.Parameter(m.tensor(start, dtype=m.float32))
    _train(m, make([straight], lr=0.05), straight, grads, range(12))

    first = m.nn.Parameter(m.tensor(start, dtype=m.float32))
    opt = make([first], lr=0.05)
    _train(m, opt, first, grads, range(5))
    saved = pickle.loads(pickle.dumps(opt.state_dict()))  # as a checkpoint file would
    resumed = m.nn.Parameter(first.detach().clone())
    opt2 = make([resumed], lr=0.05)
    opt2.load_state_dict(saved)
    step = opt2.state[resumed]["step"]
    if name == "AdaBelief":
        assert type(step) is int and step == 5
    else:  # the built-ins count in a float32 tensor, and keep it one
        assert isinstance(step, m.Tensor) and step.dtype == m.float32 and step.item() == 5
    _train(m, opt2, resumed, grads, range(5, 12))
    np.testing.assert_array_equal(resumed.detach().numpy(), straight.detach().numpy())


def _loaded(m: Any) -> dict:
    """Load a hand-made state (every kind of value) into an SGD over a float32 parameter."""
    p = m.nn.Parameter(m.ones(2))
    opt = m.optim.SGD([p], lr=0.1)
    state = {
        "step": 3, "step_f": 2.5, "number": 7, "flag": True, "none": None,
        "f64": m.ones(2, dtype=m.float64), "i64": m.arange(2), "mask": m.tensor([True, False]),
        "list": [m.ones(1, dtype=m.float64), 2], "tuple": (m.ones(1, dtype=m.float64),),
        "nested": {"step": m.tensor(4.0, dtype=m.float64), "x": m.ones(1, dtype=m.float64)},
        "mu_product": m.tensor(0.5, dtype=m.float64),
    }
    sd = {"state": {0: state}, "param_groups": copy.deepcopy(opt.state_dict()["param_groups"])}
    opt.load_state_dict(sd)
    state64 = {"step": m.tensor(2.0, dtype=m.float64)}
    opt64 = m.optim.SGD([p], lr=0.1)
    opt64.load_state_dict({"state": {0: state64}, "param_groups": sd["param_groups"]})
    return {"main": opt.state[p], "step_tensor": opt64.state[p]["step"], "saved": state}


def _summary(m: Any, v: Any) -> Any:
    if isinstance(v, m.Tensor):
        return ("tensor", str(v.dtype).split(".")[-1], v.tolist())
    if isinstance(v, dict):
        return {k: _summary(m, x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return (type(v).__name__, [_summary(m, x) for x in v])
    return (type(v).__name__, v)


def test_loaded_state_is_cast_as_pytorch_casts() -> None:
    got = {}
    for m in MODULES:
        out = _loaded(m)
        got[m.__name__] = (_summary(m, out["main"]), _summary(m, out["step_tensor"]))
        main = out["main"]
        assert type(main["step"]) is int and main["step"] == 3
        assert main["none"] is None and main["flag"] is True
        assert out["step_tensor"].dtype == m.float64  # 'step' keeps its dtype
        assert main["f64"].dtype == m.float32 and main["i64"].dtype == m.float32
        assert main["nested"]["step"].dtype == m.float64
        assert main["nested"]["x"].dtype == m.float32
    if torch is not None:
        assert got["ember"] == got["torch"]


def test_loaded_state_does_not_alias_the_checkpoint() -> None:
    out = _loaded(ember)
    assert out["main"]["f64"] is not out["saved"]["f64"]
    assert out["main"]["nested"]["step"] is not out["saved"]["nested"]["step"]


@pytest.mark.parametrize("m", MODULES, ids=ids)
@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam"])
def test_builtin_turns_a_number_step_into_a_tensor(m: Any, name: str) -> None:
    """An older checkpoint's ``'step'`` was a number: PyTorch's optimizers make it a tensor."""
    p = m.nn.Parameter(m.ones(4))
    opt = getattr(m.optim, name)([p], lr=0.1)
    _train(m, opt, p, _grads(), range(2))
    sd = opt.state_dict()
    sd["state"][0]["step"] = 2  # as saved by an older version
    q = m.nn.Parameter(p.detach().clone())
    opt2 = getattr(m.optim, name)([q], lr=0.1)
    opt2.load_state_dict(sd)
    step = opt2.state[q]["step"]
    assert isinstance(step, m.Tensor) and step.dtype == m.float32 and step.item() == 2
    _train(m, opt2, q, _grads(), range(2, 4))
    assert math.isfinite(float(q.detach().sum()))
