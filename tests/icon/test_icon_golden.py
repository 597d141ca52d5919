"""Golden runs: SNF-ICON reproduces the authors' simulator job for job (see golden/README.md)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from hpcpower import Simulation, load_platform, load_workload, make_policy

GOLDEN = Path(__file__).parent / "golden"
DATA = Path(__file__).resolve().parents[2] / "scenarios" / "data"
CASES = json.loads((GOLDEN / "summaries.json").read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_the_authors_simulator_job_for_job(name):
    case = CASES[name]
    workload = load_workload(DATA / f"{case['workload']}.json.gz")
    workload.jobs = workload.jobs[: case["jobs"]]
    sim = Simulation(load_platform("aoba-64"), workload, make_policy(case["policy"]), seed=42)
    res = sim.run()
    table = res.job_table()
    index = {job_name: i for i, job_name in enumerate(table["name"])}
    with open(GOLDEN / name) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == case["jobs"]
    for row in rows:
        i = index[row["job_id"]]
        assert table["start_s"][i] == float(row["start_s"]), row["job_id"]
        assert table["finish_s"][i] == float(row["finish_s"]), row["job_id"]
        assert sorted(res.allocations[i].tolist()) == list(map(int, row["nodes"].split()))
    s = res.summary
    assert s["mean_wait_s"] == pytest.approx(case["mean_wait_s"], rel=1e-12)
    assert s["wasted_energy_j"] == pytest.approx(case["wasted_energy_j"], rel=1e-12)
    assert s["simulated_span_s"] == case["end_s"]
    assert s["icon_time_fraction"] == pytest.approx(case["icon_time_fraction"], rel=1e-12)
    # One pass per controller call of the reference, which calls once more
    # after the last completion (that call decides nothing).
    assert sim.passes == case["controller_calls"] - 1
