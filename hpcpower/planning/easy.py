"""One FCFS/EASY pass: dispatch, the head's reservation, backfilling, and the projection.

At each pass (the authors' ``easy_psas``):

1. **FCFS dispatch**: start jobs in arrival order on idle nodes while they
   fit; stop at the first that does not.
2. **Head reservation** (:func:`reserve_head`): the first waiting job gets
   the earliest start on specific nodes (sleeping ones included, charged
   their wake), chosen by :meth:`ReleaseMap.select`. If it cannot be placed
   (too few nodes with a known release, as when jobs run past their
   walltime), the pass stops here: no backfilling and no plan.
3. **Backfill now** (:func:`backfill`): every later job, in arrival order,
   starts now if it fits on idle nodes outside the head's reservation, or on
   idle nodes including reserved ones if it ends (by walltime) before the
   head's start.
4. **Projection** (:func:`project`): the head, then the rest planned
   FCFS-forward with a non-decreasing barrier, then each planned job moved
   earlier into a gap of the per-node timelines when one fits before its
   FCFS start (EASY backfilling of the plan). The power manager wakes
   sleeping nodes from this plan.

The numpy forms come first and make the plan lazily, entry by entry; the
compiled twins (:func:`easy_pass` for steps 1-3, :func:`project_jit` and
:func:`plan_later` for step 4) make it at once into arrays. The policy that
uses them is :class:`hpcpower.policies.queue.fcfs_easy.FCFSEasy`.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import numpy as np

from hpcpower.planning._numba import kernel
from hpcpower.planning.common import COMPUTING, EPS, INF, SLEEPING, SWITCHING_OFF, SWITCHING_ON
from hpcpower.planning.release import LIST_NODES, ReleaseMap, idle_order_jit, release_map
from hpcpower.planning.select import (
    FEW_NODES,
    _argsort2,
    _order,
    _select,
    _select_in,
    key_order,
    select_jit,
)
from hpcpower.planning.timelines import (
    TimelineLists,
    Timelines,
    _add,
    _earliest,
    _room,
    _window_free,
)


def started_columns(started) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The jobs starting now as ``(nodes, ptr, walltimes)``, from ``(nodes, walltime)`` pairs.

    Job ``k`` runs on ``nodes[ptr[k]:ptr[k + 1]]`` for ``walltimes[k]``.
    """
    if not started:
        return NONE_STARTED
    nodes = np.concatenate([np.asarray(n, dtype=np.int64) for n, _ in started])
    ptr = np.zeros(len(started) + 1, dtype=np.int64)
    np.cumsum([len(n) for n, _ in started], out=ptr[1:])
    walltimes = np.array([w for _, w in started], dtype=float)
    return nodes, ptr, walltimes


#: :func:`started_columns` of no job: no nodes, offsets ``[0]``, no walltimes.
NONE_STARTED = (np.empty(0, dtype=np.int64), np.zeros(1, dtype=np.int64), np.empty(0))


def occupy_started(releases: ReleaseMap, now: float, started) -> None:
    """Mark the nodes of the jobs starting now busy until their walltime end.

    ``started`` holds ``(nodes, walltime_s)`` pairs, as every numpy form here
    takes them (the compiled twins take :func:`started_columns`).
    """
    for nodes, walltime_s in started:
        releases.occupy(nodes, now + walltime_s)


def reserve_head(base: ReleaseMap, now: float, started, head_res: int):
    """The head's reservation: ``(nodes, start)`` after the jobs starting now, or ``None``.

    ``None`` when it cannot be placed (too few nodes with a known release,
    as when jobs run past their walltime).
    """
    releases = base.copy()
    occupy_started(releases, now, started)
    return releases.select(head_res, now)


def backfill(now: float, head_start: float, head_nodes, idle, res, req, n_nodes: int):
    """The later jobs that start now around the head's reservation: ``(positions, gangs)``.

    ``idle`` holds the idle nodes left after dispatch, in idle order; ``res``
    and ``req`` the columns of the jobs after the head, in arrival order. A
    job starts now if it fits on idle nodes outside the head's reservation,
    or on idle nodes including reserved ones (necessarily, as there are too
    few others) when it ends by walltime before the head's start.
    """
    reserved = np.zeros(n_nodes, dtype=bool)
    reserved[head_nodes] = True
    taken = np.zeros(n_nodes, dtype=bool)
    positions: list[int] = []
    gangs: list[np.ndarray] = []
    # Scan the later jobs in arrival order with array operations.
    ends_in_time = now + req <= head_start + EPS
    free = idle[~reserved[idle]]
    p = 0
    while p < len(res) and len(idle):
        fits = (res[p:] <= len(free)) | ((res[p:] <= len(idle)) & ends_in_time[p:])
        j = int(np.argmax(fits))
        if not fits[j]:
            break
        j += p
        r = int(res[j])
        # Both runs keep the idle order; taking a prefix of one removes
        # scattered nodes from the other.
        if r <= len(free):
            nodes = free[:r]
            free = free[r:]
            taken[nodes] = True
            idle = idle[~taken[idle]]
        else:
            nodes = idle[:r]
            idle = idle[r:]
            taken[nodes] = True
            free = free[~taken[free]]
        positions.append(j)
        gangs.append(nodes)
        p = j + 1
    return positions, gangs


def unpicked(columns, positions):
    """The columns without the backfilled positions."""
    keep = np.ones(len(columns[0]), dtype=bool)
    keep[positions] = False
    return tuple(c[keep] for c in columns)


def project(now: float, cluster, base: ReleaseMap, started, head, rest) -> Iterator[tuple]:
    """The head, the FCFS-forward plan, then each job moved into an earlier gap.

    ``base`` is the release map of the pass before any job was placed;
    ``started`` the jobs starting now as ``(nodes, walltime_s)`` pairs; ``head`` the
    head's reservation ``(nodes, start, walltime)``; ``rest`` the columns
    ``(res, walltimes)`` of the jobs after the head, in arrival order.
    Yields plan entries ``(index, start, nodes)``, ``index`` -1 for the head
    and else the job's position in ``rest`` (as :func:`project_jit` returns them).

    The plan is the placed jobs sorted by start (ties in placement order),
    and the power manager usually reads only its beginning, so entries are
    handed out as soon as no job still to be placed can start before them
    (nor at the same time, as it would sort after them). A job still to be
    placed starts no earlier than the smaller of

    * its FCFS-forward start, which never decreases along the queue, so the
      next job's is a bound for all, and
    * the earliest start in the timelines of a job with the fewest nodes and
      the shortest walltime among them: a gap that fits a job fits any
      smaller or shorter one, and gaps only shrink as jobs are placed, so
      this bound stays valid (if weaker) as placement goes on.

    On machines of at most :data:`~hpcpower.planning.release.LIST_NODES`
    nodes the timelines are kept in Python lists (:class:`TimelineLists`,
    the same answers), where numpy's per-call cost would dominate.
    """
    head_nodes, head_start, head_req = head
    head_end = head_start + head_req
    form = TimelineLists if cluster.n_nodes <= LIST_NODES else Timelines
    lines = form(base, cluster, now, started)
    if not lines.window_free(head_nodes, head_start, head_end):
        return
    lines.add(head_nodes, head_start, head_end)

    # FCFS-forward plan seeded with the head's reservation, made one job ahead
    # of the gap placement.
    releases = base.copy()
    occupy_started(releases, now, started)
    releases.occupy(head_nodes, head_end)
    res, req = rest
    n_rest = len(res)
    res_of = res.tolist()
    req_of = req.tolist()
    barrier = head_start

    pending: list[tuple[float, int, tuple]] = [(head_start, -1, (-1, head_start, head_nodes))]
    i = 0  # next job to place
    ahead: tuple | None = None  # its FCFS-forward entry (index, start, nodes)
    done = n_rest == 0  # no further job will be placed
    # Suffix minima of res and walltimes, made when needed.
    minima: tuple[list[int], list[float]] | None = None
    gap_bound = -np.inf  # earliest gap start for the remaining jobs (a stale value is a bound)
    placed_since_bound = 0
    batch = 1
    while True:
        if not done and ahead is None:
            pick = releases.select(res_of[i], barrier)
            if pick is None:
                done = True
            else:
                nodes, barrier = pick
                releases.occupy(nodes, barrier + req_of[i])
                ahead = (i, barrier, nodes)
        if pending:
            top = pending[0][0]
            # (Past the block above, ``ahead`` is None exactly when ``done``.)
            if ahead is None or top <= min(ahead[1], gap_bound):
                yield heapq.heappop(pending)[2]
                continue
            if ahead[1] >= top and placed_since_bound >= batch:
                # Only the gap bound holds the next entry back: refresh it.
                # (Refreshes that do not help are spaced out, doubling.)
                if minima is None:
                    minima = (
                        np.minimum.accumulate(res[::-1])[::-1].tolist(),
                        np.minimum.accumulate(req[::-1])[::-1].tolist(),
                    )
                fewest, shortest = minima
                gap_bound = lines.earliest_start(fewest[i], shortest[i], now)
                placed_since_bound = 0
                if top <= gap_bound:
                    batch = 1
                    continue
                batch *= 2
        elif ahead is None:
            return
        _, fcfs_start, fcfs_nodes = ahead
        ahead = None
        placed = _place(lines, res_of[i], req_of[i], fcfs_start, fcfs_nodes, now)
        if placed is None:
            done = True
            continue
        heapq.heappush(pending, (placed[0], i, (i, *placed)))
        i += 1
        placed_since_bound += 1
        done = i == n_rest


def _place(
    lines: Timelines | TimelineLists, res: int, wall: float, start: float, nodes, now: float
):
    """Place one job of the FCFS-forward plan on the timelines: ``(start, nodes)`` or ``None``.

    It moves into the earliest gap that lets it start strictly earlier than
    its FCFS start; otherwise it keeps its FCFS nodes and start if they are
    still free; otherwise it slides to the earliest gap after its FCFS start
    (``None``: no room at all).
    """
    if now + EPS < start:
        early = lines.earliest(res, wall, now, start)
        if early is not None and early[1] + EPS < start:
            lines.add(early[0], early[1], early[1] + wall)
            return early[1], early[0]
    if lines.window_free(nodes, start, start + wall):
        lines.add(nodes, start, start + wall)
        return start, nodes
    slide = lines.earliest(res, wall, start)
    if slide is None:
        return None
    lines.add(slide[0], slide[1], slide[1] + wall)
    return slide[1], slide[0]


# ------------------------------------------------------- compiled twins
@kernel
def _without(values, count, taken):
    """Keep, in order, the first ``count`` values not ``taken``; returns the new count."""
    kept = 0
    for k in range(count):
        if not taken[values[k]]:
            values[kept] = values[k]
            kept += 1
    return kept


@kernel
def _take(values, count, r, out, taken):
    """Move the first ``r`` of ``count`` values to ``out``, marking them taken; new count."""
    out[:] = values[:r]
    values[: count - r] = values[r:count]
    for node in out:
        taken[node] = True
    return count - r


@kernel
def _occupied(release, now, started):
    """A copy of ``release`` with the nodes of the jobs starting now busy until their walltime.

    ``started`` is ``(nodes, ptr, walltimes)``: job ``k`` runs on
    ``nodes[ptr[k]:ptr[k + 1]]``.
    """
    rel = release.copy()
    _occupy(rel, now, started)
    return rel


@kernel
def _occupy(rel, now, started):
    """:func:`_occupied` in place."""
    started_nodes, started_ptr, started_req = started
    for k in range(len(started_req)):
        finish = now + started_req[k]
        for q in range(started_ptr[k], started_ptr[k + 1]):
            rel[started_nodes[q]] = finish


#: :func:`easy_pass` outcomes: every waiting job starts; nothing after the
#: head can start (plan later); the head is reserved for and later jobs backfilled.
ALL_START, PLAN_LATER, BACKFILLED = 0, 1, 2


@kernel
def easy_pass(now, nodes, timeout_s, queue, overrun_inf):
    """One FCFS/EASY pass past its first test (``FCFSEasy.schedule``), in one call.

    ``nodes`` as for :func:`release_map`; ``queue`` the queue's column
    buffers ``(ids, res, walltimes, alive, used)`` (see
    :meth:`~hpcpower.engine.queue.JobQueue.slots`); ``overrun_inf``: nodes of
    a job past its walltime are never planned on (else from now, see
    :class:`~hpcpower.planning.release.ReleaseMap`). The pass's
    :func:`idle_order_jit`, then FCFS dispatch on it, then, unless every job
    started or no later job fits on the idle nodes left, :func:`backfill_jit`.

    Returns ``(k, m, outcome, h, c, head start, packed)``: ``k`` jobs
    dispatched (each on the next ``res`` nodes of the idle order), ``m`` idle
    nodes, ``outcome`` one of :data:`ALL_START`, :data:`PLAN_LATER`,
    :data:`BACKFILLED`, and for BACKFILLED the head's ``h`` nodes (``h`` 0
    when it cannot be placed) and ``c`` backfilled jobs. ``packed`` holds the
    integers ``[idle order (m), dispatched ids (k), head id, backfilled ids
    (c), head nodes (h), positions (c), ptr (c + 1), nodes]``: positions in
    the columns after the head, and job ``q``'s nodes ``nodes[ptr[q]:ptr[q + 1]]``.
    """
    ids_all, res_all, req_all, alive, slots = queue
    n_jobs = 0
    for q in range(slots):
        if alive[q]:
            n_jobs += 1
    ids = np.empty(n_jobs, dtype=np.int64)
    res = np.empty(n_jobs, dtype=np.int64)
    req = np.empty(n_jobs)
    n_jobs = 0
    for q in range(slots):
        if alive[q]:
            ids[n_jobs] = ids_all[q]
            res[n_jobs] = res_all[q]
            req[n_jobs] = req_all[q]
            n_jobs += 1
    order = idle_order_jit(nodes[0], nodes[1], timeout_s, now)
    m = len(order)
    used = 0
    k = 0
    while k < n_jobs and res[k] <= m - used:
        used += res[k]
        k += 1
    if k == n_jobs:
        outcome = ALL_START
    else:
        outcome = PLAN_LATER
        for j in range(k + 1, n_jobs):
            if res[j] <= m - used:
                outcome = BACKFILLED
                break
    if outcome != BACKFILLED:
        packed = np.empty(m + k + 1, dtype=np.int64)
        packed[:m] = order
        packed[m : m + k] = ids[:k]
        packed[m + k] = ids[k] if k < n_jobs else -1
        return k, m, outcome, 0, 0, np.nan, packed
    ptr = np.zeros(k + 1, dtype=np.int64)
    for i in range(k):
        ptr[i + 1] = ptr[i] + res[i]
    h, c, head_start, core = backfill_jit(
        now,
        nodes,
        timeout_s,
        order,
        (order[:used], ptr, req[:k]),
        res[k],
        order[used:],
        res[k + 1 :],
        req[k + 1 :],
        overrun_inf,
    )
    packed = np.empty(m + k + 1 + c + len(core), dtype=np.int64)
    packed[:m] = order
    packed[m : m + k] = ids[:k]
    packed[m + k] = ids[k]
    at = m + k + 1
    for q in range(c):
        packed[at + q] = ids[k + 1 + core[h + q]]
    packed[at + c :] = core
    return k, m, outcome, h, c, head_start, packed


@kernel
def backfill_jit(
    now, nodes, timeout_s, order, started, head_res, idle, later_res, later_req, overrun_inf
):
    """EASY's head reservation and backfilling of one pass (as ``FCFSEasy.schedule``).

    The release map is made here from the cluster arrays (as
    :func:`release_map`, with ``order`` the pass's idle order). ``idle``
    holds the idle nodes left after dispatch, in idle order; ``started`` the
    jobs starting now (as :func:`_occupied` takes them); ``later_*`` the
    columns of the jobs after the head, in arrival order.

    Returns ``(h, c, head start, packed)``, the integers packed in one
    array: ``[head nodes (h), positions (c), ptr (c + 1), nodes]``, the
    head's nodes (as a set: :func:`project_jit` orders them), the positions in
    ``later_*`` of the ``c`` backfilled jobs, and their nodes
    (``nodes[ptr[k]:ptr[k + 1]]``); ``h`` is 0 when the head cannot be
    placed (then nothing is backfilled).
    """
    rel, base_j, _, gap_w, tie_key = release_map(now, nodes, overrun_inf, timeout_s, order)
    _occupy(rel, now, started)  # (the release map is not needed otherwise)
    # (The head's nodes as a set: only the plan needs their order, and
    # :func:`project_jit` puts them in order.)
    head, head_start = _select(rel, base_j, gap_w, tie_key, head_res, now, False)
    n_head = len(head)
    n_later = len(later_res)
    if n_head == 0:
        return 0, 0, head_start, np.zeros(1, dtype=np.int64)  # ptr = [0]
    # Room for everything: at most every later job backfilled, on at most
    # every idle node.
    packed = np.empty(n_head + 2 * n_later + 1 + len(idle), dtype=np.int64)
    packed[:n_head] = head
    positions = packed[n_head : n_head + n_later]
    buf = packed[n_head + 2 * n_later + 1 :]
    n = len(rel)
    reserved = np.zeros(n, dtype=np.bool_)
    reserved[head] = True
    taken = np.zeros(n, dtype=np.bool_)
    free = idle.copy()
    n_free = _without(free, len(free), reserved)
    rest = idle.copy()
    n_idle = len(rest)
    limit = head_start + EPS
    count = 0
    used = 0
    p = 0
    while p < n_later and n_idle > 0:
        # The first later job that fits on idle nodes outside the reservation,
        # or on idle nodes including reserved ones when it ends in time.
        j = p
        while j < n_later:
            r = later_res[j]
            if r <= n_free or (r <= n_idle and now + later_req[j] <= limit):
                break
            j += 1
        if j == n_later:
            break
        r = later_res[j]
        # Both runs keep the idle order; taking a prefix of one removes
        # scattered nodes from the other.
        if r <= n_free:
            n_free = _take(free, n_free, r, buf[used : used + r], taken)
            n_idle = _without(rest, n_idle, taken)
        else:
            n_idle = _take(rest, n_idle, r, buf[used : used + r], taken)
            n_free = _without(free, n_free, taken)
        positions[count] = j
        used += r
        count += 1
        p = j + 1
    # Close up: positions, then ptr, then the nodes.
    at = n_head + count
    packed[at] = 0
    for k in range(count):
        packed[at + k + 1] = packed[at + k] + later_res[positions[k]]
    at += count + 1
    # (Forwards, element by element: the target starts before the source.)
    for q in range(used):
        packed[at + q] = buf[q]
    return n_head, count, head_start, packed[: at + used]


@kernel
def project_jit(now, cluster, rm, started, head, rest):
    """The FCFS/EASY projection of one pass (:func:`project`), all of it.

    ``cluster`` is ``(state, since, on_mean)``; ``rm`` the pass's
    :class:`ReleaseMap` arrays ``(release, base_j, gap_w, no_gap, idle_w,
    tie_key)`` before any job was placed; ``started`` the jobs starting now
    (as :func:`_occupied` takes them); ``head`` the head's reservation
    ``(nodes, start, walltime, dispatched)``, its nodes in any order, made
    after the first ``dispatched`` jobs of ``started`` (the later ones were
    backfilled after it); ``rest`` the columns ``(res, walltime)`` of the
    later jobs in arrival order.

    Returns ``(index, start, nodes, ptr)``: the placed jobs sorted by start
    (ties in placement order), ``index`` -1 for the head and else the job's
    position in ``rest``.
    """
    state, since, on_mean = cluster
    release, base_j, gap_w, no_gap, idle_w, tie_key = rm
    started_nodes, started_ptr, started_req = started
    head_nodes, head_start, head_req, dispatched = head
    rest_res, rest_req = rest
    n = len(state)
    # Release times after the jobs starting now, and the head's nodes in the
    # order its reservation chose them (by cost, then tie key, with the
    # release times it saw: after the dispatched jobs, before the backfilled
    # ones; the nodes may come as a set).
    rel = _occupied(release, now, started)
    seen = rel
    if dispatched < len(started_req):
        seen = _occupied(
            release,
            now,
            (started_nodes, started_ptr[: dispatched + 1], started_req[:dispatched]),
        )
    head_cost = base_j[head_nodes] + gap_w[head_nodes] * (head_start - seen[head_nodes])
    head_nodes = head_nodes[_order(head_cost, tie_key[head_nodes])]
    # Timelines at the start of the pass: at most one busy block per node.
    width = 4
    fa = np.full((n, width + 1), INF)
    fb = np.full((n, width + 1), -INF)
    seg_s = np.full((n, width), INF)
    seg_f = np.full((n, width), INF)
    nseg = np.zeros(n, dtype=np.int64)
    used = np.ones(n, dtype=np.int64)
    irregular = np.zeros(n, dtype=np.bool_)
    block_start = np.full(n, INF)
    block_end = np.full(n, INF)
    for node in range(n):
        s = state[node]
        if s == SLEEPING:
            seg_s[node, 0] = now
            seg_f[node, 0] = release[node]
            nseg[node] = 1
        elif s == SWITCHING_ON or s == COMPUTING:
            first = since[node]
            if s == SWITCHING_ON and not first <= now:
                first = now
            seg_s[node, 0] = first
            seg_f[node, 0] = release[node]
            nseg[node] = 1
        elif s == SWITCHING_OFF:  # the end of the off, then the wake
            first = since[node] if since[node] <= now else now
            off_end = release[node] - on_mean[node]
            seg_s[node, 0] = first
            seg_f[node, 0] = off_end
            seg_s[node, 1] = off_end
            seg_f[node, 1] = release[node]
            nseg[node] = 2
            block_start[node] = first if first <= off_end else off_end
            block_end[node] = off_end if off_end >= release[node] else release[node]
            continue
        else:
            continue
        block_start[node] = seg_s[node, 0]
        block_end[node] = seg_f[node, 0]
    for k in range(len(started_req)):
        finish = now + started_req[k]
        for node in started_nodes[started_ptr[k] : started_ptr[k + 1]]:
            seg_s[node, 0] = now
            seg_f[node, 0] = finish
            nseg[node] = 1
            block_start[node] = now
            block_end[node] = finish
    for node in range(n):
        fa[node, 0] = -INF
        fb[node, 0] = block_start[node]
        if block_end[node] < INF:
            fa[node, 1] = block_end[node]
            fb[node, 1] = INF
            used[node] = 2

    n_rest = len(rest_res)
    out_index = np.empty(n_rest + 1, dtype=np.int64)
    out_start = np.empty(n_rest + 1)
    # Nodes of placed job k in buf[ptr[k]:ptr[k + 1]], in placement order.
    buf = np.empty(len(head_nodes) + rest_res.sum(), dtype=np.int64)
    ptr = np.zeros(n_rest + 2, dtype=np.int64)

    head_end = head_start + head_req
    if not _window_free(fa, fb, used, head_nodes, head_start, head_end):
        return out_index[:0], out_start[:0], buf[:0], ptr[:1]
    _add(fa, fb, used, seg_s, seg_f, nseg, irregular, head_nodes, head_start, head_end)
    out_index[0] = -1
    out_start[0] = head_start
    buf[: len(head_nodes)] = head_nodes
    ptr[1] = len(head_nodes)
    count = 1

    # Room for the gap search: one slot per free interval (grown with the timelines).
    scratch = (np.empty((3, fa.size)), np.empty(fa.size, dtype=np.int64))

    # FCFS-forward plan seeded with the head's reservation.
    for node in head_nodes:
        rel[node] = head_end
    barrier = head_start
    work = (np.empty(n), np.empty(n), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64))
    by_key = np.empty(0, dtype=np.int64)  # (made for the first job of more than FEW_NODES)
    for i in range(n_rest):
        res = rest_res[i]
        wall = rest_req[i]
        if res > FEW_NODES and not len(by_key):
            by_key = key_order(tie_key)
        nodes, start = _select_in(rel, base_j, gap_w, tie_key, by_key, res, barrier, True, work)
        if len(nodes) == 0:
            break
        barrier = start
        for node in nodes:
            rel[node] = barrier + wall
        fa, fb, seg_s, seg_f = _room(fa, fb, seg_s, seg_f, nseg)
        if fa.size > len(scratch[1]):
            scratch = (np.empty((3, fa.size)), np.empty(fa.size, dtype=np.int64))
        # Place it on the timelines (as :func:`_place`): in the earliest
        # gap that lets it start strictly earlier than its FCFS start, else on
        # its FCFS nodes and start if still free, else in the earliest gap after.
        got = nodes[:0]
        t = start
        if now + EPS < start:
            early, t_early = _earliest(
                fa, fb, used, res, wall, now, start, base_j, no_gap, idle_w, tie_key, now, scratch
            )
            if len(early) and t_early + EPS < start:
                got = early
                t = t_early
        if len(got) == 0:
            if _window_free(fa, fb, used, nodes, start, start + wall):
                got = nodes
                t = start
            else:
                got, t = _earliest(
                    fa,
                    fb,
                    used,
                    res,
                    wall,
                    start,
                    np.nan,
                    base_j,
                    no_gap,
                    idle_w,
                    tie_key,
                    now,
                    scratch,
                )
        if len(got) == 0:
            break
        _add(fa, fb, used, seg_s, seg_f, nseg, irregular, got, t, t + wall)
        out_index[count] = i
        out_start[count] = t
        buf[ptr[count] : ptr[count] + len(got)] = got
        ptr[count + 1] = ptr[count] + len(got)
        count += 1

    starts = out_start[:count].copy()
    order = _argsort2(starts, starts)
    out_nodes = np.empty(ptr[count], dtype=np.int64)
    out_ptr = np.zeros(count + 1, dtype=np.int64)
    pos = 0
    for j in range(count):
        k = order[j]
        size = ptr[k + 1] - ptr[k]
        out_nodes[pos : pos + size] = buf[ptr[k] : ptr[k + 1]]
        pos += size
        out_ptr[j + 1] = pos
    return out_index[:count][order], starts[order], out_nodes, out_ptr


@kernel
def first_appearances(nodes, ptr, wanted):
    """First appearance of each ``wanted`` node in a plan held as ``nodes``/``ptr``.

    Entry ``k`` of the plan uses ``nodes[ptr[k]:ptr[k + 1]]``. Returns
    ``(found, entry, read)``: the wanted nodes that appear, in order of first
    appearance, the entry of each, and how many entries were read (all, or up
    to the one where the last wanted node appeared).
    """
    size = 0
    for node in nodes:
        size = max(size, node + 1)
    missing = np.zeros(size, dtype=np.bool_)
    remaining = 0
    for node in wanted:
        if node < size and not missing[node]:
            missing[node] = True
            remaining += 1
    found = np.empty(remaining, dtype=np.int64)
    entry = np.empty(remaining, dtype=np.int64)
    count = 0
    n_entries = len(ptr) - 1
    if remaining < len(wanted):
        remaining = -1  # some wanted node is not in the plan at all: read it all
    for k in range(n_entries):
        before = count
        count = _mark_first(nodes, ptr[k], ptr[k + 1], k, missing, found, entry, count)
        remaining -= count - before
        if remaining == 0:
            return found[:count], entry[:count], k + 1
    return found[:count], entry[:count], n_entries


@kernel
def _mark_first(nodes, lo, hi, k, missing, found, entry, count):
    """Record the still ``missing`` nodes of ``nodes[lo:hi]`` (plan entry ``k``) as found.

    Each is unmarked and appended to ``found`` (and ``k`` to ``entry``) from
    position ``count``, in the entry's node order; returns the new count.
    """
    for q in range(lo, hi):
        node = nodes[q]
        if missing[node]:
            missing[node] = False
            found[count] = node
            entry[count] = k
            count += 1
    return count


@kernel
def plan_later(now, nodes, timeout_s, order, started, head_res, head_req, rest, overrun_inf):
    """Reserve for the head and project the rest, when no later job can start now.

    One call for ``reserve_head`` and :func:`project_jit`: the release map
    (as :func:`release_map` with ``order`` the pass's idle order), the
    head's reservation on it after the jobs starting now, then the
    projection. Returns :func:`project_jit`'s arrays, or empty ones when the
    head cannot be placed.
    """
    state, since, _, on_mean, _, _, _, idle_w = nodes
    release, base_j, no_gap, gap_w, tie_key = release_map(now, nodes, overrun_inf, timeout_s, order)
    rel = _occupied(release, now, started)
    head, head_start = select_jit(rel, base_j, gap_w, tie_key, head_res, now)
    if len(head) == 0:
        return (
            np.empty(0, dtype=np.int64),
            np.empty(0),
            np.empty(0, dtype=np.int64),
            np.zeros(1, dtype=np.int64),
        )
    return project_jit(
        now,
        (state, since, on_mean),
        (release, base_j, gap_w, no_gap, idle_w, tie_key),
        started,
        (head, head_start, head_req, len(started[2])),
        rest,
    )
