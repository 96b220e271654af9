"""JUnit XML views: one <testcase> per case and check, so CI test reporters list evals like tests.

A failed check is a <failure> (message: its reason, which names the step); a case that could not run
is one <testcase> with an <error>. Tokens and cost go to <system-out>. In a comparison, a check that
flipped to fail is the <failure>; a case that could not run on either side, the <error>.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from harness.evals.document import ResultsDocument
from harness.report._text import KIND_LABELS, KINDS, cost, cost_parts, error_text, one_line, signed, tokens, usage_line
from harness.report.compare import comparison_exit_code

__all__ = ["comparison_junit", "results_junit"]

# XML 1.0 cannot hold most control characters, even escaped; a final text or a tool result may.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_text(value: Any) -> str:
    return _NOT_XML.sub("\ufffd", str(value))


def _seconds(milliseconds: float | None) -> str:
    return f"{(milliseconds or 0) / 1000:.3f}"


def _element(parent: ET.Element, tag: str, text: str | None = None, **attributes: Any) -> ET.Element:
    element = ET.SubElement(parent, tag, {key: _xml_text(value) for key, value in attributes.items()})
    if text is not None:
        element.text = _xml_text(text)
    return element


def _serialize(root: ET.Element) -> str:
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _case_out(case: Mapping[str, Any]) -> str:
    digest = case.get("trajectory") or {}
    lines = [f"case {case['id']}", f"cassette {case['cassette']['path']}"]
    if digest:
        lines.append(
            f"steps {digest.get('steps')} · tool calls {digest.get('tool_calls')} · model {digest.get('model')}"
        )
    lines.append(f"tokens: {usage_line(case.get('usage'))}")
    lines.append(f"cost: {cost(case.get('cost_usd'))}")
    if case.get("cost_by_kind"):
        lines.append(f"cost by kind: {' · '.join(cost_parts(case['cost_by_kind']))}")
    return "\n".join(lines)


def _suite_element(parent: ET.Element, name: str, cases: Sequence[Mapping[str, Any]]) -> ET.Element:
    seconds = sum((case["timings"].get("total_ms") or 0) for case in cases)
    suite = _element(parent, "testsuite", name=name, time=_seconds(seconds))
    for case in cases:
        if case["status"] == "error":
            testcase = _element(
                suite, "testcase", classname=case["id"], name="(load)", time=_seconds(case["timings"].get("total_ms"))
            )
            reason = error_text(case["error"])
            _element(testcase, "error", reason, message=one_line(reason), type="HarnessError")
            _element(testcase, "system-out", _case_out(case))
            continue
        for check in case["checks"]:
            testcase = _element(
                suite, "testcase", classname=case["id"], name=check["id"], time=_seconds(check.get("duration_ms"))
            )
            if (check.get("judge") or {}).get("status") == "needs_rejudging":
                _element(testcase, "skipped", message=one_line(check["reason"]))
            elif not check["passed"]:
                where = (
                    f"step {check['step']}: "
                    if check["step"] is not None and not str(check["reason"]).startswith("step")
                    else ""
                )
                _element(
                    testcase,
                    "failure",
                    f"{where}{check['reason']}",
                    message=one_line(check["reason"]),
                    type=check["check"],
                )
            judged = f"{check['reason']}\n" if check.get("judge") else ""  # the judge's reasons, pass or fail
            _element(testcase, "system-out", judged + _case_out(case))
    usage = {kind: sum((case.get("usage") or {}).get(kind, 0) for case in cases) for kind in KINDS}
    _element(
        suite,
        "system-out",
        f"suite {name}: tokens " + " · ".join(f"{KIND_LABELS[kind]} {tokens(usage[kind])}" for kind in KINDS),
    )
    _count(suite)
    return suite


def _count(element: ET.Element) -> None:
    """tests, failures, errors and skipped of a <testsuite> or <testsuites>, from what it holds."""
    testcases = list(element.iter("testcase"))
    element.set("tests", str(len(testcases)))
    element.set("failures", str(sum(1 for t in testcases if t.find("failure") is not None)))
    element.set("errors", str(sum(1 for t in testcases if t.find("error") is not None)))
    element.set("skipped", str(sum(1 for t in testcases if t.find("skipped") is not None)))


def results_junit(results: ResultsDocument) -> str:
    """JUnit XML of a results document: a <testsuite> per suite."""
    root = ET.Element("testsuites", {"name": "harness eval", "time": _seconds(results["summary"].get("duration_ms"))})
    for suite in results["suites"]:
        _suite_element(root, suite["name"], [case for case in results["cases"] if case["suite"] == suite["name"]])
    _count(root)
    return _serialize(root)


def _flip_text(side: Mapping[str, Any] | None) -> str:
    if side is None:
        return "absent"
    return ("pass" if side["passed"] else "fail") if side["n"] == 1 else f"{side['c']}/{side['n']} passed"


def comparison_junit(comparison: Mapping[str, Any]) -> str:
    """JUnit XML of a comparison: a testcase per case and check; a flip to fail is the failure."""
    summary = comparison["summary"]
    root = ET.Element("testsuites", {"name": "harness compare"})
    suite = _element(root, "testsuite", name="compare")
    for case in comparison["cases"]:
        deltas = (
            f"case {case['id']}: {case['status']}\n"
            f"tokens delta: "
            + ", ".join(f"{KIND_LABELS[k]} {signed((case['usage_delta'] or {}).get(k))}" for k in (*KINDS, "total"))
            + f"\ncost delta: {signed(case['cost_delta'], money=True)}"
        )
        if case["status"] == "error":
            testcase = _element(suite, "testcase", classname=case["id"], name="(load)")
            side = "baseline" if case["baseline"]["error"] else "candidate"
            reason = f"the {side} could not run: {error_text(case[side]['error'])}"
            _element(testcase, "error", reason, message=one_line(reason), type="HarnessError")
            _element(testcase, "system-out", deltas)
            continue
        for check in case["checks"]:
            testcase = _element(suite, "testcase", classname=case["id"], name=check["id"])
            if check["flip"] == "to_fail":
                after = check["candidate"]
                named = after["step"] is None or str(after["reason"]).startswith("step ")
                message = (
                    f"{_flip_text(check['baseline'])} -> {_flip_text(after)}"
                    + ("" if named else f" at step {after['step']}")
                    + f": {after['reason']}"
                )
                _element(testcase, "failure", message, message=one_line(message), type=check["candidate"]["check"])
            _element(testcase, "system-out", deltas)
    _count(suite)
    _count(root)
    _element(suite, "system-out", f"status {summary['status']} (exit {comparison_exit_code(comparison)})")
    return _serialize(root)
