"""Batsim's energy outputs: evalys reads them, and they agree with the summary to the joule."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from hypothesis import given
from test_properties import PROPS, cases

from hpcpower import Simulation, load_workload, make_policy
from hpcpower.results.export import PSTATE_IDS, _num, write_all, write_consumed_energy_csv
from hpcpower.states import STATE_LABELS


def read_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def expand(interval_set: str) -> list[int]:
    nodes = []
    for part in interval_set.split():
        lo, _, hi = part.partition("-")
        nodes.extend(range(int(lo), int(hi or lo) + 1))
    return nodes


def check_outputs(results, folder) -> None:
    """The three Batsim energy files against the summary and machine_states.csv."""
    summary = json.loads((folder / "summary.json").read_text())
    total = summary["total_energy_j"]
    # consumed_energy.csv ends at the run's total energy.
    energy = read_rows(folder / "consumed_energy.csv")
    assert float(energy[-1]["energy"]) == pytest.approx(total, rel=1e-12, abs=1e-6)
    assert float(energy[-1]["time"]) == pytest.approx(summary["simulated_span_s"])
    joules = [float(row["energy"]) for row in energy]
    assert all(a <= b + 1e-6 for a, b in zip(joules, joules[1:], strict=False))
    # pstate_changes.csv replayed gives machine_states.csv at every instant it lists.
    n = results.time_in_state_s.shape[0]
    state = np.full(n, -1)
    replayed = {}
    for row in read_rows(folder / "pstate_changes.csv"):
        state[expand(row["machine_id"])] = int(row["new_pstate"])
        replayed[float(row["time"])] = np.bincount(state[state >= 0], minlength=5)
    assert (state >= 0).all()
    order = [PSTATE_IDS[label] for label in STATE_LABELS]
    for row in read_rows(folder / "machine_states.csv"):
        t = float(row["time"])
        if t in replayed:
            counts = replayed[t][order]
            assert counts.tolist() == [int(row[f"nb_{label}"]) for label in STATE_LABELS], t
    # schedule.json says what summary.json says.
    schedule = json.loads((folder / "schedule.json").read_text())
    assert schedule["nb_jobs"] == summary["jobs_submitted"]
    assert schedule["nb_jobs_finished"] == summary["jobs_completed"]
    assert schedule["nb_jobs_killed"] == summary["jobs_killed"]
    assert schedule["nb_jobs_rejected"] == summary["jobs_rejected"]
    assert schedule["nb_machine_switches"] == summary["switch_ons"] + summary["switch_offs"]
    if summary["jobs_completed"]:
        assert schedule["mean_waiting_time"] == pytest.approx(summary["mean_wait_s"])
        assert schedule["max_waiting_time"] == summary["max_wait_s"]
    seconds = results.time_in_state_s.sum(axis=0)
    for k, label in enumerate(STATE_LABELS):
        assert schedule[f"time_{label}"] == pytest.approx(seconds[k])
    first_submit = float(results.jobs["submit_s"].min())
    if first_submit == 0.0:
        assert schedule["consumed_joules"] == pytest.approx(total, rel=1e-12)


@PROPS
@given(case=cases())
def test_energy_outputs_agree_with_the_summary(case, tmp_path_factory):
    results = case.run()
    folder = tmp_path_factory.mktemp("run") / "out"
    write_all(results, folder)
    check_outputs(results, folder)


def test_evalys_reads_and_plots_every_output(tmp_path, monkeypatch):
    evalys = pytest.importorskip("evalys")  # noqa: F841 - the test extra installs it
    # evalys 4.0.7 draws the Gantt with np.row_stack, which the newest numpy
    # no longer has; it was vstack under another name.
    monkeypatch.setattr(np, "row_stack", np.vstack, raising=False)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    from evalys.jobset import JobSet
    from evalys.mstates import MachineStatesChanges
    from evalys.pstates import PowerStatesChanges
    from evalys.visu import legacy

    results = Simulation.from_scenario("scenarios/quickstart.toml").run()
    folder = tmp_path / "quickstart"
    write_all(results, folder)
    check_outputs(results, folder)

    jobs = JobSet.from_csv(str(folder / "jobs.csv"))
    machines = MachineStatesChanges(str(folder / "machine_states.csv"))
    pstates = PowerStatesChanges(str(folder / "pstate_changes.csv"))
    assert len(jobs.df) == 300
    assert machines.df["nb_computing"].max() <= 64
    fig, axes = plt.subplots(3, 1)
    legacy.plot_gantt_pstates(jobs, pstates, axes[0], title="power states")
    legacy.plot_mstates(machines.df, ax=axes[1])
    energy = pd.read_csv(folder / "consumed_energy.csv")
    axes[2].plot(energy["time"], energy["energy"])
    fig.savefig(tmp_path / "evalys.png")
    plt.close(fig)
    assert (tmp_path / "evalys.png").stat().st_size > 10_000
    assert energy["energy"].iloc[-1] == pytest.approx(results.summary["total_energy_j"], rel=1e-12)
    assert set(jobs.df["profile"].astype(str)) == {"100"}  # the paper file's profile name


def test_jobs_csv_keeps_the_batsim_profile_names(tmp_path):
    """A Batsim workload's profile names reach jobs.csv beside the job ids."""
    from conftest import tiny_platform

    workload = {
        "nb_res": 2,
        "jobs": [
            {"id": "a", "subtime": 0, "res": 1, "walltime": 100, "profile": "short"},
            {"id": "b", "subtime": 5, "res": 2, "walltime": 100, "profile": "long"},
        ],
        "profiles": {
            "short": {"type": "delay", "delay": 10},
            "long": {"type": "delay", "delay": 30},
        },
    }
    path = tmp_path / "w.json"
    path.write_text(json.dumps(workload))
    jobs = load_workload(path).jobs
    write_all(Simulation(tiny_platform(2), jobs, make_policy("fcfs-easy")).run(), tmp_path / "o")
    rows = read_rows(tmp_path / "o" / "jobs.csv")
    assert [(r["job_id"], r["profile"], r["finish_time"]) for r in rows] == [
        ("a", "short", "10"),
        ("b", "long", "40"),
    ]


def _energy_rows(results, tmp_path):
    write_all(results, tmp_path / "out")
    return read_rows(tmp_path / "out" / "consumed_energy.csv")


def test_energy_rows_by_hand(tmp_path):
    """2 nodes idle at 100 W, computing 200 W. Job 0 takes no time at t=0; job 1 runs 0-10
    on one node. The platform draws 200 W, then 300 W while job 1 runs, then 200 W."""
    from conftest import job, tiny_platform

    jobs = [job(0, 0, 1, 0.0), job(1, 0, 1, 10.0)]
    res = Simulation(tiny_platform(2), jobs, make_policy("fcfs-easy")).run()
    rows = [
        (r["time"], r["event_type"], r["energy"], r["wattmin"]) for r in _energy_rows(res, tmp_path)
    ]
    # At t=0 the power is the platform's from the first row on; job 0 starts before it ends.
    assert rows[0][3] in ("300", "400") and all(r[2] == "0" for r in rows if r[0] == "0")
    kinds = [r[1] for r in rows if r[0] == "0"]
    assert kinds.index("s") < kinds.index("e")
    # 300 W for 10 s; then job 1 ends and its node goes idle (200 W from then on).
    assert rows[-2:] == [("10", "e", "3000", "300"), ("10", "p", "3000", "200")]


def test_consumed_joules_start_at_the_first_submission(tmp_path):
    """Nothing happens at the first submission (t=100, a rejected job): the energy before
    it is the idle platform's, 2 x 100 W x 100 s."""
    from conftest import job, tiny_platform

    jobs = [job(0, 100, 3, 10.0), job(1, 150, 1, 10.0)]
    res = Simulation(tiny_platform(2), jobs, make_policy("fcfs-easy")).run()
    write_all(res, tmp_path / "out")
    schedule = json.loads((tmp_path / "out" / "schedule.json").read_text())
    total = res.summary["total_energy_j"]
    assert total == 2 * 100 * 160 + 100 * 10  # idle 0-160 on both, computing 150-160 on one
    assert schedule["consumed_joules"] == pytest.approx(total - 2 * 100 * 100)


def _energy_rows_by_loop(results):
    """The energy rows as a plain loop makes them: every change applied, the power summed anew."""
    from hpcpower.results.export import pstate_change_arrays

    power = results.power_w
    times, states, ptr, nodes = pstate_change_arrays(results)
    t = results.jobs
    events = [
        (f, 3 if f == s else 0, "e", -1) for f, s in zip(t["finish_s"], t["start_s"], strict=True)
    ]
    events = [e for e in events if not np.isnan(e[0])]
    events += [(time_s, 1, "p", k) for k, time_s in enumerate(times.tolist())]
    events += [(s, 2, "s", -1) for s in t["start_s"] if not np.isnan(s)]
    order = sorted(range(len(events)), key=lambda i: (events[i][0], events[i][1]))
    state = np.full(len(power), PSTATE_IDS[results.config.get("initial_state") or "idle"])
    watts = float(power[np.arange(len(power)), state].sum())
    joules, clock, rows = 0.0, 0.0, []
    for time_s, _, kind, k in (events[i] for i in order):
        joules += watts * (float(time_s) - clock)
        clock = float(time_s)
        if k >= 0:
            state[nodes[ptr[k] : ptr[k + 1]]] = states[k]
            watts = float(power[np.arange(len(power)), state].sum())
        rows.append((clock, joules, kind, watts))
    if not rows or rows[-1][0] < results.end_s:
        rows.append((float(results.end_s), joules + watts * (results.end_s - clock), "f", watts))
    return rows


@pytest.mark.parametrize(
    ("until", "initial"), [(None, "idle"), (2.0e5, "idle"), (None, "sleeping")]
)
def test_energy_rows_are_the_plain_loops_to_the_bit(until, initial, tmp_path):
    """Nodes of three power models, so that the order of every sum matters; mid-run; asleep
    at first. The file's mean power (NA when no time passed) is the plain loop's too."""
    from conftest import DATA

    from hpcpower.platform import Duration, NodeType, Platform
    from hpcpower.results.export import energy_events

    types = tuple(
        NodeType(
            f"t{k}",
            (9.5 + k, 150.25 + k, 95.1 + 3 * k, 190.3 + 7.7 * k, 120.0 + k),
            Duration(60.0 + 10 * k),
            Duration(30.0 + 5 * k),
        )
        for k in range(3)
    )
    platform = Platform("mixed", types, tuple((i * 7) % 3 for i in range(64)))
    jobs = load_workload(DATA / "generated-markovian-3000.json.gz").jobs[:600]
    sim = Simulation(platform, jobs, make_policy("snf-ipm"), seed=1, initial_state=initial)
    if until is None:
        results = sim.run()
    else:
        sim.run(until=until)
        results = sim.results()
    rows = _energy_rows_by_loop(results)
    assert energy_events(results) == rows
    write_consumed_energy_csv(results, tmp_path / "energy.csv")
    with open(tmp_path / "energy.csv", newline="") as fh:
        epower = [row["epower"] for row in csv.DictReader(fh)]
    want = ["NA"] + [
        "NA" if t == t0 else _num((j - j0) / (t - t0))
        for (t0, j0, _, _), (t, j, _, _) in zip(rows, rows[1:], strict=False)
    ]
    assert epower == want and "NA" in want[1:]
