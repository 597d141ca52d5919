"""The ``hpcpower`` command: outputs of ``run``, overrides, and clean errors on bad input.

Most tests call :func:`hpcpower.cli.main` in-process; two start the real
command in a subprocess to check exit codes and the absence of tracebacks.
"""

from __future__ import annotations

import csv
import importlib.resources
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA

from hpcpower.cli import ONE_THREAD, main
from hpcpower.planning import _numba
from hpcpower.results.export import JOBS_COLUMNS, MACHINE_COLUMNS
from hpcpower.workload import trace_info

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "scenarios" / "quickstart.toml"
DAS2_SWF = ROOT / "scenarios" / "data" / "DAS2-fs1-2003-1.swf.gz"

SUMMARY_KEYS = (
    "jobs_submitted",
    "jobs_completed",
    "jobs_rejected",
    "mean_wait_s",
    "median_wait_s",
    "p95_wait_s",
    "max_wait_s",
    "mean_bounded_slowdown",
    "makespan_s",
    "utilization",
    "energy_j",
    "total_energy_j",
    "wasted_energy_j",
    "switch_ons",
    "switch_offs",
    "config",
    "version",
)
ENERGY_KEYS = {"sleeping", "switching_on", "idle", "computing", "switching_off"}

#: One SWF job line: 18 fields (job, submit, wait, runtime, alloc procs, cpu, mem,
#: req procs, req time, req mem, status, user, group, exe, queue, partition, prev, think).
SWF_LINE = "{n} {submit} 0 {run} {procs} -1 -1 {procs} {req} -1 1 1 1 -1 1 -1 -1 -1"


def swf(*jobs: tuple[int, int, int, int]) -> str:
    """SWF text with a header and one line per (submit, runtime, procs, reqtime)."""
    lines = ["; MaxNodes: 64", "; MaxProcs: 64"]
    for n, (submit, run, procs, req) in enumerate(jobs, start=1):
        lines.append(SWF_LINE.format(n=n, submit=submit, run=run, procs=procs, req=req))
    return "\n".join(lines) + "\n"


def scenario(folder: Path, workload: str, *, name: str = "tiny", policy: str = "snf-ipm") -> Path:
    """Write a scenario on the 64-node Taurus preset reading ``workload`` (relative)."""
    path = folder / f"{name}.toml"
    path.write_text(
        f'[simulation]\nname = "{name}"\nseed = 0\n\n'
        f'[platform]\nname = "taurus-64"\n\n'
        f'[workload]\npath = "{workload}"\n\n'
        f'[policy]\nname = "{policy}"\ntimeout_s = 600\n'
    )
    return path


GOOD_JOBS = ((0, 100, 2, 200), (10, 50, 1, 100), (20, 0, 4, 60))


@pytest.fixture
def tiny_scenario(tmp_path: Path) -> Path:
    (tmp_path / "jobs.swf").write_text(swf(*GOOD_JOBS))
    return scenario(tmp_path, "jobs.swf")


def cli(capsys, *args: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def read_summary(folder: Path) -> dict:
    # A strict reader: NaN/Infinity are not JSON.
    def refuse(token):
        raise AssertionError(f"summary.json holds {token}, which is not JSON")

    return json.loads((folder / "summary.json").read_text(), parse_constant=refuse)


def assert_clean_error(code: int, out: str, err: str, *needles: str) -> None:
    """Exit 2, one line on stderr naming what is wrong, no traceback."""
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hpcpower: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


# --------------------------------------------------------------- run: outputs
def test_run_quickstart_writes_summary_jobs_and_machine_states(tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, err = cli(capsys, "run", QUICKSTART, "--out", out)
    assert code == 0, err
    assert "Traceback" not in err
    assert {p.name for p in out.iterdir()} >= {"summary.json", "jobs.csv", "machine_states.csv"}
    for name in ("summary.json", "jobs.csv", "machine_states.csv"):
        assert str(out / name) in stdout
    summary = read_summary(out)
    for key in SUMMARY_KEYS:
        assert key in summary, key
    assert set(summary["energy_j"]) == ENERGY_KEYS
    assert summary["jobs_submitted"] == 300
    assert summary["jobs_completed"] + summary["jobs_rejected"] == 300
    assert summary["total_energy_j"] == pytest.approx(sum(summary["energy_j"].values()))
    assert summary["wasted_energy_j"] == pytest.approx(
        summary["total_energy_j"] - summary["energy_j"]["computing"]
    )
    assert 0 < summary["utilization"] <= 1
    assert summary["version"] == summary["config"]["version"]
    from hpcpower import __version__

    assert summary["version"] == __version__
    config = summary["config"]
    assert config["platform"] == "taurus-64" and config["n_nodes"] == 64
    assert config["policy"]["name"] == "snf-ipm"
    assert config["scenario"]["workload"]["first"] == 300

    with open(out / "jobs.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert tuple(rows[0]) == JOBS_COLUMNS
    assert len(rows) - 1 == 300
    with open(out / "machine_states.csv", newline="") as fh:
        states = list(csv.reader(fh))
    assert tuple(states[0]) == MACHINE_COLUMNS
    assert all(sum(int(x) for x in row[1:]) == 64 for row in states[1:])
    # The terminal summary names the policy and the job counts.
    assert "snf-ipm" in stdout and "300 completed" in stdout


def test_run_without_out_writes_under_runs_scenario_policy(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "run", QUICKSTART, "--quiet")
    assert code == 0, err
    folder = tmp_path / "runs" / "quickstart" / "snf-ipm"
    assert (folder / "summary.json").is_file()
    assert (folder / "jobs.csv").is_file()
    assert (folder / "machine_states.csv").is_file()


def test_quiet_prints_nothing(tiny_scenario, tmp_path, capsys):
    code, out, err = cli(capsys, "run", tiny_scenario, "--out", tmp_path / "o", "-q")
    assert code == 0
    assert out == "" and err == ""
    assert (tmp_path / "o" / "summary.json").is_file()


def test_overrides_are_reflected_in_the_summary_config(tiny_scenario, tmp_path, capsys):
    out = tmp_path / "o"
    code, _, err = cli(
        capsys,
        "run",
        tiny_scenario,
        "--policy",
        "fcfs-easy-ipm",
        "--platform",
        "aoba-64",
        "--seed",
        "7",
        "--set",
        "policy.timeout_s=1234",
        "--set",
        "simulation.initial_state=sleeping",
        "--out",
        out,
        "-q",
    )
    assert code == 0, err
    config = read_summary(out)["config"]
    assert config["platform"] == "aoba-64"
    assert config["policy"]["name"] == "fcfs-easy-ipm"
    assert config["policy"]["timeout_s"] == 1234.0
    assert config["seed"] == 7
    assert config["initial_state"] == "sleeping"
    assert config["scenario"]["policy"] == {"name": "fcfs-easy-ipm", "timeout_s": 1234.0}
    assert config["scenario"]["platform"]["name"] == "aoba-64"
    assert config["scenario"]["simulation"]["seed"] == 7


def test_same_seed_override_gives_identical_outputs(tmp_path, capsys):
    # Same scenario twice with the same --seed: identical summaries (runs are seeded).
    a, b = tmp_path / "a", tmp_path / "b"
    assert cli(capsys, "run", QUICKSTART, "--seed", "3", "--out", a, "-q")[0] == 0
    assert cli(capsys, "run", QUICKSTART, "--seed", "3", "--out", b, "-q")[0] == 0
    assert read_summary(a) == read_summary(b)
    assert (a / "jobs.csv").read_text() == (b / "jobs.csv").read_text()


def test_a_job_larger_than_the_platform_is_rejected_and_counted(tmp_path, capsys):
    # Job 2 asks for 65 nodes on the 64-node platform; the others still run.
    (tmp_path / "big.swf").write_text(swf((0, 100, 2, 200), (10, 50, 65, 100), (20, 50, 1, 100)))
    out = tmp_path / "o"
    code, stdout, err = cli(capsys, "run", scenario(tmp_path, "big.swf"), "--out", out)
    assert code == 0, err
    summary = read_summary(out)
    assert summary["jobs_submitted"] == 3
    assert summary["jobs_rejected"] == 1
    assert summary["jobs_completed"] == 2
    with open(out / "jobs.csv", newline="") as fh:
        rows = {row["job_id"]: row for row in csv.DictReader(fh)}
    assert rows["2"]["final_state"] == "REJECTED"
    assert rows["2"]["success"] == "0"
    assert rows["2"]["requested_number_of_resources"] == "65"
    assert rows["2"]["allocated_resources"] == ""
    assert rows["1"]["final_state"] == rows["3"]["final_state"] == "COMPLETED_SUCCESSFULLY"
    assert "1 rejected" in stdout


# ---------------------------------------------------------- run: bad input
def test_malformed_swf_line_names_file_and_line(tmp_path, capsys):
    text = swf(*GOOD_JOBS).splitlines()
    text[3] = "2 10 0 50 1 -1 -1 1 100"  # file line 4: 9 fields instead of 18
    (tmp_path / "bad.swf").write_text("\n".join(text) + "\n")
    out = tmp_path / "o"
    code, stdout, err = cli(capsys, "run", scenario(tmp_path, "bad.swf"), "--out", out)
    assert_clean_error(code, stdout, err, "bad.swf:4")
    assert not out.exists()


def test_non_numeric_swf_field_names_file_line_and_field(tmp_path, capsys):
    text = swf(*GOOD_JOBS).splitlines()
    text[3] = text[3].replace("2 10 0", "2 1O 0", 1)
    (tmp_path / "bad.swf").write_text("\n".join(text) + "\n")
    code, stdout, err = cli(capsys, "run", scenario(tmp_path, "bad.swf"), "--out", tmp_path / "o")
    assert_clean_error(code, stdout, err, "bad.swf:4", "submit time")


def test_negative_runtime_names_file_line_and_field(tmp_path, capsys):
    (tmp_path / "neg.swf").write_text(swf((0, 100, 2, 200), (10, -50, 1, 100)))
    out = tmp_path / "o"
    code, stdout, err = cli(capsys, "run", scenario(tmp_path, "neg.swf"), "--out", out)
    assert_clean_error(code, stdout, err, "neg.swf:4", "-50")
    assert "run time" in err or "runtime" in err
    assert not out.exists()


def test_json_nested_too_deeply_is_one_line(tmp_path, capsys):
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    code, stdout, err = cli(capsys, "run", scenario(tmp_path, "deep.json"), "--out", tmp_path / "o")
    assert_clean_error(code, stdout, err, "deep.json: invalid JSON: nested too deeply")


def test_negative_runtime_in_paper_json_names_the_field(tmp_path, capsys):
    common = {"res": 1, "reqtime": 10, "profile": "p", "user_id": 1}
    jobs = [
        {"job_id": 1, "subtime": 0, "runtime": 5, **common},
        {"job_id": 2, "subtime": 3, "runtime": -5, **common},
    ]
    (tmp_path / "neg.json").write_text(json.dumps({"nb_res": 64, "jobs": jobs}))
    code, stdout, err = cli(capsys, "run", scenario(tmp_path, "neg.json"), "--out", tmp_path / "o")
    assert_clean_error(code, stdout, err, "neg.json", "jobs[1]", "runtime")


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--policy", "nosuch"), ("nosuch", "snf-ipm")),
        (("--platform", "nosuch"), ("nosuch", "taurus-64")),
        (("--set", "policy.timout_s=5"), ("policy.timout_s",)),
        (("--set", "nosuch.key=1"), ("nosuch.key",)),
        (("--set", "simulation.nosuch=1"), ("simulation.nosuch",)),
        (("--set", "policy.timeout_s"), ("policy.timeout_s", "key=value")),
        (("--set", "=5"), ("key=value",)),
        (("--set", "simulation.seed=abc"), ("simulation.seed",)),
        (("--set", "policy.timeout_s=-5"), ("timeout_s",)),
        (("--set", "simulation.initial_state=awake"), ("initial_state", "awake")),
        (("--set", "simulation.kill_at_walltime=maybe"), ("kill_at_walltime",)),
        (("--policy", ""), ("--policy: empty",)),
        (("--platform", ""), ("--platform: empty",)),
        (("--policy", "rl:"), ("policy 'rl:': give the agent file",)),
    ],
    ids=lambda v: " ".join(v) if v and v[0].startswith("-") else "",
)
def test_bad_choice_or_setting_is_one_clear_error(tiny_scenario, tmp_path, capsys, args, needles):
    out = tmp_path / "o"
    code, stdout, err = cli(capsys, "run", tiny_scenario, *args, "--out", out)
    assert_clean_error(code, stdout, err, *needles)
    assert not out.exists()


def test_an_unknown_kernels_setting_is_one_clear_error(tiny_scenario, tmp_path, capsys):
    """A typo in simulation.kernels is refused by name, with the accepted values."""
    out = tmp_path / "o"
    code, stdout, err = cli(
        capsys, "run", tiny_scenario, "--set", "simulation.kernels=nunpy", "--out", out
    )
    assert_clean_error(code, stdout, err, "kernels", "'nunpy'", "'numpy'")
    assert not out.exists()


def test_the_kernels_in_use_are_recorded(tiny_scenario, tmp_path, capsys, monkeypatch):
    """A small run never loads the compiled twins; the choice is in summary.json."""
    from hpcpower.planning import compiled

    monkeypatch.setattr(compiled, "_loaded", False)  # (a fresh process: earlier tests load them)
    out = tmp_path / "o"
    code, _, err = cli(capsys, "run", tiny_scenario, "--out", out, "-q")
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["kernels"] == "numpy"
    assert summary["config"]["scenario"]["simulation"]["kernels"] == "auto"


def test_the_users_own_thread_pool_sizes_are_kept(monkeypatch, capsys):
    for name in ONE_THREAD:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert main(["policies"]) == 0
    assert os.environ["OMP_NUM_THREADS"] == "4"
    assert os.environ["OPENBLAS_NUM_THREADS"] == os.environ["MKL_NUM_THREADS"] == "1"


def test_missing_scenario_file(tmp_path, capsys):
    missing = tmp_path / "nothere.toml"
    code, stdout, err = cli(capsys, "run", missing, "--out", tmp_path / "o")
    assert_clean_error(code, stdout, err, "nothere.toml")


def test_missing_workload_file(tmp_path, capsys):
    code, stdout, err = cli(
        capsys, "run", scenario(tmp_path, "nothere.swf"), "--out", tmp_path / "o"
    )
    assert_clean_error(code, stdout, err, "nothere.swf")


def test_scenario_that_is_not_toml_names_the_file(tmp_path, capsys):
    path = tmp_path / "broken.toml"
    path.write_text("[simulation\nname = ")
    code, stdout, err = cli(capsys, "run", path)
    assert_clean_error(code, stdout, err, "broken.toml")


def test_unknown_section_or_key_in_the_scenario_file(tmp_path, capsys):
    (tmp_path / "jobs.swf").write_text(swf(*GOOD_JOBS))
    path = tmp_path / "typo.toml"
    path.write_text('[simulation]\nnmae = "x"\n[workload]\npath = "jobs.swf"\n')
    assert_clean_error(*cli(capsys, "run", path), "typo.toml", "simulation.nmae")
    path.write_text('[simulaton]\nname = "x"\n[workload]\npath = "jobs.swf"\n')
    assert_clean_error(*cli(capsys, "run", path), "typo.toml", "simulaton")


def test_missing_arguments_are_usage_errors(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run"])
    assert exc.value.code == 2
    assert "usage" in capsys.readouterr().err


def test_scenario_path_that_is_a_directory_is_a_clean_error(tmp_path, capsys):
    code, stdout, err = cli(capsys, "run", tmp_path, "--out", tmp_path / "o")
    assert_clean_error(code, stdout, err, str(tmp_path))


def test_scenario_that_is_not_utf8_is_a_clean_error(tmp_path, capsys):
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'[simulation]\nname = "caf\xe9"\n')
    code, stdout, err = cli(capsys, "run", path, "--out", tmp_path / "o")
    assert_clean_error(code, stdout, err, "latin1.toml")


def test_platform_path_that_is_a_directory_is_a_clean_error(tiny_scenario, tmp_path, capsys):
    folder = tmp_path / "platforms"
    folder.mkdir()
    code, stdout, err = cli(capsys, "run", tiny_scenario, "--platform", folder)
    assert_clean_error(code, stdout, err, "platforms")


def test_out_that_is_a_file_is_a_clean_error(tiny_scenario, tmp_path, capsys):
    target = tmp_path / "taken"
    target.write_text("not a folder")
    code, stdout, err = cli(capsys, "run", tiny_scenario, "--out", target, "-q")
    assert_clean_error(code, stdout, err, "taken")


# ------------------------------------------------------------------- trace
def test_trace_info_on_a_bundled_trace_prints_jobs_and_drop_reasons(capsys):
    code, out, err = cli(capsys, "trace", "info", DAS2_SWF)
    assert code == 0, err
    info = trace_info(DAS2_SWF)
    lines = out.splitlines()
    jobs_line = next(line for line in lines if line.split()[:1] == ["jobs"])
    assert jobs_line.split()[1] == str(info["jobs"]) == "39356"
    assert "dropped:" in lines
    for reason, count in info["dropped"].items():
        assert f"  {reason}: {count}" in lines
    assert info["dropped"] == {"cancelled: runtime -1": 959}
    assert any(line.split()[:2] == ["dropped_total", "959"] for line in lines)


def test_trace_info_reports_each_drop_reason_of_a_small_file(tmp_path, capsys):
    text = swf((0, 100, 2, 200), (10, -1, 1, 100), (20, 30, 1, 60), (30, -1, 2, 60))
    lines = text.splitlines()
    # Job 3 has neither allocated nor requested processors.
    lines[4] = SWF_LINE.format(n=3, submit=20, run=30, procs=-1, req=60)
    path = tmp_path / "t.swf"
    path.write_text("\n".join(lines) + "\n")
    code, out, err = cli(capsys, "trace", "info", path)
    assert code == 0, err
    info = trace_info(path)
    assert info["jobs"] == 1 and info["dropped_total"] == 3
    assert any(line.split()[:2] == ["jobs", "1"] for line in out.splitlines())
    for reason, count in info["dropped"].items():
        assert f"  {reason}: {count}" in out
    assert "cancelled: runtime -1: 2" in out


def test_trace_info_errors(tmp_path, capsys):
    assert_clean_error(*cli(capsys, "trace", "info", tmp_path / "nothere.swf"), "nothere.swf")
    bad = tmp_path / "bad.swf"
    bad.write_text("1 0 0 10 1\n")
    assert_clean_error(*cli(capsys, "trace", "info", bad), "bad.swf:1")


def test_policies_and_platforms_list_what_run_accepts(capsys):
    from hpcpower.platform import PRESETS
    from hpcpower.policies.registry import POLICIES

    code, out, _ = cli(capsys, "policies")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == list(POLICIES)
    code, out, _ = cli(capsys, "platforms")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == list(PRESETS)


# ------------------------------------------------------- real subprocesses
def _command() -> list[str]:
    script = shutil.which("hpcpower")
    return [script] if script else [sys.executable, "-m", "hpcpower.cli"]


def test_real_command_exit_codes(tmp_path):
    (tmp_path / "jobs.swf").write_text(swf(*GOOD_JOBS))
    good = scenario(tmp_path, "jobs.swf")
    ok = subprocess.run(
        [*_command(), "run", str(good), "--out", str(tmp_path / "o"), "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "o" / "summary.json").is_file()
    (tmp_path / "bad.swf").write_text(swf(*GOOD_JOBS).replace("\n2 10 0 50", "\n2 10 0 5x", 1))
    bad = subprocess.run(
        [sys.executable, "-m", "hpcpower.cli", "run", str(scenario(tmp_path, "bad.swf"))],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert_clean_error(bad.returncode, bad.stdout, bad.stderr, "bad.swf:4")
    assert not (tmp_path / "runs").exists()


def test_a_result_is_not_overwritten_without_force(tiny_scenario, tmp_path, capsys):
    out = tmp_path / "o"
    code, _, err = cli(capsys, "run", tiny_scenario, "--out", out, "-q")
    assert code == 0, err
    first = (out / "summary.json").read_bytes()
    code, stdout, err = cli(capsys, "run", tiny_scenario, "--out", out, "--seed", "3", "-q")
    assert_clean_error(code, stdout, err, str(out), "--force")
    assert (out / "summary.json").read_bytes() == first
    code, _, err = cli(capsys, "run", tiny_scenario, "--out", out, "--seed", "3", "-q", "--force")
    assert code == 0, err
    assert read_summary(out)["config"]["seed"] == 3


def test_a_bad_out_is_refused_before_the_run(tiny_scenario, tmp_path, capsys, monkeypatch):
    import hpcpower.simulation

    def never(*args, **kwargs):
        raise AssertionError("the run started before --out was checked")

    monkeypatch.setattr(hpcpower.simulation.Simulation, "run", never)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, out, err = cli(capsys, "run", tiny_scenario, "--out", blocker / "run")
    assert_clean_error(code, out, err, "cannot make its folder")


@pytest.mark.parametrize("name", ["../elsewhere", "/tmp/abs", "a/../../b"])
def test_simulation_name_cannot_leave_runs(tiny_scenario, tmp_path, capsys, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "run", tiny_scenario, "--set", f"simulation.name={name}")
    assert_clean_error(code, out, err, "simulation.name", "outside runs/")
    assert not (tmp_path / "elsewhere").exists()


def test_a_workload_file_runs_without_a_scenario(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    trace = DATA / "DAS2-fs1-2003-1.swf.gz"
    code, out, err = cli(
        capsys, "run", trace, "--platform", "aoba-64", "--policy", "fcfs-easy",
        "--set", "workload.first=200", "--json",
    )  # fmt: skip
    assert code == 0, err
    summary = json.loads(out)  # stdout holds the summary as JSON, and nothing else
    assert summary["jobs_submitted"] == 200
    assert summary["config"]["policy"]["name"] == "fcfs-easy"
    assert (tmp_path / "runs" / "DAS2-fs1-2003-1" / "fcfs-easy" / "jobs.csv").exists()


@pytest.mark.parametrize(
    "setting,needles",
    [
        ("simulation.seed=-1", ["seed must be a whole number >= 0", "-1"]),
        ("simulation.seed=true", ["simulation.seed", "expected a number, got true"]),
        ("policy.timeout_s=false", ["policy.timeout_s", "expected a number"]),
        ("simulation.initial_state=computing", ["initial_state", "'computing'"]),
        ("workload.first=0", []),  # (0 keeps every job: not an error)
    ],
)
def test_bad_simulation_settings_are_one_line(tiny_scenario, tmp_path, capsys, setting, needles):
    out_dir = tmp_path / "o"
    code, out, err = cli(capsys, "run", tiny_scenario, "--set", setting, "--out", out_dir, "-q")
    if not needles:
        assert code == 0, err
        return
    assert_clean_error(code, out, err, *needles)
    assert not out_dir.exists()


def test_an_infinite_value_is_written_as_valid_json(tiny_scenario, tmp_path, capsys):
    out = tmp_path / "o"
    code, _, err = cli(capsys, "run", tiny_scenario, "--set", "policy.timeout_s=inf", "--out", out)
    assert code == 0, err
    summary = read_summary(out)  # (refuses NaN and Infinity)
    assert summary["config"]["policy"]["timeout_s"] == "inf"


def test_python_dash_m_hpcpower_is_the_command():
    done = subprocess.run(
        [sys.executable, "-m", "hpcpower", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("hpcpower ")


@pytest.mark.parametrize(
    "sets,needles",
    [
        (["workload.first=-3"], ["workload.first", "expected 0 (all) or more", "-3"]),
        (["workload.first=2", "workload.jobs=1..5"], ["workload.first and workload.jobs"]),
        (['workload.path=["a"]'], ["setting workload.path: expected text, got ['a']"]),
        (
            ["workload.generator=markovian", "workload.path=", "workload.seed=-1"],
            ["setting workload.seed: expected a whole number >= 0, got -1"],
        ),
    ],
)
def test_bad_workload_selection_is_one_line(tiny_scenario, tmp_path, capsys, sets, needles):
    args = [arg for s in sets for arg in ("--set", s)]
    code, out, err = cli(capsys, "run", tiny_scenario, *args, "--out", tmp_path / "o")
    assert_clean_error(code, out, err, *needles)


def test_a_relative_platform_on_the_command_line_is_from_the_current_folder(
    tiny_scenario, tmp_path, capsys, monkeypatch
):
    import importlib.resources

    here = tmp_path / "elsewhere"
    here.mkdir()
    preset = importlib.resources.files("hpcpower") / "platforms" / "aoba-64.json"
    (here / "mine.json").write_text(preset.read_text())
    monkeypatch.chdir(here)
    code, _, err = cli(capsys, "run", tiny_scenario, "--platform", "mine.json", "--out", "o", "-q")
    assert code == 0, err
    assert read_summary(here / "o")["config"]["platform"] == "mine"


@pytest.mark.parametrize(
    "text,needles",
    [("[1, 2]", ["a platform file holds a JSON object, not list"]), ("{", ["not valid JSON"])],
)
def test_a_malformed_platform_file_is_one_line(tiny_scenario, tmp_path, capsys, text, needles):
    platform = tmp_path / "bad.json"
    platform.write_text(text)
    code, out, err = cli(
        capsys, "run", tiny_scenario, "--platform", platform, "--out", tmp_path / "o"
    )
    assert_clean_error(code, out, err, "bad.json", *needles)


def _preset_with(path: tuple, value) -> str:
    """The aoba-64 preset's JSON with one field replaced (or removed when value is ...)."""
    data = json.loads(
        (importlib.resources.files("hpcpower") / "platforms" / "aoba-64.json").read_text()
    )
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is ...:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return json.dumps(data)


_MACHINE = ("machines", 0)
_OFF = (*_MACHINE, "states", "switching_off")


@pytest.mark.parametrize(
    "path,value,needle",
    [
        ((*_MACHINE, "id"), [], "machines[0].id: no node ids"),
        ((*_MACHINE, "id"), ["5-2"], "machines[0].id[0]: node id range '5-2' holds no node"),
        ((*_MACHINE, "id"), [True], 'machines[0].id[0]: expected a node id or a range like "0-63"'),
        (
            (*_OFF, "transitions"),
            {"state": "sleeping"},
            "switching_off.transitions: must be a list",
        ),
        ((*_OFF, "transitions"), [], "states.switching_off: no transition to 'sleeping'"),
        ((*_OFF, "transitions", 0), "sleeping", "transitions[0]: must be a JSON object"),
        ((*_MACHINE, "dvfs_profiles"), 3, "machines[0].dvfs_profiles: must be a JSON object"),
        ((*_MACHINE, "dvfs_mode"), ["base"], "machines[0].dvfs_mode: profile ['base'] not in"),
        ((*_MACHINE, "states"), ..., "machines[0]: missing field 'states'"),
    ],
)
def test_a_platform_with_a_bad_field_is_one_line_naming_it(
    tiny_scenario, tmp_path, capsys, path, value, needle
):
    """Before, an empty id list ran and ended in ZeroDivisionError; bad transitions were
    tracebacks."""
    platform = tmp_path / "bad.json"
    platform.write_text(_preset_with(path, value))
    code, out, err = cli(
        capsys, "run", tiny_scenario, "--platform", platform, "--out", tmp_path / "o"
    )
    assert_clean_error(code, out, err, "bad.json", needle)
    assert not (tmp_path / "o").exists()


def test_the_run_says_what_the_reader_did_and_warns_of_a_larger_traced_machine(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    trace = DATA / "lublin_256.swf.gz"
    code, out, err = cli(
        capsys, "run", trace, "--platform", "aoba-64", "--set", "workload.first=200"
    )
    assert code == 0, err
    assert err.startswith("hpcpower: warning: ")
    assert "the traced machine has 256 nodes, the platform 64; 14 of its 200 jobs" in err
    assert "workload: requested time -1 filled with the runtime for 200 jobs" in out
    notes = read_summary(tmp_path / "runs" / "lublin_256" / "snf-ipm")["config"]["workload_notes"]
    assert notes["traced_machine_nodes"] == 256 and notes["dropped_total"] == 0
    assert "requested time -1 filled with the runtime for 200 jobs" in notes["notes"]


STUDENT_POLICY = '''
"""Switch every idle node off at once; wake just enough nodes for the head job."""

from hpcpower import Decision, Policy


class EagerOff(Policy):
    name = "eager-off"

    def __init__(self, spare=0):
        self.spare = spare

    def decide(self, view):
        cluster = view.cluster
        decision = Decision()
        idle = sorted(cluster.idle)
        queue = view.queue.fcfs()
        if queue:
            head = queue[0]
            if head.res <= len(idle):
                decision.start.append((head, idle[: head.res]))
                idle = idle[head.res :]
            else:
                need = head.res - len(idle) - len(cluster.switching_on)
                decision.switch_on.extend(sorted(cluster.sleeping)[: max(0, need)])
                return decision
        decision.switch_off.extend(idle[self.spare :])
        return decision
'''


def test_a_policy_of_your_own_runs_from_a_file_without_editing_the_package(
    tiny_scenario, tmp_path, capsys, monkeypatch
):
    (tmp_path / "student.py").write_text(STUDENT_POLICY)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(
        capsys, "run", tiny_scenario, "--policy", "student.py:EagerOff", "--out", "o", "-q"
    )
    assert code == 0, err
    summary = read_summary(tmp_path / "o")
    assert summary["config"]["policy"] == {"name": "eager-off"}
    assert summary["jobs_completed"] == summary["jobs_submitted"]
    assert summary["switch_offs"] > 0
    # Its settings come from --set; the default timeout_s is not forced on it.
    code, _, err = cli(
        capsys,
        "run",
        tiny_scenario,
        "--policy",
        "student.py:EagerOff",
        "--set",
        "policy.spare=1",
        "--out",
        "o2",
        "-q",
    )
    assert code == 0, err


@pytest.mark.parametrize(
    "policy,needle",
    [
        ("student.py:Nope", "student.py has no factory 'Nope' (it defines: Decision, EagerOff"),
        ("missing.py:make", "no such file"),
        ("no_such_module:make", "no module 'no_such_module'"),
        ("os:getcwd", "getcwd(...) returned str, not a policy"),
        ("broken.py:make", "broken.py:2: ZeroDivisionError: division by zero"),
        ("failing.py:Failing", "failing.py:5: KeyError: 'nodes' (at t=0 s)"),
    ],
)
def test_a_policy_of_your_own_that_cannot_load_is_one_line(
    tiny_scenario, tmp_path, capsys, monkeypatch, policy, needle
):
    (tmp_path / "student.py").write_text(STUDENT_POLICY)
    (tmp_path / "broken.py").write_text("x = 1\ny = x / 0\n")
    (tmp_path / "failing.py").write_text(
        "from hpcpower import Policy\n\nclass Failing(Policy):\n"
        "    def decide(self, view):\n        return {}['nodes']\n"
    )
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "run", tiny_scenario, "--policy", policy, "--out", "o")
    assert_clean_error(code, out, err, needle)


def test_a_scenario_names_its_own_policy_file_relative_to_its_folder(tmp_path, capsys):
    here = tmp_path / "lesson"
    here.mkdir()
    (here / "student.py").write_text(STUDENT_POLICY)
    (here / "jobs.swf").write_text(swf(*GOOD_JOBS))
    (here / "s.toml").write_text(
        '[workload]\npath = "jobs.swf"\n[policy]\nname = "student.py:EagerOff"\nspare = 1\n'
    )
    code, _, err = cli(capsys, "run", here / "s.toml", "--out", tmp_path / "o", "-q")
    assert code == 0, err
    assert read_summary(tmp_path / "o")["config"]["policy"]["name"] == "eager-off"


def test_a_scenario_names_a_trained_agent_relative_to_its_folder(tmp_path, capsys, monkeypatch):
    here = tmp_path / "study"
    here.mkdir()
    shutil.copy(ROOT / "scenarios" / "rl" / "agents" / "das2-fs1.npz", here / "agent.npz")
    (here / "jobs.swf").write_text(swf(*GOOD_JOBS))
    (here / "s.toml").write_text('[workload]\npath = "jobs.swf"\n[policy]\nname = "rl:agent.npz"\n')
    monkeypatch.chdir(tmp_path)  # not the scenario's folder
    code, _, err = cli(capsys, "run", here / "s.toml", "--out", tmp_path / "o", "-q")
    assert code == 0, err
    summary = read_summary(tmp_path / "o")
    assert summary["jobs_completed"] == summary["jobs_submitted"]


@pytest.mark.skipif(not _numba.AVAILABLE, reason="numba is not installed")
def test_a_first_compile_is_announced_with_the_way_to_build_once(
    tiny_scenario, tmp_path, capsys, monkeypatch
):
    from hpcpower.planning import compiled

    monkeypatch.setattr(compiled, "cached", lambda: False)
    code, _, err = cli(
        capsys, "run", tiny_scenario, "--out", tmp_path / "o", "--set", "simulation.kernels=numba"
    )
    assert code == 0, err
    assert "a long run: compiling the planning kernels first" in err
    assert "`hpcpower build-kernels` builds them once" in err
    monkeypatch.setattr(compiled, "cached", lambda: True)
    code, _, err = cli(
        capsys, "run", tiny_scenario, "--out", tmp_path / "p", "--set", "simulation.kernels=numba"
    )
    assert code == 0 and "compiling" not in err


@pytest.mark.skipif(not _numba.AVAILABLE, reason="numba is not installed")
@pytest.mark.parametrize(
    ("built_for", "said"),
    [({"cpu": "0" * 16}, "another processor"), ({"numpy": "1.0.0"}, "numpy 1.0.0")],
)
def test_a_build_for_another_processor_or_numpy_is_named_and_the_run_compiles(
    tiny_scenario, tmp_path, capsys, monkeypatch, built_for, said
):
    import numpy as np

    from hpcpower.planning import aot, compiled

    twins = tmp_path / "twins"
    twins.mkdir()
    monkeypatch.setenv("HPCPOWER_TWINS_DIR", str(twins))
    module, manifest = aot.paths(compiled.sources_digest())
    module.write_bytes(b"")
    listed = {"digest": compiled.sources_digest(), "numpy": np.__version__, "cpu": None}
    manifest.write_text(json.dumps({**listed, **built_for, "functions": {}}))
    assert not aot.available(compiled.sources_digest())
    code, _, err = cli(
        capsys, "run", tiny_scenario, "--out", tmp_path / "o", "--set", "simulation.kernels=numba"
    )
    assert code == 0, err
    assert (
        f"hpcpower: note: the kernels built ahead of time in {twins} are for {said}, so this "
        "run compiles them instead: run `hpcpower build-kernels` here"
    ) in err
    # A build that fits (or none) says nothing.
    manifest.write_text(json.dumps({**listed, "functions": {}}))
    assert compiled.misfit() is None
    module.unlink()
    code, _, err = cli(
        capsys, "run", tiny_scenario, "--out", tmp_path / "p", "--set", "simulation.kernels=numba"
    )
    assert code == 0 and "note:" not in err
