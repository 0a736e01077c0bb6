"""The GPT workload under DistributedDataParallel: each process trains on its own batch of 16
(weak scaling), AdamW, gradients averaged by DDP. Rank 0 prints one JSON line.

``--no-overlap`` puts every gradient in one bucket, so the all-reduce starts only after the
whole backward: the step time with overlap over the step time without it is the overlap ratio.
Runs under ``ember launch`` and unchanged under ``torchrun``.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from _gpt_model import BATCH, BLOCK, GPT, VOCAB  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--warmup", type=int, default=2)
p.add_argument("--no-overlap", action="store_true")
args = p.parse_args()

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = DDP(GPT(), bucket_cap_mb=1e6 if args.no_overlap else None)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
g = torch.Generator().manual_seed(rank)
data = torch.randint(0, VOCAB, (100_000,), generator=g)

durations = []
for _ in range(args.warmup + args.steps):
    ix = torch.randint(len(data) - BLOCK, (BATCH,), generator=g)
    xb = torch.stack([data[i:i + BLOCK] for i in ix])
    yb = torch.stack([data[i + 1:i + 1 + BLOCK] for i in ix])
    dist.barrier()  # every step starts together: the slowest rank sets the pace
    start = time.perf_counter()
    loss = model(xb, yb)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    durations.append(time.perf_counter() - start)
timed = sorted(durations[args.warmup:])
median = timed[len(timed) // 2]
if rank == 0:
    print(json.dumps({"workload": "ddp_gpt", "engine": "ember" if hasattr(
        torch, "__ember_version__") else "torch", "world": world, "overlap": not args.no_overlap,
        "step_ms_median": median * 1e3, "samples_per_s": world * BATCH / median,
        "threads": torch.get_num_threads()}), flush=True)
dist.destroy_process_group()
