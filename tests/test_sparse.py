"""Sparse COO and CSR tensors (ember/ops/sparse.py, ember/_tensor_sparse.py, ember.sparse),
compared with the installed PyTorch: values, layouts, dtypes, printing, errors, gradients,
``nn.Embedding(sparse=True)`` and the optimizers' sparse paths, save/load."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message=".*[Ss]parse.*")

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]
VAL = [3.0, 4.0, 5.0, 1.0]


def both(fn):
    """``fn(m)`` on ember and on torch."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(ember), fn(torch)


def dense(t):
    t = t.to_dense() if t.layout != t.layout.__class__ and str(t.layout) != "torch.strided" else t
    return np.asarray(t.detach().tolist())


def same(e, t, coalesced=True):
    """Same layout, shape, dtype and dense values (and, for COO, the same coalesced form)."""
    assert str(e.layout) == str(t.layout)
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype) == str(t.dtype)
    if str(t.layout) == "torch.sparse_coo":
        if coalesced:
            e, t = e.coalesce(), t.coalesce()
            assert e.indices().tolist() == t.indices().tolist()
            np.testing.assert_allclose(e.values().detach().tolist(), t.values().detach().tolist(),
                                       rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(e.to_dense().detach().tolist(), t.to_dense().detach().tolist(),
                                   rtol=1e-5, atol=1e-6)
    elif str(t.layout) == "torch.sparse_csr":
        assert e.crow_indices().tolist() == t.crow_indices().tolist()
        assert e.col_indices().tolist() == t.col_indices().tolist()
        np.testing.assert_allclose(e.values().tolist(), t.values().tolist(), rtol=1e-6)
    else:
        np.testing.assert_allclose(np.asarray(e.detach().tolist()),
                                   np.asarray(t.detach().tolist()), rtol=1e-5, atol=1e-6)


def coo(m, dtype=None):
    return m.sparse_coo_tensor(IDX, VAL, (2, 3), dtype=dtype)


# ---------------------------------------------------------------------------------------------
# creation, structure, printing


def test_sparse_coo_tensor_structure() -> None:
    e, t = both(coo)
    assert e.layout is ember.sparse_coo and e.is_sparse and not e.is_sparse_csr
    for name in ("is_coalesced", "_nnz", "sparse_dim", "dense_dim", "dim", "numel"):
        assert getattr(e, name)() == getattr(t, name)(), name
    assert e._indices().tolist() == t._indices().tolist()
    assert e._values().tolist() == t._values().tolist()
    assert e._indices().dtype == ember.int64 and e.dtype == ember.float32
    same(e, t)
    ec, tc = e.coalesce(), t.coalesce()
    assert ec.is_coalesced() and ec._nnz() == tc._nnz() == 3
    assert isinstance(e, ember.Tensor) and not ember.ones(2).is_sparse
    assert ember.ones(2).layout is ember.strided


def test_sparse_coo_tensor_inferred_size_dtype_and_hybrid() -> None:
    for fn in (lambda m: m.sparse_coo_tensor([[0, 1]], [1, 2]),
               lambda m: m.sparse_coo_tensor(IDX, VAL),
               lambda m: m.sparse_coo_tensor(IDX, VAL, (2, 3), dtype=m.float64),
               lambda m: m.sparse_coo_tensor(m.tensor([[0, 1]]), m.arange(4.).reshape(2, 2)),
               lambda m: m.sparse_coo_tensor(size=(2, 3)),
               lambda m: m.zeros(3, 4).to_sparse(),
               lambda m: m.arange(24.).reshape(2, 3, 4).to_sparse(2)):
        e, t = both(fn)
        same(e, t)
        assert e.is_coalesced() == t.is_coalesced()
        assert (e.sparse_dim(), e.dense_dim()) == (t.sparse_dim(), t.dense_dim())


@pytest.mark.parametrize("args", [
    ([[0, 3]], [1.0, 2.0], (2,)),      # index beyond size
    ([[0, -1]], [1.0, 2.0], (2,)),     # negative index
    ([[0, 1, 2]], [1.0, 2.0], (3,)),   # nnz mismatch
    ([0, 1], [1.0, 2.0], (2,)),        # 1-D indices
    ([[0, 1]], [1.0, 2.0], (2, 3)),    # size longer than the dims
])
def test_sparse_coo_tensor_errors_as_pytorch(args) -> None:
    # ember always checks the indices against the size (PyTorch only with check_invariants)
    with pytest.raises(RuntimeError):
        ember.sparse_coo_tensor(*args)
    with pytest.raises(RuntimeError):
        torch.sparse_coo_tensor(*args, check_invariants=True)


def test_repr_as_pytorch() -> None:
    cases = [coo, lambda m: coo(m).coalesce(), lambda m: coo(m, m.float64).requires_grad_(),
             lambda m: m.zeros(3, 4).to_sparse(),
             lambda m: m.sparse_coo_tensor(m.tensor([[0, 1]]), m.arange(8.).reshape(2, 2, 2)),
             lambda m: m.tensor([[0.0, 1.5], [2.0, 0.0]]).to_sparse_csr(),
             lambda m: m.tensor([[0.0, 1.5], [0.0, 0.0]]).to_sparse_csr()]
    for fn in cases:
        e, t = both(fn)
        assert repr(e) == repr(t)


def test_dense_tensors_refuse_sparse_accessors_and_sparse_refuse_dense_ops() -> None:
    d = ember.ones(2, 3)
    for name in ("coalesce", "indices", "is_coalesced", "crow_indices"):
        with pytest.raises(RuntimeError, match="Strided"):
            getattr(d, name)()
    assert (d.sparse_dim(), d.dense_dim()) == (0, 2) and d.to_dense() is d
    s = coo(ember)
    with pytest.raises(NotImplementedError):
        s.view(6)
    with pytest.raises(NotImplementedError):
        ember.exp(s)
    with pytest.raises(NotImplementedError):
        s.cos()
    with pytest.raises(TypeError, match="to_dense"):
        s.numpy()
    with pytest.raises(NotImplementedError):
        np.asarray(s._data)
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.indices()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.values()
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\)"):
        s + d
    with pytest.raises(RuntimeError, match="scalar or zero-dim"):
        s / d
    t = coo(torch)
    with pytest.raises(NotImplementedError):
        t.view(6)


# ---------------------------------------------------------------------------------------------
# arithmetic and products


@pytest.mark.parametrize("name,fn", [
    ("d+s", lambda m, s, d: d + s), ("s+s", lambda m, s, d: s + s), ("s*d", lambda m, s, d: s * d),
    ("d*s", lambda m, s, d: d * s), ("s*2", lambda m, s, d: s * 2), ("2*s", lambda m, s, d: 2 * s),
    ("s/2", lambda m, s, d: s / 2), ("d-s", lambda m, s, d: d - s), ("s-s", lambda m, s, d: s - s),
    ("-s", lambda m, s, d: -s), ("s*s", lambda m, s, d: s * s),
    ("add alpha", lambda m, s, d: m.add(d, s, alpha=2)), ("sadd", lambda m, s, d: s.add(s, alpha=2)),
    ("s*bcast", lambda m, s, d: s * m.arange(3.)), ("s/0d", lambda m, s, d: s / m.tensor(2.)),
    ("sum", lambda m, s, d: s.sum()), ("sum0", lambda m, s, d: s.sum(0)),
    ("sum1", lambda m, s, d: m.sparse.sum(s, 1)), ("sumall", lambda m, s, d: m.sparse.sum(s)),
    ("sumdims", lambda m, s, d: m.sparse.sum(s, dim=(0, 1))),
    ("t", lambda m, s, d: s.t()), ("transpose", lambda m, s, d: s.transpose(0, 1)),
    ("permute", lambda m, s, d: s.permute(1, 0)), ("pow", lambda m, s, d: s.pow(2)),
    ("sqrt", lambda m, s, d: s.sqrt()), ("abs", lambda m, s, d: (-s).abs()),
    ("sin", lambda m, s, d: m.sin(s)), ("relu", lambda m, s, d: m.relu(-s)),
    ("tanh", lambda m, s, d: s.tanh()), ("double", lambda m, s, d: s.double()),
    ("clone", lambda m, s, d: s.clone()), ("d.add_(s)", lambda m, s, d: d.clone().add_(s)),
    ("s.mul_", lambda m, s, d: s.clone().mul_(2)), ("zero_", lambda m, s, d: s.clone().zero_()),
    ("mm sd", lambda m, s, d: m.mm(s, m.ones(3, 2))), ("mm ds", lambda m, s, d: m.mm(m.ones(2, 2), s)),
    ("mm ss", lambda m, s, d: m.mm(s, s.t())), ("matmul", lambda m, s, d: s @ m.ones(3, 2)),
    ("mv", lambda m, s, d: s @ m.arange(3.)), ("spmm", lambda m, s, d: m.spmm(s, m.ones(3, 1))),
    ("addmm", lambda m, s, d: m.addmm(m.ones(2, 1), s, m.ones(3, 1), beta=2, alpha=3)),
    ("sparse.addmm", lambda m, s, d: m.sparse.addmm(m.ones(2, 1), s, m.ones(3, 1))),
    ("sparse.mm", lambda m, s, d: m.sparse.mm(s, m.arange(6.).reshape(3, 2))),
    ("softmax", lambda m, s, d: m.sparse.softmax(s, 1)),
    ("log_softmax", lambda m, s, d: m.sparse.log_softmax(s, 0)),
    ("cat", lambda m, s, d: m.cat([s, s])), ("sparse_mask", lambda m, s, d: d.sparse_mask(s.coalesce())),
])
def test_ops_as_pytorch(name, fn) -> None:
    e, t = both(lambda m: fn(m, coo(m), m.arange(6.).reshape(2, 3) + 1))
    same(e, t)
    if str(t.layout) == "torch.sparse_coo" and name != "s*s":  # (an uncoalesced product:
        assert e.is_coalesced() == t.is_coalesced(), name  # ember coalesces, same values)


def test_sparse_add_with_same_indices_adds_values_as_pytorch() -> None:
    e, t = both(lambda m: coo(m) + coo(m))
    assert e._indices().tolist() == t._indices().tolist() and e._values().tolist() == t._values().tolist()


def test_mm_errors_as_pytorch() -> None:
    for m in (ember, torch):
        with pytest.raises(RuntimeError):
            m.mm(coo(m), m.ones(2, 2))
        with pytest.raises(RuntimeError):
            m.sparse.mm(coo(m), m.ones(3, 2, dtype=m.float64))


def test_csr_as_pytorch() -> None:
    for fn in (lambda m: m.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, 3.0]]).to_sparse_csr(),
               lambda m: coo(m).to_sparse_csr(),
               lambda m: m.tensor([[0.0, 1.5], [0.0, 0.0]]).to_sparse(layout=m.sparse_csr),
               lambda m: m.sparse_csr_tensor([0, 1, 1], [1], [1.5], (2, 2)),
               lambda m: m.tensor([[0.0, 1.5], [2.0, 0.0]]).to_sparse_csr().to_sparse(),
               lambda m: m.tensor([[0.0, 1.5], [2.0, 0.0]]).to_sparse_csr() * 2):
        e, t = both(fn)
        same(e, t)
        assert (e.is_sparse, e.is_sparse_csr) == (t.is_sparse, t.is_sparse_csr)
    for fn in (lambda m: m.mm(m.tensor([[0.0, 1.5], [2.0, 0.0]]).to_sparse_csr(), m.ones(2, 3)),
               lambda m: m.tensor([[0.0, 1.5], [2.0, 0.0]]).to_sparse_csr() @ m.ones(2),
               lambda m: m.tensor([[0.0, 1.5], [2.0, 0.0]]).to_sparse_csr().to_dense()):
        e, t = both(fn)
        same(e, t)
    for m in (ember, torch):
        c = m.tensor([[0.0, 1.5]]).to_sparse_csr()
        with pytest.raises(RuntimeError, match="coordinate"):
            c.indices()
        with pytest.raises(RuntimeError, match="compressed"):
            coo(m).crow_indices()


# ---------------------------------------------------------------------------------------------
# autograd


def _grads(m):
    i = m.tensor(IDX)
    out = {}
    S = m.sparse_coo_tensor(i, m.tensor(VAL), (2, 3)).requires_grad_()
    D = m.arange(6.).reshape(3, 2).requires_grad_()
    y = m.sparse.mm(S, D)
    (y * m.arange(4.).reshape(2, 2)).sum().backward()
    out["sparse.mm S"], out["sparse.mm D"] = S.grad, D.grad
    S.grad = None
    m.mm(S, D).sum().backward()
    out["mm S"] = S.grad
    S.grad = None
    (S.to_dense() * m.arange(6.).view(2, 3)).sum().backward()
    (S.to_dense() * m.arange(6.).view(2, 3)).sum().backward()
    out["to_dense x2"] = S.grad
    S.grad = None
    (m.ones(2, 3) + S).sum().backward()
    out["d+S"] = S.grad
    S.grad = None
    (S * 2).to_dense().sum().backward()
    out["S*2"] = S.grad
    vv = m.tensor(VAL).requires_grad_()
    m.sparse.mm(m.sparse_coo_tensor(i, vv, (2, 3)), D.detach()).sum().backward()
    out["values via sparse.mm"] = vv.grad
    vv.grad = None
    (m.sparse_coo_tensor(i, vv, (2, 3)).coalesce().values() * m.arange(3.)).sum().backward()
    out["coalesce values"] = vv.grad
    vv.grad = None
    (m.sparse_coo_tensor(i, vv, (2, 3)).t().to_dense() * m.arange(6.).view(3, 2)).sum().backward()
    out["t"] = vv.grad
    vv.grad = None
    sm = m.sparse.softmax(m.sparse_coo_tensor(i, vv, (2, 3)), 1)
    (sm.to_dense() * m.arange(6.).view(2, 3)).sum().backward()
    out["softmax"] = vv.grad
    Dd = m.arange(6.).reshape(2, 3).requires_grad_()
    (Dd.to_sparse() * 3).to_dense().sum().backward()
    out["to_sparse"] = Dd.grad
    return out


def test_gradients_as_pytorch() -> None:
    e, t = both(_grads)
    for k in t:
        same(e[k], t[k]), k
    assert type(ember.sparse.mm(coo(ember).requires_grad_(), ember.ones(3, 1)).grad_fn).__name__ \
        == "SparseAddmmBackward0"


def test_gradients_in_pure_python_core_too(monkeypatch) -> None:
    from ember.autograd import engine

    monkeypatch.setattr(engine, "run_backward", engine._run_backward_python)
    monkeypatch.setattr(engine, "_walk_nodes", engine._walk_nodes_python)
    test_gradients_as_pytorch()


def test_embedding_sparse_gradient_as_pytorch() -> None:
    def run(m):
        emb = m.nn.Embedding(5, 3, sparse=True, padding_idx=1)
        x = m.tensor([[0, 2, 0], [1, 4, 2]])
        emb(x).sum().backward()
        g1 = emb.weight.grad
        first = (g1._indices().tolist(), g1._values().tolist(), g1.is_coalesced())
        emb(x).sum().backward()
        w = m.zeros(5, 3, requires_grad=True)
        w.grad = m.ones(5, 3)
        m.nn.functional.embedding(x, w, sparse=True).sum().backward()
        return first, emb.weight.grad, w.grad

    (e1, e2, e3), (t1, t2, t3) = both(run)
    assert e1 == t1
    same(e2, t2)
    same(e3, t3)
    with pytest.raises(RuntimeError, match="scale_grad_by_freq"):
        ember.nn.Embedding(5, 3, sparse=True, scale_grad_by_freq=True)(
            ember.tensor([0])).sum().backward()


# ---------------------------------------------------------------------------------------------
# optimizers


W0 = np.random.RandomState(0).randn(6, 3).astype(np.float32)


def _train(m, name, kw):
    emb = m.nn.Embedding(6, 3, sparse=True)
    with m.no_grad():
        emb.weight.copy_(m.tensor(W0))
    opt = getattr(m.optim, name)(emb.parameters(), **kw)
    for ix in ([0, 2, 0, 5], [1, 2, 3, 3], [4, 0, 0, 1]):
        opt.zero_grad()
        (emb(m.tensor(ix)) * m.arange(12.).reshape(4, 3)).sum().backward()
        opt.step()
    return emb.weight.detach().tolist(), sorted(opt.state[emb.weight])


@pytest.mark.parametrize("name,kw", [
    ("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("SGD", dict(lr=0.1, momentum=0.5, dampening=0.3)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, maximize=True)),
    ("SparseAdam", dict(lr=0.05)), ("SparseAdam", dict(lr=0.05, betas=(0.8, 0.9), maximize=True)),
])
def test_optimizers_sparse_paths_as_pytorch(name, kw) -> None:
    (ew, es), (tw, ts) = both(lambda m: _train(m, name, kw))
    np.testing.assert_allclose(ew, tw, rtol=1e-5, atol=1e-6)
    assert es == ts


@pytest.mark.parametrize("name,kw,match", [
    ("Adam", {}, "SparseAdam"), ("RMSprop", {}, "sparse gradients"),
    ("Adagrad", dict(weight_decay=0.1), "weight_decay"), ("SGD", dict(lr=0.1, weight_decay=0.1),
                                                          "add\\(sparse, dense\\)"),
])
def test_optimizers_refuse_sparse_gradients_as_pytorch(name, kw, match) -> None:
    for m in (ember, torch):
        with pytest.raises(RuntimeError, match=match):
            _train(m, name, kw)
    lin = ember.nn.Linear(2, 2)
    opt = ember.optim.SparseAdam(lin.parameters())
    lin(ember.ones(2)).sum().backward()
    with pytest.raises(RuntimeError, match="dense gradients"):
        opt.step()


def test_zero_grad_keeps_an_empty_sparse_grad() -> None:
    emb = ember.nn.Embedding(6, 3, sparse=True)
    opt = ember.optim.SGD(emb.parameters(), lr=0.1)
    emb(ember.tensor([1])).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert emb.weight.grad.is_sparse and emb.weight.grad._nnz() == 0


# ---------------------------------------------------------------------------------------------
# save / load, pickle


def test_save_load_both_ways() -> None:
    s = coo(ember)
    c = ember.tensor([[0.0, 1.5], [2.0, 0.0]]).to_sparse_csr()
    buf = io.BytesIO()
    ember.save({"s": s, "c": c}, buf)
    for weights_only in (True, False):
        t = torch.load(io.BytesIO(buf.getvalue()), weights_only=weights_only)
        same(s, t["s"])
        same(c, t["c"])
        e = ember.load(io.BytesIO(buf.getvalue()), weights_only=weights_only)
        same(e["s"], t["s"])
        assert e["s"].is_coalesced() == s.is_coalesced()
    tb = io.BytesIO()
    torch.save({"s": coo(torch).coalesce(), "c": torch.tensor([[0.0, 1.5]]).to_sparse_csr()}, tb)
    e = ember.load(io.BytesIO(tb.getvalue()))
    assert e["s"].is_coalesced() and e["c"].layout is ember.sparse_csr


def test_pickle_and_deepcopy() -> None:
    import copy
    import pickle

    s = coo(ember).requires_grad_()
    p = pickle.loads(pickle.dumps(s))
    assert p.requires_grad and p.to_dense().tolist() == s.to_dense().tolist()
    assert copy.deepcopy(s)._indices().tolist() == IDX


# ---------------------------------------------------------------------------------------------
# the legacy names a Gaussian-process library calls: torch.dsmm, torch.hsmm, torch.sparse.FloatTensor


def test_dsmm_and_hsmm() -> None:
    def run(m):
        d = m.arange(6.0).reshape(3, 2).requires_grad_()
        r = m.dsmm(coo(m), d)
        r.sum().backward()
        h = m.hsmm(coo(m), d.detach())
        return r, d.grad, h, (h.sparse_dim(), h.dense_dim()), m.dsmm(d.detach().t(), d.detach())

    e, t = both(run)
    for x, y in zip(e, t):
        if isinstance(y, tuple):
            assert x == y
        else:
            same(x, y)
    for m in (ember, torch):
        with pytest.raises(IndexError, match="out of range"):
            m.dsmm(coo(m), m.ones(3))


def test_legacy_sparse_constructors() -> None:
    def run(m):
        i, v = m.tensor(IDX), m.tensor(VAL)
        out = [m.sparse.FloatTensor(i, v, m.Size((2, 3))), m.sparse.FloatTensor(i, v.double()),
               m.sparse.DoubleTensor(2, 3), m.sparse.LongTensor(i, v.long(), (2, 3)),
               m.sparse.FloatTensor()]
        checks = [isinstance(out[0], m.sparse.FloatTensor), isinstance(out[0], m.sparse.DoubleTensor),
                  isinstance(out[2], m.sparse.DoubleTensor), isinstance(v, m.sparse.FloatTensor),
                  m.sparse.FloatTensor.__name__]
        return out, checks

    (e, ec), (t, tc) = both(run)
    for x, y in zip(e, t):
        same(x, y)
    assert ec == tc == [True, False, True, False, "FloatTensor"]


def test_legacy_new_on_a_sparse_tensor() -> None:
    """``sparse.new(indices, values, size)`` builds a sparse COO tensor (optimizers such as SM3
    rebuild sparse gradients this way), ``sparse.new(*size)`` an empty one; as PyTorch's."""
    got = {}
    for m in (ember, torch):
        i = m.tensor([[0, 1], [1, 0]])
        s = m.sparse_coo_tensor(i, m.tensor([1.0, 2.0]), (2, 2))
        a = s.new(i, m.tensor([3.0, 6.0]), m.Size([2, 2]))
        b, c = s.new(3, 4), s.new()
        got[m.__name__] = (str(a.layout), a.to_dense().tolist(), tuple(b.shape), str(b.layout),
                           b.to_dense().sum().item(), tuple(c.shape))
    assert got["ember"] == got["torch"]
