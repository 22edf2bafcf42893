"""Fit the profile figures a cuzk log measures; keep the base profile's others.

The fits: logs/cuzk_fit.py (cuzk's own lines) and logs/step_fit.py (our pipeline's step
lines); here the new profile document is written from them, each figure's `source`
saying where it is from (docs/logs.md).
"""

from __future__ import annotations

import datetime as dt
import tomllib
from importlib import resources
from pathlib import Path

from cuzk_sim.io.errors import InputError
from cuzk_sim.io.units import parse_size
from cuzk_sim.logs.cuzk_fit import Calibrator
from cuzk_sim.logs.fit import Fit
from cuzk_sim.logs.scenario_out import LoggedConfig
from cuzk_sim.logs.timeline import Analyzer
from cuzk_sim.plan.builders.circuits import SHAPES, CircuitShape
from cuzk_sim.plan.builders.cuzk import CuzkVariant, build_partition_plan
from cuzk_sim.plan.contract import Plan
from cuzk_sim.profiles.profile import BUNDLED, load_profile


def log_card(a: Analyzer) -> tuple[str, str] | None:
    """The card the log names (our pipeline's CUZK_SIM_DEVICE lines): its name and total
    memory as a size text, when every GPU of the log is the same card; else None."""
    cards = set(a.cards.values())
    if len(cards) != 1:
        return None
    name, total = cards.pop()
    mib = 2**20
    return name, f"{total // mib} MiB" if total % mib == 0 else f"{total} B"


def _other_total(base: str, base_gpu: dict, card: tuple[str, str]) -> str:
    """Where the base's card is the log's and states another total: that it is another
    figure (docs/profiles.md, "Two totals of one card": the bundled h200's is nvidia-smi's
    memory.total, 615 MiB above CUDA's)."""
    base_vram = base_gpu.get("vram")
    if base_gpu.get("model") != card[0] or not isinstance(base_vram, str):
        return ""
    try:
        other, this = parse_size(base_vram), parse_size(card[1])
    except ValueError:
        return ""
    if other == this:
        return ""
    return (
        f", not the base {base}'s {base_vram} ({abs(other - this) / 2**20:.0f} MiB "
        f"{'more' if other > this else 'less'}: another total of this card, "
        'docs/profiles.md "Two totals of one card")'
    )


def base_raw(name_or_path: str) -> tuple[dict, str]:
    """The base profile's TOML document (to copy its other figures) and its name."""
    from cuzk_sim.profiles.profile import derived_profile_raw

    if name_or_path in BUNDLED:
        text = (resources.files("cuzk_sim.profiles") / f"{name_or_path}.toml").read_text()
    elif (derived := derived_profile_raw(name_or_path)) is not None:  # a card's derived
        return derived, name_or_path
    else:
        try:
            text = Path(name_or_path).read_text()
        except OSError as e:
            raise InputError(f"--base {name_or_path}: cannot read it ({e})") from None
    return tomllib.loads(text), name_or_path


def cuzk_plans(cfg: LoggedConfig, vram: int) -> dict[str, Plan]:
    variant = CuzkVariant(
        prestage=cfg.prestage,  # type: ignore[arg-type]
        free_d_bc_after_ntt=cfg.memory_aware,
        memory_aware_margin_bytes=512 << 20 if cfg.memory_aware else None,
        mutex_scope=cfg.mutex_scope,  # type: ignore[arg-type]
        b_g2_msm=cfg.b_g2_msm,  # type: ignore[arg-type]
    )
    return {k: build_partition_plan(SHAPES[k], variant, vram) for k in SHAPES}


def _fmt_s(seconds: float) -> str:
    return f"{seconds * 1e3:.4f} ms"


def calibrated_profile(
    a: Analyzer,
    base_name: str,
    plans: dict[str, Plan],
    log_names: list[str],
    name: str,
    prover: str | None = None,
    shapes: dict[str, CircuitShape] | None = None,
    gpu_model: str | None = None,
    vram: str | None = None,
) -> tuple[dict, list[Fit], list[str]]:
    """The new profile document, the fits, and notes on figures left as they were.
    prover / gpu_model / vram: what the log was taken with, when not the base's (the
    log names neither the card nor its VRAM)."""
    base = load_profile(base_name)
    raw, _ = base_raw(base_name)
    sizes = {
        **{f"kernel.{k}": int(v["size"]) for k, v in raw["kernel"].items()},
        **{f"cpu.{k}": int(v["size"]) for k, v in raw["cpu"].items()},
    }
    cal = Calibrator(a, base, plans, log_names, sizes, shapes)
    fits = cal.run()
    fitted = {f.key for f in fits}
    _write_costs(raw, fits, base.name, cal.notes)
    _write_copy_engine(raw, fits, base.name)
    kept = f"kept from base {base.name}:"
    if "host" in raw:
        raw["host"]["source"] = f"{kept} {raw['host'].get('source', '')}".strip()
    extract = raw.get("pce", {}).get("extract")
    if isinstance(extract, dict):
        extract["source"] = f"{kept} {extract.get('source', '')}".strip()
    if prover is not None:
        raw["prover"] = prover
    _write_gpu(raw, a, log_names, base.name, gpu_model, vram, fitted)
    today = dt.date.today().isoformat()
    raw["name"] = name
    raw["provenance"] = (
        f"Calibrated by `cuzk-sim calibrate` on {today} from {', '.join(log_names)}, base "
        f"profile {base.name}. Fitted (each figure's `source` names its lines, samples and "
        f"spread): {', '.join(sorted(fitted)) or 'none'}. Every other figure is kept from "
        f"the base and says so.\n\nBase provenance:\n{raw.get('provenance', '').strip()}"
    )
    return raw, fits, cal.notes


def _write_costs(raw: dict, fits: list[Fit], base: str, notes: list[str]) -> None:
    """Each kernel and CPU figure: the fit's time, fixed cost, points, source and basis, or
    the base's marked as kept."""
    for section in ("kernel", "cpu"):
        for kind, entry in raw[section].items():
            key = f"{section}.{kind}"
            fit = next((f for f in fits if f.key == key), None)
            if "shares_source" in entry:  # not fitted by a log: the base's, as it said
                entry["shares_source"] = f"kept from base {base}: {entry['shares_source']}"
            if fit is None:
                entry["source"] = f"kept from base {base}: {entry.get('source', '')}".strip()
                continue
            entry["time"] = _fmt_s(fit.fitted_s)
            if fit.fixed_s is not None:
                entry["fixed"] = _fmt_s(fit.fixed_s)
            if fit.points:
                entry["points"] = [[size, _fmt_s(t)] for size, t in fit.points]
            else:
                entry.pop("points", None)
            entry["source"] = fit.provenance
            entry["basis"] = fit.basis
            if key == "cpu.synthesis" and "saturating" in entry:
                # synth_ms was read at the log's own concurrency: the fitted time stands
                # for it, and the base's contention law (model/host_side.py) would slow
                # it twice; dropped, and said so
                for law in ("memory_bound", "saturating"):
                    entry.pop(law, None)
                notes.append(
                    "cpu.synthesis: fitted at the log's own concurrency; the base's "
                    "synthesis contention law (memory_bound, saturating) is dropped"
                )


def _write_copy_engine(raw: dict, fits: list[Fit], base: str) -> None:
    """The copy engine's fitted rates (pageable, pinned, latency), the others kept."""
    ce = raw["copy_engine"]
    keys = ("pageable", "pinned", "latency")
    copy_fits = {k: f for k in keys for f in fits if f.key == f"copy_engine.{k}"}
    if copy_fits:
        old_basis = ce.get("basis")
        for k, f in copy_fits.items():
            ce[k] = f"{f.fitted_s * 1e3:.4f} ms" if k == "latency" else (
                f"{f.fitted_s / 2**30:.4f} GiB/s"
            )  # fmt: skip
            if k != "latency":
                if f.points:
                    ce[f"{k}_points"] = [[size, _fmt_s(t)] for size, t in f.points]
                else:
                    ce.pop(f"{k}_points", None)
        ce["basis"] = {
            k: "fitted"
            if k in copy_fits
            else (
                old_basis.get(k, "assumed")
                if isinstance(old_basis, dict)
                else old_basis or "assumed"
            )
            for k in keys
        }
        kept = [k for k in keys if k not in copy_fits]
        ce["source"] = "; ".join(
            [f"{k} {f.provenance}" for k, f in copy_fits.items()]
            + ([f"{' and '.join(kept)} kept from base {base}"] if kept else [])
        )
    else:
        ce["source"] = f"kept from base {base}: {ce.get('source', '')}".strip()


def _write_gpu(
    raw: dict,
    a: Analyzer,
    log_names: list[str],
    base: str,
    gpu_model: str | None,
    vram: str | None,
    fitted: set[str],
) -> None:
    """The card: the log's (CUZK_SIM_DEVICE lines), the caller's, or the base's; the
    context overhead the log measured (CUZK_SIM_CONTEXT). Adds what it fits to `fitted`."""
    gpu = raw["gpu"]
    if a.context_bytes:  # our pipeline measured it at each run's start
        ctx = a.context_bytes
        mean = round(sum(ctx) / len(ctx))
        gpu["context_overhead"] = f"{mean} B"
        context = (
            f"context overhead the mean of {len(ctx)} CUZK_SIM_CONTEXT lines of "
            f"{', '.join(log_names)} ({min(ctx) / 2**20:.1f}-{max(ctx) / 2**20:.1f} MiB)"
        )
        fitted.add("gpu.context_overhead")
    else:
        context = f"context overhead kept from base {base}"
    card = log_card(a)
    if card is not None and gpu_model is None and vram is None:
        other = _other_total(base, dict(gpu), card)
        gpu["model"], gpu["vram"] = card
        if isinstance(gpu.get("basis"), dict):
            gpu["basis"]["vram"] = "measured"
        gpu["source"] = (
            f"the card CUZK_SIM_DEVICE lines of {', '.join(log_names)} name "
            f"(cudaGetDeviceProperties: name, totalGlobalMem: CUDA's total, which the "
            f"context is measured against{other}); {context}"
        )
        fitted.add("gpu.model")
        fitted.add("gpu.vram")
    elif gpu_model is not None or vram is not None:
        gpu["model"] = gpu_model or (card[0] if card else gpu["model"])
        gpu["vram"] = vram or (card[1] if card else gpu["vram"])
        gpu["source"] = f"the card of {', '.join(log_names)} as given to calibrate; {context}"
    else:
        gpu["source"] = (
            f"kept from base {base} (the log does not name its card: calibrate "
            f"--gpu-model/--vram); {context}: {gpu.get('source', '')}"
        ).strip()
