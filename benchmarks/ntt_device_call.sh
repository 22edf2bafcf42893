#!/usr/bin/env bash
# The NTT work's device call (issue 12 item 5): wheels, the cuzk_sim namespace, then the NTT
# rows of gpu_bench.py first (old / new / tw / reg8 and the variants side by side, each
# launch timed, the Fr product rates; every output checked equal to old's), then the NTT
# GPU tests in two timed invocations: (a) fr_ntt_pass's own tests and the proof tests of
# test_gpu_device.py that run the default NTT, (b) the rest of test_ntt_kernels.py, the NTT
# model and the NVRTC compile check. Logs under $OUT. Usage (device machine, in a copy of
# the tree with ../.whl or .whl beside it):
#   bash benchmarks/ntt_device_call.sh [SIZES] [VARIANTS]
# Environment: BENCH_TIMEOUT, TESTS_A_TIMEOUT, TESTS_B_TIMEOUT, NCU=1 (then ncu --clock-control
# none on one 2^24 NTT of the default kernel and of fr_ntt_group_tw, where ncu is installed).
set -uo pipefail
sizes=${1:-20,24}
variants=${2:-pass-frmul,pass-planes,pass-both,pass-notable,pass-stagetw,pass-c2,tw-inline}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
. benchmarks/device_env.sh  # the wheels, the cuzk_sim namespace, PYTHONPATH
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv \
  | tee "$OUT/gpu.txt"
date -u +"start %H:%M:%S" | tee -a "$OUT/gpu.txt"
timeout ${BENCH_TIMEOUT:-100} python3 benchmarks/gpu_bench.py --quick --only ntt \
  --sizes "$sizes" --variants "$variants" --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
date -u +"bench done %H:%M:%S" | tee -a "$OUT/gpu.txt"
timeout ${TESTS_A_TIMEOUT:-90} python3 -P -m pytest \
  "tests/gpu_prover/test_ntt_kernels.py::test_pass_kernel_three_passes_match_reference" \
  "tests/gpu_prover/test_ntt_kernels.py::test_pass_kernel_equals_group_kernel_at_size" \
  tests/gpu_prover/test_gpu_device.py -k "pass_kernel or ntt_matches or proof_bytes or dry_run" \
  -q -p no:cacheprovider --durations=8 2>&1 | tee "$OUT/tests-a.log"
date -u +"tests a done %H:%M:%S" | tee -a "$OUT/gpu.txt"
timeout ${TESTS_B_TIMEOUT:-70} python3 -P -m pytest tests/gpu_prover/test_ntt_kernels.py \
  tests/gpu_prover/test_ntt_model.py tests/gpu_prover/test_kernels_compile.py \
  -k "not pass_kernel_three and not pass_kernel_equals" -q -p no:cacheprovider --durations=8 \
  2>&1 | tee "$OUT/tests-b.log"
date -u +"tests b done %H:%M:%S" | tee -a "$OUT/gpu.txt"
if [ -n "${NCU:-}" ]; then  # hardware counters of one 2^24 NTT per kernel (ncu, if installed)
  if command -v ncu >/dev/null; then
    cat >/tmp/ntt_once.py <<'PY'
import cupy as cp
from cuzk_sim.gpu import ntt as gntt
from cuzk_sim.reference.domain import Domain

k = 24
t = gntt.DeviceTables.from_buffer(cp.asarray(gntt.domain_tables(k, Domain(1 << k).omega, 7, 1).pack()), k)
a = cp.zeros((1 << k) * 8, dtype=cp.uint32) + 12345
for name in ("fr_ntt_pass", "fr_ntt_group_tw"):
    gntt.ntt(a, t, name)
cp.cuda.Device().synchronize()
PY
    timeout ${NCU_TIMEOUT:-150} ncu --clock-control none \
      --kernel-name regex:'fr_ntt_pass|fr_ntt_group_tw|fr_bitrev_tiled' \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      python3 /tmp/ntt_once.py 2>&1 | tee "$OUT/ncu.txt" \
      | grep -E "^  [a-z_0-9]+|Duration|Throughput|Achieved Occupancy|Registers|Stall" | head -80
  else
    echo "ncu not installed: no hardware-counter profile" | tee "$OUT/ncu.txt"
  fi
fi
