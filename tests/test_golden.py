"""Golden runs: the baselines reproduce the authors' simulator job for job."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from hpcpower import Simulation, load_platform, load_workload, make_policy
from hpcpower.planning._numba import AVAILABLE as NUMBA_AVAILABLE

GOLDEN = Path(__file__).parent / "golden"
DATA = Path(__file__).resolve().parents[1] / "scenarios" / "data"

FIRST200 = {
    # policy: (mean wait s, wasted energy J) reported by the authors' simulator
    "fcfs-easy-ipm": (2042.9671986544881, 4648869361.285015),
    "snf-ipm": (2005.0126413439368, 4632602849.750994),
}


@pytest.mark.parametrize("compiled", [True, False], ids=["kernels", "numpy"])
@pytest.mark.parametrize("policy", sorted(FIRST200))
def test_first_200_jobs_of_das2_fs1_match_job_for_job(policy, compiled):
    if compiled and not NUMBA_AVAILABLE:
        pytest.skip("numba is not installed")
    workload = load_workload(DATA / "DAS2-fs1-0-3000.json.gz")
    workload.jobs = workload.jobs[:200]
    sim = Simulation(
        load_platform("aoba-64"),
        workload,
        make_policy(policy),
        seed=42,
        kernels="numba" if compiled else "numpy",
    )
    res = sim.run()
    table = res.job_table()
    index = {name: i for i, name in enumerate(table["name"])}
    with open(GOLDEN / f"das2-fs1-first200-{policy}.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 200
    for row in rows:
        i = index[row["job_id"]]
        assert table["start_s"][i] == float(row["start_s"]), row["job_id"]
        assert table["finish_s"][i] == float(row["finish_s"]), row["job_id"]
        assert sorted(res.allocations[i].tolist()) == sorted(map(int, row["nodes"].split()))
    wait, waste = FIRST200[policy]
    assert res.summary["mean_wait_s"] == pytest.approx(wait, rel=1e-12)
    assert res.summary["wasted_energy_j"] == pytest.approx(waste, rel=1e-12)


def _cases():
    data = json.loads((GOLDEN / "paper-cases.json").read_text())
    return [(c["workload"], c["platform"], c["policy"], c) for c in data]


@pytest.mark.parametrize("workload,platform,policy,expected", _cases())
def test_paper_cases_match_the_authors_simulator(workload, platform, policy, expected):
    sim = Simulation(
        load_platform(platform), load_workload(DATA / workload), make_policy(policy), seed=42
    )
    s = sim.run().summary
    assert s["jobs_completed"] == 3000
    assert s["mean_wait_s"] == pytest.approx(expected["mean_wait_s"], rel=1e-9)
    assert s["wasted_energy_j"] == pytest.approx(expected["wasted_energy_j"], rel=1e-9)
    assert s["simulated_span_s"] == pytest.approx(expected["end_s"], rel=1e-12)
