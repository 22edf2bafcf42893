#!/usr/bin/env bash
# One device call: install the carried wheels, lay out the cuzk_sim namespace, run the GPU
# tests, then the benchmarks. Logs go to $OUT. Usage (on the device machine, repo root):
#   bash benchmarks/gpu_device_session.sh [tests|bench|all] [pytest -k expr]
set -uo pipefail
what=${1:-all}
kexpr=${2:-}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  .whl/*.whl >"$OUT/pip.log" 2>&1 || { echo "wheel install failed"; tail "$OUT/pip.log"; }
rm -rf /tmp/shim && mkdir -p /tmp/shim
cp -r cuzk_sim /tmp/shim/ && cp -r reference /tmp/shim/cuzk_sim/reference \
  && cp -r gpu /tmp/shim/cuzk_sim/gpu
export PYTHONPATH=/tmp/shim:/tmp/site PYTHONUNBUFFERED=1 CUZK_HYPOTHESIS_PROFILE=${PROFILE:-dev}
nvidia-smi --query-gpu=name,memory.total,clocks.sm,driver_version --format=csv | tee "$OUT/gpu.txt"
if [ "$what" = tests ] || [ "$what" = all ]; then
  timeout ${TEST_TIMEOUT:-240} python3 -P -m pytest tests/gpu_prover -q -p no:cacheprovider \
    --durations=8 ${kexpr:+-k "$kexpr"} 2>&1 | tee "$OUT/tests.log"
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  timeout ${BENCH_TIMEOUT:-300} python3 benchmarks/gpu_bench.py ${BENCH_ARGS:-} \
    --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
fi
if [ -n "${VARIANT_DEFINES:-}" ]; then  # kernel tests + benchmarks with other kernel switches
  CUZK_KERNEL_DEFINES="$VARIANT_DEFINES" timeout ${TEST_TIMEOUT:-240} python3 -P -m pytest \
    tests/gpu_prover/test_gpu_device.py -q -p no:cacheprovider -k "${VARIANT_TESTS:-not proof}" \
    2>&1 | tee "$OUT/variant_tests.log"
  CUZK_KERNEL_DEFINES="$VARIANT_DEFINES" timeout ${BENCH_TIMEOUT:-300} python3 \
    benchmarks/gpu_bench.py ${VARIANT_ARGS:-} --json "$OUT/variant.json" 2>&1 \
    | tee "$OUT/variant.log"
fi
