"""Module constructors, optimizers and schedulers take PyTorch 2.13's parameters, and the shape,
joining, indexing, linear-algebra and nn.functional calls PyTorch programs make by keyword work.

``inspect.signature(cls.__init__)`` of every class in ``torch.nn``'s module list,
``torch.optim`` and ``torch.optim.lr_scheduler`` that ember implements must list PyTorch's
parameters in its order, with its kinds and defaults (a default function compares by name:
``activation=F.relu``). What still differs is in ``tests/signature_gaps.py`` under the class's
qualified name (``torch.nn.Linear``), shrink-only as for functions.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest
from signature_gaps import GAPS

import ember

torch = pytest.importorskip("torch")

SPACES = [("torch.nn", ember.nn, torch.nn), ("torch.optim", ember.optim, torch.optim),
          ("torch.optim.lr_scheduler", ember.optim.lr_scheduler, torch.optim.lr_scheduler)]


def _classes() -> list[tuple[str, type, type]]:
    out = []
    for prefix, mine, theirs in SPACES:
        for name in sorted(dir(theirs)):
            t = getattr(theirs, name)
            e = getattr(mine, name, None)
            if name.startswith("_") or not isinstance(t, type) or not isinstance(e, type):
                continue
            if prefix == "torch.nn" and not issubclass(t, torch.nn.Module):
                continue
            out.append((f"{prefix}.{name}", e, t))
    return out


def _params(cls: type) -> list[tuple[str, Any, Any]] | None:
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind, p.default) for p in list(sig.parameters.values())[1:]]


def _same_default(a: Any, b: Any) -> bool:
    if callable(a) and callable(b) and not isinstance(a, type):
        return getattr(a, "__name__", a) == getattr(b, "__name__", b)
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # noqa: BLE001 - a default that does not compare is compared by repr
        return repr(a) == repr(b)


def constructor_mismatches() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for qual, e, t in _classes():
        pe, pt = _params(e), _params(t)
        if pe is None or pt is None:
            continue
        issues = []
        if [p[0] for p in pe] != [p[0] for p in pt]:
            issues.append(f"parameters {[p[0] for p in pe]}, PyTorch's {[p[0] for p in pt]}")
        te = {p[0]: p for p in pe}
        for name, kind, default in pt:
            if name not in te:
                continue
            _, k2, d2 = te[name]
            if k2 != kind:
                issues.append(f"{name} is {k2.description}, PyTorch's {kind.description}")
            if not _same_default(d2, default):
                issues.append(f"{name} defaults to {d2!r}, PyTorch's to {default!r}")
        if issues:
            found[qual] = issues
    return found


def test_constructors_found() -> None:
    names = {q for q, _, _ in _classes()}
    for q in ("torch.nn.Linear", "torch.nn.Conv2d", "torch.nn.LSTM", "torch.optim.AdamW",
              "torch.optim.lr_scheduler.OneCycleLR"):
        assert q in names, q
    assert len(names) > 150


def test_constructor_signatures_match_pytorch() -> None:
    found = constructor_mismatches()
    new = {k: v for k, v in found.items() if k not in GAPS}
    assert not new, "constructor signatures differ from PyTorch's (fix them, or list them in " \
        "tests/signature_gaps.py):\n" + "\n".join(f"  {k}: {'; '.join(v)}"
                                                 for k, v in sorted(new.items()))
    classes = {q for q, _, _ in _classes()}
    stale = sorted(k for k in GAPS if k in classes and k not in found)
    assert not stale, f"these constructors now match PyTorch; remove them from the gaps: {stale}"


def test_norm_bias_keyword() -> None:
    """``bias=False`` (keyword-only, PyTorch 2.x) drops the shift of the instance/lazy norms."""
    for name, args in (("InstanceNorm1d", (3,)), ("LazyBatchNorm1d", ()),
                       ("LazyInstanceNorm2d", ())):
        e = getattr(ember.nn, name)(*args, affine=True, bias=False)
        t = getattr(torch.nn, name)(*args, affine=True, bias=False)
        assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
        assert repr(e) == repr(t)
    with pytest.raises(TypeError):
        ember.nn.InstanceNorm1d(3, 1e-5, 0.1, True, False, None, None, False)


def test_optimizer_flags_accepted() -> None:
    p = [ember.nn.Parameter(ember.ones(2))]
    for name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad"):
        kw = {"lr": 0.1, "foreach": None, "maximize": False, "differentiable": False}
        getattr(ember.optim, name)(p, **kw)
        with pytest.raises(TypeError):
            getattr(ember.optim, name)(p, lr=0.1, not_a_parameter=1)


# -- keyword calls PyTorch programs make: same values, dtypes and shapes on both engines --------

def _pair(data: Any, dtype: str = "float32") -> tuple[Any, Any]:
    a = np.asarray(data, dtype=dtype)
    return ember.tensor(a), torch.tensor(a)


def _same(e: Any, t: Any) -> None:
    if isinstance(t, (tuple, list)):
        assert isinstance(e, (tuple, list)) and len(e) == len(t)
        for a, b in zip(e, t):
            _same(a, b)
        return
    assert str(e.dtype) == str(t.dtype) and tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy().astype(np.float64),
                               t.detach().numpy().astype(np.float64), rtol=1e-5, atol=1e-6)


X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
M = np.array([[2.0, 0.5, 0.1], [0.5, 3.0, 0.2], [0.1, 0.2, 4.0]], dtype=np.float32)

CALLS = [  # (description, call taking the engine's module and the engine's tensors x, m)
    ("x.expand(size=)", lambda T, x, m: x[:, :1].expand(size=(2, 3, 4))),
    ("x.expand(*sizes, implicit=)", lambda T, x, m: x[:, :1].expand(2, 3, 4, implicit=True)),
    ("x.view(size=)", lambda T, x, m: x.view(size=(6, 4))),
    ("x.view(dtype=)", lambda T, x, m: x.view(dtype=T.int32)),
    ("x.view(dtype)", lambda T, x, m: x.view(T.int32)),
    ("x.reshape(shape=)", lambda T, x, m: x.reshape(shape=(4, 6))),
    ("x.permute(dims=)", lambda T, x, m: x.permute(dims=(2, 0, 1))),
    ("x.flip(dims=)", lambda T, x, m: x.flip(dims=(0, 2))),
    ("x.tile(varargs)", lambda T, x, m: x.tile(1, 2, 1)),
    ("x.tile(dims=)", lambda T, x, m: x.tile(dims=(2,))),
    ("torch.tile(x, dims=)", lambda T, x, m: T.tile(x, dims=(1, 2))),
    ("x.repeat(repeats=)", lambda T, x, m: x.repeat(repeats=(1, 1, 2))),
    ("x.split(split_size=)", lambda T, x, m: x.split(split_size=2, dim=2)),
    ("torch.split(split_size_or_sections=)",
     lambda T, x, m: T.split(x, split_size_or_sections=[1, 2], dim=1)),
    ("torch.tensor_split(sections=)", lambda T, x, m: T.tensor_split(x, sections=2, dim=2)),
    ("torch.tensor_split(indices=)", lambda T, x, m: T.tensor_split(x, indices=[1], dim=1)),
    ("torch.hsplit(indices=)", lambda T, x, m: T.hsplit(x, indices=[1])),
    ("torch.swapaxes(axis0=, axis1=)", lambda T, x, m: T.swapaxes(x, axis0=0, axis1=2)),
    ("x.sum_to_size(size=)", lambda T, x, m: x.sum_to_size(size=(1, 3, 1))),
    ("x.clone(memory_format=)",
     lambda T, x, m: x.transpose(0, 2).clone(memory_format=T.contiguous_format)),
    ("torch.roll(dims=())", lambda T, x, m: T.roll(x, 1)),
    ("F.one_hot(input=)", lambda T, x, m: T.nn.functional.one_hot(
        input=T.tensor([0, 2, 1]), num_classes=4)),
    ("F.gelu(approximate=)", lambda T, x, m: T.nn.functional.gelu(x, approximate="tanh")),
    ("torch.linalg.cholesky(upper=)", lambda T, x, m: T.linalg.cholesky(m, upper=True)),
    ("torch.linalg.pinv(rcond)", lambda T, x, m: T.linalg.pinv(m, 1e-3, True)),
    ("torch.linalg.matrix_rank(tol=)", lambda T, x, m: T.linalg.matrix_rank(m, tol=2.5)),
    ("torch.linalg.eigh(input=)", lambda T, x, m: T.linalg.eigh(input=m).eigenvalues),
    ("torch.linalg.lstsq(input=, b=)", lambda T, x, m: T.linalg.lstsq(input=m, b=m).solution),
    ("torch.linalg.tensorsolve(input=, other=)",
     lambda T, x, m: T.linalg.tensorsolve(input=m, other=m[0])),
    ("torch.einsum(eq, *ops)", lambda T, x, m: T.einsum("ij,jk->ik", m, m)),
    ("torch.conj_physical", lambda T, x, m: T.conj_physical(m)),
    ("torch.fill(input=)", lambda T, x, m: T.fill(input=m, value=2.0)),
]


@pytest.mark.parametrize("what,call", CALLS, ids=[c[0] for c in CALLS])
def test_keyword_calls_match_pytorch(what: str, call: Any) -> None:
    e = call(ember, *_pair(X)[:1], _pair(M)[0])
    t = call(torch, *_pair(X)[1:], _pair(M)[1])
    _same(e, t)


BAD = [  # a keyword PyTorch refuses: TypeError on both
    lambda T, x: T.split(x, split_size=1),
    lambda T, x: x.split(split_size_or_sections=1),
    lambda T, x: T.swapaxes(x, dim0=0, dim1=1),
    lambda T, x: T.tensor_split(x, indices_or_sections=2),
    lambda T, x: T.nn.functional.one_hot(tensor=T.tensor([1])),
    lambda T, x: T.linalg.eigh(A=x[0, :3, :3]),
    lambda T, x: T.einsum(equation="ii", operands=x[0]),
    lambda T, x: T.cat([x, x], dimm=0),
    lambda T, x: x.expand(sizes=(2, 3, 4)),
    lambda T, x: T.nn.functional.gelu(x, "tanh"),
]


@pytest.mark.parametrize("call", BAD, ids=[str(i) for i in range(len(BAD))])
def test_refused_keywords_raise_typeerror_on_both(call: Any) -> None:
    with pytest.raises(TypeError):
        call(torch, torch.tensor(X))
    with pytest.raises(TypeError):
        call(ember, ember.tensor(X))


# -- out= -------------------------------------------------------------------------------------

OUTS = [  # (name, call with out=, the out tensor's shape, dtype)
    ("index_select", lambda T, x, o: T.index_select(x[0], 0, T.tensor([2, 0]), out=o), (2, 4),
     "float32"),
    ("gather", lambda T, x, o: T.gather(x[0], 1, T.tensor([[0], [3], [1]]), out=o), (3, 1),
     "float32"),
    ("cat", lambda T, x, o: T.cat([x[0], x[1]], 0, out=o), (6, 4), "float32"),
    ("stack", lambda T, x, o: T.stack([x[0], x[1]], out=o), (2, 3, 4), "float32"),
    ("matmul", lambda T, x, o: T.matmul(x[0], x[1].T, out=o), (3, 3), "float32"),
    ("mm", lambda T, x, o: T.mm(x[0], x[1].T, out=o), (3, 3), "float32"),
    ("bmm", lambda T, x, o: T.bmm(x, x.transpose(1, 2), out=o), (2, 3, 3), "float32"),
    ("take", lambda T, x, o: T.take(x, T.tensor([0, 5, 23]), out=o), (3,), "float32"),
    ("masked_select", lambda T, x, o: T.masked_select(x[0], x[0] > 1, out=o), (4,), "float32"),
    ("nonzero", lambda T, x, o: T.nonzero(x[0] > 1, out=o), (4, 2), "int64"),
    ("tril", lambda T, x, o: T.tril(x[0], out=o), (3, 4), "float32"),
    ("diag", lambda T, x, o: T.diag(x[0, 0], out=o), (4, 4), "float32"),
    ("kron", lambda T, x, o: T.kron(x[0, :2, :2], x[1, :2, :2], out=o), (4, 4), "float32"),
    ("cross", lambda T, x, o: T.cross(x[0, :, :3], x[1, :, :3], dim=1, out=o), (3, 3),
     "float32"),
    ("narrow_copy", lambda T, x, o: T.narrow_copy(x[0], 1, 1, 2, out=o), (3, 2), "float32"),
    ("diff", lambda T, x, o: T.diff(x[0], out=o), (3, 3), "float32"),
    ("matrix_power", lambda T, x, o: T.matrix_power(x[0, :3, :3], 2, out=o), (3, 3),
     "float32"),
    ("linalg.matrix_power", lambda T, x, o: T.linalg.matrix_power(x[0, :3, :3], n=2, out=o),
     (3, 3), "float32"),
    ("F.linear", lambda T, x, o: T.nn.functional.linear(x[0], x[1], out=o), (3, 3), "float32"),
]


@pytest.mark.parametrize("name,call,shape,dtype", OUTS, ids=[o[0] for o in OUTS])
def test_out_writes_through_a_view(name: str, call: Any, shape: tuple, dtype: str) -> None:
    """``out=`` a slice of a bigger tensor: the values land in the base (a graph library's
    ``cumsum(..., out=buf[1:])`` idiom), and the call returns ``out`` itself."""
    results = []
    for T in (ember, torch):
        x = T.tensor(X)
        base = T.zeros((shape[0] + 2,) + shape[1:], dtype=getattr(T, dtype))
        o = base[1:-1]
        r = call(T, x, o)
        assert r is o
        results.append(base)
    _same(*results)


def test_out_refuses_autograd() -> None:
    x = ember.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="out="):
        ember.index_select(x, 0, ember.tensor([0]), out=ember.empty(1, 2))


def test_out_tuple_of_a_decomposition() -> None:
    m = _pair(M)
    outs = []
    for T, a in zip((ember, torch), m):
        s, l = T.empty(()), T.empty(())
        r = T.slogdet(a, out=(s, l))
        assert r[0] is s and r[1] is l
        outs.append((s, l))
    _same(outs[0], outs[1])
