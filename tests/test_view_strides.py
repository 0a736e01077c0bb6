"""Strides of views as PyTorch's, size-1 dims included: NumPy's reshape and indexing pick other
strides for size-1 dims than PyTorch's unsqueeze/view/expand/``None``, which showed in
``stride()`` and in the in-place partial-overlap check (it compares strides, size-1 dims too, as
PyTorch's does). Explicit cases, then random view chains (hypothesis), against PyTorch."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

OVERLAP = "refer to a single memory location"


def _same(fn):
    """``fn(m)`` on torch and on ember: the same shape, strides and is_contiguous()."""
    a, b = fn(torch), fn(ember)
    assert tuple(b.shape) == tuple(a.shape)
    assert b.stride() == a.stride(), (tuple(a.shape), a.stride(), b.stride())
    assert b.is_contiguous() == a.is_contiguous()
    return a, b


CASES = {
    "unsqueeze_end_of_transposed": lambda m: m.zeros(3, 4).t().unsqueeze(-1),
    "unsqueeze_front_of_transposed": lambda m: m.zeros(1, 4).t().unsqueeze(0),
    "unsqueeze_0d": lambda m: m.zeros(()).unsqueeze(0),
    "unsqueeze_of_column_view": lambda m: m.zeros(2, 1).T.unsqueeze(0),
    "squeeze_one_of_two_ones": lambda m: m.zeros(1, 4).t().unsqueeze(0).squeeze(0),
    "squeeze_all": lambda m: m.zeros(1, 3, 1, 2).permute(3, 2, 1, 0).squeeze(),
    "squeeze_dims": lambda m: m.zeros(1, 3, 1, 1).transpose(0, 3).squeeze((0, 2)),
    "view_to_column_then_t": lambda m: m.zeros(1, 4).view(4, 1).t(),
    "view_adds_ones_to_transposed": lambda m: m.zeros(3, 4).t().unsqueeze(0).view(1, 4, 1, 3),
    "view_0d": lambda m: m.zeros(()).view(1, 1),
    "reshape_transposed": lambda m: m.zeros(1, 4).t().reshape(1, 4, 1),
    "unflatten_ones": lambda m: m.zeros(4, 3).t().unflatten(1, (1, 4, 1)),
    "expand_keeps_size1": lambda m: m.zeros(1, 3).expand(1, 3),
    "expand_new_size1": lambda m: m.zeros(3, 1).expand(1, 3, 1),
    "expand_new_dims": lambda m: m.zeros(3).expand(2, 1, 3),
    "expand_transposed": lambda m: m.zeros(1, 3).t().expand(1, 3, 1),
    "expand_0d": lambda m: m.zeros(()).expand(1, 1),
    "index_none_front": lambda m: m.zeros(3, 4)[None, :, None],
    "index_none_of_transposed": lambda m: m.zeros(3, 4).t()[:, None],
    "index_none_then_int": lambda m: m.zeros(3, 4)[None, 0],
    "index_none_before_slice": lambda m: m.zeros(3, 4)[:, None, 1:2],
    "index_none_end": lambda m: m.zeros(3, 4).t()[..., None],
    "clone_of_dense_keeps_size1_strides": lambda m: m.zeros(1, 4).t().clone(),
    "clone_of_permuted": lambda m: m.zeros(2, 1, 3).permute(1, 2, 0).clone(),
    "clone_of_expanded": lambda m: m.zeros(1, 3).t().expand(2, 3, 1).clone(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_view_strides_as_pytorch(name):
    _same(CASES[name])


def _run_inplace(m, seed_program):
    try:
        seed_program(m)
        return None
    except RuntimeError as e:
        return str(e)


def _seed_239063114(m):  # long-mode views seed 239061807
    c2 = m.tensor([[1.125, 0.125, 1.875, 1.625]], dtype=m.float64)
    v5 = c2.t().unsqueeze(0).squeeze(0)
    v5.T.sub_(c2)
    return c2


def _seed_368260288(m):  # long-mode views seed 368260080
    y4 = m.tensor([[10.5], [4.25]])
    v5, v7 = y4.T, y4.T
    v7.unsqueeze(0).squeeze(0).addcdiv_(v5, v7.abs() + 1.0, value=0.5)
    return y4


def _refused(m):  # the same memory seen with another stride on a size-1 dim: PyTorch refuses
    x = m.zeros(1, 4)
    x.add_(x.view(4, 1).t())


@pytest.mark.parametrize("prog", [_seed_239063114, _seed_368260288, _refused])
def test_inplace_overlap_as_pytorch(prog):
    et, tt = _run_inplace(ember, prog), _run_inplace(torch, prog)
    assert (et is None) == (tt is None), (et, tt)
    if tt is not None:
        assert OVERLAP in et and OVERLAP in tt
    else:
        a, b = prog(torch), prog(ember)
        assert b.tolist() == a.tolist()


# ---------------------------------------------------------------------------------------------
# random view chains


@st.composite
def _step(draw, shape):
    nd = len(shape)
    kinds = ["unsqueeze", "squeeze", "reshape_ones", "expand", "index", "permute", "merge",
             "narrow1", "clone"]
    kind = draw(st.sampled_from(kinds))
    if kind == "clone":  # (a fresh tensor in the input's layout, size-1 dims' strides too)
        return "clone()", lambda t: t.clone()
    if kind == "unsqueeze":
        d = draw(st.integers(-nd - 1, nd))
        return f"unsqueeze({d})", lambda t: t.unsqueeze(d)
    if kind == "squeeze":
        ones = [i for i, n in enumerate(shape) if n == 1]
        how = draw(st.sampled_from(["all", "one", "tuple"]))
        if how == "all" or not nd:
            return "squeeze()", lambda t: t.squeeze()
        if how == "one":
            d = draw(st.sampled_from(ones or list(range(nd))))
            return f"squeeze({d})", lambda t: t.squeeze(d)
        ds = tuple(draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True)))
        return f"squeeze({ds})", lambda t: t.squeeze(ds)
    if kind == "reshape_ones":  # view/reshape adding and removing size-1 dims
        core = [n for n in shape if n != 1]
        new: list = []
        for n in core + [None]:
            new.extend([1] * draw(st.integers(0, 2)))
            if n is not None:
                new.append(n)
        new_t = tuple(new)
        use_view = draw(st.booleans())
        if use_view:
            return f"view{new_t}", lambda t: t.view(new_t)
        return f"reshape{new_t}", lambda t: t.reshape(new_t)
    if kind == "expand":
        lead = tuple(draw(st.lists(st.sampled_from([1, 2]), max_size=2)))
        tail = tuple(n if n != 1 else draw(st.sampled_from([1, 1, 2, -1])) for n in shape)
        size = lead + tail
        return f"expand{size}", lambda t: t.expand(size)
    if kind == "index":
        items: list = []
        for n in shape:
            items.extend([None] * draw(st.integers(0, 1)))
            c = draw(st.sampled_from(["all", "int", "one", "step"]))
            if c == "all":
                items.append(slice(None))
            elif c == "int":
                items.append(draw(st.integers(0, n - 1)) if n else slice(None))
            elif c == "one":
                i = draw(st.integers(0, max(n - 1, 0)))
                items.append(slice(i, i + 1))
            else:
                items.append(slice(None, None, 2))
        items.extend([None] * draw(st.integers(0, 1)))
        if draw(st.booleans()) and items:
            cut = draw(st.integers(0, len(items)))
            items = items[:cut] + [Ellipsis]
        key = tuple(items)
        return f"[{key}]", lambda t: t[key]
    if kind == "permute":
        perm = tuple(draw(st.permutations(range(nd))))
        if nd == 2 and draw(st.booleans()):
            return "t()", lambda t: t.t()
        return f"permute{perm}", lambda t: t.permute(perm)
    if kind == "merge":
        if nd < 2:
            return "flatten()", lambda t: t.flatten()
        s = draw(st.integers(0, nd - 2))
        n = shape[s] * shape[s + 1]
        if draw(st.booleans()):
            return f"flatten({s}, {s + 1})", lambda t: t.flatten(s, s + 1)
        return f"unflatten({s}, ...)", lambda t: t.unflatten(s, (1, shape[s], 1, shape[s + 1], 1)
                                                           ).flatten(s, s + 4).unflatten(s, (n,))
    if not nd:
        return "reshape(1)", lambda t: t.reshape(1)
    d = draw(st.integers(0, nd - 1))
    i = draw(st.integers(0, max(shape[d] - 1, 0)))
    return f"narrow({d}, {i}, 1)", lambda t: t.narrow(d, i, min(1, shape[d] - i))


@st.composite
def view_chains(draw):
    shape = tuple(draw(st.lists(st.integers(1, 3), max_size=4)))
    t = torch.zeros(shape)
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        if t.dim() > 6 or t.numel() > 500:
            break
        name, fn = draw(_step(tuple(t.shape)))
        try:
            t = fn(t)
        except RuntimeError:  # a view PyTorch refuses (view of a transposed layout...)
            continue
        steps.append((name, fn))
    return shape, steps


def _add_prefix(m, base, r):
    """``r.add_(s)``, ``s`` the first elements of ``r``'s base seen in ``r``'s shape: what
    PyTorch's overlap check says (it compares strides, size-1 dims too), and the base after
    when ``s`` is ``r``'s very view (else, where it runs, r is not dense: PyTorch checks no
    overlap and its result depends on its loop order, docs/testing.md "Undefined")."""
    s = base.reshape(-1)[: r.numel()].view(tuple(r.shape))
    same = r.stride() == s.stride() and r.data_ptr() == s.data_ptr()
    try:
        r.add_(s)
    except RuntimeError as e:
        return "raises", "refer to a single memory location" in str(e)
    return "runs", base.tolist() if same else None


@hypothesis.settings(max_examples=400, deadline=None, derandomize=True,
                     suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(view_chains())
def test_random_view_chains_strides_as_pytorch(chain):
    """Each step's strides and is_contiguous() as PyTorch's; then an in-place add of another
    view of the same memory is refused or run as there."""
    shape, steps = chain
    ta = torch.arange(float(max(1, torch.Size(shape).numel()))).reshape(shape)
    eb = ember.arange(float(max(1, torch.Size(shape).numel()))).reshape(shape)
    a, b = ta, eb
    done = []
    for name, fn in steps:
        a, b = fn(a), fn(b)
        done.append(name)
        assert tuple(b.shape) == tuple(a.shape), done
        assert b.stride() == a.stride(), (shape, done, a.stride(), b.stride())
        assert b.is_contiguous() == a.is_contiguous(), (shape, done)
    if a.numel() <= ta.numel():
        assert _add_prefix(ember, eb, b) == _add_prefix(torch, ta, a), (shape, done)
