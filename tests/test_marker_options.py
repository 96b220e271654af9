"""The marker is `use_cassette`: exactly its keywords plus the marker's own, each passed on; a misspelt one fails
the test at setup naming it and the valid names; a corrupt cassette is one screen, not a traceback (issue 26)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from harness.cassette.recorder import use_cassette
from harness.pytest_plugin.marker import MARKER_OWN, keywords_of

pytest_plugins = ["pytester"]

FAKE = (Path(__file__).parent / "fake_messages_api.py").read_text()
SECRET = "custom-credential-9f8e7d6c5b4a"

ASK = """
import pytest
from fake_messages_api import FakeMessagesAPI

def ask(client, text):
    return client.messages.create(model="claude-sonnet-5", max_tokens=32,
                                  messages=[{"role": "user", "content": text}]).content[0].text
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(fake_messages_api=FAKE)
    return pytester


def test_the_marker_takes_use_cassettes_keywords_read_from_its_signature() -> None:
    signature = [name for name in inspect.signature(use_cassette).parameters]
    assert keywords_of(use_cassette) == signature  # every one, none hand-kept
    assert {"secret_headers", "lock_timeout", "tracer_provider", "normalize"} <= set(signature)
    assert set(MARKER_OWN["cassette"]) == {"allow_unused", "faults"}


def test_secret_headers_on_the_marker_redacts_the_header(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_secret=ASK
        + f'''
@pytest.mark.cassette(secret_headers=["x-custom-key"])
def test_it():
    # The agent also echoes its credential into the conversation: the header's value is a secret wherever it is.
    ask(FakeMessagesAPI().client(default_headers={{"x-custom-key": "{SECRET}"}}), "hello, I use {SECRET}")
'''
    )
    project.runpytest("--record-mode=once", "test_secret.py").assert_outcomes(passed=1)
    written = (project.path / "cassettes" / "test_secret" / "test_it.yaml").read_text(encoding="utf-8")
    assert "hello" in written  # the run was recorded...
    assert SECRET not in written  # ...and the header's value is not on disk


def test_each_use_cassette_option_reaches_use_cassette(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_note=ASK
        + """
@pytest.mark.cassette(note="kept by the marker", rewrite_request_ids=True, lock_timeout=5)
def test_it():
    ask(FakeMessagesAPI().client(), "hello")
"""
    )
    project.runpytest("--record-mode=once", "test_note.py").assert_outcomes(passed=1)
    written = (project.path / "cassettes" / "test_note" / "test_it.yaml").read_text(encoding="utf-8")
    assert "kept by the marker" in written
    assert "req_redacted_" in written and "req_live_1" not in written  # rewrite_request_ids reached it too


def test_a_misspelt_option_fails_at_setup_naming_it_and_the_valid_names(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_typo=ASK
        + """
@pytest.mark.cassette(alow_unused=True)
def test_it():
    pass
"""
    )
    result = project.runpytest("test_typo.py")
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert "unknown option 'alow_unused' (did you mean 'allow_unused'?)" in output
    for name in [*keywords_of(use_cassette), *MARKER_OWN["cassette"]]:
        assert name in output
    assert "Traceback" not in output and "harness/pytest_plugin/" not in output  # one screen, not our frames


def test_a_misspelt_harness_config_key_fails_too(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_config=ASK
        + """
@pytest.fixture(scope="module")
def harness_config():
    return {"ignore_feilds": ["metadata.user_id"]}

@pytest.mark.cassette
def test_it():
    pass
"""
    )
    result = project.runpytest("test_config.py")
    result.assert_outcomes(errors=1)
    assert "harness_config: unknown option 'ignore_feilds' (did you mean 'ignore_fields'?)" in result.stdout.str()


def test_a_corrupt_cassette_is_one_screen_naming_the_file_and_place(project: pytest.Pytester) -> None:
    bad = project.path / "cassettes" / "bad.yaml"
    bad.parent.mkdir()
    bad.write_text("harness:\n  version: 1\ninteractions:\n  - request: {method: POST\n", encoding="utf-8")
    project.makepyfile(
        test_corrupt=ASK
        + """
@pytest.mark.cassette(path="cassettes/bad.yaml")
def test_it(anthropic_client):
    ask(anthropic_client, "hello")
"""
    )
    result = project.runpytest("test_corrupt.py")
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert f"{bad}: line " in output and "record it afresh: pytest --record-mode=rewrite" in output
    assert "Traceback" not in output and "site-packages" not in output and "harness/cassette" not in output
    assert "During handling" not in output
    error_section = output.split("ERROR at setup", 1)[1].split("short test summary", 1)[0]
    assert len(error_section.strip().splitlines()) <= 6, error_section


def test_a_corrupt_cassette_the_test_opens_itself_is_one_screen_too(project: pytest.Pytester) -> None:
    bad = project.path / "cassettes" / "bad.yaml"
    bad.parent.mkdir()
    bad.write_text("harness:\n  version: 1\ninteractions:\n  - request: {method: POST\n", encoding="utf-8")
    project.makepyfile(
        test_own=ASK
        + """
from harness import use_cassette

def test_it():
    with use_cassette("cassettes/bad.yaml"):
        ask(FakeMessagesAPI().client(), "hello")
"""
    )
    result = project.runpytest("test_own.py")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "cassettes/bad.yaml: line " in output and "not valid YAML" in output
    assert "record it afresh: pytest --record-mode=rewrite" in output and "(in test_own.py:" in output
    assert "Traceback" not in output and "harness/cassette" not in output


def test_an_agent_sdk_test_takes_agent_sdk_sessions_keywords(project: pytest.Pytester) -> None:
    from harness.agent_sdk import AgentSdkSession

    project.makepyfile(
        test_sdk="""
import pytest

@pytest.mark.cassette(upstrem="simulator")
def test_it(agent_sdk):
    pass
"""
    )
    result = project.runpytest("test_sdk.py")
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert "unknown option 'upstrem' (did you mean 'upstream'?)" in output
    assert f"Valid: {', '.join([*keywords_of(AgentSdkSession), *MARKER_OWN['agent_sdk']])}." in output
