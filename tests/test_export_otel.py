"""`harness export --otel / --otlp-endpoint`: GenAI spans read back three ways (the SDK's in-memory
exporter, the OTLP/JSON file parsed into the OTLP protobuf, an OTLP/HTTP receiver on loopback), for the
bundled cassettes and real recordings."""

from __future__ import annotations

import base64
import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.trace", reason="needs loop-harness[otel]")

from google.protobuf.json_format import MessageToDict, ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from harness.cli import main
from harness.export.otel import emit_trajectory, otlp_json
from harness.httpserver import LoopbackServer
from harness.httpserver.answers import Responder
from harness.httpserver.incoming import IncomingRequest
from harness.trajectory import Trajectory, load_trajectory
from tests.conftest import REAL_CASSETTES, REPO

DAYFLOW = REPO / "cassettes" / "dayflow" / "brief.yaml"
BUNDLED = sorted((REPO / "cassettes").glob("*/*.yaml"))
# Real recordings: streamed, thinking, tools (parallel and with an is_error result), prompt caching,
# API errors, and a HAR whose entries carry their timing.
REAL = [
    "openllmetry/test_messages/test_anthropic_message_streaming_legacy.yaml",
    "llm-anthropic/test_stream_events_thinking.yaml",
    "pydantic-ai/models/cassettes/test_anthropic/test_anthropic_tool_with_thinking.yaml",
    "openinference/openinference-instrumentation-anthropic/tests/openinference/anthropic/cassettes/"
    "test_instrumentor/test_anthropic_instrumentation_multiple_tool_calling.yaml",
    "mirascope/input/cassettes/test_call_with_tool_error/anthropic_claude_sonnet_4_0.yaml",
    "openllmetry/test_prompt_caching/test_anthropic_prompt_caching_legacy.yaml",
    "mirascope/input/cassettes/test_authentication_error/anthropic_claude_sonnet_4_0.yaml",
    "mirascope/input/cassettes/tool-error/anthropic/handles-tool-execution-errors-and-retries.har",
    "llm-anthropic/test_web_search.yaml",
]


def _real(name: str) -> Path:
    if not REAL_CASSETTES.is_dir():
        pytest.skip(f"the real-recordings corpus is not here ({REAL_CASSETTES})")
    return REAL_CASSETTES / name


# --- reading spans back ---------------------------------------------------------------------------------


def _value(value: dict[str, Any]) -> Any:
    """An OTLP AnyValue (JSON mapping) as a Python value."""
    if "arrayValue" in value:
        return [_value(v) for v in value["arrayValue"].get("values", [])]
    if "intValue" in value:
        return int(value["intValue"])
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    raise AssertionError(f"unexpected value {value}")


def _spans_of_request(document: dict[str, Any]) -> list[dict[str, Any]]:
    spans = []
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                spans.append({**span, "attributes": {a["key"]: _value(a["value"]) for a in span.get("attributes", [])}})
    return spans


def _as_protobuf(line: str) -> ExportTraceServiceRequest:
    """One OTLP/JSON line parsed into the OTLP protobuf, as a collector's JSON reader does (hex ids)."""
    document = json.loads(line)
    for span in _spans_of_request(document):
        assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16  # hex, as OTLP/JSON wants
    for resource_spans in document["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return ParseDict(document, ExportTraceServiceRequest())  # fails on any field the proto does not have


def _read_file(path: Path) -> list[list[dict[str, Any]]]:
    """The spans of each line of an OTLP/JSON file, after a round trip through the protobuf."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for line in lines:
        request = _as_protobuf(line)
        document = MessageToDict(request)
        for span in _spans_of_request(document):
            for key in ("traceId", "spanId", "parentSpanId"):
                if key in span:
                    span[key] = base64.b64decode(span[key]).hex()
        out.append(_spans_of_request(document))
    return out


def _traces(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_trace.setdefault(span["traceId"], []).append(span)
    return by_trace


def _export(tmp_path: Path, *cassettes: Path, content: bool = False) -> list[list[dict[str, Any]]]:
    out = tmp_path / "traces.jsonl"
    argv = ["export", *map(str, cassettes), "--otel", str(out)] + (["--include-content"] if content else [])
    assert main(argv) == 0
    return _read_file(out)


def _operation(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["attributes"].get("gen_ai.operation.name") == name]


# --- the Dayflow run: the done-when ----------------------------------------------------------------


def test_dayflow_is_one_trace_with_its_model_and_tool_spans(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [spans] = _export(tmp_path, DAYFLOW)
    assert len(_traces(spans)) == 1
    [root] = [s for s in spans if not s.get("parentSpanId")]
    assert root["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert all(s["parentSpanId"] == root["spanId"] for s in spans if s is not root)

    trajectory = load_trajectory(DAYFLOW)
    chats = sorted(_operation(spans, "chat"), key=lambda s: int(s["startTimeUnixNano"]))
    assert len(chats) == len(trajectory.steps) == 2
    for span, step in zip(chats, trajectory.steps, strict=True):
        attributes = span["attributes"]
        assert span["name"] == f"chat {step.request['model']}"
        assert span["kind"] == "SPAN_KIND_CLIENT"
        assert attributes["gen_ai.provider.name"] == "anthropic"
        assert attributes["gen_ai.request.model"] == step.request["model"]
        assert attributes["gen_ai.request.max_tokens"] == step.request["max_tokens"]
        assert attributes["gen_ai.response.id"] == step.message_id
        assert attributes["gen_ai.response.model"] == step.model
        assert attributes["gen_ai.response.finish_reasons"] == [step.stop_reason]
        assert "gen_ai.input.messages" not in attributes  # content only when asked for

    tools = sorted(_operation(spans, "execute_tool"), key=lambda s: int(s["startTimeUnixNano"]))
    assert [(s["attributes"]["gen_ai.tool.name"], s["attributes"]["gen_ai.tool.call.id"]) for s in tools] == [
        (call.name, call.id) for call in trajectory.tool_calls
    ]
    assert all(s["name"] == f"execute_tool {s['attributes']['gen_ai.tool.name']}" for s in tools)

    # The same token counts as `harness show`: input_tokens holds the cache parts (the conventions' rule).
    capsys.readouterr()
    assert main(["show", str(DAYFLOW), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["usage"]

    def total(key: str) -> int:
        return sum(s["attributes"][key] for s in chats)

    cache_write = total("gen_ai.usage.cache_write.input_tokens")
    cache_read = total("gen_ai.usage.cache_read.input_tokens")
    assert total("gen_ai.usage.input_tokens") - cache_write - cache_read == shown["input"]
    assert total("gen_ai.usage.output_tokens") == shown["output"]
    assert (cache_write, cache_read) == (shown["cache_write"], shown["cache_read"])
    assert root["attributes"]["gen_ai.usage.output_tokens"] == shown["output"]


def test_content_goes_into_spans_only_when_asked(tmp_path: Path) -> None:
    [spans] = _export(tmp_path, DAYFLOW, content=True)
    trajectory = load_trajectory(DAYFLOW)
    first, last = sorted(_operation(spans, "chat"), key=lambda s: int(s["startTimeUnixNano"]))
    opening = json.loads(first["attributes"]["gen_ai.input.messages"])
    assert opening[0]["role"] == "user"
    assert opening[0]["parts"][0]["content"] == trajectory.steps[0].delta[0]["content"]
    answer = json.loads(last["attributes"]["gen_ai.output.messages"])
    assert answer[0]["finish_reason"] == "end_turn"
    assert answer[0]["parts"][0]["content"] == trajectory.final_text
    # the tool results travel in the last request, in the role the conventions give them
    assert "tool" in [m["role"] for m in json.loads(last["attributes"]["gen_ai.input.messages"])]
    inbox = next(s for s in _operation(spans, "execute_tool") if s["attributes"]["gen_ai.tool.name"] == "read_inbox")
    call = trajectory.tool_calls[0]
    assert json.loads(inbox["attributes"]["gen_ai.tool.call.arguments"]) == call.input
    assert call.result is not None and inbox["attributes"]["gen_ai.tool.call.result"] == call.result.content


# --- every bundled cassette and several real recordings --------------------------------------------------------


def _check_against_trajectory(spans: list[dict[str, Any]], trajectory: Trajectory) -> None:
    """One trace per run; a chat span per try with the run's tokens; a tool span per client tool call."""
    traces = _traces(spans)
    assert len(traces) == len(trajectory.runs)
    roots = {s["traceId"]: s for s in spans if not s.get("parentSpanId")}
    by_run = {root["attributes"]["harness.run"]: trace_id for trace_id, root in roots.items()}
    for run in trajectory.runs:
        trace = traces[by_run[run.index]]
        chats = _operation(trace, "chat")
        tries = sum(len(step.attempts) for step in run.steps)
        tries += len(run.failed_request.attempts) if run.failed_request else 0
        assert len(chats) == tries
        answered = [s for s in chats if "gen_ai.response.id" in s["attributes"] or "error.type" not in s["attributes"]]
        assert len(answered) == len(run.steps)
        failed = [s for s in chats if "error.type" in s["attributes"]]
        assert all(s["status"]["code"] == "STATUS_CODE_ERROR" for s in failed)
        usage = run.usage
        assert sum(s["attributes"].get("gen_ai.usage.output_tokens", 0) for s in chats) == usage.output
        assert sum(s["attributes"].get("gen_ai.usage.input_tokens", 0) for s in chats) == (
            usage.input + usage.cache_write + usage.cache_read
        )
        assert sum(s["attributes"].get("gen_ai.usage.cache_read.input_tokens", 0) for s in chats) == usage.cache_read
        tools = _operation(trace, "execute_tool")
        assert sorted(s["attributes"]["gen_ai.tool.call.id"] for s in tools) == sorted(c.id for c in run.tool_calls)
        errors = [c.id for c in run.tool_calls if c.result is not None and c.result.is_error]
        assert sorted(s["attributes"]["gen_ai.tool.call.id"] for s in tools if "error.type" in s["attributes"]) == (
            sorted(errors)
        )
        for span in spans:
            assert int(span["endTimeUnixNano"]) >= int(span["startTimeUnixNano"])


@pytest.mark.parametrize("cassette", BUNDLED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_bundled_cassettes(tmp_path: Path, cassette: Path) -> None:
    [spans] = _export(tmp_path, cassette)
    _check_against_trajectory(spans, load_trajectory(cassette))


@pytest.mark.parametrize("name", REAL, ids=lambda n: Path(n).stem[:40])
def test_real_recordings(tmp_path: Path, name: str) -> None:
    cassette = _real(name)
    [spans] = _export(tmp_path, cassette, content=True)
    trajectory = load_trajectory(cassette)
    _check_against_trajectory(spans, trajectory)
    for span in _operation(spans, "chat"):
        if "gen_ai.output.messages" in span["attributes"]:
            [output] = json.loads(span["attributes"]["gen_ai.output.messages"])
            assert output["role"] == "assistant" and output["parts"]


def test_failed_tries_and_recorded_timing() -> None:
    """A retried 529 is a failed chat span before the one that answered; a HAR's timings become durations."""
    spans = _sdk_spans(load_trajectory(REPO / "cassettes" / "faults" / "overloaded_then_ok.yaml"))
    chats = sorted((s for s in spans if s.name.startswith("chat")), key=lambda s: s.start_time)
    assert chats[0].status.status_code is StatusCode.ERROR
    assert chats[0].attributes["error.type"] == "overloaded_error"
    assert chats[0].attributes["http.response.status_code"] == 529
    assert chats[1].status.status_code is StatusCode.UNSET and "gen_ai.response.id" in chats[1].attributes

    har = load_trajectory(_real(REAL[-2]))
    spans = _sdk_spans(har)
    chats = sorted((s for s in spans if s.name.startswith("chat")), key=lambda s: s.start_time)
    durations = [a.duration_ms for step in har.steps for a in step.attempts]
    assert all(d is not None for d in durations)
    assert [round((s.end_time - s.start_time) / 1e6, 3) for s in chats] == [round(d, 3) for d in durations]
    root = next(s for s in spans if s.parent is None)
    assert root.attributes["harness.timing"] in ("recorded", "partly recorded")  # tools are never timed


def _sdk_spans(trajectory: Trajectory) -> list[Any]:
    """Spans through a provider of the test's own, read back with the SDK's in-memory exporter."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    assert emit_trajectory(trajectory, provider.get_tracer("test")) == len(trajectory.runs)
    return list(memory.get_finished_spans())


def test_in_memory_spans_match_the_file(tmp_path: Path) -> None:
    spans = _sdk_spans(load_trajectory(DAYFLOW))
    [from_file] = _export(tmp_path, DAYFLOW)

    def plain(attributes: Any) -> str:
        return json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in attributes.items()}, sort_keys=True)

    assert sorted(s.name for s in spans) == sorted(s["name"] for s in from_file)
    assert sorted(plain(s.attributes) for s in spans if s.name.startswith(("chat", "execute_tool"))) == sorted(
        plain(s["attributes"]) for s in from_file if s["name"].startswith(("chat", "execute_tool"))
    )
    document = otlp_json(spans)  # the encoder's output is itself valid OTLP/JSON
    assert len(_as_protobuf(json.dumps(document)).resource_spans[0].scope_spans[0].spans) == len(spans)


# --- OTLP over HTTP, to a receiver on loopback -------------------------------------------------------------------


class _Receiver(LoopbackServer):
    """The receiving half of OTLP/HTTP (protobuf): what a collector's otlp receiver does with a POST."""

    server_name = "otlp-receiver"

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        self.lock = threading.Lock()

    def handle(self, request: IncomingRequest, responder: Responder) -> None:
        with self.lock:
            self.paths.append(request.path)
            self.requests.append(ExportTraceServiceRequest.FromString(request.body))
        body = ExportTraceServiceResponse().SerializeToString()
        responder.send_body(200, [("content-type", "application/x-protobuf")], body)


def test_spans_sent_over_otlp_http(tmp_path: Path) -> None:
    fault = REPO / "cassettes" / "faults" / "overloaded_then_ok.yaml"
    with _Receiver() as receiver:
        assert main(["export", str(DAYFLOW), str(fault), "--otlp-endpoint", receiver.base_url]) == 0
    assert receiver.paths == ["/v1/traces", "/v1/traces"]
    received = [_spans_of_request(MessageToDict(r)) for r in receiver.requests]
    from_file = _export(tmp_path, DAYFLOW, fault)
    for got, wanted in zip(received, from_file, strict=True):
        assert sorted(s["name"] for s in got) == sorted(s["name"] for s in wanted)
        assert sorted(json.dumps(s["attributes"], sort_keys=True) for s in got if s["name"].startswith("chat")) == (
            sorted(json.dumps(s["attributes"], sort_keys=True) for s in wanted if s["name"].startswith("chat"))
        )


def test_a_collector_that_refuses_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    class Refusing(_Receiver):
        def handle(self, request: IncomingRequest, responder: Responder) -> None:
            responder.send_body(400, [("content-type", "text/plain")], b"no")

    with Refusing() as receiver:
        assert main(["export", str(DAYFLOW), "--otlp-endpoint", receiver.base_url + "/v1/traces"]) == 2
    assert "did not accept the spans" in capsys.readouterr().err


# --- usage errors ---------------------------------------------------------------------------------------------


def test_without_the_extra_the_command_names_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # as if the package were not installed
    assert main(["export", str(DAYFLOW), "--otel", str(tmp_path / "t.jsonl")]) == 2
    assert "pip install 'loop-harness[otel]'" in capsys.readouterr().err
    assert not (tmp_path / "t.jsonl").exists()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        ([str(DAYFLOW)], "say where to export"),
        ([str(DAYFLOW), "--otlp-endpoint", "ftp://x"], "not an http(s) URL"),
        (["missing.yaml", "--otel", "out.jsonl"], "missing.yaml"),
    ],
)
def test_bad_input_exits_2(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", *argv]) == 2
    assert said in capsys.readouterr().err
