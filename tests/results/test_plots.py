"""Plots: the exact series behind them, the artists they draw, and ``hpcpower plot``.

The hand-computed run (tiny platform of tests/conftest.py: computing 200 W,
idle 100 W, sleeping 10 W, switching on 150 W for 100 s, switching off 120 W
for 50 s), snf-ipm with a 100 s idle timeout, J0 (1 node, 100 s) at 0 and J1
(2 nodes, 100 s) at 1000:

node 0: J0 0-100, idle 100-200, off 200-250, asleep 250-1000, on 1000-1100, J1 1100-1200
node 1: idle 0-100, off 100-150, asleep 150-1000, on 1000-1100, J1 1100-1200

power (W): 300 on [0, 100), 220 to 150, 110 to 200, 130 to 250, 20 to 1000,
300 to 1100, 400 to 1200; 138 000 J in all.
"""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import DATA, job, tiny_platform  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from hpcpower import Simulation, make_policy  # noqa: E402
from hpcpower.cli import build_parser, main  # noqa: E402
from hpcpower.platform import Duration, NodeType, Platform  # noqa: E402
from hpcpower.results import plots  # noqa: E402

QUICKSTART = DATA.parent / "quickstart.toml"


@pytest.fixture(scope="module")
def hand():
    jobs = [job(0, 0, 1, 100), job(1, 1000, 2, 100)]
    return Simulation(tiny_platform(2), jobs, make_policy("snf-ipm", timeout_s=100)).run()


@pytest.fixture(scope="module")
def busy():
    """4 nodes, 12 jobs of 1-3 nodes, ties and waits, nodes sleeping between bursts."""
    spec = [
        (0, 2, 300),
        (0, 1, 500),
        (10, 3, 200),
        (20, 1, 50),
        (20, 4, 100),
        (900, 2, 400),
        (950, 2, 100),
        (950, 1, 700),
        (3000, 3, 60),
        (3000, 1, 60),
        (3010, 2, 30),
        (3020, 1, 10),
    ]
    jobs = [job(i, s, r, t) for i, (s, r, t) in enumerate(spec)]
    return Simulation(tiny_platform(4), jobs, make_policy("snf-ipm", timeout_s=100)).run()


@pytest.fixture(scope="module")
def quick():
    return Simulation.from_scenario(QUICKSTART).run()


def integral(times, values):
    return float(np.sum(np.diff(times) * values[:-1]))


SECONDS = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
WATTS = {"W": 1.0, "kW": 1e3, "MW": 1e6}


def per_unit(label, units):
    """The size of the unit named in an axis label such as "time (h)"."""
    return units[label.rpartition("(")[2].rstrip(")")]


def by_gid(ax, gid):
    (found,) = [c for c in ax.collections if c.get_gid() == gid]
    return found


# ------------------------------------------------------------------ series
def test_power_series_by_hand(hand):
    times, watts = plots.power_series(hand)
    assert times.tolist() == [0, 100, 150, 200, 250, 1000, 1100, 1200]
    assert watts[:-1].tolist() == [300, 220, 110, 130, 20, 300, 400]
    assert integral(times, watts) == hand.summary["total_energy_j"] == 138000.0


@pytest.mark.parametrize("name", ["hand", "busy", "quick"])
def test_power_integral_is_the_total_energy(name, request):
    res = request.getfixturevalue(name)
    times, watts = plots.power_series(res)
    assert times[0] == 0.0 and times[-1] == res.end_s
    assert integral(times, watts) == pytest.approx(res.summary["total_energy_j"], rel=1e-9)


def test_power_integral_on_a_mixed_platform():
    """Two node types: power is summed node by node, and still integrates exactly."""
    big = NodeType("big", (20.0, 300.0, 150.0, 400.0, 250.0), Duration(100.0), Duration(50.0))
    small = NodeType("small", (5.0, 80.0, 40.0, 90.0, 60.0), Duration(30.0), Duration(20.0))
    platform = Platform("mixed", (big, small), (0, 0, 1))
    jobs = [job(0, 0, 1, 100), job(1, 5, 2, 300), job(2, 2000, 3, 50)]
    res = Simulation(platform, jobs, make_policy("snf-ipm", timeout_s=100)).run()
    times, watts = plots.power_series(res)
    assert integral(times, watts) == pytest.approx(res.summary["total_energy_j"], rel=1e-9)
    ax = plots.power(res)
    x, y = ax.lines[0].get_data()
    xs, ys = per_unit(ax.get_xlabel(), SECONDS), per_unit(ax.get_ylabel(), WATTS)
    assert integral(np.asarray(x) * xs, np.asarray(y) * ys) == pytest.approx(
        res.summary["total_energy_j"], rel=1e-9
    )


def test_state_series_sums_to_the_node_count(busy, quick):
    for res in (busy, quick):
        times, counts = plots.state_series(res)
        assert times[-1] == res.end_s and np.all(np.diff(times) >= 0)
        assert np.all(counts.sum(axis=1) == res.time_in_state_s.shape[0])


def test_queue_series_by_hand(hand):
    times, waiting = plots.queue_series(hand)
    assert times.tolist() == [0, 1000, 1100, 1200]
    assert waiting.tolist() == [0, 1, 0, 0]


def test_queue_series_matches_a_brute_force_count(busy):
    t = busy.jobs
    times, waiting = plots.queue_series(busy)
    for k, now in enumerate(times[:-1]):
        mid = (now + times[k + 1]) / 2
        expect = np.sum((t["submit_s"] <= mid) & ~(t["start_s"] <= mid))
        assert waiting[k] == expect
    assert waiting.max() > 0


def test_rejected_jobs_never_wait():
    jobs = [job(0, 0, 5, 100), job(1, 0, 1, 100)]
    res = Simulation(tiny_platform(2), jobs, make_policy("snf-ipm", timeout_s=100)).run()
    assert res.summary["jobs_rejected"] == 1
    assert plots.queue_series(res)[1].max() == 0


# ------------------------------------------------------------------- plots
def test_gantt_draws_one_rectangle_per_job_and_node(busy):
    ax = plots.gantt(busy)
    rects = by_gid(ax, "jobs")
    started = [a for a in busy.allocations if a is not None]
    assert len(rects.get_paths()) == sum(len(a) for a in started) > len(started)
    # J4 asks for all 4 nodes: four rectangles of one colour spanning its run.
    t = busy.jobs
    scale = per_unit(ax.get_xlabel(), SECONDS)
    span = [t["start_s"][4] / scale, t["finish_s"][4] / scale]
    boxes = [p.vertices for p in rects.get_paths()]
    mine = [b for b in boxes if [b[:, 0].min(), b[:, 0].max()] == pytest.approx(span)]
    assert sorted(round(b[:, 1].mean()) for b in mine) == [0, 1, 2, 3]
    others = ("idle", "sleeping", "switching_on", "switching_off")
    shaded = {label: len(by_gid(ax, label).get_paths()) for label in others}
    rows = busy.node_intervals()
    assert shaded == {label: sum(r[1] == label for r in rows) for label in others}
    assert shaded["sleeping"] > 0
    assert ax.get_xlabel() == "time (min)" and ax.get_ylabel() == "node"
    assert ax.get_xlim()[1] == pytest.approx(busy.end_s / 60)


def test_gantt_max_nodes_and_job_selection(busy):
    ax = plots.gantt(busy, max_nodes=2)
    expect = sum(int(np.sum(a < 2)) for a in busy.allocations if a is not None)
    assert len(by_gid(ax, "jobs").get_paths()) == expect
    assert ax.get_ylim() == (-0.5, 1.5)
    ax = plots.gantt(busy, jobs=range(5))
    assert len(by_gid(ax, "jobs").get_paths()) == sum(len(busy.allocations[i]) for i in range(5))
    t = busy.jobs
    lo, hi = ax.get_xlim()
    scale = per_unit(ax.get_xlabel(), SECONDS)
    assert lo == pytest.approx(t["start_s"][:5].min() / scale)
    assert hi == pytest.approx(t["finish_s"][:5].max() / scale)


def test_gantt_draws_on_a_given_axes(hand):
    fig = Figure()
    ax = fig.add_subplot()
    assert plots.gantt(hand, ax=ax) is ax


def test_state_timeline_stacks_to_the_node_count(busy):
    ax = plots.state_timeline(busy)
    areas = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(areas) == 5
    top = areas[-1].get_paths()[0].vertices
    assert top[:, 1].max() == 4
    # The bottom layer is computing: its top edge is the computing count.
    times, counts = plots.state_series(busy)
    assert areas[0].get_paths()[0].vertices[:, 1].max() == counts[:, 3].max()
    assert ax.get_ylabel() == "nodes" and ax.get_ylim() == (0, 4)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["sleeping", "switching off", "switching on", "idle", "computing"]


def test_power_plot_is_the_series_in_its_units(hand):
    ax = plots.power(hand)
    x, y = ax.lines[0].get_data()
    times, watts = plots.power_series(hand)
    # (The last value only closes the step function.)
    assert np.allclose(x, times / 60) and np.allclose(y[:-1], watts[:-1])
    assert ax.lines[0].get_drawstyle() == "steps-post"
    assert ax.get_ylabel() == "power (W)" and ax.get_xlabel() == "time (min)"


def test_queue_plot(hand):
    ax = plots.queue_length(hand)
    x, y = ax.lines[0].get_data()
    assert list(y) == [0, 1, 0, 0] and np.allclose(x, np.array([0, 1000, 1100, 1200]) / 60)
    assert ax.get_ylabel() == "queue length (jobs)"


def test_overview_shares_time_and_names_the_run(busy):
    fig = plots.overview(busy)
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    shared = fig.axes[0].get_shared_x_axes()
    assert shared.joined(fig.axes[0], fig.axes[1]) and shared.joined(fig.axes[0], fig.axes[2])
    title = fig.get_suptitle()
    assert "snf-ipm" in title and "tiny-4" in title and "12 jobs" in title
    assert [ax.get_ylabel() for ax in fig.axes] == ["nodes", "power (W)", "queue length (jobs)"]


def test_plot_kinds(hand):
    for kind in plots.KINDS:
        if kind != "icon":  # (needs SNF-ICON's decision log: tests/results/test_plot_content.py)
            assert isinstance(plots.plot(hand, kind), Figure)
    with pytest.raises(ValueError, match="unknown plot kind 'pie'"):
        plots.plot(hand, "pie")


def test_overview_png_of_the_quickstart(quick, tmp_path):
    out = tmp_path / "overview.png"
    plots.overview(quick).savefig(out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------ pareto
def dominated(p, q):
    """``q`` dominates ``p``."""
    return q[0] <= p[0] and q[1] <= p[1] and (q[0] < p[0] or q[1] < p[1])


coords = st.one_of(st.integers(0, 6).map(float), st.floats(0, 10, allow_nan=False))
point_lists = st.lists(
    st.one_of(st.tuples(coords, coords), st.just((float("nan"), 1.0))), max_size=25
)


@settings(max_examples=300, deadline=None)
@given(point_lists)
def test_pareto_front_is_the_brute_force_front(points):
    front = plots.pareto_front(points)
    valid = [i for i, p in enumerate(points) if not np.isnan(p).any()]
    expect = [i for i in valid if not any(dominated(points[i], points[j]) for j in valid)]
    assert sorted(front) == expect
    assert [points[i][0] for i in front] == sorted(points[i][0] for i in front)


def test_pareto_front_small_cases():
    assert plots.pareto_front([]) == []
    assert plots.pareto_front([(1, 5), (2, 2), (3, 3), (1, 5), (0, 9)]) == [4, 0, 3, 1]


def test_pareto_plot_highlights_the_front():
    summaries = [
        {"mean_wait_s": w, "wasted_energy_j": e, "config": {"policy": {"timeout_s": t}}}
        for w, e, t in [(600, 7.2e9, 60), (120, 1.8e9, 600), (60, 3.6e9, 1800), (300, 3.6e9, 7200)]
    ]
    ax = plots.pareto(summaries, label_key="config.policy.timeout_s")
    front = ax.lines[0]
    assert list(front.get_xdata()) == [1.0, 2.0] and list(front.get_ydata()) == [1.0, 0.5]
    runs = by_gid(ax, "runs")
    assert len(runs.get_offsets()) == 2
    assert ax.get_xlabel() == "mean wait (min)" and ax.get_ylabel() == "wasted energy (MWh)"
    assert sorted(t.get_text() for t in ax.texts) == ["1800", "60", "600", "7200"]
    ax = plots.pareto(summaries, label_key=lambda s: f"{s['mean_wait_s'] // 60:g} min")
    assert [t.get_text() for t in ax.texts] == ["10 min", "2 min", "1 min", "5 min"]


def test_pareto_of_real_runs_and_nested_keys(quick):
    ax = plots.pareto([quick.summary], x="energy_j.idle", y="p95_wait_s")
    assert ax.get_xlabel() == "energy idle (kWh)" and ax.get_ylabel() == "p95 wait (min)"
    with pytest.raises(KeyError, match="no 'nope'"):
        plots.pareto([quick.summary], x="energy_j.nope")


# --------------------------------------------------------------------- CLI
def test_cli_plots_a_scenario_and_a_run_folder(tmp_path, capsys):
    png = tmp_path / "deep" / "states.png"
    args = ["--set", "workload.first=40", "--policy", "fcfs-easy-ipm"]
    assert main(["plot", str(QUICKSTART), "--kind", "states", "--out", str(png), *args]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {png}" in capsys.readouterr().out

    run = tmp_path / "run"
    assert main(["run", str(QUICKSTART), "-q", "--out", str(run), *args]) == 0
    out = tmp_path / "gantt.png"
    assert main(["plot", str(run), "--kind", "gantt", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "warning" not in capsys.readouterr().err


def test_cli_warns_when_a_rerun_differs(tmp_path, capsys):
    run = tmp_path / "run"
    assert (
        main(["run", str(QUICKSTART), "-q", "--out", str(run), "--set", "workload.first=20"]) == 0
    )
    summary = json.loads((run / "summary.json").read_text())
    summary["total_energy_j"] *= 2
    (run / "summary.json").write_text(json.dumps(summary))
    assert main(["plot", str(run), "--out", str(tmp_path / "o.png")]) == 0
    assert "warning: re-running" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["missing.toml"], "no such scenario file: missing.toml"),
        (["{run}", "--policy", "snf"], "apply to a scenario file, not a run"),
        (["{tmp}"], "no summary.json here"),
        (["{bad}"], "summary.json: not valid JSON"),
        ([str(QUICKSTART), "--out", "{tmp}/x.nope"], "Format 'nope' is not supported"),
    ],
)
def test_cli_errors(argv, message, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text("{}")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "summary.json").write_text("{oops")
    argv = [a.format(run=run, tmp=tmp_path, bad=bad) for a in argv]
    assert main(["plot", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hpcpower: error:") and message in err


def test_cli_rejects_an_unknown_kind(capsys):
    with pytest.raises(SystemExit):
        main(["plot", str(QUICKSTART), "--kind", "pie"])
    assert "invalid choice: 'pie'" in capsys.readouterr().err


def test_every_kind_has_a_cli_choice():
    for kind in plots.KINDS:
        assert build_parser().parse_args(["plot", "x.toml", "--kind", kind]).kind == kind
