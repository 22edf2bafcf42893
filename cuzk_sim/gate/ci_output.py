"""The gate's verdicts in the two forms CI systems read: JUnit XML and GitHub annotations.

JUnit: one <testsuite> "cuzk-sim gate", one <testcase> per scenario; a failing scenario
carries a <failure> whose message is its first reason and whose text holds every reason
(the per-buffer findings with the prover line that allocates each buffer, when the dry
run recorded it) and the grouped plan diff, capped at PLAN_DIFF_LINES lines; an
unloadable scenario carries an <error>. GitHub Actions turns a line
`::error file=F,line=L,title=T::message` on a job's output into an annotation on F:
one per failing scenario on its file, and one per buffer finding on the prover line that
allocates the buffer when it is known; properties and message are escaped as the runner
expects (% CR LF, and , : in properties).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from cuzk_sim.gate.verdicts import GateRow
from cuzk_sim.plan.diff import capped

SUITE = "cuzk-sim gate"
PLAN_DIFF_LINES = 20  # of the grouped plan diff, in the table, JUnit and annotations


def _body(r: GateRow) -> list[str]:
    """Every reason (a buffer finding with its allocating line), then the capped diff."""
    sites = {b.sentence: b.site for b in r.buffers if b.site}
    body = []
    for reason in r.reasons:
        site = next((v for k, v in sites.items() if reason.startswith(k)), None)
        body.append(reason + (f" [allocated at {site}]" if site else ""))
    if r.plan_diff:
        body += ["plan changes against the baseline:"]
        body += [f"  {d}" for d in capped(r.plan_diff, PLAN_DIFF_LINES)]
    return body


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
            body = _body(r)
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
    """One `::error` line per failing or unloadable scenario on its file (reasons and the
    capped plan diff in the message, which GitHub shows on several lines), and one per
    buffer finding on the prover line that allocates the buffer, when known."""
    lines = []
    for r in rows:
        if r.passed:
            continue
        body = [r.error] if r.error else _body(r)
        where = f"file={_prop(r.source)}," if r.source else ""
        title = _prop(f"{SUITE}: {r.scenario} {r.verdict}")
        lines.append(f"::error {where}title={title}::{_data(chr(10).join(body))}")
        for b in r.buffers:
            if not b.site:
                continue
            path, _, line = b.site.rpartition(":")
            title = _prop(f"{SUITE}: {r.scenario}: buffer {b.family} grew")
            text = f"{b.sentence} (scenario {r.source or r.scenario})"
            lines.append(f"::error file={_prop(path)},line={line},title={title}::{_data(text)}")
    return lines
