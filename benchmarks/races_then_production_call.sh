#!/usr/bin/env bash
# One device call that runs the race call (benchmarks/race_device_call.sh) and then the
# production call (benchmarks/production_device_call.sh) in the time left, both on one
# warm machine, and packs what each wrote into the 8 files a call may bring back:
#   races.tgz, production.tgz   each part's whole $OUT (reports, real runs, logs)
#   race-report.md, grid-report.md, prod-summary.txt, steps.txt   the summaries
# Usage (device machine, repo root): PRED=... GRID_SEED=... CUZK_COMMIT=<sha> \
#   bash benchmarks/races_then_production_call.sh
# env: RACE_END (s of the call the races may use, default 200), CALL_END (s of the call
#   both may use, default 570), and each part's own variables (PRED, WHL, GRID_SEED,
#   ORDER, STAGES, DEVICE); SKIP_RACES=1 runs the production part alone.
set -uo pipefail
FINAL=${OUT:-/tmp/out}
W=/tmp/two
mkdir -p "$FINAL" "$W/race" "$W/prod"
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$FINAL/steps.txt"; }
if [ "${SKIP_RACES:-0}" != 1 ]; then
  stamp "races (until ${RACE_END:-200} s)"
  OUT=$W/race RACE_END=${RACE_END:-200} bash benchmarks/race_device_call.sh >"$W/race.txt" 2>&1
  stamp "races rc=$?"
fi
left=$((${CALL_END:-570} - ($(date +%s) - t0)))
stamp "production (budget $left s)"
OUT=$W/prod CALL_BUDGET=$left bash benchmarks/production_device_call.sh >"$W/prod.txt" 2>&1
stamp "production rc=$?"
tar czf "$FINAL/races.tgz" -C "$W" race race.txt 2>/dev/null
tar czf "$FINAL/production.tgz" -C "$W" prod prod.txt 2>/dev/null
cp "$W/race/report.md" "$FINAL/race-report.md" 2>/dev/null
cp "$W/prod/grid-report.md" "$FINAL/grid-report.md" 2>/dev/null
cp "$W/prod/logs-prod-summary.txt" "$FINAL/prod-summary.txt" 2>/dev/null
sed -n '/## Races/,$p' "$W/race/report.md" 2>/dev/null | grep -E "^\| w|within" | head -30
grep -E "^- " "$W/prod/grid-report.md" 2>/dev/null | head -8
cat "$FINAL/prod-summary.txt" 2>/dev/null | head -5
stamp done
