"""Spans as a run goes: the agent loop (`run_loop(..., tracer_provider=...)`) and a recording cassette
(`use_cassette(..., tracer_provider=...)`) emit the same GenAI spans as `harness export --otel`.

Given no provider, the global one is used when the application set one. When none is set, `tracer_for`
answers None once per run or cassette (a few microseconds: one dict lookup when OpenTelemetry was never
imported, else a look at the global provider), and nothing is paid per request. Message content goes
into live spans only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is true, the switch
OpenTelemetry's own GenAI instrumentations read.

One call gets one chat span, so that a backend summing tokens counts it once: the anthropic SDK (2.x)
traces its own calls (span `anthropic.messages.create`, operation chat) when its client has a tracer
provider or a global one is set; then that span stands for the call and the loop adds none of its own.
Otherwise the loop's chat span does, and a recording cassette adds none beneath either.
"""

from __future__ import annotations

import contextvars
import os
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from harness.run import Exchange, Usage
from harness.telemetry import genai

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

CONTENT_SWITCH = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_IN_LOOP_CALL: contextvars.ContextVar[bool] = contextvars.ContextVar("harness_in_loop_call", default=False)
_SENT_AT: contextvars.ContextVar[int | None] = contextvars.ContextVar("harness_sent_at", default=None)
SDK_SCOPE = "com.anthropic.sdk.python"  # the instrumentation scope of the anthropic SDK's own call spans


def sdk_traces(client: Any) -> bool:
    """Whether this anthropic client records a span of its own for each call (SDK 2.x, with a real provider)."""
    tracer = getattr(client, "_tracer", None)  # private, so read defensively: absent means no
    if tracer is None:
        return False
    from opentelemetry import trace

    if isinstance(tracer, trace.NoOpTracer):
        return False
    if isinstance(tracer, trace.ProxyTracer):  # the global provider's, which records once one is set
        return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider)
    return True


def _in_sdk_call() -> bool:
    from opentelemetry import trace

    scope = getattr(trace.get_current_span(), "instrumentation_scope", None)
    return getattr(scope, "name", None) == SDK_SCOPE


def tracer_for(provider: Any = None) -> Tracer | None:
    """A tracer from `provider`, else from the global provider when one was set; None when there is neither."""
    if provider is None:
        trace = sys.modules.get("opentelemetry.trace")
        if trace is None:  # OpenTelemetry never imported: no global provider can have been set
            return None
        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            return None
    from harness._version import __version__

    return provider.get_tracer("loop-harness", __version__)


def _content_wanted() -> bool:
    return os.environ.get(CONTENT_SWITCH, "").strip().lower() == "true"


class _Open:
    """A span that is current until it ends: its context token is detached then."""

    def __init__(self, span: Span, token: contextvars.Token[Context]) -> None:
        self.span = span
        self.token = token


def _start_current(tracer: Tracer, name: str, kind: Any, attributes: Mapping[str, Any]) -> _Open:
    from opentelemetry import context, trace

    span = tracer.start_span(name, kind=kind, attributes=dict(attributes))
    return _Open(span, context.attach(trace.set_span_in_context(span)))


def _end(opened: _Open) -> None:
    from opentelemetry import context

    opened.span.end()
    context.detach(opened.token)


def _error(span: Span, error_type: str, message: str) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute(genai.ERROR_TYPE, error_type)
    span.set_status(Status(StatusCode.ERROR, message))


class LoopSpans:
    """The loop's spans: an invoke_agent root, a chat span per model call, an execute_tool span per tool run."""

    def __init__(self, tracer: Tracer, *, model: str, chat_spans: bool = True) -> None:
        from opentelemetry.trace import SpanKind

        self.tracer = tracer
        self.chat_spans = chat_spans  # False when the SDK's own call spans stand for the model calls
        self.content = _content_wanted()
        self.root = _start_current(tracer, f"{genai.INVOKE_AGENT} {model}", SpanKind.INTERNAL,
                                   {genai.OPERATION: genai.INVOKE_AGENT, genai.PROVIDER_NAME: genai.PROVIDER,
                                    genai.REQUEST_MODEL: model})
        self.usage = Usage()

    def model_call(self, body: Mapping[str, Any]) -> tuple[_Open | None, contextvars.Token[bool]]:
        from opentelemetry.trace import SpanKind

        if not self.chat_spans:
            return None, _IN_LOOP_CALL.set(True)
        attributes = genai.request_attributes(body)
        if self.content:
            attributes |= genai.content_attributes(body.get("messages") or [], None, None)
        opened = _start_current(self.tracer, genai.chat_span_name(body.get("model")), SpanKind.CLIENT, attributes)
        return opened, _IN_LOOP_CALL.set(True)

    def model_reply(self, started: tuple[_Open | None, contextvars.Token[bool]], message: Any,
                    error: Exception | None) -> None:
        opened, flag = started
        _IN_LOOP_CALL.reset(flag)
        if message is not None:
            self.usage += Usage.from_api(message.model_dump(mode="json").get("usage"))
        if opened is None:
            return
        span = opened.span
        if message is not None:
            data = message.model_dump(mode="json")
            usage = Usage.from_api(data.get("usage"))
            span.set_attributes(genai.response_attributes(message_id=data.get("id"), model=data.get("model"),
                                                          stop_reason=data.get("stop_reason"), usage=usage))
            if self.content:
                output = genai.content_attributes([], data.get("content") or [], data.get("stop_reason"))
                span.set_attribute(genai.OUTPUT_MESSAGES, output[genai.OUTPUT_MESSAGES])
        else:
            status = getattr(error, "status_code", None)
            if isinstance(status, int):
                span.set_attribute(genai.HTTP_STATUS, status)
            _error(span, type(error).__name__, str(error))
        _end(opened)

    def tool_call(self, name: str, call_id: str, arguments: Any) -> _Open:
        from opentelemetry.trace import SpanKind

        return _start_current(self.tracer, genai.tool_span_name(name), SpanKind.INTERNAL,
                              genai.tool_attributes(call_id=call_id, name=name, arguments=arguments,
                                                    include_content=self.content))

    def tool_reply(self, opened: _Open, content: str, is_error: bool) -> None:
        if self.content:
            opened.span.set_attribute(genai.TOOL_CALL_RESULT, content)
        if is_error:
            _error(opened.span, "tool_error", content[:200])
        _end(opened)

    def finish(self, result: Any) -> None:
        """End the root with the run's totals and outcome (`result` is a RunResult, or None when the run raised)."""
        span = self.root.span
        span.set_attributes(genai.usage_attributes(self.usage))
        if result is None:
            _error(span, "exception", "the run raised before it ended")
        else:
            span.set_attribute("harness.outcome", str(getattr(result.outcome, "value", result.outcome)))
            if not result.ok:
                span.set_attribute("harness.reason", result.reason)
        _end(self.root)


def loop_spans(provider: Any, *, model: str, client: Any = None) -> LoopSpans | None:
    tracer = tracer_for(provider)
    return LoopSpans(tracer, model=model, chat_spans=not sdk_traces(client)) if tracer is not None else None


class CassetteSpans:
    """A chat span for each exchange a cassette records, timed from when the request was sent."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.content = _content_wanted()

    @staticmethod
    def sending() -> None:
        """The transport is about to send a request (called where the request leaves, in its context)."""
        _SENT_AT.set(time.time_ns())

    def recorded(self, interaction: Mapping[str, Any], elapsed_ms: float | None = None) -> None:
        from opentelemetry.trace import SpanKind

        if _IN_LOOP_CALL.get() or _in_sdk_call():
            return  # the loop's or the SDK's chat span already stands for this call
        exchange, _ = Exchange.from_interaction(0, interaction)
        if exchange is None:
            return  # not a Messages API call
        end = time.time_ns()
        sent = _SENT_AT.get()
        _SENT_AT.set(None)
        start = end - int(elapsed_ms * 1_000_000) if elapsed_ms is not None else sent if sent is not None else end
        attributes = genai.request_attributes(exchange.request)
        message = exchange.message
        if message is not None:
            attributes |= genai.response_attributes(
                message_id=message.get("id"), model=message.get("model"), stop_reason=message.get("stop_reason"),
                usage=Usage.from_api(message.get("usage")))
        else:
            attributes |= genai.error_attributes(status=exchange.status, error_type=exchange.error_type)
        if exchange.status is not None:
            attributes[genai.HTTP_STATUS] = exchange.status
        if self.content:
            attributes |= genai.content_attributes(exchange.request.get("messages") or [],
                                                   (message or {}).get("content"), (message or {}).get("stop_reason"))
        span = self.tracer.start_span(genai.chat_span_name(exchange.request.get("model")), kind=SpanKind.CLIENT,
                                      start_time=start, attributes=attributes)
        if message is None:
            _error(span, exchange.error_type or "error", exchange.error_message or exchange.error_type or "error")
        span.end(end_time=end)


def cassette_spans(provider: Any) -> CassetteSpans | None:
    tracer = tracer_for(provider)
    return CassetteSpans(tracer) if tracer is not None else None
