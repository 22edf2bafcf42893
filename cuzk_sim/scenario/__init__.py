"""Scenario files (TOML): hardware, cuzk engine config, variant flags, workload, expectations.

The engine section uses cuzk.toml's own key names (`[engine.gpus]
gpu_workers_per_device`, `[engine.pipeline] synthesis_concurrency`, ...). Sizes and times
are strings with units ("16 GiB", "690 ms"). Every problem is reported as
`file: key.path: what was expected` (an `InputError`), never a traceback.

One module per job:
  schema.py        the keys (pydantic models, one per table): add a key there
  flags.py         keys derived from a flags dataclass (ProverFlags, CuzkVariant): one source
  bounds.py        bounds on the work one scenario asks for
  plan_sources.py  the plan each kind replays (cuzk builder, plan file or our prover) and
                   the host side of its partitions (`[plan.host]`)
  config.py        hardware checks and the EngineConfig
  resolve.py       load_scenario / scenario_from_dict: the steps above, in order
  files.py         which TOML files of a searched folder are scenarios (check, gate)
"""

from cuzk_sim.scenario.bounds import MAX_DURATION_S, MAX_PARTITIONS, MAX_PROOFS
from cuzk_sim.scenario.resolve import Scenario, load_scenario, scenario_from_dict
from cuzk_sim.scenario.schema import (
    Engine,
    Expect,
    GpuProverShape,
    GpusSection,
    Hardware,
    MemorySection,
    PceSection,
    PipelineSection,
    PlanSource,
    ProofKind,
    ScenarioFile,
    Variant,
    Workload,
)

__all__ = [
    "MAX_DURATION_S",
    "MAX_PARTITIONS",
    "MAX_PROOFS",
    "Engine",
    "Expect",
    "GpuProverShape",
    "GpusSection",
    "Hardware",
    "MemorySection",
    "PceSection",
    "PipelineSection",
    "PlanSource",
    "ProofKind",
    "Scenario",
    "ScenarioFile",
    "Variant",
    "Workload",
    "load_scenario",
    "scenario_from_dict",
]
