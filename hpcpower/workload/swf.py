"""Read Standard Workload Format (SWF) traces from the Parallel Workloads Archive.

An SWF file holds one job per line, 18 whitespace-separated numeric fields,
``-1`` meaning "missing". Lines starting with ``;`` are header comments
(``; MaxProcs: 1152``). Plain and gzip-compressed files are both accepted; gzip
is recognised by its magic bytes, not by the file name.

Rules, applied in this order (every one is reported in ``Workload.dropped`` or
``Workload.notes``, so nothing changes silently):

1. **Malformed input is an error.** A job line without exactly 18 fields, a
   field that is not a finite number, a negative value other than ``-1`` in
   submit time (field 2), runtime (field 4) or requested time (field 9), or a
   non-integer job number or processor count, or any value of 2**53 or more
   (float64 cannot hold it exactly), raises
   :class:`~hpcpower.errors.InputError` naming ``file:line``. ``-1`` is the
   SWF "missing" marker and is handled by the rules below.
1b. **One job per job number.** A preempted or checkpointed job appears as
   several records with its number and status 2, 3 or 4 (partial
   executions). If it also has a summary record (``Preemption: Double``),
   that one is kept and the partial ones dropped; otherwise
   (``Preemption: Yes``) the partial records become one job, the first
   record with their total runtime. Any other repeated job number is an
   error naming both lines.
2. **Cancelled jobs are dropped.** Runtime (field 4) ``-1`` means the job never
   ran; the record is dropped with reason ``"cancelled: runtime -1"``, as the
   paper did when it built its 3000-job slices. The status field (11) is not
   used: a job with status 5 ("cancelled") that has a runtime did occupy its
   processors, so it is kept (the notes count such jobs).
3. **Processors.** The job's processor count is the allocated processors
   (field 5) if > 0, else the requested processors (field 8); this is exactly
   how the paper's JSON slices were made (checked against all 3000 jobs of the
   DAS2-fs1 and SDSC-BLUE slices). If both are <= 0 the record is dropped
   (reason ``"no processor count: allocated and requested processors <= 0"``).
4. **Missing submit time** (field 2 is ``-1``): dropped (reason
   ``"missing submit time: -1"``); a job cannot be placed in time without it.
5. **Runtime 0 is kept**: such a job starts and ends at one instant.
6. **Nodes** = ceil(processors / ``procs_per_node``). The default 1 maps one
   processor to one node, as the paper did (DAS2's 64 CPUs on 64 nodes, SDSC
   Blue's 1152 CPUs on 1152 nodes).
7. **Segments** (``first=N`` or ``jobs=(i, j)``, 1-based and inclusive) count
   *kept* jobs in file order, so ``first=3000`` on DAS2-fs1 gives the paper's
   ``DAS2-fs1-0-3000`` slice. A dropped record is reported with the segment
   that contains the next kept job (records after the last kept job go with
   the segment that reaches the end of the file), so consecutive segments
   partition the drops.
8. **Requested time** (field 9) ``-1`` is handled by ``on_missing_reqtime``:
   ``"runtime"`` (default) fills it with the job's runtime, ``"drop"`` drops
   the record (reason ``"missing requested time: -1"``), ``"error"`` raises,
   and a number fills it with that many seconds. The notes count filled jobs.
9. **Time shift** (``shift_to_zero=True``): the earliest submit time among the
   selected jobs (the first kept job's, in any file in submit order, as SWF
   files are) is subtracted from every submit time.
10. **Order**: jobs are sorted by (submit time, file order); ``Job.id`` is the
    position in that order and ``Job.name`` the SWF job number.
11. **Machine size** (``Workload.max_nodes``): ceil(MaxProcs / procs_per_node)
    when the header gives ``MaxProcs``, else ``MaxNodes`` (taken as nodes),
    else ``None``. Leading integers are read, so ``MaxNodes: 32 (dual CPU)``
    is 32.

Parsing is vectorised: comment lines are filtered in Python and the numbers are
read by ``numpy.loadtxt`` on the remaining lines (its C parser was the fastest
of the options measured on the 243k-line SDSC Blue log). The lines are handed
to it one by one, never held all at once as Python strings (on the SDSC Blue
log those would take more memory than its jobs). Only when that fails is a
line-by-line pass made, to name the offending line.
"""

from __future__ import annotations

import io
import math
import os
import re
import warnings
from array import array
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np

from hpcpower.errors import InputError
from hpcpower.workload._io import ceil_div, check_procs_per_node, make_jobs, read_source
from hpcpower.workload.job import Dropped, Workload

__all__ = ["SWF_FIELDS", "read_swf"]

#: Names of the 18 SWF fields, in file order (field k is ``SWF_FIELDS[k - 1]``).
SWF_FIELDS: tuple[str, ...] = (
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable number",
    "queue number",
    "partition number",
    "preceding job",
    "think time",
)

_N = 18
_JOB, _SUBMIT, _RUN, _ALLOC, _REQPROCS, _REQTIME, _STATUS, _USER = 0, 1, 3, 4, 7, 8, 10, 11

#: Beyond this, float64 (which every field is read as) skips integers.
_EXACT = 2.0**53
#: Status values of a partial execution (a job that was preempted or checkpointed).
_PARTIAL = (2, 3, 4)
REASON_CANCELLED = "cancelled: runtime -1"
REASON_PARTIAL_SUMMARY = "partial execution: the job's summary record is kept"
REASON_PARTIAL_MERGED = "partial execution: merged into the job's first record"
REASON_NO_PROCS = "no processor count: allocated and requested processors <= 0"
REASON_NO_SUBMIT = "missing submit time: -1"
REASON_NO_REQTIME = "missing requested time: -1"

#: Line breaks that str.splitlines knows besides "\n" (latin-1 text).
_ODD_BREAKS = tuple(bytes([c]) for c in b"\r\x0b\x0c\x1c\x1d\x1e\x85")
_HEADER_RE = re.compile(r"^\s*;\s*([A-Za-z]+)\s*:\s*(.*?)\s*$")
_LEADING_INT_RE = re.compile(r"^[+-]?\d+")


def read_swf(
    path: str | os.PathLike[str],
    *,
    procs_per_node: int = 1,
    first: int | None = None,
    jobs: tuple[int, int] | None = None,
    shift_to_zero: bool = True,
    on_missing_reqtime: str | float = "runtime",
) -> Workload:
    """Read an SWF trace (plain or gzipped) into a :class:`Workload`.

    The rules for cancelled jobs, processor counts, missing fields, segments
    and the time shift are listed in this module's docstring.

    Args:
        path: The ``.swf`` or ``.swf.gz`` file.
        procs_per_node: Processors per node; a job needs
            ceil(processors / procs_per_node) nodes. The paper used 1.
        first: Keep only the first ``first`` kept jobs (in file order).
        jobs: Keep only kept jobs ``i..j`` (1-based, inclusive, file order).
            Give ``first`` or ``jobs``, not both.
        shift_to_zero: Subtract the earliest selected submit time from every
            submit time, so the workload starts at 0 s.
        on_missing_reqtime: What to do with requested time ``-1``:
            ``"runtime"`` (fill with the runtime), ``"drop"`` (drop the job),
            ``"error"`` (raise), or a number of seconds to fill in.

    Returns:
        The jobs sorted by (submit time, file order), with dropped records
        and notes.

    Raises:
        InputError: Missing file, malformed line (the message names
            ``file:line``), or an invalid option or segment.
    """
    data, where = read_source(path)
    workload, _ = parse_swf(
        data,
        where,
        procs_per_node=procs_per_node,
        first=first,
        jobs=jobs,
        shift_to_zero=shift_to_zero,
        on_missing_reqtime=on_missing_reqtime,
    )
    return workload


def parse_swf(
    data: bytes,
    where: str,
    *,
    procs_per_node: int = 1,
    first: int | None = None,
    jobs: tuple[int, int] | None = None,
    shift_to_zero: bool = True,
    on_missing_reqtime: str | float = "runtime",
) -> tuple[Workload, dict[str, Any]]:
    """Parse SWF text already read from ``where``; see :func:`read_swf`.

    Returns:
        The workload and a dict of header facts (``max_nodes_header``,
        ``max_procs_header``, ``records``: job lines in the file).
    """
    ppn = check_procs_per_node(procs_per_node)
    fill = _check_fill_rule(on_missing_reqtime)
    segment = _check_segment(first, jobs)
    short = Path(where).name or where

    arr, lineno, comments = _read_lines(data, where)
    header_idx = list(comments)
    header = _parse_header(comments, header_idx, where)
    n_rec = arr.shape[0]
    _check_values(arr, lineno, where)

    reason = np.full(n_rec, "", dtype=object)
    partial_notes = _partial_executions(arr, lineno, reason, where)

    submit = arr[:, _SUBMIT]
    run = arr[:, _RUN]
    alloc = arr[:, _ALLOC]
    reqprocs = arr[:, _REQPROCS]
    reqtime = arr[:, _REQTIME]
    procs = np.where(alloc > 0, alloc, reqprocs)

    # Drop reasons, first matching rule wins (an empty string means kept).
    cancelled = (reason == "") & (run == -1)
    no_procs = (reason == "") & ~cancelled & (procs <= 0)
    no_submit = (reason == "") & ~cancelled & ~no_procs & (submit == -1)
    reason[cancelled] = REASON_CANCELLED
    reason[no_procs] = REASON_NO_PROCS
    reason[no_submit] = REASON_NO_SUBMIT
    missing_req = (reason == "") & (reqtime == -1)
    if fill == "drop":
        reason[missing_req] = REASON_NO_REQTIME
    kept_mask = reason == ""
    kept = np.flatnonzero(kept_mask)
    dropped_rows = np.flatnonzero(~kept_mask)
    notes: list[str] = partial_notes

    # Segment over kept jobs, in file order.
    n_kept = kept.size
    if segment is None:
        sel = kept
        drop_rows = dropped_rows
    else:
        i, j = segment
        if j is None:  # first=N
            j = i
            i = 1
            if j > n_kept:
                raise InputError(f"first={j}, but {where} has only {n_kept} kept jobs")
        elif j > n_kept:
            raise InputError(f"jobs=({i}, {j}), but {where} has only {n_kept} kept jobs")
        sel = kept[i - 1 : j]
        lo = kept[i - 2] if i > 1 else -1
        hi = kept[j - 1] if j < n_kept else n_rec
        drop_rows = dropped_rows[(dropped_rows > lo) & (dropped_rows <= hi)]
        span = f"file lines {lineno[sel[0]]}..{lineno[sel[-1]]}" if sel.size else "no lines"
        notes.append(f"segment: kept jobs {i}..{j} of {n_kept} ({span})")

    dropped = [
        Dropped(where=f"{short}:{ln}", name=_num_name(num), reason=str(why))
        for ln, num, why in zip(
            lineno[drop_rows].tolist(),
            arr[drop_rows, _JOB].tolist(),
            reason[drop_rows].tolist(),
            strict=True,
        )
    ]
    if drop_rows.size:
        counts: dict[str, int] = {}
        for d in dropped:
            counts[d.reason] = counts.get(d.reason, 0) + 1
        notes.append("dropped: " + "; ".join(f"{n} x {why}" for why, n in counts.items()))

    s_submit = submit[sel]
    s_run = run[sel]
    s_req = reqtime[sel].copy()
    s_procs = procs[sel].astype(np.int64)
    s_alloc = alloc[sel]

    n_fill = int(np.count_nonzero(s_req == -1))
    if n_fill:
        if fill == "error":
            r = sel[int(np.argmax(s_req == -1))]
            raise InputError(
                f"{where}:{lineno[r]}: requested time (field 9) is -1 and "
                "on_missing_reqtime='error'"
            )
        if fill == "runtime":
            s_req = np.where(s_req == -1, s_run, s_req)
            notes.append(f"requested time -1 filled with the runtime for {n_fill} jobs")
        else:
            s_req = np.where(s_req == -1, float(fill), s_req)
            notes.append(f"requested time -1 filled with {float(fill):g} s for {n_fill} jobs")

    n_from_req = int(np.count_nonzero(s_alloc <= 0))
    if n_from_req:
        notes.append(
            f"processors: allocated (field 5) used where > 0; requested (field 8) used "
            f"for {n_from_req} jobs whose allocated count is missing"
        )
    nodes = -(-s_procs // ppn)
    if ppn > 1:
        n_up = int(np.count_nonzero(s_procs % ppn))
        notes.append(f"nodes = ceil(processors / {ppn}); {n_up} jobs rounded up to a whole node")

    n_zero = int(np.count_nonzero(s_run == 0))
    if n_zero:
        notes.append(f"{n_zero} jobs with runtime 0 kept (they start and end at one instant)")
    n_status5 = int(np.count_nonzero(arr[sel, _STATUS] == 5))
    if n_status5:
        notes.append(f"{n_status5} kept jobs have status 5 (cancelled) but a runtime: kept")

    shift = 0.0
    if sel.size and shift_to_zero:
        shift = float(s_submit.min())
        first_row = sel[0]
        if shift != submit[first_row]:
            notes.append(
                f"time shift: subtracted {shift:g} s (the earliest selected submit time; the "
                f"file is not in submit order)"
            )
        else:
            notes.append(
                f"time shift: subtracted {shift:g} s (submit time of the first kept job, "
                f"file line {lineno[first_row]})"
            )
    order = np.argsort(s_submit, kind="stable")
    if sel.size and np.any(order != np.arange(sel.size)):
        n_moved = int(np.count_nonzero(order != np.arange(sel.size)))
        notes.append(f"file is not in submit order: {n_moved} jobs moved when sorting")

    numbers = arr[sel[order], _JOB]
    users = arr[sel[order], _USER].astype(np.int64)
    # The whole table is read; let it go before the jobs are made.
    del arr, submit, run, alloc, reqprocs, reqtime, procs
    jobs_out = make_jobs(
        _names(numbers),
        (s_submit[order] - shift).tolist(),
        nodes[order].tolist(),
        s_req[order].tolist(),
        s_run[order].tolist(),
        users.tolist(),
    )

    max_nodes_h = header.get("MaxNodes")
    max_procs_h = header.get("MaxProcs")
    if max_procs_h is not None:
        max_nodes: int | None = ceil_div(max_procs_h, ppn)
        notes.append(f"max_nodes = ceil(MaxProcs {max_procs_h} / {ppn}) = {max_nodes}")
    elif max_nodes_h is not None:
        max_nodes = max_nodes_h
        notes.append(f"max_nodes = MaxNodes {max_nodes_h} (the header gives no MaxProcs)")
    else:
        max_nodes = None
        notes.append("the header gives neither MaxProcs nor MaxNodes: max_nodes unknown")
    if max_nodes is not None and jobs_out:
        n_big = int(np.count_nonzero(nodes > max_nodes))
        if n_big:
            notes.append(f"{n_big} jobs request more than max_nodes = {max_nodes} nodes")
    n_over = int(np.count_nonzero(s_run > s_req))
    if n_over:
        notes.append(f"{n_over} jobs run longer than their requested time")

    workload = Workload(
        jobs=jobs_out,
        source=where,
        max_nodes=max_nodes,
        dropped=dropped,
        notes=notes,
        time_origin=_time_origin(comments, header_idx, shift),
    )
    meta = {
        "max_nodes_header": max_nodes_h,
        "max_procs_header": max_procs_h,
        "records": n_rec,
    }
    return workload, meta


def _check_fill_rule(rule: object) -> str | float:
    if isinstance(rule, str):
        if rule in ("runtime", "drop", "error"):
            return rule
        raise InputError(
            f"on_missing_reqtime must be 'runtime', 'drop', 'error' or a number of "
            f"seconds, got {rule!r}"
        )
    if isinstance(rule, bool) or not isinstance(rule, (int, float)):
        raise InputError(f"on_missing_reqtime must be a string or a number, got {rule!r}")
    if not math.isfinite(rule) or rule < 0:
        raise InputError(f"on_missing_reqtime must be a finite number >= 0, got {rule!r}")
    return float(rule)


def _check_segment(first: object, jobs: object) -> tuple[int, int | None] | None:
    """Validate the segment options; ``(N, None)`` means ``first=N``."""
    if first is not None and jobs is not None:
        raise InputError("give either first=N or jobs=(i, j), not both")
    if first is not None:
        if isinstance(first, bool) or not isinstance(first, int) or first < 1:
            raise InputError(f"first must be a positive integer, got {first!r}")
        return (first, None)
    if jobs is not None:
        try:
            # Any iterable of two items unpacks; what they are is checked next.
            i, j = cast("tuple[object, object]", jobs)
        except (TypeError, ValueError):
            raise InputError(f"jobs must be a pair (i, j), got {jobs!r}") from None
        if (
            isinstance(i, bool)
            or isinstance(j, bool)
            or not (isinstance(i, int) and isinstance(j, int))
        ):
            raise InputError(f"jobs=(i, j) needs integers, got {jobs!r}")
        if not 1 <= i <= j:
            raise InputError(f"jobs=(i, j) needs 1 <= i <= j (1-based, inclusive), got {jobs!r}")
        return (i, j)
    return None


def _parse_header(lines: Mapping[int, str], idx: list[int], where: str) -> dict[str, int]:
    """Read ``MaxNodes`` and ``MaxProcs`` from the ``;`` comment lines."""
    out: dict[str, int] = {}
    for i in idx:
        m = _HEADER_RE.match(lines[i])
        if not m or m.group(1) not in ("MaxNodes", "MaxProcs") or m.group(1) in out:
            continue
        key, value = m.group(1), m.group(2)
        num = _LEADING_INT_RE.match(value)
        if not num:
            raise InputError(f"{where}:{i + 1}: header {key} is not an integer: {value!r}")
        n = int(num.group())
        if n > 0:  # -1 or 0 means "not given"
            out[key] = n
    return out


def _time_origin(lines: Mapping[int, str], idx: list[int], shift_s: float) -> dict[str, object]:
    """``UnixStartTime`` and ``TimeZoneString`` from the header, with the shift applied."""
    found: dict[str, str] = {}
    for i in idx:
        m = _HEADER_RE.match(lines[i])
        if m and m.group(1) in ("UnixStartTime", "TimeZoneString") and m.group(1) not in found:
            found[m.group(1)] = m.group(2)
    start = _LEADING_INT_RE.match(found.get("UnixStartTime", ""))
    if start is None and "TimeZoneString" not in found:
        return {}
    return {
        "unix_start_time": int(start.group()) if start else None,
        "time_zone": found.get("TimeZoneString"),
        "shift_s": shift_s,
    }


def _read_lines(data: bytes, where: str) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
    """Read the job lines and keep the comment lines.

    Returns:
        The job lines as an (n, 18) float array, their line numbers
        (1-based) and the comment lines by index (0-based).
    """
    # (One fast byte search each: a regular expression takes ten times as long.)
    if any(byte in data for byte in _ODD_BREAKS):
        # A line break other than "\n" (as str.splitlines reads them): the
        # plain path, which holds every line.
        lines = data.decode("latin-1").splitlines()
        heads = [ln.lstrip()[:1] for ln in lines]
        data_idx = [i for i, c in enumerate(heads) if c and c != ";"]
        split = _parse_numbers(lines, data_idx, where)
        notes = {i: lines[i] for i, c in enumerate(heads) if c == ";"}
        return split, np.asarray(data_idx, dtype=np.int64) + 1, notes
    comments: dict[int, str] = {}
    numbers = array("q")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = np.loadtxt(
                _job_lines(data, numbers, comments), dtype=np.float64, comments=None, ndmin=2
            )
    except ValueError:
        arr = np.empty((0, 0))
    lineno = np.array(numbers, dtype=np.int64)
    if not lineno.size:
        return np.empty((0, _N), dtype=np.float64), lineno, comments
    if arr.shape != (lineno.size, _N) or not np.isfinite(arr).all():
        _raise_first_bad_line(data.decode("latin-1").splitlines(), (lineno - 1).tolist(), where)
    return arr, lineno, comments


def _job_lines(data: bytes, numbers: array, comments: dict[int, str]) -> Iterator[str]:
    """Yield the job lines of ``data`` (split at newlines), noting their numbers and comments."""
    for i, raw in enumerate(io.BytesIO(data)):
        line = raw.decode("latin-1")
        head = line.lstrip()[:1]
        if head == ";":
            comments[i] = line.rstrip("\n")
        elif head:
            numbers.append(i + 1)
            yield line


def _parse_numbers(lines: list[str], idx: list[int], where: str) -> np.ndarray:
    """Return the job lines as an (n, 18) float array, or raise naming the bad line."""
    if not idx:
        return np.empty((0, _N), dtype=np.float64)
    rows = [lines[i] for i in idx]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = np.loadtxt(rows, dtype=np.float64, comments=None, ndmin=2)
    except ValueError:
        _raise_first_bad_line(lines, idx, where)
        raise  # pragma: no cover - _raise_first_bad_line always raises here
    if arr.shape[1] != _N or not np.isfinite(arr).all():
        _raise_first_bad_line(lines, idx, where)
    return arr


def _raise_first_bad_line(lines: list[str], idx: list[int], where: str) -> None:
    """Slow path: find the first malformed job line and raise an InputError for it."""
    for i in idx:
        fields = lines[i].split()
        if len(fields) != _N:
            raise InputError(
                f"{where}:{i + 1}: expected {_N} whitespace-separated fields, found {len(fields)}"
            )
        for k, tok in enumerate(fields):
            try:
                v = float(tok)
            except ValueError:
                v = math.nan
            if not math.isfinite(v):
                raise InputError(
                    f"{where}:{i + 1}: field {k + 1} ({SWF_FIELDS[k]}) is not a number: {tok!r}"
                )
    raise InputError(f"{where}: could not read the job lines as numbers")  # pragma: no cover


def _partial_executions(
    arr: np.ndarray, lineno: np.ndarray, reason: np.ndarray, where: str
) -> list[str]:
    """One job per job number: partial-execution records merged, duplicates refused.

    A job preempted or checkpointed appears as several records with its job
    number and status 2, 3 or 4 (``Preemption: Yes``), with also a summary
    record of another status (``Preemption: Double``). The summary record is
    kept and the partial ones dropped; without one, the partial records are
    merged into the first: its runtime becomes their total. Any other
    repeated job number is an error naming both lines. Changes ``arr`` (the
    merged runtimes) and ``reason`` (the dropped records) in place; returns notes.
    """
    numbers, inverse, counts = np.unique(arr[:, _JOB], return_inverse=True, return_counts=True)
    repeated = np.flatnonzero(counts > 1)
    if not repeated.size:
        return []
    partial = np.isin(arr[:, _STATUS], _PARTIAL)
    # The rows of each job number, in file order, from one stable sort.
    by_number = np.argsort(inverse, kind="stable")
    ends = np.cumsum(counts)
    n_summary = n_merged = 0
    for group in repeated.tolist():
        rows = by_number[ends[group] - counts[group] : ends[group]]
        whole = rows[~partial[rows]]
        if whole.size > 1:
            raise InputError(
                f"{where}:{lineno[whole[0]]} and line {lineno[whole[1]]}: job number "
                f"{_num_name(numbers[group])} appears twice (not as partial executions)"
            )
        if whole.size == 1:
            keep = int(whole[0])
            why = REASON_PARTIAL_SUMMARY
            n_summary += 1
        else:
            keep = int(rows[0])
            runs = arr[rows, _RUN]
            arr[keep, _RUN] = runs[runs > 0].sum() if (runs > 0).any() else runs[0]
            why = REASON_PARTIAL_MERGED
            n_merged += 1
        reason[rows[rows != keep]] = why
    notes = []
    if n_summary:
        notes.append(f"{n_summary} jobs given with partial executions: their summary records kept")
    if n_merged:
        notes.append(
            f"{n_merged} jobs given as partial executions only: each merged into one job "
            "(runtime: their total)"
        )
    return notes


def _check_values(arr: np.ndarray, lineno: np.ndarray, where: str) -> None:
    """Raise for values SWF does not allow (other than the -1 'missing' marker)."""
    too_big = np.abs(arr) >= _EXACT
    if too_big.any():
        r, col = (int(x) for x in np.argwhere(too_big)[0])
        raise InputError(
            f"{where}:{lineno[r]}: field {col + 1} ({SWF_FIELDS[col]}) is {arr[r, col]:g}, "
            "2**53 or beyond: a number this large cannot be held exactly"
        )
    checks = (
        (_SUBMIT, "must be >= 0 or -1 (missing)", lambda c: (c < 0) & (c != -1)),
        (_RUN, "must be >= 0 or -1 (missing)", lambda c: (c < 0) & (c != -1)),
        (_REQTIME, "must be >= 0 or -1 (missing)", lambda c: (c < 0) & (c != -1)),
        (_JOB, "must be an integer", lambda c: c != np.floor(c)),
        (_ALLOC, "must be an integer", lambda c: c != np.floor(c)),
        (_REQPROCS, "must be an integer", lambda c: c != np.floor(c)),
        (_USER, "must be an integer", lambda c: c != np.floor(c)),
    )
    worst: tuple[int, str] | None = None
    for col, what, bad_fn in checks:
        bad = bad_fn(arr[:, col])
        if bad.any():
            r = int(np.argmax(bad))
            msg = (
                f"{where}:{lineno[r]}: field {col + 1} ({SWF_FIELDS[col]}) {what}, "
                f"got {arr[r, col]:g}"
            )
            if worst is None or r < worst[0]:
                worst = (r, msg)
    if worst is not None:
        raise InputError(worst[1])


def _num_name(x: float) -> str:
    return str(int(x)) if x == int(x) else repr(x)


def _names(col: np.ndarray) -> list[str]:
    return list(map(str, col.astype(np.int64).tolist()))
