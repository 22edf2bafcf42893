"""Chrome trace-event JSON of a log, with the model's process and track names.

Processes and tracks are named as `cuzk_sim.results.run_trace` names the model's (process `GPU <n>`
per GPU, `host` for synthesis; a worker's partitions on track `gpu<g>-w<k>`, its mutex
wait and hold on `gpu<g>-w<k> lock`, its GPU phases on `gpu<g>-w<k> kernel`), so a log's
trace and the model's trace of the same configuration read alike; `--beside` puts both
in one file (the model's processes suffixed "(model)"). Events are written as partitions
close, so a trace of any log size never sits in memory.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from cuzk_sim.logs.timeline import Analyzer, Partition

HOST_PID = 1000
MODEL_PID_OFFSET = 100
US = 1000.0  # microseconds per ms


class TraceWriter:
    def __init__(self, out: TextIO, analyzer: Analyzer | None = None) -> None:
        self.out = out
        self.a = analyzer
        self.first = True
        self.tids: dict[tuple[int, str], int] = {}
        self.pids: set[int] = set()
        out.write('{"displayTimeUnit": "ms", "traceEvents": [\n')
        self._event({"ph": "M", "name": "process_name", "pid": HOST_PID, "args": {"name": "host"}})

    def _event(self, ev: dict[str, Any]) -> None:
        self.out.write(("" if self.first else ",\n") + json.dumps(ev))
        self.first = False

    def _pid(self, gpu: int) -> int:
        if gpu not in self.pids:
            self.pids.add(gpu)
            self._event(
                {"ph": "M", "name": "process_name", "pid": gpu, "args": {"name": f"GPU {gpu}"}}
            )
        return gpu

    def _tid(self, pid: int, track: str) -> int:
        key = (pid, track)
        if key not in self.tids:
            self.tids[key] = len(self.tids) + 1
            self._event(
                {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": pid,
                    "tid": self.tids[key],
                    "args": {"name": track},
                }
            )
        return self.tids[key]

    def span(
        self,
        pid: int,
        track: str,
        name: str,
        cat: str,
        t0_ms: float,
        t1_ms: float,
        args: dict | None = None,
    ) -> None:
        ev = {
            "ph": "X",
            "name": name,
            "cat": cat,
            "pid": pid,
            "tid": self._tid(pid, track),
            "ts": t0_ms * US,
            "dur": max(t1_ms - t0_ms, 0.0) * US,
        }
        if args:
            ev["args"] = args
        self._event(ev)

    def partition(self, p: Partition) -> None:
        """All spans of one closed partition (times: ms since the first engine start)."""
        off = self.a.run_offsets.get(p.run, 0.0) * 1000 if self.a else 0.0
        label = f"{p.job}/{p.partition}" if p.partition is not None else p.job
        pnum = p.partition if p.partition is not None else 0
        if p.synth_start is not None and p.synth_end is not None:
            self.span(
                HOST_PID,
                f"synthesis p{pnum}",
                label,
                "synthesis",
                off + p.synth_start,
                off + p.synth_end,
            )
        if p.start is None:
            return
        worker = self.a.worker_name(p.worker) if self.a else f"worker {p.worker}"
        pid = self._pid(p.gpu or 0)
        end = p.end if p.end is not None else p.start
        self.span(
            pid,
            worker,
            label,
            "partition",
            off + p.start,
            off + end,
            {"outcome": p.outcome, **p.timing},
        )
        tm = p.timing
        if "pre_lock_cpu_ms" in tm:
            asked = off + p.start + tm["pre_lock_cpu_ms"]
            got = asked + tm.get("mutex_wait_ms", 0)
            if got > asked:
                self.span(pid, f"{worker} lock", "wait gpu", "lock", asked, got)
            held = tm.get("mutex_held_ms")
            if held is not None:
                self.span(pid, f"{worker} lock", "hold gpu", "lock", got, got + held)
            t = got
            for key, name in (
                ("ntt_msm_h_ms", "ntt_msm_h"),
                ("barrier_wait_ms", "barrier"),
                ("batch_add_ms", "batch_add"),
                ("tail_msm_ms", "tail_msm"),
            ):
                if key in tm:
                    self.span(pid, f"{worker} kernel", name, "kernel", t, t + tm[key])
                    t += tm[key]

    def findings(self, a: Analyzer) -> None:
        for f in a.book.ordered():
            self._event(
                {
                    "ph": "i",
                    "s": "g",
                    "name": f"{f.severity}: {f.id}",
                    "pid": HOST_PID,
                    "tid": self._tid(HOST_PID, "findings"),
                    "ts": 0,
                    "args": {"sentence": f.sentence},
                }
            )

    def beside(self, model_trace: dict) -> None:
        """Append a model trace's events, its processes renamed `... (model)`."""
        for ev in model_trace.get("traceEvents", []):
            ev = dict(ev)
            if "pid" in ev:
                ev["pid"] = ev["pid"] + MODEL_PID_OFFSET
            if ev.get("ph") == "M" and ev.get("name") == "process_name":
                ev["args"] = {"name": f"{ev['args']['name']} (model)"}
            self._event(ev)

    def close(self) -> None:
        self.out.write("\n]}\n")
