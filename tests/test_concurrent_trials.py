"""`harness record --trials N --concurrency C` against a rate-limited simulator, and the simulator's limits."""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest

from harness.cassette.format import load_cassette
from harness.cli import main as harness_main
from harness.commands.sim import add_arguments as sim_arguments
from harness.report.trials import trial_paths
from harness.sim import RateLimits, Simulator
from harness.sim.tokens import count_input
from tests.user_projects import weather_project

HELLO = {"model": "sim-echo", "max_tokens": 16, "messages": [{"role": "user", "content": "hello"}]}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def paced_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return weather_project(tmp_path / "paced", monkeypatch, "paced_weather_agent")


def test_concurrent_trials_against_a_spent_limit_wait_for_it_and_meet_no_429(
    paced_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    trials, concurrency, rpm = 3, 3, 120
    with Simulator(rate_limits=RateLimits(rpm=rpm)) as sim:
        limiter = sim.resources.limiter
        assert limiter is not None
        for _ in range(rpm - 1):  # another client spent all but one request of this minute
            assert limiter.admit(HELLO).error is None
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        assert harness_main(["record", "--trials", str(trials), "--concurrency", str(concurrency)]) == 0
        answered = [served for served in sim.served if served.index is not None]
    out = capsys.readouterr().out
    found = trial_paths(paced_project / "cassettes" / "weather.yaml")
    assert [number for number, _ in found] == [1, 2, 3]
    # Each weather trial is two requests: five more than the one the bucket had left, so five waited for it.
    assert len(answered) == 2 * trials
    assert [served.status for served in answered] == [200] * len(answered)
    assert limiter.refused == 0
    for _, path in found:
        cassette = load_cassette(path)
        assert [interaction["response"]["status"] for interaction in cassette.interactions] == [200, 200]
        assert cassette.meta["source"] == "simulator" and cassette.meta["simulator_model"] == "sim-auto"
    assert out.count(": 2 steps, outcome ended") == trials
    assert "recorded 3 of 3 cassettes in " in out and f"{concurrency} at a time" in out
    assert "paced 6 requests by the rate-limit headers" in out and "0 429s (0 unpaced" in out


def test_the_simulator_sends_the_apis_rate_limit_headers_and_a_real_429() -> None:
    clock = FakeClock()
    with Simulator(rate_limits=RateLimits(rpm=2, itpm=10_000, otpm=1_000, clock=clock)) as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="sim-key", max_retries=0)
        first = client.messages.with_raw_response.create(**HELLO)
        headers = first.headers
        assert headers["anthropic-ratelimit-requests-limit"] == "2"
        assert headers["anthropic-ratelimit-requests-remaining"] == "1"
        # One request of 2 a minute refills in 30 s: the bucket is full again then (RFC 3339, whole seconds).
        assert headers["anthropic-ratelimit-requests-reset"] == "2027-01-15T08:00:30Z"
        assert headers["anthropic-ratelimit-input-tokens-limit"] == "10000"
        # max_tokens (16) is reserved at admission, then what the answer wrote is all that stays spent.
        written = first.parse().usage.output_tokens
        assert int(headers["anthropic-ratelimit-output-tokens-remaining"]) == 1_000 - written
        assert headers["anthropic-ratelimit-tokens-limit"] == "11000"
        client.messages.create(**HELLO)
        with pytest.raises(anthropic.RateLimitError) as refused:
            client.messages.create(**HELLO)
        error = refused.value
        assert error.status_code == 429 and error.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
        assert error.response.headers["retry-after"] == "30"
        assert error.response.headers["anthropic-ratelimit-requests-remaining"] == "0"
        assert error.response.headers["x-should-retry"] == "true"
        clock.now += 30  # a request's worth has refilled
        assert client.messages.create(**HELLO).stop_reason == "end_turn"
        assert sim.resources.limiter is not None and sim.resources.limiter.refused == 1


def test_an_input_token_limit_refuses_a_prompt_bigger_than_what_is_left_until_it_refills() -> None:
    clock = FakeClock()
    with Simulator(rate_limits=RateLimits(itpm=50, clock=clock)) as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="sim-key", max_retries=0)
        big = {**HELLO, "messages": [{"role": "user", "content": "word " * 30}]}
        assert count_input(big) == 50 and count_input(HELLO) == 14  # as the simulator counts input tokens
        assert client.messages.create(**HELLO).stop_reason == "end_turn"  # leaves 36 of the 50
        with pytest.raises(anthropic.RateLimitError, match="50 input tokens per minute") as refused:
            client.messages.create(**big)
        assert int(refused.value.response.headers["anthropic-ratelimit-input-tokens-remaining"]) == 36
        clock.now += int(refused.value.response.headers["retry-after"])
        assert client.messages.create(**big).type == "message"


def test_without_limits_the_headers_carry_the_defaults_and_real_time_resets() -> None:
    clock = FakeClock()
    with Simulator(rate_limits=RateLimits(clock=clock)) as sim:
        assert sim.resources.limiter is None
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="sim-key", max_retries=0)
        headers = client.messages.with_raw_response.create(**HELLO).headers
        assert headers["anthropic-ratelimit-requests-limit"] == "4000"
        # one request of 4,000 a minute comes back in 15 ms: full again within the second (rounded up)
        assert headers["anthropic-ratelimit-requests-reset"] == "2027-01-15T08:00:01Z"
        assert headers["anthropic-ratelimit-tokens-reset"] == "2027-01-15T08:00:00Z"


def test_sim_cli_takes_the_limits_and_refuses_a_bad_one(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser()
    sim_arguments(parser)
    args = parser.parse_args(["--rpm", "120", "--itpm", "40000", "--otpm", "8000"])
    assert (args.rpm, args.itpm, args.otpm) == (120, 40000, 8000)
    with pytest.raises(SystemExit):
        parser.parse_args(["--rpm", "0"])
    assert "--rpm: must be a whole number of 1 or more, got '0'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="rpm must be a whole number"):
        RateLimits(rpm=0)


def test_record_concurrency_must_be_positive(paced_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert harness_main(["record", "--trials", "2", "--concurrency", "0"]) == 2
    assert "--concurrency must be 1 or more" in capsys.readouterr().err


def test_demo_trials_recorded_at_once_are_the_trials_recorded_one_by_one(tmp_path: Path) -> None:
    from harness.trajectory import load_trajectory

    one_by_one, at_once = tmp_path / "one", tmp_path / "many"
    assert harness_main(["record", "--demo", "dayflow-brief", "--trials", "3", "--cassettes", str(one_by_one)]) == 0
    assert harness_main(["record", "--demo", "dayflow-brief", "--trials", "3", "--concurrency", "3",
                         "--cassettes", str(at_once)]) == 0
    for (k, first), (j, second) in zip(trial_paths(one_by_one / "dayflow" / "brief.yaml"),
                                       trial_paths(at_once / "dayflow" / "brief.yaml"), strict=True):
        assert k == j
        # trial K has seed K - 1 however the trials were scheduled, so the same ids and the same answers
        runs = [load_trajectory(path).to_dict() for path in (first, second)]
        for run in runs:
            del run["source"]  # which file, and when it was recorded
        assert runs[0] == runs[1]


def test_an_async_client_with_the_pacer_waits_for_a_spent_limit_instead_of_a_429() -> None:
    import asyncio

    from harness.pacing import Pacer

    pacer = Pacer()
    with Simulator(rate_limits=RateLimits(rpm=120)) as sim:
        limiter = sim.resources.limiter
        assert limiter is not None
        for _ in range(119):  # one request left in this minute's bucket
            assert limiter.admit(HELLO).error is None

        async def three_at_once() -> list[str]:
            # No retries: a 429 would raise, so every answer below went only when the pacer let it.
            async with anthropic.AsyncAnthropic(base_url=sim.base_url, api_key="sim-key", max_retries=0,
                                                middleware=[pacer.middleware()]) as client:
                counted = await client.messages.count_tokens(model=HELLO["model"], messages=HELLO["messages"])
                assert counted.input_tokens > 0  # not a Messages API call: not paced
                answers = await asyncio.gather(*(client.messages.create(**HELLO) for _ in range(3)))
            return [answer.type for answer in answers]

        assert asyncio.run(three_at_once()) == ["message"] * 3
    assert limiter.refused == 0
    assert pacer.stats.attempts == 3 and pacer.stats.rate_limited == 0
