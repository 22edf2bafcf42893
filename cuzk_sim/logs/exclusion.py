"""Did the GPU mutex keep each GPU's sections apart? For `Analyzer`: two sections of one
GPU between their lock and held lines, or overlapping while neither printed mutex lines,
are findings (concurrent_gpu_sections)."""

from __future__ import annotations

from collections import deque

from cuzk_sim.logs.parse import Record
from cuzk_sim.logs.sections import Partition


class Exclusion:
    """Checks of `Analyzer` (its state: holding, recent, workers, cpp_gpus, book, now)."""

    def _lock_taken(self, sec: Partition, r: Record) -> None:
        """Two sections of one GPU between their lock and held lines: no exclusion."""
        g = self._physical_gpu(sec)
        other = self.holding.get(g)
        if other is not None and other is not sec and other.worker != sec.worker:
            ev = [x for x in (other.line_of("GPU_START"), sec.line_of("GPU_START")) if x]
            self.book.add(
                "concurrent_gpu_sections",
                f"Workers {other.worker} and {sec.worker} were inside the GPU mutex of GPU "
                f"{g} at the same time (a second pre_lock/mutex_wait line before the first "
                "holder's mutex_held line): the mutex does not serialise that GPU's "
                "sections, so their buffers add up in its VRAM.",
                ev + [(r.lineno, r.text)],
            )
        if any(h is not sec and gpu != g for gpu, h in self.holding.items()):
            # two GPUs inside their mutexes at once: the mutex is not one global lock
            self.variant["held_across_gpus"] = self.variant.get("held_across_gpus", 0) + 1
        self.holding[g] = sec

    def _physical_gpu(self, sec: Partition) -> int:
        if self.routed_to_gpu0():
            return 0
        return sec.gpu or 0

    def routed_to_gpu0(self) -> bool:
        assigned = set(self.workers.values())
        return len(assigned) >= 2 and bool(self.cpp_gpus) and set(self.cpp_gpus) == {0}

    def _check_unguarded(self, part: Partition) -> None:
        """At close: did this section overlap another worker's on the same GPU while
        neither printed mutex lines? Then nothing kept them apart."""
        if part.start is None or part.guarded:
            return
        g = self._physical_gpu(part)
        recent = self.recent.setdefault(g, deque(maxlen=64))
        for other in recent:
            if other.worker == part.worker or other.guarded or other.start is None:
                continue
            o_end = other.end if other.end is not None else self.now
            if (
                other.start <= part.end
                and part.start <= o_end
                and (
                    min(o_end, part.end) - max(other.start, part.start) > 0
                    or other.start == part.start
                )
            ):
                same_ms = abs(other.start - part.start) <= 1
                when = "in the same millisecond" if same_ms else "with overlapping sections"
                ev = [x for x in (other.line_of("GPU_START"), part.line_of("GPU_START")) if x]
                self.book.add(
                    "concurrent_gpu_sections",
                    f"Workers {other.worker} and {part.worker} entered GPU sections of GPU "
                    f"{g} {when} and neither printed the mutex lines (pre_lock_cpu_ms / "
                    "mutex_held_ms): nothing serialises them, so both workers' buffers "
                    "(d_a cache, NTT scratch, MSM buckets) must fit in that GPU's VRAM at once.",
                    ev,
                )
                break
        recent.append(part)
