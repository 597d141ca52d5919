"""SWF reader: hand-written tiny traces in tmp_path."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpcpower.errors import InputError
from hpcpower.workload import read_swf
from hpcpower.workload.swf import REASON_CANCELLED, REASON_NO_PROCS, REASON_NO_REQTIME

HEADER = """\
; Version: 2.2
;      MaxNodes: 32 (dual CPU)
;      MaxProcs: 64
;
"""


def rec(
    job: int,
    submit: float,
    run: float,
    alloc: int,
    reqtime: float = 3600,
    reqprocs: int | None = None,
    status: int = 1,
    user: int = 7,
) -> str:
    """One 18-field SWF line."""
    reqprocs = alloc if reqprocs is None else reqprocs
    fields = [job, submit, 0, run, alloc, -1, -1, reqprocs, reqtime, -1, status, user]
    fields += [-1, -1, 1, -1, -1, -1]
    return " ".join(str(f) for f in fields) + "\n"


def write(tmp_path: Path, text: str, name: str = "t.swf") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


# A small trace: header is lines 1-4, so job k (1-based record) is on line 4 + k.
BASIC = (
    HEADER
    + rec(1, 100, 50, 4)  # line 5
    + rec(2, 110, -1, -1, reqtime=-1, reqprocs=-1)  # line 6: cancelled
    + rec(3, 120, 0, 2)  # line 7: zero runtime
    + rec(4, 130, 30, 3, reqtime=-1)  # line 8: reqtime missing
    + rec(5, 140, 10, -1, reqprocs=5)  # line 9: allocated missing -> requested
    + rec(6, 150, 10, -1, reqprocs=-1)  # line 10: no processors at all
    + rec(7, 160, 20, 64)  # line 11
)


def test_header_max_procs_wins_and_leading_integer_is_read(tmp_path):
    w = read_swf(write(tmp_path, BASIC))
    assert w.max_nodes == 64
    assert any("MaxProcs 64" in n for n in w.notes)
    assert read_swf(write(tmp_path, BASIC), procs_per_node=2).max_nodes == 32
    assert read_swf(write(tmp_path, BASIC), procs_per_node=3).max_nodes == 22


def test_header_max_nodes_used_without_max_procs(tmp_path):
    w = read_swf(write(tmp_path, "; MaxNodes: 256\n" + rec(1, 0, 5, 1)), procs_per_node=4)
    assert w.max_nodes == 256
    w = read_swf(write(tmp_path, "; Version: 2\n" + rec(1, 0, 5, 1)))
    assert w.max_nodes is None


def test_header_bad_value_names_file_and_line(tmp_path):
    p = write(tmp_path, "; Version: 2\n; MaxProcs: many\n" + rec(1, 0, 5, 1))
    with pytest.raises(InputError, match="MaxProcs") as e:
        read_swf(p)
    assert f"{p}:2" in str(e.value)


def test_cancelled_dropped_with_line_and_reason(tmp_path):
    w = read_swf(write(tmp_path, BASIC))
    assert [j.name for j in w.jobs] == ["1", "3", "4", "5", "7"]
    cancelled = [d for d in w.dropped if d.reason == REASON_CANCELLED]
    assert [(d.where, d.name) for d in cancelled] == [("t.swf:6", "2")]
    assert any("cancelled: runtime -1" in n for n in w.notes)


def test_no_processor_count_dropped(tmp_path):
    w = read_swf(write(tmp_path, BASIC))
    assert [(d.where, d.name, d.reason) for d in w.dropped if d.reason == REASON_NO_PROCS] == [
        ("t.swf:10", "6", REASON_NO_PROCS)
    ]


def test_zero_runtime_kept(tmp_path):
    w = read_swf(write(tmp_path, BASIC))
    job3 = next(j for j in w.jobs if j.name == "3")
    assert job3.runtime_s == 0.0
    assert any("1 jobs with runtime 0 kept" in n for n in w.notes)


def test_allocated_missing_uses_requested(tmp_path):
    w = read_swf(write(tmp_path, BASIC))
    assert next(j for j in w.jobs if j.name == "5").res == 5
    assert any("requested (field 8) used for 1 jobs" in n for n in w.notes)


def test_reqtime_minus_one_filled_with_runtime(tmp_path):
    w = read_swf(write(tmp_path, BASIC))
    job4 = next(j for j in w.jobs if j.name == "4")
    assert job4.reqtime_s == job4.runtime_s == 30.0
    assert any("filled with the runtime for 1 jobs" in n for n in w.notes)


def test_reqtime_fill_rule_options(tmp_path):
    p = write(tmp_path, BASIC)
    w = read_swf(p, on_missing_reqtime=900)
    assert next(j for j in w.jobs if j.name == "4").reqtime_s == 900.0
    w = read_swf(p, on_missing_reqtime="drop")
    assert "4" not in [j.name for j in w.jobs]
    assert [d.where for d in w.dropped if d.reason == REASON_NO_REQTIME] == ["t.swf:8"]
    with pytest.raises(InputError) as e:
        read_swf(p, on_missing_reqtime="error")
    assert f"{p}:8" in str(e.value)
    with pytest.raises(InputError, match="on_missing_reqtime"):
        read_swf(p, on_missing_reqtime="guess")


def test_procs_per_node_rounds_up(tmp_path):
    text = rec(1, 0, 5, 1) + rec(2, 1, 5, 3) + rec(3, 2, 5, 4) + rec(4, 3, 5, 9)
    w = read_swf(write(tmp_path, text), procs_per_node=2)
    assert [j.res for j in w.jobs] == [1, 2, 2, 5]
    assert any("ceil(processors / 2); 3 jobs rounded up" in n for n in w.notes)
    assert [j.res for j in read_swf(write(tmp_path, text)).jobs] == [1, 3, 4, 9]
    with pytest.raises(InputError, match="procs_per_node"):
        read_swf(write(tmp_path, text), procs_per_node=0)


def test_segment_first_counts_kept_jobs(tmp_path):
    w = read_swf(write(tmp_path, BASIC), first=2)
    assert [j.name for j in w.jobs] == ["1", "3"]
    # The cancelled record lies between kept jobs 1 and 2, so it belongs to this segment.
    assert [d.name for d in w.dropped] == ["2"]
    assert any(n.startswith("segment: kept jobs 1..2 of 5") for n in w.notes)


def test_segment_jobs_i_j_and_drop_attribution(tmp_path):
    p = write(tmp_path, BASIC)
    w = read_swf(p, jobs=(2, 4), shift_to_zero=False)
    assert [j.name for j in w.jobs] == ["3", "4", "5"]
    assert [d.name for d in w.dropped] == ["2"]
    tail = read_swf(p, jobs=(5, 5))
    assert [j.name for j in tail.jobs] == ["7"]
    assert [d.name for d in tail.dropped] == ["6"]
    head = read_swf(p, jobs=(1, 1))
    assert head.dropped == []
    # Consecutive segments partition the drops.
    parts = [read_swf(p, jobs=(1, 1)), read_swf(p, jobs=(2, 4)), read_swf(p, jobs=(5, 5))]
    assert [d for s in parts for d in s.dropped] == read_swf(p).dropped


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"first": 6}, "only 5 kept jobs"),
        ({"jobs": (4, 6)}, "only 5 kept jobs"),
        ({"jobs": (0, 2)}, "1 <= i <= j"),
        ({"jobs": (3, 2)}, "1 <= i <= j"),
        ({"first": 0}, "positive integer"),
        ({"first": 2, "jobs": (1, 2)}, "not both"),
        ({"jobs": 3}, "pair"),
    ],
)
def test_bad_segments(tmp_path, kwargs, match):
    with pytest.raises(InputError, match=match):
        read_swf(write(tmp_path, BASIC), **kwargs)


def test_time_shift_subtracts_first_kept_submit(tmp_path):
    p = write(tmp_path, BASIC)
    w = read_swf(p)
    assert [j.submit_s for j in w.jobs] == [0.0, 20.0, 30.0, 40.0, 60.0]
    assert any("subtracted 100 s" in n and "line 5" in n for n in w.notes)
    w = read_swf(p, jobs=(2, 3))
    assert [j.submit_s for j in w.jobs] == [0.0, 10.0]
    w = read_swf(p, shift_to_zero=False)
    assert w.jobs[0].submit_s == 100.0
    assert not any("shift" in n for n in w.notes)


def test_sorted_by_submit_then_file_order(tmp_path):
    text = rec(10, 50, 1, 1) + rec(11, 20, 1, 1) + rec(12, 50, 1, 2) + rec(13, 20, 1, 2)
    w = read_swf(write(tmp_path, text))
    assert [j.name for j in w.jobs] == ["11", "13", "10", "12"]
    assert [j.id for j in w.jobs] == [0, 1, 2, 3]
    assert [j.submit_s for j in w.jobs] == [0.0, 0.0, 30.0, 30.0]
    assert any("not in submit order" in n for n in w.notes)
    assert w.jobs[0].user_id == 7


@pytest.mark.parametrize("name", ["t.swf.gz", "t.data"])
def test_gzip_detected_by_magic_bytes(tmp_path, name):
    p = tmp_path / name
    p.write_bytes(gzip.compress(BASIC.encode()))
    w = read_swf(p)
    assert len(w) == 5
    assert w.dropped[0].where == f"{name}:6"


def test_blank_and_inner_comment_lines_keep_line_numbers(tmp_path):
    text = HEADER + "\n" + rec(1, 0, 5, 1) + "; a comment\n   \n" + rec(2, 3, -1, 1)
    w = read_swf(write(tmp_path, text))
    assert w.dropped[0].where == "t.swf:9"


def test_header_only_gives_empty_workload(tmp_path):
    w = read_swf(write(tmp_path, HEADER))
    assert len(w) == 0
    assert w.max_nodes == 64


@pytest.mark.parametrize(
    "bad, match",
    [
        (" ".join(["1"] * 17) + "\n", "expected 18 whitespace-separated fields, found 17"),
        (" ".join(["1"] * 19) + "\n", "found 19"),
        (rec(9, 0, 5, 1).replace(" 5 ", " 5x ", 1), "field 4 \\(run time\\) is not a number"),
        (rec(9, 0, 5, 1).replace(" 5 ", " nan ", 1), "field 4 \\(run time\\) is not a number"),
        (rec(9, 0, -5, 1), "field 4 \\(run time\\) must be >= 0 or -1"),
        (rec(9, -3, 5, 1), "field 2 \\(submit time\\) must be >= 0 or -1"),
        (rec(9, 0, 5, 1, reqtime=-2), "field 9 \\(requested time\\)"),
        (rec(9, 0, 5, 1.5), "field 5 \\(allocated processors\\) must be an integer"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path, bad, match):
    p = write(tmp_path, HEADER + rec(1, 0, 5, 1) + bad + rec(3, 9, 5, 1))
    with pytest.raises(InputError, match=match) as e:
        read_swf(p)
    assert f"{p}:6" in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such workload file"):
        read_swf(tmp_path / "nope.swf")


def test_damaged_gzip(tmp_path):
    p = tmp_path / "t.swf.gz"
    p.write_bytes(gzip.compress(BASIC.encode())[:40])
    with pytest.raises(InputError, match="gzip"):
        read_swf(p)


row = st.tuples(
    st.integers(0, 50),  # submit increment
    st.sampled_from([-1, 0, 1, 100]),  # runtime
    st.sampled_from([-1, 1, 3, 8]),  # allocated procs
    st.sampled_from([-1, 2, 8]),  # requested procs
    st.sampled_from([-1, 60, 3600]),  # requested time
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=st.lists(row, min_size=1, max_size=25), ppn=st.integers(1, 4), data=st.data())
def test_property_kept_plus_dropped_and_segments_partition(tmp_path, rows, ppn, data):
    submit, lines = 0, []
    for k, (inc, run, alloc, reqp, reqt) in enumerate(rows, start=1):
        submit += inc
        lines.append(rec(k, submit, run, alloc, reqtime=reqt, reqprocs=reqp))
    p = write(tmp_path, "".join(lines), "prop.swf")
    full = read_swf(p, procs_per_node=ppn)
    assert len(full) + len(full.dropped) == len(rows)
    assert [j.id for j in full.jobs] == list(range(len(full)))
    assert all(j.res >= 1 and j.reqtime_s >= 0 for j in full.jobs)
    if full.jobs:
        assert full.jobs[0].submit_s == 0.0
        cut = data.draw(st.integers(1, len(full)))
        a = read_swf(p, procs_per_node=ppn, first=cut, shift_to_zero=False)
        b = (
            read_swf(p, procs_per_node=ppn, jobs=(cut + 1, len(full)), shift_to_zero=False)
            if cut < len(full)
            else None
        )
        names = [j.name for j in a.jobs] + ([j.name for j in b.jobs] if b else [])
        assert names == [j.name for j in full.jobs]
        drops = a.dropped + (b.dropped if b else [])
        assert drops == full.dropped


def test_missing_submit_time_dropped_and_oversized_jobs_noted(tmp_path):
    text = HEADER + rec(1, 0, 5, 1) + rec(2, -1, 5, 1) + rec(3, 9, 5, 65)
    w = read_swf(write(tmp_path, text))
    assert [(d.where, d.reason) for d in w.dropped] == [("t.swf:6", "missing submit time: -1")]
    assert any("1 jobs request more than max_nodes = 64" in n for n in w.notes)


def test_partial_executions_with_a_summary_record_are_one_job(tmp_path):
    """Preemption: Double: a summary record (status 1) and its partial records (2, 3)."""
    text = (
        HEADER.replace(";\n", ";     Preemption: Double\n", 1)
        + rec(1, 100, 50, 4)  # line 5
        + rec(2, 110, 300, 2, status=1)  # line 6: the summary record
        + rec(2, 110, 100, 2, status=2)  # line 7: first partial execution
        + rec(2, 400, 200, 2, status=3)  # line 8: last partial execution
        + rec(3, 120, 10, 1)  # line 9
    )
    w = read_swf(write(tmp_path, text))
    assert [j.name for j in w.jobs] == ["1", "2", "3"]
    assert [j.runtime_s for j in w.jobs] == [50.0, 300.0, 10.0]
    assert [(d.where, d.name) for d in w.dropped] == [("t.swf:7", "2"), ("t.swf:8", "2")]
    assert all(d.reason == "partial execution: the job's summary record is kept" for d in w.dropped)
    assert "1 jobs given with partial executions: their summary records kept" in w.notes


def test_partial_executions_alone_are_merged_into_one_job(tmp_path):
    """Preemption: Yes: only partial records; the job runs their total time."""
    text = (
        HEADER
        + rec(5, 100, 60, 2, status=2)  # line 5
        + rec(5, 300, 30, 2, status=2)  # line 6
        + rec(5, 500, 10, 2, status=3)  # line 7
        + rec(6, 150, 20, 1)  # line 8
    )
    w = read_swf(write(tmp_path, text))
    assert [(j.name, j.submit_s, j.runtime_s) for j in w.jobs] == [
        ("5", 0.0, 100.0),
        ("6", 50.0, 20.0),
    ]
    assert [d.where for d in w.dropped] == ["t.swf:6", "t.swf:7"]
    assert all(
        d.reason == "partial execution: merged into the job's first record" for d in w.dropped
    )


def test_a_repeated_job_number_names_both_lines(tmp_path):
    text = HEADER + rec(1, 100, 50, 4) + rec(2, 110, 5, 1) + rec(1, 120, 5, 1)
    with pytest.raises(InputError, match=r"t.swf:5 and line 7: job number 1 appears twice"):
        read_swf(write(tmp_path, text))


@pytest.mark.parametrize("field,value", [(0, "1e30"), (1, "9007199254740993"), (3, "1e20")])
def test_a_number_beyond_2_53_is_an_error_naming_the_field(tmp_path, field, value):
    fields = rec(1, 100, 50, 4).split()
    fields[field] = value
    with pytest.raises(InputError, match=rf"t.swf:5: field {field + 1} .* 2\*\*53 or beyond"):
        read_swf(write(tmp_path, HEADER + " ".join(fields) + "\n"))


def test_the_header_clock_is_kept_so_absolute_time_can_be_recovered(tmp_path):
    text = (
        "; UnixStartTime: 1041377305\n; TimeZoneString: Europe/Amsterdam\n"
        + rec(1, 100, 50, 4)
        + rec(2, 160, 5, 1)
    )
    w = read_swf(write(tmp_path, text))
    assert w.time_origin == {
        "unix_start_time": 1041377305,
        "time_zone": "Europe/Amsterdam",
        "shift_s": 100.0,
    }
    # The second job arrived 160 s after the trace's start.
    assert w.time_origin["unix_start_time"] + w.time_origin["shift_s"] + w.jobs[1].submit_s == (
        1041377305 + 160
    )
    assert read_swf(write(tmp_path, HEADER + rec(1, 100, 50, 4), "plain.swf")).time_origin == {}
