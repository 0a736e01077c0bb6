#!/usr/bin/env bash
# Set up a virtual environment with the test extras (and PyTorch 2.13 for the parity tests),
# then run the whole test suite. Works on a fresh machine with only Python 3.11+.
#   1. .venv-core: ember with its runtime dependencies alone (NumPy, ml_dtypes) + pytest; runs the
#      core-only tests (tests/test_core_install.py and a few suites) there. About a minute.
#   2. .venv: ember[test,demo] + torch 2.13 (CPU wheel) + torchvision 0.28 for the parity tests;
#      ruff, then the whole suite on both cores (pytest -n 2). About 10-15 minutes on 2 cores.
# Arguments go to the second pytest (`bash scripts/test.sh tests/test_autograd.py -x`); with
# arguments, the core-only step is skipped. EMBER_NO_TORCH=1 skips installing PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if [ "$#" -eq 0 ]; then
  echo "== core-only install (.venv-core: numpy, ml_dtypes): installing, then a core test subset"
  [ -x .venv-core/bin/python ] || "$PY" -m venv .venv-core
  .venv-core/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  .venv-core/bin/python -m pip uninstall -q -y torch >/dev/null 2>&1 || true
  .venv-core/bin/python -m pip install -q -e . pytest
  EMBER_CORE_ONLY=1 .venv-core/bin/python -m pytest -q -p no:cacheprovider -p no:xdist \
    tests/test_core_install.py tests/test_dtypes_core.py tests/test_autograd.py \
    tests/test_nn_module.py tests/test_optim.py tests/test_serialization.py
fi

echo "== full install (.venv: ember[test,demo], torch 2.13 CPU, torchvision 0.28): installing"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q -e '.[test,demo]'
if [ "${EMBER_NO_TORCH:-0}" != "1" ]; then
  # the CPU wheel of exactly this version is what the parity tests compare against
  if ! .venv/bin/python -m pip install -q torch==2.13.0; then
    if [ -n "${CI:-}" ]; then echo "CI needs torch==2.13.0 for the parity tests" >&2; exit 1; fi
    echo "torch 2.13.0 is not installable here: the parity tests will be skipped"
  fi
  # torchvision's Python parts (transforms, models) are the vision tests' reference; its compiled
  # operators need a CUDA build of torch and stay unloaded (tests/helpers.py: real_torchvision)
  .venv/bin/python -m pip install -q --no-deps torchvision==0.28.0 \
    || echo "torchvision 0.28.0 is not installable here: the vision parity tests will be skipped"
fi
.venv/bin/ruff check .
echo "== tests (.venv, 2 workers)"
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 -rs "$@"
