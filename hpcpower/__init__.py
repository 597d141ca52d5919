"""hpcpower: simulate HPC clusters whose idle nodes can be powered down.

The main entry points::

    from hpcpower import Simulation, load_platform, load_workload, make_policy
"""

__version__ = "0.1.0"

from hpcpower.engine.simulation import Simulation  # noqa: E402
from hpcpower.errors import HpcpowerError, IllegalTransition, InputError, PolicyError  # noqa: E402
from hpcpower.platform import NodeState, Platform, load_platform  # noqa: E402
from hpcpower.policies.registry import POLICIES, make_policy  # noqa: E402
from hpcpower.workload import load_workload  # noqa: E402
from hpcpower.workload.job import Job, Workload  # noqa: E402

__all__ = [
    "POLICIES",
    "HpcpowerError",
    "IllegalTransition",
    "InputError",
    "Job",
    "NodeState",
    "Platform",
    "PolicyError",
    "Simulation",
    "Workload",
    "__version__",
    "load_platform",
    "load_workload",
    "make_policy",
]
