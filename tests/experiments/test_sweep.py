"""Running sweeps: local and Dask give one table, a killed sweep resumes, failures are kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from sweep_helpers import ROOT, SMOKE, comparable, hpcpower, write_sweep

import hpcpower as hp
from hpcpower.errors import InputError
from hpcpower.experiments.store import Store

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def smoke_local(tmp_path_factory):
    """The smoke sweep run once on local processes."""
    out = tmp_path_factory.mktemp("smoke") / "local"
    return out, hp.sweep(SMOKE, out, workers=2)


def test_the_smoke_sweep_records_one_row_per_run(smoke_local):
    out, frame = smoke_local
    assert len(frame) == 18 and frame["run_id"].is_unique
    assert set(frame["status"]) == {"ok"}
    assert (out / "results.parquet").is_file() or (out / "results.csv").is_file()
    assert sorted(p.stem for p in (out / "runs").glob("*.json")) == sorted(frame["run_id"])
    for column in ("policy.name", "policy.timeout_s", "seed", "mean_wait_s", "wasted_energy_j"):
        assert column in frame.columns
    assert {"wall_time_s", "version", "size_bin.1.median_wait_s"} <= set(frame.columns)
    assert frame["version"].eq(hp.__version__).all()
    assert not any(p.is_dir() for p in (out / "runs").iterdir())  # no outputs unless kept


def test_the_table_file_holds_the_same_rows(smoke_local):
    out, frame = smoke_local
    if (out / "results.parquet").is_file():
        pytest.importorskip("pyarrow")
        saved = pd.read_parquet(out / "results.parquet")
    else:
        saved = pd.read_csv(out / "results.csv")
    pd.testing.assert_frame_equal(
        comparable(saved), comparable(frame), check_dtype=False, check_exact=True
    )


def test_dask_gives_the_same_table_as_local_processes(smoke_local, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    _, local = smoke_local
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        frame = hp.sweep(
            SMOKE, tmp_path / "dask", executor="dask", scheduler_address=cluster.scheduler_address
        )
    pd.testing.assert_frame_equal(comparable(frame), comparable(local), check_exact=True)


def test_dask_without_an_address_starts_its_own_cluster(tmp_path):
    pytest.importorskip("dask.distributed")
    sweep = write_sweep(
        tmp_path,
        '[sweep]\nscenario = "QUICKSTART"\nseeds = [0, 1]\n[set]\nworkload.first = 50\n',
    )
    done = hpcpower(
        "sweep", str(sweep), "--out", str(tmp_path / "out"), "--executor", "dask", "--workers", "1"
    )
    assert done.returncode == 0, done.stderr
    assert "2 runs: 0 already done, 2 run now, 0 of them failed" in done.stdout


def test_a_failing_run_is_recorded_and_the_others_complete(tmp_path):
    # 5000 jobs are more than the trace has: this case fails when it runs.
    sweep = write_sweep(
        tmp_path,
        """
        [sweep]
        scenario = "QUICKSTART"
        [grid]
        policy.name = ["snf-ipm", "fcfs-easy-ipm"]
        [[case]]
        name = "small"
        workload.first = 100
        [[case]]
        name = "too-many"
        workload.first = 5000
        """,
    )
    out = tmp_path / "out"
    done = hpcpower("sweep", str(sweep), "--out", str(out), "--workers", "2")
    assert done.returncode == 1, done.stderr
    assert done.stdout.count("failed: ") == 2
    assert "workload.first: 5000 is more than the 3000 jobs available" in done.stdout
    frame = hp.sweep(sweep, out, resume=True)  # nothing left to run
    by_case = frame.set_index("case")
    assert list(by_case.loc["small", "status"]) == ["ok", "ok"]
    assert list(by_case.loc["too-many", "status"]) == ["failed", "failed"]
    assert by_case.loc["too-many", "error"].str.startswith("InputError: ").all()
    assert by_case.loc["small", "mean_wait_s"].notna().all()
    record = json.loads(
        (out / "runs" / f"{by_case.loc['too-many', 'run_id'].iloc[0]}.json").read_text()
    )
    assert "Traceback" in record["traceback"]
    # --retry-failed runs the failed ones again, and only them.
    again = hpcpower("sweep", str(sweep), "--out", str(out), "--resume", "--retry-failed")
    assert "4 runs: 2 already done, 2 run now, 2 of them failed" in again.stdout


def test_a_sweep_killed_with_sigkill_resumes_to_the_same_table(tmp_path):
    sweep = write_sweep(
        tmp_path,
        """
        [sweep]
        scenario = "QUICKSTART"
        seeds = [0, 1, 2, 3, 4, 5, 6, 7]
        [grid]
        policy.name = ["fcfs-easy-ipm", "snf-ipm", "snf-icon"]
        """,
    )
    total = 24
    killed = tmp_path / "killed"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hpcpower",
            "sweep",
            str(sweep),
            "--out",
            str(killed),
            "--workers",
            "1",
            "-q",
        ],
        env=env,
    )
    runs = killed / "runs"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(runs.glob("*.json"))) < 4:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    before = {p.stem: (p.stat().st_ino, p.stat().st_mtime_ns) for p in runs.glob("*.json")}
    assert 4 <= len(before) < total, "the sweep was not stopped halfway"
    assert not (killed / "results.parquet").exists() and not (killed / "results.csv").exists()

    resumed = hpcpower("sweep", str(sweep), "--out", str(killed), "--resume", "--workers", "2")
    assert resumed.returncode == 0, resumed.stderr
    ran = total - len(before)
    assert f"{total} runs: {len(before)} already done, {ran} run now, 0 of them failed" in (
        resumed.stdout
    )
    # The runs finished before the kill were not run again: their files are untouched.
    for p in runs.glob("*.json"):
        if p.stem in before:
            assert (p.stat().st_ino, p.stat().st_mtime_ns) == before[p.stem]
    assert not [p for p in runs.iterdir() if p.name.startswith(".")]

    whole = hp.sweep(sweep, tmp_path / "whole", workers=2)
    frame = Store(killed)
    columns, rows = frame.rows(frame.read_plan())
    resumed_frame = pd.DataFrame(rows, columns=columns)
    assert resumed_frame["run_id"].is_unique and len(resumed_frame) == total
    pd.testing.assert_frame_equal(comparable(resumed_frame), comparable(whole), check_exact=True)


def test_keep_runs_keeps_each_runs_output_files(tmp_path):
    sweep = write_sweep(tmp_path, '[sweep]\nscenario = "QUICKSTART"\n[set]\nworkload.first = 50\n')
    frame = hp.sweep(sweep, tmp_path / "out", keep_runs=True, workers=1)
    (run_id,) = frame["run_id"]
    kept = tmp_path / "out" / "runs" / run_id
    assert {"summary.json", "jobs.csv", "machine_states.csv"} <= {p.name for p in kept.iterdir()}
    summary = json.loads((kept / "summary.json").read_text())
    assert summary["mean_wait_s"] == frame["mean_wait_s"].iloc[0]
    assert frame["simulation.decisions"].iloc[0] == "full"  # (its log at the scenario's level)


def test_a_folder_holding_a_sweep_needs_resume(tmp_path, smoke_local):
    out, _ = smoke_local
    with pytest.raises(InputError, match="holds a sweep already; use --resume"):
        hp.sweep(SMOKE, out)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not empty and not a sweep folder"):
        hp.sweep(SMOKE, tmp_path / "other")


def test_cli_errors_are_one_line_with_exit_status_2(tmp_path):
    bad = write_sweep(tmp_path, '[sweep]\nscenario = "QUICKSTART"\n[grid]\npolicy.alfa = [1]\n')
    done = hpcpower("sweep", str(bad), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "policy.alfa" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()  # checked before anything is made
    done = hpcpower("report", str(tmp_path))
    assert done.returncode == 2 and "no sweep.json here" in done.stderr


def test_a_missing_dask_is_named_with_the_extra_to_install(tmp_path):
    block = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] in ('dask', 'distributed'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from hpcpower.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    sweep = write_sweep(tmp_path, '[sweep]\nscenario = "QUICKSTART"\n[set]\nworkload.first = 20\n')
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            block,
            "sweep",
            str(sweep),
            "--out",
            str(tmp_path / "o"),
            "--executor",
            "dask",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2
    assert 'pip install "hpcpower[distributed]"' in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "o").exists()


def test_report_writes_tables_and_plots(smoke_local, tmp_path):
    out, _ = smoke_local
    done = hpcpower("report", str(out), "--out", str(tmp_path / "rep"))
    assert done.returncode == 0, done.stderr
    written = {p.name for p in (tmp_path / "rep").iterdir()}
    assert {
        "report.md",
        "summary.csv",
        "paired.csv",
        "pareto.csv",
        "size_bins.csv",
        "pareto-smoke.png",
        "size-bins-smoke.png",
        "icon-share-smoke.png",
        "sensitivity-smoke-timeout_s.png",
    } <= written
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "### Paired differences against fcfs-easy-ipm" in text


def test_a_run_that_keeps_no_files_keeps_no_decision_log(monkeypatch):
    """Its summary is all a sweep reads, and it is the same with the log off."""
    from hpcpower.experiments import worker
    from hpcpower.scenario import resolve

    config = resolve(
        ROOT / "scenarios" / "paper" / "markovian.toml",
        {"policy.name": "snf-icon", "workload.first": 200},
    )
    rows = {}
    metrics = worker.metrics

    def seen(results):
        rows[keep] = (results.summary["config"]["decisions"], len(results.decisions))
        return metrics(results)

    monkeypatch.setattr(worker, "metrics", seen)
    out = {}
    for keep in (False, True):
        out[keep] = worker.execute({"run_id": "r", "config": config, "keep_runs": keep})
        assert out[keep]["status"] == "ok", out[keep]["error"]
    assert rows[False] == ("off", 0)
    assert rows[True][0] == "full" and rows[True][1] > 0
    assert (out[False]["decisions"], out[True]["decisions"]) == ("off", "full")
    assert out[False]["metrics"] == out[True]["metrics"]
    assert "decisions.csv" in out[True]["outputs"] and out[False]["outputs"] is None


def test_the_table_says_at_which_level_each_run_kept_its_log(smoke_local):
    """A run without its files ran with the log off, and its row and record say so."""
    out, frame = smoke_local
    assert set(frame["simulation.decisions"]) == {"off"}
    for path in (out / "runs").glob("*.json"):
        assert json.loads(path.read_text())["config"]["simulation"]["decisions"] == "off"
