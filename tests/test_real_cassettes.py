"""The 55 real recordings in ../shared/real-cassettes: every one imports, validates and replays through the
real anthropic SDK to the message (or the error) that was recorded, streamed or not.

The expected counts are read from SOURCES.md and QUIRKS.md beside the corpus, not typed in here.
"""

from __future__ import annotations

import argparse
import base64
import inspect
import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from harness.cassette.format import CassetteFile, load_cassette, save_cassette
from harness.cassette.headers import REQUEST_HEADERS_KEPT, RESPONSE_HEADER_PREFIXES_KEPT, RESPONSE_HEADERS_KEPT
from harness.cassette.importer import (
    HAR,
    PYDANTIC_AI_YAML,
    SKIPPED_NOTE,
    VCRPY_YAML,
    detect_format,
    import_file,
    is_anthropic,
)
from harness.cassette.recorder import use_cassette
from harness.cassette.schema import validate
from harness.commands import import_ as import_cli
from harness.wire.bodies import response_message
from tests.conftest import REAL_CASSETTES as CORPUS
from tests.conftest import corpus_params

pytestmark = pytest.mark.real_cassettes

# The SDK's error class for each `error.type` the API documents: chosen from the type, so that a status
# code replayed wrongly cannot pass by accident.
ERROR_CLASSES: dict[str, type[anthropic.APIStatusError]] = {
    "invalid_request_error": anthropic.BadRequestError,
    "authentication_error": anthropic.AuthenticationError,
    "permission_error": anthropic.PermissionDeniedError,
    "not_found_error": anthropic.NotFoundError,
    "rate_limit_error": anthropic.RateLimitError,
    "api_error": anthropic.InternalServerError,
    "overloaded_error": anthropic.OverloadedError,
}


def corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.suffix in (".yaml", ".har"))


FILES = corpus_files()
IDS = [p.relative_to(CORPUS).as_posix() for p in FILES]


@cache
def imported(path: Path) -> CassetteFile:
    """Every interaction of the file, other hosts' too (scrubbed), so the counts are the documents'."""
    return import_file(path, keep_foreign_hosts=True)


def documented(name: str, pattern: str) -> tuple[int, ...]:
    text = (CORPUS / name).read_text(encoding="utf-8")
    match = re.search(pattern, text, flags=re.DOTALL)
    assert match, f"{name} no longer states this count (pattern {pattern!r}); update the test with the document"
    return tuple(int(group) for group in match.groups())


def is_messages(request: dict[str, Any]) -> bool:
    return request["path"] == "/v1/messages" and is_anthropic(request.get("host", ""), request["path"])


# ---------------------------------------------------------------------------------------------------
# Import: all files, the documented counts, the format's promises


def test_corpus_holds_the_documented_files() -> None:
    (count,) = documented("SOURCES.md", r"holds (\d+) cassette data files")
    assert len(FILES) == count


def test_counts_match_the_sources_document() -> None:
    total, messages, count_tokens, foreign = documented(
        "SOURCES.md",
        r"hold (\d+) recorded HTTP\s+interactions: (\d+) to `POST https://api\.anthropic\.com/v1/messages`"
        r".*?(\d+) to `POST /v1/messages/count_tokens.*?and\s+(\d+) to\s+non-Anthropic",
    )
    sse_files, sse_bodies = documented("QUIRKS.md", r"streaming \(SSE\) \| (\d+) files / (\d+) SSE bodies")
    routes: Counter[str] = Counter()
    streamed_files = streamed = 0
    for path in FILES:
        interactions = imported(path).interactions
        for interaction in interactions:
            request = interaction["request"]
            routes[request["path"] if is_anthropic(request["host"], request["path"]) else "foreign"] += 1
        in_file = sum("events" in i["response"] for i in interactions)
        streamed += in_file
        streamed_files += bool(in_file)
    assert sum(routes.values()) == total
    # By default the importer leaves the other hosts out, and says how many it left out.
    left_out = [SKIPPED_NOTE.match(import_file(path).meta.get("note") or "") for path in FILES]
    assert sum(int(note.group(1)) for note in left_out if note) == foreign
    assert routes == {"/v1/messages": messages, "/v1/messages/count_tokens": count_tokens, "foreign": foreign}
    assert (streamed_files, streamed) == (sse_files, sse_bodies)


def test_formats_match_the_sources_document() -> None:
    text = (CORPUS / "SOURCES.md").read_text(encoding="utf-8")
    per_format = {fid: int(n) for fid, n in re.findall(r"^\| (F\d) \|.*\| (\d+) \|", text, flags=re.MULTILINE)}
    assert set(per_format) == {"F1", "F2", "F3", "F4"}
    found = Counter(detect_format(path) for path in FILES)
    assert found == {VCRPY_YAML: per_format["F1"] + per_format["F2"], PYDANTIC_AI_YAML: per_format["F3"],
                     HAR: per_format["F4"]}


@pytest.mark.parametrize("path", corpus_params(FILES), ids=IDS or None)
def test_every_file_imports_validates_and_round_trips(path: Path, tmp_path: Path) -> None:
    cassette = imported(path)
    validate(cassette.to_data(), file=path)
    meta = cassette.meta
    assert meta["source"] == "imported" and meta["format_version"] == 1
    assert meta["imported_from"] == {"path": path.as_posix(), "format": detect_format(path)}
    assert meta["endpoint"] == "api.anthropic.com"
    assert meta["fingerprints"]["model"], "the first /v1/messages request names a model"

    for interaction in cassette.interactions:
        request, response = interaction["request"], interaction["response"]
        assert set(request["headers"]) <= REQUEST_HEADERS_KEPT
        assert all(name in RESPONSE_HEADERS_KEPT or name.startswith(RESPONSE_HEADER_PREFIXES_KEPT)
                   for name in response["headers"])
        if "request-id" in response["headers"]:
            assert response["headers"]["request-id"].startswith("req_"), "kept: a request id is not a credential"
        if is_messages(request):
            assert isinstance(request["body"], dict) and request["body"]["messages"]
            message = response_message(response)
            assert message is not None, "a Messages API answer is JSON or a stream, never opaque text"
            assert message["type"] == ("message" if response["status"] < 400 else "error")

    saved = save_cassette(cassette, tmp_path / "imported.yaml")
    text = saved.read_text(encoding="utf-8")
    assert "anthropic-organization-id" not in text.lower()
    assert "req_redacted_" not in text, "request ids are kept unless the user asks"
    assert load_cassette(saved).interactions == cassette.interactions


# ---------------------------------------------------------------------------------------------------
# Replay: the real SDK, the real transport stack, our cassette underneath


def split_params(method: Any, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Keyword arguments the SDK method names, and the rest for `extra_body`: the JSON sent stays the same."""
    names = set(inspect.signature(method).parameters)
    return ({k: v for k, v in body.items() if k in names}, {k: v for k, v in body.items() if k not in names})


def without_unsent_nulls(got: Any, recorded: Any) -> Any:
    """The SDK's accumulator sets fields it tracks (stop_details) to None when a stream never sent them."""
    if isinstance(got, dict) and isinstance(recorded, dict):
        return {key: without_unsent_nulls(value, recorded.get(key)) for key, value in got.items()
                if key in recorded or value is not None}
    if isinstance(got, list) and isinstance(recorded, list) and len(got) == len(recorded):
        return [without_unsent_nulls(a, b) for a, b in zip(got, recorded, strict=True)]
    return got


def send(client: anthropic.Anthropic, request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Send a recorded request through the SDK; ("message" | "stream" | "count", the result as JSON)."""
    beta = "beta=true" in request.get("query", "")
    api = client.beta.messages if beta else client.messages
    # SDK 2.x marks the beta surface internally and no longer puts ?beta=true on the wire; the
    # recordings (older SDKs) have it, so send it as the recorded query to make the same request.
    query = {"beta": "true"} if beta else None
    body = request["body"]
    if request["path"] == "/v1/messages/count_tokens":
        known, extra = split_params(api.count_tokens, body)
        return "count", api.count_tokens(**known, extra_body=extra or None, extra_query=query).to_dict(mode="json")
    if body.get("stream"):
        known, extra = split_params(api.stream, body)
        with api.stream(**known, extra_body=extra or None, extra_query=query) as stream:
            return "stream", stream.get_final_message().to_dict(mode="json")
    known, extra = split_params(api.create, body)
    # An explicit timeout: the SDK refuses long non-streaming calls up front, before any request is made.
    message = api.create(**known, extra_body=extra or None, extra_query=query, timeout=60)
    return "message", message.to_dict(mode="json")


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:Using Claude with .*thinking:UserWarning")
@pytest.mark.parametrize("path", corpus_params(FILES), ids=IDS or None)
def test_every_interaction_replays_through_the_sdk(path: Path, tmp_path: Path) -> None:
    cassette = imported(path)
    saved = save_cassette(cassette, tmp_path / "replay.yaml")
    client = anthropic.Anthropic(api_key="test", base_url="https://api.anthropic.com", max_retries=0)
    checked = 0
    with use_cassette(saved, mode="none") as replay, httpx2.Client() as plain_http:
        for position, interaction in enumerate(cassette.interactions):  # recorded order
            request, response = interaction["request"], interaction["response"]
            where = f"{path.name} #{position}"
            if not is_anthropic(request["host"], request["path"]):
                url = f"https://{request['host']}{request['path']}" + (f"?{request['query']}" if "query" in request
                                                                        else "")
                got = plain_http.request(request["method"], url)
                assert got.status_code == response["status"], where
                assert got.content == base64.b64decode(response.get("body_base64", "")), where
                checked += 1
                continue
            recorded = response_message(response)
            if response["status"] >= 400:
                with pytest.raises(anthropic.APIStatusError) as raised:
                    send(client, request)
                error_type = recorded["error"]["type"]
                assert isinstance(raised.value, ERROR_CLASSES[error_type]), where
                assert (raised.value.status_code, raised.value.type) == (response["status"], error_type), where
                assert raised.value.body == recorded, where
            else:
                kind, got = send(client, request)
                assert (kind == "stream") == ("events" in response), where
                if kind == "stream":
                    got = without_unsent_nulls(got, recorded)
                assert got == recorded, where
            checked += 1
        assert replay.unplayed == [], "every recorded interaction was asked for, in order"
    assert checked == len(cassette.interactions)


# ---------------------------------------------------------------------------------------------------
# The command, end to end


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="harness import")
    import_cli.add_arguments(parser)
    return import_cli.run(parser.parse_args(list(argv)))


def test_cli_imports_the_whole_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "imported"
    assert run_cli(str(CORPUS), "--out", str(out), "--keep-foreign-hosts") == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(FILES)
    totals = Counter()
    for line in lines:
        match = re.fullmatch(r"imported (.+) -> (.+) \((\d+) interactions, (\d+) streamed\)", line)
        assert match, line
        source, target = Path(match.group(1)), Path(match.group(2))
        relative = source.relative_to(CORPUS)
        assert target == out / relative.with_suffix(".yaml"), "the layout below the source folder is kept"
        written = load_cassette(target)
        assert len(written.interactions) == int(match.group(3)) == len(imported(source).interactions)
        totals["interactions"] += int(match.group(3))
        totals["streamed"] += int(match.group(4))
    (total, *_rest) = documented("SOURCES.md", r"hold (\d+) recorded HTTP\s+interactions")
    (_files, sse_bodies) = documented("QUIRKS.md", r"streaming \(SSE\) \| (\d+) files / (\d+) SSE bodies")
    assert totals == {"interactions": total, "streamed": sse_bodies}


def test_cli_leaves_foreign_hosts_out_and_says_how_many(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(str(CORPUS), "--out", str(tmp_path)) == 0  # the default
    out = capsys.readouterr().out
    counts = [int(n) for n in re.findall(r"\((\d+) interactions", out)]
    left_out = [int(n) for n in re.findall(r"; left out (\d+) with other hosts: ", out)]
    total, _messages, _count_tokens, foreign = documented(
        "SOURCES.md", r"hold (\d+) recorded HTTP\s+interactions: (\d+) .*?(\d+) to `POST /v1/messages/count_tokens"
                      r".*?and\s+(\d+) to\s+non-Anthropic")
    assert sum(counts) == total - foreign
    assert sum(left_out) == foreign
    for path in tmp_path.rglob("*.yaml"):
        assert all(is_anthropic(i["request"]["host"], i["request"]["path"]) for i in load_cassette(path).interactions)
