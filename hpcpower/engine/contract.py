"""The contract between the engine and a policy: what a controller sees and may decide.

A policy is an object with a ``decide(view) -> Decision`` method (a
subclass of :class:`Policy` gets the optional hooks too). At every
controller pass the engine hands it a :class:`SystemView`, whose arrays,
sets, mappings and queue are read-only (writing to them raises), and
applies the :class:`Decision` it returns through the cluster's mechanics,
refusing anything illegal with a :class:`~hpcpower.errors.PolicyError`.

The engine owns this module; policies import it, never the reverse.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from hpcpower.engine.cluster import ClusterView
    from hpcpower.engine.queue import QueueView, Running
    from hpcpower.workload.job import Job


@dataclass(slots=True)
class SystemView:
    """What a policy sees at one controller pass (read-only).

    The engine keeps one view and sets every field of it at each pass, so a
    policy that rebinds a field changes only what it sees itself until the
    pass ends; ``dataclasses.replace`` gives a policy a changed copy of its
    own (as SNF-ICON does for its idle timers). The cluster, the queue and
    the running jobs behind the fields cannot be changed through them.

    Attributes:
        now: Simulated time in seconds.
        cluster: Node states, the per-state node sets and the power model
            (:class:`~hpcpower.engine.cluster.ClusterView`).
        queue: Waiting jobs, in arrival order and in SNF order
            (:class:`~hpcpower.engine.queue.QueueView`).
        running: Running jobs by id, with start time and nodes.
        triggers: Why this pass runs: any of ``"start"`` (the first pass),
            ``"arrival"``, ``"completion"``, ``"transition"`` (a switch-on or
            switch-off ended), ``"wakeup"`` (a time the policy asked for) and
            ``"commands"`` (the repeat pass after a pass that issued commands).
        arrived: Jobs that arrived since the previous pass.
        completed: Jobs that finished since the previous pass.
        first: True on the first pass of the simulation.
        compiled: Whether planners should use the compiled twins of
            :mod:`hpcpower.planning` (the simulation's ``kernels`` setting).
        explain: Whether the simulation records explanations
            (``Simulation(explain=True)``): a policy then says why it acted
            in :attr:`Decision.why` and gives its whole plan in
            :attr:`Decision.plan`. Off by default, so that a long run pays
            nothing for it.
        notes: What the decision log keeps of a pass's :attr:`Decision.note`
            (the simulation's ``decisions`` setting): every note
            (``"full"``), the note of a pass that starts a job or switches a
            node (``"changes"``), or none (``"off"``). A policy may leave
            out a note the log will not keep (``Decision.note`` is then
            ``None``), so that a run pays only for the notes it keeps.
    """

    now: float
    cluster: ClusterView
    queue: QueueView
    running: Mapping[int, Running]
    triggers: frozenset[str] = frozenset()
    arrived: Sequence[Job] = ()
    completed: Sequence[Running] = ()
    first: bool = False
    compiled: bool = False
    explain: bool = False
    notes: str = "full"


@dataclass
class Planned:
    """A queued job's place in a policy's plan.

    Attributes:
        job: The queued job.
        start_s: Planned start time (``now`` for jobs starting in this pass).
        nodes: The nodes it is planned on (an integer array, or any sequence of ids).
    """

    job: Job
    start_s: float
    nodes: np.ndarray | Sequence[int]


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
        why: Why the policy acted, when the view asks for explanations: one
            record per action, a dict with ``action`` (``"start"``,
            ``"backfill"``, ``"reserve"``, ``"switch_off"``, ``"switch_on"``,
            ``"keep"``, ``"mode"``, ...), the ``node`` or ``job`` it concerns,
            and ``because``, a sentence; other keys are the numbers behind it.
        time_s: When the decision was taken (set by the engine).
    """

    start: list[tuple[Job, np.ndarray | Sequence[int]]] = field(default_factory=list)
    switch_off: list[int] = field(default_factory=list)
    switch_on: list[int] = field(default_factory=list)
    call_at: list[float] = field(default_factory=list)
    plan: Sequence[Planned] = field(default_factory=list)
    note: dict[str, Any] | None = None
    why: list[dict[str, Any]] | None = None
    time_s: float = math.nan

    def __repr__(self) -> str:
        starts = ", ".join(f"job {j.name} on {short_ids(n)}" for j, n in self.start) or "none"
        when = "" if math.isnan(self.time_s) else f"t={self.time_s:.10g} s: "
        calls = [float(t) for t in sorted(self.call_at)[:3]]
        return (
            f"<Decision {when}start {starts}; switch on {short_ids(self.switch_on)}, "
            f"off {short_ids(self.switch_off)}; call at {calls}>"
        )

    def _repr_html_(self) -> str:
        from hpcpower._html import decision_html

        return decision_html(self)


def short_ids(nodes: np.ndarray | Sequence[int]) -> str:
    """Node ids as a short list: ``[3, 4, 5]``, or ``[3, 4, 5, ... (12 nodes)]``."""
    ids = [int(n) for n in nodes]
    if len(ids) <= 8:
        return str(ids)
    return "[" + ", ".join(map(str, ids[:6])) + f", ... ({len(ids)} nodes)]"


class Policy(ABC):
    """A controller: called at every scheduler event with a view of the system."""

    name: str = "policy"
    #: Rough numpy-path time of a run per job on 64 nodes, in seconds, where
    #: the compiled twins of :mod:`hpcpower.planning` help (0 for a policy
    #: they do not help). ``Simulation(kernels="auto")`` estimates a run's
    #: numpy time from it, to decide whether loading (and, the first time,
    #: compiling) the twins pays.
    planning_cost_s: float = 0.0

    def reset(self, cluster: ClusterView) -> None:  # noqa: B027 - optional hook
        """Prepare for a new simulation on ``cluster`` (called once, before time 0)."""

    @abstractmethod
    def decide(self, view: SystemView) -> Decision:
        """Return what to do now."""

    def config(self) -> dict[str, Any]:
        """The policy's settings, copied into every result."""
        return {"name": self.name}

    def summarise(self, notes: Sequence[dict[str, Any]], span_s: float) -> dict[str, Any]:
        """Summary entries of this policy (none by default).

        Args:
            notes: The kept decision log: every note, only the passes that
                did something, or none, as the simulation's ``decisions``
                setting says. A summary that must be the same whatever is
                kept comes from the policy's own tally instead.
            span_s: The simulated span of the run.
        """
        return {}
