"""A streaming parser of cuzk daemon logs: one `Record` per known line, nothing held.

A log is read line by line (bytes, decoded only when a line is one we know), so memory
does not grow with its size. A line is *known* when it is one of the formats in
docs/logs.md (TIMELINE, CUZK_TIMING, CUZK_NTT_H, the per-GPU cache line, a handful of
tracing messages, Rust panics, C++ terminate); anything else is counted in
`Counts.unknown`. A known line whose fields do not parse (a TIMELINE offset that is not a
number, a CUZK_TIMING value that is not an integer) becomes a `malformed` record that
carries its line number, and never stops the parse. A prefix before the line (journald's
`Dec 01 10:00:00 host cuzk[123]: `) and ANSI colour codes are tolerated.
"""

from __future__ import annotations

import datetime as dt
import gzip
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from cuzk_sim.io.errors import InputError

TIMELINE_EVENTS = frozenset(
    ("SYNTH_START", "SYNTH_END", "CHAN_SEND", "GPU_QUEUE", "GPU_PICKUP", "GPU_START", "GPU_END")
)
OOM_PATTERNS = (
    "out of memory",
    "cudaErrorMemoryAllocation",
    "sppark::Error #-2",
    "CUDA error 2",
    "out of host memory",
)

MAX_LINE_BYTES = 1 << 20  # a longer line is counted as malformed and skipped, never held
MAX_INT_DIGITS = 18  # a log field beyond this is no time, size or id: malformed

_KEY = re.compile(
    rb"TIMELINE,|CUZK_|d_a_cache allocated|starting cuzk engine|GPU worker"
    rb"|GPU prov|PCE |panicked|terminate called|what\(\)|out of memory|proof assembled"
    rb"|proof completed successfully|memory budget initialized|rayon global thread pool"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_TRACING = re.compile(
    r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d))\s+"
    r"(TRACE|DEBUG|INFO|WARN|ERROR)\s+(.*)$"
)
_FIELD = re.compile(r"(?:^|\s)([A-Za-z_][\w.]*)=")
_INT = re.compile(r"-?\d+")
_DA_CACHE = re.compile(r"d_a_cache allocated (\d+) MiB on gpu (\d+)")
_POOL = re.compile(r"set pool release threshold to MAX on gpu (\d+)")
_RUST_PANIC_NEW = re.compile(r"thread '([^']*)' panicked at (.+):\s*$")
_RUST_PANIC_OLD = re.compile(r"thread '([^']*)' panicked at '(.*)', (\S+)\s*$")
_CPP_TERMINATE = re.compile(r"terminate called after throwing an instance of '([^']*)'")
_CPP_WHAT = re.compile(r"what\(\):\s*(.*)$")

# tracing messages we read: substring of the message -> record kind
_MESSAGES = (
    ("starting cuzk engine", "engine_start"),
    ("initializing GPU workers", "workers_init"),
    ("pipeline GPU worker started", "worker_started"),
    ("monolithic GPU worker started", "worker_started"),
    ("partition GPU prove complete", "partition_done"),
    ("partition GPU proving failed", "gpu_failed"),
    ("GPU prove start failed", "gpu_failed"),
    ("GPU prove start task panicked", "gpu_failed"),
    ("GPU proving task panicked", "gpu_failed"),
    ("GPU proving failed", "gpu_failed"),
    ("failed to save PCE to disk", "pce_save_failed"),
    ("PCE saved to disk", "pce_saved"),
    ("PCE extraction complete", "pce_extracted"),
    ("PCE extraction failed", "pce_extract_failed"),
    ("PCE extraction starting", "pce_extract_start"),
    ("PCE loaded from disk", "pce_loaded"),
    ("PCE file not found on disk", "pce_missing"),
    ("all partitions complete, proof assembled", "proof_done"),
    ("proof completed successfully", "proof_done"),
    ("memory budget initialized", "memory_budget"),
    ("rayon global thread pool configured", "rayon_threads"),
)


@dataclass(slots=True)
class Record:
    """One known line. `fields` holds the line's key=value pairs (ints where the format
    says so); `t_wall` the tracing timestamp (seconds since 1970) when the line has one."""

    lineno: int
    kind: str
    text: str
    fields: dict[str, object] = field(default_factory=dict)
    t_wall: float | None = None


@dataclass
class Counts:
    lines: int = 0
    known: int = 0
    unknown: int = 0
    malformed: int = 0
    bytes: int = 0


def _int(text: str) -> int:
    """An integer field of a log line; ValueError beyond MAX_INT_DIGITS (such a value is
    no time or size, and would overflow the float of a statistic)."""
    if len(text) > MAX_INT_DIGITS + 1:
        raise ValueError(f"more than {MAX_INT_DIGITS} digits")
    return int(text)


class LogReadError(Exception):
    """Reading a log failed (`cause`: the OSError, EOFError or zlib.error)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class LongLine(bytes):
    """The first bytes of a line longer than MAX_LINE_BYTES (the rest was skipped)."""


def bounded_lines(f: BinaryIO) -> Iterator[bytes]:
    """The lines of `f`, none held beyond MAX_LINE_BYTES: a longer line is yielded as
    a LongLine of its first bytes, and the rest of it is read and dropped in pieces (a
    gzip file inflating to 1 GiB without a newline costs 1 MiB, not 2 GiB)."""

    def readline(n: int) -> bytes:
        try:
            return f.readline(n)
        except READ_ERRORS as e:  # a read, not a write of the caller's (EFBIG of --trace)
            raise LogReadError(e) from None

    while True:
        raw = readline(MAX_LINE_BYTES)
        if not raw:
            return
        if len(raw) < MAX_LINE_BYTES or raw.endswith(b"\n"):
            yield raw
            continue
        head = LongLine(raw[:200])
        while raw and not raw.endswith(b"\n"):
            raw = readline(MAX_LINE_BYTES)
        yield head


def long_line_record(raw: bytes, lineno: int) -> Record:
    text = raw.decode("utf-8", "replace")
    return Record(lineno, "malformed", text, {"why": f"a line longer than {MAX_LINE_BYTES} bytes"})


def is_oom_text(text: str) -> bool:
    return any(p in text for p in OOM_PATTERNS)


def _ints(body: str, lineno: int, text: str, kind: str) -> Record:
    """`k=v k=v` with integer values (an `ms` suffix allowed, as CUZK_NTT_H prints)."""
    out: dict[str, object] = {}
    for token in body.split():
        k, sep, v = token.partition("=")
        if not sep:
            continue
        try:
            out[k] = _int(v[:-2] if v.endswith("ms") else v)
        except ValueError:
            if kind == "timing" and k == "prestage_setup":
                out[k] = v
                continue
            why = f"{k}={v[:40]} is not an integer of at most {MAX_INT_DIGITS} digits"
            return Record(lineno, "malformed", text, {"why": why})
    if not out:
        return Record(lineno, "malformed", text, {"why": "no key=value fields"})
    return Record(lineno, kind, text, out)


def _timing(body: str, lineno: int, text: str) -> Record:
    body = body.strip()
    head = body[:4]
    if head == "d_a_" or (head != "gpu_" and "d_a_cache allocated" in body):
        m = _DA_CACHE.search(body)
        if m:
            return Record(lineno, "d_a_cache", text, {"mib": int(m[1]), "gpu": int(m[2])})
    elif head == "set ":
        m = _POOL.search(body)
        if m:
            return Record(lineno, "pool_threshold", text, {"gpu": int(m[1])})
    elif head == "pres":
        if body.startswith("prestage_setup="):
            rec = _ints(body, lineno, text, "timing")
            if rec.kind == "timing":
                rec.kind = "prestage"
            return rec
        if body.startswith("prestage_vram"):
            return _ints(body.removeprefix("prestage_vram"), lineno, text, "prestage_vram")
    return _ints(body, lineno, text, "timing")


_TIMELINE_INTS = frozenset(("worker", "partition", "synth_ms", "gpu_ms"))
_STEP_INTS = ("size", "bytes", "pinned", "us")


def _sim_step(body: str, lineno: int, text: str) -> Record:
    """`CUZK_SIM_STEP: <step> kind=<kind> size= bytes= pinned= us=` (our pipeline's line,
    cuzk_sim/logs/emit.py sim_step)."""
    name, _, rest = body.strip().partition(" ")
    fields: dict[str, object] = {"name": name}
    for token in rest.split():
        k, sep, v = token.partition("=")
        if sep:
            fields[k] = v
    missing = [k for k in ("kind", *_STEP_INTS) if k not in fields]
    if not name or missing:
        return Record(lineno, "malformed", text, {"why": f"CUZK_SIM_STEP without {missing}"})
    for k in _STEP_INTS:
        try:
            fields[k] = _int(str(fields[k]))
        except ValueError:
            why = f"{k}={str(fields[k])[:40]} is not an integer of at most {MAX_INT_DIGITS} digits"
            return Record(lineno, "malformed", text, {"why": why})
        if fields[k] < 0:  # type: ignore[operator]
            return Record(lineno, "malformed", text, {"why": f"{k}={fields[k]} is negative"})
    return Record(lineno, "sim_step", text, fields)


def _sim_context(body: str, lineno: int, text: str) -> Record:
    """`CUZK_SIM_CONTEXT: gpu=<g> bytes=<n>` (our pipeline's, emit.sim_context)."""
    r = _ints(body, lineno, text, "sim_context")
    if r.kind == "sim_context":
        missing = [k for k in ("gpu", "bytes") if k not in r.fields]
        if missing:
            return Record(lineno, "malformed", text, {"why": f"CUZK_SIM_CONTEXT without {missing}"})
        if int(r.fields["bytes"]) <= 0:  # type: ignore[call-overload]
            return Record(lineno, "malformed", text, {"why": "CUZK_SIM_CONTEXT bytes <= 0"})
    return r


def _sim_device(body: str, lineno: int, text: str) -> Record:
    """`CUZK_SIM_DEVICE: gpu=<g> bytes=<total> name=<the rest>` (emit.sim_device)."""
    head, sep, name = body.partition(" name=")
    r = _ints(head, lineno, text, "sim_device")
    if r.kind == "sim_device":
        if not sep or not name.strip() or not {"gpu", "bytes"} <= set(r.fields):
            return Record(
                lineno, "malformed", text, {"why": "CUZK_SIM_DEVICE without gpu, bytes, name"}
            )
        r.fields["name"] = name.strip()
    return r


def _timeline(line: str, lineno: int) -> Record:
    parts = line.split(",", 4)
    try:
        t = _int(parts[1])
        event, job = parts[2], parts[3]
    except (ValueError, IndexError):
        return Record(lineno, "malformed", line, {"why": "expected TIMELINE,<ms>,<event>,<job>"})
    if event not in TIMELINE_EVENTS:
        return Record(lineno, "malformed", line, {"why": f"unknown TIMELINE event {event!r}"})
    fields: dict[str, object] = {"ms": t, "event": event, "job": job}
    if len(parts) == 5:
        detail = _DETAILS.get(parts[4])
        if detail is None:
            detail = _detail(parts[4])
            if isinstance(detail, str):
                return Record(lineno, "malformed", line, {"why": detail})
            if len(_DETAILS) >= CACHE_ENTRIES:
                _DETAILS.clear()
            _DETAILS[parts[4]] = detail
        fields.update(detail)
    return Record(lineno, "timeline", line, fields)


CACHE_ENTRIES = 4096  # distinct TIMELINE details remembered (they repeat: worker=0,partition=3)
_DETAILS: dict[str, dict[str, object]] = {}


def _detail(text: str) -> dict[str, object] | str:
    """`worker=1,partition=3,gpu_ms=3750` as fields, or why it is malformed."""
    out: dict[str, object] = {}
    for item in text.split(","):
        k, sep, v = item.partition("=")
        if not sep:
            if item and item != "monolithic":
                out.setdefault("detail", item)
        elif k in _TIMELINE_INTS:
            try:
                out[k] = _int(v)
            except ValueError:
                return f"{k}={v[:40]} is not an integer of at most {MAX_INT_DIGITS} digits"
        else:
            out[k] = v
    return out


def tracing_fields(rest: str) -> dict[str, str]:
    """`k=v` pairs of a tracing line; a bare value runs to the next ` key=` (Display
    values such as `error=failed to create temp file: /x` may hold spaces)."""
    marks = list(_FIELD.finditer(rest))
    out: dict[str, str] = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(rest)
        v = rest[m.end() : end].strip()
        if len(v) >= 2 and v[0] == v[-1] == '"':
            v = v[1:-1]
        out[m[1]] = v
    return out


def _wall(ts: str) -> float | None:
    try:
        return dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _tracing(line: str, lineno: int) -> Record | None:
    m = _TRACING.search(line)
    if not m:
        return None
    ts, level, rest = m[1], m[2], m[3]
    for needle, kind in _MESSAGES:
        i = rest.find(needle)
        if i < 0:
            continue
        head, tail = rest[:i], rest[i + len(needle) :]
        fields: dict[str, object] = {"level": level, **tracing_fields(tail)}
        fields.update({f"span.{k}": v for k, v in tracing_fields(head).items()})
        wall = _wall(ts)
        if wall is None:
            return Record(lineno, "malformed", line, {"why": f"bad timestamp {ts!r}"})
        return Record(lineno, kind, line, fields, wall)
    if level == "ERROR" and is_oom_text(rest):
        return Record(
            lineno, "error_oom", line, {"level": level, **tracing_fields(rest)}, _wall(ts)
        )
    return None


class LogParser:
    """Turns lines into records; keeps only the state a two-line panic needs.

    `feed` is the hot loop of a 1 GB log: TIMELINE and CUZK_TIMING lines at the start of
    a line skip the keyword search, and a line with no keyword is never decoded."""

    def __init__(self) -> None:
        self.counts = Counts()
        self._pending: Record | None = None  # a panic or terminate awaiting its message
        self.extra: list[Record] = []  # a second record of one line (rare): take it next

    def feed(self, raw: bytes, lineno: int) -> Record | None:
        """The record of this line (bytes, as read from the file), or None; see `extra`
        for a second one. The caller counts bytes (`counts.bytes`)."""
        c = self.counts
        c.lines += 1
        if self._pending is None:
            if raw.startswith(b"TIMELINE,"):
                rec = _timeline(raw.decode("utf-8", "replace").rstrip(), lineno)
                c.known += 1
                if rec.kind == "malformed":
                    c.malformed += 1
                return rec
            if raw.startswith(b"CUZK_TIMING: "):
                text = raw.decode("utf-8", "replace").rstrip()
                rec = _timing(text[13:], lineno, text)
                c.known += 1
                if rec.kind == "malformed":
                    c.malformed += 1
                return rec
            if not _KEY.search(raw):
                c.unknown += 1
                return None
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if "\x1b" in line:
            line = _ANSI.sub("", line)
        if self._pending is not None:
            pending, self._pending = self._pending, None
            msg_line = line.strip()
            m = _CPP_WHAT.search(msg_line) if pending.kind == "cpp_terminate" else None
            if pending.kind != "cpp_terminate" or m:
                msg = m[1] if m else msg_line
                pending.fields["message"] = msg
                pending.fields["oom"] = is_oom_text(msg)
                pending.text += "\n" + line
                c.known += 1
                return pending
            c.known += 1  # a terminate without its what(): still a crash
            rec = self._record(line, lineno)
            if rec is not None:
                self.extra.append(rec)
            return pending
        return self._record(line, lineno)

    def _record(self, line: str, lineno: int) -> Record | None:
        c = self.counts
        rec = self._classify(line, lineno)
        if rec is None:
            c.unknown += 1
            return None
        if rec.kind in ("rust_panic", "cpp_terminate") and "message" not in rec.fields:
            self._pending = rec
            return None
        c.known += 1
        if rec.kind == "malformed":
            c.malformed += 1
        return rec

    def long_line(self, raw: bytes, lineno: int) -> Record:
        """The record of a line cut at MAX_LINE_BYTES (bounded_lines): malformed."""
        self.counts.lines += 1
        self.counts.known += 1
        self.counts.malformed += 1
        return long_line_record(raw, lineno)

    def drain(self) -> list[Record]:
        out, self.extra = self.extra, []
        return out

    def finish(self) -> Iterator[Record]:
        yield from self.drain()
        if self._pending is not None:
            self.counts.known += 1
            yield self._pending
            self._pending = None

    def _classify(self, line: str, lineno: int) -> Record | None:
        i = line.find("TIMELINE,")
        if i >= 0:
            return _timeline(line[i:], lineno)
        i = line.find("CUZK_SIM_STEP:")
        if i >= 0:
            return _sim_step(line[i + 14 :], lineno, line)
        i = line.find("CUZK_SIM_CONTEXT:")
        if i >= 0:
            return _sim_context(line[i + 17 :], lineno, line)
        i = line.find("CUZK_SIM_DEVICE:")
        if i >= 0:
            return _sim_device(line[i + 16 :], lineno, line)
        i = line.find("CUZK_TIMING:")
        if i >= 0:
            return _timing(line[i + 12 :], lineno, line)
        i = line.find("CUZK_NTT_H:")
        if i >= 0:
            return _ints(line[i + 11 :], lineno, line, "ntt_h")
        if "d_a_cache allocated" in line:  # without the CUZK_TIMING prefix (older model logs)
            return _timing(line, lineno, line)
        if "panicked at" in line:
            m = _RUST_PANIC_OLD.search(line)
            if m:
                return Record(
                    lineno,
                    "rust_panic",
                    line,
                    {"thread": m[1], "message": m[2], "where": m[3], "oom": is_oom_text(m[2])},
                )
            m = _RUST_PANIC_NEW.search(line)
            if m:
                return Record(lineno, "rust_panic", line, {"thread": m[1], "where": m[2]})
        m = _CPP_TERMINATE.search(line)
        if m:
            return Record(lineno, "cpp_terminate", line, {"type": m[1]})
        rec = _tracing(line, lineno)
        if rec is not None:
            return rec
        if "worker " in line and " panicked: " in line:  # the model's own panic line
            msg = line.split(" panicked: ", 1)[1]
            return Record(lineno, "model_panic", line, {"message": msg, "oom": is_oom_text(msg)})
        if is_oom_text(line):
            return Record(lineno, "oom_text", line, {"message": line.strip(), "oom": True})
        return None


def parse_lines(lines: Iterable[bytes | str], parser: LogParser | None = None) -> Iterator[Record]:
    """Records of the lines in order (line numbers from 1)."""
    p = parser or LogParser()
    for n, raw in enumerate(lines, 1):
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "replace")
        p.counts.bytes += len(raw)
        rec = p.long_line(raw, n) if raw.__class__ is LongLine else p.feed(raw, n)
        if rec is not None:
            yield rec
        if p.extra:
            yield from p.drain()
    yield from p.finish()


def open_log(path: Path) -> BinaryIO:
    """The log's bytes, line by line: a gzip file (rotated logs: `daemon.log.1.gz`, found by
    its magic bytes, whatever its name) is read through gzip; anything else as it is."""
    f = open(path, "rb", buffering=1 << 20)  # noqa: SIM115 - the caller closes it
    if f.peek(2)[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=f, mode="rb")  # type: ignore[return-value]
    return f


def read_log(path: str | Path, parser: LogParser | None = None) -> Iterator[Record]:
    """Records of one log file (plain or gzip), streamed; a missing or unreadable file is
    an InputError."""
    from cuzk_sim.io.inputs import path_kind

    path = Path(path)
    if path_kind(path, "log") != "file":
        raise InputError(f"{path}: no such log file (or not a regular file)")
    try:
        f = open_log(path)
    except OSError as e:
        raise InputError(f"{path}: cannot read the log ({e})") from None
    return _records(path, f, parser or LogParser())


def _records(path: Path, f: BinaryIO, parser: LogParser) -> Iterator[Record]:
    with f:
        try:
            yield from parse_lines(bounded_lines(f), parser)
        except LogReadError as e:
            raise unreadable(path, e.cause, parser.counts.lines) from None


# what reading a log can raise: OSError (a gzip CRC or length that does not match, a
# bad header), EOFError (a truncated gzip stream), zlib.error (a corrupt deflate block)
READ_ERRORS = (OSError, EOFError, zlib.error)


def unreadable(path: Path, e: BaseException, lines: int) -> InputError:
    if isinstance(e, zlib.error | EOFError | gzip.BadGzipFile):
        why = f"the gzip data is damaged: {e}"
    else:
        why = getattr(e, "strerror", None) or str(e)
    return InputError(f"{path}: cannot read the log ({why}) after {lines} lines")
