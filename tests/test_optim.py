"""ember.optim: parity with PyTorch's optimizers, state_dict round trips, the base class's rules.

Parity runs both libraries from the same float64 weights on the same gradient sequence: each step
the gradient of every parameter is a fixed function of its current value plus a fixed random
term (computed in NumPy and assigned to ``.grad``), so the two trajectories only agree if the
update rules agree. One parameter gets no gradient on every third step (it must be skipped).
"""

from __future__ import annotations

import copy
import inspect
import pickle
import warnings

import numpy as np
import pytest

import ember
import ember.optim as eopt

torch = pytest.importorskip("torch")

SHAPES = [(4, 3), (4,), (2, 4), ()]
N_STEPS = 25
ATOL = 1e-6


# ---------------------------------------------------------------------------------------------
# the shared problem


def _init_arrays(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in SHAPES]


def _noise(n_steps: int, seed: int = 1) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [[0.3 * rng.standard_normal(s) for s in SHAPES] for _ in range(n_steps)]


def _grad(i: int, x: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """A nonlinear, parameter-dependent gradient (of sum(0.5 c x^2 - cos(2x)/2) + noise.x)."""
    c = 0.5 + 0.25 * i
    return c * x + np.sin(2 * x) + noise


def _has_grad(i: int, step: int) -> bool:
    return not (i == 1 and step % 3 == 2)


def _set_grads(params: list, lib: object, step: int, noise: list) -> None:
    for i, p in enumerate(params):
        if not _has_grad(i, step):
            p.grad = None
            continue
        x = p.detach().numpy()
        p.grad = lib.tensor(_grad(i, x, noise[step][i]))


def _ember_params(arrays: list[np.ndarray]) -> list:
    return [ember.tensor(a.copy(), requires_grad=True) for a in arrays]


def _torch_params(arrays: list[np.ndarray]) -> list:
    return [torch.tensor(a.copy(), requires_grad=True) for a in arrays]


def _groups(params: list, groups: list[dict] | None) -> list:
    """Parameters, or parameter groups: ``groups`` lists option dicts with 'idx' (indices)."""
    if groups is None:
        return params
    out = []
    for g in groups:
        g = dict(g)
        idx = g.pop("idx")
        out.append({"params": [params[i] for i in idx], **g})
    return out


def _run(lib: object, opt_cls: type, kwargs: dict, params: list, noise: list, steps: range,
         opt: object = None, groups: list | None = None) -> object:
    if opt is None:
        opt = opt_cls(_groups(params, groups), **kwargs)
    for step in steps:
        opt.zero_grad()
        _set_grads(params, lib, step, noise)
        opt.step()
    return opt


def _np(t: object) -> np.ndarray:
    return np.asarray(t.detach().numpy() if hasattr(t, "detach") else t)


def _assert_params_close(e_params: list, t_params: list, atol: float = ATOL) -> None:
    for i, (e, t) in enumerate(zip(e_params, t_params)):
        np.testing.assert_allclose(_np(e), _np(t), atol=atol, rtol=0, err_msg=f"param {i}")


def _torch_kwargs(kwargs: dict) -> dict:
    return {k: (torch.tensor(float(v)) if isinstance(v, ember.Tensor) else v)
            for k, v in kwargs.items()}


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.5, weight_decay=0.1, maximize=True)),
    ("SGD", dict(lr=0.05, weight_decay=0.2)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, amsgrad=True)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, amsgrad=True, maximize=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("Adam", dict(lr=0.05, foreach=False, fused=None, capturable=False, differentiable=False)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.05, weight_decay=0.1, maximize=True, fused=False)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.2)),
    ("Adagrad", dict(lr=0.1, eps=1e-6, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.5, maximize=True)),
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1)),
    ("Adamax", dict(lr=0.05, maximize=True)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=0.05, momentum_decay=0.01, maximize=True)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.9), maximize=True)),
]


def _case_id(case: tuple) -> str:
    name, kw = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_parity_with_torch(case: tuple) -> None:
    name, kwargs = case
    arrays, noise = _init_arrays(), _noise(N_STEPS)
    ep, tp = _ember_params(arrays), _torch_params(arrays)
    eo = _run(ember, getattr(eopt, name), kwargs, ep, noise, range(N_STEPS))
    to = _run(torch, getattr(torch.optim, name), kwargs, tp, noise, range(N_STEPS))
    _assert_params_close(ep, tp)
    moved = max(float(np.abs(_np(p) - a).max()) for p, a in zip(ep, arrays))
    assert moved > 1e-2  # the test means something: the parameters did move
    # the state has PyTorch's keys, shapes and values
    es, ts = eo.state_dict(), to.state_dict()
    assert es["state"].keys() == ts["state"].keys()
    for k in ts["state"]:
        assert list(es["state"][k]) == list(ts["state"][k]), (k, es["state"][k].keys())
        for key, tv in ts["state"][k].items():
            ev = es["state"][k][key]
            assert tuple(ev.shape) == tuple(tv.shape), key
            assert str(ev.dtype).split(".")[-1] == str(tv.dtype).split(".")[-1], key
            np.testing.assert_allclose(_np(ev), _np(tv), atol=ATOL, rtol=1e-6, err_msg=key)
    eg = [{k: v for k, v in g.items()} for g in es["param_groups"]]
    assert eg == ts["param_groups"]


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad", "NAdam"])
def test_param_groups_with_own_options(name: str) -> None:
    base = dict(lr=0.05)
    if name in ("SGD", "RMSprop"):
        base["momentum"] = 0.9
    groups = [
        {"idx": [0, 2], "lr": 0.1, "weight_decay": 0.05},
        {"idx": [1, 3]},
    ]
    arrays, noise = _init_arrays(3), _noise(N_STEPS, 4)
    ep, tp = _ember_params(arrays), _torch_params(arrays)
    eo = _run(ember, getattr(eopt, name), base, ep, noise, range(N_STEPS), groups=groups)
    _run(torch, getattr(torch.optim, name), base, tp, noise, range(N_STEPS), groups=groups)
    _assert_params_close(ep, tp)
    assert eo.param_groups[0]["lr"] == 0.1 and eo.param_groups[1]["lr"] == 0.05
    assert eo.param_groups[1]["weight_decay"] == 0


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_tensor_lr(name: str) -> None:
    kwargs = dict(lr=ember.tensor(0.03))
    arrays, noise = _init_arrays(), _noise(N_STEPS)
    ep, tp = _ember_params(arrays), _torch_params(arrays)
    _run(ember, getattr(eopt, name), kwargs, ep, noise, range(N_STEPS))
    _run(torch, getattr(torch.optim, name), _torch_kwargs(kwargs), tp, noise, range(N_STEPS))
    _assert_params_close(ep, tp)


def test_lr_change_between_steps_is_used() -> None:
    arrays, noise = _init_arrays(), _noise(N_STEPS)
    ep, tp = _ember_params(arrays), _torch_params(arrays)
    eo, to = eopt.Adam(ep, lr=0.1), torch.optim.Adam(tp, lr=0.1)
    for step in range(N_STEPS):
        for o in (eo, to):
            o.param_groups[0]["lr"] = 0.1 * 0.5 * (1 + np.cos(np.pi * step / N_STEPS))
        _run(ember, None, {}, ep, noise, range(step, step + 1), opt=eo)
        _run(torch, None, {}, tp, noise, range(step, step + 1), opt=to)
    _assert_params_close(ep, tp)


# ---------------------------------------------------------------------------------------------
# state_dict


STATEFUL = [c for c in CASES if c[0] != "SGD" or "momentum" in c[1]]


@pytest.mark.parametrize("case", STATEFUL, ids=_case_id)
def test_state_dict_round_trip_resumes_identically(case: tuple) -> None:
    name, kwargs = case
    cls = getattr(eopt, name)
    arrays, noise = _init_arrays(), _noise(N_STEPS)
    straight = _ember_params(arrays)
    _run(ember, cls, kwargs, straight, noise, range(N_STEPS))

    first = _ember_params(arrays)
    opt = _run(ember, cls, kwargs, first, noise, range(10))
    saved = pickle.loads(pickle.dumps(opt.state_dict()))  # as a checkpoint file would
    resumed = _ember_params([_np(p).copy() for p in first])
    opt2 = cls(resumed, **kwargs)
    opt2.load_state_dict(saved)
    _run(ember, cls, kwargs, resumed, noise, range(10, N_STEPS), opt=opt2)
    # (NAdam's float32 'mu_product' is loaded in the float64 parameters' dtype, as PyTorch casts
    # every state tensor but 'step': the resumed run rounds differently, as PyTorch's does)
    _assert_params_close(resumed, straight, atol=1e-10 if name == "NAdam" else 1e-12)
    # the original keeps going on its own state (loading copied, it does not alias)
    _run(ember, cls, kwargs, first, noise, range(10, N_STEPS), opt=opt)
    _assert_params_close(first, straight, atol=1e-12)


@pytest.mark.parametrize("case", STATEFUL, ids=_case_id)
def test_load_torch_state_dict(case: tuple) -> None:
    """A PyTorch optimizer's state_dict (tensors converted through NumPy) resumes in ember."""
    name, kwargs = case
    arrays, noise = _init_arrays(), _noise(N_STEPS)
    tp = _torch_params(arrays)
    to = _run(torch, getattr(torch.optim, name), kwargs, tp, noise, range(10))
    tsd = to.state_dict()
    converted = {
        "state": {k: {kk: (ember.tensor(vv.numpy()) if torch.is_tensor(vv) else vv)
                      for kk, vv in v.items()} for k, v in tsd["state"].items()},
        "param_groups": copy.deepcopy(tsd["param_groups"]),
    }
    ep = _ember_params([p.detach().numpy() for p in tp])
    eo = getattr(eopt, name)(ep, **kwargs)
    eo.load_state_dict(converted)
    assert eo.state[ep[0]]["step"].dtype == ember.float32 if "step" in tsd["state"][0] else True
    _run(ember, None, {}, ep, noise, range(10, N_STEPS), opt=eo)
    _run(torch, None, {}, tp, noise, range(10, N_STEPS), opt=to)
    _assert_params_close(ep, tp)


def test_load_torch_tensors_directly_and_export_to_torch() -> None:
    arrays, noise = _init_arrays(), _noise(N_STEPS)
    tp = _torch_params(arrays)
    to = _run(torch, torch.optim.Adam, dict(lr=0.05, amsgrad=True), tp, noise, range(10))
    ep = _ember_params([p.detach().numpy() for p in tp])
    eo = eopt.Adam(ep, lr=0.05, amsgrad=True)
    eo.load_state_dict(to.state_dict())  # torch tensors inside: converted on load
    _run(ember, None, {}, ep, noise, range(10, 15), opt=eo)
    # and back: ember's state_dict loads into torch
    esd = eo.state_dict()
    tsd = {
        "state": {k: {kk: torch.tensor(vv.numpy()) for kk, vv in v.items()}
                  for k, v in esd["state"].items()},
        "param_groups": copy.deepcopy(esd["param_groups"]),
    }
    tp2 = _torch_params([_np(p) for p in ep])
    to2 = torch.optim.Adam(tp2, lr=0.05, amsgrad=True)
    to2.load_state_dict(tsd)
    _run(ember, None, {}, ep, noise, range(15, N_STEPS), opt=eo)
    _run(torch, None, {}, tp2, noise, range(15, N_STEPS), opt=to2)
    _assert_params_close(ep, tp2)


def test_state_dict_layout() -> None:
    a = ember.zeros(2, requires_grad=True)
    b = ember.zeros(3, requires_grad=True)
    opt = eopt.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    a.grad, b.grad = ember.ones(2), ember.ones(3)
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert sd["param_groups"][0]["params"] == [0] and sd["param_groups"][1]["params"] == [1]
    assert sd["param_groups"][1]["lr"] == 0.5
    assert list(sd["state"]) == [0, 1]
    assert list(sd["state"][1]) == ["momentum_buffer"]
    # plain SGD keeps no state, like PyTorch
    opt = eopt.SGD([a], lr=0.1)
    opt.step()
    assert opt.state_dict()["state"] == {}


def test_load_state_dict_casts_to_param_dtype() -> None:
    p = ember.zeros(3, requires_grad=True)  # float32
    opt = eopt.Adam([p])
    sd = {
        "state": {0: {"step": ember.tensor(4.0), "exp_avg": ember.ones(3, dtype=ember.float64),
                      "exp_avg_sq": ember.ones(3, dtype=ember.float64)}},
        "param_groups": [dict(opt.state_dict()["param_groups"][0])],
    }
    opt.load_state_dict(sd)
    assert opt.state[p]["exp_avg"].dtype == ember.float32
    assert opt.state[p]["step"].dtype == ember.float32
    # an old-style number step becomes a tensor
    sd["state"][0]["step"] = 4
    opt.load_state_dict(sd)
    assert isinstance(opt.state[p]["step"], ember.Tensor)
    p.grad = ember.ones(3)
    opt.step()
    assert float(opt.state[p]["step"]) == 5.0


def test_load_state_dict_errors() -> None:
    a = ember.zeros(2, requires_grad=True)
    b = ember.zeros(2, requires_grad=True)
    opt = eopt.SGD([a, b], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})
    with pytest.raises(ValueError, match="doesn't match the size"):
        opt.load_state_dict({"state": {}, "param_groups": [{"lr": 0.1, "params": [0]}]})


def test_load_fills_missing_group_options_from_defaults() -> None:
    p = ember.zeros(2, requires_grad=True)
    opt = eopt.AdamW([p])
    sd = opt.state_dict()
    del sd["param_groups"][0]["decoupled_weight_decay"]  # an older checkpoint
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["decoupled_weight_decay"] is True


def test_deepcopy_and_pickle_optimizer() -> None:
    arrays, noise = _init_arrays(), _noise(N_STEPS)
    ps = _ember_params(arrays)
    opt = _run(ember, eopt.Adam, dict(lr=0.05), ps, noise, range(5))
    ember.optim.lr_scheduler.StepLR(opt, 2)  # wraps opt.step: must not break copying
    for clone in (copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
        assert len(clone.state) == len(ps)
        assert clone.param_groups[0]["lr"] == 0.05
        cp = clone.param_groups[0]["params"]
        _run(ember, None, {}, cp, noise, range(5, 8), opt=clone)


# ---------------------------------------------------------------------------------------------
# LBFGS


def _rosen_like(x: np.ndarray) -> tuple[float, np.ndarray]:
    """A smooth non-quadratic test function and its gradient."""
    f = float(np.sum((x[1:] - x[:-1] ** 2) ** 2) * 2 + np.sum((1 - x) ** 2) + np.sum(x**4) * 0.1)
    g = 2 * (x - 1) + 0.4 * x**3
    g[1:] += 4 * (x[1:] - x[:-1] ** 2)
    g[:-1] += -8 * x[:-1] * (x[1:] - x[:-1] ** 2)
    return f, g


def _lbfgs_run(lib: object, opt_cls: type, kwargs: dict, x0: np.ndarray, steps: int) -> tuple:
    a = lib.tensor(x0[:3].copy(), requires_grad=True)
    b = lib.tensor(x0[3:].copy(), requires_grad=True)
    opt = opt_cls([a, b], **kwargs)
    losses = []

    def closure() -> object:
        opt.zero_grad()
        x = np.concatenate([a.detach().numpy(), b.detach().numpy()])
        f, g = _rosen_like(x)
        a.grad, b.grad = lib.tensor(g[:3]), lib.tensor(g[3:])
        # (np.float64: ember.tensor(python_float, dtype=float64) rounds through float32)
        return lib.tensor(np.float64(f))

    for _ in range(steps):
        losses.append(float(opt.step(closure)))
    return np.concatenate([a.detach().numpy(), b.detach().numpy()]), losses, opt


@pytest.mark.parametrize("kwargs", [
    dict(lr=0.5, max_iter=5),
    dict(lr=1, max_iter=4, history_size=3),
    dict(line_search_fn="strong_wolfe", max_iter=5),
    dict(line_search_fn="strong_wolfe", max_iter=20, history_size=5),
    dict(lr=0.1, max_iter=20, max_eval=7, tolerance_change=1e-5),
], ids=str)
def test_lbfgs_parity(kwargs: dict) -> None:
    x0 = np.array([-1.2, 1.0, 0.5, -0.3, 0.8, 1.5])
    ex, el, eo = _lbfgs_run(ember, eopt.LBFGS, kwargs, x0, 5)
    tx, tl, to = _lbfgs_run(torch, torch.optim.LBFGS, kwargs, x0, 5)
    np.testing.assert_allclose(ex, tx, atol=ATOL, rtol=0)
    np.testing.assert_allclose(el, tl, atol=ATOL, rtol=1e-9)
    assert np.abs(ex - x0).max() > 1e-2
    es, ts = eo.state[eo.param_groups[0]["params"][0]], to.state[to.param_groups[0]["params"][0]]
    assert es["func_evals"] == ts["func_evals"] and es["n_iter"] == ts["n_iter"]


def test_lbfgs_converges_and_errors() -> None:
    x0 = np.array([-1.2, 1.0, 0.5, -0.3, 0.8, 1.5])
    x, losses, _ = _lbfgs_run(ember, eopt.LBFGS, dict(line_search_fn="strong_wolfe"), x0, 10)
    assert losses[-1] < losses[0]
    assert np.abs(_rosen_like(x)[1]).max() < 1e-4
    p = ember.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="per-parameter options"):
        eopt.LBFGS([{"params": [p]}, {"params": [ember.zeros(1, requires_grad=True)]}])
    opt = eopt.LBFGS([p], line_search_fn="foo")

    def closure() -> object:
        p.grad = ember.ones(2)
        return ember.tensor(1.0)

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)
    with pytest.raises(RuntimeError, match="closure"):
        eopt.LBFGS([p]).step()


# ---------------------------------------------------------------------------------------------
# the base class


def test_closure_runs_with_grad_enabled_and_returns_loss() -> None:
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = eopt.SGD([p], lr=0.1)
    seen = []

    def closure() -> object:
        seen.append(ember.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with ember.no_grad():
        loss = opt.step(closure)
    assert seen == [True]
    assert float(loss) == 5.0
    np.testing.assert_allclose(p.detach().numpy(), [0.8, 1.6], rtol=1e-6)


def test_autograd_training_loop_matches_torch() -> None:
    """The whole loop with autograd on both sides (elementwise ops and sum only)."""
    arrays = _init_arrays(7)
    ep, tp = _ember_params(arrays), _torch_params(arrays)
    eo, to = eopt.Adam(ep, lr=0.05, weight_decay=0.01), torch.optim.Adam(tp, lr=0.05,
                                                                         weight_decay=0.01)
    for _ in range(N_STEPS):
        for lib, ps, o in ((ember, ep, eo), (torch, tp, to)):
            o.zero_grad()
            loss = sum(((p * p - 1.0) ** 2).sum() + lib.sin(p).sum() for p in ps)
            loss.backward()
            o.step()
    _assert_params_close(ep, tp)


def test_zero_grad() -> None:
    p = ember.zeros(3, requires_grad=True)
    opt = eopt.SGD([p], lr=0.1)
    p.grad = ember.ones(3)
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and float(p.grad.abs().sum()) == 0.0
    opt.zero_grad()
    assert p.grad is None
    opt.zero_grad()  # no grads: fine


def test_params_without_grad_are_skipped_and_keep_no_state() -> None:
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    opt = eopt.Adam([a, b], lr=0.1)
    a.grad = ember.ones(2)
    opt.step()
    assert b in opt.state or len(opt.state) == 1
    assert len(opt.state) == 1 and a in opt.state
    np.testing.assert_array_equal(b.detach().numpy(), [1.0, 1.0])


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta",
                                  "Adamax", "NAdam", "RAdam"])
def test_float32_stays_float32(name: str) -> None:
    kwargs = dict(lr=0.01, weight_decay=0.1)
    if name in ("SGD", "RMSprop"):
        kwargs["momentum"] = 0.9
    p = ember.randn(5, 4, requires_grad=True)
    q = ember.randn(4, requires_grad=True)
    opt = getattr(eopt, name)([p, q], **kwargs)
    for _ in range(3):
        p.grad = ember.randn(5, 4)
        q.grad = ember.randn(4)
        opt.step()
    for t in (p, q):
        assert t.dtype == ember.float32 and t._data.dtype == np.float32
    for st in opt.state.values():
        for k, v in st.items():
            if isinstance(v, ember.Tensor) and k not in ("step", "mu_product"):
                assert v.dtype == ember.float32, (k, v.dtype)
        if "step" in st:
            assert st["step"].dtype == ember.float32 and st["step"].ndim == 0


def test_float32_with_numpy_float64_hyperparameters() -> None:
    p = ember.randn(4, requires_grad=True)
    opt = eopt.Adam([p], lr=np.float64(0.01), betas=(np.float64(0.9), np.float64(0.99)))
    p.grad = ember.randn(4)
    opt.step()
    assert p._data.dtype == np.float32
    assert opt.state[p]["exp_avg"]._data.dtype == np.float32


def test_update_is_in_place_and_bumps_version() -> None:
    p = ember.randn(4, requires_grad=True)
    arr = p._data
    v0 = p._version_number
    opt = eopt.Adam([p], lr=0.1)
    p.grad = ember.randn(4)
    before = arr.copy()
    opt.step()
    assert p._data is arr and not np.array_equal(arr, before)
    p._version_counter()
    v1 = p._version_number
    p.grad = ember.randn(4)
    opt.step()
    assert p._version_number == v1 + 1 >= v0


def test_grad_not_modified_by_step() -> None:
    for cls, kw in [(eopt.SGD, dict(lr=0.1, weight_decay=0.1, maximize=True, momentum=0.9)),
                    (eopt.Adam, dict(weight_decay=0.1, maximize=True))]:
        p = ember.randn(4, requires_grad=True)
        g = ember.randn(4)
        g0 = g.numpy().copy()
        p.grad = g
        opt = cls([p], **kw)
        opt.step()
        opt.step()
        np.testing.assert_array_equal(p.grad.numpy(), g0)


def test_errors_match_torch() -> None:
    p = [ember.zeros(2, requires_grad=True)]
    bad = [
        ("SGD", dict(lr=-1.0), "Invalid learning rate: -1.0"),
        ("SGD", dict(momentum=-1.0), "Invalid momentum value: -1.0"),
        ("SGD", dict(weight_decay=-1.0), "Invalid weight_decay value: -1.0"),
        ("SGD", dict(nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
        ("SGD", dict(nesterov=True, momentum=0.9, dampening=0.1), "Nesterov momentum requires"),
        ("SGD", dict(lr=ember.tensor([1.0, 2.0])), "Tensor lr must be 1-element"),
        ("Adam", dict(eps=-1.0), "Invalid epsilon value: -1.0"),
        ("Adam", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
        ("Adam", dict(betas=(0.9, -0.1)), r"Invalid beta parameter at index 1: -0.1"),
        ("AdamW", dict(weight_decay=-1.0), "Invalid weight_decay value: -1.0"),
        ("RMSprop", dict(alpha=-1.0), "Invalid alpha value: -1.0"),
        ("RMSprop", dict(momentum=-1.0), "Invalid momentum value: -1.0"),
        ("Adagrad", dict(lr_decay=-1.0), "Invalid lr_decay value: -1.0"),
        ("Adagrad", dict(initial_accumulator_value=-1.0),
         "Invalid initial_accumulator_value value: -1.0"),
        ("Adadelta", dict(rho=1.1), "Invalid rho value: 1.1"),
        ("Adamax", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
        ("NAdam", dict(momentum_decay=-1.0), "Invalid momentum_decay value: -1.0"),
        ("RAdam", dict(lr=-1.0), "Invalid learning rate: -1.0"),
        ("LBFGS", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ]
    for name, kw, msg in bad:
        with pytest.raises(ValueError, match=msg):
            getattr(eopt, name)(p, **kw)
        # ... and PyTorch says the same
        tkw = {k: (torch.tensor(v.numpy()) if isinstance(v, ember.Tensor) else v)
               for k, v in kw.items()}
        with pytest.raises(ValueError, match=msg):
            getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **tkw)


def test_param_errors() -> None:
    p = ember.zeros(2, requires_grad=True)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts, but got torch.FloatTensor"):
        eopt.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        eopt.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors, but one of the params is int"):
        eopt.SGD([1], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter grou"):
        eopt.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        eopt.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        eopt.SGD([{"params": {p}}], lr=0.1)
    with pytest.raises(TypeError, match="param_group must be a dict"):
        eopt.SGD([p]).add_param_group([p])
    with pytest.warns(UserWarning, match="duplicate parameters"):
        eopt.SGD([p, p], lr=0.1)


def test_add_param_group_and_required() -> None:
    a = ember.zeros(2, requires_grad=True)
    b = ember.zeros(2, requires_grad=True)
    opt = eopt.Adam([a], lr=0.1)
    opt.add_param_group({"params": b, "lr": 0.01})
    assert len(opt.param_groups) == 2
    assert opt.param_groups[1]["betas"] == (0.9, 0.999)
    assert opt.param_groups[1]["params"] == [b]
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    from ember.optim.optimizer import required

    class Mine(eopt.Optimizer):
        def __init__(self, params: object, lr: object = required) -> None:
            super().__init__(params, dict(lr=lr))

    with pytest.raises(ValueError, match="didn't specify a value of required optimization param"):
        Mine([a])
    assert Mine([{"params": [a], "lr": 0.1}]).param_groups[0]["lr"] == 0.1


def test_named_parameters() -> None:
    a = ember.zeros(2, requires_grad=True)
    b = ember.zeros(3, requires_grad=True)
    opt = eopt.SGD([("w", a), ("b", b)], lr=0.1)
    assert opt.param_groups[0]["params"] == [a, b]
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]


def test_user_subclass_with_own_step() -> None:
    class PlainSGD(eopt.Optimizer):
        def __init__(self, params: object, lr: float = 0.1) -> None:
            super().__init__(params, dict(lr=lr))

        @ember.no_grad()
        def step(self, closure: object = None) -> None:
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-group["lr"])

    p = ember.ones(2, requires_grad=True)
    opt = PlainSGD([p])
    p.grad = ember.ones(2)
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.9, 0.9], rtol=1e-6)
    # a subclass that only writes _update gets the walking for free
    class HalfStep(eopt.Optimizer):
        def __init__(self, params: object) -> None:
            super().__init__(params, {})

        def _update(self, p: object, g: object, h: object) -> None:
            p._data -= 0.5 * g

    opt = HalfStep([p])
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.4, 0.4], rtol=1e-6)


def test_hooks() -> None:
    p = ember.ones(2, requires_grad=True)
    opt = eopt.SGD([p], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    h2 = opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
    p.grad = ember.ones(2)
    opt.step()
    assert calls == ["pre", "post"]
    h1.remove()
    h2.remove()
    opt.step()
    assert calls == ["pre", "post"]
    def add_extra(o: object, sd: dict) -> None:
        sd["extra"] = 1

    opt.register_state_dict_post_hook(add_extra)
    assert opt.state_dict()["extra"] == 1
    seen = []
    opt.register_load_state_dict_post_hook(lambda o: seen.append(1))
    sd = opt.state_dict()
    sd.pop("extra")
    opt.load_state_dict(sd)
    assert seen == [1]


def test_repr() -> None:
    p = ember.ones(2, requires_grad=True)
    t = torch.ones(2, requires_grad=True)
    assert repr(eopt.Adam([p])) == repr(torch.optim.Adam([t]))
    assert repr(eopt.SGD([p], lr=0.1)) == repr(torch.optim.SGD([t], lr=0.1))


def test_signatures_match_torch() -> None:
    for name in ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta",
                 "Adamax", "NAdam", "RAdam", "LBFGS"]:
        es = inspect.signature(getattr(eopt, name)).parameters
        ts = inspect.signature(getattr(torch.optim, name)).parameters
        assert list(es) == list(ts), name
        for k in ts:
            assert es[k].default == ts[k].default, (name, k)
            assert es[k].kind == ts[k].kind, (name, k)
    assert "fused" in inspect.signature(ember.optim.AdamW).parameters


def test_adamw_two_groups_nanogpt_style() -> None:
    w = ember.randn(8, 4, requires_grad=True)
    b = ember.randn(8, requires_grad=True)
    decay = [p for p in (w, b) if p.dim() >= 2]
    no_decay = [p for p in (w, b) if p.dim() < 2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt = eopt.AdamW([{"params": decay, "weight_decay": 0.1},
                          {"params": no_decay, "weight_decay": 0.0}],
                         lr=6e-4, betas=(0.9, 0.95), fused=False)
    w.grad, b.grad = ember.zeros(8, 4), ember.zeros(8)
    w0, b0 = w.detach().numpy().copy(), b.detach().numpy().copy()
    opt.step()
    np.testing.assert_allclose(w.detach().numpy(), w0 * (1 - 6e-4 * 0.1), rtol=1e-6)
    np.testing.assert_array_equal(b.detach().numpy(), b0)


def test_step_overhead_small() -> None:
    """10 small parameters: one Adam step stays cheap (the per-parameter Python work is small)."""
    import time

    ps = [ember.randn(16, 16, requires_grad=True) for _ in range(10)]
    for p in ps:
        p.grad = ember.randn(16, 16)
    opt = eopt.Adam(ps, lr=1e-3)
    opt.step()
    n = 200
    t0 = time.perf_counter()
    for _ in range(n):
        opt.step()
    per_step = (time.perf_counter() - t0) / n
    assert per_step < 2e-3, f"Adam step with 10 params took {per_step * 1e6:.0f} us"


def test_state_follows_parameter_device_and_step_stays_on_cpu() -> None:
    """With a (simulated) CUDA parameter, moment buffers live on its device; 'step' on the CPU."""
    from ember._backend import FakeCudaArray

    p = ember.zeros(3, requires_grad=True)
    p._data = np.zeros(3, np.float32).view(FakeCudaArray)
    opt = eopt.Adam([p], lr=0.1)
    g = ember.ones(3)
    g._data = np.ones(3, np.float32).view(FakeCudaArray)
    p.grad = g
    opt.step()
    st = opt.state[p]
    assert p.device.type == "cuda" and st["exp_avg"].device.type == "cuda"
    assert st["step"].device.type == "cpu"
    np.testing.assert_allclose(np.asarray(p._data), [-0.1, -0.1, -0.1], rtol=1e-5)


@pytest.mark.parametrize("kwargs", [dict(lr=0.5, max_iter=3), dict(line_search_fn="strong_wolfe",
                                                                   max_iter=3, history_size=4)],
                         ids=str)
def test_lbfgs_state_dict_round_trip(kwargs: dict) -> None:
    x0 = np.array([-1.2, 1.0, 0.5, -0.3, 0.8, 1.5])
    straight, _, _ = _lbfgs_run(ember, eopt.LBFGS, kwargs, x0, 5)
    x2, _, opt = _lbfgs_run(ember, eopt.LBFGS, kwargs, x0, 2)
    sd = pickle.loads(pickle.dumps(opt.state_dict()))
    a = ember.tensor(x2[:3].copy(), requires_grad=True)
    b = ember.tensor(x2[3:].copy(), requires_grad=True)
    opt2 = eopt.LBFGS([a, b], **kwargs)
    opt2.load_state_dict(sd)

    def closure() -> object:
        opt2.zero_grad()
        x = np.concatenate([a.detach().numpy(), b.detach().numpy()])
        f, g = _rosen_like(x)
        a.grad, b.grad = ember.tensor(g[:3]), ember.tensor(g[3:])
        return ember.tensor(np.float64(f))

    for _ in range(3):
        opt2.step(closure)
    np.testing.assert_allclose(np.concatenate([a.detach().numpy(), b.detach().numpy()]),
                               straight, atol=1e-12, rtol=0)


@pytest.mark.parametrize("decoupled,wd", [(True, 0.1), (False, 0.05), (False, 0.0)])
def test_adam_blocked_step_is_bit_for_bit_the_plain_one(decoupled, wd, monkeypatch):
    """Large float32 parameters are updated block by block (optim/adam.py: _blocked_step); the
    result equals the whole-array arithmetic exactly, across block edges, for several steps.
    A Fortran-ordered parameter takes the plain path and must agree too."""
    from ember.optim import adam as adam_mod

    rng = np.random.default_rng(0)
    shapes = [(300, 500), (7,), (65536 + 3,)]
    inits = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(4)]

    def run(blocked: bool):
        monkeypatch.setattr(adam_mod, "_BLOCKED", blocked)
        calls = []
        real = adam_mod._blocked_step
        monkeypatch.setattr(adam_mod, "_blocked_step", lambda *a: calls.append(1) or real(*a))
        ps = [ember.tensor(a.copy(), requires_grad=True) for a in inits]
        opt = ember.optim.Adam(ps, lr=1e-2, weight_decay=wd, decoupled_weight_decay=decoupled)
        for gs in grads:
            for p, g in zip(ps, gs):
                p.grad = ember.tensor(g)
            opt.step()
        monkeypatch.undo()
        # 3 parameters x 4 steps; with the native kernels, steps 2-4 take the group's one call
        # (Adam._group_step: the same kernel), which test_adam_group_step_* compares
        # (not with an L2 weight decay: that one stays per parameter)
        group = ember._kernels_loader.active is not None and (decoupled or wd == 0)
        per_param = 3 if group else 12
        assert len(calls) == (per_param if blocked else 0)
        return [p.detach().numpy().copy() for p in ps]

    blocked, plain = run(True), run(False)
    for a, b in zip(blocked, plain):
        assert a.dtype == np.float32
        np.testing.assert_array_equal(a, b)
    f = ember.tensor(np.asfortranarray(rng.standard_normal((70, 90)).astype(np.float32)),
                     requires_grad=True)
    c = ember.tensor(np.ascontiguousarray(f.detach().numpy()), requires_grad=True)
    opt = ember.optim.AdamW([f, c], lr=1e-2)
    g = rng.standard_normal((70, 90)).astype(np.float32)
    f.grad, c.grad = ember.tensor(np.asfortranarray(g)), ember.tensor(g)
    opt.step()
    np.testing.assert_array_equal(f.detach().numpy(), c.detach().numpy())


def _group_step_run(monkeypatch, klass, make_opt, inits, grads, group_step, lib=ember):
    """``inits`` trained for ``len(grads)`` steps (parameter 1 without a gradient at step 2) by
    ``make_opt(lib, params)``: with ``klass._group_step`` (wrapped to record what each call
    answered), without it (None: the per-parameter path), or on PyTorch (``lib``). The
    parameters' values, their states' arrays, the recorded answers."""
    calls = []
    if lib is ember:
        real = klass._group_step
        monkeypatch.setattr(klass, "_group_step",
                            (lambda self, *a: calls.append(real(self, *a)) or calls[-1])
                            if group_step else None)
    ps = [lib.tensor(a.copy(), requires_grad=True) for a in inits]
    opt = make_opt(lib, ps)
    for k, gs in enumerate(grads):
        for j, (p, g) in enumerate(zip(ps, gs)):
            p.grad = None if (j == 1 and k == 2) else lib.tensor(g)
        opt.step()
    monkeypatch.undo()
    state = [{key: np.asarray(v.detach().numpy() if hasattr(v, "detach") else v)
              for key, v in opt.state[p].items()} for p in ps]
    return [p.detach().numpy().copy() for p in ps], state, calls


def _assert_same_runs(got, want):
    for x, y in zip(got[0], want[0]):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)
    for x, y in zip(got[1], want[1]):
        assert x.keys() == y.keys()
        for key in x:
            np.testing.assert_array_equal(x[key], y[key])


def _group_inits(seed, big):
    rng = np.random.default_rng(seed)
    inits = [rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal(4),
             np.array(0.5, np.float32), rng.standard_normal(big).astype(np.float32)]
    return inits, rng


@pytest.mark.parametrize("cls,kw", [
    ("Adam", {}), ("Adam", {"weight_decay": 0.05}), ("AdamW", {"weight_decay": 0.1}),
    ("Adam", {"amsgrad": True}), ("Adam", {"maximize": True}),
    ("Adam", {"weight_decay": 0.1, "decoupled_weight_decay": True}),
])
def test_adam_group_step_equals_the_per_parameter_steps(cls, kw, monkeypatch):
    """Adam's whole-group native call (Adam._group_step, _kernels.adam_many) gives the bits of
    the per-parameter path, steps and state included, for float32 and float64 parameters, a
    0-d one, one without a gradient at some steps and one added in a later group; options it
    does not take (amsgrad, maximize, L2 weight decay) leave the group to the per-parameter
    path. Checked against PyTorch's trajectory too where it is installed."""
    from ember.optim import adam as adam_mod

    inits, rng = _group_inits(4, 7)
    grads = [[rng.standard_normal(a.shape).astype(a.dtype) for a in inits] for _ in range(5)]

    def make(lib, ps):
        opt = getattr(lib.optim, cls)(ps[:3], lr=1e-2, **kw)
        opt.add_param_group({"params": [ps[3]], "lr": 3e-3})
        return opt

    fast = _group_step_run(monkeypatch, adam_mod.Adam, make, inits, grads, True)
    slow = _group_step_run(monkeypatch, adam_mod.Adam, make, inits, grads, False)
    native = ember._kernels_loader.active is not None
    took = [c for c in fast[2] if c]
    plain_only = kw.get("amsgrad") or kw.get("maximize") or (
        kw.get("weight_decay") and cls == "Adam" and not kw.get("decoupled_weight_decay"))
    assert len(took) == (0 if plain_only or not native else 2 * 4)  # 2 groups x steps 2-5
    _assert_same_runs(fast, slow)
    torch = pytest.importorskip("torch")
    ref = _group_step_run(monkeypatch, adam_mod.Adam, make, inits, grads, False, torch)
    for x, y in zip(fast[0], ref[0]):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kw", [
    {}, {"momentum": 0.9}, {"momentum": 0.9, "nesterov": True},
    {"momentum": 0.8, "dampening": 0.3}, {"weight_decay": 0.01}, {"maximize": True},
])
def test_sgd_group_step_equals_the_per_parameter_steps(kw, monkeypatch):
    """SGD's whole-group native call (SGD._group_step, _kernels.sgd_many) gives the bits of the
    per-parameter path (momentum buffers included) for float32, float64 and 0-d parameters, one
    of them without a gradient at a step; weight decay and maximize stay per parameter. Checked
    against PyTorch's trajectory too where it is installed."""
    from ember.optim import sgd as sgd_mod

    inits, rng = _group_inits(5, 70000)
    grads = [[rng.standard_normal(a.shape).astype(a.dtype) for a in inits] for _ in range(4)]

    def make(lib, ps):
        return lib.optim.SGD(ps, lr=0.1, **kw)

    fast = _group_step_run(monkeypatch, sgd_mod.SGD, make, inits, grads, True)
    slow = _group_step_run(monkeypatch, sgd_mod.SGD, make, inits, grads, False)
    native = ember._kernels_loader.active is not None
    plain_only = kw.get("weight_decay") or kw.get("maximize")
    first = 1 if kw.get("momentum") else 0  # (the first momentum step makes the buffers)
    assert sum(map(bool, fast[2])) == (0 if plain_only or not native else 4 - first)
    _assert_same_runs(fast, slow)
    torch = pytest.importorskip("torch")
    ref = _group_step_run(monkeypatch, sgd_mod.SGD, make, inits, grads, False, torch)
    for x, y in zip(fast[0], ref[0]):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kw", [
    {}, {"momentum": 0.9}, {"centered": True}, {"centered": True, "momentum": 0.5},
    {"weight_decay": 0.01}, {"maximize": True},
])
def test_rmsprop_group_step_equals_the_per_parameter_steps(kw, monkeypatch):
    """RMSprop's whole-group native call (RMSprop._group_step, _kernels.rmsprop_many) gives the
    bits of the per-parameter path (square_avg, grad_avg, momentum buffers and steps included)
    for float32, float64 and 0-d parameters, one without a gradient at a step; weight decay and
    maximize stay per parameter. Against PyTorch's trajectory too where it is installed."""
    from ember.optim import rmsprop as rms_mod

    inits, rng = _group_inits(6, 70000)
    grads = [[rng.standard_normal(a.shape).astype(a.dtype) for a in inits] for _ in range(4)]

    def make(lib, ps):
        return lib.optim.RMSprop(ps, lr=0.01, **kw)

    fast = _group_step_run(monkeypatch, rms_mod.RMSprop, make, inits, grads, True)
    slow = _group_step_run(monkeypatch, rms_mod.RMSprop, make, inits, grads, False)
    native = ember._kernels_loader.active is not None
    plain_only = kw.get("weight_decay") or kw.get("maximize")
    assert sum(map(bool, fast[2])) == (0 if plain_only or not native else 3)  # steps 2-4
    _assert_same_runs(fast, slow)
    torch = pytest.importorskip("torch")
    ref = _group_step_run(monkeypatch, rms_mod.RMSprop, make, inits, grads, False, torch)
    for x, y in zip(fast[0], ref[0]):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
