"""What a new user meets first: a project of their own, start-up without the SDK, pytest beside
pytest-recording, replay without a key, misses on one screen, output made for CI logs.

Speed itself is measured by bench/startup.py; here, what makes it: which modules a command loads.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.cli import main as harness_main
from tests.conftest import REPO
from tests.user_projects import weather_project

pytest_plugins = ["pytester"]



def python(code: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def user_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project of the user's: pyproject.toml naming one scenario, the agent module beside it."""
    return weather_project(tmp_path / "mine", monkeypatch, "weather_agent")


# --- start-up: the commands that read files never load the SDK ----------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--version"],
        ["scan", "cassettes", "golden"],
        ["show", "cassettes/dayflow/brief.yaml"],
        ["eval", "evals/agents.yaml"],
        ["bless", "cassettes/dayflow/brief.yaml", "--golden", "golden/dayflow/brief.json"],
        ["compare", "cassettes/", "cassettes/", "--suite", "evals/agents.yaml"],
    ],
    ids=lambda argv: argv[0].lstrip("-"),
)
def test_commands_that_read_files_do_not_import_the_sdk(argv: list[str]) -> None:
    done = python(textwrap.dedent(f"""
        import contextlib, io, sys
        from harness.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                main({argv!r})
            except SystemExit:
                pass
        print(sorted(m for m in ("anthropic", "httpx2", "vcr") if m in sys.modules))
    """))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_plugin_loads_the_sdk_only_for_a_test_that_uses_a_cassette(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('''
import sys

def pytest_sessionfinish(session):
    with open("loaded.txt", "w") as out:
        out.write(" ".join(m for m in ("anthropic", "httpx2", "vcr", "harness.cassette.recorder") if m in sys.modules))
''')
    pytester.makepyfile(test_plain="def test_nothing_recorded():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-p", "no:recording", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "loaded.txt").read_text() == ""


def test_version_is_printed() -> None:
    done = python("from harness.cli import main; main(['--version'])")
    assert done.stdout.strip() == "harness (loop-harness) 0.1.0"


# --- pytest beside pytest-recording ------------------------------------------------------------------------


def test_pytest_starts_beside_pytest_recording_and_one_record_mode_drives_both(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pytest_recording")
    from harness.sim import Simulator

    pytester.makepyfile(test_both='''
import json
import os
import urllib.request

import pytest


@pytest.mark.vcr
def test_with_vcrpy():
    request = urllib.request.Request(os.environ["SIM_URL"] + "/v1/messages", method="POST",
                                     data=json.dumps({"model": "claude-sonnet-5", "max_tokens": 256,
                                                      "messages": [{"role": "user", "content": "vcr"}]}).encode(),
                                     headers={"content-type": "application/json", "x-api-key": "k",
                                              "anthropic-version": "2023-06-01"})
    with urllib.request.urlopen(request) as response:
        assert json.load(response)["stop_reason"] == "end_turn"


@pytest.mark.cassette
def test_with_loop_harness(anthropic_client):
    message = anthropic_client.messages.create(model="claude-sonnet-5", max_tokens=256,
                                               messages=[{"role": "user", "content": "ours"}])
    assert message.stop_reason == "end_turn"
''')
    with Simulator() as sim:
        monkeypatch.setenv("SIM_URL", sim.base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        recorded = pytester.runpytest_subprocess("--record-mode=once", "-p", "no:cacheprovider")
    recorded.assert_outcomes(passed=2)
    assert (pytester.path / "cassettes" / "test_both" / "test_with_loop_harness.yaml").is_file()
    assert (pytester.path / "cassettes" / "test_both" / "test_with_vcrpy.yaml").is_file()  # pytest-recording's
    # The simulator is gone: both replay, each from its own cassette, in the one mode given.
    replayed = pytester.runpytest_subprocess("--record-mode=none", "-p", "no:cacheprovider")
    replayed.assert_outcomes(passed=2)


# --- replay needs no key -----------------------------------------------------------------------------------


def test_the_readme_use_cassette_example_replays_without_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import anthropic

    from harness import use_cassette
    from harness.sim import Simulator

    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "brief.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        client = anthropic.Anthropic(api_key="sim-key", base_url=sim.base_url)
        client.messages.create(model="claude-sonnet-5", max_tokens=64, messages=[{"role": "user", "content": "Hi"}])
    with use_cassette(path, mode="none"):  # as the README writes it: the client made inside, no key anywhere
        client = anthropic.Anthropic()
        message = client.messages.create(model="claude-sonnet-5", max_tokens=64,
                                         messages=[{"role": "user", "content": "Hi"}])
    assert message.stop_reason == "end_turn"
    assert "ANTHROPIC_API_KEY" not in os.environ, "the placeholder is gone once the replay ends"


# --- a project of one's own ------------------------------------------------------------------------------


def test_record_and_chaos_work_on_the_projects_own_scenarios(user_project: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from harness.sim import Simulator

    with Simulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        assert harness_main(["record"]) == 0
    assert "recorded " + str(user_project / "cassettes" / "weather.yaml") + ": 2 steps, outcome ended" in (
        capsys.readouterr().out)
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    assert harness_main(["chaos", "cassettes/weather.yaml", "--at", "0", "--fault", "529"]) == 0
    assert "weather from cassettes/weather.yaml: 529 at request 0" in capsys.readouterr().out
    assert harness_main(["chaos", "cassettes/wheather.yaml", "--at", "0", "--fault", "529"]) == 2
    assert f"{user_project / 'cassettes' / 'wheather.yaml'}: no such cassette" in capsys.readouterr().err


def test_record_without_scenarios_names_the_config_and_never_writes_the_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'mine'\n")
    monkeypatch.chdir(tmp_path)
    assert harness_main(["record"]) == 2
    err = capsys.readouterr().err
    assert f"[tool.loop-harness] in {tmp_path.resolve() / 'pyproject.toml'}" in err and "--demo" in err
    assert harness_main(["record", "--seed", "3"]) == 2
    assert "--seed work on the bundled demo only: add --demo" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [tmp_path / "pyproject.toml"]


def test_a_bad_configuration_is_exit_2_naming_the_file_and_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.loop-harness]\ncasettes = "recordings"\n')
    monkeypatch.chdir(tmp_path)
    assert harness_main(["eval"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path.resolve() / 'pyproject.toml'}: [tool.loop-harness]: unknown key(s) casettes" in err


def test_eval_in_a_folder_without_git_or_pyproject_reads_paths_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same rule as bless and show: a golden outside any project belongs to the working directory's."""
    (tmp_path / "cassettes").mkdir()
    (tmp_path / "cassettes" / "brief.yaml").write_bytes((REPO / "cassettes" / "dayflow" / "brief.yaml").read_bytes())
    (tmp_path / "golden").mkdir()
    golden = {"name": "brief", "cassettes": ["cassettes/brief.yaml"], "checks": [{"check": "tool_ids_matched"}]}
    (tmp_path / "golden" / "brief.json").write_text(json.dumps(golden))
    monkeypatch.chdir(tmp_path)
    assert harness_main(["eval", "golden/brief.json"]) == 0
    assert harness_main(["eval"]) == 0, "with no evals/, the golden folder is the suite"
    assert "1 case: 1 passed" in capsys.readouterr().out
    assert harness_main(["eval", "golden/nope.json"]) == 2
    assert f"{tmp_path / 'golden' / 'nope.json'}: no such file" in capsys.readouterr().err


def test_the_plugins_default_cassette_folder_is_the_projects(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.loop-harness]\ncassettes = "recordings"\n')
    pytester.makepyfile(test_where='''
import pytest

@pytest.mark.cassette
def test_it(cassette):
    print("PATH", cassette.path)
''')
    result = pytester.runpytest("-s", "--record-mode=once", "-p", "no:recording")
    result.assert_outcomes(passed=1)
    assert f"PATH {pytester.path / 'recordings' / 'test_where' / 'test_it.yaml'}" in result.stdout.str()


# --- output for CI logs ------------------------------------------------------------------------------------


def test_eval_prints_one_line_per_case_and_expands_only_failures(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "80"}
    done = subprocess.run([sys.executable, "-m", "harness.cli", "eval", "evals/agents.yaml"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "suite agents (12 cases)"
    assert sum(line.startswith("  pass  ") for line in lines) == 12
    assert not any(set(line) & set("┏┃━│─") for line in lines), "no table to fold at 80 columns"
    assert lines[-2].startswith("12 cases: 12 passed, 0 failed, 0 errored")


def test_scan_of_a_folder_with_nothing_to_scan_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert harness_main(["scan", str(tmp_path)]) == 2
    assert f"nothing to scan (no cassette or golden file) in {tmp_path}" in capsys.readouterr().err


def test_written_files_follow_the_umask(tmp_path: Path) -> None:
    from harness.files import atomic_write_text

    previous = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "report.md", "# report\n")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "report.md").stat().st_mode) == 0o644


# --- misses on one screen; assert_trajectory on the run that just happened ----------------------------------

FAKE = (Path(__file__).parent / "fake_messages_api.py").read_text()
LOOP_TEST = '''
import pytest
from fake_messages_api import FakeMessagesAPI
from harness import assert_trajectory, run_loop

PROMPT = "You write the morning brief. " + "Read everything first, then write it in order of urgency. " * 3


@pytest.mark.cassette(path="cassettes/brief.yaml")
def test_brief(cassette):
    result = run_loop(FakeMessagesAPI().client(), system=PROMPT, user="Brief me", tools=None)
    assert_trajectory(cassette, {"outcome": {"stop_reason": "end_turn"}, "tool_ids_matched": {}})
'''


def test_assert_trajectory_checks_the_first_recording_from_memory(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(fake_messages_api=FAKE, test_loop=LOOP_TEST)
    pytester.runpytest("--record-mode=once", "-p", "no:recording").assert_outcomes(passed=1)
    assert (pytester.path / "cassettes" / "brief.yaml").is_file()


def test_a_changed_prompt_fails_in_one_screen_with_a_word_diff(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(fake_messages_api=FAKE, test_loop=LOOP_TEST)
    pytester.runpytest("--record-mode=once", "-p", "no:recording").assert_outcomes(passed=1)
    pytester.makepyfile(test_loop=LOOP_TEST.replace("in order of urgency", "in order of importance"))
    # In a process of its own: two in-process runs in one test share (and restore) sys.modules.
    result = pytester.runpytest_subprocess("-q", "-p", "no:recording", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    # run_loop catches the miss and ends its run on it; the test still fails with the miss, first and whole.
    assert f"\n{pytester.path / 'cassettes' / 'brief.yaml'}: request #1 (POST /v1/messages) has no recording" in output
    assert "FAILED test_loop.py::test_brief - Failed: " in output
    assert "[-urgency-]{+importance+}" in output
    assert "a request had no recording" not in output, "the miss is shown once, not again in a report section"
    assert "pytest --record-mode=rewrite" in output and "allow_repeats=True" not in output
    assert "(in test_loop.py:11)" in output
    assert "httpx2" not in output and "_base_client" not in output
    assert len(output.splitlines()) < 25


def test_a_word_diff_never_cuts_a_word() -> None:
    from harness.cassette.match import word_diff

    old = " ".join(f"word{n}" for n in range(200))
    new = old.replace("word100", "changed100")
    diff = word_diff(old, new)
    assert "[-word100-]{+changed100+}" in diff
    kept = diff.replace("…", " ").replace("[-word100-]{+changed100+}", " ").split()
    assert all(token in old.split() for token in kept)
    assert len(diff) < 200
