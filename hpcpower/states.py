"""The five power states of a node and the legal changes between them.

Pure data, importable by every part of the package (the compiled kernels
included): the state values index per-state arrays everywhere.
"""

from __future__ import annotations

from enum import IntEnum


class NodeState(IntEnum):
    """The five power states of a node (values index per-state arrays)."""

    SLEEPING = 0
    SWITCHING_ON = 1
    IDLE = 2
    COMPUTING = 3
    SWITCHING_OFF = 4

    @property
    def label(self) -> str:
        """Lower-case name used in tables and files (``switching_on``)."""
        return self.name.lower()

    # A state prints as its name, not as the number that indexes arrays.
    def __str__(self) -> str:
        return self.name.lower()

    def __repr__(self) -> str:
        return f"NodeState.{self.name}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


STATES: tuple[NodeState, ...] = tuple(NodeState)
STATE_LABELS: tuple[str, ...] = tuple(s.label for s in STATES)
#: Each state's number by its label (``"idle"`` -> 2): the codes in state arrays.
STATE_CODES: dict[str, int] = {s.label: int(s) for s in STATES}

#: One colour per node state, shared by every plot, the HTML viewer and the
#: notebook views: grey asleep, amber waking, light green idle, blue
#: computing, red powering down.
STATE_COLORS: dict[str, str] = {
    "sleeping": "#9e9e9e",
    "switching_on": "#f5a300",
    "idle": "#b8e186",
    "computing": "#3b6fb6",
    "switching_off": "#d7301f",
}

#: Legal state changes. Timed transitions are entered at once and end after a
#: drawn duration; computing starts and ends with a job.
TRANSITIONS: frozenset[tuple[NodeState, NodeState]] = frozenset(
    {
        (NodeState.SLEEPING, NodeState.SWITCHING_ON),
        (NodeState.SWITCHING_ON, NodeState.IDLE),
        (NodeState.IDLE, NodeState.COMPUTING),
        (NodeState.COMPUTING, NodeState.IDLE),
        (NodeState.IDLE, NodeState.SWITCHING_OFF),
        (NodeState.SWITCHING_OFF, NodeState.SLEEPING),
    }
)

# The values as plain ints, for array code and compiled kernels (which read
# module-level ints as constants).
SLEEPING = int(NodeState.SLEEPING)
SWITCHING_ON = int(NodeState.SWITCHING_ON)
IDLE = int(NodeState.IDLE)
COMPUTING = int(NodeState.COMPUTING)
SWITCHING_OFF = int(NodeState.SWITCHING_OFF)
