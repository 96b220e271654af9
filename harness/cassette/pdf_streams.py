"""The text a PDF keeps compressed: its `/FlateDecode` streams, opened so the redactor can search them.

A PDF's page text, metadata streams and embedded files are mostly deflate-compressed, so a key in a
document is not in its bytes as they stand. `rewrite_flate_streams` inflates each such stream (bounded:
a stream that inflates past the limit is left as it is, never read whole), hands its bytes to a function
(the redactor's), and where they changed deflates them again and writes the stream's new `/Length`. Only
streams with no other filter are opened (a `/DCTDecode` image is pixels, not text). The file's cross-
reference offsets are not rewritten: a cassette keeps the upload to match it and to show it, never to
send it again, and PDF readers rebuild a table that is off.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable

PDF_MAGIC = b"%PDF-"
MAX_INFLATED = 32 * 1024 * 1024  # per stream: past this it is left alone (a deflate bomb stays a small read)
# `<< ... /Filter /FlateDecode ... >> stream\r\n` ... `endstream`: the dictionary is the last `<<` before it.
_STREAM = re.compile(rb"stream(\r\n|\n)")
_END = re.compile(rb"(\r\n|\n|\r)?endstream")
_FLATE_ONLY = re.compile(rb"/Filter\s*(?:/FlateDecode|/Fl\b|\[\s*/FlateDecode\s*\])")
_OTHER_FILTER = re.compile(rb"/Filter\s*\[[^\]]*/(?!FlateDecode)[A-Za-z0-9]+")
_PREDICTOR = re.compile(rb"/DecodeParms")
_LENGTH = re.compile(rb"/Length\s+(\d+)(?!\s+\d+\s+R)")


def holds_pdf(raw: bytes) -> bool:
    """A PDF, or bytes with one inside (an archive, a body some client wrapped): its streams are worth opening."""
    return PDF_MAGIC in raw


def _inflate(data: bytes) -> bytes | None:
    decompressor = zlib.decompressobj()
    try:
        out = decompressor.decompress(data, MAX_INFLATED + 1)
    except zlib.error:
        return None
    return None if len(out) > MAX_INFLATED or decompressor.unconsumed_tail else out


def rewrite_flate_streams(raw: bytes, change: Callable[[bytes], bytes]) -> bytes:
    """`raw` with every Flate-only stream's inflated bytes passed through `change`, re-deflated where changed."""
    out: list[bytes] = []
    cursor = 0
    for opened in _STREAM.finditer(raw):
        start = opened.end()
        if start < cursor:
            continue
        dictionary_at = raw.rfind(b"<<", max(cursor, start - 4096), opened.start())
        dictionary = raw[dictionary_at : opened.start()] if dictionary_at != -1 else b""
        if not _FLATE_ONLY.search(dictionary) or _OTHER_FILTER.search(dictionary) or _PREDICTOR.search(dictionary):
            continue
        length = _LENGTH.search(dictionary)
        declared = int(length.group(1)) if length else None
        after = raw[start + declared : start + declared + 20] if declared is not None else b""
        if declared is not None and after.lstrip(b"\r\n").startswith(b"endstream"):
            end = start + declared
        else:
            ended = _END.search(raw, start)
            if ended is None:
                continue
            end = ended.start()
        inflated = _inflate(raw[start:end])
        if inflated is None:
            continue
        changed = change(inflated)
        if changed == inflated:
            continue
        compressed = zlib.compress(changed)
        new_dictionary = dictionary
        if length is not None:
            new_dictionary = dictionary[: length.start(1)] + str(len(compressed)).encode() + dictionary[length.end(1) :]
        out.append(raw[cursor:dictionary_at])
        out.append(new_dictionary)
        out.append(raw[opened.start() : start])
        out.append(compressed)
        cursor = end
    if not out:
        return raw
    out.append(raw[cursor:])
    return b"".join(out)
