"""An animation of a run: the node states as a grid, the queue and the power, frame by frame.

Each frame shows the run at one instant of evenly spaced times: every node as
a cell coloured by its state (the colours of
:data:`~hpcpower.results.plots.STATE_COLORS`), and the queue length and total
power over the whole window with a cursor at that instant. Written as GIF
with Pillow (which comes with matplotlib) or as MP4 with ffmpeg.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hpcpower.platform import STATE_LABELS
from hpcpower.states import STATE_CODES

if TYPE_CHECKING:
    from hpcpower.results.plots import Window
    from hpcpower.results.records import Results

#: File endings :func:`animate` writes, and the matplotlib writer of each.
WRITERS = {".gif": "pillow", ".mp4": "ffmpeg"}
#: The slowest GIF: a frame lasts at most 65535 hundredths of a second.
GIF_MIN_FPS = 100 / 65535


def frame_times(results: Results, frames: int, window: Window | None = None) -> np.ndarray:
    """The instants of the frames: ``frames`` evenly spaced times over the window (or run)."""
    from hpcpower.results.plots import _data, _window

    if frames < 1:
        raise ValueError(f"frames={frames}: an animation needs at least one frame")
    t0, t1 = _data(results, _window(results, window))
    return np.linspace(t0, t1, frames)


def node_states_at(results: Results, times: np.ndarray) -> np.ndarray:
    """Each node's state at each time: ``(len(times), n_nodes)`` indices into STATE_LABELS.

    A node's state at ``t`` is that of its last interval starting at or
    before ``t``, so at an instant where it changes, the new state shows; at
    the end of the run it is the node's final state.
    """
    index = STATE_CODES
    n_nodes = results.time_in_state_s.shape[0]
    initial = index[results.config.get("initial_state") or "idle"]
    out = np.full((len(times), n_nodes), initial, dtype=np.int8)
    per_node: list[list[tuple[float, int]]] = [[] for _ in range(n_nodes)]
    for node, label, start, _end, _job in results.node_intervals():
        per_node[node].append((start, index[label]))
    times = np.asarray(times, dtype=float)
    for node, spans in enumerate(per_node):
        if not spans:
            continue
        starts = np.array([s for s, _ in spans])
        states = np.array([k for _, k in spans], dtype=np.int8)
        at = np.searchsorted(starts, times, side="right") - 1
        out[at >= 0, node] = states[at[at >= 0]]
    # A job ending as the run ends leaves no interval after it: the nodes'
    # states at the end settle the last instant (as in pstate_changes.csv).
    if results.node_state is not None:
        out[times >= results.end_s] = np.asarray(results.node_state, dtype=np.int8)
    return out


def writer_for(path: str | Path) -> str:
    """The matplotlib writer for an animation file (checked before a run spends time on it).

    Raises:
        ValueError: An ending other than .gif or .mp4, or .mp4 without ffmpeg.
    """
    from matplotlib import animation

    kind = WRITERS.get(Path(path).suffix.lower())
    if kind is None:
        raise ValueError(f"{path}: write a .gif or an .mp4 animation")
    if kind == "ffmpeg" and not animation.writers.is_available("ffmpeg"):
        raise ValueError(f"{path}: MP4 needs ffmpeg, which is not on the PATH; write a .gif")
    return kind


def animate(
    results: Results,
    path: str | Path,
    frames: int = 60,
    window: Window | None = None,
    fps: float = 10.0,
    dpi: int = 80,
) -> Path:
    """Write an animation of the run (node-state grid, queue and power) to ``path``.

    Args:
        results: A run's results.
        path: ``.gif`` (Pillow) or ``.mp4`` (needs ffmpeg on the PATH).
        frames: Number of frames, evenly spaced over the window.
        window: ``(t0, t1)`` in seconds: animate that part only.
        fps: Frames per second of the file.
        dpi: Resolution of each frame (the figure is 10 × 5.6 inches).

    Returns:
        The path written.

    Raises:
        ValueError: An ending other than .gif or .mp4, .mp4 without ffmpeg,
            fewer than one frame, ``fps`` not above 0, or an empty window.
    """
    from matplotlib import animation
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    from hpcpower.results import plots
    from hpcpower.results.export import replacing

    path = Path(path)
    kind = writer_for(path)
    if not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"fps={fps!r}: expected a number > 0")
    if kind == "pillow" and fps < GIF_MIN_FPS:
        raise ValueError(
            f"fps={fps!r}: a GIF frame lasts at most 655.35 s; give {GIF_MIN_FPS:.4g} or more"
        )
    times = frame_times(results, frames, window)
    states = node_states_at(results, times)
    n_nodes = states.shape[1]
    # A grid a little wider than tall, filled row by row from the top left.
    cols = max(1, math.ceil(math.sqrt(n_nodes * 1.5)))
    rows = max(1, math.ceil(n_nodes / cols))

    def grid(k: int) -> np.ndarray:
        cells = np.full(rows * cols, np.nan)
        cells[:n_nodes] = states[k]
        return cells.reshape(rows, cols)

    fig = Figure(figsize=(10, 5.6), layout="constrained")
    # (Two subfigures come back as an array; the annotation allows one.)
    left, right = fig.subfigures(1, 2, width_ratios=[1, 1.25])  # type: ignore[misc]
    ax_grid = left.subplots()
    cmap = ListedColormap([plots.STATE_COLORS[label] for label in STATE_LABELS]).with_extremes(
        bad="white"
    )
    image = ax_grid.imshow(grid(0), cmap=cmap, vmin=-0.5, vmax=len(STATE_LABELS) - 0.5)
    ax_grid.set_xticks([])
    ax_grid.set_yticks([])
    if cols <= 40:  # thin white lines between cells, while cells are big enough for them
        ax_grid.set_xticks(np.arange(cols + 1) - 0.5, minor=True)
        ax_grid.set_yticks(np.arange(rows + 1) - 0.5, minor=True)
        ax_grid.grid(which="minor", color="white", linewidth=1.0)
        ax_grid.tick_params(which="minor", length=0)
    ax_grid.set_title(f"{n_nodes} nodes", fontsize="medium")
    counts = ax_grid.set_xlabel("", fontsize="small")
    left.legend(
        handles=[
            Patch(color=plots.STATE_COLORS[label], label=plots._words(label))
            for label in STATE_LABELS
        ],
        loc="lower center",
        ncols=3,
        fontsize="small",
    )
    ax_queue, ax_power = right.subplots(2, 1, sharex=True)
    shown = (float(times[0]), float(times[-1])) if times[-1] > times[0] else None
    plots.queue_length(results, ax=ax_queue, window=shown)
    plots.power(results, ax=ax_power, window=shown)
    for ax in (ax_queue, ax_power):
        ax.get_legend().remove()
    ax_queue.set_xlabel("")
    unit, scale = plots.time_unit(times[-1] - times[0] if len(times) > 1 else results.end_s)
    cursors = [ax.axvline(times[0] / scale, color="black", linewidth=1.2) for ax in right.axes]
    fig.suptitle("\n".join(plots._wrap(plots.describe(results), 9.5)), fontsize="medium")
    clock = ax_grid.text(
        0.0, 1.08, "", transform=ax_grid.transAxes, fontsize="large", fontweight="bold"
    )

    # (matplotlib annotates fps as an int; both writers take any positive rate.)
    writer = (animation.PillowWriter if kind == "pillow" else animation.FFMpegWriter)(
        fps=fps  # type: ignore[arg-type]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    # Into a temporary file beside ``path``, so that a failed or interrupted
    # write leaves no half animation.
    with replacing(path) as partial, writer.saving(fig, str(partial), dpi):
        for k, now in enumerate(times.tolist()):
            image.set_data(grid(k))
            for cursor in cursors:
                cursor.set_xdata([now / scale, now / scale])
            clock.set_text(f"t = {now / scale:.2f} {unit}")
            tally = np.bincount(states[k], minlength=len(STATE_LABELS))
            counts.set_text(
                ", ".join(
                    f"{n} {plots._words(label)}"
                    for label, n in zip(STATE_LABELS, tally.tolist(), strict=True)
                    if n
                )
            )
            writer.grab_frame()
    return path
