"""IPM, the idle-timeout power manager with wake planning (the paper's baseline).

* **Timeout**: a node idle for ``timeout_s`` seconds (measured from the instant
  it became idle) is switched off, unless the queue plan puts it under a job
  and an off-then-on cycle would not finish before that job's planned start.
* **Wake planning**: every sleeping node in the queue plan is woken at
  (planned start − its mean switch-on time); a node planned under several jobs
  keeps its earliest wake time. Wakes due now are issued now; later ones are
  requested as controller wake-ups and re-planned then.
* **Wake-ups requested**: the next timeout expiry, each future planned wake,
  and (while nodes sleep) each running job's walltime end minus the switch-on
  time, as the authors' simulator does.

Semantics follow the authors' ``base_psas.timeout_policy`` and
``_emit_wake_triggers_from_plan`` (see ``docs/background/baselines.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np

from hpcpower.errors import InputError
from hpcpower.planning import wakes as _wakes
from hpcpower.policies.base import Decision, PowerManager, Schedule, SystemView, sleeping_ids
from hpcpower.states import SLEEPING

EPS = 1e-9


class IPM(PowerManager):
    """Idle timeout plus wake planning for queued jobs.

    Args:
        timeout_s: Idle time after which a node is switched off (paper: 7200 s).
            ``None`` disables switching off (wake planning still works).
    """

    name = "ipm"

    def __init__(self, timeout_s: float | None = 7200.0) -> None:
        if timeout_s is not None and not timeout_s >= 0:
            raise InputError(f"policy.timeout_s must be a non-negative number, got {timeout_s!r}")
        self.timeout_s = None if timeout_s is None else float(timeout_s)

    def manage(self, view: SystemView, schedule: Schedule, decision: Decision) -> None:
        """Wake planned sleeping nodes in time; switch off expired idle nodes."""
        cluster = view.cluster
        now = view.now
        lead = cluster.switch_on_mean_s
        sleeping = cluster.sleeping
        starts = schedule.start

        # Idle nodes not starting a job in this pass, and which of them expired
        # (oldest idle first, then by id) or expire next.
        expired: list[int] = []
        next_expiry = None
        timeout_s = self.timeout_s
        if timeout_s is not None and (idle_since := cluster.idle_since):
            taken: set[int] = set()
            for planned in starts:
                taken.update(np.asarray(planned.nodes).tolist())
            expired, next_expiry = _expiries(idle_since, taken, timeout_s, now)

        # Only the first appearance in the plan of a sleeping node (its wake)
        # or of an expired idle node (its protection) matters, and planned
        # starts never decrease: read the plan until all of them appeared.
        # Sleeping nodes are woken in order of first appearance, at the
        # planned start minus their lead (with a zero lead: now, at once).
        # A plan holds only the jobs still waiting after this pass's starts:
        # with none (most passes of a short queue), no node appears in it.
        first_start: Mapping[int, float] = {}
        if (sleeping or expired) and len(view.queue) > len(starts):
            if expired or view.explain or not view.compiled:
                wanted: AbstractSet[int] | np.ndarray
                if view.compiled:
                    wanted = sleeping_ids(cluster)
                    if expired:
                        wanted = np.concatenate((wanted, expired))
                else:
                    wanted = sleeping.union(expired) if expired else sleeping
                first_start = schedule.first_appearances(wanted)
                plan_wakes(first_start, cluster.state, lead, now, decision)
            else:
                # Only the wakes read a compiled plan: made with it, no
                # Python between (the same nodes and times as plan_wakes;
                # the later times as Python floats).
                due, later = schedule.sleeping_wakes(cluster, now)
                if len(due):
                    decision.switch_on.extend(due.tolist())
                if len(later):
                    decision.call_at.extend(dict.fromkeys(later.tolist()))

        # Expired nodes are switched off in the order they became idle, so
        # that the duration draws happen in the authors' order.
        if expired:
            off = cluster.switch_off_mean_s
            for node in expired:
                first = first_start.get(node)
                if first is None or now + (off[node] + lead[node]) <= first:
                    decision.switch_off.append(node)
        if view.explain:
            decision.why = self._reasons(view, schedule, first_start, expired, decision)
        if next_expiry is not None:
            decision.call_at.append(next_expiry)

        # The authors' simulator re-plans when a sleeping node would have to
        # start waking for a running job's walltime end: each end is asked for
        # once, at the first pass that sees sleeping nodes while the job runs.
        pending = self._pending_ends
        if pending:
            for record in view.completed:
                pending.pop(record.job.id, None)
        for planned in starts:
            pending[planned.job.id] = now + planned.job.reqtime_s
        # (Nodes woken in this pass no longer count as sleeping, as in the
        # authors' order: wakes first, then these callbacks.)
        asleep = sleeping.difference(decision.switch_on) if pending and sleeping else ()
        if asleep:
            shift = float(lead[next(iter(asleep))])
            decision.call_at.extend(e - shift for e in pending.values() if e - shift > now)
            pending.clear()

    def _reasons(
        self,
        view: SystemView,
        schedule: Schedule,
        first_start: Mapping[int, float],
        expired: list[int],
        decision: Decision,
    ) -> list[dict[str, Any]]:
        """Why each node was switched off, woken or kept idle (for explanations)."""
        cluster = view.cluster
        now = view.now
        owner: dict[int, Any] = {}
        if first_start:
            wanted = set(first_start)
            for planned in schedule.iter_plan():
                for node in np.asarray(planned.nodes).tolist():
                    if node in wanted and node not in owner:
                        owner[node] = planned.job
                if len(owner) == len(wanted):
                    break
        idle_since = cluster.idle_since
        out: list[dict[str, Any]] = []
        off = set(decision.switch_off)
        for node in expired:
            since = idle_since[node]
            if node in off:
                out.append(
                    {
                        "action": "switch_off",
                        "node": node,
                        "idle_since_s": since,
                        "because": (
                            f"idle since t={since:.10g} s: {now - since:.10g} s >= "
                            f"timeout {self.timeout_s:.10g} s"
                        ),
                    }
                )
            else:
                job, start = owner[node], first_start[node]
                cycle = float(cluster.switch_off_mean_s[node] + cluster.switch_on_mean_s[node])
                out.append(
                    {
                        "action": "keep",
                        "node": node,
                        "job": job.name,
                        "start_s": start,
                        "because": (
                            f"timeout expired, but job {job.name} is planned on it at "
                            f"t={start:.10g} s, before an off-and-on cycle ({cycle:.10g} s) "
                            "would end"
                        ),
                    }
                )
        for node in decision.switch_on:
            job, start = owner[node], first_start[node]
            lead = float(cluster.switch_on_mean_s[node])
            out.append(
                {
                    "action": "switch_on",
                    "node": node,
                    "job": job.name,
                    "start_s": start,
                    "because": (
                        f"job {job.name} is planned on it at t={start:.10g} s and waking "
                        f"takes {lead:.10g} s on average"
                    ),
                }
            )
        return out

    def reset(self, cluster) -> None:
        """Forget the walltime ends of a previous run."""
        self._pending_ends: dict[int, float] = {}

    def config(self) -> dict[str, Any]:
        """Name and timeout."""
        return {"power": self.name, "timeout_s": self.timeout_s}


def plan_wakes(
    first_start: Mapping[int, float],
    state: np.ndarray,
    lead: np.ndarray,
    now: float,
    decision: Decision,
) -> None:
    """Wake the sleeping nodes of a plan in time and no sooner (IPM's wake rule).

    ``first_start`` maps nodes to their first planned start, in plan order
    (:meth:`~hpcpower.policies.base.Schedule.first_appearances`). Those
    whose ``state`` is sleeping are woken at ``start - lead`` (the mean
    switch-on time): due now (or past), the node is switched on in this pass,
    in plan order; later, a pass is asked for then, which plans again. Each
    later wake time is asked for once (many nodes of one planned job share it).
    (A compiled pass reads the same from
    :meth:`~hpcpower.policies.base.Schedule.sleeping_wakes`.)
    """
    later: list[float]
    if len(first_start) < _FEW:
        later = []
        for node, start in first_start.items():
            if state[node] == SLEEPING:
                wake = start - lead[node]
                if wake <= now + EPS:
                    decision.switch_on.append(node)
                else:
                    later.append(wake)
    else:  # the same rule, on arrays
        nodes = np.fromiter(first_start.keys(), dtype=np.int64, count=len(first_start))
        starts = np.fromiter(first_start.values(), dtype=float, count=len(first_start))
        due, wakes = _wakes.split_wakes(nodes, starts, state, lead, now)
        decision.switch_on.extend(due.tolist())
        later = wakes.tolist()
    if later:
        decision.call_at.extend(dict.fromkeys(later))


#: Below this many planned nodes, :func:`plan_wakes` loops in Python: cheaper than arrays.
_FEW = 16


def _expiries(
    idle_since: Mapping[int, float], taken: set[int], timeout_s: float, now: float
) -> tuple[list[int], float | None]:
    """Expired idle nodes (oldest idle first, then by id) and the next future expiry.

    ``idle_since`` lists the idle nodes in the order they became idle (the
    cluster's :attr:`~hpcpower.engine.cluster.ClusterView.idle_since`), so
    expiries never decrease along it and the scan stops at the first node
    not yet expired; nodes in ``taken`` (starting a job now) are skipped. A
    node expires at ``since + timeout_s`` and has expired when ``now`` is at
    or past that instant.
    """
    expired: list[tuple[float, int]] = []
    expiry: float | None
    for node, since in idle_since.items():
        if node in taken:
            continue
        expiry = since + timeout_s
        if now < expiry:
            break
        expired.append((since, node))
    else:
        expiry = None
    if expired:
        expired.sort()
        return [node for _, node in expired], expiry
    return [], expiry
