"""Trajectories where people already look: OpenTelemetry GenAI traces and inspect_ai eval logs.

`harness export` (harness/commands/export.py) writes a cassette's trajectory as OTLP (otel.py, extra
`loop-harness[otel]`) or as an inspect_ai eval log (inspect_log.py, extra `loop-harness[inspect]`); live.py
gives a live or recording run the same spans as it goes. genai.py spells the semantic conventions for all of them.
Nothing here is imported unless asked for: OpenTelemetry and inspect_ai stay optional.
"""
