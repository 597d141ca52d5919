"""One self-contained HTML page to step through a run: ``hpcpower view RUN_DIR``.

The page holds its data, script and style inline and loads nothing from the
network. A time slider (and buttons to jump from event to event) shows, at
each instant, every node as a cell coloured by its state, the waiting jobs,
the power drawn and the energy so far, and what was decided there: the
decision-log row at or before that instant when the run has a log, and the
state changes of the last instant at or before it.

The page is built from the files of a run folder (``summary.json``,
``jobs.csv``, ``pstate_changes.csv``, ``consumed_energy.csv`` and, when
present, ``decisions.csv``), so it works on any saved run; a ``Results`` is
first written to those files in a temporary folder, so both give the same
page.
"""

from __future__ import annotations

import contextlib
import csv
import html
import json
import math
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpcpower.errors import InputError
from hpcpower.states import STATE_CODES, STATE_LABELS

if TYPE_CHECKING:
    from hpcpower.results.records import Results

#: The page's template (package data beside this module).
TEMPLATE = Path(__file__).with_name("view.html")

#: The files a run folder must hold for :func:`run_data`.
NEEDED = ("summary.json", "jobs.csv", "pstate_changes.csv", "consumed_energy.csv")


def run_data(run_dir: str | Path) -> dict[str, Any]:
    """The data the page embeds, read from a run folder's files.

    Returns:
        ``meta`` (title, settings, node count, span, states and their
        colours), ``changes`` (column lists ``t``, ``nodes`` as interval sets,
        ``s`` as state indices), ``jobs`` (columns ``name``, ``submit``,
        ``start``, ``finish``, ``res``, ``nodes``, ``rejected``), ``power``
        (columns ``t``, ``w``, ``e``) and ``decisions`` (``columns`` and
        ``rows``, or ``None`` for a run without a decision log).

    Raises:
        InputError: The folder lacks one of the files, or one cannot be read.
    """
    from hpcpower.results.export import PSTATE_IDS

    run = Path(run_dir)
    missing = [name for name in NEEDED if not (run / name).exists()]
    if missing:
        raise InputError(f"{run}: not a run folder (no {', '.join(missing)})")
    summary = read_summary(run)
    config = summary.get("config") or {}
    label_of = {pstate: label for label, pstate in PSTATE_IDS.items()}

    def state(text: str) -> int:
        return STATE_CODES[label_of[int(text)]]

    changes = _table(
        run / "pstate_changes.csv",
        {
            "t": ("time", float, "a number"),
            "nodes": ("machine_id", str, "an interval set"),
            "s": ("new_pstate", state, f"a power state ({', '.join(map(str, label_of))})"),
        },
    )
    jobs = _table(
        run / "jobs.csv",
        {
            "name": ("job_id", str, "a job id"),
            "submit": ("submission_time", _number, "a number"),
            "start": ("starting_time", _number, "a number"),
            "finish": ("finish_time", _number, "a number"),
            "res": ("requested_number_of_resources", int, "a whole number"),
            "nodes": ("allocated_resources", str, "an interval set"),
            "rejected": ("final_state", lambda text: text == "REJECTED", "a job state"),
        },
    )
    power = _table(
        run / "consumed_energy.csv",
        {
            "t": ("time", float, "a number"),
            "w": ("wattmin", float, "a number"),
            "e": ("energy", float, "a number"),
        },
    )
    decisions = None
    if (run / "decisions.csv").exists():
        with _reading(run / "decisions.csv"):
            rows = list(_rows(run / "decisions.csv"))
        columns = list(rows[0]) if rows else []
        decisions = {
            "columns": columns,
            "rows": [[_value(row[c]) for c in columns] for row in rows],
        }
    try:
        meta = _meta(summary, config, power)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        # A summary.json edited or damaged by hand: its fields are not what a run writes.
        raise InputError(
            f"{run / 'summary.json'}: not a run's summary ({type(exc).__name__}: {exc})"
        ) from None
    return {"meta": meta, "changes": changes, "jobs": jobs, "power": power, "decisions": decisions}


def read_summary(run_dir: str | Path) -> dict[str, Any]:
    """A run folder's ``summary.json``: a JSON object, its ``config`` (when given) one too.

    Raises:
        InputError: The file cannot be read, is not JSON, or is not a run's summary.
    """
    path = Path(run_dir) / "summary.json"
    with _reading(path):
        try:
            summary = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{path}: not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})"
            ) from None
        except RecursionError:
            raise InputError(f"{path}: not a run's summary (nested too deeply)") from None
    if not isinstance(summary, dict) or not isinstance(summary.get("config", {}), dict):
        raise InputError(f"{path}: not a run's summary (a JSON object with a config object)")
    return summary


def _meta(summary: dict[str, Any], config: dict[str, Any], power: dict[str, list]) -> dict:
    """The page's title, settings and headline numbers, from the summary."""
    from hpcpower.results import plots

    end_s = _number(summary.get("simulated_span_s"))
    return {
        "title": plots.headline_of(config),
        "settings": ", ".join(plots.settings_of(config)),
        "n_nodes": int(config.get("n_nodes") or 0),
        "end_s": end_s if end_s is not None else (power["t"][-1] if power["t"] else 0.0),
        "states": list(STATE_LABELS),
        "colors": [plots.STATE_COLORS[label] for label in STATE_LABELS],
        "initial": STATE_CODES[config.get("initial_state") or "idle"],
        "summary": {
            key: summary.get(key)
            for key in (
                "jobs_completed",
                "jobs_submitted",
                "mean_wait_s",
                "total_energy_j",
                "wasted_energy_j",
                "switch_ons",
                "switch_offs",
            )
        },
    }


def html_page(source: Results | str | Path) -> str:
    """The page of a run folder or of a ``Results`` (written to a temporary folder first)."""
    if isinstance(source, (str, Path)):
        data = run_data(source)
    else:
        with tempfile.TemporaryDirectory(prefix="hpcpower-view-") as tmp:
            _write_files(source, Path(tmp))
            data = run_data(tmp)
    text = json.dumps(_clean(data), separators=(",", ":"), allow_nan=False)
    # "</" would end the <script> element holding the data early.
    text = text.replace("</", "<\\/")
    page = TEMPLATE.read_text(encoding="utf-8")
    title = html.escape(data["meta"]["title"])
    return page.replace("__HPCVIEW_TITLE__", title).replace("__HPCVIEW_DATA__", text)


def write_html(source: Results | str | Path, path: str | Path) -> Path:
    """Write the page of a run folder (or of a ``Results``) to ``path``; returns ``path``.

    Args:
        source: A run folder written by ``hpcpower run`` or
            :func:`~hpcpower.results.export.write_all`, or a ``Results``.
        path: The HTML file to write.

    Raises:
        InputError: ``source`` is a folder that is not a run folder.
    """
    from hpcpower.results.export import replacing

    path = Path(path)
    page = html_page(source)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Through a temporary file, so that a failed write leaves no half page.
    with replacing(path) as partial:
        partial.write_text(page, encoding="utf-8")
    return path


# ----------------------------------------------------------------- helpers
def _write_files(results: Results, folder: Path) -> None:
    from hpcpower.results import export

    export.write_summary_json(results, folder / "summary.json")
    export.write_jobs_csv(results, folder / "jobs.csv")
    export.write_pstate_changes_csv(results, folder / "pstate_changes.csv")
    export.write_consumed_energy_csv(results, folder / "consumed_energy.csv")
    if results.decisions:
        export.write_decisions_csv(results, folder / "decisions.csv")


def _rows(path: Path):
    with open(path, newline="", encoding="utf-8") as fh:
        yield from csv.DictReader(fh)


#: A column of :func:`_table`: its name in the file, how to read a field, what a field must be.
Column = tuple[str, Callable[[str], Any], str]


def _table(path: Path, columns: dict[str, Column]) -> dict[str, list]:
    """Columns of a CSV file, each field read as its :data:`Column` says.

    Raises:
        InputError: Naming the file, and the line and column of a field that
            cannot be read.
    """
    out: dict[str, list] = {key: [] for key in columns}
    with _reading(path), open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        try:
            missing = [
                name for name, _, _ in columns.values() if name not in (reader.fieldnames or [])
            ]
            if missing:
                raise InputError(f"{path}: no {', '.join(missing)} column; is it a run's file?")
            for row in reader:
                for key, (name, read, what) in columns.items():
                    text = row[name]
                    if text is None:
                        raise InputError(f"{path}, line {reader.line_num}: no {name} field")
                    try:
                        out[key].append(read(text))
                    except (KeyError, ValueError):
                        raise InputError(
                            f"{path}, line {reader.line_num}: {name} {text!r} is not {what}"
                        ) from None
        except csv.Error as exc:
            raise InputError(f"{path}, line {reader.line_num}: {exc}") from None
    return out


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[None]:
    """An error reading ``path`` (a folder in its place, binary garbage) as one naming it."""
    try:
        yield
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text; is the file damaged?") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def _number(text: Any) -> float | None:
    if text is None or text == "" or text == "NA":
        return None
    return float(text)


def _value(text: Any) -> Any:
    """A decision-log field as JSON: a number, a boolean, text, or null when empty."""
    if not isinstance(text, str) or text == "":  # (None or a list: a damaged row)
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        return float(text)
    except ValueError:
        return text


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
