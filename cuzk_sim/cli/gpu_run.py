"""`cuzk-sim gpu-run`: execute a scenario on the GPU with our prover (the real pipeline).

The output is the model's: the same JSON as `run --json` (so the two diff key by key),
the same table and OOM post-mortem, the same trace format; `--log` writes the lines a
cuzk daemon would (cuzk_sim.logs.emit). Exit codes as `run`: 0, 1 on an OOM, 2 on bad
input (a scenario whose plan is not our prover's, a card larger than the GPU, ...).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from cuzk_sim.cli.simulate import EXIT_MISMATCH, _fail_input, check_output_path
from cuzk_sim.io.errors import InputError


def write_cuzk_log(path: Path, run: Any) -> None:
    """The run's events as the lines a cuzk daemon writes (TIMELINE, CUZK_TIMING, tracing)."""
    try:
        from cuzk_sim.logs import emit
    except ImportError:
        raise InputError(
            "--log: the cuzk log emitter (cuzk_sim.logs.emit) is not installed"
        ) from None
    # every worker the engine started, numbered as cuzk does (GPU by GPU), not only those
    # that ran a partition; then `initializing GPU workers` states the layout
    devices, wpd = list(run.spec.devices), run.spec.workers_per_device
    workers = {f"gpu{d}-w{k}": i * wpd + k for i, d in enumerate(devices) for k in range(wpd)}
    from cuzk_sim.io.outputs import atomic_file

    with atomic_file(path) as out:  # whole or not at all, no .tmp left behind
        log = emit.LogWriter(out)
        log.line(emit.engine_starting(log.when(0.0)))
        for gpu, nbytes in sorted(getattr(run, "context_real", {}).items()):
            log.line(emit.sim_context(gpu, nbytes))
        for gpu, (name, total) in sorted(run_cards(run).items()):
            log.line(emit.sim_device(gpu, total, name))
        log.line(emit.initializing_gpu_workers(log.when(0.0), devices, wpd))
        for name, i in workers.items():
            gpu = int(name.split("-")[0].removeprefix("gpu"))
            log.line(emit.gpu_worker_started(log.when(0.0), i, gpu, int(name.split("-w")[1])))
        for t, event, f in sorted(run.events, key=lambda x: x[0]):
            off = log.offset(t)
            if event == "gpu_queue":
                log.line(emit.gpu_queue(off, f["job"], f["partition"]))
            elif event == "gpu_start":
                w = workers[f["worker"]]
                log.line(emit.gpu_pickup(off, f["job"], w, f["partition"]))
                log.line(emit.gpu_start(off, f["job"], w, f["partition"]))
            elif event == "mutex" and run.spec.mutex_scope != "none":  # no mutex: no lines
                log.line(emit.pre_lock(0, emit.ms(f["wait_s"])))
                log.line(emit.mutex_held(emit.ms(f["held_s"]), emit.ms(f["held_s"] + f["wait_s"])))
            elif event == "gpu_end":
                gpu_ms = emit.ms(f["gpu_s"])
                log.line(emit.gpu_end(off, f["job"], workers[f["worker"]], f["partition"], gpu_ms))
                log.line(emit.partition_gpu_complete(log.when(t), f["job"], f["partition"], gpu_ms))
            elif event == "gpu_failed":
                log.line(
                    emit.partition_gpu_failed(log.when(t), f["job"], f["partition"], f["error"])
                )
            elif event == "oom" and f["fatal"]:
                log.lines(emit.rust_panic(emit.cuda_oom_message()))
            elif event == "oom":
                log.line(emit.prestage_skip_vram())
            elif event == "step":
                log.line(
                    emit.sim_step(
                        f["step"], f["kind"], f["size"], f["nbytes"], f["pinned"],
                        int(f["seconds"] * 1e6), f.get("zeros"), f.get("ones"),
                    )
                )  # fmt: skip
            elif event == "proof_done":
                total = emit.ms(f["total_s"])
                log.line(emit.proof_assembled(log.when(t), f["job"], total, 0, total))


def run_cards(run: Any) -> dict[int, tuple[str, int]]:
    """Name and total memory of each GPU a real run used (cudaGetDeviceProperties), for
    the log's CUZK_SIM_DEVICE lines; none in a dry run (no card)."""
    if type(getattr(run, "backend", None)).__name__ != "CupyBackend":
        return {}
    import cupy

    out = {}
    for g in getattr(run, "context_real", {}):
        props = cupy.cuda.runtime.getDeviceProperties(g)
        name = props["name"]
        out[g] = (name.decode() if isinstance(name, bytes) else str(name), props["totalGlobalMem"])
    return out


def gpu_run(
    scenario: Annotated[Path, typer.Argument(help="Scenario TOML file (\\[plan] gpu_prover).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    trace: Annotated[
        Path | None, typer.Option("--trace", help="Write Chrome trace-event JSON.")
    ] = None,
    log: Annotated[
        Path | None, typer.Option("--log", help="Write a cuzk-style daemon log.")
    ] = None,
    device: Annotated[
        str, typer.Option("--device", help="real (the GPU, CuPy) or dry-run (no GPU).")
    ] = "real",
    fault: Annotated[
        list[str] | None,
        typer.Option(
            "--fault",
            help="Inject a fault (repeatable): oom:BUFFER:P, oom:random:P, exception:P, "
            "shrink:SECONDS:SIZE.",
        ),
    ] = None,
    fault_seed: Annotated[
        int | None,
        typer.Option("--fault-seed", help="Seed of the --fault injections (default 0)."),
    ] = None,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Prove a small reference circuit (domain <= 2^8) instead of synthetic "
            "partitions and compare every proof with the reference prover's.",
        ),
    ] = False,
    details: Annotated[
        Path | None,
        typer.Option(
            "--details",
            help="Write what only a real run has (jobs, ballast, leaks, per-step GPU times).",
        ),
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Change a scenario key for this run, KEY.PATH=VALUE (repeatable), as in "
            "`run`, e.g. --set workload[0].count=8.",
        ),
    ] = None,
) -> None:
    """Run a scenario on the GPU; exit 1 on an OOM or a stall (and, with --verify, on an
    invalid proof or a lost job). --device dry-run runs the pipeline without a GPU on the model's
    allocator ledger: memory only, no timings (its output says DRY RUN)."""
    try:
        _check_options(scenario, device, verify, trace=trace, log=log, details=details)
        if fault_seed is not None and not fault:  # else silently ignored
            raise InputError("--fault-seed seeds the --fault injections: give --fault")
        scn = _scenario(scenario, overrides)
        seed = fault_seed or 0
        run = _real_run(scenario, scn, device, fault, seed, verify, (trace, log, details))
        try:
            result = run.execute()
        except ValueError as e:  # e.g. hardware.vram larger than the GPU
            raise InputError(f"{scenario}: {e}") from None
        if log is not None:
            write_cuzk_log(log, run)
    except InputError as e:
        raise _fail_input(e) from None
    info = run.details()
    from cuzk_sim.api import describe

    describe(result, scn)
    result.device = device  # "dry-run": its JSON and table say so, with no timings
    _print_result(result, info, as_json)
    _write_outputs(result, info, trace, details)
    if (
        result.oom
        or result.stalled
        or info["proofs_invalid"]
        or info["jobs_lost"]
        or any(info["leaked_bytes"].values())
    ):
        raise typer.Exit(EXIT_MISMATCH)


def _check_options(scenario: Path, device: str, verify: bool, **outputs: Path | None) -> None:
    """The output paths (writable, distinct, not the scenario), the device and --verify;
    an InputError naming the option otherwise."""
    for name, p in outputs.items():
        if p is not None:
            check_output_path(f"--{name}", p, inputs={"SCENARIO": scenario})
    from cuzk_sim.io.outputs import check_distinct

    check_distinct({f"--{name}": p for name, p in outputs.items()})
    if device not in ("real", "dry-run"):
        raise InputError(f"--device {device!r}: expected real or dry-run")
    if verify and device != "real":
        raise InputError("--verify needs --device real (the reference proofs come from the GPU)")
    from cuzk_sim.gpu.backends import gpu_missing

    missing = gpu_missing() if device == "real" else None
    if missing:
        raise InputError(f"--device real: {missing}; --device dry-run runs without a GPU")


def _scenario(scenario: Path, overrides: list[str] | None) -> Any:
    """The scenario with the --set changes applied."""
    from cuzk_sim.scenario import load_scenario
    from cuzk_sim.scenario.overrides import parse_assignment

    changes = dict(parse_assignment(a) for a in overrides or [])
    return load_scenario(scenario, changes or None)


def _real_run(
    scenario: Path,
    scn: Any,
    device: str,
    fault: list[str] | None,
    fault_seed: int,
    verify: bool,
    outputs: tuple[Path | None, ...],
) -> Any:
    """The pipeline's run of `scn` (gpu/pipeline.py RealRun), its faults checked against
    the plan's buffers; with `verify`, each kind's partitions are reference circuits."""
    from cuzk_sim.gpu.backends import backend_for
    from cuzk_sim.gpu.faults import Fault, FaultPlan
    from cuzk_sim.gpu.pipeline import RealRun
    from cuzk_sim.gpu.run_spec import RunSpec

    try:
        faults = FaultPlan(tuple(Fault.parse(f) for f in fault or []), fault_seed)
    except ValueError as e:
        raise InputError(str(e)) from None
    try:
        spec = RunSpec.from_scenario(scn)
    except ValueError as e:
        raise InputError(str(e)) from None
    buffers = {b for k in spec.work for b, _ in scn.plans[k].buffers()}
    try:
        faults.check_buffers(buffers)
    except ValueError as e:
        raise InputError(f"{scenario}: {e}") from None
    refs = _references(scenario, spec) if verify else None
    if refs is not None:
        from cuzk_sim.gpu.prover import PartitionShape
        from cuzk_sim.gpu.run_spec import KindWork

        work = {
            k: KindWork(PartitionShape.of_key(refs[k].pk), w.flags) for k, w in spec.work.items()
        }
        spec = dataclasses.replace(spec, work=work)
    try:
        return RealRun(
            spec,
            backend_for(device, spec),
            faults=faults,
            verify=refs,
            step_times=any(p is not None for p in outputs),
            say=lambda line: Console(stderr=True).print(line, markup=False, soft_wrap=True),
        )
    except ValueError as e:  # CUZK_SIM_PIPELINE_TUNE
        raise InputError(str(e)) from None


def _references(scenario: Path, spec: Any) -> dict[str, Any]:
    """--verify: each kind's reference circuit and key at the plan's domain."""
    from cuzk_sim.gpu.partition_data import reference_data

    refs = {}
    for kind, w in spec.work.items():
        try:
            refs[kind] = reference_data(w.shape.log_n, key_pinned=w.flags.key_pinned)
        except ValueError as e:
            raise InputError(f"{scenario}: plan.gpu_prover.domain_log2: {e}") from None
    return refs


def _print_result(result: Any, info: dict[str, Any], as_json: bool) -> None:
    """The result as `run` prints it (JSON, or the table and what only a real run has)."""
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
        return
    from cuzk_sim.results.tables import print_run

    console = Console()
    print_run(result, console)
    console.print(
        f"jobs: {info['jobs']}; verified proofs {info['proofs_verified']}, invalid "
        f"{info['proofs_invalid']}; leaked bytes {info['leaked_bytes']}; "
        f"faults injected {info['faults_injected']}",
        markup=False,
    )
    from cuzk_sim.gpu.hostdata import report_line

    console.print(report_line(info["host"]), markup=False, soft_wrap=True)


def _write_outputs(
    result: Any, info: dict[str, Any], trace: Path | None, details: Path | None
) -> None:
    """--trace and --details; a write that fails is a one-line input error (exit 2)."""
    try:
        if trace:
            from cuzk_sim.results.run_trace import write_chrome_trace

            write_chrome_trace(result, str(trace))
        if details:
            from cuzk_sim.io.outputs import write_text

            write_text(details, json.dumps(info, indent=1))
    except OSError as e:
        raise _fail_input(InputError(f"cannot write output: {e}")) from None


def register(app: typer.Typer) -> None:
    from cuzk_sim.cli.simulate import with_throughput

    app.command("gpu-run", help=with_throughput(gpu_run.__doc__))(gpu_run)
