"""Plots of a run: Gantt, node states, power, queue length, Pareto front.

Every plot is computed from the records in :class:`~hpcpower.results.records.Results`
(never from sampled values) and drawn with matplotlib's object-oriented API:
each function takes an optional ``ax`` and returns what it drew on. Without
``ax``, a stand-alone :class:`~matplotlib.figure.Figure` is made, not
registered with pyplot, so nothing is shown and nothing leaks in a loop; save
it with ``ax.figure.savefig(...)``.

Time is simulated seconds everywhere else in hpcpower; here it is converted to
hours (and watts to kW, joules to MWh, waits to minutes) at the last moment.
The ``*_series`` functions give the exact step functions behind the plots, as
arrays, for checking and for other tools.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from hpcpower.platform import STATE_LABELS

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from hpcpower.results.records import Results

HOUR_S = 3600.0

#: One colour per node state, shared by every plot.
STATE_COLORS: dict[str, str] = {
    "sleeping": "#9e9e9e",
    "switching_on": "#f5a300",
    "idle": "#b8e186",
    "computing": "#3b6fb6",
    "switching_off": "#d7301f",
}

#: Bottom-to-top order of the stacked state timeline: work first, then waste.
STACK_ORDER: tuple[str, ...] = ("computing", "idle", "switching_on", "switching_off", "sleeping")

#: Indices into matplotlib's ``tab20`` used for jobs: its greys, reds and oranges
#: are left out so that no job looks like a sleeping or switching node.
JOB_PALETTE = np.array([0, 1, 4, 5, 8, 9, 10, 11, 12, 13, 16, 17, 18, 19])

#: Plot kinds of :func:`plot` (and of ``hpcpower plot --kind``).
KINDS: tuple[str, ...] = ("overview", "gantt", "states", "power", "queue")


# ------------------------------------------------------------------ series
def state_series(results: Results) -> tuple[np.ndarray, np.ndarray]:
    """Node counts per state as a step function (constant after each time).

    Returns:
        ``(times_s, counts)``: ``counts[i]`` (columns in :data:`STATE_LABELS`
        order) holds from ``times_s[i]`` to ``times_s[i + 1]``. The last time
        is ``results.end_s``; its row, the counts at the end, only closes the
        series.
    """
    rows = np.asarray(results.state_counts, dtype=float).reshape(-1, 1 + len(STATE_LABELS))
    times = rows[:, 0]
    counts = rows[:, 1:]
    if len(times) and times[-1] < results.end_s:
        times = np.append(times, results.end_s)
        counts = np.vstack([counts, counts[-1]])
    return times, counts


def node_watts(results: Results) -> np.ndarray:
    """Watts per (node, state), recovered exactly as energy / time in state.

    A (node, state) pair never visited has no recoverable power and is 0: it
    contributes nothing to any integral.
    """
    tis = results.time_in_state_s
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(tis > 0, results.node_energy_j / tis, 0.0)


def power_series(results: Results) -> tuple[np.ndarray, np.ndarray]:
    """Total power drawn (W) as an exact step function.

    For a platform whose nodes draw the same power in a state, power is
    Σ count_s × P_s over the recorded state counts; otherwise it is summed
    node by node over :meth:`Results.node_intervals`. Either way its integral
    over ``[0, end_s]`` is the run's total energy.

    Returns:
        ``(times_s, power_w)``: ``power_w[i]`` holds from ``times_s[i]`` to
        ``times_s[i + 1]``. The last time is ``results.end_s``; its value only
        closes the series.
    """
    watts = node_watts(results)
    visited = results.time_in_state_s > 0
    hi = np.where(visited, watts, -np.inf).max(axis=0)
    lo = np.where(visited, watts, np.inf).min(axis=0)
    seen = visited.any(axis=0)
    uniform = np.all(~seen | (hi - lo <= 1e-9 * np.abs(hi)))
    if uniform:
        per_state = np.where(seen, hi, 0.0)
        times, counts = state_series(results)
        return times, counts @ per_state
    index = {label: s for s, label in enumerate(STATE_LABELS)}
    rows = results.node_intervals()
    node = np.array([r[0] for r in rows], dtype=np.intp)
    state = np.array([index[r[1]] for r in rows], dtype=np.intp)
    start = np.array([r[2] for r in rows], dtype=float)
    end = np.array([r[3] for r in rows], dtype=float)
    w = watts[node, state]
    times, inverse = np.unique(
        np.concatenate([[0.0, results.end_s], start, end]), return_inverse=True
    )
    delta = np.zeros(len(times))
    np.add.at(delta, inverse[2:], np.concatenate([w, -w]))
    watts_now = np.cumsum(delta)
    # Every interval ends at end_s, so the sum falls to 0 there; keep the
    # closing value on the last level instead, as the counts branch does.
    if len(watts_now) > 1:
        watts_now[-1] = watts_now[-2]
    return times, watts_now


def queue_series(results: Results) -> tuple[np.ndarray, np.ndarray]:
    """Number of waiting jobs (submitted, not started, not rejected) over time.

    All submits and starts at one instant are applied before the count is
    taken, so a job started at its submit time never counts as waiting.

    Returns:
        ``(times_s, waiting)``: ``waiting[i]`` holds from ``times_s[i]`` to
        ``times_s[i + 1]``; the series runs from 0 to ``results.end_s``.
        Jobs never started by the end count as waiting until then.
    """
    t = results.jobs
    keep = (t["state"] != "rejected") & (t["submit_s"] <= results.end_s)
    submit = t["submit_s"][keep]
    start = t["start_s"][keep]
    start = start[~np.isnan(start)]
    times, inverse = np.unique(
        np.concatenate([[0.0, results.end_s], submit, start]), return_inverse=True
    )
    delta = np.zeros(len(times), dtype=np.int64)
    np.add.at(delta, inverse[2:], np.concatenate([np.ones(len(submit)), -np.ones(len(start))]))
    return times, np.cumsum(delta)


def pareto_front(points: Iterable[Sequence[float]]) -> list[int]:
    """Indices of the points no other point dominates, both coordinates minimised.

    ``q`` dominates ``p`` when ``q`` is no worse in both coordinates and better
    in one; equal points do not dominate each other, so duplicates on the front
    are all kept. Points with a NaN coordinate are never on the front.

    Returns:
        Indices into ``points``, ordered by increasing first coordinate.
    """
    pts = np.asarray(list(points), dtype=float).reshape(-1, 2)
    valid = np.flatnonzero(~np.isnan(pts).any(axis=1))
    order = valid[np.lexsort((pts[valid, 1], pts[valid, 0]))]
    front: list[int] = []
    best_y = np.inf
    for i in order.tolist():
        x, y = pts[i]
        if y < best_y:
            front.append(i)
            best_y = y
        elif front and x == pts[front[-1], 0] and y == pts[front[-1], 1]:
            front.append(i)
    return front


# ------------------------------------------------------------------- plots
def gantt(
    results: Results,
    ax: Axes | None = None,
    max_nodes: int | None = None,
    jobs: Iterable[int] | None = None,
) -> Axes:
    """Jobs as rectangles on node rows, with switching and sleeping shaded.

    One rectangle per (job, allocated node), coloured by job id; idle time is
    left blank. Drawn as a few :class:`~matplotlib.collections.PolyCollection`
    objects, so thousands of jobs on a large cluster stay quick.

    Args:
        results: A run's results.
        ax: Axes to draw on (default: a new figure).
        max_nodes: Draw only nodes ``0 .. max_nodes - 1``.
        jobs: Draw only these job ids (e.g. ``range(50)``) and limit the time
            axis to their span.
    """
    ax = ax if ax is not None else _new_axes((11, 6))
    n_nodes = results.time_in_state_s.shape[0]
    shown = n_nodes if max_nodes is None else max(0, min(max_nodes, n_nodes))
    t = results.jobs
    ids = (
        np.arange(len(t["job_id"]))
        if jobs is None
        else np.unique(np.fromiter(jobs, dtype=np.int64))
    )
    ids = ids[[results.allocations[i] is not None for i in ids.tolist()]]
    finish = np.where(np.isnan(t["finish_s"]), results.end_s, t["finish_s"])
    nodes = [results.allocations[i] for i in ids.tolist()]
    sizes = np.array([len(g) for g in nodes], dtype=np.intp)
    job_of = np.repeat(ids, sizes)
    node_of = np.concatenate(nodes).astype(np.intp) if len(nodes) else np.zeros(0, np.intp)
    on_shown = node_of < shown
    job_of, node_of = job_of[on_shown], node_of[on_shown]
    verts = _boxes(t["start_s"][job_of], finish[job_of], node_of)
    colors = _job_colors(job_of)
    # Outlines separate neighbouring jobs, but on a long run they would paint
    # every short job black: drop them past a few hundred rectangles.
    outline = len(verts) <= 1000
    ax.add_collection(
        _polygons(
            verts,
            facecolors=colors,
            edgecolors="black" if outline else "face",
            linewidths=0.3 if outline else 0.0,
            gid="jobs",
        )
    )

    if jobs is None:
        window = (0.0, results.end_s)
    elif len(ids):
        window = (float(t["start_s"][ids].min()), float(finish[ids].max()))
    else:
        window = (0.0, 0.0)
    handles = []
    rows = [
        r
        for r in results.node_intervals()
        if r[1] in ("sleeping", "switching_on", "switching_off") and r[0] < shown
    ]
    for label in ("switching_on", "switching_off", "sleeping"):
        mine = [r for r in rows if r[1] == label and r[3] > window[0] and r[2] < window[1]]
        node = np.array([r[0] for r in mine], dtype=np.intp)
        start = np.clip(np.array([r[2] for r in mine], dtype=float), *window)
        end = np.clip(np.array([r[3] for r in mine], dtype=float), *window)
        ax.add_collection(
            _polygons(
                _boxes(start, end, node),
                facecolors=STATE_COLORS[label],
                edgecolors="none",
                alpha=0.8,
                gid=label,
            )
        )
        handles.append(Patch(color=STATE_COLORS[label], alpha=0.8, label=_words(label)))
    handles.append(Patch(facecolor="white", edgecolor="black", linewidth=0.5, label="idle"))
    ax.set_xlim(window[0] / HOUR_S, max(window[1], window[0] + 1.0) / HOUR_S)
    ax.set_ylim(-0.5, max(shown, 1) - 0.5)
    ax.set_xlabel("time (hours)")
    ax.set_ylabel("node")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return ax


def _over_the_run(ax: Axes, results: Results, ylabel: str, top: float | None = None) -> None:
    """Time axis in hours over the whole run; y from 0 (to ``top`` if given)."""
    ax.set_xlim(0.0, max(results.end_s, 1.0) / HOUR_S)
    ax.set_ylim(0, top)
    ax.set_xlabel("time (hours)")
    ax.set_ylabel(ylabel)


def state_timeline(results: Results, ax: Axes | None = None) -> Axes:
    """Stacked areas of the number of nodes in each state over time (step-wise)."""
    ax = ax if ax is not None else _new_axes((11, 4))
    times, counts = state_series(results)
    column = {label: s for s, label in enumerate(STATE_LABELS)}
    ax.stackplot(
        times / HOUR_S,
        *(counts[:, column[label]] for label in STACK_ORDER),
        labels=[_words(label) for label in STACK_ORDER],
        colors=[STATE_COLORS[label] for label in STACK_ORDER],
        step="post",
        linewidth=0,
    )
    _over_the_run(ax, results, "nodes", top=results.time_in_state_s.shape[0])
    # Reversed so the legend reads top to bottom like the stack.
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(
        handles[::-1], labels[::-1], loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small"
    )
    return ax


def power(results: Results, ax: Axes | None = None) -> Axes:
    """Total power drawn (kW) over time: the exact step function of :func:`power_series`."""
    ax = ax if ax is not None else _new_axes((11, 4))
    times, watts = power_series(results)
    total_j = results.summary.get("total_energy_j", float(results.energy_by_state_j.sum()))
    ax.step(
        times / HOUR_S,
        watts / 1e3,
        where="post",
        color="black",
        linewidth=0.8,
        label=f"total power ({total_j / 3.6e9:.3f} MWh in all)",
    )
    _over_the_run(ax, results, "power (kW)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return ax


def queue_length(results: Results, ax: Axes | None = None) -> Axes:
    """Number of waiting jobs over time (from submit and start times)."""
    ax = ax if ax is not None else _new_axes((11, 4))
    times, waiting = queue_series(results)
    ax.step(
        times / HOUR_S,
        waiting,
        where="post",
        color="tab:purple",
        linewidth=0.8,
        label="waiting jobs",
    )
    _over_the_run(ax, results, "queue length (jobs)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return ax


def pareto(
    summaries: Sequence[Mapping[str, Any]],
    x: str = "mean_wait_s",
    y: str = "wasted_energy_j",
    label_key: str | Callable[[Mapping[str, Any]], object] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Scatter of runs with their non-dominated front (both axes minimised) joined.

    Args:
        summaries: Summary dicts (``Results.summary`` or ``summary.json``).
        x: Summary key on the x axis; dotted keys reach into nested dicts
            (``energy_j.idle``). Keys ending in ``_s`` are shown in minutes,
            in ``_j`` in MWh.
        y: Summary key on the y axis, likewise.
        label_key: Key whose value labels each point, e.g.
            ``config.policy.name`` or ``config.policy.timeout_s``, or a
            function of the summary returning the label.
        ax: Axes to draw on (default: a new figure).
    """
    ax = ax if ax is not None else _new_axes((7, 5))
    (x_scale, x_label), (y_scale, y_label) = _unit(x), _unit(y)
    xs = np.array([_float(_lookup(s, x)) for s in summaries]) / x_scale
    ys = np.array([_float(_lookup(s, y)) for s in summaries]) / y_scale
    front = pareto_front(zip(xs.tolist(), ys.tolist(), strict=True))
    on_front = np.zeros(len(xs), dtype=bool)
    on_front[front] = True
    ax.scatter(xs[~on_front], ys[~on_front], color="0.6", zorder=2, label="dominated", gid="runs")
    ax.plot(
        xs[front],
        ys[front],
        marker="o",
        color="tab:red",
        zorder=3,
        label="Pareto front",
        gid="front",
    )
    if label_key is not None:
        for i, summary in enumerate(summaries):
            label = label_key(summary) if callable(label_key) else _lookup(summary, label_key)
            ax.annotate(
                str(label),
                (xs[i], ys[i]),
                xytext=(4, 4),
                textcoords="offset points",
                fontsize="small",
            )
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.legend(fontsize="small")
    return ax


def overview(results: Results) -> Figure:
    """A figure of :func:`state_timeline`, :func:`power` and :func:`queue_length`.

    The three panels share the time axis; the title names the policy, the
    platform and the workload.
    """
    fig = Figure(figsize=(11, 8), layout="constrained")
    axes = fig.subplots(3, 1, sharex=True)
    state_timeline(results, ax=axes[0])
    power(results, ax=axes[1])
    queue_length(results, ax=axes[2])
    for ax in axes[:-1]:
        ax.set_xlabel("")
    fig.suptitle(describe(results))
    return fig


def plot(results: Results, kind: str = "overview") -> Figure:
    """The figure of one :data:`KINDS` entry (what ``hpcpower plot --kind`` draws).

    Raises:
        ValueError: ``kind`` is not one of :data:`KINDS`.
    """
    if kind == "overview":
        return overview(results)
    draw = {"gantt": gantt, "states": state_timeline, "power": power, "queue": queue_length}
    if kind not in draw:
        raise ValueError(f"unknown plot kind {kind!r}: use {', '.join(KINDS)}")
    ax = draw[kind](results)
    ax.set_title(describe(results))
    fig = ax.figure
    # Each kind draws on a figure of its own, never on a subfigure.
    assert isinstance(fig, Figure)
    return fig


def describe(results: Results) -> str:
    """One line naming the policy, the platform and the workload of a run."""
    c = results.config
    policy = c.get("policy", {})
    policy = policy.get("name", "?") if isinstance(policy, Mapping) else str(policy)
    workload = Path(str(c.get("workload", "?"))).name
    jobs = c.get("jobs")
    text = f"{policy} on {c.get('platform', '?')} ({c.get('n_nodes', '?')} nodes), {workload}"
    return text + (f" ({jobs} jobs)" if jobs is not None else "")


# ----------------------------------------------------------------- helpers
def _new_axes(figsize: tuple[float, float]) -> Axes:
    return Figure(figsize=figsize, layout="constrained").add_subplot()


def _polygons(verts: np.ndarray, **style: Any) -> PolyCollection:
    """A :class:`PolyCollection` of ``verts``, one ``(n, k, 2)`` array of ``n`` polygons."""
    # matplotlib annotates verts as a sequence of arrays, yet takes one 3-D
    # array too, by a faster path than for a list of polygons.
    return PolyCollection(verts, **style)  # type: ignore[arg-type]


def _boxes(start_s: np.ndarray, end_s: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Rectangles ``(n, 4, 2)`` spanning ``[start, end]`` hours on rows ``row ± 0.4``."""
    x0 = np.asarray(start_s, dtype=float) / HOUR_S
    x1 = np.asarray(end_s, dtype=float) / HOUR_S
    y0 = np.asarray(row, dtype=float) - 0.4
    y1 = y0 + 0.8
    return np.stack(
        [
            np.stack([x0, y0], -1),
            np.stack([x0, y1], -1),
            np.stack([x1, y1], -1),
            np.stack([x1, y0], -1),
        ],
        axis=1,
    ).reshape(-1, 4, 2)


def _job_colors(job_ids: np.ndarray) -> np.ndarray:
    from matplotlib import colormaps

    # Stepping through the palette gives neighbouring ids (often neighbours in
    # time on a node) distinct colours.
    return colormaps["tab20"](JOB_PALETTE[np.asarray(job_ids) * 5 % len(JOB_PALETTE)])


def _words(label: str) -> str:
    return label.replace("_", " ")


def _lookup(summary: Mapping[str, Any], key: str) -> Any:
    value: Any = summary
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise KeyError(f"summary has no {key!r} (no {part!r} there)")
        value = value[part]
    return value


def _float(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _unit(key: str) -> tuple[float, str]:
    """Scale and axis label of a summary key: ``energy_j.idle`` -> MWh, "energy idle (MWh)"."""
    parts = key.split(".")
    if parts[0] == "config":
        parts = parts[1:] or parts
    scale, unit = 1.0, ""
    for k, part in enumerate(parts):
        for suffix, factor, name in (("_s", 60.0, "min"), ("_j", 3.6e9, "MWh")):
            if part.endswith(suffix):
                parts[k], scale, unit = part[: -len(suffix)], factor, name
    label = " ".join(_words(p) for p in parts)
    return scale, f"{label} ({unit})" if unit else label
