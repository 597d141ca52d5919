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

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from hpcpower.engine.cluster import COMPUTING, IDLE, SLEEPING, SWITCHING_OFF, SWITCHING_ON
from hpcpower.policies import kernels
from hpcpower.policies.base import Planned, Schedule

EPS = 1e-9
_NO_NODES = np.zeros(0, dtype=np.int64)

#: Node-state rank in tie-breaks: idle, computing, switching on, other.
_RANK = np.array([3, 2, 0, 1, 3], dtype=np.int8)  # indexed by NodeState value
_RANK_KEY = _RANK.astype(np.int64)


def idle_order(cluster, now: float, timeout_s: float | None) -> np.ndarray:
    """Idle node ids in the order a job starting now takes them.

    Every idle node costs nothing for a job starting now, so the choice falls
    to the tie-breaks: longest remaining idle timeout first (the node idle for
    the shortest time), then lowest id. Jobs dispatched in one pass take
    consecutive runs of this order.
    """
    if kernels.ENABLED:
        return kernels.idle_order(cluster.state, cluster.since, kernels.timeout_arg(timeout_s), now)
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


def node_arrays(cluster) -> tuple[np.ndarray, ...]:
    """The cluster's arrays a release map is made from, as the kernels take them.

    ``(state, since, expected_end_s, switch_on_mean_s, switch_off_mean_s,
    switching_on_w, switching_off_w, idle_w)``. The cluster changes these
    arrays in place, so the tuple is made once per cluster.
    """
    try:
        return cluster._node_arrays
    except AttributeError:
        cluster._node_arrays = (
            cluster.state,
            cluster.since,
            cluster.expected_end_s,
            cluster.switch_on_mean_s,
            cluster.switch_off_mean_s,
            cluster.switching_on_w,
            cluster.switching_off_w,
            cluster.idle_w,
        )
        return cluster._node_arrays


class ReleaseMap:
    """Release times and selection data for every node at one pass.

    Args:
        view: The system view (cluster, running jobs, now).
        timeout_s: Idle timeout of the power manager (``None``: no timeout),
            used to rank idle nodes by remaining timeout.
        overrun_release: Release time given to nodes of a job running past its
            walltime: ``inf`` (the authors' baseline planners: such nodes are
            not planned on) or ``"now"``.
        idle_nodes: :func:`idle_order` for this pass (same ``now`` and
            ``timeout_s``), if the caller has it: it is the tie-break order of
            the idle nodes, so it need not be sorted again.

    Attributes:
        release: Earliest idle time per node (advanced as jobs are planned).
        base_j: Pre-start non-compute energy per node (frozen for the pass).
        rank: State rank per node (frozen for the pass).
        timeout_rank: ``-(remaining idle timeout)`` for idle nodes, else 0.
        idle_w: Idle power per node.
        tie_key: One integer per node that orders nodes as the tie-breaks
            (state rank, timeout rank, node id) do, frozen for the pass: the
            node choice sorts by (cost, tie_key) instead of four keys.
    """

    def __init__(
        self,
        view,
        timeout_s: float | None,
        overrun_release: str = "inf",
        idle_nodes: np.ndarray | None = None,
    ) -> None:
        cluster = view.cluster
        now = view.now
        state = cluster.state
        since = cluster.since
        self.now = now
        self.state = state
        self._since = since
        self._timeout_s = timeout_s
        self.idle_w = cluster.idle_w
        self.ids = cluster.ids
        if kernels.ENABLED:
            if timeout_s is not None and cluster.counts[IDLE] > 1 and idle_nodes is None:
                idle_nodes = idle_order(cluster, now, timeout_s)
            self.release, self.base_j, self.no_gap, self.gap_w, self.tie_key = kernels.release_map(
                now,
                node_arrays(cluster),
                overrun_release == "inf",
                kernels.timeout_arg(timeout_s),
                _NO_NODES if idle_nodes is None else np.asarray(idle_nodes, dtype=np.int64),
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
            if overrun_release == "inf":
                end[end <= now] = np.inf
            else:
                end = np.maximum(end, now)
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
        tie_key = _RANK_KEY[state] * n + ids
        if timeout_s is not None and counts[IDLE] > 1:
            if idle_nodes is None:
                idle_nodes = idle_order(cluster, now, timeout_s)
            tie_key[idle_nodes] = np.arange(len(idle_nodes))
        self.tie_key = tie_key

    @property
    def rank(self) -> np.ndarray:
        """State rank per node (read within the pass)."""
        return _RANK[self.state]

    @property
    def timeout_rank(self) -> np.ndarray:
        """``-(remaining idle timeout)`` for idle nodes, else 0 (read within the pass)."""
        timeout_rank = np.zeros(len(self.ids))
        if self._timeout_s is not None:
            idle = self.state == IDLE
            timeout_rank[idle] = -(self._since[idle] + self._timeout_s - self.now)
        return timeout_rank

    @property
    def usable(self) -> np.ndarray:
        """Nodes with a finite release (plannable)."""
        return self.ids[np.isfinite(self.release)]

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
            if kernels.ENABLED:
                nodes, start = kernels.select(
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
        return nodes[_cheapest_order(r, cost, self.tie_key[nodes])], start

    def occupy(self, nodes: np.ndarray, until: float) -> None:
        """Mark ``nodes`` as busy until ``until`` (a planned or started job)."""
        self.release[nodes] = until


def _cheapest_order(r: int, cost: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Positions of the ``r`` smallest by ``(cost, key)``, in that order (keys are distinct).

    With many candidates, a partition finds the ``r``-th cost; every smaller
    cost is taken, and ties at that cost are settled by key, so only ``r``
    entries are sorted.
    """
    m = len(cost)
    if m <= 4 * r or m <= 128:
        return np.lexsort((key, cost))[:r]
    cut = np.partition(cost, r - 1)[r - 1]
    below = np.flatnonzero(cost < cut)
    tied = np.flatnonzero(cost == cut)
    need = r - len(below)
    if len(tied) > need:
        tied = tied[np.argpartition(key[tied], need - 1)[:need]]
    chosen = np.concatenate((below, tied))
    return chosen[np.lexsort((key[chosen], cost[chosen]))]


class Timelines:
    """Per-node busy segments, to plan jobs into gaps (EASY's future plan).

    Each node holds segments ``[start, finish)`` during which it cannot take a
    new job: a transition in progress (or the wake a sleeping node needs), a
    running job up to its walltime (``inf`` once overrun), and jobs planned so
    far.

    The searches work on each node's *free intervals* ``[a, b)``: ``a`` is
    the finish of the node's previous segment (``-inf`` for none), both when
    the node falls idle and a candidate start, and ``b`` the start of its next
    segment. They are kept up to date as segments are added (a segment splits
    the free interval it lies in), in arrays ``free_a``/``free_b`` of shape
    (nodes, slots) whose unused slots hold the empty interval ``[inf, -inf)``,
    so "is node n free at t" is answered for all nodes and many times at once
    without rebuilding anything. The segments themselves are kept too, for
    the brute-force searches the tests compare with.
    """

    def __init__(self, releases: ReleaseMap, view, started: list) -> None:
        cluster = view.cluster
        now = view.now
        n = cluster.n_nodes
        state = cluster.state
        counts = cluster.counts
        self.now = now
        self.releases = releases
        release = releases.release
        # Segments as (nodes, starts, finishes) groups, in the order the
        # original per-node slots were filled.
        self._segments: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        # At the start of the pass each node has at most one busy block: its
        # segments are contiguous. Free intervals: [-inf, block start) and
        # [block end, inf) (the latter unless the block never ends).
        block_start = np.full(n, np.inf)
        block_end = np.full(n, np.inf)
        since = cluster.since
        on = cluster.switch_on_mean_s
        if counts[SLEEPING]:
            rows = np.flatnonzero(state == SLEEPING)
            self._block(block_start, block_end, rows, np.full(len(rows), now), release[rows])
        if counts[SWITCHING_ON]:
            rows = np.flatnonzero(state == SWITCHING_ON)
            self._block(block_start, block_end, rows, np.minimum(since[rows], now), release[rows])
        if counts[SWITCHING_OFF]:
            rows = np.flatnonzero(state == SWITCHING_OFF)
            first = np.minimum(since[rows], now)
            off_end = release[rows] - on[rows]
            self._segments.append((rows, first, off_end))
            self._segments.append((rows, off_end, release[rows]))
            # (min/max: release - on may round below the first segment's start.)
            block_start[rows] = np.minimum(first, off_end)
            block_end[rows] = np.maximum(off_end, release[rows])
        if counts[COMPUTING]:
            rows = np.flatnonzero(state == COMPUTING)
            self._block(block_start, block_end, rows, since[rows], release[rows])
        for planned in started:
            rows = np.asarray(planned.nodes)
            k = len(rows)
            self._block(
                block_start,
                block_end,
                rows,
                np.full(k, now),
                np.full(k, now + planned.job.reqtime_s),
            )
        free_a = np.full((n, 4), np.inf)
        free_b = np.full((n, 4), -np.inf)
        free_a[:, 0] = -np.inf
        free_b[:, 0] = block_start
        # A node without segments is free over [-inf, inf) (block start inf).
        tail = block_end < np.inf
        free_a[tail, 1] = block_end[tail]
        free_b[tail, 1] = np.inf
        self.free_a = free_a
        self.free_b = free_b
        # Slots in use per node at the start; nodes given a segment since keep
        # theirs as Python lists in _rows. ``width``: slots in use at most.
        self._used = np.where(tail, 2, 1)
        self._rows: dict[int, tuple[list[float], list[float]]] = {}
        self.width = 2
        self._irregular: set[int] = set()

    def _block(self, block_start, block_end, rows, starts, finishes) -> None:
        self._segments.append((rows, starts, finishes))
        block_start[rows] = starts
        block_end[rows] = finishes

    def add(self, nodes: np.ndarray, start: float, finish: float) -> None:
        """Reserve ``nodes`` over ``[start, finish)``.

        The segment normally lies in one free interval ``[a, b)`` of each
        node, which it splits into ``[a, start)`` and ``[finish, b)`` (empty
        pieces dropped). Where it does not (it overlaps a segment, as a plan
        may by up to EPS, or ends before it starts), the node's intervals are
        rebuilt from its segments.

        Jobs hold few nodes and nodes few intervals, so this works per node
        on Python lists (mirrored into the arrays) rather than with array
        operations on tiny arrays.
        """
        nodes = np.asarray(nodes, dtype=np.intp)
        k = len(nodes)
        if k == 0:
            return
        self._segments.append((nodes, np.full(k, start), np.full(k, finish)))
        if finish < start:
            # A segment that ends before it starts leaves overlapping free
            # intervals, which the split below cannot handle: such nodes are
            # always rebuilt from then on.
            self._irregular.update(nodes.tolist())
        if k > 16:
            self._add_many(nodes, start, finish)
            return
        for node in nodes.tolist():
            a_list, b_list = self._lists(node)
            slot = _holding(a_list, b_list, start)
            if slot < 0 or finish > b_list[slot] or node in self._irregular:
                self._rebuild(node)
                continue
            a = a_list[slot]
            b = b_list[slot]
            # (Read here: a rebuild may have widened the arrays.)
            free_a = self.free_a
            free_b = self.free_b
            if start > a:
                b_list[slot] = start
                free_b[node, slot] = start
                if not b > finish:
                    continue
                slot = len(a_list)
                if slot == free_a.shape[1]:
                    self._room(slot + 1)
                    free_a = self.free_a
                    free_b = self.free_b
                a_list.append(finish)
                b_list.append(b)
                self._used[node] = slot + 1
                self.width = max(self.width, slot + 1)
            elif b > finish:
                # Left piece empty: the right one takes its slot.
                a_list[slot] = finish
            else:
                a_list[slot] = np.inf
                b_list[slot] = -np.inf
            free_a[node, slot] = a_list[slot]
            free_b[node, slot] = b_list[slot]

    def _add_many(self, nodes: np.ndarray, start: float, finish: float) -> None:
        """:meth:`add` for many nodes at once, with array operations (same result)."""
        rows = self._rows
        if rows:
            for node in nodes.tolist():
                rows.pop(node, None)
        w = self.width
        a_rows = self.free_a[nodes, :w]
        b_rows = self.free_b[nodes, :w]
        inside = (a_rows <= start) & (start < b_rows)
        col = inside.argmax(axis=1)
        line = np.arange(len(nodes))
        a = a_rows[line, col]
        b = b_rows[line, col]
        clean = inside[line, col] & (finish <= b)
        if self._irregular:
            clean &= ~np.isin(nodes, list(self._irregular))
        if not clean.all():
            for node in nodes[~clean].tolist():
                self._rebuild(node)
            nodes, col, a, b = nodes[clean], col[clean], a[clean], b[clean]
        left = start > a
        right = b > finish
        # The left piece (or else the right one, or else nothing) takes the slot.
        self.free_a[nodes, col] = np.where(left, a, np.where(right, finish, np.inf))
        self.free_b[nodes, col] = np.where(left, start, np.where(right, b, -np.inf))
        both = left & right
        if both.any():
            nodes = nodes[both]
            slot = self._used[nodes]
            top = int(slot.max()) + 1
            self._room(top)
            self.free_a[nodes, slot] = finish
            self.free_b[nodes, slot] = b[both]
            self._used[nodes] = slot + 1
            self.width = max(self.width, top)

    def _lists(self, node: int) -> tuple[list[float], list[float]]:
        """One node's interval slots as Python lists (made from the arrays on first use)."""
        lists = self._rows.get(node)
        if lists is None:
            used = int(self._used[node])
            lists = (self.free_a[node, :used].tolist(), self.free_b[node, :used].tolist())
            self._rows[node] = lists
        return lists

    def _room(self, slots: int) -> None:
        """Make the interval arrays at least ``slots`` wide."""
        have = self.free_a.shape[1]
        if slots > have:
            extra = max(slots, 2 * have) - have
            n = len(self.free_a)
            self.free_a = np.concatenate((self.free_a, np.full((n, extra), np.inf)), axis=1)
            self.free_b = np.concatenate((self.free_b, np.full((n, extra), -np.inf)), axis=1)

    def node_segments(self, node: int) -> tuple[list[float], list[float]]:
        """Starts and finishes of one node's segments, in the order they were added."""
        starts: list[float] = []
        finishes: list[float] = []
        for rows, s, f in self._segments:
            for i in np.flatnonzero(rows == node).tolist():
                starts.append(float(s[i]))
                finishes.append(float(f[i]))
        return starts, finishes

    def _rebuild(self, node: int) -> None:
        """Recompute one node's free intervals from its segments."""
        a, b = _free_from_segments(*self.node_segments(node))
        self._room(len(a))
        self.free_a[node] = np.inf
        self.free_b[node] = -np.inf
        self.free_a[node, : len(a)] = a
        self.free_b[node, : len(b)] = b
        self._rows[node] = (a, b)
        self._used[node] = len(a)
        self.width = max(self.width, len(a))

    def segment_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """All segments as ``(start, finish)`` arrays of shape (nodes, slots), padded with inf."""
        n = len(self.free_a)
        count = np.zeros(n, dtype=np.intp)
        for rows, _, _ in self._segments:
            count[rows] += 1
        width = max(1, int(count.max()))
        start = np.full((n, width), np.inf)
        finish = np.full((n, width), np.inf)
        count[:] = 0
        for rows, s, f in self._segments:
            slot = count[rows]
            start[rows, slot] = s
            finish[rows, slot] = f
            count[rows] += 1
        return start, finish

    def finish_times(self, lo: float, hi: float = np.inf) -> np.ndarray:
        """Distinct finite segment finish times in ``[lo - EPS, hi - EPS)``, sorted."""
        f = np.unique(np.concatenate([f for _, _, f in self._segments] + [np.empty(0)]))
        f = f[np.isfinite(f)]
        return f[(f >= lo - EPS) & (f < hi - EPS)]

    def gaps(self, nodes: np.ndarray, times: np.ndarray):
        """For nodes × times: (free, idle_since, free_until), from the segments."""
        start, finish = self.segment_arrays()
        s = start[nodes][:, :, None]
        f = finish[nodes][:, :, None]
        t = times[None, None, :]
        begun = s <= t
        covered = (begun & (f > t)).any(axis=1)
        idle_since = np.where(begun, f, -np.inf).max(axis=1)
        free_until = np.where(begun, np.inf, s).min(axis=1)
        return ~covered, idle_since, free_until

    def window_free(self, nodes: np.ndarray, start: float, finish: float) -> bool:
        """Whether every node is free at ``start`` and stays free until ``finish``.

        A node is free at ``start`` when one of its free intervals ``[a, b)``
        holds it; it stays free until ``b``.
        """
        nodes = np.asarray(nodes)
        if len(nodes) > 16:
            w = self.width
            a = self.free_a[nodes, :w]
            b = self.free_b[nodes, :w]
            fits = (a <= start) & (start < b) & (finish <= b + EPS)
            return bool(fits.any(axis=1).all())
        for node in nodes.tolist():
            a_list, b_list = self._lists(node)
            for a, b in zip(a_list, b_list, strict=True):
                if a <= start < b and finish <= b + EPS:
                    break
            else:
                return False
        return True

    def free_intervals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every node's free intervals ``[a, b)`` as flat arrays ``(node, a, b)``.

        ``a`` is the finish of the node's previous segment (``-inf`` for none):
        it is both when the node falls idle and a candidate start time.
        """
        w = self.width
        a = self.free_a[:, :w]
        b = self.free_b[:, :w]
        ok = b > a
        node = np.broadcast_to(self.releases.ids[:, None], a.shape)[ok]
        return node, a[ok], b[ok]

    def _feasible(self, walltime_s: float, min_start: float, max_start: float | None):
        """Free intervals that admit a start in ``[min_start, max_start)``.

        Returns ``(flat index, a, lo, last)``: a start ``t`` fits interval
        ``[a, b)`` when ``lo <= t <= last``, where ``lo = max(a, min_start)``
        and ``last`` is the largest ``t`` with ``t <= b - walltime + EPS`` and
        ``b - t > EPS``.
        """
        w = self.width
        a = self.free_a[:, :w].ravel()
        b = self.free_b[:, :w].ravel()
        lo = np.maximum(a, min_start)
        last = b - walltime_s + EPS
        ok = (b - lo > EPS) & (lo <= last)
        if max_start is not None:
            ok &= lo < max_start - EPS
        index = np.flatnonzero(ok)
        b = b[index]
        last = np.minimum(last[index], np.nextafter(b - EPS, -np.inf))
        return index, a[index], lo[index], last

    @staticmethod
    def _first_covered(r: int, lo: np.ndarray, last: np.ndarray) -> float | None:
        """Smallest interval start ``t`` in ``lo`` covered by ``r`` of ``[lo, last]``."""
        lo_sorted = np.sort(lo)
        starts = lo_sorted[np.concatenate(([True], lo_sorted[1:] != lo_sorted[:-1]))]
        covered = np.searchsorted(lo_sorted, starts, side="right") - np.searchsorted(
            np.sort(last), starts, side="left"
        )
        enough = np.flatnonzero(covered >= r)
        if len(enough) == 0:
            return None
        return float(starts[enough[0]])

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
        if len(self.releases.ids) < r:
            return None
        index, a, lo, last = self._feasible(walltime_s, min_start, max_start)
        if len(index) < r:
            return None
        t = self._first_covered(r, lo, last)
        if t is None:
            return None
        here = (lo <= t) & (last >= t)
        pick = index[here] // self.width
        return self._cheapest(r, pick, a[here], t), t

    def earliest_start(self, r: int, walltime_s: float, min_start: float) -> float:
        """The start :meth:`earliest` would find with no upper bound (``inf`` if none)."""
        if len(self.releases.ids) < r:
            return np.inf
        index, _, lo, last = self._feasible(walltime_s, min_start, None)
        if len(index) < r:
            return np.inf
        t = self._first_covered(r, lo, last)
        return np.inf if t is None else t

    def _cheapest(self, r: int, pick: np.ndarray, since: np.ndarray, t: float) -> np.ndarray:
        """The ``r`` cheapest of free nodes ``pick`` (idle since ``since``) to start at ``t``."""
        rel = self.releases
        gap = np.where(
            rel.no_gap[pick],
            0.0,
            rel.idle_w[pick] * np.maximum(0.0, t - np.maximum(since, self.now)),
        )
        cost = rel.base_j[pick] + gap
        return pick[_cheapest_order(r, cost, rel.tie_key[pick])]

    def earliest_by_grid(
        self, r: int, walltime_s: float, min_start: float, max_start: float | None = None
    ) -> tuple[np.ndarray, float] | None:
        """:meth:`earliest` by brute force over nodes × candidate times (for tests).

        It reads the segments, not the free intervals, and ranks nodes with
        the four tie-break keys, not :attr:`ReleaseMap.tie_key`.
        """
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
        gap = np.where(
            rel.no_gap[pick],
            0.0,
            rel.idle_w[pick] * np.maximum(0.0, t - np.maximum(since, self.now)),
        )
        cost = rel.base_j[pick] + gap
        order = np.lexsort((pick, rel.timeout_rank[pick], rel.rank[pick], cost))
        return pick[order[:r]], t


def _free_from_segments(starts: list[float], finishes: list[float]) -> tuple[list, list]:
    """Free intervals ``(a, b)`` of one node from its segments.

    Segments are taken by start; ``a`` is the largest finish so far (``-inf``
    before the first), and an interval ``[a, s)`` is kept when ``s > a``; the
    last one is ``[a, inf)``.
    """
    free_a: list[float] = []
    free_b: list[float] = []
    reach = -np.inf
    for s, f in sorted(zip(starts, finishes, strict=True), key=lambda seg: seg[0]):
        if s > reach:
            free_a.append(reach)
            free_b.append(s)
        reach = max(reach, f)
    if np.inf > reach:
        free_a.append(reach)
        free_b.append(np.inf)
    return free_a, free_b


def _holding(a_list: list[float], b_list: list[float], t: float) -> int:
    """Index of the interval ``[a, b)`` that holds ``t`` (-1 if none)."""
    for i, a in enumerate(a_list):
        if a <= t < b_list[i]:
            return i
    return -1


class ArraySchedule(Schedule):
    """A schedule whose plan a compiled planner makes at once, into arrays.

    ``compute()`` returns ``(job_at, starts, nodes, ptr)``: entry ``k`` of the
    plan is job ``job_at(k)`` starting at ``starts[k]`` on
    ``nodes[ptr[k]:ptr[k + 1]]`` (or ``None`` for no plan). It runs when the
    plan is first read, and entries become :class:`Planned` objects only as
    they are read, so a power manager that asks only
    :meth:`first_appearances` pays for no Python object per queued job.
    """

    def __init__(self, start: list[Planned], compute: Callable[[], tuple | None]) -> None:
        super().__init__(start)
        self._compute: Callable[[], tuple | None] | None = compute
        self._arrays: tuple | None = None
        self._read = 0

    def _load(self) -> tuple:
        if self._arrays is None:
            got = self._compute()
            self._compute = None
            if got is None:
                got = (None, np.empty(0), _NO_NODES, np.zeros(1, dtype=np.int64))
            self._arrays = got
        return self._arrays

    def _entry(self, k: int) -> Planned:
        made = self._made
        job_at, starts, nodes, ptr = self._arrays
        while len(made) <= k:
            j = len(made)
            made.append(Planned(job_at(j), float(starts[j]), nodes[ptr[j] : ptr[j + 1]]))
        return made[k]

    def iter_plan(self) -> Iterator[Planned]:
        """Planned jobs in planning order (starts never decrease)."""
        starts = self._load()[1]
        for k in range(len(starts)):
            self._read = max(self._read, k + 1)
            yield self._entry(k)

    @property
    def made(self) -> Sequence[Planned]:
        """The part of the plan read so far (entries made when looked at)."""
        return _Prefix(self, self._read)

    def first_appearances(self, nodes: set[int]) -> dict[int, float]:
        """As :meth:`Schedule.first_appearances`, from the arrays (one compiled scan)."""
        if not nodes:
            return {}
        _, starts, flat, ptr = self._load()
        wanted = np.fromiter(nodes, dtype=np.int64, count=len(nodes))
        found, entry, read = kernels.first_appearances(flat, ptr, wanted)
        self._read = max(self._read, read)
        return dict(zip(found.tolist(), starts[entry].tolist(), strict=True))


class _Prefix(Sequence):
    """The first ``n`` entries of an :class:`ArraySchedule`'s plan, made when looked at."""

    def __init__(self, schedule: ArraySchedule, n: int) -> None:
        self._schedule = schedule
        self._n = n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("plan index out of range")
        return self._schedule._entry(i)

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return repr(list(self))
