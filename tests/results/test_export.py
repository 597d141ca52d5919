"""Output files: Batsim-style ``jobs.csv`` and ``machine_states.csv``, and ``summary.json``."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import platform
import subprocess
import sys

import numpy as np
import pytest
from conftest import DATA, Scripted, job, tiny_platform

from hpcpower import Simulation, load_platform, load_workload
from hpcpower.platform import STATE_LABELS
from hpcpower.policies.base import Decision
from hpcpower.policies.registry import make_policy
from hpcpower.results import export, records
from hpcpower.results.export import (
    JOBS_COLUMNS,
    MACHINE_COLUMNS,
    PSTATE_IDS,
    interval_set,
    write_all,
    write_jobs_csv,
    write_machine_states_csv,
    write_summary_json,
)


# ------------------------------------------------------------- interval sets
@pytest.mark.parametrize(
    ("nodes", "text"),
    [
        (None, ""),
        ([], ""),
        ([3], "3"),
        ([0, 1], "0-1"),
        ([0, 1, 2, 5], "0-2 5"),
        ([5, 0, 2, 1], "0-2 5"),
        ([0, 2, 4], "0 2 4"),
        ([7, 8, 9, 10, 12, 13, 20], "7-10 12-13 20"),
        ([1151, 0], "0 1151"),
    ],
)
def test_interval_set(nodes, text):
    arg = None if nodes is None else np.asarray(nodes, dtype=np.intp)
    assert interval_set(arg) == text


def test_interval_set_round_trips():
    rng = np.random.default_rng(1)
    for _ in range(50):
        nodes = np.sort(rng.choice(40, size=rng.integers(1, 20), replace=False))
        ids = []
        for part in interval_set(nodes).split():
            lo, _, hi = part.partition("-")
            ids.extend(range(int(lo), int(hi or lo) + 1))
        assert ids == nodes.tolist()


@pytest.mark.parametrize("ordered", [False, True])
@pytest.mark.parametrize("at_once", [5, 1 << 20])
def test_interval_sets_of_many_groups_give_back_each_groups_ids_in_runs(
    ordered, at_once, monkeypatch
):
    """Empty groups, single ids, runs across group edges, unsorted ids, blocks of a few ids."""
    monkeypatch.setattr(export, "_IDS_AT_ONCE", at_once)
    rng = np.random.default_rng(3)
    groups = [np.array([], dtype=np.int64), np.array([4, 5]), np.array([6, 7]), np.array([9])]
    for _ in range(300):
        group = rng.choice(60, size=rng.integers(0, 25), replace=False)
        groups.append(np.sort(group) if ordered else group)
    sizes = np.array([len(g) for g in groups])
    got = export._interval_sets(sizes, np.concatenate(groups).astype(np.int32), ordered=ordered)
    assert got[:4] == ["", "4-5", "6-7", "9"]  # (runs do not join across groups)
    for text, group in zip(got, groups, strict=True):
        ids = []
        for part in text.split():
            lo, _, hi = part.partition("-")
            ids.extend(range(int(lo), int(hi or lo) + 1))
        assert ids == sorted(group.tolist())
        assert all(
            int(b.partition("-")[0]) > int(a.rpartition("-")[2]) + 1
            for a, b in zip(text.split(), text.split()[1:], strict=False)
        )  # (each run as long as it goes)
    assert export._interval_sets(np.zeros(2, dtype=np.int64), np.array([], dtype=np.int32)) == [
        "",
        "",
    ]


def test_number_texts_are_each_numbers_text():
    values = [0.0, -0.0, 1.0, -3.0, 0.5, 1e-300, 1e20, -1e300, 2.0**63, 2.0**62, 1 / 3]
    values += [math.nan, math.inf, -math.inf, 123456789.25, 7.0e15]
    values += np.random.default_rng(0).normal(0, 1e6, 200).round(2).tolist()
    assert export._num_texts(np.array(values)) == [export._num(v) for v in values]
    assert export._num_texts(np.array([])) == []


@pytest.mark.parametrize("uniform", [True, False])
def test_gang_sums_are_numpys_sum_of_each_gang(uniform):
    """To the bit: with one value for every node, a sum is made once per gang size."""
    rng = np.random.default_rng(5)
    values = np.full(500, 190.3) if uniform else rng.uniform(50, 300, 500)
    gangs = [rng.choice(500, size=k, replace=False) for k in rng.integers(1, 500, 200)]
    sizes = np.array([len(g) for g in gangs])
    got = export._gang_sums(values, sizes, np.concatenate(gangs))
    assert got.tolist() == [values[g].sum() for g in gangs]
    which = rng.random(len(gangs)) < 0.5  # (some gangs, read in place)
    picked = export._gang_sums(values, sizes, np.concatenate(gangs), which)
    assert picked.tolist() == [values[g].sum() for g, w in zip(gangs, which, strict=True) if w]
    if uniform:  # (and a sum of copies is not the size times the value)
        assert any(values[g].sum() != len(g) * 190.3 for g in gangs)


# ------------------------------------------------------ a tiny hand-made run
def tiny_run():
    """3 nodes (200/100/10/150/120 W; on 100 s, off 50 s), scripted.

    job 0 (id "1"): submit 0, 2 nodes, runtime 300, walltime 400: runs 0..300 on 0-1.
    job 1 (id "2"): submit 10, 1 node, runtime 0: starts and ends at 10 on node 2.
    job 2 (id "3"): submit 20, 4 nodes: rejected (the platform has 3).
    job 3 (id "4"): submit 50, 2 nodes, runtime 100, walltime 50 (overruns):
        runs 300..400 on nodes 2 and 0.
    node 2: switched off at 20 (asleep at 70), on at 150 (idle at 250).
    """
    sim = Simulation(
        tiny_platform(3),
        [job(0, 0, 2, 300, 400), job(1, 10, 1, 0), job(2, 20, 4, 30), job(3, 50, 2, 100, 50)],
        Scripted(
            {
                0.0: {"start": [(0, [0, 1])]},
                10.0: {"start": [(1, [2])]},
                20.0: {"off": [2]},
                150.0: {"on": [2]},
                300.0: {"start": [(3, [2, 0])]},
            }
        ),
    )
    return sim.run()


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.reader(fh))


def test_jobs_csv_columns_and_rows_by_hand(tmp_path):
    res = tiny_run()
    path = tmp_path / "jobs.csv"
    write_jobs_csv(res, path)
    rows = read_csv(path)
    assert tuple(rows[0]) == JOBS_COLUMNS
    assert len(rows) == 1 + 4
    got = {r[0]: dict(zip(JOBS_COLUMNS, r, strict=True)) for r in rows[1:]}
    assert [r[0] for r in rows[1:]] == ["1", "2", "3", "4"]
    assert got["1"] == {
        "job_id": "1",
        "workload_name": "w0",
        "profile": "",
        "submission_time": "0",
        "requested_number_of_resources": "2",
        "requested_time": "400",
        "success": "1",
        "final_state": "COMPLETED_SUCCESSFULLY",
        "starting_time": "0",
        "execution_time": "300",
        "finish_time": "300",
        "waiting_time": "0",
        "turnaround_time": "300",
        "stretch": "1",
        "allocated_resources": "0-1",
        "consumed_energy": "120000",  # 2 nodes x 200 W x 300 s
        "metadata": "",
    }
    zero = got["2"]
    assert zero["final_state"] == "COMPLETED_SUCCESSFULLY" and zero["success"] == "1"
    assert zero["submission_time"] == zero["starting_time"] == zero["finish_time"] == "10"
    assert zero["execution_time"] == "0" and zero["waiting_time"] == "0"
    assert zero["allocated_resources"] == "2"
    assert zero["consumed_energy"] == "0"
    rejected = got["3"]
    assert rejected["final_state"] == "REJECTED" and rejected["success"] == "0"
    assert rejected["submission_time"] == "20"
    assert rejected["requested_number_of_resources"] == "4"
    assert rejected["requested_time"] == "30"
    for column in (
        "starting_time",
        "execution_time",
        "finish_time",
        "waiting_time",
        "turnaround_time",
        "stretch",
        "allocated_resources",
        "consumed_energy",
    ):
        assert rejected[column] == "", column
    overrun = got["4"]
    assert overrun == {
        **overrun,
        "submission_time": "50",
        "requested_time": "50",
        "final_state": "COMPLETED_SUCCESSFULLY",
        "starting_time": "300",
        "execution_time": "100",  # runs its runtime, past its walltime
        "finish_time": "400",
        "waiting_time": "250",
        "turnaround_time": "350",
        "stretch": "3.5",
        "allocated_resources": "0 2",
        "consumed_energy": "40000",
    }


def test_jobs_csv_reads_back_as_numbers_with_pandas(tmp_path):
    pd = pytest.importorskip("pandas")
    res = tiny_run()
    write_jobs_csv(res, tmp_path / "jobs.csv")
    frame = pd.read_csv(tmp_path / "jobs.csv", dtype={"allocated_resources": str})
    assert list(frame.columns) == list(JOBS_COLUMNS)
    for column in ("submission_time", "starting_time", "finish_time", "waiting_time"):
        assert pd.api.types.is_float_dtype(frame[column]) or pd.api.types.is_integer_dtype(
            frame[column]
        )
    table = res.job_table()
    done = table["state"] == "completed"
    np.testing.assert_array_equal(frame["waiting_time"][done].to_numpy(), table["wait_s"][done])
    assert frame["waiting_time"].isna().tolist() == (~done).tolist()


def test_fractional_times_are_written_exactly(tmp_path):
    sim = Simulation(
        tiny_platform(1),
        [job(0, 2.5, 1, 1.25, 7.75)],
        Scripted({2.5: {"start": [(0, [0])]}}),
    )
    res = sim.run()
    write_jobs_csv(res, tmp_path / "jobs.csv")
    row = dict(zip(JOBS_COLUMNS, read_csv(tmp_path / "jobs.csv")[1], strict=True))
    assert row["submission_time"] == "2.5"
    assert row["requested_time"] == "7.75"
    assert row["execution_time"] == "1.25"
    assert row["finish_time"] == "3.75"
    assert row["consumed_energy"] == "250"  # 200 W x 1.25 s
    write_machine_states_csv(res, tmp_path / "m.csv")
    assert [r[0] for r in read_csv(tmp_path / "m.csv")[1:]] == ["0", "2.5", "3.75"]


def _collapse(rows):
    out = []
    for time_s, *counts in rows:
        if not out or out[-1][1] != tuple(counts):
            out.append((time_s, tuple(counts)))
    return out


def test_machine_states_csv_rows_equal_the_state_counts(tmp_path):
    res = tiny_run()
    path = tmp_path / "machine_states.csv"
    write_machine_states_csv(res, path)
    rows = read_csv(path)
    assert tuple(rows[0]) == MACHINE_COLUMNS
    body = rows[1:]
    assert len(body) == len(res.state_counts)
    for row, (time_s, sleeping, on, idle, computing, off) in zip(
        body, res.state_counts, strict=True
    ):
        assert float(row[0]) == time_s
        assert [int(x) for x in row[1:]] == [sleeping, on, off, idle, computing]
    # Counts (sleeping, switching_on, idle, computing, switching_off) at each change, by hand.
    assert _collapse(res.state_counts) == [
        (0.0, (0, 0, 1, 2, 0)),
        (20.0, (0, 0, 0, 2, 1)),
        (70.0, (1, 0, 0, 2, 0)),
        (150.0, (0, 1, 0, 2, 0)),
        (250.0, (0, 0, 1, 2, 0)),
        (400.0, (0, 0, 3, 0, 0)),
    ]
    assert all(sum(int(x) for x in row[1:]) == 3 for row in body)
    times = [float(r[0]) for r in body]
    assert times == sorted(times) and len(set(times)) == len(times)


def test_summary_json_round_trips_the_summary(tmp_path):
    res = tiny_run()
    write_summary_json(res, tmp_path / "summary.json")
    data = json.loads((tmp_path / "summary.json").read_text())
    assert data["jobs_submitted"] == 4
    assert data["jobs_completed"] == 3
    assert data["jobs_rejected"] == 1
    assert data["mean_wait_s"] == pytest.approx(250 / 3)
    assert data["energy_j"] == pytest.approx(res.summary["energy_j"])
    assert set(data["energy_j"]) == set(STATE_LABELS)
    assert data["total_energy_j"] == pytest.approx(res.summary["total_energy_j"])
    assert data["config"]["policy"] == {"name": "scripted"}
    assert data["version"] == res.summary["version"]


def _strict_json(text):
    def refuse(token):
        raise AssertionError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("second_submit", [0.0, 5.0])
def test_summary_json_writes_nan_as_null_when_no_job_completed(tmp_path, second_submit):
    # Every job asks for 2 nodes of a 1-node platform: all are rejected.
    sim = Simulation(
        tiny_platform(1),
        [job(0, 0, 2, 10), job(1, second_submit, 2, 10)],
        make_policy("snf"),
    )
    res = sim.run()
    assert res.summary["jobs_completed"] == 0
    assert res.summary["jobs_rejected"] == 2
    assert math.isnan(res.summary["mean_wait_s"])
    path = tmp_path / "summary.json"
    write_summary_json(res, path)
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    data = _strict_json(text)
    for key in (
        "mean_wait_s",
        "median_wait_s",
        "p95_wait_s",
        "max_wait_s",
        "mean_bounded_slowdown",
    ):
        assert data[key] is None, key
    assert data["jobs_submitted"] == 2
    assert data["jobs_rejected"] == 2
    assert data["total_energy_j"] == pytest.approx(100.0 * second_submit)  # 1 idle node
    if second_submit == 0.0:
        assert data["utilization"] is None  # zero simulated span
    else:
        assert data["utilization"] == 0.0
    rows = read_csv(write_all(res, tmp_path / "all")[1])
    assert [r[JOBS_COLUMNS.index("final_state")] for r in rows[1:]] == ["REJECTED"] * 2


class Noted(Scripted):
    """A scripted policy that logs one note per pass."""

    def decide(self, view) -> Decision:
        decision = super().decide(view)
        decision.note = {"time_s": view.now, "queue": len(view.queue)}
        return decision


def test_write_all_writes_every_file_and_decisions_only_when_logged(tmp_path):
    paths = write_all(tiny_run(), tmp_path / "plain")
    assert [p.name for p in paths] == [
        "summary.json",
        "jobs.csv",
        "machine_states.csv",
        "pstate_changes.csv",
        "consumed_energy.csv",
        "schedule.json",
    ]
    assert all(p.is_file() for p in paths)
    assert not (tmp_path / "plain" / "decisions.csv").exists()

    sim = Simulation(
        tiny_platform(1),
        [job(0, 0, 1, 10), job(1, 5, 1, 10)],
        Noted({0.0: {"start": [(0, [0])]}, 10.0: {"start": [(1, [0])]}}),
    )
    res = sim.run()
    paths = write_all(res, tmp_path / "noted" / "deeper")
    assert paths[-1].name == "decisions.csv"
    rows = read_csv(paths[-1])
    assert rows[0] == ["time_s", "queue"]
    assert len(rows) - 1 == len(res.decisions) == sim.passes
    assert [float(r[0]) for r in rows[1:]] == [d["time_s"] for d in res.decisions]


def test_nan_in_the_decision_log_is_an_empty_field(tmp_path):
    class WithNan(Noted):
        def decide(self, view) -> Decision:
            decision = super().decide(view)
            decision.note.update(x=math.nan, y=1.5)
            return decision

    sim = Simulation(tiny_platform(1), [job(0, 0, 1, 10)], WithNan({0.0: {"start": [(0, [0])]}}))
    paths = write_all(sim.run(), tmp_path / "o")
    rows = read_csv(paths[-1])
    assert rows[0] == ["time_s", "queue", "x", "y"]
    assert [r[2:] for r in rows[1:]] == [["", "1.5"]] * (len(rows) - 1)


def test_a_job_killed_at_its_walltime_is_not_reported_as_successful(tmp_path):
    sim = Simulation(
        tiny_platform(1),
        [job(0, 0, 1, 100, 40), job(1, 0, 1, 30, 40)],
        Scripted({0.0: {"start": [(0, [0])]}, 40.0: {"start": [(1, [0])]}}),
        kill_at_walltime=True,
    )
    res = sim.run()
    write_jobs_csv(res, tmp_path / "jobs.csv")
    rows = {
        r[0]: dict(zip(JOBS_COLUMNS, r, strict=True)) for r in read_csv(tmp_path / "jobs.csv")[1:]
    }
    assert rows["1"]["execution_time"] == "40"
    assert rows["2"]["final_state"] == "COMPLETED_SUCCESSFULLY" and rows["2"]["success"] == "1"
    assert rows["1"]["final_state"] == "COMPLETED_WALLTIME_REACHED"
    assert rows["1"]["success"] == "0"


def test_a_result_taken_mid_run_has_batsim_s_states_by_arrival(tmp_path):
    jobs = [job(0, 0, 1, 100.0), job(1, 10, 2, 50.0), job(2, 500, 1, 10.0)]
    sim = Simulation(tiny_platform(2), jobs, make_policy("fcfs-easy"))
    sim.run(until=0)  # nothing has happened yet: no job has arrived
    assert sim.results().jobs["state"].tolist() == ["not_submitted"] * 3
    sim.run(until=20)
    res = sim.results()
    assert res.jobs["state"].tolist() == ["running", "waiting", "not_submitted"]
    write_jobs_csv(res, tmp_path / "jobs.csv")
    finals = [row[JOBS_COLUMNS.index("final_state")] for row in read_csv(tmp_path / "jobs.csv")[1:]]
    assert finals == ["RUNNING", "SUBMITTED", "NOT_SUBMITTED"]


def test_state_changes_are_the_intervals_read_node_by_node_in_any_chunks():
    """The changes grouped by instant and state come from every node's intervals, chunk size aside.

    Replayed node by node from :meth:`Results.node_intervals` (a change
    whenever a node's state differs from its interval before, at the
    interval's start), the groups of ``pstate_changes`` give every node the
    same sequence of states; the intervals do not depend on how many nodes
    a chunk holds.
    """
    from hpcpower.results.export import pstate_changes

    workload = load_workload(DATA / "DAS2-fs1-0-3000.json.gz")
    workload.jobs = workload.jobs[:400]
    results = Simulation(load_platform("aoba-64"), workload, make_policy("snf-ipm"), seed=42).run()
    whole = results.node_interval_arrays()
    for size in (1, 5, 1000):
        chunks = list(results.node_interval_chunks(size))
        for name, column in whole.items():
            assert np.array_equal(np.concatenate([c[name] for c in chunks]), column)
    expected: dict[int, list[tuple[float, int]]] = {}
    for node, label, start, _end, _job in results.node_intervals():
        seen = expected.setdefault(node, [])
        state = PSTATE_IDS[label]
        if not seen or seen[-1][1] != state:
            seen.append((start, state))
    got: dict[int, list[tuple[float, int]]] = {}
    for time_s, nodes, state in pstate_changes(results):
        for node in nodes.tolist():
            got.setdefault(node, []).append((time_s, state))
    for node, changes in expected.items():
        # (The end of the run may add the state a node ends in.)
        assert got[node][: len(changes)] == changes


@pytest.mark.parametrize("block", [1, 3, 1 << 20])
def test_spans_grouped_by_node_are_a_stable_argsort_of_the_parts_joined(block, monkeypatch):
    """Block by block or at once, a node range's spans come in their order, as a stable sort gives.

    Two parts (a run's job spans, then its transitions) are numbered on from
    one to the next; a block that ignored the blocks before it, or the
    offset of the second part, would misplace spans; a range of nodes holds
    only its own nodes' spans, and the ranges joined are the whole.
    """
    from hpcpower.results.records import _group_by_node, _node_counts

    monkeypatch.setattr("hpcpower.results.records._SPANS_AT_ONCE", block)
    rng = np.random.default_rng(5)
    n = 7
    nodes = (rng.integers(0, n, 40), rng.integers(0, n - 1, 25).astype(np.int32))
    refs = (np.arange(40, dtype=np.int32), np.arange(40, 65, dtype=np.int32))
    parts = list(zip(nodes, refs, strict=True))
    per_node = sum(np.bincount(p, minlength=n) for p in nodes)
    assert (_node_counts(nodes[0], n) + _node_counts(nodes[1], n)).tolist() == per_node.tolist()
    assert _node_counts(nodes[1][:0], n).tolist() == [0] * n
    firsts = np.concatenate(([0], np.cumsum(per_node)))
    got = _group_by_node(parts, firsts, 0, n)
    assert got.dtype == np.int32
    joined = np.concatenate(nodes)
    assert got.tolist() == np.argsort(joined, kind="stable").tolist()
    for first, last in [(0, 2), (2, 3), (3, 7), (5, 5)]:
        ranged = _group_by_node(parts, firsts, first, last)
        assert ranged.tolist() == got[firsts[first] : firsts[last]].tolist()
        assert set(joined[ranged].tolist()) <= set(range(first, last))
    empty = [(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))]
    assert _group_by_node(empty, np.zeros(n + 1, dtype=np.int64), 0, n).size == 0


@pytest.mark.parametrize(
    ("nodes_per_chunk", "spans", "ranges"),
    [
        (1, [5, 5, 5, 5], [(0, 1), (1, 2), (2, 3), (3, 4)]),  # one node a range: 5 > 4 spans
        (2, [1, 1, 1, 1, 1], [(0, 4), (4, 5)]),  # whole chunks of two nodes, up to 4 spans
        (1, [9, 0, 0, 1], [(0, 1), (1, 4)]),  # a chunk past the bound is a range alone
        (3, [], [(0, 0)]),  # no node: one empty range
    ],
)
def test_node_ranges_hold_whole_chunks_and_a_bounded_number_of_spans(
    nodes_per_chunk, spans, ranges, monkeypatch
):
    """Spans are grouped a range of whole chunks at a time, each within the bound (or one chunk)."""
    from hpcpower.results.records import _node_ranges

    monkeypatch.setattr("hpcpower.results.records._GROUPED_AT_ONCE", 4)
    monkeypatch.setattr("hpcpower.results.records._RANGES", 1000)
    firsts = np.concatenate(([0], np.cumsum(spans, dtype=np.int64)))
    assert _node_ranges(firsts, nodes_per_chunk) == ranges


@pytest.mark.parametrize(
    ("table_nodes", "cells", "groups", "changes"),
    [
        (0, 1, 7, 1 << 20),
        (0, 1, 1 << 16, 1 << 20),
        (0, 1, 1 << 16, 5),
        (256, 1, 1, 1 << 20),
        (256, 70, 1, 1 << 20),
        (256, 1 << 18, 1, 1 << 20),
        (256, 1 << 18, 1, 9),
    ],
)
def test_watts_after_each_group_are_the_sums_a_plain_loop_makes(
    table_nodes, cells, groups, changes, monkeypatch
):
    """By group or as tables of blocks of groups: numpy's sum of every node's watts, bit for bit.

    Values of very different sizes make the order of the sum show; a node
    changes in many groups, some groups hold one node, one holds them all
    (more than a block of changes holds, with ``changes`` of 5 or 9).
    """
    monkeypatch.setattr(export, "_TABLE_NODES", table_nodes)
    monkeypatch.setattr(export, "_CELLS_AT_ONCE", cells)
    monkeypatch.setattr(export, "_GROUPS_AT_ONCE", groups)
    monkeypatch.setattr(export, "_CHANGES_AT_ONCE", changes)
    rng = np.random.default_rng(11)
    n = 37
    power = rng.uniform(1, 400, (n, 5)) * rng.choice([1e-3, 1.0, 1e6], (n, 5))
    groups = [np.sort(rng.choice(n, size=k, replace=False)) for k in rng.integers(1, 6, 300)]
    groups[100] = np.arange(n)
    states = rng.integers(0, 5, len(groups))
    ptr = np.concatenate(([0], np.cumsum([len(g) for g in groups])))
    start = power[:, 2].copy()
    node_w = start.copy()
    got = export._watts_after_groups(node_w, power, states, ptr, np.concatenate(groups))
    expected, exact, plain = [], [], start.copy()
    for group, state in zip(groups, states.tolist(), strict=True):
        plain[group] = power[group, state]
        expected.append(plain.sum())
        exact.append(math.fsum(plain))
    assert got.tolist() == expected
    assert node_w.tolist() == plain.tolist()
    assert expected != exact  # (so a sum in another order would fail)


def test_overlapping_spans_leave_no_gap_before_the_latest_end():
    """Spans that overlap on a node (only a hand-made record has them) count from the latest end.

    A job from 0 to 10 s and two inside it (2-3 s and 4-6 s): no idle gap
    opens at 3 s, and the node is idle from 10 s to the end at 12 s.
    """
    from hpcpower.results.records import _intervals
    from hpcpower.states import COMPUTING, IDLE

    node = np.zeros(3, dtype=np.int64)
    rows = _intervals(
        node,
        np.array([0.0, 2.0, 4.0]),
        np.array([10.0, 3.0, 6.0]),
        np.full(3, COMPUTING, dtype=np.int8),
        np.arange(3),
        np.arange(1),
        IDLE,
        12.0,
    )
    got = list(
        zip(rows["state"].tolist(), rows["start_s"].tolist(), rows["end_s"].tolist(), strict=True)
    )
    assert got == [
        (COMPUTING, 0.0, 10.0),
        (COMPUTING, 2.0, 3.0),
        (COMPUTING, 4.0, 6.0),
        (IDLE, 10.0, 12.0),
    ]


def test_files_written_a_few_rows_at_a_time_are_the_same(tmp_path, monkeypatch):
    """Whole traces are made into text a block of rows at a time; the blocks do not show."""
    jobs = load_workload(DATA / "lublin_256.swf.gz").jobs[:300]
    results = Simulation(load_platform("aoba-64"), jobs, make_policy("snf-ipm"), seed=3).run()
    write_all(results, tmp_path / "whole")
    monkeypatch.setattr(export, "_ROWS_AT_ONCE", 7)
    monkeypatch.setattr(export, "_IDS_AT_ONCE", 11)
    write_all(results, tmp_path / "blocks")
    monkeypatch.setattr(export, "_ROWS_AT_ONCE", 1000)
    monkeypatch.setattr(export, "_GANG_IDS_AT_ONCE", 50)  # (blocks of jobs by their node ids)
    write_all(results, tmp_path / "gangs")
    for name in ("jobs.csv", "pstate_changes.csv", "consumed_energy.csv"):
        whole = (tmp_path / "whole" / name).read_bytes()
        assert len(whole.splitlines()) > 100
        assert (tmp_path / "blocks" / name).read_bytes() == whole, name
        assert (tmp_path / "gangs" / name).read_bytes() == whole, name


@pytest.mark.parametrize(
    ("sizes", "rows_at_once", "most", "blocks"),
    [
        ([2, 2, 2, 2, 2], 100, 4, [0, 2, 4, 5]),  # two jobs of 2 ids a block
        ([1, 9, 1, 1, 0, 1], 100, 4, [0, 1, 2, 6]),  # a job past the bound alone
        ([1, 1, 1, 1, 1], 2, 100, [0, 2, 4, 5]),  # at most rows_at_once rows
        ([], 100, 4, [0]),  # no job: no block
    ],
)
def test_job_rows_are_made_in_blocks_of_a_bounded_number_of_node_ids(
    sizes, rows_at_once, most, blocks, monkeypatch
):
    """jobs.csv's rows are made into text a block of jobs at a time, each block's allocations
    holding ``most`` ids at most (or one job), so a few wide jobs do not make a large block."""
    assert export.block_starts(np.cumsum(sizes, dtype=np.int64), most, rows_at_once) == blocks


def test_interval_chunks_with_the_instants_index_their_bounds():
    """Looked up once per job and per transition, each interval's start_at and end_at index
    its start and end among the run's instants, and the intervals are those without them:
    also with overlapping spans (the running clock) and a run cut short. A hand-made span with
    no time (a job with nodes but no start) has none; its chunks come without them, and its
    state changes are those of a sort by four keys all the same."""
    jobs = load_workload(DATA / "lublin_256.swf.gz").jobs[:120]
    sim = Simulation(load_platform("aoba-64"), jobs, make_policy("snf-ipm"), seed=3)
    results = sim.run()
    sim = Simulation(load_platform("aoba-64"), jobs, make_policy("snf-ipm"), seed=3)
    sim.run(until=20_000.0)
    cut = sim.results()
    overlapping = dataclasses.replace(
        results,
        transitions=list(results.transitions) + [(0, 1 + k % 2, 3.0, 4.0 + k) for k in range(40)],
    )
    for each in (results, cut, overlapping):
        instants = each.interval_instants()
        for plain, indexed in zip(
            each.node_interval_chunks(5),
            each.node_interval_chunks(5, instants=instants),
            strict=True,
        ):
            assert set(indexed) == {*plain, "start_at", "end_at"}
            for name, column in plain.items():
                assert indexed[name].tolist() == column.tolist(), name
            assert instants[indexed["start_at"]].tolist() == plain["start_s"].tolist()
            assert instants[indexed["end_at"]].tolist() == plain["end_s"].tolist()
    assert len(cut.transitions) < len(results.transitions)
    times = {name: column.copy() for name, column in results.jobs.items()}
    assert math.isnan(times["start_s"][3])  # (a job never started: its NaN is no span's)
    times["start_s"][4] = math.nan
    no_time = dataclasses.replace(results, jobs=times)
    instants = no_time.interval_instants()
    assert all("start_at" not in c for c in no_time.node_interval_chunks(5, instants=instants))
    got = export.pstate_change_arrays(no_time)
    assert [a.tolist() for a in got] == [a.tolist() for a in _changes_by_four_keys(no_time)]


@pytest.mark.parametrize("nodes_per_chunk", [1, 3, 64])
def test_interval_chunks_are_the_same_grouped_a_node_range_at_a_time(nodes_per_chunk, monkeypatch):
    """Spans grouped a few nodes at a time (a whole trace's, in bounded memory) give the
    chunks of one grouping of every node, with a run's transitions and a hand-made list of
    gangs, and the same state changes."""
    jobs = load_workload(DATA / "lublin_256.swf.gz").jobs[:120]
    results = Simulation(load_platform("aoba-64"), jobs, make_policy("snf-ipm"), seed=3).run()
    listed = dataclasses.replace(results, allocations=list(results.allocations))
    grouped: list[tuple[int, int]] = []  # (the node ranges grouped at once)
    group = records._group_by_node

    def spied(parts, firsts, first, last):
        grouped.append((first, last))
        return group(parts, firsts, first, last)

    for each in (results, listed):
        instants = each.interval_instants()
        whole = list(each.node_interval_chunks(nodes_per_chunk, instants=instants))
        changes = export.pstate_change_arrays(each)
        with monkeypatch.context() as m:
            m.setattr("hpcpower.results.records._GROUPED_AT_ONCE", 40)
            m.setattr("hpcpower.results.records._RANGES", 1000)
            grouped.clear()
            m.setattr("hpcpower.results.records._group_by_node", spied)
            ranged = list(each.node_interval_chunks(nodes_per_chunk, instants=instants))
            assert [a.tolist() for a in export.pstate_change_arrays(each)] == [
                a.tolist() for a in changes
            ]
            # (Several ranges of at most 40 spans, or one chunk each.)
            assert len(grouped) > 3 if nodes_per_chunk < 64 else set(grouped) == {(0, 64)}
        assert len(ranged) == len(whole) == -(-64 // nodes_per_chunk)
        for a, b in zip(whole, ranged, strict=True):
            assert a.keys() == b.keys()
            for name in a:
                assert a[name].tolist() == b[name].tolist(), name


def _changes_by_four_keys(results):
    """The state-change groups of a stable sort by (time, rank, state, node), chunk by chunk."""
    n = results.time_in_state_s.shape[0]
    finish = np.asarray(results.jobs["finish_s"], dtype=float)
    state = None if results.node_state is None else np.asarray(results.node_state)
    made = [
        export._node_changes(
            chunk, finish, 2, state, float(results.end_s), np.arange(low, min(low + 32, n))
        )
        for chunk, low in zip(results.node_interval_chunks(32), range(0, n, 32), strict=True)
    ]
    node, new, time_s, rank = (np.concatenate([m[k] for m in made]) for k in range(4))
    order = np.lexsort((node, new, rank, time_s))
    node, new, time_s, rank = node[order], new[order], time_s[order], rank[order]
    head = np.ones(len(node), dtype=bool)
    head[1:] = (time_s[1:] != time_s[:-1]) | (rank[1:] != rank[:-1]) | (new[1:] != new[:-1])
    heads = np.flatnonzero(head)
    return time_s[heads], new[heads], np.append(heads, len(node)), node


@pytest.mark.parametrize("placed_ranks", [None, 1])
def test_state_changes_are_those_of_a_sort_by_four_keys(placed_ranks, monkeypatch):
    """Jobs that take no time (ranks above 0), and a hand-made node changing 40 times at 3 s,
    more than a change's one-byte code holds (sorted by keys instead); also with codes that
    hold only rank 0, which the jobs that take no time outgrow."""
    jobs = [job(0, 0, 1, 0.0), job(1, 0, 1, 0.0), job(2, 0, 2, 10.0)]
    jobs += [job(k, 5, 1, 0.0) for k in range(3, 8)]
    results = Simulation(load_platform("aoba-64"), jobs, make_policy("snf-ipm"), seed=3).run()
    overlapping = dataclasses.replace(
        results,
        transitions=list(results.transitions) + [(0, 1 + k % 2, 3.0, 4.0 + k) for k in range(40)],
    )
    if placed_ranks is not None:
        monkeypatch.setattr(export, "_PLACED_RANKS", placed_ranks)
    sorted_by_keys = []
    sort = export._sorted_changes
    monkeypatch.setattr(
        export, "_sorted_changes", lambda *a: sorted_by_keys.append(a[0]) or sort(*a)
    )
    for each in (results, overlapping):
        got = export.pstate_change_arrays(each)
        want = _changes_by_four_keys(each)
        assert [a.tolist() for a in got] == [a.tolist() for a in want]
    assert int(np.diff(got[2]).max()) >= 1 and len(got[0]) > 5
    assert sorted_by_keys == ([overlapping] if placed_ranks is None else [results, overlapping])


@pytest.mark.parametrize(("at_once", "placed_ranks"), [(5, 32), (1, 32), (1 << 22, 0), (3, 0)])
def test_state_changes_placed_in_blocks_or_sorted_by_keys_are_the_same(
    at_once, placed_ranks, monkeypatch
):
    """Each instant's changes are put in order a block of instants at a time (one instant a
    block, or a few); or, when a code would not hold a rank, sorted by keys."""
    jobs = [job(0, 0, 1, 0.0), job(1, 0, 1, 0.0), job(2, 0, 2, 10.0)]
    jobs += load_workload(DATA / "lublin_256.swf.gz").jobs[:200]
    jobs = [
        dataclasses.replace(j, id=k) for k, j in enumerate(sorted(jobs, key=lambda j: j.submit_s))
    ]
    results = Simulation(load_platform("aoba-64"), jobs, make_policy("snf-ipm"), seed=3).run()
    want = export.pstate_change_arrays(results)
    assert len(want[3]) > 1000 and len(want[0]) > 100
    assert [a.tolist() for a in want] == [a.tolist() for a in _changes_by_four_keys(results)]
    monkeypatch.setattr(export, "_CHANGES_AT_ONCE", at_once)
    monkeypatch.setattr(export, "_PLACED_RANKS", placed_ranks)
    got = export.pstate_change_arrays(results)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype
        assert a.tolist() == b.tolist()


def test_state_changes_do_not_depend_on_how_many_spans_a_chunk_holds(monkeypatch):
    """One node a chunk, a few, or every node at once: the same changes; so with the jobs'
    allocations read a few jobs at a time, and their spans grouped a few at a time."""
    from hpcpower.results import records

    jobs = load_workload(DATA / "lublin_256.swf.gz").jobs[:150]
    results = Simulation(load_platform("aoba-64"), jobs, make_policy("snf-ipm"), seed=3).run()
    want = export.pstate_change_arrays(results)
    for spans in (1, 300, 1 << 30):
        monkeypatch.setattr(records, "_JOBS_AT_ONCE", 1 + spans % 7)
        monkeypatch.setattr(records, "_SPANS_AT_ONCE", 1 + spans % 11)
        monkeypatch.setattr(export, "_SPANS_PER_CHUNK", spans)
        got = export.pstate_change_arrays(results)
        assert all(a.tolist() == b.tolist() for a, b in zip(got, want, strict=True)), spans


def test_hand_made_values_are_written_as_one_at_a_time(tmp_path):
    """Whole-number columns, a completed job on an empty gang, rows at an infinite time."""
    values = np.array([2**60 + 1, -3, 0], dtype=np.int64)
    assert export._num_texts(values) == [export._num(v) for v in values.tolist()]
    assert export._num_texts(np.array([True, False])) == ["1", "0"]
    assert export._num_texts(np.array([None, 2.5, 3], dtype=object)) == ["", "2.5", "3"]
    assert export._gang_sums(np.full(4, 2.0), np.array([0, 2]), np.array([1, 3])).tolist() == [
        0.0,
        4.0,
    ]
    results = Simulation(tiny_platform(2), [job(0, 0, 1, 5.0)], make_policy("fcfs-easy")).run()
    results = dataclasses.replace(results, allocations=[np.array([], dtype=np.intp)])
    path = tmp_path / "out.csv"
    write_jobs_csv(results, path)
    with open(path, newline="") as fh:
        assert next(csv.DictReader(fh))["consumed_energy"] == "0"  # (no node: 0 W for 5 s)
    events = export.EnergyEvents(
        np.array([1.0, np.inf, np.inf]),
        np.array([0.0, np.inf, np.inf]),
        np.array(["p"] * 3),
        np.array([1.0, 2.0, 3.0]),
    )
    export.write_consumed_energy_csv(results, path, events)
    with open(path, newline="") as fh:
        assert [row["epower"] for row in csv.DictReader(fh)] == ["NA", "", "NA"]
    # The rows of energy_events are taken as well as the arrays.
    rows = export.energy_events(results)
    assert export.schedule(results, rows) == export.schedule(results)


def test_free_memory_is_given_back_on_glibc_and_nowhere_else(monkeypatch):
    """The allocator's free pages go back to the system where the C library can (glibc)."""
    from hpcpower.results import _memory

    _memory._libc_function.cache_clear()
    try:
        glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
        assert _memory.release_free_memory() is glibc
        _memory._libc_function.cache_clear()
        monkeypatch.setattr(_memory.sys, "platform", "darwin")
        assert _memory.release_free_memory() is False
    finally:
        _memory._libc_function.cache_clear()


def test_giving_free_memory_back_starts_no_process(monkeypatch):
    """Finding ``malloc_trim`` starts no child process (``find_library`` starts ldconfig)."""
    import subprocess

    from hpcpower.results import _memory

    def refuse(*args, **kwargs):
        raise AssertionError(f"a child process was started: {args[:1]}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    _memory._libc_function.cache_clear()
    try:
        glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
        assert _memory.release_free_memory() is glibc
    finally:
        _memory._libc_function.cache_clear()


_HOLES = """
import sys

import numpy as np

from hpcpower.results._memory import map_large_allocations


def resident_mb():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) // 1024 for line in fh if line.startswith("VmRSS"))


if sys.argv[1] == "mapped":
    assert map_large_allocations()
big = np.ones(2 << 20)  # 16 MB, mapped and freed: glibc's threshold rises to it
del big
before = resident_mb()
large, small = [], []
for _ in range(8):
    large.append(np.ones(1 << 20))  # 8 MB
    small.append(np.ones(2000))  # a small block after each, still held
del large
print(resident_mb() - before)
"""


@pytest.mark.skipif(
    not (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"),
    reason="glibc's allocator",
)
def test_large_arrays_mapped_on_their_own_are_given_back_when_freed(tmp_path):
    """After a large array is freed, glibc serves the next ones from its heap, where freeing
    them leaves holes counted in the process's memory (64 MB here); mapped on their own
    (as ``hpcpower run`` has them before writing a whole trace's files), they go back."""
    script = tmp_path / "holes.py"
    script.write_text(_HOLES)
    # glibc's own settings, as a dask cluster started earlier leaves them
    # (MALLOC_TRIM_THRESHOLD_), fix its thresholds too: left out here.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    kept = {
        how: int(
            subprocess.run(
                [sys.executable, str(script), how],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            ).stdout
        )
        for how in ("heap", "mapped")
    }
    assert kept["heap"] >= 48
    assert kept["mapped"] <= 8


def test_large_allocations_are_mapped_only_on_glibc(monkeypatch):
    """Elsewhere than glibc there is no ``mallopt``: nothing is set, and it says so."""
    from hpcpower.results import _memory

    _memory._libc_function.cache_clear()
    try:
        monkeypatch.setattr(_memory.sys, "platform", "darwin")
        assert _memory.map_large_allocations() is False
    finally:
        _memory._libc_function.cache_clear()


def test_allocations_read_a_block_of_jobs_at_a_time_are_the_whole():
    """A run's own storage and a hand-made list: counts and ids of any jobs low:high."""
    jobs = load_workload(DATA / "lublin_256.swf.gz").jobs[:120]
    results = Simulation(load_platform("aoba-64"), jobs, make_policy("snf-ipm"), seed=3).run()
    hand_made = dataclasses.replace(
        results, allocations=[None, np.array([5, 2]), np.array([], dtype=np.intp), np.array([7])]
    )
    assert hand_made.allocation_sizes().tolist() == [0, 2, 0, 1]
    assert [a.tolist() for a in hand_made.allocation_arrays(1, 3)] == [[2, 0], [5, 2]]
    for each in (results, hand_made):
        sizes, flat = each.allocation_arrays()
        assert each.allocation_sizes().tolist() == sizes.tolist()
        n = len(each.allocations)
        blocks = [each.allocation_arrays(low, low + 11) for low in range(0, n, 11)]
        assert np.concatenate([s for s, _ in blocks]).tolist() == sizes.tolist()
        assert np.concatenate([f for _, f in blocks]).tolist() == flat.tolist()
    assert int(results.allocation_sizes().sum()) > 120
