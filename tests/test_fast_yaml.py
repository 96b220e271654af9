"""The fast reader of our own YAML dialect gives what the safe loader gives, or steps aside.

Compared with the safe loader on every bundled cassette, on every real recording as our dumper writes it,
and on fuzzed ones (bench/fuzz.py's mutator, both its data mutations dumped by our dumper and its text
mutations); hand-edited files (comments, anchors, a hex number, a date) go to the safe loader, and load_cassette
really takes the fast path for our files.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.fuzz import REPO, _mutate_data, cases
from harness.cassette import fast_yaml
from harness.cassette import format as cassette_format
from harness.cassette.format import CassetteFile, dump_cassette, load_cassette
from harness.cassette.parse_cache import CACHE_ENV
from harness.errors import CassetteError
from tests.conftest import REAL_CASSETTES

SAFE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (1 == 1.0 == True would hide a wrong scalar)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def _agrees(text: str) -> bool:
    """True if the fast reader read `text` (and agreed), False if it stepped aside; fails on disagreement."""
    try:
        fast = fast_yaml.load(text)
    except fast_yaml.NotOurDialect:
        return False
    expected = yaml.load(text, Loader=SAFE)  # whatever the fast reader accepts, the safe loader reads too
    assert _same(fast, expected), text[:2000]
    return True


def _ours(data: Any) -> str:
    return dump_cassette(CassetteFile(meta=data.get("harness", {}), interactions=data.get("interactions", [])))


def _bundled() -> list[Path]:
    return sorted(p for folder in ("cassettes", "golden", "evals", "tests") for p in (REPO / folder).glob("**/*.yaml"))


def test_every_bundled_cassette_reads_as_the_safe_loader_reads_it() -> None:
    read = 0
    for path in _bundled():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a fixture of a file that is not UTF-8: load_cassette refuses it before any YAML
        read += _agrees(text)
        if path.parts[-3] == "cassettes":  # written by our dumper: the fast reader must take it
            assert _agrees(text), path
    assert read >= 15


def test_every_real_recording_as_our_dumper_writes_it_takes_the_fast_path() -> None:
    if not REAL_CASSETTES.is_dir():
        pytest.skip("the real-cassette corpus is not beside this clone")
    fast = 0
    for path in sorted(REAL_CASSETTES.glob("**/*.yaml")):
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE)
        except (yaml.YAMLError, UnicodeDecodeError):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
            continue
        text = _ours(data)
        agreed = _agrees(text)
        binary = "!!binary" in text  # bytes: not JSON, so never in one of our cassettes
        assert agreed or binary, path
        fast += agreed
    assert fast >= 30


def test_fuzzed_cassettes_read_as_the_safe_loader_reads_them() -> None:
    accepted = 0
    for case in itertools.islice(cases(200, seed=5, include_real=False), 200):
        accepted += _agrees(case.text)
    assert accepted > 0


def test_mutated_data_written_by_our_dumper_takes_the_fast_path() -> None:
    import random

    sources = sorted((REPO / "cassettes").glob("**/*.yaml"))
    taken = 0
    for n in range(300):
        rng = random.Random(n)
        data = _mutate_data(yaml.load(sources[n % len(sources)].read_text(encoding="utf-8"), Loader=SAFE), rng)
        if not isinstance(data, dict):
            continue
        try:
            text = _ours(data)
        except (yaml.YAMLError, RecursionError, TypeError, AttributeError):
            continue
        taken += _agrees(text)
    assert taken > 150


@pytest.mark.parametrize(
    "value",
    [
        "multi\nline\n",
        "  leading spaces\nand more",
        "\nstarts with a break",
        "trailing breaks\n\n\n",
        "tab\there",
        "it's 'quoted'",
        'a "double" one',
        "back\\slash",
        "#hash",
        "- dash",
        "key: value",
        "a #b",
        "yes",
        "no",
        "null",
        "~",
        "true",
        "1",
        "-3",
        "1.5",
        "0x1f",
        "1_000",
        "2026-09-07",
        "12:30",
        "<<",
        "=",
        "é ünïcode ✓",
        "\u2028sep",
        "\x85nel",
        "\ufeffbom",
        "\x07bell",
        "x" * 300,
        "word " * 60,
        "'" * 5,
        "''\n''",
        " ",
        "",
        "@at",
        "`tick",
        "%pct",
        "!bang",
        "&amp",
        "*star",
        "[x]",
        "{x}",
        ":colon",
        "?q",
        "-",
        "--- doc",
        "... end",
        "a\r\nb",
        "end with space ",
        "x\n  indented\n",
        "a" * 100 + "\n" + "b" * 100,
    ],
)
def test_each_kind_of_string_reads_back_exactly(value: str) -> None:
    data = {
        "harness": {"format_version": 1},
        "interactions": [
            {"request": {"body": {"text": value, value or "empty": [value, {"k": value}], "n": [1, 2.5, None, True]}}}
        ],
    }
    text = _ours(data)
    if _agrees(text):
        assert fast_yaml.load(text) == data


@pytest.mark.parametrize(
    "text",
    [
        "harness: {}  # a comment\ninteractions: []\n",
        "harness: &a {}\ninteractions: *a\n",
        "harness: {}\ninteractions: []\nflag: 0x1f\n",
        "harness: {}\ninteractions: []\nwhen: 2026-09-07\n",
        "harness: {a: 1}\ninteractions: []\n",
        "harness:\n  text: >\n    folded\ninteractions: []\n",
        "harness: !!str x\ninteractions: []\n",
        "---\nharness: {}\ninteractions: []\n",
        "harness:\n\ta: 1\n",
        "harness: {}\ninteractions: []",
        "1: one\n",
    ],
)
def test_what_our_dumper_never_writes_goes_to_the_safe_loader(text: str) -> None:
    with pytest.raises(fast_yaml.NotOurDialect):
        fast_yaml.load(text)


def test_load_cassette_reads_ours_without_the_safe_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, "")

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("the safe loader was asked")

    monkeypatch.setattr(cassette_format, "parse_yaml", refuse)
    loaded = load_cassette(REPO / "cassettes" / "dayflow" / "brief_stream.yaml")
    assert loaded.interactions


def test_a_hand_edited_cassette_still_loads_and_still_fails_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, "")
    source = REPO / "cassettes" / "dayflow" / "brief.yaml"
    edited = tmp_path / "edited.yaml"
    edited.write_text("# reviewed by hand\n" + source.read_text(encoding="utf-8"), encoding="utf-8")
    assert load_cassette(edited).interactions == load_cassette(source).interactions
    edited.write_text(
        source.read_text(encoding="utf-8").replace("format_version: 1", "format_version: 1\n  when: 2026-09-07"),
        encoding="utf-8",
    )
    with pytest.raises(CassetteError, match="unquoted date"):
        load_cassette(edited)
