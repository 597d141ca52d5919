"""Write results to files: ``summary.json`` and Batsim's outputs, optionally Parquet tables.

The CSV files follow Batsim's output so that evalys and Batsim users can
read them: job times in seconds, allocations as interval sets (``0-3 8``),
machine states as counts per state whenever they change. With
``parquet=True`` the tables of :meth:`Results.to_pandas` are also written as
Parquet files (``jobs``, ``nodes``, ``states``, ``decisions``), each carrying
the run's summary in its metadata under ``hpcpower.summary``.
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from hpcpower.engine.decisionlog import DecisionLog
from hpcpower.engine.storage import CountRows
from hpcpower.errors import InputError, require
from hpcpower.results._memory import release_free_memory
from hpcpower.results.records import Results, _without_spans, block_starts
from hpcpower.states import COMPUTING, STATE_CODES, STATE_LABELS, NodeState

JOBS_COLUMNS = (
    "job_id",
    "workload_name",
    "profile",
    "submission_time",
    "requested_number_of_resources",
    "requested_time",
    "success",
    "final_state",
    "starting_time",
    "execution_time",
    "finish_time",
    "waiting_time",
    "turnaround_time",
    "stretch",
    "allocated_resources",
    "consumed_energy",
    "metadata",
)

MACHINE_COLUMNS = (
    "time",
    "nb_sleeping",
    "nb_switching_on",
    "nb_switching_off",
    "nb_idle",
    "nb_computing",
)


def interval_set(nodes: np.ndarray | None) -> str:
    """Batsim interval-set notation of node ids: ``[0, 1, 2, 5] -> "0-2 5"``."""
    if nodes is None or len(nodes) == 0:
        return ""
    return _interval_sets(np.array([len(nodes)]), np.asarray(nodes))[0]


def _num(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return repr(float(x)) if not float(x).is_integer() else str(int(x))


def _num_texts(values: np.ndarray) -> list[str]:
    """:func:`_num` of each value of a number array (whole numbers as ints, NaN empty)."""
    values = np.asarray(values)
    if values.dtype.kind in "biu":  # (exact, as _num writes them; a bool as 1 or 0)
        return list(map(str, map(int, values.tolist())))
    if values.dtype.kind != "f":
        return list(map(_num, values.tolist()))
    values = values.astype(float, copy=False)
    whole = np.isfinite(values) & (values == np.trunc(values)) & (np.abs(values) < 2.0**63)
    texts = np.empty(len(values), dtype=object)
    texts[whole] = list(map(str, values[whole].astype(np.int64).tolist()))
    rest = ~whole
    if rest.any():
        # Fractions and infinities as their repr; then NaN empty, and whole
        # numbers past int64 as Python ints write them (as _num does).
        others = values[rest]
        made = np.array(list(map(float.__repr__, others.tolist())), dtype=object)
        made[np.isnan(others)] = ""
        huge = np.flatnonzero(np.isfinite(others) & (others == np.trunc(others)))
        made[huge] = [str(int(x)) for x in others[huge].tolist()]
        texts[rest] = made
    return texts.tolist()


#: Node ids :func:`_interval_sets` handles at once (bounded temporary arrays).
_IDS_AT_ONCE = 1 << 20


def _interval_sets(sizes: np.ndarray, nodes: np.ndarray, *, ordered: bool = False) -> list[str]:
    """:func:`interval_set` of each group of ``nodes``; group ``i`` holds the next ``sizes[i]``.

    ``ordered``: the ids of each group are already increasing. No array is
    made per group, so this is the way to write a whole trace's allocations.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    ends = np.cumsum(sizes)
    out: list[str] = []
    low = 0
    while low < len(sizes):
        # The groups up to about _IDS_AT_ONCE ids (at least one group).
        first = int(ends[low] - sizes[low])
        high = max(low + 1, int(np.searchsorted(ends, first + _IDS_AT_ONCE, side="right")))
        count = sizes[low:high]
        ids = np.asarray(nodes[first : int(ends[high - 1])], dtype=np.int64)
        group = np.repeat(np.arange(high - low, dtype=np.int64), count)
        if not ordered and len(ids):
            # One sort of (group, id) keys: ids in increasing order within each group.
            width = int(ids.max()) + 1
            ids = np.sort(group * width + ids) - group * width
        # A run of consecutive ids begins a group or follows a gap.
        head = np.ones(len(ids), dtype=bool)
        head[1:] = (ids[1:] != ids[:-1] + 1) | (group[1:] != group[:-1])
        heads = np.flatnonzero(head)
        lasts = np.empty_like(heads)
        lasts[:-1] = heads[1:] - 1
        lasts[-1:] = len(ids) - 1
        runs = [
            f"{a}-{b}" if b > a else str(a)
            for a, b in zip(ids[heads].tolist(), ids[lasts].tolist(), strict=True)
        ]
        per_group = np.bincount(group[heads], minlength=high - low)
        stop = np.cumsum(per_group).tolist()
        out.extend(
            " ".join(runs[end - k : end]) for k, end in zip(per_group.tolist(), stop, strict=True)
        )
        low = high
    return out


def _gang_sums(
    values: np.ndarray, sizes: np.ndarray, nodes: np.ndarray, which: np.ndarray | None = None
) -> np.ndarray:
    """``values[gang].sum()`` of each gang (``sizes`` and flat ``nodes``), bit for bit.

    ``which``: the gangs to sum (a mask; all when ``None``), read in place
    from ``nodes`` (no copy of the ids of those gangs). When every node has
    the same value, a gang's sum depends only on its size: numpy's sum of
    that many copies, made once per size, without reading the ids.
    Otherwise each gang is summed alone.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    picked = sizes if which is None else sizes[which]
    if len(values) and np.all(values == values[0]):
        distinct = np.unique(picked)
        by_size = np.array([np.full(int(k), values[0]).sum() for k in distinct.tolist()])
        return by_size[np.searchsorted(distinct, picked)]
    ends = np.cumsum(sizes)
    if which is not None:
        ends = ends[which]
    return np.array(
        [
            values[nodes[end - k : end]].sum()
            for k, end in zip(picked.tolist(), ends.tolist(), strict=True)
        ],
        dtype=float,
    )


def _power_model(results: Results) -> np.ndarray:
    """Watts per (node, state) of ``results``; an error for results built without them."""
    if results.power_w is None:
        raise ValueError("these results have no power model (power_w); Results.from_record sets it")
    return results.power_w


def write_jobs_csv(results: Results, path: str | Path) -> None:
    """Write the Batsim-style ``jobs.csv`` (one row per submitted job)."""
    t = results._job_metrics()
    run = t["finish_s"] - t["start_s"]
    completed = t["state"] == "completed"
    # A job's energy: its nodes' computing power times its run (completed jobs only).
    node_power = _power_model(results)[:, COMPUTING]
    counts = results.allocation_sizes()
    done = completed & results._allocated(counts)
    killed = t["killed"].astype(bool)
    final = [_FINAL_STATES[state] for state in t["state"].tolist()]
    for k in np.flatnonzero(killed).tolist():
        final[k] = "COMPLETED_WALLTIME_REACHED"
    success = (completed & ~killed).astype(np.int8)

    def rows(low: int, high: int) -> tuple:
        # (The rows' allocations only: a whole trace's ids are never held at once.)
        sizes, gangs = results.allocation_arrays(low, high)
        energy = np.full(high - low, math.nan)
        ended = done[low:high]
        energy[ended] = _gang_sums(node_power, sizes, gangs, ended) * run[low:high][ended]
        return (
            t["name"][low:high].tolist(),
            itertools.repeat("w0", high - low),
            t["profile"][low:high].tolist(),
            _num_texts(t["submit_s"][low:high]),
            np.asarray(t["res"][low:high]).astype(np.int64).tolist(),
            _num_texts(t["reqtime_s"][low:high]),
            success[low:high].tolist(),
            final[low:high],
            _num_texts(t["start_s"][low:high]),
            _num_texts(run[low:high]),
            _num_texts(t["finish_s"][low:high]),
            _num_texts(t["wait_s"][low:high]),
            _num_texts(t["turnaround_s"][low:high]),
            _num_texts(t["slowdown"][low:high]),
            _interval_sets(sizes, gangs),
            _num_texts(energy),
            itertools.repeat("", high - low),
        )

    # (Blocks of jobs holding about _GANG_IDS_AT_ONCE node ids: a block's
    # allocations and their text are the step's largest temporaries.)
    _write_csv(
        path,
        JOBS_COLUMNS,
        len(run),
        rows,
        blocks=block_starts(np.cumsum(counts), _GANG_IDS_AT_ONCE, _ROWS_AT_ONCE),
    )


#: Rows of a CSV file made into text at once (bounded memory on whole traces).
_ROWS_AT_ONCE = 1 << 14
#: Node ids of the jobs' allocations made into text at once (about 10 MB of temporaries).
_GANG_IDS_AT_ONCE = 1 << 18


def _write_csv(
    path: str | Path,
    header: Sequence[str],
    n_rows: int,
    rows,
    *,
    plain: bool = False,
    blocks: Sequence[int] | None = None,
) -> None:
    """Write a CSV file whose rows ``low:high`` are the columns ``rows(low, high)`` (as text).

    The rows are made into text a block at a time, so that a whole trace's
    file never has all its text in memory at once: blocks of
    ``_ROWS_AT_ONCE`` rows, or those beginning at each of ``blocks`` (the
    row count last). ``plain``: every field is a string that ``csv`` writes
    as it is (numbers, interval sets, with two columns or more), so the
    lines are joined directly: the same text.
    """
    if blocks is None:
        blocks = [*range(0, n_rows, _ROWS_AT_ONCE), n_rows]
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for low, high in itertools.pairwise(blocks):
            if plain:
                fh.write("\r\n".join(map(",".join, zip(*rows(low, high), strict=True))))
                fh.write("\r\n")
            else:
                writer.writerows(zip(*rows(low, high), strict=True))


#: Batsim's final state of a job in each of hpcpower's job states.
_FINAL_STATES = {
    "completed": "COMPLETED_SUCCESSFULLY",
    "rejected": "REJECTED",
    "waiting": "SUBMITTED",
    "not_submitted": "NOT_SUBMITTED",
    "running": "RUNNING",
}


def write_machine_states_csv(results: Results, path: str | Path) -> None:
    """Write the Batsim-style ``machine_states.csv`` (state counts when they change)."""
    if isinstance(results.state_counts, CountRows):  # (a run's own rows, read in place)
        times, *counts = results.state_counts.views()
        # The rows hold sleeping, switching on, idle, computing, switching
        # off; Batsim's columns put switching off third.
        columns = [counts[k] for k in (0, 1, 4, 2, 3)]

        def rows(low: int, high: int) -> tuple:
            return (_num_texts(times[low:high]), *(_num_texts(c[low:high]) for c in columns))

        _write_csv(path, MACHINE_COLUMNS, len(times), rows, plain=True)
        return
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(MACHINE_COLUMNS)
        for time_s, sleeping, on, idle, computing, off in results.state_counts:
            writer.writerow((_num(time_s), sleeping, on, off, idle, computing))


#: ``pstate_changes.csv``: the power-state id of each node state (Batsim
#: numbers power states per host; hpcpower gives every node state its own).
PSTATE_IDS = STATE_CODES


def pstate_changes(results: Results) -> list[tuple[float, np.ndarray, int]]:
    """Every change of a node's state: ``(time_s, nodes, new state)``, by time then state.

    Nodes changing to the same state at the same time are grouped. The rows
    at time 0 give every node its initial state. (:func:`pstate_change_arrays`
    gives the same as arrays.)
    """
    times, states, ptr, nodes = pstate_change_arrays(results)
    return [
        (time_s, nodes[ptr[k] : ptr[k + 1]], state)
        for k, (time_s, state) in enumerate(zip(times.tolist(), states.tolist(), strict=True))
    ]


def pstate_change_arrays(results: Results) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`pstate_changes` as arrays ``(times, states, ptr, nodes)``.

    Group ``k`` is the nodes ``nodes[ptr[k]:ptr[k + 1]]`` (increasing ids,
    int16 below 32,768 nodes, int32 below 2**31) changing to ``states[k]``
    at ``times[k]``.

    A node's changes are the starts of its intervals whose state differs
    from the interval before; then, after its last interval, idle again if
    it was a job that ended as the run ends (a job that takes no time
    leaves no idle interval after it), its initial state if it has no
    interval (a run that ends at time 0), and its state at the end (a
    transition begun as the run ends has no length, so no interval). A node
    can change twice at one instant (a job that takes no time): such changes
    keep their order through their *rank*, the number of changes the node
    already had at that instant, so groups go by (time, rank, state).
    """
    instants = results.interval_instants()
    try:
        return _placed_changes(results, instants)
    except _RankOverflow:
        return _sorted_changes(results, instants)


class _RankOverflow(Exception):
    """A node changed state more often at one instant than a change's code holds."""


def _chunk_changes(
    results: Results, instants: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Every node's changes, a chunk of whole nodes at a time: ``(node, state, at, rank)``.

    ``at`` is the index of the change's time in ``instants``. Within a chunk
    the changes go node by node (increasing ids), each node's in order.
    """
    n = results.time_in_state_s.shape[0]
    end_s = float(results.end_s)
    finish = np.asarray(results.jobs["finish_s"], dtype=float)
    initial = PSTATE_IDS[results.config.get("initial_state") or "idle"]
    node_state = None if results.node_state is None else np.asarray(results.node_state)
    ends_at = tuple(_instant_index(instants, np.array([0.0, end_s])).tolist())
    # Chunks of about _SPANS_PER_CHUNK spans: whole nodes, at least one.
    chunk_nodes = max(1, min(n, _SPANS_PER_CHUNK * n // max(_span_count(results), 1)))
    for chunk, low in zip(
        results.node_interval_chunks(chunk_nodes, instants=instants),
        range(0, max(n, 1), chunk_nodes),
        strict=True,
    ):
        c_node, c_state, c_time, rank, c_at = _node_changes(
            chunk,
            finish,
            initial,
            node_state,
            end_s,
            np.arange(low, min(low + chunk_nodes, n)),
            ends_at,
        )
        yield c_node, c_state, _instant_index(instants, c_time) if c_at is None else c_at, rank


def _instant_index(instants: np.ndarray, times: np.ndarray) -> np.ndarray:
    """The index of each of ``times`` in ``instants`` (faster when ``times`` increase)."""
    at = np.searchsorted(instants, times)
    found = instants[np.minimum(at, len(instants) - 1)]
    if not np.array_equal(found, times, equal_nan=True):
        raise RuntimeError("a node changes state at an instant of none of its intervals")
    return at


def _placed_changes(
    results: Results, instants: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`pstate_change_arrays` by placing each change at its instant (no sort key per change).

    Two passes over the nodes' intervals: the first counts the changes at
    each instant, the second puts each change's node and code (its rank
    and state, one byte) into its instant's slots, node by node, so that
    every instant's changes are in increasing node order. Each instant's
    changes are then put in code order (a stable sort, a block of instants
    at a time) and split into groups. Memory: the nodes, a byte per change
    and a cursor per instant, instead of a 64-bit sort key per change.

    Raises:
        _RankOverflow: A node changes state more than ``_PLACED_RANKS``
            times at one instant (jobs that take no time, many of them).
    """
    n = results.time_in_state_s.shape[0]
    # cursor[i + 1] counts instant i's changes; summed, cursor[i] is where they go.
    # (int32 while the changes' bound allows: per span, the gap before it and
    # the span; per node, the tail, an idle after a job ending with the run,
    # its initial state and its state at the end.)
    most = 2 * _span_count(results) + 4 * n
    cursor = np.zeros(len(instants) + 1, dtype=np.int32 if most < 2**31 else np.int64)
    for _, _, at, rank in _chunk_changes(results, instants):
        if len(rank) and int(rank.max()) >= _PLACED_RANKS:
            raise _RankOverflow
        at, count = np.unique(at, return_counts=True)
        cursor[at + 1] += count
    np.cumsum(cursor, out=cursor)
    m = int(cursor[-1])
    release_free_memory()  # (the first pass's temporaries, before the second's arrays)
    nodes: np.ndarray = np.empty(m, dtype=_smallest_int(max(1, (n - 1).bit_length())))
    codes = np.empty(m, dtype=np.uint8)
    for c_node, c_state, c_at, rank in _chunk_changes(results, instants):
        order = np.argsort(c_at, kind="stable")
        c_at = c_at[order]
        # The runs of changes at one instant.
        run = np.ones(len(c_at), dtype=bool)
        run[1:] = c_at[1:] != c_at[:-1]
        heads = np.flatnonzero(run)
        at = c_at[heads]
        sizes = np.diff(np.append(heads, len(c_at)))
        # Each change's place: its instant's cursor, then its rank in the run.
        place = np.repeat(cursor[at] - heads, sizes) + np.arange(len(c_at))
        nodes[place] = c_node[order]
        codes[place] = ((rank << 3) | c_state)[order]
        cursor[at] += sizes
    # Now cursor[i] is where instant i's changes end. Each block of whole
    # instants is put in code order, then (a second sweep) split into groups
    # straight into the arrays returned.
    blocks = _instant_blocks(cursor)
    groups = 0
    for first, last, low, high in blocks:
        key = _block_keys(cursor, codes, first, last, low, high)
        if len(key) > 1 and np.any(key[1:] < key[:-1]):
            order = np.argsort(key, kind="stable")
            key = key[order]
            nodes[low:high] = nodes[low:high][order]
            codes[low:high] = codes[low:high][order]
        groups += len(key) and 1 + int(np.count_nonzero(key[1:] != key[:-1]))
    times = np.empty(groups)
    states = np.empty(groups, dtype=np.int64)
    ptr = np.empty(groups + 1, dtype=np.int64)
    ptr[groups] = m
    done = 0
    for first, last, low, high in blocks:
        key = _block_keys(cursor, codes, first, last, low, high)
        head = np.ones(len(key), dtype=bool)
        head[1:] = key[1:] != key[:-1]
        heads = np.flatnonzero(head)
        stop = done + len(heads)
        ptr[done:stop] = heads + low
        times[done:stop] = instants[(key[heads] >> 8) + first]
        states[done:stop] = key[heads] & 7
        done = stop
    return times, states, ptr, nodes


def _instant_blocks(ends: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Blocks of whole instants of about ``_CHANGES_AT_ONCE`` changes (at least one instant).

    ``ends[i]`` is where instant ``i``'s changes end (one more entry, the
    total, at the end). Each block is ``(first, last, low, high)``: instants
    ``first:last``, changes ``low:high``.
    """
    blocks = []
    first, count = 0, len(ends) - 1
    while first < count:
        low = int(ends[first - 1]) if first else 0
        last = int(np.searchsorted(ends, low + _CHANGES_AT_ONCE, side="right"))
        last = min(max(first + 1, last), count)
        blocks.append((first, last, low, int(ends[last - 1])))
        first = last
    return blocks


def _block_keys(
    ends: np.ndarray, codes: np.ndarray, first: int, last: int, low: int, high: int
) -> np.ndarray:
    """Each change's ``(instant within the block, code)`` of one block, as one integer."""
    counts = np.diff(ends[first - 1 : last]) if first else np.diff(ends[:last], prepend=0)
    key = np.repeat(np.arange(last - first, dtype=np.int64) << 8, counts)
    key |= codes[low:high]
    return key


def _sorted_changes(
    results: Results, instants: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`pstate_change_arrays` by sorting keys ``(instant, rank, state, node)``.

    The way for any rank: the instant is a key of its own and the rest one
    integer, sorted together with an index array.
    """
    n = results.time_in_state_s.shape[0]
    # (The rank has the bits the node and state leave: more than a run can
    # have changes, for any machine that fits in memory.)
    node_bits = max(1, (n - 1).bit_length())
    keys: list[np.ndarray] = []
    highs: list[np.ndarray] = []
    for c_node, c_state, at, rank in _chunk_changes(results, instants):
        keys.append(
            (rank.astype(np.uint64) << np.uint64(3 + node_bits))
            | (c_state.astype(np.uint64) << np.uint64(node_bits))
            | c_node.astype(np.uint64)
        )
        highs.append(at)
    key = np.concatenate(keys) if keys else np.zeros(0, dtype=np.uint64)
    high = np.concatenate(highs) if highs else np.zeros(0, dtype=np.int64)
    del keys, highs
    order = np.lexsort((key, high))
    key, high = key[order], high[order]
    del order
    m = len(key)
    shift = np.uint64(node_bits)
    nodes = (key & np.uint64((1 << node_bits) - 1)).astype(_smallest_int(node_bits))
    group = key >> shift
    bound = np.ones(m, dtype=bool)
    bound[1:] = (group[1:] != group[:-1]) | (high[1:] != high[:-1])
    heads = np.flatnonzero(bound)
    states = (group[heads] & np.uint64(7)).astype(np.int64)
    return instants[high[heads]], states, np.append(heads, m).astype(np.int64), nodes


def _smallest_int(bits: int) -> type:
    """The smallest signed integer type that holds ``bits``-bit non-negative numbers."""
    return np.int16 if bits < 16 else np.int32 if bits < 32 else np.int64


def _span_count(results: Results) -> int:
    """The spans of a run's nodes: their jobs (the nodes each asked for) and transitions."""
    started = ~np.isnan(np.asarray(results.jobs["start_s"], dtype=float))
    return int(np.asarray(results.jobs["res"])[started].sum()) + len(results.transitions)


#: Changes :func:`pstate_change_arrays` puts in order at once (bounded temporaries).
_CHANGES_AT_ONCE = 1 << 20
#: Changes of one node at one instant that a change's one-byte code holds
#: (its rank beside its state); more take the sort by keys.
_PLACED_RANKS = 32


#: Spans a chunk of :func:`pstate_change_arrays` holds, about (whole nodes): the
#: chunk's temporaries stay small, and so does what the allocator keeps of them.
_SPANS_PER_CHUNK = 1 << 14


def _node_changes(
    a: dict,
    finish,
    initial: int,
    node_state,
    end_s: float,
    nodes,
    ends_at: tuple[int, int] | None = None,
) -> tuple:
    """The kept changes of one chunk of intervals (of ``nodes``): ``(node, state, time, rank, at)``.

    ``at``: the index of each change's time among the instants, when the
    intervals have theirs (``start_at``, ``end_at``); else ``None``.
    ``ends_at``: the indices of time 0 and of ``end_s`` (needed with theirs).
    """
    node, state, start, job = a["node"], a["state"], a["start_s"], a["job_id"]
    # After each node's last interval: idle again after a job ending at its end.
    last = np.ones(len(node), dtype=bool)
    last[:-1] = node[1:] != node[:-1]
    ended = last & (state == COMPUTING)
    ended[ended] = finish[job[ended]] == a["end_s"][ended]
    # (node, slot, state, time, index of the time or None)
    indexed = "start_at" in a
    zero_at, end_s_at = (None, None) if ends_at is None else ends_at
    if indexed and ends_at is None:
        raise ValueError("intervals with their instants' indices need ends_at")
    extra: list[tuple[Any, int, Any, Any, Any]] = [
        (
            node[ended],
            1,
            int(NodeState.IDLE),
            a["end_s"][ended],
            a["end_at"][ended] if indexed else None,
        )
    ]
    extra.append((_without_spans(nodes, node), 2, initial, 0.0, zero_at))
    if node_state is not None:
        extra.append((nodes, 3, node_state[nodes], end_s, end_s_at))
    # Every node's candidate changes in order: (node, slot, state, time[, at]).
    size = len(node)
    columns = [
        np.concatenate([node] + [np.asarray(e[0], dtype=np.int64) for e in extra]),
        np.concatenate(
            [np.arange(size, dtype=np.int64)]
            + [np.full(len(e[0]), size + e[1], dtype=np.int64) for e in extra]
        ),
        np.concatenate([state] + [np.broadcast_to(e[2], len(e[0])) for e in extra]),
        np.concatenate(
            [start] + [np.broadcast_to(np.asarray(e[3], float), len(e[0])) for e in extra]
        ),
    ]
    if indexed:
        columns.append(
            np.concatenate(
                [a["start_at"]] + [np.broadcast_to(np.asarray(e[4]), len(e[0])) for e in extra]
            )
        )
    order = np.lexsort((columns[1], columns[0]))
    c_node, _, c_state, c_time, *c_at = (column[order] for column in columns)
    # A change is kept when its state differs from the node's change before.
    new_node = np.ones(len(c_node), dtype=bool)
    new_node[1:] = c_node[1:] != c_node[:-1]
    kept = new_node.copy()
    kept[1:] |= c_state[1:] != c_state[:-1]
    c_node, c_state, c_time, new_node = c_node[kept], c_state[kept], c_time[kept], new_node[kept]
    # Rank: how many kept changes the node had before at the same instant.
    run_start = new_node.copy()
    run_start[1:] |= c_time[1:] != c_time[:-1]
    positions = np.arange(len(c_node))
    rank = positions - np.maximum.accumulate(np.where(run_start, positions, 0))
    return (
        c_node.astype(np.int32),
        c_state.astype(np.int8),
        c_time,
        rank.astype(np.int32),
        c_at[0][kept] if c_at else None,
    )


def write_pstate_changes_csv(
    results: Results, path: str | Path, changes: tuple[np.ndarray, ...] | None = None
) -> None:
    """Write Batsim's ``pstate_changes.csv``: ``time,machine_id,new_pstate`` (interval sets).

    ``changes``: :func:`pstate_change_arrays` of ``results``, if already made.
    """
    times, states, ptr, nodes = pstate_change_arrays(results) if changes is None else changes

    def rows(low: int, high: int) -> tuple:
        group = nodes[ptr[low] : ptr[high]]
        return (
            _num_texts(times[low:high]),
            _interval_sets(np.diff(ptr[low : high + 1]), group, ordered=True),
            list(map(str, states[low:high].tolist())),
        )

    _write_csv(path, ("time", "machine_id", "new_pstate"), len(times), rows, plain=True)


class EnergyEvents(NamedTuple):
    """:func:`energy_events` as arrays, one entry per row."""

    time_s: np.ndarray
    joules: np.ndarray
    kind: np.ndarray  # "e", "p", "s" or "f"
    watts: np.ndarray

    def rows(self) -> list[tuple[float, float, str, float]]:
        """The rows as tuples of Python values."""
        return list(
            zip(
                self.time_s.tolist(),
                self.joules.tolist(),
                self.kind.tolist(),
                self.watts.tolist(),
                strict=True,
            )
        )


def _event_arrays(events: EnergyEvents | Sequence[tuple]) -> EnergyEvents:
    """``events`` as :class:`EnergyEvents` (from the rows of :func:`energy_events`, say)."""
    if isinstance(events, EnergyEvents):
        return events
    times, joules, kinds, watts = zip(*events, strict=True) if events else ((), (), (), ())
    return EnergyEvents(
        np.array(times, dtype=float),
        np.array(joules, dtype=float),
        np.array(kinds, dtype="<U1"),
        np.array(watts, dtype=float),
    )


def energy_events(
    results: Results, changes: tuple[np.ndarray, ...] | None = None
) -> list[tuple[float, float, str, float]]:
    """Rows of ``consumed_energy.csv``: ``(time_s, joules so far, event type, watts after)``.

    One row per job start (``s``), job end (``e``) and group of state changes
    (``p``), in time order (at one instant: ends, changes, starts, then the
    ends of jobs that took no time), and a last row ``f`` at the end of the
    run when no event happened then. The
    joules are the platform's energy integrated exactly from time 0; the
    watts are the platform's power from that instant on. ``changes``:
    :func:`pstate_change_arrays` of ``results``, if already made.
    (:func:`energy_event_arrays` gives the same as arrays.)
    """
    return energy_event_arrays(results, changes).rows()


def energy_event_arrays(
    results: Results, changes: tuple[np.ndarray, ...] | None = None
) -> EnergyEvents:
    """:func:`energy_events` as arrays."""
    changes = pstate_change_arrays(results) if changes is None else changes
    return _energy_events(results, changes[0], _watts_after_changes(results, changes))


def _watts_after_changes(results: Results, changes: tuple[np.ndarray, ...]) -> np.ndarray:
    """The platform's watts after each group of :func:`pstate_change_arrays` ``changes``."""
    _, states, ptr, nodes = changes
    # Each node's watts, changed group by group (the changes come in time
    # order, as their rows): the platform's power after each group is the
    # sum of that array, as numpy sums it.
    power = _power_model(results)
    return _watts_after_groups(_initial_watts(results), power, states, ptr, nodes)


def _initial_watts(results: Results) -> np.ndarray:
    """Each node's watts in the run's initial state (a new array).

    Every node starts in that state, so that the power of the first energy
    rows is the platform's (the rows at time 0 then set the rest).
    """
    initial = results.config.get("initial_state") or "idle"
    return _power_model(results)[:, PSTATE_IDS[initial]].copy()


def _energy_events(results: Results, times: np.ndarray, after: np.ndarray) -> EnergyEvents:
    """:func:`energy_event_arrays` from the groups' times and the watts after each."""
    t = results.jobs
    done = ~np.isnan(t["finish_s"])
    started = ~np.isnan(t["start_s"])
    finish = t["finish_s"][done]
    begin = t["start_s"][done]
    # (A job that took no time ends after it starts, at the same instant.)
    event_time = np.concatenate([finish, times, t["start_s"][started]])
    event_rank = np.concatenate(
        [
            np.where(finish == begin, 3, 0).astype(np.int8),
            np.ones(len(times), np.int8),
            np.full(started.sum(), 2, np.int8),
        ]
    )
    # In time order, then rank; ties in the order above (a stable sort).
    order = np.lexsort((event_rank, event_time))
    del event_rank
    kind_code = np.concatenate(
        [
            np.zeros(len(finish), np.int8),
            np.ones(len(times), np.int8),
            np.full(started.sum(), 2, np.int8),
        ]
    )[order]
    event_time = event_time[order]
    del order
    start_w = float(_initial_watts(results).sum())
    # The watts after each row: after its row's group, or the last group
    # before (the platform's first power before any group).
    groups_so_far = np.cumsum(kind_code == 1, dtype=np.int32 if len(kind_code) < 2**31 else None)
    lookup = np.empty(len(after) + 1)
    lookup[0] = start_w
    lookup[1:] = after
    watts = lookup[groups_so_far]
    del lookup, groups_so_far
    # Energy so far, integrated row by row from time 0: each row adds the
    # watts before it times the time since the row before (from 0 for the
    # first), as a running sum in row order (numpy's accumulate adds left
    # to right, as a loop would). Made in one buffer.
    steps = np.empty(len(watts) + 1)
    steps[0] = 0.0
    if len(watts):
        steps[1] = start_w * (event_time[0] - 0.0)
        np.subtract(event_time[1:], event_time[:-1], out=steps[2:])
        steps[2:] *= watts[:-1]
    joules = np.cumsum(steps, out=steps)[1:]
    kinds = np.array(["e", "p", "s", "f"])[kind_code]
    end_s = float(results.end_s)
    if not len(event_time) or event_time[-1] < end_s:
        # The run ended later than its last event (a rejected job, say): one
        # more row, type "f", so that the curve ends at the run's total.
        last_w = float(watts[-1]) if len(watts) else start_w
        last_j = float(joules[-1]) if len(joules) else 0.0
        last_t = float(event_time[-1]) if len(event_time) else 0.0
        event_time = np.append(event_time, end_s)
        joules = np.append(joules, last_j + last_w * (end_s - last_t))
        kinds = np.append(kinds, "f")
        watts = np.append(watts, last_w)
    return EnergyEvents(event_time, joules, kinds, watts)


#: Up to this many nodes, :func:`_watts_after_groups` makes a block of groups'
#: node watts as one table (cheaper than a step per group on a small machine).
_TABLE_NODES = 256
#: Cells of that table made at once (bounded temporaries).
_CELLS_AT_ONCE = 1 << 18
#: Groups whose new watts are looked up at once on a larger machine.
_GROUPS_AT_ONCE = 1 << 16


def _watts_after_groups(
    node_w: np.ndarray, power: np.ndarray, states: np.ndarray, ptr: np.ndarray, nodes: np.ndarray
) -> np.ndarray:
    """The platform's watts after each group of changes: ``node_w.sum()`` as numpy sums it.

    ``node_w`` (each node's watts, changed to ``power[node, state]`` group
    by group: see :func:`pstate_change_arrays`) ends as after the last
    group. On a small machine a block of groups becomes a table, a row of
    every node's watts per group, and numpy sums each row as it sums one
    array (the same pairwise order); on a large one, group by group. The
    new watts are looked up a block of groups at a time (bounded memory).
    """
    n = len(node_w)
    after = np.empty(len(states))
    table = n <= _TABLE_NODES
    rows = max(1, _CELLS_AT_ONCE // max(n, 1)) if table else _GROUPS_AT_ONCE
    total = node_w.sum
    low = 0
    while low < len(states):
        # (At most _CHANGES_AT_ONCE changes a block, unless one group has more.)
        most = int(np.searchsorted(ptr, ptr[low] + _CHANGES_AT_ONCE, side="right")) - 1
        high = min(low + rows, len(states), max(low + 1, most))
        first, stop = int(ptr[low]), int(ptr[high])
        sizes = np.diff(ptr[low : high + 1])
        changed = nodes[first:stop]
        new_w = power[changed, np.repeat(states[low:high], sizes)]
        if table:
            # Each cell: the latest change of its node up to its group (-1: none yet).
            latest = np.full((high - low, n), -1, dtype=np.int64)
            latest[np.repeat(np.arange(high - low), sizes), changed] = np.arange(stop - first)
            np.maximum.accumulate(latest, axis=0, out=latest)
            watts = np.where(latest >= 0, new_w[np.maximum(latest, 0)], node_w)
            after[low:high] = watts.sum(axis=1)
            node_w[:] = watts[-1]
        else:
            bounds = (ptr[low : high + 1] - first).tolist()
            for k in range(high - low):
                a, b = bounds[k], bounds[k + 1]
                node_w[changed[a:b]] = new_w[a:b]
                after[low + k] = total()
        low = high
    return after


def write_consumed_energy_csv(
    results: Results, path: str | Path, events: EnergyEvents | Sequence[tuple] | None = None
) -> None:
    """Write Batsim's ``consumed_energy.csv``: ``time,energy,event_type,wattmin,epower``.

    ``epower`` is the mean power since the previous row (``NA`` when no time
    passed), as Batsim writes it; ``wattmin`` the platform's power after the row.
    ``events``: :func:`energy_event_arrays` (or :func:`energy_events`) of
    ``results``, if already made.
    """
    events = energy_event_arrays(results) if events is None else _event_arrays(events)
    times, joules = events.time_s, events.joules
    n = len(times)
    # The mean power since the row before; NA for the first row and for no time passed.
    mean_w = np.full(n, math.nan)
    no_time = np.ones(n, dtype=bool)
    if n:
        with np.errstate(divide="ignore", invalid="ignore"):
            mean_w[1:] = np.diff(joules) / np.diff(times)
        no_time[1:] = times[1:] == times[:-1]

    def rows(low: int, high: int) -> tuple:
        epower = _num_texts(mean_w[low:high])
        for k in np.flatnonzero(no_time[low:high]).tolist():
            epower[k] = "NA"
        return (
            _num_texts(times[low:high]),
            _num_texts(joules[low:high]),
            events.kind[low:high].tolist(),
            _num_texts(events.watts[low:high]),
            epower,
        )

    # (Plain text unless a hand-made row's event type is one csv would quote.)
    plain = not np.isin(events.kind, [",", '"', "\r", "\n"]).any()
    _write_csv(path, ("time", "energy", "event_type", "wattmin", "epower"), n, rows, plain=plain)


def schedule(
    results: Results, events: EnergyEvents | Sequence[tuple] | None = None
) -> dict[str, Any]:
    """Batsim's schedule metrics (the keys of its ``schedule.csv``), from the results.

    Means are over the jobs that finished (Batsim divides by every job);
    the slowdown is turnaround over execution time, unbounded, over jobs
    that ran for some time; ``consumed_joules`` is the energy from the first
    submission to the end of the run. ``events``: :func:`energy_event_arrays`
    (or :func:`energy_events`) of ``results``, if already made.
    """
    s = results.summary
    t = results._job_metrics()
    finished = t["state"] == "completed"
    killed = t["killed"] & finished
    wait = t["wait_s"][finished]
    turnaround = t["turnaround_s"][finished]
    run = (t["finish_s"] - t["start_s"])[finished]
    ran = run > 0
    slowdown = turnaround[ran] / run[ran]
    n_jobs = len(t["job_id"])

    def mean(v) -> float:
        return float(np.mean(v)) if len(v) else math.nan

    def largest(v) -> float:
        return float(np.max(v)) if len(v) else math.nan

    seconds = results.time_in_state_s.sum(axis=0)
    first_submit = float(t["submit_s"].min()) if n_jobs else 0.0
    # The energy up to the first submission: from the last row at or before
    # it (the rows are in time order), plus the power drawn from that row on.
    events = energy_event_arrays(results) if events is None else _event_arrays(events)
    before = 0.0
    last = int(np.searchsorted(events.time_s, first_submit, side="right")) - 1
    if last >= 0:
        time_s = float(events.time_s[last])
        before = float(events.joules[last]) + float(events.watts[last]) * (first_submit - time_s)
    return {
        "nb_jobs": n_jobs,
        "nb_jobs_finished": int(finished.sum()),
        "nb_jobs_success": int((finished & ~killed).sum()),
        "nb_jobs_killed": int(killed.sum()),
        "nb_jobs_rejected": int(s["jobs_rejected"]),
        "success_rate": float((finished & ~killed).sum()) / n_jobs if n_jobs else math.nan,
        "makespan": largest(t["finish_s"][finished]),
        "mean_waiting_time": mean(wait),
        "mean_turnaround_time": mean(turnaround),
        "mean_slowdown": mean(slowdown),
        "max_waiting_time": largest(wait),
        "max_turnaround_time": largest(turnaround),
        "max_slowdown": largest(slowdown),
        "nb_computing_machines": int(results.time_in_state_s.shape[0]),
        "consumed_joules": float(s["total_energy_j"]) - before,
        "nb_machine_switches": int(s["switch_ons"] + s["switch_offs"]),
        **{f"time_{label}": float(seconds[k]) for k, label in enumerate(STATE_LABELS)},
        "time_unavailable": 0.0,
        "hpcpower_version": s.get("version"),
    }


def write_schedule_json(
    results: Results, path: str | Path, events: EnergyEvents | Sequence[tuple] | None = None
) -> None:
    """Write ``schedule.json``: Batsim's schedule metrics (see :func:`schedule`)."""
    text = json.dumps(_clean(schedule(results, events)), indent=2, allow_nan=False)
    Path(path).write_text(text + "\n")


def write_summary_json(results: Results, path: str | Path) -> None:
    """Write ``summary.json`` (NaN written as null)."""
    Path(path).write_text(summary_json(results) + "\n")


def write_decisions_csv(results: Results, path: str | Path) -> None:
    """Write the controller's decision log, one row per logged pass.

    A NaN (a quantity the pass did not compute) is an empty field, as in the
    other CSV files, and so is a key that a row does not have.
    """
    rows = results.decisions
    # NaN (the one value unequal to itself) and None are empty fields.
    if isinstance(rows, DecisionLog) and len(rows.keys()) > 1:
        # Its keys in order of first appearance; each run of equal values
        # formatted once, and whole lines joined, a block at a time.
        with open(path, "w", newline="") as fh:
            csv.writer(fh).writerow(rows.keys())
            fh.writelines(rows.csv_lines(rows.keys()))
        return
    if isinstance(rows, DecisionLog):
        columns = rows.keys()
        values: Iterable[Sequence[Any]] = rows.iter_text(columns)
    else:
        columns = list(dict.fromkeys(key for row in rows for key in row))
        values = (["" if (v := row.get(key, "")) != v else v for key in columns] for row in rows)
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(values)


def check_out(out_dir: str | Path, *, force: bool = False) -> Path:
    """Check that a result folder can be written, before a run spends time making it.

    The folder must not exist (or, with ``force``, may be a folder of a
    previous result, which is then replaced), and its parent must be a
    folder this process can write (it is made if missing).

    Raises:
        InputError: Naming the folder and what to do.
    """
    out = _looked_up(out_dir)
    if Path.cwd().resolve().is_relative_to(out.resolve()):
        raise InputError(f"{out}: the current folder or one above it; choose another --out")
    if out.exists() or out.is_symlink():
        if not out.is_dir() or out.is_symlink():
            raise InputError(f"{out}: exists and is not a folder; choose another --out")
        held = sorted(p.name for p in out.iterdir())
        if held and not force:
            raise InputError(
                f"{out}: a result folder is already there; use --force to replace it "
                "or choose another --out"
            )
        foreign = [name for name in held if name not in RESULT_FILES]
        if held and ("summary.json" not in held or foreign):
            # --force replaces a result, never a folder of other files.
            shown = ", ".join(foreign[:3]) or "no summary.json"
            raise InputError(
                f"{out}: not an hpcpower result ({shown}); --force replaces only a "
                "result folder: choose another --out"
            )
    _check_writable(out, out.parent)
    return out


def check_file_out(path: str | Path, *, force: bool = True) -> Path:
    """Check that an output file (an image, an animation, a page) can be written, before the work.

    ``path`` must not be a folder, nor, unless ``force``, a file already
    there; its folder is made if missing and must take a new file.

    Raises:
        InputError: Naming ``--out`` and what is wrong.
    """
    out = _looked_up(path)
    if out.is_dir():
        raise InputError(f"--out {out}: a folder is there; give a file name")
    if (out.exists() or out.is_symlink()) and not force:
        raise InputError(
            f"--out {out}: a file is already there; use --force to replace it "
            "or choose another --out"
        )
    _check_writable(out, out.parent)
    return out


def check_folder_out(path: str | Path) -> Path:
    """Check that files can be written into the folder ``path`` (made later if missing).

    Raises:
        InputError: Naming ``--out`` and what is wrong.
    """
    out = _looked_up(path)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: a file is there, not a folder; choose another --out")
    _check_writable(out, out if out.is_dir() else out.parent)
    return out


def _looked_up(path: str | Path) -> Path:
    """``path``, once the system has looked it up: a name too long, a loop, is said here."""
    out = Path(path)
    try:
        out.lstat()
    except (FileNotFoundError, NotADirectoryError):
        pass  # (nothing there yet: the usual case)
    except OSError as exc:
        raise InputError(f"--out {out}: cannot write there ({exc.strerror})") from None
    return out


def _check_writable(out: Path, folder: Path) -> None:
    """Make ``folder`` if missing and check that ``out``'s temporary file can be made in it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise InputError(
            f"--out {out}: cannot make its folder {folder} (a file is in the way)"
        ) from None
    except OSError as exc:
        raise InputError(f"--out {out}: cannot make its folder {folder} ({exc.strerror})") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"--out {out}: cannot write in {folder} (permission denied)")
    # The permission bits do not tell it all (root passes them, yet /proc and
    # /sys refuse new files, and a name may be too long), so a file named as
    # the write's temporary one is made there and removed.
    try:
        fd, probe = tempfile.mkstemp(
            prefix=f".{out.name}.", suffix=_PARTIAL + out.suffix, dir=folder
        )
    except OSError as exc:
        raise InputError(f"--out {out}: cannot write there ({exc.strerror})") from None
    os.close(fd)
    os.unlink(probe)


#: The ending of a file or folder being written beside its target (see :func:`replacing`).
_PARTIAL = ".partial"


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A temporary file beside ``path`` to write into; it becomes ``path`` once complete.

    On an error or an interruption the temporary file is removed, so
    ``path`` holds the old file or the new one, never a half-written one.
    The temporary file keeps ``path``'s ending, as writers that choose a
    format by the ending (matplotlib, Pillow, ffmpeg) need.
    """
    path = Path(path)
    fd, name = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=_PARTIAL + path.suffix, dir=path.parent
    )
    os.close(fd)
    partial = Path(name)
    try:
        yield partial
        # (mkstemp made it private; a result follows the umask.)
        partial.chmod(0o666 & ~_umask())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


#: The files every result folder holds, in the order :func:`write_all` lists them.
_EVERY_RUN_FILES = (
    "summary.json",
    "jobs.csv",
    "machine_states.csv",
    "pstate_changes.csv",
    "consumed_energy.csv",
    "schedule.json",
)
#: The files a result folder holds (what ``--force`` may replace).
RESULT_FILES = frozenset(
    {
        *_EVERY_RUN_FILES,
        "decisions.csv",
        "jobs.parquet",
        "nodes.parquet",
        "states.parquet",
        "decisions.parquet",
    }
)

#: The Parquet files of ``write_all(..., parquet=True)``: file -> ``Results.to_pandas`` table.
PARQUET_TABLES = {
    "jobs.parquet": "jobs",
    "nodes.parquet": "nodes",
    "states.parquet": "states",
    "decisions.parquet": "decisions",
}


def require_parquet() -> None:
    """Fail early, naming the extra to install, when Parquet output cannot be written."""
    require("pandas", "tables", "Parquet output")
    require("pyarrow", "tables", "Parquet output")


def write_parquet(results: Results, path: str | Path, table: str) -> None:
    """Write one of :meth:`Results.to_pandas`'s tables as Parquet, the summary in its metadata.

    Args:
        results: The run.
        path: The ``.parquet`` file to write.
        table: ``"jobs"``, ``"nodes"``, ``"states"`` or ``"decisions"``.
    """
    require_parquet()
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = pa.Table.from_pandas(results.to_pandas(table), preserve_index=False)
    meta = dict(arrow.schema.metadata or {})
    meta[b"hpcpower.summary"] = summary_json(results).encode()
    pq.write_table(arrow.replace_schema_metadata(meta), path)


def write_all(
    results: Results, out_dir: str | Path, *, force: bool = False, parquet: bool = False
) -> list[Path]:
    """Write every output file into ``out_dir`` as one step; returns the paths.

    The files are written into a hidden temporary folder beside ``out_dir``
    and the folder is renamed into place once complete, so an interrupted
    write (Ctrl-C, SIGTERM, a full disk) leaves the previous result or none,
    never a mix or a truncated file. An existing result folder is replaced
    only with ``force`` (see :func:`check_out`).

    Args:
        results: The run.
        out_dir: The result folder.
        force: Replace a result already there.
        parquet: Also write the tables as Parquet (needs ``hpcpower[tables]``).
    """
    if parquet:
        require_parquet()
    out = check_out(out_dir, force=force)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=_PARTIAL, dir=out.parent))
    try:
        # The state changes and the energy events behind three files are made
        # once, and each is let go once its files are written (so that on a
        # whole trace they are not held while the jobs' file is made).
        # Between steps, what the allocator keeps of the step before is
        # given back, so that it does not add to the next step's peak.
        release_free_memory()
        changes = pstate_change_arrays(results)
        release_free_memory()
        write_pstate_changes_csv(results, staging / "pstate_changes.csv", changes)
        times, after = changes[0], _watts_after_changes(results, changes)
        del changes
        release_free_memory()
        events = _energy_events(results, times, after)
        del times, after
        write_consumed_energy_csv(results, staging / "consumed_energy.csv", events)
        write_schedule_json(results, staging / "schedule.json", events)
        del events
        release_free_memory()
        write_summary_json(results, staging / "summary.json")
        write_jobs_csv(results, staging / "jobs.csv")
        release_free_memory()
        write_machine_states_csv(results, staging / "machine_states.csv")
        names = list(_EVERY_RUN_FILES)
        if results.decisions:
            names.append("decisions.csv")
            write_decisions_csv(results, staging / names[-1])
        if parquet:
            for name, table in PARQUET_TABLES.items():
                if table != "decisions" or results.decisions:
                    write_parquet(results, staging / name, table)
                    names.append(name)
        _swap_in(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [out / name for name in names]


def _swap_in(staging: Path, out: Path) -> None:
    """Rename the finished ``staging`` folder to ``out``, replacing an old result there.

    The old result is first renamed aside; if the new one cannot follow it
    (an interruption, an error), the old one is put back. So ``out`` is the
    complete old result or the complete new one, except for the instant
    between the two renames.
    """
    # The staging folder was made private (mkdtemp); a result follows the umask.
    staging.chmod(0o777 & ~_umask())
    if not out.exists():
        os.replace(staging, out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
    aside = old / "result"
    try:
        os.replace(out, aside)
        os.replace(staging, out)
    except BaseException:
        if aside.exists() and not out.exists():
            os.replace(aside, out)
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)


def summary_json(results: Results) -> str:
    """The summary as strict JSON: NaN as ``null``, infinities as ``"inf"`` / ``"-inf"``.

    (A scenario reads ``"inf"`` back as infinity, so a run folder re-runs.)
    """
    return json.dumps(_clean(results.summary), indent=2, allow_nan=False)


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (np.floating, float)):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value
