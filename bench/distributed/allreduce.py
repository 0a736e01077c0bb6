"""All-reduce bandwidth by message size: ``torch.distributed.all_reduce`` of a float32 tensor,
and, under ember, MPI's own ``Allreduce`` on the same array through mpi4py (the floor ember's
call adds to: its cross-rank agreement message and Python). Bus bandwidth is
2 (n - 1) / n x bytes / time, as NCCL's tests report it. Rank 0 prints one JSON line per size.
"""

import json
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
ember = hasattr(torch, "__ember_version__")  # (under ember run the module is named torch)


def timed(fn, nbytes):
    reps = max(3, min(200, int(64e6 / max(nbytes, 1))))
    for _ in range(2):
        fn()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - start) / reps


for nbytes in (4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20):
    t = torch.ones(nbytes // 4)
    row = {"bytes": nbytes, "world": world, "engine": "ember" if ember else "torch"}
    row["s"] = timed(lambda t=t: dist.all_reduce(t), nbytes)
    if ember:
        from mpi4py import MPI

        arr = t.numpy()
        row["mpi_s"] = timed(lambda a=arr: MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, a), nbytes)
    factor = 2 * (world - 1) / world
    row["busbw_GBps"] = factor * nbytes / row["s"] / 1e9
    if "mpi_s" in row:
        row["mpi_busbw_GBps"] = factor * nbytes / row["mpi_s"] / 1e9
    if rank == 0:
        print(json.dumps(row), flush=True)
dist.destroy_process_group()
