"""JSON readers, load_workload dispatch and trace_info, on small files in tmp_path."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from hpcpower.errors import InputError
from hpcpower.scenario import resolve, simulation_args
from hpcpower.workload import Job, load_workload, read_batsim_json, read_spars_json, trace_info
from hpcpower.workload._io import make_jobs


def spars_job(i: int, **over) -> dict:
    job = {
        "job_id": i,
        "res": 4,
        "subtime": 10 * i,
        "reqtime": 600,
        "runtime": 300,
        "profile": "100",
        "user_id": 3,
    }
    job.update(over)
    return job


def batsim_doc(jobs: list[dict], profiles: dict | None = None) -> dict:
    if profiles is None:
        profiles = {"d100": {"type": "delay", "delay": 100}}
    return {"nb_res": 16, "jobs": jobs, "profiles": profiles}


def dump(tmp_path: Path, obj: object, name: str = "w.json") -> Path:
    p = tmp_path / name
    data = json.dumps(obj).encode()
    p.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return p


# --- paper (SPARS) JSON ---------------------------------------------------------------


def test_spars_reads_fields_and_sorts(tmp_path):
    doc = {"nb_res": 64, "jobs": [spars_job(1, subtime=50), spars_job(2, subtime=5)]}
    w = read_spars_json(dump(tmp_path, doc))
    assert w.max_nodes == 64
    assert [(j.id, j.name, j.submit_s) for j in w.jobs] == [(0, "2", 5.0), (1, "1", 50.0)]
    j = w.jobs[0]
    assert (j.res, j.reqtime_s, j.runtime_s, j.user_id) == (4, 600.0, 300.0, 3)
    assert isinstance(j.submit_s, float)
    assert w.dropped == []


def test_spars_gz_and_procs_per_node(tmp_path):
    doc = {"nb_res": 64, "jobs": [spars_job(1, res=3), spars_job(2, res=8)]}
    w = read_spars_json(dump(tmp_path, doc, "w.json.gz"), procs_per_node=2)
    assert [j.res for j in w.jobs] == [2, 4]
    assert w.max_nodes == 32
    assert any("1 jobs rounded up" in n for n in w.notes)


def test_spars_accepts_id_and_missing_user(tmp_path):
    job = spars_job(1)
    del job["job_id"], job["user_id"]
    job["id"] = "a1"
    w = read_spars_json(dump(tmp_path, {"nb_res": 8, "jobs": [job]}))
    assert (w.jobs[0].name, w.jobs[0].user_id) == ("a1", -1)


@pytest.mark.parametrize(
    "override, message",
    [
        ({"runtime": None}, "jobs[1].runtime: must be a number, got None"),
        ({"runtime": -1}, "jobs[1].runtime: must be >= 0, got -1"),
        ({"subtime": "10"}, "jobs[1].subtime: must be a number"),
        ({"res": 0}, "jobs[1].res: must be >= 1, got 0"),
        ({"res": 2.5}, "jobs[1].res: must be an integer, got 2.5"),
        ({"res": True}, "jobs[1].res: must be an integer"),
        ({"user_id": "bob"}, "jobs[1].user_id: must be an integer"),
        ({"job_id": 1}, "jobs[1].job_id: '1' already used by jobs[0]"),
    ],
)
def test_spars_bad_field_named(tmp_path, override, message):
    p = dump(tmp_path, {"nb_res": 64, "jobs": [spars_job(1), spars_job(2, **override)]})
    with pytest.raises(InputError) as e:
        read_spars_json(p)
    assert str(e.value).startswith(f"{p}: {message}")


@pytest.mark.parametrize("field", ["job_id", "res", "subtime", "reqtime", "runtime"])
def test_spars_missing_field_named(tmp_path, field):
    job = spars_job(2)
    del job[field]
    p = dump(tmp_path, {"nb_res": 64, "jobs": [spars_job(1), job]})
    with pytest.raises(InputError, match=rf"w\.json: jobs\[1\]\.{field}: missing"):
        read_spars_json(p)


@pytest.mark.parametrize(
    "doc, match",
    [
        ([], "expected a JSON object"),
        ({"jobs": []}, "nb_res: missing"),
        ({"nb_res": 0, "jobs": []}, "nb_res: must be a positive integer"),
        ({"nb_res": 4}, "jobs: missing"),
        ({"nb_res": 4, "jobs": {}}, "jobs: must be a list"),
        ({"nb_res": 4, "jobs": [3]}, r"jobs\[0\]: must be an object"),
    ],
)
def test_spars_bad_top_level(tmp_path, doc, match):
    with pytest.raises(InputError, match=match):
        read_spars_json(dump(tmp_path, doc))


def test_invalid_json_names_line(tmp_path):
    p = tmp_path / "w.json"
    p.write_text('{\n  "nb_res": 4,\n  "jobs": [,]\n}\n')
    with pytest.raises(InputError, match="invalid JSON") as e:
        read_spars_json(p)
    assert f"{p}:3" in str(e.value)


# --- Batsim JSON -------------------------------------------------------------------------


def test_batsim_runtime_from_delay_profile(tmp_path):
    jobs = [{"id": "w0!1", "subtime": 5, "res": 2, "walltime": 500, "profile": "d100"}]
    w = read_batsim_json(dump(tmp_path, batsim_doc(jobs)))
    j = w.jobs[0]
    assert (j.name, j.submit_s, j.res, j.reqtime_s, j.runtime_s) == ("w0!1", 5.0, 2, 500.0, 100.0)
    assert w.max_nodes == 16
    assert w.notes == []


def test_batsim_profile_without_delay_uses_walltime(tmp_path):
    profiles = {"ph": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}}
    jobs = [{"id": 1, "subtime": 0, "res": 2, "walltime": 700, "profile": "ph"}]
    w = read_batsim_json(dump(tmp_path, batsim_doc(jobs, profiles)))
    assert w.jobs[0].runtime_s == 700.0
    assert any(
        "runtime = walltime for 1 jobs" in n and "parallel_homogeneous" in n for n in w.notes
    )


def test_batsim_missing_walltime_filled_with_runtime(tmp_path):
    jobs = [
        {"id": 1, "subtime": 0, "res": 1, "profile": "d100"},
        {"id": 2, "subtime": 1, "res": 1, "walltime": -1, "profile": "d100"},
    ]
    w = read_batsim_json(dump(tmp_path, batsim_doc(jobs)))
    assert [j.reqtime_s for j in w.jobs] == [100.0, 100.0]
    assert any("filled with the runtime for 2 jobs" in n for n in w.notes)


@pytest.mark.parametrize(
    "job, profiles, match",
    [
        (
            {"id": 1, "subtime": 0, "res": 1, "walltime": 9, "profile": "x"},
            None,
            "jobs\\[0\\].profile",
        ),
        ({"id": 1, "subtime": 0, "res": 1, "profile": "ph"}, {"ph": {}}, "jobs\\[0\\].walltime"),
        ({"id": 1, "subtime": 0, "res": 1, "walltime": -7, "profile": "d100"}, None, "walltime"),
        (
            {"id": 1, "res": 1, "walltime": 9, "profile": "d100"},
            None,
            "jobs\\[0\\].subtime: missing",
        ),
        (
            {"subtime": 0, "res": 1, "walltime": 9, "profile": "d100"},
            None,
            "jobs\\[0\\].id: missing",
        ),
        ({"id": 1, "subtime": 0, "res": 1, "profile": "b"}, {"b": {"delay": "x"}}, "delay"),
    ],
)
def test_batsim_bad_fields(tmp_path, job, profiles, match):
    p = dump(tmp_path, batsim_doc([job], profiles))
    with pytest.raises(InputError, match=match) as e:
        read_batsim_json(p)
    assert str(e.value).startswith(f"{p}: ")


# --- load_workload and trace_info ------------------------------------------------------------

SWF = "; MaxProcs: 8\n1 0 0 10 2 -1 -1 2 60 -1 1 1 -1 -1 1 -1 -1 -1\n" + (
    "2 5 0 -1 2 -1 -1 2 60 -1 5 1 -1 -1 1 -1 -1 -1\n"
)


def test_load_workload_dispatch(tmp_path):
    (tmp_path / "a.swf").write_text(SWF)
    (tmp_path / "a.swf.gz").write_bytes(gzip.compress(SWF.encode()))
    (tmp_path / "trace.txt").write_text(SWF)
    for name in ("a.swf", "a.swf.gz", "trace.txt"):
        w = load_workload(tmp_path / name, first=1)
        assert len(w) == 1 and w.max_nodes == 8
    spars = dump(tmp_path, {"nb_res": 4, "jobs": [spars_job(1)]}, "s.json.gz")
    assert load_workload(spars).jobs[0].runtime_s == 300.0
    bats = dump(
        tmp_path,
        batsim_doc([{"id": 1, "subtime": 0, "res": 1, "walltime": 9, "profile": "d100"}]),
        "b.json",
    )
    assert load_workload(bats).jobs[0].runtime_s == 100.0
    other = dump(tmp_path, {"nb_res": 4, "jobs": [spars_job(1)]}, "s.workload")
    assert len(load_workload(other, procs_per_node=2)) == 1


def test_load_workload_errors(tmp_path):
    with pytest.raises(InputError, match="no such workload file: .*missing.swf"):
        load_workload(tmp_path / "missing.swf")
    (tmp_path / "x.bin").write_bytes(b"\x00\x01garbage")
    with pytest.raises(InputError, match="unknown workload format"):
        load_workload(tmp_path / "x.bin")
    spars = dump(tmp_path, {"nb_res": 4, "jobs": [spars_job(1)]})
    with pytest.raises(InputError, match="first apply to SWF files only"):
        load_workload(spars, first=1)
    with pytest.raises(InputError, match="unknown workload option"):
        load_workload(spars, colour="red")
    odd = dump(tmp_path, {"nb_res": 4, "jobs": [{"job_id": 1}]}, "odd.json")
    with pytest.raises(InputError, match="neither reqtime .* nor walltime"):
        load_workload(odd)
    with pytest.raises(InputError, match="directory"):
        load_workload(tmp_path)


def test_trace_info_swf(tmp_path):
    (tmp_path / "a.swf").write_text(SWF + "3 100 0 20 4 -1 -1 4 60 -1 1 1 -1 -1 1 -1 -1 -1\n")
    info = trace_info(tmp_path / "a.swf")
    assert info["format"] == "swf"
    assert (info["records"], info["jobs"], info["dropped_total"]) == (3, 2, 1)
    assert info["dropped"] == {"cancelled: runtime -1": 1}
    assert (info["max_nodes"], info["max_procs"], info["header_max_nodes"]) == (8, 8, None)
    assert info["largest_request"] == 4
    assert (info["submit_span_s"], info["span_s"]) == (100.0, 120.0)
    assert info["offered_utilization"] == pytest.approx((2 * 10 + 4 * 20) / (8 * 100))
    assert any("cancelled" in n for n in info["notes"])
    assert trace_info(tmp_path / "a.swf", procs_per_node=2)["max_nodes"] == 4


def test_trace_info_json(tmp_path):
    p = dump(tmp_path, {"nb_res": 4, "jobs": [spars_job(1), spars_job(2)]})
    info = trace_info(p)
    assert info["format"] == "spars-json"
    assert (info["jobs"], info["records"], info["max_procs"], info["dropped"]) == (2, 2, 4, {})
    empty = trace_info(dump(tmp_path, {"nb_res": 4, "jobs": []}, "e.json"))
    assert (empty["jobs"], empty["span_s"], empty["offered_utilization"]) == (0, 0.0, None)


def test_make_jobs_fast_path_equals_constructor():
    cols = (["a", "b"], [0.0, 5.5], [1, 4], [60.0, 70.0], [10.0, 0.0], [-1, 3])
    fast = make_jobs(*cols)
    slow = [Job(k, *row) for k, row in enumerate(zip(*cols, strict=True))]
    assert fast == slow
    assert [hash(j) for j in fast] == [hash(j) for j in slow]
    assert [repr(j) for j in fast] == [repr(j) for j in slow]
    with pytest.raises(AttributeError):  # still frozen
        fast[0].res = 9


def test_jobs_share_repeated_walltimes_runtimes_and_users_but_keep_every_value():
    """Equal values of one type become one object; 5 and 5.0, 0.0 and -0.0, NaNs stay apart."""
    nan = float("nan")
    # (Parsed, as a reader's values are: equal values, distinct objects.)
    req = [float("3600"), float("3600"), 0.0, -0.0, 5.0, nan]
    run = [5, 5.0, float("7.5"), float("7.5"), -0.0, 0.0]
    users = [int("1000"), int("1000"), True, 1, 0, False]
    assert req[0] is not req[1] and users[0] is not users[1]
    jobs = make_jobs([str(k) for k in range(6)], [0.0] * 6, [1] * 6, req, run, users)
    for field, given in (("reqtime_s", req), ("runtime_s", run), ("user_id", users)):
        got = [getattr(job, field) for job in jobs]
        assert [type(v) for v in got] == [type(v) for v in given]
        assert [repr(v) for v in got] == [repr(v) for v in given]  # -0.0, nan, 5 vs 5.0
    assert jobs[0].reqtime_s is jobs[1].reqtime_s and jobs[2].runtime_s is jobs[3].runtime_s
    assert jobs[0].user_id is jobs[1].user_id


def test_batsim_jobs_past_their_walltime_bring_a_note_on_batsim_s_kill(tmp_path):
    jobs = [{"id": 1, "subtime": 0, "res": 1, "walltime": 50, "profile": "d100"}]
    w = read_batsim_json(dump(tmp_path, batsim_doc(jobs)))
    assert "1 jobs run longer than their requested time" in w.notes
    assert any("Batsim itself kills a job at its walltime" in n for n in w.notes)
    assert any("simulation.kill_at_walltime = true" in n for n in w.notes)


@pytest.mark.parametrize(
    "key,value",
    [
        ("subtime", 2**60),
        ("res", 2**63),
        ("walltime", 1e300),
        ("walltime", 10**400),
        ("user_id", 2**70),
    ],
)
def test_batsim_numbers_too_large_name_the_field(tmp_path, key, value):
    job = {"id": 1, "subtime": 0, "res": 1, "walltime": 50, "profile": "d100", key: value}
    with pytest.raises(InputError, match=rf"jobs\[0\]\.{key}: .*2\*\*53 or beyond"):
        read_batsim_json(dump(tmp_path, batsim_doc([job])))


def _json_scenario(tmp_path, selection: str) -> dict:
    jobs = [
        {"job_id": n, "subtime": t, "res": 1, "reqtime": 100, "runtime": 10}
        for n, t in ((11, 300), (12, 100), (13, 200), (14, 400))
    ]
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 4, "jobs": jobs}))
    (tmp_path / "s.toml").write_text(f'[workload]\npath = "w.json"\n{selection}\n')
    args, _ = simulation_args(resolve(tmp_path / "s.toml"))
    return args[1]


def test_json_first_keeps_the_first_jobs_in_submit_order_unshifted(tmp_path):
    """As docs/reference/scenarios.md says: JSON ``first`` counts in submit order."""
    w = _json_scenario(tmp_path, "first = 2")
    assert [(j.id, j.name, j.submit_s) for j in w.jobs] == [(0, "12", 100.0), (1, "13", 200.0)]


def test_json_jobs_i_to_j_are_in_submit_order_and_shifted_to_arrive_from_0(tmp_path):
    """As documented: jobs i..j are 1-based in submit order; job i arrives at 0."""
    w = _json_scenario(tmp_path, 'jobs = "2..3"')
    assert [(j.id, j.name, j.submit_s) for j in w.jobs] == [(0, "13", 0.0), (1, "11", 100.0)]
    assert "kept jobs 2..3 of 4" in w.notes


ZERO = "jobs with runtime 0 (they start and end at one instant)"
OVER = "jobs run longer than their requested time"


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        ("", [f"4 {ZERO}", f"1 {OVER}"]),
        ('jobs = "2..3"', ["kept jobs 2..3 of 5", f"1 {ZERO}", f"1 {OVER}"]),
        ("first = 1", ["kept jobs 1..1 of 5", f"1 {ZERO}"]),
    ],
)
def test_json_notes_count_the_jobs_that_run(tmp_path, selection, expected):
    # (runtimes in submit order: 0, 500 past its 100 s, 0, 0, 0)
    jobs = [
        {"job_id": n, "subtime": n, "res": 1, "reqtime": 100, "runtime": 500 if n == 2 else 0}
        for n in (1, 2, 3, 4, 5)
    ]
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 4, "jobs": jobs}))
    (tmp_path / "s.toml").write_text(f'[workload]\npath = "w.json"\n{selection}\n')
    args, _ = simulation_args(resolve(tmp_path / "s.toml"))
    assert args[1].notes == ["res counts processors (nb_res = 4)", *expected]


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        ({"nb_res": 4, "jobs": [5]}, r"w\.json: jobs\[0\]: must be an object, got "),
        (
            {
                "nb_res": 4,
                "jobs": [{"id": 1, "subtime": 0, "res": 1, "walltime": 9, "profile": "p"}],
                "profiles": {"p": 5},
            },
            r"w\.json: profiles\['p'\]: must be an object, got ",
        ),
    ],
)
def test_load_workload_names_an_element_of_the_wrong_type(tmp_path, doc, match):
    with pytest.raises(InputError, match=match):
        load_workload(dump(tmp_path, doc))
