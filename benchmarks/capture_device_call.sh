#!/usr/bin/env bash
# One device call for issue 28 (plans from any CUDA program), within BUDGET seconds:
#  1. build the fixture (tests/capture/fixtures/alloc_loop.cu, nvcc) and the CUPTI
#     injection library (cuzk_sim/capture/inject/, the system's C compiler);
#  2. run the fixture alone (its context's bytes), capture it through the injection
#     library and compare the captured plan with the plan of its source's arithmetic
#     (benchmarks/capture_processes.py source-plan), buffer for buffer;
#  3. predict with the model (separate processes) 2 and 3 copies at caps 2 % either side
#     of its boundary -> $OUT/predictions.json, BEFORE any run; then per cap: a ballast
#     takes all of the card but the cap, the model is asked again at the card actually
#     left (at.json, still before the run), N fixtures run at once; judge -> processes.json;
#  4. with the time left: capture our own prover (gpu-run of a one-worker, one-partition
#     scenario at 2^DOMAIN_LOG2, the sync allocator), take the trace's last span of
#     transient device memory (the timed partition, after the key's generation and the
#     warm-up partition: `capture --span -1`) and compare it with the scenario's dry-run
#     plan and the run's CUDA-event step times (benchmarks/capture_compare.py, like with
#     like: cuzk_sim/capture/step_times.py) -> $OUT/compare.txt.
# STAGES picks the parts: "fixture" (1-3), "prover" (4, with the injection library of 1);
# default both. Each stage runs under `timeout`, its rc logged in $OUT/steps.txt; a failed
# stage does not stop the next. The work folder ($W) is tarred into $OUT/capture-work.tgz.
# Usage (device machine, repo root): WHL=../.whl-s28 bash benchmarks/capture_device_call.sh
#   the prover alone: STAGES=prover BUDGET=105 WHL=... bash benchmarks/capture_device_call.sh
# env: BUDGET (190 s), STAGES ("fixture prover"), DOMAIN_LOG2 (22), HOLD_MS (1500), W (/tmp/cap)
set -uo pipefail
OUT=${OUT:-/tmp/out}
W=${W:-/tmp/cap}
mkdir -p "$OUT"
rm -rf "$W" && mkdir -p "$W/runs"
BUDGET=${BUDGET:-190}
STAGES=${STAGES:-fixture prover}
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
t0=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - t0))); }
stamp() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$OUT/steps.txt"; }
finish() {
  tar czf "$OUT/capture-work.tgz" -C "$W" --exclude cache --exclude alloc_loop . 2>/dev/null
  stamp "done; work folder tarred"
}
trap finish EXIT
# no NVTX through CUPTI: nothing captured here marks ranges, and CUPTI 13.0's NVTX
# injection crashed programs that name threads (NVIDIA/NVTX#125)
export PIP_LOG=$W/pip.log CUZK_SIM_CACHE=$W/cache CUZK_SIM_CAPTURE_NVTX=0
. benchmarks/device_env.sh
PY="python3 -P"
CP="$PY benchmarks/capture_processes.py"
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv > "$W/gpu.txt" 2>&1
{ command -v nvcc cc gcc; nvcc --version | tail -2
  ls -d /usr/local/cuda*/extras/CUPTI/include /usr/local/cuda*/include/cupti.h
  python3 -c "import cupti; print('cupti-python', cupti.__file__)"; } > "$W/toolchain.txt" 2>&1
stamp "start; $(head -2 "$W/gpu.txt" | tail -1)"

# 1. builds
NVCC=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
if has fixture; then
  timeout 90 "${NVCC:-nvcc}" -O2 -arch=sm_90 -o "$W/alloc_loop" tests/capture/fixtures/alloc_loop.cu \
    > "$W/build.log" 2>&1
  stamp "nvcc fixture rc=$?"
fi
timeout 60 $PY -c "from cuzk_sim.capture.inject_build import find_cupti, injection_library
c = find_cupti(); print(c); print(injection_library(c))" >> "$W/build.log" 2>&1
stamp "injection library rc=$? ($(tail -1 "$W/build.log"))"

fixture_stages() {
# 2. the fixture alone, then captured
timeout 30 "$W/alloc_loop" --iters 1 > "$W/context.log" 2>&1
stamp "fixture alone rc=$?: $(grep -m1 'FIXTURE context' "$W/context.log")"
CTX=$($CP context "$W/context.log" 2>>"$W/build.log") || CTX=""
$CP source-plan "$W/fixture-source.json"
cap_fixture() {
  timeout 30 $PY -m cuzk_sim capture --via injection -o "$W/fixture-plan.json" \
    --save-trace "$W/fixture-trace.json" -- "$W/alloc_loop" --iters 2 > "$W/fixture-capture.log" 2>&1
}
cap_fixture; rc=$?
stamp "capture fixture rc=$rc"
if [ $rc -ne 0 ]; then  # without the cuMemGetInfo samples (the one call inside a callback)
  export CUZK_SIM_CAPTURE_MEMINFO=0  # for the prover's capture too
  cap_fixture; stamp "capture fixture, no meminfo, rc=$?"
fi
grep -E "CUDA context|peak device|allocations|missing|not " "$W/fixture-capture.log" | head -8 \
  | tee -a "$OUT/steps.txt"
timeout 30 $PY benchmarks/capture_compare.py "$W/fixture-plan.json" "$W/fixture-source.json" \
  > "$OUT/fixture-compare.txt" 2>&1
stamp "fixture plan vs its source rc=$?: $(grep -m1 buffers "$OUT/fixture-compare.txt")"
PLAN=$W/fixture-plan.json
[ -s "$PLAN" ] || { PLAN=$W/fixture-source.json; stamp "no captured plan: predicting from the source's"; }

# 3. predictions, then the runs
if [ -z "$CTX" ]; then
  stamp "no context measured: no multi-process runs"
else
  timeout 60 $CP predict "$PLAN" --context "$CTX" --out "$OUT/predictions.json" 2>&1 | tee -a "$OUT/steps.txt"
  stamp "predictions rc=${PIPESTATUS[0]} (context $CTX B, plan $(basename "$PLAN"))"
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits -lms 200 \
    > "$W/smi-apps.log" 2>&1 &
  SMI=$!
  RUNS=$(python3 -c "import json,sys
for r in json.load(open(sys.argv[1]))['runs']: print(r['n'], r['label'], r['vram'])" \
    "$OUT/predictions.json" 2>/dev/null)
  while read -r -u 3 n label vram; do
    [ -n "$n" ] || continue
    if [ "$(left)" -lt 25 ]; then stamp "skip n$n $label: $(left) s left"; continue; fi
    D=$W/runs/n$n-$label
    mkdir -p "$D"
    timeout 60 "$W/alloc_loop" --ballast "$vram" --stop-file "$D/stop" > "$D/ballast.log" 2>&1 &
    B=$!
    for _ in $(seq 200); do grep -q '^BALLAST' "$D/ballast.log" && break; sleep 0.1; done
    F=$(sed -n 's/^BALLAST free=\([0-9]*\).*/\1/p' "$D/ballast.log")
    if [ -z "$F" ]; then stamp "n$n $label: no ballast"; touch "$D/stop"; wait $B; continue; fi
    timeout 30 $CP at "$PLAN" --context "$CTX" --n "$n" --vram "$F" > "$D/at.json" 2>>"$D/ballast.log"
    pids=()
    for i in $(seq "$n"); do
      ( timeout 40 "$W/alloc_loop" --iters 2 --hold-ms "${HOLD_MS:-1500}" > "$D/proc$i.log" 2>&1
        echo $? > "$D/proc$i.rc" ) &
      pids+=($!)
    done
    wait "${pids[@]}"
    touch "$D/stop"; wait $B
    stamp "n$n $label: card left $F B, model $(cat "$D/at.json"), rcs $(cat "$D"/proc*.rc | tr '\n' ' ')"
  done 3<<< "$RUNS"
  kill "$SMI" 2>/dev/null
  timeout 30 $CP judge "$OUT/predictions.json" "$W/runs" --out "$OUT/processes.json" \
    --smi "$W/smi-apps.log" 2>&1 | tee -a "$OUT/steps.txt"
  stamp "judge rc=${PIPESTATUS[0]}"
fi
}
if has fixture; then fixture_stages; fi

# 4. our prover, captured, with the time left
has prover || exit 0
K=${DOMAIN_LOG2:-22}
T=$(( $(left) - 15 ))
if [ "$T" -lt 30 ]; then
  stamp "no time left for the prover's capture ($T s)"
  exit 0
fi
SETS=(--set 'workload[0].count=1' --set 'workload[0].partitions=1'
      --set "plan.gpu_prover.domain_log2=$K" --set 'plan.gpu_prover.allocator="sync"')
# the reference: the scenario's own plan (what gpu-run runs: its partition shape)
timeout 60 $PY -c "import sys
from cuzk_sim import api
s = api.load(sys.argv[1], {'workload[0].count': 1, 'workload[0].partitions': 1,
    'plan.gpu_prover.domain_log2': int(sys.argv[2]), 'plan.gpu_prover.allocator': 'sync'})
print(s.plans['porep'].to_json())" scenarios/validation/base.toml "$K" > "$W/dry.json" 2> "$W/dry.err"
stamp "dry-run plan rc=$? (2^$K)"
T=$(( $(left) - 12 ))
# the whole trace is kept (--save-trace) whatever the span; the span's plan is made from it
timeout "$T" $PY -m cuzk_sim capture --via injection -o "$W/prover-whole.json" \
  --save-trace "$W/prover-trace.json" -- \
  python3 -P -m cuzk_sim gpu-run scenarios/validation/base.toml "${SETS[@]}" \
  --details "$W/details.json" > "$W/prover-capture.log" 2>&1
stamp "capture prover rc=$? (limit $T s)"
timeout 30 $PY -c "import json, sys
from cuzk_sim.capture.trace import Trace
from cuzk_sim.capture.to_plan import busy_spans, trace_to_plan
t = Trace.from_dict(json.load(open(sys.argv[1])), sys.argv[1])
imp = trace_to_plan(t, span=-1)
sp = busy_spans(t, imp.pid, imp.device)
print('spans of transient device memory (s from the first, length):',
      ', '.join(f'{(a - sp[0][0]) / 1e9:.2f} +{(b - a) / 1e9:.3f}' for a, b in sp))
open(sys.argv[2], 'w').write(imp.plan.to_json() + '\\n')" \
  "$W/prover-trace.json" "$W/prover-plan.json" 2>&1 | tail -3 | tee -a "$OUT/steps.txt"
stamp "span -1 plan rc=${PIPESTATUS[0]}"
timeout 30 $PY benchmarks/capture_compare.py "$W/prover-plan.json" "$W/dry.json" \
  --trace "$W/prover-trace.json" --details "$W/details.json" --span -1 > "$OUT/compare.txt" 2>&1
stamp "prover plan vs the scenario's plan rc=$?"
cat "$OUT/compare.txt" | head -40
