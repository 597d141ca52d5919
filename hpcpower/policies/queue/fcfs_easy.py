"""FCFS with EASY backfilling, planned at node level (the paper's FCFS/B).

At each pass (the authors' ``easy_psas``):

1. **FCFS dispatch**: start jobs in arrival order on idle nodes while they
   fit; stop at the first that does not.
2. **Head reservation**: the first waiting job gets the earliest start on
   specific nodes (sleeping ones included, charged their wake), chosen by
   :meth:`ReleaseMap.select`. If it cannot be placed (too few nodes with a
   known release, as when jobs run past their walltime), the pass stops here:
   no backfilling and no plan.
3. **Backfill now**: every later job, in arrival order, starts now if it fits
   on idle nodes outside the head's reservation, or on idle nodes including
   reserved ones if it ends (by walltime) before the head's start.
4. **Future plan**: the head, then the rest planned FCFS-forward with a
   non-decreasing barrier, then each planned job is moved earlier into a gap
   of the per-node timelines when one fits before its FCFS start (EASY
   backfilling of the plan). The power manager wakes sleeping nodes from this
   plan.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import numpy as np

from hpcpower.policies import kernels
from hpcpower.policies.base import Planned, QueuePolicy, Schedule, SystemView
from hpcpower.policies.planning import (
    EPS,
    ArraySchedule,
    ReleaseMap,
    Timelines,
    idle_order,
    node_arrays,
)


class FCFSEasy(QueuePolicy):
    """First-come-first-served with EASY backfilling."""

    name = "fcfs-easy"

    def schedule(self, view: SystemView, timeout_s: float | None) -> Schedule:
        """Dispatch, reserve for the head, backfill, and plan the rest."""
        queue = view.queue
        if not len(queue):
            return Schedule()
        now = view.now
        n_idle = len(view.cluster.idle)
        if queue.min_res() > n_idle:
            # Nothing starts now: the head's reservation and the plan matter
            # only to a power manager that reads them (made then, with the
            # idle order).
            if kernels.ENABLED:
                return ArraySchedule(
                    [],
                    lambda: _plan_later_arrays(
                        view, timeout_s, [], 0, idle_order(view.cluster, now, timeout_s)
                    ),
                )
            return Schedule([], _plan_later(view, timeout_s, [], 0, None))
        if kernels.ENABLED:
            return _schedule_compiled(view, timeout_s)
        out = Schedule()
        idle = order = idle_order(view.cluster, now, timeout_s)
        used = 0
        first = None
        for job in view.queue:
            if job.res > len(idle) - used:
                first = job
                break
            out.start.append(Planned(job, now, idle[used : used + job.res]))
            used += job.res
        idle = idle[used:]
        if first is None:
            return out
        k = len(out.start)
        if view.queue.min_res() > len(idle):
            # Nothing else can start now: the head's reservation and the plan
            # matter only to a power manager that reads them.
            return Schedule(out.start, _plan_later(view, timeout_s, out.start, k, order))
        ids, res, req = view.queue.fcfs_columns()
        first_later = len(out.start) + 1
        ids, res, req = ids[first_later:], res[first_later:], req[first_later:]
        base = ReleaseMap(view, timeout_s, idle_nodes=order)
        picked = _backfill(view, base, out.start, first, idle, res, req)
        head_nodes, head_start, positions, gangs = picked
        # The head is the first waiting job. If it cannot be placed (too few
        # nodes with a known release, e.g. many jobs past their walltime), there
        # is no reservation, so no backfilling and no plan in this pass.
        if head_nodes is None:
            return out
        head = Planned(first, head_start, head_nodes)
        for j, gang in zip(positions, gangs, strict=True):
            out.start.append(Planned(view.queue.job(int(ids[j])), now, gang))
        columns = (ids, res, req)
        return Schedule(out.start, _plan_rest(view, base, out.start, head, columns, positions))


def _schedule_compiled(view, timeout_s: float | None) -> Schedule:
    """:meth:`FCFSEasy.schedule` after its first test, by :func:`kernels.easy_pass` (same choices).

    The kernel tests "nothing else can start" on the jobs after the head
    (the numpy path on the whole queue, a weaker test); when the two differ,
    the numpy path backfills nothing and plans exactly what
    :func:`_plan_later` plans, so the schedules are the same.
    """
    now = view.now
    queue = view.queue
    job_of = queue.job
    k, m, outcome, h, c, head_start, packed = kernels.easy_pass(
        now, node_arrays(view.cluster), kernels.timeout_arg(timeout_s), queue.slots()
    )
    order = packed[:m]
    start = []
    at = 0
    for job_id in packed[m : m + k].tolist():
        job = job_of(job_id)
        start.append(Planned(job, now, order[at : at + job.res]))
        at += job.res
    if outcome == kernels.ALL_START:
        return Schedule(start)
    if outcome == kernels.PLAN_LATER:
        return ArraySchedule(start, lambda: _plan_later_arrays(view, timeout_s, start, k, order))
    # The head is the first waiting job. If it cannot be placed (too few
    # nodes with a known release, e.g. many jobs past their walltime), there
    # is no reservation, so no backfilling and no plan in this pass.
    if not h:
        return Schedule(start)
    at = m + k
    head = Planned(job_of(int(packed[at])), head_start, packed[at + 1 + c : at + 1 + c + h])
    backfilled = packed[at + 1 : at + 1 + c].tolist()
    at += 1 + c + h
    positions = packed[at : at + c].tolist()
    bounds = packed[at + c : at + 2 * c + 1].tolist()
    nodes = packed[at + 2 * c + 1 :]
    for q, job_id in enumerate(backfilled):
        start.append(Planned(job_of(job_id), now, nodes[bounds[q] : bounds[q + 1]]))

    def plan():
        ids, res, req = queue.fcfs_columns()
        columns = (ids[k + 1 :], res[k + 1 :], req[k + 1 :])
        base = ReleaseMap(view, timeout_s, idle_nodes=order)
        return _project_arrays(view, start, (base, head, _unpicked(columns, positions)), k)

    return ArraySchedule(start, plan)


def _backfill(view, base, started, first, idle, res, req):
    """Reserve nodes for the head ``first`` and pick the later jobs that start now.

    ``idle`` holds the idle nodes left after dispatch, in idle order; ``res``
    and ``req`` the columns of the jobs after the head. Returns ``(head
    nodes, head start, positions, nodes)``: head nodes ``None`` when the head
    cannot be placed, else the backfilled jobs' positions in the columns and
    their nodes.
    """
    now = view.now
    releases = base.copy()
    for planned in started:
        releases.occupy(planned.nodes, now + planned.job.reqtime_s)
    pick = releases.select(first.res, now)
    if pick is None:
        return None, None, [], []
    head_nodes, head_start = pick

    n_nodes = view.cluster.n_nodes
    reserved = np.zeros(n_nodes, dtype=bool)
    reserved[head_nodes] = True
    taken = np.zeros(n_nodes, dtype=bool)
    positions: list[int] = []
    gangs: list[np.ndarray] = []
    # Scan the later jobs in arrival order with array operations: a job
    # starts now if it fits on idle nodes outside the head's reservation,
    # or on idle nodes including reserved ones (necessarily, as there are
    # too few others) when it ends by walltime before the head's start.
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
    return head_nodes, head_start, positions, gangs


def _started_columns(started) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes (flat, with offsets) and walltimes of the jobs starting now."""
    if not started:
        return _NONE_STARTED
    started_nodes = np.concatenate([np.asarray(p.nodes, dtype=np.int64) for p in started])
    started_ptr = np.zeros(len(started) + 1, dtype=np.int64)
    np.cumsum([len(p.nodes) for p in started], out=started_ptr[1:])
    started_req = np.array([p.job.reqtime_s for p in started], dtype=float)
    return started_nodes, started_ptr, started_req


def _unpicked(columns, positions):
    """The columns without the backfilled positions."""
    keep = np.ones(len(columns[0]), dtype=bool)
    keep[positions] = False
    return tuple(c[keep] for c in columns)


def _plan_rest(view, base, started, head, columns, backfilled):
    """Project the jobs after the head that were not backfilled, when first read."""
    yield from _project(view, base, started, head, _unpicked(columns, backfilled))


def _later(view, timeout_s, started, k, order):
    """``(base, head, rest)`` when no later job can start now, or ``None``.

    The head is the ``k``-th waiting job; ``order`` the pass's :func:`idle_order`.
    """
    base = ReleaseMap(view, timeout_s, idle_nodes=order)  # (order None: made here)
    releases = base.copy()
    for planned in started:
        releases.occupy(planned.nodes, view.now + planned.job.reqtime_s)
    ids, res, req = view.queue.fcfs_columns()
    first = view.queue.job(int(ids[k]))
    pick = releases.select(first.res, view.now)
    if pick is None:
        return None
    head = Planned(first, pick[1], pick[0])
    return base, head, (ids[k + 1 :], res[k + 1 :], req[k + 1 :])


def _plan_later(view, timeout_s, started, k, order):
    """Reserve for the head and project the queue, when first read (see :func:`_later`)."""
    got = _later(view, timeout_s, started, k, order)
    if got is not None:
        yield from _project(view, got[0], started, got[1], got[2])


def _project(view, base: ReleaseMap, started, head, rest) -> Iterator[Planned]:
    """The head, the FCFS-forward plan, then each job moved into an earlier gap.

    ``base`` is the release map of the pass before any job was placed;
    ``rest`` the columns ``(ids, res, reqtime_s)`` of the jobs after the head,
    in arrival order.

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
    """
    now = view.now
    queue = view.queue
    head_end = head.start_s + head.job.reqtime_s
    lines = Timelines(base, view, started)
    if not lines.window_free(head.nodes, head.start_s, head_end):
        return
    lines.add(head.nodes, head.start_s, head_end)

    # FCFS-forward plan seeded with the head's reservation, made one job ahead
    # of the gap placement.
    releases = base.copy()
    for planned in started:
        releases.occupy(planned.nodes, now + planned.job.reqtime_s)
    releases.occupy(head.nodes, head_end)
    ids, res, req = rest
    n_rest = len(ids)
    res_of = res.tolist()
    barrier = head.start_s

    pending: list[tuple[float, int, Planned]] = [(head.start_s, -1, head)]
    i = 0  # next job to place
    ahead: Planned | None = None  # its FCFS-forward entry
    done = n_rest == 0  # no further job will be placed
    fewest = shortest = None  # suffix minima of res and reqtime_s, made when needed
    gap_bound = -np.inf  # earliest gap start for the remaining jobs (a stale value is a bound)
    placed_since_bound = 0
    batch = 1
    while True:
        if not done and ahead is None:
            pick = releases.select(res_of[i], barrier)
            if pick is None:
                done = True
            else:
                job = queue.job(int(ids[i]))
                nodes, barrier = pick
                releases.occupy(nodes, barrier + job.reqtime_s)
                ahead = Planned(job, barrier, nodes)
        if pending:
            top = pending[0][0]
            if done or top <= min(ahead.start_s, gap_bound):
                yield heapq.heappop(pending)[2]
                continue
            if ahead.start_s >= top and placed_since_bound >= batch:
                # Only the gap bound holds the next entry back: refresh it.
                # (Refreshes that do not help are spaced out, doubling.)
                if fewest is None:
                    fewest = np.minimum.accumulate(res[::-1])[::-1].tolist()
                    shortest = np.minimum.accumulate(req[::-1])[::-1].tolist()
                gap_bound = lines.earliest_start(fewest[i], shortest[i], now)
                placed_since_bound = 0
                if top <= gap_bound:
                    batch = 1
                    continue
                batch *= 2
        elif done:
            return
        entry = ahead
        ahead = None
        placed = _place(lines, entry, now)
        if placed is None:
            done = True
            continue
        heapq.heappush(pending, (placed.start_s, i, placed))
        i += 1
        placed_since_bound += 1
        done = i == n_rest


def _project_arrays(view, started, planned, dispatched):
    """:func:`_project` by the compiled kernel, as arrays for an :class:`ArraySchedule`.

    ``started`` are the jobs starting now, of which the first ``dispatched``
    started before the head's reservation (the others were backfilled after
    it); ``planned`` is ``(base, head, rest)`` as :func:`_project` takes
    them, or ``None`` for no plan.
    """
    if planned is None:
        return None
    base, head, rest = planned
    cluster = view.cluster
    ids, res, req = rest
    index, start, nodes, ptr = kernels.project(
        view.now,
        (cluster.state, cluster.since, cluster.switch_on_mean_s),
        (base.release, base.base_j, base.gap_w, base.no_gap, base.idle_w, base.tie_key),
        _started_columns(started),
        (
            np.asarray(head.nodes, dtype=np.int64),
            float(head.start_s),
            float(head.job.reqtime_s),
            dispatched,
        ),
        (np.asarray(res, dtype=np.int64), np.asarray(req, dtype=float)),
    )
    return _jobs_of(view, head.job, ids, index), start, nodes, ptr


def _plan_later_arrays(view, timeout_s, started, k, order):
    """:func:`_plan_later` by one compiled call, as arrays for an :class:`ArraySchedule`."""
    ids, res, req = view.queue.fcfs_columns()
    head = view.queue.job(int(ids[k]))
    index, start, nodes, ptr = kernels.plan_later(
        view.now,
        node_arrays(view.cluster),
        kernels.timeout_arg(timeout_s),
        np.asarray(order, dtype=np.int64),
        _started_columns(started),
        head.res,
        float(head.reqtime_s),
        (np.asarray(res[k + 1 :], dtype=np.int64), np.asarray(req[k + 1 :], dtype=float)),
    )
    if not len(index):
        return None
    return _jobs_of(view, head, ids[k + 1 :], index), start, nodes, ptr


def _jobs_of(view, head, ids, index):
    """``job_at(k)``: the job of plan entry ``k`` (``index`` -1: the head, else ``ids[index]``)."""
    job_of = view.queue.job

    def job_at(k: int):
        i = index[k]
        return head if i < 0 else job_of(int(ids[i]))

    return job_at


#: :func:`_started_columns` of no job: no nodes, offsets ``[0]``, no walltimes.
_NONE_STARTED = (np.empty(0, dtype=np.int64), np.zeros(1, dtype=np.int64), np.empty(0))


def _place(lines: Timelines, entry: Planned, now: float) -> Planned | None:
    """Place one job of the FCFS-forward plan on the timelines (``None``: no room at all).

    It moves into the earliest gap that lets it start strictly earlier than
    its FCFS start; otherwise it keeps its FCFS nodes and start if they are
    still free; otherwise it slides to the earliest gap after its FCFS start.
    """
    job = entry.job
    wall = job.reqtime_s
    if now + EPS < entry.start_s:
        early = lines.earliest(job.res, wall, now, entry.start_s)
        if early is not None and early[1] + EPS < entry.start_s:
            lines.add(early[0], early[1], early[1] + wall)
            return Planned(job, early[1], early[0])
    if lines.window_free(entry.nodes, entry.start_s, entry.start_s + wall):
        lines.add(entry.nodes, entry.start_s, entry.start_s + wall)
        return entry
    slide = lines.earliest(job.res, wall, entry.start_s)
    if slide is None:
        return None
    lines.add(slide[0], slide[1], slide[1] + wall)
    return Planned(job, slide[1], slide[0])
