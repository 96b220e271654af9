"""No silent miss (harness/cassette/verdict.py): a `use_cassette` block that ends after a miss the code swallowed
raises it at the exit; recorded interactions never played warn, or fail with on_unplayed="fail". The pytest plugin
judges its own tests once, by the marker's on_miss / on_unplayed, and the cassette says nothing more."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import anthropic
import pytest

from harness import use_cassette
from harness.cassette.mismatch import CassetteMismatch
from harness.cassette.verdict import MissWarning, UnplayedInteractions, UnplayedWarning
from harness.errors import CassetteError
from harness.sim import Simulator

pytest_plugins = ["pytester"]

MODEL = "claude-sonnet-5"


def ask(url: str, text: str) -> Any:
    client = anthropic.Anthropic(base_url=url, api_key="sim-key-not-a-secret", max_retries=0)
    return client.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": text}])


def framework_run(url: str, text: str) -> str:
    """What agno does: the error of the model call becomes the run's content, and the script goes on."""
    try:
        return str(ask(url, text).content[0].text)
    except anthropic.AnthropicError as err:
        return str(err)


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "two.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        ask(sim.base_url, "first")
        ask(sim.base_url, "second")
    return path


def test_a_swallowed_miss_raises_at_the_blocks_exit_with_its_diff(recorded: Path) -> None:
    with pytest.raises(CassetteMismatch) as raised, use_cassette(recorded, mode="none") as replay:
        framework_run("http://127.0.0.1:9", "a changed prompt")  # swallowed: the block ends normally
    assert raised.value is replay.misses[0]
    assert "request #1 (POST /v1/messages) has no recording" in str(raised.value)
    assert "a changed prompt" in str(raised.value)


def test_on_miss_warn_warns_and_ignore_says_nothing(recorded: Path) -> None:
    with pytest.warns(MissWarning, match="has no recording"), use_cassette(recorded, mode="none", on_miss="warn"):
        framework_run("http://127.0.0.1:9", "a changed prompt")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with use_cassette(recorded, mode="none", on_miss="ignore") as replay:
            framework_run("http://127.0.0.1:9", "a changed prompt")
    assert len(replay.misses) == 1


def test_an_error_of_the_blocks_own_is_kept_with_the_miss_as_a_note(recorded: Path) -> None:
    with pytest.raises(AssertionError) as raised, use_cassette(recorded, mode="none"):
        content = framework_run("http://127.0.0.1:9", "a changed prompt")
        assert content.startswith("Hello"), "the agent's answer"
    notes = "\n".join(getattr(raised.value, "__notes__", []))
    assert "before this error a request had no recording" in notes and "a changed prompt" in notes


def test_the_miss_itself_raised_through_the_block_is_not_raised_twice(recorded: Path) -> None:
    with pytest.raises(CassetteMismatch) as raised, use_cassette(recorded, mode="none"):
        ask("http://127.0.0.1:9", "a changed prompt")
    assert not getattr(raised.value, "__notes__", None)


def test_unplayed_recordings_warn_by_default(recorded: Path) -> None:
    with pytest.warns(UnplayedWarning, match=r"1 recorded interaction was never played \(#2\)"), \
            use_cassette(recorded, mode="none"):
        ask("http://127.0.0.1:9", "first")


def test_on_unplayed_fail_fails_and_ignore_says_nothing(recorded: Path) -> None:
    with pytest.raises(UnplayedInteractions, match=r"1 recorded interaction was never played \(#2\)"), \
            use_cassette(recorded, mode="none", on_unplayed="fail"):
        ask("http://127.0.0.1:9", "first")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with use_cassette(recorded, mode="none", on_unplayed="ignore"):
            ask("http://127.0.0.1:9", "first")
        with use_cassette(recorded, mode="none", on_unplayed="fail"):  # all played: nothing to say
            ask("http://127.0.0.1:9", "first")
            ask("http://127.0.0.1:9", "second")


def test_a_recording_run_says_nothing_of_unplayed(recorded: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Simulator() as sim, use_cassette(recorded, mode="new_episodes", on_unplayed="fail"):
            ask(sim.base_url, "first")


def test_an_unknown_value_fails_at_the_call_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match=r"unknown on_unplayed 'fial'; use one of fail, warn, ignore"):
        use_cassette(tmp_path / "x.yaml", on_unplayed="fial")  # type: ignore[arg-type]


def test_the_decorator_judges_each_call(recorded: Path) -> None:
    @use_cassette(recorded, mode="none", on_unplayed="fail")
    def run() -> None:
        ask("http://127.0.0.1:9", "first")

    with pytest.raises(UnplayedInteractions):
        run()


# -- the pytest plugin: judged once, by the marker ---------------------------------------------------------------
SWALLOWING_TEST = """
import anthropic
import pytest

def run(text):
    client = anthropic.Anthropic(api_key="k" * 40, base_url="http://127.0.0.1:9", max_retries=0)
    try:
        return client.messages.create(model="claude-sonnet-5", max_tokens=64,
                                      messages=[{"role": "user", "content": text}]).content[0].text
    except anthropic.AnthropicError as err:
        return str(err)

@pytest.mark.cassette(path="two.yaml"MARKER)
def test_it():
    run(TEXT)
"""


@pytest.mark.parametrize(("marker", "text", "outcome", "said"), [
    ("", "'a changed prompt'", {"failed": 1}, "has no recording"),
    (", on_miss='warn'", "'a changed prompt'", {"passed": 1, "warnings": 1}, "MissWarning"),
    (", on_miss='ignore'", "'a changed prompt'", {"passed": 1}, None),
    ("", "'first'", {"failed": 1}, "1 recorded interaction was never played (#2)"),
    (", on_unplayed='warn'", "'first'", {"passed": 1, "warnings": 1}, "UnplayedWarning"),
    (", on_unplayed='ignore'", "'first'", {"passed": 1}, None),
])
def test_the_plugin_judges_once_by_the_markers_options(
    pytester: pytest.Pytester, recorded: Path, marker: str, text: str, outcome: dict[str, int], said: str | None
) -> None:
    (pytester.path / "two.yaml").write_bytes(recorded.read_bytes())
    pytester.makepyfile(test_swallow=SWALLOWING_TEST.replace("MARKER", marker).replace("TEXT", text))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(**outcome)  # errors=0: the cassette's exit says nothing more at teardown
    output = result.stdout.str()
    if said is not None:
        assert said in output
        assert output.count(said) <= 2 or said.endswith("Warning")  # the failure and its summary line, no more
