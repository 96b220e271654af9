"""One foreign cassette file as ours, in memory and validated: detected, read by its format's reader,
each exchange converted as the recorder would store it, with every credential the file's requests sent
scrubbed from every exchange."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness.cassette.format import CassetteFile, load_cassette
from harness.cassette.headers import credentials_sent
from harness.cassette.importer import go_vcr, har, httprr, langchain, one_exchange, r_vcr, ruby_vcr, vcrpy
from harness.cassette.importer.convert import MESSAGES_PATH, convert, is_anthropic, recorded_at, sdk_version
from harness.cassette.importer.detect import (
    GO_VCR,
    HAR,
    HARNESS,
    HTTPRR,
    HTTPRR_MAGIC,
    LANGCHAIN_YAML,
    LANGCHAIN_YAML_GZ,
    ONE_EXCHANGE_JSON,
    PYDANTIC_AI_YAML,
    R_VCR,
    RUBY_VCR,
    VCRPY_JSON,
    VCRPY_YAML,
    read_document,
    read_head,
)
from harness.cassette.importer.exchange import Exchange
from harness.cassette.schema import FORMAT_VERSION, validate
from harness.errors import CassetteError
from harness.files import read_text_bounded
from harness.jsondata import run_fingerprints
from harness.safe_yaml import refuse_what_json_cannot_hold

Reader = Callable[[Any, Path], Iterator[Exchange]]
READERS: dict[str, Reader] = {
    VCRPY_YAML: vcrpy.read,
    VCRPY_JSON: vcrpy.read,
    PYDANTIC_AI_YAML: vcrpy.read,
    HAR: har.read,
    LANGCHAIN_YAML_GZ: langchain.read,
    LANGCHAIN_YAML: langchain.read,
    ONE_EXCHANGE_JSON: one_exchange.read,
    RUBY_VCR: ruby_vcr.read,
    R_VCR: r_vcr.read,
    GO_VCR: go_vcr.read,
    HTTPRR: httprr.read,
}


SKIPPED_NOTE = re.compile(r"^skipped (\d+) non-Anthropic interaction\(s\) on import: (.*)$")


def skipped_note(hosts: list[str]) -> str:
    return f"skipped {len(hosts)} non-Anthropic interaction(s) on import: {', '.join(sorted(set(hosts)))}"


@contextlib.contextmanager
def _unexpected_shape(path: Path, where: str) -> Iterator[None]:
    """A foreign file shaped in a way no check above foresaw is still bad input, named, never a crash."""
    try:
        yield
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise CassetteError(f"unexpected structure ({type(err).__name__}: {err})", file=path, where=where) from None


def detect_format(path: str | Path) -> str:
    """One of FORMATS, read from the file's content (never from its name alone)."""
    return read_document(Path(path))[0]


def import_file(
    path: str | Path,
    *,
    keep_foreign_hosts: bool = False,
    secret_headers: Iterable[str] = (),
    rewrite_request_ids: bool = False,
) -> CassetteFile:
    """A foreign cassette as ours, in memory and validated. Exchanges with hosts other than the Messages
    API are left out (the count and hosts go in `harness.note`) unless `keep_foreign_hosts`; kept, they
    are scrubbed like the rest."""
    path = Path(path)
    kind, data = read_document(path)
    if kind == HARNESS:
        return load_cassette(path)
    with _unexpected_shape(path, "$"):
        exchanges = list(READERS[kind](data, path))

    # Every credential any request of the file carried, scrubbed from every exchange (as the recorder
    # does): a key sent as one request's x-api-key may be pasted into another's prompt, and a token a
    # left-out refresh call obtained may be echoed in a kept one.
    headers = tuple(secret_headers)
    secrets = sorted(
        {
            secret
            for exchange in exchanges
            for secret in credentials_sent(exchange.request_headers, urlsplit(exchange.uri), headers)
        }
    )
    interactions: list[dict[str, Any]] = []
    skipped_hosts: list[str] = []
    first_api: Exchange | None = None
    for exchange in exchanges:
        url = urlsplit(exchange.uri)
        if not is_anthropic(url.hostname or "", url.path):
            if not keep_foreign_hosts:
                skipped_hosts.append(url.hostname or exchange.uri)
                continue
        elif first_api is None:
            first_api = exchange
        with _unexpected_shape(path, exchange.where):
            interactions.append(
                convert(exchange, len(interactions), path, secrets, rewrite_request_ids=rewrite_request_ids)
            )

    first_messages_body = next(
        (i["request"].get("body") for i in interactions if i["request"]["path"] == MESSAGES_PATH), None
    )
    first = first_api or (exchanges[0] if exchanges else None)
    meta: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "source": "imported",
        "recorded_at": recorded_at(first) if first else None,
        "endpoint": (urlsplit(first.uri).hostname or None) if first else None,
        "sdk_version": sdk_version(first_api.request_headers) if first_api else None,
        "fingerprints": run_fingerprints(first_messages_body),
        "imported_from": {"path": path.as_posix(), "format": kind},
    }
    if skipped_hosts:
        meta["note"] = skipped_note(skipped_hosts)
    cassette = CassetteFile(meta=meta, interactions=interactions, path=None)
    refuse_what_json_cannot_hold(cassette.to_data(), file=path)  # a !!set or !!binary inside a parsed body
    validate(cassette.to_data(), file=path)
    return cassette


def load_any_cassette(path: str | Path) -> CassetteFile:
    """Ours through `load_cassette`; anything else this package can read, imported in memory."""
    path = Path(path)
    gzipped, head = read_head(path)
    text = "" if gzipped or head.startswith(HTTPRR_MAGIC) else read_text_bounded(path)
    if text and re.search(r"(?m)^harness:", text):
        if re.search(r"(?m)^  kind: agent-sdk-transport$", text):  # the Agent SDK's frames: its model calls
            from harness.cassette.agent_sdk_frames import as_cassette

            return as_cassette(path)
        return load_cassette(path)
    # In memory only (show, trajectories, evals): other hosts stay, redacted, so a trajectory can say why
    # it skipped them; `harness import` is what leaves them out of a written file.
    return import_file(path, keep_foreign_hosts=True)
