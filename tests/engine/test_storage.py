"""The compact stores read back exactly what a list of arrays or of tuples held."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from conftest import job, tiny_platform

from hpcpower import Simulation, load_platform, load_workload, make_policy
from hpcpower.engine import storage
from hpcpower.engine.storage import CountRows, Gangs, Rows
from hpcpower.states import NodeState


def test_gangs_read_back_as_allocated_in_order_and_read_only():
    gangs = Gangs(4, 300)  # node ids above 255: two bytes each
    first = np.array([299, 3, 7], dtype=np.intp)
    gangs.put(0, first)
    gangs.put(2, np.array([5], dtype=np.intp))
    assert gangs[0] is first  # while running: the allocated array itself
    gangs.seal(0)
    gangs.seal(2)
    assert gangs[0] is first  # until the ended gangs move together
    gangs.settle()
    assert gangs[0].tolist() == [299, 3, 7] and gangs[0].dtype == np.intp
    assert gangs[2].tolist() == [5]
    assert gangs[1] is None and gangs[3] is None and gangs[-1] is None
    with pytest.raises(ValueError, match="read-only"):
        gangs[0][0] = 1
    with pytest.raises(IndexError):
        gangs[4]
    assert len(gangs) == 4
    assert [None if g is None else g.tolist() for g in gangs] == [[299, 3, 7], None, [5], None]
    assert [g.tolist() for g in gangs[0:3:2]] == [[299, 3, 7], [5]]


def test_gangs_keep_a_gang_of_another_dtype_as_it_is_and_grow_past_their_capacity():
    gangs = Gangs(3, 10, capacity=1)
    gangs.settle()  # (nothing sealed yet)
    own = np.array([1, 2], dtype=np.int32)
    gangs.put(0, own)
    big = np.arange(10, dtype=np.intp)[::-1]
    for j in (0, 1, 2):
        gangs.put(j, big if j else own)
        gangs.seal(j)
        gangs.settle()
    assert gangs[0] is own
    assert gangs[1].tolist() == gangs[2].tolist() == list(range(9, -1, -1))


@pytest.mark.parametrize(("gather", "n_nodes"), [(3, 300), (8192, 300), (50, 70_000)])
def test_gangs_in_job_order_are_every_gang_read_in_turn(gather, n_nodes, monkeypatch):
    """Sealed (in end order), running, unsettled and kept gangs, and jobs that never started;
    node ids in four bytes past 65,536 nodes (then read as int64)."""
    monkeypatch.setattr(storage, "_GATHER_JOBS", gather)
    rng = np.random.default_rng(7)
    gangs = Gangs(600, n_nodes)
    for job_id in rng.permutation(600).tolist():
        if job_id % 10 == 0:
            continue  # never started
        dtype = np.int32 if job_id % 37 == 0 else np.intp
        gang = rng.choice(n_nodes, size=rng.integers(1, 40), replace=False).astype(dtype)
        gangs.put(job_id, gang)
        if job_id % 7:
            gangs.seal(job_id)
    counts, flat = gangs.job_order()
    assert flat.dtype == (np.int32 if n_nodes <= 65_536 else np.int64)
    offsets = np.cumsum(counts) - counts
    for job_id in range(600):
        gang = gangs[job_id]
        assert counts[job_id] == (0 if gang is None else len(gang))
        if gang is not None:
            assert flat[offsets[job_id] : offsets[job_id] + len(gang)].tolist() == gang.tolist()
    # A block of jobs at a time: the same, block after block; past the end, nothing.
    blocks = [gangs.job_order(low, low + 37) for low in range(0, 600, 37)]
    assert np.concatenate([c for c, _ in blocks]).tolist() == counts.tolist()
    assert np.concatenate([f for _, f in blocks]).tolist() == flat.tolist()
    assert all(f.dtype == flat.dtype for _, f in blocks)
    assert gangs.job_order(590, 900)[0].tolist() == counts[590:].tolist()
    assert gangs.job_order(700, 900)[0].size == gangs.job_order(700, 900)[1].size == 0
    assert gangs.counts().tolist() == counts.tolist()
    assert Gangs(0, 4).job_order()[1].size == 0


def test_a_copy_of_gangs_does_not_see_later_seals_and_equality_is_by_content():
    gangs = Gangs(2, 4)
    gangs.put(0, np.array([1, 0], dtype=np.intp))
    gangs.put(1, np.array([3], dtype=np.intp))
    gangs.seal(1)
    gangs.settle()
    before = gangs.copy()
    gangs.seal(0)
    gangs.settle()
    assert before[0].tolist() == [1, 0] and before[1].tolist() == [3]
    assert before == gangs == [np.array([1, 0]), np.array([3])]
    assert gangs != [np.array([1, 0]), None]
    assert repr(gangs) == repr([np.array([1, 0]), np.array([3])])


@pytest.mark.parametrize("batch", [1, 2, 1024])
def test_rows_read_back_as_tuples_of_python_numbers(batch, monkeypatch):
    monkeypatch.setattr(storage, "_BATCH", batch)
    rows = Rows("qbdd")
    expected = [(3, 1, 0.0, 100.5), (0, 4, 2.5, 3.0), (70000, 1, 4.0, 5.0)]
    for row in expected:
        rows.append(row)
    assert rows == expected and expected == rows and list(rows) == expected
    assert rows[1] == expected[1] and rows[-1] == expected[-1] and rows[:2] == expected[:2]
    assert [type(v) for v in rows[0]] == [int, int, float, float]
    assert rows != expected[:2] and rows != [*expected[:2], (70000, 1, 4.0, 5.5)]
    assert np.array_equal(np.asarray(rows), np.array(expected))
    assert rows.column(0).dtype == np.int64 and rows.column(3).dtype == float
    twin = rows.copy()
    rows.append((1, 1, 9.0, 10.0))
    assert twin == expected and len(rows) == 4 and rows[3] == (1, 1, 9.0, 10.0)
    assert repr(twin) == repr(expected)
    assert np.asarray(Rows("dd")).shape == (0, 2) and Rows("dd") == []


def test_rows_views_are_each_column_read_only_without_a_copy():
    rows = Rows("qbdd", [(3, 1, 0.0, 100.5), (0, 4, 2.5, 3.0)])
    rows.append((70000, 1, 4.0, 5.0))
    node, state, start, end = rows.views()
    assert rows.codes == "qbdd"
    assert [v.dtype for v in (node, state, start, end)] == [np.int64, np.int8, float, float]
    assert node.tolist() == [3, 0, 70000] and end.tolist() == [100.5, 3.0, 5.0]
    assert not node.flags.writeable and not end.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        start[0] = 1.0
    assert all(v.shape == (0,) for v in Rows("qd").views())


def test_count_rows_of_a_machine_under_32768_nodes_take_two_bytes_a_count():
    rows = [(float(t), t % 7, 1152 - t % 7, 0, 0, 0) for t in range(1000)]
    small, large = CountRows(5, largest=1152), CountRows(5, largest=50_000)
    for table in (small, large):
        for t, *counts in rows:
            table.append(t, counts)
        assert table == rows and table.copy() == rows
        assert np.array_equal(np.asarray(table), np.array(rows))
    assert small._counts.itemsize == 2 and small.copy()._counts.itemsize == 2
    assert large._counts.itemsize == 4
    large.append(1e6, [50_000, 0, 0, 0, 0])
    with pytest.raises(OverflowError):  # (a count beyond the stated largest)
        small.append(1e6, [40_000, 0, 0, 0, 0])
        small.append(1e6 + 1, [0, 0, 0, 0, 0])


def test_count_rows_views_are_the_times_and_each_count_column_read_only():
    rows = CountRows(3, largest=1152)
    for k in range(4):
        rows.append(float(k) / 2, [k, 10 + k, 20 + k])
    times, a, b, c = rows.views()  # (the last row settled into the arrays first)
    assert times.tolist() == [0.0, 0.5, 1.0, 1.5] and c.tolist() == [20, 21, 22, 23]
    assert a.dtype == np.int16 and b.tolist() == [10, 11, 12, 13]
    assert not times.flags.writeable and not b.flags.writeable
    assert [v.shape for v in CountRows(2).views()] == [(0,), (0,), (0,)]


def test_count_rows_read_back_as_tuples_of_python_numbers():
    rows = CountRows(5)
    rows.append(0.0, [1, 2, 3, 4, 5])
    rows.append(1.5, [0, 0, 15, 0, 0])
    rows.replace_last(2.5, [0, 1, 14, 0, 0])
    expected = [(0.0, 1, 2, 3, 4, 5), (2.5, 0, 1, 14, 0, 0)]
    assert rows == expected and expected == rows and list(rows) == expected
    assert rows[1] == expected[1] and rows[-1] == expected[-1] and rows[:1] == expected[:1]
    assert rows[::-1] == expected[::-1]
    with pytest.raises(IndexError):
        rows[2]
    assert [type(v) for v in rows[0]] == [float, int, int, int, int, int]
    assert rows != expected[:1] and rows != [(0.0, 1, 2, 3, 4, 5), (2.5, 0, 1, 14, 0, 1)]
    assert np.array_equal(np.asarray(rows), np.array(expected))
    assert np.asarray(rows).dtype == np.array(expected).dtype
    assert rows.column(0).dtype == float and rows.column(3).dtype == np.int64
    assert rows.column(3).tolist() == [3, 14]
    twin = rows.copy()
    rows.append(3.0, [0, 0, 15, 0, 0])
    assert twin == expected and len(rows) == 3 and rows == Rows("diiiii", [*expected, rows[2]])
    assert repr(twin) == repr(expected)


def test_count_rows_replace_their_last_row_after_a_read_or_a_copy():
    rows = CountRows(2)
    rows.append(0.0, [1, 1])
    rows.append(1.0, [0, 2])
    assert rows[-1] == (1.0, 0, 2)  # (a read moves the last row into the arrays)
    rows.replace_last(1.0, [2, 0])
    twin = rows.copy()
    rows.replace_last(1.0, [1, 1])
    assert rows == [(0.0, 1, 1), (1.0, 1, 1)] and twin == [(0.0, 1, 1), (1.0, 2, 0)]
    with pytest.raises(IndexError, match="no row to replace"):
        CountRows(2).replace_last(0.0, [0, 0])


def _old_state_rows(sim: Simulation) -> list[tuple]:
    """The state rows as the engine kept them before (a list of tuples), from listeners."""
    rows: list[tuple] = []

    def record(*_args) -> None:
        now, counts = sim.env.now, tuple(sim.cluster.counts)
        if rows and rows[-1][0] == now:
            rows[-1] = (now, *counts)
        elif not rows or counts != rows[-1][1:]:
            rows.append((now, *counts))

    sim.on("decision", record)
    return rows


@pytest.mark.parametrize("policy", ["fcfs-easy", "snf-icon"])
def test_a_run_stores_the_same_allocations_and_state_rows_as_lists_did(policy, monkeypatch):
    # Small batches, so that rows and gangs move to their columns many times.
    monkeypatch.setattr(storage, "_BATCH", 7)
    workload = load_workload("scenarios/data/DAS2-fs1-0-3000.json.gz")
    workload.jobs[:] = workload.jobs[:600]
    sim = Simulation(load_platform("aoba-64"), workload, make_policy(policy), seed=42)
    started: dict[int, list[int]] = {}
    sim.on("job_start", lambda t, j, nodes: started.__setitem__(j.id, nodes.tolist()))
    rows = _old_state_rows(sim)
    switches: list[list] = []
    ends: dict[int, list] = {}

    def changed(t, node, old, new):
        if new in (NodeState.SWITCHING_ON, NodeState.SWITCHING_OFF):
            ends[node] = [node, int(new), t, None]
            switches.append(ends[node])
        elif old in (NodeState.SWITCHING_ON, NodeState.SWITCHING_OFF):
            ends.pop(node)[3] = t

    sim.on("node_state", changed)
    res = sim.run()
    assert res.transitions == [tuple(row) for row in switches]
    assert (len(res.transitions) > 0) == (policy == "snf-icon")
    # The end of the run records one more row (no pass follows it).
    last = (sim.env.now, *sim.cluster.counts)
    if rows[-1][0] == last[0]:
        rows[-1] = last
    elif last[1:] != rows[-1][1:]:
        rows.append(last)
    assert res.state_counts == rows
    assert [None if g is None else g.tolist() for g in res.allocations] == [
        started.get(i) for i in range(len(workload.jobs))
    ]
    assert all(g.dtype == np.intp and not g.flags.writeable for g in res.allocations)
    table = res.to_pandas("states")
    assert table.to_numpy().tolist() == [list(r) for r in rows]
    assert [str(t) for t in table.dtypes] == ["float64"] + ["int64"] * 5


def test_a_record_taken_mid_run_keeps_what_it_saw():
    jobs = [job(0, 0, 1, 10), job(1, 5, 2, 10)]
    sim = Simulation(tiny_platform(2), jobs, make_policy("fcfs-easy"))
    sim.run(until=12)
    mid = sim.results()
    sim.run()
    assert mid.allocations[0].tolist() == sim.gangs[0].tolist()
    assert len(mid.state_counts) < len(sim.results().state_counts)
    assert mid.state_counts[-1][0] <= 12 and not math.isnan(mid.state_counts[-1][0])
    assert mid.state_counts[-1][1 + NodeState.COMPUTING] >= 1


def test_a_run_read_between_its_steps_goes_on_as_if_never_read():
    # Reading the results or explaining a node mid-run copies the state rows
    # while later passes at the same instant may still replace the last one.
    def make() -> Simulation:
        workload = load_workload("scenarios/data/DAS2-fs1-0-3000.json.gz")
        workload.jobs[:] = workload.jobs[:50]
        return Simulation(
            load_platform("aoba-64"), workload, make_policy("snf-ipm"), seed=42, explain=True
        )

    whole = make().run()
    sim = make()
    while not sim.finished:
        sim.step()
        sim.results()
        sim.explain(node=3)
    read = sim.results()
    assert read.state_counts == whole.state_counts
    assert read.summary == whole.summary


#: Peak memory a run may add per job (bytes): the job, its gang, its share of
#: the state rows and of the results. About 520 measured on the runs below
#: (Markovian jobs on AOBA-64, about 3 passes a job); with a numpy array per
#: gang and a tuple of Python numbers per state row it was about 930.
BYTES_PER_JOB_BOUND = 750


def _peak_mb(n_jobs: int) -> float:
    """Peak memory (VmHWM, MB) of a fresh process that runs ``n_jobs`` Markovian jobs."""
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forked
    # copy of this (large) test process.
    code = (
        "from hpcpower import Simulation, load_platform, make_policy\n"
        "from hpcpower.workload import markovian\n"
        f"w = markovian({n_jobs}, seed=43)\n"
        "p = make_policy('fcfs-easy')\n"
        "r = Simulation(load_platform('aoba-64'), w, p, seed=42, kernels='numpy').run()\n"
        f"assert r.summary['jobs_completed'] == {n_jobs}\n"
        "status = open('/proc/self/status').read().split('VmHWM:')[1].split()\n"
        "print(int(status[0]) / 1024)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return float(done.stdout)


def test_the_peak_memory_of_a_run_grows_by_less_than_a_kilobyte_a_job():
    """The slope between two run sizes: what a job costs, whatever the fixed part."""
    small, large = 20_000, 80_000
    slope = (_peak_mb(large) - _peak_mb(small)) * 2**20 / (large - small)
    assert slope < BYTES_PER_JOB_BOUND
