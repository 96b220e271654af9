"""Hostile files, through the commands a CI job runs on a pull request: refused, named, bounded.

A cassette, golden or suite in a pull request is untrusted input. Each hostile shape here must be
refused with exit 2 and an error naming the file (and the place, where there is one); no code may run;
memory and time must stay bounded. The dangerous ones (an infinite device, a pipe, an alias bomb) run
in a child process with an address-space limit and a timeout, so a regression fails the test instead
of taking the test run down with it.

"The project", for paths written inside goldens and suites, is the folder holding pyproject.toml (or
.git) above them. A path that reads as inside the project must stay inside it once symlinks are
followed; a path written as outside (../shared/...) is visible in review and is allowed.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path

import pytest

from harness.cassette.format import MAX_CASSETTE_BYTES, load_cassette
from harness.cassette.importer import import_file, load_any_cassette
from harness.chaos import time_limit
from harness.cli import main
from harness.errors import HarnessError
from harness.wire.bodies import MAX_DECOMPRESSED_BYTES

REPO = Path(__file__).resolve().parents[1]
CHILD_MEMORY = 2 * 1024**3  # address space for a child: far above what a refusal needs, far below a bomb
CHILD_SECONDS = 60
PEAK_RSS_MB = 600  # generous: the interpreter with every import is ~100 MB
TRACED_PEAK = 16 * 1024 * 1024  # Python allocations while refusing: a few MB at most

GOOD = """\
harness:
  format_version: 1
  source: simulator
interactions:
- request:
    method: POST
    path: /v1/messages
    body:
      model: claude-sonnet-5
      max_tokens: 5
      messages: [{role: user, content: hi}]
  response:
    status: 200
    body: {id: msg_1, type: message, role: assistant, content: [{type: text, text: hello}], stop_reason: end_turn,
           usage: {input_tokens: 1, output_tokens: 1}}
"""

# Runs real commands in one child, each with its own stderr; reports the child's peak memory after each.
_CHILD = """
import contextlib, io, json, resource, sys
from harness.cli import main
results = []
for args in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(err):
        try:
            code = main(args)
        except SystemExit as exit:
            code = exit.code
    results.append([code, err.getvalue(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024])
print(json.dumps(results))
"""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))


def harness_child(*commands: list[str], cwd: Path | None = None) -> list[tuple[int, str, float]]:
    """(exit code, output, peak MB so far) of each `harness ARGS` run in one bounded child; a hang or a
    crash of the child fails the test. The output is stderr and stdout together: `harness eval` reports a golden
    it cannot read as that case's error, on its line of the run, and goes on with the others."""
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(commands)], capture_output=True,
                              text=True, cwd=cwd, timeout=CHILD_SECONDS, preexec_fn=_limit_memory,
                              env={**os.environ, "COLUMNS": "200"})
    except subprocess.TimeoutExpired:
        pytest.fail(f"harness {commands} hung for {CHILD_SECONDS} s")
    assert done.returncode == 0, f"the child died (exit {done.returncode}):\n{done.stderr[-3000:]}"
    return [tuple(result) for result in json.loads(done.stdout.strip().splitlines()[-1])]


def assert_refused(code: int, err: str, peak: float, *fragments: str) -> None:
    assert code == 2, f"exit {code}, expected 2 (bad input):\n{err[-2000:]}"
    assert "Traceback" not in err, err[-2000:]
    for fragment in fragments:
        assert fragment in err, f"{fragment!r} not in:\n{err[-2000:]}"
    assert 0 < peak < PEAK_RSS_MB, f"peak memory {peak:.0f} MB"


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "cassettes").mkdir(parents=True)
    (root / "golden").mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    return root


def golden(root: Path, cassette: str, name: str = "case") -> Path:
    path = root / "golden" / f"{name}.json"
    path.write_text(json.dumps({"name": name, "cassettes": [cassette], "checks": [{"check": "outcome"}]}))
    return path


# ---------------------------------------------------------------------------------------------------
# YAML that would run code


PYTHON_TAGS = [
    "!!python/object/apply:os.system ['touch {marker}']",
    "!!python/object/apply:subprocess.check_call [[touch, '{marker}']]",
    "!!python/object/new:os.system ['touch {marker}']",
    "!!python/name:os.system",
    "!!python/module:os",
    "!!python/object:builtins.object {{}}",
]


@pytest.mark.parametrize("tag", PYTHON_TAGS, ids=lambda tag: tag.split()[0])
def test_python_tags_are_refused_by_every_reader_and_run_nothing(tag: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    value = tag.format(marker=marker)
    ours = tmp_path / "ours.yaml"
    ours.write_text(GOOD.replace("model: claude-sonnet-5", f"model: {value}"))
    vcrpy = tmp_path / "vcrpy.yaml"
    vcrpy.write_text(f"interactions:\n- request:\n    body: {value}\n    method: POST\n"
                     "    uri: https://api.anthropic.com/v1/messages\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"name: s\ndescription: {value}\ncases: []\n")
    for reader in (load_cassette, load_any_cassette, import_file):
        with pytest.raises(HarnessError) as raised:
            reader(ours)
        assert raised.value.file == str(ours) and raised.value.where and raised.value.where.startswith("line 9")
    with pytest.raises(HarnessError, match=r"refused: the tag 'tag:yaml\.org,2002:python/"):
        import_file(vcrpy)
    assert main(["show", str(ours)]) == 2
    assert main(["import", str(vcrpy), "--out", str(tmp_path / "out")]) == 2
    assert main(["eval", str(suite)]) == 2
    assert not marker.exists(), "a YAML tag ran code"
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


# ---------------------------------------------------------------------------------------------------
# Sizes: a gzip bomb, a 100 MB file, a 100 MB body


def write_gzip_bomb(path: Path, inflated: int) -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1024 * 1024)
    bomb = b"".join([*(packer.compress(chunk) for _ in range(inflated // len(chunk))), packer.flush()])
    # vcrpy writes gzip bodies as !!binary: a standard YAML tag the safe loader reads as bytes.
    import base64

    encoded = base64.b64encode(bomb).decode("ascii")
    path.write_text(
        "interactions:\n- request:\n    method: POST\n    uri: https://api.anthropic.com/v1/messages\n"
        "    body: '{\"model\": \"m\", \"max_tokens\": 1, \"messages\": []}'\n    headers: {}\n"
        "  response:\n    status: {code: 200, message: OK}\n    headers: {Content-Encoding: [gzip]}\n"
        f"    body: {{string: !!binary '{encoded}'}}\n"
    )


def test_a_gzip_bomb_in_a_foreign_body_is_refused_by_import_and_show(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    write_gzip_bomb(bomb, 16 * MAX_DECOMPRESSED_BYTES)  # 512 MB of zeros in well under 1 MB
    assert bomb.stat().st_size < 2 * 1024 * 1024
    for code, err, peak in harness_child(["import", str(bomb), "--out", str(tmp_path / "out")], ["show", str(bomb)]):
        assert_refused(code, err, peak, str(bomb), "$.interactions[0].response.body", "inflates past")
        # 300 MB of process (the SDK, detect-secrets and friends) plus one capped body; the bomb is 512 MB.
        assert peak < 300 + MAX_DECOMPRESSED_BYTES / 1024**2, "the bomb was inflated"


def test_a_100_mb_cassette_is_refused_before_it_is_read(tmp_path: Path) -> None:
    root = project(tmp_path)
    huge = root / "cassettes" / "huge.yaml"
    with huge.open("wb") as handle:  # sparse: 100 MB that cost no disk, and no time to write
        handle.truncate(100 * 1024 * 1024)
    golden(root, "cassettes/huge.yaml")
    tracemalloc.start()
    try:
        with pytest.raises(HarnessError, match=r"over the .*-byte limit"):
            load_any_cassette(huge)
        assert main(["show", str(huge)]) == 2
        assert main(["import", str(huge), "--out", str(tmp_path / "out")]) == 2
        assert main(["eval", str(root / "golden" / "case.json")]) == 2
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < TRACED_PEAK, f"peak {peak:,} bytes: the 100 MB file was read"


def test_a_100_mb_body_inside_a_gzip_cassette_is_refused(tmp_path: Path) -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = b"interactions:\n- request:\n    method: POST\n    uri: https://api.anthropic.com/v1/messages\n    body: '"
    chunk = b"A" * (1024 * 1024)
    parts = [packer.compress(head), *(packer.compress(chunk) for _ in range(100)), packer.compress(b"'\n")]
    source = tmp_path / "big.yaml.gz"
    source.write_bytes(b"".join([*parts, packer.flush()]))
    [(code, err, peak)] = harness_child(["import", str(source), "--out", str(tmp_path / "out")])
    assert_refused(code, err, peak, str(source), f"decompresses past the {MAX_CASSETTE_BYTES:,}-byte limit")


# ---------------------------------------------------------------------------------------------------
# Nesting and aliases


DEEP = 100_000


def test_deeply_nested_yaml_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(GOOD.replace("max_tokens: 5", "max_tokens: 5\n      deep: " + "[" * DEEP + "]" * DEEP))
    with time_limit(30), pytest.raises(HarnessError) as raised:
        load_cassette(path)
    assert raised.value.file == str(path) and "nest" in raised.value.reason


@pytest.mark.parametrize("where", ["whole-file", "response-body", "request-body"])
def test_deeply_nested_json_in_a_foreign_file_is_refused(where: str, tmp_path: Path) -> None:
    deep = "[" * DEEP + "]" * DEEP
    entry = {"request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages", "headers": [],
                         "postData": {"text": deep if where == "request-body" else "{}"}},
             "response": {"status": 200, "headers": [],
                          "content": {"text": deep if where == "response-body" else "{}"}}}
    text = json.dumps({"log": {"entries": [entry]}})
    if where == "whole-file":
        text = '{"log": {"entries": ' + "[" * DEEP + "]" * DEEP + "}}"
    source = tmp_path / "deep.har"
    source.write_text(text)
    for code, err, peak in harness_child(["show", str(source)], ["import", str(source), "--out", str(tmp_path / "o")]):
        assert_refused(code, err, peak, str(source), "nest")


def test_deeply_nested_golden_is_refused(tmp_path: Path) -> None:
    root = project(tmp_path)
    path = root / "golden" / "deep.json"
    path.write_text('{"name": "d", "cassettes": ["c.yaml"], "checks": [{"check": "outcome", "params": '
                    + "[" * DEEP + "]" * DEEP + "}]}")
    [(code, err, peak)] = harness_child(["eval", str(path)])
    assert_refused(code, err, peak, str(path), "nest")


def alias_bomb(levels: int = 9) -> str:
    """`a` is ten strings, `b` ten times `a`... nine levels: 10**9 strings from a few hundred bytes."""
    lines = ["      x0: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels):
        previous, name = chr(ord("a") + level - 1), chr(ord("a") + level)
        lines.append(f"      x{level}: &{name} [" + ", ".join([f"*{previous}"] * 10) + "]")
    return "\n".join(lines)


def test_a_yaml_alias_bomb_is_refused_without_expanding_it(tmp_path: Path) -> None:
    path = tmp_path / "laughs.yaml"
    path.write_text(GOOD.replace("      max_tokens: 5\n", "      max_tokens: 5\n" + alias_bomb() + "\n"))
    assert path.stat().st_size < 2000
    for code, err, peak in harness_child(["show", str(path)], ["import", str(path), "--out", str(tmp_path / "out")],
                                         ["chaos", "--demo", str(path), "--at", "0", "--fault", "529", "--scenario",
                                          "dayflow-brief"]):
        assert_refused(code, err, peak, str(path), "alias")


def test_a_replay_of_an_alias_bomb_is_refused_in_process(tmp_path: Path) -> None:
    from harness.cassette.recorder import use_cassette

    path = tmp_path / "laughs.yaml"
    path.write_text(GOOD.replace("      max_tokens: 5\n", "      max_tokens: 5\n" + alias_bomb(6) + "\n"))
    tracemalloc.start()
    try:
        with time_limit(30), pytest.raises(HarnessError, match="alias"), use_cassette(path, mode="none"):
            pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < TRACED_PEAK


def test_a_self_referencing_alias_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cycle.yaml"
    path.write_text(GOOD.replace("    body:\n      model:", "    body: &loop\n      again: *loop\n      model:"))
    with time_limit(30), pytest.raises(HarnessError, match="alias") as raised:
        load_cassette(path)
    assert raised.value.file == str(path)


def test_small_aliases_in_a_foreign_file_still_import(tmp_path: Path) -> None:
    """PyYAML's own dumper (vcrpy's) writes &id001 for an object it meets twice: that is not an attack."""
    source = tmp_path / "shared.yaml"
    source.write_text(
        "interactions:\n"
        "- request:\n    method: POST\n    uri: https://api.anthropic.com/v1/messages\n"
        "    body: '{\"model\": \"m\", \"max_tokens\": 1, \"messages\": []}'\n"
        "    headers: &id001 {anthropic-version: ['2023-06-01']}\n"
        "  response:\n    status: {code: 200, message: OK}\n    headers: {}\n    body: {string: '{}'}\n"
        "- request:\n    method: POST\n    uri: https://api.anthropic.com/v1/messages\n"
        "    body: '{\"model\": \"m\", \"max_tokens\": 2, \"messages\": []}'\n"
        "    headers: *id001\n"
        "  response:\n    status: {code: 200, message: OK}\n    headers: {}\n    body: {string: '{}'}\n"
    )
    cassette = import_file(source)
    assert [i["request"]["headers"] for i in cassette.interactions] == [{"anthropic-version": "2023-06-01"}] * 2


# ---------------------------------------------------------------------------------------------------
# Encodings


def test_invalid_utf8_is_refused_with_its_place_by_every_command(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    root = project(tmp_path)
    cassette = root / "cassettes" / "latin1.yaml"
    cassette.write_bytes(GOOD.encode().replace(b"content: hi", b"content: caf\xe9"))
    bad_golden = root / "golden" / "latin1.json"
    bad_golden.write_bytes(b'{"name": "caf\xe9", "cassettes": ["x.yaml"], "checks": [{"check": "outcome"}]}')
    suite = root / "suite.yaml"
    suite.write_bytes(b"name: s\ndescription: caf\xe9\ncases: []\n")
    for args, fragments in (
        (["show", str(cassette)], [str(cassette), "line 11", "not UTF-8"]),
        (["import", str(cassette), "--out", str(tmp_path / "out")], [str(cassette), "line 11", "not UTF-8"]),
        (["eval", str(bad_golden)], [str(bad_golden), "not UTF-8 text (byte 13)"]),
        (["eval", str(suite)], [str(suite), "not UTF-8 text (byte 24)"]),
    ):
        assert main(args) == 2, args
        out, err = capsys.readouterr()  # eval reports an unreadable golden on its case's line (stdout)
        assert all(fragment in out + err for fragment in fragments), (args, out, err)


# ---------------------------------------------------------------------------------------------------
# Paths: symlinks, devices, pipes


def test_a_cassette_that_is_a_symlink_to_an_endless_device_is_refused(tmp_path: Path) -> None:
    root = project(tmp_path)
    link = root / "cassettes" / "zero.yaml"
    link.symlink_to("/dev/zero")
    golden(root, "cassettes/zero.yaml")
    (show, imported, evaluated, scanned) = harness_child(
        ["show", str(link)], ["import", str(link), "--out", str(tmp_path / "out")],
        ["eval", str(root / "golden" / "case.json")], ["scan", str(link)], cwd=root)
    for code, err, peak in (show, imported):
        assert_refused(code, err, peak, str(link), "not a regular file")
    assert evaluated[0] == 2 and evaluated[2] < PEAK_RSS_MB, "eval: an error case, exit 2"
    assert scanned[0] == 2 and scanned[2] < PEAK_RSS_MB, "scan reads regular files only: nothing to scan"


def test_a_cassette_that_is_a_named_pipe_does_not_hang(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe.yaml"
    os.mkfifo(pipe)
    for code, err, peak in harness_child(["show", str(pipe)], ["import", str(pipe), "--out", str(tmp_path / "out")]):
        assert_refused(code, err, peak, str(pipe), "not a regular file")


def test_a_folder_given_as_a_cassette_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(tmp_path)]) == 2
    assert str(tmp_path) in capsys.readouterr().err


@pytest.mark.parametrize("via", ["file-link", "folder-link", "suite-entry"])
def test_a_path_inside_the_project_may_not_lead_outside_it_through_a_symlink(
    via: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "private.yaml").write_text(GOOD)
    if via == "folder-link":
        (root / "cassettes" / "shared").symlink_to(outside, target_is_directory=True)
        written = "cassettes/shared/private.yaml"
    else:
        (root / "cassettes" / "private.yaml").symlink_to(outside / "private.yaml")
        written = "cassettes/private.yaml"
    target = golden(root, written)
    if via == "suite-entry":
        (root / "cassettes" / "mine.yaml").write_text(GOOD)
        golden(root, "cassettes/mine.yaml")
        target = root / "suite.yaml"
        target.write_text(f"name: s\ncases:\n  - golden: case.json\n    cassette: {written}\n")
    assert main(["eval", str(target)]) == 2
    err = capsys.readouterr()
    assert "outside the project" in err.err + err.out


def test_a_path_written_as_outside_the_project_is_allowed(tmp_path: Path) -> None:
    """How the protocol suite reads ../shared/real-cassettes: visible in the golden, so not hidden."""
    root = project(tmp_path)
    outside = tmp_path / "shared"
    outside.mkdir()
    (outside / "real.yaml").write_text(GOOD)
    assert main(["eval", str(golden(root, "../shared/real.yaml"))]) == 0
