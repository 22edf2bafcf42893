#!/usr/bin/env bash
# One device call for issue 28: capture our own prover's one-worker, one-partition gpu-run
# under CUPTI (cuzk-sim capture) and compare the captured plan with the prover's dry-run
# plan buffer for buffer (benchmarks/capture_compare.py), and its kernel+copy time with the
# pipeline's CUDA-event step times. NOT RUN YET (written without a GPU, 2026-12-03).
# Needs in .whl, besides the usual wheels, NVIDIA's CUPTI Python bindings and libcupti:
#   ../shared/device-wheels.sh simpy py_ecc pydantic typer cupti-python nvidia-cuda-cupti
# (cupti-python's major version must match the device's CUDA driver, 13 on the H200 so far).
# Usage (device machine, repo root): bash benchmarks/capture_device_call.sh   (logs in $OUT)
# env: DOMAIN_LOG2 (18; the validation base's), CAPTURE_TIMEOUT (300)
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
. benchmarks/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
python3 -c "from cupti import cupti; print('cupti-python', cupti.get_version())" \
  > "$OUT/cupti.txt" 2>&1; cat "$OUT/cupti.txt"
K=${DOMAIN_LOG2:-18}
SCEN=scenarios/validation/base.toml
# one proof of one partition, raw cudaMalloc per buffer (the caching pool would show CuPy's
# 2 MiB segments, not the prover's buffers)
SETS=(--set 'workload[0].count=1' --set 'workload[0].partitions=1'
      --set "plan.gpu_prover.domain_log2=$K" --set 'plan.gpu_prover.allocator="sync"')
python3 -m cuzk_sim gpu-plan --domain-log2 "$K" --key-pinned --allocator sync --json \
  > "$OUT/dry.json" 2> "$OUT/dry.err"
echo "dry-run plan rc=$?"
timeout "${CAPTURE_TIMEOUT:-300}" python3 -m cuzk_sim capture -o "$OUT/captured.json" \
  --save-trace "$OUT/trace.json" -- python3 -m cuzk_sim gpu-run "$SCEN" "${SETS[@]}" \
  --details "$OUT/details.json" > "$OUT/capture.log" 2>&1
echo "capture rc=$?"; tail -40 "$OUT/capture.log"
python3 benchmarks/capture_compare.py "$OUT/captured.json" "$OUT/dry.json" \
  --details "$OUT/details.json" | tee "$OUT/compare.txt"
echo "compare rc=${PIPESTATUS[0]}"
