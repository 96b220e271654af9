"""Significance in `harness compare`: pass rates with intervals, the difference's interval and p-value, flaky cases,
`--gate`, and intervals on the token and cost deltas; the statistics against published values."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as harness_main
from harness.report.compare import compare_results, comparison_exit_code
from harness.report.html import comparison_html
from harness.report.markdown import comparison_markdown
from harness.report.significance import fisher_exact, mean_difference, rate_difference, wilson
from harness.report.trials import trial_case_id
from tests.test_checks_support import REPO

# --- the statistics, against published values ------------------------------------------------------------------


def test_fisher_exact_matches_the_published_p_values() -> None:
    # Fisher's tea-tasting table (3 of 4 right): p = 34/70; the 2x2 example of the test's Wikipedia page.
    assert fisher_exact((3, 4), (1, 4)) == pytest.approx(0.485714, abs=1e-6)
    assert fisher_exact((1, 10), (11, 14)) == pytest.approx(0.0027594562, abs=1e-9)
    assert fisher_exact((5, 5), (5, 5)) == 1.0


def test_wilson_and_newcombe_match_newcombe_1998() -> None:
    # Newcombe, Statistics in Medicine 17 (1998): 56/70 against 48/80, method 10 gives 0.0524 to 0.3339.
    rate = wilson(56, 70)
    assert (round(rate.low, 4), round(rate.high, 4)) == (0.6918, 0.877)
    difference = rate_difference((48, 80), (56, 70))
    assert (round(difference.low, 4), round(difference.high, 4)) == (0.0524, 0.3339)
    assert wilson(0, 5).low == 0.0 and 0 < wilson(0, 5).high < 1  # no collapse at 0/n


def test_welch_interval_of_a_mean_difference() -> None:
    found = mean_difference([1, 2, 3], [4, 5, 6])
    assert found is not None and found.estimate == 3.0
    assert (round(found.low, 2), round(found.high, 2)) == (0.73, 5.27)  # t(0.975, df 4) = 2.776
    assert mean_difference([1.0], [2.0, 3.0]) is None


# --- compare over trials ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("results") / "r.json"
    assert harness_main(["eval", str(REPO / "golden" / "sql" / "self_correction.json"), "--json", str(out)]) == 0
    return json.loads(out.read_text(encoding="utf-8"))


def with_trials(results: dict[str, Any], outcomes: list[bool], tokens: list[int]) -> dict[str, Any]:
    """`results`' one case as len(outcomes) trials: trial k passes when outcomes[k], and spends tokens[k]."""
    doc = copy.deepcopy(results)
    (case,) = doc["cases"]
    cases = []
    for number, (passed, spent) in enumerate(zip(outcomes, tokens, strict=True), start=1):
        trial = copy.deepcopy(case)
        trial["id"] = trial_case_id(case["id"], Path(case["cassette"]["path"]), number)
        trial["status"] = "passed" if passed else "failed"
        trial["checks"][0]["passed"] = passed
        if not passed:
            trial["checks"][0]["reason"] = "step 2: broke on this trial"
        trial["usage"] = {**trial["usage"], "total": spent}
        trial["cost_usd"] = spent / 1_000_000
        cases.append(trial)
    doc["cases"] = cases
    return doc


def test_compare_over_trials_shows_intervals_and_marks_a_flaky_case(one_run: dict[str, Any]) -> None:
    baseline = with_trials(one_run, [True] * 5, [1000, 1010, 990, 1005, 995])
    candidate = with_trials(one_run, [True, False, True, False, True], [1200, 1190, 1210, 1205, 1195])
    comparison = compare_results(baseline, candidate)
    (case,) = comparison["cases"]
    assert case["status"] == "regressed"
    assert case["flaky"] and not case["baseline"]["flaky"] and case["candidate"]["flaky"]
    assert comparison["summary"]["flaky"] == [case["id"]]
    stats = case["significance"]
    assert stats["baseline"]["estimate"] == 1.0 and stats["baseline"]["low"] == pytest.approx(0.565, abs=1e-3)
    assert stats["candidate"]["estimate"] == 0.6
    assert stats["difference"]["estimate"] == pytest.approx(-0.4)
    assert stats["difference"]["low"] < -0.4 < stats["difference"]["high"] and stats["difference"]["high"] > 0
    assert stats["p_value"] == pytest.approx(0.444444, abs=1e-6) and not stats["significant"]
    check = case["checks"][0]
    assert check["flip"] == "to_fail" and check["significance"]["p_value"] == pytest.approx(0.444444, abs=1e-6)
    tokens = case["delta_intervals"]["tokens"]
    assert tokens["estimate"] == 200 and 0 < tokens["low"] < 200 < tokens["high"]  # more than noise: 0 is outside
    cost = case["delta_intervals"]["cost_usd"]
    assert cost is not None and cost["low"] > 0
    # Within noise: the default gate fails CI on any flip; --gate significant does not.
    assert case["within_noise"] and comparison["summary"]["regressed_within_noise"] == 1
    assert comparison_exit_code(comparison) == 1
    assert comparison_exit_code(comparison, "significant") == 0
    text = comparison_markdown(comparison)
    assert "pass rate 1.00 [0.57, 1.00] → 0.60 [0.23, 0.88]" in text and "flaky" in text
    assert "p 0.44 (within noise)" in text
    html = comparison_html(comparison)
    assert "pass rate 1.00 [0.57, 1.00] → 0.60 [0.23, 0.88]" in html and "<strong>Flaky</strong>" in html
    assert "Δ tokens +200 [+188.5, +211.5]" in html


def test_a_clear_regression_fails_the_significant_gate(one_run: dict[str, Any]) -> None:
    baseline = with_trials(one_run, [True] * 10, [1000] * 10)
    candidate = with_trials(one_run, [False] * 10, [1000] * 10)
    comparison = compare_results(baseline, candidate, gate="significant")
    (case,) = comparison["cases"]
    assert case["significance"]["significant"] and case["significance"]["p_value"] < 1e-4
    assert not case["flaky"] and not case["within_noise"]
    assert case["delta_intervals"]["tokens"] == {"estimate": 0.0, "low": 0.0, "high": 0.0}
    assert comparison_exit_code(comparison) == 1


def test_the_gate_flag_on_the_command_line(
    one_run: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps(with_trials(one_run, [True] * 5, [1000] * 5)), encoding="utf-8")
    after.write_text(json.dumps(with_trials(one_run, [True, False] * 2 + [True], [1000] * 5)), encoding="utf-8")
    assert harness_main(["compare", str(before), str(after)]) == 1
    assert (
        harness_main(["compare", str(before), str(after), "--gate", "significant", "--json", str(tmp_path / "c.json")])
        == 0
    )
    printed = capsys.readouterr().out
    assert "flaky (trials both pass and fail):" in printed and "within noise" in printed
    assert json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))["gate"] == "significant"
