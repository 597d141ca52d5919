"""Every node's release time and pre-start energy at one pass (the release map), and the idle order.

At every pass a planner needs, for each node, the earliest time it could be
idle for a new job (its *release time*) and the non-compute energy it would
spend before that. :class:`ReleaseMap` holds both for all nodes, following
the authors' simulator (RakaSP/SPARS-ICON; see ``docs/background/baselines.md``):

========================  ==============================================  ==========================
node                      release time                                    pre-start energy (J)
========================  ==============================================  ==========================
idle                      now                                             0
computing                 start + walltime; ``inf`` once overrun          0
sleeping                  now + lead (lead = mean switch-on time)         P_on · lead
switching on              start + mean; ``now + mean`` once overdue       P_on · (release − now)
switching off             off end (as above) + lead                       P_off · (off end − now)
                                                                          + P_on · lead
========================  ==============================================  ==========================

:meth:`ReleaseMap.select` then picks the ``r`` nodes for a job: the start is
the later of a barrier and the ``r``-th smallest release time; among nodes
released by then it takes the cheapest by (pre-start energy, plus idle power ×
idle gap for nodes that would sit idle; then state: idle, computing, switching
on, other; then longest remaining idle timeout; then node id).

The numpy forms come first; :func:`idle_order_jit` and :func:`release_map`
are their compiled twins (the numpy form calls them when ``compiled``).
:func:`release_lists` and :func:`select_lists` are the same map and choice
in Python lists, for small machines run without the twins (the forward
plan on them is :func:`~hpcpower.planning.forward.forward_plan_lists`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hpcpower.planning import select as _select_mod
from hpcpower.planning._numba import kernel
from hpcpower.planning.common import (
    COMPUTING,
    IDLE,
    INF,
    NO_NODES,
    RANK_COMPUTING,
    RANK_KEY,
    RANK_SLEEPING,
    RANK_SWITCHING_OFF,
    RANK_SWITCHING_ON,
    SLEEPING,
    SWITCHING_OFF,
    SWITCHING_ON,
    timeout_arg,
)
from hpcpower.planning.select import _order, cheapest_order


def idle_order(cluster, now: float, timeout_s: float | None, compiled: bool = False) -> np.ndarray:
    """Idle node ids in the order a job starting now takes them.

    Every idle node costs nothing for a job starting now, so the choice falls
    to the tie-breaks: longest remaining idle timeout first (the node idle for
    the shortest time), then lowest id. Jobs dispatched in one pass take
    consecutive runs of this order.
    """
    if compiled:
        return idle_order_jit(cluster.state, cluster.since, timeout_arg(timeout_s), now)
    if len(cluster.idle) <= 32:
        # Few idle nodes: Python lists are cheaper than array operations.
        nodes = sorted(cluster.idle)
        if timeout_s is not None and len(nodes) > 1:
            rank = [-((since + timeout_s) - now) for since in cluster.since[nodes].tolist()]
            nodes = [nodes[k] for k in sorted(range(len(nodes)), key=rank.__getitem__)]
        return np.array(nodes, dtype=np.intp)
    # The state array gives the idle nodes already in id order (cheaper than
    # reading and sorting the set), so a stable sort breaks timeout ties by id.
    idle = np.flatnonzero(cluster.state == IDLE)
    if timeout_s is None or len(idle) < 2:
        return idle
    rank = -((cluster.since[idle] + timeout_s) - now)
    return idle[np.argsort(rank, kind="stable")]


class ReleaseMap:
    """Release times and selection data for every node at one pass.

    Args:
        cluster: The cluster (a read-only view of it) at this pass.
        now: The time of the pass.
        timeout_s: Idle timeout of the power manager (``None``: no timeout),
            used to rank idle nodes by remaining timeout.
        overrun_release: When the nodes of a job running past its walltime
            are released: ``"never"`` (release ``inf``: the authors'
            baseline planners do not plan on them) or ``"now"``.
        idle_nodes: :func:`idle_order` for this pass (same ``now`` and
            ``timeout_s``), if the caller has it: it is the tie-break order of
            the idle nodes, so it need not be sorted again.
        compiled: Compute with the compiled twins (:func:`release_map`,
            :func:`~hpcpower.planning.select.select_jit`).

    Attributes:
        release: Earliest idle time per node (advanced as jobs are planned).
        base_j: Pre-start non-compute energy per node (frozen for the pass).
        idle_w: Idle power per node.
        tie_key: One integer per node that orders nodes as the tie-breaks
            (state rank, timeout rank, node id) do, frozen for the pass: the
            node choice sorts by (cost, tie_key) instead of four keys.
    """

    def __init__(
        self,
        cluster,
        now: float,
        timeout_s: float | None,
        overrun_release: str = "never",
        idle_nodes: np.ndarray | None = None,
        compiled: bool = False,
    ) -> None:
        state = cluster.state
        since = cluster.since
        self.now = now
        self.compiled = compiled
        self.idle_w = cluster.idle_w
        self.ids = cluster.ids
        if compiled:
            if timeout_s is not None and cluster.counts[IDLE] > 1 and idle_nodes is None:
                idle_nodes = idle_order(cluster, now, timeout_s, compiled)
            self.release, self.base_j, self.no_gap, self.gap_w, self.tie_key = release_map(
                now,
                cluster.node_arrays,
                overrun_release == "never",
                timeout_arg(timeout_s),
                NO_NODES if idle_nodes is None else np.asarray(idle_nodes, dtype=np.int64),
            )
            return
        on = cluster.switch_on_mean_s
        off = cluster.switch_off_mean_s
        n = cluster.n_nodes
        release = np.full(n, now, dtype=float)
        base = np.zeros(n)

        counts = cluster.counts
        if counts[COMPUTING]:
            busy = state == COMPUTING
            end = cluster.expected_end_s[busy]
            if overrun_release == "never":
                end[end <= now] = np.inf
            else:
                end = np.fmax(end, now)  # (nan: now, as the twin)
            release[busy] = end

        # Durations are differences of absolute times, as in the authors'
        # planner: ties between nodes then break on the same floats.
        no_gap = None
        if counts[SLEEPING]:
            asleep = state == SLEEPING
            woken = now + on[asleep]
            release[asleep] = woken
            base[asleep] = cluster.switching_on_w[asleep] * (woken - now)
            no_gap = asleep

        if counts[SWITCHING_ON]:
            waking = state == SWITCHING_ON
            end = since[waking] + on[waking]
            end = np.where(end > now, end, now + on[waking])
            release[waking] = end
            base[waking] = cluster.switching_on_w[waking] * (end - now)

        if counts[SWITCHING_OFF]:
            down = state == SWITCHING_OFF
            off_end = since[down] + off[down]
            off_end = np.where(off_end > now, off_end, now + off[down])
            woken = off_end + on[down]
            release[down] = woken
            base[down] = cluster.switching_off_w[down] * (off_end - now) + cluster.switching_on_w[
                down
            ] * (woken - off_end)
            no_gap = down if no_gap is None else no_gap | down

        self.release = release
        self.base_j = base
        #: Nodes charged only their wake energy (no idle gap): sleeping, switching off.
        self.no_gap = no_gap if no_gap is not None else np.zeros(n, dtype=bool)
        #: Idle power per node, 0 for the nodes charged no idle gap: the gap
        #: cost is then one product for every node.
        self.gap_w = cluster.idle_w if no_gap is None else np.where(no_gap, 0.0, cluster.idle_w)
        ids = cluster.ids
        # Tie-break key: idle nodes (rank 0) first, in idle order (by timeout
        # rank, then id); every other node by (rank, id), as rank * n + id >= n.
        tie_key = RANK_KEY[state] * n + ids
        if timeout_s is not None and counts[IDLE] > 1:
            if idle_nodes is None:
                idle_nodes = idle_order(cluster, now, timeout_s)
            tie_key[idle_nodes] = np.arange(len(idle_nodes))
        self.tie_key = tie_key

    def copy(self) -> ReleaseMap:
        """A copy whose release times can be advanced independently (static data shared)."""
        twin = object.__new__(ReleaseMap)
        twin.__dict__.update(self.__dict__)
        twin.release = self.release.copy()
        return twin

    def select(
        self, r: int, min_start: float, candidates: np.ndarray | None = None
    ) -> tuple[np.ndarray, float] | None:
        """Choose ``r`` nodes and the start time for a job, or ``None`` if impossible.

        Args:
            r: Number of nodes.
            min_start: Barrier: the job may not start earlier.
            candidates: Node ids to choose from (default: every node).
        """
        if candidates is None:
            if self.compiled:
                nodes, start = _select_mod.select_jit(
                    self.release, self.base_j, self.gap_w, self.tie_key, r, min_start
                )
                return (nodes, start) if len(nodes) else None
            rel = self.release
        else:
            candidates = np.asarray(candidates)
            rel = self.release[candidates]
        m = len(rel)
        if r > m:
            return None
        # The r-th smallest release over all candidates is the r-th smallest
        # finite one, or inf when fewer than r are finite.
        kth = np.partition(rel, r - 1)[r - 1] if r < m else rel.max()
        if kth == np.inf:
            return None
        start = max(min_start, float(kth))
        eligible = np.flatnonzero(rel <= start)
        nodes = eligible if candidates is None else candidates[eligible]
        cost = self.base_j[nodes] + self.gap_w[nodes] * (start - rel[eligible])
        return nodes[cheapest_order(r, cost, self.tie_key[nodes])], start

    def occupy(self, nodes: np.ndarray | Sequence[int], until: float) -> None:
        """Mark ``nodes`` as busy until ``until`` (a planned or started job)."""
        self.release[nodes] = until


# ------------------------------------------------- the form in lists
#: Up to this many nodes, planners without the compiled twins keep the
#: release map in Python lists (:func:`release_lists`, :func:`select_lists`):
#: a loop over every node then costs less than the numpy calls. A plan of
#: DAS2-fs1 3000 under SNF-ICON on 64 nodes: 92 against 67 us; random
#: four-job plans took 0.66, 0.84 and 1.03 times numpy's time on 64, 96 and
#: 128 nodes.
LIST_NODES = 96
#: The arrays of :class:`ReleaseMap` that :func:`release_lists` makes, in its order.
LIST_ARRAYS = ("release", "base_j", "gap_w", "tie_key")


def release_lists(now, cluster, overrun_inf: bool, timeout_set: bool, idle_nodes):
    """:class:`ReleaseMap`'s ``(release, base_j, gap_w, tie_key)`` as Python lists.

    The same operations on the same floats as the numpy form, node by node.
    ``idle_nodes`` is the pass's :func:`idle_order` (read only with a
    timeout and two idle nodes). No release is ever nan (a computing node
    always has its expected end, and a simulation refuses a walltime that
    is not a number >= 0), so Python's sort orders them as numpy's
    partition does.
    """
    now = float(now)  # (a numpy scalar would make every list entry one)
    state = cluster.state.tolist()
    since = cluster.since.tolist()
    on_mean = cluster.switch_on_mean_s.tolist()
    n = len(state)
    release = [now] * n
    base = [0.0] * n
    gap_w = cluster.idle_w.tolist()
    tie_key = list(range(n))
    counts = cluster.counts
    if counts[COMPUTING]:
        expected_end = cluster.expected_end_s.tolist()
        rank = RANK_COMPUTING * n
    if counts[SLEEPING] or counts[SWITCHING_ON]:
        on_w = cluster.switching_on_w.tolist()
    if counts[SWITCHING_OFF]:
        off_mean = cluster.switch_off_mean_s.tolist()
        off_w = cluster.switching_off_w.tolist()
        on_w = cluster.switching_on_w.tolist()
    for node, s in enumerate(state):
        if s == IDLE:
            continue
        if s == COMPUTING:
            end = expected_end[node]
            if overrun_inf:
                if end <= now:
                    end = INF
            elif not end >= now:  # (nan: now, as numpy's fmax)
                end = now
            release[node] = end
            tie_key[node] = rank + node
        elif s == SLEEPING:
            woken = now + on_mean[node]
            release[node] = woken
            base[node] = on_w[node] * (woken - now)
            gap_w[node] = 0.0
            tie_key[node] = RANK_SLEEPING * n + node
        elif s == SWITCHING_ON:
            end = since[node] + on_mean[node]
            if not end > now:
                end = now + on_mean[node]
            release[node] = end
            base[node] = on_w[node] * (end - now)
            tie_key[node] = RANK_SWITCHING_ON * n + node
        else:  # switching off
            off_end = since[node] + off_mean[node]
            if not off_end > now:
                off_end = now + off_mean[node]
            woken = off_end + on_mean[node]
            release[node] = woken
            base[node] = off_w[node] * (off_end - now) + on_w[node] * (woken - off_end)
            gap_w[node] = 0.0
            tie_key[node] = RANK_SWITCHING_OFF * n + node
    if timeout_set and counts[IDLE] > 1:
        for k, node in enumerate(np.asarray(idle_nodes).tolist()):
            tie_key[node] = k
    return release, base, gap_w, tie_key


def select_lists(lists, r: int, min_start: float) -> tuple[list[int], float] | None:
    """:meth:`ReleaseMap.select` over every node of :func:`release_lists`'s map."""
    release, base, gap_w, tie_key = lists
    if r > len(release):
        return None
    kth = sorted(release)[r - 1]
    if kth == INF:
        return None
    start = max(min_start, kth)
    # The r cheapest by (cost, tie key); tie keys are distinct, so the node
    # ids never decide (as numpy's lexsort on the same two keys).
    chosen = sorted(
        [
            (base[node] + gap_w[node] * (start - at), tie_key[node], node)
            for node, at in enumerate(release)
            if at <= start
        ]
    )[:r]
    return [c[2] for c in chosen], start


# ------------------------------------------------------- compiled twins
@kernel
def _nodes_in(state, which):
    """Ids of the nodes in state ``which``, increasing (``np.flatnonzero(state == which)``)."""
    count = 0
    for s in state:
        if s == which:
            count += 1
    out = np.empty(count, dtype=np.int64)
    count = 0
    for node in range(len(state)):
        if state[node] == which:
            out[count] = node
            count += 1
    return out


@kernel
def idle_order_jit(state, since, timeout_s, now):
    """:func:`idle_order` (``timeout_s`` nan for none)."""
    idle = _nodes_in(state, IDLE)
    count = len(idle)
    if np.isnan(timeout_s) or count < 2:
        return idle
    rank = np.empty(count)
    for k in range(count):
        rank[k] = -((since[idle[k]] + timeout_s) - now)
    # Stable: equal ranks keep id order.
    return idle[_order(rank, rank)]


@kernel
def release_map(now, nodes, overrun_inf, timeout_s, idle_nodes):
    """The arrays of :class:`ReleaseMap`: ``(release, base_j, no_gap, gap_w, tie_key)``.

    ``nodes`` holds the cluster's arrays ``(state, since, expected_end,
    on_mean, off_mean, on_w, off_w, idle_w)`` (see
    ``Cluster.node_arrays``); ``timeout_s`` is nan for
    no timeout; ``idle_nodes`` the pass's :func:`idle_order` (read only when
    there is a timeout and two idle nodes).
    """
    state, since, expected_end, on_mean, off_mean, on_w, off_w, idle_w = nodes
    n = len(state)
    release = np.full(n, now)
    base = np.zeros(n)
    no_gap = np.zeros(n, dtype=np.bool_)
    gap_w = idle_w.copy()
    tie_key = np.empty(n, dtype=np.int64)
    n_idle = 0
    for node in range(n):
        s = state[node]
        if s == COMPUTING:
            end = expected_end[node]
            if overrun_inf:
                if end <= now:
                    end = INF
            elif not end >= now:
                end = now
            release[node] = end
            tie_key[node] = RANK_COMPUTING * n + node
        elif s == SLEEPING:
            woken = now + on_mean[node]
            release[node] = woken
            base[node] = on_w[node] * (woken - now)
            no_gap[node] = True
            gap_w[node] = 0.0
            tie_key[node] = RANK_SLEEPING * n + node
        elif s == SWITCHING_ON:
            end = since[node] + on_mean[node]
            if not end > now:
                end = now + on_mean[node]
            release[node] = end
            base[node] = on_w[node] * (end - now)
            tie_key[node] = RANK_SWITCHING_ON * n + node
        elif s == SWITCHING_OFF:
            off_end = since[node] + off_mean[node]
            if not off_end > now:
                off_end = now + off_mean[node]
            woken = off_end + on_mean[node]
            release[node] = woken
            base[node] = off_w[node] * (off_end - now) + on_w[node] * (woken - off_end)
            no_gap[node] = True
            gap_w[node] = 0.0
            tie_key[node] = RANK_SWITCHING_OFF * n + node
        else:  # idle
            tie_key[node] = node
            n_idle += 1
    if not np.isnan(timeout_s) and n_idle > 1:
        for k in range(len(idle_nodes)):
            tie_key[idle_nodes[k]] = k
    return release, base, no_gap, gap_w, tie_key
