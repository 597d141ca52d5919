"""The forward plan of a queue in a given order, in one compiled call (SNF's plan).

:func:`hpcpower.policies.queue.snf.plan_forward` plans the waiting jobs one
by one on a :class:`~hpcpower.planning.release.ReleaseMap`: each job at
its earliest start not before a barrier that moves to each planned start,
holding its nodes for its walltime. :func:`forward_plan` is its compiled
twin for the common case (walltimes as holding times): the release map,
the nodes of the jobs starting now, and the plan, in one call with no
Python object per planned job.

A power manager usually needs only the first appearance of each sleeping
node in the plan (:meth:`~hpcpower.policies.base.Schedule.first_appearances`),
so the plan can stop as soon as every wanted node appeared: the entries
made up to there are the same as the whole plan's first entries.
:func:`forward_wakes` makes that plan for the sleeping nodes and splits
their wakes by IPM's rule in the same call (on 1152 nodes, under a line
profiler, IPM's read of a plan took 145 us with 81 us of it in the plan's
twin, and takes 104 us in one call: ``benchmarks/RESULTS.md``, Sitting 28).

:func:`forward_plan_lists` is the same plan in Python lists, for small
machines run without the twins (at most
:data:`~hpcpower.planning.release.LIST_NODES` nodes): there a loop over
every node costs less than the numpy calls of
:func:`~hpcpower.policies.queue.snf.plan_forward`, and it makes no
Python object per planned job either.
"""

from __future__ import annotations

import numpy as np

from hpcpower.planning._numba import kernel
from hpcpower.planning.common import SLEEPING
from hpcpower.planning.easy import _mark_first
from hpcpower.planning.release import (
    _nodes_in,
    idle_order_jit,
    release_lists,
    release_map,
    select_lists,
)
from hpcpower.planning.select import FEW_NODES, _select_in, key_order
from hpcpower.planning.wakes import split_wakes_jit


@kernel
def forward_plan(now, nodes, overrun_inf, timeout_s, idle_nodes, started, jobs, wanted, whole):
    """Plan ``jobs`` forward after the jobs starting now; stop once every wanted node appeared.

    Args:
        now: Time of the pass (the first barrier).
        nodes: The cluster's ``node_arrays`` (see :func:`release_map`).
        overrun_inf: Nodes of jobs past their walltime never release.
        timeout_s: Idle timeout (nan for none), for the idle tie-break.
        idle_nodes: The pass's idle order.
        started: ``(nodes, ptr, walltimes)`` of the jobs starting now
            (:func:`~hpcpower.planning.easy.started_columns`).
        jobs: ``(res, walltimes)`` of the jobs to plan, in planning order.
        wanted: Node ids whose first appearance is asked for.
        whole: Plan the whole queue (else stop once every wanted node appeared).

    Returns:
        ``(starts, flat, ptr, found, entry)``: entry ``k`` of the plan is
        job ``k`` of ``jobs`` at ``starts[k]`` on ``flat[ptr[k]:ptr[k + 1]]``,
        in the order the nodes were chosen; ``found`` the wanted nodes that
        appear, in order of first appearance, and ``entry`` the plan entry
        of each. The plan ends at the first job that cannot be placed, or
        after the entry where the last wanted node appeared.
    """
    release, base_j, _, gap_w, tie_key = release_map(now, nodes, overrun_inf, timeout_s, idle_nodes)
    run_nodes, run_ptr, run_walltimes = started
    for k in range(len(run_walltimes)):
        until = now + run_walltimes[k]
        for q in range(run_ptr[k], run_ptr[k + 1]):
            release[run_nodes[q]] = until
    res, walltimes = jobs
    n = len(release)
    n_jobs = len(res)
    # Which wanted nodes are still to be found.
    missing = np.zeros(n, dtype=np.bool_)
    remaining = 0
    for node in wanted:
        if 0 <= node < n and not missing[node]:
            missing[node] = True
            remaining += 1
    n_wanted = remaining
    if whole:
        remaining = -1  # never reaches 0: plan to the end
    elif remaining == 0:
        n_jobs = 0
    found = np.empty(n_wanted, dtype=np.int64)
    entry = np.empty(n_wanted, dtype=np.int64)
    n_found = 0
    starts = np.empty(n_jobs)
    ptr = np.zeros(n_jobs + 1, dtype=np.int64)
    flat = np.empty(max(16, 2 * n), dtype=np.int64)
    work = (np.empty(n), np.empty(n), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64))
    # The tie-key order of every node, made for the first job of more than
    # FEW_NODES nodes (fewer are chosen without it).
    by_key = np.empty(0, dtype=np.int64)
    barrier = now
    count = 0
    for j in range(n_jobs):
        if res[j] > FEW_NODES and not len(by_key):
            by_key = key_order(tie_key)
        picked, start = _select_in(
            release, base_j, gap_w, tie_key, by_key, res[j], barrier, True, work
        )
        r = len(picked)
        if r == 0:
            break
        at = ptr[j]
        if at + r > len(flat):
            grown = np.empty(2 * (at + r), dtype=np.int64)
            grown[:at] = flat[:at]
            flat = grown
        until = start + walltimes[j]
        for q in range(r):
            node = picked[q]
            flat[at + q] = node
            release[node] = until
        before = n_found
        n_found = _mark_first(flat, at, at + r, j, missing, found, entry, n_found)
        remaining -= n_found - before
        starts[j] = start
        ptr[j + 1] = at + r
        barrier = start
        count = j + 1
        if remaining == 0:
            break
    return starts[:count], flat[: ptr[count]], ptr[: count + 1], found[:n_found], entry[:n_found]


@kernel
def forward_wakes(now, nodes, overrun_inf, timeout_s, idle_nodes, started, jobs, lead, make_idle):
    """:func:`forward_plan` for the sleeping nodes, and IPM's wakes from it, in one call.

    The plan a power manager reads at most passes of a large machine: until
    every sleeping node appeared, then split by the wake rule
    (:func:`~hpcpower.planning.wakes.split_wakes_jit`). It is the same plan
    and the same wakes as those two twins called in turn with the sleeping
    nodes as ``wanted``; what it saves is the Python between them (the ids
    of the sleeping nodes, the idle order, and the starts of the nodes
    found).

    Args:
        now: Time of the pass (as :func:`forward_plan`).
        nodes: The cluster's ``node_arrays``.
        overrun_inf: Nodes of jobs past their walltime never release.
        timeout_s: Idle timeout (nan for none).
        idle_nodes: The pass's idle order (unread when ``make_idle``).
        started: The jobs starting now, as :func:`forward_plan` takes them.
        jobs: ``(res, walltimes)`` of the jobs to plan, in planning order.
        lead: Every node's mean switch-on time.
        make_idle: Make the idle order here
            (:func:`~hpcpower.planning.release.idle_order_jit`).

    Returns:
        ``(starts, flat, ptr, due, later, idle)``: the plan's entries as
        :func:`forward_plan` gives them, the sleeping nodes to wake now and
        the later wake times (as :func:`~hpcpower.planning.wakes.split_wakes_jit`
        gives them), and the idle order used.
    """
    state = nodes[0]
    if make_idle:
        idle_nodes = idle_order_jit(state, nodes[1], timeout_s, now)
    starts, flat, ptr, found, entry = forward_plan(
        now,
        nodes,
        overrun_inf,
        timeout_s,
        idle_nodes,
        started,
        jobs,
        _nodes_in(state, SLEEPING),
        False,
    )
    due, later = split_wakes_jit(found, starts[entry], state, lead, now)
    return starts, flat, ptr, due, later, idle_nodes


def forward_plan_lists(
    now, cluster, overrun_inf, timeout_s, idle_nodes, started, jobs, wanted, whole
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`forward_plan` on a release map in Python lists (the same plan, to the bit).

    Takes the arguments of :func:`forward_plan`, but the cluster (its view)
    instead of its ``node_arrays``, ``timeout_s`` as ``None`` for none, and
    ``started`` as ``(nodes, walltime_s)`` pairs; returns the same arrays.
    """
    now = float(now)
    lists = release_lists(now, cluster, overrun_inf, timeout_s is not None, idle_nodes)
    release = lists[0]
    for run_nodes, walltime in started:
        until = now + float(walltime)
        for node in np.asarray(run_nodes).tolist():
            release[node] = until
    res, walltimes = jobs
    n = len(release)
    missing = set()
    for node in np.asarray(wanted).tolist():
        if 0 <= node < n:
            missing.add(node)
    remaining = -1 if whole else len(missing)
    found: list[int] = []
    entry: list[int] = []
    starts: list[float] = []
    flat: list[int] = []
    ptr = [0]
    barrier = now
    if remaining:
        for j, (r, walltime) in enumerate(
            zip(np.asarray(res).tolist(), np.asarray(walltimes).tolist(), strict=True)
        ):
            pick = select_lists(lists, r, barrier)
            if pick is None:
                break
            nodes, start = pick
            until = start + walltime
            for node in nodes:
                release[node] = until
                if node in missing:
                    missing.discard(node)
                    found.append(node)
                    entry.append(j)
                    remaining -= 1
            flat.extend(nodes)
            starts.append(start)
            ptr.append(len(flat))
            barrier = start
            if remaining == 0:
                break
    return (
        np.array(starts, dtype=float),
        np.array(flat, dtype=np.int64),
        np.array(ptr, dtype=np.int64),
        np.array(found, dtype=np.int64),
        np.array(entry, dtype=np.int64),
    )
