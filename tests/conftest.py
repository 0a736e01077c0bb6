import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from devices import DEVICES, cuda_available, fake_cupy  # noqa: E402

import ember  # noqa: E402


@pytest.fixture(autouse=True)
def _seed_and_grad_mode():
    ember.manual_seed(0)
    ember.set_default_dtype(ember.float32)
    yield
    ember.autograd.grad_mode._set(True)


def pytest_sessionstart(session):
    import os

    if os.environ.get("CI") and os.environ.get("EMBER_CORE_ONLY") != "1":
        try:
            import torch  # noqa: F401
        except ImportError:
            raise pytest.UsageError("CI runs the PyTorch parity tests: install torch==2.13.0") from None


@pytest.fixture(params=DEVICES)
def device(request):
    """The device an op test runs on (tests/devices.py): "cpu", "fake_cuda" (NumPy arrays that
    report cuda:0, so the non-CPU code paths run anywhere; a NumPy-backed stand-in for CuPy is
    installed meanwhile) and "cuda" (skipped without a GPU)."""
    if request.param == "cuda" and not cuda_available():
        pytest.skip("no CUDA GPU here (ember.cuda.is_available() is False): the 'cuda' "
                    "parameter runs on a machine with CuPy and a GPU")
    if request.param == "fake_cuda":
        with fake_cupy():  # ember's array module for FakeCudaArray makes FakeCudaArray
            yield request.param
    else:
        yield request.param
