#!/usr/bin/env bash
# One device call of three parts, each bounded, all on one warm machine:
#   1. GPU tests of the pipeline paths changed since the last whole-suite run (TESTS,
#      default below) and a real gpu-run at 2^20 (two workers, the table as a user sees it)
#   2. benchmarks/pageable_probe.py (issue 24: what sets the pageable copies' rate),
#      default and after 48 GiB pinned and freed (--churn-gib)
#   3. the race call (benchmarks/race_device_call.sh) when PRED names predictions
#      registered before the call (issue 27), until RACE_END s after its own start
# Everything lands in $OUT as at most 8 files: checks.txt, gpu-run.txt, pageable.json,
# pageable-churn.json, probe.txt, races.tgz, race-report.md, steps.txt.
# Usage (device machine, repo root): WHL=.whl-s28 [PRED=...] [RACE_END=200] \
#   CUZK_COMMIT=<sha> bash benchmarks/checks_probe_races_call.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}
W=/tmp/cpr
mkdir -p "$OUT" "$W"
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$OUT/steps.txt"; }
PIP_LOG=$W/pip.log
. benchmarks/device_env.sh
stamp "wheels installed (commit ${CUZK_COMMIT:-unknown})"
TESTS=${TESTS:-"tests/gpu_prover/test_gpu_run.py tests/validation/test_failed_partitions.py \
tests/validation/test_key_held_by_an_earlier_run.py tests/cli/test_gpu_run_unmeasured_figures.py \
tests/cli/test_two_vram_totals.py tests/validation/test_host_memory.py"}
# shellcheck disable=SC2086
timeout ${TEST_TIMEOUT:-90} python3 -P -m pytest -q -p no:cacheprovider -x $TESTS \
  >"$OUT/checks.txt" 2>&1
stamp "GPU tests rc=$? ($(tail -1 "$OUT/checks.txt"))"
timeout 60 python3 -P -m cuzk_sim gpu-run scenarios/validation/base.toml \
  --set plan.gpu_prover.domain_log2=20 --set engine.gpus.gpu_workers_per_device=2 \
  >"$OUT/gpu-run.txt" 2>&1
stamp "gpu-run 2^20 rc=$?"
timeout 80 python3 -P benchmarks/pageable_probe.py --json "$OUT/pageable.json" \
  --budget ${PROBE_BUDGET:-35} >"$OUT/probe.txt" 2>&1
stamp "pageable probe rc=$?"
# page-locking 48 GiB alone takes 10-50 s at the 1-6.6 GiB/s measured on the H200 (it ran
# out of a 40 s timeout at 21:11, docs/validation/h200-2026-12-03-production/pageable-probe-2111)
timeout ${CHURN_TIMEOUT:-100} python3 -P benchmarks/pageable_probe.py \
  --json "$OUT/pageable-churn.json" --budget 15 --churn-gib 48 >>"$OUT/probe.txt" 2>&1
stamp "pageable probe (churn) rc=$?"
if [ -n "${PRED:-}" ] && [ -f "$PRED" ]; then
  OUT=$W/race RACE_END=${RACE_END:-200} bash benchmarks/race_device_call.sh >"$W/race.txt" 2>&1
  stamp "races rc=$?"
  tar czf "$OUT/races.tgz" -C "$W" race race.txt 2>/dev/null
  cp "$W/race/report.md" "$OUT/race-report.md" 2>/dev/null
  sed -n '/## Races/,$p' "$W/race/report.md" 2>/dev/null | grep -E "^\| w|within" | head -30
fi
stamp done
