"""Trajectory: built from real cassettes, from a loop run identically, runs and attempts, JSON schema, `show`."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import httpx2
import jsonschema
import pytest

from harness.cli import main as harness_main
from harness.run import Exchange
from harness.trajectory import Trajectory, load_trajectory
from tests.conftest import corpus_params
from tests.test_checks_support import (
    MODEL,
    PARALLEL_TOOLS,
    REAL,
    TOOL_ERROR_HAR,
    TOOL_SEARCH,
    ScriptedModel,
    conversation,
    dayflow_script,
    message,
    overloaded,
    real_cassettes,
    record_dayflow,
    server_error,
    sse_body,
    text,
    tool_result,
    tool_use,
    turn,
)


@cache
def _validator() -> jsonschema.protocols.Validator:
    schema_path = Path(__file__).resolve().parents[1] / "harness" / "trajectory.schema.json"
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _assert_valid(data: dict[str, Any]) -> None:
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:3]]


@pytest.mark.real_cassettes
def test_the_corpus_is_there() -> None:
    assert len(real_cassettes()) == 55


@pytest.mark.parametrize("path", corpus_params(real_cassettes()),
                         ids=lambda p: str(p.relative_to(REAL)) if p else "corpus-absent")
def test_every_real_cassette_gives_a_schema_valid_trajectory(path: Path) -> None:
    trajectory = load_trajectory(path)
    data = trajectory.to_dict()
    _assert_valid(data)
    assert data["counts"]["runs"] >= 1
    assert [step["index"] for run in data["runs"] for step in run["steps"]] == list(
        range(1, data["counts"]["steps"] + 1)
    )
    assert trajectory.source["path"] == str(path)


@pytest.mark.real_cassettes
def test_four_conversations_in_one_cassette_are_four_runs() -> None:
    trajectory = load_trajectory(TOOL_SEARCH)
    assert [len(run.steps) for run in trajectory.runs] == [3, 4, 2, 2]
    assert [step.index for step in trajectory.steps] == list(range(1, 12))
    failed = [call for call in trajectory.tool_calls if call.result and call.result.is_error]
    assert [(call.step, call.name, call.input) for call in failed] == [(5, "stock_lookup", {"ticker": "AAPL"})]
    assert failed[0].result is not None and failed[0].result.step == 6  # carried by step 6's request
    # each run's first request holds only its user prompt; later deltas hold the echo and the results
    assert [len(run.steps[0].delta) for run in trajectory.runs] == [1, 1, 1, 1]
    assert [m["role"] for m in trajectory.runs[1].steps[1].delta] == ["assistant", "user"]
    assert trajectory.final_text == trajectory.runs[-1].steps[-1].text


@pytest.mark.real_cassettes
def test_parallel_tool_results_come_from_the_next_request() -> None:
    trajectory = load_trajectory(PARALLEL_TOOLS)
    first = trajectory.steps[0]
    assert first.stop_reason == "tool_use"
    assert [call.input["name"] for call in first.tool_calls] == ["Alice", "Bob", "Charlie", "Daisy"]
    assert all(call.result and call.result.step == 2 and not call.result.is_error for call in first.tool_calls)
    assert first.tool_calls[3].result.content == "daisy is bob's daughter and charlie's younger sister"


@pytest.mark.real_cassettes
def test_streamed_and_json_recordings_of_one_scenario_read_alike() -> None:
    base = REAL / "mirascope/output/cassettes/test_call_with_tools/anthropic_claude_sonnet_4_0"
    plain, streamed = load_trajectory(base / "sync.yaml"), load_trajectory(base / "stream.yaml")
    assert [s.stop_reason for s in plain.steps] == [s.stop_reason for s in streamed.steps] == ["tool_use", "end_turn"]
    assert [(c.name, c.input) for c in plain.tool_calls] == [(c.name, c.input) for c in streamed.tool_calls]
    assert streamed.steps[0].request["stream"] is True and plain.steps[0].request["stream"] is False


@pytest.mark.real_cassettes
def test_usage_keeps_kinds_apart_and_cache_counts() -> None:
    path = REAL / "openllmetry/test_prompt_caching/test_anthropic_prompt_caching_legacy.yaml"
    trajectory = load_trajectory(path)
    assert [step.usage.cache_write for step in trajectory.steps] == [1163, 0]
    assert [step.usage.cache_read for step in trajectory.steps] == [0, 1163]
    assert trajectory.usage.total == sum(s.usage.total for s in trajectory.steps)


@pytest.mark.real_cassettes
def test_server_tool_results_come_from_the_same_response() -> None:
    trajectory = load_trajectory(REAL / "llm-anthropic/test_web_search.yaml")
    (call,) = trajectory.tool_calls
    assert call.server and call.name == "web_search" and call.result is not None and call.result.step == 1


@pytest.mark.real_cassettes
def test_error_recordings_end_in_a_failed_request_with_every_try() -> None:
    path = REAL / "mirascope/input/cassettes/test_model_not_found/anthropic_claude_sonnet_4_0.yaml"
    trajectory = load_trajectory(path)
    (run,) = trajectory.runs
    assert run.steps == [] and run.failed_request is not None
    assert [(a.status, a.error_type) for a in run.failed_request.attempts] == [(404, "not_found_error")] * 2
    outcome = trajectory.outcome
    assert outcome is not None and (outcome.kind, outcome.status) == ("error", 404)


@pytest.mark.real_cassettes
def test_count_tokens_and_foreign_hosts_are_skipped_with_a_reason() -> None:
    trajectory = load_trajectory(REAL / "llm-anthropic/test_url_prompt.yaml")
    assert len(trajectory.skipped) == 2 and all("not a Messages API call" in s["reason"] for s in trajectory.skipped)


# --- runs, attempts, deltas from plain exchanges ---------------------------------------------------------------


def _body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 10, "messages": list(messages)}


USER = {"role": "user", "content": "hello"}


def test_an_error_then_a_success_is_one_step_with_two_attempts() -> None:
    reply = message([text("hi")])
    trajectory = Trajectory.from_exchanges(
        [
            Exchange(request=_body(USER), message=None, status=529, error_type="overloaded_error"),
            Exchange(request=_body(USER), message=reply, status=200),
        ]
    )
    (step,) = trajectory.steps
    assert [(a.status, a.ok) for a in step.attempts] == [(529, False), (200, True)]
    assert len(trajectory.runs) == 1 and trajectory.outcome is not None and trajectory.outcome.kind == "stop"


def test_the_same_request_after_a_success_is_a_new_run() -> None:
    trajectory = Trajectory.from_exchanges(
        [
            Exchange(request=_body(USER), message=message([text("a")]), status=200),
            Exchange(request=_body(USER), message=message([text("b")]), status=200),
        ]
    )
    assert [len(run.steps) for run in trajectory.runs] == [1, 1]
    assert [step.index for step in trajectory.steps] == [1, 2]


def test_usage_is_counted_once_per_message_id() -> None:
    same = message([text("a")], msg_id="msg_dup", usage={"input_tokens": 10, "output_tokens": 5})
    trajectory = Trajectory.from_exchanges(
        [
            Exchange(request=_body(USER), message=same, status=200),
            Exchange(request=_body(USER), message=same, status=200),
        ]
    )
    assert [s.usage_counted for s in trajectory.steps] == [True, False]
    assert trajectory.usage.to_dict() == {"input": 10, "output": 5, "cache_write": 0, "cache_read": 0, "total": 15}


def test_compacted_tool_results_and_moved_cache_breakpoints_stay_one_run() -> None:
    call = tool_use("read", {"path": "a"}, id="toolu_a")
    first = message([call])
    echo = {"role": "assistant", "content": [call]}
    results = {"role": "user", "content": [tool_result("toolu_a", "x" * 500)]}
    second = message([text("done")], stop_reason="tool_use")
    follow = {"role": "user", "content": [{"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}}]}
    compacted = {"role": "user", "content": [tool_result("toolu_a", "[compacted: 500 chars from read]")]}
    trajectory = Trajectory.from_exchanges(
        [
            Exchange(request=_body(USER), message=first, status=200),
            Exchange(request=_body(USER, echo, results), message=second, status=200),
            Exchange(
                request=_body(USER, echo, compacted, {"role": "assistant", "content": [text("done")]}, follow),
                message=message([text("ok")]),
                status=200,
            ),
        ]
    )
    assert len(trajectory.runs) == 1
    assert [len(step.delta) for step in trajectory.steps] == [1, 2, 2]
    assert trajectory.tool_calls[0].result is not None and trajectory.tool_calls[0].result.chars == 500


def test_a_tool_use_left_unanswered_at_the_end_has_no_result() -> None:
    trajectory = conversation(turn(tool_use("search", {"q": "x"})))
    (call,) = trajectory.tool_calls
    assert call.result is None


@pytest.mark.real_cassettes
def test_select_runs() -> None:
    trajectory = load_trajectory(TOOL_SEARCH)
    assert [s.index for s in trajectory.select_runs(2).steps] == [4, 5, 6, 7]
    assert [s.index for s in trajectory.select_runs("last").steps] == [10, 11]
    with pytest.raises(ValueError, match="has 4 run"):
        trajectory.select_runs(5)


# --- the same run from its cassette and from its RunResult --------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_cassette_and_run_result_give_the_same_trajectory(tmp_path: Path, stream: bool) -> None:
    path = tmp_path / "brief.yaml"
    result = record_dayflow(path, stream=stream)
    from_cassette, from_run = load_trajectory(path), Trajectory.from_run(result)
    assert from_cassette.comparable() == from_run.comparable()
    assert [c.name for c in from_cassette.tool_calls] == ["read_inbox", "read_calendar", "read_tasks"]
    assert from_cassette.usage.to_dict() == result.usage.to_dict()
    assert from_cassette.final_text == result.final_text
    _assert_valid(from_run.to_dict())


def test_a_retried_529_is_two_attempts_in_the_cassette_and_the_same_trajectory(tmp_path: Path) -> None:
    path = tmp_path / "retry.yaml"
    result = record_dayflow(path, script=dayflow_script(before_final=[overloaded()]))
    from_cassette = load_trajectory(path)
    assert [len(step.attempts) for step in from_cassette.steps] == [1, 2]
    assert [a.status for a in from_cassette.steps[1].attempts] == [529, 200]
    assert from_cassette.comparable() == Trajectory.from_run(result).comparable()


def test_a_run_that_ends_on_an_error_keeps_its_tool_results(tmp_path: Path) -> None:
    path = tmp_path / "fail.yaml"
    result = record_dayflow(path, script=dayflow_script(before_final=[server_error()])[:2], max_retries=0)
    assert result.outcome == "error"
    from_cassette, from_run = load_trajectory(path), Trajectory.from_run(result)
    assert from_cassette.comparable() == from_run.comparable()
    for trajectory in (from_cassette, from_run):
        outcome = trajectory.outcome
        assert outcome is not None and (outcome.kind, outcome.status, outcome.error_type) == ("error", 500, "api_error")
        assert all(c.result is not None and c.result.step is None for c in trajectory.tool_calls)


# --- one model of a run: the loop's exchanges, live or replayed, read like the cassette's --------------------------


def _timeless(value: Any) -> Any:
    """A trajectory's JSON without what two runs of one recording cannot share: the clock."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in ("duration_ms", "first_token_ms")}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def _replay_dayflow(path: Path, *, stream: bool) -> Any:
    """The run again, answered from `path` only: a request that reaches the network fails the test."""
    from harness import use_cassette
    from harness_demo.dayflow import run_brief

    network = ScriptedModel([])
    with use_cassette(path, mode="none"):
        result = run_brief(network.client(max_retries=0), model=MODEL, stream=stream)
    assert network.bodies == [], "the replay went to the network"
    return result


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("ending", ["ended", "overloaded"])
def test_a_live_run_and_its_replay_give_the_same_trajectory(tmp_path: Path, stream: bool, ending: str) -> None:
    path = tmp_path / "brief.yaml"
    script = dayflow_script() if ending == "ended" else dayflow_script(before_final=[overloaded()])[:2]
    live = record_dayflow(path, stream=stream, script=script, max_retries=0)
    replayed = _replay_dayflow(path, stream=stream)

    from_live, from_replay = Trajectory.from_run(live), Trajectory.from_run(replayed)
    assert _timeless(from_live.to_dict()) == _timeless(from_replay.to_dict())
    assert from_live.comparable() == load_trajectory(path).comparable()
    assert [step.attempts[-1].status for step in from_live.steps] == [200] * len(live.calls)
    if ending == "overloaded":
        outcome = from_replay.outcome
        assert outcome is not None and (outcome.kind, outcome.status, outcome.error_type) == (
            "error", 529, "overloaded_error")
        assert from_replay.runs[-1].failed_request is not None
        # retry-after-ms: 1 -- a header the SDK's message never showed, read from the response in both records
        assert from_replay.runs[-1].failed_request.attempts[-1].retry_after == 0.001
        assert load_trajectory(path).runs[-1].failed_request.attempts[-1].retry_after == 0.001


def _stream_that_fails(body: dict[str, Any]) -> httpx2.Response:
    """A stream that starts a message, then sends the API's `error` event (status 200 stays on the response)."""
    start = {"type": "message_start", "message": {**message([text("")], usage={"input_tokens": 1, "output_tokens": 1}),
                                                  "content": [], "stop_reason": None}}
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    sse = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in (start, error))
    return httpx2.Response(200, content=sse.encode(), headers={"content-type": "text/event-stream"})


def _raises(error: type[Exception]) -> Any:
    def reply(body: dict[str, Any]) -> Any:
        raise error("no answer", request=httpx2.Request("POST", "https://api.anthropic.com/v1/messages"))

    return reply


@pytest.mark.parametrize(
    ("failure", "stream", "expected"),
    [
        (overloaded, False, (529, "overloaded_error", 0.001)),
        (server_error, False, (500, "api_error", None)),
        (lambda: httpx2.Response(502, text="<html>Bad gateway</html>"), False, (502, "http_502", None)),
        (lambda: _stream_that_fails, True, (200, "overloaded_error", None)),
        (lambda: _raises(httpx2.ConnectError), False, (None, "connect", None)),
        (lambda: _raises(httpx2.ReadTimeout), False, (None, "timeout", None)),
    ],
    ids=["529", "500", "502-html", "stream-error-event", "connect", "timeout"],
)
def test_an_api_error_in_the_loop_reaches_the_trajectory_as_data(
    tmp_path: Path, failure: Any, stream: bool, expected: tuple[Any, ...]
) -> None:
    path = tmp_path / "fail.yaml"
    result = record_dayflow(path, stream=stream, script=dayflow_script(before_final=[failure()])[:2], max_retries=0)

    failed = result.exchanges[-1]
    assert failed.message is None and (failed.status, failed.error_type, failed.retry_after) == expected
    assert failed.request["messages"] == result.messages  # the exact body sent, not a reconstruction
    assert result.error is not None and (result.error["status"], result.error["error_type"]) == expected[:2]
    # The loop's record and the cassette's say the same, field by field.
    for trajectory in (Trajectory.from_run(result), load_trajectory(path)):
        outcome = trajectory.outcome
        assert outcome is not None and (outcome.kind, outcome.status, outcome.error_type) == ("error", *expected[:2])
        attempt = trajectory.runs[-1].failed_request.attempts[-1]  # type: ignore[union-attr]
        assert (attempt.status, attempt.error_type, attempt.retry_after) == expected
        _assert_valid(trajectory.to_dict())


# --- harness show ---------------------------------------------------------------------------------------------------


@pytest.mark.real_cassettes
def test_show_prints_steps_tool_calls_and_errors(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one line per tool call, whatever the terminal
    assert harness_main(["show", str(TOOL_ERROR_HAR)]) == 0
    out = capsys.readouterr().out
    assert "step 1 stop=tool_use" in out and "step 3 stop=end_turn" in out
    error_text = "Incorrect passphrase: The correct passphrase is 'cake'. Try again."
    assert f'passphrase_test_tool({{"passphrase":"portal"}}) {len(error_text)} chars is_error' in out
    assert "ended: stop_reason end_turn" in out and "cake is a lie" in out


@pytest.mark.real_cassettes
def test_show_json_is_the_schema_valid_trajectory(capsys: pytest.CaptureFixture[str]) -> None:
    assert harness_main(["show", str(TOOL_SEARCH), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    _assert_valid(data)
    assert data["counts"] == {"runs": 4, "steps": 11, "tool_calls": 7, "attempts": 11}


def test_show_a_bad_file_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("interactions: [\n", encoding="utf-8")
    assert harness_main(["show", str(bad)]) == 2
    assert str(bad) in capsys.readouterr().err


def test_a_stream_cut_off_mid_message_is_a_failed_try(tmp_path: Path) -> None:
    from harness.cassette.format import CassetteFile, save_cassette
    from harness.wire.sse import parse_sse

    events = parse_sse(sse_body(message([text("Hello there")])).decode())
    cut = [e for e in events if e.get("event") not in ("message_delta", "message_stop")][:-1]
    request = {"method": "POST", "path": "/v1/messages", "body": {**_body(USER), "stream": True}}
    response = {"status": 200, "headers": {"content-type": "text/event-stream"}, "events": cut, "truncated": True}
    path = save_cassette(
        CassetteFile(
            meta={"format_version": 1, "source": "simulator"}, interactions=[{"request": request, "response": response}]
        ),
        tmp_path / "cut.yaml",
    )
    trajectory = load_trajectory(path)
    assert trajectory.steps == []
    outcome = trajectory.outcome
    assert outcome is not None and (outcome.kind, outcome.status, outcome.error_type) == (
        "error",
        200,
        "stream_truncated",
    )
