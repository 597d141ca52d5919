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

import csv
import html
import json
import math
import tempfile
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
    from hpcpower.results import plots
    from hpcpower.results.export import PSTATE_IDS

    run = Path(run_dir)
    missing = [name for name in NEEDED if not (run / name).exists()]
    if missing:
        raise InputError(f"{run}: not a run folder (no {', '.join(missing)})")
    try:
        summary = json.loads((run / "summary.json").read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"{run}/summary.json: not valid JSON ({exc.msg})") from None
    config = summary.get("config") or {}
    label_of = {pstate: label for label, pstate in PSTATE_IDS.items()}
    state_index = STATE_CODES

    changes: dict[str, list] = {"t": [], "nodes": [], "s": []}
    for row in _rows(run / "pstate_changes.csv"):
        changes["t"].append(float(row["time"]))
        changes["nodes"].append(row["machine_id"])
        changes["s"].append(state_index[label_of[int(row["new_pstate"])]])
    jobs: dict[str, list] = {
        "name": [],
        "submit": [],
        "start": [],
        "finish": [],
        "res": [],
        "nodes": [],
        "rejected": [],
    }
    for row in _rows(run / "jobs.csv"):
        jobs["name"].append(row["job_id"])
        jobs["submit"].append(_number(row["submission_time"]))
        jobs["start"].append(_number(row["starting_time"]))
        jobs["finish"].append(_number(row["finish_time"]))
        jobs["res"].append(int(row["requested_number_of_resources"]))
        jobs["nodes"].append(row["allocated_resources"])
        jobs["rejected"].append(row["final_state"] == "REJECTED")
    power: dict[str, list] = {"t": [], "w": [], "e": []}
    for row in _rows(run / "consumed_energy.csv"):
        power["t"].append(float(row["time"]))
        power["w"].append(float(row["wattmin"]))
        power["e"].append(float(row["energy"]))
    decisions = None
    if (run / "decisions.csv").exists():
        rows = list(_rows(run / "decisions.csv"))
        columns = list(rows[0]) if rows else []
        decisions = {
            "columns": columns,
            "rows": [[_value(row[c]) for c in columns] for row in rows],
        }
    settings = plots.settings_of(config)
    end_s = _number(summary.get("simulated_span_s"))
    return {
        "meta": {
            "title": plots.headline_of(config),
            "settings": ", ".join(settings),
            "n_nodes": int(config.get("n_nodes") or 0),
            "end_s": end_s if end_s is not None else (power["t"][-1] if power["t"] else 0.0),
            "states": list(STATE_LABELS),
            "colors": [plots.STATE_COLORS[label] for label in STATE_LABELS],
            "initial": state_index[config.get("initial_state") or "idle"],
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
        },
        "changes": changes,
        "jobs": jobs,
        "power": power,
        "decisions": decisions,
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
    path = Path(path)
    page = html_page(source)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
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


def _number(text: Any) -> float | None:
    if text is None or text == "" or text == "NA":
        return None
    return float(text)


def _value(text: str) -> Any:
    """A decision-log field as JSON: a number, a boolean, text, or null when empty."""
    if text == "":
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
