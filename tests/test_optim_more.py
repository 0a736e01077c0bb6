"""ember.optim's ASGD, Rprop, Adafactor, Muon and swa_utils against the installed PyTorch.

Each trajectory starts both libraries from the same weights; every step the gradient of each
parameter is a fixed function of its current value plus fixed noise (computed in NumPy), so the
two only agree if the update rules do. One parameter gets no gradient on every third step (it
must be skipped).
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np
import pytest

import ember
import ember.optim as eopt

torch = pytest.importorskip("torch")

ALL = [(), (5,), (4, 3), (2, 3, 4)]  # a 0-d, a vector, a matrix and a 3-d parameter
TOL = {np.float32: (1e-6, 1e-7), np.float64: (1e-12, 1e-14)}  # (rtol, atol)


def _problem(shapes: list, steps: int, seed: int) -> tuple[list, list]:
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s) for s in shapes]
    noise = [[0.3 * rng.standard_normal(s) for s in shapes] for _ in range(steps)]
    return init, noise


def _grad(i: int, x: np.ndarray, noise: np.ndarray) -> np.ndarray:
    return (0.5 + 0.25 * i) * x + np.sin(2 * x) + noise


def _params(lib: Any, init: list, dtype: Any) -> list:
    return [lib.tensor(a.astype(dtype), requires_grad=True) for a in init]


def _steps(lib: Any, opt: Any, params: list, noise: list, steps: range, dtype: Any) -> None:
    for k in steps:
        for i, p in enumerate(params):
            if i == 1 and k % 3 == 2 and len(params) > 2:
                p.grad = None
                continue
            x = p.detach().numpy().astype(np.float64)
            p.grad = lib.tensor(_grad(i, x, noise[k][i]).astype(dtype))
        opt.step()


def _np(t: Any) -> np.ndarray:
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _close(ep: list, tp: list, dtype: Any, scale: float = 1.0) -> None:
    rtol, atol = TOL[dtype]
    for e, t in zip(ep, tp):
        assert str(e.dtype) == str(t.dtype)
        np.testing.assert_allclose(_np(e), _np(t), rtol=rtol * scale, atol=atol * scale)


def _torch_kw(kw: dict) -> dict:
    return {k: (torch.tensor(float(v)) if isinstance(v, ember.Tensor) else v)
            for k, v in kw.items()}


def _pair(name: str, kw: dict, shapes: list, dtype: Any, steps: int, seed: int = 0) -> tuple:
    """Run ``name`` in both libraries; returns (ember params, torch params, ember optimizer,
    torch optimizer, initial arrays)."""
    init, noise = _problem(shapes, steps, seed)
    ep, tp = _params(ember, init, dtype), _params(torch, init, dtype)
    eo = getattr(eopt, name)(ep, **kw)
    to = getattr(torch.optim, name)(tp, **_torch_kw(kw))
    _steps(ember, eo, ep, noise, range(steps), dtype)
    _steps(torch, to, tp, noise, range(steps), dtype)
    return ep, tp, eo, to, init


def _check_state(eo: Any, to: Any, dtype: Any) -> None:
    es, ts = eo.state_dict(), to.state_dict()
    assert es["state"].keys() == ts["state"].keys()
    rtol, atol = TOL[dtype]
    for k, tstate in ts["state"].items():
        assert list(es["state"][k]) == list(tstate)
        for key, tv in tstate.items():
            ev = es["state"][k][key]
            assert tuple(ev.shape) == tuple(tv.shape), key
            assert str(ev.dtype).split(".")[-1] == str(tv.dtype).split(".")[-1], key
            np.testing.assert_allclose(_np(ev), _np(tv), rtol=rtol, atol=atol, err_msg=key)
    assert _groups(es) == _groups(ts)


def _groups(sd: dict) -> list:
    return [{k: (float(v) if hasattr(v, "numel") else v) for k, v in g.items()}
            for g in sd["param_groups"]]


def _to_torch_sd(sd: dict) -> dict:
    return {"state": {k: {kk: (torch.tensor(_np(vv)) if isinstance(vv, ember.Tensor) else vv)
                          for kk, vv in v.items()} for k, v in sd["state"].items()},
            "param_groups": copy.deepcopy(sd["param_groups"])}


def _round_trips(name: str, kw: dict, shapes: list, dtype: Any, seed: int = 3) -> None:
    """torch's state_dict resumes in ember as in torch, and ember's (also pickled) resumes in
    torch and in ember as torch's own does. (Each side compared has loaded a state_dict:
    loading casts the state to the parameters' dtype, which changes the rounding after.)"""
    init, noise = _problem(shapes, 12, seed)
    tp = _params(torch, init, dtype)
    to = getattr(torch.optim, name)(tp, **_torch_kw(kw))
    _steps(torch, to, tp, noise, range(4), dtype)

    def resume(lib: Any, params: list, sd: dict) -> tuple[list, Any]:
        ps = _params(lib, [_np(p) for p in params], dtype)
        opt = getattr(lib.optim, name)(ps, **(kw if lib is ember else _torch_kw(kw)))
        opt.load_state_dict(sd)
        return ps, opt

    # torch -> ember (torch tensors inside, converted on load), beside torch -> torch
    ep, eo = resume(ember, tp, to.state_dict())
    tp1, to1 = resume(torch, tp, to.state_dict())
    _steps(ember, eo, ep, noise, range(4, 8), dtype)
    _steps(torch, to1, tp1, noise, range(4, 8), dtype)
    _close(ep, tp1, dtype)
    # ember -> torch and ember -> pickle -> ember, beside torch -> torch
    tp2, to2 = resume(torch, ep, _to_torch_sd(eo.state_dict()))
    ep2, eo2 = resume(ember, ep, pickle.loads(pickle.dumps(eo.state_dict())))
    tp3, to3 = resume(torch, tp1, to1.state_dict())
    for lib, o, ps in ((torch, to2, tp2), (ember, eo2, ep2), (torch, to3, tp3)):
        _steps(lib, o, ps, noise, range(8, 12), dtype)
    _close(tp2, tp3, dtype)
    _close(ep2, tp3, dtype)


def _case_id(case: tuple) -> str:
    name, kw = case[0], case[1]
    return name + "-" + "-".join(f"{k}={v}" for k, v in kw.items())


def _refusals(name: str, bad: list[dict], params: list | None = None) -> None:
    """Each keyword set raises the same exception class in both libraries."""
    for kw in bad:
        tp = params or [torch.zeros(2, 2, requires_grad=True)]
        ep = [ember.zeros(*p.shape, requires_grad=True) for p in tp]
        with pytest.raises(Exception) as te:
            getattr(torch.optim, name)(tp, **{k: (torch.tensor(_np(v)) if isinstance(
                v, ember.Tensor) else v) for k, v in kw.items()})
        with pytest.raises(te.type):
            getattr(eopt, name)(ep, **kw)


# ---------------------------------------------------------------------------------------------
# ASGD and Rprop

ELEMENTWISE = [
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, t0=3)),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=2, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=0, maximize=True, weight_decay=0.05)),
    ("ASGD", dict(lr=ember.tensor(0.05), t0=4, foreach=False, differentiable=False)),
    # foreach=True: PyTorch's multi-tensor form (another rounding; eta in the step's dtype)
    ("ASGD", dict(lr=0.05, t0=2, foreach=True)),
    ("ASGD", dict(lr=0.05, t0=2, weight_decay=0.1, maximize=True, foreach=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
    ("Rprop", dict(lr=0.05, maximize=True, foreach=False)),
    ("Rprop", dict(lr=ember.tensor(0.02), step_sizes=(0.01, 1))),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ELEMENTWISE, ids=_case_id)
def test_elementwise_trajectory(case: tuple, dtype: Any) -> None:
    name, kw = case
    ep, tp, eo, to, init = _pair(name, kw, ALL, dtype, 10)
    _close(ep, tp, dtype)
    assert max(np.abs(_np(p) - a).max() for p, a in zip(ep, init)) > 1e-2  # they moved
    _check_state(eo, to, dtype)


@pytest.mark.parametrize("case", ELEMENTWISE[1:7] + ELEMENTWISE[8:10], ids=_case_id)
def test_elementwise_state_dict_round_trips(case: tuple) -> None:
    _round_trips(case[0], case[1], ALL, np.float64)


@pytest.mark.parametrize("name", ["ASGD", "Rprop"])
def test_complex_parameters_as_real_pairs(name: str) -> None:
    rng = np.random.default_rng(5)
    z0 = (rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))).astype(np.complex64)
    out = []
    for lib in (ember, torch):
        p = lib.tensor(z0.copy(), requires_grad=True)
        opt = getattr(lib.optim, name)([p], lr=0.05, **({"t0": 1} if name == "ASGD" else {}))
        for k in range(6):
            z = p.detach().numpy()
            p.grad = lib.tensor((z * (1 + 0.1 * k) + 0.2j).astype(np.complex64))
            opt.step()
        out.append((p.detach().numpy(), {k: _np(v) for k, v in opt.state[p].items()}))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-6, atol=1e-7)
    for key, tv in out[1][1].items():
        assert out[0][1][key].dtype == tv.dtype, key
        np.testing.assert_allclose(out[0][1][key], tv, rtol=1e-6, atol=1e-7, err_msg=key)


def test_asgd_rprop_refuse_as_pytorch() -> None:
    _refusals("ASGD", [dict(lr=-0.1), dict(weight_decay=-1.0)])
    _refusals("Rprop", [dict(lr=-0.1), dict(etas=(1.0, 1.2)), dict(etas=(0.5, 1.0)),
                        dict(etas=(0.0, 2.0))])


@pytest.mark.parametrize("name", ["ASGD", "Rprop"])
def test_sparse_gradient_refused(name: str) -> None:
    emb = ember.nn.Embedding(5, 3, sparse=True)
    emb(ember.tensor([1, 2])).sum().backward()
    opt = getattr(eopt, name)(emb.parameters())
    with pytest.raises(RuntimeError, match="does not support sparse gradients"):
        opt.step()


def test_asgd_defaults_and_groups_as_pytorch() -> None:
    for name in ("ASGD", "Rprop"):
        e = getattr(eopt, name)([ember.zeros(2, requires_grad=True)])
        t = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)])
        assert _groups(e.state_dict()) == _groups(t.state_dict())
        assert repr(e) == repr(t)


# ---------------------------------------------------------------------------------------------
# Adafactor

ADAFACTOR = [
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, weight_decay=0.1)),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, d=2.0, eps=(1e-20, 1e-2))),
    ("Adafactor", dict(lr=0.05, maximize=True, foreach=False)),
    ("Adafactor", dict(lr=ember.tensor(0.03), weight_decay=0.01)),
]


def test_adafactor_foreach_accepted() -> None:
    """PyTorch's multi-tensor Adafactor rounds a little differently from its (and ember's)
    per-tensor one; ember accepts the flag and takes the per-tensor steps."""
    ep, tp, _, _, _ = _pair("Adafactor", dict(lr=0.05, foreach=True), ALL, np.float64, 10)
    _close(ep, tp, np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ADAFACTOR, ids=_case_id)
def test_adafactor_trajectory(case: tuple, dtype: Any) -> None:
    name, kw = case
    ep, tp, eo, to, init = _pair(name, kw, ALL + [(3, 1, 5)], dtype, 10)
    _close(ep, tp, dtype)
    assert max(np.abs(_np(p) - a).max() for p, a in zip(ep, init)) > 1e-2
    _check_state(eo, to, dtype)
    assert tuple(eo.state[ep[3]]["row_var"].shape) == (2, 3, 1)
    assert tuple(eo.state[ep[3]]["col_var"].shape) == (2, 1, 4)


@pytest.mark.parametrize("case", ADAFACTOR[1:4], ids=_case_id)
def test_adafactor_state_dict_round_trips(case: tuple) -> None:
    _round_trips(case[0], case[1], ALL, np.float64)
    _round_trips(case[0], case[1], ALL, np.float32)


def test_adafactor_refuses_as_pytorch() -> None:
    _refusals("Adafactor", [dict(lr=-1.0), dict(beta2_decay=0.5), dict(eps=(-1.0, 1e-3)),
                            dict(eps=(None, -1.0)), dict(d=0.5), dict(weight_decay=-0.1),
                            dict(lr=ember.tensor([0.1, 0.2]))])
    for lib in (ember, torch):
        p = lib.zeros(2, dtype=lib.complex64, requires_grad=True)
        p.grad = lib.ones(2, dtype=lib.complex64)
        with pytest.raises(RuntimeError, match="complex"):
            lib.optim.Adafactor([p]).step()


def test_adafactor_loaded_factors_must_fit() -> None:
    p = ember.zeros(3, 4, requires_grad=True)
    opt = eopt.Adafactor([p])
    p.grad = ember.ones(3, 4)
    opt.step()
    sd = opt.state_dict()
    q = ember.zeros(4, 3, requires_grad=True)
    opt2 = eopt.Adafactor([q])
    opt2.load_state_dict(sd)
    q.grad = ember.ones(4, 3)
    with pytest.raises(RuntimeError, match="row_var"):
        opt2.step()


# ---------------------------------------------------------------------------------------------
# Muon (its Newton-Schulz iteration runs in bfloat16, as PyTorch's)

MATRICES = [(4, 6), (6, 4), (5, 5), (3, 8)]
MUON = [
    ("Muon", dict()),
    ("Muon", dict(lr=0.02, momentum=0.9, weight_decay=0.01)),
    ("Muon", dict(lr=0.02, nesterov=False, adjust_lr_fn="match_rms_adamw")),
    ("Muon", dict(lr=0.02, momentum=0.3, ns_steps=3, eps=1e-5, adjust_lr_fn="original")),
    ("Muon", dict(lr=0.02, ns_coefficients=(2.0, -1.5, 0.5), weight_decay=0.0)),
    ("Muon", dict(lr=ember.tensor(0.02))),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", MUON, ids=_case_id)
def test_muon_trajectory(case: tuple, dtype: Any) -> None:
    name, kw = case
    ep, tp, eo, to, init = _pair(name, kw, MATRICES, dtype, 8, seed=1)
    _close(ep, tp, dtype)
    assert max(np.abs(_np(p) - a).max() for p, a in zip(ep, init)) > 5e-3
    _check_state(eo, to, dtype)


def test_newton_schulz_is_pytorchs_bfloat16_iteration() -> None:
    from torch.optim._muon import _zeropower_via_newtonschulz

    from ember.optim._muon import _newton_schulz

    rng = np.random.default_rng(0)
    for shape in [(4, 6), (6, 4), (5, 5), (3, 8), (1, 7)]:
        g = rng.standard_normal(shape).astype(np.float32)
        want = _zeropower_via_newtonschulz(torch.tensor(g), (3.4445, -4.775, 2.0315), 5, 1e-7)
        got = _newton_schulz(g, (3.4445, -4.775, 2.0315), 5, 1e-7)
        np.testing.assert_array_equal(got, want.float().numpy())
    # roughly orthogonal: the singular values are near 1 (the iteration's design: 0.5-1.5)
    s = np.linalg.svd(_newton_schulz(rng.standard_normal((8, 16)), (3.4445, -4.775, 2.0315),
                                     5, 1e-7), compute_uv=False)
    assert 0.5 < s.min() and s.max() < 1.5


@pytest.mark.parametrize("case", MUON[1:4], ids=_case_id)
def test_muon_state_dict_round_trips(case: tuple) -> None:
    _round_trips(case[0], case[1], MATRICES, np.float32)


def test_muon_refuses_as_pytorch() -> None:
    _refusals("Muon", [dict(lr=-1.0), dict(momentum=-0.1), dict(weight_decay=-1.0),
                       dict(adjust_lr_fn="bogus"), dict(lr=ember.tensor([0.1, 0.2]))])
    _refusals("Muon", [dict()], params=[torch.zeros(3, requires_grad=True)])
    _refusals("Muon", [dict()], params=[torch.zeros(2, 3, 4, requires_grad=True)])
    for kw, grad_shape in [(dict(ns_steps=100), (2, 3)), (dict(ns_coefficients=(1.0, 2.0)),
                                                          (2, 3))]:
        for lib in (ember, torch):
            p = lib.zeros(2, 3, requires_grad=True)
            p.grad = lib.ones(*grad_shape)
            with pytest.raises(ValueError):
                lib.optim.Muon([p], **kw).step()
    for lib in (ember, torch):
        p = lib.zeros(2, 3, dtype=lib.complex64, requires_grad=True)
        p.grad = lib.ones(2, 3, dtype=lib.complex64)
        with pytest.raises(RuntimeError, match="complex"):
            lib.optim.Muon([p]).step()
    emb = ember.nn.Embedding(5, 3, sparse=True)
    emb(ember.tensor([1, 2])).sum().backward()
    with pytest.raises(RuntimeError, match="does not support sparse gradients"):
        eopt.Muon(emb.parameters()).step()


# ---------------------------------------------------------------------------------------------
# learning-rate schedulers drive the new optimizers


@pytest.mark.parametrize("name,kw", [("ASGD", dict(lr=0.05, t0=2)), ("Rprop", dict(lr=0.05)),
                                     ("Adafactor", dict(lr=0.05, weight_decay=0.1)),
                                     ("Muon", dict(lr=0.05))])
def test_schedulers_drive_them(name: str, kw: dict) -> None:
    shapes = MATRICES if name == "Muon" else ALL
    init, noise = _problem(shapes, 8, 7)
    out = []
    for lib in (ember, torch):
        ps = _params(lib, init, np.float32)
        opt = getattr(lib.optim, name)(ps, **kw)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=8,
                                                  cycle_momentum=name == "Muon")
        lrs = []
        for k in range(8):
            _steps(lib, opt, ps, noise, range(k, k + 1), np.float32)
            sched.step()
            lrs.append(sched.get_last_lr()[0])
        out.append((ps, lrs))
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-12)
    _close(out[0][0], out[1][0], np.float32)


# ---------------------------------------------------------------------------------------------
# swa_utils


def _nets() -> tuple[Any, Any]:
    """The same small model with BatchNorm in both libraries (float64)."""
    def build(lib: Any) -> Any:
        return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.ReLU(),
                                 lib.nn.Linear(4, 2)).double()

    torch.manual_seed(0)
    t = build(torch)
    e = build(ember)
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()})
    return e, t


def _assert_state_equal(e: Any, t: Any, rtol: float = 1e-12) -> None:
    es, ts = e.state_dict(), t.state_dict()
    assert list(es) == list(ts)
    for k, tv in ts.items():
        assert str(es[k].dtype) == str(tv.dtype), k
        np.testing.assert_allclose(_np(es[k]), tv.numpy(), rtol=rtol, atol=1e-14, err_msg=k)


def _train(lib: Any, model: Any, avg: Any, steps: int, seed: int = 0) -> None:
    """Move the weights and BatchNorm statistics; average after each move."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        with lib.no_grad():
            for p in model.parameters():
                p.mul_(0.9).add_(lib.tensor(rng.standard_normal(tuple(p.shape))))
        model(lib.tensor(rng.standard_normal((6, 3))))  # training mode: statistics move
        avg.update_parameters(model)


SWA_CASES = {
    "swa": lambda m: dict(),
    "swa_buffers": lambda m: dict(use_buffers=True),
    "ema_avg_fn": lambda m: dict(avg_fn=m.optim.swa_utils.get_ema_avg_fn(0.9)),
    "swa_avg_fn_buffers": lambda m: dict(avg_fn=m.optim.swa_utils.get_swa_avg_fn(),
                                         use_buffers=True),
    "ema_multi": lambda m: dict(multi_avg_fn=m.optim.swa_utils.get_ema_multi_avg_fn(0.8)),
    "ema_multi_buffers": lambda m: dict(
        multi_avg_fn=m.optim.swa_utils.get_ema_multi_avg_fn(0.8), use_buffers=True),
    "swa_multi": lambda m: dict(multi_avg_fn=m.optim.swa_utils.get_swa_multi_avg_fn()),
}


@pytest.mark.parametrize("case", list(SWA_CASES))
def test_averaged_model_as_pytorch(case: str) -> None:
    e, t = _nets()
    ea = ember.optim.swa_utils.AveragedModel(e, **SWA_CASES[case](ember))
    ta = torch.optim.swa_utils.AveragedModel(t, **SWA_CASES[case](torch))
    assert repr(ea) == repr(ta)
    _train(ember, e, ea, 4)
    _train(torch, t, ta, 4)
    _assert_state_equal(e, t, rtol=1e-10)
    _assert_state_equal(ea, ta, rtol=1e-10)
    assert int(ea.n_averaged) == 4 and ea.n_averaged.dtype == ember.int64
    # the averaged model is a model: same forward (eval mode, with its statistics)
    x = np.random.default_rng(9).standard_normal((5, 3))
    ea.eval()
    ta.eval()
    np.testing.assert_allclose(_np(ea(ember.tensor(x))), ta(torch.tensor(x)).detach().numpy(),
                               rtol=1e-10)


def test_averaged_model_refusals_as_pytorch() -> None:
    e, t = _nets()
    for lib, m in ((ember, e), (torch, t)):
        su = lib.optim.swa_utils
        with pytest.raises(AssertionError):
            su.AveragedModel(m, avg_fn=su.get_swa_avg_fn(), multi_avg_fn=su.get_swa_multi_avg_fn())
        for bad in (-0.1, 1.5):
            with pytest.raises(ValueError):
                su.get_ema_avg_fn(bad)
            with pytest.raises(ValueError):
                su.get_ema_multi_avg_fn(bad)
        # the SWA list average refuses integer buffers (num_batches_tracked) as PyTorch does
        avg = su.AveragedModel(m, multi_avg_fn=su.get_swa_multi_avg_fn(), use_buffers=True)
        avg.update_parameters(m)
        with pytest.raises(RuntimeError, match="addcdiv"):
            avg.update_parameters(m)


def test_update_bn_as_pytorch() -> None:
    e, t = _nets()
    ea, ta = ember.optim.swa_utils.AveragedModel(e), torch.optim.swa_utils.AveragedModel(t)
    _train(ember, e, ea, 3)
    _train(torch, t, ta, 3)
    rng = np.random.default_rng(4)
    batches = [(rng.standard_normal((7, 3)), rng.standard_normal(7)) for _ in range(3)]
    ea.eval()
    ta.eval()
    ember.optim.swa_utils.update_bn([(ember.tensor(x), ember.tensor(y)) for x, y in batches], ea)
    torch.optim.swa_utils.update_bn([[torch.tensor(x), torch.tensor(y)] for x, y in batches], ta)
    _assert_state_equal(ea, ta, rtol=1e-10)
    assert not ea.training and ea.module[1].momentum == 0.1
    assert int(ea.module[1].num_batches_tracked) == 3
    # bare tensors as batches, and a model without BatchNorm (nothing to do)
    ember.optim.swa_utils.update_bn([ember.tensor(x) for x, _ in batches], e, device="cpu")
    torch.optim.swa_utils.update_bn([torch.tensor(x) for x, _ in batches], t, device="cpu")
    _assert_state_equal(e, t, rtol=1e-10)
    ember.optim.swa_utils.update_bn([ember.ones(2, 3)], ember.nn.Linear(3, 1))


@pytest.mark.parametrize("kw", [dict(swa_lr=0.05), dict(swa_lr=0.05, anneal_strategy="linear"),
                                dict(swa_lr=[0.01, 0.2], anneal_epochs=3),
                                dict(swa_lr=0.02, anneal_epochs=0)])
def test_swalr_as_pytorch(kw: dict) -> None:
    out = []
    for lib in (ember, torch):
        p1, p2 = lib.zeros(2, requires_grad=True), lib.zeros(2, requires_grad=True)
        opt = lib.optim.SGD([{"params": [p1]}, {"params": [p2], "lr": 0.3}], lr=0.5)
        before = lib.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        lrs = []
        for _ in range(3):
            opt.step()
            before.step()
        sched = lib.optim.swa_utils.SWALR(opt, **kw)
        lrs.append(sched.get_last_lr())
        for _ in range(14):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr())
        sd = sched.state_dict()
        assert "anneal_func" not in sd and "optimizer" not in sd
        again = lib.optim.swa_utils.SWALR(opt, swa_lr=1.0, anneal_strategy="linear")
        again.load_state_dict(sd)
        assert again.anneal_func is again._cosine_anneal or kw.get("anneal_strategy")
        opt.step()
        again.step()
        lrs.append(again.get_last_lr())
        out.append((np.array(lrs, dtype=np.float64), [g["swa_lr"] for g in opt.param_groups]))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12)
    assert out[0][1] == out[1][1]


def test_swalr_refusals_as_pytorch() -> None:
    for lib in (ember, torch):
        opt = lib.optim.SGD([lib.zeros(2, requires_grad=True)], lr=0.1)
        for kw in (dict(anneal_strategy="exp"), dict(anneal_epochs=-1),
                   dict(anneal_epochs=2.5), dict(swa_lr=[0.1, 0.2])):
            with pytest.raises(ValueError):
                lib.optim.swa_utils.SWALR(opt, **{"swa_lr": 0.05, **kw})


def test_swa_utils_paths() -> None:
    """``torch.optim.swa_utils`` is an attribute after ``import ember as torch``, and
    ``from torch.optim.swa_utils import AveragedModel`` works under ``ember run``."""
    import subprocess
    import sys
    import textwrap

    assert ember.optim.swa_utils.AveragedModel is not None
    assert set(torch.optim.swa_utils.__all__) <= set(dir(ember.optim.swa_utils))
    code = textwrap.dedent("""
        import torch
        from torch.optim.swa_utils import AveragedModel, SWALR, update_bn
        from torch.optim import swa_utils
        import torch.optim.swa_utils as su
        m = torch.nn.Linear(2, 2)
        a = AveragedModel(m, multi_avg_fn=su.get_ema_multi_avg_fn(0.9))
        a.update_parameters(m)
        print(type(a).__module__, swa_utils is su, type(torch.optim.Adafactor).__name__)
    """)
    res = subprocess.run([sys.executable, "-m", "ember", "run", "-c", code],
                         capture_output=True, text=True, timeout=300)
    if res.returncode != 0 and "-c" in res.stderr:  # (no -c: run it from a file)
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(code)
        res = subprocess.run([sys.executable, "-m", "ember", "run", f.name],
                             capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["torch.optim.swa_utils", "True", "type"]


# ---------------------------------------------------------------------------------------------
# swap_in_optimizer_params_and_state


def test_swap_in_optimizer_params_and_state_as_pytorch() -> None:
    init, noise = _problem([(3,), (2, 2)], 4, 11)
    out = []
    for lib in (ember, torch):
        ps = _params(lib, init, np.float64)
        opt = lib.optim.Adam(ps, lr=0.1)
        with pytest.raises(RuntimeError, match="initialized optimizer state"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {}, opt.state_dict()):
                pass
        _steps(lib, opt, ps, noise, range(2), np.float64)
        before = [_np(p).copy() for p in ps]
        sd = copy.deepcopy(opt.state_dict())
        sd["param_groups"][0]["lr"] = 0.5
        swap = {f"p{i}": lib.tensor(_np(p).copy() + 1.0) for i, p in enumerate(ps)}
        for i, p in enumerate(swap.values()):
            p.grad = lib.tensor(noise[2][i])
        with lib.optim.swap_in_optimizer_params_and_state(opt, swap, sd):
            assert opt.param_groups[0]["lr"] == 0.5
            assert opt.param_groups[0]["params"][0] is swap["p0"]
            opt.step()
        assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["params"][0] is ps[0]
        for p, b in zip(ps, before):  # the live parameters did not move
            np.testing.assert_array_equal(_np(p), b)
        out.append(([_np(p) for p in swap.values()], float(sd["state"][0]["step"]),
                    _np(sd["state"][1]["exp_avg"]), float(opt.state[ps[0]]["step"])))
        bad = copy.deepcopy(opt.state_dict())
        bad["param_groups"][0]["extra"] = 1
        with pytest.raises(RuntimeError, match="Keys only in swap-in"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, swap, bad):
                pass
        bad = copy.deepcopy(opt.state_dict())
        bad["state"][7] = {}
        with pytest.raises(RuntimeError, match="extra keys"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, swap, bad):
                pass
        with pytest.raises(RuntimeError, match="ordering"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"a": ps[0]},
                                                              opt.state_dict()):
                pass
    for a, b in zip(out[0][0], out[1][0]):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert out[0][1:2] == out[1][1:2] == (3.0,)  # the swapped-in state advanced in place
    np.testing.assert_allclose(out[0][2], out[1][2], rtol=1e-12)
    assert out[0][3] == out[1][3] == 2.0  # the live state did not


# ---------------------------------------------------------------------------------------------
# temporaries: the steps work in place on the optimizer's own buffers

PEAKS = [
    # (class, options, shape, the most temporaries a step may build, in parameter sizes)
    ("ASGD", dict(), (1 << 21,), 1.1),
    ("ASGD", dict(t0=0, weight_decay=0.1), (1 << 21,), 2.1),
    ("Rprop", dict(), (1 << 21,), 1.6),
    ("Adafactor", dict(), (1 << 21,), 1.1),
    ("Adafactor", dict(weight_decay=0.1, maximize=True), (1024, 2048), 1.1),
    # x and the next x (float32), Gram matrix and polynomial: 2 + 2 * 1024^2 / (1024 * 2048)
    ("Muon", dict(), (1024, 2048), 3.1),
    ("Muon", dict(nesterov=False), (2048, 1024), 3.1),
]


@pytest.mark.parametrize("case", PEAKS, ids=lambda c: f"{c[0]}-{c[2]}-{c[1]}")
def test_step_temporaries(case: tuple) -> None:
    from helpers import peak_bytes

    name, kw, shape, most = case
    p = ember.randn(*shape, requires_grad=True)
    p.grad = ember.randn(*shape)
    opt = getattr(eopt, name)([p], **kw)
    opt.step()
    opt.step()
    assert peak_bytes(opt.step) < most * p.numel() * 4 + (1 << 20)
