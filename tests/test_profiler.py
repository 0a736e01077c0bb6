"""ember.profiler: events for ember's ops and record_function blocks, tables, traces, schedules."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ember
from ember.autograd.function import Function
from ember.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)


def _keys(prof) -> dict[str, int]:
    return {e.key: e.count for e in prof.key_averages()}


def test_ops_are_recorded_with_counts_and_times():
    x = ember.randn(4, 4, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            y = (x.exp() + x).relu()
        y.sum().backward()
    keys = _keys(prof)
    assert keys["ember::exp"] == 3 and keys["ember::add"] == 3 and keys["ember::relu"] == 3
    assert keys["ember::sum"] == 1 and keys["ember::backward"] == 1
    # each graph node's backward rule is an event, named as PyTorch names it, inside the pass
    assert keys["autograd::engine::evaluate_function: ExpBackward0"] == 1  # the last y's graph
    assert keys["autograd::engine::evaluate_function: ReluBackward0"] == 1
    node = next(e for e in prof.events() if e.name.endswith("SumBackward0"))
    assert node.cpu_parent.name == "ember::backward"
    for e in prof.key_averages():
        assert e.cpu_time_total >= e.self_cpu_time_total >= 0
        assert e.cpu_time == pytest.approx(e.cpu_time_total / e.count)


def test_apply_is_patched_only_while_recording():
    from ember.autograd import engine
    from ember.ops.pointwise import Mul

    original = Function.__dict__["apply"]
    rule = Mul.__dict__["backward"]
    run_backward = engine.run_backward  # (Python's or ember._native's: the same one after)
    with profile():
        assert Function.__dict__["apply"] is not original
        assert Mul.__dict__["backward"] is not rule
    assert Function.__dict__["apply"] is original
    assert Mul.__dict__["backward"] is rule
    with pytest.raises(ValueError), profile():
        raise ValueError("inside")
    assert Function.__dict__["apply"] is original
    from ember.profiler import _core

    assert not _core.active and not _core._patched
    assert engine.run_backward is run_backward


def test_record_function_nests_ops_and_works_as_decorator():
    x = ember.randn(8, 8)

    @record_function("decorated")
    def step():
        return (x @ x).tanh()

    with record_function("outside"):  # no profiler: nothing happens
        step()
    with profile() as prof:
        with record_function("block"):
            step()
            step()
    events = prof.events()
    block = next(e for e in events if e.name == "block")
    assert [c.name for c in block.cpu_children] == ["decorated", "decorated"]
    assert block.is_user_annotation
    inner = block.cpu_children[0]
    assert sorted(c.name for c in inner.cpu_children) == sorted(
        e.name for e in events if e.cpu_parent is inner)
    assert block.cpu_time_total >= sum(c.cpu_time_total for c in block.cpu_children)
    assert block.self_cpu_time_total == pytest.approx(
        block.cpu_time_total - sum(c.cpu_time_total for c in block.cpu_children))
    assert "outside" not in _keys(prof)
    assert _keys(prof)["decorated"] == 2


def test_user_function_is_named_after_its_class_and_parents_its_ops():
    class Twice(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with profile() as prof:
        Twice.apply(ember.ones(3, requires_grad=True))
    ev = next(e for e in prof.events() if e.name == "Twice")
    assert [c.name for c in ev.cpu_children] == ["ember::mul"]


def test_table_layout_matches_pytorch_columns():
    x = ember.randn(16, 16)
    with profile() as prof:
        for _ in range(2):
            x.exp().sum()
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=1)
    lines = table.splitlines()
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%",
                                "CPU", "total", "CPU", "time", "avg", "#", "of", "Calls"]
    assert lines[0] == lines[2] == lines[4] and set(lines[0]) == {"-", " "}
    assert len(lines) == 6 and lines[5].startswith("Self CPU time total: ")
    top = max(prof.key_averages(), key=lambda e: e.cpu_time_total)
    assert lines[3].split()[0] == top.key and lines[3].split()[-1] == str(top.count)
    by_count = prof.key_averages().table(sort_by="count").splitlines()[3:-2]
    assert len(by_count) == 2
    with pytest.raises(AttributeError, match="not a profiler metric"):
        prof.key_averages().table(sort_by="nonsense")


def test_table_header_is_the_same_as_pytorchs():
    torch = pytest.importorskip("torch")
    with torch.profiler.profile() as tprof:
        torch.ones(3).exp()
    with profile() as prof:
        ember.ones(3).exp()
    theirs = tprof.key_averages().table().splitlines()[1].split("  ")
    ours = prof.key_averages().table().splitlines()[1].split("  ")
    assert [c.strip() for c in theirs if c.strip()] == [c.strip() for c in ours if c.strip()]


def test_record_shapes_and_profile_memory():
    with profile(record_shapes=True, profile_memory=True) as prof:
        ember.ones(2, 3).exp()
        ember.ones(4, 5).exp()
    rows = {str(e.input_shapes): e for e in prof.key_averages(group_by_input_shape=True)
            if e.key == "ember::exp"}
    assert set(rows) == {"[[2, 3]]", "[[4, 5]]"}
    assert rows["[[4, 5]]"].cpu_memory_usage == 4 * 5 * 4  # float32 output bytes
    table = prof.key_averages(group_by_input_shape=True).table()
    assert "Input Shapes" in table and "CPU Mem" in table and "[[4, 5]]" in table
    with profile() as plain:
        ember.ones(1).exp()
    with pytest.raises(RuntimeError, match="record_shapes=True"):
        plain.key_averages(group_by_input_shape=True)


def test_profile_memory_counts_backward_kernels_and_pytorchs_units():
    """Each op's and each backward node's new memory, as PyTorch's rows show it: an MLP's
    backward makes its gradients (mm 3.04 MB there: AddmmBackward0 here), in PyTorch's units."""
    torch = pytest.importorskip("torch")

    def run(m):
        model = m.nn.Sequential(m.nn.Linear(512, 1024), m.nn.GELU(), m.nn.Linear(1024, 10))
        x = m.randn(256, 512)
        with m.profiler.profile(profile_memory=True) as prof:
            model(x).sum().backward()
        return prof.key_averages()

    def mem(rows, *names):
        return sum(e.self_cpu_memory_usage for e in rows if e.key in names)

    ours, theirs = run(ember), run(torch)
    # forward: the two linear outputs and GELU's; backward: GELU's gradient and the addmm grads
    assert mem(ours, "ember::linear") == mem(theirs, "aten::addmm")
    assert mem(ours, "ember::gelu") == mem(theirs, "aten::gelu")
    assert mem(ours, "autograd::engine::evaluate_function: GeluBackward0") == \
        mem(theirs, "aten::gelu_backward")
    # the weight, input and bias gradients (PyTorch's mm and sum rows; its loss sum is 4 B,
    # and it makes a 20 KB scratch in aten::empty that ember makes inside the rule)
    addmm = mem(ours, "autograd::engine::evaluate_function: AddmmBackward0")
    assert abs(addmm - (mem(theirs, "aten::mm") + mem(theirs, "aten::sum"))) <= 32 << 10
    assert addmm > 3 << 20
    table = ours.table(sort_by="self_cpu_memory_usage")
    assert " MB " in table and " Mb " not in table
    from ember.profiler._events import _format_memory
    assert [_format_memory(n) for n in (4, 20480, 3 << 20, 3 << 30)] == \
        ["4 B", "20.00 KB", "3.00 MB", "3.00 GB"]


def test_with_stack_records_the_calling_line():
    with profile(with_stack=True) as prof:
        ember.ones(2).exp()
    ev = next(e for e in prof.events() if e.name == "ember::exp")
    assert "test_profiler.py" in ev.stack[0]
    table = prof.key_averages(group_by_stack_n=1).table()
    assert "Source Location" in table and "test_profiler.py" in table


def test_export_chrome_trace(tmp_path):
    with profile() as prof:
        with record_function("outer"):
            ember.ones(3).exp()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    doc = json.loads(path.read_text())
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    names = {e["name"]: e for e in xs}
    assert {"outer", "ember::exp"} <= set(names)
    outer, op = names["outer"], names["ember::exp"]
    assert outer["ts"] <= op["ts"] and op["ts"] + op["dur"] <= outer["ts"] + outer["dur"] + 1e-3
    assert outer["cat"] == "user_annotation" and op["cat"] == "cpu_op"


@pytest.mark.parametrize("kwargs", [
    dict(wait=1, warmup=1, active=2), dict(wait=1, warmup=1, active=2, repeat=2),
    dict(wait=1, warmup=0, active=1, skip_first=2),
    dict(wait=2, warmup=1, active=1, repeat=2, skip_first_wait=1),
    dict(wait=0, warmup=0, active=1), dict(wait=0, warmup=2, active=3, repeat=1, skip_first=1),
])
def test_schedule_matches_pytorch(kwargs):
    torch = pytest.importorskip("torch")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.profiler.schedule(**kwargs)
        ours = schedule(**kwargs)
    assert [ours(i).name for i in range(14)] == [theirs(i).name for i in range(14)]


def test_schedule_values_without_pytorch():
    s = schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [s(i) for i in range(6)] == [
        ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
        ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE, ProfilerAction.NONE]
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=0, warmup=0, active=1)
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        schedule(wait=0, warmup=0, active=0)


def test_step_with_schedule_calls_on_trace_ready_per_cycle():
    traces = []

    def ready(p):
        traces.append((p.step_num, sorted(k for k in _keys(p) if k.startswith("ProfilerStep"))))

    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                 on_trace_ready=ready) as prof:
        for i in range(10):
            ember.ones(2).mul(i)
            prof.step()
    assert traces == [(4, ["ProfilerStep#2", "ProfilerStep#3"]),
                      (8, ["ProfilerStep#6", "ProfilerStep#7"])]
    assert _keys(prof)["ember::mul"] == 2  # the last recording: two active steps


def test_tensorboard_trace_handler_writes_a_trace_file(tmp_path):
    with profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(str(tmp_path / "tb"), "worker0")) as p:
        for _ in range(3):
            ember.ones(2).exp()
            p.step()
    files = list((tmp_path / "tb").iterdir())
    assert len(files) == 1 and files[0].name.startswith("worker0.")
    assert files[0].name.endswith(".pt.trace.json")
    doc = json.loads(files[0].read_text())
    assert any(e.get("name") == "ember::exp" for e in doc["traceEvents"])


def test_start_stop_and_results_before_finish():
    prof = profile()
    with pytest.raises(RuntimeError, match="didn't finish"):
        prof.key_averages()
    prof.start()
    ember.ones(2).exp()
    prof.stop()
    assert _keys(prof)["ember::exp"] == 1


def test_nested_profilers_both_record():
    with profile() as outer:
        ember.ones(2).exp()
        with profile() as inner:
            ember.ones(2).sin()
    assert _keys(outer) == {"ember::exp": 1, "ember::sin": 1}
    assert _keys(inner) == {"ember::sin": 1}


def test_results_are_unchanged_under_the_profiler():
    x = ember.randn(5, 5, requires_grad=True)
    ref = (x @ x).softmax(-1).sum()
    ref.backward()
    g = x.grad.numpy().copy()
    x.grad = None
    with profile():
        out = (x @ x).softmax(-1).sum()
        out.backward()
    assert float(out) == float(ref)
    np.testing.assert_array_equal(x.grad.numpy(), g)


def test_autograd_profiler_aliases():
    from ember.autograd import profiler as ap

    with ap.profile(record_shapes=True) as prof:
        with ap.record_function("blk"):
            ember.ones(3).exp()
    assert "ember::exp" in prof.table(sort_by="self_cpu_time_total")
    assert {e.name for e in prof.function_events} == {"blk", "ember::exp"}
    with ap.profile(enabled=False) as off:
        ember.ones(3).exp()
    assert len(off.events()) == 0
    assert ap.record_function is record_function


def test_profiler_reachable_as_attribute():
    assert ember.profiler.profile is profile
