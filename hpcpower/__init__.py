"""hpcpower: simulate HPC clusters whose idle nodes can be powered down.

The main entry points::

    from hpcpower import Simulation, load_platform, load_workload, make_policy

Names are imported when first used, so that importing a reader or an
SNF-ICON piece does not load SimPy, the engine or the policies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hpcpower._version import __version__

#: Public name -> module that defines it.
_EXPORTS = {
    "POLICIES": "hpcpower.policies.registry",
    "make_policy": "hpcpower.policies.registry",
    "Simulation": "hpcpower.simulation",
    "Decision": "hpcpower.engine.contract",
    "Planned": "hpcpower.engine.contract",
    "Policy": "hpcpower.engine.contract",
    "SystemView": "hpcpower.engine.contract",
    "HpcpowerError": "hpcpower.errors",
    "IllegalTransition": "hpcpower.errors",
    "InputError": "hpcpower.errors",
    "PolicyError": "hpcpower.errors",
    "NodeState": "hpcpower.states",
    "Platform": "hpcpower.platform",
    "load_platform": "hpcpower.platform",
    "load_workload": "hpcpower.workload",
    "Job": "hpcpower.workload.job",
    "Workload": "hpcpower.workload.job",
    "sweep": "hpcpower.experiments.runner",
}

__all__ = [
    "POLICIES",
    "Decision",
    "HpcpowerError",
    "IllegalTransition",
    "InputError",
    "Job",
    "NodeState",
    "Planned",
    "Platform",
    "Policy",
    "PolicyError",
    "Simulation",
    "SystemView",
    "Workload",
    "__version__",
    "load_platform",
    "load_workload",
    "make_policy",
    "sweep",
]


#: Subpackages and modules reachable as attributes (``hpcpower.workload``), imported when used.
_SUBMODULES = frozenset(
    {
        "cli",
        "engine",
        "errors",
        "experiments",
        "planning",
        "platform",
        "policies",
        "results",
        "scenario",
        "simulation",
        "states",
        "workload",
    }
)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"hpcpower.{name}")
    else:
        raise AttributeError(f"module 'hpcpower' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | _SUBMODULES)


if TYPE_CHECKING:
    from hpcpower.errors import HpcpowerError, IllegalTransition, InputError, PolicyError
    from hpcpower.experiments.runner import sweep
    from hpcpower.platform import Platform, load_platform
    from hpcpower.policies.registry import POLICIES, make_policy
    from hpcpower.simulation import Simulation
    from hpcpower.states import NodeState
    from hpcpower.workload import load_workload
    from hpcpower.workload.job import Job, Workload
