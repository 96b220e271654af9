"""Trajectories where people already look: OpenTelemetry GenAI traces and inspect_ai eval logs.

Internal package: the public names are in `harness` (`from harness import ...`, harness/__init__.py).

`harness export` (harness/commands/export.py) writes a cassette's trajectory as OTLP (otel.py, extra
`loop-harness[otel]`) or as an inspect_ai eval log (inspect_log.py, extra `loop-harness[inspect]`). The spans a
live or recording run gives as it goes, and the GenAI semantic conventions they all spell, are harness.telemetry
(below the loop and the cassette, which emit them).
Nothing here is imported unless asked for: OpenTelemetry and inspect_ai stay optional.
"""
