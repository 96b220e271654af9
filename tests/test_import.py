"""The importer, quirk by quirk: gzip SSE and gzip errors, a raw JPEG, HAR, pydantic-ai's parsed bodies,
headers `{}`, langchain's `.yaml.gz`, hostile YAML tags, gzip bombs, secrets, and folders with bad files.

Real files come from ../shared/real-cassettes (see QUIRKS.md there); the hostile and synthetic ones are
written here.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import shutil
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cassette.format import MAX_CASSETTE_BYTES, load_cassette, save_cassette
from harness.cassette.importer import (
    HAR,
    HARNESS,
    LANGCHAIN_YAML_GZ,
    PYDANTIC_AI_YAML,
    VCRPY_JSON,
    VCRPY_YAML,
    ImportFailed,
    detect_format,
    import_file,
    import_paths,
    load_any_cassette,
)
from harness.commands import import_ as import_cli
from harness.errors import CassetteError
from harness.wire.bodies import GZIP_MAGIC, MAX_DECOMPRESSED_BYTES, response_message
from tests.conftest import require_real_cassettes

OPENLLMETRY_JSON = "openllmetry/test_messages/test_anthropic_message_create_legacy.yaml"
GZIP_SSE = "llm-anthropic/test_tools.yaml"
GZIP_ERROR = "mirascope/input/cassettes/test_model_not_found/anthropic_claude_sonnet_4_0.yaml"
AUTH_ERROR_STREAM = "mirascope/input/cassettes/test_authentication_error_stream/anthropic_claude_sonnet_4_0.yaml"
JPEG_GET = "pydantic-ai/models/cassettes/test_anthropic/test_image_url_input_force_download.yaml"
HEAD_PROBES = "llm-anthropic/test_url_prompt.yaml"
HAR_STREAM = "mirascope/output/cassettes/max-tokens/anthropic/returns-max-tokens-finish-reason-for-stream.har"
HAR_ERROR_STREAM = "mirascope/output/cassettes/stream/anthropic/wraps-api-errors-on-stream-call.har"
PYDANTIC_DOC_END = "pydantic-ai/models/cassettes/test_anthropic/test_request_stream_fallback_for_high_max_tokens.yaml"
PYDANTIC_MIXED = ("pydantic-ai/models/cassettes/test_anthropic/"
                  "test_anthropic_text_parts_ahead_of_built_in_tool_call.yaml")
NO_HEADERS = ("openinference/openinference-instrumentation-anthropic/tests/openinference/anthropic/cassettes/"
              "test_instrumentor/test_anthropic_instrumentation_messages_streaming.yaml")


@pytest.fixture
def corpus() -> Path:
    return require_real_cassettes()


def raw_yaml(path: Path) -> Any:
    """The foreign file as its own recorder wrote it (the safe loader; `!!binary` gives bytes)."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def write_vcrpy(path: Path, interactions: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}, sort_keys=False), encoding="utf-8")
    return path


def vcrpy_interaction(*, request_body: Any = "", response_body: Any = "", status: int = 200,
                      request_headers: dict[str, list[str]] | None = None,
                      response_headers: dict[str, list[str]] | None = None,
                      uri: str = "https://api.anthropic.com/v1/messages") -> dict[str, Any]:
    return {
        "request": {"body": request_body, "headers": request_headers or {}, "method": "POST", "uri": uri},
        "response": {"body": {"string": response_body}, "headers": response_headers or {},
                     "status": {"code": status, "message": "OK"}},
    }


MESSAGE = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
           "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn", "stop_sequence": None,
           "usage": {"input_tokens": 3, "output_tokens": 1}}
REQUEST = {"model": "claude-sonnet-4-5", "max_tokens": 16, "messages": [{"role": "user", "content": "hello"}]}


# ---------------------------------------------------------------------------------------------------
# Formats


def test_detect_format_reads_each_container(corpus: Path, tmp_path: Path) -> None:
    assert detect_format(corpus / OPENLLMETRY_JSON) == VCRPY_YAML
    assert detect_format(corpus / GZIP_SSE) == VCRPY_YAML
    assert detect_format(corpus / PYDANTIC_DOC_END) == PYDANTIC_AI_YAML
    assert detect_format(corpus / HAR_STREAM) == HAR
    ours = save_cassette(import_file(corpus / OPENLLMETRY_JSON), tmp_path / "ours.yaml")
    assert detect_format(ours) == HARNESS
    # The content decides, not the name: a HAR saved as .txt is still a HAR.
    renamed = tmp_path / "capture.txt"
    shutil.copy(corpus / HAR_STREAM, renamed)
    assert detect_format(renamed) == HAR


def test_vcrpy_json_serializer_output_imports_like_the_yaml(corpus: Path, tmp_path: Path) -> None:
    source = corpus / OPENLLMETRY_JSON
    data = raw_yaml(source)
    body = data["interactions"][0]["response"]["body"]
    body["string"] = gzip.decompress(body["string"]).decode("utf-8")  # vcrpy's JSON files hold text
    as_json = tmp_path / "cassette.json"
    as_json.write_text(json.dumps(data), encoding="utf-8")
    assert detect_format(as_json) == VCRPY_JSON
    assert import_file(as_json).interactions == import_file(source).interactions


def test_langchain_yaml_gz_built_from_a_real_interaction(corpus: Path, tmp_path: Path) -> None:
    source = corpus / GZIP_SSE
    data = raw_yaml(source)
    # langchain_tests' CustomSerializer: vcrpy's internal requests/responses lists, safe_dump, gzip.
    requests = [{key: item["request"][key] for key in ("method", "uri", "body", "headers")}
                for item in data["interactions"]]
    responses = [item["response"] for item in data["interactions"]]
    packed = tmp_path / "test_tools.yaml.gz"
    packed.write_bytes(gzip.compress(yaml.safe_dump({"requests": requests, "responses": responses}).encode()))

    assert detect_format(packed) == LANGCHAIN_YAML_GZ
    cassette = import_file(packed)
    assert cassette.meta["imported_from"]["format"] == LANGCHAIN_YAML_GZ
    assert cassette.interactions == import_file(source).interactions
    assert [("events" in i["response"]) for i in cassette.interactions] == [True, True]


# ---------------------------------------------------------------------------------------------------
# Bodies


def test_gzip_sse_becomes_events(corpus: Path) -> None:
    source = corpus / GZIP_SSE
    raw = raw_yaml(source)["interactions"][0]["response"]
    assert raw["body"]["string"][:2] == GZIP_MAGIC and raw["headers"]["Content-Encoding"] == ["gzip"]

    response = import_file(source).interactions[0]["response"]
    assert "content-encoding" not in response["headers"], "the body is stored decompressed"
    assert response["events"][0]["event"] == "message_start"
    message = response_message(response)
    assert [block["type"] for block in message["content"]].count("tool_use") == 2
    assert message["stop_reason"] == "tool_use"


def test_gzip_error_json_stays_an_error_body(corpus: Path) -> None:
    source = corpus / GZIP_ERROR
    assert all(i["response"]["body"]["string"][:2] == GZIP_MAGIC for i in raw_yaml(source)["interactions"])
    interactions = import_file(source).interactions
    raw_request_ids = [json.loads(gzip.decompress(i["response"]["body"]["string"]))["request_id"]
                       for i in raw_yaml(source)["interactions"]]
    assert [i["response"]["status"] for i in interactions] == [404, 404]
    for position, interaction in enumerate(interactions):
        body = interaction["response"]["body"]
        assert body["type"] == "error" and body["error"]["type"] == "not_found_error"
        assert body["request_id"] == raw_request_ids[position], "a request id is kept: not a credential"
    assert interactions[0]["request"] == interactions[1]["request"], "two identical requests, both kept in order"


def test_stream_request_answered_with_json_error_is_not_forced_into_sse(corpus: Path) -> None:
    interaction = import_file(corpus / AUTH_ERROR_STREAM).interactions[0]
    assert interaction["request"]["body"]["stream"] is True
    assert "events" not in interaction["response"]
    assert interaction["response"]["body"]["error"]["type"] == "authentication_error"


def test_raw_jpeg_binary_is_kept_as_base64(corpus: Path) -> None:
    source = corpus / JPEG_GET
    jpeg = raw_yaml(source)["interactions"][0]["response"]["body"]["string"]
    assert jpeg[:3] == b"\xff\xd8\xff", "precondition: a raw JPEG, not gzip"
    cassette = import_file(source, keep_foreign_hosts=True)
    first = cassette.interactions[0]
    assert (first["request"]["method"], first["request"]["host"]) == ("GET", "t3.ftcdn.net")
    assert "body" not in first["request"], "`body: ''` on a GET is no body"
    assert base64.b64decode(first["response"]["body_base64"]) == jpeg
    assert cassette.meta["endpoint"] == "api.anthropic.com", "the endpoint is the API's host, not the image host"


def test_foreign_hosts_can_be_left_out(corpus: Path) -> None:
    kept = import_file(corpus / HEAD_PROBES, keep_foreign_hosts=True)
    assert [i["request"]["method"] for i in kept.interactions] == ["HEAD", "HEAD", "POST"]

    skipped = import_file(corpus / HEAD_PROBES)  # the default: other hosts are left out
    assert [i["request"]["host"] for i in skipped.interactions] == ["api.anthropic.com"]
    assert skipped.interactions[0]["response"] == kept.interactions[2]["response"]
    assert skipped.meta["note"] == "skipped 2 non-Anthropic interaction(s) on import: static.simonwillison.net"
    assert skipped.meta["fingerprints"] == kept.meta["fingerprints"]


def test_har_stream(corpus: Path) -> None:
    source = corpus / HAR_STREAM
    entry = json.loads(source.read_text(encoding="utf-8"))["log"]["entries"][0]
    cassette = import_file(source)
    interaction = cassette.interactions[0]
    assert interaction["request"]["body"] == json.loads(entry["request"]["postData"]["text"])
    assert "x-api-key" not in interaction["request"]["headers"]
    assert response_message(interaction["response"])["stop_reason"] == "max_tokens"
    assert interaction["elapsed_ms"] == entry["time"]
    assert cassette.meta["sdk_version"] == "anthropic-js 0.71.2"
    assert cassette.meta["recorded_at"] == entry["startedDateTime"].split(".")[0] + "Z"


def test_har_text_is_used_as_is_despite_its_gzip_header(corpus: Path) -> None:
    source = corpus / HAR_ERROR_STREAM
    entry = json.loads(source.read_text(encoding="utf-8"))["log"]["entries"][0]
    assert {"name": "content-encoding", "value": "gzip"} in entry["response"]["headers"]
    interaction = import_file(source).interactions[0]
    assert "content-encoding" not in interaction["response"]["headers"]
    assert interaction["request"]["body"]["stream"] is True
    assert interaction["response"]["status"] == 404
    assert interaction["response"]["body"]["error"]["type"] == "not_found_error"


def test_pydantic_ai_parsed_bodies_and_document_end(corpus: Path) -> None:
    source = corpus / PYDANTIC_DOC_END
    assert source.read_text(encoding="utf-8").rstrip().endswith("\n..."), "precondition: YAML document end"
    raw = raw_yaml(source)["interactions"][0]
    interaction = import_file(source).interactions[0]
    assert interaction["request"]["body"] == raw["request"]["parsed_body"]
    assert interaction["request"]["query"] == "beta=true"
    assert interaction["response"]["events"][-1]["event"] == "message_stop"
    assert response_message(interaction["response"])["content"][0]["text"] == "2"


def test_pydantic_ai_mixes_parsed_json_and_sse_in_one_file(corpus: Path) -> None:
    raw = raw_yaml(corpus / PYDANTIC_MIXED)["interactions"]
    responses = [i["response"] for i in import_file(corpus / PYDANTIC_MIXED).interactions]
    for stored, original in zip(responses, raw, strict=True):
        if "parsed_body" in original["response"]:
            assert stored["body"] == original["response"]["parsed_body"]
        else:
            assert stored["events"], "a `|+` literal SSE block becomes events"
    assert any("body" in r for r in responses) and any("events" in r for r in responses)


def test_sse_is_found_without_any_headers(corpus: Path) -> None:
    source = corpus / NO_HEADERS
    raw = raw_yaml(source)["interactions"][0]
    assert raw["request"]["headers"] == {} and raw["response"]["headers"] == {}
    interaction = import_file(source).interactions[0]
    assert interaction["request"]["headers"] == {} and interaction["response"]["headers"] == {}
    assert interaction["response"]["events"][0]["event"] == "message_start"


def test_sse_is_found_from_the_stream_flag_alone(tmp_path: Path) -> None:
    # No headers, and a keep-alive comment first, so the body does not open with `event:`.
    stream = (": keep-alive\n\nevent: message_start\ndata: " + json.dumps({"type": "message_start", "message": MESSAGE})
              + "\n\nevent: message_stop\ndata: {\"type\": \"message_stop\"}\n\n")
    source = write_vcrpy(tmp_path / "bare.yaml", [
        vcrpy_interaction(request_body=json.dumps({**REQUEST, "stream": True}), response_body=stream),
        vcrpy_interaction(request_body=json.dumps(REQUEST), response_body=stream),
    ])
    streamed, not_streamed = import_file(source).interactions
    assert [e["event"] for e in streamed["response"]["events"]] == ["message_start", "message_stop"]
    assert "body_text" in not_streamed["response"], "without the flag, such a body stays text"


# ---------------------------------------------------------------------------------------------------
# Hostile input


def test_python_tags_are_refused_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    source = tmp_path / "hostile.yaml"
    source.write_text(
        "interactions:\n"
        "- request:\n"
        f"    body: !!python/object/apply:os.system ['touch {marker}']\n"
        "    headers: {}\n"
        "    method: POST\n"
        "    uri: https://api.anthropic.com/v1/messages\n",
        encoding="utf-8",
    )
    for reader in (import_file, detect_format, load_any_cassette):
        with pytest.raises(CassetteError) as raised:
            reader(source)
        assert raised.value.file == str(source)
        assert raised.value.where is not None and raised.value.where.startswith("line 3")
        assert "python/object/apply:os.system" in raised.value.reason and "refused" in raised.value.reason
    assert not marker.exists()


def write_gzip_bomb(path: Path, inflated_bytes: int) -> int:
    """A vcrpy cassette whose response body is gzip that inflates to `inflated_bytes` of zeros."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip container
    chunk = bytes(1024 * 1024)
    parts = [packer.compress(chunk) for _ in range(inflated_bytes // len(chunk))]
    bomb = b"".join([*parts, packer.flush()])
    write_vcrpy(path, [vcrpy_interaction(request_body=json.dumps(REQUEST), response_body=bomb)])
    return len(bomb)


def test_gzip_bomb_is_refused_with_bounded_memory(tmp_path: Path) -> None:
    inflated = 8 * MAX_DECOMPRESSED_BYTES
    compressed = write_gzip_bomb(tmp_path / "bomb.yaml", inflated)
    assert compressed * 100 < inflated, "precondition: a real bomb"
    tracemalloc.start()
    try:
        with pytest.raises(CassetteError) as raised:
            import_file(tmp_path / "bomb.yaml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "inflates past" in raised.value.reason and "refused" in raised.value.reason
    assert raised.value.where == "$.interactions[0].response.body"
    assert peak < 4 * MAX_DECOMPRESSED_BYTES, f"peak {peak:,} bytes: the bomb was inflated"


def test_gzip_file_that_inflates_past_the_cassette_limit_is_refused(tmp_path: Path) -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"#" * (1024 * 1024)  # a YAML comment, so it is text all the way
    parts = [packer.compress(chunk) for _ in range(MAX_CASSETTE_BYTES // len(chunk) + 2)]
    source = tmp_path / "huge.yaml.gz"
    source.write_bytes(b"".join([*parts, packer.flush()]))
    with pytest.raises(CassetteError, match="limit for a cassette"):
        import_file(source)


def test_corrupt_gzip_body_names_the_place(tmp_path: Path) -> None:
    source = write_vcrpy(tmp_path / "corrupt.yaml", [
        vcrpy_interaction(request_body=json.dumps(REQUEST), response_body=GZIP_MAGIC + b"\x08\x00broken"),
    ])
    with pytest.raises(CassetteError) as raised:
        import_file(source)
    assert raised.value.where == "$.interactions[0].response.body"
    assert "does not decompress" in raised.value.reason


def test_brotli_body_is_refused_rather_than_stored_as_garbage(tmp_path: Path) -> None:
    source = write_vcrpy(tmp_path / "br.yaml", [vcrpy_interaction(
        request_body=json.dumps(REQUEST), response_body=b"\x8b\x02\x80\xff\xfe{}\x03",
        response_headers={"Content-Encoding": ["br"], "Content-Type": ["application/json"]},
    )])
    with pytest.raises(CassetteError, match="br-encoded") as raised:
        import_file(source)
    assert raised.value.where == "$.interactions[0].response.body"


def test_malformed_files_name_the_file_and_the_place(tmp_path: Path) -> None:
    no_uri = tmp_path / "no_uri.yaml"
    no_uri.write_text("interactions:\n- request: {method: POST}\n  response: {status: {code: 200}}\n")
    with pytest.raises(CassetteError) as raised:
        import_file(no_uri)
    assert (raised.value.file, raised.value.where) == (str(no_uri), "$.interactions[0].request.uri")

    bad_status = write_vcrpy(tmp_path / "status.yaml", [vcrpy_interaction(status=999)])
    with pytest.raises(CassetteError, match="no HTTP status") as raised:
        import_file(bad_status)
    assert raised.value.where == "$.interactions[0].response.status"

    broken_har = tmp_path / "broken.har"
    broken_har.write_text('{"log": {"entries": [\n  {"request": }\n]}}')
    with pytest.raises(CassetteError, match="not valid JSON") as raised:
        import_file(broken_har)
    assert raised.value.where == "line 2, column 15"

    unknown = tmp_path / "list.yaml"
    unknown.write_text("- just\n- a list\n")
    with pytest.raises(CassetteError, match="not a cassette format this importer knows"):
        detect_format(unknown)


# ---------------------------------------------------------------------------------------------------
# Secrets


def test_secrets_never_reach_the_imported_file(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "Z" * 40
    org = "217a607f-ed5e-40af-8a7d-f83ed52d59d6"
    echoed = {**REQUEST, "messages": [{"role": "user", "content": f"my key is {key}"}]}
    error = {"type": "error", "error": {"type": "rate_limit_error",
                                        "message": f"rate limit for your organization ({org}) exceeded"},
             "request_id": "req_011CXZKqu9Dox1Y37WKaUP9W"}
    source = write_vcrpy(tmp_path / "leaky.yaml", [vcrpy_interaction(
        request_body=json.dumps(echoed), response_body=json.dumps(error), status=429,
        request_headers={"x-api-key": [key], "authorization": [f"Bearer {key}"], "anthropic-version": ["2023-06-01"],
                         "Cookie": ["_cfuvid=abcdefghijklmnop"]},
        response_headers={"anthropic-organization-id": [org], "Request-Id": ["req_011CXZKqu9Dox1Y37WKaUP9W"],
                          "Retry-After": ["7"], "Set-Cookie": ["__cf_bm=secretvalue123; path=/"]},
    )])
    text = save_cassette(import_file(source), tmp_path / "clean.yaml").read_text(encoding="utf-8")
    for secret in (key, org, "abcdefghijklmnop", "secretvalue123"):
        assert secret not in text
    interaction = load_cassette(tmp_path / "clean.yaml").interactions[0]
    assert interaction["request"]["headers"] == {"anthropic-version": "2023-06-01"}
    # A request id is not a credential: kept as sent, so APIStatusError.body replays unchanged ...
    assert interaction["response"]["headers"] == {"request-id": "req_011CXZKqu9Dox1Y37WKaUP9W", "retry-after": "7"}
    assert interaction["response"]["body"]["request_id"] == "req_011CXZKqu9Dox1Y37WKaUP9W"
    # ... unless the user asks for placeholders.
    rewritten = import_file(source, rewrite_request_ids=True).interactions[0]["response"]
    assert rewritten["headers"]["request-id"] == rewritten["body"]["request_id"] == "req_redacted_0000"


# ---------------------------------------------------------------------------------------------------
# Folders, ours, the command


def test_load_any_cassette_reads_ours_and_foreign(corpus: Path, tmp_path: Path) -> None:
    foreign = corpus / HAR_STREAM
    assert load_any_cassette(foreign).interactions == import_file(foreign).interactions
    ours = save_cassette(import_file(foreign), tmp_path / "ours.yaml")
    loaded = load_any_cassette(ours)
    assert loaded.path == ours and loaded.to_data() == load_cassette(ours).to_data()
    assert import_file(ours).to_data() == loaded.to_data(), "importing ours is loading it"


def make_source_tree(corpus: Path, root: Path) -> None:
    (root / "vcr" / "deep").mkdir(parents=True)
    (root / "har").mkdir()
    shutil.copy(corpus / GZIP_SSE, root / "vcr" / "deep" / "tools.yaml")
    shutil.copy(corpus / HAR_STREAM, root / "har" / "stream.har")
    (root / "vcr" / "broken.yaml").write_text("interactions:\n- request: [unclosed\n")
    (root / "notes.md").write_text("not a cassette, and not picked up\n")


def test_import_paths_imports_the_good_and_reports_the_bad(corpus: Path, tmp_path: Path) -> None:
    source, out = tmp_path / "src", tmp_path / "out"
    make_source_tree(corpus, source)
    with pytest.raises(ImportFailed) as raised:
        import_paths([source], out)
    failures = raised.value.failures
    assert [f.source for f in failures] == [source / "vcr" / "broken.yaml"]
    assert failures[0].error is not None and "not valid YAML" in failures[0].error.reason
    assert failures[0].error.where is not None and failures[0].error.where.startswith("line ")
    assert str(source / "vcr" / "broken.yaml") in str(raised.value)
    assert sorted(raised.value.written) == [out / "har" / "stream.yaml", out / "vcr" / "deep" / "tools.yaml"]
    for written in raised.value.written:
        assert load_cassette(written).meta["source"] == "imported"
    assert not (out / "vcr" / "broken.yaml").exists()


def test_import_paths_keeps_both_files_when_names_collide(corpus: Path, tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    shutil.copy(corpus / HAR_STREAM, source / "run.har")
    shutil.copy(corpus / GZIP_SSE, source / "run.yaml")
    written = import_paths([source], tmp_path / "out")
    assert len(set(written)) == 2
    formats = sorted(load_cassette(p).meta["imported_from"]["format"] for p in written)
    assert formats == [HAR, VCRPY_YAML]


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="harness import")
    import_cli.add_arguments(parser)
    return import_cli.run(parser.parse_args(list(argv)))


def test_cli_reports_each_file_and_exits_2_on_any_failure(corpus: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "src"
    make_source_tree(corpus, source)
    assert run_cli(str(source), str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "out")) == 2
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"imported {source / 'har' / 'stream.har'} -> {tmp_path / 'out' / 'har' / 'stream.yaml'} "
        "(1 interactions, 1 streamed)",
        f"imported {source / 'vcr' / 'deep' / 'tools.yaml'} -> {tmp_path / 'out' / 'vcr' / 'deep' / 'tools.yaml'} "
        "(2 interactions, 2 streamed)",
    ]
    errors = captured.err.splitlines()
    assert len(errors) == 2
    assert errors[0].startswith(f"failed {source / 'vcr' / 'broken.yaml'}: line ")
    assert errors[1] == f"failed {tmp_path / 'missing.yaml'}: no such file or folder"


def test_cli_exits_0_when_everything_imports(corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sources = [str(corpus / GZIP_ERROR), str(corpus / JPEG_GET)]
    assert run_cli(*sources, "--out", str(tmp_path), "--skip-foreign-hosts") == 0
    assert capsys.readouterr().out.splitlines() == [
        f"imported {corpus / GZIP_ERROR} -> {tmp_path / GZIP_ERROR.rsplit('/', 1)[1]} (2 interactions, 0 streamed)",
        f"imported {corpus / JPEG_GET} -> {tmp_path / JPEG_GET.rsplit('/', 1)[1]} (1 interactions, 0 streamed; "
        "left out 1 with other hosts: t3.ftcdn.net)",
    ]
