"""Smallest-Need-First: order by requested nodes, then walltime, then arrival.

Dispatch starts jobs in SNF order on idle nodes while they fit and stops at the
first job that does not fit (every later job requests at least as many
nodes). The rest of the queue is then planned forward in SNF order on every
node's release time, with a non-decreasing planning barrier, so the power
manager knows which sleeping nodes to wake and when (paper §III-B; the
authors' ``snf_psas``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np

from hpcpower.engine.contract import Planned, SystemView
from hpcpower.planning import easy, forward
from hpcpower.planning.common import timeout_arg
from hpcpower.planning.release import LIST_NODES, ReleaseMap, idle_order
from hpcpower.policies.base import (
    ArraySchedule,
    QueuePolicy,
    Schedule,
    check_overrun_release,
    node_array,
)
from hpcpower.workload.job import Job


class SNF(QueuePolicy):
    """Smallest-Need-First dispatch with a forward plan of the queue."""

    name = "snf"
    order = "snf"

    def __init__(self, overrun_release: str = "never") -> None:
        self.overrun_release = check_overrun_release(overrun_release)

    def config(self) -> dict[str, Any]:
        """The queue policy's name and its overrun rule (as ``FCFSEasy``'s)."""
        return {"queue": self.name, "overrun_release": self.overrun_release}

    #: Numpy planning per job on 64 nodes under IPM: 0.12 ms measured on the
    #: paper's DAS2-fs1 case (0.2-0.3 ms on a loaded machine), rounded up.
    #: Kept since the plan there is made in lists (about a quarter less):
    #: long 64-node runs still gain from the twins (full DAS2-fs1 under
    #: SNF-ICON: 19-25 s of run() with numba against 30 s without).
    planning_cost_s = 2e-4

    def schedule(self, view: SystemView, timeout_s: float | None) -> Schedule:
        """Start fitting jobs in SNF order, then plan the rest forward."""
        out = Schedule()
        if not len(view.queue):
            return out
        now = view.now
        jobs = view.queue.snf()
        idle = None
        if jobs[0].res <= len(view.cluster.idle):
            # (Else nothing starts now, and the idle order is made only if
            # the plan is read, within the pass.)
            idle = idle_order(view.cluster, now, timeout_s, view.compiled)
            used = 0
            for job in jobs:
                if job.res > len(idle) - used:
                    break
                out.start.append(Planned(job, now, idle[used : used + job.res]))
                used += job.res
        rest = jobs[len(out.start) :]
        if rest and (view.compiled or view.cluster.n_nodes <= LIST_NODES):
            return _ForwardSchedule(self, view, timeout_s, out.start, rest, idle)
        return Schedule(out.start, _plan(self, view, timeout_s, out.start, rest, idle))


def _plan(policy, view: SystemView, timeout_s: float | None, started: list[Planned], jobs, idle):
    """The forward plan, made only when a power manager reads it (within the pass)."""
    if not jobs:
        return
    # (``idle`` None: the release map makes the idle order itself where it reads it.)
    releases = ReleaseMap(
        view.cluster,
        view.now,
        timeout_s,
        policy.overrun_release,
        idle_nodes=idle,
        compiled=view.compiled,
    )
    for planned in started:
        releases.occupy(planned.nodes, view.now + planned.job.reqtime_s)
    yield from plan_forward(releases, jobs, view.now)


def plan_forward(
    releases: ReleaseMap,
    jobs: Iterable[Job],
    barrier: float,
    duration_s: Callable[[Job, np.ndarray], float] | None = None,
) -> Iterator[Planned]:
    """Plan ``jobs`` in the given order: each at its earliest start not before the barrier.

    Each job holds its nodes for its walltime, or for ``duration_s(job,
    nodes)`` when given (SNF-ICON plans with predicted durations). The
    barrier moves to each planned start, so planned starts never go back in
    time; jobs on different nodes may share a start. Planning stops at the
    first job that cannot be placed (not enough nodes with a finite release).
    """
    for job in jobs:
        pick = releases.select(job.res, barrier)
        if pick is None:
            break
        nodes, start = pick
        held = job.reqtime_s if duration_s is None else duration_s(job, nodes)
        releases.occupy(nodes, start + held)
        yield Planned(job, start, nodes)
        barrier = start


class _ForwardSchedule(ArraySchedule):
    """:func:`_plan` made by :func:`~hpcpower.planning.forward.forward_plan` in one call.

    The compiled twin, or without it, on a small machine, its form in
    Python lists (:func:`~hpcpower.planning.forward.forward_plan_lists`).

    :meth:`first_appearances` plans only until every wanted node appeared
    (as the lazy numpy form reads it); the whole plan is made when it is
    read in full. Entries are the same either way.
    """

    def __init__(self, policy: SNF, view: SystemView, timeout_s, started, rest, idle) -> None:
        super().__init__(started)
        self._rest = rest
        self._k = len(started)
        # The planner's arguments are made when it first runs: a pass
        # without sleeping or expired nodes never asks for the plan. (The
        # view is the engine's, changed at every pass: what it shows now is kept.)
        self._given = (
            policy,
            view.now,
            view.cluster,
            timeout_s,
            None if idle is None else np.asarray(idle, dtype=np.int64),
        )
        self._compiled = view.compiled
        self._args: tuple | None = None
        self._columns = view.queue.snf_columns
        # The plan up to the last first appearance asked for: (starts, flat, ptr).
        self._partial: tuple | None = None

    def _arguments(self, idle: np.ndarray) -> tuple:
        """The planner's arguments before the jobs, with ``idle`` as the idle order."""
        policy, now, cluster, timeout_s, _ = self._given
        never = policy.overrun_release == "never"
        started = [(p.nodes, p.job.reqtime_s) for p in self.start]
        if self._compiled:  # (the twin takes arrays only)
            columns = easy.started_columns(started)
            return (now, cluster.node_arrays, never, timeout_arg(timeout_s), idle, columns)
        return (now, cluster, never, timeout_s, idle, started)

    def _run(self, wanted: np.ndarray, whole: bool) -> tuple:
        if self._args is None:
            _, now, cluster, timeout_s, idle = self._given
            if idle is None:
                idle = np.asarray(idle_order(cluster, now, timeout_s, self._compiled), np.int64)
            self._args = self._arguments(idle)
        args: tuple[Any, ...] = (*self._args, self._jobs(), wanted, whole)
        if self._compiled:
            return forward.forward_plan(*args)
        return forward.forward_plan_lists(*args)

    def _load(self) -> tuple:
        if self._arrays is None:
            starts, flat, ptr, _, _ = self._run(_NO_WANTED, True)
            self._arrays = (self._rest.__getitem__, starts, flat, ptr)
        return self._arrays

    def _entry(self, k: int) -> Planned:
        made = self._made
        if self._arrays is None and self._partial is not None:
            starts, flat, ptr = self._partial
            while len(made) <= k < len(starts):
                j = len(made)
                made.append(Planned(self._rest[j], float(starts[j]), flat[ptr[j] : ptr[j + 1]]))
            if k < len(made):  # (read already: no need to plan the rest)
                return made[k]
        return super()._entry(k)

    def first_appearance_arrays(
        self, nodes: AbstractSet[int] | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`Schedule.first_appearance_arrays`, planning only as far as needed."""
        if self._arrays is not None or not len(nodes):
            return super().first_appearance_arrays(nodes)
        starts, flat, ptr, found, entry = self._run(node_array(nodes), False)
        self._keep_partial(starts, flat, ptr)
        return found, starts[entry]

    def sleeping_wakes(self, cluster, now: float) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`Schedule.sleeping_wakes`: the plan and its wakes in one compiled call.

        (:func:`~hpcpower.planning.forward.forward_wakes`, which also makes
        the idle order if this pass has none yet: the same plan and wakes.)
        """
        if not self._compiled or self._arrays is not None:
            return super().sleeping_wakes(cluster, now)
        args = self._args
        given = self._given[4]
        make_idle = args is None and given is None
        if args is None:
            args = self._arguments(_NO_IDLE if given is None else given)
        starts, flat, ptr, due, later, idle = forward.forward_wakes(
            *args, self._jobs(), cluster.switch_on_mean_s, make_idle
        )
        if self._args is None:  # (kept with the idle order used, for a later read)
            self._args = (*args[:4], idle, args[5])
        self._keep_partial(starts, flat, ptr)
        return due, later

    def _jobs(self) -> tuple[np.ndarray, np.ndarray]:
        """``(res, walltimes)`` of the jobs to plan: the queue's SNF columns after the starts."""
        res, req = self._columns()
        k = self._k
        return res[k:], req[k:]

    def _keep_partial(self, starts: np.ndarray, flat: np.ndarray, ptr: np.ndarray) -> None:
        """Keep a plan made up to the last first appearance asked for (see :meth:`_entry`)."""
        self._partial = (starts, flat, ptr)
        self._read = max(self._read, len(starts))


_NO_WANTED = np.empty(0, dtype=np.int64)
#: The idle order :func:`~hpcpower.planning.forward.forward_wakes` makes itself
#: (writeable: the same array type as the order it returns).
_NO_IDLE = np.empty(0, dtype=np.int64)
