"""The extension points of ``torch.distributions`` behave as PyTorch's: ``Distribution.expand``
for subclasses, ``Transform.sign`` on the base class, ``register_kl`` with any class, learnable
transforms (``class T(Transform, nn.Module)``), ``utils._standard_normal``. Each case runs on
ember and, when it is installed, on PyTorch."""

from __future__ import annotations

from typing import Any

import pytest

import ember

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

MODULES = [ember] if torch is None else [ember, torch]
ids = lambda m: m.__name__  # noqa: E731


def _dist(m: Any) -> Any:
    return m.distributions


@pytest.mark.parametrize("m", MODULES, ids=ids)
def test_expand_of_a_subclass_without_its_own_expand(m: Any) -> None:
    D = _dist(m)

    class Direct(D.Distribution):
        arg_constraints: dict = {}

        def __init__(self, loc: Any) -> None:
            self.loc = loc
            super().__init__(loc.shape)

    with pytest.raises(NotImplementedError):
        Direct(m.zeros(3)).expand((2, 3))

    class OwnInit(D.Normal):
        def __init__(self, loc: Any) -> None:
            super().__init__(loc, 1.0)

    with pytest.raises(NotImplementedError, match="must also define a custom .expand"):
        OwnInit(m.zeros(3)).expand((2, 3))

    class Plain(D.Normal):  # no __init__ of its own: the parent's expand serves it
        pass

    e = Plain(m.zeros(3), 2.0).expand((2, 3))
    assert type(e) is Plain and tuple(e.batch_shape) == (2, 3)
    assert tuple(e.scale.shape) == (2, 3)

    class OwnExpand(D.Normal):  # defines expand, calling the parent's with its instance
        def __init__(self, loc: Any) -> None:
            super().__init__(loc, 1.0)

        def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
            new = self._get_checked_instance(OwnExpand, _instance)
            return super().expand(batch_shape, _instance=new)

    e = OwnExpand(m.zeros(3)).expand((4, 3))
    assert type(e) is OwnExpand and tuple(e.loc.shape) == (4, 3)
    assert tuple(e.sample().shape) == (4, 3)


EXAMPLES = {  # ember's distributions that expand through the shared implementation
    "Normal": lambda D, m: D.Normal(m.zeros(3), m.ones(3)),
    "Bernoulli": lambda D, m: D.Bernoulli(probs=m.full((3,), 0.3)),
    "Categorical": lambda D, m: D.Categorical(logits=m.zeros(3, 4)),
    "Gamma": lambda D, m: D.Gamma(m.ones(3), m.ones(3)),
    "Chi2": lambda D, m: D.Chi2(m.ones(3)),
    "Beta": lambda D, m: D.Beta(m.ones(3), m.ones(3)),
    "Dirichlet": lambda D, m: D.Dirichlet(m.ones(3, 4)),
    "Uniform": lambda D, m: D.Uniform(m.zeros(3), m.ones(3)),
    "StudentT": lambda D, m: D.StudentT(m.ones(3)),
    "MultivariateNormal": lambda D, m: D.MultivariateNormal(m.zeros(3, 2), m.eye(2)),
    "Binomial": lambda D, m: D.Binomial(5, m.full((3,), 0.5)),
    "LogNormal": lambda D, m: D.LogNormal(m.zeros(3), m.ones(3)),
    "HalfNormal": lambda D, m: D.HalfNormal(m.ones(3)),
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_subclasses_of_builtins_expand_as_pytorch(name: str) -> None:
    shapes = []
    for m in MODULES:
        D = _dist(m)
        base = EXAMPLES[name](D, m)
        sub = type(f"My{name}", (type(base),), {})
        d = EXAMPLES[name](D, m)
        d.__class__ = sub
        e = d.expand((2, 3))
        assert type(e) is sub
        shapes.append((tuple(e.batch_shape), tuple(e.event_shape), tuple(e.sample().shape)))
    assert len(set(shapes)) == 1


@pytest.mark.parametrize("m", MODULES, ids=ids)
def test_transform_sign_on_the_base_class(m: Any) -> None:
    D = _dist(m)
    with pytest.raises(NotImplementedError):
        _ = D.transforms.Transform().sign
    with pytest.raises(NotImplementedError):
        _ = D.transforms.AbsTransform().sign
    abs_normal = D.TransformedDistribution(D.Normal(2.0, 4.0), [D.transforms.AbsTransform()])
    with pytest.raises(NotImplementedError):
        abs_normal.cdf(m.tensor(2.0))
    exp_normal = D.TransformedDistribution(D.Normal(2.0, 4.0), [D.transforms.ExpTransform()])
    assert exp_normal.cdf(m.tensor(2.0)).item() == pytest.approx(0.37186, abs=1e-4)
    assert D.transforms.ExpTransform().inv.sign == 1
    assert D.transforms.AffineTransform(0.0, -2.0).sign == -1


@pytest.mark.parametrize("m", MODULES, ids=ids)
def test_register_kl_with_any_class(m: Any) -> None:
    D = _dist(m)

    class NotADistribution:
        pass

    @D.register_kl(D.Normal, NotADistribution)
    def _kl(p: Any, q: Any) -> Any:
        return "normal-vs-other"

    @D.register_kl(NotADistribution, D.Normal)
    def _kl2(p: Any, q: Any) -> Any:
        return "other-vs-normal"

    assert D.kl_divergence(D.Normal(0.0, 1.0), NotADistribution()) == "normal-vs-other"
    assert D.kl_divergence(NotADistribution(), D.Normal(0.0, 1.0)) == "other-vs-normal"
    with pytest.raises(TypeError):
        D.register_kl(D.Normal(0.0, 1.0), D.Normal)
    with pytest.raises(TypeError):
        D.register_kl(D.Normal, 3)


@pytest.mark.parametrize("m", MODULES, ids=ids)
def test_learnable_transform_is_a_module(m: Any) -> None:
    D = _dist(m)

    class Scale(D.transforms.Transform, m.nn.Module):
        bijective = True
        sign = 1
        domain = D.constraints.real
        codomain = D.constraints.real
        __hash__ = object.__hash__  # (PyTorch's Transform defines __eq__ only)

        def __init__(self) -> None:
            super().__init__()
            self.s = m.nn.Parameter(m.tensor([2.0]))

        def _call(self, x: Any) -> Any:
            return x * self.s

        def _inverse(self, y: Any) -> Any:
            return y / self.s

        def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
            return self.s.abs().log().expand(x.shape)

    t = Scale()
    assert [n for n, _ in t.named_parameters()] == ["s"]
    assert t(m.ones(2)).tolist() == [2.0, 2.0]
    flow = D.TransformedDistribution(D.Normal(0.0, 1.0), [t])
    flow.log_prob(m.tensor([0.5])).sum().backward()
    assert t.s.grad.item() == pytest.approx(-0.5 + 0.25 / 8, abs=1e-6)


@pytest.mark.parametrize("m", MODULES, ids=ids)
def test_standard_normal(m: Any) -> None:
    from importlib import import_module

    utils = import_module(f"{m.__name__}.distributions.utils")
    x = utils._standard_normal((2, 3), dtype=m.float64, device="cpu")
    assert tuple(x.shape) == (2, 3) and x.dtype == m.float64 and not x.requires_grad
    y = utils._standard_normal([4], dtype=m.float32, device=None)
    assert y.dtype == m.float32
