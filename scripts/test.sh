#!/usr/bin/env bash
# Set up a virtual environment with the test extras (and PyTorch 2.13 for the parity tests),
# then run the whole test suite. Works on a fresh machine with only Python 3.11+.
#   1. .venv-core: ember with its runtime dependency alone (NumPy) + pytest; runs the
#      core-only tests (tests/test_core_install.py and a few suites) there. About a minute.
#   2. .venv: ember[test,demo] + torch 2.13 (CPU wheel) + torchvision 0.28 for the parity tests;
#      ruff, then the whole suite on both cores (pytest -n 2) with the native core (ember._native,
#      built by the install; in CI a failed build is an error). About 5-10 minutes on 2 cores.
#   3. The same environment with EMBER_PURE_PYTHON=1: the op table, autograd, nn, compile, the
#      profiler and the differential tester against PyTorch on the pure-Python core; then the
#      native core's own tests and autograd's under `python -X dev` with PYTHONMALLOC=debug
#      (reference counting). A few minutes.
#   4. In CI only (CI set): scripts/libraries.sh, one program per library (torchmetrics, Lightning,
#      transformers, diffusers) under `ember run` in their own environment, never PyTorch; about
#      2 minutes with the installs. One line, and no failure, where the package index is unreachable.
# Arguments go to the second pytest alone (`bash scripts/test.sh tests/test_autograd.py -x`); with
# arguments (or --quick), steps 1, 3 and 4 are skipped. EMBER_NO_TORCH=1 skips installing PyTorch.
# `--quick`: step 2's install, then a subset for contributors (tensors, ops, autograd, in-place and
# views, nn, optim, data, serialization, errors, the differential tester, the CLI): a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
QUICK=0
if [ "${1:-}" = "--quick" ]; then
  QUICK=1
  shift
fi
QUICK_TESTS=(tests/test_autograd.py tests/test_tensor.py tests/test_ops_elementwise.py
  tests/test_ops_reduction.py tests/test_ops_shape.py tests/test_ops_indexing.py
  tests/test_inplace_views.py tests/test_nn_module.py tests/test_nn_layers.py tests/test_nn_loss.py
  tests/test_optim.py tests/test_errors_misc.py tests/test_data.py tests/test_serialization.py
  tests/test_differential.py tests/test_pytorch_refusals.py tests/test_cli.py)
echo "scripts/test.sh installs (first run only, a few minutes): .venv-core (ember, NumPy,"
echo "  pytest: ~100 MB) and .venv (ember[test,demo], torch 2.13 CPU, torchvision: ~1.3 GB, 750 MB"
echo "  of it PyTorch). Then the tests: about 10-15 minutes on 2 cores (--quick: a subset, a few"
echo "  minutes)."

if [ "$#" -eq 0 ] && [ "$QUICK" -eq 0 ]; then
  echo "== core-only install (.venv-core: numpy alone): installing, then a core test subset"
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
# in CI the native core must build (a broken C file is an error there, not a silent fallback)
EMBER_REQUIRE_NATIVE=${CI:+1} .venv/bin/python -m pip install -q -e '.[test,demo]'
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
.venv/bin/python -m ember --version
# CI's random programs (tests/test_differential.py) are the same every run, so a red CI means a
# change broke one of them; elsewhere each run draws fresh ones, and long mode (EMBER_FUZZ=20000)
# finds the rare open classes (docs/testing.md)
if [ -n "${CI:-}" ] && [ -z "${EMBER_FUZZ_SEED:-}" ]; then
  export EMBER_FUZZ_SEED=20261205
fi
if [ "$QUICK" -eq 1 ]; then
  echo "== quick subset (.venv, 2 workers, native core): ${#QUICK_TESTS[@]} files"
  exec .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 "${QUICK_TESTS[@]}" "$@"
fi
if [ "$#" -ne 0 ]; then
  exec .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 "$@"
fi
echo "== pure-Python core (EMBER_PURE_PYTHON=1): ops, autograd, nn, compile, differential"
EMBER_PURE_PYTHON=1 .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 \
  tests/test_ops_*.py tests/test_autograd*.py tests/test_inplace_views.py \
  tests/test_utils_checkpoint.py tests/test_compile.py tests/test_compile_guards.py \
  tests/test_nn_*.py \
  tests/test_differential.py tests/test_profiler.py tests/test_native_core.py \
  tests/test_torch_function.py tests/test_kernels.py tests/test_inplace_direct.py
echo "== native core under python -X dev, PYTHONMALLOC=debug"
PYTHONMALLOC=debug .venv/bin/python -X dev -m pytest -q -p no:cacheprovider -p no:xdist \
  tests/test_native_core.py tests/test_autograd.py tests/test_torch_function.py \
  tests/test_compile_guards.py tests/test_kernels_bf16_gemm.py
if [ -n "${CI:-}" ]; then
  if .venv/bin/python -m pip index versions --timeout 10 --retries 0 torchmetrics \
      >/dev/null 2>&1; then
    echo "== the libraries' programs (scripts/libraries.sh: their own environment, no PyTorch)"
    bash scripts/libraries.sh
  else
    echo "== the libraries' programs: skipped, the package index is unreachable"
  fi
fi
echo "== tests (.venv, 2 workers, native core)"
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n 2
