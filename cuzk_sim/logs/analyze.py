"""One pass over one or more logs: parse, rebuild, find. Several files are one stream in
the order given (a daemon's rotated logs); line numbers run on across them and
`LineMap.where` turns them back into `file:line`."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cuzk_sim.input_errors import InputError
from cuzk_sim.logs.parse import LogParser, open_log
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
    """Stream every file through one parser and one analyzer; memory stays bounded."""
    parser = LogParser()
    a = analyzer or Analyzer(keep=keep, on_close=on_close, kind=kind)
    lines = LineMap()
    n = 0
    for path in paths:
        if not path.is_file():
            raise InputError(f"{path}: no such log file")
        lines.starts.append(n + 1)
        lines.files.append(str(path))
        try:
            with open_log(path) as f:
                feed, take = parser.feed, a.feed
                nbytes = 0  # the log's text (a gzip file's decompressed)
                for raw in f:
                    n += 1
                    nbytes += len(raw)
                    rec = feed(raw, n)
                    if rec is not None:
                        take(rec)
                        if parser.extra:
                            for more in parser.drain():
                                take(more)
                parser.counts.bytes += nbytes
        except (OSError, EOFError) as e:  # EOFError: a truncated gzip file
            raise InputError(f"{path}: cannot read the log ({e})") from None
    for rec in parser.finish():
        a.feed(rec)
    a.counts = parser.counts
    a.finish()
    return a, parser, lines
