"""The configuration a log ran, as a scenario `cuzk-sim run` replays.

What a cuzk log tells (docs/logs.md): GPUs and workers per GPU (the worker start-up
lines), proof kinds and counts (partitions per job), when each job's synthesis began,
whether pre-staging ran (prestage_setup lines), whether a mutex guarded the GPU
sections (pre_lock / mutex_held lines; concurrent sections), whether everything went
to GPU 0, whether B_G2 ran on the CPU (b_g2_msm_ms), PCE loads and failed saves, and
daemon restarts. It does not tell the card's VRAM (give `--vram` or the profile's card)
nor when a proof was submitted: a job's arrival is its first SYNTH_START, except that
a job whose synthesis began when another job's ended was waiting in the queue, so it
counts as arriving with the first job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cuzk_sim.logs.timeline import CIRCUIT_KINDS, Analyzer

MAX_WORKLOAD_ENTRIES = 200
MEMORY_AWARE_MARGIN = "512 MiB"  # SAFETY_MARGIN of the Phase 9 pre-staging check
QUEUED_WITHIN_MS = 50


@dataclass
class LoggedConfig:
    gpus: int
    workers_per_device: int
    prestage: str  # off | outside_mutex | under_mutex
    memory_aware: bool  # prestage_vram lines: a cudaMemGetInfo check with 512 MiB margin
    mutex_scope: str  # device | none
    routing: str  # assigned | device0
    b_g2_msm: str  # cpu | gpu
    pool_release_threshold: str  # max | 0 B
    pce_cached: list[str]
    pce_writable: bool
    restarts_s: list[float]
    workload: list[dict] = field(default_factory=list)
    observed_spp: float | None = None
    proofs_done: int = 0
    kinds: dict[str, int] = field(default_factory=dict)


def logged_config(a: Analyzer) -> LoggedConfig:
    gpus_of_workers = a.workers.values()
    gpus = max(list(gpus_of_workers) + list(a.cpp_gpus) + [0]) + 1
    per_gpu: dict[int, int] = {}
    for g in a.workers.values():
        per_gpu[g] = per_gpu.get(g, 0) + 1
    wpd = max(per_gpu.values(), default=1)
    v = a.variant
    staged = any(k.startswith("prestage_") for k in v)
    # Phase 9's final engine (c4effc85) checks cudaMemGetInfo first (the prestage_vram
    # line), allocates under the mutex and frees d_bc after the NTT phase
    memory_aware = bool(v.get("prestage_vram"))
    under = v.get("prestage_under", 0) > v.get("prestage_outside", 0)
    prestage = "off" if not staged else "under_mutex" if under or memory_aware else "outside_mutex"
    unguarded = a.book.has("concurrent_gpu_sections") or (
        not v.get("mutex_lines") and v.get("ntt_lines", 0) > 0 and wpd > 1
    )
    loaded = sorted(CIRCUIT_KINDS.get(c, c) for c in a.pce_loaded if c in CIRCUIT_KINDS)
    return LoggedConfig(
        gpus=gpus,
        workers_per_device=wpd,
        prestage=prestage,
        memory_aware=memory_aware,
        mutex_scope="none" if unguarded else "device",
        routing="device0" if a.routed_to_gpu0() else "assigned",
        b_g2_msm="cpu" if v.get("b_g2_cpu") or not v.get("ntt_lines") else "gpu",
        # ensure_pool_threshold logs once per GPU beside the d_a cache; a d_a cache line
        # without it: a binary that left the CUDA default (0, idle bytes go back)
        pool_release_threshold="0 B" if v.get("d_a_cache") and not v.get("pool_max") else "max",
        pce_cached=loaded,
        pce_writable=not a.pce_save_failed,
        restarts_s=sorted(t for r, t in a.run_offsets.items() if r > 0),
        workload=_workload(a),
        observed_spp=a.observed_seconds_per_proof(),
        proofs_done=a.done_n,
        kinds=dict(a.jobs_per_kind),
    )


def _workload(a: Analyzer) -> list[dict]:
    by_kind: dict[str, list[dict]] = {}
    for j in a.jobs_kept:
        if j["first_ms"] is None or j["kind"].startswith("unknown"):
            continue
        by_kind.setdefault(j["kind"], []).append(j)
    # moments a waiting job could have been let in: another job's synthesis end or
    # its last GPU pickup (the synthesis lookahead frees a slot then)
    synth_ends = sorted(
        j["offset_s"] * 1000 + t
        for j in a.jobs_kept
        for t in (j["synth_end_ms"], j["last_pickup_ms"])
        if t is not None
    )
    out: list[dict] = []
    for kind, jobs in sorted(by_kind.items()):
        jobs.sort(key=lambda j: j["offset_s"] * 1000 + j["first_ms"])
        starts = [j["offset_s"] * 1000 + j["first_ms"] for j in jobs]
        first = starts[0]
        queued = all(
            s - first <= 1000 or any(abs(s - e) <= QUEUED_WITHIN_MS for e in synth_ends)
            for s in starts
        )
        total = max(a.jobs_per_kind.get(kind, len(jobs)), len(jobs))
        default_parts = {"porep": 10, "snapdeals": 16}.get(kind, 1)
        complete = [j["partitions"] for j in jobs if not j["failed"] and j["partitions_done"]]
        parts = max(complete) if complete else default_parts  # a failed job saw only some
        entry: dict = {"kind": kind}
        if parts != default_parts:
            entry["partitions"] = parts
        if queued:
            out.append({**entry, "count": total, "start": _seconds(first / 1000)})
        elif len(jobs) <= MAX_WORKLOAD_ENTRIES and total == len(jobs):
            out += [{**entry, "count": 1, "start": _seconds(s / 1000)} for s in starts]
        else:  # too many to list: the same count at the mean gap, as a Poisson stream
            gap = (starts[-1] - first) / max(len(starts) - 1, 1) / 1000
            out.append(
                {
                    **entry,
                    "count": total,
                    "start": _seconds(first / 1000),
                    "every": _seconds(gap),
                    "arrival": "poisson",
                }
            )
    return out


def _seconds(s: float) -> str:
    return f"{s:.3f} s"


def scenario_doc(
    cfg: LoggedConfig, log_names: list[str], profile: str, vram: str | None, name: str
) -> dict:
    """The scenario as a TOML-ready dict (keys as cuzk_sim.scenario reads them)."""
    spp = cfg.observed_spp
    desc = (
        f"Replay of {', '.join(log_names)} (cuzk-sim scenario-from-log): "
        f"{cfg.gpus} GPU(s), {cfg.workers_per_device} worker(s) per GPU, "
        f"jobs {cfg.kinds}; observed "
        + (f"{spp:.3f} s/proof over {cfg.proofs_done} proofs." if spp else "no s/proof.")
    )
    hardware: dict = {"gpus": cfg.gpus}
    if vram:
        hardware["vram"] = vram
    doc: dict = {
        "name": name,
        "description": desc,
        "seed": 0,
        "on_oom": "continue",
        "profile": profile,
        "hardware": hardware,
        "engine": {
            "gpus": {"gpu_workers_per_device": cfg.workers_per_device},
            "pce": {"cache_writable": cfg.pce_writable, "cached": cfg.pce_cached},
        },
        "variant": {
            "prestage": cfg.prestage,
            **(
                {"free_d_bc_after_ntt": True, "memory_aware_margin": MEMORY_AWARE_MARGIN}
                if cfg.memory_aware
                else {}
            ),
            "mutex_scope": cfg.mutex_scope,
            "routing": cfg.routing,
            "b_g2_msm": cfg.b_g2_msm,
            "pool_release_threshold": cfg.pool_release_threshold,
        },
    }
    if cfg.restarts_s:
        doc["restarts"] = [_seconds(t) for t in cfg.restarts_s]
    doc["workload"] = cfg.workload or [{"kind": "porep", "count": 0}]
    if spp:
        doc["expect"] = {
            "seconds_per_proof": [_seconds(spp * 0.95), _seconds(spp * 1.05)],
        }
    return doc
