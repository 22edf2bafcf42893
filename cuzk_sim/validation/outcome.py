"""What one recorded real run says, read from its record (`real`: the SimResult's JSON;
`details`: what only a real run has): its verdict -- OOM, fits, or an error -- and its
peak split into the context and the bytes above it.

The verdict: a run whose partitions failed never fits. The pipeline records an OomEvent
for every out-of-memory error it sees, but records written before it did (grid call
1808: w1-chunk-27, every partition failed with `CUDADriverError: CUDA_ERROR_OUT_OF_MEMORY`
at a kernel launch and the run said `oom: false`) carry the failure only in
`details.failed_reasons`: an out-of-memory reason of any layer makes the run an OOM
(cuzk_sim/results/failures.py), any other reason an error, which counts neither as
agreement nor as a fit.

The peak: a real run's peak is its process's CUDA context (measured at the start:
`details.context_bytes`) plus what the prover's pools hold; the model's is the profile's
context plus the same. The ballast leaves the prover exactly `hardware.vram - the model's
context` free, whatever the real context is, so the context is no part of what is
validated; the long-lived grid process's context (its kernels' local memory: 197 to
1527 MiB in call 1808) is not a fresh cuzk process's. So the peak criterion compares the
model's peak with the real peak on the card the run emulated: the real bytes above the
real context plus the model's context (docs/validation.md); the error of the raw totals
is reported beside it."""

from __future__ import annotations

from typing import Any

from cuzk_sim.results.failures import failed_outcome, is_oom_text


def real_verdict(record: dict[str, Any]) -> tuple[bool, str | None, str | None]:
    """(OOM, first OOM buffer, error) of one recorded run: an OOM where the result says
    so or a failed partition's reason is an out-of-memory error (buffer: the reason, in
    parentheses, when no OomEvent named one); else an error (its first reason) where
    partitions failed; else a fit."""
    res, det = record["real"], record.get("details") or {}
    if res["oom"]:
        return True, res["first_oom_buffer"], None
    reasons = [str(r) for r in det.get("failed_reasons") or []]
    kind = failed_outcome(reasons)
    if kind == "oom":
        why = next(r for r in reasons if is_oom_text(r))
        return True, f"({why.removeprefix('worker exception: ')})", None
    if kind == "error":
        return False, None, reasons[0]
    if res.get("partitions_failed"):
        return False, None, f"{res['partitions_failed']} partitions failed, no reason recorded"
    return False, None, None


def _peak_gpu(result: dict[str, Any]) -> tuple[str, int]:
    peaks = {str(g): int(v) for g, v in result["peak_vram_bytes"].items()}
    g = max(peaks, key=lambda k: peaks[k], default="0")
    return g, peaks.get(g, 0)


def contexts(record: dict[str, Any]) -> tuple[int, int] | None:
    """(the real context, the model's context) in bytes on the GPU of the real peak, or
    None where the record lacks them. The model's context is the run's spec context:
    `details.model_context_bytes`, or (records before it) achieved - start free + the
    room left for the context (gpu/card.py)."""
    det = record.get("details") or {}
    g, _ = _peak_gpu(record["real"])
    real = (det.get("context_bytes") or {}).get(g)
    model = (det.get("model_context_bytes") or {}).get(g)
    if model is None:
        achieved = (det.get("achieved_vram_bytes") or {}).get(g)
        start = (det.get("start_free_bytes") or {}).get(g)
        if achieved is None or start is None:
            return None
        model = achieved - start + (det.get("context_room_bytes") or {}).get(g, 0)
    return (int(real), int(model)) if real is not None else None


def peak_errors(model: dict[str, Any], record: dict[str, Any]) -> tuple[float, float] | None:
    """(predicted - real) / real of a run where neither side OOMed: (the criterion's: the
    real peak with the model's context in place of the real one, the raw totals'); without
    the contexts in the record both are the totals'. None where either OOMed or no peak
    was seen."""
    real = record["real"]
    oom, _, error = real_verdict(record)
    if model["oom"] or oom or error:
        return None
    _, rp = _peak_gpu(real)
    pp = max((int(v) for v in model["peak_vram_bytes"].values()), default=0)
    if not rp:
        return None
    total = (pp - rp) / rp
    ctx = contexts(record)
    if ctx is None or rp <= ctx[0]:
        return total, total
    emulated = rp - ctx[0] + ctx[1]  # the real bytes above its context, the model's context
    return (pp - emulated) / emulated, total
