"""What the log rebuilds, piece by piece: one partition's life (synthesis, queue, GPU
section, its C++ timings), one job, one GPU's occupancy; the proof kinds and the figures
the statistics keep. `timeline.Analyzer` fills them from the records."""

from __future__ import annotations

from dataclasses import dataclass, field

from cuzk_sim.logs.parse import Record

KEEP_PARTITIONS = 2000
CIRCUIT_KINDS = {
    "porep-32g": "porep",
    "snap-deals-32g": "snapdeals",
    "window-post-32g": "window_post",
    "winning-post-32g": "winning_post",
}
MAX_MALFORMED = 50

# a CUZK_TIMING key -> the slot of a GPU section it fills (one line per slot per call)
SLOT_OF_KEY = {
    "prep_msm_ms": "prep",
    "b_g2_msm_ms": "b_g2",
    "pre_lock_cpu_ms": "lock",
    "ntt_msm_h_ms": "ntt",
    "barrier_wait_ms": "barrier",
    "batch_add_ms": "batch",
    "tail_msm_ms": "tail",
    "mutex_held_ms": "held",
    "async_dealloc_ms": "dealloc",
    "split_vectors_ms": "split",
}
# the per-partition figures the statistics keep (for calibrate and the report)
FIGURES = (
    "synth_ms",
    "queue_ms",
    "gpu_ms",
    "section_ms",
    "prep_msm_ms",
    "b_g2_msm_ms",
    "pre_lock_cpu_ms",
    "mutex_wait_ms",
    "ntt_msm_h_ms",
    "batch_add_ms",
    "tail_msm_ms",
    "gpu_total_ms",
    "mutex_held_ms",
    "ntt_h.d_b_alloc",
    "ntt_h.ntt_kernels",
    "ntt_h.coset_intt_sync",
    "ntt_h.msm_init",
    "ntt_h.msm_invoke",
    "ntt_h.msm_dtor",
    "ntt_h.total",
)


FIGURE_SET = frozenset(FIGURES)


@dataclass
class Partition:
    """One partition of one job, from synthesis to the end of its GPU section."""

    run: int
    job: str
    partition: int | None
    synth_start: int | None = None
    synth_end: int | None = None
    synth_ms: int | None = None
    queued: int | None = None
    pickup: int | None = None
    start: int | None = None
    end: int | None = None
    gpu_ms: int | None = None
    worker: int | None = None
    gpu: int | None = None
    timing: dict[str, int] = field(default_factory=dict)
    slots: set[str] = field(default_factory=set)
    lines: list[tuple[int, str]] = field(default_factory=list)  # its GPU_START / GPU_END
    jobrec: Job | None = None  # the job it belongs to
    outcome: str = "open"  # open | done | failed | unfinished

    def note(self, rec: Record) -> None:
        if len(self.lines) < 8:
            self.lines.append((rec.lineno, rec.text))

    @property
    def guarded(self) -> bool:
        return "lock" in self.slots

    def line_of(self, event: str) -> tuple[int, str] | None:
        for n, t in self.lines:
            if f",{event}," in t:
                return n, t
        return None

    def to_dict(self) -> dict:
        def span(a: int | None, b: int | None) -> int | None:
            return None if a is None or b is None else b - a

        end = self.end if self.outcome in ("done", "failed") else None
        queued = self.queued if self.queued is not None else self.synth_end
        wait = span(queued, self.pickup)  # a pickup printed before its queue line: 0
        synth = self.synth_ms
        return {
            "run": self.run,
            "job": self.job,
            "partition": self.partition,
            "worker": self.worker,
            "gpu": self.gpu,
            "synthesis_ms": synth if synth is not None else span(self.synth_start, self.synth_end),
            "queue_wait_ms": None if wait is None else max(wait, 0),
            "gpu_section_ms": span(self.start, end),
            "mutex_wait_ms": self.timing.get("mutex_wait_ms"),
            "gpu_ms": self.gpu_ms,
            "synth_start_ms": self.synth_start,
            "gpu_start_ms": self.start,
            "gpu_end_ms": end,
            "timing": dict(self.timing),
            "outcome": self.outcome,
        }


@dataclass
class Job:
    run: int
    job: str
    first_ms: int | None = None
    synth_end: int | None = None  # the last SYNTH_END of its partitions
    last_pickup: int | None = None  # the last GPU_PICKUP of its partitions
    last_end: int | None = None
    partitions_done: int = 0
    partitions_seen: set = field(default_factory=set)
    failed: bool = False
    kind: str | None = None
    open: int = 0  # partitions of it not yet closed
    values: dict[str, list[float]] = field(default_factory=dict)  # figure -> its readings
    first_lines: dict[str, int] = field(default_factory=dict)  # figure -> first line


@dataclass
class GpuUse:
    """Per-GPU occupancy from the sweep over TIMELINE events."""

    active: int = 0
    starved_ms: float = 0.0  # idle, GPU queue empty, synthesis running
    first: int | None = None
    last: int | None = None
    sections: int = 0
    held_ms: float = 0.0  # sum of mutex_held_ms
    # the longest idle gap: ms, (line, text) where it began, (line, text) where it ended
    longest_gap: tuple[float, tuple[int, str], tuple[int, str]] | None = None
    idle_since: tuple[int, tuple[int, str]] | None = None  # (ms, line) the GPU went idle
    # busy time: the union of its sections' [start, end] (whatever order their lines came
    # in): the latest MERGED_SPANS merged spans, and the length of older ones folded
    spans: list[list[float]] = field(default_factory=list)
    folded_ms: float = 0.0

    def add_section(self, start: float, end: float) -> None:
        if end <= start:
            return
        merged = [start, end]
        keep = []
        for s in self.spans:
            if s[1] < merged[0] or s[0] > merged[1]:
                keep.append(s)
            else:
                merged = [min(s[0], merged[0]), max(s[1], merged[1])]
        keep.append(merged)
        keep.sort()
        while len(keep) > MERGED_SPANS:
            old = keep.pop(0)
            self.folded_ms += old[1] - old[0]
        self.spans = keep

    @property
    def busy_ms(self) -> float:
        """At least one GPU section open: the union of the sections' spans."""
        return self.folded_ms + sum(e - s for s, e in self.spans)


MERGED_SPANS = 64  # sections may close out of order by this many idle gaps


def kind_of(partitions: int, synth_ms: float | None) -> str:
    """The proof kind a job's partition count implies (cuzk-facts.md circuit table)."""
    if partitions == 10:
        return "porep"
    if partitions == 16:
        return "snapdeals"
    if partitions <= 1:
        return "winning_post" if synth_ms is not None and synth_ms < 5000 else "window_post"
    return f"unknown({partitions} partitions)"
