"""Samplers: lazy with huge ``num_samples``, and ``DistributedSampler``'s partition = PyTorch's."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import ember
from ember.utils.data import (
    BatchSampler,
    DataLoader,
    RandomSampler,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
)
from ember.utils.data import distributed as edist
from ember.utils.data import sampler as esampler
from ember.utils.data.distributed import DistributedSampler

HUGE = 10**10  # 80 GB as int64: any eager draw of this many indices fails


def _first(it, k):
    out = []
    for x in it:
        out.append(x)
        if len(out) == k:
            break
    return out


def _peak_bytes(fn):
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- laziness -------------------------------------------------------------------------------
def test_random_sampler_with_replacement_huge_is_lazy():
    s = RandomSampler(range(100), replacement=True, num_samples=HUGE)
    assert len(s) == HUGE
    first, peak = _peak_bytes(lambda: _first(iter(s), 1000))
    assert len(first) == 1000 and all(0 <= i < 100 for i in first)
    assert len(set(first)) > 50  # really random draws
    assert peak < 2_000_000, peak


def test_random_sampler_without_replacement_huge_num_samples_is_lazy():
    s = RandomSampler(range(10), num_samples=HUGE)
    first, peak = _peak_bytes(lambda: _first(iter(s), 1000))
    for e in range(100):  # whole permutations, one after another
        assert sorted(first[10 * e : 10 * e + 10]) == list(range(10))
    assert peak < 2_000_000, peak


def test_random_sampler_over_huge_dataset_is_lazy_permutation():
    class Huge:
        def __len__(self):
            return HUGE

    first, peak = _peak_bytes(lambda: _first(iter(RandomSampler(Huge())), 1000))
    assert len(set(first)) == 1000 and all(0 <= i < HUGE for i in first)
    assert max(first) > HUGE // 100  # spread over the range, not 0..999
    assert peak < 2_000_000, peak


@pytest.mark.parametrize("n", [1, 2, 3, 5, 64, 1000, 4097])
def test_lazy_permutation_is_a_permutation(n, monkeypatch):
    monkeypatch.setattr(esampler, "_EAGER_PERM_MAX", 0)
    monkeypatch.setattr(esampler, "_PERM_CHUNK", 7)
    got = list(RandomSampler(range(n), generator=ember.Generator().manual_seed(n)))
    assert sorted(got) == list(range(n))
    if n >= 64:
        assert got != list(range(n))
    again = list(RandomSampler(range(n), generator=ember.Generator().manual_seed(n)))
    assert again == got


def test_subset_random_sampler_huge_is_lazy():
    s = SubsetRandomSampler(range(5, HUGE + 5))
    first, peak = _peak_bytes(lambda: _first(iter(s), 1000))
    assert len(set(first)) == 1000 and all(5 <= i < HUGE + 5 for i in first)
    assert peak < 2_000_000, peak
    assert sorted(SubsetRandomSampler([3, 9, 4])) == [3, 4, 9]


def test_weighted_random_sampler_huge_is_lazy_and_follows_weights():
    s = WeightedRandomSampler([0.0, 1.0, 3.0, 0.0], HUGE, generator=ember.Generator().manual_seed(0))
    first, peak = _peak_bytes(lambda: _first(iter(s), 4000))
    assert peak < 2_000_000, peak
    counts = np.bincount(first, minlength=4)
    assert counts[0] == 0 and counts[3] == 0
    assert 0.7 < counts[2] / 4000 < 0.8  # 3/4 expected
    assert s.weights.dtype == ember.float64


def test_weighted_random_sampler_errors():
    with pytest.raises(RuntimeError, match="encountering probability entry < 0"):
        list(WeightedRandomSampler([1.0, -1.0], 3))
    with pytest.raises(RuntimeError, match="infinity or NaN"):  # PyTorch's kernel's messages
        list(WeightedRandomSampler([1.0, float("inf")], 3))
    with pytest.raises(RuntimeError, match="entry < 0"):
        list(WeightedRandomSampler([1.0, float("nan")], 3))
    with pytest.raises(RuntimeError, match="`inf`, `nan`"):  # one draw: multinomial's other path
        list(WeightedRandomSampler([1.0, float("nan")], 1))
    with pytest.raises(RuntimeError, match="sum of probabilities"):
        list(WeightedRandomSampler([0.0, 0.0], 3))
    with pytest.raises(RuntimeError, match="without replacement"):
        list(WeightedRandomSampler([1.0, 1.0], 3, replacement=False))
    with pytest.raises(ValueError, match="1d"):
        WeightedRandomSampler([[1.0]], 3)
    got = list(WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False))
    assert sorted(got) == [0, 1, 2]


def test_batch_sampler_over_huge_sampler_is_lazy():
    bs = BatchSampler(RandomSampler(range(50), replacement=True, num_samples=HUGE), 64, False)
    assert len(bs) == -(-HUGE // 64)
    batches, peak = _peak_bytes(lambda: _first(iter(bs), 20))
    assert [len(b) for b in batches] == [64] * 20
    assert peak < 2_000_000, peak
    assert list(BatchSampler(range(5), 2, True)) == [[0, 1], [2, 3]]
    assert list(BatchSampler(range(5), 2, False)) == [[0, 1], [2, 3], [4]]


def test_dataloader_with_huge_sampler_and_workers():
    ds = TensorDataset(ember.arange(20))
    loader = DataLoader(ds, batch_size=4, num_workers=2,
                        sampler=RandomSampler(ds, replacement=True, num_samples=HUGE))
    batches = _first(iter(loader), 5)
    assert [b[0].shape[0] for b in batches] == [4] * 5
    assert all(0 <= v < 20 for b in batches for v in b[0].tolist())


def test_random_sampler_reproducible_and_errors():
    a = list(RandomSampler(range(30), generator=ember.Generator().manual_seed(3)))
    b = list(RandomSampler(range(30), generator=ember.Generator().manual_seed(3)))
    assert a == b and sorted(a) == list(range(30))
    ember.manual_seed(1)
    c = list(RandomSampler(range(30)))
    ember.manual_seed(1)
    assert list(RandomSampler(range(30))) == c
    with pytest.raises(TypeError, match="replacement"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler(range(3), num_samples=0)


# -- DistributedSampler ---------------------------------------------------------------------
CASES = [(n, r, drop) for n in (0, 1, 7, 10, 12, 13) for r in (1, 3, 4, 16) for drop in (False, True)]


@pytest.mark.parametrize(("n", "replicas", "drop_last"), CASES)
def test_distributed_sampler_matches_pytorch_unshuffled(n, replicas, drop_last):
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TorchDS

    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = TorchDS(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        assert (len(ours), ours.total_size) == (len(theirs), theirs.total_size)
        assert list(ours) == list(theirs)
    del torch


@pytest.mark.parametrize(("n", "replicas", "drop_last"), [(10, 3, False), (10, 3, True),
                                                          (5, 8, False), (13, 4, True)])
def test_distributed_sampler_matches_pytorch_with_a_fixed_permutation(n, replicas, drop_last,
                                                                      monkeypatch):
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TorchDS

    perm = np.random.default_rng(n).permutation(n)
    seen_seeds = []

    def ours_perm(size, seed):
        seen_seeds.append(seed)
        return perm.copy()

    monkeypatch.setattr(edist, "_permutation", ours_perm)
    monkeypatch.setattr(torch, "randperm", lambda size, generator=None: torch.tensor(perm))
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, seed=5, drop_last=drop_last)
        theirs = TorchDS(range(n), replicas, rank, seed=5, drop_last=drop_last)
        ours.set_epoch(2)
        theirs.set_epoch(2)
        assert list(ours) == list(theirs)
    assert seen_seeds[0] == 7  # seed + epoch


def test_distributed_sampler_shuffles_by_epoch_consistently_across_ranks():
    parts = [DistributedSampler(range(11), 3, r, seed=1) for r in range(3)]
    e0 = [list(p) for p in parts]
    assert [len(p) for p in e0] == [4, 4, 4]
    assert set(sum(e0, [])) == set(range(11))
    assert e0[2][3] == e0[0][0]  # padding position 11 repeats position 0 of the shuffled order
    for p in parts:
        p.set_epoch(1)
    e1 = [list(p) for p in parts]
    assert e1 != e0
    assert e0 == [list(DistributedSampler(range(11), 3, r, seed=1)) for r in range(3)]
    assert len(set(sum(e1, []))) == 11


def test_distributed_sampler_needs_replicas_and_rank_without_process_group():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(10))
    with pytest.raises(NotImplementedError, match="num_replicas"):
        DistributedSampler(range(10), num_replicas=2)
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(10), num_replicas=2, rank=2)


def test_distributed_sampler_importable_from_pytorch_paths():
    from ember.utils.data import DistributedSampler as A
    from ember.utils.data.sampler import DistributedSampler as B

    assert A is B is DistributedSampler
