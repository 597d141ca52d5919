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

import numpy as np

from hpcpower.policies.base import Planned, QueuePolicy, Schedule, SystemView
from hpcpower.policies.planning import EPS, ReleaseMap, Timelines, idle_order


class FCFSEasy(QueuePolicy):
    """First-come-first-served with EASY backfilling."""

    name = "fcfs-easy"

    def schedule(self, view: SystemView, timeout_s: float | None) -> Schedule:
        """Dispatch, reserve for the head, backfill, and plan the rest."""
        out = Schedule()
        if not len(view.queue):
            return out
        now = view.now
        idle = idle_order(view.cluster, now, timeout_s)
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
            return Schedule(out.start, _plan_later(view, timeout_s, out.start, k))
        base = ReleaseMap(view, timeout_s)
        releases = base.copy()
        for planned in out.start:
            releases.occupy(planned.nodes, now + planned.job.reqtime_s)

        # The head is the first waiting job. If it cannot be placed (too few
        # nodes with a known release, e.g. many jobs past their walltime), there
        # is no reservation, so no backfilling and no plan in this pass.
        pick = releases.select(first.res, now)
        if pick is None:
            return out
        head = Planned(first, pick[1], pick[0])

        reserved = np.zeros(view.cluster.n_nodes, dtype=bool)
        reserved[head.nodes] = True
        backfilled: set[int] = set()
        # Scan the later jobs in arrival order with array operations: a job
        # starts now if it fits on idle nodes outside the head's reservation,
        # or on idle nodes including reserved ones (necessarily, as there are
        # too few others) when it ends by walltime before the head's start.
        ids, res, req = view.queue.fcfs_columns()
        first_later = len(out.start) + 1
        ids, res = ids[first_later:], res[first_later:]
        ends_in_time = now + req[first_later:] <= head.start_s + EPS
        p = 0
        while p < len(ids) and len(idle):
            free = idle[~reserved[idle]]
            fits = (res[p:] <= len(free)) | ((res[p:] <= len(idle)) & ends_in_time[p:])
            j = int(np.argmax(fits))
            if not fits[j]:
                break
            j += p
            r = int(res[j])
            nodes = free[:r] if r <= len(free) else idle[:r]
            idle = np.setdiff1d(idle, nodes, assume_unique=True)
            job = view.queue.job(int(ids[j]))
            out.start.append(Planned(job, now, nodes))
            backfilled.add(job.id)
            p = j + 1

        return Schedule(out.start, _lazy(view, base, out.start, head, k, backfilled))


def _plan_later(view, timeout_s, started, k):
    """Reserve for the head (the ``k``-th waiting job) and project the queue, when first read."""
    base = ReleaseMap(view, timeout_s)
    releases = base.copy()
    for planned in started:
        releases.occupy(planned.nodes, view.now + planned.job.reqtime_s)
    waiting = view.queue.fcfs()[k:]
    pick = releases.select(waiting[0].res, view.now)
    if pick is None:
        return
    head = Planned(waiting[0], pick[1], pick[0])
    yield from _project(view, base, started, head, waiting[1:])


def _lazy(view, base, started, head, k, backfilled):
    """Project the queue after the head, when first read."""
    rest = [j for j in view.queue.fcfs()[k + 1 :] if j.id not in backfilled]
    yield from _project(view, base, started, head, rest)


def _project(view, base: ReleaseMap, started, head, rest) -> list[Planned]:
    """The head, the FCFS-forward plan, then each job moved into an earlier gap.

    ``base`` is the release map of the pass before any job was placed.
    """
    now = view.now
    # FCFS-forward plan seeded with the head's reservation.
    releases = base.copy()
    for planned in started:
        releases.occupy(np.asarray(planned.nodes), now + planned.job.reqtime_s)
    fcfs = [head]
    releases.occupy(np.asarray(head.nodes), head.start_s + head.job.reqtime_s)
    barrier = head.start_s
    for job in rest:
        pick = releases.select(job.res, barrier)
        if pick is None:
            break
        nodes, start = pick
        releases.occupy(nodes, start + job.reqtime_s)
        fcfs.append(Planned(job, start, nodes))
        barrier = start

    # Move planned jobs earlier into gaps of the per-node timelines.
    lines = Timelines(base, view, started)
    if not lines.window_free(head.nodes, head.start_s, head.start_s + head.job.reqtime_s):
        return []
    lines.add(np.asarray(head.nodes), head.start_s, head.start_s + head.job.reqtime_s)
    plan = [head]
    for entry in fcfs[1:]:
        job = entry.job
        wall = job.reqtime_s
        if now + EPS < entry.start_s:
            early = lines.earliest(job.res, wall, now, entry.start_s)
            if early is not None and early[1] + EPS < entry.start_s:
                lines.add(early[0], early[1], early[1] + wall)
                plan.append(Planned(job, early[1], early[0]))
                continue
        if lines.window_free(entry.nodes, entry.start_s, entry.start_s + wall):
            lines.add(np.asarray(entry.nodes), entry.start_s, entry.start_s + wall)
            plan.append(entry)
            continue
        slide = lines.earliest(job.res, wall, entry.start_s)
        if slide is None:
            break
        lines.add(slide[0], slide[1], slide[1] + wall)
        plan.append(Planned(job, slide[1], slide[0]))
    plan.sort(key=lambda p: p.start_s)
    return plan
