#!/usr/bin/env bash
# One device call for the GPU prover (issue 12): every GPU test (tests/gpu_prover), then
# gpu_bench side by side -- MSM (old, new, unsigned and the variants asked), NTT (old, new),
# prove (the columns asked), and prove again with the kernel defines PROVE_DEFINES (default:
# the field product's baseline FIELD_MUL_WIDE=0). The MSM switches it once compared were
# retired (issue 29).
# Logs in $OUT. Usage (device machine, repo root, .whl present):
#   bash benchmarks/issue12_device_call.sh
# env: TEST_TIMEOUT (420: the whole folder took >200 s on the H200 at e58bfb9), BENCH_TIMEOUT (150), PROVE_TIMEOUT (90), MSM_VARIANTS,
#   TESTS (skip: the benchmarks alone), PROVE_COLUMNS, PROVE_DEFINES (the second prove run's kernel switches; "-": no second
#   run), MSM_SIZES / NTT_SIZES / PROVE_SIZES (default 18,20,24 / 18,20,24 / 18,20)
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
. benchmarks/device_env.sh  # the wheels, the cuzk_sim namespace, PYTHONPATH
nvidia-smi --query-gpu=name,memory.total,clocks.sm,driver_version --format=csv | tee "$OUT/gpu.txt"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/steps.txt"; }
if [ "${TESTS:-run}" != skip ]; then
  stamp tests
  timeout "${TEST_TIMEOUT:-420}" python3 -P -m pytest tests/gpu_prover -q -p no:cacheprovider \
    --durations=10 > "$OUT/gputests.log" 2>&1
  stamp "tests rc=$?"; tail -4 "$OUT/gputests.log"
fi
MSM_VARIANTS=${MSM_VARIANTS:-precomputed}
timeout "${BENCH_TIMEOUT:-150}" python3 benchmarks/gpu_bench.py --quick --only msm_g1,msm_g2 \
  --sizes "${MSM_SIZES:-18,20,24}" --variants "$MSM_VARIANTS" --json "$OUT/bench.json" \
  > "$OUT/bench.log" 2>&1
stamp "bench msm rc=$?"
timeout "${BENCH_TIMEOUT:-150}" python3 benchmarks/gpu_bench.py --quick --only ntt \
  --sizes "${NTT_SIZES:-18,20,24}" --json "$OUT/bench-ntt.json" >> "$OUT/bench.log" 2>&1
stamp "bench ntt rc=$?"
P=${PROVE_COLUMNS:-new,all pinned+overlap,all pinned+overlap+tails,all pinned+overlap+resident,all pinned+overlap+resident+tails}
CUZK_BENCH_PROVE="old,$P" timeout "${PROVE_TIMEOUT:-90}" python3 benchmarks/gpu_bench.py \
  --quick --only prove --sizes "${PROVE_SIZES:-18,20}" --json "$OUT/prove.json" > "$OUT/prove.log" 2>&1
stamp "prove rc=$?"
touch "$OUT/prove-defines.log"
if [ "${PROVE_DEFINES:-}" != "-" ]; then
  CUZK_KERNEL_DEFINES="${PROVE_DEFINES:-FIELD_MUL_WIDE=0}" CUZK_BENCH_PROVE="new,all pinned+overlap+resident+tails" \
    timeout "${PROVE_TIMEOUT:-90}" python3 benchmarks/gpu_bench.py --quick --only prove --sizes 20 \
    --json "$OUT/prove-defines.json" > "$OUT/prove-defines.log" 2>&1
  stamp "prove with ${PROVE_DEFINES:-FIELD_MUL_WIDE=0} rc=$?"
fi
grep -E "^\| |variants agree|equal" "$OUT/bench.log" | tail -40
grep -E "^prove|^\| " "$OUT/prove.log" "$OUT/prove-defines.log" | tail -30
