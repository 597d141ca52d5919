"""What the numpy forms and the compiled twins share: one definition of the data.

State values come from :mod:`hpcpower.states` (re-exported here); a
compiled twin reads these module constants as compile-time constants, so
both forms cannot disagree on them.
"""

from __future__ import annotations

import numpy as np

from hpcpower.states import (  # noqa: F401 - re-exported for the planning modules
    COMPUTING,
    IDLE,
    SLEEPING,
    SWITCHING_OFF,
    SWITCHING_ON,
)

#: Slack for comparisons of planned times (seconds), as the authors' planner.
EPS = 1e-9
INF = np.inf

#: Node-state rank in tie-breaks, indexed by state value: idle 0, computing
#: 1, switching on 2, sleeping and switching off 3 (tie key: rank * n + id).
RANK = np.array([3, 2, 0, 1, 3], dtype=np.int8)
RANK_KEY = RANK.astype(np.int64)
#: Tie-key rank of each state as the compiled release map writes it (rank * n + id).
RANK_SLEEPING = int(RANK[SLEEPING])
RANK_SWITCHING_ON = int(RANK[SWITCHING_ON])
RANK_COMPUTING = int(RANK[COMPUTING])
RANK_SWITCHING_OFF = int(RANK[SWITCHING_OFF])

#: No node ids, and no times: shared read-only empty arrays.
NO_NODES = np.zeros(0, dtype=np.int64)
NO_NODES.flags.writeable = False
NO_TIMES = np.zeros(0)
NO_TIMES.flags.writeable = False


def timeout_arg(timeout_s: float | None) -> float:
    """An idle timeout as the compiled twins take it (nan for none)."""
    return np.nan if timeout_s is None else float(timeout_s)
