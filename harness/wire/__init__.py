"""The wire: HTTP bodies and headers as a cassette stores them, server-sent events, multipart.

A foundation: used by the run model, the cassette, the servers, the simulator and chaos; it
imports nothing of the harness but errors.
"""
