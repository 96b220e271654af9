"""Threads, tasks, a held lock, a growing proxy run, a full disk: nothing mixed, nothing lost, no hang."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from harness.cassette import format as cassette_format
from harness.cassette.format import load_cassette
from harness.cassette.journal import journal_path
from harness.cassette.lock import RecordingLock
from harness.cassette.recorder import use_cassette
from harness.errors import CassetteError
from harness.proxy import RecordingProxy
from harness.sim import Simulator
from tests.harness_processes import start_serving_command


def echo(text: str) -> dict[str, Any]:
    return {"model": "sim-echo", "max_tokens": 32, "messages": [{"role": "user", "content": text}]}


def sdk(base_url: str, **options: Any) -> anthropic.Anthropic:
    options.setdefault("max_retries", 0)
    return anthropic.Anthropic(base_url=base_url, api_key="sk-test-key", **options)


def asked(path: Path) -> list[str]:
    return [i["request"]["body"]["messages"][0]["content"] for i in load_cassette(path).interactions]


# -- use_cassette with threads and tasks ----------------------------------------------------------------------


def test_two_threads_each_record_their_own_cassette_in_any_exit_order(tmp_path: Path) -> None:
    """A enters, B enters, A leaves, B leaves: each file has only its own thread's requests, and the
    transport is back to normal afterwards (a later request goes to the network, not to a dead cassette)."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def recorder(name: str, entered: threading.Event, wait_for: threading.Event, then: threading.Event | None,
                 base_url: str) -> None:
        try:
            with use_cassette(tmp_path / f"{name}.yaml", "once"):
                entered.set()
                assert wait_for.wait(30)
                client = sdk(base_url)
                for n in range(3):
                    client.messages.create(**echo(f"{name}{n}"))
                if then is not None:
                    assert then.wait(30)
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)
        finally:
            if name == "a":
                a_out.set()

    with Simulator() as sim:
        go = threading.Event()
        threads = [threading.Thread(target=recorder, args=("a", a_in, go, None, sim.base_url)),
                   threading.Thread(target=recorder, args=("b", b_in, go, a_out, sim.base_url))]
        threads[0].start()
        assert a_in.wait(30)
        threads[1].start()
        assert b_in.wait(30)
        go.set()
        for thread in threads:
            thread.join(60)
        assert not errors, errors
        # The patch is off: a plain request reaches the simulator and no cassette changes.
        before = sim.requests_seen
        sdk(sim.base_url).messages.create(**echo("after"))
        assert sim.requests_seen == before + 1
    assert asked(tmp_path / "a.yaml") == ["a0", "a1", "a2"]
    assert asked(tmp_path / "b.yaml") == ["b0", "b1", "b2"]
    assert not hasattr(httpx2.HTTPTransport.handle_request, "__wrapped__")  # the real method is back


def test_asyncio_tasks_each_record_their_own_cassette(tmp_path: Path) -> None:
    async def one(name: str, base_url: str, entered: asyncio.Event, others: asyncio.Event) -> None:
        with use_cassette(tmp_path / f"{name}.yaml", "once"):
            entered.set()
            await others.wait()
            client = anthropic.AsyncAnthropic(base_url=base_url, api_key="sk-test", max_retries=0)
            for n in range(3):
                await client.messages.create(**echo(f"{name}{n}"))
                await asyncio.sleep(0)

    async def main(base_url: str) -> None:
        entered = {name: asyncio.Event() for name in "xyz"}
        both = asyncio.Event()

        async def release() -> None:
            for event in entered.values():
                await event.wait()
            both.set()

        await asyncio.gather(release(), *(one(name, base_url, entered[name], both) for name in entered))

    with Simulator() as sim:
        asyncio.run(main(sim.base_url))
    for name in "xyz":
        assert asked(tmp_path / f"{name}.yaml") == [f"{name}0", f"{name}1", f"{name}2"]


def test_a_thread_without_a_cassette_is_refused_while_two_are_in_use(tmp_path: Path) -> None:
    results: list[BaseException | None] = []
    with Simulator() as sim, use_cassette(tmp_path / "a.yaml", "once"):
        inside = threading.Event()
        leave = threading.Event()

        def other() -> None:
            with use_cassette(tmp_path / "b.yaml", "once"):
                inside.set()
                leave.wait(30)

        holder = threading.Thread(target=other)
        holder.start()
        assert inside.wait(30)

        def stray() -> None:
            try:
                sdk(sim.base_url).messages.create(**echo("whose?"))
                results.append(None)
            except BaseException as err:
                results.append(err)

        worker = threading.Thread(target=stray)
        worker.start()
        worker.join(30)
        leave.set()
        holder.join(30)
    assert isinstance(results[0], CassetteError)
    assert "entered no cassette" in str(results[0])


# -- the recording lock ---------------------------------------------------------------------------------------


def test_a_held_lock_names_its_holder_and_is_given_up_on(tmp_path: Path) -> None:
    path = tmp_path / "held.yaml"
    notices: list[str] = []
    holder = RecordingLock(path, who="harness proxy --upstream http://sim").acquire()
    try:
        waiter = RecordingLock(path, timeout=1.5, notice=notices.append)
        with pytest.raises(CassetteError) as refused:
            waiter.acquire()
        with pytest.raises(CassetteError) as from_use_cassette:
            use_cassette(path, "once", lock_timeout=1.2).__enter__()
    finally:
        holder.release()
    assert len(notices) == 1 and f"pid {os.getpid()} (harness proxy --upstream http://sim" in notices[0]
    for error in (refused.value, from_use_cassette.value):
        assert str(path) in str(error) and "gave up after" in str(error)
        assert f"pid {os.getpid()}" in str(error)
    with use_cassette(path, "once", lock_timeout=5):  # released: free again
        pass


def test_a_proxy_holding_a_cassette_makes_use_cassette_give_up_clearly(tmp_path: Path) -> None:
    path = tmp_path / "proxied.yaml"
    with (Simulator() as sim, RecordingProxy(sim.base_url, path),
          pytest.raises(CassetteError, match=r"harness proxy --upstream .*gave up after 1 s"),
          use_cassette(path, "once", lock_timeout=1)):
        pass


# -- the proxy's saving ---------------------------------------------------------------------------------------


def test_the_proxy_never_rewrites_the_cassette_during_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cost of saving one exchange does not grow with the cassette: one journal line each, and the
    cassette written once, at stop."""
    writes: list[str] = []
    real = cassette_format.atomic_write_text
    monkeypatch.setattr(cassette_format, "atomic_write_text", lambda path, text: (writes.append(str(path)),
                                                                                  real(path, text))[1])
    path = tmp_path / "run.yaml"
    with Simulator() as sim, RecordingProxy(sim.base_url, path) as proxy:
        client = sdk(proxy.base_url)
        for n in range(30):
            client.messages.create(**echo(f"q{n}"))
        assert writes == []
        journal = journal_path(path).read_text().splitlines()
        assert len(journal) <= 31  # the header and at most one line per exchange (the last may be under way)
    assert writes == [str(path)]
    assert asked(path) == [f"q{n}" for n in range(30)]
    assert not journal_path(path).exists()


def test_a_full_disk_never_costs_the_client_its_answer_nor_a_second_upstream_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.yaml"

    refused = threading.Event()

    def full(fd: int) -> None:
        refused.set()
        raise OSError(errno.ENOSPC, "No space left on device")

    with Simulator() as sim:
        with RecordingProxy(sim.base_url, path) as proxy:
            monkeypatch.setattr(os, "fsync", full)
            message = sdk(proxy.base_url, max_retries=2).messages.create(**echo("keep me"))
            assert refused.wait(30)
            for _ in range(3000):  # the failure is logged just after the refused write
                if proxy.save_failures:
                    break
                threading.Event().wait(0.01)
            monkeypatch.undo()
            assert sim.requests_seen == 1  # the SDK saw a good answer and did not retry
        assert message.content[0].text
    assert proxy.save_failures and "No space left on device" in proxy.save_failures[0]
    assert "No space left on device" in capfd.readouterr().err
    assert asked(path) == ["keep me"]  # the save at stop, with room again, wrote it


def test_a_proxy_killed_with_sigkill_leaves_a_journal_the_next_proxy_folds_in(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with Simulator() as sim:
        process, url = start_serving_command(tmp_path / "url", "proxy", "--upstream", sim.base_url,
                                             "--cassette", str(path))
        try:
            client = sdk(url)
            for n in range(3):
                client.messages.create(**echo(f"k{n}"))
            journal = journal_path(path)
            for _ in range(2000):  # a readiness wait: the last line is written just after the answer
                if journal.exists() and len(journal.read_text().splitlines()) == 4:
                    break
                threading.Event().wait(0.01)
        finally:
            process.send_signal(signal.SIGKILL)
            process.communicate(timeout=30)
        assert not path.exists()  # nothing half-written in the cassette's place
        lines = journal.read_text().splitlines()
        assert json.loads(lines[0])["journal"] == 1 and len(lines) == 4
        with RecordingProxy(sim.base_url, path, mode="new_episodes") as proxy:
            assert proxy.recovered == 3
            sdk(proxy.base_url).messages.create(**echo("k3"))
    assert asked(path) == ["k0", "k1", "k2", "k3"]
    assert load_cassette(path).meta["source"] == "simulator"
    assert not journal_path(path).exists()
