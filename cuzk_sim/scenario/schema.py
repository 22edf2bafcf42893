"""The keys of a scenario file: pydantic models, one per TOML table. Add a key here.

Sizes and times stay strings with units ("16 GiB", "690 ms"), checked as they are read;
cross-key checks that need the profile (VRAM above the context, a budget that fits a
proof) are in config.py. Two tables are derived from the code they configure, so a flag
has one source (flags.py): `[variant]` from `CuzkVariant` (plus the engine-level keys
below), and `[plan] gpu_prover` from our prover's `ProverFlags` (plus the shape keys of
`GpuProverShape`), the latter when the scenario is resolved, from the prover as it is then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from cuzk_sim.io.units import DurationText, SizeText, parse_duration, parse_size
from cuzk_sim.plan.builders.cuzk import CuzkVariant
from cuzk_sim.profiles.cards import card
from cuzk_sim.scenario.flags import flags_model

ProofKind = Literal["porep", "snapdeals", "window_post", "winning_post"]

# Upper limits on counts (sizes and durations are bounded in io/units.py): far above any real
# engine, finite so a typo (2147483648 synthesizers) is one line, not gigabytes of processes
MAX_CONCURRENCY = 1024  # synthesizers, lookahead, parallel syntheses
MAX_THREADS = 65_536  # as hardware.host_cores
Text = Annotated[str, StringConstraints(max_length=1000)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _size_or(word: str) -> Callable[[object], object]:
    """A field validator: the text is `word` or a size."""

    def check(v: object) -> object:
        if isinstance(v, bool) or not isinstance(v, str):  # run before the string check
            raise ValueError(f"expected '{word}' or a size as a string with a unit, got {v!r}")
        if v != word:
            parse_size(v)
        return v

    return check


def _known_card(v: str | None) -> str | None:
    if v is not None:
        card(v)  # an InputError (a ValueError) listing the presets and close names
    return v


class Hardware(_Strict):
    gpus: int = Field(1, ge=1, le=64)
    card: str | None = (
        None  # a preset of cuzk_sim/profiles/cards.py: sets vram and profile (card_rule.py)
    )
    vram: SizeText | None = None  # default: the card's, else the profile's card
    context_overhead: SizeText | None = None  # default: the profile's constant
    host_ram: SizeText = "512 GiB"
    host_cores: int | None = Field(None, ge=1, le=65536)  # default: the profile's host

    _card = field_validator("card")(_known_card)


class GpusSection(_Strict):
    gpu_workers_per_device: int = Field(2, ge=1, le=64)
    devices: list[int] = Field([], max_length=64)
    gpu_threads: int = Field(32, ge=0, le=MAX_THREADS)  # groth16_pool (B_G2 MSM); 0 = all cores
    # true: each GPU worker is a separate process (a captured program run N times on the
    # card): a CUDA context each (hardware.context_overhead, or the captured plan's),
    # allocators, mutexes and pinned host buffers of its own; false: threads of one daemon
    separate_processes: bool = False


class PipelineSection(_Strict):
    synthesis_lookahead: int = Field(1, ge=0, le=MAX_CONCURRENCY)
    synthesis_concurrency: int = Field(1, ge=1, le=MAX_CONCURRENCY)
    max_parallel_synthesis: int = Field(18, ge=1, le=MAX_CONCURRENCY)


class SynthesisSection(_Strict):
    # cuzk [synthesis] partition_workers (engine.rs Phase 7): 0 = whole-proof synthesis
    partition_workers: int = Field(0, ge=0, le=4096)


class MemorySection(_Strict):
    total_budget: str = "auto"  # "auto" = host RAM − safety_margin
    safety_margin: SizeText = "5 GiB"

    _budget = field_validator("total_budget", mode="before")(_size_or("auto"))


class PceSection(_Strict):
    # false: the engine before cuzk's Phase 5 (no PCE: nothing to extract or keep resident,
    # synthesis x the profile's `without_pce`), as in the Phase 2 baseline
    enabled: bool = True
    cache_writable: bool = True  # can the PCE be saved to the param cache?
    cached: list[ProofKind] = []  # PCEs already on disk at start


class Engine(_Strict):
    gpus: GpusSection = GpusSection()
    pipeline: PipelineSection = PipelineSection()
    synthesis: SynthesisSection = SynthesisSection()
    memory: MemorySection = MemorySection()
    pce: PceSection = PceSection()


class VariantEngineKeys(_Strict):
    """`[variant]` keys that configure the engine, not the plan builder."""

    routing: Literal["assigned", "device0"] = "assigned"
    pool_release_threshold: str = "max"  # "max" = UINT64_MAX (never release), or a size

    _threshold = field_validator("pool_release_threshold", mode="before")(_size_or("max"))


# `[variant]`: CuzkVariant's fields (prestage, free_d_bc_after_ntt, memory_aware_margin,
# mutex_scope, d_a_cache, b_g2_msm, ...) plus the engine keys above
VARIANT_EXCLUDED = frozenset({"b_g2_threads"})  # set from engine.gpus.gpu_threads
Variant = flags_model(CuzkVariant, VariantEngineKeys, VARIANT_EXCLUDED)


class GpuProverShape(_Strict):
    """`[plan] gpu_prover` keys of the partition's shape; the flag keys are ProverFlags'."""

    domain_log2: int = Field(ge=1, le=31)  # FFT domain 2^k (production: 27)
    reduction: Literal["bellman", "snarkjs"] = "bellman"
    num_vars: int | None = Field(None, ge=2, le=2**40)  # m + 1 wires; default: 2^domain_log2
    num_public: int = Field(1, ge=0, le=2**40)  # l
    # gpu/witness_shape.py: query densities and the 0/1 share of the scalars (dense,
    # sha256, porep); default: porep when every replayed kind is porep, else dense
    witness: Literal["dense", "sha256", "porep"] | None = None
    # dry run only: the free bytes a memory-aware allocation sees; default: none given, the
    # replayed plan carries both branches and the model's free memory picks one
    assume_free: SizeText | None = None


class PlanHost(_Strict):
    """`[plan.host]`: the host side of the replaced kinds' partitions, when it is not the
    kind's published figures scaled to the plan's domain (plan_sources.py)."""

    synthesis: DurationText | None = None  # per partition; "0 s": pre-synthesized
    partition_bytes: SizeText | None = None  # host RAM a partition holds until its GPU work ends
    pce: bool = True  # false: no PCE to extract or load for these kinds


class PlanSource(_Strict):
    """Exactly one source: a Plan JSON file, or our GPU prover's live dry run."""

    file: Text | None = None  # a Plan JSON (Plan.to_json form), relative to the scenario file
    # our prover's shape and flags (GpuProverShape + ProverFlags), validated at resolution
    gpu_prover: dict[str, Any] | None = None
    kinds: list[ProofKind] = []  # kinds it replaces; [] = every kind in the workload
    host: PlanHost = PlanHost()  # the host side of their partitions

    @model_validator(mode="after")
    def _one_source(self) -> PlanSource:
        if (self.file is None) == (self.gpu_prover is None):
            raise ValueError("give exactly one of `file` or `gpu_prover`")
        return self


class Workload(_Strict):
    kind: ProofKind
    count: int | None = Field(None, ge=0)  # None: keep arriving until `duration`
    start: DurationText = "0 s"
    every: DurationText | None = None  # gap between arrivals; none: all at `start`
    arrival: Literal["fixed", "poisson"] = "fixed"
    partitions: int | None = Field(None, ge=1)  # default: the kind's partition count


class Expect(_Strict):
    oom: bool | None = None
    seconds_per_proof: tuple[DurationText, DurationText] | None = None  # [lo, hi]
    first_oom_buffer: Text | None = None
    first_oom_where: Literal["device", "host"] | None = None
    log_contains: list[Text] = Field([], max_length=1000)
    proofs_failed: int | None = Field(None, ge=0, le=2**40)
    pce_extractions: int | None = Field(None, ge=0, le=2**40)
    peak_host_rss: tuple[SizeText, SizeText] | None = None  # [lo, hi]: the process's RSS
    # [lo, hi]: cuzk-bench's "prove time", the mean seconds a proof's partitions spent on
    # GPU workers (cuzk's gpu_compute_ms; SimResult.prove_seconds)
    prove_seconds: tuple[DurationText, DurationText] | None = None
    # [lo, hi]: cuzk-bench `batch`'s throughput, (last completion - first submission) /
    # completed (SimResult.bench_seconds_per_proof): how cuzk's published s/proof were taken
    bench_seconds_per_proof: tuple[DurationText, DurationText] | None = None
    # a published figure the model cannot reach: the reason; the failing checks are then
    # reported as this known miss, and a pass is an error (the miss is gone: remove this)
    known_miss: Text | None = None

    @field_validator("seconds_per_proof", "prove_seconds", "bench_seconds_per_proof")
    @classmethod
    def _range(cls, v: tuple[str, str] | None) -> tuple[str, str] | None:
        if v is not None:
            lo, hi = parse_duration(v[0]), parse_duration(v[1])
            if lo > hi:
                raise ValueError(f"expected [lo, hi] with lo <= hi, got {list(v)}")
        return v


class LostDevice(_Strict):
    at: DurationText  # when the GPU falls off the bus
    gpu: int = Field(ge=0, le=63)


class ScenarioFile(_Strict):
    name: Text | None = None
    description: str = Field("", max_length=100_000)
    seed: int = Field(0, ge=0, le=2**64 - 1)
    on_oom: Literal["stop", "continue"] = "stop"
    # default: the card's own profile (hardware.card), else rtx5070ti (scenario/card_rule.py)
    profile: Text | None = None
    duration: DurationText | None = None
    # daemon restarts: in-flight proofs, device and pinned buffers and the in-memory PCE lost
    restarts: list[DurationText] = Field([], max_length=10_000)
    lost_devices: list[LostDevice] = Field([], max_length=64)  # GPUs that stop working
    hardware: Hardware = Hardware()
    engine: Engine = Engine()
    variant: Variant = Variant()  # type: ignore[valid-type]
    plan: PlanSource | None = None
    workload: list[Workload] = Field(min_length=1, max_length=1000)
    expect: Expect | None = None

    @model_validator(mode="after")
    def _lost_devices_exist(self) -> ScenarioFile:
        for i, d in enumerate(self.lost_devices):
            if d.gpu >= self.hardware.gpus:
                raise ValueError(
                    f"lost_devices[{i}].gpu = {d.gpu}: there are {self.hardware.gpus} GPUs "
                    f"(0..{self.hardware.gpus - 1})"
                )
        return self

    @model_validator(mode="after")
    def _endless_needs_duration(self) -> ScenarioFile:
        for i, w in enumerate(self.workload):
            if w.count is None and (self.duration is None or w.every is None):
                raise ValueError(
                    f"workload[{i}]: without `count`, both `every` and a top-level "
                    "`duration` are needed (else it never ends)"
                )
        return self
