"""The wire: HTTP bodies and headers as a cassette stores them, server-sent events, multipart.

Internal package: the public names are in `harness` (`from harness import ...`, harness/__init__.py).

A foundation: used by the run model, the cassette, the servers, the simulator and chaos; it
imports nothing of the harness but errors.
"""
