"""Results are written whole or not at all, and an existing result is replaced only on request."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import job, tiny_platform

from hpcpower import Simulation, make_policy
from hpcpower.errors import InputError
from hpcpower.results.export import check_out, write_all

ROOT = Path(__file__).resolve().parents[2]


def tiny_results(n_jobs: int = 6):
    jobs = [job(i, 10.0 * i, 1, 30.0 + i) for i in range(n_jobs)]
    return Simulation(tiny_platform(2), jobs, make_policy("snf-ipm", timeout_s=5)).run()


def complete(folder: Path, n_jobs: int) -> bool:
    """A whole result: every file there, jobs.csv with every job, summary.json valid."""
    names = {p.name for p in folder.iterdir()}
    if not {"summary.json", "jobs.csv", "machine_states.csv"} <= names:
        return False
    summary = json.loads((folder / "summary.json").read_text())
    rows = (folder / "jobs.csv").read_text().splitlines()
    return summary["jobs_submitted"] == n_jobs and len(rows) == n_jobs + 1


def test_an_existing_result_is_replaced_only_with_force(tmp_path):
    out = tmp_path / "run"
    write_all(tiny_results(3), out)
    with pytest.raises(InputError, match=r"run: a result folder is already there; use --force"):
        write_all(tiny_results(4), out)
    assert complete(out, 3)
    write_all(tiny_results(4), out, force=True)
    assert complete(out, 4)
    # Nothing is left beside it: no staging or old folders.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_an_empty_folder_may_be_written_into(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    write_all(tiny_results(2), out)
    assert complete(out, 2)


def test_force_replaces_only_a_result_folder(tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    with pytest.raises(InputError, match=r"precious: not an hpcpower result \(thesis.tex\)"):
        write_all(tiny_results(2), precious, force=True)
    assert (precious / "thesis.tex").read_text() == "years of work"


def test_the_current_folder_or_one_above_is_never_an_output(tmp_path, monkeypatch):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    for out in (".", "..", str(tmp_path)):
        with pytest.raises(InputError, match="the current folder or one above it"):
            write_all(tiny_results(2), out, force=True)


def test_a_result_folder_follows_the_umask(tmp_path):
    import os

    old = os.umask(0o022)
    try:
        write_all(tiny_results(2), tmp_path / "shared")
    finally:
        os.umask(old)
    assert (tmp_path / "shared").stat().st_mode & 0o777 == 0o755


def test_the_output_folder_is_checked_before_a_run(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="exists and is not a folder"):
        check_out(blocker)
    with pytest.raises(InputError, match="cannot make its folder"):
        check_out(blocker / "sub" / "run")


#: A run whose writing sends a signal to itself right after step ``STEP``
#: (0: before the first file, 1-3: after each file, 4: between the two renames).
SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {tests!r})
    from conftest import job, tiny_platform
    from hpcpower import Simulation, make_policy
    from hpcpower.cli import main
    from hpcpower.results import export

    step, sig = int(sys.argv[1]), getattr(signal, sys.argv[2])
    # Ctrl-C as a terminal gives it: a process started in the background of
    # a shell without job control (a CI job under nohup ... &) inherits SIGINT
    # ignored, and Python then keeps ignoring it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    calls = []

    def after(func):
        def wrapped(*args, **kwargs):
            if step == 0 and not calls:
                os.kill(os.getpid(), sig)
            out = func(*args, **kwargs)
            calls.append(func.__name__)
            if len(calls) == step:
                os.kill(os.getpid(), sig)
            return out
        return wrapped

    for name in ("write_summary_json", "write_jobs_csv", "write_machine_states_csv"):
        setattr(export, name, after(getattr(export, name)))
    if step == 4:
        real_replace = os.replace

        def replace(src, dst):
            real_replace(src, dst)
            if str(dst).endswith("result"):  # the old result set aside, the new not yet in
                os.kill(os.getpid(), sig)

        os.replace = replace
    sys.exit(main(["run", sys.argv[3], "--out", sys.argv[4], "-q"] + sys.argv[5:]))
    """
)


def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(
        textwrap.dedent(
            """
            [platform]
            name = "aoba-64"
            [workload]
            path = "{data}"
            first = 20
            """
        ).format(data=(ROOT / "scenarios/data/DAS2-fs1-0-3000.json.gz").as_posix())
    )
    return path


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("step", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("previous", [False, True], ids=["new", "replacing"])
def test_an_interrupted_write_leaves_the_old_result_or_none(tmp_path, sig, step, previous):
    script = tmp_path / "interrupt.py"
    script.write_text(SCRIPT.format(tests=str(ROOT / "tests")))
    out = tmp_path / "out"
    toml = scenario(tmp_path)
    if previous:
        done = subprocess.run(
            [sys.executable, "-m", "hpcpower.cli", "run", str(toml), "--out", str(out), "-q"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        before = {p.name: p.read_bytes() for p in out.iterdir()}
    extra = ["--force"] if previous else []
    done = subprocess.run(
        [sys.executable, str(script), str(step), sig, str(toml), str(out), *extra],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if step == 4 and not previous:  # (no old result to set aside: no signal)
        assert done.returncode == 0, done.stderr
        assert complete(out, 20)
        return
    assert done.returncode == (130 if sig == "SIGINT" else 143), done.stderr
    assert done.stderr.strip() == (
        "hpcpower: interrupted" if sig == "SIGINT" else "hpcpower: terminated"
    )
    if previous:  # (interrupted between the renames too: the old result is put back)
        assert complete(out, 20)
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    else:
        assert not out.exists()
    # Nothing half-written is left beside it.
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == []
