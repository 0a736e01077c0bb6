"""ember.autograd.functional and ember.func against PyTorch: values, result structures, errors,
nesting, and the per-sample-gradients recipe."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def same(a, b, tol=1e-9, path="out"):
    """Same nesting (tuple/list/dict), shapes, values and requires_grad."""
    if isinstance(b, dict):
        assert isinstance(a, dict) and list(a) == list(b), path
        for k in b:
            same(a[k], b[k], tol, f"{path}[{k!r}]")
    elif isinstance(b, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), (path, type(a), type(b))
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, tol, f"{path}[{i}]")
    else:
        assert isinstance(a, ember.Tensor), (path, type(a))
        assert tuple(a.shape) == tuple(b.shape), (path, tuple(a.shape), tuple(b.shape))
        assert str(a.dtype) == str(b.dtype), (path, a.dtype, b.dtype)
        assert a.requires_grad == b.requires_grad, (path, a.requires_grad, b.requires_grad)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol,
                                   err_msg=path)


def both(make, tol=1e-9):
    same(make(ember), make(torch), tol)


def t(lib, x, dtype="float64"):
    return lib.tensor(np.asarray(x), dtype=getattr(lib, dtype))


X = [0.3, 1.2, -0.5, 2.0]
A = [0.1, 0.2]
B = [1.0, 2.0]

# -- torch.autograd.functional ----------------------------------------------------------------

FUNCTIONAL = [
    ("jacobian", lambda m, x: x.exp() * x.sum(), lambda m: t(m, X), {}),
    ("jacobian", lambda m, x, y: (x.sin() * y, (x * y).sum()), lambda m: (t(m, A), t(m, B)), {}),
    ("jacobian", lambda m, x, y: x * y, lambda m: (t(m, A), t(m, B)), {}),
    ("jacobian", lambda m, x: (x * 2, x.sum()), lambda m: t(m, A), {}),
    ("jacobian", lambda m, x, y: x * 2, lambda m: (t(m, A), t(m, B)), {}),  # y unused: zeros
    ("jacobian", lambda m, x: x.reshape(2, 2) @ x.reshape(2, 2), lambda m: t(m, X),
     {"vectorize": True}),
    ("jacobian", lambda m, x: x.exp(), lambda m: t(m, X, "float32"),
     {"vectorize": True, "strategy": "forward-mode"}),
    ("hessian", lambda m, x: (x**2).sum() * x[0], lambda m: t(m, X), {}),
    ("hessian", lambda m, x, y: (x**2 * y).sum(), lambda m: (t(m, A), t(m, B)), {}),
    ("vjp", lambda m, x, y: (x.sin() * y, (x * y).sum()), lambda m: (t(m, A), t(m, B)),
     {"v": lambda m: (t(m, [1.0, 1.0]), t(m, 2.0))}),
    ("vjp", lambda m, x: (x**2).sum() * x[0], lambda m: t(m, X), {}),
    ("jvp", lambda m, x, y: (x.sin() * y, (x * y).sum()), lambda m: (t(m, A), t(m, B)),
     {"v": lambda m: (t(m, [1.0, -1.0]), t(m, [0.5, 2.0]))}),
    ("jvp", lambda m, x: x.exp() * x.sum(), lambda m: t(m, X),
     {"v": lambda m: t(m, [1.0, 2.0, 3.0, 4.0])}),
    ("hvp", lambda m, x: (x**2).sum() * x[0], lambda m: t(m, X),
     {"v": lambda m: t(m, [1.0, 2.0, 3.0, 4.0])}),
    ("vhp", lambda m, x, y: (x**2 * y).sum(), lambda m: (t(m, A), t(m, B)),
     {"v": lambda m: (t(m, [1.0, -1.0]), t(m, [0.5, 2.0]))}),
    ("hvp", lambda m, x, y: (x**3 * y.exp()).sum(), lambda m: (t(m, A), t(m, B)),
     {"v": lambda m: (t(m, [1.0, -1.0]), t(m, [0.5, 2.0]))}),
]


@pytest.mark.parametrize("case", FUNCTIONAL, ids=[f"{c[0]}{i}" for i, c in enumerate(FUNCTIONAL)])
@pytest.mark.parametrize("create_graph", [False, True])
def test_autograd_functional_matches_pytorch(case, create_graph):
    name, f, inputs, kw = case

    def run(m):
        extra = {k: (v(m) if callable(v) else v) for k, v in kw.items()}
        if create_graph and extra.get("strategy") != "forward-mode":
            extra["create_graph"] = True
        return getattr(m.autograd.functional, name)(lambda *a: f(m, *a), inputs(m), **extra)

    both(run, 1e-6 if "strategy" in kw else 1e-9)


def test_functional_create_graph_allows_higher_derivatives():
    def run(m):
        x = t(m, X).requires_grad_()
        jac = m.autograd.functional.jacobian(lambda x: x.sin() * x.sum(), x, create_graph=True)
        assert jac.requires_grad
        return m.autograd.grad(jac.pow(2).sum(), x)[0]

    both(run)


def test_functional_strict_and_errors_match_pytorch():
    for m in (ember, torch):
        F = m.autograd.functional
        x, y = t(m, A), t(m, B)
        with pytest.raises(RuntimeError, match="independent of input 1"):
            F.jacobian(lambda x, y: x * 2, (x, y), strict=True)
        with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not"):
            F.vjp(lambda x, m=m: m.ones(2, dtype=m.float64), x, t(m, [1.0, 1.0]), strict=True)
        with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
            F.jacobian(lambda x: x, [x])
        with pytest.raises(TypeError, match="outputs of the user-provided function"):
            F.jacobian(lambda x: 3.0, x)
        with pytest.raises(RuntimeError, match="v can only be None"):
            F.vjp(lambda x: x * 2, x)
        with pytest.raises(RuntimeError, match="invalid size"):
            F.vjp(lambda x: x * 2, x, t(m, [1.0, 1.0, 1.0]))
        with pytest.raises(RuntimeError, match="given to hessian should contain a single element"):
            F.hessian(lambda x: x * 2, x)
        with pytest.raises(RuntimeError, match="given to vhp should return a single Tensor"):
            F.vhp(lambda x: (x.sum(), x.sum()), x, x)


def test_functional_leaves_inputs_untouched():
    x = t(ember, X)
    ember.autograd.functional.hessian(lambda v: (v**3).sum(), x)
    assert not x.requires_grad and x.grad is None


# -- torch.func --------------------------------------------------------------------------------

FUNC = [
    lambda m: m.func.grad(lambda x: (x**3).sum())(t(m, X)),
    lambda m: m.func.grad(lambda x, y: (x * y.sin()).sum(), argnums=(0, 1))(t(m, A), t(m, B)),
    lambda m: m.func.grad(lambda x, y: (x * y.sin()).sum(), argnums=1)(t(m, A), t(m, B)),
    lambda m: m.func.grad_and_value(lambda x: ((x**3).sum(), x * 2), has_aux=True)(t(m, X)),
    lambda m: m.func.grad(lambda x: ((x**3).sum(), {"aux": x}), has_aux=True)(t(m, X)),
    lambda m: m.func.grad(lambda p: (p["w"] * p["b"]).sum())({"w": t(m, A), "b": t(m, B)}),
    lambda m: m.func.grad(m.func.grad(lambda x: x.sin()))(t(m, 0.7)),
    lambda m: m.func.grad(m.func.grad(m.func.grad(lambda x: x**4 * x.exp())))(t(m, 0.7)),
    lambda m: m.func.jacrev(lambda x, y: {"a": x * y, "b": (x * y).sum()}, argnums=(0, 1))(
        t(m, X), t(m, X)),
    lambda m: m.func.jacrev(lambda x: (x.sin(), x.reshape(2, 2)))(t(m, X)),
    lambda m: m.func.jacfwd(lambda p: p["w"].exp() * 2)({"w": t(m, X)}),
    lambda m: m.func.jacfwd(lambda x, y: x @ y, argnums=1)(t(m, [[1.0, 2.0], [3.0, 4.0]]), t(m, B)),
    lambda m: m.func.hessian(lambda x: (x**3).prod())(t(m, X)),
    lambda m: m.func.hessian(lambda x, y: (x**2 * y**3).sum(), argnums=(0, 1))(t(m, A), t(m, B)),
    lambda m: m.func.jacrev(m.func.jacrev(lambda x: x.sin().sum() * x))(t(m, A)),
    lambda m: m.func.jvp(lambda x: x**2, (t(m, X),), (m.ones(4, dtype=m.float64),)),
    lambda m: m.func.jvp(lambda x, y: (x * y, x.sum()), (t(m, A), t(m, B)), (t(m, B), t(m, A))),
    lambda m: m.func.vmap(lambda x: (x, x.sum()), out_dims=(1, 0))(m.ones(2, 3)),
    lambda m: m.func.vmap(lambda x, y: x * y, in_dims=(0, None))(m.ones(2, 3), m.arange(3.0)),
    lambda m: m.vmap(m.vmap(m.dot))(m.ones(2, 3, 4), m.arange(24.0).reshape(2, 3, 4)),
    lambda m: m.func.vmap(lambda d: d["a"] + d["b"], in_dims=({"a": 0, "b": 1},))(
        {"a": m.ones(2, 3), "b": m.arange(6.0).reshape(3, 2)}),
    lambda m: m.func.vmap(lambda x: x.sum(0), in_dims=1)(m.arange(10.0).reshape(2, 5)),
    lambda m: m.func.vmap(lambda x: x * 2, in_dims=-1, out_dims=-1)(m.arange(6.0).reshape(2, 3)),
    lambda m: m.func.vmap(lambda x, s: x * s, in_dims=(0, None))(m.ones(2, 3), 4.0),
    lambda m: m.func.vmap(lambda x: {"sq": x**2, "n": x.norm()})(m.arange(6.0).reshape(3, 2)),
    lambda m: m.func.vmap(m.func.grad(lambda x: (x**2).sum()))(m.arange(6.0).reshape(2, 3)),
    lambda m: m.func.vmap(m.func.jacrev(lambda x: x.sin()))(m.arange(6.0).reshape(2, 3)),
    lambda m: m.func.vmap(m.func.hessian(lambda x: (x**3).sum()))(m.arange(6.0).reshape(2, 3)),
]


@pytest.mark.parametrize("i", range(len(FUNC)))
def test_func_transforms_match_pytorch(i):
    both(FUNC[i], 1e-5)


def test_vjp_returns_a_reusable_function():
    def run(m):
        out, fn = m.func.vjp(lambda x, y: x * y.exp(), t(m, A), t(m, B))
        return out, fn(m.ones(2, dtype=m.float64)), fn(t(m, [2.0, -1.0]))

    both(run)

    def aux(m):
        out, fn, a = m.func.vjp(lambda x: (x.sin(), x.cos()), t(m, A), has_aux=True)
        return out, fn(t(m, [1.0, 1.0])), a

    both(aux)


def test_transforms_connect_to_an_outer_graph():
    def run(m):
        x = t(m, A).requires_grad_()
        g = m.func.grad(lambda v: (v**3).sum())(x)  # 3 x^2, differentiable w.r.t. x
        return g, m.autograd.grad(g.sum(), x)[0]

    both(run)


def test_func_errors_match_pytorch():
    for m in (ember, torch):
        x = t(m, X)
        with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor"):
            m.func.grad(lambda x: x * 2)(x)
        with pytest.raises(RuntimeError, match="only Tensors of floating point dtype"):
            m.func.grad(lambda x: x.sum())(m.tensor([1, 2]))
        with pytest.raises(RuntimeError, match="Got argnum=1, but only 1 positional inputs"):
            m.func.grad(lambda x: x.sum(), argnums=1)(x)
        with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\)"):
            m.func.grad(lambda x: x.sum(), has_aux=True)(x)
        with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a Tensor"):
            m.func.grad(lambda x: (x.sum(), 1))(x)
        with pytest.raises(ValueError, match="same size in the mapped dimension, got sizes \\[2, 3\\]"):
            m.func.vmap(lambda a, b: a + b)(m.ones(2, 3), m.ones(3, 3))
        with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
            m.func.vmap(lambda a: a)(5.0)
        with pytest.raises(ValueError, match="must only return Tensors"):
            m.func.vmap(lambda a: 3)(x)
        with pytest.raises(ValueError, match="in_dims is not compatible with the structure"):
            m.func.vmap(lambda a: a, in_dims=(0, 0))(x)
        with pytest.raises(ValueError, match="expected in_dim to satisfy -1 <= in_dim < 1"):
            m.func.vmap(lambda a: a, in_dims=2)(x)
        with pytest.raises(RuntimeError, match="randomness error mode"):
            m.func.vmap(lambda a, m=m: m.rand(3))(x)
        with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
            m.func.vmap(lambda a: a, randomness="bad")


def test_vmap_randomness_modes():
    ember.manual_seed(0)
    same_draws = ember.vmap(lambda a: ember.rand(3) + a * 0, randomness="same")(ember.zeros(4))
    assert bool((same_draws == same_draws[0]).all())
    diff = ember.vmap(lambda a: ember.rand(3) + a * 0, randomness="different")(ember.zeros(4))
    assert not bool((diff == diff[0]).all())
    # the generator state is left as after one (same) draw / four (different) draws
    ember.manual_seed(0)
    r = ember.rand(3)
    assert bool((same_draws[0] == r).all())


def test_vmap_is_a_loop_that_supports_python_control_flow():
    out = ember.vmap(lambda v: v * 2 if float(v.sum()) > 0 else v * 0)(
        ember.tensor([[1.0, 2.0], [-3.0, 1.0]]))
    assert out.tolist() == [[2.0, 4.0], [0.0, 0.0]]


def _per_sample(m, params_require_grad=False):
    model = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.Tanh(), m.nn.Linear(4, 2))
    rng = np.random.default_rng(0)
    with m.no_grad():
        for p in model.parameters():
            p.copy_(m.tensor(rng.normal(size=tuple(p.shape)), dtype=p.dtype))
    data = m.tensor(rng.normal(size=(5, 3)), dtype=m.float32)
    targets = m.tensor([0, 1, 1, 0, 1])
    params = {k: (v if params_require_grad else v.detach()) for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def loss(params, buffers, sample, target):
        pred = m.func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return m.nn.functional.cross_entropy(pred, target.unsqueeze(0))

    grads = m.func.vmap(m.func.grad(loss), in_dims=(None, None, 0, 0))(params, buffers, data,
                                                                       targets)
    # reference: one backward per sample
    for i in range(5):
        model.zero_grad()
        m.nn.functional.cross_entropy(model(data[i:i + 1]), targets[i:i + 1]).backward()
        for k, p in model.named_parameters():
            np.testing.assert_allclose(grads[k][i].detach().numpy(), p.grad.numpy(), rtol=1e-5,
                                       atol=1e-6)
    return grads


def test_per_sample_gradients_recipe_matches_pytorch():
    both(_per_sample, 1e-5)


def test_functional_call_swaps_and_restores():
    lin = ember.nn.Linear(2, 1)
    w0 = lin.weight
    new_w = ember.tensor([[2.0, 3.0]])
    out = ember.func.functional_call(lin, {"weight": new_w, "bias": ember.zeros(1)},
                                     ember.tensor([[1.0, 1.0]]))
    assert out.tolist() == [[5.0]]
    assert lin.weight is w0 and isinstance(lin.weight, ember.nn.Parameter)

    def boom(x):
        raise KeyError("inside forward")

    lin.register_forward_hook(lambda mod, i, o: boom(o))
    with pytest.raises(KeyError):
        ember.func.functional_call(lin, {"weight": new_w}, (ember.ones(1, 2),))
    assert lin.weight is w0

    for m in (ember, torch):
        mod = m.nn.Linear(2, 1)
        with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'nope'"):
            m.func.functional_call(mod, {"nope": m.zeros(1)}, (m.ones(1, 2),), strict=True)
        with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
            m.func.functional_call(mod, ({"bias": m.zeros(1)}, {"bias": m.ones(1)}),
                                   (m.ones(1, 2),))


def test_functional_call_with_buffers_and_tied_weights():
    def run(m):
        bn = m.nn.BatchNorm1d(2)
        bn.eval()
        out1 = m.func.functional_call(bn, {"running_mean": m.tensor([1.0, -1.0])},
                                      (m.tensor([[1.0, 1.0]]),))
        emb = m.nn.Embedding(3, 2)
        head = m.nn.Linear(2, 3, bias=False)
        head.weight = emb.weight
        model = m.nn.Sequential(emb, head)
        w = m.arange(6.0).reshape(3, 2)
        out2 = m.func.functional_call(model, {"0.weight": w}, (m.tensor([1]),))
        return out1.detach(), out2.detach()

    both(run, 1e-6)


def test_reparametrize_module_as_pytorchs():
    """nn.utils.stateless._reparametrize_module (zuko's Bayesian layers use it): inside, the
    module computes with the given tensors and other attributes; afterwards the originals are
    back and the dict holds what the module ended with (PyTorch's write-back)."""
    def run(m):
        lin = m.nn.Linear(2, 1)
        w0, b0 = lin.weight, lin.bias
        params = {"weight": m.tensor([[2.0, 3.0]]), "bias": m.zeros(1), "scale": m.ones(1)}
        with m.nn.utils.stateless._reparametrize_module(lin, params):
            out = lin(m.tensor([[1.0, 1.0]]))
            inside = (lin.weight is params["weight"], lin.scale.tolist())
            lin._parameters["bias"] = m.full((1,), 7.0)  # a change inside the block
        after = (lin.weight is w0, lin.bias is b0, hasattr(lin, "scale"),
                 params["bias"].tolist())
        with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'nope'"):
            with m.nn.utils.stateless._reparametrize_module(lin, {"nope": m.zeros(1)},
                                                            strict=True):
                pass
        return out.tolist(), inside, after

    assert run(ember) == run(torch) == ([[5.0]], (True, [1.0]), (True, True, False, [7.0]))


def test_torch_func_import_through_the_alias():
    # in a subprocess: installing the alias evicts the real torch from sys.modules
    code = (
        "from ember import _alias; _alias.install()\n"
        "import ember, torch.func as tf, torch.distributions as td\n"
        "import torch.autograd.functional as taf\n"
        "assert tf is ember.func and td is ember.distributions\n"
        "assert taf is ember.autograd.functional\n"
        "import torch\n"
        "assert torch.vmap is ember.func.vmap\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


def test_model_ensembling_with_stack_module_state_matches_pytorch():
    def run(m):
        rng = np.random.default_rng(0)
        models = [m.nn.Linear(2, 3) for _ in range(4)]
        with m.no_grad():
            for mod in models:
                for p in mod.parameters():
                    p.copy_(m.tensor(rng.normal(size=tuple(p.shape)), dtype=p.dtype))
        params, buffers = m.func.stack_module_state(models)
        x = m.ones(5, 2)
        out = m.vmap(lambda p, b: m.func.functional_call(models[0], (p, b), (x,)))(params, buffers)
        ref = m.stack([mod(x) for mod in models])
        assert float((out - ref).abs().max()) < 1e-6
        (g,) = m.autograd.grad(out.pow(2).sum(), [params["weight"]])
        return params, out.detach(), g

    both(run, 1e-5)
    for m in (ember, torch):
        with pytest.raises(RuntimeError, match="same class"):
            m.func.stack_module_state([m.nn.Linear(2, 3), m.nn.ReLU()])
        with pytest.raises(RuntimeError, match="at least one model"):
            m.func.stack_module_state([])


def test_linearize_and_replace_batch_norm_match_pytorch():
    def run(m):
        out, fn = m.func.linearize(lambda x: x.sin() * x, t(m, A))
        net = m.nn.Sequential(m.nn.Linear(2, 2), m.nn.BatchNorm1d(2))
        m.func.replace_all_batch_norm_modules_(net)
        assert net[1].running_mean is None and net[1].track_running_stats is False
        return out, fn(t(m, B)), fn(t(m, [0.0, 1.0]))

    both(run)


def test_deeply_nested_transforms_match_pytorch():
    def run(m):
        x = m.tensor([[0.1, 0.2, 0.3], [0.5, -0.4, 1.0]], dtype=m.float64)

        def f(v):
            return (v.sin() * v.exp()).sum()

        a = m.func.grad(lambda x: m.vmap(m.func.grad(f))(x).pow(2).sum())(x)
        b = m.func.jacrev(m.vmap(m.func.grad(f)))(x)
        c = m.vmap(m.func.hessian(f))(x)
        d = m.func.jvp(m.func.grad(f), (x[0],), (x[1],))
        e = m.func.vjp(m.func.grad(f), x[0])[1](x[1])
        with m.no_grad():  # the transforms still differentiate under no_grad
            g = m.func.grad(f)(x[0])
        return a, b, c, d, e, g

    both(run)
