"""Write results to files: ``summary.json``, Batsim-style ``jobs.csv`` and ``machine_states.csv``.

The two CSV files follow Batsim's output so that evalys and Batsim users can
read them: job times in seconds, allocations as interval sets (``0-3 8``),
machine states as counts per state whenever they change.
"""

from __future__ import annotations

import csv
import json
import math
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
    Path(path).write_text(json.dumps(_clean(results.summary), indent=2, sort_keys=False) + "\n")


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


def write_all(results: Results, out_dir: str | Path) -> list[Path]:
    """Write every output file into ``out_dir`` (created if needed); returns the paths."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a folder; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "summary.json", out / "jobs.csv", out / "machine_states.csv"]
    write_summary_json(results, paths[0])
    write_jobs_csv(results, paths[1])
    write_machine_states_csv(results, paths[2])
    if results.decisions:
        paths.append(out / "decisions.csv")
        write_decisions_csv(results, paths[-1])
    return paths


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value
