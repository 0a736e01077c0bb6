#!/usr/bin/env bash
# The main job, on a fresh machine with only Python 3.11+: set up .venv with ember and its demo
# extras (scikit-learn for the bundled digits, tqdm, matplotlib), then train the digits CNN.
# Arguments go to `ember demo` (e.g. --epochs 5 --out runs/try).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q -e '.[demo]'
exec .venv/bin/ember demo "$@"
