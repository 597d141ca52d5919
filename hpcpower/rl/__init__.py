"""Reinforcement learning for power management: a Gymnasium environment and agents as policies.

* :class:`PowerEnv` (needs gymnasium: ``pip install "hpcpower[rl]"``): the
  scheduler starts jobs, the agent decides which nodes are powered.
* :class:`AgentPolicy`: a trained agent as an ordinary policy
  (``hpcpower run ... --policy rl:PATH``); numpy agents need nothing more.
* :class:`MlpAgent`, :func:`save_mlp`, :func:`load_agent`: agents in small files.

Names are imported when first used, so that ``import hpcpower.rl`` loads
neither gymnasium nor torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Public name -> module that defines it.
_EXPORTS = {
    "PowerEnv": "hpcpower.rl.env",
    "AgentPolicy": "hpcpower.rl.agent",
    "ConstantAgent": "hpcpower.rl.agent",
    "MlpAgent": "hpcpower.rl.agent",
    "load_agent": "hpcpower.rl.agent",
    "load_agent_policy": "hpcpower.rl.agent",
    "save_mlp": "hpcpower.rl.agent",
    "AgentPowerManager": "hpcpower.rl.manager",
    "GLOBAL_FEATURES": "hpcpower.rl.features",
    "NODE_FEATURES": "hpcpower.rl.features",
}

__all__ = [
    "GLOBAL_FEATURES",
    "NODE_FEATURES",
    "AgentPolicy",
    "AgentPowerManager",
    "ConstantAgent",
    "MlpAgent",
    "PowerEnv",
    "load_agent",
    "load_agent_policy",
    "save_mlp",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hpcpower.rl' has no attribute {name!r}")
    if module == "hpcpower.rl.env":
        from hpcpower.errors import require

        require("gymnasium", "rl", "hpcpower.rl.PowerEnv")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from hpcpower.rl.agent import (
        AgentPolicy,
        ConstantAgent,
        MlpAgent,
        load_agent,
        load_agent_policy,
        save_mlp,
    )
    from hpcpower.rl.env import PowerEnv
    from hpcpower.rl.features import GLOBAL_FEATURES, NODE_FEATURES
    from hpcpower.rl.manager import AgentPowerManager
