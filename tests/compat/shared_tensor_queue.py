"""Tensors sent to worker processes, as data-parallel and graph libraries send them: through a
Queue, as spawned processes' arguments, and out of DataLoader workers. PyTorch moves each one
into shared memory on the way, so the workers' in-place writes reach the parent. Written for
ember's compatibility corpus."""
import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader


def consumer(q, done):
    t = q.get()
    t.mul_(2)
    done.put((t.is_shared(), t.dtype, tuple(t.shape)))


def add_rank(rank, tensors):
    for t in tensors:
        assert t.is_shared()
        t.add_(rank + 1)


def collate(items):
    return torch.stack(items)  # a plain collate: the queue, not collate, shares the batch


if __name__ == "__main__":
    ctx = mp.get_context("fork")
    q, done = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=consumer, args=(q, done))
    p.start()
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    print("before put: shared", x.is_shared())
    q.put(x)
    print("child saw", done.get(timeout=60))
    p.join()
    print("after: shared", x.is_shared(), "values", x.tolist())

    tensors = [torch.zeros(4) for _ in range(3)]
    mp.spawn(add_rank, args=(tensors,), nprocs=2, join=True)
    print("after spawn:", [t.tolist() for t in tensors], all(t.is_shared() for t in tensors))

    ds = [torch.full((3,), float(i)) for i in range(8)]
    for workers in (0, 2):
        batches = list(DataLoader(ds, batch_size=4, num_workers=workers, collate_fn=collate))
        print("workers", workers, "shared", [b.is_shared() for b in batches],
              "sums", [float(b.sum()) for b in batches])
    from multiprocessing.reduction import ForkingPickler  # what a Queue's feeder thread calls

    try:
        ForkingPickler.dumps(torch.ones(2, requires_grad=True) * 3)
    except RuntimeError as e:
        print("non-leaf refused:", str(e).startswith("Cowardly refusing"))
