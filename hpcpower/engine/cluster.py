"""Cluster mechanics: node power states, gang allocation, exact energy.

The cluster knows *how* things happen, never what should happen: it applies
state changes that policies asked for, refuses illegal ones loudly, and
integrates time per state at every change, so energy is exact (time × watts).

State lives in arrays indexed by node id (``state``, ``since``,
``time_in_state_s``) and in one set per state, so that policies can ask
"which nodes are idle" without scanning every node. Each node is a SimPy
process that sleeps until commanded, then runs its timed transition.
Policies see the cluster through a :class:`ClusterView`, whose arrays and
sets cannot be written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType

import numpy as np
import simpy

from hpcpower.engine.storage import Rows
from hpcpower.errors import IllegalTransition
from hpcpower.planning import gang as _gang
from hpcpower.platform import Platform
from hpcpower.states import (
    COMPUTING,
    IDLE,
    SLEEPING,
    STATE_LABELS,
    SWITCHING_OFF,
    SWITCHING_ON,
    TRANSITIONS,
    NodeState,
)

_LEGAL = frozenset((int(a), int(b)) for a, b in TRANSITIONS)
#: ``(job id, expected end)`` of a node without a job.
_NO_JOB = (-1, np.nan)


class Cluster:
    """All nodes of a platform, their states, and what they have consumed.

    Args:
        env: The simulation's SimPy environment.
        platform: Node types and power model.
        rng: Generator for transition durations (the simulation's own
            ``default_rng(seed)``; the workload is fixed before the run).
        initial_state: ``NodeState.IDLE`` (default, as in the paper) or
            ``NodeState.SLEEPING``.
        on_transition_end: Called with the node id when a switch-on or
            switch-off ends (the simulation uses it to call the controller).
        compiled: Move gangs with the compiled twin of
            :func:`hpcpower.planning.gang.move_gang`.

    Policies see it through :attr:`view`, a :class:`ClusterView` whose
    arrays, sets and mappings cannot be written.
    """

    def __init__(
        self,
        env: simpy.Environment,
        platform: Platform,
        rng: np.random.Generator,
        *,
        initial_state: NodeState = NodeState.IDLE,
        on_transition_end: Callable[[int], None] | None = None,
        compiled: bool = False,
    ) -> None:
        if initial_state not in (NodeState.IDLE, NodeState.SLEEPING):
            raise ValueError("initial_state must be IDLE or SLEEPING")
        self.env = env
        self.platform = platform
        self.rng = rng
        n = platform.n_nodes
        self.n_nodes = n
        self.power_w = platform.power_matrix()
        #: Idle power per node (a contiguous copy of one column of ``power_w``).
        self.idle_w = self.power_w[:, IDLE].copy()
        #: Switching-on and switching-off power per node (contiguous copies, for planners).
        self.switching_on_w = self.power_w[:, SWITCHING_ON].copy()
        self.switching_off_w = self.power_w[:, SWITCHING_OFF].copy()
        #: ``arange(n_nodes)``, shared by planners instead of rebuilt at every pass.
        self.ids = np.arange(n)
        self.ids.flags.writeable = False
        self.state = np.full(n, int(initial_state), dtype=np.int8)
        self.since = np.full(n, env.now, dtype=float)
        # Seconds per (state, node): one contiguous row per state, so that a
        # state change adds to a row with a 1-D index.
        self._seconds = np.zeros((5, n), dtype=float)
        #: Job id on each node, -1 when none.
        self.job_on = np.full(n, -1, dtype=np.int64)
        #: Start + requested walltime of the job on each node (nan when none):
        #: what a scheduler may assume about when a node frees up.
        self.expected_end_s = np.full(n, np.nan)
        #: Drawn end of the transition in progress (nan when none). Policies
        #: should plan with the mean duration; this is the mechanics' truth.
        self.transition_end_s = np.full(n, np.nan)
        types = [platform.node_type(i) for i in range(n)]
        self.switch_on_mean_s = np.array([t.switch_on.mean_s for t in types])
        self.switch_off_mean_s = np.array([t.switch_off.mean_s for t in types])
        self.speed = np.array([t.speed for t in types])
        #: True when every node computes at speed 1 (job duration = runtime).
        self.unit_speed = bool((self.speed == 1.0).all())
        self._on_models = [t.switch_on for t in types]
        self._off_models = [t.switch_off for t in types]
        everyone = range(n)
        self.idle = NodeSet(everyone if initial_state == NodeState.IDLE else ())
        self.sleeping = NodeSet(everyone if initial_state == NodeState.SLEEPING else ())
        self.switching_on = NodeSet()
        self.switching_off = NodeSet()
        # Idle node -> since, oldest first (see :attr:`idle_since`); ``None``
        # until first read, so that runs whose policy never reads it do not
        # keep it up to date.
        self._idle_since: dict[int, float] | None = None
        self._members = {
            IDLE: self.idle,
            SLEEPING: self.sleeping,
            SWITCHING_ON: self.switching_on,
            SWITCHING_OFF: self.switching_off,
        }
        self.counts = [0, 0, 0, 0, 0]
        self.counts[int(initial_state)] = n
        self.switch_ons = 0
        self.switch_offs = 0
        #: One row per timed transition: (node, to_state, start_s, end_s).
        self.transition_log = Rows("ibdd")  # (node ids fit a C int)
        self._on_transition_end = on_transition_end
        #: Called as ``on_state(t, nodes, old, new)`` at every change of state
        #: (``Simulation.on("node_state", ...)`` sets it); ``None``: nobody listens.
        self.on_state: Callable[[float, Sequence[int], int, int], None] | None = None
        self._compiled = compiled
        #: The arrays a release map is made from, as the planners take them:
        #: ``(state, since, expected_end_s, switch_on_mean_s,
        #: switch_off_mean_s, switching_on_w, switching_off_w, idle_w)``.
        self.node_arrays = (
            self.state,
            self.since,
            self.expected_end_s,
            self.switch_on_mean_s,
            self.switch_off_mean_s,
            self.switching_on_w,
            self.switching_off_w,
            self.idle_w,
        )
        # What a gang move changes (the arrays are changed in place, never replaced).
        self._gang_arrays = (
            self._seconds,
            self.since,
            self.state,
            self.job_on,
            self.expected_end_s,
        )
        self.nodes = [Node(self, i) for i in range(n)]
        self.view = ClusterView(self)

    @property
    def idle_since(self) -> dict[int, float]:
        """Idle nodes in the order they became idle, each with that time (its ``since``).

        The oldest first, so idle timeouts expire in this order; nodes that
        became idle at the same time may come in any order among
        themselves. Made from the state arrays when first read, then kept up
        to date at every state change (read-only for policies).
        """
        if self._idle_since is None:
            idle = np.flatnonzero(self.state == IDLE)
            idle = idle[np.argsort(self.since[idle], kind="stable")]
            self._idle_since = dict(zip(idle.tolist(), self.since[idle].tolist(), strict=True))
        return self._idle_since

    # ------------------------------------------------------------------ state
    def _move(self, node: int, new: int) -> None:
        now = self.env.now
        old = int(self.state[node])
        if (old, new) not in _LEGAL:
            raise IllegalTransition(
                f"node {node} cannot go from {STATE_LABELS[old]} to {STATE_LABELS[new]} "
                f"at t={now:g} s"
            )
        self._seconds[old, node] += now - self.since[node]
        self.since[node] = now
        self.state[node] = new
        self._book((node,), old, new, now)

    def _move_gang(
        self,
        gang: np.ndarray,
        listed: list[int],
        old: int,
        new: int,
        job: tuple[int, float],
        left: bool = False,
    ) -> None:
        """Move a gang's distinct nodes from ``old`` to ``new`` (``listed``: the same, as a list).

        ``job`` is ``(job id, expected end)`` to record on the nodes (``(-1,
        nan)`` for none). ``left``: the caller already took the nodes out of
        the set of ``old``. The arrays change by
        :func:`hpcpower.planning.gang.move_gang` or its compiled twin.
        """
        now = self.env.now
        if self._compiled:
            _gang.move_gang_jit(*self._gang_arrays, gang, now, (old, new), job)
        else:
            _gang.move_gang(*self._gang_arrays, gang, listed, now, (old, new), job)
        self._book(listed, old, new, now, left)

    def _book(self, listed, old: int, new: int, now: float, left: bool = False) -> None:
        """Keep the counts, the per-state sets and :attr:`idle_since` in step with a move.

        ``left``: the caller already took the nodes out of the set of ``old``.
        """
        if self.on_state is not None:
            self.on_state(now, listed, old, new)
        k = len(listed)
        counts = self.counts
        counts[old] -= k
        counts[new] += k
        members = self._members.get(old)
        if members is not None and not left:
            set.difference_update(members, listed)
        members = self._members.get(new)
        if members is not None:
            set.update(members, listed)
        idle_since = self._idle_since
        if idle_since is not None:
            if old == IDLE:
                for node in listed:
                    del idle_since[node]
            elif new == IDLE:
                idle_since.update(dict.fromkeys(listed, now))

    # --------------------------------------------------------------- commands
    def switch_on(self, node: int) -> float:
        """Start waking a sleeping node; returns the drawn duration in seconds."""
        self._check(node, SLEEPING, "switch on")
        self._move(node, SWITCHING_ON)
        duration = self._on_models[node].sample(self.rng)
        self._begin_transition(node, SWITCHING_ON, duration)
        self.switch_ons += 1
        return duration

    def switch_off(self, node: int) -> float:
        """Start powering down an idle node; returns the drawn duration in seconds."""
        self._check(node, IDLE, "switch off")
        self._move(node, SWITCHING_OFF)
        duration = self._off_models[node].sample(self.rng)
        self._begin_transition(node, SWITCHING_OFF, duration)
        self.switch_offs += 1
        return duration

    def _begin_transition(self, node: int, kind: int, duration: float) -> None:
        now = self.env.now
        self.transition_end_s[node] = now + duration
        self.transition_log.append((node, kind, now, now + duration))
        self.nodes[node].command.succeed(duration)

    def _transition_done(self, node: int) -> None:
        new = IDLE if self.state[node] == SWITCHING_ON else SLEEPING
        self._move(node, new)
        self.transition_end_s[node] = np.nan
        if self._on_transition_end is not None:
            self._on_transition_end(node)

    def allocate(
        self, job_id: int, nodes: Iterable[int], expected_end_s: float = np.nan
    ) -> np.ndarray:
        """Put idle ``nodes`` to work on ``job_id``; all must be idle and distinct.

        ``expected_end_s`` (start + walltime) is kept for planners.
        """
        if isinstance(nodes, np.ndarray):
            # The run keeps the gang to the end: its own copy, so that neither
            # a policy's later writes nor a view of a larger array reach it.
            gang = nodes.copy()
        else:
            # (Not fromiter with an integer dtype: it would cut 0.9 to node 0.)
            gang = np.array(list(nodes))
            if gang.dtype.kind in "iu":
                gang = gang.astype(np.intp, copy=False)
        if gang.dtype.kind not in "iu":
            raise IllegalTransition(f"job {job_id}: node ids must be integers, got {gang!r}")
        listed = gang.tolist()
        k = len(listed)
        # Taking the nodes out of the idle set checks them at once: it shrinks
        # by exactly k when all are idle and distinct.
        idle = self.idle
        before = len(idle)
        set.difference_update(idle, listed)
        if len(idle) != before - k or not k:
            n = self.n_nodes
            set.update(
                idle, (node for node in listed if 0 <= node < n and self.state[node] == IDLE)
            )
            raise self._bad_gang(job_id, listed)
        self._move_gang(gang, listed, IDLE, COMPUTING, (job_id, expected_end_s), left=True)
        # The run keeps the gang to the end, and policies see it in ``running``.
        gang.flags.writeable = False
        return gang

    def _bad_gang(self, job_id: int, listed: list[int]) -> IllegalTransition:
        """Why a gang cannot start a job (empty, unknown or busy node, duplicates)."""
        if not listed:
            return IllegalTransition(f"job {job_id}: cannot start on an empty set of nodes")
        for node in listed:
            reason = self._why_not(node, IDLE)
            if reason:
                return IllegalTransition(f"job {job_id} cannot start on node {node}: {reason}")
        return IllegalTransition(f"job {job_id}: node list has duplicates: {listed}")

    def release(self, job_id: int, gang: np.ndarray) -> None:
        """Return a finished job's nodes to idle."""
        self._move_gang(gang, gang.tolist(), COMPUTING, IDLE, _NO_JOB)

    def _check(self, node: int, expected: int, action: str) -> None:
        reason = self._why_not(node, expected)
        if reason:
            raise IllegalTransition(f"cannot {action} node {node}: {reason}")

    def _why_not(self, node: int, expected: int) -> str | None:
        """Why ``node`` is not a node in state ``expected`` (``None`` if it is)."""
        if not 0 <= node < self.n_nodes:
            return "no such node"
        if self.state[node] != expected:
            return (
                f"it is {STATE_LABELS[self.state[node]]}, not {STATE_LABELS[expected]}, "
                f"at t={self.env.now:g} s"
            )
        return None

    # ---------------------------------------------------------------- energy
    @property
    def time_in_state_s(self) -> np.ndarray:
        """Seconds each node spent in each state so far, shape ``(nodes, 5)``."""
        return self._seconds.T

    def close_books(self) -> None:
        """Account time in the current state of every node up to now (the end of the run)."""
        now = self.env.now
        idx = np.arange(self.n_nodes)
        self._seconds[self.state, idx] += now - self.since
        self.since[:] = now
        idle_since = self._idle_since
        if idle_since is not None:
            for node in idle_since:
                idle_since[node] = now

    # ------------------------------------------------------------- reading
    def describe_node(self, node: int) -> str:
        """One line about a node: state, since when, job."""
        state = STATE_LABELS[self.state[node]]
        text = f"<Node {node}: {state} since t={self.since[node]:.10g} s"
        if self.job_on[node] >= 0:
            text += f", job {self.job_on[node]}"
        if not np.isnan(self.transition_end_s[node]):
            text += f", until t={self.transition_end_s[node]:.10g} s"
        return text + ">"

    def __repr__(self) -> str:
        parts = ", ".join(f"{c} {STATE_LABELS[s]}" for s, c in enumerate(self.counts) if c)
        return f"<Cluster {self.platform.name} at t={self.env.now:.10g} s: {parts}>"

    def _repr_html_(self) -> str:
        from hpcpower._html import cluster_html

        title = f"{self.platform.name} at t={self.env.now:.10g} s"
        return cluster_html(self.state, self.counts, title)

    def counts_by_state(self) -> dict[str, int]:
        """Nodes in each state, by state name (``{"sleeping": 12, ...}``)."""
        return dict(zip(STATE_LABELS, self.counts, strict=True))


class Node:
    """The SimPy process of one node.

    It holds no state of its own (the cluster keeps every node's state in
    arrays). Each command (switch on, switch off) succeeds the node's
    ``command`` event with the drawn duration; the process then waits that
    long and reports the end of the transition to the cluster. A transition
    cannot be cancelled.
    """

    __slots__ = ("cluster", "id", "command", "process")

    def __init__(self, cluster: Cluster, node_id: int) -> None:
        self.cluster = cluster
        self.id = node_id
        env = cluster.env
        self.command: simpy.Event = env.event()
        self.process: simpy.Process = env.process(self._run(env))

    def _run(self, env: simpy.Environment):
        while True:
            duration = yield self.command
            yield env.timeout(duration)
            # Re-arm before reporting, so a command given at this same instant
            # (for example switch on right after switching off) finds a fresh event.
            self.command = env.event()
            self.cluster._transition_done(self.id)

    def __repr__(self) -> str:
        return self.cluster.describe_node(self.id)


def read_only(array: np.ndarray) -> np.ndarray:
    """A view of ``array`` that cannot be written (it still shows every change to ``array``)."""
    view = array.view()
    view.flags.writeable = False
    return view


def _refuse(self, *args, **kwargs):
    raise TypeError("a node set seen by a policy is read-only: return a Decision instead")


class NodeSet(set):
    """A set of node ids that only the cluster changes.

    Reading is a plain set's (membership, iteration, ``union``, ``-`` ...,
    all at C speed, returning plain sets); every public way of changing it
    raises ``TypeError``. The cluster changes it through ``set``'s own
    methods (``set.update(nodes, ...)``), which these do not hide.
    """

    __slots__ = ()

    add = discard = remove = pop = clear = update = _refuse
    difference_update = intersection_update = symmetric_difference_update = _refuse
    __ior__ = __iand__ = __isub__ = __ixor__ = _refuse


#: The cluster's arrays a policy sees (as read-only views).
_VIEW_ARRAYS = (
    "state",
    "since",
    "job_on",
    "expected_end_s",
    "transition_end_s",
    "power_w",
    "idle_w",
    "switching_on_w",
    "switching_off_w",
    "switch_on_mean_s",
    "switch_off_mean_s",
    "speed",
    "ids",
)


class ClusterView:
    """The cluster as a policy sees it: every array, set and mapping read-only and live.

    Attributes:
        state, since, job_on, expected_end_s, transition_end_s: Per-node
            state arrays (see :class:`Cluster`), read-only views that follow
            every change.
        power_w, idle_w, switching_on_w, switching_off_w, switch_on_mean_s,
            switch_off_mean_s, speed, ids: The power model per node.
        idle, sleeping, switching_on, switching_off: Node ids in each
            state (:class:`NodeSet`: read like a set, never changed).
        node_arrays: The arrays a release map is made from (see :class:`Cluster`).
        n_nodes: Number of nodes.
        unit_speed: True when every node computes at speed 1.
    """

    __slots__ = (
        "_cluster",
        "_idle_since",
        "platform",
        "n_nodes",
        "unit_speed",
        "node_arrays",
        "idle",
        "sleeping",
        "switching_on",
        "switching_off",
        *_VIEW_ARRAYS,
    )

    # The slots are filled by name in __init__; these declarations tell a
    # type checker what each holds (annotations alone make no class attribute).
    _cluster: Cluster
    _idle_since: MappingProxyType[int, float] | None
    platform: Platform
    n_nodes: int
    unit_speed: bool
    node_arrays: tuple[np.ndarray, ...]
    idle: NodeSet
    sleeping: NodeSet
    switching_on: NodeSet
    switching_off: NodeSet
    state: np.ndarray
    since: np.ndarray
    job_on: np.ndarray
    expected_end_s: np.ndarray
    transition_end_s: np.ndarray
    power_w: np.ndarray
    idle_w: np.ndarray
    switching_on_w: np.ndarray
    switching_off_w: np.ndarray
    switch_on_mean_s: np.ndarray
    switch_off_mean_s: np.ndarray
    speed: np.ndarray
    ids: np.ndarray

    def __init__(self, cluster: Cluster) -> None:
        put = object.__setattr__
        put(self, "_cluster", cluster)
        put(self, "_idle_since", None)
        put(self, "platform", cluster.platform)
        put(self, "n_nodes", cluster.n_nodes)
        put(self, "unit_speed", cluster.unit_speed)
        for name in _VIEW_ARRAYS:
            put(self, name, read_only(getattr(cluster, name)))
        put(self, "node_arrays", tuple(read_only(a) for a in cluster.node_arrays))
        for name in ("idle", "sleeping", "switching_on", "switching_off"):
            put(self, name, getattr(cluster, name))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"the cluster seen by a policy is read-only (cannot set {name!r})")

    @property
    def counts(self) -> tuple[int, int, int, int, int]:
        """Nodes in each state, indexed by :class:`~hpcpower.states.NodeState`."""
        sleeping, switching_on, idle, computing, switching_off = self._cluster.counts
        return (sleeping, switching_on, idle, computing, switching_off)

    @property
    def idle_since(self) -> Mapping[int, float]:
        """Idle nodes in the order they became idle, each with that time (see :class:`Cluster`)."""
        # The cluster keeps one dict from its first reading on: one proxy of it.
        proxy = self._idle_since
        if proxy is None:
            proxy = MappingProxyType(self._cluster.idle_since)
            object.__setattr__(self, "_idle_since", proxy)
        return proxy

    @property
    def time_in_state_s(self) -> np.ndarray:
        """Seconds each node spent in each state so far, shape ``(nodes, 5)``."""
        return read_only(self._cluster.time_in_state_s)

    @property
    def switch_ons(self) -> int:
        """Switch-ons commanded so far."""
        return self._cluster.switch_ons

    @property
    def switch_offs(self) -> int:
        """Switch-offs commanded so far."""
        return self._cluster.switch_offs

    def describe_node(self, node: int) -> str:
        """One line about a node: state, since when, job."""
        return self._cluster.describe_node(node)

    def with_idle_timers(self, timer_start_s: np.ndarray) -> ClusterView:
        """This view with ``since`` replaced by ``timer_start_s``, for a policy's own idle timers.

        ``since`` of an idle node is read by planners only as the start of
        its idle timer; a controller that keeps timers of its own (SNF-ICON,
        see :class:`~hpcpower.policies.icon.controller.IdleTimers`) hands its
        planners such a view. :attr:`idle_since` still shows the cluster's.
        """
        twin = object.__new__(ClusterView)
        for name in ClusterView.__slots__:
            object.__setattr__(twin, name, getattr(self, name))
        since = read_only(np.asarray(timer_start_s, dtype=float))
        object.__setattr__(twin, "since", since)
        object.__setattr__(twin, "node_arrays", (self.node_arrays[0], since, *self.node_arrays[2:]))
        return twin

    def __repr__(self) -> str:
        return repr(self._cluster)

    def _repr_html_(self) -> str:
        return self._cluster._repr_html_()

    def counts_by_state(self) -> dict[str, int]:
        """Nodes in each state, by state name (``{"sleeping": 12, ...}``)."""
        return self._cluster.counts_by_state()
