"""The simulation: a SimPy environment, the cluster, arriving jobs, the controller.

Processes:

* one **node** process per node (timed switch-on / switch-off);
* **arrivals**: one event, rescheduled from submit time to submit time,
  whose callback submits the jobs due (what a process waiting on a timeout
  per submit time does, without resuming a generator);
* one **job** process per started job, holding its gang of nodes for its
  duration and releasing it at the end;
* the **controller**: every scheduler event (arrival, completion, end of a
  transition, a wake-up the policy asked for) requests a controller pass at the
  current instant. The pass is scheduled at a priority below every mechanical
  event, so it runs once, after all events of that instant, and sees their
  combined effect. Mechanical events of one instant commute (each only adds a
  job to the queue or moves a node to a resting state), so their order cannot
  change a result. The controller's decision is applied as: job starts, then
  switch-offs, then switch-ons (the authors' order); see
  ``docs/background/event-order.md``.

The run ends at the instant the last job finishes (or is rejected); energy is
integrated up to that instant. The engine then hands a plain
:class:`~hpcpower.engine.record.RunRecord` to whoever reports on the run
(:class:`hpcpower.simulation.Simulation` makes it a
:class:`~hpcpower.results.records.Results`).
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple, overload

import numpy as np
import simpy
from simpy.core import EmptySchedule
from simpy.events import EventPriority

from hpcpower._version import __version__
from hpcpower.engine import _simpy
from hpcpower.engine.cluster import Cluster
from hpcpower.engine.contract import Decision, Policy, SystemView
from hpcpower.engine.decisionlog import LEVELS, DecisionLog
from hpcpower.engine.queue import JobQueue, QueueView, Running
from hpcpower.engine.record import RunRecord
from hpcpower.engine.storage import CountRows, Gangs
from hpcpower.errors import InputError, PolicyError
from hpcpower.platform import Platform
from hpcpower.states import SWITCHING_OFF, SWITCHING_ON, NodeState
from hpcpower.workload.job import Job, Workload

#: SimPy orders same-time events by priority (URGENT 0, NORMAL 1). The
#: controller pass uses a lower priority so it follows every event of its instant.
CONTROLLER_PRIORITY = EventPriority(2)
#: ``kernels="auto"`` uses the compiled twins when the numpy path is
#: expected to take at least this long (seconds): below it, loading them
#: (and compiling, the first time) would cost more than it saves.
AUTO_KERNELS_S = 3.0
#: Consecutive passes in which only the policy could act (nothing running,
#: no job left to arrive, no transition) and it did nothing, before a run
#: stops as stuck (a policy may wait on purpose, so the bound is generous).
IDLE_PASS_LIMIT = 100_000
#: Passes less than this far apart (seconds) count as one instant for the
#: stuck-run bound, so a policy that asks to be called back a float's
#: resolution later (``math.nextafter(now, inf)``, ``now + 1e-12``) is
#: stopped like one that asks for ``now``.
INSTANT_S = 1e-6
#: What :meth:`Simulation.on` can subscribe to.
EVENT_KINDS = ("job_start", "job_end", "node_state", "decision")


class Happening(NamedTuple):
    """One event processed by :meth:`Simulation.step`: when, and what kind.

    ``kind`` is ``"arrival"``, ``"job_end"``, ``"transition_end"``,
    ``"wakeup"`` (a time a policy asked for) or ``"controller_pass"``.
    """

    time_s: float
    kind: str


@dataclass(frozen=True, slots=True)
class PassTrace:
    """What one controller pass saw and did (recorded with ``explain=True``).

    Attributes:
        time_s: When the pass ran.
        triggers: Why it ran.
        waiting: Ids of the jobs waiting before it, in arrival order.
        order: The same jobs in the order the policy treated them: those it
            started, then those it planned (plan order), then the rest.
        started: Ids of the jobs it started.
        plan: ``job id -> (planned start, nodes)`` for the jobs it planned.
        switch_on: Nodes it woke.
        switch_off: Nodes it powered down.
        why: The policy's reasons (:attr:`Decision.why`).
        states: Every node's state after the pass (int8 array).
    """

    time_s: float
    triggers: frozenset[str]
    waiting: tuple[int, ...]
    order: tuple[int, ...]
    started: tuple[int, ...]
    plan: dict[int, tuple[float, tuple[int, ...]]]
    switch_on: tuple[int, ...]
    switch_off: tuple[int, ...]
    why: tuple[dict[str, Any], ...]
    states: np.ndarray


def _trace_pass(
    now: float, triggers: frozenset[str], waiting: tuple[int, ...], decision: Decision, cluster
) -> PassTrace:
    started = tuple(job.id for job, _ in decision.start)
    plan = {
        p.job.id: (float(p.start_s), tuple(int(n) for n in p.nodes))
        for p in decision.plan
        if p.job.id not in started
    }
    seen = set(started) | set(plan)
    order = started + tuple(plan) + tuple(j for j in waiting if j not in seen)
    return PassTrace(
        now,
        triggers,
        waiting,
        order,
        started,
        plan,
        tuple(int(n) for n in decision.switch_on),
        tuple(int(n) for n in decision.switch_off),
        tuple(decision.why or ()),
        cluster.state.astype(np.int8),
    )


#: Why a controller pass runs (see :class:`~hpcpower.engine.contract.SystemView`).
TRIGGERS = ("start", "arrival", "completion", "transition", "wakeup", "commands")
_TRIGGER_BIT = {name: 1 << k for k, name in enumerate(TRIGGERS)}
#: Every combination of triggers as the frozenset a pass shows, made once.
_TRIGGER_SETS = tuple(
    frozenset(name for k, name in enumerate(TRIGGERS) if bits >> k & 1)
    for bits in range(1 << len(TRIGGERS))
)
_WAKEUP_ONLY = _TRIGGER_SETS[_TRIGGER_BIT["wakeup"]]


class Simulation:
    """One simulated run of a workload on a platform under a policy.

    Args:
        platform: The cluster description.
        workload: The jobs to run (a :class:`Workload` or a list of jobs).
        policy: The controller.
        seed: Seed of the simulation's generator. Transition durations are
            drawn from ``numpy.random.default_rng(seed)`` (42 reproduces the
            authors' simulator); the workload is fixed before the run, so the
            policy never changes it.
        initial_state: ``"idle"`` (default, as in the paper) or ``"sleeping"``.
        kill_at_walltime: End jobs at their requested time instead of letting
            them overrun (the paper lets them run their actual runtime).
        repeat_pass: After a pass that issued commands, run one more pass at
            the same instant (trigger ``"commands"``), as the authors'
            simulator does; it lets the controller see its own commands applied.
        kernels: ``"auto"`` (default), ``"numba"`` or ``"numpy"``: which
            form of the planning algorithms (:mod:`hpcpower.planning`) runs.
            Both give the same results to the bit; the compiled twins need
            numba (``pip install "hpcpower[fast]"``) and pay off on long
            runs. ``"auto"`` uses them when numba is installed and the
            numpy path is expected to take at least :data:`AUTO_KERNELS_S`,
            or once the process has loaded them (:func:`choose_kernels`).
            The choice is in :meth:`config`.
        decisions: How much of the policy's decision log to keep:
            ``"full"`` (a row per pass, the default), ``"changes"`` (only
            passes that started a job or switched a node) or ``"off"``. The
            summary is the same at every level; the log is stored in columns
            (:class:`~hpcpower.engine.decisionlog.DecisionLog`). Policies
            see the level (:attr:`SystemView.notes`) and may leave out the
            notes it drops, so a lower level also costs less time.
        explain: Record why things happened, in :attr:`passes_trace`, for
            ``explain()``: the policies' reasons (:attr:`Decision.why`), the
            whole plan and the node states at every pass. Results are the same
            either way; it costs time and memory, so it is off by default.
        config: Extra configuration copied into the results.
    """

    def __init__(
        self,
        platform: Platform,
        workload: Workload | list[Job],
        policy: Policy,
        *,
        seed: int = 0,
        initial_state: str = "idle",
        kill_at_walltime: bool = False,
        repeat_pass: bool = True,
        kernels: str = "auto",
        decisions: str = "full",
        explain: bool = False,
        config: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(workload, Workload):
            workload = Workload(list(workload), source="jobs")
        _check_jobs(workload)
        self.platform = platform
        self.workload = workload
        self.policy = policy
        self.seed = seed
        self.kill_at_walltime = kill_at_walltime
        self.initial_state = initial_state
        self.repeat_pass = repeat_pass
        self.explain_enabled = bool(explain)
        if decisions not in LEVELS:
            raise InputError(
                f"decisions must be one of {', '.join(map(repr, LEVELS))}, got {decisions!r}"
            )
        #: How much of the decision log is kept (see the ``decisions`` argument).
        self.decision_level = decisions
        self.extra_config = dict(config or {})
        #: The form of the planning algorithms in use: ``"numba"`` or ``"numpy"``.
        self.kernels = choose_kernels(kernels, policy, len(workload.jobs), platform.n_nodes)
        if self.kernels == "numba":
            self.kernels = _load_twins(required=kernels == "numba")
        compiled = self.kernels == "numba"
        self.env = simpy.Environment()
        # Transition durations draw from default_rng(seed) itself, one normal
        # per node in command order, as the authors' simulator does (its seed
        # is 42). The workload is fixed before the run, so no other stream.
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise InputError(f"seed must be a whole number >= 0, got {seed!r}")
        self.rng_transitions = np.random.default_rng(seed)
        start_state = {"idle": NodeState.IDLE, "sleeping": NodeState.SLEEPING}.get(
            str(initial_state).lower()
        )
        if start_state is None:
            raise InputError(f"initial_state must be 'idle' or 'sleeping', got {initial_state!r}")
        self.cluster = Cluster(
            self.env,
            platform,
            self.rng_transitions,
            initial_state=start_state,
            on_transition_end=lambda node: self._wake("transition"),
            compiled=compiled,
        )
        self.queue = JobQueue()
        self.running: dict[int, Running] = {}
        n = len(workload.jobs)
        self.start_s = np.full(n, np.nan)
        self.finish_s = np.full(n, np.nan)
        #: The nodes of each job (``None`` until it starts), stored compactly once it ends.
        n_nodes = platform.n_nodes
        self.gangs = Gangs(
            n, n_nodes, capacity=sum(job.res for job in workload.jobs if job.res <= n_nodes)
        )
        self.rejected: dict[int, str] = {}
        self.decisions = DecisionLog()
        self.last_decision: Decision | None = None
        #: Why the last controller pass ran (see :class:`SystemView`).
        self.last_triggers: frozenset[str] = frozenset()
        self.passes = 0
        self.finished = False
        self.end_s: float | None = None
        self._done_count = 0
        # Why the next pass runs, as bits of TRIGGERS (see _TRIGGER_SETS).
        self._triggers = _TRIGGER_BIT["start"]
        self._arrived: list[Job] = []
        self._completed: list[Running] = []
        self._pass_pending = False
        # Passes at the current instant, and the bound past which time is stuck
        # (a legitimate instant has a few: one per batch of events, plus repeats).
        self._instant = -math.inf
        self._passes_here = 0
        self._instant_limit = 1000 + 4 * platform.n_nodes
        self._idle_passes = 0
        # Passes without a start while jobs wait, nothing runs and nothing is
        # left to arrive: the waiting jobs' nodes need a few transitions each
        # at most, so far more passes are a policy going round in circles.
        self._fruitless = 0
        self._fruitless_limit = IDLE_PASS_LIMIT + 4 * platform.n_nodes
        self._calls: list[float] = []
        self._call_set: set[float] = set()
        self._first = True
        # (time_s, sleeping, switching_on, idle, computing, switching_off) rows,
        # nearly one per pass: typed columns, a few dozen bytes a row.
        self._state_rows = CountRows(5, largest=len(self.cluster.state))
        self._last_counts: list[int] = []
        self._last_row_s = math.nan
        self._progress: Callable[[int], None] | None = None
        self._compiled = compiled
        self._queue_view = QueueView(self.queue)
        self._running_view = MappingProxyType(self.running)
        #: What the policy sees (read-only, updated at every pass).
        self.view = SystemView(
            0.0,
            self.cluster.view,
            self._queue_view,
            self._running_view,
            compiled=compiled,
            explain=self.explain_enabled,
            notes=decisions,
        )
        #: Subscribers by kind (see :meth:`on`); empty lists cost nothing.
        self._listeners: dict[str, list[Callable[..., Any]]] = {k: [] for k in EVENT_KINDS}
        #: With ``explain``: one :class:`PassTrace` per controller pass.
        self.passes_trace: list[PassTrace] = []
        # One event object carries every controller pass: at most one pass is
        # pending at a time, and the event is never yielded by a process, so
        # it is rescheduled instead of rebuilt (see :meth:`_request_pass`).
        self._pass_event = _simpy.Recurring(self.env, self._pass)
        policy.reset(self.cluster.view)
        # Arrivals start at time 0 before the first pass, as a process would.
        self._next_job = 0
        self._arrival_event = _simpy.Recurring(self.env, self._arrive)
        self._arrival_event.schedule(_simpy.URGENT)
        self._request_pass()
        if n == 0:
            self._finish()

    # ----------------------------------------------------------- processes
    def _arrive(self, _event) -> None:
        """Submit the jobs due now and schedule the next submit time."""
        now = self.env.now
        jobs = self.workload.jobs
        n_nodes = self.cluster.n_nodes
        i = self._next_job
        while i < len(jobs):
            job = jobs[i]
            if job.submit_s > now:
                self._next_job = i
                self._arrival_event.schedule(_simpy.NORMAL, job.submit_s - now)
                return
            i += 1
            if job.res > n_nodes:
                self.rejected[job.id] = f"requests {job.res} nodes, the platform has {n_nodes}"
                self._account_done()
                continue
            self.queue.push(job)
            self._arrived.append(job)
            self._wake("arrival")
        self._next_job = i

    def _job(self, record: Running, duration: float):
        env = self.env
        yield env.timeout(duration)
        now = env.now
        job = record.job
        self.cluster.release(job.id, record.nodes)
        self.gangs.seal(job.id)
        object.__setattr__(record, "finish_s", now)  # (frozen for policies)
        self.finish_s[job.id] = now
        del self.running[job.id]
        self._completed.append(record)
        self._wake("completion")
        for callback in self._listeners["job_end"]:
            callback(now, job, record.nodes)
        self._account_done()

    def _account_done(self) -> None:
        self._done_count += 1
        if self._progress is not None:
            self._progress(self._done_count)
        if self._done_count == len(self.workload.jobs):
            self._finish()

    def _finish(self) -> None:
        self.finished = True
        self.end_s = self.env.now
        self.cluster.close_books()
        self.gangs.settle()
        self._record_states()

    # ---------------------------------------------------------- controller
    def _wake(self, trigger: str) -> None:
        self._triggers |= _TRIGGER_BIT[trigger]
        if not self._pass_pending and not self.finished:
            self._request_pass()

    def _request_pass(self) -> None:
        """Schedule the controller pass at the current instant, after its events.

        This is ``env.schedule(event, priority=CONTROLLER_PRIORITY)`` for the
        reused pass event, without the event's creation.
        """
        if self._pass_pending or self.finished:
            return
        self._pass_pending = True
        self._pass_event.schedule(CONTROLLER_PRIORITY)

    def _timer(self, at: float) -> None:
        if at in self._call_set:
            return
        self._call_set.add(at)
        heapq.heappush(self._calls, at)
        timeout = self.env.timeout(at - self.env.now)
        timeout.callbacks.append(self._timer_fired)

    def _timer_fired(self, _event) -> None:
        now = self.env.now
        while self._calls and self._calls[0] <= now:
            self._call_set.discard(heapq.heappop(self._calls))
        self._wake("wakeup")

    def _pass(self, _event) -> None:
        self._pass_pending = False
        if self.finished:
            return
        now = self.env.now
        if now - self._instant < INSTANT_S:
            self._passes_here += 1
            if self._passes_here > self._instant_limit:
                raise PolicyError(self._stuck_at_one_instant(now))
        else:
            self._instant = now
            self._passes_here = 1
        view = self.view
        # Every field is set again, so nothing a policy rebinds lasts a pass.
        view.now = now
        view.cluster = self.cluster.view
        view.queue = self._queue_view
        view.running = self._running_view
        view.compiled = self._compiled
        view.explain = explain = self.explain_enabled
        view.notes = self.decision_level
        view.triggers = self.last_triggers = triggers = _TRIGGER_SETS[self._triggers]
        self._triggers = 0
        # (Most passes see no arrival or completion: no new list then.)
        if self._arrived:
            view.arrived = tuple(self._arrived)
            self._arrived = []
        else:
            view.arrived = ()
        if self._completed:
            view.completed = tuple(self._completed)
            self._completed = []
        else:
            view.completed = ()
        view.first = self._first
        self._first = False
        if explain:
            waiting = tuple(j.id for j in self.queue.fcfs())
        decision = self.policy.decide(view)
        if not isinstance(decision, Decision):
            raise PolicyError(
                f"{self.policy.name}: decide() returned {type(decision).__name__} at "
                f"t={now:g} s; return a Decision (an empty Decision() to do nothing)"
            )
        decision.time_s = now
        self.passes += 1
        self.last_decision = decision
        if decision.start:
            # Starts are bounded by the jobs: only passes without one count
            # toward the stuck-instant bound.
            self._passes_here = 0
            self._fruitless = 0
        elif not self.running and self._next_job >= len(self.workload.jobs):
            self._fruitless += 1
            if self._fruitless > self._fruitless_limit:
                raise PolicyError(self._stuck_waiting(now, self._fruitless))
        if decision.start or decision.switch_off or decision.switch_on:
            self._idle_passes = 0
            self._apply(decision)
            if self.repeat_pass:
                self._wake("commands")
        elif triggers is _WAKEUP_ONLY and self._nothing_else_can_happen():
            self._idle_passes += 1
            if self._idle_passes > IDLE_PASS_LIMIT:
                raise PolicyError(self._stuck_waiting(now))
        else:
            self._idle_passes = 0
        if decision.call_at:
            self._call_at(decision.call_at)
        note = decision.note
        if note is not None and self.decision_level != "off":
            if self.decision_level == "full" or (
                decision.start or decision.switch_on or decision.switch_off
            ):
                self.decisions.append(note)
        self._record_states()
        if explain:
            self.passes_trace.append(_trace_pass(now, triggers, waiting, decision, self.cluster))
        if self._listeners["decision"]:
            for callback in self._listeners["decision"]:
                callback(now, decision)

    def _stalled(self) -> str:
        """Why the run stopped: nothing left to happen while jobs wait."""
        now = self.env.now
        text = (
            f"{self.policy.name}: the simulation stalled at t={now:g} s "
            f"with {len(self.queue)} jobs waiting and nothing scheduled"
        )
        last = self.last_decision
        ignored = [at for at in last.call_at if not at > now] if last is not None else []
        if ignored:
            # (Only later times are kept: an earlier or NaN one is a policy's bug.)
            text += (
                f"; the last pass asked to be called back at t={ignored[0]!r} s, which is "
                "not after now and was ignored: ask for a later time"
            )
        return text

    def _nothing_else_can_happen(self) -> bool:
        """No job running or left to arrive and no transition under way: only the policy can act."""
        counts = self.cluster.counts
        return (
            not self.running
            and self._next_job >= len(self.workload.jobs)
            and not counts[SWITCHING_ON]
            and not counts[SWITCHING_OFF]
        )

    def _stuck_at_one_instant(self, now: float) -> str:
        """Why the run stopped: passes without simulated time moving on."""
        head = (
            f"{self.policy.name}: {self._passes_here - 1} controller passes at t={now!r} s "
            f"without simulated time moving on (by {INSTANT_S:g} s or more); the policy "
        )
        last = self.last_decision
        if last is not None and (last.switch_off or last.switch_on or last.start):
            return head + (
                f"keeps commanding (last pass: switch off {sorted(last.switch_off)[:8]}, "
                f"switch on {sorted(last.switch_on)[:8]}, start {len(last.start)} jobs). "
                "Transitions that take no time with an idle timeout of 0 s switch nodes off "
                "and on forever: give the transitions a duration or the timeout a positive value"
            )
        if last is not None and last.call_at:
            return head + (
                f"only asks to be called back less than {INSTANT_S:g} s later "
                f"(last: t={max(last.call_at)!r} s): ask for a later time"
            )
        return head + "does nothing"

    def _stuck_waiting(self, now: float, passes: int = IDLE_PASS_LIMIT) -> str:
        """Why the run stopped: a policy that starts nothing while jobs wait and nothing else can.

        ``passes`` the passes counted; more than :data:`IDLE_PASS_LIMIT` when
        the policy kept switching nodes rather than only asking to be called back.
        """
        head = self.queue.fcfs()[0]
        cluster = self.cluster
        counts = ", ".join(
            f"{count} {label}" for label, count in cluster.counts_by_state().items() if count
        )
        asleep = np.flatnonzero(cluster.state != NodeState.IDLE)[:8].tolist()
        does, fix = (
            ("keeps switching nodes but starts no job", "Start it once they are idle")
            if passes > IDLE_PASS_LIMIT
            else ("only asks to be called back", "Wake the sleeping nodes it needs, or start it")
        )
        return (
            f"{self.policy.name}: {passes} passes up to t={now:g} s with nothing "
            f"running, no job left to arrive and {len(self.queue)} waiting, and the policy "
            f"{does}: no job can ever start. Job {head.name} needs "
            f"{head.res} node{'' if head.res == 1 else 's'}; the nodes are {counts}"
            + (f" (not idle: {asleep})" if asleep else "")
            + f". {fix}"
        )

    def _apply(self, decision: Decision) -> None:
        """Apply the starts, then the switch-offs, then the switch-ons."""
        env = self.env
        now = env.now
        cluster = self.cluster
        queue = self.queue
        waiting = queue.waiting
        unit_speed = cluster.unit_speed
        for entry in decision.start:
            try:
                job, nodes = entry
            except (TypeError, ValueError):
                raise PolicyError(
                    f"{self.policy.name}: Decision.start holds {entry!r} at t={now:g} s; "
                    "give (job, nodes) pairs (for a Planned p: (p.job, p.nodes))"
                ) from None
            job_id = job.id
            if job_id not in waiting:
                raise PolicyError(
                    f"{self.policy.name}: asked to start job {job_id}, which is not waiting, "
                    f"at t={now:g} s"
                )
            if len(nodes) != job.res:
                raise PolicyError(
                    f"{self.policy.name}: job {job_id} needs {job.res} nodes, "
                    f"was given {len(nodes)} at t={now:g} s"
                )
            duration = job.runtime_s
            if self.kill_at_walltime:
                duration = min(duration, job.reqtime_s)
            if unit_speed:
                # Dividing by a speed of 1.0 changes nothing, so skip it.
                gang = cluster.allocate(job_id, nodes, now + job.reqtime_s)
            else:
                gang = cluster.allocate(job_id, nodes)
                slowest = float(cluster.speed[gang].min())
                cluster.expected_end_s[gang] = now + job.reqtime_s / slowest
                if slowest != 1.0:
                    duration /= slowest
            queue.remove(job)
            record = Running(job, now, gang)
            self.running[job_id] = record
            self.start_s[job_id] = now
            self.gangs.put(job_id, gang)
            env.process(self._job(record, duration))
            for callback in self._listeners["job_start"]:
                callback(now, job, gang)
        for node in decision.switch_off:
            cluster.switch_off(node)
        for node in decision.switch_on:
            cluster.switch_on(node)

    def _call_at(self, times: list[float]) -> None:
        now = self.env.now
        for at in times:
            if at > now:
                # A Python float: a numpy one would make the clock (and every
                # policy's arithmetic on it) numpy scalars; same value.
                self._timer(float(at))

    def _record_states(self) -> None:
        counts = self.cluster.counts
        now = self.env.now
        # (nan before the first row: it equals no time; and no counts equal
        # the empty list of before the first row.)
        if self._last_row_s == now:
            self._last_counts = last = counts.copy()
            self._state_rows.replace_last(now, last)
        elif counts != self._last_counts:
            self._last_counts = last = counts.copy()
            self._state_rows.append(now, last)
            self._last_row_s = now

    # -------------------------------------------------------------- running
    @property
    def now(self) -> float:
        """Current simulated time in seconds."""
        return self.env.now

    # Typed per call: run() to the end always has a record, run(until=t) never does.
    @overload
    def run(self, until: None = None, *, progress: bool = False) -> RunRecord: ...
    @overload
    def run(self, until: float, *, progress: bool = False) -> None: ...
    @overload
    def run(self, until: float | None, *, progress: bool = False) -> RunRecord | None: ...

    def run(self, until: float | None = None, *, progress: bool = False) -> RunRecord | None:
        """Run to the end (returns the :meth:`record`) or to ``until`` (returns ``None``).

        Args:
            until: Stop at this simulated time; call again to continue
                (``math.inf``: to the end, as without it, returning ``None``).
            progress: Show a progress bar of finished jobs.
        """
        if until is not None and math.isnan(until):
            raise InputError("run(until=nan): give a time in seconds")
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(self.workload.jobs), unit="job", desc=self.policy.name)
            step = max(1, len(self.workload.jobs) // 200)

            def tick(done: int) -> None:
                if done % step == 0 or done == len(self.workload.jobs):
                    bar.n = done
                    bar.refresh()

            self._progress = tick
        if until is not None and until < self.env.now:
            raise InputError(
                f"run(until={until!r}): the simulation is already at t={self.env.now!r} s; "
                "give a later time"
            )
        try:
            if until is not None and until < math.inf:
                _simpy.process(self.env, until, self)
                if not self.finished and until > self.env.now:
                    self.env.run(until=until)
                return None
            # (To the end: a run that stalls is an error, not a clock moved to infinity.)
            if not self.finished:
                _simpy.process(self.env, math.inf, self)
                if not self.finished:
                    raise PolicyError(self._stalled())
        finally:
            if bar is not None:
                bar.close()
                self._progress = None
        return self.record() if until is None else None

    def peek(self) -> float:
        """Time of the next event, ``inf`` once the run has ended."""
        if self.finished:
            return math.inf
        return self.env.peek()

    def step(self) -> Happening | None:
        """Process exactly one event of the model; returns what it was, or ``None`` at the end.

        The model's events are arrivals, job ends, transition ends, wake-ups
        a policy asked for and controller passes; SimPy's own bookkeeping
        (a process starting, a command handed to a node) is processed on
        the way without counting. Events at one instant come in the engine's
        order (see ``docs/background/event-order.md``). Stepping to the end
        gives the same results as :meth:`run`, to the bit.
        """
        while not self.finished:
            kind = _simpy.next_kind(self.env, self)
            if kind is None:
                return None
            self.env.step()
            if kind != "internal":
                return Happening(self.env.now, kind)
        return None

    def run_until_decision(self) -> Decision | None:
        """Run to the end of the next controller pass and return its decision.

        Returns ``None`` when the run ends first.
        """
        passes = self.passes
        while self.passes == passes and not self.finished:
            try:
                self.env.step()
            except EmptySchedule:
                break
        return self.last_decision if self.passes != passes else None

    def run_until(
        self, predicate: Callable[[Simulation], bool], *, limit_s: float = math.inf
    ) -> bool:
        """Process events until ``predicate(sim)`` holds; returns whether it does.

        The predicate is checked before the first event and after each one,
        so ``sim.run_until(lambda s: s.started(178))`` stops right after the
        controller pass that started job 178. It stops too at the end of the
        run, or before the first event later than ``limit_s``.
        """
        while not predicate(self):
            if self.finished or self.env.peek() > limit_s:
                return False
            try:
                self.env.step()
            except EmptySchedule:
                return bool(predicate(self))
        return True

    def started(self, job: int | str) -> bool:
        """Whether the job (its id in the workload, as in ``jobs.csv``) has started."""
        return not math.isnan(self.start_s[self.job_index(job)])

    def job_index(self, job: int | str) -> int:
        """The position of a job given by its id in the workload (``Job.name``).

        Raises:
            InputError: No job has that id.
        """
        index = self._names.get(str(job))
        if index is None:
            raise InputError(f"no job {job!r} in the workload {self.workload.source}")
        return index

    @functools.cached_property
    def _names(self) -> dict[str, int]:
        return {j.name: j.id for j in self.workload.jobs}

    def on(self, kind: str, callback: Callable[..., Any]) -> Callable[..., Any]:
        """Call ``callback`` at every event of ``kind``; returns it (usable as a decorator).

        Kinds and what the callback receives:

        * ``"job_start"``: ``(t, job, nodes)``;
        * ``"job_end"``: ``(t, job, nodes)``;
        * ``"node_state"``: ``(t, node, old, new)`` with states as
          :class:`~hpcpower.states.NodeState`, once per node that changes;
        * ``"decision"``: ``(t, decision)`` after each controller pass.

        A callback watches; it must not change the simulation.
        """
        if kind not in self._listeners:
            raise InputError(f"unknown event kind {kind!r}: use {', '.join(EVENT_KINDS)}")
        self._listeners[kind].append(callback)
        if kind == "node_state":
            self.cluster.on_state = self._node_state_changed
        return callback

    def off(self, kind: str, callback: Callable[..., Any]) -> None:
        """Stop calling ``callback`` (subscribed with :meth:`on`)."""
        listeners = self._listeners.get(kind, [])
        if callback in listeners:
            listeners.remove(callback)
        if kind == "node_state" and not listeners:
            self.cluster.on_state = None

    def _node_state_changed(self, now: float, nodes, old: int, new: int) -> None:
        before, after = NodeState(old), NodeState(new)
        for callback in self._listeners["node_state"]:
            for node in nodes:
                callback(now, int(node), before, after)

    def record(self) -> RunRecord:
        """The plain record of the run so far (complete once the run has finished).

        Open intervals are accounted up to now without touching the live
        cluster, so a record can be taken in the middle of a run.
        """
        cluster = self.cluster
        end = self.end_s if self.end_s is not None else self.env.now
        seconds = cluster.time_in_state_s.copy()
        if not self.finished:
            seconds[np.arange(cluster.n_nodes), cluster.state] += end - cluster.since
        # A finished run's logs are final; those taken mid-run are copied, as they grow.
        final = self.finished
        decisions = self.decisions if final else self.decisions.copy()
        return RunRecord(
            jobs=list(self.workload.jobs),
            start_s=self.start_s.copy(),
            finish_s=self.finish_s.copy(),
            gangs=self.gangs if final else self.gangs.copy(),
            rejected=dict(self.rejected),
            transitions=cluster.transition_log if final else cluster.transition_log.copy(),
            state_counts=self._state_rows if final else self._state_rows.copy(),
            time_in_state_s=seconds,
            node_state=cluster.state.copy(),
            power_w=cluster.power_w,
            switch_ons=int(cluster.switch_ons),
            switch_offs=int(cluster.switch_offs),
            passes=int(self.passes),
            arrived=int(self._next_job),
            decisions=decisions,
            policy_summary=_policy_summary(self.policy, decisions, float(end)),
            kill_at_walltime=self.kill_at_walltime,
            finished=self.finished,
            end_s=float(end),
            config=self.config(),
        )

    def config(self) -> dict[str, Any]:
        """The full configuration of this run."""
        return {
            "platform": self.platform.name,
            "n_nodes": self.platform.n_nodes,
            "workload": self.workload.source,
            "workload_notes": workload_notes(self.workload),
            "jobs": len(self.workload.jobs),
            "policy": self.policy.config(),
            "seed": self.seed,
            "initial_state": self.initial_state,
            "kill_at_walltime": self.kill_at_walltime,
            "repeat_pass": self.repeat_pass,
            "kernels": self.kernels,
            "decisions": self.decision_level,
            "version": __version__,
            **self.extra_config,
        }

    def _repr_html_(self) -> str:
        from hpcpower._html import simulation_html

        return simulation_html(self)

    def __repr__(self) -> str:
        return (
            f"<Simulation t={self.env.now:.10g} s, {self.policy.name} on {self.platform.name}: "
            f"{len(self.queue)} waiting, {len(self.running)} running, "
            f"{self._done_count}/{len(self.workload.jobs)} done>"
        )


def _check_jobs(workload: Workload) -> None:
    """Jobs must be in submit order with ``id`` equal to their position; there must be some."""
    if not workload.jobs:
        raise InputError(f"{workload.source}: no jobs to simulate")
    previous = -np.inf
    for position, job in enumerate(workload.jobs):
        if job.id != position:
            raise InputError(
                f"{workload.source}: job {job.name!r} has id {job.id} at position {position}; "
                "ids must number the jobs 0, 1, 2, ... in submit order"
            )
        if job.submit_s < previous:
            raise InputError(
                f"{workload.source}: job {job.name!r} (id {job.id}) is submitted at "
                f"{job.submit_s:g} s, before the job listed ahead of it; sort jobs by submit time"
            )
        if not (
            isinstance(job.res, int | np.integer)
            and not isinstance(job.res, bool)
            and job.res >= 1
            and 0 <= job.submit_s < math.inf
            and 0 <= job.runtime_s < math.inf
            and job.reqtime_s >= 0
        ):
            raise InputError(
                f"{workload.source}: job {job.name!r} (id {job.id}) needs a whole number "
                "res >= 1, a finite submit time and runtime >= 0 and a requested time >= 0 "
                f"(has res={job.res!r}, submit_s={job.submit_s!r}, runtime_s={job.runtime_s!r}, "
                f"reqtime_s={job.reqtime_s!r})"
            )
        previous = job.submit_s


def choose_kernels(setting: str, policy: Policy, n_jobs: int, n_nodes: int) -> str:
    """The form of the planning algorithms a run uses: ``"numba"`` or ``"numpy"``.

    ``"auto"`` picks the compiled twins when they were built ahead of time
    (``hpcpower build-kernels``: they then load at no cost), or when numba
    is installed and the numpy path is expected to take at least
    :data:`AUTO_KERNELS_S` seconds: ``policy.planning_cost_s`` per job,
    scaled by ``(n_nodes / 64) ** 0.6`` (measured on the paper's 64- and
    1152-node cases). Compiling them just in time costs about half a second
    a process, and half a minute the first time, which small runs should
    never wait for. Once this process has loaded them (an earlier run used
    them), every run does: they then cost nothing more to load, and the
    results are the same.

    Raises:
        InputError: An unknown setting, or ``"numba"`` without numba installed
            or the twins built.
    """
    if setting not in ("auto", "numba", "numpy"):
        raise InputError(f"kernels must be 'auto', 'numba' or 'numpy', got {setting!r}")
    if setting == "numpy":
        return "numpy"
    from hpcpower.planning import compiled

    if setting == "numba":
        if not compiled.available():
            raise InputError(
                "kernels = 'numba' needs numba: pip install \"hpcpower[fast]\" "
                "(or use kernels = 'numpy', which gives the same results)"
            )
        return "numba"
    if not compiled.available():
        return "numpy"
    if compiled.loaded() or compiled.built():
        return "numba"
    cost_s = getattr(policy, "planning_cost_s", 0.0)  # (a policy need not subclass Policy)
    expected_s = cost_s * n_jobs * (n_nodes / 64) ** 0.6
    return "numba" if expected_s >= AUTO_KERNELS_S else "numpy"


def _load_twins(required: bool) -> str:
    """Load the compiled twins: ``"numba"``, or ``"numpy"`` when numba will not import.

    Raises:
        InputError: numba does not import and the twins were asked for by name.
    """
    from hpcpower.planning import compiled

    try:
        compiled.load()
    except ImportError as exc:
        if required:
            raise InputError(
                f"kernels = 'numba': numba is installed but does not import ({exc}); "
                "reinstall it (pip install --force-reinstall numba) or use kernels = 'numpy'"
            ) from None
        return "numpy"
    return "numba"


def _policy_summary(
    policy: Policy, notes: Sequence[dict[str, Any]], span_s: float
) -> dict[str, Any]:
    """The policy's own summary entries (none from a policy without ``summarise``)."""
    summarise = getattr(policy, "summarise", None)
    return dict(summarise(notes, span_s)) if summarise is not None else {}


def workload_notes(workload: Workload) -> dict[str, Any]:
    """What the reader did to the trace, for the results: drops by reason, notes, machine size."""
    dropped: dict[str, int] = {}
    for record in workload.dropped:
        dropped[record.reason] = dropped.get(record.reason, 0) + 1
    return {
        "dropped": dropped,
        "dropped_total": len(workload.dropped),
        "notes": list(workload.notes),
        "traced_machine_nodes": workload.max_nodes,
        "time_origin": dict(workload.time_origin),
    }
