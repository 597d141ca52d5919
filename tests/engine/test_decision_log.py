"""The decision log in columns: rows read back as the notes that went in; any level, one summary."""

from __future__ import annotations

import math
import pickle
import subprocess
import sys
import tempfile

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
@given(NOTES, st.integers(min_value=1, max_value=7), st.sampled_from([None, 0, 1, 3]))
def test_every_row_reads_back_as_the_note_that_went_in(notes, batch, keep):
    log = DecisionLog()
    log.BATCH = batch  # small batches: rows cross many flushes
    log.KEEP_BLOCKS = keep  # and many of their blocks move to the log's file
    log.extend(notes)
    assert len(log) == len(notes)
    for got, want in zip(log, notes, strict=True):
        assert got == want
        assert {k: type(v) for k, v in got.items()} == {k: _python_type(v) for k, v in want.items()}
    assert log.copy() == notes
    missing = object()
    assert list(log.iter_values(KEYS, missing)) == [
        tuple(note.get(key, missing) for key in KEYS) for note in notes
    ]
    if notes:
        assert log[-1] == notes[-1] and log[: len(notes)] == notes
    assert pickle.loads(pickle.dumps(log)) == notes


def _python_type(value):
    return type(value.item()) if isinstance(value, np.generic) else type(value)


def test_floats_keep_their_bits_and_a_column_takes_little_memory():
    values = [math.nan, -0.0, 5e-324, 1.7976931348623157e308, 0.1]
    log = DecisionLog()
    log.extend([{"x": v, "mode": "icon", "ok": True} for v in values * 10_000])
    got = [row["x"] for row in log[:5]]
    assert [math.copysign(1, g) for g in got] == [math.copysign(1, v) for v in values]
    assert math.isnan(got[0]) and got[1:] == values[1:]
    # x changes at every row: a float each. mode and ok never change: in
    # each of the 25 blocks one run, its value (a one-byte string code, a
    # bool) and its start (two bytes: a block has fewer than 32768 rows).
    assert log.nbytes() == 50_000 * 8 + 25 * ((1 + 2) + (1 + 2))


def test_runs_of_equal_values_are_stored_once_and_read_back_in_place():
    """A value kept over many passes (as screen statistics are) costs a run, not a row each."""
    notes = []
    for k in range(10_000):
        note = {"time_s": float(k), "cv": 0.5 if k < 6000 else math.nan, "n": k // 1000}
        if k % 7 == 0:
            note["target"] = None if k % 2 else 3  # absent, None and a value
        notes.append(note)
    log = DecisionLog()
    log.extend(notes)
    assert [repr(row) for row in log] == [repr(note) for note in notes]  # (NaN != NaN)
    assert repr(log[6000]) == repr(notes[6000]) and repr(log[-1]) == repr(notes[-1])
    assert log.column("target")[:15] == [3] + [None] * 13 + [3]
    # time_s a float a row; cv two runs and n ten per block of 2048 rows;
    # target's marks one bit a row.
    assert log.nbytes() < 10_000 * 8 + 10_000 * 2 // 8 + 5 * (2 * 12 + 10 * 12 + 2 * 12 * 8)


def _spilling_log(keep: int | None) -> DecisionLog:
    log = DecisionLog()
    log.BATCH, log.KEEP_BLOCKS = 10, keep
    return log


def test_blocks_beyond_the_kept_ones_move_to_a_file_and_read_back_the_same():
    notes = [{"time_s": k / 3, "mode": "icon" if k % 5 else "fallback", "n": k} for k in range(95)]
    kept, moved = _spilling_log(None), _spilling_log(2)
    kept.extend(notes)
    moved.extend(notes)
    # 9 whole blocks: each time 3 are in memory (more than 2), the 3 move.
    assert (kept.spilled_blocks(), moved.spilled_blocks()) == (0, 9)
    assert moved._file is not None and kept._file is None
    assert list(moved) == notes and moved[37] == notes[37] and moved[-1] == notes[-1]
    keys = kept.keys()
    assert list(moved.csv_lines(keys)) == list(kept.csv_lines(keys))
    assert moved.column("n") == list(range(95)) and moved.nbytes() == kept.nbytes()
    copy = moved.copy()  # (shares the file, which is only appended to)
    moved.extend(notes)
    assert moved.spilled_blocks() == 18 and len(moved) == 190
    assert list(copy) == notes and list(moved) == notes + notes
    restored = pickle.loads(pickle.dumps(moved))
    assert restored._file is None and restored.spilled_blocks() == 0
    assert list(restored) == notes + notes


def test_a_log_whose_file_cannot_be_written_stays_in_memory(monkeypatch):
    def no_room(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", no_room)
    notes = [{"time_s": float(k), "n": k} for k in range(60)]
    log = _spilling_log(1)
    log.extend(notes)
    assert log.spilled_blocks() == 0 and log._file is None
    assert list(log) == notes


def test_a_run_whose_log_moved_to_a_file_writes_the_same_decisions(monkeypatch, tmp_path):
    from hpcpower.results.export import write_decisions_csv

    def run(keep: int | None):
        monkeypatch.setattr(DecisionLog, "BATCH", 64)
        monkeypatch.setattr(DecisionLog, "KEEP_BLOCKS", keep)
        return Simulation.from_scenario(
            "scenarios/paper/markovian.toml", policy__name="snf-icon", workload__first=300
        ).run()

    kept, moved = run(None), run(1)
    assert moved.decisions.spilled_blocks() > 10 and kept.decisions.spilled_blocks() == 0
    write_decisions_csv(kept, tmp_path / "kept.csv")
    write_decisions_csv(moved, tmp_path / "moved.csv")
    assert (tmp_path / "moved.csv").read_bytes() == (tmp_path / "kept.csv").read_bytes()
    assert moved.summary == kept.summary


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
    # Every job the same, to the bit: start, end, nodes.
    tables = {level: r.job_table() for level, r in runs.items()}
    for level in ("changes", "off"):
        assert tables[level].keys() == tables["full"].keys()
        for column, values in tables["full"].items():
            np.testing.assert_array_equal(tables[level][column], values, err_msg=column)
    full, changes = runs["full"].decisions, runs["changes"].decisions
    if policy == "snf-icon":
        assert len(full) == runs["full"].summary["decisions"] > len(changes) > 0
        assert len(runs["off"].decisions) == 0
        did = [row for row in full if row["started"] or row["wakes"] or row["switch_offs"]]
        # The kept rows are those of the full log, value for value (NaN as its text).
        assert [repr(sorted(row.items())) for row in changes] == [
            repr(sorted(row.items())) for row in did
        ]


def test_an_unknown_level_is_an_error_naming_the_choices():
    from hpcpower.errors import InputError

    with pytest.raises(InputError, match="decisions must be one of 'full', 'changes', 'off'"):
        Simulation.from_scenario("scenarios/quickstart.toml", simulation__decisions="some")


#: The issue's target for this run: under 150 MB (about 100 MB measured).
MEMORY_BOUND_MB = 150


def test_a_whole_trace_under_snf_icon_stays_within_its_memory_bound():
    """Full DAS2-fs1 (39,356 jobs, 170,000 passes) under SNF-ICON with the full decision log.

    On the numpy kernels (numba's compiler would add its own, varying, memory
    when its cache is cold), peak RSS was about 350 MB with a dict per pass,
    160 MB with plain columns, and about 100 MB with runs of equal values
    stored once, of which about 35 MB are Python, numpy and SimPy themselves.
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


def test_whole_numbers_take_the_smallest_type_and_come_back_as_ints():
    """Counts (started, waiting, samples) mostly fit a byte; a block's largest sets its type."""
    big = [2**40, -(2**40), 2**63 - 1]
    notes = [{"k": k % 100, "big": big[k % 3], "s": f"t{k % 300}"} for k in range(2048)]
    log = DecisionLog()
    log.extend(notes)
    assert list(log) == notes
    assert all(type(row["k"]) is int and type(row["big"]) is int for row in log)
    part = log._blocks[0].parts
    assert part["k"].values.dtype == np.int8
    assert part["big"].values.dtype == np.int64
    assert part["s"].values.dtype == np.int16  # 300 strings: more than a byte holds


def test_text_rows_are_what_csv_writes_for_the_values():
    """Runs, NaN, -0.0, None, absent keys, mixed kinds and commas, as ``csv`` formats them."""
    import csv
    import io

    notes = []
    for k in range(5000):
        note = {
            "t": float(k // 3),
            "x": [math.nan, -0.0, 0.1, 1e300][k % 4] if k % 11 else None,
            "n": k // 700,
            "ok": k % 5 == 0,
            "why": "cv,lag1" if k % 3 else "accepted",
            "mixed": [1, 2.5, 'say "a"', None, True, "two\nlines", "cr\r", math.nan][k % 8],
        }
        if k % 7 == 0:
            del note["n"]
        notes.append(note)
    log = DecisionLog()
    log.extend(notes)
    keys = log.keys()

    def written(rows) -> str:
        out = io.StringIO(newline="")
        csv.writer(out).writerows(rows)
        return out.getvalue()

    plain = [
        ["" if (v := note.get(key)) is None or v != v else v for key in keys] for note in notes
    ]
    assert written(log.iter_text(keys)) == written(plain)
    # Whole lines, quoted as csv quotes them.
    assert "".join(log.csv_lines(keys)) == written(plain)
    assert "".join(log.csv_lines(["t", "absent"])) == written([[r[0], ""] for r in plain])
    with pytest.raises(ValueError, match="two keys"):
        next(log.csv_lines(["t"]))


@pytest.mark.parametrize("level", ["full", "changes", "off"])
def test_snf_icon_makes_only_the_notes_the_log_keeps(level, monkeypatch):
    """A fallback pass's note is made only if the level keeps it; an ICON pass always makes its own.

    The same decisions at every level (the log's rows at ``"changes"`` are
    tested above); here, which passes paid for a note.
    """
    from hpcpower.policies.icon.controller import SnfIcon

    made = []
    note = SnfIcon._note

    def counted(self, view, *args, **kwargs):
        made.append(view.now)
        return note(self, view, *args, **kwargs)

    monkeypatch.setattr(SnfIcon, "_note", counted)
    sim = Simulation.from_scenario(
        "scenarios/paper/markovian.toml",
        policy__name="snf-icon",
        workload__first=400,
        simulation__decisions=level,
    )
    passes = []  # (mode, acted, has a note)
    sim.on(
        "decision",
        lambda now, d: passes.append(
            (
                sim.policy.last_mode,
                bool(d.start or d.switch_on or d.switch_off),
                d.note is not None,
            )
        ),
    )
    sim.run()
    modes = {mode for mode, _, _ in passes}
    assert modes == {"icon", "fallback"}  # (both kinds of pass occur in this case)
    if level == "full":
        want = [True] * len(passes)
    else:
        want = [mode == "icon" or (level == "changes" and acted) for mode, acted, _ in passes]
    assert [has for _, _, has in passes] == want
    assert len(made) == sum(want)
    kept = {"full": len(passes), "changes": sum(acted for _, acted, _ in passes), "off": 0}
    assert len(sim.decisions) == kept[level]


def test_an_explained_pass_keeps_its_reasons_with_the_log_off():
    """Explanations read the note, so a pass explained makes it whatever the level."""
    sim = Simulation.from_scenario(
        "scenarios/paper/markovian.toml",
        policy__name="snf-icon",
        workload__first=150,
        simulation__decisions="off",
        simulation__explain=True,
    )
    whys = []
    sim.on("decision", lambda now, d: whys.append((sim.policy.last_mode, d.why)))
    sim.run()
    assert len(sim.decisions) == 0
    fallback = [why for mode, why in whys if mode == "fallback"]
    assert fallback and all(why and why[0]["action"] == "mode" for why in fallback)
