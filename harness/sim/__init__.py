"""A local Messages API simulator: real HTTP on loopback, scripted models, faults on demand.

Internal package: the public names are in `harness` (`from harness import ...`, harness/__init__.py).

    with Simulator(faults={0: "429"}) as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="sim")
        client.messages.create(model="sim-dayflow", ...)

Models (`sim-<name>`, the header `x-harness-sim-policy`, `model=`, or detected from the tools; see
`harness.sim.models`): `sim-auto` for any agent (calls its tools with schema-valid inputs, then answers;
also what a Claude model id no scripted policy claims gets), scripts (`scripts=[FILE]`, see
`harness.sim.script`), a function (`Simulator(model=callable)`, see `harness.sim.function_model`) and the
scripted policies dayflow, sql, echo, repeat, max-tokens, refuse, pause-turn, context-window.
Fault kinds: see `FAULT_KINDS`. Rate limits with real 429s: `Simulator(rate_limits=RateLimits(rpm=120))`,
see `harness.sim.ratelimit`.
Message threads (beta `message-threads-2026-08-12`, what the SDK's tool runner uses) are held by the
server unless `Simulator(threads=False)`; see `harness.sim.threads`.
Today's API: structured outputs (`harness.sim.structured`), server tools played with synthetic results
(`harness.sim.server_tools`), Anthropic-defined client tools (`harness.sim.defined_tools`), compaction and
context-management edits (`harness.sim.context_edits`).
"""

from harness.sim.faults import FAULT_KINDS, Fault
from harness.sim.function_model import SimulatedApiError
from harness.sim.policies import POLICIES
from harness.sim.ratelimit import RateLimits
from harness.sim.server import Served, Simulator
from harness.sim.threads import MESSAGE_THREADS_BETA

__all__ = [
    "FAULT_KINDS", "MESSAGE_THREADS_BETA", "POLICIES", "Fault", "RateLimits", "Served", "SimulatedApiError",
    "Simulator",
]
