"""The decision log in columns: rows read back as the notes that went in; any level, one summary."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcpower import Simulation
from hpcpower.engine.decisionlog import DecisionLog

KEYS = ["time_s", "mode", "n", "ok", "x", "maybe"]
VALUES = st.one_of(
    st.floats(allow_nan=False),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.sampled_from(["icon", "fallback", ""]),
    st.none(),
    st.just(np.float64(2.5)),
    st.just(np.int64(-3)),
)
NOTES = st.lists(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=len(KEYS)), max_size=60)


@settings(max_examples=200, deadline=None)
@given(NOTES, st.integers(min_value=1, max_value=7))
def test_every_row_reads_back_as_the_note_that_went_in(notes, batch):
    log = DecisionLog()
    log.BATCH = batch  # small batches: rows cross many flushes
    log.extend(notes)
    assert len(log) == len(notes)
    for got, want in zip(log, notes, strict=True):
        assert got == want
        assert {k: type(v) for k, v in got.items()} == {k: _python_type(v) for k, v in want.items()}
    assert log.copy() == notes
    if notes:
        assert log[-1] == notes[-1] and log[: len(notes)] == notes


def _python_type(value):
    return type(value.item()) if isinstance(value, np.generic) else type(value)


def test_floats_keep_their_bits_and_a_column_takes_little_memory():
    values = [math.nan, -0.0, 5e-324, 1.7976931348623157e308, 0.1]
    log = DecisionLog()
    log.extend([{"x": v, "mode": "icon", "ok": True} for v in values * 10_000])
    got = [row["x"] for row in log[:5]]
    assert [math.copysign(1, g) for g in got] == [math.copysign(1, v) for v in values]
    assert math.isnan(got[0]) and got[1:] == values[1:]
    assert log.nbytes() == 50_000 * (8 + 4 + 1)  # float, string code, bool


@pytest.mark.parametrize("policy", ["snf-icon", "snf-ipm", "fcfs-easy-ipm"])
def test_the_summary_is_the_same_at_every_level(policy):
    runs = {
        level: Simulation.from_scenario(
            "scenarios/paper/markovian.toml",
            policy__name=policy,
            workload__first=400,
            simulation__decisions=level,
        ).run()
        for level in ("full", "changes", "off")
    }
    summaries = {level: dict(r.summary) for level, r in runs.items()}
    for summary in summaries.values():
        summary.pop("config")
    assert summaries["full"] == summaries["changes"] == summaries["off"]
    full, changes = runs["full"].decisions, runs["changes"].decisions
    if policy == "snf-icon":
        assert len(full) == runs["full"].summary["decisions"] > len(changes) > 0
        assert len(runs["off"].decisions) == 0
        did = [row for row in full if row["started"] or row["wakes"] or row["switch_offs"]]
        assert [row["time_s"] for row in changes] == [row["time_s"] for row in did]


def test_an_unknown_level_is_an_error_naming_the_choices():
    from hpcpower.errors import InputError

    with pytest.raises(InputError, match="decisions must be one of 'full', 'changes', 'off'"):
        Simulation.from_scenario("scenarios/quickstart.toml", simulation__decisions="some")


MEMORY_BOUND_MB = 250


def test_a_whole_trace_under_snf_icon_stays_within_its_memory_bound():
    """Full DAS2-fs1 (39,356 jobs, 170,000 passes) under SNF-ICON with the full decision log.

    On the numpy kernels (numba's compiler would add its own, varying, memory
    when its cache is cold), peak RSS was about 350 MB with a dict per pass;
    the columns bring it to about 160 MB, of which about 35 MB are Python,
    numpy and SimPy themselves.
    """
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forked
    # copy of this (large) test process, so the child would report our size.
    code = (
        "from hpcpower import Simulation, load_platform, load_workload, make_policy\n"
        "w = load_workload('scenarios/data/DAS2-fs1-2003-1.swf.gz')\n"
        "p = make_policy('snf-icon')\n"
        "r = Simulation(load_platform('aoba-64'), w, p, seed=42, kernels='numpy').run()\n"
        "assert r.summary['jobs_completed'] == 39356\n"
        "status = open('/proc/self/status').read().split('VmHWM:')[1].split()\n"
        "print(int(status[0]) // 1024)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) < MEMORY_BOUND_MB
