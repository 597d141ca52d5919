"""The gap search of EASY's projection: interval sweep against brute force."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcpower import Simulation, make_policy
from hpcpower.policies.planning import ReleaseMap, Timelines
from tests.conftest import job, tiny_platform


def _timelines(n_nodes: int, segments: list[tuple[int, float, float]]) -> Timelines:
    sim = Simulation(tiny_platform(n_nodes), [job(0, 0, 1, 1)], make_policy("fcfs-easy"))
    view = sim._view
    view.now = 0.0
    lines = Timelines(ReleaseMap(view, None), view, [])
    for node, start, length in segments:
        lines.add(np.array([node]), start, start + length)
    return lines


segment = st.tuples(
    st.integers(0, 5),
    st.integers(0, 40).map(lambda x: x * 25.0),
    st.integers(1, 12).map(lambda x: x * 25.0),
)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 6),
    segs=st.lists(segment, max_size=12),
    r=st.integers(1, 6),
    wall=st.integers(0, 12).map(lambda x: x * 25.0),
    lo=st.integers(0, 20).map(lambda x: x * 25.0),
    span=st.one_of(st.none(), st.integers(1, 40).map(lambda x: x * 25.0)),
)
def test_interval_sweep_equals_brute_force(n, segs, r, wall, lo, span):
    # Segments on one node never overlap in a real projection: keep the first of any overlap.
    kept: list[tuple[int, float, float]] = []
    for node, start, length in segs:
        node %= n
        if all(not (start < s + ln and s < start + length) for m, s, ln in kept if m == node):
            kept.append((node, start, length))
    lines = _timelines(n, kept)
    hi = None if span is None else lo + span
    fast = lines.earliest(r, wall, lo, hi)
    slow = lines.earliest_by_grid(r, wall, lo, hi)
    if slow is None:
        assert fast is None
    else:
        assert fast is not None
        assert fast[1] == slow[1]
        assert fast[0].tolist() == slow[0].tolist()


def test_a_job_fits_in_the_gap_before_a_reservation():
    """Node 0 busy 100-300; a 50 s job on 1 node fits at 0; a 150 s one also fits on node 1."""
    lines = _timelines(2, [(0, 100.0, 200.0), (1, 0.0, 400.0)])
    nodes, t = lines.earliest(1, 50.0, 0.0)
    assert t == 0.0 and nodes.tolist() == [0]
    nodes, t = lines.earliest(1, 150.0, 0.0)
    assert t == 300.0 and nodes.tolist() == [0]
    assert lines.earliest(2, 50.0, 0.0, 300.0) is None
    nodes, t = lines.earliest(2, 50.0, 0.0)
    assert t == 400.0 and sorted(nodes.tolist()) == [0, 1]
