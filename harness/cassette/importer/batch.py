"""Importing files and folders: one outcome per source file, written under the output folder with the
layout below each source folder kept; a bad file never stops the others."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.cassette.format import CassetteFile, save_cassette
from harness.cassette.importer.detect import IMPORTABLE_SUFFIXES
from harness.cassette.importer.single import SKIPPED_NOTE, import_file
from harness.errors import CassetteError, HarnessError


@dataclass(frozen=True)
class ImportOutcome:
    """One source file: where its import went, or why it could not be imported."""

    source: Path
    target: Path | None = None
    cassette: CassetteFile | None = None
    error: HarnessError | None = None

    @property
    def interactions(self) -> int:
        return len(self.cassette.interactions) if self.cassette else 0

    @property
    def skipped(self) -> tuple[int, str]:
        """(interactions left out because they went to other hosts, those hosts)."""
        note = SKIPPED_NOTE.match(str((self.cassette.meta if self.cassette else {}).get("note") or ""))
        return (int(note.group(1)), note.group(2)) if note else (0, "")

    @property
    def streamed(self) -> int:
        if not self.cassette:
            return 0
        return sum(1 for i in self.cassette.interactions if "events" in (i.get("response") or {}))


class ImportFailed(CassetteError):
    """Some sources could not be imported; the others were written. `failures` says which and why."""

    def __init__(self, failures: list[ImportOutcome], written: list[Path]) -> None:
        self.failures = failures
        self.written = written
        lines = [f"{len(failures)} file(s) could not be imported ({len(written)} imported):"]
        lines.extend(f"  {outcome.error}" for outcome in failures)
        super().__init__("\n".join(lines))


def _is_importable(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(IMPORTABLE_SUFFIXES)


def _target_name(relative: Path) -> Path:
    name = relative.name
    lower = name.lower()
    if lower.endswith(".yaml.gz"):
        name = name[: -len(".gz")]
    elif lower.endswith(".httprr.gz"):
        name = name[: -len(".httprr.gz")] + ".yaml"
    elif lower.endswith((".har", ".json", ".httprr")):
        name = name[: name.rfind(".")] + ".yaml"
    return relative.with_name(name)


def _unique(target: Path, source: Path, taken: set[Path]) -> Path:
    """Two sources that would land on one name (x.har beside x.yaml) keep their own suffix, then a number."""
    if target not in taken:
        return target
    candidate = target.with_name(source.name + ".yaml")
    number = 2
    while candidate in taken:
        candidate = target.with_name(f"{target.name.removesuffix('.yaml')}-{number}.yaml")
        number += 1
    return candidate


def _sources(sources: Iterable[str | Path], out_dir: Path) -> Iterator[tuple[Path, Path | None, str | None]]:
    """(file, path relative to the output folder, problem) for every file to import, in a stable order."""
    out_resolved = out_dir.resolve()
    for source in map(Path, sources):
        if source.is_dir():
            root = source.resolve()
            inside = out_resolved != root and root in out_resolved.parents
            files = sorted(p for p in source.rglob("*") if _is_importable(p))
            if inside:  # earlier imports written into a folder below the source are not sources
                files = [p for p in files if out_resolved not in p.resolve().parents]
            if not files:
                yield source, None, f"no cassette files ({', '.join(IMPORTABLE_SUFFIXES)}) in this folder"
            for file in files:
                yield file, _target_name(file.relative_to(source)), None
        elif source.is_file():
            yield source, _target_name(Path(source.name)), None
        elif source.exists():
            yield source, None, "not a regular file (a device or a pipe); a cassette is a file"
        else:
            yield source, None, "no such file or folder"


def iter_imports(
    sources: Iterable[str | Path],
    out_dir: str | Path,
    *,
    keep_foreign_hosts: bool = False,
    secret_headers: Iterable[str] = (),
    rewrite_request_ids: bool = False,
) -> Iterator[ImportOutcome]:
    """Import each source file (folders recursively) into `out_dir`, one outcome per file; never raises
    for a bad file, so one broken cassette does not stop the rest."""
    out_dir = Path(out_dir)
    secret_headers = tuple(secret_headers)
    taken: set[Path] = set()
    for source, relative, problem in list(_sources(sources, out_dir)):
        if relative is None:
            yield ImportOutcome(source=source, error=CassetteError(problem or "cannot import", file=source))
            continue
        target = _unique(out_dir / relative, source, taken)
        taken.add(target)
        try:
            cassette = import_file(
                source,
                keep_foreign_hosts=keep_foreign_hosts,
                secret_headers=secret_headers,
                rewrite_request_ids=rewrite_request_ids,
            )
            cassette.path = save_cassette(cassette, target)
        except HarnessError as err:
            yield ImportOutcome(source=source, error=err)
        except OSError as err:
            yield ImportOutcome(
                source=source, error=CassetteError(f"cannot write {target}: {err.strerror or err}", file=source)
            )
        else:
            yield ImportOutcome(source=source, target=target, cassette=cassette)


def import_paths(
    sources: Iterable[str | Path],
    out_dir: str | Path,
    *,
    keep_foreign_hosts: bool = False,
    secret_headers: Iterable[str] = (),
    rewrite_request_ids: bool = False,
) -> list[Path]:
    """Import files and folders into `out_dir`, keeping the layout below each folder; the written paths.

    Every importable file is written even when some fail; then `ImportFailed` (a CassetteError) names
    each failed file with its reason.
    """
    written: list[Path] = []
    failures: list[ImportOutcome] = []
    for outcome in iter_imports(
        sources,
        out_dir,
        keep_foreign_hosts=keep_foreign_hosts,
        secret_headers=secret_headers,
        rewrite_request_ids=rewrite_request_ids,
    ):
        if outcome.target is not None:
            written.append(outcome.target)
        else:
            failures.append(outcome)
    if failures:
        raise ImportFailed(failures, written)
    return written
