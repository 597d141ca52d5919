"""Results of a run: job records, node transitions, state counts, and the summary.

Everything here is computed from the engine's plain
:class:`~hpcpower.engine.record.RunRecord`; nothing is maintained on the
side, and nothing here knows a policy by name (a policy adds its own
summary entries through ``Policy.summarise``). Field-by-field definitions are in
``docs/reference/results.md``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcpower.engine.storage import CountRows, Gangs, Rows
from hpcpower.errors import PolicyError, require
from hpcpower.platform import STATE_LABELS
from hpcpower.states import COMPUTING, IDLE, SLEEPING, STATE_CODES, SWITCHING_ON

if TYPE_CHECKING:
    from hpcpower.engine.record import RunRecord

#: Bounded-slowdown threshold (seconds): runtimes below it count as this long.
BSLD_TAU_S = 10.0


@dataclass
class Results:
    """What a run produced.

    Attributes:
        jobs: Column arrays, one entry per submitted job (see :meth:`job_table`).
        allocations: Allocated node ids per job, an array each (``None`` if
            it never started). A run stores them flat
            (:class:`~hpcpower.engine.storage.Gangs`); each reading gives a
            new read-only array.
        rejected: Reason per rejected job id.
        transitions: Rows ``(node, to_state, start_s, end_s)`` of every switch-on
            (``to_state`` = switching_on) and switch-off.
        state_counts: Rows ``(time_s, sleeping, switching_on, idle, computing,
            switching_off)`` each time the counts changed. A run stores rows
            in typed columns (:class:`~hpcpower.engine.storage.Rows`): read
            like a list of tuples, ``numpy.asarray`` gives a float array.
        time_in_state_s: Seconds per (node, state).
        energy_by_state_j: Joules per state, summed over nodes.
        node_energy_j: Joules per (node, state).
        decisions: The controller's decision log (one dict per logged pass).
        summary: The summary (what ``summary.json`` holds; ``docs/reference/results.md``).
        config: The full configuration of the run.
        power_w: Watts per (node, state), the platform's power model.
    """

    jobs: dict[str, np.ndarray]
    allocations: Sequence[np.ndarray | None]
    rejected: dict[int, str]
    transitions: Sequence[tuple[int, int, float, float]]
    state_counts: Sequence[tuple[float, int, int, int, int, int]]
    time_in_state_s: np.ndarray
    energy_by_state_j: np.ndarray
    node_energy_j: np.ndarray
    decisions: Sequence[dict[str, Any]]
    config: dict[str, Any]
    end_s: float
    summary: dict[str, Any] = field(default_factory=dict)
    #: Watts per (node, state): the platform's power model.
    power_w: np.ndarray | None = None
    #: Each node's state at the end (a :class:`~hpcpower.states.NodeState` value).
    node_state: np.ndarray | None = None

    @classmethod
    def from_record(cls, record: RunRecord) -> Results:
        """Results of a run from the engine's plain record of it."""
        jobs = record.jobs
        tis = record.time_in_state_s
        node_energy = tis * record.power_w
        names = np.array([j.name for j in jobs], dtype=object)
        table = {
            # One meaning for a job's id everywhere: its id in the workload,
            # as jobs.csv writes it; "index" is its position (Job.id).
            "index": np.array([j.id for j in jobs], dtype=np.int64),
            "job_id": names,
            "name": names,
            "profile": np.array([j.profile for j in jobs], dtype=object),
            "submit_s": np.array([j.submit_s for j in jobs], dtype=float),
            "res": np.array([j.res for j in jobs], dtype=np.int64),
            "reqtime_s": np.array([j.reqtime_s for j in jobs], dtype=float),
            "runtime_s": np.array([j.runtime_s for j in jobs], dtype=float),
            "start_s": record.start_s,
            "finish_s": record.finish_s,
        }
        state = np.full(len(jobs), "waiting", dtype=object)
        state[record.arrived :] = "not_submitted"
        state[~np.isnan(table["start_s"])] = "running"
        state[~np.isnan(table["finish_s"])] = "completed"
        for job_id in record.rejected:
            state[job_id] = "rejected"
        table["state"] = state
        # Ended by the walltime limit rather than by finishing its work.
        table["killed"] = (
            (state == "completed") & (table["runtime_s"] > table["reqtime_s"])
            if record.kill_at_walltime
            else np.zeros(len(jobs), dtype=bool)
        )
        results = cls(
            jobs=table,
            allocations=record.gangs,
            rejected=record.rejected,
            transitions=record.transitions,
            state_counts=record.state_counts,
            time_in_state_s=tis,
            energy_by_state_j=node_energy.sum(axis=0),
            node_energy_j=node_energy,
            decisions=record.decisions,
            config=record.config,
            end_s=record.end_s,
            power_w=record.power_w,
            node_state=record.node_state,
        )
        results.summary = results._summarise(record)
        return results

    # ------------------------------------------------------------- summary
    def _summarise(self, record: RunRecord) -> dict[str, Any]:
        t = self.jobs
        done = t["state"] == "completed"
        wait = (t["start_s"] - t["submit_s"])[done]
        run = (t["finish_s"] - t["start_s"])[done]
        bsld = np.maximum((wait + run) / np.maximum(run, BSLD_TAU_S), 1.0)
        n_nodes = self.time_in_state_s.shape[0]
        span = self.end_s
        energy = {label: float(self.energy_by_state_j[s]) for s, label in enumerate(STATE_LABELS)}
        total = float(self.energy_by_state_j.sum())
        computing_s = float(self.time_in_state_s[:, 3].sum())
        first_submit = float(t["submit_s"].min()) if len(t["submit_s"]) else 0.0
        last_finish = float(np.nanmax(t["finish_s"])) if done.any() else first_submit

        def stat(fn, values) -> float:
            return float(fn(values)) if len(values) else math.nan

        mean_wait = stat(np.mean, wait)
        summary = {
            "jobs_submitted": int(len(t["job_id"])),
            "jobs_completed": int(done.sum()),
            "jobs_rejected": int(len(self.rejected)),
            "jobs_killed": int(t["killed"].sum()),
            "jobs_unfinished": int(len(t["job_id"]) - done.sum() - len(self.rejected)),
            "mean_wait_s": mean_wait,
            "mean_wait_min": mean_wait / 60.0,
            "median_wait_s": stat(np.median, wait),
            "p95_wait_s": stat(lambda v: np.percentile(v, 95), wait),
            "max_wait_s": stat(np.max, wait),
            "mean_bounded_slowdown": stat(np.mean, bsld),
            "makespan_s": last_finish - first_submit,
            "simulated_span_s": span,
            "utilization": computing_s / (n_nodes * span) if span > 0 else math.nan,
            "energy_j": energy,
            "total_energy_j": total,
            "wasted_energy_j": total - energy["computing"],
            "wasted_energy_mwh": (total - energy["computing"]) / 3.6e9,
            "switch_ons": record.switch_ons,
            "switch_offs": record.switch_offs,
            "decisions": record.passes,
        }
        own = summary.keys() | {"config", "version"}
        clash = sorted(own & record.policy_summary.keys())
        if clash:
            name = (self.config.get("policy") or {}).get("name", "the policy")
            raise PolicyError(f"{name}: its summary entries {clash} would replace the run's own")
        summary.update(record.policy_summary)
        summary["config"] = self.config
        summary["version"] = self.config.get("version")
        return summary

    # -------------------------------------------------------------- tables
    def job_table(self) -> dict[str, np.ndarray]:
        """Per-job columns, with wait, turnaround, slowdown and bounded slowdown."""
        t = self._job_metrics()
        t["reason"] = np.array([self.rejected.get(int(i), "") for i in t["index"]], dtype=object)
        sizes, flat = self.allocation_arrays()
        ids = list(map(str, flat.tolist()))
        ends = np.cumsum(sizes).tolist()
        t["nodes"] = np.array(
            [
                " ".join(ids[end - size : end])
                for size, end in zip(sizes.tolist(), ends, strict=True)
            ],
            dtype=object,
        )
        return t

    def _job_metrics(self) -> dict[str, np.ndarray]:
        """:meth:`job_table` without its text columns (``reason``, ``nodes``)."""
        t = dict(self.jobs)
        t["wait_s"] = t["start_s"] - t["submit_s"]
        t["turnaround_s"] = t["finish_s"] - t["submit_s"]
        run = t["finish_s"] - t["start_s"]
        with np.errstate(divide="ignore", invalid="ignore"):
            t["slowdown"] = t["turnaround_s"] / run
        t["bounded_slowdown"] = np.maximum(t["turnaround_s"] / np.maximum(run, BSLD_TAU_S), 1.0)
        return t

    def allocation_arrays(
        self, low: int = 0, high: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every job's allocation at once: node counts (0 for none) and the node ids, flat.

        Job ``i`` has the ids ``flat[offsets[i]:offsets[i] + counts[i]]``,
        ``offsets`` being the counts' running sum before ``i``; ``flat`` is
        int32, or int64 from a run's own storage past 65,536 nodes. Made
        without an array per job from that storage
        (:meth:`~hpcpower.engine.storage.Gangs.job_order`). ``low``,
        ``high``: only jobs ``low:high`` (a whole trace's allocations read
        a block of jobs at a time).
        """
        allocations = self.allocations
        if isinstance(allocations, Gangs):
            return allocations.job_order(low, high)
        picked = allocations[low:high]
        sizes = np.fromiter(
            (0 if g is None else len(g) for g in picked), dtype=np.int64, count=len(picked)
        )
        flat = np.empty(int(sizes.sum()), dtype=np.int32)
        at = 0
        for gang in picked:
            if gang is not None:
                flat[at : at + len(gang)] = gang
                at += len(gang)
        return sizes, flat

    def allocation_sizes(self) -> np.ndarray:
        """Each job's node count (0 for none): :meth:`allocation_arrays`' counts alone."""
        allocations = self.allocations
        if isinstance(allocations, Gangs):
            return allocations.counts()
        return np.fromiter(
            (0 if g is None else len(g) for g in allocations),
            dtype=np.int64,
            count=len(allocations),
        )

    def _allocation_blocks(self) -> Iterator[np.ndarray]:
        """The node ids of :meth:`allocation_arrays`, a block of jobs at a time."""
        for low in range(0, len(self.allocations), _JOBS_AT_ONCE):
            yield self.allocation_arrays(low, low + _JOBS_AT_ONCE)[1]

    def _allocated(self, sizes: np.ndarray) -> np.ndarray:
        """Which jobs have an allocation (``sizes``: the counts of :meth:`allocation_arrays`).

        A run's own storage gives no job an empty gang, so a count of 0 means
        none; a hand-made list may hold an empty one.
        """
        allocations = self.allocations
        if isinstance(allocations, Gangs):
            return sizes > 0
        return np.fromiter(
            (gang is not None for gang in allocations), dtype=bool, count=len(allocations)
        )

    def node_intervals(self) -> list[tuple[int, str, float, float, int]]:
        """Every node's state intervals ``(node, state, start_s, end_s, job_id)``.

        Derived from job allocations and the transition log; whatever is left
        between them is idle or sleeping. Node by node, in time order (see
        :meth:`node_interval_arrays`, the same as arrays).
        """
        a = self.node_interval_arrays()
        labels = [STATE_LABELS[code] for code in a["state"].tolist()]
        return list(
            zip(
                a["node"].tolist(),
                labels,
                a["start_s"].tolist(),
                a["end_s"].tolist(),
                a["job_id"].tolist(),
                strict=True,
            )
        )

    def node_interval_arrays(self) -> dict[str, np.ndarray]:
        """:meth:`node_intervals` as arrays: node, state (codes), start_s, end_s, job_id.

        The chunks of :meth:`node_interval_chunks`, joined.
        """
        chunks = list(self.node_interval_chunks())
        return {name: np.concatenate([c[name] for c in chunks]) for name in _INTERVAL_COLUMNS}

    def interval_instants(self) -> np.ndarray:
        """Every instant a node interval can start or end at, in order, each once.

        Time 0 and the end of the run, the jobs' starts and ends (the end of
        the run for a job not ended; NaN, last, for a job not started) and
        the transitions' starts and ends (cut at the end of the run): the
        instants of :meth:`node_interval_chunks`.
        """
        end_s = float(self.end_s)
        finish = np.asarray(self.jobs["finish_s"], dtype=float)
        _, _, move_start, move_end = self._transition_columns()
        return np.unique(
            np.concatenate(
                [
                    [0.0, end_s],
                    np.asarray(self.jobs["start_s"], dtype=float),
                    np.where(np.isnan(finish), end_s, finish),
                    move_start,
                    np.minimum(move_end, end_s),
                ]
            )
        )

    def _transition_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The transitions' columns: node and state (whole numbers), start_s and end_s.

        A run's own rows are read in place (no copy of a whole trace's
        transitions as one float table); a hand-made list is converted.
        """
        moves = self.transitions
        if isinstance(moves, Rows) and len(moves.codes) == 4:
            return moves.views()  # type: ignore[return-value]
        table = np.asarray(moves, dtype=float).reshape(-1, 4)
        return (
            table[:, 0].astype(np.int64),
            table[:, 1].astype(np.int64),
            table[:, 2].copy(),
            table[:, 3].copy(),
        )

    def node_interval_chunks(
        self, nodes_per_chunk: int = 32, *, instants: np.ndarray | None = None
    ) -> Iterator[dict[str, np.ndarray]]:
        """:meth:`node_interval_arrays`, a few nodes at a time (bounded memory on whole traces).

        A node's spans (its jobs, then its transitions, in time order; ties
        in the order they were recorded) come with the gaps between them:
        before the first transition a node rests in the run's initial state,
        after a switch-on idle, after a switch-off asleep. Zero-length spans
        other than jobs are left out. Each chunk holds every interval of
        ``nodes_per_chunk`` consecutive nodes, node by node, in time order.

        With ``instants`` (:meth:`interval_instants`), each chunk also has
        ``start_at`` and ``end_at``: the index in ``instants`` of each
        interval's start and end, looked up once per job and per transition
        rather than once per interval (unless a span has no time, NaN, as
        only a hand-made record's can: then the chunks come without them).
        """
        n = self.time_in_state_s.shape[0]
        end_s = float(self.end_s)
        initial = STATE_CODES[self.config.get("initial_state") or "idle"]
        t = self.jobs
        job_start = np.asarray(t["start_s"], dtype=float)
        job_end = np.where(np.isnan(t["finish_s"]), end_s, t["finish_s"])
        sizes = self.allocation_sizes()
        move_node, move_state, move_start, move_end = self._transition_columns()
        # The spans: the jobs' node ids in job order, then the transitions.
        # Grouped node by node, each node's spans in that order. (The jobs'
        # ids are read a block of jobs at a time, once to count and once per
        # range of nodes, rather than held as one array of a whole trace's
        # ids while they are grouped.)
        per_node = _node_counts(move_node, n)
        for block in self._allocation_blocks():
            per_node += _node_counts(block, n)
        firsts = np.concatenate(([0], np.cumsum(per_node)))
        n_jobs = len(sizes)
        moved = len(move_node) > 0
        spanned = sizes > 0
        if instants is not None and any(
            np.isnan(bound).any()
            for bound in (job_start[spanned], job_end[spanned], move_start, move_end)
        ):
            instants = None  # (a hand-made record's span without a time: looked up as times)
        if instants is not None:
            # Where each job and transition starts and ends among the instants.
            at = (
                _index_in(instants, job_start),
                _index_in(instants, job_end),
                _index_in(instants, move_start),
                _index_in(instants, np.minimum(move_end, end_s)),
            )
            ends_at = (_index_in(instants, np.zeros(1))[0], _index_in(instants, [end_s])[0])
        for first, last in _node_ranges(firsts, nodes_per_chunk):
            # The spans of nodes first:last by node, each node's in order
            # (its jobs, then its transitions): the job's index for a job's
            # span, n_jobs plus the row for a transition's.
            by_node = _group_by_node(self._span_refs(sizes, move_node), firsts, first, last)
            # (No node: one empty chunk, as callers zip the chunks with their starts.)
            for low in range(first, max(last, first + 1), nodes_per_chunk):
                high = min(low + nodes_per_chunk, n)
                picked = by_node[firsts[low] - firsts[first] : firsts[high] - firsts[first]]
                job = picked < n_jobs
                ref = np.where(job, picked, 0)
                row = np.where(job, 0, picked - n_jobs)
                yield _intervals(
                    np.repeat(np.arange(low, high, dtype=np.int64), per_node[low:high]),
                    np.where(job, job_start[ref], move_start[row] if moved else 0.0),
                    np.where(job, job_end[ref], np.minimum(move_end[row], end_s) if moved else 0.0),
                    np.where(job, COMPUTING, move_state[row] if moved else 0).astype(np.int8),
                    np.where(job, picked, -1),
                    np.arange(low, high),
                    initial,
                    end_s,
                    None
                    if instants is None
                    else (
                        np.where(job, at[0][ref], at[2][row] if moved else 0),
                        np.where(job, at[1][ref], at[3][row] if moved else 0),
                        *ends_at,
                    ),
                )
            # (Let the range go before the next is grouped: the chunks' slices
            # view it. Every range has a chunk at least, so all are bound.)
            del by_node, picked, ref, row, job

    def _span_refs(
        self, sizes: np.ndarray, move_node: np.ndarray
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Every span's node and reference, a block at a time: ``(nodes, refs)``.

        The jobs' node ids in job order, each referring to its job's index,
        then the transitions' nodes, each referring to ``len(sizes)`` plus its row.
        """
        n_jobs = len(sizes)
        kind = np.int32 if n_jobs + len(move_node) < 2**31 else np.int64
        for low, block in zip(
            range(0, n_jobs, _JOBS_AT_ONCE), self._allocation_blocks(), strict=True
        ):
            high = min(low + _JOBS_AT_ONCE, n_jobs)
            yield block, np.repeat(np.arange(low, high, dtype=kind), sizes[low:high])
        yield move_node, np.arange(n_jobs, n_jobs + len(move_node), dtype=kind)

    def to_pandas(self, what: str = "jobs"):
        """A table as a DataFrame: ``"jobs"``, ``"nodes"``, ``"states"`` or ``"decisions"``."""
        require("pandas", "tables", "Results.to_pandas")
        import pandas as pd

        if what == "jobs":
            return pd.DataFrame(self.job_table())
        if what == "nodes":
            frame = pd.DataFrame(
                self.node_intervals(), columns=["node", "state", "start_s", "end_s", "job_id"]
            )
            # The job's id in the workload, as in the jobs table; "" for no job.
            names = np.append(self.jobs["job_id"], "")
            frame["job_id"] = names[frame["job_id"].to_numpy()]
            return frame
        if what == "states":
            columns = ["time_s", *STATE_LABELS]
            rows = self.state_counts
            if isinstance(rows, (Rows, CountRows)):
                # Column by column: no list of tuples the size of the run.
                return pd.DataFrame({name: rows.column(k) for k, name in enumerate(columns)})
            return pd.DataFrame(rows, columns=columns)
        if what == "decisions":
            return pd.DataFrame(self.decisions)
        raise ValueError(f"unknown table {what!r}: use jobs, nodes, states or decisions")

    def _repr_html_(self) -> str:
        from hpcpower._html import results_html

        return results_html(self)

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"<Results {s.get('jobs_completed')}/{s.get('jobs_submitted')} jobs, "
            f"mean wait {s.get('mean_wait_s', math.nan) / 60:.2f} min, "
            f"wasted {s.get('wasted_energy_j', math.nan) / 3.6e9:.3f} MWh>"
        )


_NO_INTS = np.zeros(0, dtype=np.int64)


_INTERVAL_COLUMNS = ("node", "state", "start_s", "end_s", "job_id")


#: Jobs whose allocations are read at once where a whole trace's are read in turn.
_JOBS_AT_ONCE = 4096
#: Spans :func:`_group_by_node` sorts at once (bounded temporary arrays).
_SPANS_AT_ONCE = 1 << 16
#: Spans grouped by node at once, at least (:func:`_node_ranges`): 16 MB of int32.
_GROUPED_AT_ONCE = 1 << 22
#: Node ranges a run's spans are grouped in, at most about (:func:`_node_ranges`).
_RANGES = 4


def _node_counts(nodes: np.ndarray, n: int) -> np.ndarray:
    """How many of ``nodes`` are each of ``0..n-1``, counted a block at a time.

    (``np.bincount`` copies its input to int64 first: 77 MB for SDSC Blue's
    9.6 million int32 gang entries.)
    """
    counts = np.zeros(n, dtype=np.int64)
    for low in range(0, len(nodes), _SPANS_AT_ONCE):
        counts += np.bincount(nodes[low : low + _SPANS_AT_ONCE], minlength=n)[:n]
    return counts


def _node_ranges(firsts: np.ndarray, nodes_per_chunk: int) -> list[tuple[int, int]]:
    """Ranges of whole chunks of nodes whose spans are grouped at once (see :func:`_group_by_node`).

    Each range holds at most ``max(_GROUPED_AT_ONCE, spans / _RANGES)``
    spans, or one chunk: the grouped spans of a whole trace are not held at
    once (4 bytes a span), for a read of the allocations per range (at
    most about ``_RANGES`` of them, so that the reads do not grow with the
    square of the trace).
    """
    n = len(firsts) - 1
    most = max(_GROUPED_AT_ONCE, -(-int(firsts[-1]) // _RANGES))
    # Where each chunk ends among the spans.
    ends = firsts[np.minimum(np.arange(nodes_per_chunk, n + nodes_per_chunk, nodes_per_chunk), n)]
    starts = block_starts(ends, most) if n else [0, 0]
    return [
        (a * nodes_per_chunk, min(b * nodes_per_chunk, n)) for a, b in itertools.pairwise(starts)
    ]


def block_starts(ends: np.ndarray, most: int, rows: int | None = None) -> list[int]:
    """Where blocks of items begin (the item count last): greedy, in order.

    ``ends`` are the items' running totals (of spans, node ids, ...); each
    block's total is ``most`` at most, or the block is one item, and it
    holds ``rows`` items at most (any number for ``None``).
    """
    n = len(ends)
    starts = [0]
    while starts[-1] < n:
        low = starts[-1]
        high = int(np.searchsorted(ends, (ends[low - 1] if low else 0) + most, side="right"))
        high = max(high, low + 1)
        starts.append(min(high, n) if rows is None else min(high, low + rows, n))
    return starts


def _group_by_node(
    parts: Iterable[tuple[np.ndarray, np.ndarray]], firsts: np.ndarray, first: int, last: int
) -> np.ndarray:
    """The references of the spans of nodes ``first:last``, grouped by node, each node's in order.

    ``parts`` hold ``(nodes, refs)``: the node and the reference of each
    span; ``firsts[v]`` is where node ``v``'s spans begin among all spans.
    The same as the references in the order of a stable argsort of the
    nodes of the range, without joining the parts or an index array of
    int64 the size of the whole: each block of spans is sorted alone and
    put after the node's spans of the blocks before.
    """
    n = len(firsts) - 1
    total = int(firsts[last] - firsts[first])
    grouped = None
    cursor = firsts[first:last] - firsts[first]
    whole = first == 0 and last == n
    for nodes, refs in parts:
        if grouped is None:
            grouped = np.empty(total, dtype=refs.dtype)
        for low in range(0, len(nodes), _SPANS_AT_ONCE):
            block = nodes[low : low + _SPANS_AT_ONCE]
            ref = refs[low : low + _SPANS_AT_ONCE]
            if not whole:
                kept = (block >= first) & (block < last)
                block = block[kept] - first
                ref = ref[kept]
            order = np.argsort(block, kind="stable")
            count = np.bincount(block, minlength=last - first)[: last - first]
            sorted_nodes = block[order]
            # A span's place among its node's spans of this block.
            rank = np.arange(len(block)) - (np.cumsum(count) - count)[sorted_nodes]
            grouped[cursor[sorted_nodes] + rank] = ref[order]
            cursor += count
    return np.zeros(0, dtype=np.int64) if grouped is None else grouped


def _intervals(
    node, start, end, state, job, nodes, initial: int, end_s: float, at: tuple | None = None
) -> dict:
    """The intervals of ``nodes`` from their spans (see :meth:`Results.node_interval_chunks`).

    ``at``: ``(start_at, end_at, zero_at, end_s_at)``, the instants' indices
    of each span's start and end, of time 0 and of ``end_s``; the intervals
    then have ``start_at`` and ``end_at`` too. (The index is monotone in the
    time, so the latest of two times has the larger index.)
    """
    # Node by node, by (start, end); ties keep the order given (stable).
    order = np.lexsort((end, start, node))
    node, start, end, state, job = (a[order] for a in (node, start, end, state, job))
    m = len(node)
    first = np.ones(m, dtype=bool)  # the first span of its node
    first[1:] = node[1:] != node[:-1]
    last = np.ones(m, dtype=bool)
    last[:-1] = first[1:]
    # The clock before each span: the latest end of the node's earlier spans.
    clock = np.zeros(m)
    clock[1:] = end[:-1]
    clock[first] = 0.0
    overlapping = bool(np.any(clock[1:] > start[1:]))
    if overlapping:  # the running maximum
        clock = _running_clock(node.tolist(), end.tolist())
    # The state a node rests in before each span: after its latest transition.
    moved = state != COMPUTING
    positions = np.arange(m)
    latest = np.maximum.accumulate(np.where(moved, positions, -1)) if m else positions
    before = np.full(m, -1, dtype=np.int64)
    before[1:] = latest[:-1]
    starts_at = np.maximum.accumulate(np.where(first, positions, 0)) if m else positions
    after = np.where(state == SWITCHING_ON, IDLE, SLEEPING).astype(np.int8)
    resting = np.where(before >= starts_at, after[np.maximum(before, 0)], initial)
    resting_after = np.where(moved, after, resting)
    # Rows: a gap before a span, the span, and after a node's last span the
    # gap to the end; a node without spans rests the whole run.
    gap = start > clock
    shown = (end > start) | ~moved
    tail_clock = np.maximum(clock, end)
    tail = last & (tail_clock < end_s)
    # Span by span, its rows in that order (gap, span, tail): the spans are
    # in node order, so the rows are too, with no sort.
    kept = np.stack((gap, shown, tail), axis=1).ravel()
    rows = {
        "node": np.repeat(node, 3)[kept],
        "state": np.stack((resting, state, resting_after), axis=1).ravel()[kept],
        "start_s": np.stack((clock, start, tail_clock), axis=1).ravel()[kept],
        "end_s": np.stack((start, end, np.full(m, end_s)), axis=1).ravel()[kept],
        "job_id": np.stack((np.full(m, -1), job, np.full(m, -1)), axis=1).ravel()[kept],
    }
    rest: dict[str, Any] = {"state": initial, "start_s": 0.0, "end_s": end_s, "job_id": -1}
    if at is not None:
        zero_at, end_s_at = at[2], at[3]
        start_at, end_at = (np.asarray(a, dtype=np.int64)[order] for a in at[:2])
        clock_at = np.empty(m, dtype=np.int64)
        clock_at[1:] = end_at[:-1]
        if overlapping:
            clock_at = _running_clock(node.tolist(), end_at.tolist()).astype(np.int64)
        clock_at[first] = zero_at
        tail_at = np.maximum(clock_at, end_at)
        rows["start_at"] = np.stack((clock_at, start_at, tail_at), axis=1).ravel()[kept]
        rows["end_at"] = np.stack((start_at, end_at, np.full(m, end_s_at)), axis=1).ravel()[kept]
        rest.update(start_at=zero_at, end_at=end_s_at)
    idle_nodes = _without_spans(nodes, node) if end_s > 0 else nodes[:0]
    if len(idle_nodes):
        # Each resting the whole run, before the rows of the nodes after it.
        place = np.searchsorted(rows["node"], idle_nodes)
        rest["node"] = idle_nodes
        rows = {name: np.insert(column, place, rest[name]) for name, column in rows.items()}
    dtypes = {"node": np.int64, "state": np.int8, "job_id": np.int64}
    dtypes.update(start_at=np.int64, end_at=np.int64)
    return {name: rows[name].astype(dtypes.get(name, float), copy=False) for name in rows}


def _index_in(instants: np.ndarray, times) -> np.ndarray:
    """The index of each of ``times`` in ``instants`` (which must hold them all)."""
    times = np.asarray(times, dtype=float)
    at = np.searchsorted(instants, times)
    if not np.array_equal(instants[np.minimum(at, len(instants) - 1)], times, equal_nan=True):
        raise RuntimeError("a time of the run's intervals is not among its instants")
    return at


def _without_spans(nodes: np.ndarray, node: np.ndarray) -> np.ndarray:
    """The ids of ``nodes`` (consecutive, increasing) that are not in ``node``.

    (``np.setdiff1d`` sorts ``node`` first: most of the cost of a chunk of
    one node on a whole trace.)
    """
    if not len(nodes):
        return nodes
    seen = np.zeros(len(nodes), dtype=bool)
    seen[node - nodes[0]] = True
    return nodes[~seen]


def _running_clock(nodes: list[int], ends: list[float]) -> np.ndarray:
    """The latest end of each span's earlier spans on its node (0 for a node's first)."""
    clock = np.zeros(len(nodes))
    latest = 0.0
    previous = -1
    for k, (node, end) in enumerate(zip(nodes, ends, strict=True)):
        if node != previous:
            latest = 0.0
            previous = node
        clock[k] = latest
        latest = max(latest, end)
    return clock
