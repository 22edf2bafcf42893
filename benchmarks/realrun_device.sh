#!/usr/bin/env bash
# One device call for the real pipeline: allocator probe, gpu-run's GPU tests, a slice of
# the validation grid (validate, resumable), the fault run. Everything lands in $OUT as
# at most 8 files (the device tool's limit): all.tgz holds every log and output.
# Usage (device machine, repo root, .whl next to it): bash benchmarks/realrun_device.sh
#   env: WHAT="probe tests grid faults"  ONLY=<config glob>  GRID_TIMEOUT=s  CUZK_COMMIT=sha
#   (give CUZK_COMMIT from the machine that sends the tree: git on the device machine does
#   not know the commit of the working tree it was sent)
#   WHAT may also name: gputests (every GPU test, tests/gpu_prover), calib (the logs loop:
#   gpu-run -> calibrate -> scenario-from-log -> run/check on a second gpu-run, issue 11)
set -uo pipefail
OUT=${OUT:-/tmp/out}
W=/tmp/realrun
mkdir -p "$OUT" "$W/logs"
WHAT=${WHAT:-probe tests grid faults}  # also: bench (gpu_bench.py prove stages at 2^16, 2^18)
WHL=${WHL:-../.whl}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  "$WHL"/*.whl >"$W/logs/pip.log" 2>&1 || { echo "wheel install failed"; tail "$W/logs/pip.log"; }
rm -rf /tmp/shim && mkdir -p /tmp/shim
cp -r cuzk_sim /tmp/shim/ && cp -r reference /tmp/shim/cuzk_sim/reference \
  && cp -r gpu /tmp/shim/cuzk_sim/gpu
export PYTHONPATH=/tmp/shim:/tmp/site PYTHONUNBUFFERED=1 CUZK_HYPOTHESIS_PROFILE=dev
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$W/logs/gpu.txt" 2>&1
nproc >> "$W/logs/gpu.txt"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$W/logs/steps.txt"; }
if [[ " $WHAT " == *" probe "* ]]; then
  stamp probe
  timeout ${PROBE_TIMEOUT:-90} python3 -P benchmarks/allocator_probe.py --json "$W/probe.json" \
    > "$W/logs/probe.log" 2>&1; stamp "probe rc=$?"
fi
if [[ " $WHAT " == *" tests "* ]]; then
  stamp tests
  timeout ${TEST_TIMEOUT:-180} python3 -P -m pytest tests/gpu_prover/test_gpu_run.py -q \
    -p no:cacheprovider --durations=6 > "$W/logs/tests.log" 2>&1; stamp "tests rc=$?"
fi
if [[ " $WHAT " == *" gputests "* ]]; then
  stamp gputests
  CUZK_HYPOTHESIS_PROFILE=ci timeout ${GPUTEST_TIMEOUT:-240} python3 -P -m pytest tests/gpu_prover \
    -q -p no:cacheprovider --durations=8 > "$W/logs/gputests.log" 2>&1; stamp "gputests rc=$?"
fi
if [[ " $WHAT " == *" calib "* ]]; then
  stamp calib
  C=$W/calib; mkdir -p "$C"
  sed 's/^gpu_workers_per_device = 1$/gpu_workers_per_device = 2/; s/^count = 2$/count = 3/' \
    scenarios/validation/base.toml > scenarios/validation/calib-b.toml
  ( set -x
    python3 -P -m cuzk_sim gpu-run scenarios/validation/base.toml --log "$C/a.log" --json > "$C/a.json"
    python3 -P -m cuzk_sim gpu-run scenarios/validation/calib-b.toml --log "$C/b.log" --json > "$C/b.json"
    python3 -P -m cuzk_sim calibrate "$C/a.log" --base h200 --scenario scenarios/validation/base.toml \
      --gpu-model "NVIDIA H200" -o "$C/h200-a.toml"
    python3 -P -m cuzk_sim scenario-from-log "$C/b.log" --profile "$C/h200-a.toml" \
      --plan-from scenarios/validation/calib-b.toml -o "$C/b.toml"
    python3 -P -m cuzk_sim run "$C/b.toml"
    python3 -P -m cuzk_sim check "$C/b.toml" ) > "$W/logs/calib.log" 2>&1
  stamp "calib rc=$?"; tail -25 "$W/logs/calib.log"
fi
if [[ " $WHAT " == *" grid "* ]]; then
  stamp grid
  timeout ${GRID_TIMEOUT:-200} python3 -P -m cuzk_sim validate scenarios/validation/h200-grid.toml \
    --out "$W/grid" ${ONLY:+--only "$ONLY"} > "$W/logs/grid.log" 2>&1; stamp "grid rc=$?"
  python3 -P -m cuzk_sim validate scenarios/validation/h200-grid.toml --out "$W/grid" \
    --report-only > /dev/null 2>&1
fi
if [[ " $WHAT " == *" bench "* ]]; then
  stamp bench
  timeout ${BENCH_TIMEOUT:-90} python3 -P benchmarks/gpu_bench.py --quick --max-log2 18 \
    --json "$W/bench.json" > "$W/logs/bench.log" 2>&1; stamp "bench rc=$?"
fi
if [[ " $WHAT " == *" faults "* ]]; then
  stamp faults
  timeout ${FAULT_TIMEOUT:-120} python3 -P -m cuzk_sim gpu-run scenarios/validation/faults.toml \
    --verify --fault oom:random:0.003 --fault oom:msm_b_g2.points:0.05 --fault exception:0.003 \
    --fault shrink:1:654MiB --fault-seed 1 --details "$W/faults.json" --log "$W/faults.log" \
    > "$W/logs/faults.txt" 2>&1; stamp "faults rc=$?"
fi
stamp done
tar czf "$OUT/all.tgz" -C "$W" . 2>/dev/null
for f in probe.json faults.json bench.json grid/report.md logs/steps.txt; do
  [ -f "$W/$f" ] && cp "$W/$f" "$OUT/$(echo "$f" | tr / -)"
done
tail -5 "$W/logs/tests.log" 2>/dev/null; tail -4 "$W/logs/gputests.log" 2>/dev/null
tail -12 "$W/logs/grid.log" 2>/dev/null
cat "$W/logs/steps.txt"
