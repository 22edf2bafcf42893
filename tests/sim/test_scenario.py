"""Scenario validation: every error names the file, the key path and what was expected."""

import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cuzk_sim.io.errors import InputError
from cuzk_sim.scenario import load_scenario, scenario_from_dict

BASE = """
seed = 1
[hardware]
gpus = 1
vram = "16 GiB"
[[workload]]
kind = "porep"
count = 1
"""


def write(tmp_path, text, name="s.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def error_of(tmp_path, text) -> str:
    path = write(tmp_path, text)
    with pytest.raises(InputError) as e:
        load_scenario(path)
    msg = str(e.value)
    assert str(path) in msg and "Traceback" not in msg
    return msg


def test_valid_scenario_maps_cuzk_keys(tmp_path):
    scn = load_scenario(
        write(
            tmp_path,
            BASE
            + """
        [engine.gpus]
        gpu_workers_per_device = 3
        [engine.pipeline]
        synthesis_concurrency = 2
        """,
        )
    )
    assert scn.config.gpu_workers_per_device == 3
    assert scn.config.synthesis_concurrency == 2
    assert scn.config.vram == 16 * 2**30
    assert scn.config.host_ram_budget == (512 - 5) * 2**30  # "auto" = RAM - safety margin


def test_unknown_key_is_named_with_its_path(tmp_path):
    msg = error_of(tmp_path, BASE + "[engine.gpus]\ngpu_workers_per_devce = 2\n")
    assert "engine.gpus.gpu_workers_per_devce: unknown key" in msg


def test_bad_unit_is_named(tmp_path):
    msg = error_of(tmp_path, BASE.replace('"16 GiB"', '"16 gigs"'))
    assert "hardware.vram" in msg and "16 GiB" in msg  # says what a size looks like


def test_negative_size_is_rejected(tmp_path):
    msg = error_of(tmp_path, BASE + '[variant]\nmemory_aware_margin = "-512 MiB"\n')
    assert "variant.memory_aware_margin" in msg and "non-negative" in msg


def test_wrong_type_in_list_is_named_with_index(tmp_path):
    msg = error_of(tmp_path, BASE + '[[workload]]\nkind = "porep"\ncount = "many"\n')
    assert "workload[1].count" in msg


def test_unknown_proof_kind(tmp_path):
    msg = error_of(tmp_path, BASE.replace('kind = "porep"', 'kind = "c2"'))
    assert "workload[0].kind" in msg and "porep" in msg


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ('[hardware]\nvram = "100 MiB"\ncontext_overhead = "400 MiB"\n', "must exceed"),
        ("[engine.gpus]\ndevices = [3]\n", "devices names GPU 3"),
        (
            '[engine.memory]\ntotal_budget = "64 GiB"\n',
            "one porep proof needs 209.7 GiB",
        ),  # 69.7 resident + 10 x 14
    ],
)
def test_impossible_hardware(tmp_path, extra, needle):
    text = BASE.replace('[hardware]\ngpus = 1\nvram = "16 GiB"\n', "") + extra
    msg = error_of(tmp_path, text)
    assert "impossible hardware" in msg and needle in msg


def test_endless_workload_needs_a_duration(tmp_path):
    msg = error_of(tmp_path, BASE.replace("count = 1", 'every = "10 s"'))
    assert "duration" in msg


def test_not_toml(tmp_path):
    assert "not valid TOML" in error_of(tmp_path, "seed = = 1")


def test_missing_workload(tmp_path):
    assert "workload: required key is missing" in error_of(tmp_path, "seed = 1\n")


def test_missing_plan_file_is_named(tmp_path):
    msg = error_of(tmp_path, BASE + '[plan]\nfile = "nope.json"\n')
    assert "plan.file" in msg and "nope.json" in msg


def test_bad_plan_file_names_step(tmp_path):
    (tmp_path / "p.json").write_text('{"steps": [{"op": "alloc", "buffer": "a", "byts": 1}]}')
    msg = error_of(tmp_path, BASE + '[plan]\nfile = "p.json"\n')
    assert "steps[0] (alloc): unknown field" in msg


def test_unpriced_kernel_kind_names_step_and_profile(tmp_path):
    from cuzk_sim.simulate.runner import simulate

    (tmp_path / "p.json").write_text(
        '{"name": "mine", "steps": [{"op": "kernel", "name": "fft", "kind": "fft", "size": 8}]}'
    )
    scn = load_scenario(write(tmp_path, BASE + '[plan]\nfile = "p.json"\n'))
    with pytest.raises(
        InputError,
        match=r"plan mine: steps\[0\] \(kernel fft\).*'fft'.*"
        r"cuzk_sim/profiles/rtx5070ti.toml",
    ):
        simulate(scn)


def test_unknown_profile(tmp_path):
    msg = error_of(tmp_path, 'profile = "h100"\n' + BASE)
    assert "profile" in msg and "rtx5070ti" in msg


def test_window_post_partitions_follow_the_sector_count(tmp_path):
    from cuzk_sim.simulate.runner import simulate

    text = BASE.replace('kind = "porep"', 'kind = "window_post"\npartitions = 3')
    text += '[engine.pce]\ncached = ["window_post"]\n[variant]\npool_release_threshold = "0 B"\n'
    result = simulate(load_scenario(write(tmp_path, text)))
    assert result.partitions_completed == 3 and result.proofs_completed == 1


_values = st.one_of(
    st.integers(-5, 5),
    st.booleans(),
    st.text(max_size=8),
    st.none(),
    st.sampled_from(["16 GiB", "-1 GiB", "690 ms", "max", "auto", "porep", "x GiB"]),
    st.lists(st.integers(-1, 3), max_size=3),
)
_tables = st.dictionaries(
    st.sampled_from(
        [
            "gpus",
            "vram",
            "host_ram",
            "gpu_workers_per_device",
            "devices",
            "synthesis_concurrency",
            "total_budget",
            "prestage",
            "routing",
            "bogus",
        ]
    ),
    _values,
    max_size=4,
)


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "seed": _values,
            "on_oom": _values,
            "duration": _values,
            "hardware": st.one_of(_tables, _values),
            "engine": st.dictionaries(
                st.sampled_from(["gpus", "pipeline", "memory", "x"]), _tables, max_size=3
            ),
            "variant": st.one_of(_tables, _values),
            "plan": st.one_of(_tables, _values),
            "profile": _values,
            "workload": st.lists(
                st.dictionaries(
                    st.sampled_from(["kind", "count", "every", "start", "partitions"]),
                    _values,
                    max_size=5,
                ),
                max_size=2,
            ),
            "expect": _tables,
        },
    )
)
def test_any_input_is_a_scenario_or_an_input_error(raw):
    """Fuzzed scenario tables: either valid, or one InputError naming the source."""
    try:
        scenario_from_dict(raw, "fuzz.toml")
    except InputError as e:
        assert str(e).startswith("fuzz.toml")


def test_unreadable_inputs_are_input_errors(tmp_path):
    (tmp_path / "dir.json").mkdir()
    msg = error_of(tmp_path, BASE + '[plan]\nfile = "dir.json"\n')
    assert "plan.file: cannot read" in msg
    with pytest.raises(InputError, match="cannot read the scenario file"):
        load_scenario(tmp_path)
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="bin.toml"):
        load_scenario(tmp_path / "bin.toml")


@pytest.mark.parametrize(
    "extra, needle",
    [
        (BASE.replace("count = 1", "count = 100000000"), "workload[0].count: the workload asks"),
        (
            BASE + "[[workload]]\nkind = 'porep'\ncount = 100000\n",  # 100001 in all
            "workload[1].count: the workload asks for more than 100000 proofs",
        ),
        (
            'duration = "721 h"\n' + BASE,
            "duration: 721 h exceeds the limit of 30 days (720 h)",
        ),
        (
            'duration = "1 h"\n'
            + BASE.replace("count = 1", "every = '0.01 s'"),  # 360,000 arrivals
            "workload[0].every: the workload asks for more than 100000 proofs",
        ),
        (
            'duration = "1 h"\n' + BASE.replace("count = 1", "every = '0 s'"),
            "workload[0].every: the workload asks",
        ),
        (BASE + "partitions = 5000\n", "workload[0].partitions: 5000 exceeds the limit of 1000"),
    ],
)
def test_work_beyond_the_run_time_bounds_is_refused(tmp_path, extra, needle):
    msg = error_of(tmp_path, extra)
    assert needle in msg and "bound the simulator's run time" in msg


def test_work_at_the_bounds_is_accepted(tmp_path):
    text = 'duration = "720 h"\n' + BASE.replace("count = 1", "count = 100000")
    scn = load_scenario(
        write(tmp_path, text.replace('"porep"', '"winning_post"') + "partitions = 1000\n")
    )
    assert scn.config.arrivals[0].count == 100000 and scn.config.duration_s == 30 * 86400


def test_pipeline_enabled_is_not_a_key(tmp_path):
    """It was accepted and never read (the model is always cuzk's pipelined engine)."""
    msg = error_of(tmp_path, BASE + "[engine.pipeline]\nenabled = false\n")
    assert "engine.pipeline.enabled: unknown key" in msg


def test_variant_keys_are_cuzk_variants_fields_with_its_defaults(tmp_path, monkeypatch):
    """[variant] is derived from CuzkVariant: a stated key reaches the builder, an unstated
    one takes CuzkVariant's default as it is when the scenario is loaded."""
    import dataclasses

    from cuzk_sim.plan.builders.cuzk import CuzkVariant
    from cuzk_sim.plan.contract import Alloc
    from cuzk_sim.scenario import resolve

    def d_a(text: str) -> Alloc:
        plan = load_scenario(write(tmp_path, text)).plans["porep"]
        return next(s for s in plan.steps if isinstance(s, Alloc) and s.buffer == "d_a")

    assert d_a(BASE).persistent  # CuzkVariant.d_a_cache = True
    assert not d_a(BASE + "[variant]\nd_a_cache = false\n").persistent

    @dataclasses.dataclass(frozen=True)
    class Flipped(CuzkVariant):
        d_a_cache: bool = False

    monkeypatch.setattr(resolve, "CuzkVariant", Flipped)
    assert not d_a(BASE).persistent
    staged = load_scenario(
        write(
            tmp_path, BASE + '[variant]\nprestage = "under_mutex"\nmemory_aware_margin = "1 GiB"\n'
        )
    ).plans["porep"]
    d_bc = next(s for s in staged.steps if isinstance(s, Alloc) and s.buffer == "d_bc")
    assert d_bc.margin == 2**30  # the size text, parsed into memory_aware_margin_bytes
