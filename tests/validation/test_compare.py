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
    assert grid._disagrees(model, _res(True, 800, None, "msm.slots"))  # another buffer: repeat
    assert not grid._disagrees(model, _res(True, 800, None, "msm.order"))
    assert grid._disagrees(model, _res(False, 800, 1.0))  # another verdict
    fits = _pred("f@+1%", False, 1000)["model"]
    assert not grid._disagrees(fits, _res(False, 990, 1.0))  # peaks 1.0 % apart
    assert grid._disagrees(fits, _res(False, 970, 1.0))  # 3.1 % apart: is the real peak stable?


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
