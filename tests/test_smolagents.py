"""A smolagents tool-calling agent runs to its end against `harness sim` and replays offline (issue 42).

smolagents' ToolCallingAgent reaches the Messages API through litellm, asks for a tool every step (`tool_choice:
any`), offers its own `final_answer` tool and stops when that is called, or at its step limit. Against the
simulator that called every offered tool at once it called get_weather and final_answer together and looped to its
step limit; sim-auto calls get_weather for the city asked about, then final_answer with what it observed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import use_cassette
from harness.sim import Simulator

MAX_STEPS = 6
KEY = "sk-ant-not-a-real-key-0000000000"


@pytest.fixture
def smolagents(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm's import fetches a price list otherwise
    monkeypatch.setenv("LITELLM_TELEMETRY", "False")
    pytest.importorskip("litellm", reason="litellm is a dev extra")
    return pytest.importorskip("smolagents", reason="smolagents is a dev extra")


def _run_agent(smolagents: Any, base_url: str) -> tuple[Any, list[str]]:
    looked_up: list[str] = []

    @smolagents.tool
    def get_weather(location: str) -> str:
        """Get the weather in a given location.

        Args:
            location: The city to get the weather for.
        """
        looked_up.append(location)
        return f"Sunny and 21 C in {location}."

    model = smolagents.LiteLLMModel(model_id="anthropic/claude-sonnet-5", api_base=base_url, api_key=KEY)
    agent = smolagents.ToolCallingAgent(tools=[get_weather], model=model, max_steps=MAX_STEPS, verbosity_level=0)
    return agent.run("What's the weather like in Paris?"), looked_up


def test_a_smolagents_tool_calling_agent_runs_to_its_end_and_replays(smolagents: Any, tmp_path: Path) -> None:
    cassette = tmp_path / "smolagents.yaml"
    with Simulator() as sim, use_cassette(cassette, mode="once") as recording:
        answer, looked_up = _run_agent(smolagents, sim.base_url)
    assert looked_up == ["Paris"]
    assert "Sunny and 21 C in Paris." in str(answer)  # final_answer, with what get_weather returned
    assert len(recording.new_interactions) == 2  # one step for the tool, one for final_answer: not the step limit
    with Simulator() as bystander, use_cassette(cassette, mode="none") as replay:
        replayed, again = _run_agent(smolagents, bystander.base_url)
    assert (str(replayed), again) == (str(answer), looked_up)
    assert bystander.requests_seen == 0 and not replay.unplayed
