"""A node as a SimPy process: it sleeps until commanded, then runs a timed transition.

The process holds no state of its own; the :class:`~hpcpower.engine.cluster.Cluster`
keeps every node's state in arrays so policies can query many nodes at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import simpy

    from hpcpower.engine.cluster import Cluster


class Node:
    """The SimPy process of one node.

    Each command (switch on, switch off) succeeds the node's ``command`` event
    with the drawn duration; the process then waits that long and reports the
    end of the transition to the cluster. A transition cannot be cancelled.
    """

    __slots__ = ("cluster", "id", "command", "process")

    def __init__(self, cluster: Cluster, node_id: int) -> None:
        self.cluster = cluster
        self.id = node_id
        env = cluster.env
        self.command: simpy.Event = env.event()
        self.process: simpy.Process = env.process(self._run(env))

    def _run(self, env: simpy.Environment):
        while True:
            duration = yield self.command
            yield env.timeout(duration)
            # Re-arm before reporting, so a command given at this same instant
            # (for example switch on right after switching off) finds a fresh event.
            self.command = env.event()
            self.cluster._transition_done(self.id)

    def __repr__(self) -> str:
        return self.cluster.describe_node(self.id)
