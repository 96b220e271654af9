"""A cassette's file for one run: loading it as the mode says, writing the run back, and the recording lock.

What is kept on save depends on the mode: rewrite (and a first recording) keeps nothing old; fork keeps the
replayed prefix; all keeps the recordings the run did not renew; new_episodes keeps everything. The lock
(`harness.cassette.lock`) is taken here and only here, by `recording_turn`, for every recorder of a
cassette (use_cassette in a record mode, harness proxy), so they take turns, whole runs at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from harness.cassette import modes
from harness.cassette.fork import fork_provenance
from harness.cassette.format import CassetteFile, check_streams, load_cassette, save_cassette
from harness.cassette.headers import rewrite_request_id
from harness.cassette.lock import RecordingLock
from harness.cassette.mismatch import CassetteMismatch
from harness.cassette.modes import Mode
from harness.errors import CassetteError, HarnessError
from harness.normalize import Normalization
from harness.project import load_project


class Turn(Protocol):
    """A recorder's turn at a cassette, held until `release()`."""

    def release(self) -> None: ...


class _ReplayOnly:
    """The turn of a run that only replays: it writes nothing, so it waits for no one."""

    def release(self) -> None:
        pass


def recording_turn(path: str | Path, mode: Mode, *, timeout: float | None = None, who: str | None = None) -> Turn:
    """This run's turn at `path`: the recording lock when a run in `mode` may write the cassette, else nothing
    to wait for. Waits `timeout` seconds at most (else HARNESS_LOCK_TIMEOUT, else 300), saying after a second
    who holds it (`who` is how this one is named to the next waiter), then raises CassetteError."""
    if not modes.may_record(mode):
        return _ReplayOnly()
    return RecordingLock(path, timeout=timeout, who=who).acquire()


class Storage:
    """The file behind one run: what was recorded before (`recorded`), and `save` for what the run adds."""

    def __init__(self, path: str | Path, mode: Mode, *, note: str | None = None,
                 rewrite_request_ids: bool = False) -> None:
        self.path = Path(path)
        self.mode = mode
        self.note = note
        self.rewrite_request_ids = rewrite_request_ids  # request ids are kept unless asked
        self.existed = self.path.exists()
        if self.existed and mode != "rewrite":
            self.recorded = load_cassette(self.path)
            check_streams(self.recorded)  # once here, so that no replayed request pays for it
        elif mode == "none":
            raise CassetteError(
                "no cassette here, and mode 'none' only replays; record it first "
                "(mode='once', or pytest --record-mode=once)",
                file=self.path,
            )
        else:
            self.recorded = CassetteFile(meta={}, interactions=[], path=self.path)
        self.saved: Path | None = None  # where save() last wrote the cassette

    @property
    def write_protected(self) -> bool:
        return modes.write_protected(self.mode, self.existed)

    def rules(self, normalize: Normalization | None) -> Normalization:
        """The matching rules of this run: those stored in the cassette, the project's
        ([tool.loop-harness.matching], for every cassette in it), then the run's own."""
        try:
            stored = Normalization.from_data(self.recorded.meta.get("matching"), where="harness.matching")
        except HarnessError as err:
            raise CassetteError(str(err), file=self.path) from None
        return stored.merged(load_project(self.path.parent).matching).merged(normalize)

    def interactions_to_save(self, fresh: list[dict[str, Any]], *, played_order: Sequence[int],
                             fingerprint_of: Callable[[dict[str, Any]], bytes]) -> list[dict[str, Any]]:
        """What the file will hold: what the mode keeps of the old recordings, then `fresh` (redacted) ones.
        `fingerprint_of` tells a stored request's match key (mode all: a recording is renewed by a new one)."""
        if self.mode == "rewrite" or not self.existed:
            kept: list[dict[str, Any]] = []
        elif self.mode == "fork":  # the replayed prefix; the recorded rest is replaced by what the fork records
            kept = [self.recorded.interactions[position] for position in played_order]
        elif self.mode == "all":
            # Compared as written: a recording is renewed by the redacted form of the new one.
            renewed = {fingerprint_of(i["request"]) for i in fresh}
            kept = [i for i in self.recorded.interactions if fingerprint_of(i["request"]) not in renewed]
        else:
            kept = list(self.recorded.interactions)
        if self.rewrite_request_ids:
            for offset, interaction in enumerate(fresh):
                rewrite_request_id(interaction, len(kept) + offset)
        return kept + fresh

    def save(self, interactions: list[dict[str, Any]], *, provenance: dict[str, Any], rules: Normalization,
             played: int, divergence: CassetteMismatch | None) -> Path:
        """Write `interactions` (from `interactions_to_save`) atomically, with the run's provenance block."""
        meta = dict(self.recorded.meta) if self.mode in ("new_episodes", "all") and self.existed else {}
        meta.update(provenance)
        if self.mode == "fork" and self.existed and divergence is not None:
            meta = fork_provenance(self.recorded.meta, provenance, replayed=played,
                                   re_recorded=len(interactions) - played,
                                   first_divergent_request=divergence.position + 1, change=divergence.change)
        if rules:
            meta["matching"] = rules.to_data()  # stored, so a reviewer sees what matching leaves out
        if self.note:
            meta["note"] = self.note
        self.saved = save_cassette(CassetteFile(meta=meta, interactions=interactions, path=self.path))
        return self.saved
