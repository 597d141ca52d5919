"""Node availability and energy-aware node choice, shared by the planners.

At every pass a planner needs, for each node, the earliest time it could be
idle for a new job (its *release time*) and the non-compute energy it would
spend before that. :class:`ReleaseMap` computes both for all nodes at once
with numpy, following the authors' simulator (SPEC §2b):

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

:func:`ReleaseMap.select` then picks the ``r`` nodes for a job: the start is
the later of a barrier and the ``r``-th smallest release time; among nodes
released by then it takes the cheapest by (pre-start energy, plus idle power ×
idle gap for nodes that would sit idle; then state: idle, computing, switching
on, other; then longest remaining idle timeout; then node id).
"""

from __future__ import annotations

import bisect

import numpy as np

from hpcpower.engine.cluster import COMPUTING, IDLE, SLEEPING, SWITCHING_OFF, SWITCHING_ON

EPS = 1e-9

#: Node-state rank in tie-breaks: idle, computing, switching on, other.
_RANK = np.array([3, 2, 0, 1, 3], dtype=np.int8)  # indexed by NodeState value


def idle_order(cluster, now: float, timeout_s: float | None) -> np.ndarray:
    """Idle node ids in the order a job starting now takes them.

    Every idle node costs nothing for a job starting now, so the choice falls
    to the tie-breaks: longest remaining idle timeout first (the node idle for
    the shortest time), then lowest id. Jobs dispatched in one pass take
    consecutive runs of this order.
    """
    idle = np.fromiter(cluster.idle, dtype=np.intp, count=len(cluster.idle))
    if timeout_s is None or len(idle) < 2:
        idle.sort()
        return idle
    rank = -((cluster.since[idle] + timeout_s) - now)
    return idle[np.lexsort((idle, rank))]


class ReleaseMap:
    """Release times and selection data for every node at one pass.

    Args:
        view: The system view (cluster, running jobs, now).
        timeout_s: Idle timeout of the power manager (``None``: no timeout),
            used to rank idle nodes by remaining timeout.
        overrun_release: Release time given to nodes of a job running past its
            walltime: ``inf`` (the authors' baseline planners: such nodes are
            not planned on) or ``"now"``.

    Attributes:
        release: Earliest idle time per node (advanced as jobs are planned).
        base_j: Pre-start non-compute energy per node (frozen for the pass).
        rank: State rank per node (frozen for the pass).
        timeout_rank: ``-(remaining idle timeout)`` for idle nodes, else 0.
        idle_w: Idle power per node.
    """

    def __init__(self, view, timeout_s: float | None, overrun_release: str = "inf") -> None:
        cluster = view.cluster
        now = view.now
        state = cluster.state
        since = cluster.since
        on = cluster.switch_on_mean_s
        off = cluster.switch_off_mean_s
        power = cluster.power_w
        release = np.full(cluster.n_nodes, now, dtype=float)
        base = np.zeros(cluster.n_nodes)

        counts = cluster.counts
        busy = state == COMPUTING
        if counts[COMPUTING]:
            end = cluster.expected_end_s[busy]
            if overrun_release == "inf":
                end = np.where(end <= now, np.inf, end)
            else:
                end = np.maximum(end, now)
            release[busy] = end

        # Durations are differences of absolute times, as in the authors'
        # planner: ties between nodes then break on the same floats.
        asleep = state == SLEEPING
        if counts[SLEEPING]:
            release[asleep] = now + on[asleep]
            base[asleep] = power[asleep, SWITCHING_ON] * (release[asleep] - now)

        if counts[SWITCHING_ON]:
            waking = state == SWITCHING_ON
            end = since[waking] + on[waking]
            end = np.where(end > now, end, now + on[waking])
            release[waking] = end
            base[waking] = power[waking, SWITCHING_ON] * (end - now)

        down = state == SWITCHING_OFF
        if counts[SWITCHING_OFF]:
            off_end = since[down] + off[down]
            off_end = np.where(off_end > now, off_end, now + off[down])
            release[down] = off_end + on[down]
            base[down] = power[down, SWITCHING_OFF] * (off_end - now) + power[
                down, SWITCHING_ON
            ] * (release[down] - off_end)

        self.now = now
        self.release = release
        self.base_j = base
        self.rank = _RANK[state]
        #: Nodes charged only their wake energy (no idle gap): sleeping, switching off.
        self.no_gap = asleep | down
        self.idle_w = cluster.idle_w
        timeout_rank = np.zeros(cluster.n_nodes)
        if timeout_s is not None:
            idle = state == IDLE
            timeout_rank[idle] = -(since[idle] + timeout_s - now)
        self.timeout_rank = timeout_rank
        self.ids = np.arange(cluster.n_nodes)
        self.state = state
        #: Nodes with a finite release at the start of the pass (plannable).
        self.usable = self.ids[np.isfinite(release)]

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
        ids = self.ids if candidates is None else candidates
        rel = self.release[ids]
        finite = np.isfinite(rel)
        if not finite.all():
            ids = ids[finite]
            rel = rel[finite]
        if len(ids) < r:
            return None
        kth = np.partition(rel, r - 1)[r - 1] if r < len(rel) else rel.max()
        start = max(min_start, float(kth))
        ok = rel <= start
        ids = ids[ok]
        rel = rel[ok]
        gap = np.where(self.no_gap[ids], 0.0, self.idle_w[ids] * (start - rel))
        cost = self.base_j[ids] + gap
        order = np.lexsort((ids, self.timeout_rank[ids], self.rank[ids], cost))
        return ids[order[:r]], start

    def occupy(self, nodes: np.ndarray, until: float) -> None:
        """Mark ``nodes`` as busy until ``until`` (a planned or started job)."""
        self.release[nodes] = until


class Timelines:
    """Per-node busy segments, to plan jobs into gaps (EASY's future plan).

    Each node holds segments ``[start, finish)`` during which it cannot take a
    new job: a transition in progress (or the wake a sleeping node needs), a
    running job up to its walltime (``inf`` once overrun), and jobs planned so
    far. Arrays ``start``/``finish`` of shape (nodes, slots) are padded with
    ``inf``, so "is node n free at t" is answered for all nodes and many
    times at once.
    """

    def __init__(self, releases: ReleaseMap, view, started: list) -> None:
        cluster = view.cluster
        now = view.now
        n = cluster.n_nodes
        state = cluster.state
        self.now = now
        self.releases = releases
        self.start = np.full((n, 4), np.inf)
        self.finish = np.full((n, 4), np.inf)
        self.count = np.zeros(n, dtype=np.intp)
        on = cluster.switch_on_mean_s
        ids = np.arange(n)
        for mask, seg_start, seg_end in self._resting_segments(releases, cluster, now, on):
            rows = ids[mask]
            self._append(rows, seg_start[mask], seg_end[mask])
        counts = cluster.counts
        busy = state == COMPUTING
        if counts[COMPUTING]:
            rows = ids[busy]
            self._append(rows, cluster.since[busy], releases.release[busy])
        for planned in started:
            nodes = np.asarray(planned.nodes)
            self._append(
                nodes, np.full(len(nodes), now), np.full(len(nodes), now + planned.job.reqtime_s)
            )
        finite = self.finish[np.isfinite(self.finish)]
        self._finishes: list[float] = np.unique(finite).tolist()

    @staticmethod
    def _resting_segments(releases, cluster, now, on):
        state = cluster.state
        release = releases.release
        asleep = state == SLEEPING
        yield asleep, np.full(len(state), now), release
        waking = state == SWITCHING_ON
        yield waking, np.minimum(cluster.since, now), release
        down = state == SWITCHING_OFF
        off_end = release - on
        yield down, np.minimum(cluster.since, now), off_end
        yield down, off_end, release

    def _append(self, nodes: np.ndarray, starts: np.ndarray, finishes: np.ndarray) -> None:
        if len(nodes) == 0:
            return
        slots = self.count[nodes]
        if slots.max() >= self.start.shape[1]:
            extra = self.start.shape[1]
            self.start = np.pad(self.start, ((0, 0), (0, extra)), constant_values=np.inf)
            self.finish = np.pad(self.finish, ((0, 0), (0, extra)), constant_values=np.inf)
        self.start[nodes, slots] = starts
        self.finish[nodes, slots] = finishes
        self.count[nodes] += 1

    def add(self, nodes: np.ndarray, start: float, finish: float) -> None:
        """Reserve ``nodes`` over ``[start, finish)``."""
        k = len(nodes)
        self._append(np.asarray(nodes), np.full(k, start), np.full(k, finish))
        if np.isfinite(finish):
            i = bisect.bisect_left(self._finishes, finish)
            if i == len(self._finishes) or self._finishes[i] != finish:
                self._finishes.insert(i, finish)

    def finish_times(self, lo: float, hi: float = np.inf) -> np.ndarray:
        """Distinct finite segment finish times in ``[lo - EPS, hi - EPS)``, sorted."""
        f = self._finishes
        return np.array(f[bisect.bisect_left(f, lo - EPS) : bisect.bisect_left(f, hi - EPS)])

    def gaps(self, nodes: np.ndarray, times: np.ndarray):
        """For nodes × times: (free, idle_since, free_until)."""
        used = max(1, int(self.count.max()))
        s = self.start[nodes, :used][:, :, None]
        f = self.finish[nodes, :used][:, :, None]
        t = times[None, None, :]
        begun = s <= t
        covered = (begun & (f > t)).any(axis=1)
        idle_since = np.where(begun, f, -np.inf).max(axis=1)
        free_until = np.where(begun, np.inf, s).min(axis=1)
        return ~covered, idle_since, free_until

    def window_free(self, nodes: np.ndarray, start: float, finish: float) -> bool:
        """Whether every node is free at ``start`` and stays free until ``finish``."""
        used = max(1, int(self.count.max()))
        nodes = np.asarray(nodes)
        s = self.start[nodes, :used]
        f = self.finish[nodes, :used]
        begun = s <= start
        if (begun & (f > start)).any():
            return False
        free_until = np.where(begun, np.inf, s).min(axis=1)
        return bool((finish <= free_until + EPS).all())

    def free_intervals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every node's free intervals ``[a, b)`` as flat arrays ``(node, a, b)``.

        ``a`` is the finish of the node's previous segment (``-inf`` for none):
        it is both when the node falls idle and a candidate start time.
        """
        used = int(self.count.max()) + 1
        if used > self.start.shape[1]:
            pad = ((0, 0), (0, 1))
            self.start = np.pad(self.start, pad, constant_values=np.inf)
            self.finish = np.pad(self.finish, pad, constant_values=np.inf)
        start = self.start[:, :used]
        order = np.argsort(start, axis=1, kind="stable")
        s = np.take_along_axis(start, order, axis=1)
        f = np.maximum.accumulate(np.take_along_axis(self.finish[:, :used], order, axis=1), axis=1)
        a = np.concatenate((np.full((len(s), 1), -np.inf), f[:, :-1]), axis=1)
        ok = s > a
        node = np.broadcast_to(self.releases.ids[:, None], s.shape)[ok]
        return node, a[ok], s[ok]

    def earliest(
        self, r: int, walltime_s: float, min_start: float, max_start: float | None = None
    ) -> tuple[np.ndarray, float] | None:
        """Earliest gap start in ``[min_start, max_start)`` with ``r`` nodes free for the walltime.

        Candidate starts are ``min_start`` and every segment finish after it.
        Nodes are chosen by (pre-start energy + idle power × idle gap, state,
        remaining timeout, id), as in :meth:`ReleaseMap.select`.

        Each free interval ``[a, b)`` of a node admits the starts ``t`` with
        ``max(a, min_start) <= t``, ``b - t > EPS`` and ``b - t + EPS >=
        walltime``. The earliest feasible candidate start is the first
        interval start covered by ``r`` such intervals, found with one sort.
        """
        if max_start is not None and min_start + EPS >= max_start:
            return None
        rel = self.releases
        if len(rel.ids) < r:
            return None
        node, a, b = self.free_intervals()
        lo = np.maximum(a, min_start)
        last = b - walltime_s + EPS
        ok = (b - lo > EPS) & (lo <= last)
        if max_start is not None:
            ok &= lo < max_start - EPS
        if ok.sum() < r:
            return None
        node, a, b, lo, last = node[ok], a[ok], b[ok], lo[ok], last[ok]
        # Largest start t with t <= last and b - t > EPS.
        last = np.minimum(last, np.nextafter(b - EPS, -np.inf))
        starts = np.unique(lo)
        covered = np.searchsorted(np.sort(lo), starts, side="right") - np.searchsorted(
            np.sort(last), starts, side="left"
        )
        enough = np.flatnonzero(covered >= r)
        if len(enough) == 0:
            return None
        t = float(starts[enough[0]])
        here = (lo <= t) & (last >= t)
        pick = node[here]
        since = a[here]
        return self._cheapest(r, pick, since, t), t

    def _cheapest(self, r: int, pick: np.ndarray, since: np.ndarray, t: float) -> np.ndarray:
        """The ``r`` cheapest of free nodes ``pick`` (idle since ``since``) to start at ``t``."""
        rel = self.releases
        gap = np.where(
            rel.no_gap[pick],
            0.0,
            rel.idle_w[pick] * np.maximum(0.0, t - np.maximum(since, self.now)),
        )
        cost = rel.base_j[pick] + gap
        order = np.lexsort((pick, rel.timeout_rank[pick], rel.rank[pick], cost))
        return pick[order[:r]]

    def earliest_by_grid(
        self, r: int, walltime_s: float, min_start: float, max_start: float | None = None
    ) -> tuple[np.ndarray, float] | None:
        """:meth:`earliest` by brute force over nodes × candidate times (for tests)."""
        if max_start is not None and min_start + EPS >= max_start:
            return None
        rel = self.releases
        nodes = rel.ids
        if len(nodes) < r:
            return None
        hi = np.inf if max_start is None else max_start
        times = self.finish_times(min_start, hi)
        times = times[times > min_start]
        times = np.concatenate(([min_start], times))
        free, idle_since, until = self.gaps(nodes, times)
        length = until - times[None, :]
        fits = free & (length > EPS) & (length + EPS >= walltime_s)
        enough = np.flatnonzero(fits.sum(axis=0) >= r)
        if len(enough) == 0:
            return None
        j = int(enough[0])
        t = float(times[j])
        pick = nodes[fits[:, j]]
        since = idle_since[fits[:, j], j]
        return self._cheapest(r, pick, since, t), t
