"""The gate's verdicts in the two forms CI systems read: JUnit XML and GitHub annotations.

JUnit: one <testsuite> "cuzk-sim gate", one <testcase> per scenario; a failing scenario
carries a <failure> whose message is its first reason and whose text holds every reason
and the per-buffer plan diff; an unloadable scenario carries an <error>. GitHub Actions
turns a line `::error file=F,title=T::message` on a job's output into an annotation on F;
properties and message are escaped as the runner expects (% CR LF, and , : in properties).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from cuzk_sim.gate import GateRow

SUITE = "cuzk-sim gate"


def junit_xml(rows: Sequence[GateRow], seconds: dict[str, float] | None = None) -> bytes:
    """JUnit XML bytes; `seconds`: wall time by scenario (0 when absent)."""
    seconds = seconds or {}
    failures = sum(1 for r in rows if not r.error and not r.passed)
    errors = sum(1 for r in rows if r.error)
    suite = ET.Element(
        "testsuite",
        name=SUITE,
        tests=str(len(rows)),
        failures=str(failures),
        errors=str(errors),
        time=f"{sum(seconds.values()):.3f}",
    )
    for r in rows:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=SUITE,
            name=r.scenario,
            time=f"{seconds.get(r.scenario, 0.0):.3f}",
        )
        if r.source:
            case.set("file", r.source)
        if r.error:
            ET.SubElement(case, "error", message=r.error, type="bad input").text = r.error
        elif not r.passed:
            body = list(r.reasons)
            if r.plan_diff:
                body += ["plan changes against the baseline:"] + [f"  {d}" for d in r.plan_diff]
            ET.SubElement(case, "failure", message=r.reasons[0], type="gate").text = "\n".join(body)
        if r.notes:
            ET.SubElement(case, "system-out").text = "\n".join(r.notes)
    ET.indent(suite)
    return ET.tostring(suite, encoding="utf-8", xml_declaration=True) + b"\n"


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(rows: Sequence[GateRow]) -> list[str]:
    """One `::error` line per failing or unloadable scenario (reasons and plan diff in
    the message, which GitHub shows on several lines)."""
    lines = []
    for r in rows:
        if r.passed:
            continue
        body = [r.error] if r.error else list(r.reasons) + list(r.plan_diff)
        where = f"file={_prop(r.source)}," if r.source else ""
        title = _prop(f"{SUITE}: {r.scenario} {r.verdict}")
        lines.append(f"::error {where}title={title}::{_data(chr(10).join(body))}")
    return lines
