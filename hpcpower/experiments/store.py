"""A sweep's folder: one file per finished run, written at once, and the table made from them.

Layout of ``DIR``::

    sweep.json            the checked, expanded plan (studies, runs, labels)
    runs/<run_id>.json    one finished run: status, error, configuration, metrics
    runs/<run_id>/        its output files, only with keep_runs
    results.parquet       the table, one row per run (results.csv without pyarrow)

A run's file is written to a temporary name and renamed into place, so it is
either whole or absent whatever stops the sweep, SIGKILL included; the rename
is the moment the run counts as done. The table is rebuilt from the run files
at the end of a sweep, when it is interrupted, and by ``hpcpower report``, so
it never holds more than they do. A lock on ``DIR/.lock`` keeps two sweeps
from writing into one folder at once.
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import math
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hpcpower.errors import InputError
from hpcpower.experiments.sweepfile import Plan, PlannedRun
from hpcpower.experiments.worker import at_level

# POSIX; elsewhere two sweeps in one folder are not prevented.
_fcntl: Any
try:
    import fcntl as _fcntl
except ImportError:  # pragma: no cover
    _fcntl = None

PLAN_FILE = "sweep.json"
RUNS = "runs"
TABLES = ("results.parquet", "results.csv")
#: Columns every row starts with, before the configuration and the metrics.
HEAD = ("run_id", "study", "case", "seed", "status", "error")
#: Columns every row ends with.
TAIL = ("kernels", "wall_time_s", "version", "finished_at")
_SIZE_BIN = re.compile(r"^size_bin\.(\d+)")


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename: whole or not at all."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Store:
    """The folder of one sweep (see the module docstring).

    Args:
        folder: The sweep's folder (``--out``).
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.runs = self.folder / RUNS
        #: Whether :meth:`open` made the folder (so a sweep that never started may remove it).
        self.made = False
        self._lock: Any = None

    # ------------------------------------------------------------ opening
    def open(self, *, resume: bool, plan: Plan | None = None) -> Store:
        """Make (or, with ``resume``, reopen) the folder and take its lock.

        Args:
            resume: Continue the sweep in the folder.
            plan: The plan about to run; with ``resume``, the folder's plan
                must be the same sweep (:meth:`check_same_sweep`).

        Raises:
            InputError: The folder holds a sweep and ``resume`` is not set, holds
                something else or another sweep, or another sweep is writing in it.
        """
        folder = self.folder
        self.made = not folder.exists()
        if folder.exists() and not folder.is_dir():
            raise InputError(f"{folder}: exists and is not a folder; choose another --out")
        if folder.is_dir():
            held = {p.name for p in folder.iterdir()} - {".lock"}
            if (PLAN_FILE in held or RUNS in held) and not resume:
                raise InputError(
                    f"{folder}: holds a sweep already; use --resume to continue it, "
                    "or choose another --out"
                )
            if held and PLAN_FILE not in held and RUNS not in held:
                raise InputError(
                    f"{folder}: not empty and not a sweep folder ({sorted(held)[0]}); "
                    "choose another --out"
                )
        try:
            self.runs.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"{folder}: cannot make it ({exc.strerror})") from None
        self._take_lock()
        if resume and plan is not None:
            try:
                self.check_same_sweep(plan)
            except InputError:
                self.close()
                raise
        self._clean_leftovers()
        return self

    def check_same_sweep(self, plan: Plan) -> None:
        """Refuse to resume with ``plan`` when the folder holds another sweep.

        Writing ``plan`` over it would leave the recorded runs out of the table
        and the report. The same sweep has the same name and shares at least one
        run with the folder's plan, so an edited sweep file (more seeds, another
        grid value) still resumes.
        """
        if not (self.folder / PLAN_FILE).is_file():
            return  # stopped before its plan was written: nothing to keep apart
        stored = self.read_plan()
        ids = {run.run_id for run in plan.runs}
        shared = any(run.run_id in ids for run in stored.runs)
        if stored.name != plan.name or (stored.runs and not shared):
            raise InputError(
                f"{self.folder}: holds sweep {stored.name!r} (another plan), not this one; "
                "--resume continues the same sweep"
            )

    def close(self) -> None:
        """Release the folder's lock."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def discard(self) -> None:
        """Release the lock and remove the folder: for a sweep that made it and recorded nothing."""
        self.close()
        _remove(self.folder)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _take_lock(self) -> None:
        if _fcntl is None:  # pragma: no cover
            return
        fh = open(self.folder / ".lock", "a+")  # noqa: SIM115 - held until close()
        try:
            _fcntl.flock(fh.fileno(), _fcntl.LOCK_EX | _fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise InputError(
                f"{self.folder}: another sweep is writing in this folder; wait for it or "
                "choose another --out"
            ) from None
        self._lock = fh

    def _clean_leftovers(self) -> None:
        """Remove what a stopped sweep left half-made: temporary files, unfinished outputs."""
        for path in self.runs.iterdir():
            if path.name.startswith("."):
                _remove(path)
            elif path.is_dir() and not (self.runs / f"{path.name}.json").exists():
                _remove(path)

    # ------------------------------------------------------------ plan
    def write_plan(self, plan: Plan) -> None:
        """Write ``sweep.json``, the plan the table and the report follow."""
        text = json.dumps(plan.to_dict(), indent=1, sort_keys=False)
        atomic_write(self.folder / PLAN_FILE, text.encode())

    def read_plan(self) -> Plan:
        """The plan of the sweep in this folder.

        Raises:
            InputError: No sweep here, or its plan file is not one.
        """
        path = self.folder / PLAN_FILE
        if not path.is_file():
            raise InputError(f"{self.folder}: no {PLAN_FILE} here; give the folder of a sweep")
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not valid JSON at line {exc.lineno} ({exc.msg})") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: cannot read it ({exc})") from None
        try:
            return Plan.from_dict(data)
        except (TypeError, KeyError, AttributeError):
            raise InputError(f"{path}: not a sweep plan (as hpcpower sweep writes it)") from None

    # ------------------------------------------------------------ runs
    def recorded(self) -> dict[str, str]:
        """The runs recorded so far: ``{run_id: status}``."""
        done = {}
        for path in self.runs.glob("*.json"):
            record = self._read(path)
            if record is not None:
                done[path.stem] = record.get("status", "failed")
        return done

    def record(self, run: PlannedRun, result: dict[str, Any]) -> None:
        """Write one finished run (its output files first, when kept)."""
        outputs = result.get("outputs")
        if outputs:
            staging = Path(tempfile.mkdtemp(prefix=f".{run.run_id}.", dir=self.runs))
            for name, data in outputs.items():
                (staging / name).write_bytes(data)
            target = self.runs / run.run_id
            _remove(target)
            os.replace(staging, target)
        # (A run that keeps no files keeps no decision log: say at which level it ran.)
        used = result.get("decisions")
        config = run.config if used is None else at_level(run.config, used)
        record = {
            "run_id": run.run_id,
            "status": result["status"],
            "error": result["error"],
            "traceback": result.get("traceback"),
            "config": config,
            "identity": run.identity,
            "metrics": result["metrics"],
            "kernels": result.get("kernels"),
            "wall_time_s": result["wall_time_s"],
            "version": result["version"],
            "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"
            ),
        }
        atomic_write(self.runs / f"{run.run_id}.json", json.dumps(record, indent=1).encode())

    def read_runs(self, plan: Plan) -> list[dict[str, Any]]:
        """The recorded runs of ``plan``, in plan order (runs not recorded are left out)."""
        records = []
        for run in plan.runs:
            record = self._read(self.runs / f"{run.run_id}.json")
            if record is not None:
                records.append(record)
        return records

    @staticmethod
    def _read(path: Path) -> dict[str, Any] | None:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    # ------------------------------------------------------------ table
    def rows(self, plan: Plan) -> tuple[list[str], list[dict[str, Any]]]:
        """The table: its columns and one row per recorded run of ``plan``, in plan order."""
        by_id = {run.run_id: run for run in plan.runs}
        rows = []
        config_cols: dict[str, None] = {}
        metric_cols: dict[str, None] = {}
        for record in self.read_runs(plan):
            run = by_id[record["run_id"]]
            config = _flat(record["config"])
            config.update(_flat({"policy": run.identity["policy"]}))
            if "sha256" in run.identity["workload"]:
                config["workload.sha256"] = run.identity["workload"]["sha256"]
            config_cols.update(dict.fromkeys(config))
            metric_cols.update(dict.fromkeys(record["metrics"]))
            row = {
                "run_id": record["run_id"],
                "study": ";".join(dict.fromkeys(label.study for label in run.labels)),
                "case": ";".join(dict.fromkeys(label.case for label in run.labels)),
                "seed": run.config["simulation"]["seed"],
                "status": record["status"],
                "error": record["error"],
                **config,
                **record["metrics"],
            }
            row.update({key: record.get(key) for key in TAIL})
            rows.append(row)
        metrics = sorted(metric_cols, key=_metric_order)
        columns = [*HEAD, *config_cols, *metrics, *TAIL]
        return columns, rows

    def write_table(self, plan: Plan) -> Path:
        """Write the table as Parquet (with pyarrow) or CSV; returns its path."""
        columns, rows = self.rows(plan)
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            path = self.folder / "results.csv"
            _write_csv(path, columns, rows)
        else:
            path = self.folder / "results.parquet"
            _write_parquet(path, columns, rows)
        for other in TABLES:
            if other != path.name:
                (self.folder / other).unlink(missing_ok=True)
        return path


def _flat(config: dict[str, Any]) -> dict[str, Any]:
    """``{"policy": {"name": x}}`` as ``{"policy.name": x}``; lists and tables as JSON text."""
    out = {}
    for section, values in config.items():
        for key, value in values.items():
            if isinstance(value, (dict, list)):
                value = json.dumps(value, sort_keys=True)
            out[f"{section}.{key}"] = value
    return out


def _metric_order(name: str) -> tuple:
    """Summary metrics first, as the summary lists them, then the size bins by size."""
    found = _SIZE_BIN.match(name)
    return (1, int(found.group(1)), name) if found else (0, 0, "")


def _write_parquet(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = []
    for column in columns:
        values = [row.get(column) for row in rows]
        try:
            arrays.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            # A column of mixed kinds (numbers and text): kept as text.
            arrays.append(pa.array([None if v is None else str(v) for v in values]))
    table = pa.table(dict(zip(columns, arrays, strict=True)))
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def csv_text(columns: list[str], rows: list[dict[str, Any]]) -> str:
    """Rows as CSV text: missing values and NaN empty, floats written in full (``repr``)."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(column)) for column in columns])
    return text.getvalue()


def _write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    atomic_write(path, csv_text(columns, rows).encode())


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
