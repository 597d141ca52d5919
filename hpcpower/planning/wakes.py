"""IPM's wake rule over a plan's first appearances: numpy form and compiled twin.

A power manager that plans the queue wakes each sleeping node of the plan at
its first planned start minus its mean switch-on time: due now (or past), it
is switched on in this pass; later, a pass is asked for then. On a large
machine a plan's first appearances hold hundreds of nodes that share a few
planned starts, so most later wake times repeat; both forms drop each
repeat that follows its equal, which keeps the first appearance of every
distinct time in order (what ``dict.fromkeys`` of all of them keeps).
"""

from __future__ import annotations

import numpy as np

from hpcpower.planning._numba import kernel
from hpcpower.planning.common import EPS, SLEEPING


def split_wakes(
    nodes: np.ndarray, starts: np.ndarray, state: np.ndarray, lead: np.ndarray, now: float
) -> tuple[np.ndarray, np.ndarray]:
    """The sleeping ``nodes`` to wake now, and the later wake times, repeats that follow dropped.

    Args:
        nodes: Node ids in order of first appearance in the plan.
        starts: The planned start of each (non-decreasing along the plan).
        state: Every node's state.
        lead: Every node's mean switch-on time.
        now: Time of the pass.

    Returns:
        ``(due, later)``: the sleeping nodes whose wake (``start - lead``) is
        at or before ``now`` (within ``EPS``), in plan order; the later
        wakes in plan order, without a value equal to the one before it.
    """
    asleep = state[nodes] == SLEEPING
    nodes = nodes[asleep]
    wakes = starts[asleep] - lead[nodes]
    due = wakes <= now + EPS
    later = wakes[~due]
    if len(later) > 1:
        later = later[np.concatenate(([True], later[1:] != later[:-1]))]
    return nodes[due], later


@kernel
def split_wakes_jit(nodes, starts, state, lead, now):
    """:func:`split_wakes` in one compiled call."""
    n = len(nodes)
    due = np.empty(n, dtype=np.int64)
    later = np.empty(n)
    n_due = 0
    n_later = 0
    limit = now + EPS
    for k in range(n):
        node = nodes[k]
        if state[node] == SLEEPING:
            wake = starts[k] - lead[node]
            if wake <= limit:
                due[n_due] = node
                n_due += 1
            elif n_later == 0 or wake != later[n_later - 1]:
                later[n_later] = wake
                n_later += 1
    return due[:n_due], later[:n_later]
