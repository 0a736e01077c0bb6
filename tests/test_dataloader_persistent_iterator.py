"""``DataLoader._iterator``: PyTorch keeps the persistent workers' iterator there, and libraries
(timm's NaFlex loader tests) shut the workers down through ``loader._iterator._shutdown_workers()``."""

from __future__ import annotations

import multiprocessing

import pytest

import ember
from ember.utils.data import DataLoader

needs_fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                reason="needs the fork start method")


def _states(lib, persistent):
    data = [lib.tensor(float(i)) for i in range(8)]
    loader = lib.utils.data.DataLoader(data, batch_size=4, num_workers=2,
                                       persistent_workers=persistent)
    before = loader._iterator is None
    first = [b.tolist() for b in loader]
    kept = loader._iterator is not None
    second = [b.tolist() for b in loader]
    if kept:
        loader._iterator._shutdown_workers()
    return before, kept, first, second


@needs_fork
@pytest.mark.parametrize("persistent", [False, True])
def test_iterator_attribute_as_pytorchs(persistent):
    torch = pytest.importorskip("torch")
    assert _states(ember, persistent) == _states(torch, persistent)


@needs_fork
def test_shutdown_workers_stops_persistent_workers():
    loader = DataLoader([ember.tensor(float(i)) for i in range(8)], batch_size=4, num_workers=2,
                        persistent_workers=True)
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    workers = loader._pool[0]
    assert all(p.is_alive() for p in workers)  # persistent: alive between passes
    loader._iterator._shutdown_workers()
    assert loader._pool is None and not any(p.is_alive() for p in workers)
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]  # fresh workers
    loader._iterator._shutdown_workers()
