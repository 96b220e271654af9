"""Trajectories as OpenTelemetry traces: one trace per run, a span per model call and per tool execution.

Spans are made with the OpenTelemetry SDK (needs `loop-harness[otel]`) and written either as OTLP/JSON,
the format an OpenTelemetry Collector's file exporter writes and its otlpjsonfile receiver reads (one
ExportTraceServiceRequest per line), or sent over OTLP/HTTP to a collector.

A run's trace: an `invoke_agent` root with the run's token totals; under it a `chat {model}` span for
each try at each model call (a retried 529 is a failed span before the one that answered), and an
`execute_tool {name}` span for each tool call of every kind (`harness.tool.kind`: client, server, mcp with
`harness.tool.mcp_server`); those the API ran (server tools and MCP calls, run inside the API call, are
children of the chat span that ran them).

Timing: a cassette stores when it was recorded (`recorded_at`), each exchange's duration where the
recorder measured it (`elapsed_ms`: the proxy, HAR imports) and, for streams, each event's offset
(`offset_ms`). Spans start at `recorded_at` and last as long as recorded; what has no recorded duration
(tool executions always, calls in most in-process recordings) is a zero-length span placed 1 ms after
the previous one, so that the order stays readable. The root says which with `harness.timing`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harness.errors import HarnessError
from harness.run import ToolCall, Usage
from harness.telemetry import genai
from harness.trajectory import Attempt, Run, Step, Trajectory

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.trace import Span, Tracer

EXTRA = "otel"
SERVICE_NAME = "loop-harness"
TRACES_PATH = "/v1/traces"
UNTIMED_GAP_NS = 1_000_000  # 1 ms between spans whose duration was not recorded


def require_otel() -> None:
    """Raise a HarnessError naming the extra to install when the OpenTelemetry SDK or exporter is missing."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as err:
        raise HarnessError(
            f"OpenTelemetry export needs the SDK and the OTLP exporter ({err.name} is missing): "
            f"pip install 'loop-harness[{EXTRA}]'"
        ) from None


# --- spans from a trajectory ---------------------------------------------------------------------------


class _Timeline:
    """Start and end times: recorded durations where known, zero-length spans 1 ms apart where not."""

    def __init__(self, start_ns: int) -> None:
        self.now = start_ns
        self.timed = 0
        self.untimed = 0

    def take(self, duration_ms: float | None) -> tuple[int, int]:
        start = self.now
        if duration_ms is None:
            self.untimed += 1
            self.now += UNTIMED_GAP_NS
            return start, start
        self.timed += 1
        end = start + int(duration_ms * 1_000_000)
        self.now = end
        return start, end


def _origin_ns(trajectory: Trajectory) -> int:
    """When the recording began: the cassette's recorded_at, else its file's modification time."""
    recorded_at = trajectory.source.get("recorded_at")
    if isinstance(recorded_at, str):
        try:
            moment = datetime.fromisoformat(recorded_at.replace("Z", "+00:00"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            return int(moment.timestamp() * 1_000_000_000)
        except ValueError:
            pass
    path = trajectory.source.get("path")
    try:
        return Path(path).stat().st_mtime_ns if path else 0
    except OSError:
        return 0


def emit_trajectory(trajectory: Trajectory, tracer: Tracer, *, include_content: bool = False) -> int:
    """Emit every run of `trajectory` as its own trace; returns the number of traces."""
    timeline = _Timeline(_origin_ns(trajectory))
    for run in trajectory.runs:
        _emit_run(trajectory, run, tracer, timeline, include_content)
    return len(trajectory.runs)


def _emit_run(trajectory: Trajectory, run: Run, tracer: Tracer, timeline: _Timeline, include_content: bool) -> None:
    from opentelemetry import context as otel_context
    from opentelemetry import trace

    first_request = run.steps[0].request if run.steps else run.failed_request.request if run.failed_request else {}
    model = first_request.get("model")
    start = timeline.now
    timed_before, untimed_before = timeline.timed, timeline.untimed
    root = tracer.start_span(
        f"{genai.INVOKE_AGENT} {model}" if model else genai.INVOKE_AGENT,
        context=otel_context.Context(),  # an empty context: a new trace for each run
        kind=trace.SpanKind.INTERNAL,
        start_time=start,
        attributes={genai.OPERATION: genai.INVOKE_AGENT, genai.PROVIDER_NAME: genai.PROVIDER}
        | ({genai.REQUEST_MODEL: model} if isinstance(model, str) else {}),
    )
    parent = trace.set_span_in_context(root)
    conversation: list[dict[str, Any]] = []
    for step in run.steps:
        conversation.extend(step.delta)
        for attempt in step.attempts:
            chat = _chat_span(tracer, parent, timeline, step.request, attempt, conversation, include_content,
                              step=step if attempt.ok else None)
            if attempt.ok:
                for call in step.tool_calls:
                    if call.server:
                        _tool_span(tracer, trace.set_span_in_context(chat[0]), chat[1], chat[2], call, include_content)
        for call in step.tool_calls:
            if not call.server:
                begin, end = timeline.take(None)  # tool executions are never timed in a cassette
                _tool_span(tracer, parent, begin, end, call, include_content)
    if run.failed_request is not None:
        conversation.extend(run.failed_request.delta)
        for attempt in run.failed_request.attempts:
            _chat_span(tracer, parent, timeline, run.failed_request.request, attempt, conversation, include_content)

    outcome = run.outcome
    timed, untimed = timeline.timed - timed_before, timeline.untimed - untimed_before
    root.set_attributes(genai.usage_attributes(run.usage) | {
        "harness.cassette": str(trajectory.source.get("path") or ""),
        "harness.run": run.index,
        "harness.outcome": outcome.describe(),
        "harness.timing": "recorded" if not untimed else "ordered" if not timed else "partly recorded",
    })
    if outcome.kind == "error":
        _set_error(root, outcome.error_type, outcome.error_message)
    root.end(end_time=max(timeline.now, start))


def _chat_span(tracer: Tracer, parent: Any, timeline: _Timeline, request: dict[str, Any], attempt: Attempt,
               conversation: list[dict[str, Any]], include_content: bool,
               step: Step | None = None) -> tuple[Span, int, int]:
    from opentelemetry import trace

    begin, end = timeline.take(attempt.duration_ms)
    attributes = genai.request_attributes(request)
    if step is not None:
        attributes |= genai.response_attributes(message_id=step.message_id, model=step.model,
                                                stop_reason=step.stop_reason,
                                                usage=step.usage if step.usage_counted else Usage())
        if not step.usage_counted:  # a replayed duplicate: `harness show` does not count it twice, nor do we
            attributes["harness.usage_counted"] = False
        cost = step.cost
        if cost is not None:  # at list prices (harness.pricing): compaction passes and tool fees included
            attributes["harness.cost_usd"] = round(cost.total, 6)
    else:
        attributes |= genai.error_attributes(status=attempt.status, error_type=attempt.error_type)
    if attempt.status is not None and step is not None:
        attributes[genai.HTTP_STATUS] = attempt.status
    if attempt.first_token_ms is not None:
        attributes[genai.RESPONSE_TIME_TO_FIRST_CHUNK] = attempt.first_token_ms / 1000
    if attempt.interaction is not None:
        attributes["harness.interaction"] = attempt.interaction
    if include_content:
        attributes |= genai.content_attributes(conversation, step.blocks if step else None,
                                               step.stop_reason if step else None)
    span = tracer.start_span(genai.chat_span_name(request.get("model")), context=parent,
                             kind=trace.SpanKind.CLIENT, start_time=begin, attributes=attributes)
    if step is None:
        _set_error(span, attempt.error_type, attempt.error_message)
    span.end(end_time=end)
    return span, begin, end


def _tool_span(tracer: Tracer, parent: Any, begin: int, end: int, call: ToolCall, include_content: bool) -> None:
    from opentelemetry import trace

    result = call.result
    attributes = genai.tool_attributes(call_id=call.id, name=call.name, server=call.server, arguments=call.input,
                                       result=result.content if result else None, include_content=include_content)
    attributes["harness.tool.kind"] = call.kind  # client, server or mcp (harness.run.TOOL_KINDS)
    if call.server_name is not None:
        attributes["harness.tool.mcp_server"] = call.server_name
    if call.caller is not None:
        attributes["harness.tool.caller"] = str(call.caller.get("tool_id") or call.caller.get("type"))
    if result is None:
        attributes["harness.tool_result"] = "none: the run ended before it"
    span = tracer.start_span(genai.tool_span_name(call.name), context=parent, kind=trace.SpanKind.INTERNAL,
                             start_time=begin, attributes=attributes)
    if result is not None and result.is_error:
        error = result.error_code or "tool_error"  # a server tool's own code (max_uses_exceeded, ...)
        span.set_attribute(genai.ERROR_TYPE, error)
        _set_error(span, error, None)
    span.end(end_time=end)


def _set_error(span: Span, error_type: str | None, message: str | None) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_status(Status(StatusCode.ERROR, message or error_type or "error"))


# --- where the spans go -----------------------------------------------------------------------------------


def _provider() -> tuple[TracerProvider, Any]:
    """A tracer provider of our own (never the global one) that keeps its spans in memory."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from harness._version import __version__

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME,
                                                        "service.version": __version__}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


def trajectory_spans(trajectory: Trajectory, *, include_content: bool = False) -> Sequence[ReadableSpan]:
    """The finished spans of a trajectory's traces, as the SDK hands them to an exporter."""
    require_otel()
    from harness._version import __version__

    provider, memory = _provider()
    emit_trajectory(trajectory, provider.get_tracer(SERVICE_NAME, __version__), include_content=include_content)
    provider.shutdown()
    return memory.get_finished_spans()


def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """An ExportTraceServiceRequest in OTLP/JSON: the protobuf's own JSON mapping (what the SDK's encoder
    builds), with the two departures the OTLP spec makes from it: trace and span ids as hex, not base64,
    and enums as numbers."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    document = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                _hex_ids(span)
                for link in span.get("links", []):
                    _hex_ids(link)
    return document


def _hex_ids(item: dict[str, Any]) -> None:
    for key in ("traceId", "spanId", "parentSpanId"):
        if item.get(key):
            item[key] = base64.b64decode(item[key]).hex()


def write_otlp_json(path: str | Path, trajectories: Iterable[Trajectory], *, include_content: bool = False) -> int:
    """One ExportTraceServiceRequest line per cassette into `path` (written atomically); returns the span count."""
    from harness.files import atomic_write_text

    lines, count = [], 0
    for trajectory in trajectories:
        spans = trajectory_spans(trajectory, include_content=include_content)
        count += len(spans)
        lines.append(json.dumps(otlp_json(spans), separators=(",", ":"), ensure_ascii=False))
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return count


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL: a bare collector address gets the standard /v1/traces path."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise HarnessError(f"--otlp-endpoint {endpoint!r} is not an http(s) URL, e.g. http://127.0.0.1:4318")
    return endpoint if parts.path not in ("", "/") else endpoint.rstrip("/") + TRACES_PATH


def send_otlp(endpoint: str, trajectories: Iterable[Trajectory], *, include_content: bool = False,
              timeout: float = 10.0) -> int:
    """Send each cassette's spans to an OTLP/HTTP collector (protobuf); returns the span count."""
    require_otel()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    from harness.cassette.redact import shown_url

    url = traces_url(endpoint)
    exporter = OTLPSpanExporter(endpoint=url, timeout=timeout)
    count = 0
    try:
        for trajectory in trajectories:
            spans = trajectory_spans(trajectory, include_content=include_content)
            if exporter.export(spans) is not SpanExportResult.SUCCESS:
                raise HarnessError(f"the collector at {shown_url(url)} did not accept the spans (see the warning "
                                   "above)", file=trajectory.source.get("path"))
            count += len(spans)
    finally:
        exporter.shutdown()
    return count
