"""Cassettes: the file, matching, redaction, the recording and replay client, foreign imports.

format (the YAML file, its schema, the parse cache, atomic writes) · storage (load and save as the mode says,
the recording turn and its lock) · match, lookup, normalize, sequence, drift (which recording a request is,
and how it changed when none is) · transport (the replay patch on httpx2's transports) · capture and redact
(what a recording keeps, secrets removed) · mismatch (the miss as an error a person can act on) · recorder
(`Cassette`, `use_cassette`: the public front over those parts) · importer, scan (foreign cassettes, secrets).
"""
