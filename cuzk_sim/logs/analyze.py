"""One pass over one or more logs: parse, rebuild, find. Several files are one stream in
the order given (a daemon's rotated logs); line numbers run on across them and
`LineMap.where` turns them back into `file:line`."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cuzk_sim.io.errors import InputError, LineError
from cuzk_sim.io.inputs import path_kind
from cuzk_sim.logs.parse import (
    READ_ERRORS,
    LogParser,
    LogReadError,
    LongLine,
    bounded_lines,
    open_log,
    unreadable,
)
from cuzk_sim.logs.timeline import KEEP_PARTITIONS, Analyzer, Partition


@dataclass
class LineMap:
    starts: list[int] = field(default_factory=list)  # global number of each file's line 1
    files: list[str] = field(default_factory=list)

    def where(self, lineno: int) -> str:
        i = bisect.bisect_right(self.starts, lineno) - 1
        if i < 0:
            return str(lineno)
        return f"{self.files[i]}:{lineno - self.starts[i] + 1}"


def analyze_logs(
    paths: list[Path],
    keep: int = KEEP_PARTITIONS,
    on_close: Callable[[Partition], None] | None = None,
    kind: str | None = None,
    analyzer: Analyzer | None = None,
) -> tuple[Analyzer, LogParser, LineMap]:
    """Stream every file through one parser and one analyzer; memory stays bounded (lines
    cut at MAX_LINE_BYTES, gzip inflated piece by piece with its CRC checked at the end,
    the analyzer's open sections capped). Bad input is one InputError naming file:line."""
    parser = LogParser()
    a = analyzer or Analyzer(keep=keep, on_close=on_close, kind=kind)
    lines = LineMap()
    try:
        n = 0
        for path in paths:
            if path_kind(path, "log") != "file":
                raise InputError(f"{path}: no such log file (or not a regular file)")
            lines.starts.append(n + 1)
            lines.files.append(str(path))
            n = _read_one(path, parser, a, n)
        for rec in parser.finish():
            a.feed(rec)
        a.counts = parser.counts
        a.finish()
    except LineError as e:  # the analyzer knows the line number, the map the file
        raise InputError(f"{lines.where(e.lineno)}: {e.why}") from None
    return a, parser, lines


def _read_one(path: Path, parser: LogParser, a: Analyzer, n: int) -> int:
    """Feed one file's lines; returns the last global line number."""
    try:
        with open_log(path) as f:
            feed, take = parser.feed, a.feed
            nbytes = 0  # the log's text (a gzip file's decompressed)
            for raw in bounded_lines(f):
                n += 1
                nbytes += len(raw)
                rec = parser.long_line(raw, n) if raw.__class__ is LongLine else feed(raw, n)
                if rec is not None:
                    take(rec)
                    if parser.extra:
                        for more in parser.drain():
                            take(more)
            parser.counts.bytes += nbytes
    except LogReadError as e:
        raise unreadable(path, e.cause, n) from None
    except READ_ERRORS as e:  # opening it, or closing a gzip file (its CRC)
        if isinstance(e, OSError) and str(getattr(e, "filename", None)) != str(path):
            raise  # not this log's: a write of the caller (logs --trace onto a full disk)
        raise unreadable(path, e, n) from None
    return n
