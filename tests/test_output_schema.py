"""output_schema: a `messages.parse(output_format=Model)` run recorded against the simulator, blessed and evaluated:
bless proposes the schema the request sent, the check passes on the run, and fails once the schema changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import pytest
from pydantic import BaseModel

from harness import assert_trajectory, load_trajectory, use_cassette
from harness.cli import main
from harness.evals.golden import GoldenError, parse_golden
from harness.sim import Simulator

MODEL = "claude-sonnet-4-6"
ASK: list[Any] = [{"role": "user", "content": "What is the weather in Paris this week?"}]


class Forecast(BaseModel):
    city: str
    days: list[str]
    high_c: float


@pytest.fixture
def parsed_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'structured'\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    cassette = tmp_path / "cassettes" / "forecast.yaml"
    with Simulator() as sim, use_cassette(cassette, mode="once"):
        client = anthropic.Anthropic(api_key="sim", base_url=sim.base_url, max_retries=0)
        parsed = client.messages.parse(model=MODEL, max_tokens=400, messages=ASK, output_format=Forecast)
    assert isinstance(parsed.parsed_output, Forecast)
    return cassette


def test_bless_proposes_the_requests_schema_and_eval_passes_then_fails_on_a_changed_schema(
        parsed_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    golden = parsed_run.parent.parent / "golden" / "forecast.json"
    assert main(["bless", str(parsed_run), "--golden", str(golden), "--yes"]) == 0
    data = json.loads(golden.read_text(encoding="utf-8"))
    (entry,) = [check for check in data["checks"] if check["check"] == "output_schema"]
    assert set(entry["params"]["schema"]["required"]) == {"city", "days", "high_c"}
    assert main(["eval", str(golden)]) == 0

    entry["params"]["schema"]["properties"]["low_c"] = {"type": "number"}  # the schema grew a required field
    entry["params"]["schema"]["required"].append("low_c")
    golden.write_text(json.dumps(data), encoding="utf-8")
    capsys.readouterr()
    assert main(["eval", str(golden)]) == 1
    assert "'low_c' is a required property" in capsys.readouterr().out


def test_a_pydantic_model_by_module_name_validates_the_answer(parsed_run: Path) -> None:
    root = parsed_run.parent.parent
    (root / "forecast_models.py").write_text(
        "from pydantic import BaseModel\n\n"
        "class Forecast(BaseModel):\n    city: str\n    days: list[str]\n    high_c: float\n\n"
        "class Renamed(BaseModel):\n    town: str\n", encoding="utf-8")
    trajectory = load_trajectory(parsed_run)
    (result,) = assert_trajectory(trajectory, {"output_schema": {"model": "forecast_models:Forecast"}})
    assert result.passed, result.reason
    with pytest.raises(AssertionError, match="town: Field required"):
        assert_trajectory(trajectory, {"output_schema": {"model": "forecast_models:Renamed"}})


def test_an_answer_that_is_not_json_fails_naming_the_step(tmp_path: Path) -> None:
    from harness.checks.structured import output_schema
    from harness.run import Exchange
    from harness.trajectory import Trajectory

    trajectory = Trajectory.from_exchanges([Exchange(
        request={"model": MODEL, "max_tokens": 10, "messages": ASK},
        message={"id": "msg_1", "type": "message", "role": "assistant", "model": MODEL, "stop_reason": "end_turn",
                 "content": [{"type": "text", "text": "Sunny, 21 C"}],
                 "usage": {"input_tokens": 1, "output_tokens": 1}},
    )])
    result = output_schema(trajectory, {"schema": {"type": "object"}})
    assert not result.passed and result.reason.startswith("step 1: the final answer is not JSON")


def test_a_golden_with_a_schema_that_is_not_one_is_refused_naming_the_place() -> None:
    golden = {"name": "g", "cassettes": ["c.yaml"], "checks": [{"check": "output_schema",
                                                              "params": {"schema": {"type": "nonsense"}}}]}
    with pytest.raises(GoldenError, match=r"\$\.checks\[0\]\.params\.schema"):
        parse_golden(golden, path=Path("golden/g.json"))
    golden["checks"] = [{"check": "output_schema", "params": {}}]
    with pytest.raises(GoldenError):
        parse_golden(golden, path=Path("golden/g.json"))
