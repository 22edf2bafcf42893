"""The configuration a log ran, as a scenario `cuzk-sim run` replays.

What a cuzk log tells (docs/logs.md): GPUs and workers per GPU (the engine's
`initializing GPU workers` line, else its worker start-up lines, else the worker ids of
the TIMELINE lines), proof kinds and counts (partitions per job), when each job's
synthesis began, whether pre-staging ran (prestage_setup lines), whether a mutex guarded
the GPU sections (pre_lock / mutex_held lines; sections that overlapped without them),
whether everything went to GPU 0, whether B_G2 ran on the CPU (b_g2_msm_ms), the d_a
cache and the pool threshold, PCE loads and failed saves, and daemon restarts. It does
not tell the card's VRAM (give `--vram` or the profile's card) nor when a proof was
submitted: a job's arrival is its first SYNTH_START, except that a job whose synthesis
began when another job's ended was waiting in the queue, so it counts as arriving with
the first job, and the first job of a kind whose synthesis began when that kind's PCE
extraction ended arrived when the extraction began.

Every key written is either *stated* (with the lines that state it) or *assumed* (with
what was assumed and why); `scenario-from-log` prints both and the description lists the
assumed keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cuzk_sim.logs.timeline import CIRCUIT_KINDS, Analyzer

MAX_WORKLOAD_ENTRIES = 200
MEMORY_AWARE_MARGIN = "512 MiB"  # SAFETY_MARGIN of the Phase 9 pre-staging check
QUEUED_WITHIN_MS = 50
DEFAULT_PARTITIONS = {"porep": 10, "snapdeals": 16}
KIND_CIRCUIT = {v: k for k, v in CIRCUIT_KINDS.items()}


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
    devices: list[int] | None = None  # GPU ordinals when not 0..gpus-1
    d_a_cache: bool | None = None  # None: not stated (the plan's default)
    stated: dict[str, str] = field(default_factory=dict)  # key -> the evidence
    assumed: dict[str, str] = field(default_factory=dict)  # key -> what and why


def _where(line: tuple[int, str]) -> str:
    return f"line {line[0]}"


def _layout(a: Analyzer, cfg: dict, stated: dict, assumed: dict) -> None:
    """GPUs and workers per GPU, from the best line the log has."""
    if a.layout is not None:
        gpus, wpd, line = a.layout
        cfg["gpus"], cfg["workers_per_device"] = max(gpus) + 1, wpd
        if gpus != list(range(len(gpus))):
            cfg["devices"] = sorted(gpus)
        why = f"'initializing GPU workers' ({_where(line)}): gpus={gpus}"
        stated["hardware.gpus"] = why
        stated["engine.gpus.gpu_workers_per_device"] = why + f", gpu_workers_per_device={wpd}"
        return
    if a.workers:
        per_gpu: dict[int, int] = {}
        for g in a.workers.values():
            per_gpu[g] = per_gpu.get(g, 0) + 1
        top = max(list(a.workers.values()) + list(a.cpp_gpus))
        cfg["gpus"], cfg["workers_per_device"] = top + 1, max(per_gpu.values())
        first = _where(min(a.worker_lines.values()))
        why = f"{len(a.workers)} 'GPU worker started' lines ({first})"
        stated["hardware.gpus"] = why + f" name GPU(s) {sorted(set(a.workers.values()))}"
        stated["engine.gpus.gpu_workers_per_device"] = why + f": {per_gpu} per GPU"
        return
    named = sorted(a.cpp_gpus)
    gpus = max(named) + 1 if named else 1
    cfg["gpus"] = gpus
    if named:
        assumed["hardware.gpus"] = (
            f"{gpus}: the highest GPU the C++ lines name ({_where(a.cpp_gpus[named[-1]])}); "
            "no start-up lines"
        )
    else:
        assumed["hardware.gpus"] = "1: no start-up line and no per-GPU line names a GPU"
    ids = a.timeline_workers
    n = max(ids) + 1 if ids else 1
    cfg["workers_per_device"] = max(-(-n // gpus), 1)
    assumed["engine.gpus.gpu_workers_per_device"] = (
        f"{cfg['workers_per_device']}: TIMELINE lines name worker ids up to {n - 1} and the "
        f"engine numbers its workers GPU by GPU over {gpus} GPU(s); no start-up lines"
        if ids
        else "1: no start-up line and no TIMELINE worker id"
    )


def _mutex(a: Analyzer, gpus: int, timed: bool, stated: dict, assumed: dict) -> str:
    v = a.variant
    key = "variant.mutex_scope"
    if a.book.has("concurrent_gpu_sections"):
        f = a.book.by_id["concurrent_gpu_sections"]
        lines = ", ".join(_where(e) for e in f.evidence[:3])
        stated[key] = f"none: {lines} (GPU sections of one GPU at once, no mutex lines)"
        return "none"
    if v.get("mutex_lines"):
        if gpus <= 1 or a.routed_to_gpu0():
            stated[key] = "device: pre_lock / mutex_held lines; one GPU (device = global)"
        elif v.get("held_across_gpus"):
            stated[key] = "device: two GPUs were inside their mutexes at once"
        else:
            assumed[key] = (
                "device: mutex lines, but no two GPUs held theirs at once, so one global "
                "mutex cannot be told apart"
            )
        return "device"
    if timed:
        stated[key] = "none: the GPU sections printed timing lines but no mutex lines"
        return "none"
    assumed[key] = "device: the log has no GPU-section timing lines (the default)"
    return "device"


def _variant(a: Analyzer, cfg: dict, stated: dict, assumed: dict) -> None:
    v = a.variant
    # supraseal's split path printed its lines (prep_msm_ms for every partition)
    cuzk_timed = v.get("ntt_lines", 0) > 0 or v.get("prep_lines", 0) > 0
    timed = cuzk_timed or bool(a.step_stats)  # or our pipeline's CUZK_SIM_STEP lines
    unstaged = v.get("prestage_ok", 0) < a.closed_count  # a section took the d_a path
    finished = sum(j["partitions_done"] for j in a.jobs_kept) > 0  # a section completed
    staged = any(k.startswith("prestage_") for k in v)
    # Phase 9's final engine (c4effc85) checks cudaMemGetInfo first (the prestage_vram
    # line), allocates under the mutex and frees d_bc after the NTT phase
    cfg["memory_aware"] = bool(v.get("prestage_vram"))
    under = v.get("prestage_under", 0) > v.get("prestage_outside", 0)
    placed = under or cfg["memory_aware"] or (v.get("prestage_outside") and v.get("mutex_lines"))
    if staged and placed:
        cfg["prestage"] = "under_mutex" if under or cfg["memory_aware"] else "outside_mutex"
        stated["variant.prestage"] = "prestage_setup lines" + (
            " after the section's pre_lock line"
            if under
            else ", prestage_vram lines"
            if cfg["memory_aware"]
            else " before the section's pre_lock line"
        )
    elif staged:  # no mutex lines to place them by: without a mutex the two are one
        cfg["prestage"] = "outside_mutex"
        assumed["variant.prestage"] = (
            "outside_mutex: prestage_setup lines, but no mutex line to place them by"
        )
    else:
        cfg["prestage"] = "off"
        (stated if cuzk_timed else assumed)["variant.prestage"] = (
            "off: GPU sections printed CUZK_TIMING lines, none prestage_setup"
            if cuzk_timed
            else "off: no CUZK_TIMING lines to tell"
        )
    cfg["mutex_scope"] = _mutex(a, cfg["gpus"], timed, stated, assumed)
    if a.routed_to_gpu0():
        cfg["routing"] = "device0"
        stated["variant.routing"] = "device0: workers of several GPUs, C++ lines name GPU 0 only"
    else:
        cfg["routing"] = "assigned"
        if cfg["gpus"] <= 1 or len(a.cpp_gpus) > 1:
            stated["variant.routing"] = "assigned: " + (
                "one GPU" if cfg["gpus"] <= 1 else f"C++ lines name GPUs {sorted(a.cpp_gpus)}"
            )
        else:
            assumed["variant.routing"] = "assigned: no per-GPU C++ line names the GPUs used"
    # B_G2 on the CPU prints its line after the GPU part: only a finished section tells
    if v.get("b_g2_cpu"):
        cfg["b_g2_msm"] = "cpu"
        stated["variant.b_g2_msm"] = "cpu: b_g2_msm_ms lines"
    elif cuzk_timed and finished:
        cfg["b_g2_msm"] = "gpu"
        stated["variant.b_g2_msm"] = "gpu: CUZK_TIMING section lines, none b_g2_msm_ms"
    else:
        cfg["b_g2_msm"] = "cpu"
        assumed["variant.b_g2_msm"] = (
            "cpu (the default): no finished GPU section with CUZK_TIMING lines to tell"
        )
    # ensure_pool_threshold logs once per GPU beside the d_a cache; a d_a cache line
    # without it: a binary that left the CUDA default (0, idle bytes go back)
    if v.get("pool_max"):
        cfg["pool_release_threshold"] = "max"
        stated["variant.pool_release_threshold"] = "max: 'set pool release threshold' lines"
    elif v.get("d_a_cache"):
        cfg["pool_release_threshold"] = "0 B"
        stated["variant.pool_release_threshold"] = "0 B: d_a cache lines without a threshold line"
    else:
        cfg["pool_release_threshold"] = "max"
        assumed["variant.pool_release_threshold"] = "max: no d_a cache line to tell"
    if v.get("d_a_cache"):
        cfg["d_a_cache"] = True
        stated["variant.d_a_cache"] = "true: 'd_a_cache allocated' lines"
    elif cuzk_timed and unstaged and finished:
        cfg["d_a_cache"] = False
        stated["variant.d_a_cache"] = (
            "false: GPU sections took the unstaged path, no 'd_a_cache allocated' line"
        )
    elif cuzk_timed:
        assumed["variant.d_a_cache"] = "true: every section pre-staged (the d_a cache unused)"


def logged_config(a: Analyzer, pce_load_s: float | None = None) -> LoggedConfig:
    """pce_load_s: the profile's PCE load time, to date a job that waited for a load back
    to its arrival (the load line carries no duration)."""
    stated: dict[str, str] = {}
    assumed: dict[str, str] = {}
    cfg: dict = {}
    _layout(a, cfg, stated, assumed)
    _variant(a, cfg, stated, assumed)
    loaded = sorted(CIRCUIT_KINDS.get(c, c) for c in a.pce_loaded if c in CIRCUIT_KINDS)
    workload = _workload(a, stated, assumed, pce_load_s)
    kinds = {w["kind"] for w in workload}
    seen_pce = {CIRCUIT_KINDS.get(c) for c in a.circuits}
    unseen = sorted(kinds - seen_pce)
    if unseen:
        assumed["engine.pce.cached"] = f"not cached for {unseen}: no PCE line names them"
    if a.circuits:
        stated["engine.pce.cached"] = f"PCE lines name {sorted(a.circuits)}"
    if a.pce_save_failed:
        stated["engine.pce.cache_writable"] = "false: 'failed to save PCE to disk'"
    if a.engine_starts > 1:
        stated["restarts"] = f"{a.engine_starts - 1} later 'starting cuzk engine' line(s)"
    assumed["hardware.vram"] = "the log does not state it: --vram, else the profile's card"
    return LoggedConfig(
        **cfg,
        pce_cached=loaded,
        pce_writable=not a.pce_save_failed,
        restarts_s=sorted(t for r, t in a.run_offsets.items() if r > 0),
        workload=workload,
        observed_spp=a.observed_seconds_per_proof(),
        proofs_done=a.done_n,
        kinds=dict(a.jobs_per_kind),
        stated=stated,
        assumed=assumed,
    )


def _arrival_ms(a: Analyzer, job: dict, first_of_kind: bool, load_s: float | None) -> float:
    """When the job arrived: its first SYNTH_START, or the start of its kind's PCE
    extraction (load) when its synthesis began as that extraction (load) ended: it waited
    for it. A load line has no duration: the profile's load time, when given."""
    start = job["first_ms"]
    if first_of_kind:
        circuit = KIND_CIRCUIT.get(job["kind"]) or ""
        spans = list(a.pce_extract_spans.get(circuit, []))
        if load_s is not None:
            spans += [(r, e - load_s * 1000, e) for r, e in a.pce_load_ends.get(circuit, [])]
        for run, begin, end in spans:
            # TIMELINE truncates to whole ms: its SYNTH_START may read up to 1 ms early;
            # the duration counts back from it (extract_ms and the start are both ms)
            if run == job["run"] and -1 <= start - end <= QUEUED_WITHIN_MS:
                start = max(start - (end - begin), 0.0)
                break
    return job["offset_s"] * 1000 + start


def _workload(a: Analyzer, stated: dict, assumed: dict, load_s: float | None) -> list[dict]:
    by_kind: dict[str, list[dict]] = {}
    unknown = 0
    for j in a.jobs_kept:
        if j["first_ms"] is None:
            continue
        kind = j["kind"]
        if kind.startswith("unknown"):  # a partition count no kind has: PoRep's plan
            unknown += 1
            kind = "porep"
        by_kind.setdefault(kind, []).append(j)
    if unknown:
        assumed["workload.kind"] = (
            f"porep for {unknown} job(s) whose partition count names no kind (--kind sets it)"
        )
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
        starts = [_arrival_ms(a, j, i == 0, load_s) for i, j in enumerate(jobs)]
        first = starts[0]
        queued = all(
            s - first <= 1000 or any(abs(s - e) <= QUEUED_WITHIN_MS for e in synth_ends)
            for s in starts
        )
        total = max(a.jobs_per_kind.get(kind, len(jobs)), len(jobs))
        default_parts = DEFAULT_PARTITIONS.get(kind, 1)
        # cuzk starts every partition's synthesis of a job at once, so a failed job names
        # them all too; only a job seen from its GPU side alone may name fewer
        parts = max(j["partitions"] for j in jobs)
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
            assumed[f"workload.{kind}.arrival"] = (
                f"poisson at the mean gap: more than {MAX_WORKLOAD_ENTRIES} jobs to list"
            )
    if out:
        stated["workload"] = "kinds, counts and partitions from the TIMELINE jobs"
        assumed["workload.start"] = (
            "a job's first SYNTH_START (the log does not print submissions; a job let in "
            "as another's synthesis ended, or as its PCE extraction or load ended, is dated "
            "back; a load by the profile's PCE load time)"
        )
    return out


def _seconds(s: float) -> str:
    return f"{s:.3f} s"


def scenario_doc(
    cfg: LoggedConfig, log_names: list[str], profile: str, vram: str | None, name: str
) -> dict:
    """The scenario as a TOML-ready dict (keys as cuzk_sim.scenario reads them)."""
    spp = cfg.observed_spp
    assumed = {k: v for k, v in cfg.assumed.items() if not (k == "hardware.vram" and vram)}
    desc = (
        f"Replay of {', '.join(log_names)} (cuzk-sim scenario-from-log): "
        f"{cfg.gpus} GPU(s), {cfg.workers_per_device} worker(s) per GPU, "
        f"jobs {cfg.kinds}; observed "
        + (f"{spp:.3f} s/proof over {cfg.proofs_done} proofs." if spp else "no s/proof.")
        + "\nAssumed (the log does not state them):\n"
        + "".join(f"- {k}: {v}\n" for k, v in assumed.items())
        + "Stated by the log:\n"
        + "".join(f"- {k}: {v}\n" for k, v in cfg.stated.items())
    )
    hardware: dict = {"gpus": cfg.gpus}
    if vram:
        hardware["vram"] = vram
    gpus_table: dict = {"gpu_workers_per_device": cfg.workers_per_device}
    if cfg.devices is not None:
        gpus_table["devices"] = cfg.devices
    doc: dict = {
        "name": name,
        "description": desc,
        "seed": 0,
        "on_oom": "continue",
        "profile": profile,
        "hardware": hardware,
        "engine": {
            "gpus": gpus_table,
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
            **({"d_a_cache": cfg.d_a_cache} if cfg.d_a_cache is not None else {}),
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
