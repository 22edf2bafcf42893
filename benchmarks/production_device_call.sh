#!/usr/bin/env bash
# One device call for issue 24 (production scale), within CALL_BUDGET seconds (370), its
# stages in the order STAGES names them ("runs s23"):
#  s23: the production benchmark stage of issue 23 (S23_CMD; default the production part
#     of benchmarks/issue23_device_call.sh: benchmarks/production_bench.py), at most
#     S23_TIMEOUT (150) s and never more than leaves RUNS_MIN (10) s for what comes after;
#  runs: benchmarks/production_runs.py in one process, at most RUNS_LIMIT s (default: all
#     that is left) (so the grid reuses the 2^27 key
#     and inputs the first run made): gpu-run of one proof of two 2^27 partitions with two
#     workers (the base scenario: PoRep witness shape, key pinned, no msm_chunk) with
#     --log/--details (peak RSS against the bound, the key's making time, s/proof and peak
#     VRAM against the model), then `validate scenarios/validation/h200-production.toml`
#     resumed from GRID_SEED (the predictions.json and real.jsonl committed before the call)
#     until the budget ends; the runs it finished are in grid/real.jsonl (resumed later).
# Everything lands in $OUT as at most 8 files: all.tgz (every log and output) and the
# summaries. Usage (device machine, in the copied tree, wheels in WHL):
#   WHL=../.whl-s24 CUZK_COMMIT=<sha> bash benchmarks/production_device_call.sh
#   env: STAGES ("runs s23"), ORDER (the runs stage's order: "w2-27 grid"; e.g. "grid w2-26"),
#   GRID_SEED (grid-seed), DEVICE (real; dry-run: a smoke test of
#   the script without a GPU)
set -uo pipefail
OUT=${OUT:-/tmp/out}
W=/tmp/prodcall
mkdir -p "$OUT" "$W/logs" "$W/prod" "$W/s23" "$W/grid"
WHL=${WHL:-../.whl}
PIP_LOG=$W/logs/pip.log
. benchmarks/device_env.sh # the wheels, the cuzk_sim namespace, PYTHONPATH
STAGES=${STAGES:-runs s23}
LIMIT=${CALL_BUDGET:-370}
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$W/logs/steps.txt"; }
left() { echo $((LIMIT - ($(date +%s) - t0))); }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >"$W/logs/gpu.txt" 2>&1
grep -E "MemTotal|MemAvailable" /proc/meminfo >>"$W/logs/gpu.txt"
nproc >>"$W/logs/gpu.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,temperature.gpu,power.draw,memory.used \
  --format=csv,noheader -lms 1000 >"$W/logs/smi.csv" 2>&1 &
SMI=$!
stamp "start (budget ${LIMIT} s)"

stage_s23() {
  lim=$(($(left) - ${RUNS_MIN:-10}))
  ((lim > ${S23_TIMEOUT:-150})) && lim=${S23_TIMEOUT:-150}
  if ((lim > 30)); then
    CMD=${S23_CMD:-python3 benchmarks/production_bench.py --json $W/s23/production.json}
    stamp "s23: $CMD (limit $lim s)"
    timeout -k 5 "$lim" bash -c "$CMD" >"$W/s23/s23.log" 2>&1
    stamp "s23 rc=$?"
    tail -32 "$W/s23/s23.log"
  else
    stamp "s23 skipped (time)"
  fi
}

stage_runs() {
  P=$W/prod G=$W/grid SEED=${GRID_SEED:-grid-seed}
  [ -f "$SEED/predictions.json" ] && cp "$SEED/predictions.json" "$G/"
  [ -f "$SEED/real.jsonl" ] && cp "$SEED/real.jsonl" "$G/"
  lim=$(($(left) - 15))
  ((${RUNS_LIMIT:-0} > 0 && lim > ${RUNS_LIMIT:-0})) && lim=$RUNS_LIMIT
  stamp "runs (limit $lim s)"
  timeout -k 5 "$lim" python3 -P benchmarks/production_runs.py "$P" "$G" --device "${DEVICE:-real}" \
    --order "${ORDER:-w2-27 grid}" \
    >"$W/logs/runs.log" 2>"$W/logs/runs.err"
  stamp "runs rc=$?"
  python3 benchmarks/prod_summary.py "$P" >"$W/logs/prod-summary.txt" 2>&1
  grep -E "CUZK_SIM_STEP: upload_(a|bc|witness) " "$P"/w2-*.log >>"$W/logs/prod-summary.txt"
  cat "$W/logs/prod-summary.txt"
  python3 -P -m cuzk_sim validate scenarios/validation/h200-production.toml --out "$G" \
    --report-only >"$W/logs/grid-report.log" 2>&1
  grep -E "#[0-9]+: model|rc=" "$W/logs/runs.log"
}

for stage in $STAGES; do
  "stage_$stage"
done

stamp done
kill $SMI 2>/dev/null
tar czf "$OUT/all.tgz" -C "$W" . 2>/dev/null
for f in logs/prod-summary.txt logs/steps.txt logs/runs.err grid/report.md grid/real.jsonl s23/s23.log s23/production.json; do
  [ -f "$W/$f" ] && cp "$W/$f" "$OUT/$(echo "$f" | tr / -)"
done
cat "$W/logs/steps.txt"
