"""torch.jit (eager), torch.hub (downloads into the cache), torch.utils._pytree, torch._dynamo and
torch.nn.attention: the modules PyTorch programs reach for, checked against PyTorch 2.13."""

from __future__ import annotations

import collections
import hashlib
import http.server
import os
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember import hub, jit
from ember.utils import _pytree as pytree

# --- torch.jit ---------------------------------------------------------------------------------


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return fn(*args, **kwargs)


def test_script_decorator_runs_the_function_and_warns_like_pytorch():
    with pytest.warns(DeprecationWarning, match=r"`torch.jit.script` is deprecated"):
        @jit.script
        def f(x: ember.Tensor) -> ember.Tensor:
            return x * 2 + 1

    assert isinstance(f, jit.ScriptFunction)
    assert f.__name__ == "f"
    np.testing.assert_array_equal(f(ember.ones(2)).numpy(), [3.0, 3.0])


def test_script_module_instance_keeps_parameters_and_passes_isinstance():
    lin = nn.Linear(3, 2)
    m = _quiet(jit.script, lin)
    assert m is lin
    assert isinstance(m, jit.ScriptModule) and isinstance(m, jit.RecursiveScriptModule)
    assert not isinstance(m, jit.TracedModule)
    assert not isinstance(nn.Linear(1, 1), jit.ScriptModule)
    assert list(m.state_dict()) == ["weight", "bias"]
    x = ember.randn(4, 3)
    np.testing.assert_allclose(m(x).detach().numpy(), lin(x).detach().numpy())


def test_script_refuses_a_module_class_as_pytorch_does():
    with pytest.raises(RuntimeError, match="inherits from nn.Module, pass an instance instead"):
        _quiet(jit.script, nn.Linear)

    class Plain:
        def __init__(self, a: int) -> None:
            self.a = a

    assert _quiet(jit.script, Plain) is Plain


def test_script_module_subclass_with_script_method():
    class M(jit.ScriptModule):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(2, 2)

        @jit.script_method
        def forward(self, x):
            return self.lin(x)

    m = M()
    assert isinstance(m, nn.Module) and isinstance(m, jit.ScriptModule)
    assert m(ember.ones(1, 2)).shape == (1, 2)


def test_trace_runs_the_example_once_with_is_tracing_set():
    seen = []

    def f(x):
        seen.append(jit.is_tracing())
        return x.sin()

    with pytest.warns(DeprecationWarning, match=r"`torch.jit.trace` is deprecated"):
        g = jit.trace(f, ember.ones(2))
    assert seen == [True]
    assert not jit.is_tracing()
    g(ember.ones(3))
    assert seen == [True, False]
    assert isinstance(g, jit.ScriptFunction)


def test_trace_module_returns_it_and_propagates_errors():
    lin = nn.Linear(3, 2)
    t = _quiet(jit.trace, lin, (ember.randn(1, 3),))
    assert t is lin and isinstance(t, jit.TracedModule) and isinstance(t, jit.ScriptModule)
    with pytest.raises(RuntimeError):
        _quiet(jit.trace, lin, (ember.randn(1, 5),))  # wrong feature size fails at trace time
    t2 = _quiet(jit.trace, nn.Linear(2, 2), example_kwarg_inputs={"input": ember.ones(1, 2)})
    assert isinstance(t2, jit.TracedModule)
    with pytest.raises(TypeError):
        _quiet(jit.trace, lin)


def test_jit_decorators_and_helpers():
    def g(x):
        return x

    assert jit.ignore(g) is g and jit.unused(g) is g and jit.export(g) is g
    with pytest.warns(FutureWarning, match="ignore\\(True\\) has been deprecated"):
        assert jit.ignore(drop=True)(g) is g
    assert jit.is_scripting() is False
    assert jit.annotate(list[int], []) == []
    assert jit.Final is __import__("typing").Final
    fut = jit.fork(lambda a, b: a + b, 2, b=3)
    assert fut.done() and jit.wait(fut) == 5 and fut.wait() == 5
    with pytest.raises(ValueError, match="boom"):
        jit.fork(lambda: (_ for _ in ()).throw(ValueError("boom")))
    assert jit.isinstance([1, 2], list[int]) and not jit.isinstance([1, "a"], list[int])
    assert jit.isinstance({"a": 1}, dict[str, int]) and jit.isinstance(None, int | None)
    a = jit.Attribute(3, int)
    assert a.value == 3 and a.type is int
    assert jit._unwrap_optional(4) == 4
    with pytest.raises(AssertionError):
        jit._unwrap_optional(None)

    @jit._overload
    def h(x: int) -> int: ...

    def h(x):  # noqa: F811 - the implementation after the declaration, as with PyTorch
        return x * 2

    assert h(3) == 6 and jit._overload(g) is g


@pytest.mark.parametrize("name", ["save", "load"])
def test_jit_save_load_raise_not_implemented_naming_the_call(name, tmp_path):
    args = (nn.Linear(1, 1), tmp_path / "m.pt") if name == "save" else (tmp_path / "m.pt",)
    with pytest.raises(NotImplementedError, match=f"torch.jit.{name}.*state_dict"):
        getattr(jit, name)(*args)


def test_scripted_module_save_method_explains(tmp_path):
    m = _quiet(jit.script, nn.Linear(1, 1))
    with pytest.raises(NotImplementedError, match="torch.jit.save"):
        m.save(str(tmp_path / "m.pt"))
    assert list(m.state_dict()) == ["weight", "bias"]


def test_deprecation_warning_is_hidden_by_default_filters_as_in_pytorch(tmp_path):
    import subprocess
    import sys

    code = ("import ember.jit, ember.nn\n@ember.jit.script\ndef f(x):\n    return x\n"
            "ember.jit.trace(ember.nn.Linear(1, 1), ember.ones(1, 1))\n")
    script = tmp_path / "scripted.py"  # a file: scripting reads the source, as PyTorch's does
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and "deprecated" not in out.stderr, out.stderr


def test_jit_freeze_checks_like_pytorch():
    lin = nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="Freezing expects a ScriptModule"):
        jit.freeze(lin)
    m = _quiet(jit.script, lin)
    with pytest.raises(RuntimeError, match="eval mode"):
        jit.freeze(m)
    assert jit.freeze(m.eval()) is m


def test_jit_is_reachable_as_an_attribute_of_ember():
    assert ember.jit is jit
    assert ember.hub is hub


def test_jit_parity_with_pytorch():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tf = torch.jit.script(lambda_free)
        ef = jit.script(lambda_free)
        x = np.arange(4, dtype=np.float32)
        np.testing.assert_allclose(ef(ember.tensor(x)).numpy(), tf(torch.tensor(x)).numpy())
        assert torch.jit.is_scripting() == jit.is_scripting()
        assert torch.jit.annotate(int, 3) == jit.annotate(int, 3)
        assert torch.jit.wait(torch.jit.fork(lambda_free_int, 4)) == jit.wait(
            jit.fork(lambda_free_int, 4))


def lambda_free(x):
    return x * 3 - 1


def lambda_free_int(x: int) -> int:
    return x + 1


# --- torch.hub ---------------------------------------------------------------------------------


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output quiet
        pass


@pytest.fixture()
def server(tmp_path):
    """A loopback HTTP server serving ``tmp_path/www``."""
    root = tmp_path / "www"
    root.mkdir()

    def handler(*args, **kwargs):
        return _Handler(*args, directory=str(root), **kwargs)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture()
def hub_home(tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    return tmp_path / "th"


def _checkpoint(root: Path, stem: str) -> tuple[Path, dict]:
    state = {"w": ember.arange(6, dtype=ember.float32).reshape(2, 3), "b": ember.ones(3)}
    path = root / "tmp.pt"
    ember.save(state, path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    final = root / f"{stem}-{digest[:8]}.pt"
    path.rename(final)
    return final, state


def test_get_dir_follows_torch_home_xdg_and_set_dir(monkeypatch, tmp_path):
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.setenv("TORCH_HOME", "/x/th")
    assert hub.get_dir() == "/x/th/hub"
    monkeypatch.delenv("TORCH_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", "/x/xdg")
    assert hub.get_dir() == "/x/xdg/torch/hub"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert hub.get_dir() == os.path.expanduser("~/.cache/torch/hub")
    hub.set_dir(tmp_path / "custom")
    assert hub.get_dir() == str(tmp_path / "custom")


def test_get_dir_matches_pytorch(monkeypatch, tmp_path):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(hub, "_hub_dir", None)
    for env in ({"TORCH_HOME": str(tmp_path / "a")}, {"XDG_CACHE_HOME": str(tmp_path / "b")}, {}):
        monkeypatch.delenv("TORCH_HOME", raising=False)
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        monkeypatch.setattr(torch.hub, "_hub_dir", None)
        assert hub.get_dir() == torch.hub.get_dir()


def test_load_state_dict_from_url_downloads_once_into_the_cache(server, hub_home, capsys):
    root, base = server
    path, state = _checkpoint(root, "weights")
    url = f"{base}/{path.name}"
    got = hub.load_state_dict_from_url(url, check_hash=True, progress=False)
    assert set(got) == {"w", "b"}
    np.testing.assert_array_equal(got["w"].numpy(), state["w"].numpy())
    cached = hub_home / "hub" / "checkpoints" / path.name
    assert cached.read_bytes() == path.read_bytes()
    assert f'Downloading: "{url}" to {cached}' in capsys.readouterr().err
    # second call: served from the cache (the server no longer has the file)
    path.unlink()
    again = hub.load_state_dict_from_url(url, progress=False)
    np.testing.assert_array_equal(again["b"].numpy(), state["b"].numpy())
    assert "Downloading" not in capsys.readouterr().err
    assert [p.name for p in cached.parent.iterdir()] == [path.name]  # no temp files left


def test_load_state_dict_from_url_model_dir_file_name_and_map_location(server, hub_home):
    root, base = server
    path, _ = _checkpoint(root, "w")
    got = hub.load_state_dict_from_url(f"{base}/{path.name}", model_dir=str(hub_home / "m"),
                                       file_name="renamed.pt", map_location="cpu",
                                       progress=False)
    assert (hub_home / "m" / "renamed.pt").exists()
    assert got["w"].device.type == "cpu"


def test_hash_mismatch_is_refused_and_leaves_nothing_behind(server, hub_home):
    root, base = server
    path, _ = _checkpoint(root, "w")
    bad = root / "w-0123abcd.pt"
    path.rename(bad)
    with pytest.raises(RuntimeError, match=r'invalid hash value \(expected "0123abcd", got'):
        hub.load_state_dict_from_url(f"{base}/{bad.name}", check_hash=True, progress=False)
    folder = hub_home / "hub" / "checkpoints"
    assert list(folder.iterdir()) == []
    # without check_hash the same file is accepted
    hub.load_state_dict_from_url(f"{base}/{bad.name}", progress=False)
    assert [p.name for p in folder.iterdir()] == [bad.name]


def test_download_url_to_file_http_error_leaves_nothing(server, tmp_path):
    _, base = server
    import urllib.error

    dst = tmp_path / "out" / "f.bin"
    dst.parent.mkdir()
    with pytest.raises(urllib.error.HTTPError):
        hub.download_url_to_file(f"{base}/missing.bin", str(dst), progress=False)
    assert list(dst.parent.iterdir()) == []


def test_download_url_to_file_with_progress_bar(server, tmp_path, capsys, monkeypatch):
    pytest.importorskip("tqdm")
    root, base = server
    (root / "blob.bin").write_bytes(b"x" * 300_000)
    dst = tmp_path / "blob.bin"
    digest = hashlib.sha256(b"x" * 300_000).hexdigest()
    hub.download_url_to_file(f"{base}/blob.bin", str(dst), hash_prefix=digest[:10])
    assert dst.read_bytes() == b"x" * 300_000
    assert capsys.readouterr().err == ""  # stderr is not a terminal: no bar in a log file
    dst.unlink()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a terminal: tqdm draws
    hub.download_url_to_file(f"{base}/blob.bin", str(dst), hash_prefix=digest[:10])
    assert dst.read_bytes() == b"x" * 300_000
    assert "293k" in capsys.readouterr().err  # tqdm's byte count (KiB units)


def test_pytorch_reads_the_same_cache_layout(server, hub_home, monkeypatch):
    torch = pytest.importorskip("torch")
    root, base = server
    path, state = _checkpoint(root, "pt")
    url = f"{base}/{path.name}"
    monkeypatch.setattr(torch.hub, "_hub_dir", None)
    theirs = torch.hub.load_state_dict_from_url(url, check_hash=True, progress=False)
    path.unlink()  # ember must find PyTorch's cached file
    ours = hub.load_state_dict_from_url(url, check_hash=True, progress=False)
    np.testing.assert_array_equal(ours["w"].numpy(), theirs["w"].numpy())


def test_hub_load_local_hubconf_and_github_refused(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(
        "dependencies = ['numpy']\n"
        "def tiny(n=2):\n"
        "    '''A tiny model.'''\n"
        "    import ember\n"
        "    return ember.nn.Linear(n, 1)\n"
    )
    m = hub.load(str(repo), "tiny", 3, source="local")
    assert m.weight.shape == (1, 3)
    assert hub._load_local(str(repo), "tiny", n=4).weight.shape == (1, 4)
    assert hub._get_torch_home().endswith("torch") or "TORCH_HOME" in os.environ
    with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
        hub.load(str(repo), "nope", source="local")
    with pytest.raises(NotImplementedError, match="torch.hub.load.*GitHub"):
        hub.load("pytorch/vision", "resnet18")
    for fn, args in ((hub.list, ("pytorch/vision",)), (hub.help, ("pytorch/vision", "x"))):
        with pytest.raises(NotImplementedError, match="GitHub"):
            fn(*args)


# --- torch.utils._pytree -----------------------------------------------------------------------

Pt = collections.namedtuple("Pt", "x y")

TREES = [
    {"b": [1, (2, 3)], "a": None, "c": Pt(4, 5), "d": collections.OrderedDict([("z", 6), ("y", 7)])},
    [], (), 5, None, [[[]]], {"x": ()}, [1, [2, [3, [4]]]], {"b": 1, "a": 2},
    collections.deque([1, 2], maxlen=3), collections.defaultdict(list, {"k": [1]}),
]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_pytree_round_trip(tree):
    leaves, spec = pytree.tree_flatten(tree)
    assert pytree.tree_unflatten(leaves, spec) == tree
    assert spec.num_leaves == len(leaves)
    assert pytree.tree_structure(tree) == spec
    assert pytree.tree_leaves(tree) == leaves


@pytest.mark.parametrize("tree", TREES[:-2], ids=range(len(TREES) - 2))
def test_pytree_matches_pytorch_leaf_order_and_spec(tree):
    tp = pytest.importorskip("torch.utils._pytree")
    l1, s1 = tp.tree_flatten(tree)
    l2, s2 = pytree.tree_flatten(tree)
    assert l1 == l2
    assert repr(s1) == repr(s2)
    assert (s1.num_leaves, s1.num_nodes) == (s2.num_leaves, s2.num_nodes)


def test_pytree_leaves_none_and_tensors_and_tree_map():
    t = ember.ones(2)
    leaves, spec = pytree.tree_flatten({"t": t, "n": None, "l": [t]})
    assert leaves[0] is t and leaves[1] is None and leaves[2] is t
    doubled = pytree.tree_map(lambda v: v * 2 if v is not None else v,
                              {"a": [1, 2], "b": (3, None)})
    assert doubled == {"a": [2, 4], "b": (6, None)}
    paired = pytree.tree_map(lambda a, b: (a, b), [1, (2, 3)], [10, (20, [30])])
    assert paired == [(1, 10), ((2, 20), (3, [30]))]  # a rest may nest deeper below a leaf
    with pytest.raises(ValueError):
        pytree.tree_map(lambda a, b: a, [1, 2], [1])
    assert pytree.tree_map_only(int, lambda v: -v, [1, "a", 2.5]) == [-1, "a", 2.5]
    assert pytree.tree_all(lambda v: v > 0, [1, (2,)]) and not pytree.tree_any(
        lambda v: v > 5, [1, (2,)])
    assert pytree.tree_is_leaf(3) and not pytree.tree_is_leaf([3])
    assert pytree.tree_leaves([1, [2, 3]], is_leaf=lambda v: v == [2, 3]) == [1, [2, 3]]


def test_pytree_unflatten_wrong_count_message():
    _, spec = pytree.tree_flatten([1, 2])
    with pytest.raises(ValueError, match="`leaves` has length 1 but the spec refers to a pytree "
                                         "that holds 2 items"):
        pytree.tree_unflatten([1], spec)


def test_register_pytree_node():
    class Box:
        def __init__(self, a, b):
            self.a, self.b = a, b

    pytree.register_pytree_node(Box, lambda x: ([x.a, x.b], None), lambda v, c: Box(*v))
    try:
        leaves, spec = pytree.tree_flatten([Box(1, [2, 3])])
        assert leaves == [1, 2, 3]
        rebuilt = pytree.tree_unflatten([4, 5, 6], spec)
        assert isinstance(rebuilt[0], Box) and rebuilt[0].a == 4 and rebuilt[0].b == [5, 6]
        with pytest.raises(ValueError, match="already registered"):
            pytree.register_pytree_node(Box, lambda x: ([], None), lambda v, c: Box(0, 0))
    finally:
        del pytree.SUPPORTED_NODES[Box]


def test_pytree_deep_nesting_has_no_recursion_limit():
    tree: list = []
    for _ in range(5000):
        tree = [tree, 1]
    leaves, spec = pytree.tree_flatten(tree)
    assert len(leaves) == 5000
    rebuilt = pytree.tree_unflatten(leaves, spec)
    depth = 0
    while rebuilt:  # walk down (== on such deep lists would itself hit the recursion limit)
        assert rebuilt[1] == 1
        rebuilt, depth = rebuilt[0], depth + 1
    assert depth == 5000


# --- torch._dynamo -----------------------------------------------------------------------------


def test_dynamo_config_set_get_patch_and_unknown_names():
    import ember._dynamo as dynamo

    cfg = dynamo.config
    try:
        assert cfg.suppress_errors is False and cfg.cache_size_limit == 8
        cfg.suppress_errors = True
        cfg.cache_size_limit = 64
        assert ember._dynamo.config.suppress_errors is True and cfg.cache_size_limit == 64
        with cfg.patch(cache_size_limit=3, verbose=True):
            assert cfg.cache_size_limit == 3 and cfg.verbose is True
        assert cfg.cache_size_limit == 64 and cfg.verbose is False

        @cfg.patch("verbose", True)
        def read():
            return cfg.verbose

        assert read() is True and cfg.verbose is False
        with pytest.raises(AttributeError, match="torch._dynamo.config.nonexistent does not exist"):
            cfg.nonexistent = 1
        with pytest.raises(AttributeError, match="does not exist"):
            _ = cfg.nonexistent
        saved = cfg.save_config()
        cfg.verbose = True
        cfg.load_config(saved)
        assert cfg.verbose is False
    finally:
        cfg._reset()
    assert cfg.suppress_errors is False


def test_dynamo_config_defaults_match_pytorch():
    pytest.importorskip("torch")
    import torch._dynamo.config as tc

    import ember._dynamo.config as ec

    for name in ["suppress_errors", "cache_size_limit", "recompile_limit", "verbose",
                 "capture_scalar_outputs", "automatic_dynamic_shapes", "optimize_ddp",
                 "accumulated_cache_size_limit", "assume_static_by_default", "specialize_int"]:
        assert getattr(ec, name) == getattr(tc, name), name


def test_dynamo_functions():
    import ember._dynamo as dynamo

    assert dynamo.reset() is None

    def f(x):
        return x + 1

    assert dynamo.disable(f) is f and dynamo.disable(recursive=False)(f) is f
    assert dynamo.allow_in_graph(f) is f and dynamo.is_compiling() is False
    dynamo.mark_dynamic(ember.ones(2), 0)
    g = dynamo.optimize("inductor")(f)
    assert g(1) == 2
    assert dynamo.explain(f)(ember.ones(1)).graph_count == 1  # (tests/test_dynamo_explain.py)
    with dynamo.set_stance("force_eager"):
        pass
    assert dynamo.list_backends() == ["cudagraphs", "inductor", "openxla", "tvm"]


# --- torch.nn.attention ------------------------------------------------------------------------


def test_sdpa_kernel_sets_and_restores_the_backend_switches():
    from ember.backends import cuda
    from ember.nn.attention import SDPBackend, sdpa_kernel

    q = ember.randn(1, 2, 3, 4)
    ref = nn.functional.scaled_dot_product_attention(q, q, q).numpy()
    assert cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    with sdpa_kernel(SDPBackend.MATH):
        assert not cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
        assert not cuda.mem_efficient_sdp_enabled() and not cuda.cudnn_sdp_enabled()
        out = nn.functional.scaled_dot_product_attention(q, q, q).numpy()
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
        assert cuda.flash_sdp_enabled() and not cuda.math_sdp_enabled()
        out2 = nn.functional.scaled_dot_product_attention(q, q, q).numpy()
    assert cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    np.testing.assert_array_equal(out, ref)  # ember's one kernel runs either way
    np.testing.assert_array_equal(out2, ref)
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
        with sdpa_kernel("math"):
            pass
    with pytest.raises(ValueError), sdpa_kernel(SDPBackend.MATH):
        raise ValueError  # switches restored even when the block raises
    assert cuda.flash_sdp_enabled()


def test_sdpa_backend_members_match_pytorch():
    torch_attn = pytest.importorskip("torch.nn.attention")
    from ember.nn.attention import SDPBackend

    for name, member in torch_attn.SDPBackend.__members__.items():
        assert SDPBackend[name].value == member.value
    assert SDPBackend is ember.backends.cuda.SDPBackend
    from ember.backends import cuda

    with torch_attn.sdpa_kernel(torch_attn.SDPBackend.MATH):
        import torch

        theirs = (torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.math_sdp_enabled())
    from ember.nn.attention import sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):
        ours = (cuda.flash_sdp_enabled(), cuda.math_sdp_enabled())
    assert ours == theirs


def test_jit_internal_markers_as_pytorchs():
    """``torch._jit_internal``'s markers that libraries import (pyro: _copy_to_script_wrapper)
    behave as PyTorch's outside TorchScript."""
    torch = pytest.importorskip("torch")
    from ember import _jit_internal as ours

    theirs = torch._jit_internal
    for mod in (ours, theirs):
        f = mod._copy_to_script_wrapper(lambda: 3)
        assert f() == 3
        assert f._torchscript_modifier == mod.FunctionModifiers.COPY_TO_SCRIPT_WRAPPER
        g = mod.boolean_dispatch("flag", 1, False, lambda a, flag=False: ("t", a),
                                 lambda a, flag=False: ("f", a), "m", "g")
        assert (g(1), g(1, True), g(1, flag=True), g.__name__) == (("f", 1), ("t", 1),
                                                                    ("t", 1), "g")
        assert mod.is_scripting() is False
    names = {n for n in vars(theirs.FunctionModifiers) if not n.startswith("__")}
    assert {n: getattr(ours.FunctionModifiers, n) for n in names} == \
        {n: getattr(theirs.FunctionModifiers, n) for n in names}
