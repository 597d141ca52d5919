"""Animations: the node states of each frame, the frames in the file, and ``hpcpower animate``."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import test_plots  # noqa: E402
from conftest import DATA  # noqa: E402
from matplotlib import animation  # noqa: E402
from PIL import Image  # noqa: E402

from hpcpower.cli import main  # noqa: E402
from hpcpower.platform import STATE_LABELS  # noqa: E402
from hpcpower.results.animate import animate, frame_times, node_states_at  # noqa: E402

QUICKSTART = DATA.parent / "quickstart.toml"

#: 12 jobs of 1-4 nodes on 4 nodes, with waits and nodes asleep between bursts.
busy = test_plots.busy


def test_node_states_at_follow_the_node_intervals(busy):
    rows = busy.node_intervals()
    times = np.linspace(0, busy.end_s, 97)[:-1] + 0.5
    states = node_states_at(busy, times)
    assert states.shape == (len(times), 4)
    for k, now in enumerate(times):
        for node in range(4):
            (label,) = [r[1] for r in rows if r[0] == node and r[2] <= now < r[3]]
            assert STATE_LABELS[states[k, node]] == label
    # At an instant where a node changes, the new state shows.
    node, label, start, _, _ = next(r for r in rows if r[1] == "switching_off")
    assert STATE_LABELS[node_states_at(busy, np.array([start]))[0, node]] == "switching_off"


def test_frame_times_cover_the_window(busy):
    assert frame_times(busy, 5).tolist() == np.linspace(0, busy.end_s, 5).tolist()
    assert frame_times(busy, 3, window=(100, 1e9)).tolist() == [
        100,
        (100 + busy.end_s) / 2,
        busy.end_s,
    ]
    with pytest.raises(ValueError, match="at least one frame"):
        frame_times(busy, 0)


def test_gif_has_one_frame_per_time(busy, tmp_path):
    out = animate(busy, tmp_path / "run.gif", frames=6, dpi=40)
    with Image.open(out) as gif:
        assert gif.format == "GIF" and gif.n_frames == 6
        first = np.asarray(gif.convert("RGB")).copy()
        gif.seek(5)
        last = np.asarray(gif.convert("RGB"))
    assert first.shape == last.shape and (first != last).any()


def test_unknown_ending_and_mp4_without_ffmpeg(busy, tmp_path):
    with pytest.raises(ValueError, match="write a .gif or an .mp4"):
        animate(busy, tmp_path / "run.avi", frames=2)
    if animation.writers.is_available("ffmpeg"):
        pytest.skip("ffmpeg is installed here: MP4 is written")
    with pytest.raises(ValueError, match="MP4 needs ffmpeg, which is not on the PATH"):
        animate(busy, tmp_path / "run.mp4", frames=2)


def test_cli_animate(tmp_path, capsys):
    out = tmp_path / "a" / "run.gif"
    argv = ["animate", str(QUICKSTART), "--set", "workload.first=20", "--out", str(out)]
    assert main([*argv, "--frames", "4", "--window", "1h:4h"]) == 0
    assert f"wrote {out} (4 frames)" in capsys.readouterr().out
    with Image.open(out) as gif:
        assert gif.n_frames == 4
    assert main([*argv[:-1], str(tmp_path / "x.webm"), "--frames", "2"]) == 2
    assert "write a .gif or an .mp4" in capsys.readouterr().err
