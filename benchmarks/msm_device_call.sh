#!/usr/bin/env bash
# One device call for the MSM work (issue 12), run from a copy of the worktree with the
# wheels at ../.whl: install them, lay out the cuzk_sim namespace as gpu_device_session.sh
# does, run the MSM switch tests on the GPU, then gpu_bench's MSM rows with the variants
# asked for. Logs under $OUT. Usage: bash benchmarks/msm_device_call.sh VARIANTS [SIZES] [K]
# (K: pytest -k expression for test_msm_kernel_switches.py, default "AFFINE").
set -uo pipefail
variants=${1:-affine}
sizes=${2:-18,20}
kexpr=${3:-AFFINE}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
. benchmarks/device_env.sh  # the wheels, the cuzk_sim namespace, PYTHONPATH
nvidia-smi --query-gpu=name,memory.total,clocks.sm,driver_version --format=csv | tee "$OUT/gpu.txt"
t0=$(date +%s)
timeout ${TEST_TIMEOUT:-70} python3 -P -m pytest tests/gpu_prover/test_msm_kernel_switches.py \
  -q -p no:cacheprovider -k "$kexpr" 2>&1 | tee "$OUT/tests.log"
echo "tests: $(( $(date +%s) - t0 )) s"
timeout ${BENCH_TIMEOUT:-120} python3 benchmarks/gpu_bench.py --quick --only msm_g1,msm_g2 \
  --sizes "$sizes" --variants "$variants" --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
echo "total: $(( $(date +%s) - t0 )) s"
