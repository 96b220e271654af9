"""The bundled demo: two reference agents and their recorded scenarios, apart from the library.

- dayflow/: the morning-brief agent (`dayflow brief`); data_assistant/: the SQL self-correction agent
  (`data-assistant ask`); _console.py: what their commands share (client, -v trace, summary line).
- scenarios.py: every bundled run, how to record it and which cassette holds it; record.py:
  `harness record --demo`.
- checks.py: `promotions_filtered`; sim/: the scripted models `sim-dayflow` and `sim-sql`. Both join the
  library through entry points (pyproject.toml, harness/plugins.py): nothing in `harness` imports this
  package, except `harness record --demo` and `harness chaos --demo`, which run it when asked to.
"""
