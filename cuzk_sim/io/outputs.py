"""Outputs that are never lost: written whole or not at all, and never two on one path.

Every file a command writes goes through here. It is written to a temporary file beside
its target (same folder: the rename cannot cross file systems), flushed and fsynced, and
renamed over the target only once it is whole; any failure (disk full, a file-size
limit, a permission, an interrupt) removes the temporary and leaves the previous file as
it was. Before any work is done, an output is refused when it cannot be a file (a
folder, a device or FIFO such as /dev/null, a folder that does not exist), when two
outputs name one file, or when an output names one of the command's inputs (directly,
through `..`, a symlink or a hard link): `run s.toml --trace s.toml` would replace the
scenario. A command that writes several files (proof + public, a baseline) stages them
all first and renames them only once all are complete (`write_all`).

A failed write is an `OutputError`: an `InputError` (one line, exit 2) that is also an
`OSError`, so callers that catch either report it the same way.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from cuzk_sim.io.errors import InputError
from cuzk_sim.io.inputs import path_kind
from cuzk_sim.reference.formats.files import stage

__all__ = [
    "OutputError",
    "atomic_file",
    "check_distinct",
    "check_output",
    "check_writable",
    "save_figure",
    "write_all",
    "write_atomic",
    "write_checked",
    "write_text",
]

Paths = Mapping[str, "Path | str | None"]


class OutputError(InputError, OSError):
    """An output that could not be written; the previous file (if any) is intact."""


def _failed(path: Path | str, e: BaseException) -> OutputError:
    why = getattr(e, "strerror", None) or str(e) or type(e).__name__
    return OutputError(f"{path}: cannot write ({why}); the previous file, if any, is intact")


def _same_file(a: Path, b: Path) -> bool:
    try:
        if os.path.realpath(a) == os.path.realpath(b):
            return True
        return a.exists() and b.exists() and os.path.samefile(a, b)  # hard links
    except (OSError, ValueError):
        return False


def check_distinct(outputs: Paths, inputs: Paths | None = None) -> None:
    """Refuse two outputs naming one file, and an output naming an input; keys are how
    the user named them (options, arguments)."""
    named = [(k, Path(p)) for k, p in outputs.items() if p is not None]
    for i, (what_a, a) in enumerate(named):
        for what_b, b in named[i + 1 :]:
            if _same_file(a, b):
                raise InputError(
                    f"{what_a} and {what_b} both name {a}: the second would overwrite the "
                    "first; give two different files"
                )
    for what_in, src in (inputs or {}).items():
        if src is None:
            continue
        for what_out, out in named:
            if _same_file(out, Path(src)):
                raise InputError(
                    f"{what_out} {out}: is the input {what_in}; writing it would replace "
                    "the input: give another file"
                )


def check_writable(what: str, path: Path | str) -> None:
    """Refuse an output that cannot be written (a folder, a missing folder, a special
    file such as a device or FIFO) before any work is done."""
    path = Path(path)
    kind = path_kind(path, what)
    if kind == "folder":
        raise InputError(f"{what} {path}: is a folder; give a file name")
    if kind == "special":
        raise InputError(f"{what} {path}: is not a regular file (a device or pipe?)")
    if path_kind(path.parent, what) != "folder":
        raise InputError(f"{what} {path}: folder {path.parent} does not exist")


def check_output(
    what: str, path: Path | str, inputs: Paths | None = None, suffixes: tuple[str, ...] = ()
) -> None:
    """`check_writable`, the file name's suffix (when `suffixes`), and not an input."""
    path = Path(path)
    if suffixes and path.suffix.lower() not in suffixes:
        raise InputError(f"{what} {path}: the file name must end in one of {', '.join(suffixes)}")
    check_writable(what, path)
    check_distinct({what: path}, inputs)


def _mode_for(path: str) -> int:
    """The mode of the file being replaced, else what open() would create."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _sync_folder(folder: str) -> None:
    """fsync the folder, so the rename itself survives a power loss (best effort)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_file(path: Path | str, mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """A file object for a streaming writer; the target changes only if the block ends
    normally (the temporary is fsynced, then renamed), never otherwise."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_file: mode {mode!r}")
    target = str(path)
    folder = os.path.dirname(target) or "."
    base = os.path.basename(target)
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=folder)
    except (OSError, ValueError) as e:
        raise _failed(target, e) from None
    try:
        with os.fdopen(fd, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, _mode_for(target))
        os.replace(temp, target)
        _sync_folder(folder)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(e, OutputError):
            raise
        raise _failed(target, e) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def write_atomic(path: Path | str, data: bytes) -> None:
    with atomic_file(path, "wb") as f:
        f.write(data)


def write_text(path: Path | str, text: str) -> None:
    write_atomic(path, text.encode("utf-8"))


def write_checked(path: Path | str, data: bytes, check: Callable[[Path], None]) -> None:
    """Stage `data`, call `check` on the staged file (e.g. "what we wrote must load"),
    and rename it into place only if the check passes; otherwise the target is intact.
    The staged file keeps the target's suffix (a loader may look at it)."""
    target = Path(path)
    try:
        fd, temp = tempfile.mkstemp(
            prefix=f".{target.stem}.", suffix=f".tmp{target.suffix}", dir=target.parent
        )
    except (OSError, ValueError) as e:
        raise _failed(target, e) from None
    try:
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(temp, _mode_for(str(target)))
        except OSError as e:
            raise _failed(target, e) from None
        check(Path(temp))
        try:
            os.replace(temp, target)
        except OSError as e:
            raise _failed(target, e) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)


def save_figure(fig: Any, path: Path | str, **kwargs: Any) -> None:
    """A matplotlib figure, in the format its suffix names, written whole or not at all."""
    fmt = Path(path).suffix.lstrip(".").lower() or "png"
    with atomic_file(path, "wb") as f:
        fig.savefig(f, format=fmt, **kwargs)


def write_all(files: Mapping[Path, bytes]) -> None:
    """Write every file or none: stage all, then rename each into place. A failure while
    staging leaves every target untouched and no temporary behind."""
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in files.items():
            try:
                staged.append((stage(path, data), path))
            except OSError as e:  # name the target, not the temporary
                raise _failed(path, e) from None
        while staged:
            temp, path = staged[0]
            try:
                os.replace(temp, path)
            except OSError as e:
                raise _failed(path, e) from None
            staged.pop(0)
    finally:
        for temp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(temp)
