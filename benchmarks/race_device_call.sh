#!/usr/bin/env bash
# One device call for issue 27 (races as probabilities): the racing configurations of the
# H200 grid, alone in scenarios/validation/h200-races.toml, run on the card against the
# model's P(OOM) registered before the call. Everything lands in $OUT (at most 8 files):
#   report.md, race.png, summary.json  `validate --report-only` of the runs made
#   real.jsonl.gz                       every real run (per-step GPU times in details)
#   predictions.json                    the predictions the runs were judged against
#   steps.txt, logs.tgz                 timings of the call; validate's log, nvidia-smi
# Usage (device machine, repo root, wheels next to it):
#   PRED=race-predictions.json bash benchmarks/race_device_call.sh
# env: PRED (the predictions committed before the call: docs/validation/<raw folder>/
#   predictions.json, carried next to the tree, since docs/ is not sent; without it the
#   call predicts first, ~20 s of one core), RACE_END (s after the start at which the
#   runs stop, default 258: the grid is resumable, every finished run is on disk),
#   CUZK_COMMIT (the sending tree's commit), WHL (the wheels' folder), DEVICE (real, the
#   default; dry-run checks this script on a machine without a GPU).
# Cost, from the committed runs of 2026-12-01 (docs/validation/h200-2026-12-01-3a949ba,
# grid-real.jsonl.gz): the first run of a process pays ~47 s (kernels compiled, the
# synthetic key made, one partition warmed up); a two-worker run at 2^18 then costs
# ~0.215 s per proof plus the model asked at the achieved card (~0.5 s for 10 proofs).
# A race run here is 2 proofs (8 partitions), stops at its first OOM, and asks the model
# once per cap (repeat 0): ~0.45 s. Rounds 1-10 run the 24 race caps (3 racing
# configurations and the mutex control, x 6 caps; ~11 s), rounds 11-20 the racing 18
# (~8 s): ~190 s for all 20 after the ~60 s start. Runs go repeat by repeat over all caps
# (grid.py, _race_rounds): when RACE_END comes first every cap has about as many
# repeats (>= 10 to count). The runs all happen in one process (as the grid's always
# have): each a fresh pipeline on pools emptied and a ballast placed anew, but one CUDA
# context, one synthetic key and one process's clocks; docs/validation.md says what
# correlation that leaves.
set -uo pipefail
OUT=${OUT:-/tmp/out}
W=/tmp/racerun
G=$W/race
mkdir -p "$OUT" "$G"
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$OUT/steps.txt"; }
PIP_LOG=$W/pip.log
. benchmarks/device_env.sh # the wheels, the cuzk_sim namespace, PYTHONPATH
stamp "wheels installed"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >"$W/gpu.txt" 2>&1
nproc >>"$W/gpu.txt"
R=clocks_event_reasons.active
nvidia-smi --query-gpu=$R --format=csv,noheader >/dev/null 2>&1 || R=clocks_throttle_reasons.active
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw,$R \
  --format=csv,noheader -lms 1000 >"$W/smi.csv" 2>&1 &
SMI=$!
SPEC=scenarios/validation/h200-races.toml
if [ -n "${PRED:-}" ] && [ -f "$PRED" ]; then
  cp "$PRED" "$G/predictions.json" # registered before the call: validate resumes from them
  stamp "predictions from $PRED"
else
  python3 -P -m cuzk_sim validate $SPEC --out "$G" --predict-only >"$W/predict.log" 2>&1
  stamp "predicted here rc=$?"
fi
cp "$G/predictions.json" "$OUT/predictions.json"
left=$((t0 + ${RACE_END:-258} - $(date +%s)))
stamp "race runs for at most $left s"
timeout -k 5 $left python3 -P -m cuzk_sim validate $SPEC --out "$G" --device "${DEVICE:-real}" \
  >"$W/validate.log" 2>&1
stamp "race runs rc=$? ($(wc -l <"$G/real.jsonl" 2>/dev/null || echo 0) runs)"
python3 -P -m cuzk_sim validate $SPEC --out "$G" --report-only >"$W/report.log" 2>&1
stamp "report rc=$?"
kill $SMI 2>/dev/null
for f in report.md race.png summary.json; do cp "$G/$f" "$OUT/" 2>/dev/null; done
gzip -c "$G/real.jsonl" >"$OUT/real.jsonl.gz" 2>/dev/null
sed -n '/## Races/,$p' "$G/report.md" 2>/dev/null | head -40
tail -3 "$W/validate.log"
tar czf "$OUT/logs.tgz" -C "$W" gpu.txt smi.csv pip.log validate.log report.log \
  $(cd "$W" && ls predict.log 2>/dev/null)
stamp done
