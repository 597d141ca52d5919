"""The SNF-ICON controller: one invocation per scheduler event (paper §III-IV).

Each pass, in the order of the authors' ``SNFICON.schedule``:

1. **Observe** the jobs that arrived and finished since the previous pass:
   arrival, service and node-request estimates, the runtime-ratio model,
   and the screen's sample windows (in both modes).
2. **Screen** the last ``T_M`` seconds (:mod:`.screen`). If the window is
   rejected and fallback is enabled, the whole pass is **SNF+IPM**: it is
   delegated to the very ``snf-ipm`` controller
   (:class:`~hpcpower.policies.queue.snf.SNF` with
   :class:`~hpcpower.policies.power.ipm.IPM`), so fallback passes decide
   exactly what ``snf-ipm`` would in the same state (idle timers included,
   see below).
3. **ICON mode**: SNF dispatch; if jobs still wait, the future-SNF plan on
   predicted releases and the wakes it needs (:mod:`.planner`). Idle
   timeouts are not applied while jobs wait (as in the authors' code).
4. With an empty queue, at a *decision event* (first pass, or new arrivals or
   completions since the previous pass):

   * gate open (:mod:`.gate`): warm-spare optimisation (:mod:`.spares`) over
     the next-event window (:mod:`.next_event`);
   * gate closed: after a completion, the nodes it freed switch off at once.

5. With an empty queue, **idle timeout**: idle nodes whose timeout expired
   switch off; a wake-up is requested at the next expiry.

Two details of the authors' controller are kept on purpose: an idle node
that runs a zero-length job started in an ICON pass with jobs still waiting
keeps its earlier idle timer (:class:`IdleTimers`), and fallback passes also
ask for re-planning at the walltime end (minus the wake time) of jobs that
ICON started (:meth:`SnfIcon._fallback`).

Every pass leaves a note in the decision log (``Simulation.decisions``):
mode, screen statistics and verdict per series, gate, spare planning done or
skipped and why, the candidate range, the chosen target with its expected
wait, energy and cost, and the power actions. ``mode`` (``"icon"`` or
``"fallback"``) and ``time_s`` give the ICON time share of the results.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcpower.engine.contract import Decision, Planned, Policy, SystemView
from hpcpower.planning.common import NO_NODES, NO_TIMES
from hpcpower.policies.base import Combined
from hpcpower.policies.icon.config import IconConfig
from hpcpower.policies.icon.estimators import ArrivalEstimator, ResourcePmf, ServiceEstimator
from hpcpower.policies.icon.gate import GateState, arrival_gate, completion_shutdown
from hpcpower.policies.icon.next_event import NextEvent, horizon_cap, next_event
from hpcpower.policies.icon.planner import (
    RunningPrediction,
    dispatch,
    plan_wakes,
    prediction_release_map,
)
from hpcpower.policies.icon.runtime import RuntimeModel, requested_duration
from hpcpower.policies.icon.screen import ScreenResult, ScreenSettings, WorkloadScreen
from hpcpower.policies.icon.spares import (
    SpareNodes,
    SparePlan,
    SpareSettings,
    optimise,
    wake_ranks,
)
from hpcpower.policies.power.ipm import IPM
from hpcpower.policies.queue.snf import SNF, plan_forward
from hpcpower.states import IDLE

if TYPE_CHECKING:
    from hpcpower.engine.cluster import ClusterView

EPS = 1e-9
# ndarray.min without the Python-level wrapper (called for every job).
_min = np.minimum.reduce


class SnfIcon(Policy):
    """SNF with adaptive optimisation of idle node counts, falling back to SNF+IPM.

    Args:
        config: All settings (paper values by default).
        name: Name shown in results (the registry passes the variant's name).

    Attributes:
        settings: The :class:`IconConfig` in use.
        last_note: The decision note of the latest pass (``None`` if the
            decision log keeps no note of it: see :attr:`SystemView.notes`).
        last_mode: The mode of the latest pass: ``"icon"`` or ``"fallback"``
            (``None`` before the first).
        last_spare: The latest spare optimisation (:class:`SparePlan`), for inspection.
        last_event: The next-event model of that optimisation.
    """

    #: Numpy time per job on 64 nodes: 0.23 ms measured on the paper's DAS2
    #: cases, of which the compiled twins save about a fifth.
    planning_cost_s = 2e-4

    def __init__(self, config: IconConfig | None = None, name: str = "snf-icon") -> None:
        self.settings = config if config is not None else IconConfig()
        self.name = name
        self._cluster: ClusterView | None = None
        self._fresh()

    def _fresh(self) -> None:
        cfg = self.settings
        self._modes = _ModeTally()
        self.arrivals = ArrivalEstimator(
            cfg.initial_arrival_rate, cfg.arrival_ema_alpha, cfg.arrival_rate
        )
        self.service = ServiceEstimator(cfg.service_ema_alpha, cfg.service_rate)
        self.requests = ResourcePmf(cfg.resource_ema_alpha, cfg.resource_pmf)
        self.runtime = RuntimeModel(
            cfg.service_ema_alpha, cfg.runtime_log_sigma_floor, cfg.max_decision_horizon_s
        )
        self.screen = WorkloadScreen(
            cfg.markov_window_s,
            cfg.markov_max_samples,
            ScreenSettings(
                cfg.markov_min_samples,
                cfg.markov_cv_tolerance,
                cfg.markov_max_lag1,
                cfg.markov_ks_multiplier,
                cfg.markov_ks_param,
            ),
            cfg.require_service_samples,
        )
        self.fallback = Combined(SNF(), IPM(cfg.timeout_s), name="snf-ipm")
        self.last_note: dict[str, Any] | None = None
        self.last_mode: str | None = None
        self.last_spare: SparePlan | None = None
        self.last_event: NextEvent | None = None
        # Walltime ends of jobs started in ICON passes, for the fallback's
        # re-plan wake-ups (see _fallback).
        self._icon_ends: dict[int, float] = {}
        # Requested duration of each running job (request / slowest node speed).
        self._requested: dict[int, float | None] = {}
        self._timers = IdleTimers(self.settings.timeout_s is not None)
        # The latest verdict, and the note of each kind of pass made from it
        # (keyed by "is a fallback pass"; see _note).
        self._verdict: ScreenResult | None = None
        self._templates: dict[bool, dict[str, Any]] = {}

    def reset(self, cluster: ClusterView) -> None:
        """Forget everything learned and size the spare bounds to ``cluster``."""
        self._fresh()
        self._cluster = cluster
        cfg = self.settings
        n = cluster.n_nodes
        self._spare_settings = SpareSettings(
            alpha=cfg.alpha,
            beta=cfg.beta,
            min_spares=min(cfg.min_spare_nodes, n),
            max_spares=n if cfg.max_spare_nodes is None else min(cfg.max_spare_nodes, n),
            respect_timeout=cfg.respect_timeout,
            timeout_set=cfg.timeout_s is not None,
        )
        # The wake order of sleeping nodes depends only on the power model and
        # the weights: rank every node once instead of at each optimisation.
        self._wake_rank = wake_ranks(
            cluster.switch_on_mean_s, cluster.power_w, self._spare_settings
        )
        speeds = [float(s) for s in cluster.speed if s > 0]
        self._mean_speed = sum(speeds) / len(speeds) if speeds else 1.0
        self.fallback.reset(cluster)

    # ------------------------------------------------------------------ pass
    def decide(self, view: SystemView) -> Decision:
        """Run one invocation: observe, screen, then ICON or the SNF+IPM fallback."""
        if self._cluster is not view.cluster:
            self.reset(view.cluster)
        now = view.now
        cfg = self.settings
        if view.arrived or view.completed:
            self._observe(view)
        verdict = self.screen.verdict(now, view.compiled)
        gate = arrival_gate(now, self.arrivals.last_arrival_s, cfg.spare_arrival_window_s)
        event = view.first or bool(view.arrived) or bool(view.completed)

        for rec in view.completed:
            self._icon_ends.pop(rec.job.id, None)
            self._requested.pop(rec.job.id, None)
        view = self._timers.view(view)
        if cfg.fallback_enabled and not verdict.accepted:
            mode = "fallback"
            decision = self._fallback(view)
            started = len(decision.start)
            waiting = len(view.queue) - started
            # Most passes fall back and act on nothing: their note is made
            # only if the log keeps it (the ICON pass below writes its note
            # as it goes, and is one pass in ten).
            keep = view.notes
            if (
                keep == "full"
                or view.explain
                or (keep == "changes" and (started or decision.switch_on or decision.switch_off))
            ):
                note = self._note(
                    view,
                    verdict,
                    gate,
                    event,
                    (started, waiting, len(decision.switch_on), len(decision.switch_off)),
                )
            else:
                note = None
        else:
            mode = "icon"
            note = self._note(view, verdict, gate, event)
            decision = self._icon(view, gate, event, note)
            waiting = note["waiting"]
        # The authors' idle timers of nodes started in this pass are dropped
        # only by a pass that applies the timeout (see IdleTimers).
        self._timers.after_pass(view, decision, timeout_applied=mode == "fallback" or waiting == 0)
        decision.note = note
        self.last_note = note
        self.last_mode = mode
        self._modes.add(now, mode)
        if view.explain and note is not None:  # (explained passes always have their note)
            decision.why = _reasons(note, decision)
        return decision

    def _fallback(self, view: SystemView) -> Decision:
        """The SNF+IPM pass, plus re-plan wake-ups for jobs that ICON started.

        The authors' fallback asks, while nodes sleep, for a pass at every
        running job's walltime end minus the wake lead time, whichever mode
        started the job. The delegated IPM knows only the jobs started in
        fallback passes; the ends of jobs started in ICON passes are added
        here, with the same once-per-job rule.
        """
        decision = self.fallback.decide(view)
        if not self._icon_ends:
            return decision
        # Like the authors' build_callbacks, look at the nodes still asleep
        # after this pass's wakes.
        asleep = view.cluster.sleeping.difference(decision.switch_on)
        if asleep:
            now = view.now
            shift = float(view.cluster.switch_on_mean_s[next(iter(asleep))])
            decision.call_at.extend(e - shift for e in self._icon_ends.values() if e - shift > now)
            self._icon_ends.clear()
        return decision

    def _observe(self, view: SystemView) -> None:
        """Update every estimate from the jobs that arrived and finished since the last pass."""
        for job in sorted(view.arrived, key=lambda j: (j.submit_s, j.id)):
            gap = self.arrivals.observe(job.submit_s)
            if gap is not None:
                self.screen.interarrivals.add(job.submit_s, gap)
            self.requests.observe(job.res)
            self.service.observe_request(job.reqtime_s, self._mean_speed)
        speed = view.cluster.speed
        unit = view.cluster.unit_speed
        for rec in sorted(view.completed, key=lambda r: (r.finish_s, r.job.id)):
            duration = rec.finish_s - rec.start_s
            if duration <= EPS or not math.isfinite(duration):
                continue
            self.service.observe_service(duration)
            self.screen.services.add(rec.finish_s, duration)
            slowest = 1.0 if unit else float(_min(speed[rec.nodes]))
            # The authors take the request as (start + walltime) - start.
            span = (rec.start_s + rec.job.reqtime_s / slowest) - rec.start_s
            if span > EPS and math.isfinite(span):
                self.runtime.observe(duration, span)
            else:
                self.runtime.observe(duration, requested_duration(rec.job.reqtime_s, slowest))

    # ------------------------------------------------------------ ICON mode
    def _icon(
        self,
        view: SystemView,
        gate: GateState,
        event: bool,
        note: dict[str, Any],
    ) -> Decision:
        cfg = self.settings
        cluster = view.cluster
        now = view.now
        decision = Decision()
        started = dispatch(view, cfg.timeout_s) if len(view.queue) else []
        decision.start = [(p.job, p.nodes) for p in started]
        for p in started:
            self._icon_ends[p.job.id] = now + p.job.reqtime_s
        taken: set[int] = set()
        for p in started:
            taken.update(np.asarray(p.nodes).tolist())
        remaining = view.queue.snf()[len(started) :]
        note.update(mode="icon", started=len(started), waiting=len(remaining))

        timeout_offs: list[int] = []
        if remaining:
            note.update(spare="skipped", spare_reason="queue_not_empty")
            if cluster.sleeping:
                plan = self._plan(view, started, remaining)
                wakes = plan_wakes(plan, cluster.state, cluster.switch_on_mean_s, now)
                decision.switch_on.extend(wakes.now)
                decision.call_at.extend(wakes.later)
                decision.plan = plan.made
                note["planned_jobs"] = wakes.planned_jobs
        else:
            # The idle nodes left after dispatch, by id (as the state array lists them).
            is_idle = cluster.state == IDLE
            if taken:
                is_idle[list(taken)] = False
            idle_after = np.flatnonzero(is_idle)
            if not event:
                note.update(spare="skipped", spare_reason="not_a_decision_event")
            elif gate.open:
                spare, model = self._spares(view, started, idle_after)
                self.last_spare = spare
                self.last_event = model
                decision.switch_on.extend(spare.wake)
                decision.switch_off.extend(spare.switch_off)
                note.update(
                    spare="done",
                    spare_reason="",
                    x_min=spare.x_min,
                    x_max=spare.x_max,
                    target=spare.target,
                    expected_wait_s=spare.expected_wait_s,
                    expected_energy_j=spare.expected_energy_j,
                    cost=spare.cost,
                    horizon_s=model.horizon_s,
                    horizon_cap_s=model.horizon_cap_s,
                    p_arrival=model.p_arrival,
                )
            else:
                note.update(spare="skipped", spare_reason="no_recent_job_arrival")
                if cfg.immediate_shutdown_on_stale_completion and view.completed:
                    offs = completion_shutdown(_released(view), taken, set(idle_after.tolist()))
                    decision.switch_off.extend(offs)
                    note["completion_switch_offs"] = len(offs)
            if cfg.timeout_s is not None:
                timeout_offs = self._timeouts(view, idle_after, decision)
                decision.switch_off.extend(timeout_offs)
        note.update(
            wakes=len(decision.switch_on),
            switch_offs=len(decision.switch_off),
            timeout_switch_offs=len(timeout_offs),
        )
        return decision

    def _predictions(self, view: SystemView, started: list[Planned]) -> list[RunningPrediction]:
        """Predicted remaining time of every running job, and of those starting now."""
        jobs, remaining = self._remaining(view, started)
        return [
            RunningPrediction(job, nodes, elapsed, rem)
            for (job, nodes, elapsed), rem in zip(jobs, remaining, strict=True)
        ]

    def _remaining(
        self, view: SystemView, started: list[Planned]
    ) -> tuple[list[tuple[Any, np.ndarray, float]], list[float]]:
        """``(job, nodes, elapsed)`` of the running and starting jobs, and their predicted rest."""
        now = view.now
        jobs = [(rec.job, rec.nodes, max(0.0, now - rec.start_s)) for rec in view.running.values()]
        for p in started:
            jobs.append((p.job, np.asarray(p.nodes), 0.0))
        # A job's requested duration is fixed: computed once, when first seen.
        requested = self._requested
        speed = view.cluster.speed
        reqs: list[float | None] = []
        for job, nodes, _ in jobs:
            if job.id in requested:
                req = requested[job.id]
            else:
                req = requested[job.id] = requested_duration(
                    job.reqtime_s, float(_min(speed[nodes]))
                )
            reqs.append(req)
        remaining = self.runtime.remaining_all(
            reqs, [e for _, _, e in jobs], self.service.ema_service_s, view.compiled
        )
        return jobs, remaining

    def _plan(self, view: SystemView, started: list[Planned], remaining):
        """The future-SNF plan of the waiting jobs on predicted releases (made as read)."""
        releases = prediction_release_map(
            view, self.settings.timeout_s, self._predictions(view, started)
        )
        speed = view.cluster.speed
        runtime = self.runtime
        service = self.service

        def duration(job, nodes) -> float:
            req = requested_duration(job.reqtime_s, float(_min(speed[nodes])))
            return runtime.queued_duration(req, service.ema_service_s)

        return _Recorded(plan_forward(releases, remaining, view.now, duration))

    def _spares(
        self, view: SystemView, started: list[Planned], idle_after: np.ndarray
    ) -> tuple[SparePlan, NextEvent]:
        """Warm-spare optimisation over the non-computing nodes left after dispatch, and its model.

        Transition remainders are planned ones (means from the start of the
        transition; a full mean again once overdue), as the authors' release map.
        """
        cfg = self.settings
        cluster = view.cluster
        now = view.now
        since = cluster.since
        if cfg.timeout_s is None:
            expiry = np.full(cluster.n_nodes, np.inf)
        else:
            expiry = since + cfg.timeout_s
        son, on_left = _transitions(cluster.switching_on, since, cluster.switch_on_mean_s, now)
        soff, off_left = _transitions(cluster.switching_off, since, cluster.switch_off_mean_s, now)
        nodes = SpareNodes(
            idle=idle_after,
            idle_expiry_s=expiry,
            switching_on=son,
            on_remaining_s=on_left,
            sleeping=np.array(sorted(cluster.sleeping), dtype=np.intp),
            switching_off=soff,
            off_remaining_s=off_left,
            lead_s=cluster.switch_on_mean_s,
            off_s=cluster.switch_off_mean_s,
            power_w=cluster.power_w,
            wake_rank=self._wake_rank,
        )
        _, remaining = self._remaining(view, started)
        cap = horizon_cap(
            now,
            expiry[idle_after],
            cfg.max_decision_horizon_s,
            cfg.timeout_s is not None,
        )
        model = next_event(
            self.arrivals.rate(), remaining, len(view.running), self.service.rate(), cap
        )
        plan = optimise(nodes, now, model, self.requests.pmf(), self._spare_settings, view.compiled)
        return plan, model

    def _timeouts(self, view: SystemView, idle_after: np.ndarray, decision: Decision) -> list[int]:
        """Idle nodes whose timeout expired (in the order they became idle); asks for the next.

        ``idle_after``: the idle nodes left after dispatch, by id.
        """
        idle = idle_after
        if decision.switch_off:
            idle = idle[~np.isin(idle, decision.switch_off)]
        if not len(idle):
            return []
        now = view.now
        timeout = self.settings.timeout_s
        assert timeout is not None  # called only when the power manager has a timeout
        since = view.cluster.since[idle]
        # Adding a constant never reorders floats (rounding is monotonic), so
        # the earliest expiry is the earliest idle time plus the timeout.
        first = float(since.min()) + timeout
        if now < first:  # the usual case: no timeout expired, ask for the first
            decision.call_at.append(first)
            return []
        expiry = since + timeout
        gone = now >= expiry
        if not gone.all():
            decision.call_at.append(float(expiry[~gone].min()))
        # By the time they became idle; a stable sort keeps ties in id order.
        return idle[gone][np.argsort(since[gone], kind="stable")].tolist()

    # ----------------------------------------------------------- reporting
    def _note(
        self,
        view: SystemView,
        verdict: ScreenResult,
        gate: GateState,
        event: bool,
        fallback: tuple[int, int, int, int] | None = None,
    ) -> dict[str, Any]:
        """The pass's note: what it saw, then what it decided, in that key order.

        ``fallback``: ``(started, waiting, wakes, switch_offs)`` of a fallback
        pass. An ICON pass's note has no mode yet: the pass adds it and its
        outcome as it goes.
        """
        # Every key but the pass's own values comes in place from a note made
        # once per verdict and kind of pass: a copy keeps the key order, and
        # a note costs 1.9 instead of 3.0 us (benchmarks/RESULTS.md, Sitting 29).
        if self._verdict is not verdict:
            self._verdict = verdict
            self._templates = {}
        is_fallback = fallback is not None
        template = self._templates.get(is_fallback)
        if template is None:
            template = self._templates[is_fallback] = _note_template(verdict, is_fallback)
        note = template.copy()
        note.update(zip(_PASS_KEYS, (view.now, _trigger_text(view.triggers), event), strict=True))
        rates = (self.arrivals.rate(), self.service.rate())
        note.update(zip(_GATE_KEYS, (*gate, *rates), strict=True))
        if fallback is not None:
            note.update(zip(_FALLBACK_KEYS, fallback, strict=True))
        return note

    def config(self) -> dict[str, Any]:
        """Name plus every setting, copied into every result."""
        return {"name": self.name, **self.settings.as_dict()}

    def summarise(self, notes, span_s: float) -> dict[str, Any]:
        """The ICON time share: the part of the run when the latest pass was in ICON mode.

        Kept as the run goes (not read from ``notes``), so that it is the same
        whatever part of the decision log the simulation keeps.
        """
        return {"icon_time_fraction": self._modes.share(span_s)}

    def __repr__(self) -> str:
        mode = self.last_mode or "not started"
        return f"<SnfIcon {self.name!r}: last pass {mode}, {self.arrivals!r}>"


#: The decision log's text of each set of triggers met so far.
_TRIGGER_TEXT: dict[frozenset[str], str] = {}


#: The keys of a series' statistics in a note, per series.
_SERIES_KEYS = tuple(
    tuple(f"{prefix}_{key}" for key in ("n", "accepted", "reason", "cv", "lag1", "ks", "ks_limit"))
    for prefix in ("arrival", "service")
)
#: The keys of a pass's own values, in their place in a note: the pass (time,
#: triggers, decision event), the gate (its fields in order) and the rates,
#: and what a fallback pass decided.
_PASS_KEYS = ("time_s", "triggers", "decision_event")
_GATE_KEYS = (
    "gate_enabled",
    "gate_open",
    "gate_reason",
    "arrival_age_s",
    "arrival_rate",
    "service_rate",
)
_FALLBACK_KEYS = ("started", "waiting", "wakes", "switch_offs")


def _note_template(verdict: ScreenResult, fallback: bool) -> dict[str, Any]:
    """The note of an ICON or a fallback pass under ``verdict``, the pass's own values unset.

    Keys in the order of a note: time, triggers, decision event, mode, the
    screen's verdict and each series' statistics, the gate and the rates,
    then (in a fallback pass) what the pass decided.
    """
    note: dict[str, Any] = dict.fromkeys(_PASS_KEYS)
    note["mode"] = "fallback" if fallback else None
    note["screen_accepted"] = verdict.accepted
    note["screen_reason"] = verdict.reason
    for keys, s in zip(_SERIES_KEYS, (verdict.arrival, verdict.service), strict=True):
        stats = (s.n, s.accepted, s.reason, s.cv, s.lag1, s.ks, s.ks_limit)
        note.update(zip(keys, stats, strict=True))
    note.update(dict.fromkeys(_GATE_KEYS))
    if fallback:
        note["spare"] = "skipped"
        note["spare_reason"] = "recent_workload_not_well_markovian"
        note.update(dict.fromkeys(_FALLBACK_KEYS))
    return note


def _trigger_text(triggers: frozenset[str]) -> str:
    """``"arrival+job_end"``: the pass's triggers in name order (made once per set)."""
    text = _TRIGGER_TEXT.get(triggers)
    if text is None:
        text = _TRIGGER_TEXT[triggers] = "+".join(sorted(triggers))
    return text


def _released(view: SystemView) -> list[int]:
    """The nodes that the jobs finished since the previous pass left idle.

    (No pass changes a node's state before its decision is applied, so this
    reads the same at any point of the pass.)
    """
    state = view.cluster.state
    return [
        node
        for record in view.completed
        for node in np.asarray(record.nodes).tolist()
        if state[node] == IDLE
    ]


def _transitions(
    members: set[int], since: np.ndarray, mean_s: np.ndarray, now: float
) -> tuple[np.ndarray, np.ndarray]:
    """Nodes in a transition (increasing ids) and its planned remaining time.

    The planned end is the start plus the mean duration, or a full mean from
    now once that is overdue (as the authors' release map).
    """
    if not members:  # (shared read-only empty arrays)
        return NO_NODES, NO_TIMES
    ids = np.array(sorted(members), dtype=np.intp)
    end = since[ids] + mean_s[ids]
    end = np.where(end > now, end, now + mean_s[ids])
    return ids, end - now


class IdleTimers:
    """Idle timers that outlive a zero-length job, as in the authors' controller.

    An idle node's timer starts when it becomes idle (its ``since``). The
    authors' controller keeps a node's timer until a pass that applies the
    idle timeout sees the node busy. An ICON pass with jobs still waiting does
    not apply it, so a node that runs a zero-length job started in such a pass
    is idle again at the next pass with its *old* timer. This class remembers
    those timers and, while any is pending, hands the controller (and the
    SNF+IPM fallback) a view whose ``since`` is an explicit array of timer
    starts (:meth:`~hpcpower.engine.cluster.ClusterView.with_idle_timers`;
    ``since`` of an idle node is read only as its timer start).

    Args:
        enabled: False when there is no idle timeout.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.start: dict[int, float] = {}
        self._kept: dict[int, float] = {}

    def view(self, view: SystemView) -> SystemView:
        """``view``, or a copy whose cluster shows the kept timers as ``since``."""
        if not self.enabled or not (self._kept or self.start):
            return view
        state = view.cluster.state
        for node, start in self._kept.items():
            if state[node] == IDLE:
                self.start[node] = start
        self._kept.clear()
        for node in [n for n in self.start if state[n] != IDLE]:
            del self.start[node]
        if not self.start:
            return view
        since = view.cluster.since.copy()
        for node, start in self.start.items():
            since[node] = start
        return replace(view, cluster=view.cluster.with_idle_timers(since))

    def after_pass(self, view: SystemView, decision: Decision, timeout_applied: bool) -> None:
        """Note the timers of nodes started in a pass that did not apply the timeout."""
        if not self.enabled or not decision.start:
            return
        since = view.cluster.since
        for _, nodes in decision.start:
            for node in np.asarray(nodes).tolist():
                if timeout_applied:
                    self.start.pop(node, None)
                else:
                    self._kept[node] = float(since[node])


class _Recorded:
    """An iterator over plan entries that keeps what was read (for ``Decision.plan``)."""

    def __init__(self, source) -> None:
        self._source = source
        self.made: list[Planned] = []

    def __iter__(self):
        for p in self._source:
            self.made.append(p)
            yield p


class _ModeTally:
    """The time spent with the latest pass in ICON mode, summed pass by pass.

    The segments are added in pass order, from each pass to the next, as a
    sum over the whole decision log would add them, so the share is the
    same to the bit.
    """

    __slots__ = ("last_s", "last_mode", "icon_s")

    def __init__(self) -> None:
        self.last_s = math.nan
        self.last_mode: str | None = None
        self.icon_s = 0.0

    def add(self, now: float, mode: str) -> None:
        if self.last_mode == "icon":
            self.icon_s += max(0.0, now - self.last_s)
        self.last_s = now
        self.last_mode = mode

    def share(self, span: float) -> float | None:
        """Share of ``[0, span]`` in ICON mode; ``None`` before any pass or for no span."""
        if self.last_mode is None or span <= 0:
            return None
        total = self.icon_s
        if self.last_mode == "icon":
            total += max(0.0, span - self.last_s)
        return total / span


def _reasons(note: dict[str, Any], decision: Decision) -> list[dict[str, Any]]:
    """The pass's mode and the reason of each command, as explanation records.

    A fallback pass carries SNF+IPM's own reasons; an ICON pass explains its
    commands by the spare target the optimiser chose.
    """
    why = list(decision.why or [])
    mode: dict[str, Any]
    if note["mode"] == "fallback":
        mode = {
            "action": "mode",
            "mode": "fallback",
            "because": f"workload screen rejected ({note['screen_reason']}): SNF+IPM decides",
        }
        return [mode, *why]
    target = note.get("target")
    spare = f"{note.get('spare')} ({note.get('spare_reason')})"
    mode = {
        "action": "mode",
        "mode": "icon",
        "target": target,
        "because": f"workload screen accepted: ICON mode; spare planning {spare}",
    }
    explained = {(r["action"], r.get("node")) for r in why}
    if target is None or target != target:  # NaN: no optimisation in this pass
        reason = f"ICON: {spare}"
    else:
        reason = f"ICON: keep {target:g} nodes ready (spare target)"
    commands = (("switch_on", decision.switch_on), ("switch_off", decision.switch_off))
    for action, switched in commands:
        for node in switched:
            if (action, int(node)) not in explained:
                why.append({"action": action, "node": int(node), "because": reason})
    for job, nodes in decision.start:
        why.append(
            {
                "action": "start",
                "job": job.name,
                "nodes": [int(n) for n in nodes],
                "because": "smallest need first: it fits on idle nodes now",
            }
        )
    return [mode, *why]
