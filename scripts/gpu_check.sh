#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one call (a few minutes): run from the repository's root
# on a machine with CuPy and a GPU,
#
#     bash scripts/gpu_check.sh [OUTDIR]
#
# 1. what the machine has (GPU, driver, CuPy, NumPy, PyTorch where installed);
# 2. ember's native extension built for this Python (the pure-Python fallback runs if it fails);
# 3. compile's CUDA kernels against eager mode bit for bit (tests/test_compile_cuda.py);
# 4. the CUDA benchmark (bench/compile_cuda.py): eager, compiled and PyTorch on the same GPU;
# 5. the other tests whose `cuda` device runs only with a GPU: every op family on the device
#    (tests/test_devices.py, its `cuda` rows), autocast on CUDA (tests/test_amp.py) and the op
#    table compiled vs eager on the device (tests/test_compile_optable.py).
# Logs go to OUTDIR (default: $OUT, else /tmp/ember-gpu). The exit status is the tests', or 2
# where no GPU was found (the tests then ran on fake CUDA only).
set -uo pipefail
out=${1:-${OUT:-/tmp/ember-gpu}}
mkdir -p "$out"
py=${PYTHON:-python3}
export PYTHONPATH="$PWD/src:$PWD" PYTHONUNBUFFERED=1 EMBER_CACHE_DIR="$out/kernel-cache"

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
  "$py" -c "import sys, numpy, cupy; print('python', sys.version.split()[0], 'numpy', \
numpy.__version__, 'cupy', cupy.__version__, 'gpus', cupy.cuda.runtime.getDeviceCount())"
  "$py" -c "import torch; print('torch', torch.__version__, torch.cuda.is_available())" || true
} 2>&1 | tee "$out/machine.txt"

gpu=1
if ! "$py" -c "import cupy, sys; sys.exit(cupy.cuda.runtime.getDeviceCount() < 1)" 2>/dev/null; then
  echo "NO GPU: CuPy or a CUDA device is missing; the checks below run on fake CUDA only" \
    | tee -a "$out/machine.txt"
  gpu=0
fi

if ! "$py" setup.py build_ext --inplace >"$out/build.log" 2>&1; then
  echo "native build failed: the pure-Python modules run (see build.log)"
fi

# the most telling first (a fresh machine compiles every CuPy kernel at its first use)
timeout 200 "$py" -m pytest -q -p no:cacheprovider -o addopts="" -rs tests/test_compile_cuda.py \
  2>&1 | tee "$out/tests_compile.log"
status=${PIPESTATUS[0]}

timeout 150 "$py" -m bench.compile_cuda --repeat 3 --iters 10 2>&1 | tee "$out/bench.log"

timeout 200 "$py" -m pytest -q -p no:cacheprovider -o addopts="" -rs -k "cuda and not fake" \
  tests/test_devices.py tests/test_amp.py tests/test_compile_optable.py 2>&1 \
  | tee "$out/tests_devices.log"
devices=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && status=$devices
[ "$gpu" -eq 1 ] || status=2  # (nothing ran on a GPU: not a pass)
exit "$status"
