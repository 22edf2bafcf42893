"""The data-loss suite (issue 30, items 2 and 4): no output is lost, torn, or written over
an input; no sweep row is lost, duplicated or trusted when its content was changed; no
temporary file is left behind.

Faults are real where the machine allows: a full disk is a file-size limit
(RLIMIT_FSIZE: the write fails with EFBIG), a read-only folder is one the writing process
may not write (as root, a forked child that gives up root), SIGINT and SIGKILL go to a
sweep running in another process, and two sweeps write one folder at once."""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app

ROOT = Path(__file__).parents[2]
SCENARIO = ROOT / "scenarios" / "phase9-single-worker.toml"
LOG = ROOT / "tests" / "logs" / "fixtures" / "mutex-contention.log"
OLD = b"the previous output\n"
runner = CliRunner()

OURS = """
seed = 1
profile = "h200"
[hardware]
gpus = 1
vram = "140 GiB"
[engine.gpus]
gpu_workers_per_device = 1
[plan]
gpu_prover = { domain_log2 = 10 }
[plan.host]
synthesis = "0 s"
pce = false
[[workload]]
kind = "porep"
count = 1
partitions = 2
"""


SMALL_SPEC = f"""
name = "small"
base = "{ROOT / "scenarios" / "phase9-dual-worker-three-part-fix.toml"}"
[axes]
"engine.gpus.gpu_workers_per_device" = "1..3"
"variant.prestage" = ["off", "outside_mutex"]
"""


def write_spec(folder: Path) -> Path:
    (folder / "small.toml").write_text(SMALL_SPEC)
    return folder / "small.toml"


def no_temporaries(folder: Path) -> None:
    left = [p.name for p in folder.iterdir() if ".tmp" in p.name]
    assert not left, left


def exit_2_one_line(r, *needles: str) -> None:
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    errors = [x for x in r.output.splitlines() if x.startswith("error:")]
    assert len(errors) == 1, r.output
    for n in needles:
        assert n in errors[0], (n, errors[0])


# --- an output naming an input -------------------------------------------------------


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "s.toml").write_text(SCENARIO.read_text())
    (tmp_path / "ours.toml").write_text(OURS)
    (tmp_path / "d.log").write_bytes(LOG.read_bytes())
    base = (ROOT / "cuzk_sim" / "profiles" / "rtx5070ti.toml").read_text()
    (tmp_path / "base.toml").write_text(base)
    return {p.name: p for p in tmp_path.iterdir()}


COMMANDS_ONTO_INPUT = {
    "run --trace": ["run", "{s}", "--trace", "{s}"],
    "run --log": ["run", "{s}", "--log", "{dir}/./s.toml"],
    "gpu-run --log": ["gpu-run", "{ours}", "--device", "dry-run", "--log", "{ours}"],
    "logs --trace": ["logs", "{d}", "--trace", "{d}"],
    "calibrate -o": ["calibrate", "{d}", "--base", "{base}", "-o", "{base}"],
    "scenario-from-log -o": [
        "scenario-from-log", "{d}", "--plan-from", "{ours}", "-o", "{ours}",
    ],
    "gate --junit": ["gate", "{s}", "--baseline", "{dir}/b.json", "--junit", "{s}"],
}  # fmt: skip


@pytest.mark.parametrize("command", list(COMMANDS_ONTO_INPUT))
def test_an_output_naming_an_input_is_refused_and_the_input_kept(inputs, tmp_path, command):
    """Seven commands replaced their input with their output before."""
    names = {k.split(".")[0]: str(v) for k, v in inputs.items()} | {"dir": str(tmp_path)}
    args = [a.format(**names) for a in COMMANDS_ONTO_INPUT[command]]
    before = {k: p.read_bytes() for k, p in inputs.items()}
    r = runner.invoke(app, args)
    exit_2_one_line(r, "is the input")
    assert {k: p.read_bytes() for k, p in inputs.items()} == before
    no_temporaries(tmp_path)


def test_groth16_prove_onto_its_witness_is_refused(tmp_path) -> None:
    from cubic_files import cubic_files

    files = cubic_files(tmp_path)
    before = files["wtns"].read_bytes()
    r = runner.invoke(
        app,
        ["groth16", "prove", str(tmp_path / "k.zkey"), str(files["wtns"]), str(files["wtns"]),
         str(tmp_path / "public.out.json")],
    )  # fmt: skip
    assert r.exit_code == 2 and "is the input WITNESS" in r.output, r.output
    assert files["wtns"].read_bytes() == before


# --- special files -------------------------------------------------------------------


@pytest.fixture
def char_device(tmp_path: Path) -> Path:
    """A character device node of our own (the null device's numbers), never /dev/null:
    a failing check must not be able to replace a system file."""
    path = tmp_path / "null"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        os.mkfifo(path)  # not root: a FIFO is a special file too
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["run", str(SCENARIO), "--trace", "{dev}"],
        ["run", str(SCENARIO), "--log", "{dev}"],
        ["logs", str(LOG), "--trace", "{dev}"],
        ["calibrate", str(LOG), "--base", "h200", "-o", "{dev}.toml"],
    ],
    ids=["run--trace", "run--log", "logs--trace", "calibrate-o"],
)
def test_a_special_file_as_output_is_refused_and_stays_a_device(char_device, args) -> None:
    if args[-1].endswith(".toml"):
        os.rename(char_device, f"{char_device}.toml")
        char_device = Path(f"{char_device}.toml")
    r = runner.invoke(app, [a.format(dev=char_device.with_suffix("")) for a in args])
    assert r.exit_code == 2, r.output
    assert "not a regular file" in r.output
    mode = os.lstat(char_device).st_mode
    assert stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def test_a_folder_in_the_way_is_refused_before_any_work(tmp_path) -> None:
    (tmp_path / "t.json").mkdir()
    r = runner.invoke(app, ["run", str(SCENARIO), "--trace", str(tmp_path / "t.json")])
    exit_2_one_line(r, "is a folder")


# --- a full disk ---------------------------------------------------------------------


@pytest.fixture
def file_size_limit() -> Iterator[Callable[[int], None]]:
    """Writes beyond n bytes fail with EFBIG, as on a full disk (RLIMIT_FSIZE)."""
    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    yield lambda n: resource.setrlimit(resource.RLIMIT_FSIZE, (n, old[1]))
    resource.setrlimit(resource.RLIMIT_FSIZE, old)
    signal.signal(signal.SIGXFSZ, handler)


FULL_DISK = {
    "run --log": (["run", str(SCENARIO), "--log", "{out}"], "out.log"),
    "run --trace": (["run", str(SCENARIO), "--trace", "{out}"], "out.json"),
    "run --plot": (["run", str(SCENARIO), "--plot", "{out}"], "out.png"),
    "logs --trace": (["logs", str(LOG), "--trace", "{out}"], "out.json"),
    "logs --plot": (["logs", str(LOG), "--plot", "{out}"], "out.png"),
    "calibrate -o": (["calibrate", str(LOG), "--base", "rtx5070ti", "-o", "{out}"], "out.toml"),
    "gpu-run --log": (["gpu-run", "{ours}", "--device", "dry-run", "--log", "{out}"], "out.log"),
    "gpu-run --details": (
        ["gpu-run", "{ours}", "--device", "dry-run", "--details", "{out}"], "out.json",
    ),
    "gpu-run --trace": (
        ["gpu-run", "{ours}", "--device", "dry-run", "--trace", "{out}"], "out.json",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(FULL_DISK))
def test_a_full_disk_leaves_the_previous_output_whole(tmp_path, file_size_limit, case):
    """Before: a 4 KiB fragment replaced the previous output (run --log/--plot,
    calibrate -o, logs --trace/--plot), or a traceback and a .tmp (gpu-run)."""
    args, name = FULL_DISK[case]
    out = tmp_path / name
    out.write_bytes(OLD)
    (tmp_path / "ours.toml").write_text(OURS)
    argv = [a.format(out=out, ours=tmp_path / "ours.toml") for a in args]
    file_size_limit(64)  # every output of these is larger
    try:
        r = runner.invoke(app, argv)
    finally:
        file_size_limit(resource.RLIM_INFINITY)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and "cannot write" in r.output, r.output
    assert out.read_bytes() == OLD
    no_temporaries(tmp_path)


def test_a_full_disk_during_a_sweep_keeps_the_last_whole_results(tmp_path, file_size_limit):
    from cuzk_sim import api
    from cuzk_sim.io.errors import InputError

    spec = write_spec(tmp_path)
    out = tmp_path / "out"
    api.sweep(spec, out, jobs=1, plots=False)
    before = (out / "results.json").read_bytes()
    (out / "results.json").write_bytes(before)  # a finished sweep: rerun resumes every row
    file_size_limit(1024)
    try:
        with pytest.raises(InputError, match="cannot write"):
            api.sweep(spec, out, jobs=1, plots=False)
    finally:
        file_size_limit(resource.RLIM_INFINITY)
    assert (out / "results.json").read_bytes() == before
    no_temporaries(out)


# --- a read-only folder --------------------------------------------------------------


def unprivileged(fn: Callable[[], None]) -> None:
    """Run `fn` in a forked child that may not write a 0o555 folder (as root: the child
    gives up root first, so the permission is real); its assertion errors come back."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        code, message = 0, b""
        try:
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            fn()
        except BaseException as e:  # reported to the parent
            code, message = 1, f"{type(e).__name__}: {e}".encode()
        os.write(write, message)
        os._exit(code)
    os.close(write)
    message = os.read(read, 65536).decode()
    os.close(read)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, message


def test_a_read_only_folder_keeps_its_files_and_gets_no_temporary(tmp_path) -> None:
    from cuzk_sim.io.errors import InputError
    from cuzk_sim.io.outputs import OutputError, write_text
    from cuzk_sim.sweep.store import RowStore, prepare_out

    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "out.json").write_bytes(OLD)
    os.chmod(tmp_path, 0o755)
    os.chmod(folder, 0o555)

    def child() -> None:
        try:
            write_text(folder / "out.json", "new")
        except OutputError as e:
            assert "Permission denied" in str(e) and "out.json" in str(e)
        else:
            raise AssertionError("a write into a read-only folder succeeded")
        for attempt in (lambda: prepare_out(folder), lambda: RowStore(folder, "results", {})):
            try:
                attempt()
            except InputError as e:
                assert str(folder) in str(e)
            else:
                raise AssertionError("a sweep store in a read-only folder was accepted")

    try:
        unprivileged(child)
    finally:
        os.chmod(folder, 0o755)
    assert (folder / "out.json").read_bytes() == OLD
    assert sorted(p.name for p in folder.iterdir()) == ["out.json"]


# --- sweeps interrupted, killed, resumed, shared -------------------------------------

KILL_SPEC = f"""
name = "kill"
base = "{SCENARIO}"
[axes]
"seed" = "1..120"
"workload[0].count" = [2]
"""


def start_sweep(spec: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "cuzk_sim", "sweep", str(spec), "--out", str(out), "--jobs", "1",
         "--no-plots"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def wait_for_rows(out: Path, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """Until the sweep has stored some rows (results.json exists)."""
    end = time.monotonic() + timeout
    while not (out / "results.json").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, "no rows stored"
        time.sleep(0.02)


def stored_rows(out: Path) -> list[dict]:
    from cuzk_sim.sweep.store import row_check

    doc = json.loads((out / "results.json").read_text())
    rows = doc["rows"]
    assert all(r["check"] == row_check(r) for r in rows)  # whole rows only
    keys = [r["key"] for r in rows]
    assert len(keys) == len(set(keys))  # none twice
    return rows


@pytest.fixture(scope="module")
def clean_rows(tmp_path_factory) -> list[dict]:
    """The kill spec's rows from one uninterrupted sweep (in this process)."""
    from cuzk_sim import api

    d = tmp_path_factory.mktemp("clean")
    (d / "kill.toml").write_text(KILL_SPEC)
    api.sweep(d / "kill.toml", d / "out", jobs=1, plots=False)
    return stored_rows(d / "out")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_a_killed_sweep_resumes_to_the_rows_of_an_uninterrupted_one(tmp_path, clean_rows, sig):
    spec, out = tmp_path / "kill.toml", tmp_path / "out"
    spec.write_text(KILL_SPEC)
    proc = start_sweep(spec, out)
    wait_for_rows(out, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    if sig == signal.SIGINT:  # the rows done are flushed, one line says so
        assert proc.returncode in (0, 130), err
        assert "Traceback" not in err
    partial = stored_rows(out)
    assert 0 < len(partial) <= len(clean_rows)
    done = start_sweep(spec, out)
    _, err = done.communicate(timeout=120)
    assert done.returncode == 0, err
    rows = stored_rows(out)
    assert [r["key"] for r in rows] == [r["key"] for r in clean_rows]
    assert rows == clean_rows
    no_temporaries(out)


def test_two_sweeps_into_one_folder_at_once_the_second_is_refused(tmp_path, clean_rows):
    spec, out = tmp_path / "kill.toml", tmp_path / "out"
    spec.write_text(KILL_SPEC)
    first = start_sweep(spec, out)
    wait_for_rows(out, first)
    second = start_sweep(spec, out)
    _, err = second.communicate(timeout=60)
    if first.poll() is None:  # the second started while the first held the folder
        assert second.returncode == 2 and "another sweep is writing" in err, err
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert stored_rows(out) == clean_rows
    no_temporaries(out)


def test_a_sweep_of_another_spec_into_a_folder_is_refused(tmp_path) -> None:
    from cuzk_sim import api
    from cuzk_sim.io.errors import InputError

    out = tmp_path / "out"
    api.sweep(write_spec(tmp_path), out, jobs=1, plots=False)
    before = (out / "results.json").read_bytes()
    (tmp_path / "other.toml").write_text(KILL_SPEC)
    with pytest.raises(InputError, match="holds the rows of another sweep"):
        api.sweep(tmp_path / "other.toml", out, jobs=1, plots=False)
    assert (out / "results.json").read_bytes() == before


def test_rows_whose_content_does_not_match_are_recomputed(tmp_path, monkeypatch) -> None:
    """An edited metric (its key intact), a row reduced to its key, a duplicated row:
    the first two are computed again, the third counted once."""
    import cuzk_sim.sweep.run as sweep_run
    from cuzk_sim import api

    spec, out = write_spec(tmp_path), tmp_path / "out"
    clean = api.sweep(spec, out, jobs=1, plots=False)
    doc = json.loads((out / "results.json").read_text())
    rows = doc["rows"]
    rows[0]["seconds_per_proof"] = 1.0  # edited: the check no longer matches
    rows[1] = {"key": rows[1]["key"]}  # a bare key
    rows.append(dict(rows[2]))  # a duplicate
    (out / "results.json").write_text(json.dumps(doc))
    calls = []
    original = sweep_run.evaluate
    monkeypatch.setattr(sweep_run, "evaluate", lambda t: calls.append(t.key) or original(t))
    again = api.sweep(spec, out, jobs=1, plots=False)
    assert sorted(calls) == sorted([clean.rows[0]["key"], clean.rows[1]["key"]])
    assert again.rows == clean.rows
    assert any("2 row(s)" in n for n in again.notes), again.notes
    assert len(stored_rows(out)) == len(clean.rows)


# --- validate: a damaged output folder -----------------------------------------------


@pytest.fixture
def grid(tmp_path: Path):
    from cuzk_sim.validation.grid import pipeline_executor, run_grid
    from cuzk_sim.validation.spec import load_spec

    (tmp_path / "s.toml").write_text(OURS)
    (tmp_path / "spec.toml").write_text(
        'name = "t"\nbase = "s.toml"\ncaps = [-0.3, 3]\n[[config]]\nname = "w1"\n'
    )
    spec = load_spec(tmp_path / "spec.toml")
    inner = pipeline_executor("dry-run")
    calls: list[int] = []

    def execute(scn):
        calls.append(scn.config.vram)
        return inner(scn)

    said: list[str] = []

    def run() -> tuple:
        return run_grid(spec, tmp_path / "out", execute, say=said.append)

    return run, calls, said, tmp_path / "out"


def test_a_damaged_real_jsonl_is_reported_and_rebuilt(grid) -> None:
    run, calls, said, out = grid
    rows, summary = run()
    assert len(calls) == 3
    lines = (out / "real.jsonl").read_text().splitlines()
    damaged = [lines[0], lines[0], '{"key": 1}', "[]", lines[1][: len(lines[1]) // 2]]
    (out / "real.jsonl").write_text("\n".join([*damaged, lines[2]]))  # no final newline
    rows2, summary2 = run()
    assert any("3 damaged line(s), 1 duplicated" in s for s in said), "\n".join(said)
    assert len(calls) == 4  # the run whose line was torn, again; the duplicate once
    kept = (out / "real.jsonl").read_text().splitlines()
    assert len(kept) == 3 and len({json.loads(x)["key"] for x in kept}) == 3
    assert summary2 == summary


def test_a_damaged_predictions_json_is_reported_and_predicted_again(grid) -> None:
    run, calls, said, out = grid
    run()
    good = json.loads((out / "predictions.json").read_text())
    for damage in ("{not json", json.dumps({"spec": "t", "runs": [{"key": 1}]}), "[]"):
        (out / "predictions.json").write_text(damage)
        run()
        assert any("predictions.json" in s and "predicting again" in s for s in said), said
        again = json.loads((out / "predictions.json").read_text())
        assert again["runs"] == good["runs"]
    assert len(calls) == 3  # the real runs matched the new predictions: none ran again


# --- the output layer itself ---------------------------------------------------------


def test_an_interrupted_writer_leaves_the_previous_file(tmp_path) -> None:
    from cuzk_sim.io.outputs import atomic_file

    out = tmp_path / "out.log"
    out.write_bytes(OLD)
    with pytest.raises(KeyboardInterrupt), atomic_file(out) as f:
        f.write("half of the new")
        raise KeyboardInterrupt
    assert out.read_bytes() == OLD
    no_temporaries(tmp_path)


def test_a_staged_file_that_fails_its_check_replaces_nothing(tmp_path) -> None:
    from cuzk_sim.io.errors import InputError
    from cuzk_sim.io.outputs import write_checked

    out = tmp_path / "p.toml"
    out.write_bytes(OLD)
    seen = []

    def check(staged: Path) -> None:
        seen.append(staged.read_bytes())
        assert staged.suffix == ".toml" and staged.parent == tmp_path
        raise InputError("does not load")

    with pytest.raises(InputError, match="does not load"):
        write_checked(out, b"new", check)
    assert seen == [b"new"] and out.read_bytes() == OLD
    no_temporaries(tmp_path)


def test_an_output_that_is_an_input_by_another_name_is_found(tmp_path) -> None:
    from cuzk_sim.io.errors import InputError
    from cuzk_sim.io.outputs import check_distinct

    src = tmp_path / "s.toml"
    src.write_bytes(OLD)
    os.link(src, tmp_path / "hard.toml")
    (tmp_path / "soft.toml").symlink_to(src)
    for name in ("hard.toml", "soft.toml", "./s.toml", "x/../s.toml"):
        (tmp_path / "x").mkdir(exist_ok=True)
        with pytest.raises(InputError, match="is the input SCENARIO"):
            check_distinct({"--log": tmp_path / name}, {"SCENARIO": src})
    check_distinct({"--log": tmp_path / "other.log"}, {"SCENARIO": src})  # fine
