"""The comparison: per-run verdicts, timing-dependent runs, errors, confusion matrix."""

from __future__ import annotations

from cuzk_sim.validation.compare import compare_runs, report_markdown, summarize


def _res(oom: bool, peak: int, spp: float | None, buf: str | None = None) -> dict:
    return {
        "oom": oom,
        "first_oom_buffer": buf,
        "peak_vram_bytes": {"0": peak},
        "seconds_per_proof": spp,
    }


def _pred(key: str, oom: bool, peak: int, spp: float | None = 1.0, buf=None, parts=8) -> dict:
    return {
        "key": key,
        "config": key.split("@")[0],
        "cap": key.split("@")[1],
        "vram": 10**9,
        "partitions": parts,
        "model": _res(oom, peak, spp, buf),
    }


def _real(key: str, repeat: int, oom: bool, peak: int, spp=1.0, buf=None) -> dict:
    return {"key": key, "repeat": repeat, "real": _res(oom, peak, spp, buf)}


def test_rows_summary_and_matrix_by_hand():
    preds = [
        _pred("a@-3%", True, 900, None, "d_a"),  # both OOM, same buffer
        _pred("a@+3%", False, 1000, 2.0),  # both fit: peak +1.0 % (1000 vs 990), spp +25 %
        _pred("b@-1%", True, 900, None, "x"),  # predicted OOM, real fits
        _pred("c@+1%", False, 1000, 1.0),  # flips between repeats: timing-dependent
        _pred("d@+1%", False, 1000, 1.0, parts=2),  # too few partitions for s/proof
        _pred("e@+1%", False, 1000),  # never run: no row
    ]
    reals = [
        _real("a@-3%", 0, True, 800, None, "d_a"),
        _real("a@+3%", 0, False, 990, 1.6),
        _real("b@-1%", 0, False, 700),
        _real("b@-1%", 1, False, 700),
        _real("c@+1%", 0, True, 800),
        _real("c@+1%", 1, False, 990),
        _real("d@+1%", 0, False, 1000, 5.0),
    ]
    rows = compare_runs(preds, reals)
    by = {r.key: r for r in rows}
    assert list(by) == ["a@-3%", "a@+3%", "b@-1%", "c@+1%", "d@+1%"]
    assert abs(by["a@+3%"].peak_error - 10 / 990) < 1e-12
    assert abs(by["a@+3%"].spp_error - 0.25) < 1e-12
    assert by["c@+1%"].timing_dependent and by["c@+1%"].oom_frequency == 0.5
    assert by["d@+1%"].spp_error is None and by["d@+1%"].peak_error == 0.0
    s = summarize(rows)
    assert s["decided"] == 4 and s["agreeing"] == 3 and s["agreement"] == 0.75
    assert s["confusion"] == {
        "predicted_oom": {"real_oom": 1, "real_fits": 1},
        "predicted_fits": {"real_oom": 0, "real_fits": 2},
    }
    assert s["both_oom"] == 1 and s["first_buffer_agrees"] == 1
    assert s["peak_within"] == 2 and s["spp_within"] == 0
    assert s["criteria"] == {
        "oom_agreement_98pct": False,
        "first_buffer_where_both_oom": True,
        "peak_within_2pct": True,
        "spp_within_10pct": False,
    }
    assert s["real_executions"] == 7
    text = report_markdown(rows, s)
    assert "flips (50 % OOM)" in text and "**≠**" in text and "3 / 4" in text


def test_a_real_first_buffer_that_changes_between_repeats_is_not_counted():
    preds = [
        _pred("n@-10%", True, 900, None, "msm.order"),  # race: real buffer differs per repeat
        _pred("m@-10%", True, 900, None, "msm.order"),  # stable real buffer, another one
    ]
    reals = [
        _real("n@-10%", 0, True, 800, None, "msm.slots"),
        _real("n@-10%", 1, True, 800, None, "msm.order"),
        _real("m@-10%", 0, True, 800, None, "msm.slots"),
        _real("m@-10%", 1, True, 800, None, "msm.slots"),
    ]
    rows = {r.key: r for r in compare_runs(preds, reals)}
    assert rows["n@-10%"].buffer_timing_dependent and not rows["m@-10%"].buffer_timing_dependent
    assert not rows["n@-10%"].timing_dependent  # the verdict itself is stable: OOM
    s = summarize(list(rows.values()))
    assert s["both_oom"] == 1 and s["first_buffer_agrees"] == 0  # m counted, n not
    assert s["buffer_timing_dependent"] == [
        {"key": "n@-10%", "buffers": ["msm.slots", "msm.order"], "predicted": "msm.order"}
    ]
    assert "first OOM buffer timing-dependent (not counted): n@-10%" in report_markdown(
        list(rows.values()), s
    )


def test_validate_repeats_a_run_whose_first_buffer_disagrees():
    from cuzk_sim.validation import grid

    model = _pred("m@-10%", True, 900, None, "msm.order")["model"]

    def rec(*args):
        return {"real": _res(*args)}

    assert grid._disagrees(model, rec(True, 800, None, "msm.slots"))  # another buffer: repeat
    assert not grid._disagrees(model, rec(True, 800, None, "msm.order"))
    assert grid._disagrees(model, rec(False, 800, 1.0))  # another verdict
    fits = _pred("f@+1%", False, 1000)["model"]
    assert not grid._disagrees(fits, rec(False, 990, 1.0))  # peaks 1.0 % apart
    assert grid._disagrees(fits, rec(False, 970, 1.0))  # 3.1 % apart: is the real peak stable?
    failed = {"real": _res(False, 990, None), "details": {"failed_reasons": ["worker exception: "
              "ValueError: bad"]}}  # fmt: skip
    assert grid._disagrees(fits, failed)  # an error: repeated too


def test_a_real_peak_that_changes_between_repeats_is_not_counted():
    preds = [
        _pred("r@+10%", False, 2000),  # race: the real peaks differ by 7.5 % between repeats
        _pred("s@+10%", False, 2000),  # stable real peak, 5 % below the model's
    ]
    reals = [
        _real("r@+10%", 0, False, 1860),
        _real("r@+10%", 1, False, 2000),
        _real("s@+10%", 0, False, 1905),
        _real("s@+10%", 1, False, 1900),
    ]
    rows = {r.key: r for r in compare_runs(preds, reals)}
    assert rows["r@+10%"].peak_timing_dependent and not rows["s@+10%"].peak_timing_dependent
    s = summarize(list(rows.values()))
    assert s["peak_runs"] == 1 and s["peak_within"] == 0  # s counted (a miss), r not
    assert s["criteria"]["peak_within_2pct"] is False
    assert s["peak_timing_dependent"] == [
        {"key": "r@+10%", "peaks": [1860, 2000], "predicted": 2000}
    ]
    text = report_markdown(list(rows.values()), s)
    assert "peak VRAM timing-dependent (not counted): r@+10%" in text


def _failed(key: str, reasons: list[str], repeat: int = 0, oom: bool = False) -> dict:
    """A hand-made real record whose partitions all failed (none proved), as grid call 1808
    recorded w1-chunk-27@+1%: `oom` false, the reasons in details.failed_reasons."""
    res = {**_res(oom, 12496, None), "partitions_completed": 0, "partitions_failed": 2}
    return {"key": key, "repeat": repeat, "real": res, "details": {"failed_reasons": reasons}}


DRIVER_OOM = "worker exception: CUDADriverError: CUDA_ERROR_OUT_OF_MEMORY: out of memory"


def test_a_run_whose_partitions_failed_out_of_memory_is_an_oom_not_a_fit():
    """Every layer's out-of-memory failure (driver, runtime, CuPy's pool) makes the run an
    OOM with where it happened; the model said fits, so the verdict disagrees."""
    reasons = {
        "driver": DRIVER_OOM,
        "runtime": "worker exception: CUDARuntimeError: cudaErrorMemoryAllocation: out of memory",
        "cupy": "worker exception: OutOfMemoryError: Out of memory allocating 4,294,967,296 "
        "bytes (allocated so far: 0 bytes, limit set to: 1 bytes).",
    }
    preds = [_pred(f"{k}@+1%", False, 13749, None) for k in reasons]
    reals = [_failed(f"{k}@+1%", [r]) for k, r in reasons.items()]
    rows = compare_runs(preds, reals)
    assert [r.real_oom for r in rows] == [True, True, True]
    assert [r.agrees for r in rows] == [False, False, False]
    assert rows[0].real_buffer == "(CUDADriverError: CUDA_ERROR_OUT_OF_MEMORY: out of memory)"
    assert rows[0].peak_error is None  # an OOM has no peak comparison
    s = summarize(rows)
    assert s["confusion"]["predicted_fits"] == {"real_oom": 3, "real_fits": 0}
    assert s["peak_runs"] == 0 and s["errors"] == []


def test_a_run_whose_partitions_failed_otherwise_is_an_error_never_a_fit():
    preds = [_pred("x@+1%", False, 1000), _pred("y@+1%", False, 1000)]
    reals = [
        _failed("x@+1%", ["worker exception: ValueError: bad witness"]),
        _real("y@+1%", 0, False, 1000, 1.0),
    ]
    rows = {r.key: r for r in compare_runs(preds, reals)}
    x = rows["x@+1%"]
    assert x.real_error == "worker exception: ValueError: bad witness"
    assert x.agrees is None and not x.timing_dependent and x.peak_error is None
    s = summarize(list(rows.values()))
    assert s["decided"] == 1 and s["agreeing"] == 1  # y only
    assert s["errors"] == [{"key": "x@+1%", "error": "worker exception: ValueError: bad witness"}]
    assert s["criteria"]["oom_agreement_98pct"] is False  # a grid with an error is not met
    text = report_markdown(list(rows.values()), s)
    assert "| error |" in text and "error (no verdict): x@+1%" in text


def test_the_peak_criterion_puts_the_models_context_in_the_real_peak():
    """Grid call 1808, w2-stream14-27@+1%: model 15005.8 MiB with the profile's context
    1449.8, real 14736.8 MiB with the grid process's 1178.8: the real peak on the card it
    emulated is 14736.8 - 1178.8 + 1449.8 = 15007.8 MiB (-0.013 %); the raw totals differ
    by the contexts (+1.83 %)."""
    mib = 1 << 20
    model = _res(False, round(15005.8 * mib), 1.0)
    real = {
        "key": "w@+1%",
        "repeat": 0,
        "real": _res(False, round(14736.8 * mib), 1.0),
        "details": {
            "context_bytes": {"0": round(1178.8 * mib)},
            "achieved_vram_bytes": {"0": round(15158.9 * mib)},
            "start_free_bytes": {"0": round((15158.9 - 1449.8) * mib)},
        },
    }
    pred = {**_pred("w@+1%", False, 0), "model": model}
    (row,) = compare_runs([pred], [real])
    assert abs(row.peak_error - (15005.8 - 15007.8) / 15007.8) < 1e-6
    assert abs(row.peak_total_error - (15005.8 - 14736.8) / 14736.8) < 1e-6
    assert summarize([row])["peak_within"] == 1
