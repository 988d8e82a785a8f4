"""The stack-wide parts (`gcp:project`, `gcp:region`, `gcp:zone`, `ai-infra:prefix`, `labels`,
`protect`, `network`, `buckets`): the project services, the VPC every system joins and the
stack's buckets. This face declares the registry entry (`SYSTEM`); the code is in `system.py`
and the shared modules it composes (`components/network.py`, `buckets.py`, `services.py`).
"""

from components.stackwide import system
from components.stackwide.system import StackHandle
from components.system import Stage, Step, System

SYSTEM = System(
    name="stack",
    title="Stack-wide",
    keys=("project", "region", "zone", "prefix", "labels", "protect", "network", "buckets"),
    problems=system.problems,
    claims=system.claims,
    services=system.services,
    builds=(Step(Stage.FOUNDATION, "stack", system.build),),
    describe=system.describe,
    outputs=system.outputs,
)

__all__ = ["SYSTEM", "StackHandle"]
