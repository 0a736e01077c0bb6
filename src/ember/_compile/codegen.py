"""Straight-line Python for a traced region: its forward and its backward as one generated
function each, so a replay runs no interpreter loop over the recorded steps.

``replay.run_forward`` / ``run_backward`` walk the program step by step: per op they unpack a
tuple, gather the argument slots into a list, test the output's type and shape and write the
slot list; per backward rule they look gradients up by slot, test shapes and dtypes and add up.
The generated functions do the same work with every slot a local variable and every constant
(the op's ``forward``, its node class, the traced shapes) bound by name, which for a region of
small tensors is most of what a replay costs. Steps that change state (a dropout mask's draw,
BatchNorm's running statistics, other writes) are undone, as the interpreted replay undoes them,
when a later op's output shape differs from the trace's. ``Program.source`` keeps the generated
text, for reading (a fused group's output that lives only inside one call is written into a
buffer the program keeps between calls: the pools at the end of this file)::

    >>> f = torch.compile(lambda x: (x * 2).sin()); f(x); f(x); f(x)
    >>> print(next(iter(f._ember_compiled.cache.values())).prog.source)
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import sys
from typing import Any

import numpy as np

from .. import _backend, _kernels_loader, _threads
from .._tensor_base import TensorBase
from ..autograd import function as _function
from ..autograd.engine import sum_to_shape
from . import cc, cgen, config, cudagen
from .replay import (
    _NODE_CLS,
    ShapeChanged,
    bad_count,
    double_backward,
    prog_mask,
    region_function,
    rng_restore,
    rng_snapshot,
)
from .trace import MASK, OP, UPDATE, Program

_new_node = object.__new__
enabled = True  # False: trusted programs keep the interpreted replay (tests compare the two)
# Python compiles straight-line code at ~11 us a line (~0.2 ms per op, forward and backward),
# and past a few thousand ops the generated function gains little over the interpreted loop
# (measured: 1.6 vs 2.3 us per small op at 2,000 ops, 2.5 vs 3.1 at 5,000), so longer programs
# keep the interpreted replay and compiling stays well under a second
MAX_STEPS = 3000
_CODE: dict[str, Any] = {}  # generated text -> its code object (the oldest dropped first)
_CODE_MAX = 256
backward_native = True  # False: only forward runs are generated as C (tests compare the two)
pool = True  # False: every fused group's output is a fresh array (tests compare the two)
# the smallest value a pool takes (bytes): below it a fresh array is as fast or faster (measured,
# 1 thread: 2.5 MiB values ran 5-7% slower pooled, the pooled buffer being last touched a whole
# call earlier where malloc hands back memory just freed and still in cache; 4-8 MiB even;
# 16 MiB and up faster, by the page faults of memory the allocator returned to the system and
# took back; docs/benchmarks.md, "compile: buffers planned once per program")
POOL_MIN_BYTES = 4 << 20


def generate(prog: Program) -> None:
    """Attach ``prog.fwd_fn`` (``(flat) -> (vals, ctxs)``, as ``run_forward``) and, when it
    needs gradients, ``prog.bwd_fn`` (``(node, *grads) -> grads``, ``run_backward`` on the
    node's ctxs: the backward of the region's node, whose class ``region_function`` makes); a
    program of more than ``MAX_STEPS`` steps keeps the interpreted replay."""
    if len(prog.steps) > MAX_STEPS:
        return
    ns: dict[str, Any] = {"NEW": _new_node, "ShapeChanged": ShapeChanged, "ND": np.ndarray,
                          "THR": _threads, "GEMM": _backend.gemm,
                          "sum_to_shape": sum_to_shape, "bad_count": bad_count,
                          "RNG_SNAP": rng_snapshot, "RNG_RESTORE": rng_restore, "MASK": prog_mask, "MAKE": TensorBase._make,
                          "MUL": np.multiply, "ADDRED": np.add.reduce, "MAX": np.maximum,
                          "CLAMP": _kernels_loader.clamp}
    groups, bgroups = _native_groups(prog, ns) if config.native else ({}, {})
    fplan = pool_plan(prog, groups) if pool else {}
    bplan = bpool_plan(prog, bgroups) if pool and prog.needs_grad else {}
    _bind_pools(prog, ns, fplan, bplan)
    fwd = _forward_source(prog, ns, groups, fplan)
    bwd = _backward_source(prog, ns, bgroups, bplan) if prog.needs_grad else ""
    prog.source = fwd + "\n" + _outputs_source(prog, ns) + ("\n" + bwd if bwd else "")
    code = _CODE.get(prog.source)
    if code is None:  # (Python compiles ~11 us a line: a region seen at a second batch size, or
        # a second model alike, has the same text, every shape and constant bound by name)
        code = compile(prog.source, "<ember compiled region>", "exec")
        if len(_CODE) >= _CODE_MAX:
            _CODE.pop(next(iter(_CODE)))
        _CODE[prog.source] = code
    exec(code, ns)  # noqa: S102 - our own text
    prog.fwd_fn = ns["forward"]
    prog.out_fn = ns["outputs"]
    prog.bwd_fn = ns.get("backward")
    if prog.bwd_fn is not None and "NODE" in ns:  # the region's node runs it directly
        ns["NODE"] = region_function(prog.bwd_fn)._node_cls


def _native_groups(prog: Program, ns: dict) -> tuple[dict, dict]:
    """The fused groups of ``prog`` built as C (cgen.py, cc.py), forward ones by first step,
    backward ones by first schedule entry; empty when there are none or the build failed (then
    NumPy runs every op, as before)."""
    cuda = cudagen.is_cuda(prog)
    groups = cgen.plan(prog, reductions=not cuda)
    bgroups = cgen.plan_backward(prog) if prog.needs_grad and backward_native else []
    if not groups and not bgroups:
        return {}, {}
    if cuda:
        return _cuda_groups(prog, ns, groups, bgroups)
    funcs: dict[str, str] = {}  # identical kernels share one function
    for g in [*groups, *bgroups]:
        n = len(g.inputs) + len(g.outputs) if isinstance(g, cgen.Group) else \
            len(g.loads) + len(g.saved) + len(g.outputs)
        helpers, fin = getattr(g, "helpers", ""), getattr(g, "fin", "")
        g.name = "ember_k" + hashlib.sha256((helpers + g.source + fin).encode()).hexdigest()[:16]
        g.n_args = n
        funcs.setdefault(g.name, (f"\n{g.comment}\n{helpers}void {g.name}{g.source}"
                                  + cgen.array_entry(g.name, n) + fin).replace("@NAME@", g.name))
    source = cgen.PRELUDE + "".join(funcs.values())
    lib = cc.build(source)
    if lib is None:
        return {}, {}
    prog.c_source = source
    by_object = _data_offset_ok(lib)
    prog.c_by_object = by_object
    # (GA: the exact array type a group's C takes; EMPTY makes its outputs)
    ns["EMPTY"], ns["GA"], ns["CONTIG"] = np.empty, np.ndarray, np.ascontiguousarray
    out: dict = {}
    bout: dict = {}
    callk = _call_kernel() if by_object else None
    for prefix, gs, where in (("KG", groups, out), ("KB", bgroups, bout)):
        for i, g in enumerate(gs):
            if by_object:  # the arrays themselves: the C reads their data pointers
                fn = getattr(lib, g.name + "_arrays")
                fn.argtypes = [ctypes.c_int64] * 2 + [ctypes.py_object] * g.n_args
                if callk is not None and g.n_args <= CALL_KERNEL_MAX:
                    # the native core calls it (ctypes' conversions cost ~0.8 us a call)
                    ns["CALLK"] = callk
                    ns[f"{prefix}{i}P"] = ctypes.cast(fn, ctypes.c_void_p).value
            else:
                fn = getattr(lib, g.name)
                fn.argtypes = [ctypes.c_int64] * 2 + [ctypes.c_void_p] * g.n_args
            fn.restype = None
            ns[f"{prefix}{i}"] = fn
            if getattr(g, "fin", ""):  # an all-element reduction's last step: its parts combined
                fin = getattr(lib, g.name + ("_fin_arrays" if by_object else "_fin"))
                fin.argtypes = [ctypes.py_object if by_object else ctypes.c_void_p] * 2
                fin.restype = None
                ns[f"{prefix}{i}_FIN"] = fin
            where[g.ks[0]] = (i, g)
    return out, bout


def _cuda_groups(prog: Program, ns: dict, groups: list, bgroups: list) -> tuple[dict, dict]:
    """The fused groups of a CUDA program as CuPy kernels (cudagen.py), called as the C ones
    are; CuPy compiles each at its first call (and caches it on disk). Without CuPy's
    ``ElementwiseKernel`` (an older CuPy) the ops run one by one, as before."""

    xp = _backend._cupy
    if not hasattr(xp, "ElementwiseKernel"):
        return {}, {}
    ns["EMPTY"], ns["GA"], ns["CONTIG"] = xp.empty, _backend.cuda_array_type(), \
        xp.ascontiguousarray
    prog.c_by_object = True  # (the arrays themselves are passed)
    out: dict = {}
    bout: dict = {}
    texts: dict[str, str] = {}
    for prefix, gs, where, make in (("KG", groups, out, cudagen.forward_kernel),
                                    ("KB", bgroups, bout, cudagen.backward_kernel)):
        for i, g in enumerate(gs):
            k = make(g)
            g.name, g.cuda = k.name, True
            texts.setdefault(k.name, k.source())
            ns[f"{prefix}{i}"] = cudagen.launcher(cudagen.build(xp, k))
            where[g.ks[0]] = (i, g)
    prog.c_source = cudagen.PREAMBLE + "".join(texts.values())
    return out, bout


def _call(fn: str, g: Any, args: str, ns: dict) -> str:
    """The statement calling kernel ``fn`` over its whole loop: split over ember's threads
    (``_threads``: ``set_num_threads``, ``OMP_NUM_THREADS``) when it is large enough; each
    element is computed alike in any part, so the result is the same at any thread count.
    Unsplit, through the native core's ``call_kernel`` where ``_native_groups`` set it up."""
    ns[f"{fn}_N"] = g.outer  # (sizes by name: the text is the same for another batch size)
    whole = f"CALLK({fn}P, 0, {fn}_N, {args})" if f"{fn}P" in ns else f"{fn}(0, {fn}_N, {args})"
    if g.size < _threads.THRESHOLD or g.outer < 2 or g.cuda:
        return whole
    ns["THR"], ns["SPLIT"], ns[f"{fn}_S"] = _threads, _split, g.size
    return f"SPLIT({fn}, {fn}_N, ({args},)) if THR.cut <= {fn}_S else {whole}"


CALL_KERNEL_MAX = 12  # arrays the native core's call_kernel passes (_native.c)


def _call_kernel() -> Any:
    """The native core's ``call_kernel``, or None (the core is off or stale: ctypes calls)."""
    from .. import _native_core

    return getattr(_native_core.native, "call_kernel", None)


def _split(fn: Any, outer: int, args: tuple) -> None:
    """``fn(lo, hi, *args)`` over parts of ``range(outer)``, one per thread (the ctypes call
    releases the GIL, so the parts run at once)."""
    n = min(_threads.get_num_threads(), outer)
    bounds = [outer * k // n for k in range(n + 1)]

    def part(lo: int, hi: int, out: Any = None) -> None:
        fn(lo, hi, *args)

    _threads._parallel(part, [((bounds[k], bounds[k + 1]), None) for k in range(n)])


_offset_checked: dict[int, bool] = {}


def _data_offset_ok(lib: Any) -> bool:
    """Whether the library's ``EMBER_DATA`` finds an array's data where ``ctypes.data`` says."""
    key = id(lib)
    if key not in _offset_checked:
        f = lib.ember_data_pointer
        f.argtypes, f.restype = [ctypes.py_object], ctypes.c_void_p
        probe = np.arange(3.0)[1:]
        _offset_checked[key] = f(probe) == probe.ctypes.data
    return _offset_checked[key]


def _group_lines(i: int, g: cgen.Group, prog: Program, ns: dict, add: Any, pad: str,
                 plan: dict) -> None:
    """One fused group: its C function when its array inputs are C-contiguous (the layout its
    strides assume), else its ops through NumPy as usual; then each op's ctx as forward left it.
    An output in ``plan`` (slot -> buffer) takes the call's pooled buffer (``_alloc``)."""
    ins = [f"s{s}" for s, _dt, _sh in g.inputs]
    # (an op on 0-d arrays may return a NumPy scalar: not an array, NumPy runs the group; a
    # mask drawn in the group takes the layout of a C-contiguous value: C-contiguous)
    masks = {prog.steps[k][4] for k in g.masks}
    check = " and ".join(f"type(s{s}) is GA and s{s}.flags.c_contiguous"
                         for s, _dt, _sh in g.inputs if s not in masks) or "True"
    add(f"{pad}if {check}:")
    ns[f"GS{i}"] = g.shape
    for j, (s, dt) in enumerate(g.outputs):
        ns[f"GD{i}_{j}"] = dt
        shape = f"GS{i}"
        if s in g.out_shapes:  # (a reduction's result)
            ns[f"GS{i}_{j}"] = g.out_shapes[s]
            shape = f"GS{i}_{j}"
        _alloc(f"s{s}", f"EMPTY({shape}, GD{i}_{j})", plan.get(s), add, f"{pad}    ")
    written = {s for s, _ in g.outputs}
    for k in g.masks:  # (drawn as the interpreted order draws them: before any later mask)
        _, xs, _p, _shape, s = prog.steps[k]
        x = f"s{xs}"
        if xs in g.values and xs not in written:  # not in memory: a stand-in of its layout
            ns[f"GV{i}_{xs}"] = g.values[xs][1]
            x = f"EMPTY(GS{i}, GV{i}_{xs})"
        add(f"{pad}    " + _mask_line(k, prog.steps[k], ns, x))
    red = g.reduce[2] if g.reduce is not None else None
    arrs = ins + [f"s{s}" for s, _ in g.outputs if s != red]
    if red is not None:  # (the result, or the parts an all-element sum combines after)
        if g.fin:
            ns[f"GP{i}"] = (len(g.tasks),)
            rj = [s for s, _ in g.outputs].index(red)
            add(f"{pad}    p{i} = EMPTY(GP{i}, GD{i}_{rj})")
        arrs.append(f"p{i}" if g.fin else f"s{red}")

    def ptrs(arrs: list) -> str:
        return ", ".join(arrs if prog.c_by_object else [f"{x}.ctypes.data" for x in arrs])

    add(f"{pad}    " + _call(f"KG{i}", g, ptrs(arrs), ns))
    if red is not None and g.fin:
        add(f"{pad}    KG{i}_FIN({ptrs([f'p{i}', f's{red}'])}); p{i} = None")
    if red is not None and g.out_shapes[red] == ():
        add(f"{pad}    s{red} = s{red}[()]")  # (a NumPy scalar, as np.add.reduce returns)
    for k, info in zip(g.ks, g.infos):
        st = prog.steps[k]
        o = st[6][0]
        if o not in written:
            add(f"{pad}    s{o} = None")  # (computed in registers only)
        if prog.needs_grad:
            _, fwd, ncls, xp, nig, aslots, oslots, shapes = st
            ns[f"N{k}"], ns[f"XP{k}"], ns[f"NIG{k}"] = ncls, xp, nig
            add(f"{pad}    c{k} = NEW(N{k}); c{k}._edges = (); c{k}._versions = None; "
                f"c{k}._n_out = 1; c{k}.xp = XP{k}; c{k}.needs_input_grad = NIG{k}"
                + _meta_line(k, ns, prog.metas))
            saved = info[2]
            if saved is None:
                add(f"{pad}    c{k}._saved = None")
            else:
                vals = [("None" if w is None else
                         f"s{aslots[w[1]]}" if w[0] == "arg" else f"s{oslots[w[1]]}")
                        for w in saved]
                add(f"{pad}    c{k}._saved = ({''.join(v + ', ' for v in vals)})")
            if info[3]:
                ns[f"A{k}"] = info[3]
                add(f"{pad}    c{k}.__dict__.update(A{k})")
    add(f"{pad}else:")
    for k in sorted(g.ks + g.masks):
        if prog.steps[k][0] is MASK:
            add(f"{pad}    " + _mask_line(k, prog.steps[k], ns))
        else:
            _op_lines(k, prog.steps[k], ns, add, pad + "    ", prog.metas)


def _mask_line(k: int, st: tuple, ns: dict, x: str = "") -> str:
    """A dropout mask's draw (``x``: the expression of the array whose layout it takes)."""
    _, xs, p, shape, s = st
    ns[f"P{k}"], ns[f"SHP{k}"] = p, shape
    return f"s{s} = MASK(MAKE({x or f's{xs}'}), P{k}, SHP{k})"


def _forward_source(prog: Program, ns: dict, groups: dict | None = None,
                    plan: dict | None = None) -> str:
    lines = ["def forward(flat):"]
    add = lines.append
    plan = plan or {}
    if plan:  # this call's set of pooled buffers (_bind_pools)
        add("    try: PB = FTAKE()")
        add(f"    except IndexError: PB = [None] * {max(plan.values()) + 1}")
    # steps that change state (a running statistic, a write, a random draw) are undone when a
    # later op's shape differs from the trace's, so that the call can rerun eagerly
    undoable = any(st[0] is not OP for st in prog.steps)
    pad = "        " if undoable else "    "
    if undoable:
        add("    undo = []")
        add("    rng_state = None")
        add("    try:")
    for pos, s in prog.inputs:
        add(f"{pad}s{s} = flat[{pos}]._data")
    for i, f in enumerate(prog.free):
        ns[f"FREE{i}"] = f[0]
        add(f"{pad}s{f[1]} = FREE{i}._data")
    for s, v in prog.consts:  # (a constant may be None: an argument such as ``dtype=None``)
        ns[f"K{s}"] = v
        add(f"{pad}s{s} = K{s}")
    ctx_names = []
    masked = False
    groups = groups or {}
    skip: set[int] = set()
    for k, (st, done) in enumerate(zip(prog.steps, prog.drops)):
        if k in groups:
            i, g = groups[k]
            if g.masks and not masked:
                add(f"{pad}rng_state = RNG_SNAP()")
                masked = True
            _group_lines(i, g, prog, ns, add, pad, plan)
            skip.update(g.ks + g.masks)
        if st[0] is OP:
            if k not in skip:
                _op_lines(k, st, ns, add, pad, prog.metas)
            ctx_names.append(f"c{k}")
        elif st[0] is MASK:  # a dropout mask from the same generator, in the same order
            if k not in skip:
                if not masked:
                    add(f"{pad}rng_state = RNG_SNAP()")
                    masked = True
                add(pad + _mask_line(k, st, ns))
        elif st[0] is UPDATE:  # a running statistic, with normalization.py's arithmetic
            _, ss, bs, m, fi = st
            ns[f"M{k}"] = m
            add(f"{pad}undo.append((s{ss}, s{ss}.copy()))")
            add(f"{pad}s{ss}[...] = (s{ss} * (1 - M{k}) + s{bs}.astype(s{ss}.dtype) * M{k})"
                f".reshape(s{ss}.shape)")
            if fi >= 0:
                add(f"{pad}FREE{fi}._bump_version()")
        else:  # WRITE: an in-place write outside autograd (ops/inplace.py's _write)
            _, ds, src, fi = st
            add(f"{pad}undo.append((s{ds}, s{ds}.copy()))")
            add(f"{pad}s{ds}[...] = s{src}")
            if fi >= 0:
                add(f"{pad}FREE{fi}._bump_version()")
        for s in done:  # read for the last time: the memory can serve the next op
            add(f"{pad}del s{s}")
    if undoable:
        add("    except ShapeChanged:")
        add("        for arr, old in reversed(undo):")
        add("            arr[...] = old")
        add("        if rng_state is not None:")
        add("            RNG_RESTORE(rng_state)")
        add("        raise")
    keep = sorted({leaf[1] for leaf in prog.out_spec[1] if leaf[0] in ("diff", "slot")})
    add(f"    vals = [None] * {prog.n_slots}")
    for s in keep:
        add(f"    vals[{s}] = s{s}")
    ctxs = f"[{', '.join(ctx_names)}]" if prog.needs_grad else "None"
    if plan:
        add("    FGIVE(PB)")
    add(f"    return vals, {ctxs}")
    return "\n".join(lines) + "\n"


def _outputs_source(prog: Program, ns: dict) -> str:
    """``outputs(vals, ctxs, flat)``: ``replay.make_outputs`` written out for this program (its
    edges, saved-value versions and output leaves by name, no loop over the program's tables)."""
    lines = ["def outputs(vals, ctxs, flat):"]
    add = lines.append
    ns["PROG"], ns["NODE"], ns["ACC"] = prog, _NODE_CLS, _function._accumulator

    def tensor(where: str, k: int) -> str:
        if where == "input":
            return f"flat[{k}]"
        ns[f"FREE{k}"] = prog.free[k][0]
        return f"FREE{k}"

    node = prog.needs_grad and bool(prog.out_slots)
    if node:
        add("    node = NEW(NODE)")
        # an edge's (shape, dtype) is its value's as the trace saw it (the guards hold them:
        # an input's are in the cache key, an outside tensor's checked by guards.guards_hold), as
        # the ops of the schedule record them; read from the tensor where none records it
        seen = {s: (shape, dt) for entry in prog.bsched for _i, s, shape, dt in entry[5]}
        edges, metas = [], []
        for j, (where, k) in enumerate(prog.edge_src):
            fixed = seen.get(prog.edge_slots[j])
            if fixed is not None:
                ns[f"EM{j}"] = fixed
                add(f"    t = {tensor(where, k)}; fn = t._grad_fn")
                metas.append(f"EM{j}")
            else:
                add(f"    t = {tensor(where, k)}; fn = t._grad_fn; d = t._data; "
                    f"m{j} = (d.shape, d.dtype)")
                metas.append(f"m{j}")
            add(f"    e{j} = (fn, t._output_nr) if fn is not None else (ACC(t), 0)")
            edges.append(f"e{j}, ")
        add(f"    node._edges = ({''.join(edges)})")
        add(f"    node._meta = [{', '.join(metas)}]")
        add(f"    node._n_out = {len(prog.out_slots)}")
        ns["NODE_XP"] = prog.steps[0][3] if prog.steps and prog.steps[0][0] is OP else None
        ns["NODE_NIG"] = (True,) * len(prog.edge_src)
        add("    node.xp = NODE_XP")
        add("    node.needs_input_grad = NODE_NIG")
        add("    node._saved = (PROG, ctxs)")
        versions = []
        for j, (where, k) in enumerate(prog.saved_src):
            # (TensorBase._version_counter written out: no method call per saved tensor)
            add(f"    t = {tensor(where, k)}; v{j} = t._version")
            add(f"    if v{j} is None: v{j} = t._version = [0]")
            versions.append(f"(v{j}, v{j}[0], {j})")
        add(f"    node._versions = [{', '.join(versions)}]" if versions
            else "    node._versions = None")
    leaves = []
    for leaf in prog.out_spec[1]:
        kind = leaf[0]
        if kind == "diff":
            leaves.append(f"MAKE(vals[{leaf[1]}], True, node, {leaf[2]})" if node
                          else f"MAKE(vals[{leaf[1]}])")
        elif kind == "slot":
            v = f"vals[{leaf[1]}]"
            leaves.append(f"MAKE({v}.copy())" if prog.init[leaf[1]] is not None
                          else f"MAKE({v})")
        elif kind == "input":
            leaves.append(f"flat[{leaf[1]}]")
        elif kind == "free":
            leaves.append(tensor("free", leaf[1]))
        else:
            j = len(leaves)
            ns[f"PY{j}"] = leaf[1]
            leaves.append(f"PY{j}")
    add(f"    leaves = [{', '.join(leaves)}]")
    if node and prog.out_guard:
        # an output an op saved for backward: changing it in place before backward raises, as
        # in eager mode, instead of the region's rules reading the changed values
        add("    versions = node._versions or []")
        for i in prog.out_guard:
            add(f"    t = leaves[{i}]; counter = t._version")
            add("    if counter is None: counter = t._version = [0]")
            add("    versions.append((counter, counter[0], len(versions)))")
        add("    node._versions = versions")
    add("    return leaves")
    return "\n".join(lines) + "\n"


def _meta_line(k: int, ns: dict, metas: list) -> str:
    """The statement giving op k's ctx its inputs' (shape, dtype), as apply records them."""
    if metas[k] is None:
        return ""
    ns[f"META{k}"] = metas[k]
    return f"; c{k}._meta = META{k}"


def _op_lines(k: int, st: tuple, ns: dict, add: Any, pad: str, prog_metas: list) -> None:
    _, fwd, ncls, xp, nig, aslots, oslots, shapes = st
    ns[f"F{k}"], ns[f"N{k}"], ns[f"XP{k}"], ns[f"NIG{k}"] = fwd, ncls, xp, nig
    # Node.__init__'s fields, without the call (as Function.apply does)
    add(f"{pad}c{k} = NEW(N{k}); c{k}._edges = (); c{k}._saved = None; "
        f"c{k}._versions = None; c{k}._n_out = 1; c{k}.xp = XP{k}; "
        f"c{k}.needs_input_grad = NIG{k}" + _meta_line(k, ns, prog_metas))
    args = ", ".join(f"s{s}" for s in aslots)
    if _is_rule(fwd, "Linear.forward") and xp is np and len(shapes[0]) == 2 and len(oslots) == 1:
        # a 2-d Linear written out: the same product (_backend.gemm, the rule's) without the
        # rule's call, its reshapes to and from the shape it already has
        # (bfloat16 operands: the rule, whose product is the bfloat16 kernel's: half_gemm)
        x, w, b = (f"s{s}" for s in aslots)
        o = f"s{oslots[0]}"
        ns[f"SH{k}_0"] = shapes[0]
        add(f"{pad}if {x}.dtype.itemsize == 2: {o} = F{k}(c{k}, {args})")
        add(f"{pad}else:")
        add(f"{pad}    c{k}._saved = ({x if nig[1] else 'None'}, {w if nig[0] else 'None'}); "
            f"c{k}.x_shape = {x}.shape; c{k}.w_shape = {w}.shape")
        add(f"{pad}    {o} = GEMM({x}, {w}.T)")
        if not _const_none(aslots[2], ns):
            add(f"{pad}    if {b} is not None: {o} += {b}")
        add(f"{pad}    if {o}.dtype != {x}.dtype: {o} = {o}.astype({x}.dtype)")
        add(f"{pad}if {o}.shape != SH{k}_0: raise ShapeChanged")
        return
    sym = next((op for name, op in (("Add", "+"), ("Sub", "-"), ("Mul", "*"))
                if _is_rule(fwd, f"{name}.forward", _POINTWISE)), None)
    if sym is not None and len(oslots) == 1 and len(aslots) == 2:
        # a binary op written out: the rule's own expression, below the size at which the
        # rule splits it over the threads (there: the rule)
        a, b = (f"s{s}" for s in aslots)
        o = f"s{oslots[0]}"
        ns[f"SH{k}_0"] = shapes[0]
        if sym == "*":  # (what Mul.forward saves)
            add(f"{pad}c{k}._saved = ({a if nig[1] else 'None'}, {b if nig[0] else 'None'})")
        add(f"{pad}if type({a}) is ND and {a}.size >= THR.cut: {o} = F{k}(c{k}, {args})")
        add(f"{pad}else: {o} = {a} {sym} {b}")
        add(f"{pad}if {o}.shape != SH{k}_0: raise ShapeChanged")
        return
    if (_is_rule(fwd, "Relu.forward", "ember.ops.pointwise_piecewise") and xp is np
            and len(oslots) == 1 and len(aslots) == 1 and prog_metas[k] is not None
            and prog_metas[k][0][1] in (np.float32, np.float64)):
        # ReLU written out below the size at which the rule splits it over the threads: as the
        # rule, the clamp kernel where it applies (one pass: 4x NumPy's maximum on the CNN's
        # conv1 output), else its own np.maximum(0, x) (0 first: -0.0 stays -0.0), the output
        # saved as it saves it
        x, o = f"s{aslots[0]}", f"s{oslots[0]}"
        ns[f"SH{k}_0"] = shapes[0]
        add(f"{pad}if type({x}) is ND and {x}.size < THR.cut_cheap:")
        add(f"{pad}    {o} = CLAMP({x}, 0.0, None)")
        add(f"{pad}    if {o} is None: {o} = MAX(0, {x})")
        add(f"{pad}    c{k}._saved = ({o},)")
        add(f"{pad}else: {o} = F{k}(c{k}, {args})")
        add(f"{pad}if {o}.shape != SH{k}_0: raise ShapeChanged")
        return
    red = ns.get(f"K{aslots[-1]}") if len(aslots) == 3 else None
    if (_is_rule(fwd, "MseLoss.forward", _LOSSES) and xp is np and red in ("mean", "sum")
            and len(oslots) == 1 and prog_metas[k] is not None
            and prog_metas[k][0][1] in (np.float32, np.float64)):
        # MSE written out for host float32/float64 arrays: (x - t)^2 in place, the sum as
        # _sum_arr takes it (np.add.reduce in the dtype), the mean's division in the dtype
        # (an empty input: the rule, which quiets its 0/0)
        a, b = (f"s{s}" for s in aslots[:2])
        o = f"s{oslots[0]}"
        ns[f"SH{k}_0"] = shapes[0]
        add(f"{pad}if type({a}) is ND and type({b}) is ND and {a}.size:")
        add(f"{pad}    d = {a} - {b}; MUL(d, d, out=d); c{k}.reduction = K{aslots[-1]}; "
            f"c{k}.n = d.size; c{k}._saved = ({a}, {b})")
        total = "ADDRED(d, None, d.dtype, None, False)"
        add(f"{pad}    {o} = ({total} / d.size).astype(d.dtype)" if red == "mean"
            else f"{pad}    {o} = {total}")
        add(f"{pad}    d = None")
        add(f"{pad}else: {o} = F{k}(c{k}, {args})")
        add(f"{pad}if {o}.shape != SH{k}_0: raise ShapeChanged")
        return
    if len(oslots) == 1:  # (straight into its slot: nothing else keeps the array alive)
        o = f"s{oslots[0]}"
        ns[f"SH{k}_0"] = shapes[0]
        add(f"{pad}{o} = F{k}(c{k}, {args})")
        add(f"{pad}if type({o}) is tuple: {o} = {o}[0]")
        add(f"{pad}if {o}.shape != SH{k}_0: raise ShapeChanged")
    else:
        add(f"{pad}o = F{k}(c{k}, {args})")
        for j, (s, sh) in enumerate(zip(oslots, shapes)):
            if s >= 0:
                ns[f"SH{k}_{j}"] = sh
                add(f"{pad}if o[{j}].shape != SH{k}_{j}: raise ShapeChanged")
                add(f"{pad}s{s} = o[{j}]")
        add(f"{pad}o = None")


def _written_rule(bwd: Any, ometa: tuple, g: str) -> tuple | None:
    """``(condition, setup, gradient expression per input)`` for a backward rule whose
    arithmetic the generated code writes out (the same expressions the rule evaluates, under
    the condition in which it evaluates them), or None."""
    if _is_rule(bwd, "Linear.backward") and len(ometa[0][0]) == 2 \
            and ometa[0][1] in (np.float32, np.float64):
        # 2-d: Linear.backward's reshapes give the arrays their own shapes
        return (f"type({g}) is ND and {g}.ndim == 2", "sa, sb = c._saved",
                (f"GEMM({g}, sb)", f"GEMM({g}.swapaxes(0, 1), sa)", f"{g}.sum(axis=0)"))
    if _is_rule(bwd, "MseLoss.backward", _LOSSES):
        # gx = (x - t) g' 2 in place, g' the gradient as the mean hands it back (the rule's
        # _loss_grad_scale); sa ends as gx (cleared with sa and sb after the rule)
        return ("True", "sa, sb = c._saved; sa = sa - sb; sa *= ((" + g + " * (1.0 / c.n) if c.n "
                "else " + g + " * 0.0) if c.reduction == 'mean' else " + g + "); sa *= 2",
                ("sa", "-sa"))
    if _is_rule(bwd, "Pow.backward", _POINTWISE):
        # a number exponent 2 (``x ** 2``): the rule's own ``grad * 2 * a``; the exponent's
        # gradient is not asked for (a number has no edge)
        return ("isinstance(c._saved[1], (int, float)) and c._saved[1] == 2",
                "sa = c._saved[0]", (f"{g} * 2 * sa", None))
    if _is_rule(bwd, "Add.backward", _POINTWISE):
        return "True", "", (g, g)
    if _is_rule(bwd, "Sub.backward", _POINTWISE):
        return "True", "", (g, f"-{g}")
    if _is_rule(bwd, "Mul.backward", _POINTWISE):  # (large gradients: its split products)
        return (f"not (type({g}) is ND and {g}.size >= THR.cut)", "sa, sb = c._saved",
                (f"{g} * sb", f"{g} * sa"))
    return None


_POINTWISE = "ember.ops.pointwise"
_LOSSES = "ember.ops.nn.loss_margin"


def _is_rule(fn: Any, qualname: str, module: str = "ember.ops.nn.linear") -> bool:
    """Whether ``fn`` is the op rule ``module.qualname`` (named, not imported: the ops sit
    above this layer)."""
    return getattr(fn, "__qualname__", None) == qualname and \
        getattr(fn, "__module__", None) == module


def _const_none(s: int, ns: dict) -> bool:
    """Whether slot ``s`` holds the constant None (an omitted bias)."""
    return f"K{s}" in ns and ns[f"K{s}"] is None


def _backward_source(prog: Program, ns: dict, bgroups: dict | None = None,
                     plan: dict | None = None) -> str:
    lines = ["def backward(node, *grads):"]  # (the region node's backward: replay.py)
    add = lines.append
    plan = plan or {}
    if plan:  # this call's set of pooled buffers (_bind_pools)
        add("    try: PB = BTAKE()")
        add(f"    except IndexError: PB = [None] * {max(plan.values()) + 1}")
    ns["DOUBLE"] = double_backward
    add("    if node._tensor_mode: DOUBLE()")  # create_graph: not supported through a region
    add("    ctxs = node._saved[1]")
    slots = set(prog.out_slots) | set(prog.edge_slots)
    for entry in prog.bsched:
        slots.update(s for s in entry[2] if s >= 0)
        slots.update(e[1] for e in entry[5])
    for s in sorted(slots):
        add(f"    g{s} = None")
    for j, s in enumerate(prog.out_slots):
        add(f"    if grads[{j}] is not None: g{s} = grads[{j}] if g{s} is None else g{s} + grads[{j}]")
    bgroups = bgroups or {}
    skip: set[int] = set()
    for k, entry in enumerate(prog.bsched):
        if k in bgroups:
            i, g = bgroups[k]
            _bgroup_lines(i, g, prog, ns, add, plan)
            skip.update(g.ks)
        if k not in skip:
            _rule_lines(k, entry, prog, ns, add, "    ")
    if plan:
        add("    BGIVE(PB)")
    add(f"    return ({''.join(f'g{s}, ' for s in prog.edge_slots)})")
    return "\n".join(lines) + "\n"


def _bgroup_lines(i: int, g: cgen.BGroup, prog: Program, ns: dict, add: Any,
                  plan: dict) -> None:
    """A fused run of backward rules: its C when the gradients it reads hold arrays of the
    expected shape, dtype and layout, else the rules one by one. An output in ``plan`` ((group,
    output) -> buffer) takes the call's pooled buffer (``_alloc``)."""
    ns[f"BSH{i}"], ns[f"BDT{i}"] = g.shape, g.dtype
    op_ci = {}
    for j, (ci, sj, _sh) in enumerate(g.saved):
        op_ci[j] = (ci, sj)
    for j, (ci, sj) in op_ci.items():
        add(f"    sv{i}_{j} = ctxs[{ci}]._saved[{sj}]")
    checks = [f"g{s} is not None and type(g{s}) is GA and g{s}.shape == BSH{i} and "
              f"g{s}.dtype == BDT{i}" for s in g.loads]
    checks += [f"type(sv{i}_{j}) is GA and sv{i}_{j}.flags.c_contiguous" for j in op_ci]
    add(f"    if {' and '.join(checks) or 'True'}:")
    # an incoming gradient in another layout (a sum's or mean's backward hands a broadcast
    # view) is copied to C order: one pass, where the rules one by one would take several
    for s in g.loads:
        add(f"        if not g{s}.flags.c_contiguous: g{s} = CONTIG(g{s})")
    outs = [f"bo{i}_{j}" for j in range(len(g.outputs))]
    for j, o in enumerate(outs):
        _alloc(o, f"EMPTY(BSH{i}, BDT{i})", plan.get((i, j)), add, "        ")
    args = [f"g{s}" for s in g.loads] + [f"sv{i}_{j}" for j in op_ci] + outs
    if not prog.c_by_object:
        args = [f"{a}.ctypes.data" for a in args]
    add("        " + _call(f"KB{i}", g, ", ".join(args), ns))
    for s, o in zip(g.outputs, outs):
        add(f"        g{s} = {o}")
    for s in g.spent:
        add(f"        g{s} = None")
    add(f"        {' = '.join(outs + [f'sv{i}_{j}' for j in op_ci])} = None"
        if outs or op_ci else "        pass")
    add("    else:")
    for j in op_ci:
        add(f"        sv{i}_{j} = None")
    for k in g.ks:
        _rule_lines(k, prog.bsched[k], prog, ns, add, "        ")


def _rule_lines(k: int, entry: tuple, prog: Program, ns: dict, add: Any, pad: str) -> None:
    """One backward rule of the schedule, as the interpreted replay runs it."""
    ci, bwd, oslots, ometa, materialize, edges, name = entry
    ns[f"B{k}"] = bwd
    ns[f"NAME{k}"] = name
    add(f"{pad}c = ctxs[{ci}]")
    written = _written_rule(bwd, ometa, f"g{oslots[0]}") if len(oslots) == 1 else None
    if written is not None:
        # the rule written out: its own arithmetic on the arrays, without its call and the
        # tuple it returns; each gradient added as it is made (as the engine would, in order)
        cond, setup, grad = written
        g = f"g{oslots[0]}"
        nig = [st for st in prog.steps if st[0] is OP][ci][4]
        add(f"{pad}if {g} is not None and {cond}:")
        if setup:
            add(f"{pad}    {setup}")
        for i, s, shape, dt in edges:
            if nig[i] and grad[i] is not None:
                ns[f"ES{k}_{i}"], ns[f"ED{k}_{i}"] = shape, dt
                add(f"{pad}    x = {grad[i]}")
                add(f"{pad}    if x.shape != ES{k}_{i}: x = sum_to_shape(x, ES{k}_{i}, c)")
                add(f"{pad}    if x.dtype != ED{k}_{i}: x = x.astype(ED{k}_{i})")
                add(f"{pad}    g{s} = x if g{s} is None else g{s} + x")
        add(f"{pad}    x = sa = sb = None")
        add(f"{pad}elif {g} is not None:")
        add(f"{pad}    o = B{k}(c, {g})")
    elif len(oslots) == 1:
        add(f"{pad}if g{oslots[0]} is not None:")
        add(f"{pad}    o = B{k}(c, g{oslots[0]})")
    else:
        buf = [f"g{s}" if s >= 0 else "None" for s in oslots]
        add(f"{pad}if not ({' is None and '.join(buf)} is None):")
        if materialize:
            for j in range(len(oslots)):
                if ometa[j] is not None:
                    ns[f"OM{k}_{j}"] = ometa[j]
                    v = buf[j]
                    if v == "None":
                        add(f"{pad}    b{j} = c.xp.zeros(*OM{k}_{j})")
                    else:
                        add(f"{pad}    b{j} = {v} if {v} is not None else c.xp.zeros(*OM{k}_{j})")
                    buf[j] = f"b{j}"
        add(f"{pad}    o = B{k}(c, {', '.join(buf)})")
    add(f"{pad}    if type(o) is not tuple: o = (o,)")
    if edges:
        top = max(e[0] for e in edges)
        add(f"{pad}    if len(o) <= {top}: bad_count(NAME{k}, {top}, len(o))")
    for i, s, shape, dt in edges:
        ns[f"ES{k}_{i}"], ns[f"ED{k}_{i}"] = shape, dt
        add(f"{pad}    x = o[{i}]")
        add(f"{pad}    if x is not None:")
        add(f"{pad}        if x.shape != ES{k}_{i}: x = sum_to_shape(x, ES{k}_{i}, c)")
        add(f"{pad}        if x.dtype != ED{k}_{i}: x = x.astype(ED{k}_{i})")
        add(f"{pad}        g{s} = x if g{s} is None else g{s} + x")
    add(f"{pad}    o = x = None")  # (no reference past this rule: the memory can be reused)
    for s in oslots:  # this op's output gradients are spent
        if s >= 0 and s not in prog.edge_slots:
            add(f"{pad}g{s} = None")


# -- buffers planned once per program and reused between calls ---------------------------------
#
# A fused group's output that lives only inside one call (not a region output, not saved for
# backward by any op, not a gradient handed to the region's edges) is written into a buffer the
# program keeps between calls instead of a fresh array; values of one shape and dtype whose
# lifetimes within the call do not overlap share one buffer (a linear scan over the step order).
# The buffers come in sets, one per call in flight: a call takes a set at entry (``FTAKE`` /
# ``BTAKE``: ``list.pop``, atomic) and gives it back at exit, so a second call that runs at the
# same time (another thread, or two forwards before their backwards) finds none and starts its
# own. Before a buffer is written, its reference count is checked against that of a buffer only
# the set holds (``PBASE``): anything else still holding it (a view of an earlier value, a ctx
# that saved it, an output, a gradient the engine keeps or put in ``.grad``) means it is not free,
# and the set takes a fresh array in its place; so the plan decides what is worth pooling, and
# what escapes is never overwritten, whatever an op returned a view of.

_pool_base: int | None = None


def _refcount_base() -> int:
    """What ``sys.getrefcount`` says of a pooled buffer right after ``s = PB[i]`` in generated
    code, when only the set and ``s`` hold it (measured once, on code compiled the same way)."""
    global _pool_base
    if _pool_base is None:
        ns: dict[str, Any] = {"GRC": sys.getrefcount}
        src = "def probe(PB):\n    s0 = PB[0]\n    return GRC(s0)\n"
        exec(compile(src, "<ember compiled region>", "exec"), ns)  # noqa: S102 - our own text
        _pool_base = ns["probe"]([np.empty(1)])
    return _pool_base


def _alloc(name: str, fresh: str, buf: int | None, add: Any, pad: str) -> None:
    """``name = fresh``, or buffer ``buf`` of the call's set when no one else holds it."""
    if buf is None:
        add(f"{pad}{name} = {fresh}")
        return
    add(f"{pad}{name} = PB[{buf}]")
    add(f"{pad}if GRC({name}) != PBASE: {name} = PB[{buf}] = {fresh}")


def _linear_scan(values: list) -> dict:
    """``{key: buffer}`` for ``values`` ``(start, end, kind, key)``: one buffer per kind (shape
    and dtype) for values whose [start, end] step intervals do not overlap."""
    out: dict = {}
    ends: list[int] = []  # per buffer: the last step of the value it holds
    kinds: list = []
    for start, end, kind, key in sorted(values, key=lambda v: (v[0], v[1])):
        b = next((b for b in range(len(ends)) if kinds[b] == kind and ends[b] < start), None)
        if b is None:
            b = len(ends)
            ends.append(end)
            kinds.append(kind)
        else:
            ends[b] = end
        out[key] = b
    return out


def pool_plan(prog: Program, groups: dict) -> dict[int, int]:
    """Slot -> buffer, for the forward's fused outputs that live only inside one call."""
    keep = {leaf[1] for leaf in prog.out_spec[1] if leaf[0] in ("diff", "slot")}
    saved: set[int] = set()
    if prog.needs_grad:  # (an op whose saved values are unknown: all its arrays)
        infos = iter(prog.op_info)
        for st in prog.steps:
            if st[0] is OP:
                info = next(infos)
                if info is None:
                    saved.update(st[5])
                    saved.update(st[6])
                    continue
                for where in info[2] or ():
                    if where is not None:
                        saved.add(st[5][where[1]] if where[0] == "arg" else st[6][where[1]])
    last: dict[int, int] = {}
    for k, st in enumerate(prog.steps):
        for s in cgen._reads(st):
            last[s] = k
    values = []
    for _i, g in groups.values():
        start, end = min(g.ks + g.masks), max(g.ks + g.masks)
        red = g.reduce[2] if g.reduce is not None else None
        for s, dt in g.outputs:
            if s != red and s not in keep and s not in saved and \
                    math.prod(g.shape) * np.dtype(dt).itemsize >= POOL_MIN_BYTES:
                values.append((start, max(last.get(s, end), end), (g.shape, dt), s))
    return _linear_scan(values)


def bpool_plan(prog: Program, bgroups: dict) -> dict[tuple, int]:
    """(backward group, output) -> buffer, for the fused backward's gradients that are not
    handed to the region's edges (those leave the call)."""
    edges = set(prog.edge_slots)
    last: dict[int, int] = {}  # slot -> the last schedule entry that reads or adds to it
    for k, entry in enumerate(prog.bsched):
        for s in entry[2]:
            last[s] = k
        for e in entry[5]:
            last[e[1]] = k
    values = []
    for i, g in bgroups.values():
        start, end = g.ks[0], g.ks[-1]
        if math.prod(g.shape) * np.dtype(g.dtype).itemsize < POOL_MIN_BYTES:
            continue
        for j, s in enumerate(g.outputs):
            if s not in edges:
                values.append((start, max(last.get(s, end), end), (g.shape, g.dtype), (i, j)))
    return _linear_scan(values)


def _bind_pools(prog: Program, ns: dict, fplan: dict, bplan: dict) -> None:
    """The program's sets of pooled buffers (``prog.pools``: forward's, backward's; each a list
    of sets, one per call not in flight) and the names the generated code calls."""
    fsets: list = []
    bsets: list = []
    prog.pools = (fsets, bsets)
    prog.pool_sizes = (len(set(fplan.values())), len(set(bplan.values())))
    if fplan or bplan:
        ns["GRC"], ns["PBASE"] = sys.getrefcount, _refcount_base()
        ns["FTAKE"], ns["FGIVE"] = fsets.pop, fsets.append
        ns["BTAKE"], ns["BGIVE"] = bsets.pop, bsets.append
