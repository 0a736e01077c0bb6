"""The data/parallel import surface real PyTorch programs reach for: ``torch.distributed``,
``torch.nn.parallel``, ``torch.multiprocessing``, ``torch.utils.tensorboard``, ``torch.onnx``,
``torch.backends.*``. Single-process programs import them all and run under ``ember run``."""

from __future__ import annotations

import glob
import importlib.util
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember import nn

_NANOGPT_HEADER = """
import os
import time
import math
from contextlib import nullcontext

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed import init_process_group, destroy_process_group
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.parallel
import torch.backends.cudnn as cudnn
import torch.optim
import torch.utils.data
import torch.utils.data.distributed
from torch.utils.data.distributed import DistributedSampler
from torch.utils.data.sampler import Sampler
import torch.onnx

ddp = int(os.environ.get('RANK', -1)) != -1  # is this a ddp run?
if ddp:
    init_process_group(backend='nccl')
    ddp_rank = int(os.environ['RANK'])
    ddp_local_rank = int(os.environ['LOCAL_RANK'])
    ddp_world_size = int(os.environ['WORLD_SIZE'])
    master_process = ddp_rank == 0
    seed_offset = ddp_rank
else:
    master_process = True
    seed_offset = 0
    ddp_world_size = 1
torch.manual_seed(1337 + seed_offset)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
cudnn.benchmark = True
device = 'cuda' if torch.cuda.is_available() and False else 'cpu'
device_type = 'cuda' if 'cuda' in device else 'cpu'
ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type)
model = nn.Linear(4, 2)
if ddp:
    model = DDP(model, device_ids=[ddp_local_rank])
raw_model = model.module if ddp else model
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4)
with ctx:
    loss = model(x).pow(2).mean()
loss.backward()
optimizer.step()
if dist.is_available() and dist.is_initialized():
    dist.barrier()
if ddp:
    destroy_process_group()
print("done", master_process, ddp_world_size, dist.is_available(), dist.is_initialized(),
      torch.backends.cudnn.benchmark, torch.backends.mps.is_available(), flush=True)
"""


def _ember_run(tmp_path, source, env_extra=None):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(source))
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "ember", "run", str(script)], capture_output=True,
                          text=True, timeout=120, env=env, cwd=tmp_path)


def test_nanogpt_style_header_runs_under_ember_run(tmp_path):
    res = _ember_run(tmp_path, _NANOGPT_HEADER)
    assert res.returncode == 0, res.stderr
    mpi = str(importlib.util.find_spec("mpi4py") is not None)  # is_available(): MPI installed
    assert res.stdout.split() == ["done", "True", "1", mpi, "False", "True", "False"]


def test_ddp_run_with_nccl_says_what_to_use(tmp_path):
    res = _ember_run(tmp_path, _NANOGPT_HEADER,
                     {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "2"})
    assert res.returncode == 1
    assert "init_process_group" in res.stderr and "backend='gloo'" in res.stderr


# -- torch.distributed ----------------------------------------------------------------------
def test_distributed_without_a_process_group():
    mpi = importlib.util.find_spec("mpi4py") is not None
    assert dist.is_available() is mpi and dist.is_mpi_available() is mpi
    assert dist.is_initialized() is False and not dist.is_nccl_available()
    for fn in (dist.get_rank, dist.get_world_size, dist.get_backend, dist.barrier):
        with pytest.raises(ValueError, match="Default process group has not been initialized, "
                                             "please make sure to call init_process_group."):
            fn()
    with pytest.raises(ValueError, match="all_reduce"):
        dist.all_reduce(ember.ones(2), op=dist.ReduceOp.SUM)
    with pytest.raises(AssertionError):
        dist.destroy_process_group()
    assert dist.get_node_local_rank(fallback_rank=0) == 0 or "LOCAL_RANK" in os.environ


def test_distributed_names_match_pytorch():
    torch = pytest.importorskip("torch")
    import torch.distributed as tdist

    names = ["Backend", "GroupMember", "ReduceOp", "group", "all_gather", "all_gather_object",
             "all_reduce", "barrier", "broadcast", "broadcast_object_list", "destroy_process_group",
             "gather", "get_backend", "get_rank", "get_world_size", "init_process_group",
             "is_available", "is_initialized", "is_nccl_available", "is_torchelastic_launched",
             "new_group", "recv", "reduce", "reduce_scatter", "scatter", "send", "P2POp",
             "ProcessGroup", "TCPStore", "FileStore", "all_to_all", "all_gather_into_tensor",
             "reduce_scatter_tensor", "batch_isend_irecv", "isend", "irecv", "monitored_barrier"]
    for name in names:
        assert hasattr(tdist, name), name
        assert hasattr(dist, name), name
    for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        assert getattr(dist.ReduceOp, op).name == getattr(tdist.ReduceOp, op).name
    for b in ("gloo", "GLOO", "nccl", "mpi", "MyBackend"):
        assert dist.Backend(b) == tdist.Backend(b)
    assert dist.Backend.NCCL == tdist.Backend.NCCL == "nccl"
    assert dist.group.WORLD is None and dist.GroupMember.NON_GROUP_MEMBER == -100
    with pytest.raises(ValueError) as theirs:
        tdist.get_rank()
    with pytest.raises(ValueError) as ours:
        dist.get_rank()
    assert str(ours.value).startswith(str(theirs.value))
    del torch


# -- torch.nn.parallel ----------------------------------------------------------------------
def test_data_parallel_on_cpu_matches_pytorch():
    torch = pytest.importorskip("torch")

    theirs = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    ours = nn.DataParallel(nn.Linear(3, 2))
    assert ours.device_ids == theirs.device_ids == []
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["module.weight", "module.bias"]
    assert repr(ours) == repr(theirs)
    ours.load_state_dict({k: ember.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    got = ours(ember.tensor(x))
    assert got.dtype == ember.float32
    np.testing.assert_allclose(got.detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-6, atol=1e-6)
    assert ours.module(ember.tensor(x)).tolist() == got.tolist()
    assert nn.parallel.DataParallel is nn.DataParallel


def test_data_parallel_with_several_gpus_uses_the_first(monkeypatch):
    import importlib

    dp_module = importlib.import_module("ember.nn.parallel.data_parallel")
    monkeypatch.setattr(dp_module, "_cuda_count", lambda: 2)
    with pytest.warns(UserWarning, match="one GPU"):
        dp = nn.DataParallel(nn.Linear(2, 2))
    assert dp.device_ids == [0, 1] and dp.output_device == 0
    assert str(dp.src_device_obj) == "cuda:0"
    single = nn.DataParallel(nn.Linear(2, 2), device_ids=[1])
    assert single.device_ids == [1] and str(single.src_device_obj) == "cuda:1"


def test_data_parallel_checkpoint_round_trip():
    inner = nn.Linear(2, 2)
    dp = nn.DataParallel(inner)
    sd = dp.state_dict()
    plain = nn.Linear(2, 2)
    plain.load_state_dict({k.removeprefix("module."): v for k, v in sd.items()})
    assert plain.weight.tolist() == inner.weight.tolist()
    assert dp.module is inner and list(dp.parameters())[0] is inner.weight


def test_ddp_needs_a_process_group():
    from ember.nn.parallel import DistributedDataParallel as DDP

    with pytest.raises(ValueError, match="Default process group has not been initialized") as info:
        DDP(nn.Linear(2, 2))
    assert isinstance(info.value, NotImplementedError)
    assert "DistributedDataParallel" in str(info.value)
    assert issubclass(DDP, nn.Module)


# -- torch.backends, torch.onnx -------------------------------------------------------------
def test_backends_flags_are_stored_and_read_back():
    import ember.backends.cuda as bcuda
    import ember.backends.cudnn as cudnn

    for mod in ("cuda", "cudnn", "mps", "mkldnn", "openmp", "opt_einsum", "cpu", "mkl"):
        assert getattr(ember.backends, mod).__name__ == f"ember.backends.{mod}"
    old = (cudnn.benchmark, cudnn.deterministic, bcuda.matmul.allow_tf32)
    try:
        ember.backends.cudnn.benchmark = True
        ember.backends.cudnn.deterministic = True
        ember.backends.cuda.matmul.allow_tf32 = True
        assert cudnn.benchmark and cudnn.deterministic and bcuda.matmul.allow_tf32
        with cudnn.flags(enabled=True, benchmark=False):
            assert cudnn.benchmark is False and cudnn.enabled is True
        assert cudnn.benchmark is True
    finally:
        cudnn.benchmark, cudnn.deterministic, bcuda.matmul.allow_tf32 = old
    with pytest.raises(AttributeError, match="Unknown attribute"):
        bcuda.matmul.not_a_flag = 1
    assert cudnn.is_available() is False and cudnn.version() is None
    assert ember.backends.mps.is_available() is False and ember.backends.mps.is_built() is False
    assert ember.backends.mkldnn.is_available() is False
    assert ember.backends.openmp.is_available() is False


def test_sdp_switches_and_context_manager():
    import ember.backends.cuda as b

    assert b.flash_sdp_enabled() and b.mem_efficient_sdp_enabled() and b.math_sdp_enabled()
    b.enable_flash_sdp(False)
    try:
        assert b.flash_sdp_enabled() is False
        with pytest.warns(FutureWarning, match="sdp_kernel"):
            with b.sdp_kernel(enable_flash=True, enable_math=False) as state:
                assert state == {}
                assert b.flash_sdp_enabled() is True and b.math_sdp_enabled() is False
        assert b.flash_sdp_enabled() is False and b.math_sdp_enabled() is True
    finally:
        b.enable_flash_sdp(True)
    assert b.SDPBackend.FLASH_ATTENTION == 1 and b.SDPBackend.MATH == 0


def test_backends_names_exist_in_pytorch():
    tcuda = pytest.importorskip("torch.backends.cuda")
    tcudnn = pytest.importorskip("torch.backends.cudnn")

    for name in ("matmul", "sdp_kernel", "enable_flash_sdp", "flash_sdp_enabled",
                 "enable_mem_efficient_sdp", "enable_math_sdp", "is_built", "SDPBackend"):
        assert hasattr(tcuda, name) and hasattr(ember.backends.cuda, name), name
    for name in ("benchmark", "deterministic", "allow_tf32", "enabled", "is_available", "flags"):
        assert hasattr(tcudnn, name) and hasattr(ember.backends.cudnn, name), name
    assert tcuda.matmul.allow_fp16_reduced_precision_reduction == \
        ember.backends.cuda.matmul.allow_fp16_reduced_precision_reduction


def test_onnx_export_raises():
    import ember.onnx

    assert ember.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="torch.onnx.export"):
        ember.onnx.export(nn.Linear(2, 2), (ember.ones(1, 2),), "model.onnx")


# -- torch.utils.tensorboard ----------------------------------------------------------------
def _events(path):
    """(tag, step, kind, value) of every summary value in a TensorBoard event file (TFRecord)."""
    from tensorboardX.proto import event_pb2

    data = open(path, "rb").read()
    out, i = [], 0
    while i < len(data):
        (n,) = struct.unpack("<Q", data[i : i + 8])
        ev = event_pb2.Event.FromString(data[i + 12 : i + 12 + n])
        i += 12 + n + 4  # length, its crc, the record, its crc
        for v in ev.summary.value:
            out.append((v.tag, ev.step, v.WhichOneof("value"), v.simple_value))
    return out


def test_summary_writer_writes_event_files(tmp_path):
    pytest.importorskip("tensorboardX")
    from ember.utils.tensorboard import SummaryWriter

    with SummaryWriter(log_dir=str(tmp_path)) as w:
        assert w.log_dir == str(tmp_path)
        w.add_scalar("loss", ember.tensor(0.25), 3)
        w.add_scalar("lr", 0.5, 4)
        w.add_histogram("weights", ember.randn(100), 3)
        w.add_image("digit", ember.rand(1, 8, 8), 3)
    (path,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    got = _events(path)
    assert ("loss", 3, "simple_value", 0.25) in got and ("lr", 4, "simple_value", 0.5) in got
    assert {(t, k) for t, _, k, _ in got} >= {("weights", "histo"), ("digit", "image")}


def test_summary_writer_does_not_import_pytorch_and_hints_when_missing():
    code = ("import sys; import ember.utils.tensorboard as tb; "
            "print('torch' in sys.modules, tb.SummaryWriter.__name__)")
    pytest.importorskip("tensorboardX")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.stdout.split() == ["False", "SummaryWriter"], res.stderr
    code = "import sys; sys.modules['tensorboardX'] = None; import ember.utils.tensorboard"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert "ImportError: TensorBoard logging requires" in res.stderr
    assert "pip install 'ember[tensorboard]'" in res.stderr


def test_fsdp_and_elastic_names():
    from ember.distributed.elastic.multiprocessing.errors import record
    from ember.distributed.fsdp import (
        FullyShardedDataParallel,
        MixedPrecision,
        ShardingStrategy,
        StateDictType,
    )

    @record
    def main(x):
        return x + 1

    assert main(1) == 2 and main.__name__ == "main"
    assert ShardingStrategy.FULL_SHARD.value == 1 and StateDictType.FULL_STATE_DICT.value == 1
    assert MixedPrecision(param_dtype=ember.bfloat16).param_dtype is ember.bfloat16
    with pytest.raises(ValueError, match="Default process group"):
        FullyShardedDataParallel(nn.Linear(2, 2))


def test_import_ember_leaves_heavy_optional_packages_unloaded():
    """`import ember` loads NumPy and ember only: ml_dtypes (bfloat16, ~0.5 s to import), SciPy,
    mpi4py and PyTorch come in when first used."""
    code = ("import sys, ember\n"
            "print(sorted(m for m in ('ml_dtypes', 'scipy', 'mpi4py', 'torch', 'PIL') "
            "if m in sys.modules))\n"
            "x = ember.ones(2, dtype=ember.bfloat16)\n"
            "print(x.dtype, 'ml_dtypes' in sys.modules)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "[]", lines
    if importlib.util.find_spec("ml_dtypes") is not None:
        assert lines[1] == "torch.bfloat16 True"


def test_allocator_tuning_decision_and_opt_outs():
    """ember keeps large NumPy temporaries for reuse by raising glibc's mmap/trim thresholds at
    import (src/ember/_allocator.py), except where the process already chose."""
    from ember import _allocator as A

    assert A.should_tune({}, "linux")
    assert not A.should_tune({"EMBER_MALLOC": "system"}, "linux")
    assert not A.should_tune({"MALLOC_TRIM_THRESHOLD_": "1"}, "linux")
    assert not A.should_tune({"LD_PRELOAD": "/usr/lib/libjemalloc.so"}, "linux")
    assert not A.should_tune({}, "darwin")
    code = "import ember, ember._allocator as a; print(a.tuned)"
    env = {k: v for k, v in os.environ.items() if k not in A._USER_VARS and k != "EMBER_MALLOC"}
    on = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                        timeout=120)
    off = subprocess.run([sys.executable, "-c", code], env=dict(env, EMBER_MALLOC="system"),
                         capture_output=True, text=True, timeout=120)
    assert off.stdout.strip() == "False"
    if sys.platform.startswith("linux") and os.path.exists("/lib/x86_64-linux-gnu/libc.so.6"):
        assert on.stdout.strip() == "True", on.stderr
