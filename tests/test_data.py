"""Datasets, samplers, DataLoader (single and multi process)."""

import collections
import os
import signal
import time

import numpy as np
import pytest

import ember
from ember.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    get_worker_info,
    random_split,
)


class Squares(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return ember.tensor([float(i)]), i * i


class Slow(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        time.sleep(0.15)
        return ember.tensor([float(i)])


class Failing(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise ValueError("bad sample 2")
        return ember.tensor([float(i)])


class Dies(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if get_worker_info() is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


class Hangs(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(30)
        return i


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def test_tensor_dataset_batches_and_len():
    X, y = ember.arange(10.0).reshape(10, 1), ember.arange(10)
    loader = DataLoader(TensorDataset(X, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    xb, yb = batches[0]
    assert xb.shape == (4, 1) and yb.tolist() == [0, 1, 2, 3] and yb.dtype == ember.int64
    assert batches[-1][1].tolist() == [8, 9]
    assert len(DataLoader(TensorDataset(X, y), batch_size=4, drop_last=True)) == 2
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(ember.zeros(3), ember.zeros(4))


def test_shuffle_is_fresh_each_epoch_and_reproducible():
    ds = TensorDataset(ember.arange(20))
    loader = DataLoader(ds, batch_size=20, shuffle=True)
    ember.manual_seed(0)
    e1, e2 = [next(iter(loader))[0].tolist() for _ in range(2)]
    assert e1 != e2 and sorted(e1) == list(range(20))
    ember.manual_seed(0)
    assert [next(iter(loader))[0].tolist() for _ in range(2)] == [e1, e2]
    g = ember.Generator().manual_seed(3)
    a = next(iter(DataLoader(ds, batch_size=20, shuffle=True, generator=g)))[0].tolist()
    g.manual_seed(3)
    assert next(iter(DataLoader(ds, batch_size=20, shuffle=True, generator=g)))[0].tolist() == a


def test_default_collate_structures():
    Point = collections.namedtuple("Point", "x y")
    b = default_collate([{"a": 1.0, "b": [1, 2], "s": "x"}, {"a": 2.0, "b": [3, 4], "s": "y"}])
    assert b["a"].dtype == ember.float64 and b["b"][0].tolist() == [1, 3] and b["s"] == ["x", "y"]
    p = default_collate([Point(1, 2), Point(3, 4)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3]
    arr = default_collate([np.zeros(2, np.float32), np.ones(2, np.float32)])
    assert arr.shape == (2, 2) and arr.dtype == ember.float32
    t = default_collate([(ember.ones(2), 1), (ember.zeros(2), 0)])
    assert t[0].shape == (2, 2) and t[1].tolist() == [1, 0]
    assert default_collate([True, False]).dtype == ember.bool


def test_custom_dataset_and_collate_fn():
    loader = DataLoader(Squares(), batch_size=3, collate_fn=lambda b: [s[1] for s in b])
    assert next(iter(loader)) == [0, 1, 4]
    xb, yb = next(iter(DataLoader(Squares(), batch_size=5)))
    assert xb.shape == (5, 1) and yb.tolist() == [0, 1, 4, 9, 16]


def test_samplers():
    assert list(SequentialSampler(range(3))) == [0, 1, 2]
    assert sorted(RandomSampler(range(5))) == [0, 1, 2, 3, 4]
    assert len(list(RandomSampler(range(5), replacement=True, num_samples=12))) == 12
    assert sorted(SubsetRandomSampler([3, 5, 7])) == [3, 5, 7]
    w = list(WeightedRandomSampler([0.0, 0.0, 1.0], 5))
    assert w == [2, 2, 2, 2, 2]
    assert list(BatchSampler(SequentialSampler(range(5)), 2, False)) == [[0, 1], [2, 3], [4]]
    assert len(BatchSampler(range(5), 2, True)) == 2
    parts = [list(DistributedSampler(range(10), 3, r, shuffle=False)) for r in range(3)]
    assert parts[0] == [0, 3, 6, 9] and len(parts[2]) == 4
    with pytest.raises(ValueError):
        BatchSampler(range(3), 0, False)


def test_dataset_helpers():
    ds = TensorDataset(ember.arange(10))
    a, b = random_split(ds, [7, 3], generator=ember.Generator().manual_seed(0))
    assert len(a) == 7 and len(b) == 3
    assert sorted([a[i][0].item() for i in range(7)] + [b[i][0].item() for i in range(3)]) == list(range(10))
    f1, f2 = random_split(ds, [0.5, 0.5])
    assert len(f1) == 5
    assert len(ConcatDataset([ds, ds])) == 20 and (ds + ds)[15][0].item() == 5
    assert Subset(ds, [4, 2])[1][0].item() == 2
    st = StackDataset(ds, ds)
    assert len(st) == 10 and st[3][1][0].item() == 3
    assert StackDataset(a=ds)[1]["a"][0].item() == 1


def test_iterable_dataset_single_and_workers():
    single = [b.tolist() for b in DataLoader(Stream(10), batch_size=4)]
    assert single == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    got = sorted(x for b in DataLoader(Stream(10), batch_size=2, num_workers=2) for x in b.tolist())
    assert got == list(range(10))


def test_workers_give_same_batches_in_order():
    ds = TensorDataset(ember.arange(50.0).reshape(25, 2))
    ref = [b[0].tolist() for b in DataLoader(ds, batch_size=4)]
    got = [b[0].tolist() for b in DataLoader(ds, batch_size=4, num_workers=2)]
    assert got == ref


class SlowWithWhen(Dataset):
    """Each item records which worker loaded it and when (wall clock, shared by processes)."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        start = time.time()
        time.sleep(0.15)
        info = get_worker_info()
        return ember.tensor([float(i), float(info.id), start, time.time()], dtype=ember.float64)


def test_workers_load_in_parallel():
    """Two workers load at the same time: their loading intervals overlap (no timing threshold:
    a busy machine slows both engines alike, but cannot make two sleeping workers take turns)."""
    out = list(DataLoader(Slow(), batch_size=2, num_workers=2))
    assert [b.tolist() for b in out] == [[[0.0], [1.0]], [[2.0], [3.0]], [[4.0], [5.0]], [[6.0], [7.0]]]
    rows = ember.cat(list(DataLoader(SlowWithWhen(), batch_size=2, num_workers=2))).tolist()
    assert [r[0] for r in rows] == [float(i) for i in range(8)]
    by_worker = {w: [(a, b) for _, ww, a, b in rows if ww == w] for w in (0.0, 1.0)}
    assert all(by_worker.values()), by_worker
    assert any(a0 < b1 and a1 < b0 for a0, b0 in by_worker[0.0] for a1, b1 in by_worker[1.0])


def test_worker_exception_reaches_main_with_traceback():
    with pytest.raises(ValueError, match=r"(?s)worker process.*Traceback.*bad sample 2"):
        list(DataLoader(Failing(), batch_size=1, num_workers=2))


def test_worker_killed_raises():
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(DataLoader(Dies(), batch_size=1, num_workers=1))


def test_timeout_raises():
    with pytest.raises(RuntimeError, match="timed out"):
        list(DataLoader(Hangs(), batch_size=1, num_workers=1, timeout=0.5))


def test_worker_info_and_init_fn():
    class WhoAmI(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            info = get_worker_info()
            return info.id if info else -1

    ids = [b.item() for b in DataLoader(WhoAmI(), batch_size=1, num_workers=2)]
    assert set(ids) == {0, 1}
    assert get_worker_info() is None
    seen = [b.item() for b in DataLoader(WhoAmI(), batch_size=1)]
    assert seen == [-1] * 4


def test_argument_errors():
    ds = TensorDataset(ember.zeros(4))
    with pytest.raises(ValueError):
        DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)
    with pytest.raises(ValueError):
        DataLoader(ds, batch_sampler=BatchSampler(range(4), 2, False), batch_size=2)
    with pytest.raises(ValueError):
        DataLoader(ds, num_workers=-1)
    assert list(DataLoader(ds, batch_size=None))[0][0].shape == ()


def test_persistent_workers_are_reused_across_epochs():
    class Pid(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return os.getpid()

    loader = DataLoader(Pid(), batch_size=2, num_workers=2, persistent_workers=True)
    first = {p for b in loader for p in b.tolist()}
    second = {p for b in loader for p in b.tolist()}
    assert first == second and os.getpid() not in first
    it = iter(loader)
    next(it)  # stop an epoch early: its leftovers must not leak into the next one
    del it
    assert sorted(len(b) for b in loader) == [2, 2]
    fresh = DataLoader(Pid(), batch_size=2, num_workers=2)
    assert {p for b in fresh for p in b.tolist()} != {p for b in fresh for p in b.tolist()}


def test_workers_seed_numpy_differently():
    class NpRand(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return float(np.random.rand())

    vals = [v for b in DataLoader(NpRand(), batch_size=1, num_workers=2) for v in b.tolist()]
    assert len(set(vals)) == 4


@pytest.mark.parametrize("n", [1, 7, 10, 12, 13])
@pytest.mark.parametrize("replicas", [1, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_distributed_sampler_partitions_as_pytorchs(n, replicas, drop_last, shuffle, monkeypatch):
    """Every rank's indices, lengths and padding equal PyTorch's for the same permutation (the
    generators differ, so both shuffles are replaced by one fixed permutation per epoch)."""
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    import ember.utils.data.distributed as ours

    def perm(size, epoch_seed):
        return np.random.default_rng(epoch_seed).permutation(size)

    monkeypatch.setattr(ours, "_permutation", lambda size, seed: perm(size, seed))
    real_randperm = torch.randperm

    def fake_randperm(size, generator=None, **kw):
        return torch.from_numpy(perm(size, generator.initial_seed()))

    monkeypatch.setattr(torch, "randperm", fake_randperm)
    if n < replicas and drop_last:
        return
    for epoch in (0, 1):
        for r in range(replicas):
            a = DistributedSampler(range(n), replicas, r, shuffle=shuffle, seed=5, drop_last=drop_last)
            b = TorchSampler(range(n), replicas, r, shuffle=shuffle, seed=5, drop_last=drop_last)
            a.set_epoch(epoch)
            b.set_epoch(epoch)
            assert list(a) == list(b) and len(a) == len(b), (n, replicas, r, epoch)
    assert torch.randperm is fake_randperm and real_randperm is not fake_randperm


def test_more_workers_than_cpus_warns_as_pytorch_does():
    """PyTorch warns at construction (and at each new worker iterator) when num_workers is more
    than the CPUs the process may use; at or below that count it says nothing"""
    import warnings

    from helpers import HAVE_TORCH, torch

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    ds = TensorDataset(ember.arange(4.0))
    with pytest.warns(UserWarning, match=f"will create {cpus + 1} worker processes in total. "
                      f"Our suggested max number of worker in current system is {cpus}"):
        DataLoader(ds, num_workers=cpus + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DataLoader(ds, num_workers=cpus)
        DataLoader(ds)
    if HAVE_TORCH:
        with warnings.catch_warnings(record=True) as ours:
            warnings.simplefilter("always")
            DataLoader(ds, num_workers=cpus + 1)
        with warnings.catch_warnings(record=True) as theirs:
            warnings.simplefilter("always")
            torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(4.0)),
                                        num_workers=cpus + 1)
        assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
