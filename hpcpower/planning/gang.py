"""A gang's nodes changing state together (a job starting or ending): numpy form and twin.

The cluster's bookkeeping for one gang move: each node adds the time since
its last change to its row of seconds in the old state, then takes the new
state, job id and expected end. Both forms add the same float64 values.
"""

from __future__ import annotations

from hpcpower.planning._numba import kernel

#: Gangs up to this size are updated node by node instead of by fancy indexing.
SMALL_GANG = 4


def move_gang(seconds, since, state, job_on, expected_end, gang, listed, now, move, job) -> None:
    """Move ``gang`` (``listed``: the same nodes as a list) from ``move[0]`` to ``move[1]``.

    ``seconds`` is the cluster's (state, node) table of seconds; ``job`` is
    ``(job id, expected end)`` to record on the nodes.
    """
    old, new = move
    if len(listed) <= SMALL_GANG:
        # Element by element is cheaper than fancy indexing for a few
        # nodes, and adds the same float64 values.
        row = seconds[old]
        for node in listed:
            row[node] += now - since[node]
            since[node] = now
            state[node] = new
            job_on[node] = job[0]
            expected_end[node] = job[1]
        return
    seconds[old][gang] += now - since[gang]
    since[gang] = now
    state[gang] = new
    job_on[gang] = job[0]
    expected_end[gang] = job[1]


@kernel
def move_gang_jit(seconds, since, state, job_on, expected_end, gang, now, move, job):
    """:func:`move_gang` in one compiled call."""
    old, new = move
    job_id, end = job
    for node in gang:
        seconds[old, node] += now - since[node]
        since[node] = now
        state[node] = new
        job_on[node] = job_id
        expected_end[node] = end
