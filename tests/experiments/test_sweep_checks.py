"""A sweep refuses what would lose or mix results, with one clear line, before it writes."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sweep_helpers import hpcpower, write_sweep

import hpcpower as hp
from hpcpower.errors import InputError
from hpcpower.experiments import runner

pytest.importorskip("pandas")

SMALL = """
[sweep]
name = "NAME"
scenario = "QUICKSTART"
seeds = SEEDS
[set]
workload.first = 20
"""


def small(tmp_path, name: str, seeds: str = "[0]"):
    text = SMALL.replace("NAME", name).replace("SEEDS", seeds)
    return write_sweep(tmp_path, text, f"{name}.toml")


def one_error_line(done: subprocess.CompletedProcess) -> str:
    """The error line of a refused command (exit status 2, one line, no traceback)."""
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("hpcpower: error: ")
    return done.stderr


def test_resuming_with_another_sweep_is_refused_and_changes_nothing(tmp_path):
    out = tmp_path / "out"
    hp.sweep(small(tmp_path, "A"), out, workers=1)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    done = hpcpower("sweep", str(small(tmp_path, "B")), "--out", str(out), "--resume")
    line = one_error_line(done)
    assert f"{out}: holds sweep 'A' (another plan), not this one; --resume" in line
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    # The same plan under the same name but sharing no run is another sweep too.
    other = write_sweep(tmp_path, SMALL.replace("NAME", "A").replace("SEEDS", "[7]"), "A2.toml")
    with pytest.raises(InputError, match="holds sweep 'A' \\(another plan\\)"):
        hp.sweep(other, out, resume=True)


def test_resuming_the_same_or_an_edited_sweep_still_works(tmp_path):
    out = tmp_path / "out"
    hp.sweep(small(tmp_path, "A"), out, workers=1)
    again = runner.run_sweep(small(tmp_path, "A"), out, runner.Options(resume=True))
    assert (again.skipped, again.done) == (1, 0)
    more = runner.run_sweep(small(tmp_path, "A", "[0, 1]"), out, runner.Options(resume=True))
    assert (more.skipped, more.done) == (1, 1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{\n", "sweep.json: not valid JSON at line 2"),
        ("[]", "sweep.json: not a sweep plan"),
        ('{"name": "x"}', "sweep.json: not a sweep plan"),
    ],
)
def test_report_of_a_broken_sweep_json_is_one_line(tmp_path, text, message):
    (tmp_path / "sweep.json").write_text(text)
    line = one_error_line(hpcpower("report", str(tmp_path)))
    assert f"{tmp_path / 'sweep.json'}" in line and message in line
    assert not (tmp_path / "report").exists()


def test_a_reference_that_is_no_policy_of_the_sweep_is_refused_at_plan_time(tmp_path):
    sweep = write_sweep(
        tmp_path,
        '[sweep]\nscenario = "QUICKSTART"\n[grid]\npolicy.name = ["snf-ipm", "fcfs-easy-ipm"]\n'
        '[report]\nreference = ["fcfs-easy-ipmm"]\n',
    )
    for extra in ((), ("--dry-run",)):
        line = one_error_line(hpcpower("sweep", str(sweep), "--out", str(tmp_path / "o"), *extra))
        assert (
            "[report] reference: 'fcfs-easy-ipmm' is not a policy of this sweep "
            "(its policies: snf-ipm, fcfs-easy-ipm)"
        ) in line
    assert not (tmp_path / "o").exists()


def test_a_scheduler_address_without_a_port_is_refused_before_the_folder(tmp_path):
    pytest.importorskip("dask.distributed")
    out = tmp_path / "out"
    args = ("--out", str(out), "--executor", "dask", "--scheduler-address", "notanaddress")
    line = one_error_line(hpcpower("sweep", str(small(tmp_path, "A")), *args))
    assert "scheduler address 'notanaddress': expected host:port" in line
    assert not out.exists()


def test_an_executor_that_cannot_start_leaves_no_folder(tmp_path, monkeypatch):
    def unreachable(*args, **kwargs):
        raise InputError("cannot reach the executor")
        yield  # a generator, like the real executors

    monkeypatch.setattr(runner, "_local", unreachable)
    sweep = small(tmp_path, "A")
    with pytest.raises(InputError, match="cannot reach"):
        hp.sweep(sweep, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # so the same command simply runs again
    # A folder the sweep did not make (a resumed one) is kept as it was.
    monkeypatch.undo()
    hp.sweep(sweep, tmp_path / "out", workers=1)
    monkeypatch.setattr(runner, "_local", unreachable)
    with pytest.raises(InputError, match="cannot reach"):
        hp.sweep(small(tmp_path, "A", "[0, 1]"), tmp_path / "out", resume=True)
    assert len(list((tmp_path / "out" / "runs").glob("*.json"))) == 1


def test_a_script_without_the_main_guard_is_told_so(tmp_path):
    sweep = small(tmp_path, "A")
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import hpcpower\n"
        f"frame = hpcpower.sweep({str(sweep)!r}, {str(tmp_path / 'out')!r}, workers=1)\n"
        "print(frame['error'].iloc[0])\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert 'has no `if __name__ == "__main__":` guard' in done.stdout, done.stderr
    # Each worker that re-imported the script said why it stopped.
    assert 'put the call under `if __name__ == "__main__":`' in done.stderr
