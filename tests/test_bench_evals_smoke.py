"""bench/evals.py runs (at a toy size); it prints figures and asserts nothing about time."""

from __future__ import annotations

import pytest

from bench import evals


def test_the_eval_benchmark_runs_every_check_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert evals.main(["--count", "24", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "24 trajectories from 12 bundled cases" in out
    for kind in ("tool_ids_matched", "self_correction", "promotions_filtered", "trajectory_match",
                 "final_answer", "outcome", "budgets", "no_repeated_calls"):
        assert kind in out
    assert "build + checks" in out


def test_the_sim_auto_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import sim_auto

    assert sim_auto.main(["--inputs", "5", "--turns", "2", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    for name in ("search_products", "create_order", "schedule_delivery", "first turn"):
        assert name in out
