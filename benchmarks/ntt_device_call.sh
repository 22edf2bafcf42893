#!/usr/bin/env bash
# The NTT work's device call (issue 12 item 5): wheels, the cuzk_sim namespace, NTT
# correctness tests on the GPU, then the NTT rows of gpu_bench.py (old / new side by side,
# each launch timed, the Fr product rate). Logs under $OUT. Usage (device machine, in a copy
# of the tree with ../.whl or .whl beside it):
#   bash benchmarks/ntt_device_call.sh [SIZES] [PYTEST_K]
# Environment: TEST_TIMEOUT, BENCH_TIMEOUT, BENCH_ARGS (e.g. --variants reg-direct).
set -uo pipefail
sizes=${1:-16,20,24}
kexpr=${2:-not test_gpu_device or ntt_matches or proof_bytes}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
[ -d .whl ] || ln -s ../.whl .whl
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  .whl/*.whl >"$OUT/pip.log" 2>&1 || { echo "wheel install failed"; tail "$OUT/pip.log"; }
rm -rf /tmp/shim && mkdir -p /tmp/shim
cp -r cuzk_sim /tmp/shim/ && cp -r reference /tmp/shim/cuzk_sim/reference \
  && cp -r gpu /tmp/shim/cuzk_sim/gpu
export PYTHONPATH=/tmp/shim:/tmp/site PYTHONUNBUFFERED=1 CUZK_HYPOTHESIS_PROFILE=${PROFILE:-dev}
nvidia-smi --query-gpu=name,memory.total,clocks.sm,driver_version --format=csv | tee "$OUT/gpu.txt"
timeout ${TEST_TIMEOUT:-110} python3 -P -m pytest tests/gpu_prover/test_ntt_kernels.py \
  tests/gpu_prover/test_ntt_model.py tests/gpu_prover/test_kernels_compile.py \
  "tests/gpu_prover/test_gpu_device.py" -k "$kexpr" -q \
  -p no:cacheprovider --durations=6 2>&1 | tee "$OUT/tests.log"
timeout ${BENCH_TIMEOUT:-70} python3 benchmarks/gpu_bench.py --quick --only ntt --sizes "$sizes" \
  ${BENCH_ARGS:-} --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
