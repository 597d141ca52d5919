"""The one place that reaches into SimPy's internals, for the speed of the run loop.

The run loop processes one event per iteration without the overhead of
``Environment.step``, and two event objects (arrivals, controller passes)
are rescheduled instead of rebuilt. Both rely on these SimPy 4.1 internals:

* ``Environment._queue``: the heap of ``(time, priority, event id, event)``;
* ``Environment._now`` and ``Environment._eid`` (an ``itertools.count``);
* ``Event._ok``, ``Event._value``, ``Event.callbacks`` and ``_defused``.

``setup.cfg`` pins ``simpy>=4.1,<5``; :func:`check` (run by the tests)
fails loudly if a SimPy release changes any of them.
"""

from __future__ import annotations

import heapq
import itertools

import simpy
from simpy.events import EventPriority

#: SimPy orders same-time events by priority (URGENT 0, NORMAL 1).
URGENT = simpy.events.URGENT
NORMAL = simpy.events.NORMAL


def check() -> None:
    """Raise ``RuntimeError`` naming what changed if SimPy's internals are not as relied on."""
    env = simpy.Environment()
    problems = []
    if not isinstance(getattr(env, "_queue", None), list):
        problems.append("Environment._queue is not a list (heap)")
    if not isinstance(getattr(env, "_now", None), (int, float)):
        problems.append("Environment._now is missing")
    if not isinstance(getattr(env, "_eid", None), itertools.count):
        problems.append("Environment._eid is not an itertools.count")
    event = env.timeout(1.0, value="x")
    if getattr(event, "_ok", None) is not True or getattr(event, "_value", None) != "x":
        problems.append("Event._ok / Event._value are missing")
    if not env._queue or len(env._queue[0]) != 4 or env._queue[0][3] is not event:
        problems.append("Environment._queue entries are not (time, priority, id, event)")
    if problems:
        raise RuntimeError(
            f"SimPy {simpy.__version__} changed internals hpcpower relies on: "
            + "; ".join(problems)
            + " (hpcpower needs simpy>=4.1,<5)"
        )


class Recurring:
    """One event object scheduled again and again, calling ``callback`` each time it fires.

    It is never yielded by a process, so instead of a new event per
    occurrence the same one is put back on the queue, already triggered.
    At most one occurrence may be pending at a time.
    """

    __slots__ = ("_env", "_event", "_callbacks", "_queue", "_eid")

    def __init__(self, env: simpy.Environment, callback) -> None:
        event = simpy.Event(env)
        event._ok = True
        event._value = None
        self._env = env
        self._event = event
        self._callbacks = [callback]
        self._queue = env._queue
        self._eid = env._eid

    def schedule(self, priority: EventPriority, delay: float = 0.0) -> None:
        """Fire at ``now + delay`` with ``priority`` (``env.schedule``, unchecked)."""
        event = self._event
        event.callbacks = self._callbacks
        heapq.heappush(self._queue, (self._env._now + delay, priority, next(self._eid), event))


def process(env: simpy.Environment, until: float, run) -> None:
    """Process events while ``run.finished`` is false and the next event is before ``until``.

    The same as ``while not run.finished and env.peek() < until:
    env.step()``, with ``Environment.step`` written out as the loop's body:
    it runs once per event, and this loop is the run's innermost one.
    """
    queue = env._queue
    pop = heapq.heappop
    while not run.finished and queue and queue[0][0] < until:
        env._now, _, _, event = pop(queue)
        # SimPy marks a processed event with callbacks None, which its own
        # annotation (a list) does not allow; Environment.step ignores it too.
        callbacks, event.callbacks = event.callbacks, None  # type: ignore[assignment]
        for callback in callbacks:
            callback(event)
        if not event._ok and not hasattr(event, "_defused"):
            # A failed event nobody handled: raise a copy, as simpy does.
            exc = type(event._value)(*event._value.args)
            exc.__cause__ = event._value
            raise exc


def next_kind(env: simpy.Environment, run) -> str | None:
    """What the next event of ``run``'s environment is, without processing it.

    ``None`` when there is none; otherwise ``"controller_pass"``,
    ``"arrival"``, ``"wakeup"``, ``"job_end"``, ``"transition_end"`` or
    ``"internal"`` (a process starting, a command handed to a node).
    """
    queue = env._queue
    if not queue:
        return None
    event = queue[0][3]
    for callback in event.callbacks or ():
        owner = getattr(callback, "__self__", None)
        if owner is run:
            name = callback.__name__
            if name == "_pass":
                return "controller_pass"
            if name == "_arrive":
                return "arrival"
            if name == "_timer_fired":
                return "wakeup"
        elif isinstance(owner, simpy.Process) and isinstance(event, simpy.events.Timeout):
            # (A process's generator; its code names the function it runs.)
            name = getattr(owner._generator, "__name__", "")
            if name == "_job":
                return "job_end"
            if name == "_run":
                return "transition_end"
    return "internal"
