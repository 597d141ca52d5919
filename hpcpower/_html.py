"""Small HTML views for Jupyter: the ``_repr_html_`` of simulations, clusters, queues, results.

Plain HTML with inline styles (no script, no network), so that a notebook
shows the same in JupyterLab, VS Code and a static export. Node states use
one colour each, the same as the plots'.
"""

from __future__ import annotations

import html
import math
from typing import Any

from hpcpower.states import STATE_COLORS as _BY_LABEL
from hpcpower.states import STATE_LABELS

#: The plots' state colours, indexed by state value.
STATE_COLORS = tuple(_BY_LABEL[label] for label in STATE_LABELS)
#: Most nodes drawn in a cluster grid; larger clusters show counts only.
GRID_LIMIT = 4096


def _esc(value: Any) -> str:
    return html.escape(str(value))


def _table(rows: list[tuple[str, Any]]) -> str:
    body = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{_esc(k)}</th><td>{_esc(v)}</td></tr>"
        for k, v in rows
    )
    return f"<table>{body}</table>"


def legend() -> str:
    """The state colours as a one-line legend."""
    return " ".join(
        f"<span style='display:inline-block;width:0.9em;height:0.9em;background:{c};"
        f"vertical-align:middle'></span>&nbsp;{label}"
        for label, c in zip(STATE_LABELS, STATE_COLORS, strict=True)
    )


def node_grid(states, per_row: int = 32) -> str:
    """A grid of small squares, one per node, coloured by state, each titled with its id."""
    cells = []
    for node, state in enumerate(states.tolist()):
        cells.append(
            f"<span title='node {node}: {STATE_LABELS[state]}' style='display:inline-block;"
            f"width:10px;height:10px;margin:1px;background:{STATE_COLORS[state]}'></span>"
        )
        if (node + 1) % per_row == 0:
            cells.append("<br>")
    return "<div style='line-height:8px'>" + "".join(cells) + "</div>"


def counts_line(counts) -> str:
    """``12 sleeping, 4 idle, ...`` for the states that have nodes."""
    return ", ".join(
        f"{int(n)} {label}" for label, n in zip(STATE_LABELS, counts, strict=True) if n
    )


def cluster_html(state, counts, title: str) -> str:
    """A cluster: its title, counts per state, and the node grid when not too large."""
    grid = node_grid(state) if len(state) <= GRID_LIMIT else ""
    return f"<div><b>{_esc(title)}</b>: {_esc(counts_line(counts))}<br>{grid}{legend()}</div>"


def queue_html(jobs: list, limit: int = 20) -> str:
    """Waiting jobs as a table (first ``limit``)."""
    rows = "".join(
        f"<tr><td>{_esc(j.name)}</td><td>{j.res}</td><td>{j.submit_s:g}</td>"
        f"<td>{j.reqtime_s:g}</td></tr>"
        for j in jobs[:limit]
    )
    more = f"<p>... and {len(jobs) - limit} more</p>" if len(jobs) > limit else ""
    head = "<tr><th>job</th><th>nodes</th><th>submitted (s)</th><th>requested (s)</th></tr>"
    return f"<div><b>{len(jobs)} waiting</b><table>{head}{rows}</table>{more}</div>"


def job_html(job) -> str:
    """One job's fields."""
    return _table(
        [
            ("job", job.name),
            ("nodes", job.res),
            ("submitted", f"t={job.submit_s:g} s"),
            ("requested time", f"{job.reqtime_s:g} s"),
            ("runtime", f"{job.runtime_s:g} s"),
        ]
    )


def decision_html(decision) -> str:
    """A decision: when, what starts, which nodes switch, and why when known."""
    when = "" if math.isnan(decision.time_s) else f" at t={decision.time_s:.10g} s"
    rows = [
        ("start", ", ".join(f"job {j.name} on {len(n)} nodes" for j, n in decision.start) or "-"),
        ("switch on", [int(n) for n in decision.switch_on] or "-"),
        ("switch off", [int(n) for n in decision.switch_off] or "-"),
        ("call back at", [float(t) for t in sorted(decision.call_at)[:5]] or "-"),
    ]
    why = "".join(f"<li>{_esc(r.get('because', r))}</li>" for r in (decision.why or []))
    return (
        f"<div><b>Decision{_esc(when)}</b>{_table(rows)}"
        + (f"<ul>{why}</ul>" if why else "")
        + "</div>"
    )


def simulation_html(sim) -> str:
    """A simulation: time, progress, the cluster grid and the head of the queue."""
    cluster = sim.cluster
    title = f"{sim.policy.name} on {sim.platform.name} at t={sim.now:.10g} s"
    return (
        f"<div><b>{_esc(title)}</b>: {len(sim.queue)} waiting, {len(sim.running)} running, "
        f"{sim._done_count}/{len(sim.workload.jobs)} done"
        + cluster_html(cluster.state, cluster.counts, "nodes")
        + queue_html(sim.queue.fcfs(), limit=8)
        + "</div>"
    )


def results_html(results) -> str:
    """A run's headline numbers and its energy per state."""
    s = results.summary
    rows = [
        ("jobs", f"{s.get('jobs_completed')}/{s.get('jobs_submitted')} completed"),
        ("mean wait", f"{s.get('mean_wait_s', math.nan) / 60:.2f} min"),
        ("total energy", f"{s.get('total_energy_j', math.nan) / 3.6e9:.4f} MWh"),
        ("wasted energy", f"{s.get('wasted_energy_j', math.nan) / 3.6e9:.4f} MWh"),
        ("switch-ons / offs", f"{s.get('switch_ons')} / {s.get('switch_offs')}"),
    ]
    energy = s.get("energy_j") or {}
    rows += [(f"energy {k}", f"{v / 3.6e6:.2f} kWh") for k, v in energy.items()]
    return f"<div><b>Results</b>{_table(rows)}</div>"


def explanation_html(explanation) -> str:
    """An explanation: its title, totals and rows."""
    lines = "<br>".join(_esc(line) for line in explanation.lines)
    rows = "".join(f"<li>{_esc(r['text'])}</li>" for r in explanation.rows[:200])
    more = (
        f"<p>... {len(explanation.rows) - 200} more rows (to_pandas())</p>"
        if len(explanation.rows) > 200
        else ""
    )
    return f"<div><b>{_esc(explanation.title)}</b><br><pre>{lines}</pre><ol>{rows}</ol>{more}</div>"
