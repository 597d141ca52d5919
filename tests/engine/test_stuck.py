"""A run that cannot progress stops with an error naming the time, the policy and what repeats."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

HEAD = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from conftest import job, tiny_platform
    from hpcpower import Simulation, make_policy
    from hpcpower.engine.contract import Decision, Policy
    from hpcpower.errors import PolicyError
    """
)


def run_until_stopped(body: str) -> tuple[str, float]:
    """Run ``body`` in a fresh interpreter (a hang cannot hang the suite): its output, its time."""
    code = HEAD.format(tests=str(TESTS)) + textwrap.dedent(body)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip(), time.perf_counter() - t0


@pytest.mark.parametrize("policy", ["snf-ipm", "fcfs-easy-ipm", "snf-icon"])
def test_nodes_switched_off_and_on_forever_at_one_instant(policy):
    """Instant transitions with a 0 s timeout: a 2-node job plans on a node IPM switches off."""
    out, seconds = run_until_stopped(
        f"""
        platform = tiny_platform(2, on_s=0.0, off_s=0.0)
        jobs = [job(0, 0, 1, 100.0), job(1, 10, 2, 50.0)]
        try:
            Simulation(platform, jobs, make_policy({policy!r}, timeout_s=0)).run()
        except PolicyError as exc:
            print(exc)
        """
    )
    assert seconds < 10
    assert out.startswith(f"{policy}: 1008 controller passes at t=100.0 s without simulated")
    assert "switch off [" in out and "switch on [" in out
    assert "give the transitions a duration or the timeout a positive value" in out
    assert "\n" not in out


@pytest.mark.parametrize("later", ["math.nextafter(view.now, math.inf)", "view.now + 1e-12"])
def test_a_policy_that_asks_to_be_called_back_a_float_resolution_later(later):
    """Time that advances by less than it can resolve is time that does not move on."""
    out, seconds = run_until_stopped(
        f"""
        import math

        class Creeper(Policy):
            name = "creeper"

            def decide(self, view):
                return Decision(call_at=[{later}])

        jobs = [job(0, 1e9, 1, 10), job(1, 2e9, 1, 10)]
        try:
            Simulation(tiny_platform(2), jobs, Creeper()).run()
        except PolicyError as exc:
            print(exc)
        """
    )
    assert seconds < 10
    assert out.startswith("creeper: 1008 controller passes at t=")
    assert "without simulated time moving on (by 1e-06 s or more); the policy only asks" in out
    assert out.endswith("s): ask for a later time")


def test_a_policy_that_only_asks_to_be_called_back():
    out, seconds = run_until_stopped(
        """
        class Waiter(Policy):
            name = "waiter"

            def decide(self, view):
                return Decision(call_at=[view.now + 60.0])

        try:
            Simulation(tiny_platform(2), [job(0, 0, 1, 10)], Waiter()).run()
        except PolicyError as exc:
            print(exc)
        """
    )
    assert seconds < 10
    assert out.startswith("waiter: 100000 passes up to t=")
    assert "nothing running, no job left to arrive and 1 waiting" in out
    assert "no job can ever start. Job 1 needs 1 node; the nodes are 2 idle." in out


def test_a_policy_that_never_wakes_the_nodes_a_job_needs_is_stopped_naming_them():
    """The student's bug: asleep nodes, a waiting job, and a policy that only waits."""
    out, seconds = run_until_stopped(
        """
        class Sleepy(Policy):
            name = "sleepy"

            def decide(self, view):
                return Decision(call_at=[view.now + 600.0])

        jobs = [job(0, 0, 2, 10)]
        try:
            Simulation(tiny_platform(3), jobs, Sleepy(), initial_state="sleeping").run()
        except PolicyError as exc:
            print(exc)
        """
    )
    assert seconds < 5
    assert out.endswith(
        "Job 1 needs 2 nodes; the nodes are 3 sleeping (not idle: [0, 1, 2]). "
        "Wake the sleeping nodes it needs, or start it"
    )


def test_a_policy_that_waits_while_work_remains_is_not_stopped():
    """Waiting with jobs still to arrive (or running) is progress, however many wake-ups."""
    out, _ = run_until_stopped(
        """
        class Patient(Policy):
            name = "patient"

            def decide(self, view):
                d = Decision(call_at=[view.now + 1.0])
                if view.now >= 150_000.0:
                    d.start = [(j, [0]) for j in view.queue.fcfs()[:1]]
                return d

        jobs = [job(0, 0, 1, 10), job(1, 200_000.0, 1, 10)]
        res = Simulation(tiny_platform(2), jobs, Patient()).run()
        print(res.summary["jobs_completed"])
        """
    )
    assert out == "2"


def test_many_jobs_that_take_no_time_at_one_instant_are_not_a_stuck_run():
    """1200 zero-length whole-machine jobs drain at one instant, one start per pass."""
    out, _ = run_until_stopped(
        """
        jobs = [job(0, 0, 2, 100.0)] + [job(i, 10.0, 2, 0.0) for i in range(1, 1200)]
        for name in ("fcfs-easy", "snf-ipm", "fcfs-easy-ipm"):
            res = Simulation(tiny_platform(2), jobs, make_policy(name)).run()
            print(res.summary["jobs_completed"])
        """
    )
    assert out.split() == ["1200"] * 3


def test_a_policy_that_keeps_switching_nodes_while_a_job_waits_is_stopped():
    """Nodes switched off as they come up: time moves on, commands come, nothing starts."""
    out, seconds = run_until_stopped(
        """
        class Restless(Policy):
            name = "restless"

            def decide(self, view):
                cluster = view.cluster
                return Decision(switch_off=sorted(cluster.idle), switch_on=sorted(cluster.sleeping))

        jobs = [job(0, 0, 2, 10)]
        try:
            Simulation(tiny_platform(2), jobs, Restless(), initial_state="sleeping").run()
        except PolicyError as exc:
            print(exc)
        """
    )
    assert seconds < 30
    assert out.startswith("restless: 100009 passes up to t=")
    assert "no job left to arrive and 1 waiting, and the policy keeps switching nodes but " in out
    assert out.endswith("Start it once they are idle")


def test_a_stall_after_asking_for_a_time_already_past_says_it_was_ignored():
    out, _ = run_until_stopped(
        """
        class Late(Policy):
            name = "late"

            def decide(self, view):
                return Decision(call_at=[view.now - 1.0])

        try:
            Simulation(tiny_platform(2), [job(0, 5, 1, 10)], Late()).run()
        except PolicyError as exc:
            print(exc)
        """
    )
    assert out == (
        "late: the simulation stalled at t=5 s with 1 jobs waiting and nothing scheduled; "
        "the last pass asked to be called back at t=4.0 s, which is not after now and was "
        "ignored: ask for a later time"
    )
