"""torch.fx: symbolic_trace of plain modules into a GraphModule that runs, against real torch.fx
on the same modules (same node ops and targets, same generated code where PyTorch's has no
extra keyword arguments, same outputs and gradients), Graph editing, Interpreter, TraceError on
control flow; torchvision's feature extraction on resnet18 against real torchvision."""

from __future__ import annotations

import copy
import math
import pickle
import subprocess
import sys

import numpy as np
import pytest
from vision_reference import real_torchvision

import ember
import ember.fx as fx
import ember.nn.functional as EF
from ember import flatten as ember_flatten  # a namespace function bound directly in globals

try:
    import torch
    import torch.fx
    import torch.nn.functional as TF
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")


def leaf_fn(x, n):
    """A function fx.wrap makes a leaf: its control flow would stop a trace."""
    if n > 1:
        return x * n
    return x


fx.wrap("leaf_fn")
if torch is not None:
    torch.fx.wrap("leaf_fn")


def helper(x):
    """Control flow: only traceable as a leaf (``autowrap_functions``)."""
    return x * 2 if x.dim() > 0 else x


def builders(T, F):
    """The test modules, written once for a namespace ``T`` (ember or torch)."""
    nn = T.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
            self.head = nn.Linear(4, 3)

        def forward(self, x):
            return self.head(self.net(x))

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, padding=1)
            self.bn = nn.BatchNorm2d(6)
            self.pool = nn.MaxPool2d(2)
            self.conv2 = nn.Conv2d(6, 4, 3)
            self.avg = nn.AdaptiveAvgPool2d((2, 2))
            self.fc = nn.Linear(16, 5)

        def forward(self, x):
            x = self.pool(F.relu(self.bn(self.conv(x))))
            x = self.avg(self.conv2(x))
            return self.fc(T.flatten(x, 1))

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.conv2 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(4)
            self.relu = nn.ReLU()

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += x
            return self.relu(out)

    class Functional(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 6)
            self.scale = nn.Parameter(T.full((6,), 0.5))
            self.register_buffer("shift", T.arange(6, dtype=T.float32) / 10)

        def forward(self, x):
            y = self.lin(x) * self.scale + self.shift
            a, b = y.chunk(2, dim=1)
            z = T.cat([T.sigmoid(a), T.tanh(b)], 1)
            z = z.view(z.size(0), -1) + 2 * y - y / 3
            z = z @ self.lin.weight.t()
            w = z[:, 1:4].mean(dim=1, keepdim=True) + z.shape[1]
            m = T.add(w, x.sum(-1, keepdim=True), alpha=2)
            return T.softmax(z * m, dim=-1) + math.sqrt(z.shape[0])

    class Wrapped(nn.Module):
        def forward(self, x):
            return leaf_fn(x, 3) + 1

    class Flag(nn.Module):
        def forward(self, x, double=False):
            if double:
                return x * 2
            return x

    return {"MLP": MLP, "CNN": CNN, "Residual": Residual, "Functional": Functional,
            "Wrapped": Wrapped, "Flag": Flag}


E = builders(ember, EF)
T = builders(torch, TF) if torch is not None else {}
INPUTS = {"MLP": (5, 8), "CNN": (2, 3, 10, 10), "Residual": (2, 4, 6, 6), "Functional": (4, 6),
          "Wrapped": (3, 4)}


def _norm(t):
    if isinstance(t, str):
        return t
    mod = getattr(t, "__module__", None) or ""
    name = getattr(t, "__name__", repr(t))
    if mod in ("_operator", "operator"):
        return f"operator.{name}"
    if mod == "builtins" or t is getattr:
        return f"builtins.{name}"
    if mod == "math":
        return f"math.{name}"
    return name


def _ops(gm):
    return [(n.op, _norm(n.target)) for n in gm.graph.nodes]


def _pair(name, ctor_e=None, ctor_t=None):
    """An ember module and the torch module with the same weights."""
    ember.manual_seed(0)
    m = (ctor_e or E[name])()
    if torch is None:
        return m, None
    t = (ctor_t or T[name])()
    t.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                       for k, v in m.state_dict().items()})
    return m, t


def _resnet_pair():
    from ember.vision.models import resnet18

    tv = real_torchvision()
    if tv is None:
        pytest.skip("real torchvision not installed")
    return _pair("resnet18", resnet18, tv.models.resnet18)


MODULES = ["MLP", "CNN", "Residual", "Functional", "Wrapped"]


@needs_torch
@pytest.mark.parametrize("name", MODULES + ["resnet18"])
def test_graph_nodes_match_torch_fx(name):
    m, t = _resnet_pair() if name == "resnet18" else _pair(name)
    gm, tgm = fx.symbolic_trace(m), torch.fx.symbolic_trace(t)
    assert _ops(gm) == _ops(tgm)
    assert [n.name for n in gm.graph.nodes] == [n.name for n in tgm.graph.nodes]
    assert type(gm).__name__ == type(tgm).__name__
    # (PyTorch's F.relu nodes also carry inplace=False)
    assert str(gm.graph) == str(tgm.graph).replace(", kwargs = {inplace: False}", ", kwargs = {}")
    gm.graph.lint()


@needs_torch
@pytest.mark.parametrize("name", MODULES + ["resnet18"])
def test_generated_code_reads_as_torch_fx(name):
    m, t = _resnet_pair() if name == "resnet18" else _pair(name)
    ours = fx.symbolic_trace(m).code
    theirs = torch.fx.symbolic_trace(t).code
    # PyTorch writes F.relu's default inplace=False into the call; ember records what was passed
    assert ours == theirs.replace(", inplace = False", "")
    assert "x = None" in ours  # values freed after their last use


@needs_torch
@pytest.mark.parametrize("name", MODULES + ["resnet18"])
def test_outputs_gradients_and_state_dict_match(name):
    m, t = _resnet_pair() if name == "resnet18" else _pair(name)
    dtype = np.float32
    if name == "resnet18":  # float64: float32 rounding through 20 train-mode BatchNorms
        m, t, dtype = m.double(), t.double(), np.float64  # differs between any two libraries
    ref = copy.deepcopy(m)
    gm, tgm = fx.symbolic_trace(m), torch.fx.symbolic_trace(t)
    assert list(gm.state_dict()) == list(m.state_dict()) == list(tgm.state_dict())
    shape = (2, 3, 32, 32) if name == "resnet18" else INPUTS[name]
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    for mode in (True, False):
        gm.train(mode)
        ref.train(mode)
        tgm.train(mode)
        xe = ember.tensor(x, requires_grad=True)
        xr = ember.tensor(x, requires_grad=True)
        xt = torch.tensor(x, requires_grad=True)
        out, out_ref, out_t = gm(xe), ref(xr), tgm(xt)
        assert out.dtype == (ember.float32 if dtype is np.float32 else ember.float64)
        np.testing.assert_array_equal(out.detach().numpy(), out_ref.detach().numpy())
        np.testing.assert_allclose(out.detach().numpy(), out_t.detach().numpy(), rtol=1e-4,
                                   atol=1e-4)
        cot = np.random.default_rng(2).standard_normal(out.shape).astype(dtype)
        (out * ember.tensor(cot)).sum().backward()
        (out_ref * ember.tensor(cot)).sum().backward()
        (out_t * torch.tensor(cot)).sum().backward()
        np.testing.assert_array_equal(xe.grad.numpy(), xr.grad.numpy())
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-3, atol=1e-4)
        tparams = dict(tgm.named_parameters())
        for (k, p), (k2, p2) in zip(gm.named_parameters(), ref.named_parameters()):
            assert k == k2
            np.testing.assert_allclose(p.grad.numpy(), p2.grad.numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(p.grad.numpy(), tparams[k].grad.numpy(), rtol=1e-3,
                                       atol=1e-3)
        gm.zero_grad()
        ref.zero_grad()
        tgm.zero_grad()


def test_namespace_functions_bound_in_globals_are_recorded():
    class M(ember.nn.Module):
        def forward(self, x):
            return ember_flatten(x, 1)

    gm = fx.symbolic_trace(M())
    assert _ops(gm)[1] == ("call_function", "flatten")
    assert "torch.flatten(x, 1)" in gm.code
    assert gm(ember.ones(2, 3, 4)).shape == (2, 12)
    assert ember_flatten is ember.flatten  # patches undone after the trace


def test_patches_are_undone_even_when_the_trace_fails():
    add, relu, call = ember.add, EF.relu, ember.nn.Module.__call__

    class Bad(ember.nn.Module):
        def forward(self, x):
            y = ember.add(EF.relu(x), 1)
            if y.sum() > 0:
                return y
            return -y

    with pytest.raises(fx.proxy.TraceError):
        fx.symbolic_trace(Bad())
    assert ember.add is add and EF.relu is relu and ember.nn.Module.__call__ is call
    assert not fx._symbolic_trace.is_fx_tracing()


@needs_torch
def test_control_flow_raises_trace_error_like_torch():
    class C(ember.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x

    class TC(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x

    with pytest.raises(torch.fx.proxy.TraceError) as theirs:
        torch.fx.symbolic_trace(TC())
    with pytest.raises(fx.proxy.TraceError) as ours:
        fx.symbolic_trace(C())
    assert str(ours.value) == str(theirs.value)
    assert isinstance(ours.value, ValueError)


def test_proxy_len_and_loops_are_refused_unpacking_works():
    def uses_len(x):
        return x + len(x)

    def loops(x):
        return sum(v for v in x)

    with pytest.raises(RuntimeError, match="'len' is not supported"):
        fx.symbolic_trace(uses_len)
    with pytest.raises(fx.proxy.TraceError, match="cannot be iterated"):
        fx.symbolic_trace(loops)

    def unpack(x):
        a, b = x.unbind(0)
        return a - b

    gm = fx.symbolic_trace(unpack)
    assert [n.target for n in gm.graph.nodes][1:4] == ["unbind", *[__import__("operator")
                                                                   .getitem] * 2]
    x = ember.randn(2, 3)
    np.testing.assert_array_equal(gm(x).numpy(), (x[0] - x[1]).numpy())


@needs_torch
def test_concrete_args_specialise_like_torch():
    m, t = E["Flag"](), T["Flag"]()
    gm = fx.symbolic_trace(m, concrete_args={"double": True})
    tgm = torch.fx.symbolic_trace(t, concrete_args={"double": True})
    assert _ops(gm) == _ops(tgm)
    assert [n.name for n in gm.graph.nodes] == [n.name for n in tgm.graph.nodes]
    x = ember.ones(3)
    np.testing.assert_array_equal(gm(x, True).numpy(), [2, 2, 2])
    for g in (gm, tgm):  # the default (False) is not the specialised value
        with pytest.raises(AssertionError, match="specialized to have value True"):
            g(x) if g is gm else g(torch.ones(3))


def test_wrap_autowrap_functions_and_leaf_modules():
    gm = fx.symbolic_trace(E["Wrapped"]())
    assert ("call_function", "leaf_fn") in _ops(gm)
    assert 'torch.fx._symbolic_trace.wrap("test_fx_leaf_fn")' in gm.code
    np.testing.assert_array_equal(gm(ember.ones(2)).numpy(), [4, 4])

    class H(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = E["MLP"]()

        def forward(self, x):
            return helper(self.inner(x))

    with pytest.raises(fx.proxy.TraceError):
        fx.symbolic_trace(H())
    tracer = fx.Tracer(autowrap_functions=(helper,))
    graph = tracer.trace(H())
    assert ("call_function", "helper") in [(n.op, _norm(n.target)) for n in graph.nodes]

    class InnerLeaf(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return qualname == "inner" or super().is_leaf_module(m, qualname)

    graph = InnerLeaf(autowrap_functions=(helper,)).trace(H())
    assert [(n.op, n.target) for n in graph.nodes][1] == ("call_module", "inner")
    gm = fx.GraphModule(tracer.root, graph)
    x = ember.randn(2, 8)
    np.testing.assert_array_equal(gm(x).detach().numpy(), H.forward(tracer.root, x)
                                  .detach().numpy())


def test_standard_modules_are_leaves_sequential_is_not():
    t = fx.Tracer()
    assert t.is_leaf_module(ember.nn.Linear(2, 2), "lin")
    assert t.is_leaf_module(ember.nn.BatchNorm2d(2), "bn")
    assert not t.is_leaf_module(ember.nn.Sequential(), "seq")
    assert not t.is_leaf_module(E["MLP"](), "mlp")


def test_tensor_constants_become_get_attr():
    class K(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.plain = ember.ones(3)

        def forward(self, x):
            return x + self.plain + ember.arange(3, dtype=ember.float32)

    gm = fx.symbolic_trace(K())
    gets = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    assert gets == ["plain", "_tensor_constant0"]
    np.testing.assert_array_equal(gm(ember.zeros(3)).numpy(), [1, 2, 3])


def test_graph_editing_and_recompile():
    m = E["MLP"]()
    gm = fx.symbolic_trace(m)
    g = gm.graph
    head = next(n for n in g.nodes if n.target == "head")
    with g.inserting_after(head):
        neg = g.create_node("call_function", ember.neg, (head,), name="negate")
    head.replace_all_uses_with(neg, delete_user_cb=lambda user: user is not neg)
    assert list(neg.users)[0].op == "output" and neg.args == (head,)
    g.lint()
    gm.recompile()
    assert "negate = torch.neg(head)" in gm.code
    x = ember.randn(2, 8)
    expected = -m(x)
    np.testing.assert_allclose(gm(x).detach().numpy(), expected.detach().numpy())

    with pytest.raises(RuntimeError, match="still had 1 users"):
        g.erase_node(head)
    # a dead node is removed by eliminate_dead_code
    with g.inserting_before(neg):
        g.call_method("exp", (head,))
    assert len(g.nodes) == 8
    assert g.eliminate_dead_code()
    assert len(g.nodes) == 7 and not g.eliminate_dead_code()
    # lint catches a use before definition
    first = next(iter(g.nodes))
    user = next(n for n in g.nodes if n.op == "call_module")
    user.args = (neg,)
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        g.lint()
    assert first.name == "x"


def test_graph_printing(capsys):
    gm = fx.symbolic_trace(E["CNN"]())
    gm.graph.print_tabular()
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert table[2].split()[:3] == ["placeholder", "x", "x"]
    assert any("torch.flatten" in row for row in table)
    text = str(gm.graph)
    assert text.startswith("graph():\n    %x : [num_users=1] = placeholder[target=x]")
    assert "call_function[target=torch.flatten](args = (%avg, 1), kwargs = {})" in text
    readable = gm.print_readable(print_output=False)
    assert readable.startswith("class CNN(torch.nn.Module):\n    def forward(self, x):")
    node = next(n for n in gm.graph.nodes if n.op == "call_module")
    assert (node.name, node.target, node.args, node.kwargs) == ("conv", "conv", (node.prev,), {})
    assert list(node.users) == [node.next] and repr(node) == "conv"


def test_interpreter_runs_the_graph():
    m = E["Functional"]()
    gm = fx.symbolic_trace(m)
    x = ember.randn(4, 6)
    np.testing.assert_allclose(fx.Interpreter(gm).run(x).detach().numpy(),
                               m(x).detach().numpy(), rtol=1e-6)

    class Counting(fx.Interpreter):
        calls = 0

        def call_function(self, target, args, kwargs):
            Counting.calls += 1
            return super().call_function(target, args, kwargs)

    Counting(gm).run(x)
    assert Counting.calls == sum(n.op == "call_function" for n in gm.graph.nodes)


def test_trace_a_function_and_copy_and_pickle():
    def f(x, y):
        return ember.add(x, y).relu() * 2

    gm = fx.symbolic_trace(f)
    assert type(gm).__name__ == "f"
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "placeholder", "call_function",
                                              "call_method", "call_function", "output"]
    x, y = ember.randn(3), ember.randn(3)
    expected = f(x, y).numpy()
    for clone in (copy.deepcopy(gm), pickle.loads(pickle.dumps(gm))):
        np.testing.assert_array_equal(clone(x, y).numpy(), expected)
        assert clone.code == gm.code
    m = E["CNN"]()
    gm2 = fx.symbolic_trace(m)
    dup = copy.deepcopy(gm2)
    assert dup.conv.weight is not m.conv.weight
    xi = ember.randn(1, 3, 8, 8)
    m.eval()
    dup.eval()
    np.testing.assert_array_equal(dup(xi).detach().numpy(), m(xi).detach().numpy())


def test_import_ember_does_not_load_fx():
    code = "import sys, ember; print('ember.fx' in sys.modules)"
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "False"


# --- torchvision's feature extraction --------------------------------------------------------


def _tv_pair():
    tv = real_torchvision()
    if tv is None:
        pytest.skip("real torchvision not installed")
    return _resnet_pair(), tv


def test_graph_node_names_match_torchvision():
    from torchvision.models.feature_extraction import get_graph_node_names as theirs

    from ember.vision.models.feature_extraction import get_graph_node_names

    (m, t), _ = _tv_pair()
    ours = get_graph_node_names(m)
    assert ours == theirs(t)
    assert ours[0][:6] == ["x", "conv1", "bn1", "relu", "maxpool", "layer1.0.conv1"]
    assert "layer1.0.relu_1" in ours[0] and ours[0][-2:] == ["flatten", "fc"]


@pytest.mark.parametrize("return_nodes", [{"layer1": "feat1", "layer4": "feat4"},
                                          ["layer1.0.relu_1", "layer2.0.add", "flatten"]])
def test_create_feature_extractor_matches_torchvision(return_nodes):
    from torchvision.models.feature_extraction import create_feature_extractor as theirs

    from ember.vision.models.feature_extraction import create_feature_extractor

    (m, t), _ = _tv_pair()
    fe = create_feature_extractor(m, return_nodes=return_nodes)
    tfe = theirs(t, return_nodes=return_nodes)
    assert type(fe).__name__ == "ResNet"
    assert fe.code == tfe.code
    assert list(fe.state_dict()) == list(tfe.state_dict())
    x = np.random.default_rng(3).standard_normal((2, 3, 64, 64)).astype(np.float32)
    for mode in (False, True):
        fe.train(mode)
        tfe.train(mode)
        out, tout = fe(ember.tensor(x)), tfe(torch.tensor(x))
        assert list(out) == list(tout)
        for k in out:
            assert out[k].dtype == ember.float32
            np.testing.assert_allclose(out[k].detach().numpy(), tout[k].detach().numpy(),
                                       rtol=1e-4, atol=1e-4)
    assert m.training  # the model's own mode is left as it was


def test_create_feature_extractor_errors():
    from ember.vision.models import resnet18
    from ember.vision.models.feature_extraction import create_feature_extractor

    m = resnet18()
    with pytest.raises(ValueError, match="node: 'layer9' is not present in model"):
        create_feature_extractor(m, return_nodes=["layer9"])
    with pytest.raises(ValueError, match="Either `return_nodes`"):
        create_feature_extractor(m)
    with pytest.raises(ValueError, match="then both should be specified"):
        create_feature_extractor(m, train_return_nodes=["layer1"])
    fe = create_feature_extractor(m, train_return_nodes=["layer1"],
                                  eval_return_nodes=["layer2"])
    x = ember.randn(1, 3, 32, 32)
    assert list(fe.train()(x)) == ["layer1"]
    assert list(fe.eval()(x)) == ["layer2"]
    assert not any(k.startswith("fc.") for k in fe.state_dict())


def test_transformer_rewrites_a_graph():
    class ReluToSigmoid(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is EF.relu:
                target = ember.sigmoid
            return super().call_function(target, args, kwargs)

    m = E["CNN"]().eval()
    gm = ReluToSigmoid(fx.symbolic_trace(m)).transform()
    targets = [_norm(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert targets == ["sigmoid", "flatten"]
    gm.eval()
    x = ember.randn(1, 3, 10, 10)
    expected = m.fc(ember.flatten(m.avg(m.conv2(m.pool(ember.sigmoid(m.bn(m.conv(x)))))), 1))
    np.testing.assert_allclose(gm(x).detach().numpy(), expected.detach().numpy(), rtol=1e-6)


def test_submodule_editing_and_side_effects():
    gm = fx.symbolic_trace(E["MLP"]())
    assert gm.add_submodule("extra.inner", ember.nn.ReLU())
    assert isinstance(gm.get_submodule("extra.inner"), ember.nn.ReLU)
    gm.delete_all_unused_submodules()
    assert not hasattr(gm, "extra") and hasattr(gm, "head")
    assert not gm.delete_submodule("nothing.here")
    assert gm.delete_submodule("head") and not hasattr(gm, "head")

    def log(x):
        return x

    fx.has_side_effect(log)
    g = fx.Graph()
    x = g.placeholder("x")
    g.call_function(log, (x,))
    g.call_function(ember.neg, (x,))
    g.output(x)
    assert g.eliminate_dead_code()
    assert [n.op for n in g.nodes] == ["placeholder", "call_function", "output"]


@needs_torch
def test_subclass_of_a_standard_module_is_traced_through_like_torch():
    class MyConv(ember.nn.Conv2d):
        pass

    class TMyConv(torch.nn.Conv2d):
        pass

    class MyLin(ember.nn.Linear):
        pass

    class TMyLin(torch.nn.Linear):
        pass

    for ours, theirs, shape in ((MyConv(3, 2, 3), TMyConv(3, 2, 3), (1, 3, 5, 5)),
                                (MyLin(3, 2), TMyLin(3, 2), (2, 3))):
        gm = fx.symbolic_trace(ours)
        assert _ops(gm) == _ops(torch.fx.symbolic_trace(theirs))
        x = ember.randn(*shape)
        np.testing.assert_array_equal(gm(x).detach().numpy(), ours(x).detach().numpy())


def test_erasing_the_next_node_while_iterating():
    gm = fx.symbolic_trace(E["MLP"]())
    g = gm.graph
    before = len(g.nodes)
    x = next(iter(g.nodes))
    with g.inserting_after(x):
        first = g.call_function(ember.exp, (x,))
        second = g.call_function(ember.neg, (x,))
    visited = []
    for n in g.nodes:
        visited.append(n)
        if n is first:
            g.erase_node(second)  # the node the loop visits next
    assert second not in visited and first in visited
    assert len(visited) == before + 1 == len(g.nodes)
    g.erase_node(first)
    g.lint()
    assert len(g.nodes) == before
