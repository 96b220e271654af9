"""Every hint leads out (issue 41, item 5): the easy route (the simulator, no key) is named where a cassette is
missing, a mistyped name gets a did-you-mean, a newer cassette says to upgrade, a missing key fails at setup."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import CassetteError, HarnessError

pytest_plugins = ["pytester"]
# Each run in a process of its own: an in-process run drops the modules it first imported (pytester's
# sys.modules snapshot), and a later test of the same worker would then meet two copies of the harness's classes.


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


RUN_LOOP_TEST = """
import pytest
from harness import ToolRegistry, assert_trajectory, run_loop

tools = ToolRegistry()


@tools.tool(input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
def get_weather(city: str) -> dict:
    \"\"\"Today's weather in a city.\"\"\"
    return {"city": city, "forecast": "sunny"}


@pytest.mark.cassette
def test_weather(anthropic_client):
    trajectory = run_loop(anthropic_client, system="Use the tool.", user="Weather in Paris?", tools=tools,
                          model="claude-sonnet-5")
    assert_trajectory(trajectory, {"outcome": {"stop_reason": "end_turn"}, "tool_ids_matched": {}})
"""


def test_a_missing_cassette_names_the_simulator_route(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_one=RUN_LOOP_TEST)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(errors=1)
    assert "pytest --record-mode=once --simulator=auto" in result.stdout.str()


def test_a_mistyped_simulator_model_gets_a_did_you_mean(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_one=RUN_LOOP_TEST)
    result = pytester.runpytest_subprocess("--simulator=atuo")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stderr.str()
    assert "did you mean auto?" in text and "no such script file" not in text


def test_an_unknown_project_key_gets_a_did_you_mean(tmp_path: Path) -> None:
    from harness.project import load_project

    (tmp_path / "pyproject.toml").write_text('[tool.loop-harness]\ncasettes = "tapes"\n', encoding="utf-8")
    with pytest.raises(HarnessError) as raised:
        load_project(tmp_path)
    assert "casettes (did you mean cassettes?)" in str(raised.value)


def test_a_cassette_of_a_later_format_says_to_upgrade(tmp_path: Path) -> None:
    from harness.cassette.format import load_cassette

    path = tmp_path / "later.yaml"
    path.write_text("harness:\n  format_version: 2\ninteractions: []\n", encoding="utf-8")
    with pytest.raises(CassetteError) as raised:
        load_cassette(path)
    message = str(raised.value)
    assert "newer loop-harness" in message and "upgrade" in message and str(path) in message


def test_recording_with_no_key_fails_at_setup_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_one=RUN_LOOP_TEST)
    result = pytester.runpytest_subprocess("--record-mode=once")
    result.assert_outcomes(errors=1)  # at setup, before the loop ran: not a failed check inside the test
    text = result.stdout.str()
    line = next(line for line in result.outlines if "no API key to record" in line)
    assert "--simulator=auto" in line and "ANTHROPIC_API_KEY" in line
    assert "tool_ids_matched" not in text and "Traceback" not in text


def test_recording_against_the_simulator_needs_no_key(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_one=RUN_LOOP_TEST)
    pytester.runpytest_subprocess("--record-mode=once", "--simulator=auto").assert_outcomes(passed=1)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)  # and replays with neither
