"""torch.compile against eager over the whole op table (tests/test_devices.py's ROWS).

Each row's call is wrapped in a function and compiled; the compiled function is called four
times (two traced calls, then two replays), with the generated C on (``config.native``) and off
(the NumPy replay). Every call's outputs and the inputs' gradients (backward with the cotangent
test_devices uses) must equal eager ember's bit for bit: dtype, shape, every bit of every value
(signed zeros, NaN positions and payloads). Random rows reseed before each call, so eager and
compiled draw the same stream. Rows that cannot replay (graph breaks, data-dependent shapes)
run eagerly under compile and must give eager's results too; which rows those are is pinned by
``EAGER`` (strict both ways: a row that starts replaying, or stops, fails).
"""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from devices import cuda_available, fake_cupy, host
from test_devices import ROWS, NoGrad
from test_devices import _run as _run_row

import ember
import ember._dynamo
from ember._compile import _Entry, cc, codegen, config

ROOT = pathlib.Path(__file__).resolve().parents[1]
CALLS = 4  # two traced calls, then replays
HAVE_CC = cc.compiler() is not None and config.native

# Rows that stay eager under compile (every call runs the row itself), by the reason compile
# gives (entry.reason, which the test checks). Each is by design (ember/_compile/__init__.py,
# trace.py): a graph break (tensor data turned into a Python value: nonzero, unique, numpy(),
# bool()); a result made outside ember's recorded ops (argmax, sort's indices, random draws other
# than dropout's mask, creation functions); a view of an input returned from the region; an
# in-place write compile cannot follow; constants made from tensor data
# (integer index tensors, which two traces see as constants that may change).
OUTSIDE = "the region returns a tensor made outside ember's ops"
VIEW = "the region returns a view of an input"
FROM_DATA = "a value computed from tensor data outside ember's recorded ops"
DIFFER = "two traces differ"
WRITE = "an in-place write"
SHARED = "an array sharing memory with a tensor of the region"
KEY = ": an index or mask from a tensor's data"  # (after the op's name)
PY_VALUE = " computes a Python value from tensor data"  # (after the op's name)
EAGER: dict[str, str | tuple[str, ...]] = {
    "adaptive_uneven": OUTSIDE,
    "all_any": OUTSIDE,
    "arange_eye_on_device": OUTSIDE,
    "argmax": OUTSIDE,
    "argsort": OUTSIDE,
    "as_strided": VIEW,
    "avg_pool3d_pool1d": FROM_DATA,
    "bernoulli": OUTSIDE,
    "cartesian_combinations": DIFFER,
    "cholesky_ex_inv_ex": OUTSIDE,
    "ctc_loss": FROM_DATA,
    "diagonal": VIEW,
    "expand": VIEW,
    "flatten_narrow": VIEW,
    "getitem_basic": VIEW,
    "getitem_index": DIFFER,
    "getitem_index2": DIFFER,
    "getitem_mask": DIFFER,
    "getitem_repeat_basic": DIFFER,
    # (on the CPU a bool() of a tensor; fake CUDA's path reads the grid's data another way)
    "grid_sample_affine": ("graph break: __bool__ on a tensor", FROM_DATA),
    "histc_bincount": OUTSIDE,
    "iadd_index": DIFFER,
    "index_put_acc": DIFFER,
    "inplace_diagonal": WRITE,
    "inplace_view": WRITE,
    "isin_unique_consecutive": "graph break: Tensor.numpy()",
    "kthvalue": OUTSIDE,
    "like": OUTSIDE,
    "masked_select": "graph break: Tensor.masked_select()",
    "index_add_": "IndexPutAdd" + KEY,
    "index_fill_copy": "IndexFill" + KEY,
    "index_select": "IndexSelect" + KEY,
    "masked_scatter": "MaskedScatter" + KEY,
    "matrix_exp_power": "linalg.matrix_exp" + PY_VALUE,  # (its squarings follow the norm)
    "repeat_interleave": "repeat_interleave" + PY_VALUE,
    "max_pool2d_indices": OUTSIDE,
    "max_unpool_fold": "graph break: __int__ on a tensor",
    "meshgrid_broadcast": VIEW,
    "multilabel_losses": "graph break: Tensor.numpy()",
    "multinomial": OUTSIDE,
    "nonzero_tuple_argwhere": "graph break: Tensor.nonzero()",
    "normal_uniform_": WRITE,
    "one_hot": OUTSIDE,
    "permute_transpose": VIEW,
    "put_": DIFFER,
    "quantile": "graph break: Tensor.numpy()",
    "rand_like": OUTSIDE,
    "random_nn": WRITE,
    "repeat_movedim": VIEW,
    "resize_": WRITE,
    "searchsorted_bucketize": OUTSIDE,
    "setitem_index": DIFFER,
    "sort": OUTSIDE,
    "sort_stable_msort": OUTSIDE,
    "split_chunk": VIEW,
    "squeeze_unsqueeze": VIEW,
    "take_along_dim": SHARED,
    "tensor_copy": OUTSIDE,
    "tensor_of_0d": OUTSIDE,
    "topk": OUTSIDE,
    "tril_indices_window": OUTSIDE,
    "unbind": VIEW,
    "unfold": VIEW,
    "unique": "graph break: Tensor.unique()",
    "unravel_index": "graph break: Tensor.numpy()",
    "view_noncontig": VIEW,
    "view_reshape": VIEW,
    "where_nonzero": "graph break: Tensor.nonzero()",
}


@pytest.fixture(autouse=True)
def _fresh(tmp_path_factory: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernels"))
    ember._dynamo.reset()
    yield
    ember._dynamo.reset()


def _run(rid: str, fn: Callable, inputs: list, device: str) -> dict:
    """One forward and backward of ``fn`` (eager or compiled) on fresh leaves, as test_devices
    runs a row (its ``_run``): the outputs' dtypes, flags and values, and the inputs'
    gradients."""
    r = _run_row(rid, lambda _m, *ts: fn(*ts), inputs, device)
    r["meta"] = [(o.dtype, tuple(o.shape), o.requires_grad, str(o.device)) for o in r["outs"]]
    return r


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    if a.dtype.kind in "fc":
        return a.reshape(-1).view(f"u{a.dtype.itemsize // (2 if a.dtype.kind == 'c' else 1)}")
    return a.reshape(-1)


def _same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (
        f"{what}: {got.dtype}{got.shape} != eager's {want.dtype}{want.shape}")
    if not np.array_equal(_bits(got), _bits(want)):
        bad = np.flatnonzero(_bits(got) != _bits(want))
        raise AssertionError(f"{what}: {bad.size} of {got.size} elements differ from eager's "
                             f"bits (first at {bad[0]}: {got.reshape(-1)[bad[0]]!r} vs "
                             f"{want.reshape(-1)[bad[0]]!r})")


def _compare(got: dict, want: dict, what: str) -> None:
    assert got["meta"] == want["meta"], f"{what}: outputs {got['meta']} != eager's {want['meta']}"
    for k, (g, w) in enumerate(zip(got["values"], want["values"])):
        _same(g, w, f"{what} output {k}")
    for k, (g, w) in enumerate(zip(got["grads"], want["grads"])):
        assert (g is None) == (w is None), f"{what} input {k}: grad {g is None=} vs {w is None=}"
        if w is not None:
            _same(g, w, f"{what} input {k} grad")


MODES = {  # (config.native, codegen.enabled)
    "native": (True, True),  # generated Python calling generated C (the default with a compiler)
    "numpy": (False, True),  # generated Python over NumPy (EMBER_COMPILE_NATIVE=0)
    "interpreted": (False, False),  # replay.py's loop over the steps
}


# The two traced calls see the same inputs (so their traces agree on anything computed from the
# data); the replayed calls see others: floats scaled (positive factors at most 1: positive,
# distinct and probability inputs stay so) and every input rolled along its flattened
# elements. A replay that kept a value computed from the traced calls' data cannot pass.
SCALES = (1.0, 1.0, 0.75, 0.625)


# rows whose integer or float inputs must keep their order (embedding_bag's offsets start at 0)
KEEP_INTS = {"embedding_bag"}
KEEP_FLOATS = {"cholesky"}  # (a rolled positive definite matrix is not one)


def _scaled(rid: str, inputs: list, k: int) -> list:
    """Call k's inputs: floats scaled by SCALES[k]; from the third call, every input rolled
    by k - 1 (signs, order and argmax change too, not only magnitudes)."""
    def one(a: Any) -> Any:
        if isinstance(a, NoGrad):
            return NoGrad(one(a.arr))
        if a.dtype.kind == "f":
            a = a * a.dtype.type(SCALES[k])
            if rid in KEEP_FLOATS:
                return a
        elif rid in KEEP_INTS:
            return a
        return a if k < 2 else np.roll(a.reshape(-1), k - 1).reshape(a.shape)

    return [one(a) for a in inputs]


def _check_row(rid: str, fn: Callable, inputs: list, device: str, mode: str) -> _Entry:
    """Eager vs compiled on every call; the cache entry compile left the row in."""
    saved = config.native, codegen.enabled
    try:
        compiled = None
        for call in range(CALLS):
            args = _scaled(rid, inputs, call)
            config.native, codegen.enabled = saved
            want = _run(rid, lambda *ts: fn(ember, *ts), args, device)
            config.native, codegen.enabled = MODES[mode]
            if compiled is None:
                compiled = ember.compile(lambda *ts: fn(ember, *ts))
            got = _run(rid, compiled, args, device)
            _compare(got, want, f"{rid} on {device} ({mode}) call {call + 1}")
    finally:
        config.native, codegen.enabled = saved
    (entry,) = compiled._ember_compiled.cache.values()
    return entry


def _params() -> list:
    return [pytest.param(rid, fn, inputs, id=rid) for rid, fn, inputs in ROWS]


def _float32(a: Any) -> Any:
    if isinstance(a, NoGrad):
        return NoGrad(_float32(a.arr))
    return a.astype(np.float32) if a.dtype == np.float64 else a


# under no_grad (inference: forward only), these rows stay eager too: sign() and floor() on a
# tensor that needs no gradient make their result without an op
EAGER_NO_GRAD = {**EAGER, "sign_floor": OUTSIDE}


# (and the real GPU where CuPy and one are present)
WHERE = ["cpu", "cpu-float32", "cpu-no_grad", "fake_cuda"] + (["cuda"] if cuda_available() else [])


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize(("rid", "fn", "inputs"), _params())
def test_row_compiled_equals_eager(rid: str, fn: Callable, inputs: list, mode: str,
                                   where: str) -> None:
    """Every call of the compiled row (traced and replayed) gives eager's bits, forward and
    backward; the row replays unless EAGER names it, and then for the reason it names. The
    table's float64 inputs run as they are, and on the CPU as float32 too (the default dtype,
    where the eager kernels and the generated C take other paths) and under no_grad (a program
    with no backward)."""
    if MODES[mode][0] and not HAVE_CC:
        pytest.skip("no C compiler (or EMBER_PURE_PYTHON=1, EMBER_COMPILE_NATIVE=0)")
    device = where.split("-")[0]
    if where.endswith("float32"):
        inputs = [_float32(a) for a in inputs]
    no_grad = where.endswith("no_grad")
    with fake_cupy() if device == "fake_cuda" else contextlib.nullcontext(), \
            ember.no_grad() if no_grad else contextlib.nullcontext():
        entry = _check_row(rid, fn, inputs, device, mode)
    if device == "cuda":  # (the values only: no GPU has run this yet to pin its eager rows)
        return
    eager = EAGER_NO_GRAD if no_grad else EAGER
    if rid in eager:
        assert entry.state == "eager", f"{rid} now replays: take it out of EAGER"
        assert entry.reason is not None and entry.reason.startswith(eager[rid]), entry.reason
    else:
        assert entry.state == "compiled", f"{rid} stays eager: {entry.reason}"


def test_most_rows_replay() -> None:
    """The table is the op table, whole; the rows that stay eager are a known minority."""
    ids = {row[0] for row in ROWS}
    assert set(EAGER) <= ids, set(EAGER) - ids
    assert len(ROWS) >= 197 and len(ids) - len(EAGER) >= 129, (len(ids), len(EAGER))


# -- regression tests for the bugs the table found ------------------------------------------


def _four_calls(f: Callable, make: Callable) -> tuple[list, Any]:
    """``f`` eager and compiled, four calls each on fresh inputs (reseeded): both results."""
    runs = []
    for fn in (f, ember.compile(f)):
        outs = []
        for _ in range(CALLS):
            ember.manual_seed(3)
            args = make()
            out = fn(*args)
            if out.requires_grad:
                out.backward(ember.ones_like(out))
            outs.append((host(out).copy(), [None if a.grad is None else host(a.grad).copy()
                                            for a in args]))
        runs.append(outs)
    (entry,) = fn._ember_compiled.cache.values()
    return runs, entry


@pytest.mark.parametrize("write", ["resize_", "normal_", "uniform_", "bernoulli_"])
def test_a_write_that_bumps_a_tensor_directly_keeps_the_region_eager(write: str) -> None:
    """``resize_()`` and the random fills write a Tensor's memory and bump its version without
    an op. The tracer's detector was patched on TensorBase only, and Tensor defines its own
    ``_bump_version``: the writes went unseen and the replay returned the clone's values (the
    old shape, no draw). Now the key stays eager and every call equals eager mode."""
    args = {"resize_": (4, 2), "normal_": (), "uniform_": (), "bernoulli_": (0.5,)}[write]

    def f(x: Any) -> Any:
        return getattr(x.detach().clone(), write)(*args) * 2.0

    runs, entry = _four_calls(f, lambda: [ember.tensor(np.arange(6.0).reshape(2, 3))])
    for (ge, _), (gc, _) in zip(*runs):
        _same(gc, ge, write)
    assert entry.state == "eager" and entry.reason.startswith(WRITE), entry.reason


def test_an_in_place_op_whose_last_step_returns_an_earlier_array_keeps_its_history() -> None:
    """``x.clone().index_add_(...)``: index_add's last op (IndexAddBackward0) hands back the
    array IndexPutAdd made, and the tracer bound the tensor to IndexPutAdd's output slot (the
    first op with that array): the replay's backward skipped the last node and x got no
    gradient. Now it binds the last op's output, and the gradients are eager's."""
    rng = np.random.default_rng(5)
    xa, sa = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    idx = np.array([0, 2, 2, 4])

    def f(x: Any, s: Any) -> Any:
        return x.clone().index_add_(0, ember.tensor(idx), s, alpha=0.5)

    runs, entry = _four_calls(f, lambda: [ember.tensor(xa, requires_grad=True),
                                          ember.tensor(sa, requires_grad=True)])
    assert entry.state == "compiled", entry.reason
    for (ve, ge), (vc, gc) in zip(*runs):
        _same(vc, ve, "value")
        for a, b in zip(gc, ge):
            assert a is not None and b is not None
            _same(a, b, "grad")



def _same_calls(f: Callable, calls: list) -> Any:
    """``f`` compiled, called on each argument list of ``calls``, equals eager on each (the
    value and the first input's gradient); the cache entry."""
    c = ember.compile(f)
    for arrays in calls:
        outs = []
        for fn in (f, c):
            args = [ember.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
            out = fn(*args)
            out.backward(ember.ones_like(out))
            outs.append((host(out).copy(), host(args[0].grad).copy()))
        _same(outs[1][0], outs[0][0], "value")
        _same(outs[1][1], outs[0][1], "grad")
    (entry,) = c._ember_compiled.cache.values()
    return entry


@pytest.mark.parametrize("op", ["index_select", "index_add", "index_fill", "masked_scatter"])
def test_an_index_or_mask_from_a_tensor_is_never_baked(op: str) -> None:
    """index_select and friends pass their index tensor's array inside an indexing key, which
    compile kept as a constant: two traced calls with equal indices agreed, and a later call
    with other indices replayed the old ones. Now such a key keeps the region eager; an index
    the region makes from Python values (a constant) still replays."""
    x = np.arange(12.0).reshape(4, 3)
    fns = {
        "index_select": lambda x, i: x.index_select(0, i) * 2.0,
        "index_add": lambda x, i: x.index_add(0, i, x[:2] * 3.0),
        "index_fill": lambda x, i: x.index_fill(0, i, -1.0) * 2.0,
        "masked_scatter": lambda x, m: x.masked_scatter(m, x * 5.0),
    }
    if op == "masked_scatter":
        a, b = np.arange(12).reshape(4, 3) % 2 == 0, np.arange(12).reshape(4, 3) % 3 == 0
    else:
        a, b = np.array([0, 2]), np.array([3, 1])
    entry = _same_calls(fns[op], [[x, a], [x, a], [x, b], [x, b]])
    assert entry.state == "eager" and KEY in entry.reason, entry.reason
    const = _same_calls(lambda x: x.index_select(0, ember.tensor([0, 2])) * 2.0, [[x]] * 4)
    assert const.state == "compiled", const.reason


@pytest.mark.parametrize("op", ["matrix_exp", "repeat_interleave"])
def test_a_python_value_an_op_computes_from_data_keeps_the_region_eager(op: str) -> None:
    """matrix_exp's number of squarings (from the input's norm) and repeat_interleave's repeats
    (read from their tensor) decide what the op records: a replay kept the traced calls'
    values, and a later call with another norm or other repeats went wrong. The ops now tell
    the tracer (Tracer.data_read), and the key stays eager."""
    if op == "matrix_exp":
        a = np.array([[0.3, 0.1], [-0.2, 0.4]])
        entry = _same_calls(lambda a: ember.linalg.matrix_exp(a), [[a], [a], [a * 8], [a * 20]])
    else:
        x = np.arange(6.0).reshape(3, 2)
        r1, r2 = np.array([1, 0, 2]), np.array([2, 1, 0])
        entry = _same_calls(lambda x, r: ember.repeat_interleave(x, r, dim=0) * 2.0,
                            [[x, r1], [x, r1], [x, r2], [x, r2]])
    assert entry.state == "eager" and PY_VALUE in entry.reason, entry.reason


def test_an_op_that_makes_a_function_per_call_replays() -> None:
    """isclose (and isposinf, isneginf, nan_to_num) run a lambda made at each call as a recorded
    op: the two traces held two function objects, which compared unequal, and the region stayed
    eager. Functions of the same code over the same modules and equal numbers now agree; a
    closure over an array does not."""
    from ember._compile.trace import _same_function

    a, b = np.array([1.0, 2.0, np.nan]), np.array([1.05, 2.5, np.nan])
    entry = _same_calls(lambda x, y: ember.isclose(x, y, rtol=0.1, equal_nan=True) * x,
                        [[a, b], [a, b], [b, a], [a[::-1].copy(), b]])
    assert entry.state == "compiled", entry.reason

    def make(v: Any) -> Callable:
        return lambda t: t + v

    assert _same_function(make(0.5), make(0.5)) and not _same_function(make(0.5), make(0.25))
    assert not _same_function(make(np.zeros(2)), make(np.zeros(2)))

# -- a CNN training step, compiled vs eager, bit for bit ------------------------------------


def _train_steps(step: Any, model: Any, opt: Any, xs: Any, ys: Any, mode: str | None,
                 every_step: bool) -> list:
    """``step`` trained on batch i at step i (compiled in ``mode``; eager when None), dropout
    drawn from one stream in every mode: per step the loss and every gradient, then the
    parameters and buffers after each step (``every_step``) or the parameters at the end."""
    saved = config.native, codegen.enabled
    if mode is not None:
        config.native, codegen.enabled = MODES[mode]
    try:
        fwd = step if mode is None else ember.compile(step)
        ember.manual_seed(1)  # the dropout stream: the same in every mode
        got = []
        for i in range(len(xs)):
            loss = fwd(ember.tensor(xs[i]), ember.tensor(ys[i]))
            opt.zero_grad()
            loss.backward()
            got.append(host(loss).copy())
            got.extend(host(p.grad).copy() for p in model.parameters())
            opt.step()
            if every_step:
                got.extend(host(t).copy() for t in model.state_dict().values())
        if not every_step:
            got.extend(host(p).copy() for p in model.parameters())
    finally:
        config.native, codegen.enabled = saved
    if mode is not None:
        (entry,) = fwd._ember_compiled.cache.values()
        assert entry.state == "compiled", entry.reason
    return got


def _cnn() -> Any:
    nn = ember.nn
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(), nn.Linear(4 * 4 * 4, 5))


def _cnn_steps(opt_name: str, mode: str | None, steps: int = 4) -> list:
    """Four training steps of ``_cnn`` (eager when mode is None): per step the loss, every
    gradient, then every parameter and buffer after the optimizer's step."""
    ember.manual_seed(0)
    model = _cnn()
    make = {"sgd": lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9),
            "adam": lambda p: ember.optim.Adam(p, lr=0.01)}[opt_name]
    opt = make(model.parameters())
    rng = np.random.default_rng(4)
    xs = rng.standard_normal((steps, 3, 2, 8, 8)).astype(np.float32)
    ys = rng.integers(0, 5, (steps, 3))
    loss_fn = ember.nn.CrossEntropyLoss()

    def step(x: Any, y: Any) -> Any:
        return loss_fn(model(x), y)

    return _train_steps(step, model, opt, xs, ys, mode, every_step=True)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_cnn_training_steps_bitwise(opt_name: str, mode: str) -> None:
    """conv, BatchNorm in train mode (running statistics), ReLU, max pooling, dropout and a
    linear layer, cross-entropy, SGD with momentum or Adam: four steps give eager's bits
    (the first two calls are traced, the next two replay)."""
    if MODES[mode][0] and not HAVE_CC:
        pytest.skip("no C compiler (or EMBER_PURE_PYTHON=1, EMBER_COMPILE_NATIVE=0)")
    want = _cnn_steps(opt_name, None)
    got = _cnn_steps(opt_name, mode)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        _same(g, w, f"value {k}")


def test_a_named_tuple_result_replays_as_its_type() -> None:
    """``torch.max(x, dim)`` and friends return named tuples (torch.return_types); compile
    took them for unknown objects and kept such regions eager. Now the structure is kept and
    the replay rebuilds the named tuple, fields and all."""
    x = ember.tensor(np.arange(12.0).reshape(3, 4) % 5, requires_grad=True)
    f = ember.compile(lambda x: (ember.max(x * 2.0, dim=1), {"m": x.median(0)}))
    for _ in range(CALLS):
        (mx, d) = f(x)
    (entry,) = f._ember_compiled.cache.values()
    assert entry.state == "compiled", entry.reason
    want_mx, want_md = ember.max(x * 2.0, dim=1), x.median(0)
    for got, want in ((mx, want_mx), (d["m"], want_md)):
        assert type(got) is type(want) and got._fields == ("values", "indices")
        _same(host(got.values), host(want.values), "values")
        _same(host(got.indices), host(want.indices), "indices")
    mx.values.sum().backward()
    assert x.grad is not None and host(x.grad).sum() == 6.0


# -- the training workloads in every replay mode ------------------------------------------
# (tests/test_compile_native.py compares the MLP and the tiny GPT with and without generated C
# only where a compiler is; here they run in the modes that need none as well, with the
# benchmark's GPT: its fused attention, LayerNorm and GELU, AdamW)


def _bench_gpt() -> Any:
    src = (ROOT / "bench/workloads/_gpt_model.py").read_text()
    src = "\n".join(x for x in src.splitlines() if not x.startswith(("import torch", "from torch")))
    ns = {"torch": ember, "F": ember.nn.functional, "nn": ember.nn}
    exec(compile(src, "_gpt_model.py", "exec"), ns)  # noqa: S102 - the benchmark's own model
    return ns["GPT"]()


def _workload_steps(which: str, mode: str | None, steps: int = 4) -> list:
    """``steps`` training steps of a workload on a new batch each (eager when mode is None):
    per step the loss and every gradient, and the parameters at the end."""
    import test_compile_native as tcn

    ember.manual_seed(0)
    rng = np.random.default_rng(3)
    if which == "mlp_dropout":
        model, data = tcn._mlp(), (rng.standard_normal((steps, 16, 20)).astype(np.float32),
                                   rng.integers(0, 5, (steps, 16)))
    elif which == "tiny_gpt":
        model, data = tcn._TinyGPT(), (rng.integers(0, 11, (steps, 4, 8)),
                                       rng.integers(0, 11, (steps, 4, 8)))
    else:
        model, data = _bench_gpt(), (rng.integers(0, 65, (steps, 2, 16)),
                                     rng.integers(0, 65, (steps, 2, 16)))
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    loss_fn = ember.nn.CrossEntropyLoss()

    def step(x: Any, y: Any) -> Any:
        out = model(x, y) if which != "mlp_dropout" else model(x)
        return out if which != "mlp_dropout" else loss_fn(out, y)

    return _train_steps(step, model, opt, data[0], data[1], mode, every_step=False)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("which", ["mlp_dropout", "tiny_gpt", "bench_gpt"])
def test_training_workloads_bitwise(which: str, mode: str) -> None:
    """Four AdamW steps, compiled (two traced, two replayed) vs eager: every loss, gradient
    and parameter bit for bit, dropout drawn from the same stream."""
    if MODES[mode][0] and not HAVE_CC:
        pytest.skip("no C compiler (or EMBER_PURE_PYTHON=1, EMBER_COMPILE_NATIVE=0)")
    want = _workload_steps(which, None)
    got = _workload_steps(which, mode)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        _same(g, w, f"{which} value {k}")
