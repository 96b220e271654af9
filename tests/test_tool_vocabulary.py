"""One vocabulary of tool calls, and a cost that matches the invoice (issue 27, items 1-3).

The cassettes in tests/server_tools/ are written by hand in the API's wire shapes (the SDK's own types
parse them, below): an MCP connector call that fails and one that succeeds beside a client tool, two web
searches across a pause_turn with citations and 1-hour cache writes, and a streamed answer that compacted
its context first. Each shows in `harness show`, passes tool_ids_matched, and costs what a hand computation
from its usage blocks and the price table (harness/prices.toml, read here with tomllib) says.
"""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from anthropic.types.beta import BetaMessage

from harness.checks.outcome import no_repeated_calls
from harness.checks.protocol import tool_ids_matched
from harness.cli import main as harness_main
from harness.errors import HarnessError
from harness.pricing import PRICES_ENV, default_prices, estimate_cost, load_prices
from harness.run import Exchange, Usage
from harness.trajectory import Trajectory, load_cassette_any, load_trajectory
from harness.trajectory.builder import cassette_exchanges

HERE = Path(__file__).resolve().parent / "server_tools"
MCP, WEB_SEARCH, COMPACTION = HERE / "mcp.yaml", HERE / "web_search.yaml", HERE / "compaction.yaml"
PRICE_FILE = Path(__file__).resolve().parents[1] / "harness" / "prices.toml"
MILLION = 1_000_000


def _raw(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _show(path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "240")  # one line per item, whatever the terminal
    assert harness_main(["show", str(path)]) == 0
    return capsys.readouterr().out


def _messages(path: Path) -> list[dict[str, Any]]:
    """The Messages of a cassette as the trajectory reads them (a stream folded into its message)."""
    exchanges, _, _ = cassette_exchanges(load_cassette_any(path))
    return [dict(exchange.message) for exchange in exchanges if exchange.message is not None]


# --- the cassettes are the API's shapes --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "blocks", "iterations"),
    [
        (MCP, {"BetaMCPToolUseBlock", "BetaMCPToolResultBlock", "BetaToolUseBlock", "BetaTextBlock"}, set()),
        (WEB_SEARCH, {"BetaServerToolUseBlock", "BetaWebSearchToolResultBlock", "BetaTextBlock"}, set()),
        (
            COMPACTION,
            {"BetaCompactionBlock", "BetaTextBlock"},
            {"BetaCompactionIterationUsage", "BetaMessageIterationUsage"},
        ),
    ],
    ids=["mcp", "web_search", "compaction"],
)
def test_the_hand_written_cassettes_parse_as_the_sdks_own_types(
    path: Path, blocks: set[str], iterations: set[str]
) -> None:
    parsed = [BetaMessage.model_validate(message) for message in _messages(path)]
    assert {type(block).__name__ for message in parsed for block in message.content} == blocks
    assert {type(item).__name__ for message in parsed for item in message.usage.iterations or []} == iterations


# --- one vocabulary: kinds, results, errors, pairing --------------------------------------------------------


def test_an_mcp_call_is_a_tool_call_with_its_server_result_and_error_state() -> None:
    trajectory = load_trajectory(MCP)
    failed, found, note = trajectory.tool_calls
    assert [(c.kind, c.server_name, c.name) for c in trajectory.tool_calls] == [
        ("mcp", "docs", "search_docs"),
        ("mcp", "docs", "search_docs"),
        ("client", None, "save_note"),
    ]
    assert failed.is_error and failed.result is not None and failed.result.type == "mcp_tool_result"
    assert failed.result.step == 1 and failed.output == "Error: no section named 'limits/'"
    assert not found.is_error and found.output.startswith("Rate limits: requests per minute")
    assert note.result is not None and (note.result.step, note.output) == (2, "saved")
    assert failed.label == "docs/search_docs"
    assert trajectory.steps[0].request["mcp_servers"] == ["docs"]


def test_a_web_search_answered_after_a_pause_turn_belongs_to_the_same_turn() -> None:
    trajectory = load_trajectory(WEB_SEARCH)
    first, second = trajectory.steps
    assert (first.stop_reason, second.continues) == ("pause_turn", 1)
    one, two = trajectory.tool_calls
    assert (one.kind, one.result.step if one.result else None) == ("server", 1)
    assert (two.kind, two.result.step if two.result else None) == ("server", 2)  # answered in the continuation
    assert one.result is not None and one.result.details == {
        "results": [
            {
                "title": "Lakhta Center - Wikipedia",
                "url": "https://en.wikipedia.org/wiki/Lakhta_Center",
                "page_age": "3 weeks ago",
            },
            {
                "title": "List of tallest buildings in Europe",
                "url": "https://en.wikipedia.org/wiki/List_of_tallest_buildings_in_Europe",
            },
        ]
    }
    assert "encrypted_content" not in json.dumps(trajectory.tool_calls[0].to_dict())
    assert [c["url"] for c in second.citations] == [
        "https://en.wikipedia.org/wiki/Lakhta_Center",
        "https://www.skyscrapercenter.com/building/lakhta-center/20442",
    ]


@pytest.mark.parametrize("path", [MCP, WEB_SEARCH, COMPACTION], ids=["mcp", "web_search", "compaction"])
def test_each_passes_tool_ids_matched(path: Path) -> None:
    result = tool_ids_matched(load_trajectory(path), {})
    assert result.passed, result.reason
    assert result.evidence["server_calls_checked"] == {MCP: 2, WEB_SEARCH: 2, COMPACTION: 0}[path]


def _trajectory_of(raw: dict[str, Any], tmp_path: Path) -> Trajectory:
    file = tmp_path / "changed.yaml"
    file.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return load_trajectory(file)


def test_a_server_call_without_its_result_in_the_turn_fails_naming_it(tmp_path: Path) -> None:
    raw = _raw(WEB_SEARCH)
    answer = raw["interactions"][1]["response"]["body"]["content"]
    answer.pop(0)  # the continuation no longer answers the second search
    result = tool_ids_matched(_trajectory_of(raw, tmp_path), {})
    assert not result.passed
    assert result.reason == (
        "step 1: server_tool_use srvtoolu_01WsB1b2C3d4E5f6G7h8J9k0 (web_search) has no result "
        "block in the same response or its pause_turn continuation"
    )


def test_a_result_block_that_answers_no_call_of_its_turn_fails(tmp_path: Path) -> None:
    raw = _raw(MCP)
    content = raw["interactions"][0]["response"]["body"]["content"]
    content[2]["tool_use_id"] = "mcptoolu_01Elsewhere"
    result = tool_ids_matched(_trajectory_of(raw, tmp_path), {})
    assert not result.passed
    assert "mcptoolu_01A7Kq3VxQnKzS1bW4dTtHc2 (docs/search_docs) has no result block" in json.dumps(
        result.evidence["problems"]
    )
    assert "result block for mcptoolu_01Elsewhere answers no server or MCP call of its turn" in json.dumps(
        result.evidence["problems"]
    )


def test_is_error_stays_wrong_on_a_server_tools_result(tmp_path: Path) -> None:
    raw = _raw(WEB_SEARCH)
    raw["interactions"][0]["response"]["body"]["content"][1]["is_error"] = True
    result = tool_ids_matched(_trajectory_of(raw, tmp_path), {})
    assert not result.passed
    assert result.reason.startswith("step 1: the response's web_search_tool_result block carries is_error")


def test_no_repeated_calls_sees_mcp_calls(tmp_path: Path) -> None:
    raw = _raw(MCP)
    content = raw["interactions"][0]["response"]["body"]["content"]
    same = content[3:5]  # the good search and its result, made twice more with new ids
    for n in (1, 2):
        twin = copy.deepcopy(same)
        twin[0]["id"] = twin[1]["tool_use_id"] = f"mcptoolu_01Again{n}"
        content[5:5] = twin
    raw["interactions"][1]["request"]["body"]["messages"][1]["content"] = content
    result = no_repeated_calls(_trajectory_of(raw, tmp_path), {"max_in_a_row": 2})
    assert not result.passed
    assert result.reason.startswith('step 1: search_docs({"query":"rate limits"}) called 3 times in a row')


def test_a_programmatic_call_carries_its_caller() -> None:
    caller = {"type": "code_execution_20250825", "tool_id": "srvtoolu_01Code"}
    message = {
        "id": "msg_p",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01Code",
                "name": "code_execution",
                "input": {"code": "print(get_weather('Paris'))"},
            },
            {
                "type": "tool_use",
                "id": "toolu_01P",
                "name": "get_weather",
                "input": {"city": "Paris"},
                "caller": caller,
            },
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
        "container": {"id": "container_01Abc", "expires_at": "2026-12-01T22:00:00Z"},
    }
    request = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [{"role": "user", "content": "Go"}]}
    step = Trajectory.from_exchanges([Exchange(request=request, message=message, status=200)]).steps[0]
    code, weather = step.tool_calls
    assert (code.kind, code.caller, weather.kind, weather.caller) == ("server", None, "client", caller)
    assert step.container == {"id": "container_01Abc", "expires_at": "2026-12-01T22:00:00Z"}
    assert weather.to_dict()["caller"] == caller


# --- shown as people read it --------------------------------------------------------------------------------


def test_show_an_mcp_call(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    out = _show(MCP, capsys, monkeypatch)
    assert "3 tool calls (1 client, 2 MCP)" in out
    assert '→ search_docs({"query":"rate limits","section":"limits/"}) (MCP server docs) 33 chars is_error' in out
    assert "Rate limits: requests per minute (RPM)" in out
    assert "request: MCP servers docs" in out


def test_show_a_web_search(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    out = _show(WEB_SEARCH, capsys, monkeypatch)
    assert "Lakhta Center - Wikipedia <https://en.wikipedia.org/wiki/Lakhta_Center>" in out
    assert "[web_search_result]" not in out
    assert "continues step 1 (the API paused that turn: pause_turn)" in out
    assert "cache write 1,200 (1,000 for 1h) · 1 web search" in out
    assert "citations: 2 citations of 2 sources" in out


def test_show_a_compaction_pass(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    out = _show(COMPACTION, capsys, monkeypatch)
    assert "step 1 stop=end_turn in 99,357 · out 1,308" in out
    assert "pass compaction: in 99,195 · out 1,250" in out
    assert "compaction summary: Summary of the conversation: the user is migrating a Postgres 12" in out
    assert "request: context edits compact_20260112" in out


def test_show_json_carries_kinds_results_iterations_and_cost(capsys: pytest.CaptureFixture[str]) -> None:
    for path in (MCP, WEB_SEARCH, COMPACTION):
        assert harness_main(["show", str(path), "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        from tests.test_trajectory import _assert_valid

        _assert_valid(data)
        steps = [step for run in data["runs"] for step in run["steps"]]
        if path == MCP:
            assert steps[0]["tool_calls"][0]["server_name"] == "docs"
            assert steps[0]["tool_calls"][0]["result"]["is_error"] is True
        if path == WEB_SEARCH:
            assert steps[0]["tool_calls"][0]["result"]["details"]["results"][0]["url"].startswith("https://")
            assert data["cost"]["by_kind"]["web_search"] == pytest.approx(0.02)
        if path == COMPACTION:
            assert steps[0]["usage"]["iterations"][0] == {
                "type": "compaction",
                "model": None,
                "input": 99195,
                "output": 1250,
                "cache_write": 0,
                "cache_read": 0,
            }
            assert steps[0]["response"]["blocks"][0]["content"].startswith("Summary of the conversation")


# --- cost equals the one computed by hand ------------------------------------------------------------------


def _table() -> dict[str, Any]:
    return tomllib.loads(PRICE_FILE.read_text(encoding="utf-8"))


def _by_hand(model: str, usage: dict[str, Any]) -> float:
    """The invoice's arithmetic, from the price table's numbers and the response's usage block alone."""
    table = _table()
    rate = table["models"][model]
    entries = usage.get("iterations") or [usage]
    dollars = 0.0
    for entry in entries:
        hour = ((entry.get("cache_creation") or {}).get("ephemeral_1h_input_tokens")) or 0
        written = entry.get("cache_creation_input_tokens") or 0
        dollars += (
            entry["input_tokens"] * rate["input"]
            + entry["output_tokens"] * rate["output"]
            + (written - hour) * rate["input"] * table["rates"]["cache_write_5m"]
            + hour * rate["input"] * table["rates"]["cache_write_1h"]
            + (entry.get("cache_read_input_tokens") or 0) * rate["input"] * table["rates"]["cache_read"]
        ) / MILLION
    searches = (usage.get("server_tool_use") or {}).get("web_search_requests", 0)
    return dollars + searches * table["server_tools"]["web_search_requests"]


@pytest.mark.parametrize(
    ("path", "family"),
    [(MCP, "claude-sonnet-4-5"), (WEB_SEARCH, "claude-sonnet-4-6"), (COMPACTION, "claude-opus-4-6")],
    ids=["mcp", "web_search", "compaction"],
)
def test_cost_equals_the_hand_computed_one(path: Path, family: str) -> None:
    expected = sum(_by_hand(family, message["usage"]) for message in _messages(path))
    assert load_trajectory(path).cost_usd == pytest.approx(expected, abs=1e-6)


def test_the_hand_computations_in_figures() -> None:
    # The same sums, written out: what a person checking the invoice would do.
    compaction = (99_195 + 162) * 5 / MILLION + (1_250 + 58) * 25 / MILLION
    assert load_trajectory(COMPACTION).cost_usd == pytest.approx(compaction)
    step1 = (2_100 * 3 + 90 * 15 + 200 * 3.75 + 1_000 * 6) / MILLION + 0.01
    step2 = (9_800 * 3 + 310 * 15 + 1_200 * 0.3) / MILLION + 0.01
    assert load_trajectory(WEB_SEARCH).cost_usd == pytest.approx(step1 + step2)


def test_cost_is_shown_by_kind(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    out = _show(WEB_SEARCH, capsys, monkeypatch)
    assert (
        "~$0.0688 (input $0.0357, output $0.0060, cache write $0.0067, cache read $0.0004, web search $0.0200)" in out
    )
    assert "of which compaction $0.5272" in _show(COMPACTION, capsys, monkeypatch)


def _batch_interactions(usage: dict[str, Any]) -> list[dict[str, Any]]:
    params = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}
    message = {
        "id": "msg_b",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Hello"}],
        "stop_reason": "end_turn",
        "usage": usage,
    }
    line = {"custom_id": "case-1", "result": {"type": "succeeded", "message": message}}
    return [
        {
            "request": {
                "method": "POST",
                "path": "/v1/messages/batches",
                "body": {"requests": [{"custom_id": "case-1", "params": params}]},
            },
            "response": {"status": 200, "body": {"id": "msgbatch_1", "type": "message_batch"}},
        },
        {
            "request": {"method": "GET", "path": "/v1/messages/batches/msgbatch_1/results"},
            "response": {"status": 200, "body_text": json.dumps(line) + "\n"},
        },
    ]


def test_a_batch_result_is_priced_at_the_batch_discount_and_its_tool_fees_in_full() -> None:
    from harness.batches import batch_exchanges

    usage = {"input_tokens": 1_000_000, "output_tokens": 100_000, "server_tool_use": {"web_search_requests": 2}}
    (exchange,) = batch_exchanges(_batch_interactions(usage))
    step = Trajectory.from_exchanges([exchange]).steps[0]
    assert step.usage.batch and step.usage.to_dict()["batch"] is True
    assert step.cost is not None
    assert step.cost.total == pytest.approx((3.0 + 0.1 * 15) * 0.5 + 2 * 0.01)
    assert estimate_cost("claude-sonnet-4-5", Usage.from_api(usage)) == pytest.approx(3.0 + 1.5 + 0.02)


def test_one_hour_cache_writes_cost_twice_the_input_rate() -> None:
    usage = {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_creation_input_tokens": MILLION,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": MILLION},
    }
    assert estimate_cost("claude-sonnet-4-5", Usage.from_api(usage)) == pytest.approx(6.0)
    usage["cache_creation"] = {"ephemeral_5m_input_tokens": MILLION, "ephemeral_1h_input_tokens": 0}
    assert estimate_cost("claude-sonnet-4-5", Usage.from_api(usage)) == pytest.approx(3.75)


def test_each_pass_is_priced_at_its_own_model() -> None:
    usage = {
        "input_tokens": 100,
        "output_tokens": 10,
        "iterations": [
            {
                "type": "message",
                "input_tokens": 100,
                "output_tokens": 10,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
            {
                "type": "advisor_message",
                "model": "claude-opus-4-1",
                "input_tokens": 1000,
                "output_tokens": 100,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        ],
    }
    expected = (100 * 1 + 10 * 5 + 1000 * 15 + 100 * 75) / MILLION
    assert estimate_cost("claude-haiku-4-5", Usage.from_api(usage)) == pytest.approx(expected)
    usage["iterations"][1]["model"] = "claude-unpriced-9"
    assert estimate_cost("claude-haiku-4-5", Usage.from_api(usage)) is None  # no number rather than a wrong one


def test_an_on_demand_compaction_counts_its_pass_beside_the_top_level(tmp_path: Path) -> None:
    usage = {
        "input_tokens": 0,
        "output_tokens": 0,
        "iterations": [{"type": "compaction", "input_tokens": 144, "output_tokens": 276}],
    }
    assert Usage.from_api(usage).to_dict()["total"] == 420


def test_prices_are_dated_data_that_a_file_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_prices().as_of == str(_table()["as_of"])
    override = tmp_path / "prices.toml"
    override.write_text(
        'as_of = "2027-01-01"\n[models]\n"claude-sonnet-4-5" = { input = 2.0, output = 10.0 }\n'
        "[server_tools]\nweb_search_requests = 0.02\n",
        encoding="utf-8",
    )
    monkeypatch.setenv(PRICES_ENV, str(override))
    one = Usage(input=MILLION, output=MILLION, web_search_requests=1)
    assert estimate_cost("claude-sonnet-4-5", one) == pytest.approx(2 + 10 + 0.02)
    assert estimate_cost("claude-haiku-4-5", one) == pytest.approx(1 + 5 + 0.02)  # the rest of the table stays
    assert default_prices().as_of == "2027-01-01"
    override.write_text('[models]\n"claude-x" = { input = "cheap", output = 1 }\n', encoding="utf-8")
    with pytest.raises(HarnessError, match=r"prices.toml: models.claude-x.input must be a non-negative number"):
        load_prices(override)


# --- structured output, output_config -----------------------------------------------------------------------


SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "high_c": {"type": "integer"}},
    "required": ["city", "high_c"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("answer", "valid", "problem"),
    [
        ('{"city": "Paris", "high_c": 21}', True, None),
        ('{"city": "Paris", "high_c": "warm"}', False, "high_c: 'warm' is not of type 'integer'"),
        ("It is sunny in Paris.", False, "the answer is not JSON"),
    ],
)
def test_structured_output_is_checked_against_its_schema(answer: str, valid: bool, problem: str | None) -> None:
    request = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Paris?"}],
        "output_config": {"effort": "low", "format": {"type": "json_schema", "schema": SCHEMA}},
    }
    message = {
        "id": "msg_s",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": answer}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    step = Trajectory.from_exchanges([Exchange(request=request, message=message, status=200)]).steps[0]
    verdict = step.structured_output
    assert verdict is not None and verdict["valid"] is valid
    assert (verdict["problem"] is None) if problem is None else verdict["problem"].startswith(problem)
    assert step.request["output_config"]["effort"] == "low"
    assert step.request["output_config"]["format"]["schema"].startswith("sha256:")


def test_output_config_is_a_fingerprint_of_the_run() -> None:
    from harness.jsondata import run_fingerprints

    body = {"model": "m", "messages": [], "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}}}
    changed = {**body, "output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}}
    assert run_fingerprints(body)["output_config"] != run_fingerprints(changed)["output_config"]
    assert "output_config" not in run_fingerprints({"model": "m", "messages": []})


# --- exports see every kind ----------------------------------------------------------------------------------


def test_otel_spans_carry_each_calls_kind_and_the_api_run_ones_sit_under_their_chat_span() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from harness.export.otel import trajectory_spans

    spans = trajectory_spans(load_trajectory(MCP))
    by_id = {span.context.span_id: span for span in spans}
    tools = [span for span in spans if span.name.startswith("execute_tool")]
    assert [(s.attributes["harness.tool.kind"], s.attributes.get("harness.tool.mcp_server")) for s in tools] == [
        ("mcp", "docs"),
        ("mcp", "docs"),
        ("client", None),
    ]
    parents = [by_id[s.parent.span_id].name for s in tools]
    assert parents[:2] == ["chat claude-sonnet-4-5"] * 2 and parents[2].startswith("invoke_agent")
    assert tools[0].status.status_code.name == "ERROR" and tools[1].status.status_code.name == "UNSET"
    chats = [span for span in spans if span.name.startswith("chat")]
    assert sum(s.attributes["harness.cost_usd"] for s in chats) == pytest.approx(load_trajectory(MCP).cost_usd)


def test_inspect_logs_have_a_tool_event_for_every_kind(tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    from harness.export.inspect_log import CassetteSample, write_inspect_log

    for path, calls in ((MCP, 3), (WEB_SEARCH, 2), (COMPACTION, 0)):
        out = write_inspect_log(tmp_path / f"{path.stem}.eval", [CassetteSample(load_trajectory(path), str(path))])
        log = read_eval_log(str(out))
        assert log.samples is not None
        tools = [event for event in log.samples[0].events if event.event == "tool"]
        assert len(tools) == calls
        if path == MCP:
            assert tools[0].metadata == {"kind": "mcp", "mcp_server": "docs"} and tools[0].error is not None


def test_self_correction_sees_a_failed_mcp_call_and_its_corrected_retry(tmp_path: Path) -> None:
    from harness.checks.recovery import self_correction

    result = self_correction(load_trajectory(MCP), {"require_error": True})
    assert result.passed and result.evidence["errors"] == [
        {"step": 1, "tool": "search_docs", "id": "mcptoolu_01A7Kq3VxQnKzS1bW4dTtHc2", "recovered": True}
    ]
    raw = _raw(MCP)
    content = raw["interactions"][0]["response"]["body"]["content"]
    content[3]["input"] = dict(content[1]["input"])  # the retry is identical: no correction at all
    raw["interactions"][1]["request"]["body"]["messages"][1]["content"] = content
    assert not self_correction(_trajectory_of(raw, tmp_path), {}).passed


@pytest.mark.real_cassettes
def test_show_a_real_code_execution_its_container_and_output(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_checks_support import REAL

    path = REAL / "pydantic-ai/models/cassettes/test_anthropic/test_anthropic_code_execution_tool_stream.yaml"
    out = _show(path, capsys, monkeypatch)
    assert "container container_011CaNRFAbjdPf4rmBarZzqQ (expires 2026-04-24T11:13:36.730129Z)" in out
    assert "exit 0" in out and "stdout: -428330955.97745" in out
    (call,) = load_trajectory(path).tool_calls
    assert call.result is not None and call.result.details == {
        "return_code": 0,
        "stdout": "-428330955.97745\n",
        "stderr": "",
    }


def test_a_fetched_page_reads_as_its_title_url_and_text() -> None:
    fetch = {
        "type": "web_fetch_tool_result",
        "tool_use_id": "srvtoolu_01F",
        "content": {
            "type": "web_fetch_result",
            "url": "https://example.com/guide",
            "retrieved_at": "2026-11-30T10:00:00Z",
            "content": {
                "type": "document",
                "title": "The guide",
                "source": {"type": "text", "media_type": "text/plain", "data": "Step one: read it."},
            },
        },
    }
    failed = {
        "type": "web_fetch_tool_result",
        "tool_use_id": "srvtoolu_01G",
        "content": {"type": "web_fetch_tool_result_error", "error_code": "url_not_accessible"},
    }
    message = {
        "id": "msg_f",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01F",
                "name": "web_fetch",
                "input": {"url": "https://example.com/guide"},
            },
            fetch,
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01G",
                "name": "web_fetch",
                "input": {"url": "https://example.com/private"},
            },
            failed,
            {"type": "text", "text": "Read it."},
        ],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5, "server_tool_use": {"web_fetch_requests": 2}},
    }
    request = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [{"role": "user", "content": "Read"}]}
    trajectory = Trajectory.from_exchanges([Exchange(request=request, message=message, status=200)])
    page, refused = trajectory.tool_calls
    assert page.output == "The guide <https://example.com/guide>\nStep one: read it."
    assert page.result is not None and page.result.details == {
        "url": "https://example.com/guide",
        "title": "The guide",
        "retrieved_at": "2026-11-30T10:00:00Z",
        "media_type": "text/plain",
        "chars": 18,
    }
    assert refused.is_error and refused.result is not None and refused.result.error_code == "url_not_accessible"
    assert tool_ids_matched(trajectory, {}).passed
    assert trajectory.usage.web_fetch_requests == 2 and trajectory.cost_usd == pytest.approx(
        (10 * 3 + 5 * 15) / MILLION
    )


def test_reports_show_mcp_calls_and_cost_by_kind(tmp_path: Path) -> None:
    golden = tmp_path / "search.json"
    checks = [{"check": "tool_ids_matched"}, {"check": "no_repeated_calls"}, {"check": "self_correction"}]
    golden.write_text(
        json.dumps({"name": "search", "cassettes": [str(WEB_SEARCH), str(MCP)], "checks": checks}), encoding="utf-8"
    )
    out = {kind: tmp_path / f"r.{kind}" for kind in ("json", "md", "html", "xml")}
    assert (
        harness_main(
            [
                "eval",
                str(golden),
                "--json",
                str(out["json"]),
                "--markdown",
                str(out["md"]),
                "--html",
                str(out["html"]),
                "--junit",
                str(out["xml"]),
            ]
        )
        == 0
    )
    results = json.loads(out["json"].read_text(encoding="utf-8"))
    web, mcp = results["cases"]
    assert web["cost_by_kind"]["web_search"] == pytest.approx(0.02)
    assert [(c["kind"], c.get("server_name")) for c in mcp["trajectory"]["tool_sequence"]] == [
        ("mcp", "docs"),
        ("mcp", "docs"),
        ("client", None),
    ]
    assert "web search $0.0200" in out["md"].read_text(encoding="utf-8")
    assert "cost by kind: input $0.0357 · output $0.0060" in out["xml"].read_text(encoding="utf-8")
    assert "(MCP server docs)" in out["html"].read_text(encoding="utf-8")


def test_the_sdks_own_usage_object_is_read_as_its_json_is() -> None:
    from anthropic.types.beta import BetaUsage

    (message,) = _messages(COMPACTION)
    sdk = BetaUsage.model_validate(message["usage"])
    assert Usage.from_api(sdk) == Usage.from_api(message["usage"])
    assert Usage.from_api(sdk).iterations[0].type == "compaction" and Usage.from_api(sdk).input == 99_357
