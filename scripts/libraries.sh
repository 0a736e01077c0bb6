#!/usr/bin/env bash
# The libraries PyTorch users build on, run unchanged on ember (docs/libraries/).
#
# Makes a virtual environment OUTSIDE the repository (default /tmp/ember-libs; LIBS_VENV=...) with
# ember (editable) and each library installed with `pip install --no-deps` (accelerate too:
# skorch's AccelerateMixin tests and transformers' example scripts use it), plus the libraries'
# own non-torch dependencies (tokenizers and safetensors included): never PyTorch. Then runs one
# program per library under `ember run` (examples/libraries/):
#   torchmetrics  a dozen metrics inside a training loop, MetricCollection, against scikit-learn
#   lightning     Trainer fit/validate/test/predict, CSV logging, checkpoint + resume, summary
#   transformers  tiny GPT-2 / LLaMA / BERT: train, generate, save_pretrained/from_pretrained
#   diffusers     tiny UNet2DConditionModel, AutoencoderKL, DiT: train, DDIM/DPM-Solver sampling
#
#   bash scripts/libraries.sh            install (first run: a few minutes), run the programs
#   bash scripts/libraries.sh --full     also skorch's own test suite (a skorch source checkout
#                                        in SKORCH_SRC: its skorch/tests run on ember; ~30 min)
#   bash scripts/libraries.sh --reference  also run each program on the PyTorch in .venv
#                                        (the libraries' folder on its path), to compare outputs
# Needs the network for the installs only; the programs download nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}
VENV=${LIBS_VENV:-/tmp/ember-libs}
FULL=0
REFERENCE=0
for arg in "$@"; do
  case "$arg" in
    --full) FULL=1 ;;
    --reference) REFERENCE=1 ;;
    *) echo "unknown argument: $arg (--full, --reference)" >&2; exit 2 ;;
  esac
done

if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating $VENV (ember + the libraries with --no-deps, never torch)"
  "$PY" -m venv "$VENV"
fi
P="$VENV/bin/python"
if ! "$P" -c "import torchmetrics, lightning, transformers, diffusers" >/dev/null 2>&1; then
  "$P" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  "$P" -m pip install -q -e "$ROOT[bf16]"  # (bf16: the libraries use bfloat16)
  # the libraries themselves: --no-deps, so pip never pulls PyTorch in
  "$P" -m pip install -q --no-deps "torchmetrics>=1.9,<2" "lightning>=2.6,<3" \
    "transformers>=5,<6" "diffusers>=0.42,<1" "skorch>=1.4,<2" "accelerate>=1.10,<2" 2>&1 \
    | grep -v "requires torch" || true
  # their own dependencies (compiled ones included), and the tools the programs use
  "$P" -m pip install -q lightning-utilities fsspec packaging typing_extensions pyyaml tqdm \
    tokenizers safetensors huggingface_hub regex filelock requests scikit-learn scipy \
    tabulate pytest flaky pandas importlib_metadata Pillow matplotlib psutil
fi
# an environment made from another checkout (an earlier CI clone, since deleted) points its
# editable ember elsewhere: point it at this one
if ! "$P" -c "import ember, sys; sys.exit(not ember.__file__.startswith('$ROOT/'))" >/dev/null 2>&1; then
  "$P" -m pip install -q --no-deps -e "$ROOT"
fi
if "$P" -c "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is None)"; then
  echo "error: $VENV has a real torch installed; this environment must not" >&2
  exit 1
fi

RUN=("$P" -m ember run)
SITE=$("$P" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
status=0
for prog in torchmetrics_loop lightning_fit transformers_tiny diffusers_tiny; do
  echo "== $prog on ember"
  if ! "${RUN[@]}" "examples/libraries/$prog.py" 2>&1 | grep -v "it/s]\|Tip:"; then
    status=1
  fi
  if [ "$REFERENCE" -eq 1 ] && [ -x .venv/bin/python ]; then
    echo "== $prog on PyTorch (.venv)"
    PYTHONPATH="$SITE" .venv/bin/python examples/libraries/reference.py \
      "examples/libraries/$prog.py" 2>&1 | grep -v "it/s]\|Tip:" || status=1
  fi
done

if [ "$FULL" -eq 1 ]; then
  SRC=${SKORCH_SRC:-}
  if [ -z "$SRC" ] || [ ! -d "$SRC/skorch/tests" ]; then
    echo "--full: set SKORCH_SRC to a skorch 1.4 source checkout (its skorch/tests folder)" >&2
    exit 2
  fi
  WORK=$(mktemp -d /tmp/skorch-tests.XXXX)
  cp -r "$SRC/skorch/tests" "$WORK/tests"
  echo "== skorch's own tests on ember (in $WORK; a few are network-only: pretrained tokenizers)"
  (cd "$WORK" && "${RUN[@]}" -m pytest tests -q -p no:cacheprovider -o addopts= 2>&1 | tail -3) \
    || true
fi
exit $status
