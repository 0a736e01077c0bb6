"""The pieces of torch that libraries (Lightning, transformers, torchmetrics, safetensors) compute
with, compared with the installed PyTorch: FlopCounterMode, nn.utils.prune, torch.library,
nn.attention.flex_attention, storages from files, torch._C's entries, _pytree helpers, and the
package metadata `ember run` answers (issue 33)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from helpers import rerun_on_pure_python

torch = pytest.importorskip("torch")


def _both(fn):
    """fn(m) on ember and on torch, with the same seed."""
    out = []
    for m in (ember, torch):
        m.manual_seed(0)
        out.append(fn(m))
    return out


# -- FlopCounterMode --------------------------------------------------------------------------

def _flops(m, make, grad=False):
    from importlib import import_module

    fc = import_module(f"{m.__name__}.utils.flop_counter")
    mode = fc.FlopCounterMode(display=False)
    with mode:
        out = make(m)
        if grad:
            out.sum().backward()
    counts = {k: {str(op): v for op, v in d.items()} for k, d in mode.get_flop_counts().items()}
    return mode.get_total_flops(), counts


def _R(m, *shape, g=False):
    return m.randn(*shape, requires_grad=g)


FLOP_CASES = {
    "linear2d": lambda m: m.nn.Linear(8, 4)(_R(m, 5, 8)),
    "linear3d": lambda m: m.nn.Linear(8, 4)(_R(m, 2, 5, 8)),
    "linear_nobias": lambda m: m.nn.Linear(8, 4, bias=False)(_R(m, 2, 5, 8)),
    "mm": lambda m: _R(m, 2, 3) @ _R(m, 3, 4),
    "vec_mat": lambda m: _R(m, 5) @ _R(m, 5, 3),
    "bmm": lambda m: m.bmm(_R(m, 3, 4, 5), _R(m, 3, 5, 6)),
    "matmul_3d_2d": lambda m: _R(m, 3, 4, 5) @ _R(m, 5, 6),
    "matmul_bcast": lambda m: _R(m, 2, 1, 4, 5) @ _R(m, 3, 5, 6),
    "addmm": lambda m: m.addmm(_R(m, 4), _R(m, 2, 3), _R(m, 3, 4)),
    "baddbmm": lambda m: m.baddbmm(_R(m, 3, 4, 6), _R(m, 3, 4, 5), _R(m, 3, 5, 6)),
    "dot_mv": lambda m: (_R(m, 5) @ _R(m, 5)) + (_R(m, 4, 5) @ _R(m, 5)).sum(),
    "einsum_bmm": lambda m: m.einsum("bij,bjk->bik", _R(m, 3, 4, 5), _R(m, 3, 5, 6)),
    "einsum_chain": lambda m: m.einsum("ij,jk,kl->il", _R(m, 2, 3), _R(m, 3, 4), _R(m, 4, 5)),
    "einsum_outer": lambda m: m.einsum("i,j->ij", _R(m, 2), _R(m, 3)),
    "conv2d_groups": lambda m: m.nn.Conv2d(3, 6, 3, groups=3, padding=1)(_R(m, 2, 3, 8, 8)),
    "conv1d_stride": lambda m: m.nn.Conv1d(4, 5, 3, stride=2)(_R(m, 2, 4, 11)),
    "conv_transpose2d": lambda m: m.nn.ConvTranspose2d(4, 2, 3, stride=2)(_R(m, 2, 4, 5, 5)),
    # head sizes differ: PyTorch's CPU build runs its math kernel and counts the products
    "sdpa": lambda m: m.nn.functional.scaled_dot_product_attention(
        _R(m, 2, 2, 4, 8), _R(m, 2, 2, 6, 8), _R(m, 2, 2, 6, 3)),
}

GRAD_CASES = {
    "linear_x": lambda m: m.nn.Linear(8, 4)(_R(m, 5, 8, g=True)),
    "linear_w_only": lambda m: m.nn.Linear(8, 4)(_R(m, 2, 5, 8)),
    "mm_both": lambda m: _R(m, 2, 3, g=True) @ _R(m, 3, 4, g=True),
    "mm_one": lambda m: _R(m, 2, 3) @ _R(m, 3, 4, g=True),
    "matmul4d": lambda m: _R(m, 2, 3, 4, 5, g=True) @ _R(m, 2, 3, 5, 6),
    "conv_x": lambda m: m.nn.Conv2d(3, 6, 3, groups=3, padding=1)(_R(m, 2, 3, 8, 8, g=True)),
    "conv_w_only": lambda m: m.nn.Conv2d(3, 6, 3, groups=3, padding=1)(_R(m, 2, 3, 8, 8)),
    "conv_transpose": lambda m: m.nn.ConvTranspose2d(4, 2, 3, stride=2)(_R(m, 2, 4, 5, 5, g=True)),
    "sdpa_all": lambda m: m.nn.functional.scaled_dot_product_attention(
        _R(m, 2, 2, 4, 8, g=True), _R(m, 2, 2, 6, 8, g=True), _R(m, 2, 2, 6, 3, g=True)),
    "sdpa_q": lambda m: m.nn.functional.scaled_dot_product_attention(
        _R(m, 2, 2, 4, 8, g=True), _R(m, 2, 2, 6, 8), _R(m, 2, 2, 6, 3)),
}


@pytest.mark.parametrize("name", sorted(FLOP_CASES))
def test_flop_counter_forward_matches_torch(name):
    mine, ref = _both(lambda m: _flops(m, FLOP_CASES[name]))
    assert mine == ref


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_flop_counter_backward_matches_torch(name):
    mine, ref = _both(lambda m: _flops(m, GRAD_CASES[name], grad=True))
    assert mine == ref


def test_flop_counter_totals_where_the_op_split_differs():
    """A non-contiguous N-D input to linear (MultiheadAttention's projections): PyTorch counts
    mm (its matmul path), ember addmm (it folds the input first); the totals agree."""
    cases = [lambda m: m.nn.Linear(8, 4)(_R(m, 5, 2, 8).transpose(0, 1)),
             lambda m: m.nn.MultiheadAttention(8, 2, batch_first=True)(
                 _R(m, 2, 5, 8), _R(m, 2, 5, 8), _R(m, 2, 5, 8))[0]]
    for make in cases:
        mine, ref = _both(lambda m, make=make: _flops(m, make, grad=True))
        assert mine[0] == ref[0]


def test_flop_counter_per_module_and_table():
    def run(m):
        class Net(m.nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = m.nn.Sequential(m.nn.Linear(8, 16), m.nn.ReLU(), m.nn.Linear(16, 4))
                self.head = m.nn.Linear(4, 2)

            def forward(self, x):
                return self.head(self.enc(x))

        return _flops(m, lambda m: Net()(_R(m, 3, 8)), grad=True)

    mine, ref = _both(run)
    assert mine == ref
    assert set(mine[1]) == {"Global", "Net", "Net.enc", "Net.enc.0", "Net.enc.2", "Net.head"}
    from ember.utils.flop_counter import FlopCounterMode

    mode = FlopCounterMode(display=False, depth=1)
    with mode:
        ember.nn.Linear(4, 4)(ember.randn(2, 4))
    table = mode.get_table()
    assert "Global" in table and "aten.addmm" in table and "64" in table
    assert mode.get_flop_counts()["Global"][ember.ops.aten.addmm] == 64


def test_flop_counter_leaves_no_hooks_and_nests():
    from ember.autograd import function as _function
    from ember.utils.flop_counter import FlopCounterMode

    before = _function.tracer
    outer, inner = FlopCounterMode(display=False), FlopCounterMode(display=False)
    with outer:
        ember.randn(2, 3) @ ember.randn(3, 4)
        with inner:
            ember.randn(2, 3) @ ember.randn(3, 4)
    assert (outer.get_total_flops(), inner.get_total_flops()) == (96, 48)
    assert _function.tracer is before
    with pytest.raises(NotImplementedError):
        FlopCounterMode(custom_mapping={"aten.mm": lambda *a, **k: 0})


# -- nn.utils.prune ---------------------------------------------------------------------------

def _prune_run(m):
    import importlib

    prune = importlib.import_module(f"{m.__name__}.nn.utils.prune")
    nn = m.nn
    lin = nn.Linear(6, 4)
    prune.l1_unstructured(lin, "weight", amount=0.3)
    out = [sorted(n for n, _ in lin.named_parameters()), sorted(n for n, _ in lin.named_buffers()),
           lin.weight_mask.tolist(), isinstance(lin.weight, nn.Parameter)]
    prune.ln_structured(lin, "weight", amount=1, n=2, dim=0)
    out.append(lin.weight_mask.tolist())
    out.append(type(next(iter(lin._forward_pre_hooks.values()))).__name__)
    prune.random_unstructured(lin, "bias", amount=2)
    out.append(lin.bias_mask.tolist())
    lin(m.randn(3, 6)).sum().backward()
    out.append((lin.weight_orig.grad == 0).sum().item())
    prune.remove(lin, "weight")
    out += [sorted(n for n, _ in lin.named_parameters()), (lin.weight == 0).sum().item()]
    conv = nn.Conv2d(2, 6, 3)
    prune.random_structured(conv, "weight", amount=0.5, dim=0)
    out.append(conv.weight_mask.sum((1, 2, 3)).tolist())
    m1, m2 = nn.Linear(5, 5), nn.Linear(5, 3)
    prune.global_unstructured([(m1, "weight"), (m2, "weight")],
                              pruning_method=prune.L1Unstructured, amount=10)
    out += [m1.weight_mask.tolist(), m2.weight_mask.tolist()]
    out.append(prune.L1Unstructured(amount=2).prune(m.tensor([3., -1., 0.5, 2.])).tolist())
    out.append(prune.is_pruned(m1))
    for bad in (1.5, -1, "x"):
        try:
            prune.l1_unstructured(nn.Linear(2, 2), "weight", amount=bad)
        except (ValueError, TypeError) as e:
            out.append(type(e).__name__)
    return out


def test_prune_matches_torch():
    mine, ref = _both(_prune_run)
    assert mine == ref


# -- torch.library ----------------------------------------------------------------------------

def _library_run(m, ns):
    out = []

    def scale_fn(x, k):
        return x * k

    # real types (this file's annotations are strings: from __future__ import annotations)
    scale_fn.__annotations__ = {"x": m.Tensor, "k": float, "return": m.Tensor}
    scale = m.library.custom_op(f"{ns}::scale", scale_fn, mutates_args=())

    packet = getattr(m.ops, ns).scale
    out += [str(packet), str(packet.default)]
    x = m.ones(3, requires_grad=True)
    y = scale(x, 2.0)
    out.append(y.requires_grad)
    try:
        y.sum().backward()
    except RuntimeError as e:
        out.append(str(e))

    def setup(ctx, inputs, output):
        ctx.k = inputs[1]

    scale.register_autograd(lambda ctx, g: (g * ctx.k, None), setup_context=setup)
    scale(x, 3.0).sum().backward()
    out.append(x.grad.tolist())
    out.append(packet(m.ones(2), 3.0).tolist())
    m.library.register_fake(f"{ns}::scale", lambda x, k: m.empty_like(x))
    meta = packet(m.ones(2, 5, device="meta"), 3.0)
    out.append((tuple(meta.shape), meta.device.type))
    lib = m.library.Library(f"{ns}2", "DEF")
    out.append(lib.define("add3(Tensor x) -> Tensor"))
    lib.impl("add3", lambda x: x + 3, "CompositeImplicitAutograd")
    w = m.ones(2, requires_grad=True)
    getattr(m.ops, f"{ns}2").add3(w).sum().backward()
    out.append(w.grad.tolist())
    try:
        m.library.custom_op(f"{ns}::bad", lambda x: x, mutates_args=())
    except ValueError as e:
        out.append(str(e).split(".")[0])
    return out


def test_library_matches_torch():
    assert _library_run(ember, "emberlibtest") == _library_run(torch, "emberlibtest")


# -- flex_attention ---------------------------------------------------------------------------

def _flex_run(m):
    from importlib import import_module

    fa = import_module(f"{m.__name__}.nn.attention.flex_attention")

    def causal(b, h, q, kv):
        return q >= kv

    out = []
    bm = fa.create_block_mask(causal, 2, 1, 256, 200, device="cpu")
    out += [bm.shape, bm.BLOCK_SIZE, bm.seq_lengths, round(bm.sparsity(), 4)]
    for n in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
              "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"):
        t = getattr(bm, n)
        out.append((n, tuple(t.shape), str(t.dtype), t.tolist()))
    out.append(bm.to_dense().tolist())
    q, k, v = (m.randn(2, 4, 40, 8) for _ in range(3))
    mask = fa.create_block_mask(fa.and_masks(causal, lambda b, h, q, kv: q - kv < 10), None,
                                None, 40, 40, BLOCK_SIZE=16)

    def rel(score, b, h, qi, kvi):
        return score + 0.1 * (qi - kvi) - 0.05 * h

    o, aux = fa.flex_attention(q, k, v, score_mod=rel, block_mask=mask,
                               return_aux=fa.AuxRequest(lse=True))
    out.append(np.round(o.numpy(), 4))
    out.append(np.round(aux.lse.numpy(), 4))
    out.append(np.round(fa.flex_attention(q, m.randn(2, 2, 40, 8), m.randn(2, 2, 40, 8),
                                          enable_gqa=True, scale=0.3).numpy(), 4))
    out.append(fa.create_mask(fa.or_masks(causal, fa.noop_mask), 1, 1, 3, 3).tolist())
    return out


def test_flex_attention_matches_torch():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch: "called without torch.compile()"
        mine, ref = _both(_flex_run)
    for a, b in zip(mine, ref):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, b, atol=2e-4)
        else:
            assert a == b


def test_flex_attention_is_differentiable_and_masks_empty_rows():
    from ember.nn.attention.flex_attention import create_block_mask, flex_attention

    q, k, v = (ember.randn(1, 2, 8, 4, requires_grad=True) for _ in range(3))
    causal = create_block_mask(lambda b, h, qi, kv: qi >= kv, None, None, 8, 8, BLOCK_SIZE=4)
    out = flex_attention(q, k, v, block_mask=causal)
    ref = ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-6)
    out.sum().backward()
    assert q.grad is not None and v.grad.abs().sum().item() > 0
    empty = create_block_mask(lambda b, h, qi, kv: qi < 0, None, None, 8, 8, BLOCK_SIZE=4)
    o, lse = flex_attention(q.detach(), k.detach(), v.detach(), block_mask=empty, return_lse=True)
    assert o.abs().sum().item() == 0 and bool(ember.isinf(lse).all())


# -- storages, torch._C, pytree ---------------------------------------------------------------

def test_storage_from_file_slices_and_asarray(tmp_path):
    path = str(tmp_path / "bytes.bin")
    with open(path, "wb") as f:
        f.write(bytes(range(16)))

    def run(m):
        s = m.UntypedStorage.from_file(path, shared=False, nbytes=16)
        sl = s[4:12]
        t = m.asarray(sl, dtype=m.uint8)
        out = [type(s).__name__, s.nbytes(), sl.nbytes(), t.tolist(), str(t.dtype),
               m.asarray(sl, dtype=m.int16).tolist(), s[3], s.untyped() is s,
               m.is_storage(sl), isinstance(sl, m.UntypedStorage)]
        t[0] = 99
        out += [s[4], sl[0]]
        with open(path, "rb") as f:
            out.append(f.read()[4])  # copy-on-write: the file keeps its byte
        return out

    assert run(ember) == run(torch)
    assert ember.storage.UntypedStorage is ember.UntypedStorage


def test_torch_c_entries():
    assert isinstance(ember.Tensor, ember._C._TensorMeta) == isinstance(torch.Tensor,
                                                                      torch._C._TensorMeta)
    assert isinstance(ember.nn.Parameter, ember._C._TensorMeta)
    assert not isinstance(int, ember._C._TensorMeta)
    cases = [(("cpu",), {}), ((ember.float64,), {}), (("cpu", ember.float16, True), {}),
             ((), {"device": "cpu", "dtype": ember.float32, "non_blocking": True}),
             ((ember.zeros(2, dtype=ember.int8),), {})]
    for args, kwargs in cases:
        targs = tuple(getattr(torch, str(a).split(".")[-1]) if isinstance(a, ember.dtype)
                      else torch.zeros(2, dtype=torch.int8) if isinstance(a, ember.Tensor)
                      else a for a in args)
        tkw = {k: getattr(torch, str(v).split(".")[-1]) if isinstance(v, ember.dtype) else v
               for k, v in kwargs.items()}
        mine = ember._C._nn._parse_to(*args, **kwargs)
        ref = torch._C._nn._parse_to(*targs, **tkw)
        assert tuple(str(x) for x in mine) == tuple(str(x) for x in ref)
    assert ember.profiler.kineto_available() is torch.profiler.kineto_available()
    assert ember.nn.modules.module._EXTRA_STATE_KEY_SUFFIX == \
        torch.nn.modules.module._EXTRA_STATE_KEY_SUFFIX


def test_pytorch_file_reader_reads_torch_save_archives(tmp_path):
    path = str(tmp_path / "ckpt.pt")
    torch.save({"a": torch.arange(6.0).reshape(2, 3)}, path)
    mine, ref = ember._C.PyTorchFileReader(path), torch._C.PyTorchFileReader(path)
    assert mine.get_all_records() == ref.get_all_records()
    for name in ref.get_all_records():
        assert mine.get_record(name) == ref.get_record(name)
        assert mine.get_record_offset(name) == ref.get_record_offset(name)
    assert mine.has_record("data.pkl") and not mine.has_record("nope")
    assert str(mine.serialization_id()) == str(ref.serialization_id())
    assert mine.get_storage_from_record("data/0", 6, ember.float32).tolist() == \
        [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(RuntimeError, match="nope"):
        mine.get_record("nope")
    assert ember.PyTorchFileReader is ember._C.PyTorchFileReader


def test_pytree_private_helpers():
    import collections

    import torch.utils._pytree as tp

    import ember.utils._pytree as ep

    P = collections.namedtuple("P", "a b")
    for x in ([1], {"a": 1}, P(1, 2), 3, (1, 2)):
        assert (ep._get_node_type(x) in ep.SUPPORTED_NODES) == \
            (tp._get_node_type(x) in tp.SUPPORTED_NODES)
    flat, keys = ep._dict_flatten_with_keys({"a": 1, "b": 2})
    tflat, tkeys = tp._dict_flatten_with_keys({"a": 1, "b": 2})
    assert [(str(k), v) for k, v in flat] == [(str(k), v) for k, v in tflat] and keys == tkeys
    with pytest.warns(FutureWarning):
        assert ep._is_leaf(3) and not ep._is_leaf([1])


# -- ember run: package metadata --------------------------------------------------------------

def test_ember_run_answers_torch_metadata():
    code = ("import importlib.metadata as m, torch, torchvision; "
            "print(m.version('torch'), m.version('torchvision'), "
            "m.version('torch') == torch.__version__, "
            "m.distribution('Torch').metadata['Name'])")
    proc = subprocess.run([sys.executable, "-m", "ember", "run", "-c", code],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    from ember import vision

    assert proc.stdout.split() == [ember.__version__, vision.__version__, "True", "torch"]


def test_metadata_finder_is_only_installed_by_the_alias():
    import importlib.metadata

    from ember import _alias, _metadata

    assert _metadata._finder not in sys.meta_path
    _metadata.install()
    try:
        assert importlib.metadata.version("torch") == ember.__version__
    finally:
        _metadata.uninstall()
    assert _metadata._finder not in sys.meta_path and _alias is not None


@pytest.mark.skipif(os.environ.get("EMBER_PURE_PYTHON") == "1", reason="already the Python core")
def test_pure_python_core():
    rerun_on_pure_python(__file__, "flop or prune or library or flex")


# -- torch.Stream / torch.Event, device_mesh, torchvision.io ----------------------------------

def test_stream_and_event_on_cpu_match_torch():
    def run(m):
        s = m.Stream(device="cpu")
        out = [repr(s), s.query(), s.synchronize(), s == m.Stream(device="cpu"),
               (s.device_index, s.stream_id), repr(m.Event(device="cpu"))]
        e = m.Event(device="cpu")
        out += [e.query(), e.synchronize(), e.wait()]
        for f in (lambda: s.record_event(), lambda: s.wait_stream(s), lambda: e.record(s),
                  lambda: e.elapsed_time(m.Event(device="cpu"))):
            try:
                f()
            except (RuntimeError, ValueError) as exc:
                out.append((type(exc).__name__, str(exc)))
        with s as entered:
            out.append(entered is s)
        return out

    assert run(ember) == run(torch)


def test_device_mesh_single_rank_matches_torch(tmp_path):
    script = tmp_path / "mesh.py"
    script.write_text(
        "import os, torch, torch.distributed as dist\n"
        "import torch.distributed.device_mesh as dm\n"
        "os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=os.environ['PORT'])\n"
        "dist.init_process_group('gloo', rank=0, world_size=1)\n"
        "m = dm.init_device_mesh('cpu', (1, 1), mesh_dim_names=('dp', 'tp'))\n"
        "print(m.shape, m.ndim, m.size(), m.size(0), m.get_rank(), m.get_local_rank('tp'),\n"
        "      m.get_coordinate(), m['dp'].shape, m['dp'].mesh_dim_names, m.mesh.tolist(),\n"
        "      str(m.mesh.dtype), dist.get_process_group_ranks(m.get_group('dp')),\n"
        "      torch.distributed.DeviceMesh is dm.DeviceMesh)\n"
        "dist.destroy_process_group()\n")
    outs = []
    for i, cmd in enumerate(([sys.executable, str(script)],
                             [sys.executable, "-m", "ember", "run", str(script)])):
        if i == 1 and not ember.distributed.is_available():
            pytest.skip("ember's distributed needs MPI here")
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, PORT=str(29600 + i),
                                       PYTHONWARNINGS="ignore"))
        assert proc.returncode == 0, proc.stderr[-2000:]
        outs.append(proc.stdout.strip().splitlines()[-1])
    assert outs[0] == outs[1]


def test_device_mesh_stubs_without_distributed():
    code = ("import ember.distributed._mpi as m; m.available = lambda: False\n"
            "import ember.distributed.device_mesh as dm\n"
            "print(dm.DeviceMesh.__name__, dm.init_device_mesh())")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.split() == ["_DeviceMeshStub", "None"], proc.stderr[-2000:]


def test_vision_io_round_trips(tmp_path):
    from ember.vision import io

    img = (ember.arange(3 * 5 * 7) % 256).to(ember.uint8).reshape(3, 5, 7)
    path = str(tmp_path / "a.png")
    io.write_png(img, path)
    back = io.read_image(path)
    assert back.dtype == ember.uint8 and bool((back == img).all())
    gray = io.read_image(path, io.ImageReadMode.GRAY)
    from PIL import Image

    assert gray.shape == (1, 5, 7)
    assert gray[0].numpy().tolist() == np.asarray(Image.open(path).convert("L")).tolist()
    rgba = io.decode_image(io.read_file(path), mode=io.ImageReadMode.RGB_ALPHA)
    assert rgba.shape == (4, 5, 7) and rgba[3].unique().tolist() == [255]
    data = io.encode_jpeg(img, quality=95)
    assert data.dtype == ember.uint8 and data.dim() == 1
    jpg = io.decode_jpeg(data)
    assert jpg.shape == (3, 5, 7) and (jpg.float() - img.float()).abs().mean().item() < 20
    with pytest.raises(RuntimeError, match="1-D uint8"):
        io.decode_image(img)
    with pytest.raises(ValueError):
        io.encode_png(img, compression_level=10)


# -- key-value stores -------------------------------------------------------------------------

def _store_run(m, path):
    import datetime

    d = m.distributed
    out = []
    s = d.TCPStore("127.0.0.1", 0, 1, True, timeout=datetime.timedelta(seconds=2))
    s.set("a", "x")
    out += [s.get("a"), s.add("c", 5), s.add("c", 2), s.num_keys(), s.check(["a"]),
            s.check(["zz"])]
    out += [s.compare_set("a", "x", "y"), s.get("a"), s.compare_set("a", "q", "z"),
            s.compare_set("new", "", "v"), s.delete_key("a"), s.delete_key("a"), s.num_keys()]
    s.set("b", b"\x00\x01")
    s.append("b", "zz")
    s.multi_set(["k1", "k2"], ["v1", "v2"])
    out += [s.get("b"), s.multi_get(["b", "c"]), s.get("k2"), s.timeout]
    for f in (lambda: s.get("missing"),
              lambda: s.wait(["never"], datetime.timedelta(seconds=0.2))):
        try:
            f()
        except RuntimeError as e:
            out.append((isinstance(e, d.DistStoreError), str(e)))
    client = d.TCPStore("127.0.0.1", s.port, is_master=False,
                        timeout=datetime.timedelta(seconds=2))
    out += [client.get("k1"), client.add("c", 1), s.get("c")]
    h = d.HashStore()
    h.set("a", "1")
    out += [h.get("a"), h.add("n", 3), h.num_keys()]
    p = d.PrefixStore("pre", h)
    p.set("a", "2")
    out += [p.get("a"), h.get("pre/a"), p.add("q", 1), h.get("pre/q")]
    fs = d.FileStore(path, 1)
    fs.set("x", "1")
    out += [fs.get("x"), fs.add("n", 2), fs.check(["x"]), d.FileStore(path, 1).get("x"),
            fs.compare_set("x", "1", "5"), fs.get("x")]
    fs.set_timeout(datetime.timedelta(seconds=0.3))
    try:
        fs.get("nope")
    except RuntimeError as e:
        out.append(str(e))
    return out


def test_stores_match_torch(tmp_path):
    assert _store_run(ember, str(tmp_path / "e")) == _store_run(torch, str(tmp_path / "t"))


def test_tcp_store_across_processes():
    import datetime

    master = ember.distributed.TCPStore("127.0.0.1", 0, 2, True, wait_for_workers=False,
                                        timeout=datetime.timedelta(seconds=30))
    code = ("import datetime, ember.distributed as d\n"
            f"s = d.TCPStore('127.0.0.1', {master.port}, 2, False,"
            " timeout=datetime.timedelta(seconds=30))\n"
            "s.set('from_child', 'hello')\n"
            "print(s.get('from_parent').decode(), s.add('count', 10))\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    master.set("from_parent", "hi")
    assert master.get("from_child") == b"hello"
    out, _ = proc.communicate(timeout=60)
    assert out.split() == ["hi", "10"]
    assert int(master.get("init/")) == 2 and master.add("count", 1) == 11


def test_lerp_follows_pytorch_formula_bit_for_bit():
    """PyTorch computes lerp from `end` when |weight| >= 0.5, each branch one fused
    multiply-add: lerp(a, -inf, 0.5) is nan (diffusers' KDPM2 sigmas rely on it) and float32
    results agree to the bit."""
    def run(m):
        m.manual_seed(0)
        a, b, w = m.randn(1000), m.randn(1000), m.rand(1000)
        out = [m.lerp(a, b, ww).numpy().tobytes() for ww in (0.3, 0.5, 0.7, 1.0, w)]
        inf = m.tensor([float("-inf"), 3.0])
        out.append(str(m.lerp(m.tensor([1.0, 2.0]), inf, 0.5).tolist()))
        out.append(str(m.lerp(m.tensor([1.0, 2.0]), inf, m.tensor([0.2, 0.9])).tolist()))
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = m.lerp(x, m.tensor([5.0, 6.0]), 0.75)
        y.sum().backward()
        out += [str(y.tolist()), str(x.grad.tolist())]
        d = m.lerp(m.tensor([1.0, 2.0], dtype=m.float64), m.tensor([3.0, 4.0], dtype=m.float64),
                   0.6)
        out.append(str(d.dtype).split(".")[-1])
        return out

    assert run(ember) == run(torch)


def test_linspace_values_bit_for_bit():
    """linspace counts the first half up from start and the second down from end, each value a
    fused multiply-add: float32 and float64 agree with PyTorch to the bit (diffusers' schedulers
    round timesteps computed from them)."""
    rng = np.random.default_rng(0)
    for dt in ("float32", "float64"):
        for _ in range(60):
            s, e = rng.normal(0, 10, 2).tolist()
            n = int(rng.integers(0, 3000))
            mine = ember.linspace(s, e, n, dtype=getattr(ember, dt)).numpy()
            ref = torch.linspace(s, e, n, dtype=getattr(torch, dt)).numpy()
            assert mine.tobytes() == ref.tobytes(), (dt, s, e, n)
    ref = torch.linspace(0.0001, 0.02, 1100)
    assert ember.linspace(0.0001, 0.02, 1100).numpy().tobytes() == ref.numpy().tobytes()
    assert ember.linspace(1.7, -3.2, 5, dtype=ember.int64).tolist() == \
        torch.linspace(1.7, -3.2, 5, dtype=torch.int64).tolist()


def test_cumulative_ops_accumulate_as_pytorch():
    """cumsum/cumprod accumulate float32 in double (half in float) and round each output once, as
    PyTorch's CPU kernels: the values agree to the bit (diffusers' alphas_cumprod, sigmas)."""
    torch.manual_seed(0)
    for shape, dim in (((5000,), 0), ((7, 300), 1), ((300, 7), 0)):
        b = torch.randn(*shape)
        e = ember.tensor(b.numpy())
        assert torch.cumsum(b, dim).numpy().tobytes() == ember.cumsum(e, dim).numpy().tobytes()
        assert torch.cumprod(1 + b / 100, dim).numpy().tobytes() == \
            ember.cumprod(1 + e / 100, dim).numpy().tobytes()
    h = torch.randn(300).half()
    assert torch.cumsum(h, 0).numpy().tobytes() == \
        ember.cumsum(ember.tensor(h.float().numpy()).half(), 0).numpy().tobytes()
    x = torch.randn(50, requires_grad=True)
    torch.cumsum(x, 0).backward(torch.arange(50.0))
    ex = ember.tensor(x.detach().numpy(), requires_grad=True)
    ember.cumsum(ex, 0).backward(ember.arange(50.0))
    assert x.grad.numpy().tobytes() == ex.grad.numpy().tobytes()
    assert ember.cumsum(ember.ones(3), 0).dtype == ember.float32


def test_dynamo_eval_frame_names_the_compiled_module_class():
    """accelerate's unwrap_model: isinstance(m, torch._dynamo.eval_frame.OptimizedModule)."""
    for m in (ember, torch):
        compiled = m.compile(m.nn.Linear(2, 2))
        assert isinstance(compiled, m._dynamo.eval_frame.OptimizedModule), m.__name__
        assert not isinstance(m.nn.Linear(2, 2), m._dynamo.eval_frame.OptimizedModule)
        assert m._dynamo.eval_frame.is_dynamo_supported() is True
        assert compiled._orig_mod.weight.shape == (2, 2)
