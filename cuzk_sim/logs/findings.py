"""Findings: what a log shows went wrong, each with the lines that prove it.

A finding has a stable id (scripts and tests match on it), a severity (`error`: proofs
were or will be lost, or hardware sits unused; `warning`: a cost paid on every run;
`info`: a tuning observation), one sentence, and its evidence: line numbers with the
lines. Findings are ordered by severity, then by their first evidence line, so the
cause that shows first in the log is named first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SEVERITIES = ("error", "warning", "info")
MAX_EVIDENCE = 8  # lines kept per finding (bounded memory on any log)

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
