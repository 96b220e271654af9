"""Nothing lost: a recording killed mid-run, or killed while it writes, leaves the previous cassette as it
was; two processes recording one cassette take turns, whole runs at a time.

Each recorder is a real child process (`use_cassette` + a bundled scenario) talking to a simulator in
this process. The simulator holds one answer back (a slow fault on a fake clock that sleeps until the test
lets it go), so the test knows the child is in the middle of its run when it sends the signal, however long
the child took to start: each wait ends on a signal (the held request arriving, a line the child prints),
never on a deadline. HANG_SECONDS only stops a test that would otherwise wait forever.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cassette.format import load_cassette
from harness.chaos import time_limit
from harness.sim import Simulator
from harness.sim.faults import Fault
from harness_demo.scenarios import record_scenario, scenario
from tests.clocks import FakeClock

REPO = Path(__file__).resolve().parents[1]
# A hang guard, not a readiness deadline: nothing here waits this long unless something is stuck (a child's
# interpreter start alone takes 2 to 7 s on a loaded 2-core machine, and is never what a wait counts).
HANG_SECONDS = 600

# A recorder: one bundled scenario through use_cassette, against the simulator at base_url.
_RECORDER = """
import os, signal, sys
import anthropic
from harness.cassette.recorder import use_cassette
from harness_demo.scenarios import scenario

name, path, mode, base_url, kill_at = sys.argv[1:6]
# A shell that starts a job in the background without job control (`cmd &` in a script, nohup, some CI
# runners) hands it SIGINT ignored, and Python then installs no KeyboardInterrupt: Ctrl-C is what is tested.
signal.signal(signal.SIGINT, signal.default_int_handler)
if kill_at == "fsync":  # die the moment the new cassette is fully written to its temp file, before the rename
    os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
if kill_at == "wait":  # imports done; start recording when told to (a line on stdin)
    print("ready", flush=True)
    sys.stdin.readline()
print("recording", flush=True)
with use_cassette(path, mode=mode):
    print("locked", flush=True)
    client = anthropic.Anthropic(api_key="sim-key", base_url=base_url, max_retries=0)
    scenario(name).run_with(client)
print("done", flush=True)
"""


def start_recorder(name: str, path: Path, mode: str, base_url: str, kill_at: str = "") -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _RECORDER, name, str(path), mode, base_url, kill_at or "-"],
                            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@contextlib.contextmanager
def holding_second_answer() -> Iterator[tuple[Simulator, FakeClock]]:
    """A simulator that holds its second answer until the block ends (a slow fault on a held fake clock)."""
    clock = FakeClock(hold=True, hold_limit=HANG_SECONDS)
    with time_limit(HANG_SECONDS), Simulator(faults={1: Fault("slow", delay=10)}, clock=clock) as sim:
        try:
            yield sim, clock
        finally:
            clock.release()  # the held answer goes out to whoever still listens: the server thread ends


def wait_until(arrived: threading.Event, child: subprocess.Popen[str], what: str) -> None:
    """Wait for `arrived` (set by the simulator when the child's request reached it) while the child runs."""
    while not arrived.wait(0.05):
        if child.poll() is not None:
            pytest.fail(f"the recorder ended before {what}: {child.communicate()}")


def files_beside(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


@pytest.fixture
def previous(tmp_path: Path) -> tuple[Path, bytes]:
    """A cassette recorded earlier: what a killed re-recording must leave untouched."""
    folder = tmp_path / "cassettes"
    record_scenario(scenario("dayflow-brief"), folder)
    path = scenario("dayflow-brief").path(folder)
    return path, path.read_bytes()


@pytest.mark.parametrize("kill", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
@pytest.mark.parametrize("mode", ["rewrite", "all", "new_episodes"])
def test_a_recording_killed_mid_run_leaves_the_previous_cassette(
    kill: signal.Signals, mode: str, previous: tuple[Path, bytes]
) -> None:
    path, before = previous
    # new_episodes replays what the cassette holds: ask for a run it does not hold, so the child records.
    name = "dayflow-brief-stream" if mode == "new_episodes" else "dayflow-brief"
    with holding_second_answer() as (sim, clock):
        child = start_recorder(name, path, mode, sim.base_url)
        try:
            wait_until(clock.sleeping, child, "its second request (held back by the simulator)")
            assert sim.requests_seen == 2 and child.poll() is None
            child.send_signal(kill)
            stdout, _ = child.communicate()
        finally:
            if child.poll() is None:
                child.kill()
    assert child.returncode != 0 and "done" not in stdout, "the recorder finished before it was killed"
    assert path.read_bytes() == before, f"{kill.name} during a {mode} recording changed the previous cassette"
    assert files_beside(path) == [path.name], "a partial or temporary file was left beside the cassette"


@pytest.mark.parametrize("kill", [signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_a_first_recording_killed_mid_run_writes_nothing(kill: signal.Signals, tmp_path: Path) -> None:
    path = tmp_path / "fresh" / "brief.yaml"
    with holding_second_answer() as (sim, clock):
        child = start_recorder("dayflow-brief", path, "once", sim.base_url)
        try:
            wait_until(clock.sleeping, child, "its second request")
            child.send_signal(kill)
            child.communicate()
        finally:
            if child.poll() is None:
                child.kill()
    assert child.returncode != 0
    assert not path.exists(), "a half-recorded cassette was written"
    assert not path.parent.exists() or not any(path.parent.iterdir())


def test_a_recording_killed_while_it_writes_leaves_the_previous_cassette(previous: tuple[Path, bytes]) -> None:
    path, before = previous
    with time_limit(HANG_SECONDS), Simulator() as sim:
        child = start_recorder("dayflow-brief-stream", path, "rewrite", sim.base_url, kill_at="fsync")
        child.communicate()
    assert child.returncode == -signal.SIGKILL, "the recorder was meant to die inside the atomic write"
    assert path.read_bytes() == before, "a recorder killed while writing replaced the cassette"
    leftovers = [name for name in files_beside(path) if name != path.name]
    # The new text went to a hidden temp file that was never renamed: not in the cassette's place, and
    # no *.yaml glob (eval, scan, import) picks it up.
    assert all(name.startswith(f".{path.name}.") and name.endswith(".tmp") for name in leftovers), leftovers


def test_two_processes_recording_one_cassette_take_turns(tmp_path: Path) -> None:
    path = tmp_path / "shared.yaml"
    with holding_second_answer() as (sim, clock):
        second = start_recorder("sql-self-correction", path, "new_episodes", sim.base_url, kill_at="wait")
        assert second.stdin is not None and second.stdout is not None and second.stderr is not None
        assert second.stdout.readline().strip() == "ready"  # started and imported, not yet recording
        first = start_recorder("dayflow-brief", path, "new_episodes", sim.base_url)
        wait_until(clock.sleeping, first, "the first recorder's second request (held back)")
        second.stdin.write("go\n")
        second.stdin.flush()
        assert second.stdout.readline().strip() == "recording"
        # The second recorder now asks for the cassette while the first is held in the middle of its run, and
        # says so: the lock's notice names the holder once the second has waited its first second.
        notice = next((line for line in second.stderr if "waiting for the recording lock" in line), "")
        assert f"held by pid {first.pid}" in notice, f"the second recorder never queued behind the first: {notice!r}"
        assert first.poll() is None and len(sim.served) == 1, "precondition: the runs overlap in time"
        clock.release()
        _, err_first = first.communicate()
        _, err_second = second.communicate()
        served = [item.policy for item in sim.served]
    assert first.returncode == 0, err_first
    assert second.returncode == 0, err_second
    # The second got the lock only after the first had saved: the simulator saw the whole first run,
    # then the whole second one, and the cassette keeps both, each in one piece.
    assert served == ["dayflow", "dayflow", "sql", "sql", "sql"], served
    cassette = load_cassette(path)
    tools = [sorted(t["name"] for t in i["request"]["body"].get("tools", [])) for i in cassette.interactions]
    dayflow, sql = ["read_calendar", "read_inbox", "read_tasks"], ["calculator", "query_db", "read_file"]
    assert tools == [dayflow] * 2 + [sql] * 3, tools


def test_the_recording_lock_is_held_for_the_whole_run(tmp_path: Path) -> None:
    """The turn-taking above relies on this: use_cassette in a record mode holds the lock until it has saved."""
    import filelock

    from harness.cassette.lock import lock_path
    from harness.cassette.recorder import use_cassette

    path = tmp_path / "locked.yaml"
    with use_cassette(path, mode="once"):
        other = filelock.FileLock(lock_path(path))
        with pytest.raises(filelock.Timeout):
            other.acquire(timeout=0.05)
    other.acquire(timeout=1)
    other.release()
