"""Calibration profiles: how long each kind of step takes on one GPU model and host.

A profile (TOML, shipped under cuzk_sim/profiles/) prices every kernel and CPU kind of
the plan vocabulary by one measured point: "this kind took T at size S", plus a fixed
launch cost, scaled linearly or as n·log2(n) (NTTs). Copies take latency + bytes over
the pinned or pageable bandwidth. A step whose kind the profile does not price is an
error naming the step and the profile file. The `[host]` table gives the host's cores
(shared by CPU work, see model/cores.py) and the cost of pinning host memory
(cudaHostAlloc / cudaHostRegister): fixed + bytes / rate.

Honesty: a profile names the card it was measured on (`[gpu] model`, `vram`) and the
prover it prices (`prover`: "cuzk" = cuzk / supraseal-c2 as published, "cuzk_sim.gpu" =
our CuPy prover); every figure says how it was obtained (`basis`: measured, fitted,
derived or assumed) and from where (`source`). A table whose figures differ in basis
gives a table (`basis = { pinned = "assumed", pageable = "derived" }`).
`profile_warnings` says when a scenario uses a profile for another card or prover.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from cuzk_sim.io.errors import InputError, validate_input
from cuzk_sim.io.inputs import MAX_TOML_BYTES, parse_toml, path_kind, read_text
from cuzk_sim.io.units import (
    BandwidthText,
    DurationText,
    SizeText,
    UnitError,
    parse_bandwidth,
    parse_duration,
    parse_size,
)
from cuzk_sim.model.jitter import MeasuredJitter
from cuzk_sim.plan.contract import CPU_KINDS, KERNEL_KINDS
from cuzk_sim.profiles.cost import Cost, Scaling, _work, read_off  # noqa: F401 (re-exported)
from cuzk_sim.profiles.jitter_table import figure_rows, measured_jitter

Basis = Literal["measured", "fitted", "derived", "assumed"]
BasisIn = Basis | dict[str, Basis] | None
Prover = Literal["cuzk", "cuzk_sim.gpu"]
PROVER_NAMES = {"cuzk": "cuzk (supraseal-c2)", "cuzk_sim.gpu": "our CuPy prover (cuzk_sim.gpu)"}


def _check_points(v: list[tuple[int, str]] | None) -> list[tuple[int, str]] | None:
    if v is None:
        return v
    sizes = [s for s, _ in v]
    if len(v) < 2 or any(s <= 0 for s in sizes) or sizes != sorted(set(sizes)):
        raise ValueError("expected two or more [size, time] pairs, sizes positive and ascending")
    return v


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _CostIn(_Strict):
    time: DurationText  # measured duration at `size`
    size: int  # elements, points or constraints
    fixed: DurationText = "0 s"
    scaling: Scaling = "linear"
    # optional: [[size, "time"], ...] measured at several sizes (Cost.points); the time is
    # then read off them (`time`/`fixed` stay as the line through them, for reading)
    points: list[tuple[int, DurationText]] | None = None
    threads: float = 1.0  # cores the measured run kept busy (the demand of engine work)
    # synthesis only (model/host_side.py): the share of its full-speed time bound by host
    # memory bandwidth, and how many syntheses at once saturate that bandwidth; absent: no
    # contention beyond the cores
    memory_bound: float = 0.0
    saturating: float | None = None
    without_pce: float = 1.0  # synthesis only: slowdown of the old path (no PCE)
    source: str = ""  # where the figure comes from
    basis: BasisIn = None  # measured | fitted | derived | assumed
    # MSM kinds only: the price of a 0 and of a 1 scalar as a share of a random one's
    # (Cost.shaped_seconds), with their own basis and source
    zero_share: float | None = None
    one_share: float | None = None
    shares_source: str = ""
    shares_basis: Basis | None = None
    # with the shares: the seconds of such an MSM that 0 and 1 scalars do not shrink
    # (Cost.shaped_seconds), measured apart from the shares, with its own source
    shape_fixed: DurationText | None = None
    shape_fixed_source: str = ""

    @field_validator("threads")
    @classmethod
    def _threads(cls, v: float) -> float:
        if not v > 0:
            raise ValueError("expected a positive number of cores")
        return v

    @field_validator("memory_bound", "zero_share", "one_share")
    @classmethod
    def _share(cls, v: float | None) -> float | None:
        if v is not None and not 0.0 <= v <= 1.0:
            raise ValueError("expected a share between 0 and 1")
        return v

    @model_validator(mode="after")
    def _shares_together(self) -> _CostIn:
        if (self.zero_share is None) != (self.one_share is None):
            raise ValueError("zero_share and one_share are given together or not at all")
        if self.shape_fixed is not None and self.zero_share is None:
            raise ValueError("shape_fixed needs zero_share and one_share")
        return self

    @field_validator("saturating")
    @classmethod
    def _saturating(cls, v: float | None) -> float | None:
        if v is not None and not v > 0:
            raise ValueError("expected a positive number of syntheses")
        return v

    @field_validator("size")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("expected a positive integer (elements, points or constraints)")
        return v

    @field_validator("points")
    @classmethod
    def _points(cls, v: list[tuple[int, str]] | None) -> list[tuple[int, str]] | None:
        return _check_points(v)

    def cost(self) -> Cost:
        fixed, at = parse_duration(self.fixed), parse_duration(self.time)
        pts = tuple((_work(size, self.scaling), parse_duration(t)) for size, t in self.points or ())
        per_unit = max(at - fixed, 0.0) / _work(self.size, self.scaling)
        shares = None
        if self.zero_share is not None and self.one_share is not None:
            shares = (self.zero_share, self.one_share)
        kept = parse_duration(self.shape_fixed) if self.shape_fixed is not None else 0.0
        return Cost(fixed, per_unit, self.scaling, pts, shares, kept)


class _GpuIn(_Strict):
    model: str  # the card the figures were taken on
    vram: SizeText
    context_overhead: SizeText
    source: str = ""
    basis: BasisIn = None


class _CopyIn(_Strict):
    pinned: BandwidthText
    pageable: BandwidthText
    latency: DurationText = "10 us"
    # optional: [[bytes, "time"], ...] host-to-device copies measured at several sizes; a
    # copy's time is then read off them (linear in bytes between two, the nearest
    # segment beyond) instead of latency + bytes / bandwidth: the driver's pageable copies
    # ran at 5.0 GiB/s at 8-16 MiB and 7.5 GiB/s at 32-64 MiB on the H200
    pageable_points: list[tuple[int, DurationText]] | None = None
    pinned_points: list[tuple[int, DurationText]] | None = None
    source: str = ""
    basis: BasisIn = None

    @field_validator("pageable_points", "pinned_points")
    @classmethod
    def _points(cls, v: list[tuple[int, str]] | None) -> list[tuple[int, str]] | None:
        return _check_points(v)


class _HostIn(_Strict):
    cores: int = 96  # physical cores shared by synthesis and the GPU workers' CPU work
    pin_rate: BandwidthText = "20 GiB/s"  # page-locking rate of cudaHostRegister/HostAlloc
    pin_fixed: DurationText = "0 s"
    source: str = ""
    basis: BasisIn = None

    @field_validator("cores")
    @classmethod
    def _cores(cls, v: int) -> int:
        if v < 1:
            raise ValueError("expected at least one core")
        return v


class _PceIn(_Strict):
    extract: _CostIn  # extraction time by constraints
    load: DurationText  # reading a saved PCE from the param cache
    host_bytes: SizeText  # transient host memory while extracting
    source: str = ""
    basis: BasisIn = None


class _AllocatorIn(_Strict):
    """Host time of the driver calls of the `sync` allocator (plain cudaMalloc/cudaFree per
    buffer), by bytes: `sync_free` is paid once the device is idle (cudaFree waits)."""

    sync_malloc: _CostIn | None = None
    sync_free: _CostIn | None = None
    source: str = ""
    basis: BasisIn = None


class _ProfileIn(_Strict):
    name: str
    provenance: str
    prover: Prover | None = None  # the prover whose timings these are
    gpu: _GpuIn
    copy_engine: _CopyIn
    kernel: dict[str, _CostIn]
    cpu: dict[str, _CostIn]
    pce: _PceIn
    host: _HostIn = _HostIn()
    allocator: _AllocatorIn = _AllocatorIn()
    jitter: dict | None = None  # measured timing noise (cuzk_sim/profiles/jitter_table.py)


@dataclass(frozen=True)
class Figure:
    """One figure of a profile as `cuzk-sim profile show` lists it."""

    key: str  # e.g. kernel.ntt, copy_engine.pinned
    value: str  # as written in the profile ("45 ms at 134217728, n_log_n")
    basis: str  # measured | fitted | derived | assumed | unstated
    source: str


def _basis(basis: BasisIn, name: str) -> str:
    if basis is None:
        return "unstated"
    if isinstance(basis, str):
        return basis
    return basis.get(name, "unstated")


def _figures(p: _ProfileIn) -> tuple[Figure, ...]:
    out = [
        Figure(f"gpu.{k}", str(getattr(p.gpu, k)), _basis(p.gpu.basis, k), p.gpu.source)
        for k in ("vram", "context_overhead")
    ]

    def copy_value(k: str) -> str:
        pts = getattr(p.copy_engine, f"{k}_points", None)
        reads = "; read off " + ", ".join(f"{t} at {b} B" for b, t in pts) if pts else ""
        return str(getattr(p.copy_engine, k)) + reads

    out += [
        Figure(
            f"copy_engine.{k}",
            copy_value(k),
            _basis(p.copy_engine.basis, k),
            p.copy_engine.source,
        )
        for k in ("pinned", "pageable", "latency")
    ]

    def cost(key: str, c: _CostIn) -> Figure:
        value = f"{c.time} at size {c.size}" + (f", fixed {c.fixed}" if c.fixed != "0 s" else "")
        value += f", {c.scaling}" if c.scaling != "linear" else ""
        value += f", {c.threads:g} threads" if c.threads != 1.0 else ""
        if c.saturating is not None:
            value += (
                f"; {c.memory_bound:g} of it memory-bound, bandwidth saturated by "
                f"{c.saturating:g} at once"
            )
        if c.points:
            value += "; read off " + ", ".join(f"{t} at {n}" for n, t in c.points)
        return Figure(key, value, _basis(c.basis, "time"), c.source)

    out += [cost(f"kernel.{k}", c) for k, c in sorted(p.kernel.items())]
    out += [
        Figure(
            f"kernel.{k}.scalars",
            f"a 0 scalar {c.zero_share:g}, a 1 scalar {c.one_share:g} of a random one's price"
            + (f"; {c.shape_fixed} of it not shrunk by them" if c.shape_fixed else ""),
            c.shares_basis or "unstated",
            c.shares_source + (f" | shape_fixed: {c.shape_fixed_source}" if c.shape_fixed else ""),
        )
        for k, c in sorted(p.kernel.items())
        if c.zero_share is not None
    ]
    out += [cost(f"cpu.{k}", c) for k, c in sorted(p.cpu.items())]
    out.append(cost("pce.extract", p.pce.extract))
    out += [
        Figure(f"pce.{k}", str(getattr(p.pce, k)), _basis(p.pce.basis, k), p.pce.source)
        for k in ("load", "host_bytes")
    ]
    out += [
        Figure(f"host.{k}", str(getattr(p.host, k)), _basis(p.host.basis, k), p.host.source)
        for k in ("cores", "pin_rate", "pin_fixed")
    ]
    for k in ("sync_malloc", "sync_free"):
        c = getattr(p.allocator, k)
        if c is not None:
            f = cost(f"allocator.{k}", c)
            out.append(Figure(f.key, f.value, _basis(c.basis or p.allocator.basis, "time"),
                              c.source or p.allocator.source))  # fmt: skip
    return tuple(out)


@dataclass(frozen=True)
class Profile:
    name: str
    source: str  # file it was read from
    provenance: str
    gpu_model: str
    vram: int
    context_overhead: int
    pinned_bw: float
    pageable_bw: float
    copy_latency: float
    kernels: dict[str, Cost]
    cpus: dict[str, Cost]
    pce_extract: Cost
    pce_load: float
    pce_host_bytes: int
    host_cores: int = 96
    synthesis_threads: float = 1.0  # cores one partition's synthesis keeps busy
    # the synthesis contention law ([cpu.synthesis] memory_bound, saturating): see
    # model/host_side.py; saturating None: syntheses contend for cores only
    synthesis_memory_bound: float = 0.0
    synthesis_saturating: float | None = None
    synthesis_without_pce: float = 1.0  # engine.pce.enabled = false: synthesis x this
    pin_rate: float = 20 * 2**30  # bytes per second
    pin_fixed: float = 0.0
    prover: str | None = None  # "cuzk" | "cuzk_sim.gpu"; None: the profile does not say
    figures: tuple[Figure, ...] = ()  # every figure with its basis and source
    # the `sync` allocator's cudaMalloc / cudaFree by bytes ([allocator]); None: free
    sync_malloc: Cost | None = None
    sync_free: Cost | None = None
    # host-to-device copies measured per size ((bytes, seconds), ascending; copy_seconds)
    pageable_points: tuple[tuple[float, float], ...] = ()
    pinned_points: tuple[tuple[float, float], ...] = ()
    # a profile derived by the card scaling rules (cuzk_sim/profiles/derive.py): the card
    # preset it was derived for and the measured profile it was scaled from; None: not derived
    derived_for: str | None = None
    derived_from: str | None = None
    # measured timing noise per step kind ([jitter], cuzk_sim/profiles/jitter_table.py); None: none
    jitter: MeasuredJitter | None = None

    def driver_seconds(self, op: str, nbytes: int) -> float:
        """Host time of the cudaMalloc ("alloc") or cudaFree ("free") of a sync buffer."""
        cost = self.sync_malloc if op == "alloc" else self.sync_free
        return cost.seconds(nbytes) if cost is not None else 0.0

    def pin_seconds(self, nbytes: int) -> float:
        """Time to page-lock `nbytes` of host memory."""
        return self.pin_fixed + nbytes / self.pin_rate if nbytes else 0.0

    def kernel_seconds(
        self, kind: str, size: int, step: str, scalars: tuple[int, int] | None = None
    ) -> float:
        """`scalars`: (zeros, ones) among an MSM's `size` scalars (Cost.shaped_seconds; a
        kind without shares prices them as random)."""
        cost = self.kernels.get(kind)
        if cost is None:
            raise InputError(
                f"{step}: kernel kind {kind!r} is not priced by profile {self.source} "
                f"(it prices {sorted(self.kernels)})"
            )
        if scalars is not None:
            return cost.shaped_seconds(size, *scalars)
        return cost.seconds(size)

    def cpu_seconds(self, kind: str, size: int, step: str) -> float:
        cost = self.cpus.get(kind)
        if cost is None:
            raise InputError(
                f"{step}: cpu kind {kind!r} is not priced by profile {self.source} "
                f"(it prices {sorted(self.cpus)})"
            )
        return cost.seconds(size)

    def copy_seconds(self, nbytes: int, pinned: bool) -> float:
        pts = self.pinned_points if pinned else self.pageable_points
        if len(pts) >= 2 and nbytes:
            return read_off(pts, float(nbytes))
        return self.copy_latency + nbytes / (self.pinned_bw if pinned else self.pageable_bw)


BUNDLED = ("rtx5070ti", "h200")


def load_profile(name_or_path: str, base: Path | None = None) -> Profile:
    """A bundled profile by name (`rtx5070ti`), a profile derived for a card preset
    (`rtx4090`, `rtx4090+ours`: cuzk_sim/profiles/cards.py, profiles/derive.py) or a TOML file
    path (relative to `base`)."""
    from cuzk_sim.profiles.cards import derived_profiles

    derived = derived_profiles()
    if name_or_path in BUNDLED:
        ref = resources.files("cuzk_sim.profiles") / f"{name_or_path}.toml"
        text, source = ref.read_text(), f"cuzk_sim/profiles/{name_or_path}.toml"
    elif name_or_path in derived:
        return _derived_profile(name_or_path, *derived[name_or_path])
    else:
        path = Path(name_or_path)
        if base is not None and not path.is_absolute():
            path = base / path
        if path_kind(path, "profile") == "missing":
            raise InputError(
                f"profile {name_or_path!r}: no such file and not a bundled profile "
                f"(bundled: {', '.join(BUNDLED)}; derived for a card: {', '.join(derived)})"
            )
        text, source = read_text(path, "profile", MAX_TOML_BYTES), str(path)  # bounded
    raw = parse_toml(text, source)  # numbers in range: no inf, no 5,000-digit integers
    return profile_from_raw(raw, source)


def derived_profile_raw(name: str) -> dict | None:
    """The TOML table of the profile derived for a card (`rtx4090`), None for another name."""
    from cuzk_sim.profiles.cards import CARDS, DERIVE_BASE, derived_profiles
    from cuzk_sim.profiles.derive import derive_raw

    if name not in (derived := derived_profiles()):
        return None
    card_name, prover = derived[name]
    base_name = DERIVE_BASE[prover]
    ref = resources.files("cuzk_sim.profiles") / f"{base_name}.toml"
    base_raw = parse_toml(ref.read_text(), f"cuzk_sim/profiles/{base_name}.toml")
    base_card = next(c for c in CARDS.values() if base_name in c.measured.values())
    return derive_raw(base_raw, base_card, CARDS[card_name], name)


def _derived_profile(name: str, card_name: str, prover: str) -> Profile:
    from dataclasses import replace

    from cuzk_sim.profiles.cards import DERIVE_BASE

    raw = derived_profile_raw(name)
    assert raw is not None  # name is a derived profile's (load_profile checked)
    base_name = DERIVE_BASE[prover]
    prof = profile_from_raw(raw, f"derived: {base_name} scaled to {card_name}")
    return replace(prof, derived_for=card_name, derived_from=base_name)


def profile_from_raw(raw: dict, source: str) -> Profile:
    """Validate a profile's TOML table and build the Profile."""
    p = validate_input(_ProfileIn, raw, source)  # strict types, as every input
    missing = [f"kernel.{k}" for k in KERNEL_KINDS if k not in p.kernel]
    missing += [f"cpu.{k}" for k in CPU_KINDS if k not in p.cpu]
    if missing:
        raise InputError(f"{source}: the profile must price {', '.join(missing)}")
    try:
        vram, ctx = parse_size(p.gpu.vram), parse_size(p.gpu.context_overhead)
    except UnitError as e:  # pragma: no cover - validated above
        raise InputError(f"{source}: gpu: {e}") from None
    jitter = measured_jitter(p.jitter, source) if p.jitter is not None else None
    jitter_figures = tuple(
        Figure(key, value, _basis(p.jitter.get("basis"), "x"), src)  # type: ignore[union-attr]
        for key, value, src in figure_rows(jitter)
    )
    return Profile(
        name=p.name,
        source=source,
        provenance=p.provenance,
        gpu_model=p.gpu.model,
        vram=vram,
        context_overhead=ctx,
        pinned_bw=parse_bandwidth(p.copy_engine.pinned),
        pageable_bw=parse_bandwidth(p.copy_engine.pageable),
        copy_latency=parse_duration(p.copy_engine.latency),
        pageable_points=tuple(
            (float(b), parse_duration(t)) for b, t in p.copy_engine.pageable_points or ()
        ),
        pinned_points=tuple(
            (float(b), parse_duration(t)) for b, t in p.copy_engine.pinned_points or ()
        ),
        kernels={k: c.cost() for k, c in p.kernel.items()},
        cpus={k: c.cost() for k, c in p.cpu.items()},
        pce_extract=p.pce.extract.cost(),
        pce_load=parse_duration(p.pce.load),
        pce_host_bytes=parse_size(p.pce.host_bytes),
        host_cores=p.host.cores,
        synthesis_threads=p.cpu["synthesis"].threads,
        synthesis_memory_bound=p.cpu["synthesis"].memory_bound,
        synthesis_saturating=p.cpu["synthesis"].saturating,
        synthesis_without_pce=p.cpu["synthesis"].without_pce,
        pin_rate=parse_bandwidth(p.host.pin_rate),
        pin_fixed=parse_duration(p.host.pin_fixed),
        prover=p.prover,
        figures=_figures(p) + jitter_figures,
        sync_malloc=p.allocator.sync_malloc.cost() if p.allocator.sync_malloc else None,
        sync_free=p.allocator.sync_free.cost() if p.allocator.sync_free else None,
        jitter=jitter,
    )


def _card_key(name: str) -> str:
    """'NVIDIA GeForce RTX 5070 Ti' and 'rtx5070ti' -> 'rtx5070ti' (for comparing cards)."""
    key = name.lower()
    for word in ("nvidia", "geforce", "tesla", "(", ")"):
        key = key.replace(word, " ")
    key = key.split(" gb ")[0].split(" hbm")[0]
    return "".join(ch for ch in key if ch.isalnum())


def plan_prover(scenario: Any) -> str | None:
    """Which prover the scenario's plans come from: "cuzk" (the cuzk builder),
    "cuzk_sim.gpu" (our prover's live plan or a plan file it wrote), None (unknown)."""
    plan = scenario.spec.plan
    if plan is None:
        return "cuzk"
    if plan.gpu_prover is not None:
        return "cuzk_sim.gpu"
    replays = [p for p in scenario.plans.values() if p.name.startswith("gpu-prover-")]
    meta = " ".join(str(p.meta.get("producer", "")) for p in scenario.plans.values())
    if replays or "cuzk_sim.gpu" in meta or "gpu-plan" in meta:
        return "cuzk_sim.gpu"
    return None


VRAM_SAME = 0.05  # VRAM within 5 % is the same card (vendor GiB vs nvidia-smi's total)


def profile_warnings(scenario: Any) -> list[str]:
    """One line per way the profile does not fit the scenario: another card (hardware.card
    or hardware.vram differs from the profile's card) or another prover than the plan's."""
    prof: Profile = scenario.profile
    hw = scenario.spec.hardware
    out: list[str] = []
    card = getattr(hw, "card", None)  # hardware.card: a preset of cuzk_sim/profiles/cards.py
    where = f"profile {prof.name} ({prof.source})"
    if card:
        from cuzk_sim.profiles.cards import card as preset

        c = preset(str(card))
        if c.profile != prof.name and _card_key(c.model) != _card_key(prof.gpu_model):
            out.append(
                f"hardware.card = {card!r} ({c.model}) but {where} was measured on "
                f"{prof.gpu_model}: its timings are that card's"
            )
    if card and hw.vram is not None:
        from cuzk_sim.io.units import format_size
        from cuzk_sim.profiles.cards import card as preset

        out.append(
            f"hardware.vram = {hw.vram} overrides the VRAM of hardware.card = {card!r} "
            f"({format_size(preset(str(card)).vram_bytes)}): the run uses {hw.vram} "
            "(cuzk_sim/scenario/card_rule.py)"
        )
    if hw.vram is not None and abs(parse_size(hw.vram) - prof.vram) > VRAM_SAME * prof.vram:
        from cuzk_sim.io.units import format_size

        out.append(
            f"hardware.vram = {hw.vram} but {where} was measured on {prof.gpu_model} "
            f"({format_size(prof.vram)}): its timings are that card's, not this one's"
        )
    ours = plan_prover(scenario)
    if prof.prover is None:
        out.append(f"{where} does not say which prover it prices (no `prover` key)")
    elif ours is not None and ours != prof.prover:
        out.append(
            f"{where} prices {PROVER_NAMES[prof.prover]} but the plan is "
            f"{PROVER_NAMES[ours]}'s: throughput is priced with another prover's timings"
        )
    return out
