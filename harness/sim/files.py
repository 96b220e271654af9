"""The Files API, simulated: upload (multipart/form-data), list, metadata, download, delete.

Files live in memory for the simulator's lifetime. Ids are a hash of the seed, the content, the
filename and the upload's position, so one run always gives the same ids.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from harness.sim import ids
from harness.sim.resources import Answer, Call, invalid, method_not_allowed, not_found, page
from harness.wire.multipart import split_parts

CREATED_AT = "2026-09-07T08:00:00Z"  # the simulator's fixed clock (see server.SIMULATED_NOW)


@dataclass
class _File:
    metadata: dict[str, Any]
    content: bytes


class Files:
    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._files: dict[str, _File] = {}
        self._uploads = 0

    def answer(self, call: Call) -> Answer:
        segments = call.segments
        if not segments:
            if call.method == "POST":
                return self._upload(call)
            if call.method == "GET":
                return Answer.json(page([f.metadata for f in self._files.values()], call.query))
            raise method_not_allowed(call)
        found = self._files.get(segments[0])
        if found is None or len(segments) > 2 or (len(segments) == 2 and segments[1] != "content"):
            raise not_found(f"File not found: {segments[0]}" if found is None else "Not Found")
        if len(segments) == 2:
            if call.method != "GET":
                raise method_not_allowed(call)
            return Answer(200, found.content, {"content-type": found.metadata["mime_type"]})
        if call.method == "GET":
            return Answer.json(found.metadata)
        if call.method == "DELETE":
            del self._files[segments[0]]
            return Answer.json({"id": segments[0], "type": "file_deleted"})
        raise method_not_allowed(call)

    def _upload(self, call: Call) -> Answer:
        parts = split_parts(call.body)
        if parts is None:
            raise invalid("Expected a multipart/form-data body with a `file` part")
        upload = next((part for part in parts if part.name == "file" and part.filename is not None), None)
        if upload is None:
            raise invalid("file: Field required")
        file_id = ids.stable_id("file_sim_", self.seed, hashlib.sha256(upload.content).hexdigest(),
                                upload.filename, self._uploads)
        self._uploads += 1
        metadata = {
            "id": file_id,
            "type": "file",
            "filename": upload.filename,
            "mime_type": (upload.content_type or "application/octet-stream").split(";")[0].strip(),
            "size_bytes": len(upload.content),
            "created_at": CREATED_AT,
            "downloadable": True,
        }
        self._files[file_id] = _File(metadata, upload.content)
        return Answer.json(metadata)
