"""Building blocks of policies: a queue policy and a power manager make one controller.

The contract itself (:class:`SystemView`, :class:`Decision`, :class:`Policy`)
is the engine's, in :mod:`hpcpower.engine.contract`, re-exported here for
policy authors. Most policies are a queue policy (which jobs start, and a plan for the rest)
combined with a power manager (which nodes sleep or wake); see
:class:`Combined`. A controller that decides both at once (SNF-ICON)
implements :class:`Policy` directly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcpower.engine.contract import Decision, Planned, Policy, SystemView
from hpcpower.errors import InputError
from hpcpower.planning import easy as _easy
from hpcpower.planning import wakes as _wakes
from hpcpower.planning.common import NO_NODES, NO_TIMES, SLEEPING

if TYPE_CHECKING:
    from hpcpower.engine.cluster import ClusterView

__all__ = [
    "ArraySchedule",
    "Combined",
    "Decision",
    "Planned",
    "Policy",
    "PowerManager",
    "QueuePolicy",
    "Schedule",
    "SystemView",
]


class Schedule:
    """A queue policy's answer: jobs that start now and the plan for the rest.

    The plan is produced lazily, entry by entry, because a power manager often
    needs only its beginning (the first appearance of each sleeping node) and
    planning a long queue at every pass is the simulator's hot path. Read it
    within the pass that made it.

    Attributes:
        start: Jobs starting now, each on ``job.res`` idle nodes.
    """

    def __init__(
        self,
        start: list[Planned] | None = None,
        plan: Iterable[Planned] | None = None,
    ) -> None:
        self.start: list[Planned] = start if start is not None else []
        self._made: list[Planned] = []
        self._source: Iterator[Planned] | None = iter(plan) if plan is not None else None

    def iter_plan(self) -> Iterator[Planned]:
        """Planned jobs in planning order (starts never decrease), made as they are read."""
        made = self._made
        i = 0
        while True:
            if i < len(made):
                yield made[i]
                i += 1
                continue
            if self._source is None:
                return
            try:
                made.append(next(self._source))
            except StopIteration:
                self._source = None
                return

    @property
    def plan(self) -> list[Planned]:
        """The whole plan (made now if it was not yet)."""
        for _ in self.iter_plan():
            pass
        return self._made

    @property
    def made(self) -> Sequence[Planned]:
        """The part of the plan made so far."""
        return self._made

    def first_appearances(self, nodes: AbstractSet[int] | np.ndarray) -> dict[int, float]:
        """The first planned start of each of ``nodes`` that the plan uses.

        Keys are in order of first appearance (plan order, then each entry's
        node order). The plan is read only until every one of ``nodes``
        appeared (or to its end). ``nodes`` is a set, or an array of
        distinct node ids (cheaper for a compiled plan: see ``view.compiled``).
        """
        found: dict[int, float] = {}
        if not len(nodes) or (self._source is None and not self._made):
            return found
        if isinstance(nodes, np.ndarray):
            nodes = set(nodes.tolist())
        for planned in self.iter_plan():
            start = planned.start_s
            for node in np.asarray(planned.nodes).tolist():
                if node in nodes and node not in found:
                    found[node] = start
            if len(found) == len(nodes):
                break
        return found

    def first_appearance_arrays(
        self, nodes: AbstractSet[int] | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`first_appearances` as two arrays: the nodes, and the start of each.

        Cheaper for a compiled plan on a large machine, where many nodes appear.
        """
        found = self.first_appearances(nodes)
        return (
            np.fromiter(found.keys(), dtype=np.int64, count=len(found)),
            np.fromiter(found.values(), dtype=float, count=len(found)),
        )

    def sleeping_wakes(self, cluster: ClusterView, now: float) -> tuple[np.ndarray, np.ndarray]:
        """IPM's wake rule over the plan's sleeping nodes, for a compiled pass.

        ``(due, later)``: the sleeping nodes to wake now, in plan order, and
        the later wake times, as :func:`~hpcpower.planning.wakes.split_wakes_jit`
        gives them from :meth:`first_appearance_arrays` of the sleeping nodes
        (wake at the first planned start minus the mean switch-on time). A
        plan made by one compiled call makes both in it (SNF's).
        """
        return _wakes.split_wakes_jit(
            *self.first_appearance_arrays(sleeping_ids(cluster)),
            cluster.state,
            cluster.switch_on_mean_s,
            now,
        )

    def __repr__(self) -> str:
        return f"<Schedule start {len(self.start)} jobs, {len(self._made)} planned so far>"


class ArraySchedule(Schedule):
    """A schedule whose plan a compiled planner makes at once, into arrays.

    ``compute()`` returns ``(job_at, starts, nodes, ptr)``: entry ``k`` of the
    plan is job ``job_at(k)`` starting at ``starts[k]`` on
    ``nodes[ptr[k]:ptr[k + 1]]`` (or ``None`` for no plan). It runs when the
    plan is first read, and entries become :class:`Planned` objects only as
    they are read, so a power manager that asks only
    :meth:`first_appearances` pays for no Python object per queued job.
    """

    def __init__(
        self, start: list[Planned], compute: Callable[[], tuple | None] | None = None
    ) -> None:
        # (A subclass that makes its arrays in its own _load passes no compute.)
        super().__init__(start)
        self._compute: Callable[[], tuple | None] | None = compute
        self._arrays: tuple | None = None
        self._read = 0

    def _load(self) -> tuple:
        if self._arrays is None:
            # Set until the arrays are, then dropped so that the planner's closure can go.
            compute = self._compute
            assert compute is not None
            got = compute()
            self._compute = None
            if got is None:
                got = (None, np.empty(0), NO_NODES, np.zeros(1, dtype=np.int64))
            self._arrays = got
        return self._arrays

    def _entry(self, k: int) -> Planned:
        made = self._made
        job_at, starts, nodes, ptr = self._load()
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

    def first_appearances(self, nodes: AbstractSet[int] | np.ndarray) -> dict[int, float]:
        """As :meth:`Schedule.first_appearances`, from the arrays (one compiled scan)."""
        found, starts = self.first_appearance_arrays(nodes)
        return dict(zip(found.tolist(), starts.tolist(), strict=True))

    def first_appearance_arrays(
        self, nodes: AbstractSet[int] | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`Schedule.first_appearance_arrays`, with no dict in between."""
        if not len(nodes):
            return NO_NODES, NO_TIMES
        _, starts, flat, ptr = self._load()
        wanted = node_array(nodes)
        found, entry, read = _easy.first_appearances(flat, ptr, wanted)
        self._read = max(self._read, read)
        return found, starts[entry]


def sleeping_ids(cluster: ClusterView) -> np.ndarray:
    """The sleeping nodes' ids as an int64 array, in no particular order.

    Read from the cluster's set when few, else off the state array (cheaper
    on a large machine).
    """
    sleeping = cluster.sleeping
    if len(sleeping) < 128:
        return np.fromiter(sleeping, dtype=np.int64, count=len(sleeping))
    return np.flatnonzero(cluster.state == SLEEPING)


def node_array(nodes: AbstractSet[int] | np.ndarray) -> np.ndarray:
    """Node ids as an int64 array (a set read into one, an array taken as it is)."""
    if isinstance(nodes, np.ndarray):
        return nodes.astype(np.int64, copy=False)
    return np.fromiter(nodes, dtype=np.int64, count=len(nodes))


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


#: When the nodes of a job past its requested time may be planned on.
OVERRUN_RELEASES = ("never", "now")


def check_overrun_release(value: str) -> str:
    """``value`` if it is one of :data:`OVERRUN_RELEASES`, else an error naming the setting."""
    if value not in OVERRUN_RELEASES:
        raise InputError(f"policy.overrun_release must be 'never' or 'now', got {value!r}")
    return value


class QueuePolicy(ABC):
    """Chooses which queued jobs start now and plans the others."""

    name: str = "queue"
    #: See :attr:`Policy.planning_cost_s <hpcpower.engine.contract.Policy.planning_cost_s>`.
    planning_cost_s: float = 0.0
    #: The queue order the policy serves: ``"fcfs"`` (arrival) or ``"snf"``
    #: (smallest need first); explanations name a job's place in it.
    order: str = "fcfs"

    def reasons(self, view: SystemView, schedule: Schedule) -> list[dict[str, Any]]:
        """Why each job started now, and the head's reservation (for explanations).

        A started job that comes after a waiting one in :attr:`order` was
        backfilled; the first waiting job in that order is the head, and its
        planned start, if the plan has one, is its reservation.
        """
        ordered = view.queue.fcfs() if self.order == "fcfs" else view.queue.snf()
        rank = {job.id: k for k, job in enumerate(ordered)}
        started = {planned.job.id for planned in schedule.start}
        head = next((job for job in ordered if job.id not in started), None)
        reserved = None
        if head is not None:
            reserved = next((p for p in schedule.plan if p.job.id == head.id), None)
        out: list[dict[str, Any]] = []
        for planned in schedule.start:
            job = planned.job
            nodes = [int(n) for n in planned.nodes]
            if head is not None and rank[job.id] > rank[head.id]:
                when = f"t={reserved.start_s:.10g} s" if reserved is not None else "later"
                because = (
                    f"backfilled: fits on idle nodes now while job {head.name} "
                    f"(first in {self.order} order) waits for {when}"
                )
                action = "backfill"
            else:
                free = "1 idle node is" if job.res == 1 else f"{job.res} idle nodes are"
                because = f"next in {self.order} order, and {free} free"
                action = "start"
            out.append({"action": action, "job": job.name, "nodes": nodes, "because": because})
        if reserved is not None and head is not None:
            out.append(
                {
                    "action": "reserve",
                    "job": head.name,
                    "start_s": float(reserved.start_s),
                    "nodes": [int(n) for n in reserved.nodes],
                    "because": (
                        f"first in {self.order} order: needs {head.res} nodes, planned to "
                        f"start at t={reserved.start_s:.10g} s"
                    ),
                }
            )
        return out

    @abstractmethod
    def schedule(self, view: SystemView, timeout_s: float | None) -> Schedule:
        """Start what can start now and plan the rest of the queue.

        Args:
            view: The system at this pass.
            timeout_s: The power manager's idle timeout, so that node choice
                can rank idle nodes by remaining timeout.
        """

    def config(self) -> dict[str, Any]:
        """The policy's settings."""
        return {"queue": self.name}


class PowerManager(ABC):
    """Chooses which nodes sleep and wake, given the queue policy's plan."""

    name: str = "power"
    #: Whether it reads the queue plan at every pass (most of a queue
    #: policy's planning cost is making that plan; see ``planning_cost_s``).
    reads_plan: bool = True
    timeout_s: float | None = None

    def reset(self, cluster: ClusterView) -> None:  # noqa: B027 - optional hook
        """Prepare for a new simulation."""

    @abstractmethod
    def manage(self, view: SystemView, schedule: Schedule, decision: Decision) -> None:
        """Fill ``decision.switch_on``, ``switch_off`` and ``call_at`` around the schedule."""

    def config(self) -> dict[str, Any]:
        """The manager's settings."""
        return {"power": self.name, "timeout_s": self.timeout_s}


class Combined(Policy):
    """A queue policy and a power manager working as one controller."""

    def __init__(self, queue: QueuePolicy, power: PowerManager, name: str | None = None) -> None:
        self.queue_policy = queue
        self.power = power
        self.name = name or f"{queue.name}+{power.name}"
        # A plan nobody reads is not made: planning is then mostly dispatch.
        self.planning_cost_s = queue.planning_cost_s * (1.0 if power.reads_plan else 0.05)

    def reset(self, cluster: ClusterView) -> None:
        """Reset the power manager."""
        self.power.reset(cluster)

    def decide(self, view: SystemView) -> Decision:
        """Plan the queue, start what starts now, then manage power around the plan."""
        power = self.power
        schedule = self.queue_policy.schedule(view, power.timeout_s)
        starts = schedule.start
        decision = Decision([(p.job, p.nodes) for p in starts] if starts else [])
        power.manage(view, schedule, decision)
        if view.explain:
            # The whole plan, made now and frozen, and the reasons of both parts.
            decision.why = self.queue_policy.reasons(view, schedule) + (decision.why or [])
            decision.plan = list(schedule.plan)
        else:
            # Only what the power manager read was planned: the rest is not needed.
            decision.plan = schedule.made
        return decision

    def config(self) -> dict[str, Any]:
        """Name plus both parts' settings."""
        return {"name": self.name, **self.queue_policy.config(), **self.power.config()}
