"""Write results to files: ``summary.json`` and Batsim's outputs, optionally Parquet tables.

The CSV files follow Batsim's output so that evalys and Batsim users can
read them: job times in seconds, allocations as interval sets (``0-3 8``),
machine states as counts per state whenever they change. With
``parquet=True`` the tables of :meth:`Results.to_pandas` are also written as
Parquet files (``jobs``, ``nodes``, ``states``, ``decisions``), each carrying
the run's summary in its metadata under ``hpcpower.summary``.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hpcpower.engine.decisionlog import DecisionLog
from hpcpower.errors import InputError, require
from hpcpower.results.records import Results
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
    ids = np.sort(np.asarray(nodes))
    parts = []
    start = prev = int(ids[0])
    for x in ids[1:].tolist():
        if x == prev + 1:
            prev = x
            continue
        parts.append(f"{start}-{prev}" if prev > start else str(start))
        start = prev = x
    parts.append(f"{start}-{prev}" if prev > start else str(start))
    return " ".join(parts)


def _num(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return repr(float(x)) if not float(x).is_integer() else str(int(x))


def _power_model(results: Results) -> np.ndarray:
    """Watts per (node, state) of ``results``; an error for results built without them."""
    if results.power_w is None:
        raise ValueError("these results have no power model (power_w); Results.from_record sets it")
    return results.power_w


def write_jobs_csv(results: Results, path: str | Path) -> None:
    """Write the Batsim-style ``jobs.csv`` (one row per submitted job)."""
    t = results.job_table()
    node_power = _power_model(results)[:, COMPUTING]
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(JOBS_COLUMNS)
        for i in range(len(t["job_id"])):
            state = t["state"][i]
            alloc = results.allocations[i]
            run = t["finish_s"][i] - t["start_s"][i]
            energy = (
                float(node_power[alloc].sum() * run)
                if alloc is not None and state == "completed"
                else math.nan
            )
            killed = bool(t["killed"][i])
            if killed:
                final = "COMPLETED_WALLTIME_REACHED"
            else:
                final = _FINAL_STATES[state]
            writer.writerow(
                (
                    t["name"][i],
                    "w0",
                    t["profile"][i],
                    _num(t["submit_s"][i]),
                    int(t["res"][i]),
                    _num(t["reqtime_s"][i]),
                    1 if state == "completed" and not killed else 0,
                    final,
                    _num(t["start_s"][i]),
                    _num(run),
                    _num(t["finish_s"][i]),
                    _num(t["wait_s"][i]),
                    _num(t["turnaround_s"][i]),
                    _num(t["slowdown"][i]),
                    interval_set(alloc),
                    _num(energy),
                    "",
                )
            )


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

    Group ``k`` is the nodes ``nodes[ptr[k]:ptr[k + 1]]`` (increasing ids)
    changing to ``states[k]`` at ``times[k]``.

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
    n = results.time_in_state_s.shape[0]
    end_s = float(results.end_s)
    finish = np.asarray(results.jobs["finish_s"], dtype=float)
    initial = PSTATE_IDS[results.config.get("initial_state") or "idle"]
    node_state = None if results.node_state is None else np.asarray(results.node_state)
    # Each chunk holds whole nodes: their changes are made there, compactly.
    made = [
        _node_changes(
            chunk, finish, initial, node_state, end_s, np.arange(low, min(low + _CHUNK, n))
        )
        for chunk, low in zip(
            results.node_interval_chunks(_CHUNK), range(0, max(n, 1), _CHUNK), strict=True
        )
    ]
    c_node, c_state, c_time, rank = (np.concatenate([m[k] for m in made]) for k in range(4))
    del made
    order = np.lexsort((c_node, c_state, rank, c_time))
    # One column at a time, so that only one old column is kept beside its copy.
    c_node = c_node[order]
    c_state = c_state[order]
    c_time = c_time[order]
    rank = rank[order]
    del order
    bound = np.ones(len(c_node), dtype=bool)
    bound[1:] = (
        (c_time[1:] != c_time[:-1]) | (rank[1:] != rank[:-1]) | (c_state[1:] != c_state[:-1])
    )
    heads = np.flatnonzero(bound)
    ptr = np.append(heads, len(c_node)).astype(np.int64)
    return c_time[heads], c_state[heads].astype(np.int64), ptr, c_node.astype(np.int64)


#: Nodes a chunk of :func:`pstate_change_arrays` holds.
_CHUNK = 32


def _node_changes(a: dict, finish, initial: int, node_state, end_s: float, nodes) -> tuple:
    """The kept changes of one chunk of intervals (of ``nodes``): ``(node, state, time, rank)``."""
    node, state, start, job = a["node"], a["state"], a["start_s"], a["job_id"]
    # After each node's last interval: idle again after a job ending at its end.
    last = np.ones(len(node), dtype=bool)
    last[:-1] = node[1:] != node[:-1]
    ended = last & (state == COMPUTING)
    ended[ended] = finish[job[ended]] == a["end_s"][ended]
    extra: list[tuple[Any, int, Any, Any]] = [
        (node[ended], 1, int(NodeState.IDLE), a["end_s"][ended])
    ]
    extra.append((np.setdiff1d(nodes, node), 2, initial, 0.0))
    if node_state is not None:
        extra.append((nodes, 3, node_state[nodes], end_s))
    # Every node's candidate changes in order: (node, slot, state, time).
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
    order = np.lexsort((columns[1], columns[0]))
    c_node, _, c_state, c_time = (column[order] for column in columns)
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
    return c_node.astype(np.int32), c_state.astype(np.int8), c_time, rank.astype(np.int32)


def write_pstate_changes_csv(
    results: Results, path: str | Path, changes: tuple[np.ndarray, ...] | None = None
) -> None:
    """Write Batsim's ``pstate_changes.csv``: ``time,machine_id,new_pstate`` (interval sets).

    ``changes``: :func:`pstate_change_arrays` of ``results``, if already made.
    """
    times, states, ptr, nodes = pstate_change_arrays(results) if changes is None else changes
    bounds = ptr.tolist()
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(("time", "machine_id", "new_pstate"))
        for k, (time_s, state) in enumerate(zip(times.tolist(), states.tolist(), strict=True)):
            writer.writerow((_num(time_s), interval_set(nodes[bounds[k] : bounds[k + 1]]), state))


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
    """
    power = _power_model(results)
    times, states, ptr, nodes = pstate_change_arrays(results) if changes is None else changes
    t = results.jobs
    done = ~np.isnan(t["finish_s"])
    started = ~np.isnan(t["start_s"])
    finish = t["finish_s"][done]
    begin = t["start_s"][done]
    # (A job that took no time ends after it starts, at the same instant.)
    event_time = np.concatenate([finish, times, t["start_s"][started]])
    event_rank = np.concatenate(
        [np.where(finish == begin, 3, 0), np.ones(len(times), int), np.full(started.sum(), 2)]
    )
    # In time order, then rank; ties in the order above (a stable sort).
    order = np.lexsort((event_rank, event_time))
    kinds = np.array(["e", "p", "s"])[
        np.concatenate(
            [np.zeros(len(finish), int), np.ones(len(times), int), np.full(started.sum(), 2)]
        )
    ][order].tolist()
    change_of = np.concatenate(
        [np.full(len(finish), -1), np.arange(len(times)), np.full(started.sum(), -1)]
    )[order].tolist()
    # Every node starts in the run's initial state, so that the power of the
    # first rows is the platform's (the rows at time 0 then set the rest).
    initial = results.config.get("initial_state") or "idle"
    state = np.full(len(power), PSTATE_IDS[initial], dtype=np.intp)
    everyone = np.arange(len(power))
    watts = float(power[everyone, state].sum())
    joules = 0.0
    clock = 0.0
    rows = []
    bounds = ptr.tolist()
    new_states = states.tolist()
    for time_s, kind, k in zip(event_time[order].tolist(), kinds, change_of, strict=True):
        joules += watts * (time_s - clock)
        clock = time_s
        if k >= 0:
            state[nodes[bounds[k] : bounds[k + 1]]] = new_states[k]
            watts = float(power[everyone, state].sum())
        rows.append((time_s, joules, kind, watts))
    if not rows or rows[-1][0] < results.end_s:
        # The run ended later than its last event (a rejected job, say): one
        # more row, type "f", so that the curve ends at the run's total.
        joules += watts * (results.end_s - clock)
        rows.append((float(results.end_s), joules, "f", watts))
    return rows


def write_consumed_energy_csv(
    results: Results, path: str | Path, events: list[tuple] | None = None
) -> None:
    """Write Batsim's ``consumed_energy.csv``: ``time,energy,event_type,wattmin,epower``.

    ``epower`` is the mean power since the previous row (``NA`` when no time
    passed), as Batsim writes it; ``wattmin`` the platform's power after the row.
    ``events``: :func:`energy_events` of ``results``, if already made.
    """
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(("time", "energy", "event_type", "wattmin", "epower"))
        last_time: float | None = None
        last_joules = 0.0  # (read only once last_time is set)
        for time_s, joules, kind, watts in energy_events(results) if events is None else events:
            if last_time is None or time_s == last_time:
                epower = "NA"
            else:
                epower = _num((joules - last_joules) / (time_s - last_time))
            writer.writerow((_num(time_s), _num(joules), kind, _num(watts), epower))
            last_time, last_joules = time_s, joules


def schedule(results: Results, events: list[tuple] | None = None) -> dict[str, Any]:
    """Batsim's schedule metrics (the keys of its ``schedule.csv``), from the results.

    Means are over the jobs that finished (Batsim divides by every job);
    the slowdown is turnaround over execution time, unbounded, over jobs
    that ran for some time; ``consumed_joules`` is the energy from the first
    submission to the end of the run. ``events``: :func:`energy_events` of
    ``results``, if already made.
    """
    s = results.summary
    t = results.job_table()
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
    # it, plus the power drawn from that row on.
    before = 0.0
    for time_s, joules, _, watts in energy_events(results) if events is None else events:
        if time_s > first_submit:
            break
        before = joules + watts * (first_submit - time_s)
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
    results: Results, path: str | Path, events: list[tuple] | None = None
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
    out = Path(out_dir)
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
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{out}: cannot make its folder {parent} ({exc.strerror})") from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{out}: cannot write in {parent} (permission denied)")
    return out


#: The files a result folder holds (what ``--force`` may replace).
RESULT_FILES = frozenset(
    {
        "summary.json",
        "jobs.csv",
        "machine_states.csv",
        "pstate_changes.csv",
        "consumed_energy.csv",
        "schedule.json",
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
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        # The state changes and the energy events behind three files, made once.
        changes = pstate_change_arrays(results)
        events = energy_events(results, changes)
        writers = {
            "summary.json": write_summary_json,
            "jobs.csv": write_jobs_csv,
            "machine_states.csv": write_machine_states_csv,
            "pstate_changes.csv": lambda r, p: write_pstate_changes_csv(r, p, changes),
            "consumed_energy.csv": lambda r, p: write_consumed_energy_csv(r, p, events),
            "schedule.json": lambda r, p: write_schedule_json(r, p, events),
        }
        for name, write in writers.items():
            write(results, staging / name)
        names = list(writers)
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
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)
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
