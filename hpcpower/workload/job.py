"""Jobs and workloads: the records every reader and generator produces.

A :class:`Job` is rigid: it needs ``res`` nodes at once for ``runtime_s``
seconds and declares a walltime ``reqtime_s``. Policies may read ``reqtime_s``
but never ``runtime_s`` of a job that has not finished.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Job:
    """One rigid parallel job.

    Attributes:
        id: Position in the workload (0, 1, ...); unique and in submit order.
        name: The job's identifier in its source (SWF job number, JSON job_id).
        submit_s: Submission time, seconds from the start of the simulation.
        res: Number of nodes requested.
        reqtime_s: Requested walltime in seconds.
        runtime_s: Actual runtime in seconds (unknown to policies until it ends).
        user_id: Submitting user, or -1 when unknown.
        profile: The job's profile name in its source (Batsim and paper JSON
            ``profile``), written to ``jobs.csv``; empty when the source has
            none (SWF, generated workloads).
    """

    id: int
    name: str
    submit_s: float
    res: int
    reqtime_s: float
    runtime_s: float
    user_id: int = -1
    profile: str = ""

    def _repr_html_(self) -> str:
        from hpcpower._html import job_html

        return job_html(self)


@dataclass(frozen=True, slots=True)
class Dropped:
    """A source record that was not turned into a job, and why.

    Attributes:
        where: File and line (``trace.swf:123``) or JSON position (``jobs[12]``).
        name: The record's job identifier, as written in the source.
        reason: Human-readable reason (``"cancelled: runtime -1"``).
    """

    where: str
    name: str
    reason: str


@dataclass
class Workload:
    """Jobs in submit order plus what the reader noticed on the way.

    Attributes:
        jobs: Jobs sorted by (submit time, source order); ``jobs[i].id == i``.
        source: Where the jobs came from (a path or a generator description).
        max_nodes: Size of the machine the source declares (SWF MaxNodes/MaxProcs
            mapped to nodes, JSON ``nb_res``), or ``None`` if not declared.
        dropped: Records the reader skipped, each with its reason.
        notes: Other adjustments the reader made (time shift, filled fields).
        time_origin: How simulated time maps to wall-clock time, when the
            source says: ``unix_start_time`` (the trace's time 0, seconds
            since 1970), ``time_zone`` and ``shift_s`` (subtracted from the
            trace's times), so that a job's absolute submit time is
            ``unix_start_time + shift_s + submit_s``; empty when unknown.
    """

    jobs: list[Job]
    source: str = ""
    max_nodes: int | None = None
    dropped: list[Dropped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    time_origin: dict[str, object] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.jobs)

    def __repr__(self) -> str:
        span = self.jobs[-1].submit_s - self.jobs[0].submit_s if self.jobs else 0.0
        return (
            f"<Workload {self.source!r}: {len(self.jobs)} jobs over {span:.0f} s, "
            f"{len(self.dropped)} dropped>"
        )
