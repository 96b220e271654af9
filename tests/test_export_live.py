"""Spans as a run goes: `run_loop(..., tracer_provider=)` and `use_cassette(..., tracer_provider=)` against
the local simulator, read back with the SDK's in-memory exporter, and the same spans as the export of
the cassette that run recorded."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import anthropic
import pytest

pytest.importorskip("opentelemetry.sdk.trace", reason="needs loop-harness[otel]")

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from harness import Simulator, load_trajectory, run_loop_async, use_cassette
from harness.export.otel import trajectory_spans
from harness.loop import _loop_spans
from harness.sim import Fault
from harness.telemetry import live
from harness_demo.dayflow import SYSTEM_PROMPT, build_registry, run_brief, user_prompt

KEY = "sk-ant-test-not-a-real-key"
MODEL = "claude-sonnet-5"


@pytest.fixture
def memory() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _shape(spans: Any) -> list[str]:
    """Each span's name and its GenAI attributes (the ones the export and the live run share)."""
    keys = ("gen_ai.operation.name", "gen_ai.request.model", "gen_ai.response.id", "gen_ai.response.model",
            "gen_ai.response.finish_reasons", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
            "gen_ai.tool.name", "gen_ai.tool.call.id")
    return sorted(json.dumps([s.name, {k: _plain(s.attributes[k]) for k in keys if k in s.attributes}], sort_keys=True)
                  for s in spans)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def test_a_recorded_loop_run_gives_the_spans_its_export_gives(
    tmp_path: Path, memory: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = memory
    cassette = tmp_path / "brief.yaml"
    with Simulator() as simulator:
        client = anthropic.Anthropic(api_key=KEY, base_url=simulator.base_url)
        with use_cassette(cassette, mode="once", tracer_provider=provider):
            result = run_brief(client, model=MODEL, tracer_provider=provider)
    assert result.ok
    spans = exporter.get_finished_spans()
    assert len({s.context.trace_id for s in spans}) == 1
    [root] = [s for s in spans if s.parent is None]
    assert all(s.parent.span_id == root.context.span_id for s in spans if s is not root)
    # the cassette saw both calls, but the loop's chat spans stand for them: no second span per call
    assert sum(1 for s in spans if s.name.startswith("chat")) == result.steps == 2
    assert root.attributes["gen_ai.usage.output_tokens"] == result.usage.output
    assert root.attributes["harness.outcome"] == "ended"
    assert all(s.end_time >= s.start_time for s in spans)

    exported = trajectory_spans(load_trajectory(cassette))
    live_shape, export_shape = _shape(spans), _shape(exported)
    assert live_shape == export_shape


def test_a_recording_cassette_traces_each_exchange(
    tmp_path: Path, memory: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = memory
    cassette = tmp_path / "one.yaml"
    with Simulator() as simulator:
        client = anthropic.Anthropic(api_key=KEY, base_url=simulator.base_url)
        with use_cassette(cassette, mode="once", tracer_provider=provider):
            message = client.messages.create(model=MODEL, max_tokens=64, stop_sequences=["###"],
                                             messages=[{"role": "user", "content": "hello"}])
        with use_cassette(cassette, mode="none", tracer_provider=provider):  # replay records nothing new
            client.messages.create(model=MODEL, max_tokens=64, stop_sequences=["###"],
                                   messages=[{"role": "user", "content": "hello"}])
    [span] = exporter.get_finished_spans()
    assert span.name == f"chat {MODEL}"
    assert span.kind is trace.SpanKind.CLIENT
    assert span.attributes["gen_ai.response.id"] == message.id
    assert list(span.attributes["gen_ai.request.stop_sequences"]) == ["###"]
    assert span.attributes["gen_ai.usage.output_tokens"] == message.usage.output_tokens
    assert span.end_time > span.start_time  # timed from when the request left
    assert "gen_ai.input.messages" not in span.attributes


def test_content_only_with_the_genai_switch(
    tmp_path: Path, memory: tuple[TracerProvider, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    provider, exporter = memory
    monkeypatch.setenv(live.CONTENT_SWITCH, "true")
    with Simulator() as simulator:
        client = anthropic.Anthropic(api_key=KEY, base_url=simulator.base_url)
        run_brief(client, model=MODEL, tracer_provider=provider)
    spans = exporter.get_finished_spans()
    first_chat = min((s for s in spans if s.name.startswith("chat")), key=lambda s: s.start_time)
    assert user_prompt() in first_chat.attributes["gen_ai.input.messages"]
    tool = next(s for s in spans if s.name == "execute_tool read_inbox")
    assert "gen_ai.tool.call.result" in tool.attributes


def test_the_global_provider_is_used_when_none_is_given(
    memory: tuple[TracerProvider, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    provider, exporter = memory
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    with Simulator() as simulator:
        client = anthropic.AsyncAnthropic(api_key=KEY, base_url=simulator.base_url)
        result = asyncio.run(run_loop_async(client, system=SYSTEM_PROMPT, user=user_prompt(), tools=build_registry(),
                                            model=MODEL))
    spans = exporter.get_finished_spans()
    # the SDK picks up the global provider too: its own call span stands for each call, and the loop adds none
    chats = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert len(chats) == result.steps
    assert {s.instrumentation_scope.name for s in chats} == {live.SDK_SCOPE}
    [root] = [s for s in spans if s.parent is None]
    assert root.name == f"invoke_agent {MODEL}"
    assert all(s.parent.span_id == root.context.span_id for s in chats)
    assert root.attributes["gen_ai.usage.output_tokens"] == result.usage.output


def test_one_chat_span_per_call_when_the_sdk_traces_its_calls(
    tmp_path: Path, memory: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = memory
    with Simulator() as simulator:
        client = anthropic.Anthropic(api_key=KEY, base_url=simulator.base_url,
                                     open_telemetry={"tracer_provider": provider})
        with use_cassette(tmp_path / "sdk.yaml", mode="once", tracer_provider=provider):
            result = run_brief(client, model=MODEL, tracer_provider=provider)
    spans = exporter.get_finished_spans()
    chats = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert len(chats) == result.steps == 2  # the SDK's; neither the loop nor the cassette adds another
    assert sum(s.attributes["gen_ai.usage.output_tokens"] for s in chats) == result.usage.output
    assert len([s for s in spans if s.name.startswith("execute_tool")]) == len(result.tool_calls)


def test_a_failed_call_is_an_error_span(memory: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = memory
    with Simulator(faults={1: Fault("529")}) as simulator:
        client = anthropic.Anthropic(api_key=KEY, base_url=simulator.base_url, max_retries=0)
        result = run_brief(client, model=MODEL, tracer_provider=provider)
    assert not result.ok
    chat = max((s for s in exporter.get_finished_spans() if s.name.startswith("chat")), key=lambda s: s.start_time)
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes["http.response.status_code"] == 529
    root = next(s for s in exporter.get_finished_spans() if s.parent is None)
    assert root.attributes["harness.outcome"] == "error"


def test_no_provider_and_no_opentelemetry_costs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert live.tracer_for(None) is None  # imported, but no global provider was set
    monkeypatch.delitem(sys.modules, "opentelemetry.trace")
    assert _loop_spans(None, MODEL) is None
    assert live.tracer_for(None) is None
    assert "opentelemetry.trace" not in sys.modules  # and nothing imported it again
