"""The bundled runs: each reference-agent scenario, how to run it, and which cassette holds it.

One list serves `harness record` (re-record every bundled cassette against the simulator), the eval
suites (which cassette each case reads) and the tests, so the three never disagree on a name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import anthropic

    from harness.loop import RunResult

MODEL = "claude-sonnet-5"


def _dayflow(model: str = MODEL, **options: Any) -> Callable[[anthropic.Anthropic], RunResult]:
    def run(client: anthropic.Anthropic) -> RunResult:
        from harness.agents.dayflow import run_brief

        return run_brief(client, model=model, **options)

    return run


def _sql(**options: Any) -> Callable[[anthropic.Anthropic], RunResult]:
    def run(client: anthropic.Anthropic) -> RunResult:
        from harness.agents.data_assistant import run_question

        return run_question(client, model=MODEL, **options)

    return run


@dataclass(frozen=True)
class Scenario:
    name: str
    cassette: str  # relative to the cassettes folder
    description: str
    run: Callable[[anthropic.Anthropic], RunResult]
    faults: Mapping[int, str] = field(default_factory=dict)
    max_retries: int = 2

    def path(self, root: Path) -> Path:
        return root / self.cassette


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("dayflow-brief", "dayflow/brief.yaml",
             "Dayflow morning brief: three tools in parallel, then the brief", _dayflow()),
    Scenario("dayflow-brief-stream", "dayflow/brief_stream.yaml",
             "the same brief with every call streamed (SSE)", _dayflow(stream=True)),
    Scenario("sql-self-correction", "sql/self_correction.yaml",
             "data assistant: created_at fails with is_error, corrected to registration_date", _sql()),
    Scenario("guard-repeat", "guards/repeat.yaml",
             "a model that repeats one call forever: the breaker answers, then the step limit ends it",
             _dayflow(model="sim-repeat", max_steps=5)),
    Scenario("guard-max-tokens", "guards/max_tokens.yaml",
             "the model stops on max_tokens: a failure carrying the partial run", _dayflow(model="sim-max-tokens")),
    Scenario("guard-refusal", "guards/refusal.yaml",
             "the model refuses: surfaced as its own outcome, never retried", _dayflow(model="sim-refuse")),
    Scenario("guard-context-window", "guards/context_window.yaml",
             "the context window fills up: a failure naming the context reached",
             _dayflow(model="sim-context-window")),
    Scenario("guard-pause-turn", "guards/pause_turn.yaml",
             "the model pauses its turn first: the loop sends the conversation back", _dayflow(model="sim-pause-turn")),
    Scenario("fault-overloaded", "faults/overloaded_then_ok.yaml",
             "529 overloaded on the first call: the SDK retries, the run succeeds", _dayflow(), faults={0: "529"}),
    Scenario("fault-rate-limited", "faults/rate_limited_then_ok.yaml",
             "429 with retry-after on the second call: retried, the run succeeds", _dayflow(), faults={1: "429"}),
    Scenario("fault-server-error", "faults/server_error_exhausted.yaml",
             "500 on every attempt of the first call: retries run out, the run ends with outcome error",
             _dayflow(), faults={0: "500", 1: "500", 2: "500"}),
    Scenario("fault-sse-error", "faults/sse_error_mid_stream.yaml",
             "an SSE error event in the middle of the second streamed call", _dayflow(stream=True),
             faults={1: "sse-error"}),
)


def scenario(name: str) -> Scenario:
    for candidate in SCENARIOS:
        if candidate.name == name:
            return candidate
    raise KeyError(f"no scenario {name!r}; known: {', '.join(s.name for s in SCENARIOS)}")


def record_scenario(item: Scenario, cassettes_root: Path) -> RunResult:
    """Run one scenario against a fresh simulator and (re)write its cassette. Never touches the network."""
    import anthropic

    from harness.cassette.recorder import use_cassette
    from harness.sim import Simulator

    with Simulator(faults=dict(item.faults)) as sim, use_cassette(item.path(cassettes_root), mode="rewrite"):
        client = anthropic.Anthropic(api_key="sim-key-not-a-secret", base_url=sim.base_url,
                                     max_retries=item.max_retries)
        try:
            return item.run(client)
        finally:
            client.close()


def replay_scenario(item: Scenario, cassettes_root: Path) -> RunResult:
    """Run one scenario offline from its cassette (mode none): the same run, deterministically."""
    import anthropic

    from harness.cassette.recorder import use_cassette

    with use_cassette(item.path(cassettes_root), mode="none"):
        client = anthropic.Anthropic(api_key="replay-key-not-a-secret", base_url="http://127.0.0.1:9",
                                     max_retries=item.max_retries)
        try:
            return item.run(client)
        finally:
            client.close()
