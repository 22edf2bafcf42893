#!/usr/bin/env bash
# One device call for issue 23 (the GPU prover at production shape): the split-MSM and
# streaming GPU tests (hypothesis profile ci), then benchmarks/production_bench.py (link,
# micro, split MSM 2^24, one 2^27 PoRep-shaped partition streamed within the budget and
# with the key resident), then other GPU tests as time allows. Logs in $OUT.
# Usage (device machine, repo root, .whl present): bash benchmarks/issue23_device_call.sh
# env: SPLIT_TIMEOUT (150), BENCH_TIMEOUT (200), MORE_TIMEOUT (60), MORE_TESTS (the test
#   files of the third step; "-": none), BENCH_ARGS (extra production_bench.py arguments)
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
PROFILE=ci . benchmarks/device_env.sh  # the wheels, the cuzk_sim namespace, PYTHONPATH
nvidia-smi --query-gpu=name,memory.total,clocks.sm,driver_version --format=csv | tee "$OUT/gpu.txt"
free -g >> "$OUT/gpu.txt"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/steps.txt"; }
stamp "split tests"
timeout "${SPLIT_TIMEOUT:-150}" python3 -P -m pytest tests/gpu_prover/test_split_msm_gpu.py -q \
  -p no:cacheprovider --durations=5 > "$OUT/split-tests.log" 2>&1
stamp "split tests rc=$?"; tail -3 "$OUT/split-tests.log"
stamp "production bench"
timeout "${BENCH_TIMEOUT:-200}" python3 benchmarks/production_bench.py --json "$OUT/production.json" \
  ${BENCH_ARGS:-} > "$OUT/production.log" 2>&1
stamp "production bench rc=$?"; tail -32 "$OUT/production.log"
MORE=${MORE_TESTS:-tests/gpu_prover/test_pinned_key_gpu.py tests/gpu_prover/test_key_resident_gpu.py}
if [ "$MORE" != "-" ]; then
  stamp "more tests: $MORE"
  timeout "${MORE_TIMEOUT:-60}" python3 -P -m pytest $MORE -q -p no:cacheprovider \
    > "$OUT/more-tests.log" 2>&1
  stamp "more tests rc=$?"; tail -3 "$OUT/more-tests.log"
fi
