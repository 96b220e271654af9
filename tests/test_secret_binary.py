"""Credentials inside binary bodies (issue 31, item 2): a PDF uploaded through the Files API (its key once in
plain bytes, once inside a deflate-compressed page stream), the same through `harness proxy`, the same in
a foreign cassette through `harness import`, a raw binary body, and base64 image and PDF sources inside a
Messages request. None of the planted keys may reach the disk, in any form a reader could recover (raw,
base64-decoded, or inflated from the PDF's streams), and every redacted request still replays.
"""

from __future__ import annotations

import base64
import contextlib
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import yaml

from harness.cassette.format import load_cassette
from harness.cassette.importer import import_paths
from harness.cassette.recorder import use_cassette
from harness.proxy import RecordingProxy
from harness.serve import ReplayServer
from harness.sim import Simulator
from tests.test_secrets import pieces_of

OFFLINE = "http://127.0.0.1:9"  # nothing listens there: a replay that tried the network would fail
PLAIN_KEY = "sk-ant-api03-PDFplainPLANTED-" + "p" * 24  # in the PDF's Info dictionary, as bytes
DEFLATED_KEY = "AKIAPDFDEFLATED7Q2Z9"  # an AWS access key id, inside a FlateDecode page stream
IMAGE_KEY = "sk-ant-api03-PNGtextPLANTED-" + "i" * 24  # in a PNG's tEXt chunk
PLANTED = (PLAIN_KEY, DEFLATED_KEY, IMAGE_KEY)


def pdf_with_keys() -> bytes:
    """A small, valid PDF: the plain key in /Author, the other in a compressed content stream."""
    page_text = f"BT /F1 12 Tf 72 720 Td (AWS key {DEFLATED_KEY} for the report) Tj ET".encode()
    stream = zlib.compress(page_text)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length " + str(len(stream)).encode() + b" /Filter /FlateDecode >>\nstream\n" + stream + b"\nendstream",
        b"<< /Author (" + PLAIN_KEY.encode() + b") /Title (Quarterly report) >>",
    ]
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 5 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def png_with_key() -> bytes:
    """A 1x1 PNG whose tEXt chunk holds a key (as a screenshot of a terminal's metadata might)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")

    header = chunk(b"IHDR", (1).to_bytes(4, "big") * 2 + b"\x08\x02\x00\x00\x00")
    text = chunk(b"tEXt", b"Comment\x00api key " + IMAGE_KEY.encode())
    pixels = chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
    return b"\x89PNG\r\n\x1a\n" + header + text + pixels + chunk(b"IEND", b"")


PDF = pdf_with_keys()


# ---------------------------------------------------------------------------------------------------
# What a reader of the files could recover


def _inflated_streams(raw: bytes) -> Iterator[bytes]:
    for match in re.finditer(rb"stream\r?\n(.*?)\r?\nendstream", raw, re.S):
        try:
            yield zlib.decompress(match.group(1))
        except zlib.error:
            continue


def _decoded_values(raw: bytes) -> Iterator[bytes]:
    """Every base64 value of a cassette (part contents, binary bodies, source data), decoded."""
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError:
        return

    def walk(value: Any) -> Iterator[bytes]:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("base64", "body_base64", "data") and isinstance(item, str):
                    with contextlib.suppress(ValueError):
                        yield base64.b64decode(item, validate=True)
                yield from walk(item)
        elif isinstance(value, list):
            for item in value:
                yield from walk(item)

    yield from walk(data)


def assert_no_planted_key_in(folder: Path) -> None:
    files = [path for path in folder.rglob("*") if path.is_file()]
    assert files, f"nothing was written to {folder}"
    for path in files:
        raw = path.read_bytes()
        decoded = [*_decoded_values(raw), raw]
        readable = decoded + [inflated for body in decoded for inflated in _inflated_streams(body)]
        for secret in PLANTED:
            for piece in pieces_of(secret):
                assert all(piece not in body for body in readable), f"{piece!r} of {secret[:14]}… is in {path}"


def upload(base_url: str) -> dict[str, Any]:
    client = anthropic.Anthropic(api_key="sim-key-for-tests", base_url=base_url, max_retries=0)
    try:
        return client.beta.files.upload(file=("report.pdf", PDF, "application/pdf")).to_dict()
    finally:
        client.close()


def test_the_pdf_really_hides_one_key_in_a_compressed_stream() -> None:
    # The probe is only worth something if the deflated key is not in the PDF's bytes as they stand.
    assert DEFLATED_KEY.encode() not in PDF and PLAIN_KEY.encode() in PDF
    assert any(DEFLATED_KEY.encode() in inflated for inflated in _inflated_streams(PDF))


# ---------------------------------------------------------------------------------------------------
# The recorder, the proxy, the importer


def test_a_key_in_a_pdf_upload_is_not_on_disk_after_recording_and_the_upload_replays(tmp_path: Path) -> None:
    path = tmp_path / "recorded" / "upload.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        live = upload(sim.base_url)
    assert_no_planted_key_in(path.parent)
    stored = load_cassette(path).interactions[0]["request"]["parts"][0]
    assert stored["filename"] == "report.pdf" and stored["content_type"] == "application/pdf"
    pdf = base64.b64decode(stored["base64"])
    assert b"<redacted:anthropic-key:1>" in pdf, "the plain key's place is marked"
    assert any(b"<redacted:aws-access-key-id:1>" in body for body in _inflated_streams(pdf)), "and the deflated one's"
    assert pdf.startswith(b"%PDF-1.7") and b"Quarterly report" in pdf, "the rest of the document is as it was"

    with use_cassette(path, mode="none") as cassette:  # the same PDF, a new boundary, the simulator gone
        assert upload(OFFLINE) == live
    assert cassette.unplayed == []


def test_a_key_in_a_pdf_upload_is_not_on_disk_after_proxying_and_serve_replays_it(tmp_path: Path) -> None:
    path = tmp_path / "proxied" / "upload.yaml"
    with Simulator() as sim, RecordingProxy(sim.base_url, path) as proxy:
        live = upload(proxy.base_url)
    assert_no_planted_key_in(path.parent)
    with ReplayServer([path]) as server:
        assert upload(server.base_url) == live


def _multipart(boundary: str, pdf: bytes, *, transport_headers: bool) -> bytes:
    extra = f"Content-Length: {len(pdf)}\r\nContent-Transfer-Encoding: binary\r\n" if transport_headers else ""
    return (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="report.pdf"\r\n'
            f"Content-Type: application/pdf\r\n{extra}\r\n"
        ).encode()
        + pdf
        + f"\r\n--{boundary}--\r\n".encode()
    )


FILE_ANSWER = (
    '{"id":"file_011PDF","type":"file","filename":"report.pdf","mime_type":"application/pdf",'
    f'"size_bytes":{len(PDF)},"created_at":"2026-11-30T00:00:00Z","downloadable":false}}'
)


def test_a_key_in_a_pdf_upload_is_not_on_disk_after_importing_and_the_upload_replays(tmp_path: Path) -> None:
    body = _multipart("vcrpyBoundary0123", PDF, transport_headers=False)
    source = tmp_path / "foreign" / "upload.yaml"
    source.parent.mkdir()
    source.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "interactions": [
                    {
                        "request": {
                            "method": "POST",
                            "uri": "https://api.anthropic.com/v1/files",
                            "body": body,
                            "headers": {
                                "Content-Type": ["multipart/form-data; boundary=vcrpyBoundary0123"],
                                "anthropic-beta": ["files-api-2025-04-14"],
                            },
                        },
                        "response": {
                            "status": {"code": 200, "message": "OK"},
                            "headers": {"Content-Type": ["application/json"]},
                            "body": {"string": FILE_ANSWER},
                        },
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    assert PLAIN_KEY.encode() in base64.b64decode(
        "".join(re.findall(r"^\s+([A-Za-z0-9+/=]+)$", source.read_text(), re.M))
    )
    [written] = import_paths([source], tmp_path / "imported")
    assert_no_planted_key_in(tmp_path / "imported")
    with use_cassette(written, mode="none") as cassette:
        assert upload(OFFLINE)["id"] == "file_011PDF"
    assert cassette.unplayed == []


def test_a_key_in_a_raw_binary_body_is_not_on_disk_after_importing(tmp_path: Path) -> None:
    source = tmp_path / "foreign" / "raw.yaml"
    source.parent.mkdir()
    raw = b"\x00\xffraw upload " + PDF  # not multipart: a body some clients PUT as it is
    source.write_text(
        yaml.safe_dump(
            {
                "interactions": [
                    {
                        "request": {
                            "method": "PUT",
                            "uri": "https://api.anthropic.com/v1/uploads/raw",
                            "body": raw,
                            "headers": {},
                        },
                        "response": {
                            "status": {"code": 204, "message": "No Content"},
                            "headers": {},
                            "body": {"string": ""},
                        },
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    [written] = import_paths([source], tmp_path / "imported")
    assert_no_planted_key_in(tmp_path / "imported")
    assert "body_base64" in load_cassette(written).interactions[0]["request"]


def test_keys_in_base64_image_and_pdf_sources_are_not_on_disk_and_the_request_replays(tmp_path: Path) -> None:
    content = [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(png_with_key()).decode()},
        },
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(PDF).decode()},
        },
        {"type": "text", "text": "Summarise the report and the screenshot."},
    ]

    def ask(base_url: str) -> str:
        client = anthropic.Anthropic(api_key="sim-key-for-tests", base_url=base_url, max_retries=0)
        message = client.messages.create(
            model="sim-echo", max_tokens=64, messages=[{"role": "user", "content": content}]
        )
        client.close()
        return message.content[0].text

    path = tmp_path / "sources" / "ask.yaml"
    with Simulator() as sim, use_cassette(path, mode="once"):
        live = ask(sim.base_url)
    assert_no_planted_key_in(path.parent)
    with use_cassette(path, mode="none") as cassette:
        assert ask(OFFLINE) == live
    assert cassette.unplayed == []


def test_an_upload_recorded_before_parts_were_rehashed_still_replays(tmp_path: Path) -> None:
    # Earlier recorders redacted a text part but kept the hash of the bytes sent; matching hashes what is
    # stored, so the live upload (redacted the same way) still matches.
    import hashlib

    path = tmp_path / "old.yaml"
    notes = f"ANTHROPIC_API_KEY={PLAIN_KEY}\n".encode()
    with Simulator() as sim, use_cassette(path, mode="once"):
        client = anthropic.Anthropic(api_key="sim-key-for-tests", base_url=sim.base_url, max_retries=0)
        live = client.beta.files.upload(file=("env.txt", notes, "text/plain")).id
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    part = data["interactions"][0]["request"]["parts"][0]
    assert part["text"] == "ANTHROPIC_API_KEY=<redacted:anthropic-key:1>\n"
    part["sha256"], part["size"] = hashlib.sha256(notes).hexdigest(), len(notes)  # as the old recorder wrote it
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with use_cassette(path, mode="none") as cassette:
        client = anthropic.Anthropic(api_key="sim-key-for-tests", base_url=OFFLINE, max_retries=0)
        assert client.beta.files.upload(file=("env.txt", notes, "text/plain")).id == live
    assert cassette.unplayed == []
