"""Write results to files: ``summary.json``, Batsim-style ``jobs.csv`` and ``machine_states.csv``.

The two CSV files follow Batsim's output so that evalys and Batsim users can
read them: job times in seconds, allocations as interval sets (``0-3 8``),
machine states as counts per state whenever they change.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from hpcpower.errors import InputError
from hpcpower.results.records import Results

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


def write_jobs_csv(results: Results, path: str | Path) -> None:
    """Write the Batsim-style ``jobs.csv`` (one row per submitted job)."""
    t = results.job_table()
    node_power = _computing_power(results)
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
                final = {"completed": "COMPLETED_SUCCESSFULLY", "rejected": "REJECTED"}.get(
                    state, "NOT_FINISHED"
                )
            writer.writerow(
                (
                    t["name"][i],
                    "w0",
                    "",
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
                )
            )


def _computing_power(results: Results) -> np.ndarray:
    tis = results.time_in_state_s[:, 3]
    with np.errstate(divide="ignore", invalid="ignore"):
        watts = np.where(tis > 0, results.node_energy_j[:, 3] / tis, 0.0)
    return watts


def write_machine_states_csv(results: Results, path: str | Path) -> None:
    """Write the Batsim-style ``machine_states.csv`` (state counts when they change)."""
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(MACHINE_COLUMNS)
        for time_s, sleeping, on, idle, computing, off in results.state_counts:
            writer.writerow((_num(time_s), sleeping, on, off, idle, computing))


def write_summary_json(results: Results, path: str | Path) -> None:
    """Write ``summary.json`` (NaN written as null)."""
    Path(path).write_text(summary_json(results) + "\n")


def write_decisions_csv(results: Results, path: str | Path) -> None:
    """Write the controller's decision log, one row per logged pass."""
    rows = results.decisions
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow(row)


def check_out(out_dir: str | Path, *, force: bool = False) -> Path:
    """Check that a result folder can be written, before a run spends time making it.

    The folder must not exist (or, with ``force``, may be a folder of a
    previous result, which is then replaced), and its parent must be a
    folder this process can write (it is made if missing).

    Raises:
        InputError: Naming the folder and what to do.
    """
    out = Path(out_dir)
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise InputError(f"{out}: exists and is not a folder; choose another --out")
        if not force and any(out.iterdir()):
            raise InputError(
                f"{out}: a result folder is already there; use --force to replace it "
                "or choose another --out"
            )
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{out}: cannot make its folder {parent} ({exc.strerror})") from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{out}: cannot write in {parent} (permission denied)")
    return out


def write_all(results: Results, out_dir: str | Path, *, force: bool = False) -> list[Path]:
    """Write every output file into ``out_dir`` as one step; returns the paths.

    The files are written into a hidden temporary folder beside ``out_dir``
    and the folder is renamed into place once complete, so an interrupted
    write (Ctrl-C, SIGTERM, a full disk) leaves the previous result or none,
    never a mix or a truncated file. An existing result folder is replaced
    only with ``force`` (see :func:`check_out`).
    """
    out = check_out(out_dir, force=force)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        names = ["summary.json", "jobs.csv", "machine_states.csv"]
        write_summary_json(results, staging / names[0])
        write_jobs_csv(results, staging / names[1])
        write_machine_states_csv(results, staging / names[2])
        if results.decisions:
            names.append("decisions.csv")
            write_decisions_csv(results, staging / names[3])
        _swap_in(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [out / name for name in names]


def _swap_in(staging: Path, out: Path) -> None:
    """Rename the finished ``staging`` folder to ``out``, replacing an old result there.

    The old result is first renamed aside, then removed: at every instant
    ``out`` is either the complete old result, absent, or the complete new one.
    """
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
        os.replace(out, old / "result")
    os.replace(staging, out)
    if old is not None:
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
