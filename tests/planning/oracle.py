"""Brute-force references for the planning tests: gap search and tie-break keys.

:func:`earliest_by_grid` answers what :meth:`Timelines.earliest
<hpcpower.planning.timelines.Timelines.earliest>` answers, by brute force
over nodes × candidate times: it reads the segments, not the free
intervals, and ranks nodes with the four tie-break keys (:func:`rank`,
:func:`timeout_rank`), not :attr:`ReleaseMap.tie_key
<hpcpower.planning.release.ReleaseMap.tie_key>`.

A release map keeps neither the cluster's states nor the idle timeout, so
the tie-break keys take the cluster (or its read-only view) and the timeout
the map was made with. Read them within the pass that made the map.
"""

from __future__ import annotations

import numpy as np

from hpcpower.planning.common import EPS, IDLE, RANK
from hpcpower.planning.release import ReleaseMap
from hpcpower.planning.timelines import Timelines


def rank(releases: ReleaseMap, cluster) -> np.ndarray:
    """State rank per node (idle 0, computing 1, switching on 2, other 3)."""
    return RANK[cluster.state]


def timeout_rank(releases: ReleaseMap, cluster, timeout_s: float | None) -> np.ndarray:
    """``-(remaining idle timeout)`` for idle nodes, else 0."""
    ranks = np.zeros(len(releases.ids))
    if timeout_s is not None:
        idle = cluster.state == IDLE
        ranks[idle] = -(cluster.since[idle] + timeout_s - releases.now)
    return ranks


def segment_arrays(lines: Timelines) -> tuple[np.ndarray, np.ndarray]:
    """All segments as ``(start, finish)`` arrays of shape (nodes, slots), padded with inf."""
    n = len(lines.free_a)
    count = np.zeros(n, dtype=np.intp)
    for rows, _, _ in lines._segments:
        count[rows] += 1
    width = max(1, int(count.max()))
    start = np.full((n, width), np.inf)
    finish = np.full((n, width), np.inf)
    count[:] = 0
    for rows, s, f in lines._segments:
        slot = count[rows]
        start[rows, slot] = s
        finish[rows, slot] = f
        count[rows] += 1
    return start, finish


def finish_times(lines: Timelines, lo: float, hi: float = np.inf) -> np.ndarray:
    """Distinct finite segment finish times in ``[lo - EPS, hi - EPS)``, sorted."""
    f = np.unique(np.concatenate([f for _, _, f in lines._segments] + [np.empty(0)]))
    f = f[np.isfinite(f)]
    return f[(f >= lo - EPS) & (f < hi - EPS)]


def gaps(lines: Timelines, nodes: np.ndarray, times: np.ndarray):
    """For nodes × times: (free, idle_since, free_until), from the segments."""
    start, finish = segment_arrays(lines)
    s = start[nodes][:, :, None]
    f = finish[nodes][:, :, None]
    t = times[None, None, :]
    begun = s <= t
    covered = (begun & (f > t)).any(axis=1)
    idle_since = np.where(begun, f, -np.inf).max(axis=1)
    free_until = np.where(begun, np.inf, s).min(axis=1)
    return ~covered, idle_since, free_until


def free_intervals(lines: Timelines) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every node's kept free intervals ``[a, b)`` as flat arrays ``(node, a, b)``.

    ``a`` is the finish of the node's previous segment (``-inf`` for none):
    it is both when the node falls idle and a candidate start time.
    """
    w = lines.width
    a = lines.free_a[:, :w]
    b = lines.free_b[:, :w]
    ok = b > a
    node = np.broadcast_to(lines.releases.ids[:, None], a.shape)[ok]
    return node, a[ok], b[ok]


def earliest_by_grid(
    lines: Timelines,
    cluster,
    timeout_s: float | None,
    r: int,
    walltime_s: float,
    min_start: float,
    max_start: float | None = None,
) -> tuple[np.ndarray, float] | None:
    """:meth:`Timelines.earliest` by brute force over nodes × candidate times.

    ``cluster`` and ``timeout_s`` are those the timelines' release map was
    made with (for the tie-break keys).
    """
    if max_start is not None and min_start + EPS >= max_start:
        return None
    rel = lines.releases
    nodes = rel.ids
    if len(nodes) < r:
        return None
    hi = np.inf if max_start is None else max_start
    times = finish_times(lines, min_start, hi)
    times = times[times > min_start]
    times = np.concatenate(([min_start], times))
    free, idle_since, until = gaps(lines, nodes, times)
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
        rel.idle_w[pick] * np.maximum(0.0, t - np.maximum(since, lines.now)),
    )
    cost = rel.base_j[pick] + gap
    order = np.lexsort(
        (
            pick,
            timeout_rank(rel, cluster, timeout_s)[pick],
            rank(rel, cluster)[pick],
            cost,
        )
    )
    return pick[order[:r]], t
