#!/usr/bin/env bash
# One device call for issue 27 (races as probabilities): the racing configurations of the
# H200 grid, predictions first, then >= 10 real runs at each race cap; optionally three
# identical gpu-run processes for the jitter's between-run component. Logs in $OUT.
# Usage (device machine, repo root, .whl present): bash benchmarks/race_device_call.sh
# env: WHAT ("predict races", default; also "jitter": three identical one-worker gpu-run
#   processes at 2^18 -> calibrate -> a [jitter] table from runs of one code),
#   ONLY (config glob, default "w2-*": the detection picks the racing ones, see below),
#   RACE_TIMEOUT (s, default 540; the grid resumes: call again with the same $OUT/race
#   folder copied back to continue), CUZK_COMMIT (the sending tree's commit)
# The grid is priced with the bundled h200 profile (its [jitter] fitted from the committed
# logs, benchmarks/jitter_fit_h200.py); predictions.json is copied to $OUT before any real
# run, so the predictions are registered before the runs.
# Expected cost: ~3 s per real run of 10 proofs x 4 partitions at 2^18 (the grid of
# 2026-12-01); at commit of this script the model finds 3 racing configurations (the 2
# marked, w2-nomutex-18 and w2-prestage-aware-18, and w2-prestage-18 by its scan):
# 3 x 7 race caps x 10 repeats = 210 runs, ~11 minutes, plus the ordinary caps of those
# configurations (about 20 runs): two calls of RACE_TIMEOUT=540 on one warm machine
# (/tmp/racerun persists while the machine is held; the grid resumes where it stopped).
# The model's predictions take ~65 s of one core.
set -uo pipefail
OUT=${OUT:-/tmp/out}
W=/tmp/racerun
mkdir -p "$OUT" "$W/logs"
WHAT=${WHAT:-predict races}
. benchmarks/device_env.sh  # the wheels, the cuzk_sim namespace, PYTHONPATH
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/steps.txt"; }
SPEC=scenarios/validation/h200-grid.toml
G=$W/race
if [[ " $WHAT " == *" jitter "* ]]; then
  # the between-run component from runs of identical code: three processes, one config
  stamp jitter
  J=$W/jitter; mkdir -p "$J"
  for i in 1 2 3; do
    timeout 120 python3 -P -m cuzk_sim gpu-run scenarios/validation/base.toml \
      --set 'workload[0].count=4' --log "$J/w1-18-$i.log" --json > "$J/w1-18-$i.json" 2>&1
    stamp "jitter run $i rc=$?"
  done
  python3 -P -m cuzk_sim calibrate "$J"/w1-18-1.log "$J"/w1-18-2.log "$J"/w1-18-3.log \
    --base h200 --gpu-model "NVIDIA H200" -o "$J/h200-jitter.toml" > "$J/calibrate.log" 2>&1
  stamp "jitter calibrate rc=$?"; grep "^\[jitter\]" -A3 "$J/calibrate.log" | head -5
  tar czf "$OUT/jitter.tgz" -C "$W" jitter
fi
if [[ " $WHAT " == *" predict "* ]]; then
  stamp predict
  if [ ! -f "$G/predictions.json" ]; then
    python3 -P -m cuzk_sim validate $SPEC --out "$G" --predict-only > "$W/logs/predict.log" 2>&1
    stamp "predict rc=$?"
  fi
  cp "$G/predictions.json" "$OUT/race-predictions.json"  # registered before the runs
  python3 - "$G/predictions.json" <<'PY' | tee "$OUT/race-decisions.txt"
import json, sys
p = json.load(open(sys.argv[1]))
for d in p.get("races", []):
    print(f"{d['config']:24} {'RACING' if d['racing'] else 'no race':8} {d['why']}")
for r in p["runs"]:
    if r.get("race"):
        q = r["p_oom"]
        print(f"  {r['key']:34} vram {r['vram'] / 2**20:9.1f} MiB  model P(OOM) {q['p']:.3f} "
              f"({q['ooms']} of {q['replicas']})")
PY
fi
if [[ " $WHAT " == *" races "* ]]; then
  stamp races
  # only the configurations that race (the others' ordinary caps are the grid's business)
  RACING=$(python3 -c "import json,sys; print(' '.join(d['config'] for d in json.load(open(sys.argv[1]))['races'] if d['racing']))" "$G/predictions.json")
  stamp "racing: $RACING"
  end=$(( t0 + ${RACE_TIMEOUT:-540} ))
  for c in $RACING; do
    [[ "$c" == ${ONLY:-*} ]] || continue
    left=$(( end - $(date +%s) )); [ $left -le 10 ] && { stamp "out of time before $c"; break; }
    timeout $left python3 -P -m cuzk_sim validate $SPEC --out "$G" --only "$c" \
      >> "$W/logs/races.log" 2>&1
    stamp "races $c rc=$?"
  done
  python3 -P -m cuzk_sim validate $SPEC --out "$G" --report-only > /dev/null 2>&1
  cp "$G/report.md" "$OUT/race-report.md" 2>/dev/null
  cp "$G/race.png" "$OUT/race.png" 2>/dev/null
  sed -n '/## Races/,$p' "$G/report.md"
fi
tar czf "$OUT/all.tgz" -C "$W" . 2>/dev/null
stamp done
