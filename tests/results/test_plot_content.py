"""What the plots show: units by span and size, integer counts, windows, titles, labels.

Toy runs on the tiny platform of tests/conftest.py (computing 200 W, idle
100 W, sleeping 10 W, switching on 150 W for 100 s, switching off 120 W for
50 s), the first jobs of the quickstart, and a short SNF-ICON run.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import test_plots  # noqa: E402
from conftest import DATA, job, tiny_platform  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from hpcpower import Simulation, make_policy  # noqa: E402
from hpcpower.cli import PLOT_KINDS, _load_results, main, parse_time  # noqa: E402
from hpcpower.errors import InputError  # noqa: E402
from hpcpower.results import plots  # noqa: E402

QUICKSTART = DATA.parent / "quickstart.toml"
MARKOVIAN = DATA.parent / "paper" / "markovian.toml"
SECONDS = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


#: 12 jobs of 1-4 nodes on 4 nodes, with waits and nodes asleep between bursts.
busy = test_plots.busy


def unit_of(label):
    return label.rpartition("(")[2].rstrip(")")


@pytest.fixture(scope="module")
def toy():
    """One job of 100 s on 2 nodes: the run lasts 100 s."""
    policy = make_policy("snf-ipm", timeout_s=1000)
    return Simulation(tiny_platform(2), [job(0, 0, 1, 100)], policy).run()


@pytest.fixture(scope="module")
def two_days():
    jobs = [job(0, 0, 1, 100), job(1, 170_000, 2, 2800)]
    return Simulation(tiny_platform(3), jobs, make_policy("snf-ipm", timeout_s=3600)).run()


@pytest.fixture(scope="module")
def quick():
    return Simulation.from_scenario(QUICKSTART, workload__first=40).run()


@pytest.fixture(scope="module")
def icon():
    return Simulation.from_scenario(MARKOVIAN, policy__name="snf-icon", workload__first=150).run()


def rendered(fig):
    """The figure drawn once (so text sizes and layout are final); returns its renderer."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


# ------------------------------------------------------------------- units
def test_time_axis_unit_follows_the_span(toy, two_days):
    assert plots.time_unit(100) == ("s", 1.0) and plots.time_unit(5400) == ("min", 60.0)
    assert plots.time_unit(2 * 86400) == ("h", 3600.0) and plots.time_unit(1e7) == ("d", 86400.0)
    for kind in ("gantt", "states", "power", "queue"):
        assert plots.plot(toy, kind).axes[0].get_xlabel() == "time (s)", kind
        assert plots.plot(two_days, kind).axes[0].get_xlabel() == "time (h)", kind
    ax = plots.power(two_days)
    assert ax.get_xlim() == pytest.approx((0, two_days.end_s / 3600))
    # A window of a two-day run is labelled by its own span.
    assert plots.power(two_days, window=(0, 300)).get_xlabel() == "time (s)"


def test_energy_and_power_units_follow_the_size(toy, quick, icon):
    cases = [(138_000, "138000 J"), (1.8e8, "50 kWh"), (7.2e9, "2 MWh"), (3.6e13, "10000 MWh")]
    for joules, text in cases:
        assert plots.format_energy(joules) == text
    legend = plots.power(toy).get_legend().get_texts()[0].get_text()
    assert legend == f"total power ({toy.summary['total_energy_j']:.0f} J in all)"
    assert plots.power(toy).get_ylabel() == "power (W)"
    assert "kWh in all" in plots.power(quick).get_legend().get_texts()[0].get_text()
    assert "MWh in all" in plots.power(icon).get_legend().get_texts()[0].get_text()
    assert plots.power(icon).get_ylabel() == "power (kW)"


@pytest.mark.parametrize(
    "wasted, unit", [(5e4, "J"), (3.6e6, "kWh"), (5e8, "kWh"), (3.6e9, "MWh"), (2e10, "MWh")]
)
def test_pareto_energy_axis_unit_by_size(wasted, unit):
    summaries = [{"mean_wait_s": 600.0 * k, "wasted_energy_j": wasted / k} for k in (1, 2, 4)]
    ax = plots.pareto(summaries)
    assert ax.get_ylabel() == f"wasted energy ({unit})"
    assert ax.get_xlabel() == "mean wait (min)"
    scale = {"J": 1, "kWh": 3.6e6, "MWh": 3.6e9}[unit]
    assert max(ax.lines[0].get_ydata()) == pytest.approx(wasted / scale)


def test_format_duration():
    cases = {7200: "2 h", 600: "10 min", 5400: "1.5 h", 100: "100 s", 86400: "1 d", 90: "1.5 min"}
    assert {s: plots.format_duration(s) for s in cases} == cases
    assert plots.format_duration(float("inf")) == "never"


def test_counts_have_integer_ticks(toy, busy):
    # The toy's queue never holds more than one job: default ticks would be 0, 0.2, 0.4 ...
    for ax in (
        plots.queue_length(busy),
        plots.queue_length(toy),
        plots.state_timeline(toy),
        plots.gantt(busy),
    ):
        rendered(ax.figure)
        ticks = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
        assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), ticks


# ---------------------------------------------------------------- palette
def test_every_legend_uses_the_shared_palette(busy, quick):
    words = {label.replace("_", " "): label for label in plots.STATE_COLORS}
    legends = [plots.gantt(busy).get_legend(), plots.state_timeline(busy).get_legend()]
    legends += [ax.get_legend() for ax in plots.overview(quick).axes[:1]]
    for legend in legends:
        seen = set()
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            label = words.get(text.get_text().split(" (")[0])
            if label is None:
                continue
            assert to_rgba(handle.get_facecolor()) == to_rgba(plots.STATE_COLORS[label]), label
            seen.add(label)
        assert seen == set(plots.STATE_COLORS)


def test_gantt_shades_each_state_in_its_colour_and_jobs_near_computing(busy):
    ax = plots.gantt(busy)
    for label in ("idle", "sleeping", "switching_on", "switching_off"):
        faces = [c for c in ax.collections if c.get_gid() == label][0].get_facecolor()
        assert len(faces) and all(to_rgba(f) == to_rgba(plots.STATE_COLORS[label]) for f in faces)
    jobs = [c for c in ax.collections if c.get_gid() == "jobs"][0].get_facecolor()
    base = np.array(to_rgba(plots.STATE_COLORS["computing"])[:3])
    # Every job shade lies on the line from black through the computing colour to white.
    for rgb in jobs[:, :3]:
        t = rgb - base
        if np.allclose(t, 0):
            continue
        toward = (1 - base) if t[0] > 0 else -base
        assert np.allclose(t / np.linalg.norm(t), toward / np.linalg.norm(toward), atol=1e-6)


# ------------------------------------------------------------------- gantt
def job_labels(ax):
    return sorted(int(t.get_text()) for t in ax.texts if t.get_gid() == "job-label")


def test_gantt_labels_jobs_whose_boxes_are_wide_enough(busy):
    ax = plots.gantt(busy)
    labelled = job_labels(ax)
    # Labels are the jobs' ids in the workload (here index + 1).
    # 100 s on a 3730 s axis is wide enough (index 4); the 10 s index 11 is not.
    assert 5 in labelled and 12 not in labelled
    # Zoomed in, index 11 gets its label; with labels=False nothing is written.
    t = busy.jobs
    around = (t["start_s"][11] - 20, t["finish_s"][11] + 20)
    assert 12 in job_labels(plots.gantt(busy, window=around))
    assert job_labels(plots.gantt(busy, labels=False)) == []
    # Each label sits inside its job's rectangle.
    t = busy.jobs
    for text in (x for x in ax.texts if x.get_gid() == "job-label"):
        x, y = text.get_position()
        i = list(t["job_id"]).index(text.get_text())
        assert t["start_s"][i] / 60 <= x <= t["finish_s"][i] / 60
        assert round(y) in busy.allocations[i] or y % 1 == 0.5


def test_gantt_window_clips_boxes_and_intervals(busy):
    window = (900.0, 1500.0)
    ax = plots.gantt(busy, window=window)
    t = busy.jobs
    expect = sum(
        len(busy.allocations[i])
        for i in range(len(t["job_id"]))
        if t["start_s"][i] < window[1] and t["finish_s"][i] > window[0]
    )
    boxes = [c for c in ax.collections if c.get_gid() == "jobs"][0].get_paths()
    assert len(boxes) == expect > 0
    lo, hi = (w / 60 for w in window)
    assert ax.get_xlim() == pytest.approx((lo, hi)) and ax.get_xlabel() == "time (min)"
    for label in ("idle", "sleeping", "switching_on", "switching_off"):
        paths = [c for c in ax.collections if c.get_gid() == label][0].get_paths()
        rows = [r for r in busy.node_intervals() if r[1] == label]
        assert len(paths) == sum(r[3] > window[0] and r[2] < window[1] for r in rows)
        for p in paths:
            assert lo - 1e-9 <= p.vertices[:, 0].min() and p.vertices[:, 0].max() <= hi + 1e-9
    for p in boxes:
        assert lo - 1e-9 <= p.vertices[:, 0].min() and p.vertices[:, 0].max() <= hi + 1e-9


# ------------------------------------------------------------------ window
def test_window_clips_every_series(busy):
    window = (950.0, 3005.0)
    times, watts = plots.power_series(busy)
    ax = plots.power(busy, window=window)
    x, y = ax.lines[0].get_data()
    x = np.asarray(x) * 60
    assert x[0] == pytest.approx(window[0]) and x[-1] == pytest.approx(window[1])
    # The energy drawn in the window, exactly, and said so.
    overlap = np.clip(times[1:], *window) - np.clip(times[:-1], *window)
    energy = float(np.sum(np.diff(x) * np.asarray(y)[:-1]))
    assert energy == pytest.approx(float(np.sum(overlap * watts[:-1])), rel=1e-12)
    assert (
        f"{plots.format_energy(energy)} in the window" in ax.get_legend().get_texts()[0].get_text()
    )
    q = plots.queue_length(busy, window=window)
    qx, qy = q.lines[0].get_data()
    qt, waiting = plots.queue_series(busy)
    for xi, yi in zip(np.asarray(qx)[:-1] * 60, qy[:-1], strict=True):
        assert yi == waiting[np.searchsorted(qt, xi + 1e-9, side="right") - 1]
    fig = plots.overview(busy, window=window)
    assert all(ax.get_xlim() == pytest.approx((950 / 60, 3005 / 60)) for ax in fig.axes)


def test_window_errors(busy):
    with pytest.raises(ValueError, match="start must come before the end"):
        plots.power(busy, window=(10, 10))
    with pytest.raises(ValueError, match="outside the run"):
        plots.power(busy, window=(1e6, 2e6))


def test_clip_series_keeps_the_integral():
    t = np.array([0.0, 10.0, 20.0, 30.0])
    v = np.array([1.0, 2.0, 3.0, 3.0])
    ct, cv = plots.clip_series(t, v, (5.0, 25.0))
    assert ct.tolist() == [5, 10, 20, 25] and cv.tolist() == [1, 2, 3, 3]
    assert float(np.sum(np.diff(ct) * cv[:-1])) == 5 * 1 + 10 * 2 + 5 * 3


# ------------------------------------------------------------------ titles
def test_title_names_the_settings_from_python_and_from_the_command_line():
    sets = ["policy.timeout_s=600", "workload.first=20", "policy.markov_cv_tolerance=0.3"]
    from_cli, _ = _load_results(str(MARKOVIAN), "snf-icon", sets)
    from_python = Simulation.from_scenario(
        MARKOVIAN,
        policy__name="snf-icon",
        policy__timeout_s=600,
        workload__first=20,
        policy__markov_cv_tolerance=0.3,
    ).run()
    title = plots.describe(from_cli)
    assert title == plots.describe(from_python)
    assert "timeout 10 min" in title and "markov_cv_tolerance=0.3" in title
    assert title.splitlines()[0].startswith("snf-icon on aoba-64 (64 nodes)")


def test_titles_fit_their_figure(icon):
    chosen = {"name": "snf-icon", "alpha": 123.0, "beta": 2.0, "min_spare_nodes": 3}
    chosen |= {"markov_window_s": 3600, "markov_max_lag1": 0.5}
    policy = {f"policy__{key}": value for key, value in chosen.items()}
    run = Simulation.from_scenario(MARKOVIAN, workload__first=20, **policy).run()
    for fig in (plots.overview(run), plots.plot(run, "power"), plots.icon_screen(icon)):
        renderer = rendered(fig)
        title = fig._suptitle if fig.get_suptitle() else fig.axes[0].title
        box = title.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= fig.bbox.width, title.get_text()
    assert "alpha=123" in plots.describe(run) and "markov_window_s=1 h" in plots.describe(run)


# ---------------------------------------------------------------- snf-icon
def test_icon_screen_reads_the_decision_log(icon):
    fig = plots.icon_screen(icon)
    assert len(fig.axes) == 4
    cv, lag, ks, spare = fig.axes
    lines = {line.get_gid(): line for ax in fig.axes for line in ax.lines}
    assert {"arrival_cv", "service_cv", "arrival_lag1", "service_lag1", "target"} <= set(lines)
    assert {"arrival_ks", "service_ks"} <= set(lines)
    # The first values are the log's, step-wise from each row.
    times, values = plots.decision_series(icon, "arrival_cv")
    x, y = lines["arrival_cv"].get_data()
    scale = SECONDS[unit_of(spare.get_xlabel())]
    k = int(np.flatnonzero(~np.isnan(values))[0])
    j = int(np.searchsorted(np.asarray(x) * scale, times[k] - 1e-6))
    assert y[j] == pytest.approx(values[k])
    _, ks_v = plots.decision_series(icon, "service_ks")
    _, ks_l = plots.decision_series(icon, "service_ks_limit")
    ratio = ks_v / ks_l
    shown = np.asarray(lines["service_ks"].get_ydata())
    assert np.nanmax(shown) == pytest.approx(np.nanmax(ratio))
    # The accepted band is |CV - 1| <= markov_cv_tolerance of the run's settings.
    tol = icon.config["policy"]["markov_cv_tolerance"]
    band = [p for p in cv.patches if "CV - 1" in str(p.get_label())][0]
    if hasattr(band, "get_height"):  # (a Rectangle from matplotlib 3.9 on, a Polygon before)
        ys = [band.get_y(), band.get_y() + band.get_height()]
    else:
        ys = band.get_xy()[:, 1]
    assert (min(ys), max(ys)) == pytest.approx((1 - tol, 1 + tol))
    # ICON shading in every panel; its share is the policy's own icon_time_fraction.
    assert all(any(c.get_gid() == "icon-mode" for c in ax.collections) for ax in fig.axes)
    share = round(100 * icon.summary["icon_time_fraction"])
    assert f"ICON mode {share} % of the time shown" in fig.get_suptitle()
    assert spare.get_ylabel() == "spare nodes" and lag.get_ylabel() == "lag-1 autocorrelation"
    assert ks.get_ylabel() == "KS distance / limit"


def test_icon_screen_says_when_a_run_has_no_log(quick, tmp_path, capsys):
    with pytest.raises(ValueError, match="snf-ipm: the run's decision log has no 'mode' column"):
        plots.icon_screen(quick)
    argv = ["plot", str(QUICKSTART), "--kind", "icon", "--set", "workload.first=10"]
    assert main([*argv, "--out", str(tmp_path / "i.png")]) == 2
    assert "no 'mode' column" in capsys.readouterr().err


# ----------------------------------------------------------- compare, trade
def test_compare_two_runs_on_one_scale(busy, quick):
    other = Simulation.from_scenario(QUICKSTART, workload__first=40, policy__timeout_s=60).run()
    fig = plots.compare(quick, other)
    axes = np.array(fig.axes).reshape(3, 2)
    for left, right in axes:
        assert left.get_ylim() == right.get_ylim() and left.get_ylabel() == right.get_ylabel()
        assert left.get_xlim() == right.get_xlim()
    assert "timeout 2 h" in axes[0, 0].get_title() and "timeout 1 min" in axes[0, 1].get_title()
    assert axes[2, 0].get_xlabel() == "time (h)"
    # Runs of different lengths share the longer one's axis.
    fig = plots.compare(busy, quick, labels=("busy", "quick"))
    assert fig.axes[0].get_xlim() == fig.axes[1].get_xlim() == (0, quick.end_s / 3600)
    assert fig.axes[0].get_title().startswith("busy\n")


def test_timeout_tradeoff_labels_each_run_with_its_timeout():
    runs = [
        Simulation.from_scenario(QUICKSTART, workload__first=40, policy__timeout_s=t).run()
        for t in (60, 600, 7200)
    ]
    ax = plots.timeout_tradeoff(runs)
    assert sorted(t.get_text() for t in ax.texts) == ["1 min", "10 min", "2 h"]
    assert ax.get_xlabel() == "mean wait (s)" and ax.get_ylabel() == "wasted energy (kWh)"
    assert "idle timeout trade-off: snf-ipm" in ax.get_title()
    front = plots.pareto_front(
        [(r.summary["mean_wait_s"], r.summary["wasted_energy_j"]) for r in runs]
    )
    assert len(ax.lines[0].get_xdata()) == len(front)


# --------------------------------------------------------------------- CLI
def test_parse_time():
    assert [parse_time(t) for t in ("3600", "90min", "2h", "1.5d", "30 s", "2m")] == [
        3600,
        5400,
        7200,
        129600,
        30,
        120,
    ]
    with pytest.raises(InputError, match="not a time"):
        parse_time("2 weeks")


def test_cli_window_forms_and_new_kinds(tmp_path, capsys):
    base = [str(QUICKSTART), "--set", "workload.first=20"]
    for extra in (["--window", "1h:3h"], ["--from", "1h", "--to", "3h"], ["--from", "2h"]):
        out = tmp_path / f"{len(extra)}-{extra[-1]}.png"
        assert main(["plot", *base, "--kind", "gantt", *extra, "--out", str(out)]) == 0
        assert out.read_bytes()[:4] == b"\x89PNG"
    out = tmp_path / "trade.png"
    argv = ["plot", *base, "--kind", "tradeoff", "--timeouts", "1min,2h", "--out", str(out)]
    assert main(argv) == 0 and out.exists()
    run = tmp_path / "run"
    assert main(["run", *base, "-q", "--out", str(run), "--policy", "fcfs-easy-ipm"]) == 0
    out = tmp_path / "cmp.png"
    assert main(["plot", *base, "--kind", "compare", "--with", str(run), "--out", str(out)]) == 0
    capsys.readouterr()
    for argv, message in [
        (["--kind", "compare"], "name the other run with --with"),
        (["--window", "3h"], "expected FROM:TO"),
        (["--window", "3h:1h"], "the start must come before the end"),
        (["--from", "20d"], "outside the run"),
        (["--with", str(run)], "--with applies to --kind compare only"),
    ]:
        assert main(["plot", *base, *argv, "--out", str(tmp_path / "x.png")]) == 2
        assert message in capsys.readouterr().err


def test_cli_kinds_include_every_plot_kind():
    assert PLOT_KINDS[: len(plots.KINDS)] == plots.KINDS
