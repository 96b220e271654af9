"""One screen everywhere (issue 26): a misspelt flag gets its command's usage and a suggestion; a corrupt file
given to scan exits non-zero naming it; NO_COLOR and FORCE_COLOR as no-color.org and force-color.org say;
bless keeps its [y/N] and Ctrl-D is a clean "not blessed"; a missing cassette names the golden and suite that
name it; a tool removed is diffed by its name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import use_cassette
from harness.cassette.recorder import CassetteMismatch
from harness.cli import main as harness_main
from tests.conftest import REPO
from tests.fake_messages_api import FakeMessagesAPI

HARNESS = str(Path(sys.executable).with_name("harness"))
SHOWN = str(REPO / "cassettes" / "guards" / "max_tokens.yaml")


# --- usage ---------------------------------------------------------------------------------------------------------


def test_a_misspelt_flag_prints_that_commands_usage_and_the_nearest_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        harness_main(["eval", "--jsno", "out.json"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: harness eval ")  # the subcommand's usage, not `harness [-h] [--version] COMMAND`
    assert "harness eval: error: unrecognized arguments: --jsno (did you mean --json?)" in err


def test_a_misspelt_command_is_named_with_the_nearest_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        harness_main(["evl", "golden/"])
    assert exited.value.code == 2
    assert "unknown command 'evl' (did you mean eval?)" in capsys.readouterr().err


# --- scan ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "place"),
    [
        ("broken.yaml", "interactions:\n  - request: {method: POST\n", "line 3, column 1: not valid YAML"),
        ("broken.json", '{"name": "g",\n  "checks": [\n', "line 3, column 1: not valid JSON"),
    ],
)
def test_scan_of_a_corrupt_file_exits_non_zero_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, place: str
) -> None:
    corrupt = tmp_path / name
    corrupt.write_text(text, encoding="utf-8")
    (tmp_path / "fine.yaml").write_text("interactions: []\n", encoding="utf-8")
    assert harness_main(["scan", str(tmp_path)]) == 2
    printed = capsys.readouterr()
    assert f"harness scan: {corrupt}: {place}" in printed.err
    assert "1 file could not be parsed" in printed.out
    corrupt.unlink()
    assert harness_main(["scan", str(tmp_path)]) == 0


# --- colour --------------------------------------------------------------------------------------------------------


def _show(env: dict[str, str], *, terminal: bool) -> str:
    """`harness show` as a person runs it: on a pseudo-terminal, or into a pipe."""
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE")}
    environ.update(TERM="xterm-256color", COLUMNS="120", **env)
    if not terminal:
        return subprocess.run([HARNESS, "show", SHOWN], env=environ, capture_output=True, text=True, check=True).stdout
    import pty

    main, child = pty.openpty()
    with subprocess.Popen([HARNESS, "show", SHOWN], env=environ, stdout=child, stderr=child) as process:
        os.close(child)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait()
    os.close(main)
    return b"".join(chunks).decode("utf-8", "replace")


COLOUR = "\x1b[1;36m"  # rich's bold cyan of a number: a colour, not only bold


def test_no_color_means_no_ansi_escape_at_all_on_a_terminal() -> None:
    assert COLOUR in _show({}, terminal=True)  # the terminal is coloured by default (so the check below can fail)
    plain = _show({"NO_COLOR": "1"}, terminal=True)
    assert "max_tokens" in plain and "\x1b[" not in plain
    assert COLOUR in _show({"NO_COLOR": ""}, terminal=True)  # set but empty: no effect, as no-color.org says


def test_force_color_colours_a_pipe_even_beside_no_color() -> None:
    assert "\x1b[" not in _show({}, terminal=False)
    assert COLOUR in _show({"FORCE_COLOR": "1"}, terminal=False)
    assert COLOUR in _show({"FORCE_COLOR": "1", "NO_COLOR": "1"}, terminal=False)  # force-color.org's order


# --- bless's prompt ------------------------------------------------------------------------------------------------


def test_bless_asks_with_its_y_n_and_ctrl_d_is_not_blessed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    golden = tmp_path / "golden" / "g.json"
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)

    def end_of_input(*_: object) -> str:
        raise EOFError

    monkeypatch.setattr("builtins.input", end_of_input)
    assert harness_main(["bless", SHOWN, "--golden", str(golden)]) == 1
    out = capsys.readouterr().out
    assert f"Write {golden}? [y/N]" in out.replace("\n", "")
    assert "not blessed" in out and not golden.exists()


# --- eval: who names a missing cassette --------------------------------------------------------------------------


def test_a_missing_cassette_names_the_golden_and_suite_that_name_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "golden").mkdir()
    (tmp_path / "golden" / "gone.json").write_text(
        json.dumps(
            {
                "name": "gone",
                "cassettes": [SHOWN, "cassettes/nowhere.yaml"],
                "checks": [{"check": "budgets", "params": {"max_steps": 9}}],
            }
        ),
        encoding="utf-8",
    )
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "nightly.yaml").write_text("name: nightly\ncases:\n  - golden: gone.json\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert harness_main(["eval"]) == 2
    out = capsys.readouterr().out
    assert (
        f"{tmp_path / 'cassettes' / 'nowhere.yaml'}: no such cassette; golden golden/gone.json names it at "
        "$.cassettes[1], case gone/cassettes/nowhere.yaml of suite nightly"
    ) in out


# --- a tool removed, diffed by its name -------------------------------------------------------------------------


def _tool(name: str) -> dict[str, object]:
    return {"name": name, "description": f"The {name} tool.", "input_schema": {"type": "object", "properties": {}}}


def test_a_removed_tool_is_diffed_by_its_name_not_its_position(tmp_path: Path) -> None:
    path = tmp_path / "tools.yaml"
    recorded = [_tool("get_weather"), _tool("get_local_time"), _tool("convert_currency")]
    ask = {"model": "claude-sonnet-5", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]}
    with use_cassette(path, mode="once"):
        FakeMessagesAPI().client().messages.create(tools=recorded, **ask)
    with use_cassette(path, mode="none", on_miss="ignore"), pytest.raises(CassetteMismatch) as caught:
        FakeMessagesAPI().client().messages.create(tools=[recorded[0], recorded[2]], **ask)
    miss = caught.value
    assert "Kind of change: tool definitions (get_local_time: removed)" in str(miss)
    assert [line.split(" (was ")[0] for line in miss.differences] == ["tools.get_local_time removed"]
    assert not any("changed from 'get_local_time' to 'convert_currency'" in line for line in miss.differences)
