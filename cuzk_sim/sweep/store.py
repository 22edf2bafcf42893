"""The output folder: rows written as they finish, read back to resume.

Every write goes to a temporary file in the same folder and is renamed over the old one
(`os.replace` is atomic on one file system), so an interrupted sweep leaves the last
complete results.json, never half a file. Rows are rewritten at most every `every_s`
seconds while a sweep runs, and once at the end.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from cuzk_sim.input_errors import InputError

FORMAT = "cuzk-sim-sweep/1"


def write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _csv_cell(v: Any) -> Any:
    if isinstance(v, dict | list):
        return json.dumps(v, sort_keys=True)
    return "" if v is None else v


def rows_csv(rows: list[dict[str, Any]], columns: list[str]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([_csv_cell(r.get(c)) for c in columns])
    return out.getvalue()


def rows_json(header: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """The header indented, then one row per line (C-speed JSON; diff-friendly)."""
    head = json.dumps({**header, "rows": []}, indent=1, allow_nan=False)
    assert head.endswith('"rows": []\n}')
    body = ",\n".join(json.dumps(r, allow_nan=False, sort_keys=False) for r in rows)
    return head[: -len("[]\n}")] + ("[\n" + body + "\n]" if rows else "[]") + "\n}\n"


def prepare_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: is a file; give a folder")
    if not out.parent.is_dir():
        raise InputError(f"--out {out}: folder {out.parent} does not exist")
    try:
        out.mkdir(exist_ok=True)
    except OSError as e:
        raise InputError(f"--out {out}: cannot create the folder ({e})") from None


class RowStore:
    """Rows keyed by configuration hash, in `DIR/<stem>.json` (+ `.csv` if columns);
    folder None: in memory only (the API's sweep without an output folder)."""

    def __init__(
        self,
        folder: Path | None,
        stem: str,
        header: dict[str, Any],
        columns: list[str] | None = None,
        every_s: float = 1.0,
    ) -> None:
        self.json_path = folder / f"{stem}.json" if folder is not None else None
        self.csv_path = folder / f"{stem}.csv" if folder is not None and columns else None
        self.header, self.columns, self.every_s = header, columns, every_s
        self.previous: dict[str, dict[str, Any]] = self._read()
        self.rows: dict[str, dict[str, Any]] = {}
        self.order: dict[str, int] = {}
        self._written = 0.0

    def _read(self) -> dict[str, dict[str, Any]]:
        if self.json_path is None or not self.json_path.exists():
            return {}
        try:
            doc = json.loads(self.json_path.read_text())
            if doc.get("format") != FORMAT:
                return {}
            return {r["key"]: r for r in doc["rows"] if isinstance(r, dict) and "key" in r}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}  # unreadable: start over (it is rewritten whole)

    def done(self, key: str) -> dict[str, Any] | None:
        """The row computed by an earlier run for this key, if any."""
        return self.previous.get(key)

    def add(self, row: dict[str, Any], order: int) -> None:
        self.rows[row["key"]] = row
        self.order[row["key"]] = order
        if time.monotonic() - self._written >= self.every_s:
            self.flush()

    def sorted_rows(self) -> list[dict[str, Any]]:
        return [self.rows[k] for k in sorted(self.rows, key=self.order.__getitem__)]

    def flush(self) -> None:
        if self.json_path is None:
            return
        t0 = time.monotonic()
        rows = self.sorted_rows()
        write_atomic(self.json_path, rows_json({"format": FORMAT, **self.header}, rows))
        if self.csv_path is not None and self.columns is not None:
            write_atomic(self.csv_path, rows_csv(rows, self.columns))
        self._written = time.monotonic()
        # a big sweep is not rewritten more than ~10 % of the time
        self.every_s = max(self.every_s, 10 * (self._written - t0))
