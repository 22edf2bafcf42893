#!/usr/bin/env bash
# One device call: install the carried wheels, lay out the cuzk_sim namespace, then run the
# steps asked for; logs go to $OUT. Usage (on the device machine, repo root, .whl present):
#   bash benchmarks/gpu_device_session.sh [STEPS] [pytest -k expr]
# STEPS: comma-separated of tests, bench, profile (all = tests,bench). profile runs
# benchmarks/gpu_profile.py under Nsight Compute (ncu --clock-control none) if installed.
# Environment: PROFILE (hypothesis profile, default dev), TEST_TIMEOUT, BENCH_ARGS,
# BENCH_TIMEOUT, VARIANT_DEFINES (+ VARIANT_TESTS, VARIANT_ARGS): tests and benchmarks again
# with other kernel defines, e.g. FIELD_MUL_WIDE=0, the one switch left (VARIANT_TESTS=skip
# runs only the benchmark).
set -uo pipefail
steps=${1:-all}
[ "$steps" = all ] && steps=tests,bench
kexpr=${2:-}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
has() { case ",$steps," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
. benchmarks/device_env.sh  # the wheels, the cuzk_sim namespace, PYTHONPATH
nvidia-smi --query-gpu=name,memory.total,clocks.sm,driver_version --format=csv | tee "$OUT/gpu.txt"
if has tests; then
  timeout ${TEST_TIMEOUT:-240} python3 -P -m pytest tests/gpu_prover -q -p no:cacheprovider \
    --durations=8 ${kexpr:+-k "$kexpr"} 2>&1 | tee "$OUT/tests.log"
fi
if has bench; then
  timeout ${BENCH_TIMEOUT:-300} python3 benchmarks/gpu_bench.py ${BENCH_ARGS:-} \
    --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
fi
if [ -n "${VARIANT_DEFINES:-}" ]; then  # kernel tests + benchmarks with other kernel switches
  if [ "${VARIANT_TESTS:-}" != skip ]; then
    CUZK_KERNEL_DEFINES="$VARIANT_DEFINES" timeout ${TEST_TIMEOUT:-240} python3 -P -m pytest \
      tests/gpu_prover/test_gpu_device.py -q -p no:cacheprovider -k "${VARIANT_TESTS:-not proof}" \
      2>&1 | tee "$OUT/variant_tests.log"
  fi
  CUZK_KERNEL_DEFINES="$VARIANT_DEFINES" timeout ${BENCH_TIMEOUT:-300} python3 \
    benchmarks/gpu_bench.py ${VARIANT_ARGS:-} --json "$OUT/variant.json" 2>&1 \
    | tee "$OUT/variant.log"
fi
if has profile; then
  if command -v ncu >/dev/null; then
    timeout ${PROFILE_TIMEOUT:-180} ncu --clock-control none \
      --kernel-name regex:'acc_balanced|bucket_acc|set_reduce|bucket_reduce|ntt_group|ntt_pass' \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section ComputeWorkloadAnalysis python3 benchmarks/gpu_profile.py 2>&1 \
      | tee "$OUT/ncu.txt" | grep -E "^  [a-z_0-9]+|Duration|Throughput|Achieved Occupancy|Registers|Stall|Issue Slots|Warp Cycles" | head -120
  else
    echo "ncu not installed: no hardware-counter profile" | tee "$OUT/ncu.txt"
  fi
fi
