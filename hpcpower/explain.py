"""Why did a job wait, and why did a node change state? Answers from a run's pass trace.

A simulation built with ``explain=True`` keeps, for every controller pass,
what the policy saw and did and why (:class:`~hpcpower.engine.simulation.PassTrace`).
:func:`explain_job` and :func:`explain_node` read that trace; both return
an :class:`Explanation`, which prints as text and gives its rows as a
DataFrame.

**A job's wait** runs from its arrival to its start and is split, interval
by interval between two passes, by what it waited for. The reason is read
off the state after the pass that began the interval:

* the job is planned on nodes of which one is asleep or in a transition:
  *waiting for a switch-on*;
* it is planned on nodes of which one is computing: *waiting for busy nodes*;
* it is planned only on idle nodes (a later planned start), or it is not
  planned and enough nodes are idle: *waiting behind the order* (the policy
  served other jobs first);
* not planned, too few idle nodes but enough nodes that are not computing:
  *waiting for a switch-on*; otherwise *waiting for busy nodes*.

**A node's history** is its state intervals from the results, each change
of state paired with the pass that commanded it and the policy's reason
(:attr:`~hpcpower.engine.contract.Decision.why`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcpower.engine.contract import short_ids
from hpcpower.errors import InputError, require
from hpcpower.states import COMPUTING, IDLE, STATE_LABELS

if TYPE_CHECKING:
    from hpcpower.engine.simulation import PassTrace, Simulation

#: The parts a job's wait is split into, in the order they are shown.
WAIT_REASONS = ("busy_nodes", "switch_on", "order")
_WAIT_TEXT = {
    "busy_nodes": "waiting for busy nodes",
    "switch_on": "waiting for a switch-on",
    "order": "waiting behind the order",
}
#: How many rows the text of an explanation shows before eliding.
SHOWN_ROWS = 12


@dataclass
class Explanation:
    """An answer: a headline, totals, and one row per pass or per interval.

    Attributes:
        title: One line saying what is explained.
        lines: The text below the title (totals, the story in short).
        rows: The detail, one dict per row (see :meth:`to_pandas`).
    """

    title: str
    lines: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def text(self, limit: int = SHOWN_ROWS) -> str:
        """The explanation as text, showing at most ``limit`` rows."""
        out = [self.title, *self.lines]
        if self.rows:
            shown = self.rows if len(self.rows) <= limit else self.rows[: limit - 2]
            out.extend("  " + row["text"] for row in shown)
            if len(shown) < len(self.rows):
                out.append(f"  ... {len(self.rows) - len(shown) - 1} more")
                out.append("  " + self.rows[-1]["text"])
        return "\n".join(out)

    def to_pandas(self):
        """The rows as a DataFrame (needs pandas)."""
        require("pandas", "tables", "Explanation.to_pandas")
        import pandas as pd

        return pd.DataFrame(self.rows)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        from hpcpower._html import explanation_html

        return explanation_html(self)


def _trace(sim: Simulation) -> list[PassTrace]:
    if not sim.explain_enabled:
        raise InputError(
            "explanations need the pass trace: build the simulation with explain=True "
            "(a scenario: simulation.explain = true)"
        )
    return sim.passes_trace


def explain_job(sim: Simulation, job: int | str) -> Explanation:
    """Arrival, place in the queue at each pass, planned start, and the wait split by cause.

    Args:
        sim: A simulation built with ``explain=True`` (run as far as wanted).
        job: The job's id in the workload (``Job.name``, as in ``jobs.csv``).
    """
    trace = _trace(sim)
    index = sim.job_index(job)
    j = sim.workload.jobs[index]
    start = float(sim.start_s[index])
    now = sim.now
    if index in sim.rejected:
        return Explanation(f"Job {j.name} was rejected: {sim.rejected[index]}")
    if j.submit_s > now or index >= sim._next_job:
        return Explanation(f"Job {j.name} has not arrived yet (it arrives at t={j.submit_s:g} s)")
    end = start if not math.isnan(start) else now
    passes = [k for k, p in enumerate(trace) if j.submit_s <= p.time_s <= end]
    totals = dict.fromkeys(WAIT_REASONS, 0.0)
    rows: list[dict[str, Any]] = []
    for k in passes:
        p = trace[k]
        if index not in p.waiting:
            continue
        until = trace[k + 1].time_s if k + 1 < len(trace) else now
        until = min(until, end)
        planned = p.plan.get(index)
        if index in p.started:
            reason = "started"
        else:
            reason = _wait_reason(p, j.res, planned)
        spent = max(0.0, until - p.time_s) if reason != "started" else 0.0
        if reason in totals:
            totals[reason] += spent
        position = p.order.index(index) + 1
        text = f"t={p.time_s:.10g} s: position {position} of {len(p.order)}"
        if planned is not None:
            text += f", planned to start at t={planned[0]:.10g} s on {_short(planned[1])}"
        text += " -> started" if reason == "started" else f" -> {_WAIT_TEXT[reason]}"
        rows.append(
            {
                "time_s": p.time_s,
                "position": position,
                "queue_length": len(p.order),
                "planned_start_s": planned[0] if planned else math.nan,
                "planned_nodes": list(planned[1]) if planned else [],
                "waiting_for": reason,
                "seconds": spent,
                "text": text,
            }
        )
    if math.isnan(start):
        title = (
            f"Job {j.name} ({_nodes(j.res)}, requests {j.reqtime_s:g} s) arrived at "
            f"t={j.submit_s:g} s and is still waiting at t={now:g} s: {now - j.submit_s:g} s so far"
        )
    else:
        gang = sim.gangs[index]
        title = (
            f"Job {j.name} ({_nodes(j.res)}, requests {j.reqtime_s:g} s) arrived at "
            f"t={j.submit_s:g} s and started at t={start:g} s on {_short(gang)}: "
            f"waited {start - j.submit_s:g} s"
        )
    lines = [f"  {_WAIT_TEXT[r] + ':':<27}{totals[r]:>12g} s" for r in WAIT_REASONS]
    if rows:
        lines.append(f"Passes while it waited ({len(rows)}):")
    return Explanation(title, lines, rows)


def _wait_reason(p: PassTrace, res: int, planned: tuple[float, tuple[int, ...]] | None) -> str:
    states = p.states
    if planned is not None:
        on = states[list(planned[1])]
        if np.any((on != IDLE) & (on != COMPUTING)):
            return "switch_on"
        if np.any(on == COMPUTING):
            return "busy_nodes"
        return "order"
    idle = int(np.count_nonzero(states == IDLE))
    if idle >= res:
        return "order"
    if int(np.count_nonzero(states != COMPUTING)) >= res:
        return "switch_on"
    return "busy_nodes"


def explain_node(sim: Simulation, node: int) -> Explanation:
    """A node's state history, each change with the decision behind it.

    Args:
        sim: A simulation built with ``explain=True`` (run as far as wanted).
        node: The node id.
    """
    trace = _trace(sim)
    n = sim.platform.n_nodes
    if not isinstance(node, (int, np.integer)) or not 0 <= node < n:
        raise InputError(f"no node {node!r}: the platform has nodes 0..{n - 1}")
    node = int(node)
    by_time: dict[float, list[dict[str, Any]]] = {}
    for p in trace:
        for record in p.why:
            if record.get("node") == node or node in record.get("nodes", ()):
                by_time.setdefault(p.time_s, []).append(record)
    names = {j.id: j.name for j in sim.workload.jobs}
    policy = sim.policy.name
    rows: list[dict[str, Any]] = []
    for _, state, start, end, job in _intervals(sim, node):
        because = ""
        records = by_time.get(start, [])
        if state in ("switching_off", "switching_on"):
            action = "switch_off" if state == "switching_off" else "switch_on"
            reason = next((r for r in records if r["action"] == action), None)
            verb = "switched off" if action == "switch_off" else "woken"
            because = f"{verb} by {policy} at t={start:g} s"
            if reason is not None:
                because += f": {reason['because']}"
        elif state == "computing":
            because = f"running job {names.get(job, job)}"
            reason = next((r for r in records if r.get("job") == names.get(job)), None)
            if reason is not None:
                because += f" ({reason['because']})"
        elif state == "idle":
            kept = [
                r
                for t, records_at in by_time.items()
                if start <= t < end
                for r in records_at
                if r["action"] == "keep"
            ]
            if kept:
                passes = "1 pass" if len(kept) == 1 else f"{len(kept)} passes"
                because = f"kept on by the plan at {passes} ({kept[-1]['because']})"
        text = f"t={start:.10g} to {end:.10g} s: {state}"
        rows.append(
            {
                "start_s": start,
                "end_s": end,
                "state": state,
                "job": names.get(job, "") if job >= 0 else "",
                "because": because,
                "text": text + (f" - {because}" if because else ""),
            }
        )
    counts = {label: 0.0 for label in STATE_LABELS}
    for row in rows:
        counts[row["state"]] += row["end_s"] - row["start_s"]
    lines = ["  time in each state: " + ", ".join(f"{k} {v:g} s" for k, v in counts.items() if v)]
    title = f"Node {node} from t=0 to t={sim.now:g} s: {len(rows)} intervals"
    return Explanation(title, lines, rows)


def _intervals(sim: Simulation, node: int) -> list[tuple[int, str, float, float, int]]:
    from hpcpower.results.records import Results

    results = Results.from_record(sim.record())
    return [row for row in results.node_intervals() if row[0] == node]


def _nodes(n: int) -> str:
    return "1 node" if n == 1 else f"{n} nodes"


def _short(nodes) -> str:
    return f"nodes {short_ids(nodes if nodes is not None else [])}"
