"""Cassettes: the file, matching, redaction, the recording and replay client, foreign imports.

Internal package: the public names are in `harness` (`from harness import ...`, harness/__init__.py).

The cassette floor (tests/test_layers.py): above the foundations (harness.wire, harness.files, harness.safe_yaml),
the run model, the loop and the project with its matching rules (harness.normalize); below the trajectory.

format (load, dump, save) with schema (schema.json, `validate`) and parse_cache · storage (load and save as the
mode says, the recording turn and its lock) · match, lookup, sequence, drift (which recording a request is, and
how it changed when none is) · transport (the replay patch on httpx2's transports, answering against its small
`Player` protocol) · capture, headers, credentials and redact (what a recording keeps: headers allow-listed, the
credentials a request sent and the shapes of any other found, every one of them removed) · mismatch (the miss as an
error a person can act on) · recorder (`Cassette`, `use_cassette`: the public front over those parts) ·
importer, scan (foreign cassettes, secrets).
"""
