"""Record mode fork: replay the recorded prefix while requests match, record from the first divergence."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import use_cassette
from harness.cassette.format import load_cassette
from harness.pricing import estimate_cost
from harness.run import Usage
from tests.fake_messages_api import FakeMessagesAPI

MODEL = "claude-sonnet-5"


def ask(client: object, text: str) -> str:
    message = client.messages.create(model=MODEL, max_tokens=64,  # type: ignore[attr-defined]
                                     messages=[{"role": "user", "content": text}])
    return message.content[0].text


def record(path: Path, *texts: str) -> None:
    api = FakeMessagesAPI()
    with use_cassette(path, mode="once"):
        for text in texts:
            ask(api.client(), text)


def test_fork_replays_the_prefix_and_records_from_the_first_divergence(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    record(path, "one", "two", "three")
    before = load_cassette(path)
    api = FakeMessagesAPI()
    with use_cassette(path, mode="fork") as cassette:
        client = api.client()
        answers = [ask(client, text) for text in ("one", "two, changed", "three")]
    assert answers == ["echo: one", "echo: two, changed", "echo: three"]
    assert api.calls == 2, "the first request replays; the second and everything after it go out"
    after = load_cassette(path)
    assert after.interactions[0] == before.interactions[0], "the prefix is kept as it was recorded"
    assert [i["request"]["body"]["messages"][0]["content"] for i in after.interactions] == [
        "one", "two, changed", "three"]
    fork = after.meta["fork"]
    assert fork["first_divergent_request"] == 2
    assert (fork["replayed_interactions"], fork["re_recorded_from"], fork["re_recorded_interactions"]) == (1, 2, 2)
    assert fork["change"]["kind"] == "message_history"
    assert fork["previous"]["recorded_at"] == before.meta["recorded_at"]
    assert after.meta["source"] == "live"

    report = cassette.fork_report()
    assert report.first_divergent_request == 2 and report.written
    assert (report.replayed.interactions, report.recorded.interactions, report.replaced) == (1, 2, 2)
    # The fake answers 11 input + 7 output tokens per call, priced at the model's list price.
    assert report.replayed.usage.total == 18 and report.recorded.usage.total == 36
    per_call = Usage.from_api({"input_tokens": 11, "output_tokens": 7})
    assert report.replayed.cost_usd == pytest.approx(estimate_cost(MODEL, per_call))


def test_a_fork_that_never_diverges_leaves_the_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    record(path, "one", "two")
    raw = path.read_bytes()
    api = FakeMessagesAPI()
    with use_cassette(path, mode="fork") as cassette:
        ask(api.client(), "one")
        ask(api.client(), "two")
    assert api.calls == 0 and path.read_bytes() == raw
    report = cassette.fork_report()
    assert report.first_divergent_request is None and not report.written
    assert report.replayed.interactions == 2 and report.recorded.interactions == 0


def test_a_fork_whose_run_fails_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    record(path, "one", "two")
    raw = path.read_bytes()
    api = FakeMessagesAPI()
    with pytest.raises(RuntimeError, match="the test failed"), use_cassette(path, mode="fork") as cassette:
        ask(api.client(), "one")
        ask(api.client(), "two, changed")
        raise RuntimeError("the test failed")
    assert api.calls == 1 and path.read_bytes() == raw
    assert not cassette.fork_report().written


def test_a_fork_of_a_missing_cassette_records_it(tmp_path: Path) -> None:
    path = tmp_path / "new.yaml"
    api = FakeMessagesAPI()
    with use_cassette(path, mode="fork"):
        ask(api.client(), "hello")
    stored = load_cassette(path)
    assert len(stored.interactions) == 1 and "fork" not in stored.meta
