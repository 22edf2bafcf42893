#!/usr/bin/env bash
# The NTT work's device call (issue 12 item 5): wheels, the cuzk_sim namespace, NTT
# correctness tests on the GPU, then the NTT rows of gpu_bench.py (old / new side by side,
# each launch timed, the Fr product rate). Logs under $OUT. Usage (device machine, in a copy
# of the tree with ../.whl or .whl beside it):
#   bash benchmarks/ntt_device_call.sh [SIZES] [PYTEST_K]
# Environment: TEST_TIMEOUT, BENCH_TIMEOUT, BENCH_ARGS (e.g. --variants reg-direct), NCU=1
# (then ncu --clock-control none on one 2^24 NTT of fr_ntt_group_tw and of fr_ntt_reg8).
set -uo pipefail
sizes=${1:-16,20,24}
kexpr=${2:-not test_gpu_device or ntt_matches or proof_bytes}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
. benchmarks/device_env.sh  # the wheels, the cuzk_sim namespace, PYTHONPATH
nvidia-smi --query-gpu=name,memory.total,clocks.sm,driver_version --format=csv | tee "$OUT/gpu.txt"
timeout ${TEST_TIMEOUT:-110} python3 -P -m pytest tests/gpu_prover/test_ntt_kernels.py \
  tests/gpu_prover/test_ntt_model.py tests/gpu_prover/test_kernels_compile.py \
  "tests/gpu_prover/test_gpu_device.py" -k "$kexpr" -q \
  -p no:cacheprovider --durations=6 2>&1 | tee "$OUT/tests.log"
timeout ${BENCH_TIMEOUT:-70} python3 benchmarks/gpu_bench.py --quick --only ntt --sizes "$sizes" \
  ${BENCH_ARGS:-} --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
if [ -n "${NCU:-}" ]; then  # hardware counters of one 2^24 NTT per kernel (ncu, if installed)
  if command -v ncu >/dev/null; then
    cat >/tmp/ntt_once.py <<'PY'
import cupy as cp
from cuzk_sim.gpu import ntt as gntt
from cuzk_sim.reference.domain import Domain

k = 24
t = gntt.DeviceTables.from_buffer(cp.asarray(gntt.domain_tables(k, Domain(1 << k).omega, 7, 1).pack()), k)
a = cp.zeros((1 << k) * 8, dtype=cp.uint32) + 12345
for name in ("fr_ntt_group_tw", "fr_ntt_reg8"):
    gntt.ntt(a, t, name)
cp.cuda.Device().synchronize()
PY
    timeout ${NCU_TIMEOUT:-150} ncu --clock-control none \
      --kernel-name regex:'fr_ntt_group_tw|fr_ntt_reg8|fr_bitrev_tiled' \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      python3 /tmp/ntt_once.py 2>&1 | tee "$OUT/ncu.txt" \
      | grep -E "^  [a-z_0-9]+|Duration|Throughput|Achieved Occupancy|Registers|Stall" | head -80
  else
    echo "ncu not installed: no hardware-counter profile" | tee "$OUT/ncu.txt"
  fi
fi
