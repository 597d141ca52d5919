"""Plots of a run: Gantt, node states, power, queue length, SNF-ICON's screen, comparisons.

Every plot is computed from the records in :class:`~hpcpower.results.records.Results`
(never from sampled values) and drawn with matplotlib's object-oriented API:
each function takes an optional ``ax`` and returns what it drew on. Without
``ax``, a stand-alone :class:`~matplotlib.figure.Figure` is made, not
registered with pyplot, so nothing is shown and nothing leaks in a loop; save
it with ``ax.figure.savefig(...)``.

Time is simulated seconds everywhere else in hpcpower; here it is converted at
the last moment to the unit that suits the span shown (s, min, h or d), and so
are power (W, kW, MW) and energy (J, kWh, MWh). Every plot of one run takes
``window=(t0, t1)`` in seconds to show that part only. The ``*_series``
functions give the exact step functions behind the plots, as arrays, for
checking and for other tools.

Every plot colours a node state with :data:`STATE_COLORS`; jobs are shades of
the computing colour.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from hpcpower.platform import STATE_LABELS
from hpcpower.states import STATE_CODES
from hpcpower.states import STATE_COLORS as _STATE_COLORS

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from hpcpower.results.records import Results

HOUR_S = 3600.0

#: One colour per node state, shared by every plot (defined in :mod:`hpcpower.states`).
STATE_COLORS = _STATE_COLORS

#: Bottom-to-top order of the stacked state timeline: work first, then waste.
STACK_ORDER: tuple[str, ...] = ("computing", "idle", "switching_on", "switching_off", "sleeping")

#: Shading of the time SNF-ICON's decision log spends in ICON mode (no state uses it).
ICON_SHADE = "#ece4f5"

#: Plot kinds of :func:`plot` (and of ``hpcpower plot --kind``).
KINDS: tuple[str, ...] = ("overview", "gantt", "states", "power", "queue", "icon")

#: ``(unit, seconds per unit, used for spans below)``, smallest first.
TIME_UNITS: tuple[tuple[str, float, float], ...] = (
    ("s", 1.0, 600.0),
    ("min", 60.0, 3 * 3600.0),
    ("h", 3600.0, 3 * 86400.0),
    ("d", 86400.0, math.inf),
)
#: ``(unit, joules per unit, used for amounts below)``, smallest first.
ENERGY_UNITS: tuple[tuple[str, float, float], ...] = (
    ("J", 1.0, 3.6e5),
    ("kWh", 3.6e6, 3.6e9),
    ("MWh", 3.6e9, math.inf),
)
#: ``(unit, watts per unit, used for powers below)``, smallest first.
POWER_UNITS: tuple[tuple[str, float, float], ...] = (
    ("W", 1.0, 1e4),
    ("kW", 1e3, 1e7),
    ("MW", 1e6, math.inf),
)

Window = tuple[float, float]


# ------------------------------------------------------------------- units
def _pick(units: tuple[tuple[str, float, float], ...], size: float) -> tuple[str, float]:
    size = abs(size) if np.isfinite(size) else 0.0
    for name, scale, below in units:
        if size < below:
            return name, scale
    return units[-1][0], units[-1][1]


def time_unit(span_s: float) -> tuple[str, float]:
    """The unit of a time axis spanning ``span_s`` seconds, and its length in seconds.

    Seconds below 10 minutes, minutes below 3 hours, hours below 3 days, days beyond.
    """
    return _pick(TIME_UNITS, span_s)


def energy_unit(joules: float) -> tuple[str, float]:
    """The unit of an amount of energy, and its size in joules: J, kWh (from 0.1 kWh) or MWh."""
    return _pick(ENERGY_UNITS, joules)


def power_unit(watts: float) -> tuple[str, float]:
    """The unit of a power, and its size in watts: W, kW (from 10 kW) or MW (from 10 MW)."""
    return _pick(POWER_UNITS, watts)


def format_energy(joules: float) -> str:
    """An amount of energy in the unit of :func:`energy_unit`: ``"138000 J"``, ``"0.456 MWh"``."""
    unit, scale = energy_unit(joules)
    value = joules / scale
    # Four significant digits, but never in exponent notation.
    return f"{value:.4g} {unit}" if abs(value) < 1e4 else f"{value:.0f} {unit}"


def format_duration(seconds: float) -> str:
    """A duration in the largest unit it fills, kept exact where it can be: ``"2 h"``, ``"100 s"``.

    A unit is used when the duration is at least one of it and a whole number
    of half units (so 5400 s is ``"1.5 h"`` but 100 s stays ``"100 s"``).
    """
    if not np.isfinite(seconds):
        return "never" if seconds > 0 else str(seconds)
    fallback = None
    for name, scale, _ in reversed(TIME_UNITS):
        if abs(seconds) >= scale:
            value = seconds / scale
            if (2 * value).is_integer():
                return f"{value:g} {name}"
            fallback = fallback or f"{value:.3g} {name}"
    return fallback or f"{seconds:g} s"


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
    index = STATE_CODES
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


def decision_series(results: Results, key: str) -> tuple[np.ndarray, np.ndarray]:
    """One column of the decision log over time: ``(times_s, values)``, one entry per row.

    A row without the key, or with ``None`` there, gives NaN. Text columns
    (``mode``, reasons) come back as an object array.
    """
    rows = results.decisions
    times = np.array([float(r.get("time_s", math.nan)) for r in rows], dtype=float)
    values = [r.get(key) for r in rows]
    if all(v is None or isinstance(v, (int, float, np.number)) for v in values):
        return times, np.array([math.nan if v is None else float(v) for v in values])
    return times, np.array(values, dtype=object)


def clip_series(
    times: np.ndarray, values: np.ndarray, window: Window
) -> tuple[np.ndarray, np.ndarray]:
    """A step function (value ``values[i]`` from ``times[i]``) cut to ``window``.

    The result starts at ``t0`` with the value holding there and ends at
    ``t1`` with a closing copy of the last value, so its integral is the
    integral of the original over the window.
    """
    t0, t1 = window
    times = np.asarray(times, dtype=float)
    values = np.asarray(values)
    first = max(int(np.searchsorted(times, t0, side="right")) - 1, 0)
    inside = np.flatnonzero((times > t0) & (times < t1))
    keep = np.concatenate([[first], inside])
    out_t = np.concatenate([[t0], times[inside], [t1]])
    out_v = np.concatenate([values[keep], values[keep[-1:]]])
    return out_t, out_v


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
    window: Window | None = None,
    labels: bool = True,
) -> Axes:
    """Jobs as rectangles on node rows, with each node's other states shaded.

    One rectangle per (job, allocated node), in a shade of the computing
    colour that changes from job to job; idle, switching and sleeping time is
    shaded in the state's colour. Drawn as a few
    :class:`~matplotlib.collections.PolyCollection` objects, so thousands of
    jobs on a large cluster stay quick.

    Args:
        results: A run's results.
        ax: Axes to draw on (default: a new figure).
        max_nodes: Draw only nodes ``0 .. max_nodes - 1``.
        jobs: Draw only these job ids (e.g. ``range(50)``) and, without
            ``window``, limit the time axis to their span.
        window: ``(t0, t1)`` in seconds: draw only that part of the run.
        labels: Write each job's id on its rectangle where it fits.
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
    if window is None and jobs is not None:
        window = (float(t["start_s"][ids].min()), float(finish[ids].max())) if len(ids) else None
        window = window if window is None or window[1] > window[0] else None
    t0, t1 = _window(results, window)
    # A job is drawn when its run meets the window (a job taking no time, when inside it).
    meets = (t["start_s"][ids] < t1) & (finish[ids] > t0) | (
        (t["start_s"][ids] >= t0) & (finish[ids] <= t1)
    )
    ids = ids[meets]
    nodes = [results.allocations[i] for i in ids.tolist()]
    sizes = np.array([len(g) for g in nodes], dtype=np.intp)
    job_of = np.repeat(ids, sizes)
    node_of = np.concatenate(nodes).astype(np.intp) if len(nodes) else np.zeros(0, np.intp)
    on_shown = node_of < shown
    job_of, node_of = job_of[on_shown], node_of[on_shown]
    scale = _time_axis(ax, t0, t1)
    start = np.clip(t["start_s"][job_of], t0, t1)
    end = np.clip(finish[job_of], t0, t1)
    verts = _boxes(start / scale, end / scale, node_of)
    # Outlines separate neighbouring jobs, but on a long run they would paint
    # every short job black: drop them past a few hundred rectangles.
    outline = len(verts) <= 1000
    ax.add_collection(
        _polygons(
            verts,
            facecolors=_job_colors(job_of),
            edgecolors="black" if outline else "face",
            linewidths=0.3 if outline else 0.0,
            gid="jobs",
            zorder=2,
        )
    )
    handles = [Patch(color=STATE_COLORS["computing"], label="computing (a shade per job)")]
    rows = [r for r in results.node_intervals() if r[1] != "computing" and r[0] < shown]
    for label in ("idle", "switching_on", "switching_off", "sleeping"):
        mine = [r for r in rows if r[1] == label and r[3] > t0 and r[2] < t1]
        node = np.array([r[0] for r in mine], dtype=np.intp)
        begin = np.clip(np.array([r[2] for r in mine], dtype=float), t0, t1)
        finish_r = np.clip(np.array([r[3] for r in mine], dtype=float), t0, t1)
        ax.add_collection(
            _polygons(
                _boxes(begin / scale, finish_r / scale, node),
                facecolors=STATE_COLORS[label],
                edgecolors="none",
                gid=label,
                zorder=1,
            )
        )
        handles.append(Patch(color=STATE_COLORS[label], label=_words(label)))
    ax.set_ylim(-0.5, max(shown, 1) - 0.5)
    ax.set_ylabel("node")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if labels and len(ids):
        _label_jobs(ax, results, ids, shown, (t0, t1), scale)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return ax


def state_timeline(results: Results, ax: Axes | None = None, window: Window | None = None) -> Axes:
    """Stacked areas of the number of nodes in each state over time (step-wise)."""
    ax = ax if ax is not None else _new_axes((11, 4))
    t0, t1 = _window(results, window)
    scale = _time_axis(ax, t0, t1)
    times, counts = clip_series(*state_series(results), _data(results, (t0, t1)))
    column = STATE_CODES
    ax.stackplot(
        times / scale,
        *(counts[:, column[label]] for label in STACK_ORDER),
        labels=[_words(label) for label in STACK_ORDER],
        colors=[STATE_COLORS[label] for label in STACK_ORDER],
        step="post",
        linewidth=0,
    )
    ax.set_ylim(0, results.time_in_state_s.shape[0])
    ax.set_ylabel("nodes")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    # Reversed so the legend reads top to bottom like the stack.
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(
        handles[::-1], labels[::-1], loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small"
    )
    return ax


def power(
    results: Results,
    ax: Axes | None = None,
    window: Window | None = None,
    top_w: float | None = None,
) -> Axes:
    """Total power drawn over time: the exact step function of :func:`power_series`.

    The power unit (W, kW, MW) suits the largest value shown; the legend
    gives the energy drawn over the window, in J, kWh or MWh by size.

    Args:
        results: A run's results.
        ax: Axes to draw on (default: a new figure).
        window: ``(t0, t1)`` in seconds: draw only that part of the run.
        top_w: Choose the power unit for this many watts instead (to draw
            several runs in one unit).
    """
    ax = ax if ax is not None else _new_axes((11, 4))
    t0, t1 = _window(results, window)
    scale = _time_axis(ax, t0, t1)
    times, watts = clip_series(*power_series(results), _data(results, (t0, t1)))
    unit, per = power_unit(float(np.max(watts)) if top_w is None else top_w)
    joules = float(np.sum(np.diff(times) * watts[:-1]))
    where = "in all" if _data(results, (t0, t1)) == (0.0, results.end_s) else "in the window"
    ax.step(
        times / scale,
        watts / per,
        where="post",
        color="black",
        linewidth=0.8,
        label=f"total power ({format_energy(joules)} {where})",
    )
    ax.set_ylim(0, None)
    ax.set_ylabel(f"power ({unit})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return ax


def queue_length(results: Results, ax: Axes | None = None, window: Window | None = None) -> Axes:
    """Number of waiting jobs over time (from submit and start times)."""
    ax = ax if ax is not None else _new_axes((11, 4))
    t0, t1 = _window(results, window)
    scale = _time_axis(ax, t0, t1)
    times, waiting = clip_series(*queue_series(results), _data(results, (t0, t1)))
    ax.step(
        times / scale,
        waiting,
        where="post",
        color="tab:purple",
        linewidth=0.8,
        label="waiting jobs",
    )
    ax.set_ylim(0, max(1, int(waiting.max()) if len(waiting) else 1) * 1.05)
    ax.set_ylabel("queue length (jobs)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return ax


def icon_screen(results: Results, window: Window | None = None) -> Figure:
    """SNF-ICON's mode and Markov screen over time, from the run's decision log.

    Four panels share the time axis, each shaded where the log says ICON mode
    (fallback unshaded): the interarrival and service CV against the accepted
    band ``|CV - 1| <= markov_cv_tolerance``; their lag-1 autocorrelation
    against ``±markov_max_lag1``; their KS distance over its limit (accepted
    at or below 1); and the spare-node target of each decision. A value
    holds from its row to the next; a gap is a pass that did not compute it.
    The bands come from the run's policy settings when it has them.

    Raises:
        ValueError: The run's decision log has no ``mode`` column (it was not
            made by a policy that logs its screen, such as snf-icon).
    """
    rows = results.decisions
    if not any("mode" in r for r in rows):
        name = _policy(results).get("name", "this policy")
        raise ValueError(
            f"{name}: the run's decision log has no 'mode' column ({len(rows)} rows), "
            "so there is no ICON/fallback screen to plot; runs of snf-icon have one"
        )
    t0, t1 = _window(results, window)
    settings = _policy(results)
    fig = Figure(figsize=(11, 9), layout="constrained")
    axes = fig.subplots(4, 1, sharex=True)
    scale = 1.0
    for ax in axes:
        scale = _time_axis(ax, t0, t1)
    times, mode = decision_series(results, "mode")
    end = np.append(times, results.end_s)
    icon = np.append(mode == "icon", mode[-1:] == "icon")
    shade_t, shade = clip_series(end, icon, _data(results, (t0, t1)))
    share = _share(shade_t, shade.astype(bool))

    def stat(
        ax: Axes, key: str, label: str, color: str, over: str | None = None, hold: bool = False
    ) -> None:
        if not any(key in r for r in rows):
            return
        t, v = decision_series(results, key)
        if over is not None:
            v = v / decision_series(results, over)[1]
        if hold:
            # Only some passes set this value; it holds until the next one that does.
            t, v = t[~np.isnan(v)], v[~np.isnan(v)]
            if not len(t):
                return
        t, v = clip_series(
            np.append(t, results.end_s), np.append(v, v[-1:]), _data(results, (t0, t1))
        )
        ax.step(t / scale, v, where="post", color=color, linewidth=0.9, label=label, gid=key)

    arrival, service = "tab:purple", "tab:brown"
    stat(axes[0], "arrival_cv", "interarrival CV", arrival)
    stat(axes[0], "service_cv", "service CV", service)
    tol = settings.get("markov_cv_tolerance")
    if tol is not None:
        axes[0].axhspan(1 - tol, 1 + tol, color="0.85", zorder=0, label=f"|CV - 1| <= {tol:g}")
    axes[0].axhline(1.0, color="0.4", linewidth=0.6, linestyle=":")
    axes[0].set_ylabel("CV")
    stat(axes[1], "arrival_lag1", "interarrival lag-1", arrival)
    stat(axes[1], "service_lag1", "service lag-1", service)
    lag = settings.get("markov_max_lag1")
    if lag is not None:
        axes[1].axhspan(-lag, lag, color="0.85", zorder=0, label=f"|lag-1| <= {lag:g}")
    axes[1].set_ylabel("lag-1 autocorrelation")
    stat(axes[2], "arrival_ks", "interarrival KS / limit", arrival, over="arrival_ks_limit")
    stat(axes[2], "service_ks", "service KS / limit", service, over="service_ks_limit")
    axes[2].axhspan(0.0, 1.0, color="0.85", zorder=0, label="KS <= limit")
    axes[2].set_ylabel("KS distance / limit")
    stat(axes[3], "target", "spare-node target", "black", hold=True)
    axes[3].set_ylim(0, None)
    axes[3].set_ylabel("spare nodes")
    axes[3].yaxis.set_major_locator(MaxNLocator(integer=True))
    for k, ax in enumerate(axes):
        ax.fill_between(
            shade_t / scale,
            0,
            1,
            where=shade.astype(bool),
            step="post",
            color=ICON_SHADE,
            transform=ax.get_xaxis_transform(),
            zorder=-1,
            label="ICON mode (fallback unshaded)" if k == 0 else None,
            gid="icon-mode",
        )
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
        if k < len(axes) - 1:
            ax.set_xlabel("")
    _title(fig, results, extra=f"ICON mode {100 * share:.0f} % of the time shown")
    return fig


def compare(
    a: Results,
    b: Results,
    labels: Sequence[str] | None = None,
    window: Window | None = None,
) -> Figure:
    """Two runs side by side: node states, power and queue, on the same scales.

    Each row shares its y axis, so the taller stack, the higher power or the
    longer queue shows at a glance; both columns cover the same time window
    (by default, the longer of the two runs).

    Args:
        a: The run on the left.
        b: The run on the right.
        labels: Column titles (default: each run's policy and its settings).
        window: ``(t0, t1)`` in seconds: show that part of both runs.
    """
    fig = Figure(figsize=(14, 8), layout="constrained")
    axes = fig.subplots(3, 2, sharey="row")
    shown = window if window is not None else (0.0, max(a.end_s, b.end_s, 1.0))
    # One power unit for both columns, as they share the y axis.
    top_w = max(float(np.max(clip_series(*power_series(r), _data(r, shown))[1])) for r in (a, b))
    for col, run in enumerate((a, b)):
        state_timeline(run, ax=axes[0, col], window=shown)
        power(run, ax=axes[1, col], window=shown, top_w=top_w)
        queue_length(run, ax=axes[2, col], window=shown)
        for ax in axes[:2, col]:
            ax.set_xlabel("")
        s = run.summary
        head = labels[col] if labels is not None else describe(run)
        text = (
            f"{head}\nmean wait {format_duration(s.get('mean_wait_s', math.nan))}, "
            f"wasted {format_energy(s.get('wasted_energy_j', math.nan))}"
        )
        axes[0, col].set_title("\n".join(_wrap(text, 5.5)), fontsize="medium")
    for ax in axes[:, 0]:
        # One legend per row is enough: the right column's.
        ax.get_legend().remove()
    axes[0, 0].set_ylim(0, max(r.time_in_state_s.shape[0] for r in (a, b)))
    return fig


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
            (``energy_j.idle``). Keys ending in ``_s`` are shown in the time
            unit of their largest value (s, min, h, d), in ``_j`` in J, kWh
            or MWh likewise.
        y: Summary key on the y axis, likewise.
        label_key: Key whose value labels each point, e.g.
            ``config.policy.name`` or ``config.policy.timeout_s``, or a
            function of the summary returning the label.
        ax: Axes to draw on (default: a new figure).
    """
    ax = ax if ax is not None else _new_axes((7, 5))
    raw_x = np.array([_float(_lookup(s, x)) for s in summaries])
    raw_y = np.array([_float(_lookup(s, y)) for s in summaries])
    (x_scale, x_label), (y_scale, y_label) = _unit(x, raw_x), _unit(y, raw_y)
    xs, ys = raw_x / x_scale, raw_y / y_scale
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


def timeout_tradeoff(
    runs: Sequence[Results | Mapping[str, Any]],
    x: str = "mean_wait_s",
    y: str = "wasted_energy_j",
    ax: Axes | None = None,
) -> Axes:
    """The idle timeout's trade-off: runs differing in ``timeout_s``, wait against waste.

    A :func:`pareto` plot whose points are labelled with their timeout (and
    their policy, when the runs have more than one), titled with what was
    varied.

    Args:
        runs: ``Results`` or summaries (``summary.json``), one per timeout.
        x: Summary key on the x axis.
        y: Summary key on the y axis.
        ax: Axes to draw on (default: a new figure).
    """
    summaries = [r.summary if hasattr(r, "summary") else r for r in runs]
    names = {str((s.get("config") or {}).get("policy", {}).get("name", "?")) for s in summaries}

    def label(s: Mapping[str, Any]) -> str:
        policy = (s.get("config") or {}).get("policy", {})
        text = format_duration(_float(policy.get("timeout_s")))
        return f"{policy.get('name', '?')} {text}" if len(names) > 1 else text

    ax = pareto(summaries, x=x, y=y, label_key=label, ax=ax)
    ax.margins(x=0.12, y=0.08)  # room for the labels of the outer points
    ax.set_title(
        "\n".join(_wrap(f"idle timeout trade-off: {', '.join(sorted(names))}", 6.5)),
        fontsize="medium",
    )
    return ax


def overview(results: Results, window: Window | None = None) -> Figure:
    """A figure of :func:`state_timeline`, :func:`power` and :func:`queue_length`.

    The three panels share the time axis; the title names the policy, its
    settings, the platform and the workload.
    """
    fig = Figure(figsize=(11, 8), layout="constrained")
    axes = fig.subplots(3, 1, sharex=True)
    state_timeline(results, ax=axes[0], window=window)
    power(results, ax=axes[1], window=window)
    queue_length(results, ax=axes[2], window=window)
    for ax in axes[:-1]:
        ax.set_xlabel("")
    _title(fig, results)
    return fig


def plot(results: Results, kind: str = "overview", window: Window | None = None) -> Figure:
    """The figure of one :data:`KINDS` entry (what ``hpcpower plot --kind`` draws).

    Args:
        results: A run's results.
        kind: One of :data:`KINDS`.
        window: ``(t0, t1)`` in seconds: draw only that part of the run.

    Raises:
        ValueError: ``kind`` is not one of :data:`KINDS`, the window is empty,
            or (``icon``) the run has no SNF-ICON decision log.
    """
    if kind == "overview":
        return overview(results, window=window)
    if kind == "icon":
        return icon_screen(results, window=window)
    draw: dict[str, Callable[..., Axes]] = {
        "gantt": gantt,
        "states": state_timeline,
        "power": power,
        "queue": queue_length,
    }
    if kind not in draw:
        raise ValueError(f"unknown plot kind {kind!r}: use {', '.join(KINDS)}")
    ax = draw[kind](results, window=window)
    _title(ax, results)
    fig = ax.figure
    # Each kind draws on a figure of its own, never on a subfigure.
    assert isinstance(fig, Figure)
    return fig


def describe(results: Results) -> str:
    """Two lines naming the policy, the platform and the workload, then the policy's settings.

    The settings are the idle timeout, when the policy has one, and every
    other policy setting the scenario chose (``--set policy.alpha=...`` on
    the command line, ``policy__alpha=...`` in ``Simulation.from_scenario``),
    so that a figure says what made it however the run was started.
    """
    text = _one_line(results)
    chosen = settings(results)
    return text + ("\n" + ", ".join(chosen) if chosen else "")


def settings(results: Results) -> list[str]:
    """The policy settings a title names: ``["timeout 2 h", "alpha=100"]``."""
    return settings_of(results.config)


def settings_of(config: Mapping[str, Any]) -> list[str]:
    """:func:`settings` from a run's configuration (``summary.json``'s ``config``)."""
    policy = _policy_of(config)
    scenario = (config.get("scenario") or {}).get("policy") or {}
    out = []
    if "timeout_s" in policy:
        out.append(f"timeout {format_duration(_float(policy['timeout_s']))}")
    for key, value in scenario.items():
        if key in ("name", "timeout_s"):
            continue
        shown = (
            format_duration(float(value))
            if key.endswith("_s") and isinstance(value, (int, float))
            else f"{value:g}"
            if isinstance(value, float)
            else str(value)
        )
        out.append(f"{key}={shown}")
    return out


# ----------------------------------------------------------------- helpers
def _new_axes(figsize: tuple[float, float]) -> Axes:
    return Figure(figsize=figsize, layout="constrained").add_subplot()


def _policy(results: Results) -> Mapping[str, Any]:
    return _policy_of(results.config)


def _policy_of(config: Mapping[str, Any]) -> Mapping[str, Any]:
    policy = config.get("policy", {})
    return policy if isinstance(policy, Mapping) else {"name": str(policy)}


def _one_line(results: Results) -> str:
    return headline_of(results.config)


def headline_of(config: Mapping[str, Any]) -> str:
    """The first line of :func:`describe` from a configuration: policy, platform, workload."""
    c = config
    workload = Path(str(c.get("workload", "?"))).name
    jobs = c.get("jobs")
    text = (
        f"{_policy_of(c).get('name', '?')} on {c.get('platform', '?')} "
        f"({c.get('n_nodes', '?')} nodes), {workload}"
    )
    return text + (f" ({jobs} jobs)" if jobs is not None else "")


def _wrap(text: str, width_in: float, points: float = 12.0) -> list[str]:
    """Lines of ``text`` that fit ``width_in`` inches at ``points`` (each line wrapped apart)."""
    # An average character of matplotlib's default font is about 0.6 em wide.
    chars = max(20, int(width_in * 72 / (0.6 * points)))
    return [w for line in text.split("\n") for w in textwrap.wrap(line, chars) or [""]]


def _title(target: Figure | Axes, results: Results, extra: str = "") -> None:
    """Title a figure (``suptitle``) or axes with :func:`describe`, wrapped to fit."""
    text = describe(results) + (f"\n{extra}" if extra else "")
    if isinstance(target, Figure):
        target.suptitle("\n".join(_wrap(text, target.get_figwidth() * 0.95)))
    else:
        width = _figure(target).get_figwidth() * target.get_position().width
        target.set_title("\n".join(_wrap(text, width)), fontsize="large")


def _window(results: Results, window: Window | None) -> Window:
    """The time axis as ``(t0, t1)`` seconds: the whole run by default.

    A window may reach past the run's end (to show two runs of different
    lengths on one axis); :func:`_data` cuts it to what the run has.

    Raises:
        ValueError: The window is empty or lies outside the run.
    """
    if window is None:
        return 0.0, max(results.end_s, 1.0)
    t0, t1 = (float(w) for w in window)
    if not t0 < t1:
        raise ValueError(f"window ({t0:g}, {t1:g}) s: the start must come before the end")
    if t0 >= max(results.end_s, 1.0) or t1 <= 0:
        raise ValueError(
            f"window ({t0:g}, {t1:g}) s is outside the run, which spans 0 to {results.end_s:g} s"
        )
    if math.isinf(t1):  # (open-ended: to the end of the run)
        t1 = max(results.end_s, t0 + 1.0)
    return t0, t1


def _data(results: Results, window: Window) -> Window:
    """The part of ``window`` the run covers."""
    return max(window[0], 0.0), max(min(window[1], results.end_s), 0.0)


def _time_axis(ax: Axes, t0: float, t1: float) -> float:
    """Set the x axis to ``[t0, t1]`` in the unit the span calls for; return that unit in s."""
    unit, scale = time_unit(t1 - t0)
    ax.set_xlim(t0 / scale, t1 / scale)
    ax.set_xlabel(f"time ({unit})")
    return scale


def _share(times: np.ndarray, flag: np.ndarray) -> float:
    """The fraction of ``[times[0], times[-1]]`` where the step function ``flag`` holds."""
    span = times[-1] - times[0]
    return float(np.sum(np.diff(times) * flag[:-1]) / span) if span > 0 else 0.0


def _figure(ax: Axes) -> Figure:
    """The whole figure an axes sits on (through any subfigures)."""
    fig = ax.figure
    if not isinstance(fig, Figure):  # a subfigure: its .figure is the whole one
        fig = fig.figure
    assert isinstance(fig, Figure)
    return fig


def _polygons(verts: np.ndarray, **style: Any) -> PolyCollection:
    """A :class:`PolyCollection` of ``verts``, one ``(n, k, 2)`` array of ``n`` polygons."""
    # matplotlib annotates verts as a sequence of arrays, yet takes one 3-D
    # array too, by a faster path than for a list of polygons.
    return PolyCollection(verts, **style)  # type: ignore[arg-type]


def _boxes(x0: np.ndarray, x1: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Rectangles ``(n, 4, 2)`` spanning ``[x0, x1]`` on rows ``row ± 0.4``."""
    x0 = np.asarray(x0, dtype=float)
    x1 = np.asarray(x1, dtype=float)
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


#: How far each job's shade moves from the computing colour (negative: darker).
_SHADES = np.array([0.0, 0.35, -0.25, 0.55, 0.15, -0.4, 0.45])


def _job_colors(job_ids: np.ndarray) -> np.ndarray:
    """A shade of the computing colour per job id, neighbouring ids apart."""
    base = np.array(to_rgb(STATE_COLORS["computing"]))
    shade = _SHADES[np.asarray(job_ids, dtype=np.int64) % len(_SHADES)][:, None]
    # Towards white for positive shades, towards black for negative ones.
    rgb = np.where(shade >= 0, base + (1 - base) * shade, base * (1 + shade))
    return np.hstack([rgb, np.ones((len(rgb), 1))])


def _label_jobs(
    ax: Axes, results: Results, ids: np.ndarray, shown: int, window: Window, scale: float
) -> None:
    """Write each job's id in the middle of its widest block of neighbouring nodes, if it fits."""
    t = results.jobs
    t0, t1 = window
    # The axes' size in points before layout; the legend beside it takes about a fifth.
    pos = ax.get_position()
    fig_w, fig_h = _figure(ax).get_size_inches()
    width_pt = pos.width * fig_w * 72 * 0.8
    height_pt = pos.height * fig_h * 72 * 0.9
    pt_per_s = width_pt / (t1 - t0)
    pt_per_row = height_pt / max(shown, 1)
    size = 7.0
    finish = np.where(np.isnan(t["finish_s"]), results.end_s, t["finish_s"])
    for job_id in ids.tolist():
        begin = max(float(t["start_s"][job_id]), t0)
        end = min(float(finish[job_id]), t1)
        text = str(t["job_id"][job_id])  # the job's id in the workload
        if (end - begin) * pt_per_s < 0.6 * size * len(text) + 4:
            continue
        nodes = np.sort(results.allocations[job_id])
        nodes = nodes[nodes < shown]
        if not len(nodes):
            continue
        # Split the nodes into runs of consecutive ids; label the longest.
        cuts = np.flatnonzero(np.diff(nodes) != 1) + 1
        block = max(np.split(nodes, cuts), key=len)
        if (len(block) - 0.2) * pt_per_row < size * 1.1:
            continue
        ax.text(
            (begin + end) / 2 / scale,
            (block[0] + block[-1]) / 2,
            text,
            ha="center",
            va="center",
            fontsize=size,
            color="white" if _job_colors(np.array([job_id]))[0, :3].mean() < 0.5 else "black",
            gid="job-label",
            clip_on=True,
            zorder=3,
        )


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
    if value is None:
        return float("nan")
    if isinstance(value, str) and value in ("inf", "-inf"):
        return float(value)
    return float(value)


def _unit(key: str, values: np.ndarray) -> tuple[float, str]:
    """Scale and axis label of a summary key: ``energy_j.idle`` -> "energy idle (kWh)".

    The unit suits the largest finite value: a time unit for keys ending in
    ``_s``, an energy unit for ``_j``.
    """
    parts = key.split(".")
    if parts[0] == "config":
        parts = parts[1:] or parts
    finite = np.abs(values[np.isfinite(values)])
    largest = float(finite.max()) if len(finite) else 0.0
    scale, unit = 1.0, ""
    for k, part in enumerate(parts):
        for suffix, pick in (("_s", time_unit), ("_j", energy_unit)):
            if part.endswith(suffix):
                parts[k] = part[: -len(suffix)]
                unit, scale = pick(largest)
    label = " ".join(_words(p) for p in parts)
    return scale, f"{label} ({unit})" if unit else label
