#!/usr/bin/env bash
# One device call for the MSM levers of issue 12 (the precomputed G1 MSM under 12 ms), run
# from a copy of the worktree with the wheels at ../.whl: the GPU tests that cover the MSM
# kernels (default switches, FIELD_SQR=0, FIELD_LAZY=0), the precomputed tables, the MSM oracles and
# the proofs, then gpu_bench's MSM rows with VARIANTS (every variant's result must equal
# old's, or gpu_bench exits). Logs under $OUT: gpu.txt, tests.log, bench.log, bench.json.
# Usage: bash benchmarks/msm_call.sh VARIANTS [SIZES]   (SIZES: log2, default 20; TESTS=skip:
# the benchmark alone)
set -uo pipefail
variants=${1:?usage: msm_call.sh VARIANTS [SIZES]}
sizes=${2:-20}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
. benchmarks/device_env.sh  # the wheels, the cuzk_sim namespace, PYTHONPATH
nvidia-smi --query-gpu=name,memory.total,clocks.sm,driver_version --format=csv | tee "$OUT/gpu.txt"
t0=$(date +%s)
sw=tests/gpu_prover/test_msm_kernel_switches.py::test_msm_matches_py_ecc_under_every_switch
kt=tests/gpu_prover/test_key_tables_gpu.py
proofs=test_proofs_over_the_tables_equal_the_reference_partition_after_partition
dv=tests/gpu_prover/test_gpu_device.py
[ "${TESTS:-run}" = skip ] || timeout "${TEST_TIMEOUT:-170}" python3 -P -m pytest -q -p no:cacheprovider --durations=6 \
  "$sw[g1-300--host]" "$sw[g1-300-FIELD_SQR=0-host]" "$sw[g1-300-FIELD_LAZY=0-host]" \
  "$sw[g1-300--device]" "$sw[g2-40--host]" "$sw[g2-40-FIELD_SQR=0-host]" \
  "$sw[g2-40-FIELD_LAZY=0-host]" \
  "$kt::$proofs[1-bellman-tables]" "$kt::$proofs[1-snarkjs-tables]" "$kt::$proofs[1-bellman-all]" \
  "$kt::test_two_partitions_trace_the_dry_run_plan_and_only_the_first_builds" \
  "$kt::test_a_table_built_in_place_gives_the_naive_sum" \
  "$dv::test_group_law_matches_py_ecc" "$dv::test_proof_bytes_equal_reference_and_verify" \
  "$dv::test_msm_matches_naive" "$dv::test_msm_large_by_linear_combination_identity" \
  "$dv::test_dry_run_plan_equals_traced_plan[flags_kw0]" \
  "$dv::test_dry_run_plan_equals_traced_plan[flags_kw4]" -k "not unsigned" 2>&1 | tee "$OUT/tests.log"
echo "tests: $(($(date +%s) - t0)) s" | tee -a "$OUT/tests.log"
timeout "${BENCH_TIMEOUT:-150}" python3 benchmarks/gpu_bench.py --quick --only msm_g1,msm_g2 \
  --sizes "$sizes" --variants "$variants" --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
echo "total: $(($(date +%s) - t0)) s" | tee -a "$OUT/bench.log"
