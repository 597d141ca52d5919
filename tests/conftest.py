"""Shared helpers for the tests: tiny platforms and scripted policies."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from hpcpower.engine.contract import Decision, Policy, SystemView
from hpcpower.platform import Duration, Platform
from hpcpower.workload.job import Job

DATA = Path(__file__).resolve().parents[1] / "scenarios" / "data"

# Twins built ahead of time in a checkout (hpcpower build-kernels) would be
# bound instead of numba's: the tests see an empty folder, and those of the
# twins built ahead of time build their own (tests/planning/test_aot.py).
os.environ["HPCPOWER_TWINS_DIR"] = tempfile.mkdtemp(prefix="hpcpower-tests-twins-")
atexit.register(shutil.rmtree, os.environ["HPCPOWER_TWINS_DIR"], ignore_errors=True)


def tiny_platform(
    n: int = 2, on_s: float = 100.0, off_s: float = 50.0, sd: float = 0.0
) -> Platform:
    """Round numbers so joules are easy to work out by hand.

    computing 200 W, idle 100 W, sleeping 10 W, switching on 150 W, switching off 120 W.
    """
    return Platform.uniform(
        n,
        computing_w=200.0,
        idle_w=100.0,
        sleeping_w=10.0,
        switching_on_w=150.0,
        switching_off_w=120.0,
        switch_on_s=Duration(on_s, sd),
        switch_off_s=Duration(off_s, sd),
        name=f"tiny-{n}",
    )


def job(i: int, submit: float, res: int, runtime: float, reqtime: float | None = None) -> Job:
    return Job(
        i,
        str(i + 1),
        float(submit),
        res,
        float(reqtime if reqtime is not None else runtime),
        float(runtime),
    )


class Scripted(Policy):
    """Applies a fixed script: {time: Decision-like dict}; records every view it saw."""

    name = "scripted"

    def __init__(self, script: dict[float, dict]) -> None:
        self.script = script
        self.seen: list[tuple[float, frozenset[str], int]] = []

    def decide(self, view: SystemView) -> Decision:
        self.seen.append((view.now, view.triggers, len(view.queue)))
        step = self.script.pop(view.now, {})
        d = Decision()
        for job_id, nodes in step.get("start", []):
            d.start.append((next(j for j in view.queue if j.id == job_id), nodes))
        d.switch_off = list(step.get("off", []))
        d.switch_on = list(step.get("on", []))
        d.call_at = sorted(t for t in self.script if t > view.now)[:1]
        return d


@pytest.fixture
def tiny():
    return tiny_platform


#: Test files of the golden runs against the authors' simulator.
GOLDEN_FILES = ("test_golden.py", "test_icon_golden.py")


def pytest_collection_modifyitems(items):
    """Mark the golden runs, so ``-m "not golden"`` skips them locally (CI runs them)."""
    for item in items:
        if item.path.name in GOLDEN_FILES:
            item.add_marker(pytest.mark.golden)
