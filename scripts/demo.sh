#!/usr/bin/env bash
# The main job, on a fresh machine with only Python: set up a virtual environment with ember and
# run the seeds' autograd and training examples on ember (`ember run` maps `import torch` to ember).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q -e '.[demo]'
for script in examples/seeds/000_autograd.py examples/seeds/000_accumulation.py \
              examples/seeds/002_tensor_attributes.py; do
  echo "== ember run $script"
  .venv/bin/ember run "$script"
done
