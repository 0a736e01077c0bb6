"""Internals that libraries reach, each compared with PyTorch: ``torch._segment_reduce``, the
COO/CSR index conversions, ``IterDataPipe``/``functional_datapipe``, and the ``nn.Module`` /
``Optimizer`` internals that wrappers subclass."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

torch = pytest.importorskip("torch")


# ---------------------------------------------------------------------------------------------
# _segment_reduce

_REDUCES = ["sum", "mean", "max", "min", "prod"]


def _both(arr: np.ndarray, **kw: object) -> tuple:
    """The same segment reduction on ember and torch; returns (ember out, torch out, ember grad,
    torch grad) for one fixed cotangent."""
    out = []
    for m in (ember, torch):
        x = m.tensor(arr, requires_grad=True)
        k = {a: (m.tensor(v) if isinstance(v, np.ndarray) else v) for a, v in kw.items()}
        y = m._segment_reduce(x, **k)
        ct = m.tensor(np.linspace(1.0, 2.0, y.numel()).reshape(tuple(y.shape)).astype(arr.dtype))
        (g,) = m.autograd.grad(y, x, ct)
        out.append((y.detach().numpy(), g.numpy(), str(y.dtype)))
    (ye, ge, de), (yt, gt, dt) = out
    assert de.split(".")[-1] == dt.split(".")[-1]
    np.testing.assert_allclose(ye, yt, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ge, gt, rtol=1e-6, atol=1e-6)
    return ye, ge


@pytest.mark.parametrize("reduce", _REDUCES)
@pytest.mark.parametrize("initial", [None, 0.0, 2.5])
def test_segment_reduce_lengths_with_ties_empty_and_initial(reduce: str, initial: object) -> None:
    # ties (3, 3), a zero (prod's exact gradient), and an empty segment
    arr = np.array([[1.0, 2.0], [3.0, 2.0], [3.0, 6.0], [0.0, 8.0], [4.0, -1.0]])
    lengths = np.array([1, 0, 3, 1])
    _both(arr, reduce=reduce, lengths=lengths, initial=initial)
    _both(arr.astype(np.float32), reduce=reduce, lengths=lengths, initial=initial)


@pytest.mark.parametrize("reduce", _REDUCES)
def test_segment_reduce_offsets_and_other_axes(reduce: str) -> None:
    rng = np.random.default_rng(0)
    arr = rng.standard_normal((2, 6, 3))
    arr[0, 1, 2] = arr[0, 0, 2]  # a tie
    lengths = np.array([[2, 0, 4], [1, 5, 0]])
    _both(arr, reduce=reduce, lengths=lengths, axis=1)
    _both(arr, reduce=reduce, lengths=lengths.astype(np.int32), axis=-2)
    offsets = np.array([[0, 2, 2, 6], [0, 1, 6, 6]])
    _both(arr, reduce=reduce, offsets=offsets, axis=1)
    last = np.array([[[1, 2], [3, 0], [0, 3], [1, 2], [2, 1], [3, 0]]] * 2)
    _both(arr, reduce=reduce, lengths=last, axis=2)
    _both(arr[0], reduce=reduce, offsets=np.array([0, 2, 5]), axis=0)  # offsets need not reach N


@pytest.mark.parametrize("reduce", _REDUCES)
def test_segment_reduce_gradcheck_float64(reduce: str) -> None:
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.uniform(0.5, 2.0, (5, 3)), requires_grad=True)
    lengths = ember.tensor([2, 0, 3])
    assert gradcheck(lambda t: ember._segment_reduce(t, reduce, lengths=lengths, initial=1.5),
                     (x,))
    y = ember.tensor(rng.uniform(0.5, 2.0, (2, 4, 3)), requires_grad=True)
    assert gradcheck(
        lambda t: ember._segment_reduce(t, reduce, offsets=ember.tensor([[0, 1, 4], [0, 3, 4]]),
                                        axis=1), (y,))


def test_segment_reduce_dtypes_names_and_errors() -> None:
    for name in ("float16", "bfloat16", "float32"):
        e = ember._segment_reduce(ember.ones(4, dtype=getattr(ember, name)), "amax",
                                  lengths=ember.tensor([1, 3]))
        assert e.dtype == getattr(ember, name)
    assert ember.segment_reduce is ember._segment_reduce
    y = ember._segment_reduce(ember.ones(3, requires_grad=True), "sum", lengths=ember.tensor([3]))
    assert type(y.grad_fn).__name__ == type(
        torch._segment_reduce(torch.ones(3, requires_grad=True), "sum",
                              lengths=torch.tensor([3])).grad_fn).__name__
    x = np.arange(12.0).reshape(6, 2)
    bad = [
        dict(reduce="foo", lengths=np.array([2, 4])),
        dict(reduce="sum"),
        dict(reduce="sum", indices=np.array([0, 2])),
        dict(reduce="sum", lengths=np.array([2, 3])),
        dict(reduce="sum", lengths=np.array([2, -1, 5])),
        dict(reduce="sum", lengths=np.array([2, 4]), axis=1),
        dict(reduce="sum", offsets=np.array([0, 4, 2, 6])),
    ]
    for kw in bad:
        errs = []
        for m in (ember, torch):
            k = {a: (m.tensor(v) if isinstance(v, np.ndarray) else v) for a, v in kw.items()}
            with pytest.raises(Exception) as info:
                m._segment_reduce(m.tensor(x), **k)
            errs.append(info.type)
        assert errs[0] is errs[1], (kw, errs)
    for m in (ember, torch):
        with pytest.raises(NotImplementedError):
            m._segment_reduce(m.tensor([1, 2, 3]), "sum", lengths=m.tensor([3]))
        with pytest.raises(NotImplementedError):
            m._segment_reduce(m.tensor([1.0, 2.0]), "sum", lengths=m.tensor([1.0, 1.0]))


# ---------------------------------------------------------------------------------------------
# COO <-> CSR index conversions


def _same(fn_name: str, *arrays: np.ndarray, **kw: object) -> None:
    outs = []
    for m in (ember, torch):
        r = getattr(m, fn_name)(*(m.tensor(a) for a in arrays), **kw)
        outs.append((r.numpy(), str(r.dtype).split(".")[-1]))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    assert outs[0][1] == outs[1][1]


@pytest.mark.parametrize("out_int32", [False, True])
def test_convert_indices_coo_to_csr(out_int32: bool) -> None:
    f = "_convert_indices_from_coo_to_csr"
    for rows, size in (([0, 0, 1, 3, 3], 5), ([0, 0, 1, 3, 3], 4), ([], 3), ([], 0)):
        for dt in (np.int64, np.int32, np.int16):
            _same(f, np.array(rows, dtype=dt), size, out_int32=out_int32)
    for m in (ember, torch):
        with pytest.raises(NotImplementedError):
            getattr(m, f)(m.tensor([0.0, 1.0]), 3)
        with pytest.raises(RuntimeError):
            getattr(m, f)(m.tensor([[0, 1], [0, 1]]), 3)
    out = ember.empty(0, dtype=ember.int64)
    ember._convert_indices_from_coo_to_csr(ember.tensor([0, 1, 1]), 2, out=out)
    assert out.tolist() == [0, 1, 3]


@pytest.mark.parametrize("out_int32", [False, True])
@pytest.mark.parametrize("transpose", [False, True])
def test_convert_indices_csr_to_coo(out_int32: bool, transpose: bool) -> None:
    f = "_convert_indices_from_csr_to_coo"
    kw = dict(out_int32=out_int32, transpose=transpose)
    _same(f, np.array([0, 2, 2, 5]), np.array([0, 1, 2, 0, 1]), **kw)
    _same(f, np.array([0, 2, 2, 5], dtype=np.int32), np.array([0, 1, 2, 0, 1], np.int32), **kw)
    _same(f, np.array([0]), np.array([], dtype=np.int64), **kw)
    _same(f, np.array([[0, 2, 3], [0, 1, 3]]), np.array([[0, 1, 2], [0, 1, 1]]), **kw)
    for m in (ember, torch):
        with pytest.raises(NotImplementedError):
            getattr(m, f)(m.tensor([0.0, 2.0]), m.tensor([0, 1]))


# ---------------------------------------------------------------------------------------------
# IterDataPipe / MapDataPipe / functional_datapipe


def _double(x: int) -> int:
    return 2 * x


def _is_mult3(x: int) -> bool:
    return x % 3 == 0


def _pipelines(m: object) -> dict:
    """The same pipelines built on ``m.utils.data`` (ember or torch)."""
    from importlib import import_module

    it = import_module(f"{m.__name__}.utils.data.datapipes.iter")
    mp = import_module(f"{m.__name__}.utils.data.datapipes.map")
    dp = it.IterableWrapper(range(10))
    pairs = it.IterableWrapper([(1, 2), (3, 4)])
    seq = mp.SequenceWrapper([1, 2, 3, 4, 5])
    return {
        "batch": (list(dp.batch(3)), len(dp.batch(3)), len(dp.batch(3, drop_last=True))),
        "map_filter": list(dp.map(_double).filter(_is_mult3)),
        "cols": (list(pairs.map(_double, input_col=0)),
                 list(pairs.map(_double, input_col=1, output_col=-1))),
        "unbatch": list(dp.batch(4).batch(2).unbatch(unbatch_level=2)),
        "collate": [t.tolist() for t in dp.batch(4).collate()],
        "concat_zip": (list(dp.concat(it.IterableWrapper([7]))),
                       list(dp.zip(it.IterableWrapper("abc"))), len(dp.zip(it.IterableWrapper("ab")))),
        "shuffle": (sorted(dp.shuffle()), len(dp.shuffle()), list(dp.shuffle().set_shuffle(False))),
        "sharding": list(dp.sharding_filter()),
        "map_style": (seq[1], len(seq), [seq.map(_double)[i] for i in range(5)],
                      list(seq.batch(2)[2]), len(seq.batch(2)), len(seq.batch(2, drop_last=True)),
                      sorted(seq.shuffle()), seq.concat(seq)[6], seq.zip(seq)[4]),
        "names": (repr(dp), repr(dp.batch(2)), type(list(dp.batch(2))[0]).__name__,
                  sorted(set(m.utils.data.IterDataPipe.functions) & {
                      "batch", "collate", "concat", "filter", "map", "sharding_filter", "shuffle",
                      "unbatch", "zip"}),
                  sorted(m.utils.data.MapDataPipe.functions)),
    }


def test_datapipes_match_torch() -> None:
    e, t = _pipelines(ember), _pipelines(torch)
    for key in e:
        assert e[key] == t[key], key


def test_functional_datapipe_registers_a_form() -> None:
    import pickle

    from ember.utils.data import IterableDataset, IterDataPipe, MapDataPipe, functional_datapipe
    from ember.utils.data.datapipes.iter import IterableWrapper

    assert issubclass(IterDataPipe, IterableDataset)
    assert issubclass(MapDataPipe, ember.utils.data.Dataset)

    @functional_datapipe("_ember_test_times")
    class Times(IterDataPipe):
        def __init__(self, source: IterDataPipe, k: int = 2) -> None:
            self.source, self.k = source, k

        def __iter__(self):  # noqa: ANN204
            for x in self.source:
                yield x * self.k

    dp = IterableWrapper(range(4))
    assert list(dp._ember_test_times(k=3)) == [0, 3, 6, 9]
    assert list(dp.batch(2)._ember_test_times()) == [[0, 1, 0, 1], [2, 3, 2, 3]]
    assert isinstance(dp._ember_test_times(), Times)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        dp.nothing  # noqa: B018
    with pytest.raises(Exception, match="already taken"):
        functional_datapipe("_ember_test_times")(Times)
    again = pickle.loads(pickle.dumps(dp.map(_double).batch(2)))
    assert list(again) == [[0, 2], [4, 6]]
    loader = ember.utils.data.DataLoader(dp.map(_double), batch_size=2)
    assert [b.tolist() for b in loader] == [[0, 2], [4, 6]]


# ---------------------------------------------------------------------------------------------
# nn.Module / Optimizer internals


def test_replicate_for_data_parallel_as_torch() -> None:
    for m in (ember, torch):
        bn = m.nn.Sequential(m.nn.Linear(2, 2), m.nn.BatchNorm1d(2))
        r = bn._replicate_for_data_parallel()
        assert type(r) is type(bn) and r is not bn and r._is_replica
        assert r._parameters == {} and r._modules == bn._modules
        assert r._modules is not bn._modules and r._buffers is not bn._buffers
        assert r[1] is bn[1]  # children shared, as PyTorch's (replicate() replaces them)
        leaf = bn[1]._replicate_for_data_parallel()
        assert leaf._parameters == {} and leaf.running_mean is bn[1].running_mean
        assert not getattr(bn, "_is_replica", False)


def test_lazy_module_pickles_with_its_load_state_dict_pre_hook() -> None:
    import copy
    import pickle

    for m in (ember, torch):
        lazy = m.nn.LazyLinear(3)
        again = pickle.loads(pickle.dumps(lazy))
        again(m.ones(2, 4))
        assert tuple(again.weight.shape) == (3, 4)
        other = copy.deepcopy(lazy)
        other.load_state_dict(m.nn.Linear(4, 3).state_dict())
        assert tuple(other.weight.shape) == (3, 4)


def _hook_log(m: object) -> list:
    """What the step hooks see, for an optimizer subclass that overrides step. (It derives from
    Optimizer, not SGD: PyTorch runs the hooks a second time when an override calls an SGD.step
    that an earlier SGD's construction already wrapped, so with SGD the log depends on what the
    process built before; ember runs them once either way.)"""
    log: list = []

    class Mine(m.optim.Optimizer):
        def __init__(self, params, lr):  # noqa: ANN001
            super().__init__(params, {"lr": lr})

        def step(self, closure=None):  # noqa: ANN001, ANN202
            log.append("step")
            with m.no_grad():
                for group in self.param_groups:
                    for q in group["params"]:
                        q.add_(q.grad, alpha=-group["lr"])

    p = m.nn.Parameter(m.ones(2))
    opt = Mine([p], lr=0.5)
    opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", a[0] is o, len(a), k)))
    opt.register_step_post_hook(lambda o, a, k: log.append(("post", a[0] is o, len(a), k)))
    p.grad = m.ones(2)
    opt.step()
    log.append(type(opt).step.hooked)
    log.append(opt._zero_grad_profile_name)
    log.append(p.detach().tolist())
    plain = m.optim.SGD([p], lr=0.5)
    plain.register_step_pre_hook(lambda o, a, k: log.append(("plain", a[0] is o, len(a))))
    plain.step()
    log.append(plain._zero_grad_profile_name)
    return log


def test_optimizer_step_patching_and_hooks_as_torch() -> None:
    assert _hook_log(ember) == _hook_log(torch)


def test_optimizer_internals_wrappers_call() -> None:
    for m in (ember, torch):
        p = m.nn.Parameter(m.ones(2))
        opt = m.optim.Adam([p])
        assert opt._optimizer_step_code() is None
        with pytest.deprecated_call():
            assert opt._cuda_graph_capture_health_check() is None
        opt._patch_step_function()  # twice: wraps nothing more
        assert opt._zero_grad_profile_name == "Optimizer.zero_grad#Adam.zero_grad"
        assert opt._warned_capturable_if_run_uncaptured is True
        wrapped = m.optim.Optimizer.profile_hook_step(lambda self, x: x + 1)
        assert wrapped(opt, 1) == 2
        a, b = m.ones(1), m.ones(1, dtype=m.float64)
        groups = m.optim.Optimizer._group_tensors_by_device_and_dtype([[a, b], [a, b]], True)
        assert {k[1]: (len(v[0][0]), v[1]) for k, v in groups.items()} == {
            m.float32: (1, [0]), m.float64: (1, [1])}
        proc = m.optim.Optimizer._process_value_according_to_param_policy
        assert proc(a, m.ones(1, dtype=m.float64), 0, [], "exp_avg").dtype == m.float32
        assert proc(a, m.tensor(3.0, dtype=m.float64), 0, [], "step").dtype == m.float64
