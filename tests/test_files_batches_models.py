"""The rest of the wire: Files API uploads and downloads, Message Batches (polled to completion, JSONL
results), token counting and models. Each records against the simulator, which is then stopped, and
replays offline through the SDK with equal results."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import anthropic
import pytest

from harness import CassetteMismatch, use_cassette
from harness.batches import wait_for_batch
from harness.cassette.format import load_cassette
from harness.errors import CassetteError
from harness.sim import Simulator
from harness.sim.batch_api import POLLS_TO_END
from harness.trajectory import batch_trajectories
from harness.wire.multipart import INLINE_LIMIT, parts_folder

OFFLINE = "http://127.0.0.1:9"  # nothing listens there: a replay that tried the network would fail
NOTES = b"Quarterly notes\nline two\n"
BIG = bytes(range(256)) * (INLINE_LIMIT // 256 + 40)  # binary, over the inline limit


def client(base_url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sim", base_url=base_url, max_retries=0)


def files_run(base_url: str, notes: bytes = NOTES) -> list[Any]:
    c = client(base_url)
    text = c.beta.files.upload(file=("notes.txt", notes, "text/plain"))
    blob = c.beta.files.upload(file=("scan.bin", BIG, "application/octet-stream"))
    listed = c.beta.files.list()
    downloaded = c.beta.files.download(text.id).read()
    metadata = c.beta.files.retrieve_metadata(blob.id)
    deleted = c.beta.files.delete(text.id)
    return [text.to_dict(), blob.to_dict(), [f.to_dict() for f in listed.data], downloaded, metadata.to_dict(),
            deleted.to_dict()]


def test_a_files_upload_records_against_the_simulator_and_replays_offline(tmp_path: Path) -> None:
    path = tmp_path / "files.yaml"
    with Simulator(), use_cassette(path, mode="once"):
        pass  # nothing recorded: no file
    with Simulator() as sim, use_cassette(path, mode="once"):
        live = files_run(sim.base_url)
    assert live[3] == NOTES and live[1]["size_bytes"] == len(BIG)
    with use_cassette(path, mode="none") as cassette:  # the simulator is stopped; new random boundaries
        replayed = files_run(OFFLINE)
    assert replayed == live and cassette.unplayed == []

    stored = load_cassette(path)
    assert stored.meta["source"] == "simulator"
    upload = stored.interactions[0]["request"]
    assert upload["headers"]["content-type"] == "multipart/form-data"  # no random boundary on disk
    assert upload["parts"] == [{"name": "file", "filename": "notes.txt", "content_type": "text/plain",
                                "sha256": hashlib.sha256(NOTES).hexdigest(), "size": len(NOTES),
                                "text": NOTES.decode()}]
    big = stored.interactions[1]["request"]["parts"][0]
    assert "base64" not in big and (path.parent / big["file"]).read_bytes() == BIG
    assert (path.parent / big["file"]).parent == parts_folder(path)


def test_a_changed_file_is_a_miss_whose_diff_names_the_part(tmp_path: Path) -> None:
    path = tmp_path / "files.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        files_run(sim.base_url)
    with pytest.raises(CassetteMismatch) as caught, use_cassette(path, mode="none"):
        files_run(OFFLINE, notes=NOTES.replace(b"two", b"2"))
    message = str(caught.value)
    assert "part 1 'file' (file 'notes.txt'): content changed" in message
    assert hashlib.sha256(NOTES).hexdigest()[:12] in message


def test_a_large_part_beside_the_cassette_is_checked_against_its_hash_on_load(tmp_path: Path) -> None:
    path = tmp_path / "files.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        files_run(sim.base_url)
    kept = next(parts_folder(path).iterdir())
    kept.write_bytes(kept.read_bytes()[:-1] + b"!")
    with pytest.raises(CassetteError, match=r"interactions\[1\]\.request\.parts\[0\]\.file.*does not hash"):
        load_cassette(path)
    kept.unlink()
    with pytest.raises(CassetteError, match="no such cassette"):
        load_cassette(path)


def test_a_part_reference_may_not_leave_its_folder(tmp_path: Path) -> None:
    path = tmp_path / "files.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        files_run(sim.base_url)
    (tmp_path / "secret.txt").write_text("x")
    text = path.read_text().replace(next(parts_folder(path).iterdir()).name, "../secret.txt")
    path.write_text(text)
    with pytest.raises(CassetteError, match=r"outside files\.parts/"):
        load_cassette(path)


def batch_run(base_url: str, sleeps: list[float]) -> dict[str, Any]:
    c = client(base_url)
    created = c.messages.batches.create(requests=[
        {"custom_id": f"question-{n}",
         "params": {"model": "sim-echo", "max_tokens": 64, "messages": [{"role": "user", "content": f"Q{n}?"}]}}
        for n in range(3)
    ])
    ended = wait_for_batch(c, created.id, interval=30.0, sleep=sleeps.append)
    results = [r.to_dict() for r in c.messages.batches.results(created.id)]
    return {"created": created.to_dict(), "ended": ended.to_dict(), "results": results}


def test_a_batch_of_three_polled_to_completion_replays_with_zero_wait(tmp_path: Path) -> None:
    path = tmp_path / "batch.yaml"
    live_sleeps: list[float] = []
    with Simulator() as sim, use_cassette(path, mode="once"):
        live = batch_run(sim.base_url, live_sleeps)
    assert live["created"]["processing_status"] == "in_progress"
    assert live["ended"]["processing_status"] == "ended" and live["ended"]["request_counts"]["succeeded"] == 3
    assert [r["custom_id"] for r in live["results"]] == ["question-0", "question-1", "question-2"]
    assert live_sleeps == [30.0] * (POLLS_TO_END - 1)  # the simulator ends the batch over polls

    replay_sleeps: list[float] = []
    with use_cassette(path, mode="none") as cassette:
        replayed = batch_run(OFFLINE, replay_sleeps)
    assert replayed == live and cassette.unplayed == []
    assert replay_sleeps == []  # identical polls served in recorded order, none of them waited for

    stored = load_cassette(path)
    polls = [i for i in stored.interactions if i["request"]["method"] == "GET"
             and i["request"]["path"] == f"/v1/messages/batches/{live['created']['id']}"]
    # The polls of wait_for_batch, then the SDK's own retrieve before it fetches the results_url.
    statuses = [p["response"]["body"]["processing_status"] for p in polls]
    assert statuses == ["in_progress"] * (POLLS_TO_END - 1) + ["ended", "ended"]
    results = stored.interactions[-1]["response"]
    assert results["body_text"].count("\n") == 3  # JSON Lines, stored as readable text


def test_batch_results_become_one_trajectory_per_custom_id(tmp_path: Path) -> None:
    path = tmp_path / "batch.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        live = batch_run(sim.base_url, [])
    by_id = batch_trajectories(path)
    assert list(by_id) == ["question-0", "question-1", "question-2"]
    for n, (custom_id, trajectory) in enumerate(by_id.items()):
        assert [run.label for run in trajectory.runs] == [custom_id]
        assert trajectory.final_text == f"You said: Q{n}?"
        assert trajectory.steps[0].delta == [{"role": "user", "content": f"Q{n}?"}]
        assert trajectory.outcome is not None and trajectory.outcome.stop_reason == "end_turn"
    assert live["results"][1]["result"]["message"]["content"][0]["text"] == by_id["question-1"].final_text


def test_a_canceled_batch_ends_with_every_result_canceled() -> None:
    with Simulator() as sim:
        c = client(sim.base_url)
        created = c.messages.batches.create(requests=[
            {"custom_id": "only", "params": {"model": "sim-echo", "max_tokens": 8,
                                             "messages": [{"role": "user", "content": "hi"}]}}])
        assert c.messages.batches.cancel(created.id).processing_status == "canceling"
        ended = c.messages.batches.retrieve(created.id)
        assert ended.processing_status == "ended" and ended.request_counts.canceled == 1
        assert [r.result.type for r in c.messages.batches.results(created.id)] == ["canceled"]
        with pytest.raises(anthropic.NotFoundError):
            c.messages.batches.retrieve("msgbatch_nope")


def test_a_batch_request_the_api_would_refuse_is_an_errored_result() -> None:
    with Simulator() as sim:
        c = client(sim.base_url)
        created = c.messages.batches.create(requests=[
            {"custom_id": "bad", "params": {"model": "sim-echo", "max_tokens": 8, "messages": []}}])
        wait_for_batch(c, created.id, interval=0, sleep=lambda _: None)
        (result,) = list(c.messages.batches.results(created.id))
        assert result.custom_id == "bad" and result.result.type == "errored"
        assert result.result.error.error.type == "invalid_request_error"


def count_and_models(base_url: str) -> dict[str, Any]:
    c = client(base_url)
    counted = c.messages.count_tokens(model="sim-echo", messages=[{"role": "user", "content": "How many?"}])
    models = [m.to_dict() for m in c.models.list()]
    one = c.models.retrieve("sim-echo").to_dict()
    try:
        c.models.retrieve("claude-does-not-exist")
        missing = None
    except anthropic.NotFoundError as err:
        missing = dict(err.body)  # type: ignore[call-overload]
        missing.pop("request_id")  # made stable (req_redacted_NNNN) on the way to the disk
    return {"tokens": counted.input_tokens, "models": models, "one": one, "missing": missing}


def test_count_tokens_and_models_record_and_replay(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        live = count_and_models(sim.base_url)
    assert live["tokens"] > 0 and "sim-echo" in [m["id"] for m in live["models"]]
    assert live["missing"]["error"]["type"] == "not_found_error"
    with use_cassette(path, mode="none") as cassette:
        assert count_and_models(OFFLINE) == live
    assert cassette.unplayed == []


def test_files_need_a_key_and_name_what_is_missing() -> None:
    with Simulator() as sim:
        with pytest.raises(anthropic.AuthenticationError):
            anthropic.Anthropic(api_key="invalid", base_url=sim.base_url, max_retries=0).beta.files.list()
        with pytest.raises(anthropic.NotFoundError, match="file_nope"):
            client(sim.base_url).beta.files.retrieve_metadata("file_nope")


def test_a_multipart_body_kept_as_base64_by_a_foreign_recorder_is_stored_as_parts() -> None:
    from harness.wire.bodies import store_body

    boundary = "b0undary"
    raw = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.pdf\"\r\n"
           f"Content-Type: application/pdf\r\n\r\n").encode() + b"%PDF-\x00\xff" + f"\r\n--{boundary}--\r\n".encode()
    stored: dict[str, Any] = {}
    store_body(stored, base64.b64encode(raw).decode())
    (part,) = stored["parts"]
    assert part["filename"] == "a.pdf" and base64.b64decode(part["base64"]) == b"%PDF-\x00\xff"
    assert part["sha256"] == hashlib.sha256(b"%PDF-\x00\xff").hexdigest()


def test_a_batch_eval_judges_each_custom_id_as_a_run(tmp_path: Path) -> None:
    import json

    from harness.cli import main

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'batch-eval'\n")
    with Simulator() as sim, use_cassette(tmp_path / "batch.yaml", mode="once"):
        batch_run(sim.base_url, [])

    def golden(name: str, run: str, contains: str) -> Path:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"name": name, "cassettes": ["batch.yaml"], "run": run, "checks": [
            {"check": "outcome", "params": {"stop_reason": "end_turn"}},
            {"check": "final_answer", "params": {"contains": [contains]}}]}))
        return path

    results = tmp_path / "results.json"
    assert main(["eval", str(golden("second", "question-1", "Q1?")), "--json", str(results)]) == 0
    (case,) = json.loads(results.read_text())["cases"]
    assert all(check["passed"] and check["step"] == 2 for check in case["checks"])  # question-1 is step 2
    assert main(["eval", str(golden("wrong", "question-2", "Q1?")), "--json", str(results)]) == 1
    (case,) = json.loads(results.read_text())["cases"]
    failed = next(check for check in case["checks"] if not check["passed"])
    assert failed["step"] == 3 and "Q1?" in failed["reason"]  # question-2's run is step 3 of the file


def test_uploads_record_through_harness_proxy_and_replay_through_harness_serve(tmp_path: Path) -> None:
    from harness.proxy import RecordingProxy
    from harness.serve import ReplayServer

    path = tmp_path / "proxied.yaml"
    with Simulator() as sim, RecordingProxy(sim.base_url, path) as proxy:
        live = files_run(proxy.base_url)
    assert load_cassette(path).interactions[0]["request"]["parts"][0]["text"] == NOTES.decode()
    with ReplayServer([path]) as server:  # the simulator is gone; the boundaries are new
        assert files_run(server.base_url) == live


def test_an_async_client_polls_a_batch_to_completion_and_replays_without_waiting(tmp_path: Path) -> None:
    import asyncio

    from harness.batches import wait_for_batch_async

    path = tmp_path / "async-batch.yaml"

    async def run(base_url: str, waits: list[float]) -> dict[str, Any]:
        async def sleep(seconds: float) -> None:
            waits.append(seconds)

        c = anthropic.AsyncAnthropic(api_key="sim", base_url=base_url, max_retries=0)
        created = await c.messages.batches.create(requests=[
            {"custom_id": "a", "params": {"model": "sim-echo", "max_tokens": 16,
                                          "messages": [{"role": "user", "content": "async?"}]}}])
        ended = await wait_for_batch_async(c, created.id, interval=5.0, sleep=sleep)
        results = [r.to_dict() async for r in await c.messages.batches.results(created.id)]
        return {"ended": ended.to_dict(), "results": results}

    live_waits: list[float] = []
    with Simulator() as sim, use_cassette(path, mode="once"):
        live = asyncio.run(run(sim.base_url, live_waits))
    replay_waits: list[float] = []
    with use_cassette(path, mode="none"):
        assert asyncio.run(run(OFFLINE, replay_waits)) == live
    assert live_waits == [5.0] * (POLLS_TO_END - 1) and replay_waits == []
    assert live["results"][0]["custom_id"] == "a"


def test_a_key_inside_an_uploaded_text_file_never_reaches_the_disk(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "s" * 40
    path = tmp_path / "secret-upload.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        client(sim.base_url).beta.files.upload(file=("env.txt", f"ANTHROPIC_API_KEY={key}\n".encode(), "text/plain"))
    text = path.read_text()
    assert key not in text
    assert "ANTHROPIC_API_KEY=<redacted:anthropic-key:1>" in text
    with use_cassette(path, mode="none"):  # matching is by the hash of the bytes sent, so it still replays
        client(OFFLINE).beta.files.upload(file=("env.txt", f"ANTHROPIC_API_KEY={key}\n".encode(), "text/plain"))


def test_a_downloaded_file_that_looks_like_a_form_keeps_its_bytes(tmp_path: Path) -> None:
    form = b'--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--\r\n'
    path = tmp_path / "download.yaml"

    def run(base_url: str) -> bytes:
        c = client(base_url)
        uploaded = c.beta.files.upload(file=("form.txt", form, "text/plain"))
        return c.beta.files.download(uploaded.id).read()

    with Simulator() as sim, use_cassette(path, mode="once"):
        assert run(sim.base_url) == form
    download = load_cassette(path).interactions[1]["response"]
    assert "parts" not in download and download["body_text"] == form.decode()
    with use_cassette(path, mode="none"):
        assert run(OFFLINE) == form


def test_parts_are_cut_exactly_as_the_standard_librarys_full_parser_reads_them() -> None:
    import email.parser
    import email.policy
    import random

    import httpx2

    from harness.wire.multipart import split_parts

    chooser = random.Random(7)
    for _ in range(300):
        data = bytes(chooser.choice(b"\r\n-ab\x00\xff") for _ in range(chooser.randint(0, 80)))
        filename = chooser.choice(["a.bin", "naïve file.txt", 'q"uote.txt', "x;y.pdf"])
        request = httpx2.Request("POST", "http://x/", files={"file": (filename, data, "application/octet-stream")},
                                 data={"purpose": "x\r\ny", "empty": ""})
        raw = request.read()
        whole = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + request.headers["content-type"].encode() + b"\r\n\r\n" + raw)
        expected = [(p.get_param("name", header="content-disposition"), p.get_filename(),
                     p.get_content_type() if "content-type" in p else None, p.get_payload(decode=True) or b"")
                    for p in whole.iter_parts()]
        parts = split_parts(raw)
        assert parts is not None
        assert [(p.name, p.filename, p.content_type, p.content) for p in parts] == expected
        assert next(p.content for p in parts if p.name == "file") == data
