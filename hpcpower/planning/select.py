"""Choosing the ``r`` cheapest nodes for a job: numpy form and compiled twins.

A job's nodes are the ``r`` cheapest by (cost, tie key), where the cost is
the pre-start energy plus idle power times the idle gap, and the tie key
orders nodes by state rank, remaining idle timeout and id (see
:mod:`.release`). :func:`cheapest_order` is the numpy form; the compiled
twins below include the sorts and selections they need, written out
(numba compiles numpy's sort and partition slowly) so that they give
exactly what numpy's stable sorts and partitions give. A plan's node
choice for a wide job reads the nodes in tie-key order (:func:`key_order`,
once per plan), so only the cost is left to sort by, and a job's few
distinct costs make long runs for the merge sort; a narrow job's choice
keeps its few best nodes in order as it reads them (:func:`_select_few`).
"""

from __future__ import annotations

import numpy as np

from hpcpower.planning._numba import kernel
from hpcpower.planning.common import INF


def cheapest_order(r: int, cost: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Positions of the ``r`` smallest by ``(cost, key)``, in that order (keys are distinct).

    With many candidates, a partition finds the ``r``-th cost; every smaller
    cost is taken, and ties at that cost are settled by key, so only ``r``
    entries are sorted.
    """
    m = len(cost)
    if m <= 4 * r or m <= 128:
        return np.lexsort((key, cost))[:r]
    cut = np.partition(cost, r - 1)[r - 1]
    below = np.flatnonzero(cost < cut)
    tied = np.flatnonzero(cost == cut)
    need = r - len(below)
    if len(tied) > need:
        tied = tied[np.argpartition(key[tied], need - 1)[:need]]
    chosen = np.concatenate((below, tied))
    return chosen[np.lexsort((key[chosen], cost[chosen]))]


# ------------------------------------------------- sorting and selection
# Hand-written (numba compiles numpy's sort and partition slowly): a stable
# merge sort on two keys and a quickselect. Both give exactly what numpy's
# stable sorts and partitions give.


@kernel
def _argsort2(primary, secondary):
    """Stable order of positions by ``(primary, secondary)``.

    A natural merge sort: the ascending runs already in the input are found
    first and merged pairwise, so an input made of a few sorted runs (the
    idle nodes, then the sleeping ones in id order, ...) takes a few passes.
    """
    m = len(primary)
    idx = np.arange(m)
    tmp = np.empty(m, dtype=np.int64)
    # Run boundaries: run q is [bounds[q], bounds[q + 1]).
    bounds = np.empty(m + 1, dtype=np.int64)
    n_runs = 0
    bounds[0] = 0
    for i in range(1, m):
        if primary[i] < primary[i - 1] or (
            primary[i] == primary[i - 1] and secondary[i] < secondary[i - 1]
        ):
            n_runs += 1
            bounds[n_runs] = i
    n_runs += 1
    bounds[n_runs] = m
    while n_runs > 1:
        merged = 0
        for q in range(0, n_runs, 2):
            lo = bounds[q]
            if q + 1 == n_runs:  # an odd run out: copied as it is
                for k in range(lo, m):
                    tmp[k] = idx[k]
                bounds[merged] = lo
                merged += 1
                break
            mid = bounds[q + 1]
            hi = bounds[q + 2]
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
            bounds[merged] = lo
            merged += 1
        bounds[merged] = m
        n_runs = merged
        idx, tmp = tmp, idx
    return idx


@kernel
def _kth(values, k):
    """The ``k``-th smallest value (0-based), as ``np.partition(values, k)[k]``."""
    return _kth_in_place(values.copy(), k)


@kernel
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
@kernel
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


@kernel
def _order(primary, secondary):
    """Stable order of positions by ``(primary, secondary)``."""
    if len(primary) <= 32:
        return _order_small(primary, secondary)
    return _argsort2(primary, secondary)


@kernel
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


@kernel
def cheapest_order_jit(r, cost, key):
    """Positions of the ``r`` smallest by ``(cost, key)``, in that order (keys distinct).

    As :func:`cheapest_order`; only the ``r`` chosen are sorted.
    """
    if len(cost) <= 32:
        return _order_small(cost, key)[:r]
    chosen = _cheapest(r, cost, key)
    return chosen[_order(cost[chosen], key[chosen])]


@kernel
def key_order(tie_key):
    """Node ids in increasing tie key (the keys are distinct and non-negative).

    One slot per key value (below four times the nodes for a release map's
    keys), so the order takes two passes and no comparison.
    """
    top = np.int64(0)
    for key in tie_key:
        if key > top:
            top = key
    slot = np.full(top + 1, -1, dtype=np.int64)
    for node in range(len(tie_key)):
        slot[tie_key[node]] = node
    out = np.empty(len(tie_key), dtype=np.int64)
    k = 0
    for node in slot:
        if node >= 0:
            out[k] = node
            k += 1
    return out


@kernel
def select_jit(release, base_j, gap_w, tie_key, r, min_start):
    """:meth:`ReleaseMap.select` over every node: ``(nodes, start)``; empty nodes for ``None``."""
    return _select(release, base_j, gap_w, tie_key, r, min_start, True)


@kernel
def _select(release, base_j, gap_w, tie_key, r, min_start, ordered):
    """:func:`select_jit`; with ``ordered`` false the nodes come in no particular order."""
    m = len(release)
    work = (np.empty(m), np.empty(m), np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64))
    return _select_in(release, base_j, gap_w, tie_key, _NO_ORDER, r, min_start, ordered, work)


#: No tie-key order: :func:`_select_in` reads the nodes by id.
_NO_ORDER = np.empty(0, dtype=np.int64)


@kernel
def _select_in(release, base_j, gap_w, tie_key, by_key, r, min_start, ordered, work):
    """:func:`_select` in ``work``: ``(floats, floats, ints, ints)``, one slot per node.

    A plan selects once per planned job, with the same tie keys and work
    arrays each time (allocations are a large part of its time), and hands
    the nodes in tie-key order (:func:`key_order`, made once per plan, for
    its first job of more than :data:`FEW_NODES`); a single choice hands no
    order (an empty ``by_key``). An ordered choice of at most
    :data:`FEW_NODES` nodes reads neither (:func:`_select_few`).

    In tie-key order, ties in cost are already in the order the tie-breaks
    give: of the ``r`` cheapest, those tied at the ``r``-th cost are the
    first ones read, and the cheaper ones need only a stable order by cost
    (few distinct costs, so long runs for the merge sort). Without the
    order, the nodes are read by id and the ``r`` chosen sorted by (cost,
    tie key), which costs less than ordering every node for one choice.
    """
    m = len(release)
    if r > m:
        return np.empty(0, dtype=np.int64), np.nan
    if ordered and 0 < r <= FEW_NODES:
        return _select_few(release, base_j, gap_w, tie_key, r, min_start)
    copy, cost_buf, eligible_buf, below_buf = work
    if r < m:
        copy[:] = release
        kth = _kth_in_place(copy, r - 1)
    else:
        kth = release.max()
    if kth == INF:
        return np.empty(0, dtype=np.int64), np.nan
    start = min_start if min_start >= kth else kth
    if not len(by_key):
        return _select_by_id(release, base_j, gap_w, tie_key, r, start, ordered, work)
    k = 0
    for node in by_key:
        rel = release[node]
        if rel <= start:
            eligible_buf[k] = node
            cost_buf[k] = base_j[node] + gap_w[node] * (start - rel)
            k += 1
    cost = cost_buf[:k]
    eligible = eligible_buf[:k]
    if k > r:
        scratch = copy[:k]
        scratch[:] = cost
        cut = _kth_in_place(scratch, r - 1)
    else:
        cut = INF  # (all k == r taken: no cost is inf)
    # Positions (in tie-key order) of the nodes cheaper than the cut.
    n_below = 0
    for i in range(k):
        if cost[i] < cut:
            below_buf[n_below] = i
            n_below += 1
    below = below_buf[:n_below]
    out = np.empty(r, dtype=np.int64)
    if ordered and n_below > 1:
        # Stable by cost: ``below`` itself is increasing, a valid second key.
        by_cost = _order(cost[below], below)
        for i in range(n_below):
            out[i] = eligible[below[by_cost[i]]]
    else:
        for i in range(n_below):
            out[i] = eligible[below[i]]
    q = n_below
    i = 0
    while q < r and i < k:
        if cost[i] == cut:
            out[q] = eligible[i]
            q += 1
        i += 1
    return out, start


#: Up to this many nodes, a choice reads the nodes twice and keeps the best
#: ones so far in order (:func:`_select_few`): no copy, partition or tie-key
#: order of every node, which on a large machine cost more than the reads.
FEW_NODES = 8


@kernel
def _select_few(release, base_j, gap_w, tie_key, r, min_start):
    """:func:`_select_in`'s ordered choice of ``1 <= r <= FEW_NODES`` of at least ``r`` nodes.

    The first read keeps the ``r`` smallest releases (the ``r``-th is the
    start, as the partition finds it); the second keeps the ``r`` smallest
    eligible nodes by ``(cost, tie key)``, in that order, the order the
    other paths give (keys are distinct, so the choice is the same). The
    cost is the same expression on the same values, so the same floats.
    """
    smallest = np.empty(r)
    held = 0
    for i in range(len(release)):
        x = release[i]
        if held < r:
            j = held
            held += 1
        elif x < smallest[r - 1]:
            j = r - 1
        else:
            continue
        while j > 0 and smallest[j - 1] > x:
            smallest[j] = smallest[j - 1]
            j -= 1
        smallest[j] = x
    kth = smallest[r - 1]
    if kth == INF:
        return np.empty(0, dtype=np.int64), np.nan
    start = min_start if min_start >= kth else kth
    cost = np.empty(r)
    key = np.empty(r, dtype=np.int64)
    out = np.empty(r, dtype=np.int64)
    held = 0
    for node in range(len(release)):
        rel = release[node]
        if not rel <= start:
            continue
        c = base_j[node] + gap_w[node] * (start - rel)
        k = tie_key[node]
        if held < r:
            j = held
            held += 1
        elif c < cost[r - 1] or (c == cost[r - 1] and k < key[r - 1]):
            j = r - 1
        else:
            continue
        while j > 0 and (cost[j - 1] > c or (cost[j - 1] == c and key[j - 1] > k)):
            cost[j] = cost[j - 1]
            key[j] = key[j - 1]
            out[j] = out[j - 1]
            j -= 1
        cost[j] = c
        key[j] = k
        out[j] = node
    return out, start


@kernel
def _select_by_id(release, base_j, gap_w, tie_key, r, start, ordered, work):
    """:func:`_select_in`'s choice at ``start`` without a tie-key order: by id, then sorted."""
    _, cost_buf, eligible_buf, key_buf = work
    k = 0
    for i in range(len(release)):
        if release[i] <= start:
            eligible_buf[k] = i
            cost_buf[k] = base_j[i] + gap_w[i] * (start - release[i])
            key_buf[k] = tie_key[i]
            k += 1
    eligible = eligible_buf[:k]
    cost = cost_buf[:k]
    key = key_buf[:k]
    if ordered:
        return eligible[cheapest_order_jit(r, cost, key)], start
    return eligible[_cheapest(r, cost, key)], start
