"""The files the recorders write, read back: one `trace-<pid>.json` per process of the
captured program (capture/inject/cuzk_capture.c, capture/cupti_child.py), each
{"pid": P, "records": [...], "notes": [...], ...}, merged into one trace.

A process that did not exit (a daemon stopped by a signal) leaves `trace-<pid>.json.tmp`
instead: the injection library's header and every record CUPTI delivered up to its last
periodic flush, one record a line, with no end. Such a file is read up to its last
whole record and the trace says so.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from cuzk_sim.capture.context_size import context_bytes
from cuzk_sim.capture.cupti_records import merge, records_to_trace
from cuzk_sim.capture.trace import Trace
from cuzk_sim.input_errors import InputError

MAX_TRACE_FILE = 2 << 30  # bytes of one process's records
HEADER = re.compile(r'^\{"pid": (\d+),.*"records": \[$')


def read_unfinished(text: str, name: str) -> dict[str, Any]:
    """A `.tmp` file of a process that did not exit: its pid and whole records."""
    lines = text.split("\n")
    m = HEADER.match(lines[0]) if lines else None
    if m is None:
        raise InputError(f"capture: {name}: not a recorder's file (no header line)")
    records = []
    for line in lines[1:]:
        try:
            records.append(json.loads(line.rstrip(",")))
        except ValueError:
            break  # the record being written when the process stopped, and what follows
    note = (
        f"process {m.group(1)} did not exit: its records up to CUPTI's last flush "
        f"({len(records)} records)"
    )
    return {"pid": int(m.group(1)), "records": records, "notes": [note]}


def _load(path: Path) -> dict[str, Any]:
    if path.stat().st_size > MAX_TRACE_FILE:
        raise InputError(f"capture: {path.name} is larger than 2 GiB")
    text = path.read_text(errors="replace")
    if path.suffix == ".tmp":
        return read_unfinished(text, path.name)
    try:
        return json.loads(text)
    except ValueError as e:
        raise InputError(f"capture: {path.name}: not a recorder's file ({e})") from None


def read_folder(folder: Path, source: str) -> Trace:
    """The merged trace of every recorder file in `folder`."""
    traces = []
    paths = sorted(Path(folder).glob("trace-*.json")) + sorted(
        Path(folder).glob("trace-*.json.tmp")
    )
    for path in paths:
        data = _load(path)
        try:
            pid, records = int(data["pid"]), list(data["records"])
        except (ValueError, KeyError, TypeError) as e:
            raise InputError(f"capture: {path.name}: not a recorder's file ({e})") from None
        trace = records_to_trace(records, pid, source)
        ctx = context_bytes(records, trace.memory)
        if ctx:
            procs = tuple(dataclasses.replace(p, context_bytes=ctx) for p in trace.processes)
            missing = tuple(m for m in trace.missing if m != "no CUDA context size measured")
            trace = dataclasses.replace(trace, processes=procs, missing=missing)
        notes = tuple(str(n) for n in data.get("notes", []))
        traces.append(dataclasses.replace(trace, missing=trace.missing + notes))
    if not traces:
        raise InputError(f"capture: {source} recorded no CUDA activity (did it use the GPU?)")
    return merge(traces, source)
