"""The power manager an agent drives: it asks a ``decide(observation, info)`` callable for actions.

One manager serves both training and deployment. In
:class:`hpcpower.rl.PowerEnv` the callable hands the observation to the
learner and waits for its action; in :class:`hpcpower.rl.AgentPolicy` it
calls a trained agent directly. So an agent meets exactly the same
observations, actions and timing in both.

At every controller pass, after the queue policy chose the jobs that start
now, the manager:

1. **plans wakes** (``wake_planning=True``, the default): every sleeping
   node in the queue policy's plan is woken at its planned start minus its
   mean switch-on time, and an idle node the plan needs before an off-and-on
   cycle could end is never switched off (IPM's rules; see
   :class:`~hpcpower.policies.power.ipm.IPM`). No job can then wait for
   ever, whatever the agent does;
2. at a **decision pass** (every pass, or the first pass at or after each
   multiple of ``decision_interval_s``) builds the observation and asks for
   an action;
3. **applies** it. With ``action="target"`` the action is a number ``k`` of
   *spare ready nodes*: idle or switching-on nodes that neither start a job
   now nor are claimed by the plan. Surplus idle spares are switched off,
   longest idle first; missing ones are woken from the sleeping nodes, lowest
   id first (nodes the plan does not use before those it does). The target
   holds until the next decision, so it is enforced at every pass. With
   ``action="per-node"`` the action says, per node, 0 leave, 1 switch on, 2
   switch off, applied once at the decision pass.

The manager also keeps the two running totals the reward is made of: the
energy spent in non-computing states and the job-seconds of waiting, both up
to the pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcpower.errors import InputError
from hpcpower.policies.base import Decision, PowerManager, QueuePolicy, Schedule, SystemView
from hpcpower.policies.power.ipm import plan_wakes
from hpcpower.rl.features import Observer, check_features
from hpcpower.states import COMPUTING

if TYPE_CHECKING:
    from hpcpower.engine.cluster import ClusterView

#: The action modes.
ACTIONS = ("target", "per-node")
#: Per-node action values.
LEAVE, SWITCH_ON, SWITCH_OFF = 0, 1, 2
#: What an illegal per-node action does: nothing (and is counted), or an error.
ILLEGAL = ("noop", "raise")
#: The queue policies an agent's power manager can be combined with.
SCHEDULERS = ("snf", "fcfs-easy")
EPS = 1e-9

#: ``decide(observation, info) -> action``.
Decide = Callable[[np.ndarray, dict[str, Any]], Any]


def make_queue_policy(scheduler: str, overrun_release: str = "never") -> QueuePolicy:
    """The queue policy named ``scheduler`` (``"snf"`` or ``"fcfs-easy"``).

    Raises:
        InputError: another name.
    """
    from hpcpower.policies.queue.fcfs_easy import FCFSEasy
    from hpcpower.policies.queue.snf import SNF

    if scheduler == "snf":
        return SNF(overrun_release)
    if scheduler == "fcfs-easy":
        return FCFSEasy(overrun_release)
    raise InputError(f"scheduler must be one of {', '.join(SCHEDULERS)}, got {scheduler!r}")


def check_settings(action: str, decision_interval_s: float | None, illegal: str) -> None:
    """Refuse an unknown action mode, a non-positive interval or an unknown ``illegal``."""
    if action not in ACTIONS:
        raise InputError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
    if decision_interval_s is not None and not (
        isinstance(decision_interval_s, (int, float)) and decision_interval_s > 0
    ):
        raise InputError(
            f"decision_interval_s must be a positive number of seconds or None, "
            f"got {decision_interval_s!r}"
        )
    if illegal not in ILLEGAL:
        raise InputError(f"illegal must be one of {', '.join(ILLEGAL)}, got {illegal!r}")


class AgentPowerManager(PowerManager):
    """A power manager whose decisions come from ``decide(observation, info)``.

    Args:
        decide: Called at every decision pass with the observation (a float32
            vector) and an info dict (``time_s``, ``action_mask`` for per-node
            actions, ``wasted_energy_j`` and ``waiting_s`` so far); returns the
            action: an int ``k`` (``"target"``) or one value per node
            (``"per-node"``).
        action: ``"target"`` or ``"per-node"`` (see the module).
        decision_interval_s: ``None``: decide at every controller pass;
            a number: at the first pass at or after each multiple of it (the
            manager asks the engine for a pass at each of them).
        features: Global observation features (all by default, see
            :data:`hpcpower.rl.features.GLOBAL_FEATURES`).
        wake_planning: Wake planned sleeping nodes and keep planned idle
            nodes on (IPM's rules); with ``False`` the agent alone decides.
        illegal: An illegal per-node action (switch on a node that is not
            sleeping, switch off one that is not idle or starts a job now):
            ``"noop"`` ignores it and counts it in ``illegal_actions``,
            ``"raise"`` raises :class:`~hpcpower.errors.InputError`.
    """

    name = "agent"

    def __init__(
        self,
        decide: Decide,
        *,
        action: str = "target",
        decision_interval_s: float | None = None,
        features: Sequence[str] | None = None,
        wake_planning: bool = True,
        illegal: str = "noop",
    ) -> None:
        check_settings(action, decision_interval_s, illegal)
        self.decide = decide
        self.action = action
        self.decision_interval_s = (
            None if decision_interval_s is None else float(decision_interval_s)
        )
        self.features = check_features(features, action)
        self.wake_planning = bool(wake_planning)
        #: A plan nobody reads is never made (see ``Combined``).
        self.reads_plan = self.wake_planning
        self.illegal = illegal
        self.observer = Observer(self.features, per_node=action == "per-node")
        # Node order for idle choices: by id (no idle timeout to rank them by).
        self.timeout_s = None
        self.n_nodes = 0
        self._waste_w: np.ndarray | None = None
        self._reset_counters()

    def _reset_counters(self) -> None:
        self.target = self.n_nodes
        self._next_k = 0
        self.started_wait_s = 0.0
        self.decisions = 0
        self.illegal_actions = 0

    def reset(self, cluster: ClusterView) -> None:
        """Prepare for a run on ``cluster``: no arrivals seen, the target all nodes."""
        self.n_nodes = cluster.n_nodes
        waste = np.array(cluster.power_w, dtype=float)
        waste[:, COMPUTING] = 0.0
        self._waste_w = waste
        self.observer.reset()
        self._reset_counters()

    # ------------------------------------------------------------ accounting
    def wasted_energy_j(self, cluster: ClusterView, now: float) -> float:
        """Energy spent in non-computing states from the start up to ``now`` (J)."""
        waste = self._waste_w
        assert waste is not None, "reset() first"
        closed = float((np.asarray(cluster.time_in_state_s) * waste).sum())
        state = np.asarray(cluster.state, dtype=np.intp)
        rate = waste[np.arange(len(state)), state]
        return closed + float(((now - np.asarray(cluster.since)) * rate).sum())

    def waiting_s(self, view: SystemView) -> float:
        """Job-seconds of waiting from the start up to this pass (before its starts)."""
        now = view.now
        return self.started_wait_s + sum(now - job.submit_s for job in view.queue.fcfs())

    # ---------------------------------------------------------------- passes
    def _is_decision(self, now: float) -> bool:
        interval = self.decision_interval_s
        if interval is None:
            return True
        if now + EPS < self._next_k * interval:
            return False
        k = max(self._next_k + 1, math.floor(now / interval) + 1)
        while k * interval <= now:
            k += 1
        self._next_k = k
        return True

    def manage(self, view: SystemView, schedule: Schedule, decision: Decision) -> None:
        """Plan wakes, ask the agent at decision passes, apply its action."""
        cluster = view.cluster
        now = view.now
        self.observer.record_arrivals(view)
        taken: set[int] = set()
        for planned in schedule.start:
            taken.update(np.asarray(planned.nodes).tolist())
        free = set(cluster.idle) - taken
        claimed = self._plan_wakes(view, schedule, decision, free) if self.wake_planning else set()

        deciding = self._is_decision(now)
        if deciding:
            mask = self.action_mask(view, taken) if self.action == "per-node" else None
            info: dict[str, Any] = {
                "time_s": float(now),
                "wasted_energy_j": self.wasted_energy_j(cluster, now),
                "waiting_s": self.waiting_s(view),
            }
            if mask is not None:
                info["action_mask"] = mask
            starting = {planned.job.id for planned in schedule.start}
            observation = self.observer.observe(view, starting, taken, self.target)
            chosen = self.decide(observation, info)
            self.decisions += 1
            if self.action == "target":
                self.target = self._check_target(chosen)
            else:
                assert mask is not None
                self._apply_per_node(chosen, mask, view, decision)
        for planned in schedule.start:
            self.started_wait_s += now - planned.job.submit_s
        if self.action == "target":
            self._hold_target(view, free, claimed, decision)
        if self.decision_interval_s is not None:
            decision.call_at.append(self._next_k * self.decision_interval_s)

    def _plan_wakes(
        self, view: SystemView, schedule: Schedule, decision: Decision, free: set[int]
    ) -> set[int]:
        """IPM's wake planning; returns the non-computing nodes the plan claims.

        Claimed: sleeping and switching-on nodes in the plan, and free idle
        nodes planned under a job before an off-and-on cycle could end.
        """
        cluster = view.cluster
        now = view.now
        sleeping = cluster.sleeping
        asked = set(sleeping) | free | set(cluster.switching_on)
        first = schedule.first_appearances(asked) if asked else {}
        lead = cluster.switch_on_mean_s
        off = cluster.switch_off_mean_s
        plan_wakes(first, cluster.state, lead, now, decision)  # IPM's wake rule
        claimed: set[int] = set()
        for node, start in first.items():
            if node in sleeping:
                claimed.add(node)
            elif node in free:
                if now + (off[node] + lead[node]) > start:
                    claimed.add(node)
            else:
                claimed.add(node)
        return claimed

    def _check_target(self, chosen: Any) -> int:
        value = np.asarray(chosen).reshape(-1)
        if value.size != 1 or not np.issubdtype(value.dtype, np.number):
            raise InputError(f"action 'target': expected one whole number, got {chosen!r}")
        k = int(value[0])
        if k != value[0] or not 0 <= k <= self.n_nodes:
            raise InputError(
                f"action 'target': expected a whole number of nodes in 0..{self.n_nodes}, "
                f"got {chosen!r}"
            )
        return k

    def _hold_target(
        self, view: SystemView, free: set[int], claimed: set[int], decision: Decision
    ) -> None:
        """Switch spare idle nodes off or wake sleeping ones until ``target`` are ready."""
        cluster = view.cluster
        spare_idle = free - claimed
        ready = len(spare_idle) + len(set(cluster.switching_on) - claimed)
        surplus = ready - self.target
        if surplus > 0 and spare_idle:
            oldest = [n for n in cluster.idle_since if n in spare_idle]
            decision.switch_off.extend(oldest[:surplus])
        elif surplus < 0:
            # (Nodes woken by the plan in this pass are claimed, not spares.)
            waking = set(decision.switch_on)
            asleep = [n for n in sorted(cluster.sleeping) if n not in waking]
            asleep.sort(key=lambda n: n in claimed)
            decision.switch_on.extend(asleep[:-surplus])

    # --------------------------------------------------------------- per node
    def action_mask(self, view: SystemView, taken: set[int]) -> np.ndarray:
        """Legal per-node actions, shape ``(nodes * 3,)``: leave, switch on, switch off per node.

        Leaving is always legal; switching on only a sleeping node; switching
        off only an idle node that does not start a job in this pass.
        """
        cluster = view.cluster
        n = cluster.n_nodes
        mask = np.zeros((n, 3), dtype=bool)
        mask[:, LEAVE] = True
        sleeping = list(cluster.sleeping)
        if sleeping:
            mask[sleeping, SWITCH_ON] = True
        free = [node for node in cluster.idle if node not in taken]
        if free:
            mask[free, SWITCH_OFF] = True
        return mask.reshape(-1)

    def _apply_per_node(
        self, chosen: Any, mask: np.ndarray, view: SystemView, decision: Decision
    ) -> None:
        n = view.cluster.n_nodes
        actions = np.asarray(chosen).reshape(-1)
        if actions.size != n:
            raise InputError(f"action 'per-node': expected {n} values, got {actions.size}")
        legal = mask.reshape(n, 3)
        waking = set(decision.switch_on)
        for node in np.flatnonzero(actions != LEAVE).tolist():
            value = int(actions[node])
            if value not in (SWITCH_ON, SWITCH_OFF) or not legal[node, value]:
                if self.illegal == "raise":
                    what = {SWITCH_ON: "switch on", SWITCH_OFF: "switch off"}.get(value)
                    raise InputError(
                        f"illegal action at t={view.now:g} s: "
                        + (
                            f"{what} node {node}, which is {view.cluster.describe_node(node)}"
                            if what
                            else f"value {value} for node {node} (0 leave, 1 on, 2 off)"
                        )
                    )
                self.illegal_actions += 1
                continue
            if value == SWITCH_ON:
                if node not in waking:
                    decision.switch_on.append(node)
            else:
                decision.switch_off.append(node)

    def config(self) -> dict[str, Any]:
        """The manager's settings."""
        return {
            "power": self.name,
            "action": self.action,
            "decision_interval_s": self.decision_interval_s,
            "wake_planning": self.wake_planning,
            "features": list(self.features),
        }
