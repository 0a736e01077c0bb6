#!/usr/bin/env bash
# Set up a virtual environment with the test extras (and PyTorch 2.13 for the parity tests),
# then run the whole test suite. Works on a fresh machine with only Python 3.11+.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
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
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
