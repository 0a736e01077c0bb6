"""``torch._dynamo.explain(fn)(*args)``: graphs, graph breaks and their reasons, op counts."""

from __future__ import annotations

import traceback
import warnings

import pytest

import ember
import ember._dynamo as dynamo
from ember import nn


def no_break(x):
    return x.sin().cos() + 1


def data_dependent_branch(x):
    y = x.sin()
    if y.sum() > 0:
        y = y * 2
    return y.cos()


def item_break(x):
    y = x.sin()
    n = y.sum().item()
    return y * n


def two_breaks(x):
    a = x.sin()
    n = a.sum().item()
    b = (a * n).cos()
    m = b.max().item()
    return b + m


def prints(x):
    print("shape", tuple(x.shape))
    return x.sin()


def break_then_nothing(x):
    y = x.sin()
    if y.sum() > 100:  # not taken: no op after the break
        return y.cos()
    return y


def only_a_break(x):
    return x.tolist()


CASES = [no_break, data_dependent_branch, item_break, two_breaks, prints, break_then_nothing,
         only_a_break]


def _explain(lib, fn, *args):
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        e = lib._dynamo.explain(fn)(*args)
    return e.graph_count, e.graph_break_count


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_graph_and_break_counts_as_pytorchs(fn):
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch._dynamo")

    x = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
    ours = _explain(ember, fn, ember.tensor(x))
    theirs = _explain(torch, fn, torch.tensor(x))
    assert ours == theirs


def test_module_output_fields_and_text():
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    e = dynamo.explain(m)(ember.ones(2, 3))
    assert (e.graph_count, e.graph_break_count, e.break_reasons) == (1, 0, [])
    assert e.op_count == sum(len(g) for g in e.ops_per_graph) > 0
    assert len(e.graphs) == e.graph_count and e.out_guards == []
    text = str(e)
    assert text.startswith("Graph Count: 1\nGraph Break Count: 0\nOp Count: ")
    assert "Break Reasons:" in text and "Ops per Graph:" in text


def test_break_reason_points_at_the_users_line():
    e = dynamo.explain(item_break)(ember.ones(3))
    (r,) = e.break_reasons
    assert r.graph_break is True
    assert all(isinstance(f, traceback.FrameSummary) for f in r.user_stack)
    assert [(f.name, f.line) for f in r.user_stack] == [("item_break", "n = y.sum().item()")]
    assert e.graph_count == 2 and [len(g) for g in e.ops_per_graph][1] == 1  # y * n
    assert "Break Reason 1:" in str(e) and "capture_scalar_outputs=False" in str(e)
    e = dynamo.explain(data_dependent_branch)(ember.ones(3))
    assert [r.reason for r in e.break_reasons] == ["generic_jump TensorVariable()"]  # PyTorch's


def test_explain_leaves_no_tracer_behind_and_the_call_runs():
    from ember.autograd import function as _function

    def boom(x):
        x = x * 2
        raise ValueError("inside")

    with pytest.raises(ValueError, match="inside"):
        dynamo.explain(boom)(ember.ones(2))
    assert _function.tracer is None
    assert not dynamo.is_compiling()
    ran = []

    def side_effect(x):
        ran.append(dynamo.is_compiling())
        return x + 1

    e = dynamo.explain(side_effect)(ember.ones(2))
    assert ran == [True] and e.graph_count == 1


def test_old_call_form_warns_as_pytorch():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        e = dynamo.explain(no_break, ember.ones(2))
    assert e.graph_count == 1
    assert any(issubclass(x.category, FutureWarning) and "deprecated" in str(x.message)
               for x in w)
