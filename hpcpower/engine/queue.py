"""The waiting queue and the table of running jobs.

The queue keeps jobs in arrival order and, at the same time, in SNF order
(requested nodes, requested time, arrival id) in a sorted list, so that both
FCFS and SNF policies read their order without sorting at every pass.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from hpcpower.engine.cluster import read_only
from hpcpower.workload.job import Job


def snf_key(job: Job) -> tuple[int, float, int]:
    """SNF priority: fewest requested nodes, then shortest walltime, then arrival."""
    return (job.res, job.reqtime_s, job.id)


class JobQueue:
    """Waiting jobs, readable in arrival (FCFS) order and in SNF order.

    Besides the job objects, the queue keeps the FCFS-ordered columns
    ``res`` and ``reqtime_s`` in numpy arrays (removed jobs are masked and
    compacted now and then), so a backfilling scan over a long queue is a
    few array operations instead of a Python loop.
    """

    def __init__(self) -> None:
        self._fcfs: dict[int, Job] = {}
        self._snf_keys: list[tuple[int, float, int]] = []
        self._snf_jobs: list[Job] = []
        # The SNF-ordered columns res and reqtime_s, kept in step with
        # _snf_jobs (shifted on insert and removal) for compiled planners,
        # from the first time one asks for them (FCFS policies never do).
        self._snf_res = np.empty(64, dtype=np.int64)
        self._snf_req = np.empty(64, dtype=float)
        self._snf_kept = False
        self._snf_views: tuple[np.ndarray, np.ndarray] | None = None
        self._ids = np.empty(64, dtype=np.int64)
        self._res = np.empty(64, dtype=np.int64)
        self._req = np.empty(64, dtype=float)
        self._alive = np.zeros(64, dtype=bool)
        self._slot: dict[int, int] = {}
        self._used = 0
        self._columns: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._views: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def push(self, job: Job) -> None:
        """Add an arrived job."""
        job_id = job.id
        self._fcfs[job_id] = job
        self._columns = None
        key = snf_key(job)
        i = bisect.bisect(self._snf_keys, key)
        self._snf_keys.insert(i, key)
        self._snf_jobs.insert(i, job)
        if self._snf_kept:
            self._snf_insert(i, job)
        if self._used == len(self._ids):
            self._compact(grow=True)
        k = self._used
        self._ids[k] = job_id
        self._res[k] = job.res
        self._req[k] = job.reqtime_s
        self._alive[k] = True
        self._slot[job_id] = k
        self._used = k + 1

    def remove(self, job: Job) -> None:
        """Take a job out (it starts)."""
        job_id = job.id
        del self._fcfs[job_id]
        self._columns = None
        keys = self._snf_keys
        i = bisect.bisect_left(keys, snf_key(job))
        del keys[i]
        del self._snf_jobs[i]
        if self._snf_kept:
            n = len(keys)  # jobs left
            if i < n:
                self._snf_res[i:n] = self._snf_res[i + 1 : n + 1]
                self._snf_req[i:n] = self._snf_req[i + 1 : n + 1]
        self._alive[self._slot.pop(job_id)] = False

    def _compact(self, grow: bool) -> None:
        keep = np.flatnonzero(self._alive[: self._used])
        size = max(64, 2 * len(keep)) if grow else len(self._ids)
        size = max(size, len(keep) + 1)
        for name in ("_ids", "_res", "_req"):
            old = getattr(self, name)
            new = np.empty(size, dtype=old.dtype)
            new[: len(keep)] = old[keep]
            setattr(self, name, new)
        self._alive = np.zeros(size, dtype=bool)
        self._alive[: len(keep)] = True
        self._used = len(keep)
        self._slot = {int(job_id): k for k, job_id in enumerate(self._ids[: self._used].tolist())}

    def fcfs_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ids, res, reqtime_s)`` of the waiting jobs in arrival order.

        The arrays are kept until the queue changes: read them, never write.
        """
        if self._columns is None:
            used = self._used
            alive = self._alive[:used]
            columns = (self._ids[:used][alive], self._res[:used][alive], self._req[:used][alive])
            for column in columns:
                column.flags.writeable = False
            self._columns = columns
        return self._columns

    def _snf_insert(self, i: int, job: Job) -> None:
        """Insert ``job`` at SNF position ``i`` of the SNF columns."""
        n = len(self._snf_jobs) - 1  # jobs before this one
        if n == len(self._snf_res):
            self._snf_res = np.resize(self._snf_res, 2 * n)
            self._snf_req = np.resize(self._snf_req, 2 * n)
        if i < n:  # (numpy copies overlapping slices as if through a buffer)
            self._snf_res[i + 1 : n + 1] = self._snf_res[i:n]
            self._snf_req[i + 1 : n + 1] = self._snf_req[i:n]
        self._snf_res[i] = job.res
        self._snf_req[i] = job.reqtime_s

    def snf_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """``(res, reqtime_s)`` of the waiting jobs in SNF order (as :meth:`snf`).

        Read-only views of buffers the queue shifts as it changes: read them
        within the pass, never keep them.
        """
        n = len(self._snf_jobs)
        if not self._snf_kept:
            # Made now and kept in step from here on.
            self._snf_kept = True
            size = max(64, 2 * n)
            self._snf_res = np.empty(size, dtype=np.int64)
            self._snf_req = np.empty(size, dtype=float)
            self._snf_res[:n] = [job.res for job in self._snf_jobs]
            self._snf_req[:n] = [job.reqtime_s for job in self._snf_jobs]
        views = self._snf_views
        if views is None or views[0].base is not self._snf_res:
            # Made again only when the buffers were replaced: a slice of a
            # read-only view is read-only, and costs a fifth of making one.
            views = self._snf_views = (read_only(self._snf_res), read_only(self._snf_req))
        return views[0][:n], views[1][:n]

    def slots(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
        """``(ids, res, reqtime_s, alive, used)``: the buffers behind :meth:`fcfs_columns`.

        Slots ``0 .. used - 1`` hold jobs in arrival order; those with
        ``alive`` false have left the queue. For compiled planners, which
        skip them cheaper than the queue can compact them. Read-only.
        """
        views = self._views
        if views is None or views[0].base is not self._ids:
            # Made again only after a compaction replaced the buffers.
            views = self._views = (
                read_only(self._ids),
                read_only(self._res),
                read_only(self._req),
                read_only(self._alive),
            )
        return (*views, self._used)

    @property
    def waiting(self) -> dict[int, Job]:
        """The waiting jobs by id, in arrival order (the engine's own; never change it)."""
        return self._fcfs

    def job(self, job_id: int) -> Job:
        """The waiting job with this id."""
        return self._fcfs[job_id]

    def min_res(self) -> int:
        """Fewest nodes any waiting job requests (0 when the queue is empty)."""
        return self._snf_keys[0][0] if self._snf_keys else 0

    def __contains__(self, job: Job) -> bool:
        return job.id in self._fcfs

    def __len__(self) -> int:
        return len(self._fcfs)

    def __iter__(self) -> Iterator[Job]:
        return iter(self._fcfs.values())

    def fcfs(self) -> list[Job]:
        """Jobs in arrival order."""
        return list(self._fcfs.values())

    def snf(self) -> list[Job]:
        """Jobs in SNF order (a copy)."""
        return list(self._snf_jobs)

    def __repr__(self) -> str:
        return _describe(self._fcfs)

    def _repr_html_(self) -> str:
        from hpcpower._html import queue_html

        return queue_html(list(self._fcfs.values()))


class QueueView:
    """The waiting queue as a policy sees it: read in any order, never changed.

    Every method of :class:`JobQueue` that reads is here (its arrays come
    read-only), bound at once so that reading costs no extra call;
    ``push`` and ``remove`` are not.

    Attributes:
        fcfs: Jobs in arrival order (a copy): :meth:`JobQueue.fcfs`.
        snf: Jobs in SNF order (a copy): :meth:`JobQueue.snf`.
        job: The waiting job with an id: :meth:`JobQueue.job`.
        min_res: Fewest nodes any waiting job requests: :meth:`JobQueue.min_res`.
        fcfs_columns: ``(ids, res, reqtime_s)`` in arrival order: :meth:`JobQueue.fcfs_columns`.
        snf_columns: ``(res, reqtime_s)`` in SNF order: :meth:`JobQueue.snf_columns`.
        slots: The buffers behind them: :meth:`JobQueue.slots`.
    """

    __slots__ = (
        "_jobs",
        "fcfs",
        "snf",
        "job",
        "min_res",
        "fcfs_columns",
        "snf_columns",
        "slots",
    )

    def __init__(self, queue: JobQueue) -> None:
        self._jobs = queue._fcfs
        self.fcfs = queue.fcfs
        self.snf = queue.snf
        self.job = queue.job
        self.min_res = queue.min_res
        self.fcfs_columns = queue.fcfs_columns
        self.snf_columns = queue.snf_columns
        self.slots = queue.slots

    def __contains__(self, job: Job) -> bool:
        return job.id in self._jobs

    def __len__(self) -> int:
        return len(self._jobs)

    def __iter__(self) -> Iterator[Job]:
        return iter(self._jobs.values())

    def __repr__(self) -> str:
        return _describe(self._jobs)

    def _repr_html_(self) -> str:
        from hpcpower._html import queue_html

        return queue_html(list(self._jobs.values()))


def _describe(waiting: dict[int, Job]) -> str:
    """The queue's repr: how many jobs wait, and the first few as ``name(res n)``.

    Jobs show their id in the workload (``Job.name``), as ``jobs.csv`` does.
    """
    head = ", ".join(f"{j.name}({j.res}n)" for j in list(waiting.values())[:8])
    more = "…" if len(waiting) > 8 else ""
    return f"<JobQueue {len(waiting)} waiting: {head}{more}>"


@dataclass(frozen=True, slots=True)
class Running:
    """A started job: when it started and on which nodes.

    Frozen: policies read it. ``finish_s`` is set by the engine when the job
    ends; policies must not read it before (it would reveal the actual runtime).
    """

    job: Job
    start_s: float
    nodes: np.ndarray
    finish_s: float = float("nan")

    @property
    def expected_end_s(self) -> float:
        """Start plus requested walltime: what a scheduler may assume."""
        return self.start_s + self.job.reqtime_s
