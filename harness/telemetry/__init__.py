"""GenAI spans of a run as it happens: the loop and the recorder emit them (OpenTelemetry,
optional). Below both; `harness export --otel` (harness.export) writes the same spans
for a finished trajectory.

Internal package: the public names are in `harness` (`from harness import ...`, harness/__init__.py).
"""
