"""The bad-input corpus (tests/bad_input/): each file through the command that reads it.

Every entry of manifest.yaml must exit with its code (2: bad input) and print one line that names the
file, the place in it (a line or a JSON path) and the reason, in that order, as a person needs them:
`harness show: tests/bad_input/x.yaml: $.interactions[0].response.status: 'ok' is not of type 'integer'`.
Nothing may crash with a traceback, and nothing may be written for a file that was refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main

CORPUS = Path(__file__).resolve().parent / "bad_input"
MANIFEST: dict[str, dict[str, Any]] = yaml.safe_load((CORPUS / "manifest.yaml").read_text(encoding="utf-8"))


def test_every_corpus_file_has_a_manifest_entry_and_the_reverse() -> None:
    files = {path.name for path in CORPUS.iterdir() if path.is_file() and path.name != "manifest.yaml"}
    assert files == set(MANIFEST)
    for name, entry in MANIFEST.items():
        assert entry.keys() == {"command", "exit", "where", "says"}, name
        assert entry["command"] in ("show", "eval", "import"), name


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_the_command_names_the_file_the_place_and_the_reason(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = MANIFEST[name]
    monkeypatch.chdir(CORPUS.parent.parent)  # as CI runs it: from the repository root, with a relative path
    path = (CORPUS / name).relative_to(Path.cwd()).as_posix()
    out = tmp_path / "imported"
    args = [entry["command"], path] + (["--out", str(out)] if entry["command"] == "import" else [])
    assert main(args) == entry["exit"]
    captured = capsys.readouterr()
    lines = [line for line in (captured.err + captured.out).splitlines() if path in line]
    assert lines, f"no line names {path}:\n{captured.err}{captured.out}"
    line = lines[0]
    assert f"{path}: {entry['where']}: " in line, line  # the file, then the place, then the reason
    assert entry["says"] in line.split(f"{entry['where']}: ", 1)[1], line
    assert "Traceback" not in captured.err
    assert not out.exists() or not any(out.rglob("*")), "a refused file was written"
