"""Findings: what a log shows went wrong, each with the lines that prove it.

A finding has a stable id (scripts and tests match on it), a severity (`error`: proofs
were or will be lost, or hardware sits unused; `warning`: a cost paid on every run;
`info`: a tuning observation), one sentence, and its evidence: line numbers with the
lines. Findings are ordered by severity, then by their first evidence line, so the
cause that shows first in the log is named first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("error", "warning", "info")
MAX_EVIDENCE = 8  # lines kept per finding (bounded memory on any log)
SYNTHESIS_BOUND_SHARE = 0.15  # of a GPU's window idle, queue empty, synthesis running
MUTEX_CONTENTION_SHARE = 0.5  # total mutex wait against total mutex held

# id -> severity; the ids are part of the interface (docs/logs.md)
FINDING_SEVERITY = {
    "concurrent_gpu_sections": "error",
    "oom": "error",
    "routing_to_gpu0": "error",
    "prestage_fallback": "warning",
    "pce_save_failed": "warning",
    "pce_reextracted": "warning",
    "mutex_contention": "warning",
    "synthesis_bound": "info",
}


@dataclass
class Finding:
    id: str
    severity: str
    sentence: str
    evidence: list[tuple[int, str]] = field(default_factory=list)
    occurrences: int = 1
    anchor: int | None = None  # the line that dates it (an OOM: the panic, not the context)

    @property
    def first_line(self) -> int:
        if self.anchor is not None:
            return self.anchor
        return min((n for n, _ in self.evidence), default=1 << 62)

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "severity": self.severity,
            "sentence": self.sentence,
            "occurrences": self.occurrences,
            "evidence": [{"line": n, "text": t} for n, t in sorted(self.evidence)],
        }


class FindingBook:
    """Findings by id: the first occurrence sets the sentence, later ones add evidence
    (up to MAX_EVIDENCE lines) and count."""

    def __init__(self) -> None:
        self.by_id: dict[str, Finding] = {}

    def add(
        self,
        fid: str,
        sentence: str,
        evidence: list[tuple[int, str]],
        count: bool = True,
        anchor: int | None = None,
    ) -> Finding:
        """count=False: more evidence of an occurrence already counted (the ERROR line
        that follows a panic). anchor: the line that dates the first occurrence, when the
        evidence starts with context (the d_a cache line before an OOM)."""
        f = self.by_id.get(fid)
        if f is None:
            f = self.by_id[fid] = Finding(fid, FINDING_SEVERITY[fid], sentence, anchor=anchor)
        elif count:
            f.occurrences += 1
        have = {n for n, _ in f.evidence}
        for n, t in evidence:
            if n not in have and len(f.evidence) < MAX_EVIDENCE:
                f.evidence.append((n, t))
                have.add(n)
        return f

    def has(self, fid: str) -> bool:
        return fid in self.by_id

    def ordered(self) -> list[Finding]:
        return sorted(
            self.by_id.values(), key=lambda f: (SEVERITIES.index(f.severity), f.first_line, f.id)
        )

    def errors(self) -> list[Finding]:
        return [f for f in self.ordered() if f.severity == "error"]


def _circuit(cid: str) -> str:
    """A circuit id as the sentence names it (a line without one: say so, not `?`)."""
    return "a circuit the line does not name" if cid in ("", "?") else cid


def end_of_log_findings(a: Any) -> None:
    """The findings that need the whole log: routing, PCE, contention, starvation.
    a: the log's `Analyzer` (cuzk_sim/logs/timeline.py, which calls this at the end)."""
    if a.routed_to_gpu0():
        others = sorted({g for g in a.workers.values() if g != 0})
        ev = [a.worker_lines[w] for w in sorted(a.worker_lines) if a.workers[w] != 0][:2]
        ev += [a.cpp_gpus[0]]
        a.book.add(
            "routing_to_gpu0",
            f"Workers were assigned to GPUs {sorted(set(a.workers.values()))}, but "
            "the per-GPU lines of the C++ prover (d_a cache, pool threshold) name GPU 0 "
            f"only: the GPU work of GPUs {others} ran on GPU 0 (gpu_index not passed "
            "down), so those GPUs idle and GPU 0 carries every worker's buffers.",
            ev,
        )
    for cid, (n, text) in a.pce_save_failed.items():
        a.book.add(
            "pce_save_failed",
            f"The PCE of {_circuit(cid)} could not be saved to the param cache, so it is "
            "re-extracted after every daemon restart (83 s and 14 GiB of host memory "
            "for SnapDeals): make the param cache writable by the daemon's user.",
            [(n, text)],
        )
    for cid, seen in a.pce_extracted.items():
        if len(seen) > 1:
            total = sum(ms_ for _, _, ms_ in seen) / 1000
            a.book.add(
                "pce_reextracted",
                f"The PCE of {_circuit(cid)} was extracted {len(seen)} times in this log "
                f"({total:.0f} s in all); after the first it should load from disk.",
                [(n, t) for n, t, _ in seen],
            )
    if a.mutex_held.n >= 4 and a.mutex_wait.total >= MUTEX_CONTENTION_SHARE * a.mutex_held.total:
        share = a.mutex_wait.total / max(a.mutex_held.total, 1)
        a.book.add(
            "mutex_contention",
            f"Workers waited on the GPU mutex {a.mutex_wait.total / 1000:.1f} s in "
            f"all, {share:.0%} of the {a.mutex_held.total / 1000:.1f} s it was held "
            f"({a.mutex_wait.n} sections): the GPU section is the bottleneck, more "
            "workers per GPU only queue behind it.",
            [(a.worst_wait[1], a.worst_wait[2])],
        )
    for g, use in sorted(a.gpus.items()):
        window = (use.last or 0) - (use.first or 0)
        if window > 0 and use.starved_ms >= SYNTHESIS_BOUND_SHARE * window and use.sections >= 2:
            gap, before, after = use.longest_gap or (0.0, (0, ""), (0, ""))
            a.book.add(
                "synthesis_bound",
                f"GPU {g} sat idle with an empty GPU queue while synthesis ran for "
                f"{use.starved_ms / 1000:.1f} s, {use.starved_ms / window:.0%} of its "
                f"{window / 1000:.1f} s of work (longest gap {gap / 1000:.1f} s): "
                "synthesis, not the GPU, sets the pace.",
                [x for x in (before, after) if x[0]],
            )
