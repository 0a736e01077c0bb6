"""What image-model, computer-vision, graph and probabilistic libraries still reached for at import
after tests/test_import_names.py (issue "Nothing at import", second round), each against the
installed PyTorch: the complex and float8/float4 dtype objects (named in dtype tables; no tensors
yet), ``torch.serialization.MAP_LOCATION``, ``torch._subclasses.fake_tensor.is_fake``,
``torch.fx.experimental.proxy_tensor.get_proxy_mode``, ``torch._C._are_functorch_transforms_active``,
``torch.SymInt``/``SymFloat``/``SymBool``, ``torch._assert_async``, ``autograd.forward_ad.unpack_dual``,
``is_autocast_enabled`` for other device types, ``torch._foreach_*`` and more ``torch.ops.aten``
overloads. Last, each library imports under ``ember run`` when it is
installed in this environment (skipped otherwise; docs/running.md says how to set one up).
"""

from __future__ import annotations

import copy
import importlib.util
import pickle
import subprocess
import sys
import typing
import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the library import test below still runs: it needs no PyTorch
    torch = None


@pytest.fixture(autouse=True)
def _compare_with_pytorch(request):
    if torch is None and request.node.originalname != "test_library_imports_under_ember_run":
        pytest.skip("PyTorch is not installed")

WITHOUT_TENSORS = ["complex64", "complex128", "complex32", "cfloat", "cdouble", "chalf",
                   "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                   "float8_e8m0fnu", "float4_e2m1fn_x2"]
WITH_TENSORS = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                "float32", "float64", "uint16", "uint32", "uint64"]


def _outcome(fn: typing.Callable) -> str:
    try:
        return repr(fn())
    except Exception as e:  # noqa: BLE001 - the exception's type is the outcome compared
        return type(e).__name__


# -- dtypes without tensors --------------------------------------------------------------------

@pytest.mark.parametrize("name", WITHOUT_TENSORS)
def test_dtype_objects_match_pytorchs(name):
    e, t = getattr(ember, name), getattr(torch, name)
    assert (repr(e), str(e), e.is_complex, e.is_floating_point, e.is_signed, e.itemsize) == \
        (repr(t), str(t), t.is_complex, t.is_floating_point, t.is_signed, t.itemsize)
    assert repr(e.to_real()) == repr(t.to_real())
    assert _outcome(e.to_complex) == _outcome(t.to_complex)
    assert pickle.loads(pickle.dumps(e)) is e and copy.deepcopy(e) is e
    assert isinstance(e, ember.dtype) and e != ember.float32


def test_aliases_and_to_complex_of_the_real_dtypes():
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128
    assert ember.chalf is ember.complex32
    for name in ["float16", "bfloat16", "float32", "float64", "int64", "bool", "uint8"]:
        assert _outcome(getattr(ember, name).to_complex) == \
            _outcome(getattr(torch, name).to_complex), name
    assert not ember.zeros(2).dtype.is_complex and not ember.zeros(2).is_complex()


def test_promote_types_and_can_cast_with_them_match_pytorch():
    names = WITH_TENSORS + WITHOUT_TENSORS
    for a in names:
        for b in names:
            if a not in WITHOUT_TENSORS and b not in WITHOUT_TENSORS:
                continue
            ea, eb, ta, tb = getattr(ember, a), getattr(ember, b), getattr(torch, a), getattr(torch, b)
            assert ember.can_cast(ea, eb) == torch.can_cast(ta, tb), (a, b)
            if "float4" in a + b and a != b:
                # PyTorch fails an internal assert here (or answers float4 for uint16/32/64);
                # ember refuses every float4 promotion as it refuses float8's
                with pytest.raises(RuntimeError, match="Float4"):
                    ember.promote_types(ea, eb)
                continue
            assert _outcome(lambda ea=ea, eb=eb: ember.promote_types(ea, eb)) == \
                _outcome(lambda ta=ta, tb=tb: torch.promote_types(ta, tb)), (a, b)


def test_finfo_and_iinfo_of_them_match_pytorch():
    for name in WITHOUT_TENSORS:
        e, t = getattr(ember, name), getattr(torch, name)
        if name == "float4_e2m1fn_x2":
            # PyTorch's finfo object has bits only; its other fields raise NotImplementedError
            with pytest.raises(NotImplementedError):
                _ = torch.finfo(t).eps
            with pytest.raises(TypeError, match="float4_e2m1fn_x2"):
                ember.finfo(e)
        else:
            fe, ft = ember.finfo(e), torch.finfo(t)
            assert repr(fe) == repr(ft)
            assert (fe.bits, fe.eps, fe.max, fe.min, fe.tiny, fe.smallest_normal, fe.resolution,
                    fe.dtype) == (ft.bits, ft.eps, ft.max, ft.min, ft.tiny, ft.smallest_normal,
                                  ft.resolution, ft.dtype), name
        with pytest.raises(TypeError):
            torch.iinfo(t)
        with pytest.raises(TypeError, match="integer"):
            ember.iinfo(e)


@pytest.mark.parametrize("name", WITHOUT_TENSORS)
def test_set_default_dtype_refuses_them_as_pytorch(name):
    with pytest.raises(TypeError):
        torch.set_default_dtype(getattr(torch, name))
    with pytest.raises(TypeError):
        ember.set_default_dtype(getattr(ember, name))
    assert ember.get_default_dtype() is ember.float32


_MAKERS = {
    "zeros": lambda d: ember.zeros(2, dtype=d),
    "empty": lambda d: ember.empty(2, 3, dtype=d),
    "ones_like": lambda d: ember.ones_like(ember.ones(2), dtype=d),
    "full": lambda d: ember.full((2,), 1.0, dtype=d),
    "arange": lambda d: ember.arange(3, dtype=d),
    "tensor": lambda d: ember.tensor([1.0, 2.0], dtype=d),
    "as_tensor": lambda d: ember.as_tensor([1.0], dtype=d),
    "randn": lambda d: ember.randn(2, dtype=d),
    "rand": lambda d: ember.rand(2, dtype=d),
    "to": lambda d: ember.ones(2).to(d),
    "type": lambda d: ember.ones(2).type(d),
    "new_zeros": lambda d: ember.ones(2).new_zeros(3, dtype=d),
    "sum": lambda d: ember.ones(2).sum(dtype=d),
    "Linear": lambda d: ember.nn.Linear(2, 2, dtype=d),
}


@pytest.mark.parametrize("name", ["chalf", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn_x2"])
@pytest.mark.parametrize("maker", list(_MAKERS))
def test_making_a_tensor_of_them_raises_type_error_naming_the_dtype(name, maker):
    d = getattr(ember, name)
    with pytest.raises(TypeError, match=f"torch.{d.name}"):
        _MAKERS[maker](d)
    if d.is_complex:
        assert "no complex32 tensors" in str(pytest.raises(TypeError, _MAKERS[maker], d).value)


def test_module_to_complex_and_complex_numpy_arrays_as_pytorch():
    with pytest.warns(UserWarning, match="Complex modules are a new feature"):
        ember.nn.Linear(2, 2).to(ember.complex64)  # (PyTorch's warns once per process)
    for m in (ember, torch):
        lin = m.nn.Linear(2, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lin.to(m.complex64)
        assert str(lin.weight.dtype) == "torch.complex64" and lin.weight.requires_grad
        with pytest.raises(TypeError, match="only accepts floating point or complex"):
            lin.to(m.int64)
    for arr in (np.zeros(2, np.complex64), np.zeros(2, np.complex128)):
        assert str(ember.from_numpy(arr).dtype) == str(torch.from_numpy(arr).dtype)
        assert str(ember.tensor(arr).dtype) == str(torch.tensor(arr).dtype)


def test_real_dtypes_keep_their_promotion():
    # the rare-category test sits after `a is b` and adds nothing to these answers
    for a in WITH_TENSORS:
        for b in WITH_TENSORS:
            ea, eb, ta, tb = getattr(ember, a), getattr(ember, b), getattr(torch, a), getattr(torch, b)
            assert _outcome(lambda ea=ea, eb=eb: ember.promote_types(ea, eb)) == \
                _outcome(lambda ta=ta, tb=tb: torch.promote_types(ta, tb)), (a, b)
            assert ember.can_cast(ea, eb) == torch.can_cast(ta, tb), (a, b)


# -- torch.serialization.MAP_LOCATION ----------------------------------------------------------

def test_map_location_is_pytorchs_annotation_alias():
    e, t = ember.serialization.MAP_LOCATION, torch.serialization.MAP_LOCATION
    ea, ta = typing.get_args(e), typing.get_args(t)
    assert len(ea) == len(ta) == 5
    assert [typing.get_origin(x) for x in ea] == [typing.get_origin(x) for x in ta]
    assert ea[1] is ember.device and ta[1] is torch.device
    assert ea[2:] == ta[2:] == (str, dict[str, str], type(None))
    assert typing.get_args(ea[0])[0] == [ember.Tensor, str]

    def load(f: str, map_location: ember.serialization.MAP_LOCATION = None) -> None:  # as pyro
        return map_location

    assert typing.get_type_hints(load)["map_location"] == e
    assert "MAP_LOCATION" not in ember.serialization.__all__  # not in PyTorch's either
    assert "MAP_LOCATION" not in torch.serialization.__all__


# -- torch._subclasses, torch.fx.experimental, torch._C ----------------------------------------

def test_is_fake_is_false_for_ember_tensors_as_for_pytorchs_real_ones():
    from torch._subclasses.fake_tensor import is_fake as t_is_fake

    from ember._subclasses.fake_tensor import is_fake

    for make in (lambda m: m.ones(2), lambda m: m.nn.Parameter(m.ones(2)),
                 lambda m: m.ones(2, requires_grad=True) * 2, lambda m: 3, lambda m: None):
        assert is_fake(make(ember)) is t_is_fake(make(torch)) is False
    import ember._subclasses.fake_tensor as fake

    assert not hasattr(fake, "FakeTensorMode") and not hasattr(fake, "FakeTensor")
    assert not hasattr(ember._subclasses, "FakeTensor")


def test_get_proxy_mode_is_none_outside_a_trace_as_in_pytorch():
    from torch.fx.experimental.proxy_tensor import get_proxy_mode as t_get

    from ember.fx.experimental.proxy_tensor import get_proxy_mode

    assert get_proxy_mode() is None and t_get() is None
    import ember.fx.experimental.proxy_tensor as pt

    assert not hasattr(pt, "make_fx")


def test_functorch_transforms_active_inside_grad_as_in_pytorch():
    seen = {}

    def f(m, key):
        def inner(x):
            seen[key] = m._C._are_functorch_transforms_active()
            return (x * x).sum()
        return inner

    assert ember._C._are_functorch_transforms_active() is False
    assert torch._C._are_functorch_transforms_active() is False
    ember.func.grad(f(ember, "ember"))(ember.ones(3))
    torch.func.grad(f(torch, "torch"))(torch.ones(3))
    assert seen == {"ember": True, "torch": True}
    assert ember._C._are_functorch_transforms_active() is False
    # vmap is a loop of ordinary calls in ember, where values can be read: not counted
    ember.func.vmap(f(ember, "vmap"))(ember.ones(2, 3))
    assert seen["vmap"] is False


def test_the_new_modules_load_lazily():
    out = subprocess.run([sys.executable, "-c", "import sys, ember; print(sorted(m for m in ("
                          "'ember._subclasses', 'ember.fx.experimental') if m in sys.modules))"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    assert ember._subclasses.fake_tensor.is_fake(ember.ones(1)) is False


# -- what a computer-vision library calls while it runs ---------------------------------------

def test_is_autocast_enabled_for_pytorchs_other_device_types_is_false():
    for dev in ("ipu", "xpu", "maia", "xla", "mps", "hpu", "mtia", "privateuseone"):
        assert ember.is_autocast_enabled(dev) is torch.is_autocast_enabled(dev) is False
    for dev in ("meta", "vulkan", "lazy", "hip"):  # device types without an autocast state
        with pytest.raises(RuntimeError):
            torch.is_autocast_enabled(dev)
        with pytest.raises(RuntimeError):
            ember.is_autocast_enabled(dev)
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu") and not ember.is_autocast_enabled("mps")
    with pytest.raises(RuntimeError):
        ember.is_autocast_enabled("not_a_device")
    with pytest.raises(RuntimeError):
        torch.is_autocast_enabled("not_a_device")


def test_symbolic_number_classes_have_no_instances():
    for name in ("SymInt", "SymFloat", "SymBool"):
        e, t = getattr(ember, name), getattr(torch, name)
        assert isinstance(e, type) and e.__name__ == t.__name__
        for v in (3, 2.5, True, ember.ones(2).shape[0], ember.tensor(3)):
            assert not isinstance(v, e)
        assert not isinstance(torch.ones(2).shape[0], t)
        with pytest.raises(TypeError, match="symbolic"):
            e(3)


def test_assert_async_checks_as_pytorchs_cpu_form():
    cases = [([], None), ([], "M"), ([[True]], None), (float("nan"), None), ([False, True], "M"),
             (0, None), (0, "zero here"), (False, None), (2, None), (0.0, None)]
    for value, msg in cases:
        args = () if msg is None else (msg,)
        assert _outcome(lambda v=value, a=args: ember._assert_async(ember.tensor(v), *a)) == \
            _outcome(lambda v=value, a=args: torch._assert_async(torch.tensor(v), *a)), value
    with pytest.raises(RuntimeError, match="zero here"):
        ember._assert_async(ember.tensor(0), "zero here")
    with pytest.raises(RuntimeError, match="single nonzero value"):
        ember._assert_async(ember.tensor(False))


def test_unpack_dual_reports_no_tangent_as_pytorch_outside_make_dual():
    from torch.autograd import forward_ad as t_fwad

    from ember.autograd import forward_ad

    x = ember.ones(2, requires_grad=True)
    e, t = forward_ad.unpack_dual(x), t_fwad.unpack_dual(torch.ones(2, requires_grad=True))
    assert e.primal is x and e.tangent is None and t.tangent is None
    assert type(e).__name__ == type(t).__name__ == "UnpackedDualTensor"
    assert e._fields == t._fields == ("primal", "tangent")
    assert forward_ad.unpack_dual(x, level=0) == (x, None)
    assert ember.autograd.forward_ad is forward_ad
    assert not hasattr(forward_ad, "make_dual") and not hasattr(forward_ad, "dual_level")


def test_grad_scaler_at_the_top_level_is_amps():
    assert ember.GradScaler is ember.amp.GradScaler and torch.GradScaler is torch.amp.GradScaler
    scaler = ember.GradScaler(device="cpu", enabled=False)
    assert scaler.scale(ember.ones(2)).equal(ember.ones(2)) and not scaler.is_enabled()


def test_del_grad_clears_it_as_pytorch():
    # pytorch_optimizer's wrappers clear gradients with `del p.grad`
    for m in (ember, torch):
        p = m.nn.Parameter(m.ones(2))
        (p * 2).sum().backward()
        assert p.grad is not None
        del p.grad
        assert p.grad is None
        (p * 3).sum().backward()
        assert p.grad.tolist() == [3.0, 3.0]


def test_type_takes_a_legacy_tensor_class_as_pytorch():
    # einops' YOLO example (and YOLOv3 code): x.type(torch.FloatTensor)
    for src, cls in (("int64", "FloatTensor"), ("float32", "LongTensor"), ("float32", "HalfTensor")):
        e = ember.ones(2, dtype=getattr(ember, src)).type(getattr(ember, cls))
        t = torch.ones(2, dtype=getattr(torch, src)).type(getattr(torch, cls))
        assert str(e.dtype) == str(t.dtype) and e.type() == t.type()


# -- torch.ops.aten: what a graph library registers ---------------------------------------------

def test_more_aten_overloads_run_like_pytorchs():
    ea, ta = ember.ops.aten, torch.ops.aten
    for op, overload in [("sort", "default"), ("sort", "stable"), ("squeeze", "default"),
                         ("squeeze", "dims"), ("_pin_memory", "default"),
                         ("_sparse_addmm", "default")]:
        e, t = getattr(getattr(ea, op), overload), getattr(getattr(ta, op), overload)
        assert (e.name(), e.__name__, str(e), repr(e)) == (t.name(), t.__name__, str(t), repr(t))
    x = np.array([[3.0, 1.0, 2.0, 1.0], [0.5, -1.0, 4.0, 0.5]], dtype=np.float32)
    calls = [
        lambda a, m, t: a.sort.default(t),
        lambda a, m, t: a.sort.default(t, 0, True),
        lambda a, m, t: a.sort.stable(t, stable=True, dim=1, descending=True),
        lambda a, m, t: a.sort(t, 1),
        lambda a, m, t: a.squeeze.default(t[:1, None]),
        lambda a, m, t: a.squeeze.dims(t[:1, None], [0, 1]),
        lambda a, m, t: a.squeeze(t[:1], 0),
        lambda a, m, t: a._sparse_addmm.default(t[:, :2], t, t.t()[:, :2], beta=0.5, alpha=2.0),
    ]
    for call in calls:
        e, t = call(ea, ember, ember.tensor(x)), call(ta, torch, torch.tensor(x))
        es, ts = (list(e), list(t)) if isinstance(t, tuple) else ([e], [t])
        assert isinstance(e, tuple) == isinstance(t, tuple)
        for ee, tt in zip(es, ts, strict=True):
            assert str(ee.dtype) == str(tt.dtype)
            np.testing.assert_allclose(ee.numpy(), tt.numpy(), rtol=1e-6)
    # PyTorch's needs an accelerator to pin; ember's pin_memory keeps the tensor (CPU arrays)
    t = ember.tensor(x)
    assert ea._pin_memory.default(t).equal(t)
    # torch.sparse.mm(csr, dense, reduce)'s operator: the product and an (empty) argument index
    s = [[1.0, 0.0], [2.0, 3.0]]
    eo = ea._sparse_mm_reduce_impl.default(ember.tensor(s).to_sparse_csr(), ember.ones(2, 3),
                                           "amax")
    to = ta._sparse_mm_reduce_impl.default(torch.tensor(s).to_sparse_csr(), torch.ones(2, 3),
                                           "amax")
    assert [eo[0].tolist(), eo[1].tolist(), str(eo[1].dtype)] == \
        [to[0].tolist(), to[1].tolist(), str(to[1].dtype)]


# -- torch._foreach_*: what an optimizer library batches its updates with ----------------------

def _lists(m, seed=0):
    rng = np.random.default_rng(seed)
    return [m.tensor(rng.uniform(0.5, 2.0, size=s).astype(np.float32)) for s in ((3,), (2, 2), ())]


def _same(e, t):
    es, ts = (list(e), list(t)) if isinstance(t, tuple | list) else ([e], [t])
    assert type(e).__name__ == type(t).__name__ and len(es) == len(ts)
    for ee, tt in zip(es, ts, strict=True):
        assert str(ee.dtype) == str(tt.dtype) and tuple(ee.shape) == tuple(tt.shape)
        np.testing.assert_allclose(ee.detach().numpy(), tt.detach().numpy(), rtol=2e-6, atol=1e-7)


_FOREACH_CALLS = [
    *[(name, lambda m, f, a, b, c: f(a)) for name in
      ["abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor",
       "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt",
       "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc"]],
    *[(name, call) for name in ["add", "sub", "mul", "div", "maximum", "minimum", "clamp_min",
                                "clamp_max", "pow"]
      for call in (lambda m, f, a, b, c: f(a, b), lambda m, f, a, b, c: f(a, 0.75),
                   lambda m, f, a, b, c: f(a, [0.5, 2.0, -1.0]),
                   lambda m, f, a, b, c: f(a, (1.5, 1, 0.25)))],
    *[(name, lambda m, f, a, b, c: f(a, b, alpha=-0.5)) for name in ["add", "sub"]],
    *[(name, lambda m, f, a, b, c: f(a, m.tensor(1.25))) for name in ["add", "mul", "div"]],
    *[(name, call) for name in ["addcmul", "addcdiv"]
      for call in (lambda m, f, a, b, c: f(a, b, c), lambda m, f, a, b, c: f(a, b, c, 0.3),
                   lambda m, f, a, b, c: f(a, b, c, [0.3, -1.0, 2.0]),
                   lambda m, f, a, b, c: f(a, b, c, m.tensor([0.3, -1.0, 2.0])))],
    *[("lerp", call) for call in (lambda m, f, a, b, c: f(a, b, 0.25),
                                  lambda m, f, a, b, c: f(a, b, [0.25, 0.5, 1.0]),
                                  lambda m, f, a, b, c: f(a, b, c))],
    ("norm", lambda m, f, a, b, c: f(a)), ("norm", lambda m, f, a, b, c: f(a, 1)),
    ("norm", lambda m, f, a, b, c: f(a, float("inf"))),
    ("norm", lambda m, f, a, b, c: f(a, 2, dtype=m.float64)),
    ("max", lambda m, f, a, b, c: f(a)), ("clone", lambda m, f, a, b, c: f(a)),
    ("pow", lambda m, f, a, b, c: f(2.0, a)),
]


@pytest.mark.parametrize("k", range(len(_FOREACH_CALLS)))
def test_foreach_ops_match_pytorchs(k):
    name, call = _FOREACH_CALLS[k]
    lists = {m: (_lists(m, 0), _lists(m, 1), _lists(m, 2)) for m in (ember, torch)}
    e = call(ember, getattr(ember, f"_foreach_{name}"), *lists[ember])
    t = call(torch, getattr(torch, f"_foreach_{name}"), *lists[torch])
    _same(e, t)
    if hasattr(torch, f"_foreach_{name}_") and name not in ("max", "norm", "clone"):
        try:  # the in-place form, where PyTorch has this overload
            tl = lists[torch][0]
            tr = call(torch, getattr(torch, f"_foreach_{name}_"), tl, *lists[torch][1:])
        except (TypeError, RuntimeError):
            return
        el = lists[ember][0]
        er = call(ember, getattr(ember, f"_foreach_{name}_"), el, *lists[ember][1:])
        assert er is el and tr is tl
        _same(list(el), list(tl))


def test_foreach_in_place_helpers_and_errors_match_pytorch():
    for m in (ember, torch):
        a, b = _lists(m, 0), _lists(m, 1)
        assert m._foreach_copy_(a, b) is a and all(x.equal(y) for x, y in zip(a, b, strict=True))
        t = tuple(a)
        assert m._foreach_zero_(t) is t and all(not x.any() for x in a)
    bad = [lambda m, a: m._foreach_add([], 1), lambda m, a: m._foreach_add(a, a[:2]),
           lambda m, a: m._foreach_add(a, [1, 2]), lambda m, a: m._foreach_sqrt([]),
           lambda m, a: m._foreach_add(a, 1, alpha=2),
           lambda m, a: m._foreach_add(a, [a[0], 1, 2]),
           lambda m, a: m._foreach_lerp(a, a[:1], 0.5)]
    for call in bad:
        assert _outcome(lambda c=call: c(ember, _lists(ember))) == \
            _outcome(lambda c=call: c(torch, _lists(torch)))


def test_foreach_out_of_place_forms_are_differentiable():
    grads = {}
    for m in (ember, torch):
        a = [x.requires_grad_() for x in _lists(m, 0)]
        b = _lists(m, 1)
        out = m._foreach_addcmul(m._foreach_mul(a, b), a, b, [0.5, 1.0, 2.0])
        out = m._foreach_lerp(m._foreach_sqrt(out), b, 0.25)
        sum(o.sum() for o in m._foreach_norm(out)).backward()
        grads[m] = [x.grad.numpy() for x in a]
    for ge, gt in zip(grads[ember], grads[torch], strict=True):
        np.testing.assert_allclose(ge, gt, rtol=1e-5)


def test_foreach_names_match_pytorchs():
    names = {n for n in dir(torch) if n.startswith("_foreach_")}
    missing = {n for n in names if not hasattr(ember, n)}
    assert missing == {"_foreach_mm", "_foreach_powsum"}  # not written yet: absent
    assert ember._foreach_add_.__name__ == "_foreach_add_"
    assert not hasattr(ember, "_foreach_not_an_op")


# -- the libraries themselves, when installed here -----------------------------------------------

LIBRARIES = ["einops", "timm", "kornia", "torch_geometric", "pytorch_optimizer", "torchdiffeq",
             "pyro"]  # (pyro imports torch.fft at import: complex tensors since issue 32)


@pytest.mark.parametrize("lib", LIBRARIES)
def test_library_imports_under_ember_run(tmp_path, lib):
    if importlib.util.find_spec(lib) is None:
        pytest.skip(f"{lib} is not installed in this environment")
    script = tmp_path / "imp.py"
    script.write_text(f"import torch\nimport {lib}\nassert torch.__name__ == 'torch'\n"
                      f"print('ok', {lib}.__name__)\n")
    out = subprocess.run([sys.executable, "-m", "ember", "run", str(script)], capture_output=True,
                         text=True, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == f"ok {lib}"
