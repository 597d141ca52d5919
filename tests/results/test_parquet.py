"""Parquet tables beside the CSV files: the same tables as ``to_pandas``, the summary inside."""

from __future__ import annotations

import json
import sys

import pandas as pd
import pytest

from hpcpower import Simulation
from hpcpower.cli import main
from hpcpower.errors import MissingExtra
from hpcpower.results.export import write_all

pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture(scope="module")
def icon_run():
    return Simulation.from_scenario(
        "scenarios/quickstart.toml", policy__name="snf-icon", workload__first=60
    ).run()


def test_each_parquet_table_is_the_dataframe_of_the_run(icon_run, tmp_path):
    paths = write_all(icon_run, tmp_path / "o", parquet=True)
    names = {p.name for p in paths}
    assert {"jobs.parquet", "nodes.parquet", "states.parquet", "decisions.parquet"} <= names
    for table in ("jobs", "nodes", "states", "decisions"):
        got = pd.read_parquet(tmp_path / "o" / f"{table}.parquet")
        pd.testing.assert_frame_equal(got, icon_run.to_pandas(table), check_dtype=False)
    meta = pq.read_schema(tmp_path / "o" / "jobs.parquet").metadata
    summary = json.loads(meta[b"hpcpower.summary"])
    assert summary["total_energy_j"] == icon_run.summary["total_energy_j"]
    assert summary["config"]["policy"]["name"] == "snf-icon"


def test_a_run_without_decisions_writes_no_decisions_table(tmp_path):
    res = Simulation.from_scenario("scenarios/quickstart.toml", workload__first=20).run()
    names = {p.name for p in write_all(res, tmp_path / "o", parquet=True)}
    assert "jobs.parquet" in names and "decisions.parquet" not in names


def test_the_cli_writes_parquet_on_request_only(tmp_path, capsys):
    args = ["run", "scenarios/quickstart.toml", "-q", "--set", "workload.first=20"]
    assert main([*args, "--out", str(tmp_path / "csv")]) == 0
    assert not list((tmp_path / "csv").glob("*.parquet"))
    assert main([*args, "--out", str(tmp_path / "pq"), "--parquet"]) == 0
    assert len(pd.read_parquet(tmp_path / "pq" / "jobs.parquet")) == 20


def test_without_pyarrow_the_cli_names_the_extra_before_running(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now fails
    code = main(["run", "scenarios/quickstart.toml", "--out", str(tmp_path / "o"), "--parquet"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == (
        "hpcpower: error: Parquet output needs pyarrow, which is not installed: "
        'pip install "hpcpower[tables]"'
    )
    assert not (tmp_path / "o").exists()


def test_to_pandas_without_pandas_names_the_extra(icon_run, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingExtra, match=r'pip install "hpcpower\[tables\]"'):
        icon_run.to_pandas("jobs")
