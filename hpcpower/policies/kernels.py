"""Compiled planning kernels (optional: ``pip install "hpcpower[fast]"``).

The planners in :mod:`hpcpower.policies.planning` are written with numpy
array operations: clear, and fast on one large question, but each call costs
a few microseconds however small the arrays, and FCFS/EASY asks hundreds of
small questions per controller pass. With `numba <https://numba.pydata.org>`_
installed, each of its steps runs as one compiled function instead:

* :func:`idle_order`: the order in which jobs starting now take idle nodes;
* :func:`release_map`: every node's release time, pre-start energy and tie key;
* :func:`easy_pass`: the idle order, FCFS dispatch, the head's reservation
  and the jobs backfilled now;
* :func:`project`: the whole projection of the waiting jobs (conservative
  backfilling into the per-node timelines), and :func:`plan_later`, the
  same after reserving for the head when nothing else starts;
* :func:`first_appearances`: what IPM reads from such a plan;
* :func:`move_gang`: the engine's one compiled step, a gang's nodes changing state.

They compute *the same results, to the bit*: each follows the numpy code
step by step (same candidate starts, same float operations in the same
order, same tie-breaks; sorts and selections are written out, stable where
the numpy code is), and ``tests/policies/test_kernels.py`` runs both paths
at every pass and compares them.

Without numba everything still works, on the numpy path. Set the
environment variable ``HPCPOWER_KERNELS=numpy`` (or call :func:`use`) to
force the numpy path with numba installed, for instance to compare.

The first run compiles the kernels (about half a minute); the machine code
is cached on disk, so later runs start at once (:func:`cached`).
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import numpy as np

from hpcpower.errors import InputError

try:  # pragma: no cover - exercised only where numba is (not) installed
    import numba

    AVAILABLE = True
except ImportError:  # pragma: no cover
    numba = None
    AVAILABLE = False

#: ``HPCPOWER_KERNELS`` as set (``numba``, the default, or ``numpy``).
SETTING = os.environ.get("HPCPOWER_KERNELS", "numba")

#: Whether the planners use the compiled kernels (numba installed and not disabled).
ENABLED = AVAILABLE and SETTING.strip().lower() != "numpy"


def check_setting() -> None:
    """Refuse an ``HPCPOWER_KERNELS`` that is neither ``numba`` nor ``numpy`` (a typo).

    Called when a simulation is made, so that the command line reports it
    as one line, not as a traceback at import.
    """
    if SETTING.strip().lower() not in ("numba", "numpy"):
        raise InputError(
            f"environment variable HPCPOWER_KERNELS must be 'numba' or 'numpy', got {SETTING!r}"
        )


EPS = 1e-9
INF = np.inf


def timeout_arg(timeout_s: float | None) -> float:
    """An idle timeout as the kernels take it (nan for none)."""
    return np.nan if timeout_s is None else float(timeout_s)


@contextmanager
def use(enabled: bool):
    """Use the compiled kernels (``True``, if numba is installed) or numpy within a block."""
    global ENABLED
    before = ENABLED
    ENABLED = bool(enabled) and AVAILABLE
    try:
        yield ENABLED
    finally:
        ENABLED = before


def cached() -> bool:
    """Whether the kernels' machine code is on disk, so a run need not compile them first.

    ``True`` when the kernels are not in use, or when numba's cache cannot be
    inspected (a best guess, used only to tell the user about a pause).
    """
    if not ENABLED:
        return True
    try:
        kernels = (
            idle_order,
            release_map,
            easy_pass,
            plan_later,
            project,
            first_appearances,
            move_gang,
        )
        return all(os.path.exists(k._cache._cache_file._index_path) for k in kernels)
    except AttributeError:  # pragma: no cover - another numba's internals
        return True


def _jit(func):
    if numba is None:  # pragma: no cover
        return func
    return numba.njit(cache=True, nogil=True)(func)


# ------------------------------------------------------------- engine
@_jit
def move_gang(seconds, since, state, job_on, expected_end, gang, now, move, job):
    """A gang's nodes change state (``Cluster.allocate`` and ``release``), in one call.

    ``seconds`` is the cluster's (state, node) table of seconds; ``move`` is
    ``(old, new)``; ``job`` is ``(job id, expected end)`` recorded on the
    nodes. Each node adds ``now - since`` to its seconds in ``old``, exactly
    as the numpy update does.
    """
    old, new = move
    job_id, end = job
    for node in gang:
        seconds[old, node] += now - since[node]
        since[node] = now
        state[node] = new
        job_on[node] = job_id
        expected_end[node] = end


# ------------------------------------------------- sorting and selection
# Hand-written (numba compiles numpy's sort and partition slowly): a stable
# merge sort on two keys and a quickselect. Both give exactly what numpy's
# stable sorts and partitions give.


@_jit
def _argsort2(primary, secondary):
    """Stable order of positions by ``(primary, secondary)``."""
    m = len(primary)
    idx = np.arange(m)
    tmp = np.empty(m, dtype=np.int64)
    width = 1
    while width < m:
        lo = 0
        while lo < m:
            mid = min(lo + width, m)
            hi = min(lo + 2 * width, m)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                a = idx[i]
                b = idx[j]
                if primary[b] < primary[a] or (
                    primary[b] == primary[a] and secondary[b] < secondary[a]
                ):
                    tmp[k] = b
                    j += 1
                else:
                    tmp[k] = a
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = idx[i]
                i += 1
                k += 1
            while j < hi:
                tmp[k] = idx[j]
                j += 1
                k += 1
            lo = hi
        idx, tmp = tmp, idx
        width *= 2
    return idx


@_jit
def _kth(values, k):
    """The ``k``-th smallest value (0-based), as ``np.partition(values, k)[k]``."""
    return _kth_in_place(values.copy(), k)


@_jit
def _kth_in_place(a, k):
    """:func:`_kth`, reordering ``a`` itself."""
    lo = 0
    hi = len(a) - 1
    while lo < hi:
        pivot = a[(lo + hi) // 2]
        i = lo
        j = hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return a[k]
    return a[k]


# ------------------------------------------------------------ node choice
@_jit
def _order_small(primary, secondary):
    """:func:`_argsort2` by insertion (fewer allocations; for a few dozen values)."""
    m = len(primary)
    idx = np.empty(m, dtype=np.int64)
    for i in range(m):
        a = i
        j = i - 1
        while j >= 0:
            b = idx[j]
            if primary[a] < primary[b] or (
                primary[a] == primary[b] and secondary[a] < secondary[b]
            ):
                idx[j + 1] = b
                j -= 1
            else:
                break
        idx[j + 1] = a
    return idx


@_jit
def _order(primary, secondary):
    """Stable order of positions by ``(primary, secondary)``."""
    if len(primary) <= 32:
        return _order_small(primary, secondary)
    return _argsort2(primary, secondary)


@_jit
def _cheapest(r, cost, key):
    """Positions of the ``r`` smallest by ``(cost, key)``, in no particular order (keys distinct).

    Every cost below the ``r``-th smallest is taken, then the smallest keys
    among those tied at it; nothing is sorted.
    """
    m = len(cost)
    if m <= r:
        return np.arange(m)
    cut = _kth(cost, r - 1)
    n_below = 0
    n_tied = 0
    for i in range(m):
        if cost[i] < cut:
            n_below += 1
        elif cost[i] == cut:
            n_tied += 1
    out = np.empty(r, dtype=np.int64)
    tied = np.empty(n_tied, dtype=np.int64)
    tied_keys = np.empty(n_tied, dtype=np.int64)
    n_below = 0
    n_tied = 0
    for i in range(m):
        if cost[i] < cut:
            out[n_below] = i
            n_below += 1
        elif cost[i] == cut:
            tied[n_tied] = i
            tied_keys[n_tied] = key[i]
            n_tied += 1
    need = r - n_below
    last = _kth(tied_keys, need - 1) if n_tied > need else tied_keys.max()
    for j in range(n_tied):
        if tied_keys[j] <= last:
            out[n_below] = tied[j]
            n_below += 1
    return out


@_jit
def _cheapest_order(r, cost, key):
    """Positions of the ``r`` smallest by ``(cost, key)``, in that order (keys distinct).

    As :func:`hpcpower.policies.planning._cheapest_order`; only the ``r``
    chosen are sorted.
    """
    if len(cost) <= 32:
        return _order_small(cost, key)[:r]
    chosen = _cheapest(r, cost, key)
    return chosen[_order(cost[chosen], key[chosen])]


@_jit
def select(release, base_j, gap_w, tie_key, r, min_start):
    """:meth:`ReleaseMap.select` over every node: ``(nodes, start)``; empty nodes for ``None``."""
    return _select(release, base_j, gap_w, tie_key, r, min_start, True)


@_jit
def _select(release, base_j, gap_w, tie_key, r, min_start, ordered):
    """:func:`select`; with ``ordered`` false the nodes come in no particular order."""
    m = len(release)
    work = (np.empty(m), np.empty(m), np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64))
    return _select_in(release, base_j, gap_w, tie_key, r, min_start, ordered, work)


@_jit
def _select_in(release, base_j, gap_w, tie_key, r, min_start, ordered, work):
    """:func:`_select` working in ``work``: ``(floats, floats, ints, ints)``, one slot per node.

    The projection selects once per planned job and hands the same work
    arrays each time (allocations are a large part of its time).
    """
    m = len(release)
    if r > m:
        return np.empty(0, dtype=np.int64), np.nan
    copy, cost_buf, eligible_buf, key_buf = work
    if r < m:
        copy[:] = release
        kth = _kth_in_place(copy, r - 1)
    else:
        kth = release.max()
    if kth == INF:
        return np.empty(0, dtype=np.int64), np.nan
    start = min_start if min_start >= kth else kth
    k = 0
    for i in range(m):
        if release[i] <= start:
            k += 1
    eligible = eligible_buf[:k]
    cost = cost_buf[:k]
    key = key_buf[:k]
    k = 0
    for i in range(m):
        if release[i] <= start:
            eligible[k] = i
            cost[k] = base_j[i] + gap_w[i] * (start - release[i])
            key[k] = tie_key[i]
            k += 1
    if ordered:
        return eligible[_cheapest_order(r, cost, key)], start
    return eligible[_cheapest(r, cost, key)], start


@_jit
def idle_order(state, since, timeout_s, now):
    """:func:`hpcpower.policies.planning.idle_order` (``timeout_s`` nan for none)."""
    count = 0
    for s in state:
        if s == 2:
            count += 1
    idle = np.empty(count, dtype=np.int64)
    count = 0
    for node in range(len(state)):
        if state[node] == 2:
            idle[count] = node
            count += 1
    if np.isnan(timeout_s) or count < 2:
        return idle
    rank = np.empty(count)
    for k in range(count):
        rank[k] = -((since[idle[k]] + timeout_s) - now)
    # Stable: equal ranks keep id order.
    return idle[_order(rank, rank)]


@_jit
def release_map(now, nodes, overrun_inf, timeout_s, idle_nodes):
    """The arrays of :class:`ReleaseMap`: ``(release, base_j, no_gap, gap_w, tie_key)``.

    ``nodes`` holds the cluster's arrays ``(state, since, expected_end,
    on_mean, off_mean, on_w, off_w, idle_w)`` (see
    :func:`hpcpower.policies.planning.node_arrays`); ``timeout_s`` is nan for
    no timeout; ``idle_nodes`` the pass's :func:`idle_order` (read only when
    there is a timeout and two idle nodes).
    """
    state, since, expected_end, on_mean, off_mean, on_w, off_w, idle_w = nodes
    n = len(state)
    release = np.full(n, now)
    base = np.zeros(n)
    no_gap = np.zeros(n, dtype=np.bool_)
    gap_w = idle_w.copy()
    tie_key = np.empty(n, dtype=np.int64)
    n_idle = 0
    for node in range(n):
        s = state[node]
        if s == 3:  # computing
            end = expected_end[node]
            if overrun_inf:
                if end <= now:
                    end = INF
            elif not end >= now:
                end = now
            release[node] = end
            tie_key[node] = 1 * n + node
        elif s == 0:  # sleeping
            woken = now + on_mean[node]
            release[node] = woken
            base[node] = on_w[node] * (woken - now)
            no_gap[node] = True
            gap_w[node] = 0.0
            tie_key[node] = 3 * n + node
        elif s == 1:  # switching on
            end = since[node] + on_mean[node]
            if not end > now:
                end = now + on_mean[node]
            release[node] = end
            base[node] = on_w[node] * (end - now)
            tie_key[node] = 2 * n + node
        elif s == 4:  # switching off
            off_end = since[node] + off_mean[node]
            if not off_end > now:
                off_end = now + off_mean[node]
            woken = off_end + on_mean[node]
            release[node] = woken
            base[node] = off_w[node] * (off_end - now) + on_w[node] * (woken - off_end)
            no_gap[node] = True
            gap_w[node] = 0.0
            tie_key[node] = 3 * n + node
        else:  # idle
            tie_key[node] = node
            n_idle += 1
    if not np.isnan(timeout_s) and n_idle > 1:
        for k in range(len(idle_nodes)):
            tie_key[idle_nodes[k]] = k
    return release, base, no_gap, gap_w, tie_key


@_jit
def _without(values, count, taken):
    """Keep, in order, the first ``count`` values not ``taken``; returns the new count."""
    kept = 0
    for k in range(count):
        if not taken[values[k]]:
            values[kept] = values[k]
            kept += 1
    return kept


@_jit
def _take(values, count, r, out, taken):
    """Move the first ``r`` of ``count`` values to ``out``, marking them taken; new count."""
    out[:] = values[:r]
    values[: count - r] = values[r:count]
    for node in out:
        taken[node] = True
    return count - r


@_jit
def _occupied(release, now, started):
    """A copy of ``release`` with the nodes of the jobs starting now busy until their walltime.

    ``started`` is ``(nodes, ptr, walltimes)``: job ``k`` runs on
    ``nodes[ptr[k]:ptr[k + 1]]``.
    """
    rel = release.copy()
    _occupy(rel, now, started)
    return rel


@_jit
def _occupy(rel, now, started):
    """:func:`_occupied` in place."""
    started_nodes, started_ptr, started_req = started
    for k in range(len(started_req)):
        finish = now + started_req[k]
        for q in range(started_ptr[k], started_ptr[k + 1]):
            rel[started_nodes[q]] = finish


#: :func:`easy_pass` outcomes: every waiting job starts; nothing after the
#: head can start (plan later); the head is reserved for and later jobs backfilled.
ALL_START, PLAN_LATER, BACKFILLED = 0, 1, 2


@_jit
def easy_pass(now, nodes, timeout_s, queue):
    """One FCFS/EASY pass past its first test (``FCFSEasy.schedule``), in one call.

    ``nodes`` as for :func:`release_map`; ``queue`` the queue's column
    buffers ``(ids, res, walltimes, alive, used)`` (see
    :meth:`~hpcpower.engine.queue.JobQueue.slots`). The pass's
    :func:`idle_order`, then FCFS dispatch on it, then, unless every job
    started or no later job fits on the idle nodes left, :func:`_backfill`.

    Returns ``(k, m, outcome, h, c, head start, packed)``: ``k`` jobs
    dispatched (each on the next ``res`` nodes of the idle order), ``m`` idle
    nodes, ``outcome`` one of :data:`ALL_START`, :data:`PLAN_LATER`,
    :data:`BACKFILLED`, and for BACKFILLED the head's ``h`` nodes (``h`` 0
    when it cannot be placed) and ``c`` backfilled jobs. ``packed`` holds the
    integers ``[idle order (m), dispatched ids (k), head id, backfilled ids
    (c), head nodes (h), positions (c), ptr (c + 1), nodes]``: positions in
    the columns after the head, and job ``q``'s nodes ``nodes[ptr[q]:ptr[q + 1]]``.
    """
    ids_all, res_all, req_all, alive, slots = queue
    n_jobs = 0
    for q in range(slots):
        if alive[q]:
            n_jobs += 1
    ids = np.empty(n_jobs, dtype=np.int64)
    res = np.empty(n_jobs, dtype=np.int64)
    req = np.empty(n_jobs)
    n_jobs = 0
    for q in range(slots):
        if alive[q]:
            ids[n_jobs] = ids_all[q]
            res[n_jobs] = res_all[q]
            req[n_jobs] = req_all[q]
            n_jobs += 1
    order = idle_order(nodes[0], nodes[1], timeout_s, now)
    m = len(order)
    used = 0
    k = 0
    while k < n_jobs and res[k] <= m - used:
        used += res[k]
        k += 1
    if k == n_jobs:
        outcome = ALL_START
    else:
        outcome = PLAN_LATER
        for j in range(k + 1, n_jobs):
            if res[j] <= m - used:
                outcome = BACKFILLED
                break
    if outcome != BACKFILLED:
        packed = np.empty(m + k + 1, dtype=np.int64)
        packed[:m] = order
        packed[m : m + k] = ids[:k]
        packed[m + k] = ids[k] if k < n_jobs else -1
        return k, m, outcome, 0, 0, np.nan, packed
    ptr = np.zeros(k + 1, dtype=np.int64)
    for i in range(k):
        ptr[i + 1] = ptr[i] + res[i]
    h, c, head_start, core = _backfill(
        now,
        nodes,
        timeout_s,
        order,
        (order[:used], ptr, req[:k]),
        res[k],
        order[used:],
        res[k + 1 :],
        req[k + 1 :],
    )
    packed = np.empty(m + k + 1 + c + len(core), dtype=np.int64)
    packed[:m] = order
    packed[m : m + k] = ids[:k]
    packed[m + k] = ids[k]
    at = m + k + 1
    for q in range(c):
        packed[at + q] = ids[k + 1 + core[h + q]]
    packed[at + c :] = core
    return k, m, outcome, h, c, head_start, packed


@_jit
def _backfill(now, nodes, timeout_s, order, started, head_res, idle, later_res, later_req):
    """EASY's head reservation and backfilling of one pass (as ``FCFSEasy.schedule``).

    The release map is made here from the cluster arrays (as
    :func:`release_map`, with ``order`` the pass's idle order). ``idle``
    holds the idle nodes left after dispatch, in idle order; ``started`` the
    jobs starting now (as :func:`_occupied` takes them); ``later_*`` the
    columns of the jobs after the head, in arrival order.

    Returns ``(h, c, head start, packed)``, the integers packed in one
    array: ``[head nodes (h), positions (c), ptr (c + 1), nodes]``, the
    head's nodes (as a set: :func:`project` orders them), the positions in
    ``later_*`` of the ``c`` backfilled jobs, and their nodes
    (``nodes[ptr[k]:ptr[k + 1]]``); ``h`` is 0 when the head cannot be
    placed (then nothing is backfilled).
    """
    rel, base_j, _, gap_w, tie_key = release_map(now, nodes, True, timeout_s, order)
    _occupy(rel, now, started)  # (the release map is not needed otherwise)
    # (The head's nodes as a set: only the plan needs their order, and
    # :func:`project` puts them in order.)
    head, head_start = _select(rel, base_j, gap_w, tie_key, head_res, now, False)
    n_head = len(head)
    n_later = len(later_res)
    if n_head == 0:
        return 0, 0, head_start, np.zeros(1, dtype=np.int64)  # ptr = [0]
    # Room for everything: at most every later job backfilled, on at most
    # every idle node.
    packed = np.empty(n_head + 2 * n_later + 1 + len(idle), dtype=np.int64)
    packed[:n_head] = head
    positions = packed[n_head : n_head + n_later]
    buf = packed[n_head + 2 * n_later + 1 :]
    n = len(rel)
    reserved = np.zeros(n, dtype=np.bool_)
    reserved[head] = True
    taken = np.zeros(n, dtype=np.bool_)
    free = idle.copy()
    n_free = _without(free, len(free), reserved)
    rest = idle.copy()
    n_idle = len(rest)
    limit = head_start + EPS
    count = 0
    used = 0
    p = 0
    while p < n_later and n_idle > 0:
        # The first later job that fits on idle nodes outside the reservation,
        # or on idle nodes including reserved ones when it ends in time.
        j = p
        while j < n_later:
            r = later_res[j]
            if r <= n_free or (r <= n_idle and now + later_req[j] <= limit):
                break
            j += 1
        if j == n_later:
            break
        r = later_res[j]
        # Both runs keep the idle order; taking a prefix of one removes
        # scattered nodes from the other.
        if r <= n_free:
            n_free = _take(free, n_free, r, buf[used : used + r], taken)
            n_idle = _without(rest, n_idle, taken)
        else:
            n_idle = _take(rest, n_idle, r, buf[used : used + r], taken)
            n_free = _without(free, n_free, taken)
        positions[count] = j
        used += r
        count += 1
        p = j + 1
    # Close up: positions, then ptr, then the nodes.
    at = n_head + count
    packed[at] = 0
    for k in range(count):
        packed[at + k + 1] = packed[at + k] + later_res[positions[k]]
    at += count + 1
    # (Forwards, element by element: the target starts before the source.)
    for q in range(used):
        packed[at + q] = buf[q]
    return n_head, count, head_start, packed[: at + used]


# ------------------------------------------------------------- timelines
# Per node: free intervals [fa, fb) in slots 0 .. used-1 (emptied slots hold
# [inf, -inf)), and every segment (seg_s, seg_f) in the order it was added,
# for rebuilds. As :class:`hpcpower.policies.planning.Timelines`.


@_jit
def _widen(arr, fill, width):
    out = np.full((arr.shape[0], width), fill)
    out[:, : arr.shape[1]] = arr
    return out


@_jit
def _room(fa, fb, seg_s, seg_f, nseg):
    """Arrays wide enough for one more segment on any node.

    A node never has more free intervals than segments + 1, so segment slots
    for ``max(nseg) + 1`` and interval slots for one more suffice.
    """
    need = nseg.max() + 1
    if need <= seg_s.shape[1]:
        return fa, fb, seg_s, seg_f
    width = max(need, 2 * seg_s.shape[1])
    return (
        _widen(fa, INF, width + 1),
        _widen(fb, -INF, width + 1),
        _widen(seg_s, INF, width),
        _widen(seg_f, INF, width),
    )


@_jit
def _rebuild(fa, fb, used, seg_s, seg_f, nseg, node):
    """Recompute one node's free intervals from its segments (by start, stable)."""
    k = nseg[node]
    starts = seg_s[node, :k].copy()
    order = _argsort2(starts, starts)
    a_out = np.empty(k + 1)
    b_out = np.empty(k + 1)
    count = 0
    reach = -INF
    for j in range(k):
        s = seg_s[node, order[j]]
        f = seg_f[node, order[j]]
        if s > reach:
            a_out[count] = reach
            b_out[count] = s
            count += 1
        reach = reach if reach >= f else f
    if INF > reach:
        a_out[count] = reach
        b_out[count] = INF
        count += 1
    fa[node, :] = INF
    fb[node, :] = -INF
    fa[node, :count] = a_out[:count]
    fb[node, :count] = b_out[:count]
    used[node] = count


@_jit
def _add(fa, fb, used, seg_s, seg_f, nseg, irregular, nodes, start, finish):
    """Reserve ``nodes`` over ``[start, finish)`` (room made beforehand by :func:`_room`)."""
    for node in nodes:
        k = nseg[node]
        seg_s[node, k] = start
        seg_f[node, k] = finish
        nseg[node] = k + 1
        if finish < start:
            irregular[node] = True
        slot = -1
        for i in range(used[node]):
            if fa[node, i] <= start and start < fb[node, i]:
                slot = i
                break
        if slot < 0 or finish > fb[node, slot] or irregular[node]:
            _rebuild(fa, fb, used, seg_s, seg_f, nseg, node)
            continue
        a = fa[node, slot]
        b = fb[node, slot]
        if start > a:
            fb[node, slot] = start
            if not b > finish:
                continue
            slot = used[node]
            fa[node, slot] = finish
            fb[node, slot] = b
            used[node] = slot + 1
        elif b > finish:
            fa[node, slot] = finish
        else:
            fa[node, slot] = INF
            fb[node, slot] = -INF


@_jit
def _window_free(fa, fb, used, nodes, start, finish):
    """Whether every node is free at ``start`` and stays free until ``finish``."""
    for node in nodes:
        ok = False
        for i in range(used[node]):
            a = fa[node, i]
            b = fb[node, i]
            if a <= start and start < b and finish <= b + EPS:
                ok = True
                break
        if not ok:
            return False
    return True


@_jit
def _first_covered(lo, last, r):
    """The smallest interval start covered by ``r`` intervals ``[lo, last]`` (nan if none).

    That is the smallest value ``s`` of ``lo`` with ``#(lo <= s) - #(last <
    s) >= r``. The answer is usually one of the first few candidates, so
    they are tried in turn with one scan each; after that, both columns are
    sorted and the candidates swept in order (the same test, so the same
    answer).
    """
    count = len(lo)
    s = -INF
    for _ in range(12):
        found = False
        nxt = INF
        for q in range(count):
            v = lo[q]
            if v > s and (not found or v < nxt):
                nxt = v
                found = True
        if not found:
            return np.nan
        s = nxt
        covered = 0
        for q in range(count):
            if lo[q] <= s:
                covered += 1
            if last[q] < s:
                covered -= 1
        if covered >= r:
            return s
    lo_sorted = np.sort(lo)
    last_sorted = np.sort(last)
    j = 0  # intervals with last < s
    i = 0
    while i < count:
        s = lo_sorted[i]
        while i < count and lo_sorted[i] == s:
            i += 1
        while j < count and last_sorted[j] < s:
            j += 1
        if i - j >= r:
            return s
    return np.nan


@_jit
def _no_gap_found():
    """What :func:`_earliest` returns when no gap fits."""
    return np.empty(0, dtype=np.int64), np.nan


@_jit
def _earliest(
    fa, fb, used, r, walltime, min_start, max_start, base_j, no_gap, idle_w, tie_key, now, scratch
):
    """:meth:`Timelines.earliest` (``max_start`` nan: none): ``(nodes, start)``, empty if none.

    ``scratch`` is ``(floats (3, m), ints (m))`` to work in when the
    timelines hold at most ``m`` free intervals (else arrays are made):
    allocations are a large part of the projection's time.
    """
    bounded = not np.isnan(max_start)
    if bounded and min_start + EPS >= max_start:
        return _no_gap_found()
    n = fa.shape[0]
    if n < r:
        return _no_gap_found()
    total = 0
    for node in range(n):
        total += used[node]
    scratch_f, scratch_i = scratch
    if total <= len(scratch_i):
        lo_all = scratch_f[0]
        last_all = scratch_f[1]
        a_all = scratch_f[2]
        node_all = scratch_i
    else:
        lo_all = np.empty(total)
        last_all = np.empty(total)
        a_all = np.empty(total)
        node_all = np.empty(total, dtype=np.int64)
    count = 0
    for node in range(n):
        for i in range(used[node]):
            a = fa[node, i]
            b = fb[node, i]
            lo = a if a >= min_start else min_start
            last = b - walltime + EPS
            if not (b - lo > EPS and lo <= last):
                continue
            if bounded and not lo < max_start - EPS:
                continue
            cap = np.nextafter(b - EPS, -INF)
            lo_all[count] = lo
            last_all[count] = last if last <= cap else cap
            a_all[count] = a
            node_all[count] = node
            count += 1
    if count < r:
        return _no_gap_found()
    lo_all = lo_all[:count]
    last_all = last_all[:count]
    t = _first_covered(lo_all, last_all, r)
    if np.isnan(t):
        return _no_gap_found()
    m = 0
    for q in range(count):
        if lo_all[q] <= t and last_all[q] >= t:
            m += 1
    pick = np.empty(m, dtype=np.int64)
    cost = np.empty(m)
    m = 0
    for q in range(count):
        if lo_all[q] <= t and last_all[q] >= t:
            node = node_all[q]
            pick[m] = node
            if no_gap[node]:
                gap = 0.0
            else:
                since = a_all[q] if a_all[q] >= now else now
                idle_s = t - since
                gap = idle_w[node] * (idle_s if idle_s >= 0.0 else 0.0)
            cost[m] = base_j[node] + gap
            m += 1
    return pick[_cheapest_order(r, cost, tie_key[pick])], t


@_jit
def project(now, cluster, rm, started, head, rest):
    """The FCFS/EASY projection of one pass (``fcfs_easy._project``), all of it.

    ``cluster`` is ``(state, since, on_mean)``; ``rm`` the pass's
    :class:`ReleaseMap` arrays ``(release, base_j, gap_w, no_gap, idle_w,
    tie_key)`` before any job was placed; ``started`` the jobs starting now
    (as :func:`_occupied` takes them); ``head`` the head's reservation
    ``(nodes, start, walltime, dispatched)``, its nodes in any order, made
    after the first ``dispatched`` jobs of ``started`` (the later ones were
    backfilled after it); ``rest`` the columns ``(res, walltime)`` of the
    later jobs in arrival order.

    Returns ``(index, start, nodes, ptr)``: the placed jobs sorted by start
    (ties in placement order), ``index`` -1 for the head and else the job's
    position in ``rest``.
    """
    state, since, on_mean = cluster
    release, base_j, gap_w, no_gap, idle_w, tie_key = rm
    started_nodes, started_ptr, started_req = started
    head_nodes, head_start, head_req, dispatched = head
    rest_res, rest_req = rest
    n = len(state)
    # Release times after the jobs starting now, and the head's nodes in the
    # order its reservation chose them (by cost, then tie key, with the
    # release times it saw: after the dispatched jobs, before the backfilled
    # ones; the nodes may come as a set).
    rel = _occupied(release, now, started)
    seen = rel
    if dispatched < len(started_req):
        seen = _occupied(
            release,
            now,
            (started_nodes, started_ptr[: dispatched + 1], started_req[:dispatched]),
        )
    head_cost = base_j[head_nodes] + gap_w[head_nodes] * (head_start - seen[head_nodes])
    head_nodes = head_nodes[_order(head_cost, tie_key[head_nodes])]
    # Timelines at the start of the pass: at most one busy block per node.
    width = 4
    fa = np.full((n, width + 1), INF)
    fb = np.full((n, width + 1), -INF)
    seg_s = np.full((n, width), INF)
    seg_f = np.full((n, width), INF)
    nseg = np.zeros(n, dtype=np.int64)
    used = np.ones(n, dtype=np.int64)
    irregular = np.zeros(n, dtype=np.bool_)
    block_start = np.full(n, INF)
    block_end = np.full(n, INF)
    for node in range(n):
        s = state[node]
        if s == 0:  # sleeping
            seg_s[node, 0] = now
            seg_f[node, 0] = release[node]
            nseg[node] = 1
        elif s == 1 or s == 3:  # switching on, computing
            first = since[node]
            if s == 1 and not first <= now:
                first = now
            seg_s[node, 0] = first
            seg_f[node, 0] = release[node]
            nseg[node] = 1
        elif s == 4:  # switching off: the end of the off, then the wake
            first = since[node] if since[node] <= now else now
            off_end = release[node] - on_mean[node]
            seg_s[node, 0] = first
            seg_f[node, 0] = off_end
            seg_s[node, 1] = off_end
            seg_f[node, 1] = release[node]
            nseg[node] = 2
            block_start[node] = first if first <= off_end else off_end
            block_end[node] = off_end if off_end >= release[node] else release[node]
            continue
        else:
            continue
        block_start[node] = seg_s[node, 0]
        block_end[node] = seg_f[node, 0]
    for k in range(len(started_req)):
        finish = now + started_req[k]
        for node in started_nodes[started_ptr[k] : started_ptr[k + 1]]:
            seg_s[node, 0] = now
            seg_f[node, 0] = finish
            nseg[node] = 1
            block_start[node] = now
            block_end[node] = finish
    for node in range(n):
        fa[node, 0] = -INF
        fb[node, 0] = block_start[node]
        if block_end[node] < INF:
            fa[node, 1] = block_end[node]
            fb[node, 1] = INF
            used[node] = 2

    n_rest = len(rest_res)
    out_index = np.empty(n_rest + 1, dtype=np.int64)
    out_start = np.empty(n_rest + 1)
    # Nodes of placed job k in buf[ptr[k]:ptr[k + 1]], in placement order.
    buf = np.empty(len(head_nodes) + rest_res.sum(), dtype=np.int64)
    ptr = np.zeros(n_rest + 2, dtype=np.int64)

    head_end = head_start + head_req
    if not _window_free(fa, fb, used, head_nodes, head_start, head_end):
        return out_index[:0], out_start[:0], buf[:0], ptr[:1]
    _add(fa, fb, used, seg_s, seg_f, nseg, irregular, head_nodes, head_start, head_end)
    out_index[0] = -1
    out_start[0] = head_start
    buf[: len(head_nodes)] = head_nodes
    ptr[1] = len(head_nodes)
    count = 1

    # Room for the gap search: one slot per free interval (grown with the timelines).
    scratch = (np.empty((3, fa.size)), np.empty(fa.size, dtype=np.int64))

    # FCFS-forward plan seeded with the head's reservation.
    for node in head_nodes:
        rel[node] = head_end
    barrier = head_start
    work = (np.empty(n), np.empty(n), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64))
    for i in range(n_rest):
        res = rest_res[i]
        wall = rest_req[i]
        nodes, start = _select_in(rel, base_j, gap_w, tie_key, res, barrier, True, work)
        if len(nodes) == 0:
            break
        barrier = start
        for node in nodes:
            rel[node] = barrier + wall
        fa, fb, seg_s, seg_f = _room(fa, fb, seg_s, seg_f, nseg)
        if fa.size > len(scratch[1]):
            scratch = (np.empty((3, fa.size)), np.empty(fa.size, dtype=np.int64))
        # Place it on the timelines (as ``fcfs_easy._place``): in the earliest
        # gap that lets it start strictly earlier than its FCFS start, else on
        # its FCFS nodes and start if still free, else in the earliest gap after.
        got = nodes[:0]
        t = start
        if now + EPS < start:
            early, t_early = _earliest(
                fa, fb, used, res, wall, now, start, base_j, no_gap, idle_w, tie_key, now, scratch
            )
            if len(early) and t_early + EPS < start:
                got = early
                t = t_early
        if len(got) == 0:
            if _window_free(fa, fb, used, nodes, start, start + wall):
                got = nodes
                t = start
            else:
                got, t = _earliest(
                    fa,
                    fb,
                    used,
                    res,
                    wall,
                    start,
                    np.nan,
                    base_j,
                    no_gap,
                    idle_w,
                    tie_key,
                    now,
                    scratch,
                )
        if len(got) == 0:
            break
        _add(fa, fb, used, seg_s, seg_f, nseg, irregular, got, t, t + wall)
        out_index[count] = i
        out_start[count] = t
        buf[ptr[count] : ptr[count] + len(got)] = got
        ptr[count + 1] = ptr[count] + len(got)
        count += 1

    starts = out_start[:count].copy()
    order = _argsort2(starts, starts)
    out_nodes = np.empty(ptr[count], dtype=np.int64)
    out_ptr = np.zeros(count + 1, dtype=np.int64)
    pos = 0
    for j in range(count):
        k = order[j]
        size = ptr[k + 1] - ptr[k]
        out_nodes[pos : pos + size] = buf[ptr[k] : ptr[k + 1]]
        pos += size
        out_ptr[j + 1] = pos
    return out_index[:count][order], starts[order], out_nodes, out_ptr


@_jit
def first_appearances(nodes, ptr, wanted):
    """First appearance of each ``wanted`` node in a plan held as ``nodes``/``ptr``.

    Entry ``k`` of the plan uses ``nodes[ptr[k]:ptr[k + 1]]``. Returns
    ``(found, entry, read)``: the wanted nodes that appear, in order of first
    appearance, the entry of each, and how many entries were read (all, or up
    to the one where the last wanted node appeared).
    """
    size = 0
    for node in nodes:
        size = max(size, node + 1)
    missing = np.zeros(size, dtype=np.bool_)
    remaining = 0
    for node in wanted:
        if node < size and not missing[node]:
            missing[node] = True
            remaining += 1
    found = np.empty(remaining, dtype=np.int64)
    entry = np.empty(remaining, dtype=np.int64)
    count = 0
    n_entries = len(ptr) - 1
    if remaining < len(wanted):
        remaining = -1  # some wanted node is not in the plan at all: read it all
    for k in range(n_entries):
        for q in range(ptr[k], ptr[k + 1]):
            node = nodes[q]
            if missing[node]:
                missing[node] = False
                found[count] = node
                entry[count] = k
                count += 1
                remaining -= 1
        if remaining == 0:
            return found[:count], entry[:count], k + 1
    return found[:count], entry[:count], n_entries


@_jit
def plan_later(now, nodes, timeout_s, order, started, head_res, head_req, rest):
    """Reserve for the head and project the rest, when no later job can start now.

    One call for ``fcfs_easy._later`` and :func:`project`: the release map
    (as :func:`release_map` with ``order`` the pass's idle order), the
    head's reservation on it after the jobs starting now, then the
    projection. Returns :func:`project`'s arrays, or empty ones when the
    head cannot be placed.
    """
    state, since, _, on_mean, _, _, _, idle_w = nodes
    release, base_j, no_gap, gap_w, tie_key = release_map(now, nodes, True, timeout_s, order)
    rel = _occupied(release, now, started)
    head, head_start = select(rel, base_j, gap_w, tie_key, head_res, now)
    if len(head) == 0:
        return (
            np.empty(0, dtype=np.int64),
            np.empty(0),
            np.empty(0, dtype=np.int64),
            np.zeros(1, dtype=np.int64),
        )
    return project(
        now,
        (state, since, on_mean),
        (release, base_j, gap_w, no_gap, idle_w, tie_key),
        started,
        (head, head_start, head_req, len(started[2])),
        rest,
    )
