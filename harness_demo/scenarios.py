"""The bundled runs: each reference-agent scenario, how to run it, and which cassette holds it.

One list serves `harness record --demo` (re-record every bundled cassette against the simulator), the eval
suites (which cassette each case reads) and the tests, so the three never disagree on a name.

A Dayflow scenario can be recorded with another system prompt (`with_system_prompt`): that is how a
prompt change becomes a set of candidate cassettes for `harness compare`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError
from harness.project import ClientFor, run_agent

if TYPE_CHECKING:
    import anthropic

    from harness.loop import RunResult

MODEL = "claude-sonnet-5"


def _dayflow(client: anthropic.Anthropic, **options: Any) -> RunResult:
    from harness_demo.dayflow import run_brief

    return run_brief(client, **options)


def _dayflow_prompt() -> str:
    from harness_demo.dayflow import SYSTEM_PROMPT

    return SYSTEM_PROMPT


def _sql(client: anthropic.Anthropic, **options: Any) -> RunResult:
    from harness_demo.data_assistant import run_question

    return run_question(client, **options)


@dataclass(frozen=True)
class Scenario:
    name: str
    cassette: str  # relative to the cassettes folder
    description: str
    agent: Callable[..., RunResult]  # (client, **options) -> RunResult
    options: Mapping[str, Any] = field(default_factory=dict)  # the agent's keywords (model, stream, system...)
    faults: Mapping[int, str] = field(default_factory=dict)
    max_retries: int = 2
    # The agent's own system prompt when the scenario lets a recording replace it; None when it does not.
    default_system_prompt: Callable[[], str] | None = None

    def path(self, root: Path) -> Path:
        return root / self.cassette

    def run(self, client_for: ClientFor) -> RunResult:
        """Run once with the client `client_for(False)` builds (closed afterwards): the Scenario protocol."""
        return run_agent(self.run_with, client_for)

    def run_with(self, client: anthropic.Anthropic) -> RunResult:
        """Run once with a client of the caller's (left open)."""
        return self.agent(client, **{"model": MODEL, **self.options})

    @property
    def system_prompt(self) -> str | None:
        """The system prompt this scenario sends, when it is one a recording may replace."""
        if self.default_system_prompt is None:
            return None
        return self.options.get("system") or self.default_system_prompt()

    def with_system_prompt(self, prompt: str) -> Scenario:
        """The same scenario sending `prompt` as its system prompt (a prompt change to compare)."""
        if self.default_system_prompt is None:
            raise HarnessError(f"scenario {self.name!r} does not take a replacement system prompt; "
                               f"these do: {', '.join(s.name for s in SCENARIOS if s.default_system_prompt)}")
        return replace(self, options={**self.options, "system": prompt})


def _dayflow_scenario(name: str, cassette: str, description: str, **options: Any) -> Scenario:
    faults = options.pop("faults", {})
    return Scenario(name, cassette, description, _dayflow, options, faults=faults,
                    default_system_prompt=_dayflow_prompt)


SCENARIOS: tuple[Scenario, ...] = (
    _dayflow_scenario("dayflow-brief", "dayflow/brief.yaml",
                      "Dayflow morning brief: three tools in parallel, then the brief"),
    _dayflow_scenario("dayflow-brief-stream", "dayflow/brief_stream.yaml",
                      "the same brief with every call streamed (SSE)", stream=True),
    Scenario("sql-self-correction", "sql/self_correction.yaml",
             "data assistant: created_at fails with is_error, corrected to registration_date", _sql),
    _dayflow_scenario("guard-repeat", "guards/repeat.yaml",
                      "a model that repeats one call forever: the breaker answers, then the step limit ends it",
                      model="sim-repeat", max_steps=5),
    _dayflow_scenario("guard-max-tokens", "guards/max_tokens.yaml",
                      "the model stops on max_tokens: a failure carrying the partial run", model="sim-max-tokens"),
    _dayflow_scenario("guard-refusal", "guards/refusal.yaml",
                      "the model refuses: surfaced as its own outcome, never retried", model="sim-refuse"),
    _dayflow_scenario("guard-context-window", "guards/context_window.yaml",
                      "the context window fills up: a failure naming the context reached",
                      model="sim-context-window"),
    _dayflow_scenario("guard-pause-turn", "guards/pause_turn.yaml",
                      "the model pauses its turn first: the loop sends the conversation back", model="sim-pause-turn"),
    _dayflow_scenario("fault-overloaded", "faults/overloaded_then_ok.yaml",
                      "529 overloaded on the first call: the SDK retries, the run succeeds", faults={0: "529"}),
    _dayflow_scenario("fault-rate-limited", "faults/rate_limited_then_ok.yaml",
                      "429 with retry-after on the second call: retried, the run succeeds", faults={1: "429"}),
    _dayflow_scenario("fault-server-error", "faults/server_error_exhausted.yaml",
                      "500 on every attempt of the first call: retries run out, the run ends with outcome error",
                      faults={0: "500", 1: "500", 2: "500"}),
    _dayflow_scenario("fault-sse-error", "faults/sse_error_mid_stream.yaml",
                      "an SSE error event in the middle of the second streamed call", stream=True,
                      faults={1: "sse-error"}),
)


def scenario(name: str) -> Scenario:
    for candidate in SCENARIOS:
        if candidate.name == name:
            return candidate
    raise KeyError(f"no scenario {name!r}; known: {', '.join(s.name for s in SCENARIOS)}")


def record_scenario(item: Scenario, cassettes_root: Path, *, seed: int = 0, path: Path | None = None) -> RunResult:
    """Run one scenario against a fresh simulator and (re)write its cassette. Never touches the network.

    `path` overrides where the cassette goes (a trial file); `seed` is the simulator's, which changes
    its message, tool_use and request ids and nothing else (the simulator's replies are a function of
    the request, so trials of one scenario differ only in ids).
    """
    from harness.recording import record_scenario as record_run
    from harness.sim import Simulator

    target = path if path is not None else item.path(cassettes_root)
    with Simulator(faults=dict(item.faults), seed=seed) as sim:
        return record_run(item, target, api_key="sim-key-not-a-secret", base_url=sim.base_url,
                          faults_asked=bool(item.faults)).returned


def replay_scenario(item: Scenario, cassettes_root: Path) -> RunResult:
    """Run one scenario offline from its cassette (mode none): the same run, deterministically."""
    from harness.cassette.recorder import use_cassette
    from harness.scenarios import client_factory

    with use_cassette(item.path(cassettes_root), mode="none"):
        return item.run(client_factory(item, api_key="replay-key-not-a-secret", base_url="http://127.0.0.1:9"))
