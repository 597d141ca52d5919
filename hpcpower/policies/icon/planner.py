"""ICON's queued jobs: dispatch, predicted releases, future-SNF plan, wakes (paper §III-B).

* **Dispatch** is SNF's: jobs in (nodes, walltime, arrival) order start on
  idle nodes while they fit, each taking the idle nodes with the longest
  remaining idle timeout, then lowest id. This is exactly
  :class:`~hpcpower.policies.queue.snf.SNF`'s dispatch, reused as is.
* **Release map**: the baseline :class:`~hpcpower.planning.release.ReleaseMap`
  (same release times, pre-start energies, state and timeout ranks), except
  that every running job — including those started in this pass — frees its
  nodes at ``now + predicted remaining time`` (Appendix A) instead of at its
  walltime end, so nodes of overrunning jobs stay plannable.
* **Future-SNF plan**: the remaining jobs in SNF order, each at the earliest
  start not before the barrier on the ``r`` nodes chosen by
  :meth:`ReleaseMap.select` (lowest pre-start non-compute energy plus idle
  gap; then state, remaining timeout, id), occupying them for its *predicted*
  duration (request × median ratio, where the baseline uses the request);
  the barrier moves to each planned start. This is SNF's own forward plan,
  :func:`~hpcpower.policies.queue.snf.plan_forward`, given the predicted
  duration.
* **Wakes**: a sleeping node planned under a job is woken at (planned start −
  its lead time), its earliest such time if planned several times; wakes
  due now are issued now in id order, later ones become controller wake-ups
  (the authors' ICON ``_emit_wake_triggers_from_plan``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from hpcpower.engine.contract import Planned, SystemView
from hpcpower.planning.release import ReleaseMap
from hpcpower.policies.queue.snf import SNF
from hpcpower.states import SLEEPING
from hpcpower.workload.job import Job

EPS = 1e-9


def dispatch(view: SystemView, timeout_s: float | None) -> list[Planned]:
    """Jobs that start now, by SNF's dispatch rule (the rest of the queue is not planned)."""
    return SNF().schedule(view, timeout_s).start


@dataclass(frozen=True)
class RunningPrediction:
    """Predicted release of one running job.

    Attributes:
        job: The job.
        nodes: Its nodes.
        elapsed_s: Time it has run.
        remaining_s: Predicted remaining time.
    """

    job: Job
    nodes: np.ndarray
    elapsed_s: float
    remaining_s: float


def prediction_release_map(
    view: SystemView, timeout_s: float | None, predictions: Iterable[RunningPrediction]
) -> ReleaseMap:
    """The baseline release map with running jobs released at their predicted end."""
    releases = ReleaseMap(
        view.cluster, view.now, timeout_s, overrun_release="now", compiled=view.compiled
    )
    now = view.now
    for p in predictions:
        releases.occupy(p.nodes, now + p.remaining_s)
    return releases


@dataclass
class WakePlan:
    """Wakes derived from a plan.

    Attributes:
        now: Sleeping nodes to wake now, by increasing id.
        later: Distinct future wake times, increasing.
        planned_jobs: Number of plan entries read.
        earliest: Earliest wake time per planned sleeping node.
    """

    now: list[int] = field(default_factory=list)
    later: list[float] = field(default_factory=list)
    planned_jobs: int = 0
    earliest: dict[int, float] = field(default_factory=dict)


def plan_wakes(
    plan: Iterable[Planned], state: np.ndarray, lead_s: np.ndarray, now: float
) -> WakePlan:
    """Wake times of the sleeping nodes (``state`` sleeping) a plan uses.

    Starts never decrease along a plan (its barrier moves to each planned
    start), so a node's first appearance gives its earliest wake; reading
    stops once every sleeping node has appeared.
    """
    out = WakePlan()
    asleep = state == SLEEPING  # (a copy: nodes leave it as they appear)
    left = int(np.count_nonzero(asleep))
    if not left:
        return out
    nodes: list[np.ndarray] = []
    wakes: list[np.ndarray] = []
    for planned in plan:
        out.planned_jobs += 1
        on = np.asarray(planned.nodes)
        found = on[asleep[on]]
        if len(found):
            asleep[found] = False
            nodes.append(found)
            wakes.append(planned.start_s - lead_s[found])
            left -= len(found)
            if not left:
                break
    if not nodes:
        return out
    node = np.concatenate(nodes)
    wake = np.concatenate(wakes)
    out.earliest = dict(zip(node.tolist(), wake.tolist(), strict=True))
    out.now = np.sort(node[wake <= now + EPS]).tolist()
    out.later = np.unique(wake[wake > now + EPS]).tolist()
    return out
