"""The observation an agent sees: named features of the queue, arrivals and nodes, in [0, 1].

Every feature is a plain number computed from what a power manager sees at a
controller pass (the :class:`~hpcpower.engine.contract.SystemView` and the
queue policy's jobs starting in that pass), so the same observation is built
in training (:class:`hpcpower.rl.PowerEnv`) and when a trained agent runs as
a policy (:class:`hpcpower.rl.AgentPolicy`).

Unbounded quantities are squashed with ``x / (x + scale)``: 0 at 0, one half
at ``scale``, below 1 always. Node counts are fractions of the cluster.
Counts are taken after the jobs starting in the pass took their nodes.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hpcpower.errors import InputError
from hpcpower.states import COMPUTING, IDLE, SLEEPING, SWITCHING_OFF, SWITCHING_ON

if TYPE_CHECKING:
    from hpcpower.engine.contract import SystemView

#: Global features: name -> what it is (and its scale). The default observation
#: holds all of them, in this order.
GLOBAL_FEATURES: dict[str, str] = {
    "queue_jobs": "waiting jobs, squashed with scale 10",
    "queue_nodes": "nodes the waiting jobs request together / nodes, squashed with scale 1",
    "queue_min_nodes": "fewest nodes a waiting job requests / nodes (0: empty queue)",
    "queue_max_nodes": "most nodes a waiting job requests / nodes (0: empty queue)",
    "wait_mean": "mean time the waiting jobs have waited so far, squashed with scale 1 h",
    "wait_max": "longest time a waiting job has waited so far, squashed with scale 1 h",
    "reqtime_mean": "mean requested time of the waiting jobs, squashed with scale 1 h",
    "arrivals_10m": "arrivals per hour over the last 10 minutes, squashed with scale 10",
    "arrivals_1h": "arrivals per hour over the last hour, squashed with scale 10",
    "arrivals_6h": "arrivals per hour over the last 6 hours, squashed with scale 10",
    "since_arrival": "time since the last arrival, squashed with scale 1 h (1 before any)",
    "sleeping": "sleeping nodes / nodes",
    "switching_on": "nodes switching on / nodes",
    "idle": "idle nodes not starting a job in this pass / nodes",
    "computing": "computing nodes, with those starting a job now / nodes",
    "switching_off": "nodes switching off / nodes",
    "release_10m": "computing nodes whose job reaches its requested time within 10 min / nodes",
    "release_1h": "computing nodes whose job reaches its requested time within 1 h / nodes",
    "time_of_day_sin": "0.5 + 0.5 sin(2 pi t / 1 day), t the simulated time",
    "time_of_day_cos": "0.5 + 0.5 cos(2 pi t / 1 day)",
    "target": "the number of ready nodes asked for last / nodes (action 'target' only)",
}

#: Per-node features (action ``"per-node"``), named ``node<i>.<feature>``.
NODE_FEATURES: dict[str, str] = {
    "sleeping": "1 if the node sleeps",
    "switching_on": "1 if it is switching on",
    "idle": "1 if it is idle and not starting a job in this pass",
    "computing": "1 if it computes (or starts a job in this pass)",
    "switching_off": "1 if it is switching off",
    "idle_for": "how long it has been idle, squashed with scale 1 h",
    "busy_left": "time until its job reaches its requested time, squashed with scale 1 h",
    "in_transition_for": "how long its switch has been going on, squashed with scale 1 h",
}

HOUR_S = 3600.0
DAY_S = 86400.0
#: The arrival windows of ``arrivals_*`` in seconds.
WINDOWS_S = {"arrivals_10m": 600.0, "arrivals_1h": 3600.0, "arrivals_6h": 21600.0}
#: State index (``hpcpower.states``) -> the state's feature name.
_STATE_NAMES = {
    SLEEPING: "sleeping",
    SWITCHING_ON: "switching_on",
    IDLE: "idle",
    COMPUTING: "computing",
    SWITCHING_OFF: "switching_off",
}


def squash(x: float, scale: float) -> float:
    """``x / (x + scale)`` for ``x >= 0``: maps ``[0, inf)`` onto ``[0, 1)``."""
    return x / (x + scale) if x > 0 else 0.0


def check_features(features: Sequence[str] | None, action: str) -> tuple[str, ...]:
    """The global feature names an observation holds (all by default), checked.

    Raises:
        InputError: an unknown feature name, or ``target`` with per-node actions.
    """
    if features is None:
        names = tuple(GLOBAL_FEATURES)
        return names if action == "target" else tuple(n for n in names if n != "target")
    names = tuple(features)
    unknown = [n for n in names if n not in GLOBAL_FEATURES]
    if unknown:
        raise InputError(
            f"unknown observation feature(s) {', '.join(map(repr, unknown))}; "
            f"choose from: {', '.join(GLOBAL_FEATURES)}"
        )
    if action != "target" and "target" in names:
        raise InputError("the feature 'target' exists only with action='target'")
    if len(set(names)) != len(names):
        raise InputError("observation features: each name at most once")
    return names


def feature_names(features: Sequence[str], action: str, n_nodes: int) -> list[str]:
    """The name of every entry of the observation vector, in order."""
    names = list(features)
    if action == "per-node":
        names += [f"node{i}.{f}" for i in range(n_nodes) for f in NODE_FEATURES]
    return names


class Observer:
    """Builds observations at controller passes; keeps the arrival history it needs.

    Args:
        features: Global feature names (see :func:`check_features`).
        per_node: Append :data:`NODE_FEATURES` for every node.
    """

    def __init__(self, features: Sequence[str], per_node: bool) -> None:
        self.features = tuple(features)
        self.per_node = per_node
        self.reset()

    def reset(self) -> None:
        """Forget the arrivals of a previous run."""
        self.arrivals: list[float] = []

    def record_arrivals(self, view: SystemView) -> None:
        """Note the jobs that arrived since the previous pass (call at every pass)."""
        for job in view.arrived:
            self.arrivals.append(job.submit_s)

    def observe(
        self, view: SystemView, starting: set[int], taken: set[int], target: int
    ) -> np.ndarray:
        """The observation at this pass, a float32 vector in [0, 1].

        Args:
            view: The system at this pass.
            starting: Ids of the jobs starting in this pass (no longer waiting).
            taken: Idle nodes that jobs starting in this pass take.
            target: The number of ready nodes asked for last (action ``"target"``).
        """
        cluster = view.cluster
        now = view.now
        n = cluster.n_nodes
        values: dict[str, float] = {}
        wanted = set(self.features)
        waiting = [job for job in view.queue.fcfs() if job.id not in starting]
        if waiting:
            res = [job.res for job in waiting]
            waits = [now - job.submit_s for job in waiting]
            values["queue_jobs"] = squash(float(len(waiting)), 10.0)
            values["queue_nodes"] = squash(sum(res) / n, 1.0)
            values["queue_min_nodes"] = min(min(res) / n, 1.0)
            values["queue_max_nodes"] = min(max(res) / n, 1.0)
            values["wait_mean"] = squash(sum(waits) / len(waits), HOUR_S)
            values["wait_max"] = squash(max(waits), HOUR_S)
            values["reqtime_mean"] = squash(
                sum(job.reqtime_s for job in waiting) / len(waiting), HOUR_S
            )
        arrivals = self.arrivals
        for name, window in WINDOWS_S.items():
            if name in wanted:
                count = len(arrivals) - bisect.bisect_right(arrivals, now - window)
                values[name] = squash(count * HOUR_S / window, 10.0)
        values["since_arrival"] = squash(now - arrivals[-1], HOUR_S) if arrivals else 1.0
        counts = list(cluster.counts)
        counts[IDLE] -= len(taken)
        counts[COMPUTING] += len(taken)
        for state, name in _STATE_NAMES.items():
            values[name] = counts[state] / n
        ends = cluster.expected_end_s
        busy = cluster.state == COMPUTING
        if "release_10m" in wanted or "release_1h" in wanted:
            left = ends[busy] - now
            values["release_10m"] = float((left <= 600.0).sum()) / n
            values["release_1h"] = float((left <= HOUR_S).sum()) / n
        angle = 2.0 * math.pi * (now % DAY_S) / DAY_S
        values["time_of_day_sin"] = 0.5 + 0.5 * math.sin(angle)
        values["time_of_day_cos"] = 0.5 + 0.5 * math.cos(angle)
        values["target"] = target / n
        out = [values.get(name, 0.0) for name in self.features]
        if self.per_node:
            out.extend(self._per_node(view, taken).ravel().tolist())
        return np.clip(np.asarray(out, dtype=np.float32), 0.0, 1.0)

    def _per_node(self, view: SystemView, taken: set[int]) -> np.ndarray:
        """One row of :data:`NODE_FEATURES` per node."""
        cluster = view.cluster
        now = view.now
        state = cluster.state.astype(np.int64)
        if taken:
            state[list(taken)] = COMPUTING
        rows = np.zeros((cluster.n_nodes, len(NODE_FEATURES)))
        rows[np.arange(cluster.n_nodes), _ONE_HOT_COLUMN[state]] = 1.0
        since = now - cluster.since
        idle = state == IDLE
        rows[idle, 5] = since[idle] / (since[idle] + HOUR_S)
        busy = state == COMPUTING
        left = np.nan_to_num(cluster.expected_end_s[busy] - now, nan=0.0)
        left = np.maximum(left, 0.0)
        rows[busy, 6] = left / (left + HOUR_S)
        moving = (state == SWITCHING_ON) | (state == SWITCHING_OFF)
        rows[moving, 7] = since[moving] / (since[moving] + HOUR_S)
        return rows


#: Node state -> its one-hot column in :data:`NODE_FEATURES`.
_ONE_HOT_COLUMN = np.array(
    [list(NODE_FEATURES).index(_STATE_NAMES[s]) for s in range(len(_STATE_NAMES))]
)
