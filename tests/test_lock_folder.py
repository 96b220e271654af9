"""The recording lock lives in a folder of this user's own, checked before each use; its holder file is 0600, never
written through a link, and holds no secret from the command line. Another user's folder, a planted link, a
folder the group or the world may write to: refused in one line, never trusted, never a traceback.

Another user is simulated by chown to another uid (the tests run as root where they can), or by a planted link.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest

from harness.cassette.lock import RecordingLock, lock_folder, lock_path
from harness.cassette.recorder import use_cassette
from harness.cli import main as harness_main
from harness.errors import CassetteError
from harness.proxy import RecordingProxy
from harness.sim import Simulator
from tests.harness_processes import start_serving_command

OTHER_UID = 54321


@pytest.fixture
def temp_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp folder of the test's own as the shared one (no XDG_RUNTIME_DIR), as on a host without a session."""
    shared = tmp_path / "tmp"
    shared.mkdir(mode=0o1777)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    return shared


def _left_by_another_user(temp_folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This user's lock folder as another user left it (and the old shared one too): chown to another uid where
    we may (root), else the folder of a uid we pretend to be, left by the real one."""
    if os.geteuid() != 0:
        real = os.getuid()
        monkeypatch.setattr(os, "getuid", lambda: real + 1)
    for name in ("loop-harness-locks", f"loop-harness-locks-{os.getuid()}"):
        (temp_folder / name).mkdir(mode=0o755)
        if os.geteuid() == 0:
            os.chown(temp_folder / name, OTHER_UID, OTHER_UID)
    return temp_folder / f"loop-harness-locks-{os.getuid()}"


def test_a_lock_folder_left_by_another_user_is_never_used(temp_folder: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = _left_by_another_user(temp_folder, monkeypatch)
    with pytest.raises(CassetteError) as raised, use_cassette(tmp_path / "a.yaml", "once"):
        pass
    text = str(raised.value)
    assert "belongs to another user (uid" in text and str(theirs) in text and "\n" not in text
    theirs.rmdir()
    lock = RecordingLock(tmp_path / "a.yaml").acquire()  # our own folder is made afresh, ours and 0700
    try:
        folder = Path(lock_path(tmp_path / "a.yaml")).parent
        status = os.lstat(folder)
        assert folder == theirs and status.st_uid == os.geteuid() and stat.S_IMODE(status.st_mode) == 0o700
    finally:
        lock.release()


@pytest.mark.parametrize("planted", ["symlink", "world-writable", "file"])
def test_a_lock_folder_that_is_not_safe_is_refused_in_one_line(temp_folder: Path, tmp_path: Path,
                                                               planted: str) -> None:
    ours = temp_folder / f"loop-harness-locks-{os.getuid()}"
    if planted == "symlink":
        (tmp_path / "theirs").mkdir(mode=0o700)
        ours.symlink_to(tmp_path / "theirs")
    elif planted == "world-writable":
        ours.mkdir()
        ours.chmod(0o777)
    else:
        ours.write_text("")
    with pytest.raises(CassetteError, match="the recording lock folder is not safe to use") as raised:
        lock_folder()
    assert "\n" not in str(raised.value)
    assert not list((tmp_path / "theirs").iterdir()) if planted == "symlink" else True


def test_the_holder_file_is_never_written_through_a_planted_link(temp_folder: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    cassette = tmp_path / "a.yaml"
    Path(lock_path(cassette) + ".holder").symlink_to(victim)
    lock = RecordingLock(cassette).acquire()
    lock.release()
    assert victim.read_text() == "precious\n"


def test_the_holder_file_is_0600_and_holds_no_secret_of_the_command_line(
        temp_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["harness", "proxy", "--upstream", "http://u:PASS@127.0.0.1:9",
                                      "--api-key=sk-ant-SECRET"])
    cassette = tmp_path / "a.yaml"
    lock = RecordingLock(cassette).acquire()
    try:
        holder = Path(lock_path(cassette) + ".holder")
        text = holder.read_text()
        assert stat.S_IMODE(holder.stat().st_mode) == 0o600
        assert "PASS" not in text and "SECRET" not in text and "harness proxy" in text
    finally:
        lock.release()


def test_the_proxy_names_its_upstream_without_the_password(temp_folder: Path, tmp_path: Path) -> None:
    with Simulator() as sim:
        host = sim.base_url.removeprefix("http://")
        upstream = f"http://u:PASS@{host}?key=QUERYSECRET"
        with RecordingProxy(upstream, tmp_path / "a.yaml", mode="rewrite"):
            text = Path(lock_path(tmp_path / "a.yaml") + ".holder").read_text()
            assert "PASS" not in text and "QUERYSECRET" not in text and host in text
        process, _url = start_serving_command(tmp_path / "url", "proxy", "--upstream", f"http://u:PASS@{host}",
                                              "--cassette", str(tmp_path / "b.yaml"))
        process.terminate()
        out, err = process.communicate(timeout=600)
    assert "PASS" not in out + err and f"***@{host}" in out + err


def test_a_second_user_gets_one_line_not_a_traceback(temp_folder: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI as another user meets a lock folder they may not use: exit 2, one line naming it."""
    _left_by_another_user(temp_folder, monkeypatch)
    assert harness_main(["proxy", "--upstream", "http://127.0.0.1:9", "--cassette", str(tmp_path / "a.yaml"),
                         "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "belongs to another user" in err
    assert len(err.strip().splitlines()) == 1, err


def test_a_url_is_printed_without_its_credentials() -> None:
    from harness.cassette.redact import shown_url

    shown = shown_url("https://user:PASS@collector.example:4318/v1/traces?api_key=QSECRET&x=1")
    assert "PASS" not in shown and "QSECRET" not in shown and "user" not in shown
    assert shown.startswith("https://***@collector.example:4318/v1/traces?") and "x=1" in shown
    assert shown_url("http://127.0.0.1:8765") == "http://127.0.0.1:8765"


def test_a_runtime_folder_that_is_not_ours_to_write_in_is_passed_over(temp_folder: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """sudo may keep another user's XDG_RUNTIME_DIR: the temp folder is used instead, never a traceback."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert lock_folder().parent == runtime
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    assert lock_folder().parent == temp_folder
