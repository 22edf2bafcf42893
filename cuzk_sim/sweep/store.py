"""The output folder: rows written as they finish, read back to resume.

Every write goes through `cuzk_sim.io.outputs` (a temporary beside the file, fsynced,
renamed once whole), so an interrupted or killed sweep leaves the last complete
results.json, never half a file. Rows are rewritten at most every `every_s` seconds while
a sweep runs, and once at the end.

Nothing read back is trusted blindly. Each stored row carries `check`, a hash of its own
content: a row whose content no longer matches (edited metrics, a row reduced to its
key) is dropped and computed again. A folder holding another sweep (another name, other
axes, replicas or jitter) is refused rather than merged, and one sweep at a time writes
a folder (an exclusive lock on `.<stem>.lock`; a second is refused at once). Temporaries
a killed sweep left behind are removed when the next one takes the lock.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import hashlib
import io
import json
import os
import time
from pathlib import Path
from typing import Any

from cuzk_sim.io.errors import InputError
from cuzk_sim.io.outputs import write_text

FORMAT = "cuzk-sim-sweep/1"
IDENTITY = ("sweep", "axis_paths", "replicas", "jitter")  # what one folder holds one of


def write_atomic(path: Path, text: str) -> None:
    """Whole or not at all (cuzk_sim.io.outputs)."""
    write_text(path, text)


def row_check(row: dict[str, Any]) -> str:
    """16 hex digits of SHA-256 over the row's canonical JSON, `check` itself left out."""
    body = {k: v for k, v in row.items() if k != "check"}
    blob = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def identity(header: dict[str, Any]) -> dict[str, Any]:
    axes = header.get("axes")
    ident = {k: header.get(k) for k in IDENTITY if k != "axis_paths"}
    ident["axis_paths"] = sorted(axes) if isinstance(axes, dict) else None
    return ident


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
    body = ",\n".join(
        json.dumps({**r, "check": row_check(r)}, allow_nan=False, sort_keys=False) for r in rows
    )
    return head[: -len("[]\n}")] + ("[\n" + body + "\n]" if rows else "[]") + "\n}\n"


def prepare_out(out: Path) -> None:
    from cuzk_sim.io.inputs import path_kind

    kind = path_kind(out, "--out")
    if kind in ("file", "special"):
        raise InputError(f"--out {out}: is a file; give a folder")
    if path_kind(out.parent, "--out") != "folder":
        raise InputError(f"--out {out}: folder {out.parent} does not exist")
    try:
        out.mkdir(exist_ok=True)
    except OSError as e:
        raise InputError(f"--out {out}: cannot create the folder ({e.strerror or e})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise InputError(f"--out {out}: the folder is not writable")


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
        self.dropped = 0  # stored rows not trusted (content not matching its check)
        self.damaged: str | None = None  # why the stored file could not be read at all
        self._lock: int | None = None
        if folder is not None:
            self._take_lock(folder, stem)
        self.previous: dict[str, dict[str, Any]] = self._read()
        self.rows: dict[str, dict[str, Any]] = {}
        self.order: dict[str, int] = {}
        self._written = 0.0

    def _take_lock(self, folder: Path, stem: str) -> None:
        path = folder / f".{stem}.lock"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as e:
            raise InputError(f"--out {folder}: cannot write there ({e.strerror or e})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise InputError(
                f"--out {folder}: another sweep is writing this folder now; wait for it "
                "or give another --out"
            ) from None
        self._lock = fd
        for name in (f"{stem}.json", f"{stem}.csv"):  # a killed sweep's temporaries
            for stale in folder.glob(f".{name}.*.tmp"):
                with contextlib.suppress(OSError):
                    stale.unlink()

    def close(self) -> None:
        """Give the folder's lock back (also when the process ends)."""
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def _read(self) -> dict[str, dict[str, Any]]:
        if self.json_path is None or not self.json_path.exists():
            return {}
        from cuzk_sim.io.inputs import MAX_JSON_BYTES, load_json

        try:
            doc = load_json(self.json_path, "sweep results", MAX_JSON_BYTES)
            if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                raise ValueError(f"not a {FORMAT} file")
            rows = doc["rows"]
            if not isinstance(rows, list):
                raise ValueError("rows is not a list")
        except (InputError, ValueError, KeyError) as e:
            self.damaged = str(e)  # unreadable: every row is computed again
            return {}
        theirs, mine = identity(doc), identity(self.header)
        if theirs != mine:
            diff = ", ".join(
                f"{k} {theirs[k]!r} (now {mine[k]!r})" for k in IDENTITY if theirs[k] != mine[k]
            )
            raise InputError(
                f"{self.json_path}: holds the rows of another sweep ({diff}); give another "
                "--out (or delete the folder) rather than mix two sweeps in one"
            )
        out: dict[str, dict[str, Any]] = {}
        for r in rows:
            if not _trusted(r):
                self.dropped += 1
                continue
            r = {k: v for k, v in r.items() if k != "check"}
            if r["key"] in out:  # a duplicated row: once
                continue
            out[r["key"]] = r
        return out

    def note(self) -> str | None:
        """What was not trusted in the folder, for the user (None: all of it was)."""
        if self.json_path is None:
            return None
        if self.damaged is not None:
            return f"{self.json_path}: unreadable ({self.damaged}): computed again"
        if self.dropped:
            return (
                f"{self.json_path}: {self.dropped} row(s) whose content does not match its "
                "check (edited or damaged): computed again"
            )
        return None

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


def _trusted(r: Any) -> bool:
    """A stored row to reuse: an object with a key and a check its content matches."""
    if not isinstance(r, dict) or not isinstance(r.get("key"), str):
        return False
    check = r.get("check")
    try:
        return isinstance(check, str) and check == row_check(r)
    except (TypeError, ValueError):
        return False
