"""nn.Module, Parameter and the containers: registration, state_dict (keys, values, errors) vs
PyTorch, conversion, modes, hooks, repr."""

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn
from helpers import HAVE_TORCH, randn

if HAVE_TORCH:
    import torch

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="parity test needs torch")


def _build(m):
    """The same nested architecture from ember.nn or torch.nn (``m`` is the nn module)."""

    class Block(m.Module):
        def __init__(self):
            super().__init__()
            self.fc = m.Linear(4, 4)
            self.act = m.GELU()
            self.register_buffer("scale", m.Parameter(m.Linear(1, 1).weight.data.new_ones(4)).data)
            self.register_buffer("cache", m.Linear(1, 1).weight.data.new_zeros(2), persistent=False)

        def forward(self, x):
            return self.act(self.fc(x)) * self.scale

    class Net(m.Module):
        def __init__(self):
            super().__init__()
            self.emb = m.Embedding(10, 4, padding_idx=0)
            self.blocks = m.ModuleList([Block(), Block()])
            self.heads = m.ModuleDict({"a": m.Linear(4, 3), "b": m.Sequential(m.Linear(4, 2), m.Tanh())})
            self.extra = m.ParameterList([m.Parameter(m.Linear(1, 1).weight.data.new_ones(3))])
            self.pd = m.ParameterDict({"alpha": m.Parameter(m.Linear(1, 1).weight.data.new_ones(1))})
            self.prelu = m.PReLU(4)
            self.drop = m.Dropout(0.2)
            self.tail = m.Sequential(OrderedDict([("proj", m.Linear(4, 2)), ("out", m.Identity())]))
            self.bil = m.Bilinear(4, 4, 2)

        def forward(self, idx):
            h = self.emb(idx).mean(1)
            for blk in self.blocks:
                h = blk(h)
            h = self.prelu(self.drop(h))
            return (self.heads["a"](h).sum(-1) + self.heads["b"](h).sum(-1)
                    + self.tail(h).sum(-1) + self.bil(h, h).sum(-1) + self.extra[0].sum() + self.pd["alpha"])

    return Net()


# -- Parameter ----------------------------------------------------------------------------------


def test_parameter_basics():
    t = ember.tensor([1.0, 2.0])
    p = nn.Parameter(t)
    assert isinstance(p, ember.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf
    assert np.shares_memory(p.numpy(force=True), t.numpy())  # no copy
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    assert repr(nn.Parameter(ember.tensor([1, 2]), requires_grad=False)) == \
        "Parameter containing:\ntensor([1, 2])"
    q = p * 2
    assert type(q) is ember.Tensor and not isinstance(q, nn.Parameter)
    assert type(p.detach()) is ember.Tensor
    assert tuple(nn.Parameter().shape) == (0,)
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(ember.tensor([1, 2]))
    d = copy.deepcopy(p)
    assert type(d) is nn.Parameter and d.requires_grad and d is not p
    np.testing.assert_array_equal(d.detach().numpy(), [1, 2])
    r = pickle.loads(pickle.dumps(p))
    assert type(r) is nn.Parameter and r.requires_grad


@needs_torch
def test_parameter_repr_matches_torch():
    a = randn(2, 3).astype(np.float32)
    assert repr(nn.Parameter(ember.tensor(a))) == repr(torch.nn.Parameter(torch.tensor(a)))


def test_buffer_marker():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.running = nn.Buffer(ember.zeros(3))
            self.tmp = nn.Buffer(ember.ones(2), persistent=False)

    m = M()
    assert [k for k, _ in m.named_buffers()] == ["running", "tmp"]
    assert list(m.state_dict()) == ["running"]
    m.running = ember.ones(3)  # a plain tensor to a buffer name stays a buffer
    assert "running" in m._buffers and m.running.numpy().sum() == 3


# -- registration -------------------------------------------------------------------------------


class Toy(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(ember.randn(2, 3))
        self.register_parameter("b", None)
        self.register_buffer("steps", ember.tensor(0))
        self.register_buffer("scratch", ember.zeros(3), persistent=False)
        self.sub = nn.Linear(3, 1)
        self.note = "plain attribute"

    def forward(self, x):
        return self.sub(x @ self.w)


def test_registration_order_and_lookup():
    m = Toy()
    assert list(m._parameters) == ["w", "b"]
    assert m.b is None
    assert [k for k, _ in m.named_parameters()] == ["w", "sub.weight", "sub.bias"]
    assert [k for k, _ in m.named_parameters(recurse=False)] == ["w"]
    assert [k for k, _ in m.named_parameters(prefix="model")] == [
        "model.w", "model.sub.weight", "model.sub.bias"]
    assert [k for k, _ in m.named_buffers()] == ["steps", "scratch"]
    assert list(m.state_dict()) == ["w", "steps", "sub.weight", "sub.bias"]
    assert [k for k, _ in m.named_children()] == ["sub"]
    assert [k for k, _ in m.named_modules()] == ["", "sub"]
    assert list(m.modules())[1] is m.sub
    assert m.note == "plain attribute" and "note" not in m._parameters
    assert {"w", "sub", "steps", "forward"} <= set(dir(m))
    assert m.get_submodule("sub") is m.sub and m.get_submodule("") is m
    assert m.get_parameter("sub.bias") is m.sub.bias
    assert m.get_buffer("steps") is m.steps


def test_registration_errors():
    m = Toy()
    with pytest.raises(TypeError, match=r"cannot assign 'torch.FloatTensor' as parameter 'w' "
                                        r"\(torch.nn.Parameter or None expected\)"):
        m.w = ember.zeros(2, 3)
    with pytest.raises(TypeError, match="cannot assign 'int' as child module 'sub'"):
        m.sub = 3
    with pytest.raises(KeyError, match="attribute 'w' already exists"):
        m.register_buffer("w", ember.zeros(1))
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", ember.zeros(1))
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)
    with pytest.raises(TypeError, match="cannot assign 'torch.FloatTensor' object to parameter"):
        m.register_parameter("q", ember.zeros(1))
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter"):
        x = nn.Parameter(ember.zeros(2))
        y = nn.Parameter.__new__(nn.Parameter, ember.zeros(2))
        y._grad_fn = (x * 2).grad_fn  # grad_fn itself is read-only, as in PyTorch
        m.register_parameter("q", y)
    with pytest.raises(AttributeError, match="'Toy' object has no attribute 'nope'"):
        m.nope  # noqa: B018
    with pytest.raises(AttributeError, match="Linear has no attribute `a`"):
        m.get_submodule("sub.a")
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        m.get_submodule("sub.weight")
    with pytest.raises(AttributeError, match="`steps` is not an nn.Parameter"):
        m.get_parameter("steps")

    class Early(nn.Module):
        def __init__(self):
            self.p = nn.Parameter(ember.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward"'):
        nn.Module()(1)


def test_reassign_delete_and_none():
    m = Toy()
    m.w = None
    assert m.w is None and "w" in m._parameters
    assert [k for k, _ in m.named_parameters()] == ["sub.weight", "sub.bias"]
    m.steps = None
    assert "steps" not in m.state_dict()
    m.w = nn.Parameter(ember.ones(1))
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(AttributeError):
        m.sub  # noqa: B018
    # a parameter replacing a plain attribute / module of the same name
    m.note = nn.Parameter(ember.ones(2))
    assert "note" in m._parameters and "note" not in m.__dict__
    del m.note
    assert "note" not in m._parameters


def test_tied_parameters_appear_once():
    enc, dec = nn.Linear(4, 3), nn.Linear(3, 4)
    model = nn.Sequential(enc, nn.ReLU(), dec, enc)
    assert len(list(model.parameters())) == 4
    names = [k for k, _ in model.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert len(list(model.named_parameters(remove_duplicate=False))) == 6
    shared = nn.Sequential(nn.Linear(2, 2))
    shared.add_module("again", shared[0])
    assert [k for k, _ in shared.named_modules()] == ["", "0"]
    assert len(list(shared.named_modules(remove_duplicate=False))) == 3
    assert list(shared.state_dict()) == ["0.weight", "0.bias", "again.weight", "again.bias"]


# -- state_dict / load_state_dict -----------------------------------------------------------------


@needs_torch
def test_state_dict_keys_and_shapes_match_torch():
    em, tm = _build(nn), _build(torch.nn)
    esd, tsd = em.state_dict(), tm.state_dict()
    assert list(esd) == list(tsd)
    for k in tsd:
        assert tuple(esd[k].shape) == tuple(tsd[k].shape), k
    assert [k for k, _ in em.named_parameters()] == [k for k, _ in tm.named_parameters()]
    assert [k for k, _ in em.named_buffers()] == [k for k, _ in tm.named_buffers()]
    assert [k for k, _ in em.named_modules()] == [k for k, _ in tm.named_modules()]
    assert repr(em) == repr(tm)


@needs_torch
def test_load_torch_weights_same_outputs_and_grads():
    tm = _build(torch.nn).double()
    em = _build(nn).double()
    tm.eval()
    em.eval()
    sd = {k: ember.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()}
    result = em.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    idx = np.random.default_rng(0).integers(0, 10, (5, 3))
    eo, to = em(ember.tensor(idx)), tm(torch.tensor(idx))
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-6, atol=1e-10)
    v = randn(5)
    eo.backward(ember.tensor(v))
    to.backward(torch.tensor(v))
    tgrads = dict(tm.named_parameters())
    for k, p in em.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tgrads[k].grad.numpy(), rtol=1e-6, atol=1e-10,
                                   err_msg=k)
    # and back: ember's state_dict loads into torch
    tm2 = _build(torch.nn).double()
    tm2.load_state_dict({k: torch.tensor(v.numpy()) for k, v in em.state_dict().items()})
    np.testing.assert_allclose(tm2.eval()(torch.tensor(idx)).detach().numpy(),
                               to.detach().numpy(), rtol=1e-12)


def test_load_state_dict_copies_in_place_and_keep_vars():
    m = nn.Linear(3, 2)
    w_before = m.weight
    arr = w_before.detach().numpy()
    sd = {"weight": ember.ones(2, 3), "bias": ember.zeros(2)}
    m.load_state_dict(sd)
    assert m.weight is w_before and (arr == 1).all()  # same Parameter, same buffer
    assert m.weight.requires_grad and m.weight.grad_fn is None
    sd2 = m.state_dict()
    assert sd2["weight"].requires_grad is False and type(sd2["weight"]) is ember.Tensor
    assert np.shares_memory(sd2["weight"].numpy(), arr)
    assert m.state_dict(keep_vars=True)["weight"] is m.weight
    m.load_state_dict({"weight": np.full((2, 3), 2.0, np.float32), "bias": [0.5, 0.5]} |
                      {"bias": ember.tensor([0.5, 0.5])})  # NumPy arrays accepted too
    assert (arr == 2).all()
    sd3 = m.state_dict(prefix="enc.")
    assert list(sd3) == ["enc.weight", "enc.bias"]
    assert hasattr(m.state_dict(), "_metadata")


@needs_torch
def test_load_state_dict_error_text_matches_torch():
    cases = [
        {"weight": np.zeros((3, 2), np.float32), "foo": np.zeros(1, np.float32)},
        {"weight": np.zeros((2, 2), np.float32), "bias": np.zeros(2, np.float32),
         "foo": np.zeros(1, np.float32)},
        {"weight": np.zeros((2, 2), np.float32)},
    ]
    for sd in cases:
        with pytest.raises(RuntimeError) as te:
            torch.nn.Linear(2, 2).load_state_dict({k: torch.tensor(v) for k, v in sd.items()})
        with pytest.raises(RuntimeError) as ee:
            nn.Linear(2, 2).load_state_dict({k: ember.tensor(v) for k, v in sd.items()})
        assert str(ee.value) == str(te.value)
    bad = {"0.weight": np.zeros((2, 2), np.float32), "0.bias": np.zeros(2, np.float32),
           "0.bias.x": np.zeros(1, np.float32), "1.weight": np.zeros(1, np.float32)}
    with pytest.raises(RuntimeError) as te:
        torch.nn.Sequential(torch.nn.Linear(2, 2)).load_state_dict(
            {k: torch.tensor(v) for k, v in bad.items()})
    with pytest.raises(RuntimeError) as ee:
        nn.Sequential(nn.Linear(2, 2)).load_state_dict({k: ember.tensor(v) for k, v in bad.items()})
    assert str(ee.value) == str(te.value)
    r = nn.Linear(2, 2).load_state_dict({"weight": ember.zeros(2, 2)}, strict=False)
    t = torch.nn.Linear(2, 2).load_state_dict({"weight": torch.zeros(2, 2)}, strict=False)
    assert repr(r) == repr(t)
    assert r.missing_keys == ["bias"]


def test_load_state_dict_non_strict_and_assign():
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    r = m.load_state_dict({"0.weight": ember.zeros(2, 2), "9.x": ember.zeros(1)}, strict=False)
    assert r.missing_keys == ["0.bias", "1.weight", "1.bias"]
    assert r.unexpected_keys == ["9.x"]
    with pytest.raises(RuntimeError, match="size mismatch for 0.weight"):
        m.load_state_dict({"0.weight": ember.zeros(3, 2)}, strict=False)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        m.load_state_dict([1, 2])
    new_w = ember.full((2, 2), 7.0)
    old = m[0].weight
    m.load_state_dict({"0.weight": new_w}, strict=False, assign=True)
    assert m[0].weight is not old and isinstance(m[0].weight, nn.Parameter)
    assert m[0].weight.requires_grad
    assert np.shares_memory(m[0].weight.detach().numpy(), new_w.numpy())


def test_custom_load_from_state_dict_hook_and_metadata():
    class Counter(nn.Module):
        _version = 2

        def __init__(self):
            super().__init__()
            self.register_buffer("count", ember.tensor(5))

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing,
                                  unexpected, errors):
            version = local_metadata.get("version", None)
            if (version is None or version < 2) and prefix + "count" not in state_dict:
                state_dict[prefix + "count"] = ember.tensor(0)  # old checkpoints: default
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing,
                                          unexpected, errors)

    m = nn.Sequential(Counter())
    sd = m.state_dict()
    assert sd._metadata["0"]["version"] == 2
    m.load_state_dict({})  # no metadata: treated as an old checkpoint
    assert m[0].count.item() == 0

    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.value = 1

        def get_extra_state(self):
            return {"value": self.value}

        def set_extra_state(self, state):
            self.value = state["value"]

    w = WithExtra()
    w.value = 42
    sd = w.state_dict()
    assert sd["_extra_state"] == {"value": 42}
    w2 = WithExtra()
    w2.load_state_dict(sd)
    assert w2.value == 42


def test_state_dict_hooks():
    m = nn.Linear(2, 2)
    seen = []
    h = m.register_state_dict_pre_hook(lambda mod, prefix, keep: seen.append(prefix))
    m.state_dict(prefix="a.")
    assert seen == ["a."]
    h.remove()
    m.state_dict()
    assert seen == ["a."]
    post = []
    m.register_load_state_dict_post_hook(lambda mod, keys: post.append(list(keys.missing_keys)))
    m.load_state_dict({"weight": ember.zeros(2, 2)}, strict=False)
    assert post == [["bias"]]


# -- conversion, modes, grads -------------------------------------------------------------------


def test_to_keeps_parameter_identity():
    m = Toy()
    w = m.w
    opt_view = list(m.parameters())
    m.w.grad = ember.ones(2, 3)
    m.double()
    assert m.w is w and m.w.dtype == ember.float64 and m.w.grad.dtype == ember.float64
    assert list(m.parameters()) == opt_view
    assert m.steps.dtype == ember.int64  # integer buffers keep their dtype
    assert m.scratch.dtype == ember.float64
    m.to(ember.float32)
    assert m.w.dtype == ember.float32 and m.w is w
    m.to("cpu")
    m.to(ember.zeros(1, dtype=ember.float64))
    assert m.sub.weight.dtype == ember.float64
    m.float().half()
    assert m.w.dtype == ember.float16
    m.to(device="cpu", dtype=ember.float32)
    assert m.w.dtype == ember.float32
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
        m.to(ember.int32)
    assert m.cpu() is m


def test_train_eval_requires_grad_zero_grad():
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(), nn.Linear(2, 1)))
    assert all(mod.training for mod in model.modules())
    assert model.eval() is model
    assert not any(mod.training for mod in model.modules())
    model.train()
    assert all(mod.training for mod in model.modules())
    model.train(False)
    assert not model[1][0].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        model.train("yes")
    model(ember.randn(3, 2)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())


def test_apply_and_init():
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2))
    order = []

    def init_fn(mod):
        order.append(type(mod).__name__)
        if isinstance(mod, nn.Linear):
            nn.init.zeros_(mod.bias)

    assert model.apply(init_fn) is model
    assert order == ["Linear", "ReLU", "Linear", "Sequential"]
    assert not model[0].bias.detach().numpy().any()


def test_deepcopy_and_pickle_module():
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    model.add_module("tied", model[0])
    c = copy.deepcopy(model)
    assert c[0] is c.tied and c[0].weight is not model[0].weight
    np.testing.assert_array_equal(c[0].weight.detach().numpy(), model[0].weight.detach().numpy())
    p = pickle.loads(pickle.dumps(model))
    x = ember.randn(2, 3)
    np.testing.assert_allclose(p(x).detach().numpy(), model(x).detach().numpy())
    assert isinstance(p[0].weight, nn.Parameter)


# -- hooks --------------------------------------------------------------------------------------


def test_forward_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1)
    out = lin(ember.randn(3, 2))
    np.testing.assert_allclose(out.detach().numpy(), np.broadcast_to(lin.bias.detach().numpy() + 1, (3, 2)),
                               rtol=1e-6)
    assert calls == [ember.Size([3, 2])]
    h1.remove()
    h2.remove()
    x = ember.randn(3, 2)
    expected = x.numpy() @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()
    np.testing.assert_allclose(lin(x).detach().numpy(), expected, rtol=1e-6)

    class KW(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    k = KW()
    k.register_forward_pre_hook(lambda m, args, kwargs: (args, {"scale": 3.0}), with_kwargs=True)
    seen = {}
    k.register_forward_hook(lambda m, args, kwargs, out: seen.update(kwargs), with_kwargs=True)
    assert k(ember.tensor(2.0)).item() == 6.0
    assert seen == {"scale": 3.0}
    order = []
    k.register_forward_hook(lambda *a: order.append("late"))
    k.register_forward_hook(lambda *a: order.append("early"), prepend=True)
    k(ember.tensor(1.0))
    assert order == ["early", "late"]
    with lin.register_forward_hook(lambda *a: ember.zeros(1)):
        assert lin(x).shape == (1,)
    assert lin(x).shape == (3, 2)


@needs_torch
def test_full_backward_hook_matches_torch():
    w = randn(3, 4)
    records = {}

    def make(lib, key):
        mod = (nn if lib == "e" else torch.nn).Linear(4, 3).double()
        with (ember if lib == "e" else torch).no_grad():
            mod.weight.copy_((ember if lib == "e" else torch).tensor(w))

        def hook(m, gin, gout):
            records[key] = ([None if g is None else g.detach().numpy().copy() for g in gin],
                            [g.detach().numpy().copy() for g in gout])
            return (gin[0] * 2,)

        mod.register_full_backward_hook(hook)
        return mod

    x = randn(5, 4)
    v = randn(5, 3, seed=3)
    xe = ember.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    make("e", "e")(xe).backward(ember.tensor(v))
    make("t", "t")(xt).backward(torch.tensor(v))
    (egin, egout), (tgin, tgout) = records["e"], records["t"]
    assert len(egin) == len(tgin) and len(egout) == len(tgout)
    np.testing.assert_allclose(egout[0], tgout[0])
    np.testing.assert_allclose(egin[0], tgin[0])
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy())  # the hook's replacement used

    # no input needs grad: grad_input is (None,), the hook still fires
    got = {}
    lin = nn.Linear(4, 3)
    lin.register_full_backward_hook(lambda m, gin, gout: got.update(gin=gin, gout=gout))
    lin(ember.randn(2, 4)).sum().backward()
    assert got["gin"] == (None,) and tuple(got["gout"][0].shape) == (2, 3)
    # backward pre-hook replaces grad_output
    lin2 = nn.Linear(4, 3)
    lin2.register_full_backward_pre_hook(lambda m, gout: (gout[0] * 0,))
    lin2(ember.randn(2, 4)).sum().backward()
    assert not lin2.weight.grad.numpy().any()


def test_global_forward_hook():
    from ember.nn.modules.module import register_module_forward_hook

    seen = []
    h = register_module_forward_hook(lambda m, a, o: seen.append(type(m).__name__))
    nn.Sequential(nn.ReLU())(ember.ones(1))
    h.remove()
    nn.ReLU()(ember.ones(1))
    assert seen == ["ReLU", "Sequential"]


# -- repr ---------------------------------------------------------------------------------------


@needs_torch
def test_nested_repr_matches_torch():
    def build(m):
        return m.Sequential(
            m.Linear(20, 64), m.ReLU(), m.Dropout(0.1),
            m.Sequential(m.Linear(64, 64, bias=False), m.LeakyReLU(0.2, inplace=True)),
            m.ModuleList([m.Linear(2, 2), m.Linear(2, 2), m.Linear(2, 2), m.Tanh()]),
            m.ModuleDict({"emb": m.Embedding(5, 2, padding_idx=0), "flat": m.Flatten()}),
            m.Linear(64, 2),
        )

    assert repr(build(nn)) == repr(build(torch.nn))
    assert repr(nn.ModuleList()) == repr(torch.nn.ModuleList())
    assert repr(nn.Sequential()) == repr(torch.nn.Sequential())
    pl_e = nn.ParameterList([nn.Parameter(ember.zeros(2, 3)), ember.zeros(2), "x"])
    pl_t = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(2, 3)), torch.zeros(2), "x"])
    assert repr(pl_e) == repr(pl_t)
    pd_e = nn.ParameterDict({"a": nn.Parameter(ember.zeros(2, 3)), "b": ember.zeros(4)})
    pd_t = torch.nn.ParameterDict({"a": torch.nn.Parameter(torch.zeros(2, 3)), "b": torch.zeros(4)})
    assert repr(pd_e) == repr(pd_t)

    class Custom(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Linear(1, 1)

        def extra_repr(self):
            return "two\nlines"

    assert repr(Custom()) == "Custom(\n  two\n  lines\n  (inner): Linear(in_features=1, out_features=1, bias=True)\n)"


# -- containers ---------------------------------------------------------------------------------


def test_sequential_behaviour():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    s = nn.Sequential(a, b, c)
    assert len(s) == 3 and s[0] is a and s[-1] is c and list(s) == [a, b, c]
    sl = s[1:]
    assert isinstance(sl, nn.Sequential) and list(sl) == [b, c]
    assert list(sl._modules) == ["1", "2"]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        s[3]  # noqa: B018
    s.append(nn.Sigmoid())
    assert len(s) == 4
    s.insert(1, nn.Tanh())
    assert list(s._modules) == ["0", "1", "2", "3", "4"] and isinstance(s[1], nn.Tanh)
    del s[1]
    assert list(s._modules) == ["0", "1", "2", "3"] and s[1] is b
    s.extend([nn.Identity()])
    assert len(s) == 5
    assert isinstance(s.pop(-1), nn.Identity) and len(s) == 4
    s[-1] = nn.Identity()
    assert isinstance(s[3], nn.Identity)
    x = ember.randn(4, 2)
    out = s(x)
    assert tuple(out.shape) == (4, 1)
    od = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert list(od.state_dict()) == ["fc.weight", "fc.bias"] and od.act is od[1]
    both = s + od
    assert len(both) == 6
    with pytest.raises(AssertionError):
        s.insert(0, "not a module")


def test_modulelist_moduledict():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(ml) == 3 and isinstance(ml[-1], nn.Linear)
    assert list(ml.state_dict())[:2] == ["0.weight", "0.bias"]
    ml.append(nn.ReLU())
    ml.insert(0, nn.Tanh())
    assert isinstance(ml[0], nn.Tanh) and list(ml._modules) == ["0", "1", "2", "3", "4"]
    del ml[0]
    assert isinstance(ml[0], nn.Linear) and len(ml) == 4
    ml += [nn.Identity()]
    assert len(ml) == 5 and isinstance(ml[1:3], nn.ModuleList)
    with pytest.raises(TypeError, match="extend should be called with an iterable"):
        ml.extend(3)
    with pytest.raises(NotImplementedError):
        ml(ember.ones(1))
    md = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Linear(1, 1)})
    assert list(md.keys()) == ["b", "a"] and "a" in md and len(md) == 2
    md["c"] = nn.Tanh()
    assert list(md) == ["b", "a", "c"]
    assert isinstance(md.pop("b"), nn.ReLU) and list(md) == ["a", "c"]
    md.update([("d", nn.Identity())])
    assert list(md.state_dict()) == ["a.weight", "a.bias"]
    with pytest.raises(ValueError, match="has length 3; 2 is required"):
        md.update([("x", nn.ReLU(), 1)])


def test_parameterlist_parameterdict():
    pl = nn.ParameterList([ember.zeros(2), nn.Parameter(ember.ones(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl)  # plain tensors are wrapped
    assert len(pl) == 2 and len(list(pl.parameters())) == 2
    pl.append(ember.ones(1))
    assert [k for k, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert isinstance(pl[1:], nn.ParameterList) and len(pl[1:]) == 2
    assert pl[-1] is pl[2]
    with pytest.raises(RuntimeError, match="ParameterList should not be called"):
        pl()
    pd = nn.ParameterDict({"w": ember.ones(2)})
    pd["b"] = ember.zeros(1)
    assert list(pd.keys()) == ["w", "b"] and isinstance(pd["w"], nn.Parameter)
    assert [k for k, _ in pd.named_parameters()] == ["w", "b"]
    assert "b" in pd and pd.get("zz") is None
    assert pd.pop("w").shape == (2,) and list(pd) == ["b"]
    with pytest.raises(TypeError, match="cannot be used as a key"):
        pd[3] = ember.ones(1)
    m = nn.Module()
    m.params = nn.ParameterDict({"x": ember.ones(1)})
    assert list(m.state_dict()) == ["params.x"]


def test_apply_to_a_second_device_keeps_identity():
    from ember import _backend

    def fake_cuda(t):
        return ember.Tensor._make(np.asarray(t._data).view(_backend.FakeCudaArray))

    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    params = list(model.parameters())
    model._apply(fake_cuda)
    assert list(model.parameters()) == params
    assert all(str(p.device) == "cuda:0" and isinstance(p, nn.Parameter) for p in params)
    out = model(fake_cuda(ember.randn(5, 3)))
    assert str(out.device) == "cuda:0"
    out.sum().backward()
    assert str(params[0].grad.device) == "cuda:0"
    with pytest.raises(RuntimeError, match="same device"):
        model(ember.randn(5, 3))


def test_print_parameter_says_parameter_containing():
    p = ember.nn.Parameter(ember.ones(2))
    assert str(p).startswith("Parameter containing:\ntensor(")


def test_parameter_rebuilt_from_its_instance_dict_as_accelerate_does():
    """accelerate's init_empty_weights (diffusers' from_pretrained) rebuilds a parameter as
    type(p)(p.to(device), **p.__dict__): ember keeps its per-tensor fields in the instance dict
    (a used parameter has _accum, _grad, _version there), so those names are accepted and
    ignored; any other keyword is refused, as on torch."""
    torch = pytest.importorskip("torch")

    def run(m):
        p = m.nn.Parameter(m.randn(2))
        (p * 2).sum().backward()
        with m.no_grad():
            p.mul_(2)
        kwargs = p.__dict__
        kwargs["requires_grad"] = p.requires_grad
        q = type(p)(p.to("cpu"), **kwargs)
        with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
            m.nn.Parameter(m.randn(2), foo=1)
        return type(q).__name__, q.requires_grad, q.grad is None, bool((q == p).all())

    assert run(ember) == run(torch) == ("Parameter", True, True, True)
