import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import ember  # noqa: E402


@pytest.fixture(autouse=True)
def _seed_and_grad_mode():
    ember.manual_seed(0)
    ember.set_default_dtype(ember.float32)
    yield
    ember.autograd.grad_mode._set(True)


def pytest_sessionstart(session):
    import os

    if os.environ.get("CI"):
        try:
            import torch  # noqa: F401
        except ImportError:
            raise pytest.UsageError("CI runs the PyTorch parity tests: install torch==2.13.0") from None
