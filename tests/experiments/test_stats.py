"""Student-t quantiles without SciPy, and the intervals of a report checked by hand."""

from __future__ import annotations

import csv
import math

import pytest
from sweep_helpers import write_sweep

from hpcpower.experiments.report import report
from hpcpower.experiments.stats import estimate, paired, t_quantile
from hpcpower.experiments.store import Store
from hpcpower.experiments.sweepfile import load_plan

#: t(0.975) with 2 degrees of freedom, exactly: P(|T| <= t) = t / sqrt(t^2 + 2) = 0.95.
T2 = math.sqrt(2) * 0.95 / math.sqrt(1 - 0.95**2)


def test_t_quantiles_match_scipy():
    # SciPy's own ppf is good to about 1e-11 (builds differ: for df = 1 one gave
    # 12.706204736432, the exact tan(0.475 pi) being 12.706204736174705), so the
    # comparison allows 1e-10; the closed forms below are held to 1e-12.
    stats = pytest.importorskip("scipy.stats")
    for df in range(1, 200):
        assert t_quantile(0.95, df) == pytest.approx(stats.t.ppf(0.975, df), rel=1e-10)
    for level in (0.5, 0.9, 0.99):
        for df in (1, 2, 7, 30, 101):
            want = stats.t.ppf(0.5 + level / 2, df)
            assert t_quantile(level, df) == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.99])
def test_t_quantiles_match_the_closed_forms_for_one_and_two_degrees_of_freedom(level):
    assert t_quantile(level, 1) == pytest.approx(math.tan(math.pi * level / 2), rel=1e-12)
    exact = math.sqrt(2) * level / math.sqrt(1 - level**2)
    assert t_quantile(level, 2) == pytest.approx(exact, rel=1e-12)


def test_known_quantiles():
    # Printed tables: t(0.975) for 1, 2 and 4 degrees of freedom.
    assert t_quantile(0.95, 1) == pytest.approx(12.706204736, abs=1e-8)
    assert t_quantile(0.95, 2) == pytest.approx(4.302652730, abs=1e-8)
    assert t_quantile(0.95, 4) == pytest.approx(2.776445105, abs=1e-8)


def test_estimate_and_paired_by_hand():
    e = estimate([10.0, 12.0, 14.0])
    assert (e.n, e.mean, e.sd) == (3, 12.0, 2.0)
    assert e.half_width == pytest.approx(T2 * 2.0 / math.sqrt(3), rel=1e-12)
    one = estimate([5.0])
    assert one.mean == 5.0 and math.isnan(one.half_width)
    assert estimate([]).n == 0
    d = paired({1: 11.0, 2: 15.0, 3: 13.0, 4: 99.0}, {1: 10.0, 2: 12.0, 3: 14.0})
    # differences 1, 3, -1 over the three shared seeds
    assert (d.n, d.mean) == (3, 1.0)
    assert d.sd == pytest.approx(2.0)
    assert d.half_width == pytest.approx(T2 * 2.0 / math.sqrt(3), rel=1e-12)


#: The fixed table: mean wait (s) and wasted energy (J) of each policy and seed.
TABLE = {
    ("fcfs-easy-ipm", 0): (600.0, 3.6e9),
    ("fcfs-easy-ipm", 1): (720.0, 3.9e9),
    ("fcfs-easy-ipm", 2): (840.0, 4.2e9),
    ("snf-ipm", 0): (540.0, 3.7e9),
    ("snf-ipm", 1): (600.0, 4.1e9),
    ("snf-ipm", 2): (780.0, 4.2e9),
}


def test_the_intervals_of_a_report_match_a_hand_computation(tmp_path):
    sweep = write_sweep(
        tmp_path,
        """
        [sweep]
        scenario = "QUICKSTART"
        seeds = [0, 1, 2]
        [grid]
        policy.name = ["fcfs-easy-ipm", "snf-ipm"]
        """,
    )
    plan = load_plan(sweep)
    store = Store(tmp_path / "out").open(resume=False)
    store.write_plan(plan)
    for run in plan.runs:
        wait, wasted = TABLE[(run.config["policy"]["name"], run.config["simulation"]["seed"])]
        result = {"status": "ok", "error": None, "wall_time_s": 0.0, "version": "test"}
        result["metrics"] = {"mean_wait_s": wait, "wasted_energy_j": wasted}
        store.record(run, result)
    store.close()
    report(tmp_path / "out")

    t2 = T2
    summary = {r["policy.name"]: r for r in read(tmp_path / "out" / "report" / "summary.csv")}
    fcfs, snf = summary["fcfs-easy-ipm"], summary["snf-ipm"]
    # fcfs waits 600, 720, 840: mean 720, sd 120
    assert float(fcfs["mean_wait_s.mean"]) == pytest.approx(720.0)
    assert float(fcfs["mean_wait_s.sd"]) == pytest.approx(120.0)
    assert float(fcfs["mean_wait_s.ci95"]) == pytest.approx(t2 * 120.0 / math.sqrt(3))
    # snf energies 3.7e9, 4.1e9, 4.2e9: mean 4.0e9, sd sqrt(0.07e18)
    sd = math.sqrt(((-0.3e9) ** 2 + (0.1e9) ** 2 + (0.2e9) ** 2) / 2)
    assert float(snf["wasted_energy_j.mean"]) == pytest.approx(4.0e9)
    assert float(snf["wasted_energy_j.ci95"]) == pytest.approx(t2 * sd / math.sqrt(3))

    (row,) = read(tmp_path / "out" / "report" / "paired.csv")
    assert row["policy.name"] == "snf-ipm" and row["reference"] == "fcfs-easy-ipm"
    # wait differences -60, -120, -60: mean -80, sd sqrt(1200)
    assert float(row["mean_wait_s.diff"]) == pytest.approx(-80.0)
    assert float(row["mean_wait_s.ci95"]) == pytest.approx(t2 * math.sqrt(1200.0) / math.sqrt(3))
    assert float(row["mean_wait_s.relative_pct"]) == pytest.approx(-80.0 / 720.0 * 100)
    # energy differences 0.1e9, 0.2e9, 0: mean 0.1e9, sd 0.1e9
    assert float(row["wasted_energy_j.diff"]) == pytest.approx(0.1e9)
    assert float(row["wasted_energy_j.ci95"]) == pytest.approx(t2 * 0.1e9 / math.sqrt(3))

    text = (tmp_path / "out" / "report" / "report.md").read_text()
    # 720 s = 12.00 min, half width 298.1 s = 4.97 min; 3.9e9 J = 1.083 MWh, sd 0.3e9 J,
    # half width 0.745e9 J = 0.207 MWh
    assert "| quickstart | fcfs-easy-ipm | 3 | 12.00 ± 4.97 | 1.083 ± 0.207 |" in text
    # -80 s = -1.33 min, half width 86.1 s = 1.43 min
    assert "| quickstart | snf-ipm | 3 | -1.33 [-2.77, +0.10] | -11.1 % |" in text


def read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))
