"""Reading an input file safely: a regular file only, never more than a byte limit.

`Path.read_bytes()` on /dev/zero or a FIFO never returns, and `stat().st_size` says 0 for
both, so a size check alone does not protect a reader. Here the file is opened first and
checked with `fstat` on the open descriptor (no race between the check and the read), and
the read asks for at most limit + 1 bytes, so a file that grows while we read it is still
refused at the limit.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from pathlib import Path

_KINDS = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a pipe (FIFO)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


class FileRefused(OSError):
    """A path that is not a regular file, or a file over the byte limit; an OSError, so
    callers that already report `e.strerror` for unreadable files report this too."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(0, reason, path)

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def read_limited(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file `path`, refused (FileRefused) beyond `limit` bytes."""
    path = str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not wait
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
            raise FileRefused(path, f"is {kind}, not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            # read(n) allocates n bytes up front: ask for the size fstat gave, plus chunks
            # only if the file grew meanwhile
            parts = [f.read(min(info.st_size, limit) + 1)]
            got = len(parts[0])
            while got <= limit and (chunk := f.read(min(1 << 20, limit + 1 - got))):
                parts.append(chunk)
                got += len(chunk)
            data = parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise FileRefused(path, f"is larger than the limit of {limit} bytes for this input")
    return data


def _creation_mode(path: str) -> int:
    """The mode a plain open() would give a new file (0o666 less the umask), or the mode
    of the file being replaced, so an atomic write does not leave a 0600 temp's mode."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def stage(path: str | Path, data: bytes) -> str:
    """Write `data` to a new temporary file beside `path` (same folder, so the final rename
    cannot cross file systems) and return its name; nothing at `path` changes yet."""
    path = str(path)
    folder = os.path.dirname(path) or "."
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, _creation_mode(path))
    except BaseException:
        os.unlink(temp)
        raise
    return temp


def write_atomic(path: str | Path, data: bytes) -> None:
    """Replace `path` with `data` only once all of it is written: a failed write (disk
    full, permission, interrupt) leaves the previous file as it was, never truncated."""
    temp = stage(path, data)
    try:
        os.replace(temp, str(path))
    except BaseException:
        os.unlink(temp)
        raise


MAX_JSON_DEPTH = 64  # our JSON files are a few levels deep; CPython's parser recurses
_JSON_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_JSON_STRING = re.compile(rb'"[^"]*"')  # after escapes are gone: one character class
_JSON_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_STEP = bytes.maketrans(b"[]{}", b"\x01\xff\x01\xff")
_DEPTH_CHUNK = 1 << 22


def json_depth_exceeds(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Does JSON `text` nest arrays and objects deeper than `limit`? Checked before
    `json.loads`, whose C parser recurses and can overflow the C stack (py_ecc raises
    Python's recursion limit, so no RecursionError comes first). Linear time, bounded
    memory: escapes, then strings, then everything but brackets are removed by regular
    expressions whose repeats are single character classes (no backtracking stack: a
    pattern with an alternation inside its repeat holds memory per character of a long
    string), and the depth is a running sum (numpy) over chunks of the brackets left."""
    import numpy as np

    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if b"[" not in data and b"{" not in data:
        return False
    brackets = _JSON_NOT_BRACKET.sub(b"", _JSON_STRING.sub(b"", _JSON_ESCAPE.sub(b"", data)))
    steps = brackets.translate(_STEP)
    depth = 0
    for start in range(0, len(steps), _DEPTH_CHUNK):
        run = np.frombuffer(
            steps, dtype=np.int8, count=min(_DEPTH_CHUNK, len(steps) - start), offset=start
        ).cumsum(dtype=np.int64)
        if depth + int(run.max()) > limit:
            return True
        depth += int(run[-1])
    return False
