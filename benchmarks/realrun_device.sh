#!/usr/bin/env bash
# One device call for the real pipeline: allocator probe, gpu-run's GPU tests, a slice of
# the validation grid (validate, resumable), the fault run. Everything lands in $OUT as
# at most 8 files (the device tool's limit): all.tgz holds every log and output.
# Usage (device machine, repo root, .whl next to it): bash benchmarks/realrun_device.sh
#   env: WHAT="probe tests grid faults"  ONLY=<config glob>  GRID_TIMEOUT=s  CUZK_COMMIT=sha
#   (give CUZK_COMMIT from the machine that sends the tree: git on the device machine does
#   not know the commit of the working tree it was sent)
#   WHAT may also name: gputests (every GPU test, tests/gpu_prover; after the grid),
#   asm (benchmarks/assembler_timing.py), calib (gpu-run logs
#   of one worker at 2^16..2^24 -> calibrate -> the profile `grid` is priced with; and the
#   round trip: a profile from the 2^18 log predicts a 2-worker run, issue 11), diag (where
#   the pipeline's time goes: allocator call times, 15 gpu-run configurations with
#   per-step timings, docs/validation.md), bench (gpu_bench.py), prod (issue 24: the
#   synthetic key's GPU test, gpu-run at 2^27 with two workers and at 2^24, 2^25 with one,
#   host memory against its bound; PROD_RUNS="LOG2:WORKERS ...", PROD_BUDGET=s)
set -uo pipefail
OUT=${OUT:-/tmp/out}
W=/tmp/realrun
mkdir -p "$OUT" "$W/logs"
WHAT=${WHAT:-probe tests grid faults}  # also: bench (gpu_bench.py prove stages at 2^16, 2^18)
WHL=${WHL:-../.whl}
PIP_LOG=$W/logs/pip.log
. benchmarks/device_env.sh  # the wheels, the cuzk_sim namespace, PYTHONPATH
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$W/logs/gpu.txt" 2>&1
nproc >> "$W/logs/gpu.txt"
lscpu > "$W/logs/lscpu.txt" 2>&1
# the card's clocks, temperature and power all through the call (is a later stage slower
# because the card is hotter?): logs/smi.csv, summarised per stage at the end
R=clocks_event_reasons.active  # the newer drivers' name; older ones: clocks_throttle_reasons
nvidia-smi --query-gpu=$R --format=csv,noheader > /dev/null 2>&1 || R=clocks_throttle_reasons.active
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw,$R \
  --format=csv,noheader -lms 500 > "$W/logs/smi.csv" 2>&1 &
SMI=$!
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$W/logs/steps.txt"; }
if [[ " $WHAT " == *" probe "* ]]; then
  stamp probe
  timeout ${PROBE_TIMEOUT:-90} python3 -P benchmarks/allocator_probe.py --json "$W/probe.json" \
    > "$W/logs/probe.log" 2>&1; stamp "probe rc=$?"
fi
if [[ " $WHAT " == *" tests "* ]]; then
  stamp tests
  # gpu-run's tests, and (TESTS_MORE) more of tests/gpu_prover, e.g. the proof tests
  timeout ${TEST_TIMEOUT:-180} python3 -P -m pytest tests/gpu_prover/test_gpu_run.py ${TESTS_MORE:-} \
    -q -p no:cacheprovider --durations=6 > "$W/logs/tests.log" 2>&1; stamp "tests rc=$?"
fi
if [[ " $WHAT " == *" calib "* ]]; then
  # the logs loop (issues 9, 11): gpu-run logs of one worker at four domains, a second
  # one-worker process at 2^18 and two-worker runs at 2^18 (b) and 2^16 -> calibrate ->
  # the profile the grid is priced with (the mean over processes and worker counts: a
  # process's GPU section moves ~4 % from the next one's, and two workers' Python
  # threads lengthen each other's short launches; docs/validation.md); and the round
  # trip: a profile from the 2^18 log alone predicts the 2-worker run b
  # (scenario-from-log -> run -> check)
  stamp calib
  C=$W/calib; mkdir -p "$C"
  B=scenarios/validation/base.toml
  ( set -x
    for lg in 16 18 20 24; do
      case $lg in 16|18) n=(--set 'workload[0].count=4');; 20) n=(--set 'workload[0].count=2');;
        24) n=(--set 'workload[0].count=1' --set 'workload[0].partitions=2');; esac
      python3 -P -m cuzk_sim gpu-run $B --set plan.gpu_prover.domain_log2=$lg "${n[@]}" \
        --log "$C/w1-$lg.log" --details "$C/w1-$lg.details.json" --json > "$C/w1-$lg.json"
    done
    python3 -P -m cuzk_sim gpu-run $B --set engine.gpus.gpu_workers_per_device=2 \
      --log "$C/b.log" --json > "$C/b.json"
    python3 -P -m cuzk_sim gpu-run $B --set engine.gpus.gpu_workers_per_device=2 \
      --set plan.gpu_prover.domain_log2=16 --set 'workload[0].count=4' \
      --log "$C/w2-16.log" --json > "$C/w2-16.json"
    python3 -P -m cuzk_sim gpu-run $B --set 'workload[0].count=4' \
      --log "$C/w1-18b.log" --json > "$C/w1-18b.json"
    # the key's uploads from pageable memory at the sizes the grid's pageable runs make
    # (25 and 50 MB: no other log has them; the driver's pageable rate moves with size)
    python3 -P -m cuzk_sim gpu-run $B --set engine.gpus.gpu_workers_per_device=2 \
      --set plan.gpu_prover.key_pinned=false --set 'workload[0].count=4' \
      --log "$C/w2-18p.log" --json > "$C/w2-18p.json"
    python3 -P -m cuzk_sim calibrate "$C"/w1-16.log "$C"/w2-16.log "$C"/w1-18.log \
      "$C"/w1-18b.log "$C"/b.log "$C"/w2-18p.log "$C"/w1-20.log "$C"/w1-24.log \
      --base h200 --gpu-model "NVIDIA H200" -o "$C/h200-pipeline.toml"
    python3 -P -m cuzk_sim calibrate "$C/w1-18.log" --base h200 --gpu-model "NVIDIA H200" \
      -o "$C/h200-from-18.toml"
    python3 -P -m cuzk_sim scenario-from-log "$C/b.log" --profile "$C/h200-from-18.toml" \
      --plan-from $B -o "$C/b.toml"
    python3 -P -m cuzk_sim run "$C/b.toml"
    python3 -P -m cuzk_sim check "$C/b.toml" ) > "$W/logs/calib.log" 2>&1
  stamp "calib rc=$?"; grep -E "predicted|observed|PASS|FAIL" "$W/logs/calib.log" | tail -6
fi
if [[ " $WHAT " == *" grid "* ]]; then
  stamp grid
  # priced with the profile the calib stage fitted on this card, when it ran
  PROF=()
  [ -f "$W/calib/h200-pipeline.toml" ] && PROF=(--profile "$W/calib/h200-pipeline.toml")
  timeout ${GRID_TIMEOUT:-420} python3 -P -m cuzk_sim validate scenarios/validation/h200-grid.toml \
    --out "$W/grid" ${ONLY:+--only "$ONLY"} "${PROF[@]}" > "$W/logs/grid.log" 2>&1
  stamp "grid rc=$?"
  python3 -P -m cuzk_sim validate scenarios/validation/h200-grid.toml --out "$W/grid" \
    --report-only > /dev/null 2>&1
fi
if [[ " $WHAT " == *" gputests "* ]]; then
  # every test of tests/gpu_prover in three invocations: the MSM switch tests (NVRTC
  # compiles, CPU-bound: a module per switch setting) in a second process beside the rest,
  # then test_gpu_run.py alone (its tight cards count the device memory another process's
  # context would take)
  stamp gputests
  export CUZK_HYPOTHESIS_PROFILE=${GPUTEST_PROFILE:-ci}
  sw=tests/gpu_prover/test_msm_kernel_switches.py gr=tests/gpu_prover/test_gpu_run.py
  timeout ${GPUTEST_TIMEOUT:-420} python3 -P -m pytest $sw -q -p no:cacheprovider \
    --durations=5 > "$W/logs/gputests-switches.log" 2>&1 &
  sw_pid=$!
  timeout ${GPUTEST_TIMEOUT:-420} python3 -P -m pytest tests/gpu_prover --ignore=$sw --ignore=$gr \
    -q -p no:cacheprovider --durations=8 > "$W/logs/gputests.log" 2>&1; stamp "gputests rc=$?"
  wait $sw_pid; stamp "gputests switches rc=$?"
  timeout ${GPUTEST_TIMEOUT:-420} python3 -P -m pytest $gr -q -p no:cacheprovider \
    --durations=3 > "$W/logs/gputests-gpu-run.log" 2>&1; stamp "gputests gpu-run rc=$?"
  tail -n 1 "$W"/logs/gputests*.log
fi
if [[ " $WHAT " == *" asm "* ]]; then  # the host assembly: arithmetic vs the pool's round trip
  stamp asm
  timeout 60 python3 -P benchmarks/assembler_timing.py --json "$W/asm.json" > "$W/logs/asm.log" 2>&1
  stamp "asm rc=$?"; cat "$W/logs/asm.log"
fi
if [[ " $WHAT " == *" diag "* ]]; then
  # where the pipeline's time goes (issue 9): allocator call times, then gpu-run of the
  # base scenario at 2^18, 8 proofs x 4 partitions, per configuration and pipeline tune
  stamp diag
  D=$W/diag; mkdir -p "$D"
  if [ -z "${DIAG_ONLY:-}" ]; then
    timeout 90 python3 -P benchmarks/allocator_timing.py --json "$D/alloc-timing.json" \
      > "$W/logs/alloc-timing.log" 2>&1; stamp "alloc-timing rc=$?"
  fi
  diag() {  # name, tune, --set arguments...; DIAG_ONLY="name name ..." runs only those
    local name=$1 tune=$2; shift 2
    [ -n "${DIAG_ONLY:-}" ] && [[ " $DIAG_ONLY " != *" $name "* ]] && return 0
    CUZK_SIM_PIPELINE_TUNE=$tune timeout ${DIAG_TIMEOUT:-60} python3 -P -m cuzk_sim gpu-run \
      scenarios/validation/base.toml --set 'workload[0].count=8' "$@" --json \
      --details "$D/$name.details.json" --log "$D/$name.log" --trace "$D/$name.trace.json" \
      > "$D/$name.json" 2> "$D/$name.err"; stamp "diag $name rc=$?"
  }
  W2=(--set engine.gpus.gpu_workers_per_device=2)
  diag w1 ""
  diag w2 "" "${W2[@]}"
  diag w2-switch switch "${W2[@]}"
  diag w1-local local
  diag w2-local local "${W2[@]}"
  diag w2-nomutex "" "${W2[@]}" --set variant.mutex_scope=none
  diag w2-nomutex-streams streams "${W2[@]}" --set variant.mutex_scope=none
  diag w2-nomutex-all streams,switch "${W2[@]}" --set variant.mutex_scope=none
  diag w2-sync "" "${W2[@]}" --set plan.gpu_prover.allocator=sync
  diag w2-async "" "${W2[@]}" --set plan.gpu_prover.allocator=async
  diag w1-tight "" --set "hardware.vram=1686 MiB"
  diag w2-prestage "" "${W2[@]}" --set plan.gpu_prover.prestage=true
  diag w2-prestage-streams streams "${W2[@]}" --set plan.gpu_prover.prestage=true
  diag w3 "" --set engine.gpus.gpu_workers_per_device=3
  diag w1-16 "" --set plan.gpu_prover.domain_log2=16
  diag w2-16 "" "${W2[@]}" --set plan.gpu_prover.domain_log2=16
  diag w2-16-local local "${W2[@]}" --set plan.gpu_prover.domain_log2=16
  # noaffinity: worker threads and assembler processes on any core (default: disjoint
  # physical cores)
  diag w1-anycore noaffinity
  diag w2-anycore noaffinity "${W2[@]}"
  diag w3-anycore noaffinity --set engine.gpus.gpu_workers_per_device=3
  diag w2-16-anycore noaffinity "${W2[@]}" --set plan.gpu_prover.domain_log2=16
  # serialtail: a partition's five MSM tails in one assembler process, one after another
  # (default: side by side in three, gpu/assembler.py finish_in_pool)
  diag w1-serialtail serialtail
  diag w2-serialtail serialtail "${W2[@]}"
  diag w1-16-serialtail serialtail --set plan.gpu_prover.domain_log2=16
  python3 - "$D" > "$W/logs/diag-summary.txt" 2>&1 <<'PY'
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
for f in sorted(d.glob("*.details.json")):
    name = f.name.removesuffix(".details.json")
    try:
        r = json.loads((d / f"{name}.json").read_text()); det = json.loads(f.read_text())
    except Exception as e:
        print(name, "unreadable", e); continue
    steps = det.get("steps", {})
    gpu = sum(v["n"] * v["gpu_ms"] for v in steps.values())
    idle = sum(v["n"] * v["idle_before_ms"] for v in steps.values())
    parts = r.get("partitions_completed") or 1
    print(f"{name:24s} s/proof {r.get('seconds_per_proof')!s:8.8} parts {parts} "
          f"gpu/part {gpu/parts:7.1f} ms idle/part {idle/parts:6.1f} ms "
          f"alloc/part {det.get('host_alloc_ms_per_partition', 0):6.2f} ms "
          f"peak {r.get('peak_vram_bytes')} wall {r.get('sim_time_s')}")
PY
  cat "$W/logs/diag-summary.txt"
fi
if [[ " $WHAT " == *" bench "* ]]; then
  stamp bench
  timeout ${BENCH_TIMEOUT:-90} python3 -P benchmarks/gpu_bench.py --quick --max-log2 18 \
    --json "$W/bench.json" > "$W/logs/bench.log" 2>&1; stamp "bench rc=$?"
fi
if [[ " $WHAT " == *" prod "* ]]; then
  # issue 24, production scale: the synthetic key's GPU test, then gpu-run of one proof of
  # two partitions (the base scenario: key pinned, no msm_chunk) per PROD_RUNS entry
  # LOG2:WORKERS (default a 2^27 run of two workers, then one worker at 2^24 and 2^25),
  # each with --log/--details (host memory: peak RSS against the bound, the key's time);
  # a run is skipped once the stage has used PROD_BUDGET seconds
  stamp prod
  P=$W/prod; mkdir -p "$P"
  grep -E "MemTotal|MemAvailable" /proc/meminfo > "$P/meminfo.txt"; ulimit -l >> "$P/meminfo.txt"
  timeout ${KEYGEN_TEST_TIMEOUT:-90} python3 -P -m pytest tests/gpu_prover/test_keygen.py -q \
    -p no:cacheprovider > "$W/logs/keygen-test.log" 2>&1; stamp "keygen test rc=$?"
  for cfg in ${PROD_RUNS:-27:2 24:1 25:1}; do
    lg=${cfg%:*} w=${cfg#*:} name=w${cfg#*:}-${cfg%:*}
    if (( $(date +%s) - t0 > ${PROD_BUDGET:-330} )); then stamp "prod $name skipped (time)"; continue; fi
    case $lg in 27) lim=${PROD_TIMEOUT:-280};; 26) lim=120;; *) lim=80;; esac
    timeout $lim python3 -P -m cuzk_sim gpu-run scenarios/validation/base.toml \
      --set plan.gpu_prover.domain_log2=$lg --set engine.gpus.gpu_workers_per_device=$w \
      --set 'workload[0].count=1' --set 'workload[0].partitions=2' --log "$P/$name.log" \
      --details "$P/$name.details.json" --json > "$P/$name.json" 2> "$P/$name.err"
    stamp "prod $name rc=$?"
  done
  python3 benchmarks/prod_summary.py "$P" >"$W/logs/prod-summary.txt" 2>&1
  cat "$W/logs/prod-summary.txt"; tail -3 "$W/logs/keygen-test.log"
fi
if [[ " $WHAT " == *" faults "* ]]; then
  stamp faults
  timeout ${FAULT_TIMEOUT:-120} python3 -P -m cuzk_sim gpu-run scenarios/validation/faults.toml \
    --verify --fault oom:random:0.003 --fault oom:msm_b_g2.points:0.05 --fault exception:0.003 \
    --fault shrink:1:654MiB --fault-seed 1 --details "$W/faults.json" --log "$W/faults.log" \
    > "$W/logs/faults.txt" 2>&1; stamp "faults rc=$?"
fi
stamp done
kill $SMI 2>/dev/null
python3 - "$W/logs/smi.csv" "$W/logs/steps.txt" > "$W/logs/smi-summary.txt" 2>&1 <<'PY'
import sys, statistics as st
from datetime import datetime
rows = []
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.split(",")]
    try:
        t = datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f")
        rows.append((t, float(f[1].split()[0]), float(f[3]), float(f[4].split()[0]), f[5]))
    except (ValueError, IndexError):
        continue
if rows:
    t0 = rows[0][0]
    for a in range(0, int((rows[-1][0] - t0).total_seconds()) + 1, 30):
        w = [r for r in rows if a <= (r[0] - t0).total_seconds() < a + 30]
        busy = [r for r in w if r[3] > 150] or w
        if w:
            print(f"{a:5d}-{a + 30:<5d}s  SM MHz median {st.median(r[1] for r in busy):6.0f} "
                  f"min {min(r[1] for r in busy):5.0f}  temp {max(r[2] for r in w):3.0f} C  "
                  f"power max {max(r[3] for r in w):5.0f} W  reasons {sorted({r[4] for r in busy})}")
PY
cat "$W/logs/smi-summary.txt"
tar czf "$OUT/all.tgz" -C "$W" . 2>/dev/null
for f in logs/prod-summary.txt logs/keygen-test.log faults.json bench.json logs/asm.log grid/report.md logs/steps.txt logs/diag-summary.txt logs/smi-summary.txt calib/h200-pipeline.toml logs/calib.log; do
  [ -f "$W/$f" ] && cp "$W/$f" "$OUT/$(echo "$f" | tr / -)"
done
tail -5 "$W/logs/tests.log" 2>/dev/null; tail -4 "$W/logs/gputests.log" 2>/dev/null
tail -12 "$W/logs/grid.log" 2>/dev/null
cat "$W/logs/steps.txt"
