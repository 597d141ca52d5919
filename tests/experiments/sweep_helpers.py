"""Shared helpers of the sweep tests: small sweep files and table comparison."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "scenarios" / "sweeps" / "smoke.toml"
QUICKSTART = ROOT / "scenarios" / "quickstart.toml"

#: Columns that differ between two runs of the same sweep: time, and the
#: planning form (a worker that has loaded the compiled twins uses them for
#: every later run; the results are the same).
VOLATILE = ("wall_time_s", "finished_at", "kernels")


def comparable(frame):
    """A sweep's table without its timing columns, in a fixed row order."""
    kept = frame.drop(columns=[c for c in VOLATILE if c in frame.columns])
    return kept.sort_values("run_id").reset_index(drop=True)


def write_sweep(folder: Path, text: str, name: str = "sweep.toml") -> Path:
    """Write a sweep file whose base scenario is the quickstart."""
    path = folder / name
    path.write_text(text.replace("QUICKSTART", QUICKSTART.as_posix()))
    return path


def hpcpower(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """Run the ``hpcpower`` command in a subprocess with this checkout first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(kwargs.pop("env", {}))
    return subprocess.run(
        [sys.executable, "-m", "hpcpower", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=kwargs.pop("timeout", 300),
        **kwargs,
    )
