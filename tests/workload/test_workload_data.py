"""The shipped workload files in scenarios/data: integrity and contents."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path

import pytest

from hpcpower.workload import load_workload, read_spars_json, read_swf, trace_info
from hpcpower.workload.swf import REASON_CANCELLED

DATA = Path(__file__).resolve().parents[2] / "scenarios" / "data"

PAPER_JSON = {
    # file: (nb_res, first job as (name, submit, res, reqtime, runtime, user), last job name)
    "DAS2-fs1-0-3000.json.gz": (64, ("1", 0.0, 8, 7200.0, 1924.0, 1), "3138"),
    "DAS2-fs2-0-3000.json.gz": (64, ("1", 0.0, 8, 7200.0, 1929.0, 1), "3272"),
    "DAS2-fs3-0-3000.json.gz": (64, ("1", 0.0, 2, 960.0, 262.0, 2), "3103"),
    "DAS2-fs4-0-3000.json.gz": (64, ("1", 0.0, 1, 60.0, 1.0, 1), "3045"),
    "SDSC-BLUE-2000-4.2-cln-0-3000.json.gz": (1152, ("9", 0.0, 256, 64800.0, 50866.0, 95), "3619"),
    "generated-markovian-3000.json.gz": (
        64,
        ("1", 215.9921037798388, 3, 10150.094827696674, 536.9567063892769, 0),
        "3000",
    ),
}


def test_sources_md_checksums_match_files():
    text = (DATA / "SOURCES.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \| `([0-9a-f]{64})` \| (\d+) \|", text, re.M)
    listed = {name: (sha, int(size)) for name, sha, size in rows}
    stored = {p.name for p in DATA.iterdir() if p.name != "SOURCES.md"}
    assert set(listed) == stored
    for name, (sha, size) in listed.items():
        data = (DATA / name).read_bytes()
        assert len(data) == size, name
        assert hashlib.sha256(data).hexdigest() == sha, name


@pytest.mark.parametrize("name", sorted(PAPER_JSON))
def test_paper_json_workloads(name):
    nb_res, first, last_name = PAPER_JSON[name]
    w = read_spars_json(DATA / name)
    assert len(w) == 3000
    assert w.max_nodes == nb_res
    j = w.jobs[0]
    assert (j.name, j.submit_s, j.res, j.reqtime_s, j.runtime_s, j.user_id) == first
    assert w.jobs[-1].name == last_name
    assert w.dropped == []
    assert max(j.res for j in w.jobs) <= nb_res
    assert load_workload(DATA / name).jobs == w.jobs


def test_full_das2_fs1_trace():
    info = trace_info(DATA / "DAS2-fs1-2003-1.swf.gz")
    assert info["records"] == 40_315
    assert info["dropped"] == {REASON_CANCELLED: 959}
    assert info["jobs"] == 40_315 - 959 == 39_356
    assert (info["max_nodes"], info["max_procs"], info["header_max_nodes"]) == (64, 64, 32)
    assert info["largest_request"] == 64


@pytest.mark.parametrize(
    "log, slice_",
    [
        ("DAS2-fs1-2003-1.swf.gz", "DAS2-fs1-0-3000.json.gz"),
        ("SDSC-BLUE-2000-4.2-cln.swf.gz", "SDSC-BLUE-2000-4.2-cln-0-3000.json.gz"),
    ],
)
def test_first_3000_kept_jobs_equal_the_paper_slice(log, slice_):
    """The SWF rules reproduce how the paper built its JSON slices, job for job."""
    mine = read_swf(DATA / log, first=3000)
    paper = read_spars_json(DATA / slice_)
    # The paper's files name one profile ("100") for every job; SWF has none.
    assert {j.profile for j in paper.jobs} == {"100"}
    assert mine.jobs == [dataclasses.replace(j, profile="") for j in paper.jobs]
    assert mine.max_nodes == paper.max_nodes
    assert {d.reason for d in mine.dropped} == {REASON_CANCELLED}


def test_das2_with_two_cpus_per_node():
    w = read_swf(DATA / "DAS2-fs1-2003-1.swf.gz", procs_per_node=2, first=100)
    assert w.max_nodes == 32
    assert w.jobs[0].res == 4  # 8 processors on dual-CPU nodes


def test_lublin_model_trace():
    w = read_swf(DATA / "lublin_256.swf.gz")
    assert len(w) == 10_000
    assert w.max_nodes == 256
    assert w.dropped == []
    assert all(j.reqtime_s == j.runtime_s for j in w.jobs)
    assert any("filled with the runtime for 10000 jobs" in n for n in w.notes)
