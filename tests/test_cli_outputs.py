"""Output files of ``plot``, ``animate``, ``view``, ``run`` and ``report``, and damaged run folders.

An ``--out`` that cannot be written is refused in one line before the run;
an error while writing leaves no file and no temporary file behind; a run
folder with damaged files is named in one line, never a traceback.
"""

from __future__ import annotations

import csv
import errno
import importlib
from pathlib import Path

import pytest

from hpcpower.cli import main
from hpcpower.results.export import replacing

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "scenarios" / "quickstart.toml"
#: The first jobs of the quickstart only: a run of a fraction of a second.
SMALL = ("--set", "workload.first=20")
LONG_NAME = "a" * 300


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A small run folder, made once; tests copy it before damaging it."""
    out = tmp_path_factory.mktemp("runs") / "run"
    assert main(["run", str(QUICKSTART), *SMALL, "-q", "--out", str(out)]) == 0
    return out


@pytest.fixture
def no_run(monkeypatch):
    """Fail a test whose command starts a simulation: its --out must be refused first."""
    import hpcpower.simulation

    def never(*args, **kwargs):
        raise AssertionError("the run started before --out was checked")

    monkeypatch.setattr(hpcpower.simulation.Simulation, "run", never)


def cli(capsys, *args: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    """Exit 2 and one line on stderr naming what is wrong."""
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hpcpower: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def report_module():
    """The module ``hpcpower.experiments.report`` (its package's ``report`` is the function)."""
    return importlib.import_module("hpcpower.experiments.report")


def leftovers(folder: Path) -> list[str]:
    """Temporary files of an interrupted write."""
    return [p.name for p in folder.iterdir() if ".partial" in p.name]


# ------------------------------------------------------------ --out refused before the run
def test_a_run_out_where_no_file_can_be_made_is_refused_before_the_run(tmp_path, capsys, no_run):
    code, _, err = cli(capsys, "run", QUICKSTART, *SMALL, "--out", tmp_path / LONG_NAME)
    assert_one_line_error(code, err, "--out", "cannot write there (File name too long)")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize(
    "command",
    [
        ["run", QUICKSTART, "--out", "/proc/x"],
        ["plot", QUICKSTART, "--out", "/proc/x.png"],
        ["animate", QUICKSTART, "--out", "/proc/a.gif"],
        ["view", QUICKSTART, "--out", "/proc/v.html"],
        ["report", ".", "--out", "/proc/rep"],
    ],
    ids=lambda c: c[0],
)
def test_proc_is_refused_in_one_line_even_for_root(capsys, no_run, command):
    code, _, err = cli(capsys, *command)
    assert_one_line_error(code, err, f"--out {command[-1]}: cannot write there")


@pytest.mark.parametrize(
    ("command", "out", "needle"),
    [
        ("plot", "afile/x.png", "cannot make its folder"),
        ("plot", "afolder", "a folder is there"),
        ("plot", LONG_NAME + ".png", "File name too long"),
        ("animate", "afile/a.gif", "cannot make its folder"),
        ("animate", "afolder.gif", "a folder is there"),
        ("view", "afile/v.html", "cannot make its folder"),
        ("view", "afolder.html", "a folder is there"),
        ("view", "afolder", "ending in .html"),
        ("report", "afile", "a file is there, not a folder"),
        ("report", LONG_NAME, "File name too long"),
    ],
)
def test_an_out_that_cannot_be_written_is_one_line_before_the_work(
    tmp_path, capsys, monkeypatch, no_run, command, out, needle
):
    def never(*args, **kwargs):
        raise AssertionError("the report was made before --out was checked")

    monkeypatch.setattr(report_module(), "report", never)
    monkeypatch.chdir(tmp_path)
    Path("afile").write_text("a file")
    Path("afolder").mkdir()
    Path("afolder.gif").mkdir()
    Path("afolder.html").mkdir()
    source = tmp_path if command == "report" else QUICKSTART
    code, _, err = cli(capsys, command, source, "--out", out)
    assert_one_line_error(code, err, needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "afile",
        "afolder",
        "afolder.gif",
        "afolder.html",
    ]
    assert Path("afile").read_text() == "a file"
    assert list(Path("afolder").iterdir()) == []


# ------------------------------------------------------------ errors while writing
def test_a_failed_image_write_is_one_line_and_leaves_no_file(tmp_path, capsys, monkeypatch):
    from matplotlib.figure import Figure

    def disk_full(self, path, **kwargs):
        Path(path).write_bytes(b"half an image")
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(Figure, "savefig", disk_full)
    out = tmp_path / "plot.png"
    code, _, err = cli(capsys, "plot", QUICKSTART, *SMALL, "--out", out)
    assert_one_line_error(code, err, f"--out {out}: cannot write there (No space left on device)")
    assert list(tmp_path.iterdir()) == []


def test_replacing_keeps_the_old_file_when_the_write_fails(tmp_path):
    target = tmp_path / "page.html"
    target.write_text("old")
    with pytest.raises(OSError), replacing(target) as partial:
        partial.write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert target.read_text() == "old"
    assert leftovers(tmp_path) == []
    with replacing(target) as partial:
        partial.write_text("new")
    assert target.read_text() == "new"
    assert leftovers(tmp_path) == []


def test_an_unexpected_os_error_naming_a_file_is_one_line(tmp_path, capsys, monkeypatch):
    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", "sweep/results.parquet")

    monkeypatch.setattr(report_module(), "report", refused)
    code, _, err = cli(capsys, "report", tmp_path)
    assert_one_line_error(code, err, "sweep/results.parquet: Permission denied")


# ------------------------------------------------------------ view --out and --force
def test_view_replaces_a_file_only_with_force(run_dir, tmp_path, capsys):
    out = tmp_path / "page.html"
    out.write_text("mine")
    code, _, err = cli(capsys, "view", run_dir, "--out", out)
    assert_one_line_error(code, err, f"--out {out}", "--force")
    assert out.read_text() == "mine"
    code, stdout, err = cli(capsys, "view", run_dir, "--out", out, "--force")
    assert code == 0, err
    assert stdout == f"wrote {out}\n"
    assert out.read_text().startswith("<!DOCTYPE html>") or "<html" in out.read_text()[:200]
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("name", ["summary.json", "jobs.csv"])
def test_view_never_writes_over_a_runs_own_files(run_dir, capsys, name):
    before = (run_dir / name).read_bytes()
    code, _, err = cli(capsys, "view", run_dir, "--out", run_dir / name, "--force")
    assert_one_line_error(code, err, "ending in .html")
    assert (run_dir / name).read_bytes() == before


def test_view_does_not_write_over_its_own_scenario(tmp_path, capsys, no_run):
    scenario = tmp_path / "s.toml"
    scenario.write_text(QUICKSTART.read_text())
    code, _, err = cli(capsys, "view", scenario, "--out", scenario)
    assert_one_line_error(code, err, "ending in .html")
    assert scenario.read_text() == QUICKSTART.read_text()


# ------------------------------------------------------------ plot: the name printed
def test_plot_without_an_ending_writes_png_and_says_so(tmp_path, capsys):
    code, stdout, err = cli(capsys, "plot", QUICKSTART, *SMALL, "--out", tmp_path / "o" / "p")
    assert code == 0, err
    written = tmp_path / "o" / "p.png"
    assert stdout == f"wrote {written}\n"
    assert written.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in (tmp_path / "o").iterdir()] == ["p.png"]


def test_plot_with_an_unknown_ending_is_refused_before_the_run(tmp_path, capsys, no_run):
    code, _, err = cli(capsys, "plot", QUICKSTART, "--out", tmp_path / "p.nope")
    assert_one_line_error(code, err, "Format 'nope' is not supported")


# ------------------------------------------------------------ animate --fps
@pytest.mark.parametrize(
    ("fps", "needle"),
    [
        ("0", "--fps: expected a number > 0, got 0"),
        ("-1", "--fps: expected a number > 0, got -1"),
        ("nan", "--fps: expected a number > 0, got nan"),
        ("inf", "--fps: expected a number > 0, got inf"),
        ("1e-9", "--fps: a GIF frame lasts at most 655.35 s"),
    ],
)
def test_a_bad_fps_is_one_line_before_the_run(tmp_path, capsys, no_run, fps, needle):
    out = tmp_path / "a.gif"
    code, _, err = cli(capsys, "animate", QUICKSTART, "--out", out, "--fps", fps)
    assert_one_line_error(code, err, needle)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------ damaged run folders
def _drop_column(path: Path, column: str) -> None:
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    i = rows[0].index(column)
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(row[:i] + row[i + 1 :] for row in rows)


def _replace_field(path: Path, line: int, column: str, value: str) -> None:
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    rows[line - 1][rows[0].index(column)] = value
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)


def _folder_in_place(path: Path) -> None:
    path.unlink()
    path.mkdir()


DAMAGES = {
    "summary-list": (
        lambda run: (run / "summary.json").write_text("[1]"),
        ["summary.json", "not a run's summary"],
    ),
    "summary-folder": (
        lambda run: _folder_in_place(run / "summary.json"),
        ["summary.json", "cannot read it"],
    ),
    "summary-binary": (
        lambda run: (run / "summary.json").write_bytes(b"\xff\xfe\x00garbage"),
        ["summary.json", "not UTF-8"],
    ),
    "summary-bad-json": (
        lambda run: (run / "summary.json").write_text('{"config": {}\n,,}'),
        ["summary.json", "not valid JSON", "line 2"],
    ),
    "jobs-no-id": (
        lambda run: _drop_column(run / "jobs.csv", "job_id"),
        ["jobs.csv", "no job_id column"],
    ),
    "pstate-not-a-number": (
        lambda run: _replace_field(run / "pstate_changes.csv", 3, "time", "abc"),
        ["pstate_changes.csv, line 3", "time 'abc' is not a number"],
    ),
    "pstate-unknown-state": (
        lambda run: _replace_field(run / "pstate_changes.csv", 2, "new_pstate", "9"),
        ["pstate_changes.csv, line 2", "new_pstate '9' is not a power state"],
    ),
    "energy-binary": (
        lambda run: (run / "consumed_energy.csv").write_bytes(bytes(range(256)) * 8),
        ["consumed_energy.csv", "not UTF-8"],
    ),
    "energy-folder": (
        lambda run: _folder_in_place(run / "consumed_energy.csv"),
        ["consumed_energy.csv", "cannot read it"],
    ),
}


def damaged_copy(run_dir: Path, tmp_path: Path, damage: str) -> tuple[Path, list[str]]:
    """A copy of the run folder with one of DAMAGES done to it, and what the error must say."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    spoil, needles = DAMAGES[damage]
    spoil(run)
    return run, needles


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_view_of_a_damaged_run_folder_names_the_file(run_dir, tmp_path, capsys, damage):
    run, needles = damaged_copy(run_dir, tmp_path, damage)
    out = tmp_path / "page.html"
    code, _, err = cli(capsys, "view", run, "--out", out)
    assert_one_line_error(code, err, str(run), *needles)
    assert not out.exists()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "damage", [d for d in DAMAGES if d.startswith("summary")] + ["scenario-not-a-table"]
)
def test_plot_of_a_damaged_run_folder_names_the_file(run_dir, tmp_path, capsys, no_run, damage):
    import json
    import shutil

    if damage == "scenario-not-a-table":
        run = tmp_path / "run"
        shutil.copytree(run_dir, run)
        summary = json.loads((run / "summary.json").read_text())
        summary["config"]["scenario"] = 5
        (run / "summary.json").write_text(json.dumps(summary))
        needles = ["summary.json: config.scenario", "not a table of settings"]
    else:
        run, needles = damaged_copy(run_dir, tmp_path, damage)
    out = tmp_path / "plot.png"
    code, _, err = cli(capsys, "plot", run, "--out", out)
    assert_one_line_error(code, err, str(run), *needles)
    assert not out.exists()
