"""The demo agents' scripted models for the simulator, added through the entry point group
`loop_harness.sim_models` (pyproject.toml): `sim-dayflow` and `sim-sql`, each also chosen for a request
that names no model but offers its agent's first tool (read_inbox, query_db)."""

from __future__ import annotations

from harness.sim.policies import AddedPolicy
from harness_demo.sim.dayflow import dayflow
from harness_demo.sim.sql import sql

DAYFLOW = AddedPolicy(dayflow, answers_tools=("read_inbox",))
SQL = AddedPolicy(sql, answers_tools=("query_db",))
