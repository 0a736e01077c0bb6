"""ember.optim.lr_scheduler: learning-rate (and momentum) sequences equal PyTorch's.

Every case builds the same optimizer (two parameter groups, lr 0.1 and 0.05) in both libraries,
attaches the same scheduler, then runs ``optimizer.step(); scheduler.step()`` and records
``get_last_lr()``, every group's ``lr`` and its momentum / beta1.
"""

from __future__ import annotations

import copy
import math
import pickle
import warnings

import numpy as np
import pytest

import ember
import ember.optim as eopt
import ember.optim.lr_scheduler as ES

torch = pytest.importorskip("torch")
TS = torch.optim.lr_scheduler


def _optimizer(lib: object, name: str = "SGD", **kw: object) -> object:
    a = lib.zeros(3, requires_grad=True)
    b = lib.zeros(2, requires_grad=True)
    mod = eopt if lib is ember else torch.optim
    if name == "SGD":
        kw.setdefault("momentum", 0.9)
    return getattr(mod, name)([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.1, **kw)


def _momenta(opt: object) -> list:
    out = []
    for g in opt.param_groups:
        out.append(g["betas"][0] if "betas" in g else g.get("momentum"))
    return out


def _record(lib: object, make: object, n: int, opt_name: str = "SGD",
            opt_kw: dict | None = None) -> dict:
    mod = ES if lib is ember else TS
    opt = _optimizer(lib, opt_name, **(opt_kw or {}))
    sched = make(mod, opt)
    lrs, groups, moms = [sched.get_last_lr()], [[g["lr"] for g in opt.param_groups]], []
    moms.append(_momenta(opt))
    for _ in range(n):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
        groups.append([g["lr"] for g in opt.param_groups])
        moms.append(_momenta(opt))
    return dict(lrs=np.array(lrs, dtype=float), groups=np.array(groups, dtype=float),
                moms=np.array(moms, dtype=float), sched=sched, opt=opt)


def _compare(make: object, n: int = 60, opt_name: str = "SGD", opt_kw: dict | None = None,
             check_state_keys: bool = True, require_change: bool = True) -> dict:
    e = _record(ember, make, n, opt_name, opt_kw)
    t = _record(torch, make, n, opt_name, opt_kw)
    np.testing.assert_allclose(e["lrs"], t["lrs"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(e["groups"], t["groups"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(e["moms"], t["moms"], rtol=1e-12, atol=1e-15)
    if require_change:  # the schedule did something
        assert len(np.unique(e["lrs"][:, 0])) > 1
    if check_state_keys:
        assert set(e["sched"].state_dict()) == set(t["sched"].state_dict())
    return e


def _lam(e: int) -> float:
    return 0.95**e


def _lam2(e: int) -> float:
    return 1.0 / (1 + e)


CASES = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=3, gamma=0.5),
    "StepLR-default-gamma": lambda m, o: m.StepLR(o, 7),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[5, 10, 10, 20], gamma=0.5),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    "CosineAnnealingLR-odd": lambda m, o: m.CosineAnnealingLR(o, T_max=7),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5),
    "CosineAnnealingWarmRestarts-mult": lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.01),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lr_lambda=_lam),
    "LambdaLR-per-group": lambda m, o: m.LambdaLR(o, lr_lambda=[_lam, _lam2]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lr_lambda=lambda e: 0.97),
    "LinearLR": lambda m, o: m.LinearLR(o),
    "LinearLR-custom": lambda m, o: m.LinearLR(o, start_factor=0.1, end_factor=0.9,
                                               total_iters=10),
    "ConstantLR": lambda m, o: m.ConstantLR(o),
    "ConstantLR-custom": lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=7),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o),
    "PolynomialLR-custom": lambda m, o: m.PolynomialLR(o, total_iters=20, power=2.0),
    "OneCycleLR": lambda m, o: m.OneCycleLR(o, max_lr=[0.5, 0.3], total_steps=60),
    "OneCycleLR-epochs": lambda m, o: m.OneCycleLR(o, max_lr=1.0, epochs=6,
                                                   steps_per_epoch=10, pct_start=0.25),
    "OneCycleLR-three-phase-linear": lambda m, o: m.OneCycleLR(
        o, max_lr=0.4, total_steps=61, three_phase=True, anneal_strategy="linear",
        base_momentum=0.8, max_momentum=0.9, div_factor=10.0, final_div_factor=100.0),
    "OneCycleLR-no-momentum": lambda m, o: m.OneCycleLR(o, max_lr=0.5, total_steps=60,
                                                        cycle_momentum=False),
    "CyclicLR": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(
        o, base_lr=[0.01, 0.02], max_lr=[0.1, 0.2], step_size_up=3, step_size_down=5,
        mode="triangular2"),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5,
                                                  mode="exp_range", gamma=0.97),
    "CyclicLR-scale_fn": lambda m, o: m.CyclicLR(
        o, base_lr=0.01, max_lr=0.1, step_size_up=5, scale_fn=lambda x: 0.5 ** (x / 10),
        scale_mode="iterations", base_momentum=0.7, max_momentum=0.95),
    "SequentialLR-warmup-cosine": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=5), m.CosineAnnealingLR(o, T_max=30)],
        milestones=[5]),
    "SequentialLR-three": lambda m, o: m.SequentialLR(
        o, [m.ConstantLR(o, factor=0.5, total_iters=10), m.ExponentialLR(o, gamma=0.9),
            m.StepLR(o, 4, 0.5)], milestones=[4, 12]),
    "SequentialLR-multiplicative": lambda m, o: m.SequentialLR(
        o, [m.ConstantLR(o, factor=0.5, total_iters=10), m.MultiplicativeLR(o, lambda e: 0.9)],
        milestones=[3]),
    "SequentialLR-lambda-poly": lambda m, o: m.SequentialLR(
        o, [m.LambdaLR(o, _lam2), m.PolynomialLR(o, total_iters=30, power=0.5)],
        milestones=[6]),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.1, total_iters=4), m.ExponentialLR(o, gamma=0.9)]),
    "ChainedScheduler-warmup-cosine": lambda m, o: m.ChainedScheduler(
        [m.LinearLR(o, start_factor=0.2, total_iters=6), m.CosineAnnealingLR(o, T_max=25)],
        optimizer=o),
    "ChainedScheduler-step-multistep": lambda m, o: m.ChainedScheduler(
        [m.StepLR(o, 5, 0.8), m.MultiStepLR(o, [10, 30], 0.5)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_sequence_equals_torch(name: str) -> None:
    _compare(CASES[name], n=60)


@pytest.mark.parametrize("name", ["OneCycleLR", "OneCycleLR-three-phase-linear", "CyclicLR",
                                  "CyclicLR-exp_range", "CosineAnnealingLR", "StepLR"])
def test_with_adam_betas(name: str) -> None:
    e = _compare(CASES[name], n=55, opt_name="Adam")
    g = e["opt"].param_groups[0]
    assert isinstance(g["betas"], tuple) and g["betas"][1] == 0.999


def test_onecycle_momentum_cycles() -> None:
    e = _compare(CASES["OneCycleLR"], n=60)
    m = e["moms"][:, 0]
    assert m[0] == pytest.approx(0.95) and m.min() == pytest.approx(0.85, abs=1e-3)


def test_onecycle_errors() -> None:
    opt = _optimizer(ember)
    with pytest.raises(ValueError, match="total_steps OR"):
        ES.OneCycleLR(opt, max_lr=0.1)
    with pytest.raises(ValueError, match="Expected positive integer total_steps"):
        ES.OneCycleLR(opt, max_lr=0.1, total_steps=0)
    with pytest.raises(ValueError, match="pct_start"):
        ES.OneCycleLR(opt, max_lr=0.1, total_steps=10, pct_start=2.0)
    with pytest.raises(ValueError, match="anneal_strategy"):
        ES.OneCycleLR(opt, max_lr=0.1, total_steps=10, anneal_strategy="step")
    with pytest.raises(ValueError, match="max_lr must have the same length"):
        ES.OneCycleLR(opt, max_lr=[0.1], total_steps=10)
    a = ember.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="momentum or beta1"):
        ES.OneCycleLR(eopt.Adagrad([a]), max_lr=0.1, total_steps=10)
    sched = ES.OneCycleLR(opt, max_lr=0.1, total_steps=3)
    for _ in range(3):
        opt.step()
        sched.step()
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        sched.step()


def test_scheduler_errors() -> None:
    opt = _optimizer(ember)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        ES.StepLR(object(), 3)
    with pytest.raises(KeyError, match="initial_lr"):
        ES.StepLR(opt, 3, last_epoch=5)
    with pytest.raises(ValueError, match="Constant multiplicative factor"):
        ES.ConstantLR(opt, factor=2.0)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        ES.LinearLR(opt, start_factor=0.0)
    with pytest.raises(ValueError, match="Ending multiplicative factor"):
        ES.LinearLR(opt, end_factor=1.5)
    with pytest.raises(ValueError, match="Expected positive integer T_0"):
        ES.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="T_mult"):
        ES.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=0)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        ES.LambdaLR(opt, [_lam])
    with pytest.raises(ValueError, match="mode is invalid"):
        ES.CyclicLR(opt, 0.01, 0.1, mode="sine")
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        ES.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode foo is unknown"):
        ES.ReduceLROnPlateau(opt, mode="foo")
    with pytest.raises(ValueError, match="threshold mode bar is unknown"):
        ES.ReduceLROnPlateau(opt, threshold_mode="bar")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        ES.ReduceLROnPlateau(opt, min_lr=[0.1])
    s1 = ES.StepLR(opt, 3)
    with pytest.raises(ValueError, match="number of milestone points"):
        ES.SequentialLR(opt, [s1, ES.ExponentialLR(opt, 0.9)], milestones=[])
    with pytest.raises(ValueError, match="at least one scheduler"):
        ES.ChainedScheduler([])
    other = _optimizer(ember)
    with pytest.raises(ValueError, match="same optimizer"):
        ES.SequentialLR(opt, [s1, ES.ExponentialLR(other, 0.9)], milestones=[3])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        ES.ChainedScheduler([s1, ES.ReduceLROnPlateau(opt)])


# ---------------------------------------------------------------------------------------------
# resuming, step(epoch), fractional epochs


RESUMABLE = ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR-custom",
             "ConstantLR-custom", "PolynomialLR-custom", "LambdaLR", "MultiplicativeLR",
             "CosineAnnealingWarmRestarts-mult", "CyclicLR", "OneCycleLR"]


@pytest.mark.parametrize("name", RESUMABLE)
@pytest.mark.parametrize("last_epoch", [0, 1, 3, 4])
def test_created_with_last_epoch(name: str, last_epoch: int) -> None:
    """A scheduler created with last_epoch=k on an optimizer whose groups hold initial_lr."""
    def make(m: object, o: object) -> object:
        for g in o.param_groups:
            g["initial_lr"] = g["lr"] * 2
            g.update(max_lr=0.4, min_lr=1e-4, max_momentum=0.95, base_momentum=0.85)
        return _with_last_epoch(name, m, o, last_epoch)

    _compare(make, n=20, check_state_keys=False, require_change=False)


def _with_last_epoch(name: str, m: object, o: object, le: int) -> object:
    if name == "StepLR":
        return m.StepLR(o, 2, 0.5, last_epoch=le)
    if name == "MultiStepLR":
        return m.MultiStepLR(o, [2, 4, 5], 0.5, last_epoch=le)
    if name == "ExponentialLR":
        return m.ExponentialLR(o, 0.5, last_epoch=le)
    if name == "CosineAnnealingLR":
        return m.CosineAnnealingLR(o, 4, 0.01, last_epoch=le)
    if name == "LinearLR-custom":
        return m.LinearLR(o, 0.5, 1.0, 4, last_epoch=le)
    if name == "ConstantLR-custom":
        return m.ConstantLR(o, 0.5, 4, last_epoch=le)
    if name == "PolynomialLR-custom":
        return m.PolynomialLR(o, 6, 2.0, last_epoch=le)
    if name == "LambdaLR":
        return m.LambdaLR(o, _lam2, last_epoch=le)
    if name == "MultiplicativeLR":
        return m.MultiplicativeLR(o, lambda e: 0.5, last_epoch=le)
    if name == "CosineAnnealingWarmRestarts-mult":
        return m.CosineAnnealingWarmRestarts(o, 3, 2, last_epoch=le)
    if name == "CyclicLR":
        return m.CyclicLR(o, 0.01, 0.1, 3, last_epoch=le)
    if name == "OneCycleLR":
        return m.OneCycleLR(o, 0.4, total_steps=30, last_epoch=le)
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
                                  "LinearLR-custom", "ConstantLR-custom", "PolynomialLR-custom",
                                  "LambdaLR", "MultiplicativeLR",
                                  "CosineAnnealingWarmRestarts-mult"])
def test_step_with_epoch_argument(name: str) -> None:
    """The deprecated ``step(epoch)`` jumps (closed form where there is one), with the warning."""
    res = {}
    for lib, m in ((ember, ES), (torch, TS)):
        opt = _optimizer(lib)
        sched = CASES[name](m, opt)
        out = []
        opt.step()
        sched.step()
        opt.param_groups[0]["lr"] = 0.07
        for e in [0, 3, 1, 5, 12, 2, 7]:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                sched.step(e)
            if name != "CosineAnnealingWarmRestarts-mult":
                assert any("epoch parameter" in str(x.message) for x in w)
            out.append(sched.get_last_lr())
        res[lib] = np.array(out)
    np.testing.assert_allclose(res[ember], res[torch], rtol=1e-12)


def test_warm_restarts_fractional_epochs() -> None:
    res = {}
    for lib, m in ((ember, ES), (torch, TS)):
        opt = _optimizer(lib)
        sched = m.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.001)
        out = []
        iters = 7
        for epoch in range(6):
            for i in range(iters):
                opt.step()
                sched.step(epoch + i / iters)
                out.append(sched.get_last_lr())
        res[lib] = np.array(out)
    np.testing.assert_allclose(res[ember], res[torch], rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# ReduceLROnPlateau


METRICS = [1.0, 0.9, 0.85, 0.85, 0.86, 0.849, 0.85, 0.851, 0.86, 0.87, 0.7, 0.7, 0.7, 0.7,
           0.69995, 0.7, 0.71, 0.72, 0.73, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.49, 0.5, 0.5, 0.5,
           0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4,
           0.4, 0.4, 0.4, 0.41, 0.42]


@pytest.mark.parametrize("kw", [
    dict(),
    dict(patience=2),
    dict(patience=1, factor=0.5, cooldown=2),
    dict(patience=2, threshold=0.05, threshold_mode="abs"),
    dict(mode="max", patience=2, factor=0.5),
    dict(mode="max", patience=1, threshold_mode="abs", threshold=0.001),
    dict(patience=0, factor=0.5, min_lr=[0.02, 0.001]),
    dict(patience=0, factor=0.5, min_lr=0.01, eps=1e-3),
], ids=str)
def test_reduce_lr_on_plateau(kw: dict) -> None:
    res = {}
    for lib, m in ((ember, ES), (torch, TS)):
        opt = _optimizer(lib)
        sched = m.ReduceLROnPlateau(opt, **kw)
        out = []
        for v in METRICS:
            opt.step()
            sched.step(lib.tensor(v) if v > 0.8 else v)  # a tensor metric works too
            out.append([g["lr"] for g in opt.param_groups] + sched.get_last_lr()
                       + [sched.num_bad_epochs, sched.cooldown_counter, sched.best])
        res[lib] = np.array(out, dtype=float)
        if lib is ember:
            e_sched = sched
        else:
            t_sched = sched
    np.testing.assert_allclose(res[ember], res[torch], rtol=1e-6)
    assert len(np.unique(res[ember][:, 0])) > 1
    assert set(e_sched.state_dict()) == set(t_sched.state_dict())


def test_reduce_lr_on_plateau_state_dict_and_new_group() -> None:
    opt = _optimizer(ember)
    sched = ES.ReduceLROnPlateau(opt, patience=1, mode="max")
    for v in [1, 2, 2, 2]:
        sched.step(v)
    sd = pickle.loads(pickle.dumps(sched.state_dict()))
    opt2 = _optimizer(ember)
    sched2 = ES.ReduceLROnPlateau(opt2)
    sched2.load_state_dict(sd)
    assert sched2.mode == "max" and sched2.best == 2 and sched2.num_bad_epochs == 0
    assert sched2.is_better(3, 2) and not sched2.is_better(2, 2)
    # a param group added later takes the default min_lr
    opt.add_param_group({"params": [ember.zeros(1, requires_grad=True)], "lr": 0.3})
    for v in [2, 2, 2]:
        sched.step(v)
    assert len(sched.min_lrs) == 3 and opt.param_groups[2]["lr"] == pytest.approx(0.03)


# ---------------------------------------------------------------------------------------------
# state_dict, get_last_lr, warnings


@pytest.mark.parametrize("name", list(CASES))
def test_state_dict_round_trip(name: str) -> None:
    straight = _record(ember, CASES[name], 40)["lrs"]
    opt = _optimizer(ember)
    sched = CASES[name](ES, opt)
    lrs = [sched.get_last_lr()]
    for _ in range(15):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
    o_sd = copy.deepcopy(opt.state_dict())
    s_sd = sched.state_dict()
    if "lambda" not in name.lower() and "scale_fn" not in name and "Multiplicative" not in name:
        s_sd = pickle.loads(pickle.dumps(s_sd))  # a checkpoint holds no functions
    opt2 = _optimizer(ember)
    sched2 = CASES[name](ES, opt2)
    opt2.load_state_dict(o_sd)
    sched2.load_state_dict(s_sd)
    for _ in range(25):
        opt2.step()
        sched2.step()
        lrs.append(sched2.get_last_lr())
    np.testing.assert_allclose(np.array(lrs), straight, rtol=1e-12)


def test_state_dict_matches_torch_values() -> None:
    e = _record(ember, CASES["StepLR"], 7)["sched"].state_dict()
    t = _record(torch, CASES["StepLR"], 7)["sched"].state_dict()
    assert e == t
    e = _record(ember, CASES["OneCycleLR"], 7)["sched"].state_dict()
    t = _record(torch, CASES["OneCycleLR"], 7)["sched"].state_dict()
    assert e.keys() == t.keys()
    assert e["_schedule_phases"] == t["_schedule_phases"]


def test_lambda_state_dict_keeps_callable_object_attributes() -> None:
    class Decay:
        def __init__(self) -> None:
            self.rate = 0.9

        def __call__(self, e: int) -> float:
            return self.rate**e

    opt = _optimizer(ember)
    f = Decay()
    sched = ES.LambdaLR(opt, [f, _lam])
    f.rate = 0.5
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.5}, None]
    g = Decay()
    sched2 = ES.LambdaLR(_optimizer(ember), [g, _lam])
    sched2.load_state_dict(sd)
    assert g.rate == 0.5


def test_get_last_lr_and_initial_lr() -> None:
    opt = _optimizer(ember)
    sched = ES.StepLR(opt, 2, 0.5)
    assert sched.get_last_lr() == [0.1, 0.05]
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.05]
    assert sched.base_lrs == [0.1, 0.05]
    assert sched.last_epoch == 0
    last = sched.get_last_lr()
    last[0] = 123.0  # a copy
    assert sched.get_last_lr()[0] == 0.1


def test_tensor_lr() -> None:
    res = {}
    for lib, m in ((ember, ES), (torch, TS)):
        a = lib.zeros(2, requires_grad=True)
        lr = lib.tensor(0.1)
        opt = (eopt if lib is ember else torch.optim).Adam([a], lr=lr)
        sched = m.ExponentialLR(opt, 0.9)
        out = []
        for _ in range(10):
            opt.step()
            sched.step()
            out.append(float(sched.get_last_lr()[0]))
        assert opt.param_groups[0]["lr"] is lr  # written in place
        res[lib] = out
    np.testing.assert_allclose(res[ember], res[torch], rtol=1e-6)


def test_warning_when_scheduler_steps_before_optimizer() -> None:
    opt = _optimizer(ember)
    sched = ES.StepLR(opt, 2)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before "
                                         r"`optimizer.step\(\)`"):
        sched.step()
    # only the first call is checked
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()
    # torch says the same thing
    topt = _optimizer(torch)
    tsched = TS.StepLR(topt, 2)
    with pytest.warns(UserWarning) as rec:
        tsched.step()
    opt = _optimizer(ember)
    sched = ES.StepLR(opt, 2)
    with pytest.warns(UserWarning) as rec2:
        sched.step()
    assert str(rec[0].message) == str(rec2[0].message)


def test_no_warning_in_the_right_order() -> None:
    opt = _optimizer(ember)
    scheds = [ES.StepLR(opt, 2), ES.OneCycleLR(opt, 0.1, total_steps=10)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            opt.step()
            for s in scheds:
                s.step()


def test_warning_when_optimizer_step_overridden() -> None:
    opt = _optimizer(ember)
    sched = ES.ExponentialLR(opt, 0.9)
    opt.step = lambda closure=None: None
    with pytest.warns(UserWarning, match="has been overridden after learning rate scheduler"):
        sched.step()


def test_warning_for_get_lr_outside_step() -> None:
    opt = _optimizer(ember)
    sched = ES.ExponentialLR(opt, 0.9)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()


def test_wrapped_step_still_steps_and_returns_loss() -> None:
    a = ember.ones(2, requires_grad=True)
    opt = eopt.SGD([a], lr=0.5)
    ES.StepLR(opt, 2)
    ES.ExponentialLR(opt, 0.9)  # two schedulers: wrapped once
    a.grad = ember.ones(2)
    loss = opt.step(lambda: ember.tensor(3.0))
    assert float(loss) == 3.0
    np.testing.assert_allclose(a.detach().numpy(), [0.5, 0.5])
    assert opt.step.__name__ == "step"


def test_custom_scheduler_subclass() -> None:
    class Halving(ES.LRScheduler):
        def get_lr(self) -> list[float]:
            if self.last_epoch == 0:
                return [g["lr"] for g in self.optimizer.param_groups]
            return [g["lr"] * 0.5 for g in self.optimizer.param_groups]

    opt = _optimizer(ember)
    sched = Halving(opt)
    for _ in range(3):
        opt.step()
        sched.step()
    assert sched.get_last_lr() == pytest.approx([0.0125, 0.00625])
    assert isinstance(sched, ES._LRScheduler)


def test_seed_style_loop_lr_changes_training() -> None:
    """A scheduler really changes the optimizer's step size."""
    a = ember.ones(1, requires_grad=True)
    opt = eopt.SGD([a], lr=1.0)
    sched = ES.MultiStepLR(opt, milestones=[1], gamma=0.1)
    for _ in range(2):
        a.grad = ember.ones(1)
        opt.step()
        sched.step()
    assert float(a.detach()[0]) == pytest.approx(1 - 1.0 - 0.1)
    assert math.isclose(sched.get_last_lr()[0], 0.1)
