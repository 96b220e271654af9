"""The one write path: a write refuses what a read refuses. A path that a symlink takes out of the project (a
linked cassettes/ folder, NAME.parts/, bless's golden/, a dangling link) and a target that is not a regular file
(a FIFO, a device) are refused with an error naming the file, and nothing is written anywhere; the proxy's
journal too, which a planted link to /dev/zero or a FIFO once made read forever or hang.
"""

from __future__ import annotations

import os
from pathlib import Path

import anthropic
import pytest

from harness.cassette.format import CassetteFile, load_cassette, save_cassette
from harness.cassette.journal import journal_path
from harness.cassette.recorder import use_cassette
from harness.chaos import time_limit
from harness.errors import HarnessError
from harness.files import atomic_write_bytes, atomic_write_text, open_for_append
from harness.proxy import RecordingProxy
from harness.sim import Simulator


def _ask(base_url: str, *texts: str) -> None:
    client = anthropic.Anthropic(base_url=base_url, api_key="sk-test-key", max_retries=0)
    for text in texts:
        client.messages.create(model="sim-echo", max_tokens=16, messages=[{"role": "user", "content": text}])


def _asked(path: Path) -> list[str]:
    return [i["request"]["body"]["messages"][0]["content"] for i in load_cassette(path).interactions]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "outside").mkdir()
    return root


def _nothing_outside(tmp_path: Path) -> None:
    assert not list((tmp_path / "outside").iterdir()), "a write left the project through a symlink"


@pytest.mark.parametrize("link", ["folder", "dangling"])
def test_a_recording_is_never_saved_through_a_link_out_of_the_project(project: Path, tmp_path: Path,
                                                                      link: str) -> None:
    if link == "folder":  # cassettes/ itself leads outside
        (project / "cassettes").symlink_to(tmp_path / "outside")
    else:  # cassettes/run.yaml is a link to a file outside that does not exist yet
        (project / "cassettes").mkdir()
        (project / "cassettes" / "run.yaml").symlink_to(tmp_path / "outside" / "run.yaml")
    refused = pytest.raises(HarnessError, match="leads outside the project through a symlink")
    with Simulator() as sim, refused, use_cassette(project / "cassettes" / "run.yaml", "once"):
        _ask(sim.base_url, "one")
    _nothing_outside(tmp_path)


def test_parts_and_goldens_are_never_written_through_a_link_out_of_the_project(project: Path, tmp_path: Path) -> None:
    (project / "cassettes").mkdir()
    (project / "cassettes" / "run.parts").symlink_to(tmp_path / "outside")
    (project / "golden").symlink_to(tmp_path / "outside")
    with pytest.raises(HarnessError, match="leads outside the project"):
        atomic_write_bytes(project / "cassettes" / "run.parts" / "upload.bin", b"\0" * 10)
    with pytest.raises(HarnessError, match="leads outside the project"):
        atomic_write_text(project / "golden" / "case.yaml", "checks: []\n")
    with pytest.raises(HarnessError, match="leads outside the project"):
        save_cassette(CassetteFile(meta={"format_version": 1, "source": "simulator"}, interactions=[],
                                   path=project / "golden" / "judge.yaml"))
    _nothing_outside(tmp_path)


def test_a_link_that_stays_inside_is_written_through_and_stays_a_link(project: Path) -> None:
    (project / "real").mkdir()
    (project / "alias").symlink_to(project / "real")
    atomic_write_text(project / "alias" / "report.json", "{}\n")
    assert (project / "real" / "report.json").read_text() == "{}\n"
    assert (project / "alias").is_symlink()


def test_a_fifo_or_a_device_is_never_written_to(project: Path) -> None:
    fifo = project / "report.json"
    os.mkfifo(fifo)
    with time_limit(60):
        with pytest.raises(HarnessError, match="not a regular file"):
            atomic_write_text(fifo, "{}\n")
        with pytest.raises(HarnessError, match="not a regular file"):
            open_for_append(fifo)
    assert fifo.is_fifo()
    with pytest.raises(HarnessError, match="not a regular file"):
        atomic_write_text(Path("/dev/null"), "{}\n")


@pytest.mark.parametrize("planted", ["/dev/zero", "fifo", "dangling"])
def test_a_planted_journal_is_refused_before_it_is_read_or_written(project: Path, tmp_path: Path,
                                                                   planted: str) -> None:
    cassette = project / "cassettes" / "run.yaml"
    cassette.parent.mkdir()
    journal = journal_path(cassette)
    if planted == "fifo":
        os.mkfifo(journal)
    elif planted == "dangling":
        journal.symlink_to(tmp_path / "outside" / "journal")
    else:
        journal.symlink_to(planted)
    with time_limit(60), Simulator() as sim, pytest.raises(HarnessError) as raised:
        RecordingProxy(sim.base_url, cassette, mode="rewrite").stop()
    assert str(journal) in str(raised.value)
    _nothing_outside(tmp_path)


def test_a_journal_planted_after_the_start_is_never_written_through(project: Path, tmp_path: Path) -> None:
    cassette = project / "cassettes" / "run.yaml"
    cassette.parent.mkdir()
    with Simulator() as sim, RecordingProxy(sim.base_url, cassette, mode="rewrite") as proxy:
        journal_path(cassette).symlink_to(tmp_path / "outside" / "journal")
        _ask(proxy.base_url, "one")  # the client has its answer; the journal line is refused and reported
    assert proxy.save_failures and "leads outside the project" in proxy.save_failures[0]
    _nothing_outside(tmp_path)
    assert _asked(cassette) == ["one"]  # the save at stop wrote it
