"""The policy interface: what a controller sees and what it may decide.

A policy is an object with a ``decide(view) -> Decision`` method. It reads a
:class:`SystemView` (read-only: never mutate its sets or arrays) and returns
which queued jobs start on which nodes, which nodes switch on or off now, and
when it wants to be called again. The engine applies the decision through the
cluster's mechanics and refuses anything illegal with a :class:`PolicyError`.

Most policies are a queue policy (which jobs start, and a plan for the rest)
combined with a power manager (which nodes sleep or wake); see
:class:`Combined`. A controller that decides both at once (SNF-ICON)
implements :class:`Policy` directly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hpcpower.engine.cluster import Cluster
from hpcpower.engine.queue import JobQueue, Running
from hpcpower.workload.job import Job


@dataclass
class SystemView:
    """What a policy sees at one controller pass.

    Attributes:
        now: Simulated time in seconds.
        cluster: Node states and the sets ``idle``, ``sleeping``,
            ``switching_on``, ``switching_off`` (read-only).
        queue: Waiting jobs, in arrival order and in SNF order.
        running: Running jobs by id, with start time and nodes.
        triggers: Why this pass runs: any of ``"start"`` (the first pass),
            ``"arrival"``, ``"completion"``, ``"transition"`` (a switch-on or
            switch-off ended), ``"wakeup"`` (a time the policy asked for) and
            ``"commands"`` (the repeat pass after a pass that issued commands).
        arrived: Jobs that arrived since the previous pass.
        completed: Jobs that finished since the previous pass.
        first: True on the first pass of the simulation.
    """

    now: float
    cluster: Cluster
    queue: JobQueue
    running: dict[int, Running]
    triggers: set[str] = field(default_factory=set)
    arrived: list[Job] = field(default_factory=list)
    completed: list[Running] = field(default_factory=list)
    first: bool = False


@dataclass
class Planned:
    """A queued job's place in a policy's plan.

    Attributes:
        job: The queued job.
        start_s: Planned start time (``now`` for jobs starting in this pass).
        nodes: The nodes it is planned on.
    """

    job: Job
    start_s: float
    nodes: Sequence[int]


@dataclass
class Decision:
    """A policy's answer at one pass; the engine applies it in this order.

    Attributes:
        start: Jobs to start now, each with exactly ``job.res`` idle nodes.
        switch_off: Idle nodes to power down now.
        switch_on: Sleeping nodes to wake now.
        call_at: Future times at which the policy wants another pass.
        plan: The part of the policy's plan for queued jobs that was made in
            this pass (informative; planning stops once the power manager has
            what it needs).
        note: Diagnostics for the decision log (a flat dict of scalars).
    """

    start: list[tuple[Job, Sequence[int]]] = field(default_factory=list)
    switch_off: list[int] = field(default_factory=list)
    switch_on: list[int] = field(default_factory=list)
    call_at: list[float] = field(default_factory=list)
    plan: Sequence[Planned] = field(default_factory=list)
    note: dict[str, Any] | None = None

    def __repr__(self) -> str:
        starts = ", ".join(f"job {j.id} on {len(n)} nodes" for j, n in self.start) or "none"
        return (
            f"<Decision start: {starts}; switch on {len(self.switch_on)}, "
            f"off {len(self.switch_off)}; call at {sorted(self.call_at)[:3]}>"
        )


class Policy(ABC):
    """A controller: called at every scheduler event with a view of the system."""

    name: str = "policy"

    def reset(self, cluster: Cluster) -> None:  # noqa: B027 - optional hook
        """Prepare for a new simulation on ``cluster`` (called once, before time 0)."""

    @abstractmethod
    def decide(self, view: SystemView) -> Decision:
        """Return what to do now."""

    def config(self) -> dict[str, Any]:
        """The policy's settings, copied into every result."""
        return {"name": self.name}


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

    def first_appearances(self, nodes: set[int]) -> dict[int, float]:
        """The first planned start of each of ``nodes`` that the plan uses.

        Keys are in order of first appearance (plan order, then each entry's
        node order). The plan is read only until every one of ``nodes``
        appeared (or to its end).
        """
        found: dict[int, float] = {}
        if not nodes or (self._source is None and not self._made):
            return found
        for planned in self.iter_plan():
            start = planned.start_s
            for node in np.asarray(planned.nodes).tolist():
                if node in nodes and node not in found:
                    found[node] = start
            if len(found) == len(nodes):
                break
        return found

    def __repr__(self) -> str:
        return f"<Schedule start {len(self.start)} jobs, {len(self._made)} planned so far>"


class QueuePolicy(ABC):
    """Chooses which queued jobs start now and plans the others."""

    name: str = "queue"

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
    timeout_s: float | None = None

    def reset(self, cluster: Cluster) -> None:  # noqa: B027 - optional hook
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

    def reset(self, cluster: Cluster) -> None:
        """Reset the power manager."""
        self.power.reset(cluster)

    def decide(self, view: SystemView) -> Decision:
        """Plan the queue, start what starts now, then manage power around the plan."""
        power = self.power
        schedule = self.queue_policy.schedule(view, power.timeout_s)
        starts = schedule.start
        decision = Decision([(p.job, p.nodes) for p in starts] if starts else [])
        power.manage(view, schedule, decision)
        # Only what the power manager read was planned: the rest is not needed.
        decision.plan = schedule.made
        return decision

    def config(self) -> dict[str, Any]:
        """Name plus both parts' settings."""
        return {"name": self.name, **self.queue_policy.config(), **self.power.config()}
