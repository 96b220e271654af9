"""JUnit XML: one testcase per case and check, failures and errors where CI reporters look for them."""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from harness.report.junit import results_junit
from tests.test_report_support import make_project, run_eval


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], ET.Element]:
    project = make_project(tmp_path_factory.mktemp("project"))
    out = tmp_path_factory.mktemp("out")
    code, results = run_eval(project, out, "--junit", str(out / "junit.xml"))
    assert code == 1  # a check failed (the project also holds a case that cannot run: 1 wins over 2)
    return results, ET.parse(out / "junit.xml").getroot()


def test_counts_match_the_results(run: tuple[dict[str, Any], ET.Element]) -> None:
    results, root = run
    summary = results["summary"]
    ran = [case for case in results["cases"] if case["status"] != "error"]
    testcases = root.findall("./testsuite/testcase")
    assert len(testcases) == sum(len(case["checks"]) for case in ran) + summary["errored"]
    assert int(root.get("tests")) == len(testcases)
    assert int(root.get("failures")) == summary["checks_failed"] == len(root.findall(".//failure"))
    assert int(root.get("errors")) == summary["errored"] == len(root.findall(".//error"))
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "report" and suite.get("tests") == root.get("tests")


def test_a_failed_check_is_a_failure_with_its_reason(run: tuple[dict[str, Any], ET.Element]) -> None:
    results, root = run
    case = next(c for c in results["cases"] if c["status"] == "failed")
    check = next(k for k in case["checks"] if not k["passed"])
    testcase = root.find(f"./testsuite/testcase[@classname='{case['id']}'][@name='{check['id']}']")
    failure = testcase.find("failure")
    assert failure.get("message") == check["reason"] and failure.get("type") == check["check"]
    assert f"step {check['step']}" in failure.text
    passing = root.find(f"./testsuite/testcase[@classname='{case['id']}'][@name='tool_ids_matched']")
    assert passing.find("failure") is None


def test_a_case_that_could_not_run_is_an_error(run: tuple[dict[str, Any], ET.Element]) -> None:
    results, root = run
    case = next(c for c in results["cases"] if c["status"] == "error")
    (testcase,) = root.findall(f"./testsuite/testcase[@classname='{case['id']}']")
    error = testcase.find("error")
    assert error is not None and "no such cassette" in error.get("message")


def test_tokens_and_cost_are_in_system_out(run: tuple[dict[str, Any], ET.Element]) -> None:
    results, root = run
    case = next(c for c in results["cases"] if c["id"].startswith("sql/"))
    out = root.find(f"./testsuite/testcase[@classname='{case['id']}']/system-out").text
    assert f"input {case['usage']['input']:,}" in out and f"output {case['usage']['output']:,}" in out
    assert f"cost: ${case['cost_usd']:.4f}" in out


def test_control_characters_cannot_break_the_xml(run: tuple[dict[str, Any], ET.Element]) -> None:
    results = copy.deepcopy(run[0])
    check = next(k for c in results["cases"] for k in c["checks"] if not k["passed"])
    check["reason"] = "bad \x00 byte & <tag> \x1b[31m"
    root = ET.fromstring(results_junit(results).encode("utf-8"))
    message = root.find(".//failure").get("message")
    assert message == "bad \ufffd byte & <tag> \ufffd[31m"
