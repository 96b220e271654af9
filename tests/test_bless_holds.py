"""Goldens that hold: `harness bless` writes only checks that pass on the run it blesses, names what it leaves
out and why, and bless-then-eval passes on every cassette in the repository, the real-recordings corpus, and
the kinds of run the tests record against the simulator (issue 26)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import pytest

from harness import ToolRegistry, run_loop, use_cassette
from harness.cli import main as harness_main
from harness.sim import Simulator
from harness.trajectory import load_trajectory
from tests.conftest import REPO, corpus_params
from tests.test_checks_support import real_cassettes

BUNDLED = sorted((REPO / "cassettes").rglob("*.yaml"))


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


def bless_then_eval(cassette: Path, where: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    """Bless `cassette` into a golden under `where` (a project of its own), then eval that golden: both exit 0."""
    (where / "pyproject.toml").write_text("", encoding="utf-8")
    golden = where / "golden" / f"{cassette.stem}.json"
    capsys.readouterr()
    assert harness_main(["bless", str(cassette), "--golden", str(golden), "--yes"]) == 0
    blessed = capsys.readouterr().out
    code = harness_main(["eval", str(golden)])
    printed = capsys.readouterr().out
    assert code == 0, f"eval of the golden just blessed from {cassette} failed:\n{printed}"
    return json.loads(golden.read_text(encoding="utf-8")), blessed


@pytest.mark.parametrize("cassette", BUNDLED, ids=lambda p: str(p.relative_to(REPO / "cassettes")))
def test_bless_then_eval_passes_on_every_bundled_cassette(
    cassette: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bless_then_eval(cassette, tmp_path, capsys)


@pytest.mark.real_cassettes
@pytest.mark.parametrize("cassette", corpus_params(real_cassettes()), ids=lambda p: p.name if p else "absent")
def test_bless_then_eval_passes_on_every_real_recording(
    cassette: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not load_trajectory(cassette).runs:
        pytest.skip("no Messages API call in this recording: nothing to bless")
    bless_then_eval(cassette, tmp_path, capsys)


def test_a_tool_error_never_corrected_leaves_out_self_correction_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden, printed = bless_then_eval(REPO / "cassettes" / "guards" / "repeat.yaml", tmp_path, capsys)
    names = [check["check"] for check in golden["checks"]]
    assert "self_correction" not in names and "no_repeated_calls" not in names
    assert {"tool_ids_matched", "outcome", "budgets", "trajectory_match"} <= set(names)
    assert (
        'left out self_correction {"require_error": true}: it fails on this run (step 4: read_inbox was called '
        "again with the identical input {} right after it failed" in printed
    )
    assert "left out no_repeated_calls" in printed and "called 3 times in a row (limit 2)" in printed


# --- the runs the tests record against the simulator ---------------------------------------------------------

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _tools(behaviour: str) -> ToolRegistry:
    tools = ToolRegistry()
    calls = {"n": 0}

    @tools.tool(input_schema=WEATHER)
    def get_weather(city: str) -> dict[str, Any]:
        """Today's weather in a city."""
        calls["n"] += 1
        if behaviour == "always-fails" or (behaviour == "fails-once" and calls["n"] == 1):
            raise ValueError(f"no forecast for {city!r}")
        return {"city": city, "forecast": "sunny"}

    return tools


def _loop(model: str, behaviour: str = "ok", *, stream: bool = False, max_retries: int = 2) -> Callable[[str], Any]:
    def run(base_url: str) -> Any:
        client = anthropic.Anthropic(base_url=base_url, api_key="sim-key", max_retries=max_retries)
        return run_loop(
            client,
            system="Answer about the weather.",
            user="Weather in Paris?",
            tools=_tools(behaviour),
            model=model,
            stream=stream,
        )

    return run


def _unanswered_tool_use(base_url: str) -> Any:
    """A hand-written loop that drops the tool_result: the API refuses its next request with a 400."""
    client = anthropic.Anthropic(base_url=base_url, api_key="sim-key", max_retries=0)
    tools = [{"name": "get_weather", "description": "weather", "input_schema": WEATHER}]
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.messages.create(model="claude-sonnet-5", max_tokens=256, tools=tools, messages=messages)
    messages += [
        {"role": "assistant", "content": [block.model_dump() for block in first.content]},
        {"role": "user", "content": "And tomorrow?"},
    ]
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model="claude-sonnet-5", max_tokens=256, tools=tools, messages=messages)


SCRIPT_400 = """name: refused
turns:
  - tool_use: {name: get_weather, input: {city: Paris}}
  - error: {status: 400, type: invalid_request_error, message: prompt is too long}
"""

RECORDED: dict[str, tuple[dict[str, Any], Callable[[str], Any]]] = {
    "sim-auto": ({}, _loop("claude-sonnet-5")),
    "sim-auto-streamed": ({}, _loop("claude-sonnet-5", stream=True)),
    "until-corrected": ({"model": "sim-auto:until-corrected"}, _loop("claude-sonnet-5", "fails-once")),
    "tool-error-never-corrected": ({}, _loop("claude-sonnet-5", "always-fails")),
    "400-after-tool-use": ({"scripts": ["SCRIPT"]}, _loop("claude-sonnet-5")),
    "unanswered-tool-use-then-400": ({}, _unanswered_tool_use),
    "529-retried": ({"faults": {0: "529"}}, _loop("claude-sonnet-5")),
    "500s-exhausted": ({"faults": {0: "500", 1: "500", 2: "500"}}, _loop("claude-sonnet-5")),
    "sse-error": ({"faults": {1: "sse-error"}}, _loop("claude-sonnet-5", stream=True, max_retries=0)),
    "repeat": ({}, _loop("sim-repeat")),
    "max-tokens": ({}, _loop("sim-max-tokens")),
    "refusal": ({}, _loop("sim-refuse")),
    "pause-turn": ({}, _loop("sim-pause-turn")),
    "context-window": ({}, _loop("sim-context-window")),
}


@pytest.mark.parametrize("kind", list(RECORDED))
def test_bless_then_eval_passes_on_the_runs_tests_record(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options, run = RECORDED[kind]
    if options.get("scripts"):
        script = tmp_path / "script.yaml"
        script.write_text(SCRIPT_400, encoding="utf-8")
        options = {**options, "scripts": [str(script)]}
    cassette = tmp_path / "cassettes" / f"{kind}.yaml"
    with Simulator(**options) as sim, use_cassette(cassette, mode="once"):
        run(sim.base_url)
    assert cassette.exists()
    golden, printed = bless_then_eval(cassette, tmp_path, capsys)
    names = {check["check"] for check in golden["checks"]}
    if kind == "tool-error-never-corrected":
        assert "self_correction" not in names and "left out self_correction" in printed
    if kind == "unanswered-tool-use-then-400":
        assert "tool_ids_matched" not in names and "left out tool_ids_matched" in printed
    if kind == "until-corrected":
        assert "self_correction" in names
