#!/usr/bin/env bash
# One device call for the precomputed tables in the prover (issue 12 item 1, key_tables):
# the GPU tests of key_tables and key_resident and test_gpu_device's precomputed and
# dry-run-plan tests, then gpu_bench at 2^20 side by side: MSM old / new / precomputed
# (with phases and the build time), prove old / new / all pinned+overlap+resident+tails /
# resident+tables / all pinned+overlap+resident+tails+tables. Logs in $OUT.
# Usage (device machine, repo root, .whl present): bash benchmarks/tables_device_call.sh
# env: TEST_TIMEOUT (100 s each of two test runs), BENCH_TIMEOUT (180 s)
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
. benchmarks/device_env.sh  # the wheels, the cuzk_sim namespace, PYTHONPATH
nvidia-smi --query-gpu=name,memory.total,clocks.sm,driver_version --format=csv | tee "$OUT/gpu.txt"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/steps.txt"; }
stamp tests
timeout "${TEST_TIMEOUT:-100}" python3 -P -m pytest tests/gpu_prover/test_key_tables_gpu.py \
  tests/gpu_prover/test_key_resident_gpu.py -q -p no:cacheprovider --durations=5 \
  > "$OUT/gputests.log" 2>&1
stamp "tables+resident tests rc=$?"; tail -3 "$OUT/gputests.log"
timeout "${TEST_TIMEOUT:-100}" python3 -P -m pytest tests/gpu_prover/test_gpu_device.py -q \
  -p no:cacheprovider -k "precomputed or dry_run_plan" --durations=5 >> "$OUT/gputests.log" 2>&1
stamp "test_gpu_device precomputed/dry-run tests rc=$?"; tail -3 "$OUT/gputests.log"
P="old,new,all pinned+overlap+resident+tails,resident+tables,all pinned+overlap+resident+tails+tables"
CUZK_BENCH_PROVE="$P" timeout "${BENCH_TIMEOUT:-180}" python3 benchmarks/gpu_bench.py --quick \
  --only msm_g1,msm_g2,prove --sizes 20 --variants precomputed --json "$OUT/bench.json" \
  > "$OUT/bench.log" 2>&1
stamp "bench rc=$?"
grep -E "^msm|^prove|^\| " "$OUT/bench.log" | tail -30
