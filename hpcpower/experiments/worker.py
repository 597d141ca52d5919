"""One run of a sweep, as a worker process (local or Dask) executes it.

:func:`execute` is the only function shipped to workers. It takes plain data
(the run id and its resolved configuration) and returns plain data (status,
metrics, wall time, and the output files when they are kept), so it pickles
the same way for a local process pool and for a Dask cluster, and the sweep's
folder is written only by the process that drives the sweep.
"""

from __future__ import annotations

import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from hpcpower._version import __version__

#: Summary entries that are not metrics (the configuration is kept on its own).
NOT_METRICS = ("config", "version")

#: Statistics of the waits in each job-size bin, as (metric suffix, function).
_BIN_STATS = (
    ("mean_wait_s", np.mean),
    ("p25_wait_s", lambda w: np.percentile(w, 25)),
    ("median_wait_s", np.median),
    ("p75_wait_s", lambda w: np.percentile(w, 75)),
    ("p95_wait_s", lambda w: np.percentile(w, 95)),
)


def execute(task: dict[str, Any]) -> dict[str, Any]:
    """Run one simulation of a sweep; never raises for a failing run.

    Args:
        task: ``{"run_id", "config", "keep_runs"}``: the run's id, its
            resolved configuration, and whether to return its output files
            (without them the run keeps no decision log: ``decisions`` is
            ``"off"``, which changes no summary metric of the bundled
            policies; a policy's own entry that reads the notes given to
            ``summarise`` would see none).

    Returns:
        ``{"run_id", "status" ("ok" or "failed"), "error", "traceback",
        "metrics", "kernels", "decisions", "wall_time_s", "version",
        "outputs"}``; ``decisions`` is the level the run's log was kept at,
        ``outputs`` maps file names to bytes when ``keep_runs`` is set.
    """
    from hpcpower.simulation import Simulation

    started = time.perf_counter()
    out: dict[str, Any] = {
        "run_id": task["run_id"],
        "status": "ok",
        "error": None,
        "traceback": None,
        "metrics": {},
        "kernels": None,
        "decisions": None,
        "outputs": None,
    }
    try:
        config = task["config"]
        if not task.get("keep_runs"):
            # A run that keeps no files returns only its summary, which is the
            # same at every level of the decision log: keeping (and making)
            # the log would be work for nothing.
            config = at_level(config, "off")
        out["decisions"] = config["simulation"].get("decisions")
        results = Simulation.from_config(config).run()
        out["metrics"] = metrics(results)
        out["kernels"] = results.summary["config"].get("kernels")
        if task.get("keep_runs"):
            out["outputs"] = output_files(results)
    except Exception as exc:  # noqa: BLE001 - a failing run is recorded, the sweep goes on
        out.update(
            status="failed",
            error=f"{type(exc).__name__}: {exc}",
            traceback=traceback.format_exc(),
            metrics={},
        )
    out["wall_time_s"] = time.perf_counter() - started
    out["version"] = __version__
    return out


def at_level(config: dict[str, Any], level: str) -> dict[str, Any]:
    """``config`` with its decision log kept at ``level`` (the other settings shared)."""
    return {**config, "simulation": {**config["simulation"], "decisions": level}}


def metrics(results) -> dict[str, Any]:
    """Every summary metric, flattened (``energy_j.idle``), and the waits by job size."""
    flat: dict[str, Any] = {}
    for key, value in results.summary.items():
        if key not in NOT_METRICS:
            _flatten(key, value, flat)
    table = results.job_table()
    done = table["state"] == "completed"
    flat.update(size_bins(table["res"][done], table["wait_s"][done]))
    return flat


def size_bins(res: np.ndarray, wait_s: np.ndarray) -> dict[str, float]:
    """Wait statistics of completed jobs by requested nodes, in power-of-two bins.

    The bins are 1, 2, 3-4, 5-8, 9-16, ...; a bin without jobs is left out.
    Keys are ``size_bin.<bin>.<statistic>`` (``n_jobs``, ``mean_wait_s``,
    ``p25_wait_s``, ``median_wait_s``, ``p75_wait_s``, ``p95_wait_s``).
    """
    res = np.asarray(res, dtype=np.int64)
    wait_s = np.asarray(wait_s, dtype=float)
    out: dict[str, float] = {}
    if len(res) == 0:
        return out
    top = int(res.max())
    lo, hi = 1, 1
    while lo <= top:
        inside = (res >= lo) & (res <= hi)
        if inside.any():
            name = f"size_bin.{bin_label(lo, hi)}"
            waits = wait_s[inside]
            out[f"{name}.n_jobs"] = int(inside.sum())
            for stat, fn in _BIN_STATS:
                out[f"{name}.{stat}"] = float(fn(waits))
        lo, hi = hi + 1, 2 * hi
    return out


def bin_label(lo: int, hi: int) -> str:
    """``"1"``, ``"2"``, ``"3-4"``, ``"5-8"``, ...: the name of the bin lo..hi."""
    return str(lo) if lo == hi else f"{lo}-{hi}"


def output_files(results) -> dict[str, bytes]:
    """The run's output files (as ``hpcpower run`` writes them), by name."""
    from hpcpower.results.export import write_all

    with tempfile.TemporaryDirectory(prefix="hpcpower-run-") as tmp:
        paths = write_all(results, Path(tmp) / "out")
        return {p.name: p.read_bytes() for p in paths}


def _flatten(key: str, value: Any, into: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for sub, inner in value.items():
            _flatten(f"{key}.{sub}", inner, into)
    elif isinstance(value, np.integer):
        into[key] = int(value)
    elif isinstance(value, np.floating):
        into[key] = float(value)
    else:
        into[key] = value
