"""Per-node timelines of one pass: free intervals, and the earliest gap that fits a job.

EASY's projection places each queued job into the earliest gap of the
per-node timelines that holds it for its walltime. :class:`Timelines` is the
numpy form; :class:`TimelineLists` the same in Python lists, for small
machines; the compiled twins below keep the same intervals in the same
slots and search them with the same float operations.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from math import nextafter

import numpy as np

from hpcpower.planning._numba import kernel
from hpcpower.planning.common import (
    COMPUTING,
    EPS,
    IDLE,
    INF,
    SLEEPING,
    SWITCHING_OFF,
    SWITCHING_ON,
)
from hpcpower.planning.release import ReleaseMap
from hpcpower.planning.select import _argsort2, cheapest_order, cheapest_order_jit


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
    without rebuilding anything. The segments themselves are kept too, to
    rebuild a node's intervals when a segment does not fit one of them.

    Args:
        releases: The pass's release map (before any job was placed).
        cluster: The cluster (a read-only view of it).
        now: The time of the pass.
        started: The jobs starting now as ``(nodes, walltime_s)`` pairs.
    """

    def __init__(self, releases: ReleaseMap, cluster, now: float, started) -> None:
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
        for nodes, walltime_s in started:
            rows = np.asarray(nodes)
            k = len(rows)
            self._block(block_start, block_end, rows, np.full(k, now), np.full(k, now + walltime_s))
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
            for lo, hi in zip(a_list, b_list, strict=True):
                if lo <= start < hi and finish <= hi + EPS:
                    break
            else:
                return False
        return True

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
        return pick[cheapest_order(r, cost, rel.tie_key[pick])]


class TimelineLists:
    """:class:`Timelines` in Python lists, for small machines (the same answers, to the bit).

    Up to :data:`~hpcpower.planning.release.LIST_NODES` nodes a projection
    places a few jobs, and numpy's cost per call would dominate. Each node
    keeps its free intervals ``[a, b)`` in two lists (an emptied interval
    is removed rather than marked); its segments, for rebuilds, are its
    first block's and those added since. The intervals are also indexed for
    the gap search:

    * ``_tails``: ``(a, node)`` of every interval ``[a, inf)``, sorted. A
      tail admits every start from ``max(a, min_start)`` on, so the tails
      that hold a start ``s`` are the first ``bisect(s)`` of them.
    * ``_finite``: ``(b, a, node)`` of every other interval, sorted. One
      that ends by ``min_start`` admits no start, so the search reads only
      those after it: at a pass, most end at the pass (the free time before
      a node's current job or transition).

    The search then visits only the candidate starts that can be the answer,
    not every interval. Every answer is made of the same float operations
    as :class:`Timelines`', and the order of a node's intervals never
    matters: at most one holds a given time (they are disjoint), and the
    node choice sorts by (cost, tie key), distinct per node. It takes the
    arguments of :class:`Timelines`.
    """

    def __init__(self, releases: ReleaseMap, cluster, now: float, started) -> None:
        now = float(now)
        self.now = now
        self.releases = releases
        n = cluster.n_nodes
        self.n_nodes = n
        state = cluster.state.tolist()
        since = cluster.since.tolist()
        release = releases.release.tolist()
        # At the start of the pass each node has at most one busy block: its
        # segments are contiguous. Nodes starting a job now were idle.
        first = [INF] * n
        end = [INF] * n
        for node, s in enumerate(state):
            if s == IDLE:
                continue
            if s == SLEEPING:
                first[node] = now
            elif s == COMPUTING:
                first[node] = since[node]
            else:  # switching on or off: from its start, or now if that is later
                first[node] = since[node] if since[node] < now else now
            end[node] = release[node]
        # Each busy node's first segment starts here (before the min below).
        self._begin = first[:]
        self._off_end: dict[int, float] = {}
        if cluster.counts[SWITCHING_OFF]:
            on = cluster.switch_on_mean_s.tolist()
            for node, s in enumerate(state):
                if s == SWITCHING_OFF:
                    # The end of the off, then the wake (min/max: release - on
                    # may round below the first segment's start).
                    off_end = release[node] - on[node]
                    self._off_end[node] = off_end
                    if off_end < first[node]:
                        first[node] = off_end
                    if off_end > end[node]:
                        end[node] = off_end
        self._release = release
        self._started: dict[int, float] = {}
        for nodes, walltime_s in started:
            finish = now + walltime_s
            for node in np.asarray(nodes).tolist():
                first[node] = now
                end[node] = finish
                self._started[node] = finish
        # Free intervals: [-inf, block start) and [block end, inf) (the latter
        # unless the block never ends); a node without segments: [-inf, inf).
        self._a = [[-INF, e] if e < INF else [-INF] for e in end]
        self._b = [[f, INF] if e < INF else [f] for f, e in zip(first, end, strict=True)]
        # The search's index, made when first needed (see _reindex).
        self._indexed = False
        self._tails: list[tuple[float, int]] = []
        self._finite: list[tuple[float, float, int]] = []
        #: Segments added per node (starts, finishes), after its first ones.
        self._added: dict[int, tuple[list[float], list[float]]] = {}
        self._base = releases.base_j.tolist()
        self._no_gap = releases.no_gap.tolist()
        self._idle_w = releases.idle_w.tolist()
        self._tie = releases.tie_key.tolist()
        self._irregular: set[int] = set()

    def node_segments(self, node: int) -> tuple[list[float], list[float]]:
        """Starts and finishes of one node's segments, in the order they were added."""
        starts: list[float] = []
        finishes: list[float] = []
        if node in self._started:
            starts.append(self.now)
            finishes.append(self._started[node])
        elif self._begin[node] < INF:  # (busy at the pass: its block's segments)
            begin = self._begin[node]
            end = self._release[node]
            if node in self._off_end:  # the end of the off, then the wake
                off_end = self._off_end[node]
                starts += [begin, off_end]
                finishes += [off_end, end]
            else:
                starts.append(begin)
                finishes.append(end)
        added = self._added.get(node)
        if added is not None:
            starts += added[0]
            finishes += added[1]
        return starts, finishes

    def _reindex(self) -> None:
        """Make the search's index from every node's intervals."""
        tails = []
        finite = []
        for node, a_list in enumerate(self._a):
            for a, b in zip(a_list, self._b[node], strict=True):
                if b == INF:
                    tails.append((a, node))
                else:
                    finite.append((b, a, node))
        tails.sort()
        finite.sort()
        self._tails = tails
        self._finite = finite
        self._indexed = True

    def _index(self, a: float, b: float, node: int) -> None:
        if b == INF:
            insort(self._tails, (a, node))
        else:
            insort(self._finite, (b, a, node))

    def _unindex(self, a: float, b: float, node: int) -> None:
        if b == INF:
            del self._tails[bisect_left(self._tails, (a, node))]
        else:
            del self._finite[bisect_left(self._finite, (b, a, node))]

    def add(self, nodes, start: float, finish: float) -> None:
        """Reserve ``nodes`` over ``[start, finish)`` (as :meth:`Timelines.add`)."""
        start = float(start)
        finish = float(finish)
        irregular = self._irregular
        nodes = np.asarray(nodes).tolist()
        # Few nodes: keep the search's index up to date; many (a wide job):
        # drop it, to be made again at the next search, which costs less.
        index = self._indexed and len(nodes) <= 8
        self._indexed = index
        for node in nodes:
            added = self._added.get(node)
            if added is None:
                self._added[node] = ([start], [finish])
            else:
                added[0].append(start)
                added[1].append(finish)
            if finish < start:
                irregular.add(node)
            a_list = self._a[node]
            b_list = self._b[node]
            if index:
                for a, b in zip(a_list, b_list, strict=True):
                    self._unindex(a, b, node)
            slot = _holding(a_list, b_list, start)
            if slot < 0 or finish > b_list[slot] or node in irregular:
                a_list, b_list = _free_from_segments(*self.node_segments(node))
                self._a[node] = a_list
                self._b[node] = b_list
            else:
                a = a_list[slot]
                b = b_list[slot]
                if start > a:
                    b_list[slot] = start
                    if b > finish:
                        a_list.append(finish)
                        b_list.append(b)
                elif b > finish:
                    # Left piece empty: the right one takes its slot.
                    a_list[slot] = finish
                else:
                    del a_list[slot]
                    del b_list[slot]
            if index:
                for a, b in zip(a_list, b_list, strict=True):
                    self._index(a, b, node)

    def window_free(self, nodes, start: float, finish: float) -> bool:
        """Whether every node is free at ``start`` and stays free until ``finish``."""
        for node in np.asarray(nodes).tolist():
            for lo, hi in zip(self._a[node], self._b[node], strict=True):
                if lo <= start < hi and finish <= hi + EPS:
                    break
            else:
                return False
        return True

    def _search(self, r: int, walltime_s: float, min_start: float, max_start: float | None):
        """The earliest start :meth:`Timelines.earliest` finds: ``(t, tails, finite)``.

        ``t`` is ``None`` when none; ``tails`` how many of ``_tails`` hold
        ``t``; ``finite`` the feasible finite intervals as ``(lo, last, a,
        node)``. As :meth:`Timelines._feasible` and ``_first_covered``: a
        start ``t`` fits a free interval ``[a, b)`` when ``lo <= t <= last``,
        with ``lo = max(a, min_start)``, and ``t`` is the smallest ``lo``
        fitting ``r`` intervals. A tail's ``last`` is the largest float, so
        it fits every start from its ``lo`` on.
        """
        m = min_start
        cap_start = INF if max_start is None else max_start - EPS
        if not self._indexed:
            self._reindex()
        tails = self._tails
        finite = self._finite
        feasible = []
        for i in range(bisect_right(finite, (m, INF, INF)), len(finite)):
            b, a, node = finite[i]
            lo = a if a > m else m
            last = b - walltime_s + EPS
            if b - lo > EPS and lo <= last and lo < cap_start:
                cap = nextafter(b - EPS, -INF)
                feasible.append((lo, last if last < cap else cap, a, node))
        # Tails whose lo is below the cap (a tail's lo is max(a, m)).
        n_tails = bisect_left(tails, (cap_start, -INF)) if m < cap_start else 0
        need = r - len(feasible)  # at least this many tails must hold the start
        if need > n_tails:
            return None, 0, feasible
        # Candidates below the need-th tail's a fit fewer than r intervals.
        if need > 0 and tails[need - 1][0] > m:
            lower = tails[need - 1][0]
            j = bisect_left(tails, (lower, -INF))
            at_m = False
        else:
            lower = m
            j = min(bisect_right(tails, (m, INF)), n_tails)  # tails with a <= m: lo = m
            at_m = j > 0
        los = sorted({f[0] for f in feasible if f[0] >= lower})
        k = 0
        while True:
            # The next candidate: m (a tail's lo), the next tail's a, the next finite lo.
            s = m if at_m else (tails[j][0] if j < n_tails else INF)
            if k < len(los) and los[k] < s:
                s = los[k]
            if s == INF:
                return None, 0, feasible
            at_m = False
            while j < n_tails and tails[j][0] <= s:
                j += 1
            while k < len(los) and los[k] <= s:
                k += 1
            # (Every tail before j has a <= s, so holds s.)
            covered = j
            for f in feasible:
                if f[0] <= s <= f[1]:
                    covered += 1
            if covered >= r:
                return s, j, feasible

    def earliest(
        self, r: int, walltime_s: float, min_start: float, max_start: float | None = None
    ) -> tuple[np.ndarray, float] | None:
        """Earliest gap start in ``[min_start, max_start)`` with ``r`` nodes free, and the nodes.

        As :meth:`Timelines.earliest`.
        """
        if max_start is not None and min_start + EPS >= max_start:
            return None
        if self.n_nodes < r:
            return None
        t, n_tails, feasible = self._search(r, walltime_s, min_start, max_start)
        if t is None:
            return None
        now = self.now
        base = self._base
        no_gap = self._no_gap
        idle_w = self._idle_w
        tie = self._tie
        held = self._tails[:n_tails]  # (a copy; the index is made by the search)
        held.extend((f[2], f[3]) for f in feasible if f[0] <= t <= f[1])
        chosen = []
        for a, node in held:
            if no_gap[node]:
                gap = 0.0
            else:
                idle_s = t - (a if a > now else now)
                gap = idle_w[node] * (idle_s if idle_s > 0.0 else 0.0)
            chosen.append((base[node] + gap, tie[node], node))
        chosen.sort()
        return np.array([c[2] for c in chosen[:r]], dtype=np.intp), t

    def earliest_start(self, r: int, walltime_s: float, min_start: float) -> float:
        """The start :meth:`earliest` would find with no upper bound (``inf`` if none)."""
        if self.n_nodes < r:
            return INF
        t = self._search(r, walltime_s, min_start, None)[0]
        return INF if t is None else t


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


# ------------------------------------------------------------- timelines
# Per node: free intervals [fa, fb) in slots 0 .. used-1 (emptied slots hold
# [inf, -inf)), and every segment (seg_s, seg_f) in the order it was added,
# for rebuilds. As :class:`Timelines`.


@kernel
def _widen(arr, fill, width):
    out = np.full((arr.shape[0], width), fill)
    out[:, : arr.shape[1]] = arr
    return out


@kernel
def _room(fa, fb, seg_s, seg_f, nseg):
    """Arrays wide enough for one more segment on any node.

    A node never has more free intervals than segments + 1, so segment slots
    for ``max(nseg) + 1`` and interval slots for one more suffice.
    """
    need = nseg.max() + 1
    if need <= seg_s.shape[1]:
        return fa, fb, seg_s, seg_f
    width = max(need, 2 * seg_s.shape[1])
    return (
        _widen(fa, INF, width + 1),
        _widen(fb, -INF, width + 1),
        _widen(seg_s, INF, width),
        _widen(seg_f, INF, width),
    )


@kernel
def _rebuild(fa, fb, used, seg_s, seg_f, nseg, node):
    """Recompute one node's free intervals from its segments (by start, stable)."""
    k = nseg[node]
    starts = seg_s[node, :k].copy()
    order = _argsort2(starts, starts)
    a_out = np.empty(k + 1)
    b_out = np.empty(k + 1)
    count = 0
    reach = -INF
    for j in range(k):
        s = seg_s[node, order[j]]
        f = seg_f[node, order[j]]
        if s > reach:
            a_out[count] = reach
            b_out[count] = s
            count += 1
        reach = reach if reach >= f else f
    if INF > reach:
        a_out[count] = reach
        b_out[count] = INF
        count += 1
    fa[node, :] = INF
    fb[node, :] = -INF
    fa[node, :count] = a_out[:count]
    fb[node, :count] = b_out[:count]
    used[node] = count


@kernel
def _add(fa, fb, used, seg_s, seg_f, nseg, irregular, nodes, start, finish):
    """Reserve ``nodes`` over ``[start, finish)`` (room made beforehand by :func:`_room`)."""
    for node in nodes:
        k = nseg[node]
        seg_s[node, k] = start
        seg_f[node, k] = finish
        nseg[node] = k + 1
        if finish < start:
            irregular[node] = True
        slot = -1
        for i in range(used[node]):
            if fa[node, i] <= start and start < fb[node, i]:
                slot = i
                break
        if slot < 0 or finish > fb[node, slot] or irregular[node]:
            _rebuild(fa, fb, used, seg_s, seg_f, nseg, node)
            continue
        a = fa[node, slot]
        b = fb[node, slot]
        if start > a:
            fb[node, slot] = start
            if not b > finish:
                continue
            slot = used[node]
            fa[node, slot] = finish
            fb[node, slot] = b
            used[node] = slot + 1
        elif b > finish:
            fa[node, slot] = finish
        else:
            fa[node, slot] = INF
            fb[node, slot] = -INF


@kernel
def _window_free(fa, fb, used, nodes, start, finish):
    """Whether every node is free at ``start`` and stays free until ``finish``."""
    for node in nodes:
        ok = False
        for i in range(used[node]):
            a = fa[node, i]
            b = fb[node, i]
            if a <= start and start < b and finish <= b + EPS:
                ok = True
                break
        if not ok:
            return False
    return True


@kernel
def _first_covered(lo, last, r):
    """The smallest interval start covered by ``r`` intervals ``[lo, last]`` (nan if none).

    That is the smallest value ``s`` of ``lo`` with ``#(lo <= s) - #(last <
    s) >= r``. The answer is usually one of the first few candidates, so
    they are tried in turn with one scan each; after that, both columns are
    sorted and the candidates swept in order (the same test, so the same
    answer).
    """
    count = len(lo)
    s = -INF
    for _ in range(12):
        found = False
        nxt = INF
        for q in range(count):
            v = lo[q]
            if v > s and (not found or v < nxt):
                nxt = v
                found = True
        if not found:
            return np.nan
        s = nxt
        covered = 0
        for q in range(count):
            if lo[q] <= s:
                covered += 1
            if last[q] < s:
                covered -= 1
        if covered >= r:
            return s
    lo_sorted = np.sort(lo)
    last_sorted = np.sort(last)
    j = 0  # intervals with last < s
    i = 0
    while i < count:
        s = lo_sorted[i]
        while i < count and lo_sorted[i] == s:
            i += 1
        while j < count and last_sorted[j] < s:
            j += 1
        if i - j >= r:
            return s
    return np.nan


@kernel
def _no_gap_found():
    """What :func:`_earliest` returns when no gap fits."""
    return np.empty(0, dtype=np.int64), np.nan


@kernel
def _earliest(
    fa, fb, used, r, walltime, min_start, max_start, base_j, no_gap, idle_w, tie_key, now, scratch
):
    """:meth:`Timelines.earliest` (``max_start`` nan: none): ``(nodes, start)``, empty if none.

    ``scratch`` is ``(floats (3, m), ints (m))`` to work in when the
    timelines hold at most ``m`` free intervals (else arrays are made):
    allocations are a large part of the projection's time.
    """
    bounded = not np.isnan(max_start)
    if bounded and min_start + EPS >= max_start:
        return _no_gap_found()
    n = fa.shape[0]
    if n < r:
        return _no_gap_found()
    total = 0
    for node in range(n):
        total += used[node]
    scratch_f, scratch_i = scratch
    if total <= len(scratch_i):
        lo_all = scratch_f[0]
        last_all = scratch_f[1]
        a_all = scratch_f[2]
        node_all = scratch_i
    else:
        lo_all = np.empty(total)
        last_all = np.empty(total)
        a_all = np.empty(total)
        node_all = np.empty(total, dtype=np.int64)
    count = 0
    for node in range(n):
        for i in range(used[node]):
            a = fa[node, i]
            b = fb[node, i]
            lo = a if a >= min_start else min_start
            last = b - walltime + EPS
            if not (b - lo > EPS and lo <= last):
                continue
            if bounded and not lo < max_start - EPS:
                continue
            cap = np.nextafter(b - EPS, -INF)
            lo_all[count] = lo
            last_all[count] = last if last <= cap else cap
            a_all[count] = a
            node_all[count] = node
            count += 1
    if count < r:
        return _no_gap_found()
    lo_all = lo_all[:count]
    last_all = last_all[:count]
    t = _first_covered(lo_all, last_all, r)
    if np.isnan(t):
        return _no_gap_found()
    m = 0
    for q in range(count):
        if lo_all[q] <= t and last_all[q] >= t:
            m += 1
    pick = np.empty(m, dtype=np.int64)
    cost = np.empty(m)
    m = 0
    for q in range(count):
        if lo_all[q] <= t and last_all[q] >= t:
            node = node_all[q]
            pick[m] = node
            if no_gap[node]:
                gap = 0.0
            else:
                since = a_all[q] if a_all[q] >= now else now
                idle_s = t - since
                gap = idle_w[node] * (idle_s if idle_s >= 0.0 else 0.0)
            cost[m] = base_j[node] + gap
            m += 1
    return pick[cheapest_order_jit(r, cost, tie_key[pick])], t
