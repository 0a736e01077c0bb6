"""Names widely used PyTorch libraries touch while they import (issue "Nothing at import"), each
under ``import ember as torch`` and, where the alias matters, under ``ember run``, and each
against the installed PyTorch (and torchvision for ``FrozenBatchNorm2d``)."""

from __future__ import annotations

import collections
import collections.abc
import copy
import pickle
import subprocess
import sys
import textwrap
import typing
import warnings
from pathlib import Path

import numpy as np
import pytest
from vision_reference import real_torchvision

import ember
from ember._missing import NotImplementedYet

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent


def ember_run(tmp_path: Path, source: str, *python_flags: str) -> str:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    out = subprocess.run([sys.executable, *python_flags, "-m", "ember", "run", str(script)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


# -- the torch module itself ----------------------------------------------------------------

def test_torch_has_itself_as_an_attribute():
    assert torch.torch is torch
    assert ember.torch is ember


def test_under_ember_run_every_name_imports_and_probes_are_silent(tmp_path):
    """One script, run with -W error (a warning is an error, as under pytest's filterwarnings):
    the alias names the module torch, keeps ember's spec, and every path imports."""
    out = ember_run(tmp_path, """
        import importlib, pickle, torch
        print(torch.__name__, torch.__spec__.name, torch.torch is torch)
        print(hasattr(torch, "missing_name"), hasattr(torch, "fft_not_a_name"))
        from torch.fx import wrap
        from torch.jit.annotations import BroadcastingList2, Optional, Tuple, List
        from torch.utils._foreach_utils import _group_tensors_by_device_and_dtype
        from torch.utils.hooks import RemovableHandle
        from torch.utils.data import Sampler, Dataset, IterableDataset
        from torch.utils.data.dataloader import (_BaseDataLoaderIter,
            _MultiProcessingDataLoaderIter, _SingleProcessDataLoaderIter)
        from torch.futures import Future, collect_all, wait_all
        from torch._tensor_str import _tensor_str
        from torchvision.ops.misc import FrozenBatchNorm2d
        import torch.distributed.rpc
        import torch._C
        import torch.nn.functional, torch.onnx, torch.cpu, torch.mps, torch.functional
        import torchvision.ops
        print(hasattr(torch.nn.functional, "missing_name"), hasattr(torchvision.ops, "zz"))
        print(getattr(torch._C, "_CudaDeviceProperties", None), torch._C._get_default_device())
        print(torch.distributed.rpc.is_available(), Sampler[List[int]].__origin__ is Sampler)
        print(type(torch.__config__.show()).__name__, torch.ops.aten.add.Tensor.name())
        print(pickle.loads(pickle.dumps(torch.ones(2))).tolist())
    """, "-W", "error")
    assert out.splitlines() == [
        "torch ember True", "False False", "False False", "None cpu", "False True", "str aten::add.Tensor",
        "[1.0, 1.0]"]


def test_plain_import_keeps_the_name_ember_and_uninstall_restores_it(tmp_path):
    code = ("import ember, ember._alias as a\n"
            "print(ember.__name__)\n"
            "a.install(); import torch; print(torch is ember, torch.__name__)\n"
            "a.uninstall(); print(ember.__name__, 'torch' in __import__('sys').modules)\n")
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["ember", "True torch", "ember False"]


def test_hasattr_on_a_missing_name_warns_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not hasattr(ember, "missing_name")
        assert not hasattr(ember.nn, "missing_name")


def test_new_modules_load_lazily():
    out = subprocess.run([sys.executable, "-c", "import sys, ember; print(sorted(m for m in ("
                          "'ember.fx', 'ember.futures', 'ember._C', 'ember.__config__', "
                          "'ember.ops._aten', 'ember.utils.hooks', 'ember.distributed.rpc') "
                          "if m in sys.modules))"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# -- torch.fx.wrap --------------------------------------------------------------------------

_WRAP_MODULE = """
def leaf(x):
    return x + 1

wrapped = lib.fx.wrap(leaf)
by_name = lib.fx.wrap("len")

def inner():
    return lib.fx.wrap(leaf)
"""


@pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])
def test_fx_wrap_returns_its_argument_and_records_it(lib):
    import importlib

    scope = {"lib": lib}
    exec(compile(_WRAP_MODULE, "<wrapped module>", "exec"), scope)
    assert scope["wrapped"] is scope["leaf"]
    assert scope["by_name"] == "len"
    registry = importlib.import_module(f"{lib.__name__}.fx._symbolic_trace")._wrapped_fns_to_patch
    assert registry[(id(scope), "leaf")] is scope
    assert registry[(id(scope), "len")] is scope
    with pytest.raises(NotImplementedError, match="top level of a module"):
        scope["inner"]()
    with pytest.raises(RuntimeError, match="Unsupported type for global function"):
        exec("lib.fx.wrap(3)", {"lib": lib})


def test_fx_names_ember_lacks_are_not_implemented_yet():
    with pytest.raises(NotImplementedYet, match="torch.fx.replace_pattern"):
        ember.fx.replace_pattern  # noqa: B018
    assert not hasattr(ember.fx, "not_a_torch_fx_name")


def test_tensor_attributes_ember_lacks_are_not_implemented_yet():
    """A PyTorch Tensor attribute ember lacks reads as NotImplementedYet and is recorded for
    ``ember run --report``; hasattr is False and dir() leaves it out, as for any absent name. No
    ``Tensor.__getattr__`` does it (that would slow every attribute read of every tensor)."""
    from ember import _missing
    from ember._tensor import _UNIMPLEMENTED

    assert "__getattr__" not in vars(ember.Tensor)
    t = ember.ones(2)
    name = "int_repr"  # a quantized-tensor method
    assert name in _UNIMPLEMENTED
    with pytest.raises(NotImplementedYet, match=f"torch.Tensor.{name}"):
        getattr(t, name)
    assert f"torch.Tensor.{name}" in _missing.touched
    assert not hasattr(t, name) and not hasattr(ember.Tensor, name) and name not in dir(t)
    with pytest.raises(AttributeError, match="'Tensor' object has no attribute 'not_torch'"):
        t.not_torch  # noqa: B018
    assert not any(hasattr(ember.Tensor, n) for n in _UNIMPLEMENTED)


# -- torchvision.ops.misc.FrozenBatchNorm2d -------------------------------------------------

def test_frozen_batch_norm_matches_torchvision():
    tv = real_torchvision()
    if tv is None:
        pytest.skip("real torchvision not installed")
    from ember.vision.ops import FrozenBatchNorm2d as EF
    from ember.vision.ops.misc import FrozenBatchNorm2d

    assert EF is FrozenBatchNorm2d
    TF = tv.ops.misc.FrozenBatchNorm2d
    e, t = FrozenBatchNorm2d(3, eps=1e-3), TF(3, eps=1e-3)
    assert repr(e) == repr(t) and repr(FrozenBatchNorm2d(5)) == repr(TF(5))
    assert list(e.state_dict()) == list(t.state_dict())
    assert list(e.parameters()) == [] and list(t.parameters()) == []
    for k, v in e.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), t.state_dict()[k].numpy())
        assert str(v.dtype) == str(t.state_dict()[k].dtype)
    rng = np.random.default_rng(0)
    stats = {"weight": rng.normal(size=3), "bias": rng.normal(size=3),
             "running_mean": rng.normal(size=3), "running_var": rng.uniform(0.5, 2, size=3)}
    t_sd = {k: torch.tensor(v, dtype=torch.float32) for k, v in stats.items()}
    e_sd = {k: ember.tensor(v, dtype=ember.float32) for k, v in stats.items()}
    t_sd["num_batches_tracked"] = torch.tensor(7)  # a BatchNorm2d checkpoint: dropped
    e_sd["num_batches_tracked"] = ember.tensor(7)
    t.load_state_dict(t_sd)
    e.load_state_dict(e_sd)
    assert "num_batches_tracked" in e_sd  # the caller's dict is left alone
    x = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    ey, ty = e(ember.tensor(x)), t(torch.tensor(x))
    assert str(ey.dtype) == str(ty.dtype) == "torch.float32"
    np.testing.assert_allclose(ey.numpy(), ty.numpy(), rtol=1e-6, atol=1e-6)
    e.train()
    assert e(ember.tensor(x)).requires_grad is False
    y64 = e(ember.tensor(x, dtype=ember.float64))
    assert str(y64.dtype) == str(t(torch.tensor(x, dtype=torch.float64)).dtype)
    # a BatchNorm2d's checkpoint loads into it
    bn_e, bn_t = ember.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    assert str(FrozenBatchNorm2d(3).load_state_dict(bn_e.state_dict())) == \
        str(TF(3).load_state_dict(bn_t.state_dict()))
    with pytest.raises(RuntimeError, match="weight"):
        FrozenBatchNorm2d(3).load_state_dict({k: v for k, v in e_sd.items() if k != "weight"})


# -- Generic datasets, samplers and DataLoader ------------------------------------------------

_DATA_CLASSES = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
                 "ChainDataset", "Subset", "Sampler", "SequentialSampler", "RandomSampler",
                 "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
                 "DistributedSampler", "DataLoader"]


@pytest.mark.parametrize("name", _DATA_CLASSES)
def test_data_classes_are_generic_as_pytorch(name):
    e, t = getattr(ember.utils.data, name), getattr(torch.utils.data, name)
    assert len(getattr(e, "__parameters__", ())) == len(getattr(t, "__parameters__", ()))
    assert [c.__name__ for c in e.__mro__] == [c.__name__ for c in t.__mro__]
    assert type(e).__name__ == type(t).__name__  # IterableDataset: ABCMeta (typing.Iterable)
    if e.__parameters__:
        assert e[int].__origin__ is e


def test_sampler_of_list_of_int_and_subclassing_a_parameterised_base():
    from ember.utils.data import Dataset, Sampler

    alias = Sampler[typing.List[int]]  # noqa: UP006 - the spelling libraries use
    assert alias.__origin__ is Sampler and alias.__args__ == (typing.List[int],)  # noqa: UP006

    class Batches(Sampler[typing.List[int]]):  # noqa: UP006
        def __iter__(self):
            return iter([[0, 1], [2]])

    class Squares(Dataset[int]):
        def __getitem__(self, i):
            return i * i

        def __len__(self):
            return 3

    loader = ember.utils.data.DataLoader(Squares(), batch_sampler=Batches())
    assert [b.tolist() for b in loader] == [[0, 1], [4]]
    assert isinstance(ember.utils.data.IterableDataset(), collections.abc.Iterable)


def test_dataloader_iterators_are_pytorchs_classes():
    from ember.utils.data import DataLoader, TensorDataset
    from ember.utils.data.dataloader import (
        _BaseDataLoaderIter,
        _MultiProcessingDataLoaderIter,
        _SingleProcessDataLoaderIter,
    )

    ds = TensorDataset(ember.arange(10.0))
    it = iter(DataLoader(ds, batch_size=4))
    t_it = iter(torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(10.0)),
                                            batch_size=4))
    assert type(it) is _SingleProcessDataLoaderIter and isinstance(it, _BaseDataLoaderIter)
    assert type(it).__name__ == type(t_it).__name__
    assert iter(it) is it and len(it) == len(t_it) == 3
    assert next(it)[0].tolist() == next(t_it)[0].tolist()
    assert it._num_yielded == t_it._num_yielded == 1
    assert [b[0].tolist() for b in it] == [b[0].tolist() for b in t_it]
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(NotImplementedError, match="cannot be pickled"):
        pickle.dumps(it)

    mp = iter(DataLoader(ds, batch_size=4, num_workers=2))
    assert type(mp) is _MultiProcessingDataLoaderIter and isinstance(mp, _BaseDataLoaderIter)
    assert next(mp)[0].tolist() == [0.0, 1.0, 2.0, 3.0]
    mp._shutdown_workers()
    assert list(mp) == []


def test_overriding_next_data_changes_what_next_returns():
    from ember.utils.data.dataloader import _SingleProcessDataLoaderIter

    class Doubled(_SingleProcessDataLoaderIter):
        def _next_data(self):
            return super()._next_data() * 2

    loader = ember.utils.data.DataLoader(ember.arange(4.0), batch_size=2)
    assert [b.tolist() for b in Doubled(loader)] == [[0.0, 2.0], [4.0, 6.0]]


# -- torch.jit.annotations ------------------------------------------------------------------

def test_jit_annotations_names():
    from torch.jit import annotations as ta

    from ember.jit import annotations as ea

    for name in ("Any", "Dict", "List", "Optional", "Tuple", "Union"):
        assert getattr(ea, name) is getattr(ta, name) is getattr(typing, name)
    for name in ("BroadcastingList1", "BroadcastingList2", "BroadcastingList3"):
        assert getattr(ea, name)[int] is getattr(ta, name)[int] is None
    assert ember.jit.annotations is ea
    assert ea.Future is ember.futures.Future is ember.jit.Future
    cases = [typing.Tuple[int], tuple[int], tuple, typing.List[int], list[int], list,  # noqa: UP006
             typing.Dict[str, int], dict[str, int], typing.Optional[int], int | None,  # noqa: UP006, UP045
             typing.Union[int, str], int | str, int, None,  # noqa: UP007
             typing.Tuple, typing.List, typing.Dict]  # noqa: UP006
    for fn in ("is_tuple", "is_list", "is_dict", "is_optional", "is_union"):
        for ann in cases:
            try:
                want = bool(getattr(ta, fn)(ann))
            except RuntimeError as err:
                with pytest.raises(RuntimeError, match=str(err).split(".")[0]):
                    getattr(ea, fn)(ann)
                continue
            assert getattr(ea, fn)(ann) is want, (fn, ann)


# -- torch._C ---------------------------------------------------------------------------------

def test_c_module_entries_match_pytorch():
    import ember._C as C

    assert ember._C is C
    assert getattr(C, "_CudaDeviceProperties", None) is None
    assert C._get_default_device() == torch._C._get_default_device() == "cpu"
    assert C._get_tracing_state() is torch._C._get_tracing_state() is None
    assert C._log_api_usage_once("x") is torch._C._log_api_usage_once("x") is None
    for lib in (ember, torch):
        impl = lib._C._disabled_torch_function_impl
        out = impl(lib.add, (), (lib.ones(2), 2))
        assert out.tolist() == [3.0, 3.0]

        class Sub(lib.Tensor):
            __torch_function__ = impl  # does not bind: called as (func, types, args, kwargs)

        got = Sub.__torch_function__(lib.mul, (Sub,), (lib.ones(2), 4), {})
        assert got.tolist() == [4.0, 4.0]
        assert type(got) is lib.Tensor


# -- torch.utils._foreach_utils ---------------------------------------------------------------

def _grouped(lib, with_indices):
    from importlib import import_module

    f = import_module(f"{lib.__name__}.utils._foreach_utils")._group_tensors_by_device_and_dtype
    a = [lib.zeros(2), lib.zeros(2, dtype=lib.float64), lib.ones(3), lib.zeros(1, dtype=lib.int64)]
    b = [lib.ones(2), None, lib.ones(3), lib.ones(1)]
    out = f([a, b, []], with_indices=with_indices)
    simple = {(str(dev), str(dt)): ([[None if t is None else t.tolist() for t in tl]
                                     for tl in lists], idx)
              for (dev, dt), (lists, idx) in out.items()}
    return simple, out, a


@pytest.mark.parametrize("with_indices", [False, True])
def test_group_tensors_by_device_and_dtype_matches_pytorch(with_indices):
    e, raw, a = _grouped(ember, with_indices)
    t, _, _ = _grouped(torch, with_indices)
    assert e == t
    lists, _ = raw[(ember.device("cpu"), ember.float32)]
    assert lists[0][0] is a[0] and lists[0][1] is a[2]  # the same tensor objects
    assert type(raw) is dict and all(type(v) is tuple for v in raw.values())


@pytest.mark.parametrize("bad", [
    "[]", "[[]]", "[a, a[:1]]", "[[None, a[0]], a[:2]]",
], ids=["no lists", "empty first", "length", "None first"])
def test_group_tensors_errors_as_pytorch(bad):
    for lib in (ember, torch):
        from importlib import import_module

        f = import_module(f"{lib.__name__}.utils._foreach_utils")
        a = [lib.ones(1), lib.ones(2)]
        with pytest.raises(RuntimeError):
            f._group_tensors_by_device_and_dtype(eval(bad))


def test_no_foreach_kernels_so_callers_loop():
    from ember.utils import _foreach_utils as fu

    assert fu._has_foreach_support([ember.ones(1)], ember.device("cpu")) is False
    assert fu._device_has_foreach_support(ember.device("cpu")) is False
    assert not any(n.startswith("_foreach_") for n in dir(ember))


# -- torch.__config__, torch.ops.aten, torch._tensor_str -------------------------------------

def test_config_show_and_parallel_info():
    text = ember.__config__.show()
    assert isinstance(text, str) and isinstance(torch.__config__.show(), str)
    assert "TORCH_VERSION=2.13.0" in text and "NumPy" in text
    assert "USE_CUDA=" in text and "TORCH_VERSION=2.13.0" in torch.__config__.show()
    assert str(ember.get_num_threads()) in ember.__config__.parallel_info()


def test_ops_aten_overloads_are_stable_objects_that_run_like_pytorchs():
    ea, ta = ember.ops.aten, torch.ops.aten
    assert ea.add.Tensor is ea.add.Tensor and ea.add is ea.add
    for op, overload in [("add", "Tensor"), ("clone", "default"), ("sum", "dim_IntList"),
                         ("slice", "Tensor"), ("_to_copy", "default"), ("select", "int")]:
        e, t = getattr(getattr(ea, op), overload), getattr(getattr(ta, op), overload)
        assert (e.name(), e.__name__, str(e), repr(e)) == (t.name(), t.__name__, str(t), repr(t))
        assert (repr(getattr(ea, op)), str(getattr(ea, op))) == \
            (repr(getattr(ta, op)), str(getattr(ta, op)))
    assert not hasattr(ea, "quantize_per_tensor") and not hasattr(ta, "not_an_op_at_all")
    assert not hasattr(ea.add, "no_such_overload")
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    calls = [
        lambda a, m, t: a.add.Tensor(t, t, alpha=2),
        lambda a, m, t: a.add_.Tensor(t.clone(), 1),
        lambda a, m, t: a.sub.Tensor(t, 1.5),
        lambda a, m, t: a.mul.Tensor(t, t),
        lambda a, m, t: a.slice.Tensor(t, 1, 1, 9223372036854775807),
        lambda a, m, t: a.slice.Tensor(t, -1, 0, 3, 2),
        lambda a, m, t: a.index.Tensor(t, [None, m.tensor([0, 2])]),
        lambda a, m, t: a.select.int(t, 2, -1),
        lambda a, m, t: a.index_select.default(t, 1, m.tensor([2, 0])),
        lambda a, m, t: a.flip.default(t, [0, 2]),
        lambda a, m, t: a.cat.default([t, t], 1),
        lambda a, m, t: a.stack.default([t, t]),
        lambda a, m, t: a.unbind.int(t, 1),
        lambda a, m, t: a._to_copy.default(t, dtype=m.float64),
        lambda a, m, t: a.clone.default(t),
        lambda a, m, t: a.detach.default(t),
        lambda a, m, t: a.alias.default(t),
        lambda a, m, t: a.sum(t, [0, 2]),
        lambda a, m, t: a.sum(t),
        lambda a, m, t: a.mean.dim(t, [1], True),
        lambda a, m, t: a.mm.default(t[0], t[0].t()),
        lambda a, m, t: a.addmm.default(t[0, 0, :3], t[0], t[0].t(), beta=0.5, alpha=2),
        lambda a, m, t: a.transpose.int(t, 0, 2),
        lambda a, m, t: a.permute.default(t, [2, 0, 1]),
        lambda a, m, t: a.view.default(t, [6, 4]),
        lambda a, m, t: a.expand.default(t[:, :1], [2, 5, 4]),
        lambda a, m, t: a.squeeze.dim(a.unsqueeze.default(t, 0), 0),
        lambda a, m, t: a.relu.default(t - 10),
    ]
    for call in calls:
        e, t = call(ea, ember, ember.tensor(x)), call(ta, torch, torch.tensor(x))
        es, ts = (list(e), list(t)) if isinstance(t, tuple | list) else ([e], [t])
        for ee, tt in zip(es, ts, strict=True):
            assert str(ee.dtype) == str(tt.dtype) and tuple(ee.shape) == tuple(tt.shape)
            np.testing.assert_allclose(ee.numpy(), tt.numpy(), rtol=1e-6)
    for lib in (ea, ta):
        with pytest.raises(RuntimeError, match="slice step must be positive"):
            lib.slice.Tensor(ember.ones(3) if lib is ea else torch.ones(3), 0, 2, 0, -1)
    base = ember.ones(3)
    assert ea.alias.default(base)._base is base and ea._to_copy.default(base) is not base


def test_tensor_str_helpers_match_pytorch():
    from torch._tensor_str import _add_suffixes as t_add_suffixes
    from torch._tensor_str import _tensor_str as t_tensor_str

    from ember._tensor_str import _add_suffixes, _tensor_str

    for make in (lambda m: m.tensor(3.5), lambda m: m.arange(2000.0),
                 lambda m: m.ones(2, 3, requires_grad=True) * 2, lambda m: m.zeros(0),
                 lambda m: m.tensor([True, False]), lambda m: m.tensor([[1, 2], [3, 4]])):
        assert _tensor_str(make(ember), 7) == t_tensor_str(make(torch), 7)
    for force in (False, True):
        args = ("tensor([1., 2.]", ["dtype=torch.float64", "requires_grad=True"], 7, force)
        assert _add_suffixes(*args) == t_add_suffixes(*args)


# -- torch.distributed.rpc, torch.futures, torch.utils.hooks ----------------------------------

def test_rpc_is_absent_as_on_a_build_without_it():
    import ember.distributed.rpc as rpc

    assert ember.distributed.rpc is rpc
    assert rpc.is_available() is False
    assert not hasattr(rpc, "init_rpc") and not hasattr(rpc, "RRef")


def _future_story(lib):
    Future, collect_all, wait_all = lib.futures.Future, lib.futures.collect_all, \
        lib.futures.wait_all
    log = []
    f = Future()
    log.append(f.done())
    f.add_done_callback(lambda fut: log.append(("cb", fut.value())))
    chained = f.then(lambda fut: fut.wait() * 10)
    f.set_result(3)
    log += [f.done(), f.wait(), f.value(), chained.wait(), type(chained).__name__]
    try:
        f.set_result(4)
    except RuntimeError as e:
        log.append(("twice", "completed Future" in str(e)))
    bad = Future()
    bad.set_exception(ValueError("bad"))
    for read in (bad.wait, bad.value):
        try:
            read()
        except ValueError as e:
            log.append(("raised", str(e)))
    failed = f.then(lambda fut: 1 / 0)
    try:
        failed.wait()
    except RuntimeError as e:
        log.append(("then", "ZeroDivisionError" in str(e)))
    late = Future()
    late.set_result(5)
    late.add_done_callback(lambda fut: log.append(("late cb", fut.value())))
    a, b = Future(), Future()
    both = collect_all([a, b])
    log.append(both.done())
    a.set_result(1)
    b.set_result(2)
    log += [both.done(), [x.value() for x in both.wait()], wait_all([a, b])]
    try:
        wait_all([a, bad])
    except ValueError as e:
        log.append(("wait_all", str(e)))
    log.append(Future[int].__origin__ is Future)
    return log


def test_futures_behave_as_pytorchs():
    assert _future_story(ember) == _future_story(torch)


def test_future_wait_blocks_until_another_thread_sets_it():
    import threading

    f = ember.futures.Future()
    threading.Timer(0.05, f.set_result, args=("done",)).start()
    assert f.wait() == "done"
    assert ember.jit.fork(lambda: 7).wait() == 7
    assert isinstance(ember.jit.fork(lambda: 7), ember.futures.Future)


def test_utils_hooks_removable_handle_is_the_module_hooks_class():
    from collections import OrderedDict

    for lib in (ember, torch):
        hooks = lib.utils.hooks
        m = lib.nn.Linear(1, 1)
        assert type(m.register_forward_hook(lambda *a: None)) is hooks.RemovableHandle
        d, extra = OrderedDict(), OrderedDict()
        h = hooks.RemovableHandle(d, extra_dict=extra)
        d[h.id] = extra[h.id] = "hook"
        h2 = hooks.RemovableHandle(d, extra_dict=[extra])
        assert h2.id != h.id
        assert len(h.extra_dict_ref) == 1
        clone = pickle.loads(pickle.dumps(h))
        assert clone.id == h.id and clone.hooks_dict_ref() is None
        copy.deepcopy(h)
        with h:
            pass
        assert h.id not in d and h.id not in extra
        f = hooks.unserializable_hook(lambda g: g)
        assert f.__torch_unserializable__ is True
