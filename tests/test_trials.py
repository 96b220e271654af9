"""Several trials per case: pass@k and pass^k, trial names and groups, `harness record --trials N`."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pytest

from harness.cassette.format import load_cassette
from harness.cli import main as harness_main
from harness.report.trials import (
    TrialStats,
    group_cases,
    pass_at_k,
    pass_hat_k,
    trial_case_id,
    trial_group,
    trial_path,
    trial_paths,
)
from harness.trajectory import load_trajectory


def enumerate_draws(n: int, c: int, k: int) -> tuple[float, float]:
    """pass@k and pass^k by brute force: every k-subset of n trials, c of which passed."""
    outcomes = [True] * c + [False] * (n - c)
    draws = list(combinations(outcomes, k))
    return sum(any(d) for d in draws) / len(draws), sum(all(d) for d in draws) / len(draws)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_the_estimators_equal_counting_every_draw_of_k_trials(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            at, hat = enumerate_draws(n, c, k)
            assert pass_at_k(n, c, k) == pytest.approx(at)
            assert pass_hat_k(n, c, k) == pytest.approx(hat)


def test_pass_at_1_is_the_pass_rate_and_k_beyond_n_is_refused() -> None:
    assert pass_at_k(5, 3, 1) == pytest.approx(0.6) == pass_hat_k(5, 3, 1)
    with pytest.raises(ValueError, match="k=6"):
        pass_at_k(5, 3, 6)
    with pytest.raises(ValueError, match="c=7"):
        pass_hat_k(5, 7, 1)


def test_stats_describe_and_serialize_every_k() -> None:
    stats = TrialStats(n=5, c=3)
    assert stats.describe(3) == "3/5 passed · pass@1 0.60 · pass@3 1.00 · pass^3 0.10"
    assert stats.describe(9) == "3/5 passed · pass@1 0.60 · pass@5 1.00 · pass^5 0.00"  # k clipped to n
    assert TrialStats(n=1, c=0).describe() == "failed"
    data = stats.to_dict()
    assert set(data["pass_at_k"]) == set(data["pass_hat_k"]) == {"1", "2", "3", "4", "5"}
    assert data["pass_hat_k"]["2"] == pytest.approx(pass_hat_k(5, 3, 2))


def test_trial_names_round_trip_to_their_group() -> None:
    cassette = Path("cassettes/dayflow/brief.yaml")
    assert trial_path(cassette, 2) == Path("cassettes/dayflow/brief.trial-2.yaml")
    trial_id = trial_case_id("dayflow/brief/brief.yaml", cassette, 2)
    assert trial_id == "dayflow/brief/brief.trial-2.yaml"
    assert trial_group(trial_id) == ("dayflow/brief/brief.yaml", 2)
    custom = trial_case_id("dayflow-brief-stream", Path("x/brief_stream.yaml"), 3)
    assert trial_group(custom) == ("dayflow-brief-stream", 3)
    assert trial_group("dayflow/brief/brief.yaml") == ("dayflow/brief/brief.yaml", None)
    # only the file name's mark counts, not a folder that happens to look like one
    assert trial_group("a.trial-1/b.yaml") == ("a.trial-1/b.yaml", None)


def test_group_cases_orders_trials_by_number() -> None:
    cases = [{"id": f"g/x.trial-{n}.yaml", "status": "passed"} for n in (10, 2, 1)] + [{"id": "h", "status": "failed"}]
    groups = group_cases(cases)
    assert list(groups) == ["g/x.yaml", "h"]
    assert [case["id"] for case in groups["g/x.yaml"]] == ["g/x.trial-1.yaml", "g/x.trial-2.yaml", "g/x.trial-10.yaml"]


def test_record_trials_writes_one_cassette_per_trial_differing_in_ids_only(tmp_path: Path) -> None:
    assert harness_main(["record", "--demo", "dayflow-brief", "--trials", "3", "--cassettes", str(tmp_path)]) == 0
    found = trial_paths(tmp_path / "dayflow" / "brief.yaml")
    assert [number for number, _ in found] == [1, 2, 3]
    assert not (tmp_path / "dayflow" / "brief.yaml").exists()
    trajectories = [load_trajectory(path) for _, path in found]
    ids = [[call.id for call in t.tool_calls] for t in trajectories]
    assert len({tuple(each) for each in ids}) == 3, "each trial has its own seed, so its own tool_use ids"
    texts = {t.final_text for t in trajectories}
    assert len(texts) == 1, "the simulator's replies depend on the request only: trials differ in ids"
    assert all(load_cassette(path).meta["source"] == "simulator" for _, path in found)


def test_record_trials_must_be_positive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert harness_main(["record", "--demo", "dayflow-brief", "--trials", "0", "--cassettes", str(tmp_path)]) == 2
    assert "--trials must be 1 or more" in capsys.readouterr().err
