"""FCFS with EASY backfilling, planned at node level (the paper's FCFS/B).

The algorithm (dispatch, head reservation, backfilling, projection) lives
in :mod:`hpcpower.planning.easy`, in its numpy form and its compiled twin;
this policy feeds it the pass's view and turns its answer into a
:class:`~hpcpower.policies.base.Schedule` whose plan is made only when a
power manager reads it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hpcpower.engine.contract import Planned, SystemView
from hpcpower.planning import easy
from hpcpower.planning.common import timeout_arg
from hpcpower.planning.release import ReleaseMap, idle_order
from hpcpower.policies.base import ArraySchedule, QueuePolicy, Schedule, check_overrun_release


class FCFSEasy(QueuePolicy):
    """First-come-first-served with EASY backfilling.

    Args:
        overrun_release: When the nodes of a job running past its requested
            time may be planned on: ``"never"`` (the authors' simulator: the
            head cannot be reserved on them, and a pass that cannot reserve
            for the head backfills nothing) or ``"now"`` (textbook EASY:
            such a job is predicted to end now). See
            ``docs/background/baselines.md``.
    """

    name = "fcfs-easy"
    #: Numpy planning per job on 64 nodes under IPM: 0.28 ms measured on the
    #: paper's DAS2-fs1 case (0.45-0.95 ms on a loaded machine), rounded up.
    planning_cost_s = 5e-4

    def __init__(self, overrun_release: str = "never") -> None:
        self.overrun_release = check_overrun_release(overrun_release)

    def config(self) -> dict[str, Any]:
        """The queue policy's name and its overrun rule."""
        return {"queue": self.name, "overrun_release": self.overrun_release}

    def schedule(self, view: SystemView, timeout_s: float | None) -> Schedule:
        """Dispatch, reserve for the head, backfill, and plan the rest."""
        queue = view.queue
        if not len(queue):
            return Schedule()
        now = view.now
        cluster = view.cluster
        compiled = view.compiled
        if queue.min_res() > len(cluster.idle):
            # Nothing starts now: the head's reservation and the plan matter
            # only to a power manager that reads them (made then, with the
            # idle order).
            if compiled:
                return ArraySchedule(
                    [],
                    lambda: _plan_later_arrays(
                        self, view, timeout_s, [], 0, idle_order(cluster, now, timeout_s, True)
                    ),
                )
            return Schedule([], _plan_later(self, view, timeout_s, [], 0, None))
        if compiled:
            return _schedule_compiled(self, view, timeout_s)
        out = Schedule()
        idle = order = idle_order(cluster, now, timeout_s)
        used = 0
        first = None
        for job in queue:
            if job.res > len(idle) - used:
                first = job
                break
            out.start.append(Planned(job, now, idle[used : used + job.res]))
            used += job.res
        idle = idle[used:]
        if first is None:
            return out
        k = len(out.start)
        if queue.min_res() > len(idle):
            # Nothing else can start now: the head's reservation and the plan
            # matter only to a power manager that reads them.
            return Schedule(out.start, _plan_later(self, view, timeout_s, out.start, k, order))
        ids, res, req = queue.fcfs_columns()
        ids, res, req = ids[k + 1 :], res[k + 1 :], req[k + 1 :]
        base = ReleaseMap(cluster, now, timeout_s, self.overrun_release, idle_nodes=order)
        started = _started(out.start)
        # The head is the first waiting job. If it cannot be placed (too few
        # nodes with a known release, e.g. many jobs past their walltime), there
        # is no reservation, so no backfilling and no plan in this pass.
        pick = easy.reserve_head(base, now, started, first.res)
        if pick is None:
            return out
        head_nodes, head_start = pick
        positions, gangs = easy.backfill(
            now, head_start, head_nodes, idle, res, req, cluster.n_nodes
        )
        for j, gang in zip(positions, gangs, strict=True):
            out.start.append(Planned(queue.job(int(ids[j])), now, gang))
        head = (head_nodes, head_start, first.reqtime_s)
        plan = _project_rest(view, base, out.start, first, head, (ids, res, req), positions)
        return Schedule(out.start, plan)


def _started(planned: list[Planned]) -> list[tuple]:
    """The jobs starting now as the planning functions take them: ``(nodes, walltime_s)``."""
    return [(p.nodes, p.job.reqtime_s) for p in planned]


def _project_rest(view: SystemView, base, started, first, head, columns, backfilled):
    """The projection of the jobs after the head that were not backfilled, made when first read."""
    ids, res, req = easy.unpicked(columns, backfilled)
    plan = easy.project(view.now, view.cluster, base, _started(started), head, (res, req))
    yield from _entries(view, first, ids, plan)


def _entries(view: SystemView, head, ids, plan):
    """:class:`Planned` entries from the projection's ``(index, start, nodes)``."""
    job_of = view.queue.job
    for index, start, nodes in plan:
        yield Planned(head if index < 0 else job_of(int(ids[index])), start, nodes)


def _plan_later(policy: FCFSEasy, view: SystemView, timeout_s, started, k, order):
    """Reserve for the ``k``-th waiting job (the head) and project the queue, when first read.

    ``order`` is the pass's idle order (``None``: made here).
    """
    now = view.now
    base = ReleaseMap(view.cluster, now, timeout_s, policy.overrun_release, idle_nodes=order)
    started = _started(started)
    ids, res, req = view.queue.fcfs_columns()
    first = view.queue.job(int(ids[k]))
    pick = easy.reserve_head(base, now, started, first.res)
    if pick is None:
        return
    head = (pick[0], pick[1], first.reqtime_s)
    plan = easy.project(now, view.cluster, base, started, head, (res[k + 1 :], req[k + 1 :]))
    yield from _entries(view, first, ids[k + 1 :], plan)


def _schedule_compiled(policy: FCFSEasy, view: SystemView, timeout_s: float | None) -> Schedule:
    """:meth:`FCFSEasy.schedule` after its first test, by :func:`easy.easy_pass` (same choices).

    The twin tests "nothing else can start" on the jobs after the head (the
    numpy form on the whole queue, a weaker test); when the two differ, the
    numpy form backfills nothing and plans exactly what :func:`_plan_later`
    plans, so the schedules are the same.
    """
    now = view.now
    queue = view.queue
    job_of = queue.job
    never = policy.overrun_release == "never"
    k, m, outcome, h, c, head_start, packed = easy.easy_pass(
        now, view.cluster.node_arrays, timeout_arg(timeout_s), queue.slots(), never
    )
    order = packed[:m]
    start = []
    at = 0
    for job_id in packed[m : m + k].tolist():
        job = job_of(job_id)
        start.append(Planned(job, now, order[at : at + job.res]))
        at += job.res
    if outcome == easy.ALL_START:
        return Schedule(start)
    if outcome == easy.PLAN_LATER:
        return ArraySchedule(
            start, lambda: _plan_later_arrays(policy, view, timeout_s, start, k, order)
        )
    # The head is the first waiting job. If it cannot be placed (too few
    # nodes with a known release, e.g. many jobs past their walltime), there
    # is no reservation, so no backfilling and no plan in this pass.
    if not h:
        return Schedule(start)
    at = m + k
    head = job_of(int(packed[at]))
    head_nodes = packed[at + 1 + c : at + 1 + c + h]
    backfilled = packed[at + 1 : at + 1 + c].tolist()
    at += 1 + c + h
    positions = packed[at : at + c].tolist()
    bounds = packed[at + c : at + 2 * c + 1].tolist()
    nodes = packed[at + 2 * c + 1 :]
    for q, job_id in enumerate(backfilled):
        start.append(Planned(job_of(job_id), now, nodes[bounds[q] : bounds[q + 1]]))

    def plan():
        ids, res, req = queue.fcfs_columns()
        rest_ids, rest_res, rest_req = easy.unpicked(
            (ids[k + 1 :], res[k + 1 :], req[k + 1 :]), positions
        )
        base = ReleaseMap(
            view.cluster, now, timeout_s, policy.overrun_release, idle_nodes=order, compiled=True
        )
        index, starts, flat, ptr = easy.project_jit(
            now,
            (view.cluster.state, view.cluster.since, view.cluster.switch_on_mean_s),
            (base.release, base.base_j, base.gap_w, base.no_gap, base.idle_w, base.tie_key),
            easy.started_columns(_started(start)),
            (np.asarray(head_nodes, dtype=np.int64), float(head_start), float(head.reqtime_s), k),
            (np.asarray(rest_res, dtype=np.int64), np.asarray(rest_req, dtype=float)),
        )
        return _jobs_of(view, head, rest_ids, index), starts, flat, ptr

    return ArraySchedule(start, plan)


def _plan_later_arrays(policy: FCFSEasy, view: SystemView, timeout_s, started, k, order):
    """:func:`_plan_later` by one compiled call, as arrays for an :class:`ArraySchedule`."""
    ids, res, req = view.queue.fcfs_columns()
    head = view.queue.job(int(ids[k]))
    index, start, nodes, ptr = easy.plan_later(
        view.now,
        view.cluster.node_arrays,
        timeout_arg(timeout_s),
        np.asarray(order, dtype=np.int64),
        easy.started_columns(_started(started)),
        head.res,
        float(head.reqtime_s),
        (np.asarray(res[k + 1 :], dtype=np.int64), np.asarray(req[k + 1 :], dtype=float)),
        policy.overrun_release == "never",
    )
    if not len(index):
        return None
    return _jobs_of(view, head, ids[k + 1 :], index), start, nodes, ptr


def _jobs_of(view: SystemView, head, ids, index):
    """``job_at(k)``: the job of plan entry ``k`` (``index`` -1: the head, else ``ids[index]``)."""
    job_of = view.queue.job

    def job_at(k: int):
        i = index[k]
        return head if i < 0 else job_of(int(ids[i]))

    return job_at
