"""When may a job running past its requested time be planned around? (``policy.overrun_release``)

``"never"`` is the authors' simulator: the nodes of such a job are never
planned on, so a head that needs them gets no reservation and nothing is
backfilled. ``"now"`` is textbook EASY: the job is predicted to end now.
The ``"now"`` runs are checked against an independent, node-count EASY
written here from the textbook (Mu'alem and Feitelson's shadow time and
extra nodes), on hand-built cases with overrunning jobs.
"""

from __future__ import annotations

import pytest
from conftest import job, tiny_platform

from hpcpower import Simulation, make_policy
from hpcpower.errors import InputError


def textbook_easy(n_nodes: int, jobs) -> dict[int, float]:
    """Start time per job id under EASY with node counts; a running job past its
    requested time is predicted to end now. Nodes are always on."""
    pending = sorted(jobs, key=lambda j: (j.submit_s, j.id))
    queue, running, starts = [], [], {}  # running: (start, job)
    clock = 0.0
    while pending or queue or running:
        events = [j.submit_s for j in pending[:1]] + [s + j.runtime_s for s, j in running]
        clock = min(events) if events else clock
        running = [(s, j) for s, j in running if s + j.runtime_s > clock]
        while pending and pending[0].submit_s <= clock:
            queue.append(pending.pop(0))
        free = n_nodes - sum(j.res for _, j in running)
        while queue and queue[0].res <= free:  # FCFS dispatch
            head = queue.pop(0)
            running.append((clock, head))
            starts[head.id] = clock
            free -= head.res
        if not queue:
            continue
        head = queue[0]
        # Shadow time: when enough nodes are free for the head, by predicted ends.
        avail, shadow = free, clock
        for end, res in sorted((max(clock, s + j.reqtime_s), j.res) for s, j in running):
            if avail >= head.res:
                break
            avail, shadow = avail + res, end
        extra = avail - head.res
        for later in list(queue[1:]):
            if later.res > free:
                continue
            ends_in_time = clock + later.reqtime_s <= shadow
            if ends_in_time or later.res <= extra:
                queue.remove(later)
                running.append((clock, later))
                starts[later.id] = clock
                free -= later.res
                if not ends_in_time:
                    extra -= later.res
    return starts


def starts_of(policy: str, n_nodes: int, jobs, rule: str, kernels: str = "numpy"):
    sim = Simulation(
        tiny_platform(n_nodes),
        jobs,
        make_policy(policy, overrun_release=rule),
        kernels=kernels,
    )
    res = sim.run()
    return dict(zip(res.jobs["index"].tolist(), res.jobs["start_s"].tolist(), strict=True))


# 4 nodes. A (1 node) asks 10 s but runs 100 s; D holds 2 nodes until 200.
# B needs all 4, so its reservation needs A's node; C is short and could go first.
BLOCKED_HEAD = [
    job(0, 0, 1, 100.0, reqtime=10.0),  # A: past its requested time from t=10
    job(1, 0, 2, 200.0, reqtime=200.0),  # D
    job(2, 5, 4, 10.0, reqtime=10.0),  # B: the head from t=5
    job(3, 20, 1, 30.0, reqtime=30.0),  # C
]


@pytest.mark.parametrize("kernels", ["numpy", "numba"])
@pytest.mark.parametrize(
    "rule,c_starts",
    [
        # B cannot be reserved while A overruns (until 100), so C waits until then.
        ("never", 100.0),
        # A is predicted to end now: B is reserved at 200, C (ends at 50) backfills at 20.
        ("now", 20.0),
    ],
)
def test_a_head_that_needs_an_overrunning_job_s_node(kernels, rule, c_starts):
    if kernels == "numba":
        pytest.importorskip("numba")
    starts = starts_of("fcfs-easy", 4, BLOCKED_HEAD, rule, kernels)
    assert starts == {0: 0.0, 1: 0.0, 2: 200.0, 3: c_starts}
    if rule == "now":
        assert starts == textbook_easy(4, BLOCKED_HEAD)


HAND_BUILT = {
    "a long job would delay the head": [
        job(0, 0, 1, 100.0, reqtime=10.0),
        job(1, 0, 2, 200.0, reqtime=200.0),
        job(2, 5, 4, 10.0, reqtime=10.0),
        job(3, 20, 1, 500.0, reqtime=500.0),  # ends after the shadow time: waits
    ],
    "two overrunning jobs": [
        job(0, 0, 1, 300.0, reqtime=50.0),
        job(1, 0, 1, 300.0, reqtime=60.0),
        job(2, 0, 1, 40.0, reqtime=40.0),
        job(3, 10, 3, 10.0, reqtime=10.0),
        job(4, 70, 1, 20.0, reqtime=20.0),
        job(5, 80, 1, 900.0, reqtime=900.0),
    ],
    "the head fits once the overrunning job ends": [
        job(0, 0, 2, 150.0, reqtime=30.0),
        job(1, 0, 1, 100.0, reqtime=100.0),
        job(2, 10, 3, 20.0, reqtime=20.0),
        job(3, 40, 1, 50.0, reqtime=50.0),
        job(4, 45, 1, 200.0, reqtime=200.0),
    ],
}


@pytest.mark.parametrize("name", sorted(HAND_BUILT))
def test_now_matches_textbook_easy(name):
    jobs = HAND_BUILT[name]
    n_nodes = 3 if name != "a long job would delay the head" else 4
    assert starts_of("fcfs-easy", n_nodes, jobs, "now") == textbook_easy(n_nodes, jobs)


def test_the_rule_is_in_the_config_and_checked():
    policy = make_policy("snf-ipm", overrun_release="now")
    assert policy.config()["overrun_release"] == "now"
    assert make_policy("fcfs-easy-ipm").config()["overrun_release"] == "never"
    with pytest.raises(InputError, match=r"policy.overrun_release must be 'never' or 'now'"):
        make_policy("fcfs-easy", overrun_release="later")
