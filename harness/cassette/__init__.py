"""Cassettes: the file format, matching, redaction, the recording/replay client and foreign imports."""
