"""A local Messages API simulator: real HTTP on loopback, scripted models, faults on demand.

    with Simulator(faults={0: "429"}) as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="sim")
        client.messages.create(model="sim-dayflow", ...)

Policies (model `sim-<name>`, header `x-harness-sim-policy`, `policy=`, or detected from the tools):
dayflow, sql, echo, repeat, max-tokens, refuse, pause-turn. Fault kinds: see `FAULT_KINDS`.
"""

from harness.sim.faults import FAULT_KINDS, Fault
from harness.sim.policies import POLICIES
from harness.sim.server import Served, Simulator

__all__ = ["FAULT_KINDS", "POLICIES", "Fault", "Served", "Simulator"]
