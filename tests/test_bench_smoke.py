"""bench/replay.py works end to end, and the speed-ups it measures keep their promises.

Nothing here looks at a clock: the benchmark runs at toy sizes to prove it produces figures and
refuses wrong answers; the speed-ups (the parse cache, the quick schema check, matching by the request's
bytes, the transport patch) are checked for the behaviour they must not change.
"""

from __future__ import annotations

import asyncio
import copy
import io
import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
import yaml
from rich.console import Console
from vcr.serializers import yamlserializer

from bench import replay
from bench._cassettes import agent_interactions, write_all
from harness.cassette import format as cassette_format
from harness.cassette import parse_cache
from harness.cassette import schema as cassette_schema
from harness.cassette.format import CassetteFile, dump_cassette, load_cassette, save_cassette
from harness.cassette.recorder import Cassette, use_cassette
from harness.errors import CassetteError
from harness.wire.bodies import body_bytes

# -- the benchmark ---------------------------------------------------------------------------------------


def test_generator_writes_the_same_agent_runs_in_all_three_forms(tmp_path: Path) -> None:
    interactions = agent_interactions(30)
    assert len(interactions) == 30
    request_sizes = [len(json.dumps(i["request"]["body"])) for i in interactions]
    assert min(request_sizes) > 1_500 and max(request_sizes) < 8_000, "request bodies of 2 to 7 KB"
    blocks = [block["type"] for i in interactions for message in i["request"]["body"]["messages"]
              if isinstance(message["content"], list) for block in message["content"]]
    assert "tool_use" in blocks and "tool_result" in blocks
    assert any("events" in i["response"] for i in interactions) and any("body" in i["response"] for i in interactions)

    files = write_all(tmp_path, 30)
    ours = load_cassette(files["harness"])  # validates against the schema
    assert ours.interactions == interactions
    assert json.loads(files["json"].read_text())["interactions"] == interactions
    assert "&id0" not in files["harness"].read_text(), "no YAML aliases: each body written out in full"
    foreign = yamlserializer.deserialize(files["vcrpy"].read_text())
    assert len(foreign["interactions"]) == 30
    assert [i["response"]["body"]["string"].encode() for i in foreign["interactions"]] == [
        body_bytes(i["response"]) for i in interactions]


def test_a_tiny_run_measures_every_engine(tmp_path: Path) -> None:
    figures = replay.measure_size(12, tmp_path, repeat=1, window=3, body_max=12, body_window=1, vcrpy_max=12)
    assert figures.window == 3 and figures.body_window == 1
    for name in ("floor_start", "floor_end", "harness_start", "harness_end", "harness_all", "vcrpy_start",
                 "vcrpy_end", "vcrpy_body_start", "vcrpy_body_end", "load_yaml_cold", "load_yaml_warm",
                 "load_json", "load_json_paused", "open_harness", "open_vcrpy", "memory_harness_mb",
                 "memory_vcrpy_mb"):
        assert getattr(figures, name) > 0, name
    assert all(len(values) == 1 for values in figures.rounds.values())

    out = io.StringIO()
    replay.render([figures], Console(file=out, width=160))
    assert "harness/floor" in out.getvalue() and "vcrpy+body (1 req)" in out.getvalue()


def test_the_command_line_writes_its_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "figures.json"
    assert replay.main(["--sizes", "8", "--repeat", "1", "--window", "2", "--no-memory", "--body-max", "0",
                        "--workdir", str(tmp_path / "work"), "--json", str(target)]) == 0
    [figures] = json.loads(target.read_text())
    assert figures["size"] == 8 and figures["vcrpy_body_end"] is None and figures["harness_end"] > 0
    assert "target <= 1.30x" in capsys.readouterr().out


def test_a_wrong_answer_fails_the_benchmark() -> None:
    calls = replay.calls_of(agent_interactions(3))
    wrong = [calls[0], calls[1].__class__(**{**calls[1].__dict__, "expected_id": "msg_someone_else"})]
    with pytest.raises(AssertionError, match="msg_someone_else"):
        replay.floor_replay(wrong, range(2))


# -- the transport patch -----------------------------------------------------------------------------------


def test_replay_never_opens_a_connection_through_the_real_transports(tmp_path: Path) -> None:
    interactions = agent_interactions(4)
    path = save_cassette(CassetteFile(meta={"format_version": 1, "source": "simulator"}, interactions=interactions),
                         tmp_path / "c.yaml")
    calls = replay.calls_of(interactions)
    closed = "http://127.0.0.1:9"  # nothing listens there: any real connection would fail
    assert [c.streamed for c in calls] == [False, False, True, True]
    original = httpx2.HTTPTransport.handle_request

    with use_cassette(path, mode="none"):  # one plain and one streamed call, sync
        client = anthropic.Anthropic(api_key="sk-ant-test", base_url=closed, max_retries=0)
        assert [replay.send(client, json.loads(calls[i].kwargs_json), calls[i].streamed) for i in (0, 2)] == [
            calls[0].expected_id, calls[2].expected_id]

    async def the_others() -> list[str]:
        client = anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=closed, max_retries=0)
        ids = []
        for call in (calls[1], calls[3]):
            kwargs = json.loads(call.kwargs_json)
            if call.streamed:
                async with client.messages.stream(**kwargs) as stream:
                    ids.append((await stream.get_final_message()).id)
            else:
                ids.append((await client.messages.create(**kwargs)).id)
        return ids

    with use_cassette(path, mode="none") as cassette:
        assert asyncio.run(the_others()) == [calls[1].expected_id, calls[3].expected_id]
    assert cassette.unplayed == [0, 2]
    assert httpx2.HTTPTransport.handle_request is original, "the patch is undone on exit"


# -- matching by the request's bytes -------------------------------------------------------------------------


def _cassette(tmp_path: Path, interactions: list[dict[str, Any]]) -> Path:
    return save_cassette(CassetteFile(meta={"format_version": 1, "source": "simulator"}, interactions=interactions),
                         tmp_path / "match.yaml")


def test_exact_bytes_skip_parsing_and_other_bytes_still_match_canonically(tmp_path: Path) -> None:
    interactions = agent_interactions(3)
    cassette = Cassette(_cassette(tmp_path, interactions), "none")
    body = interactions[1]["request"]["body"]

    exact = cassette.lookup("POST", "/v1/messages", "", body_bytes(interactions[1]["request"]))
    assert exact.position == 1
    assert "body" not in exact.__dict__, "a byte-for-byte match is found without parsing the request"

    reordered = json.dumps(dict(reversed(list(body.items()))), indent=1).encode()
    again = cassette.lookup("POST", "/v1/messages", "", reordered)
    assert again.position == 1 and again.fingerprint == exact.fingerprint
    assert again.body == body


def test_identical_requests_with_different_key_order_share_one_queue(tmp_path: Path) -> None:
    first, second = copy.deepcopy(agent_interactions(2))
    body = first["request"]["body"]
    second["request"]["body"] = dict(reversed(list(body.items())))  # same request, keys in another order
    cassette = Cassette(_cassette(tmp_path, [first, second]), "none")
    # Whichever bytes arrive first, recorded order decides what is served: #0, then #1.
    served = []
    for stored in (second, first):
        found = cassette.lookup("POST", "/v1/messages", "", body_bytes(stored["request"]))
        served.append(found.position)
        cassette.play(found)
    assert served == [0, 1]


# -- the quick schema check ------------------------------------------------------------------------------------


def _mutations(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Variants of a valid cassette, each changed in one place the schema has a rule about."""
    edits: list[tuple[str, Any]] = [
        ("request.method", "post"), ("request.method", 7), ("request.method", "POST\n"), ("request.path", "v1"),
        ("request.path", None), ("request.host", 1), ("request.query", ["a"]), ("request.headers", []),
        ("request.headers.x", 1), ("request.body_text", "also"), ("request.body_base64", 5), ("request.extra", 1),
        ("response.status", 99), ("response.status", 600), ("response.status", "200"), ("response.status", True),
        ("response.status", 200.0), ("response.reason", 1), ("response.headers.y", None),
        ("response.body_text", "x"), ("response.events", []), ("response.truncated", "yes"),
        ("response.extra", {}), ("elapsed_ms", -1), ("elapsed_ms", True), ("elapsed_ms", 3.5),
        ("error", {"kind": "timeout"}), ("extra", 1),
    ]
    out = []
    for where, value in edits:
        variant = copy.deepcopy(data)
        target = variant["interactions"][0]
        *parents, last = where.split(".")
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = value
        out.append(variant)
    streamed = next(i for i, x in enumerate(data["interactions"]) if "events" in x["response"])
    for event_edit in ({"event": 1}, {"offset_ms": -5}, {"offset_ms": 12.5}, {"offset_ms": False}, {"extra": 1}):
        variant = copy.deepcopy(data)
        variant["interactions"][streamed]["response"]["events"][0].update(event_edit)
        out.append(variant)
    variant = copy.deepcopy(data)
    del variant["interactions"][streamed]["response"]["events"][1]["data"]
    out.append(variant)
    for error in ({"kind": "meltdown"}, {"kind": ["timeout"]}, {"kind": "timeout", "message": 3}, {"message": "x"}):
        variant = copy.deepcopy(data)
        variant["interactions"][0] = {"request": variant["interactions"][0]["request"], "error": error}
        out.append(variant)
    variant = copy.deepcopy(data)
    del variant["interactions"][0]["request"]
    out.append(variant)
    return out


def test_the_quick_check_never_accepts_what_jsonschema_rejects() -> None:
    assert cassette_schema._schema_is_v1(), "schema.json changed: review _plainly_valid_v1 and its digest"
    data = CassetteFile(meta={"format_version": 1, "source": "simulator"},
                        interactions=agent_interactions(12)).to_data()
    assert cassette_schema._plainly_valid_v1(data), "a plain valid cassette takes the quick path"
    schema_validator = cassette_schema._validator()
    variants = _mutations(data)
    quick_rejected = 0
    for variant in variants:
        if cassette_schema._plainly_valid_v1(variant):
            assert schema_validator.is_valid(variant), "the quick check accepted what the schema rejects"
        else:
            quick_rejected += 1
    assert quick_rejected >= len(variants) - 3, "most variants are schema errors the quick check must see"


def test_the_quick_check_of_the_provenance_block_never_accepts_what_jsonschema_rejects() -> None:
    meta = {"format_version": 1, "source": "simulator", "recorded_at": None, "endpoint": "127.0.0.1",
            "sdk_version": "anthropic-python 2.14.0", "fingerprints": {"model": "sha256:ab", "system": None},
            "imported_from": {"path": "a.yaml", "format": "vcrpy"}, "note": "n", "simulator_model": "sim-auto"}
    assert cassette_schema._plain_harness(meta), "a plain provenance block takes the quick path"
    schema_validator = cassette_schema._validator()
    edits = [("format_version", 2), ("format_version", True), ("format_version", 1.0), ("source", "claude"),
             ("source", None), ("recorded_at", 5), ("endpoint", ["h"]), ("sdk_version", 2.1), ("note", None),
             ("fingerprints", {"model": 1}), ("fingerprints", []), ("imported_from", {"path": 3}),
             ("imported_from", "a.yaml")]
    for key, value in edits:
        variant = {**meta, key: value}
        if cassette_schema._plain_harness(variant):  # stricter than the schema where simpler (1.0 is not 1 here)
            assert schema_validator.is_valid({"harness": variant, "interactions": []}), (key, value)
        assert not cassette_schema._plain_harness(variant), f"{key}={value!r} is left to jsonschema"
    for missing in ("format_version", "source"):
        variant = {k: v for k, v in meta.items() if k != missing}
        assert not cassette_schema._plain_harness(variant)


def test_errors_still_come_from_jsonschema_with_their_json_path(tmp_path: Path) -> None:
    data = CassetteFile(meta={"format_version": 1, "source": "simulator"}, interactions=agent_interactions(3))
    data.interactions[2]["response"]["status"] = "ok"
    with pytest.raises(CassetteError) as caught:
        cassette_schema.validate(data.to_data())
    assert caught.value.where == "$.interactions[2].response.status"


# -- the parse cache ------------------------------------------------------------------------------------------


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "parse-cache"
    monkeypatch.setenv(parse_cache.CACHE_ENV, str(folder))
    monkeypatch.setattr(cassette_format, "CACHE_MIN_BYTES", 0)
    return folder


def test_the_cache_serves_what_the_parser_gave_and_follows_every_edit(tmp_path: Path, cache: Path) -> None:
    path = _cassette(tmp_path, agent_interactions(4))
    first = load_cassette(path)
    [entry] = list(cache.glob("*.json"))
    assert json.loads(entry.read_text())["data"] == first.to_data()
    assert load_cassette(path).to_data() == first.to_data()

    edited = path.read_text().replace("Brief me for Monday", "Brief me for Tuesday", 1)
    path.write_text(edited)
    assert "Tuesday" in json.dumps(load_cassette(path).interactions[0]), "an edit is never served from the cache"
    assert len(list(cache.glob("*.json"))) == 2


def test_a_damaged_entry_is_ignored_and_a_bad_one_still_fails_validation(tmp_path: Path, cache: Path) -> None:
    path = _cassette(tmp_path, agent_interactions(3))
    expected = load_cassette(path).to_data()
    [entry] = list(cache.glob("*.json"))

    entry.write_text('{"key": "trunc')
    assert load_cassette(path).to_data() == expected, "an unreadable entry: the file is parsed again"
    stored = json.loads(entry.read_text())
    stored["key"] = "0" * 64
    entry.write_text(json.dumps(stored))
    assert load_cassette(path).to_data() == expected, "an entry naming another key is not used"

    stored = json.loads(entry.read_text())
    stored["data"]["interactions"][1]["response"]["status"] = "ok"
    entry.write_text(json.dumps(stored))
    with pytest.raises(CassetteError) as caught:
        load_cassette(path)
    assert caught.value.where == "$.interactions[1].response.status", "cached data is validated like parsed data"


def test_invalid_or_unjsonable_cassettes_are_never_cached(tmp_path: Path, cache: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("harness: {format_version: 1, source: simulator}\ninteractions:\n- request: {method: POST}\n")
    with pytest.raises(CassetteError):
        load_cassette(bad)
    dated = tmp_path / "dated.yaml"
    dated.write_text("harness: {format_version: 1, source: simulator, note: x}\ninteractions:\n"
                     "- request: {method: POST, path: /v1/messages, body: {when: 2026-09-07, 1: one}}\n"
                     "  response: {status: 200}\n")
    with pytest.raises(CassetteError, match="quote it"):  # a date and an integer key have no JSON form
        load_cassette(dated)
    assert not list(cache.glob("*.json")), "a file refused at load is never cached"


def test_the_cache_can_be_turned_off(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(parse_cache.CACHE_ENV, "")
    load_cassette(_cassette(tmp_path, agent_interactions(2)))
    assert not cache.exists()


def test_shared_objects_are_written_out_in_full() -> None:
    shared = {"name": "read_inbox", "description": "Read mail"}
    cassette = CassetteFile(meta={"format_version": 1, "source": "simulator", "a": [shared], "b": [shared]})
    text = dump_cassette(cassette)
    assert "&id" not in text and "*id" not in text
    assert yaml.safe_load(text)["harness"]["b"] == [shared]


# -- every other bench script, at toy size ---------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]
TOY_RUNS = {  # the scripts no other test runs, each with the smallest arguments that still measure something
    "suite": ["--tests", "2", "--repeat", "1"],
    "uploads": ["--sizes", "0.01", "--repeat", "1"],
    "proxy": ["--sizes", "2"],
    "http_core": ["--requests", "3"],
    "http_memory": ["--chunked-mb", "1", "--clients", "2", "--body-mb", "1"],
    "startup": ["--repeats", "1"],
    "fuzz": ["--cases", "20", "--no-real"],
    "agent_sdk_requests": [],
}


@pytest.mark.parametrize("script", sorted(TOY_RUNS))
def test_each_bench_script_runs_at_toy_size(script: str) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    done = subprocess.run([sys.executable, "-m", f"bench.{script}", *TOY_RUNS[script]], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), "a bench script prints its figures"


# -- bench/peers.py: the side-by-side table, and no engine passing by not matching bodies ------------------------


@pytest.fixture(scope="module")
def cassetter_dir() -> Path:
    """cassetter installed apart from the project's venv (its pytest plugin would clash with ours in one)."""
    import subprocess

    from bench import peers

    try:
        return peers.ensure_cassetter(REPO / ".venv" / "bench-peers" / f"cassetter-{peers.CASSETTER_VERSION}")
    except subprocess.CalledProcessError:
        pytest.skip("cassetter could not be installed (no package index)")


@pytest.fixture(scope="module")
def toy_suite(tmp_path_factory: pytest.TempPathFactory, cassetter_dir: Path) -> tuple[Path, list[Any]]:
    from bench import peers

    root = tmp_path_factory.mktemp("peers")
    return root, peers.build_suite(root / "suite", 2, cassetter_dir)


def test_peers_prints_the_side_by_side_table_at_toy_size(toy_suite: tuple[Path, list[Any]],
                                                         cassetter_dir: Path) -> None:
    from bench import peers

    root, variants = toy_suite
    peers.refuse_changed_requests(variants, root, cassetter_dir)  # every engine fails a changed request
    figures = peers.measure_suite(variants, root, cassetter_dir, repeat=1)
    (root / "large").mkdir()
    large = peers.measure_large(root / "large", 24, 2, 1, cassetter_dir)
    table = "\n".join(peers.render(figures, large, 2))
    for row in ("floor", "ours, session client", "pytest-recording, session client", "cassetter, session client",
                "ours, anthropic_client", "pytest-recording, client per test", "cassetter, client per test",
                "cassetter ", "ours, cold", "json.loads", "vcrpy"):
        assert row in table, table
    assert set(figures.cold) == set(figures.warm) == {v.name for v in variants}


def test_a_peer_that_does_not_match_bodies_fails_the_bench(toy_suite: tuple[Path, list[Any]], cassetter_dir: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import peers

    root, variants = toy_suite
    for name in ("pytest-recording, session client", "cassetter, session client"):
        variant = next(v for v in variants if v.name == name)
        conftest = variant.folder / "conftest.py"
        conftest.write_text(conftest.read_text(encoding="utf-8").replace(repr(peers.PEER_MATCH_ON),
                                                                          repr(["method", "uri"])), encoding="utf-8")
        with pytest.raises(SystemExit, match="passed a changed request"):
            peers.refuse_changed_requests([variant], root, cassetter_dir)
    monkeypatch.setattr(peers, "PEER_MATCH_ON", ["method", "uri"])  # cassetter's default: no body
    (root / "blind").mkdir()
    with pytest.raises(SystemExit, match="cassetter answered a changed request"):
        peers.measure_large(root / "blind", 24, 2, 1, cassetter_dir)
