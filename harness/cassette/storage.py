"""A cassette's file for one run: loading it as the mode says, writing the run back, and the recording lock.

What is kept on save depends on the mode: rewrite (and a first recording) keeps nothing old; fork keeps the
replayed prefix; all keeps the recordings the run did not renew; new_episodes keeps everything. A run none of
whose requests was answered (every one failed to connect, a dead base URL, or got an error status, a wrong base
URL's 404s or a bad key's 401s) never replaces answered recordings (`refuse_unanswered`), nor does a run that
lost its upstream midway (a request failed to connect and nothing answered after it), and a connection failure
never renews an answered recording in mode all. The lock
(`harness.cassette.lock`) is taken here and only here, by `recording_turn`, for every recorder of a
cassette (use_cassette in a record mode, harness proxy), so they take turns, whole runs at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from harness.cassette import modes, owners
from harness.cassette.fork import fork_provenance
from harness.cassette.format import CassetteFile, check_streams, load_cassette, save_cassette
from harness.cassette.headers import rewrite_request_id
from harness.cassette.lock import RecordingLock
from harness.cassette.mismatch import CassetteMismatch
from harness.cassette.modes import Mode
from harness.errors import CassetteError, HarnessError
from harness.normalize import Normalization
from harness.project import load_project


class UnansweredRun(CassetteError):
    """A run whose new recordings are no recording (`Storage.refuse_unanswered`): nothing was written."""


def unanswered_reason(fresh: Sequence[dict[str, Any]]) -> str:
    """What went wrong with a run none of whose requests was answered, in a few words for one line."""
    failures = [i["error"] for i in fresh if isinstance(i.get("error"), dict)]
    if len(failures) == len(fresh):
        first = failures[0]
        return (f"every request of this run failed to connect ({len(fresh)}; the first {first.get('kind', 'error')}: "
                f"{first.get('message', '')}); check the base URL")
    statuses = sorted({str(i.get("response", {}).get("status", "no answer")) for i in fresh})
    return f"every request of this run got an error ({', '.join(statuses)}); check the base URL and the key"


def answered(interactions: Sequence[dict[str, Any]]) -> bool:
    """Whether any of `interactions` got an answer that is not an error."""
    return any(_answered(interaction) for interaction in interactions)


def _answered(interaction: dict[str, Any]) -> bool:
    """An exchange that got an answer that is not an error (a status under 400)."""
    response = interaction.get("response")
    return "error" not in interaction and isinstance(response, dict) and int(response.get("status") or 0) < 400


def _lost_upstream(fresh: Sequence[dict[str, Any]]) -> str | None:
    """Why a run lost its upstream midway, or None: a request that failed to connect (nothing listened: a simulator
    stopped, a route gone) with no answer after it. A connect failure a retry got past is a recorded retry, and a
    dropped or timed-out answer may be a fault the run asked for; neither counts."""
    last = max((n for n, interaction in enumerate(fresh) if _answered(interaction)), default=-1)
    for number, interaction in enumerate(fresh[last + 1:], start=last + 2):
        error = interaction.get("error")
        if last >= 0 and isinstance(error, dict) and error.get("kind") == "connect":
            return (f"request #{number} of this run failed to connect after the upstream had answered "
                    f"({error.get('message', '')}), and nothing answered after it: the run lost its upstream")
    return None


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
        # Set by the pytest plugin: the session that saves, so that other tests' recordings are kept.
        self.session: owners.Session | None = None
        self._on_disk: CassetteFile | None = None  # rewrite: the file as it is at save time (`on_disk`)
        self._owners: list[list[str]] | None = None  # each saved interaction's tests, from `interactions_to_save`

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

    def on_disk(self) -> list[dict[str, Any]]:
        """The recordings the file holds now: as loaded, or (rewrite loads nothing) read at save time, under the
        recording lock; a file that cannot be read is treated as holding none, as rewrite always did."""
        if self.mode != "rewrite" or not self.path.exists():
            return self.recorded.interactions
        if self._on_disk is None:
            try:
                self._on_disk = load_cassette(self.path)
            except CassetteError:
                self._on_disk = CassetteFile(meta={}, interactions=[], path=self.path)
        return self._on_disk.interactions

    def interactions_to_save(self, fresh: list[dict[str, Any]], *, played_order: Sequence[int],
                             fingerprint_of: Callable[[dict[str, Any]], bytes],
                             runs: Sequence[tuple[str, list[dict[str, Any]]]] | None = None) -> list[dict[str, Any]]:
        """What the file will hold: what the mode keeps of the old recordings, then `fresh` (redacted) ones.
        `fingerprint_of` tells a stored request's match key (mode all: a recording is renewed by a new one).
        With `session` set (the pytest plugin), recordings of the tests it does not renew are kept whatever the
        mode (harness.cassette.owners); `runs` are several tests' recordings, each under its node id."""
        runs = list(runs) if runs is not None else [(self.session.test if self.session else "", fresh)]
        every = [interaction for _, recorded in runs for interaction in recorded]
        new = {id(interaction) for interaction in every}
        self.refuse_unanswered(every)
        if self.mode == "fork":  # the replayed prefix; the recorded rest is replaced by what the fork records
            kept = [self.recorded.interactions[position] for position in played_order] if self.existed else []
            self._owners = None
            merged = kept + every
        else:
            # Outside pytest rewrite keeps nothing old, and reads nothing.
            fresh_start = not self.existed or (self.mode == "rewrite" and self.session is None)
            old = [] if fresh_start else self.on_disk()
            stored = owners.stored_owners((self._on_disk or self.recorded).meta, len(old))
            merged, owned = owners.merge(
                old, stored, runs, session=self.session or owners.Session(renewing=frozenset()),
                replaces=self.mode == "rewrite", renewed_by=fingerprint_of if self.mode == "all" else None,
                fingerprint_of=fingerprint_of)
            self._owners = owned if any(owned) else None  # (mode all: a connection failure renews nothing)
        if self.rewrite_request_ids:
            added = [i for i in merged if id(i) in new]
            for offset, interaction in enumerate(added):
                rewrite_request_id(interaction, len(merged) - len(added) + offset)
        return merged

    def refuse_unanswered(self, fresh: Sequence[dict[str, Any]]) -> None:
        """UnansweredRun, and nothing written, when the run would replace answered recordings (rewrite, all, fork
        over a cassette that holds some) and none of its own was answered: every request failed to connect (a
        dead base URL) or got an error status (a wrong base URL's 404s, a bad key's 401s)."""
        if not fresh or not (self.existed and self.mode in ("rewrite", "all", "fork")):
            return
        lost = self.mode != "all" and _lost_upstream(fresh)  # (all: a connection failure renews nothing anyway)
        if not lost and any(_answered(interaction) for interaction in fresh):
            return
        if not any(_answered(interaction) for interaction in self.on_disk()):
            return
        reason = lost or unanswered_reason(fresh)
        raise UnansweredRun(f"not saved: {reason}; the previous recording is kept", file=self.path)

    def save(self, interactions: list[dict[str, Any]], *, provenance: dict[str, Any], rules: Normalization,
             played: int, divergence: CassetteMismatch | None) -> Path:
        """Write `interactions` (from `interactions_to_save`) atomically, with the run's provenance block."""
        meta = dict(self.recorded.meta) if self.mode in ("new_episodes", "all") and self.existed else {}
        meta.update(provenance)
        if self.mode == "fork" and self.existed and divergence is not None:
            meta = fork_provenance(self.recorded.meta, provenance, replayed=played,
                                   re_recorded=len(interactions) - played,
                                   first_divergent_request=divergence.position + 1, change=divergence.change)
        meta.pop(owners.OWNERS_KEY, None)
        if self._owners is not None and len(self._owners) == len(interactions):
            meta[owners.OWNERS_KEY] = self._owners  # which tests play which recording: the next save merges
        if rules:
            meta["matching"] = rules.to_data()  # stored, so a reviewer sees what matching leaves out
        if self.note:
            meta["note"] = self.note
        self.saved = save_cassette(CassetteFile(meta=meta, interactions=interactions, path=self.path))
        return self.saved
