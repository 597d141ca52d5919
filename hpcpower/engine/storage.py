"""Compact storage for what a run keeps to its end: job gangs and rows of numbers.

A long trace starts hundreds of thousands of jobs and runs as many
controller passes. Kept as a numpy array per job and a tuple of Python
numbers per row, they cost several hundred bytes each; these stores keep
them in flat typed buffers instead (a few bytes a node id or a number) and
hand out the same values as before when read: an array of node ids per job
(:class:`Gangs`), a tuple of Python numbers per row (:class:`Rows`,
:class:`CountRows`).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np

#: The smallest gang buffer (it grows by doubling from there).
_FIRST_SIZE = 1024
#: Gangs of ended jobs moved to the flat buffer at once, and rows added to
#: typed columns at once (a bounded number of objects wait meanwhile).
_BATCH = 1024
_INTP = np.dtype(np.intp)
#: Jobs whose sealed gangs :meth:`Gangs.job_order` gathers at once.
_GATHER_JOBS = 8192


def _smallest_uint(n_values: int) -> np.dtype:
    """The smallest unsigned dtype that holds ``0 .. n_values - 1``."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if n_values <= np.iinfo(dtype).max + 1:
            return np.dtype(dtype)
    return np.dtype(np.int64)


class Gangs(Sequence["np.ndarray | None"]):
    """The nodes of every job of a run: job ``i``'s array, ``None`` before it starts.

    A running job's gang is the array the cluster allocated (read-only, the
    one :class:`~hpcpower.engine.queue.Running` holds). When the job ends,
    :meth:`seal` moves its node ids into one flat buffer of the smallest
    unsigned type that holds a node id (two bytes a node up to 65,536
    nodes), and reading it gives a fresh read-only ``intp`` array with the
    same ids in the same order. A gang of another dtype than ``intp`` (a
    policy's own array) is kept as it is, so every gang reads back as it
    was allocated.

    Args:
        n_jobs: Number of jobs (``gangs[i]`` for ``0 <= i < n_jobs``).
        n_nodes: Number of nodes (node ids are ``0 .. n_nodes - 1``).
        capacity: Node ids to make room for at once (the jobs' requests
            added up, so that the buffer never grows); it grows as needed.
    """

    __slots__ = ("_flat", "_used", "_start", "_count", "_live", "_kept", "_ended")

    def __init__(self, n_jobs: int, n_nodes: int, capacity: int = 0) -> None:
        # Room that is never written costs no memory (the pages stay untouched).
        self._flat = np.empty(max(capacity, _FIRST_SIZE), dtype=_smallest_uint(n_nodes))
        self._used = 0
        #: Where each sealed gang starts in ``_flat`` (-1: not sealed there).
        self._start = np.full(n_jobs, -1, dtype=np.int64)
        self._count = np.zeros(n_jobs, dtype=np.int32)
        # Gangs of running jobs (and of ended jobs not yet moved), and
        # sealed gangs kept whole (not intp).
        self._live: dict[int, np.ndarray] = {}
        self._kept: dict[int, np.ndarray] = {}
        # Ended jobs whose gangs move to ``_flat`` together (see settle: one
        # copy for many jobs costs far less than one per job).
        self._ended: list[int] = []

    def put(self, job: int, gang: np.ndarray) -> None:
        """Record the gang a job starts on (kept as it is while the job runs)."""
        self._live[job] = gang
        if gang.dtype is not _INTP and gang.dtype != _INTP:
            self._kept[job] = gang

    def seal(self, job: int) -> None:
        """Store an ended job's gang compactly (it reads back equal)."""
        ended = self._ended
        ended.append(job)
        if len(ended) >= _BATCH:
            self.settle()

    def settle(self) -> None:
        """Move the gangs of the jobs sealed so far into the flat buffer now.

        :meth:`seal` does it for many jobs at once; a gang waiting for it
        reads back as the allocated array itself.
        """
        jobs = self._ended
        self._ended = []
        gangs = list(map(self._live.pop, jobs))
        kept = self._kept
        if kept:  # (gangs of another dtype stay whole, in _kept since put)
            jobs = [job for job in jobs if job not in kept]
            gangs = [gang for gang in gangs if gang.dtype is _INTP or gang.dtype == _INTP]
        if not gangs:
            return
        counts = np.fromiter(map(len, gangs), dtype=np.int64, count=len(gangs))
        used = self._used
        total = used + int(counts.sum())
        if total > len(self._flat):
            grown = np.empty(max(2 * len(self._flat), total), dtype=self._flat.dtype)
            grown[:used] = self._flat[:used]
            self._flat = grown
        self._flat[used:total] = np.concatenate(gangs)
        self._start[jobs] = used + np.cumsum(counts) - counts
        self._count[jobs] = counts
        self._used = total

    def copy(self) -> Gangs:
        """An independent copy (the gangs as of now; later seals do not reach it)."""
        twin = object.__new__(Gangs)
        twin._flat = self._flat[: self._used].copy()
        twin._used = self._used
        twin._start = self._start.copy()
        twin._count = self._count.copy()
        twin._live = dict(self._live)
        twin._kept = dict(self._kept)
        twin._ended = list(self._ended)
        return twin

    def __len__(self) -> int:
        return len(self._start)

    def _get(self, job: int) -> np.ndarray | None:
        start = int(self._start[job])
        if start >= 0:
            gang = self._flat[start : start + int(self._count[job])].astype(np.intp)
            gang.flags.writeable = False
            return gang
        live = self._live.get(job)
        return live if live is not None else self._kept.get(job)

    @overload
    def __getitem__(self, index: int) -> np.ndarray | None: ...
    @overload
    def __getitem__(self, index: slice) -> list[np.ndarray | None]: ...

    def __getitem__(self, index: int | slice) -> np.ndarray | None | list[np.ndarray | None]:
        if isinstance(index, slice):
            return [self._get(i) for i in range(len(self))[index]]
        n = len(self)
        job = int(index)
        if not -n <= job < n:
            raise IndexError(f"job index {index} out of range for {n} jobs")
        return self._get(job % n)

    def __iter__(self) -> Iterator[np.ndarray | None]:
        for job in range(len(self)):
            yield self._get(job)

    def job_order(self, low: int = 0, high: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Every gang at once: each job's node count (0 before it starts), and the ids, flat.

        Job ``i``'s ids are ``flat[offsets[i]:offsets[i] + counts[i]]`` with
        ``offsets`` the counts' running sum before ``i``, the same as
        ``gangs[i]``; ``flat`` is int32 up to 65,536 nodes, int64 past them.
        No array is made per job, so this is the way to read a whole
        trace's gangs. ``low``, ``high``: only jobs ``low:high`` (a block
        of a whole trace's gangs, read a block at a time).
        """
        n = len(self._start)
        high = n if high is None else max(low, min(high, n))
        low = min(low, high)
        counts, others = self._counts(low, high)
        ends = np.cumsum(counts)
        total = int(ends[-1]) if len(ends) else 0
        flat = np.empty(total, dtype=np.int32 if self._flat.dtype.itemsize < 4 else np.int64)
        # Sealed gangs are in the buffer in the order they ended: gathered in
        # blocks of jobs, so that the index arrays stay small.
        sealed = self._start[low:high] >= 0
        for first in range(0, high - low, _GATHER_JOBS):
            jobs = np.flatnonzero(sealed[first : first + _GATHER_JOBS]) + first
            sizes = counts[jobs]
            size = int(sizes.sum())
            if not size:
                continue
            within = np.arange(size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
            source = np.repeat(self._start[jobs + low], sizes) + within
            flat[np.repeat(ends[jobs] - sizes, sizes) + within] = self._flat[source]
        for job, gang in others.items():
            flat[ends[job - low] - len(gang) : ends[job - low]] = gang
        return counts, flat

    def counts(self) -> np.ndarray:
        """Each job's node count (0 before it starts): :meth:`job_order`'s counts alone."""
        return self._counts(0, len(self._start))[0]

    def _counts(self, low: int, high: int) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """Jobs ``low:high``'s node counts, and their gangs outside the flat buffer."""
        counts = self._count[low:high].astype(np.int64)
        # Gangs outside the flat buffer: running jobs, ended ones not yet
        # moved, and those kept whole (as _get reads them: running first).
        outside = {**self._kept, **self._live}
        others = {
            job: gang for job, gang in outside.items() if low <= job < high and self._start[job] < 0
        }
        for job, gang in others.items():
            counts[job - low] = len(gang)
        return counts, others

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or len(other) != len(self):
            return NotImplemented if not isinstance(other, Sequence) else False
        for mine, theirs in zip(self, other, strict=True):
            if mine is None or theirs is None:
                if mine is not theirs:
                    return False
            elif not np.array_equal(mine, theirs):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]  # (changes while a run goes on)

    def __repr__(self) -> str:
        return repr(list(self))


class _Table(Sequence[tuple[Any, ...]]):
    """Reading rows stored in typed columns as a list of tuples of Python numbers."""

    __slots__ = ()

    def _column_arrays(self) -> tuple[array, ...]:
        """Every column, as an :class:`array.array` (the stored one or a copy)."""
        raise NotImplementedError

    def column(self, k: int) -> np.ndarray:
        """Column ``k`` as a new numpy array: float64 or int64, as numpy reads a list of rows."""
        column = self._column_arrays()[k]
        return np.array(column, dtype=float if column.typecode in "fd" else np.int64)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return zip(*self._column_arrays(), strict=True)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        columns = self._column_arrays()
        out = np.empty((len(self), len(columns)), dtype=dtype or float)
        for k, column in enumerate(columns):
            out[:, k] = np.frombuffer(column, dtype=column.typecode) if len(column) else ()
        return out

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Table):
            return self._column_arrays() == other._column_arrays()
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(other) == len(self) and all(
            tuple(theirs) == mine for mine, theirs in zip(self, other, strict=True)
        )

    __hash__ = None  # type: ignore[assignment]  # (rows are added while a run goes on)

    def __repr__(self) -> str:
        return repr(list(self))


class Rows(_Table):
    """Rows of numbers in typed columns: each row reads back as a tuple of Python numbers.

    Column ``k`` is an :class:`array.array` of type code ``codes[k]``
    (``"d"``: float, ``"i"``/``"q"``/``"b"``: whole numbers), so a row of
    four numbers costs a few dozen bytes instead of a tuple of objects.
    Reading gives what a list of tuples would (a row is a tuple of
    ``float`` and ``int``; a list of rows compares equal);
    ``numpy.asarray(rows)`` gives a float array of shape ``(len, columns)``.

    Args:
        codes: One :mod:`array` type code per column.
        rows: Rows to start with.
    """

    __slots__ = ("_columns", "_tail")

    def __init__(self, codes: str, rows: Iterable[Sequence[Any]] = ()) -> None:
        self._columns = tuple(array(code) for code in codes)
        # The latest rows, as tuples, until they go to the columns together
        # (adding a tuple to a list costs a fraction of typed appends one by one).
        self._tail: list[tuple[Any, ...]] = []
        for row in rows:
            self.append(tuple(row))

    def append(self, row: tuple[Any, ...]) -> None:
        """Add a row (one value per column)."""
        tail = self._tail
        tail.append(row)
        if len(tail) >= _BATCH:
            self._settle()

    def _settle(self) -> None:
        """Move the rows of the tail into the columns."""
        tail = self._tail
        if not tail:
            return
        # (All of them transposed first: a row of the wrong length raises
        # before any column changes.)
        transposed = list(zip(*tail, strict=True))
        for column, values in zip(self._columns, transposed, strict=True):
            # (numpy converts a tuple of numbers faster than array.extend does.)
            column.frombytes(np.array(values, dtype=column.typecode).tobytes())
        tail.clear()

    def _column_arrays(self) -> tuple[array, ...]:
        self._settle()
        return self._columns

    @property
    def codes(self) -> str:
        """The columns' :mod:`array` type codes."""
        return "".join(column.typecode for column in self._columns)

    def views(self) -> tuple[np.ndarray, ...]:
        """Every column as a read-only numpy array of its own type, no copy.

        The views read the rows so far; rows added later may move the
        columns, so take them again then.
        """
        views = []
        for column in self._column_arrays():
            view = (
                np.frombuffer(column, dtype=column.typecode)
                if len(column)
                else np.empty(0, dtype=column.typecode)
            )
            view.flags.writeable = False
            views.append(view)
        return tuple(views)

    def copy(self) -> Rows:
        """An independent copy (rows added later do not reach it)."""
        twin = object.__new__(Rows)
        twin._columns = tuple(array(c.typecode, c) for c in self._column_arrays())
        twin._tail = []
        return twin

    def __len__(self) -> int:
        return len(self._columns[0]) + len(self._tail)

    @overload
    def __getitem__(self, index: int) -> tuple[Any, ...]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[Any, ...]]: ...

    def __getitem__(self, index: int | slice) -> tuple[Any, ...] | list[tuple[Any, ...]]:
        columns = self._column_arrays()
        if isinstance(index, slice):
            return list(zip(*(column[index] for column in columns), strict=True))
        return tuple(column[index] for column in columns)


class CountRows(_Table):
    """Rows ``(time_s, count_1, ..., count_k)``: a float and ``k`` whole numbers each.

    The state rows of a run, nearly one per controller pass: the times in
    one :class:`array.array` of floats, the counts one after the other in
    one of the smallest C integer type that holds ``largest`` (short for
    fewer than 32,768 nodes: a row of six numbers in 18 bytes). The engine
    adds a row as its time and its list of counts, without making a tuple.
    Reads as :class:`Rows` do.

    Args:
        width: Counts per row.
        largest: The largest count a row can hold (the number of nodes).
    """

    __slots__ = ("_times", "_counts", "_width", "_last")

    def __init__(self, width: int, largest: int = 2**31 - 1) -> None:
        self._times = array("d")
        self._counts = array("h" if largest <= 2**15 - 1 else "i")
        self._width = width
        # The last row, kept as given until the next one comes: a run
        # replaces its last row often (several passes at one instant), and
        # replacing a pair costs less than rewriting typed arrays.
        self._last: tuple[float, list[int]] | None = None

    def append(self, time_s: float, counts: list[int]) -> None:
        """Add a row: a time and ``width`` counts (the list is kept: do not change it)."""
        last = self._last
        if last is not None:
            self._times.append(last[0])
            self._counts.extend(last[1])
        self._last = (time_s, counts)

    def replace_last(self, time_s: float, counts: list[int]) -> None:
        """Replace the last row (the list is kept: do not change it)."""
        if self._last is None:
            if not self._times:
                raise IndexError("no row to replace")
            # A read moved the last row into the arrays: take it back out.
            self._times.pop()
            del self._counts[-self._width :]
        self._last = (time_s, counts)

    def _settle(self) -> None:
        """Move the last row into the arrays."""
        last = self._last
        if last is not None:
            self._times.append(last[0])
            self._counts.extend(last[1])
            self._last = None

    def _column_arrays(self) -> tuple[array, ...]:
        self._settle()
        counts, width = self._counts, self._width
        return (self._times, *(counts[k::width] for k in range(width)))

    def views(self) -> tuple[np.ndarray, ...]:
        """The times and each column of counts as read-only numpy arrays, no copy.

        As :meth:`Rows.views` (take them again after adding rows); the count
        columns are strided views of the one array that holds them all.
        """
        self._settle()
        times = np.frombuffer(self._times, dtype=float) if len(self._times) else np.empty(0)
        counts = (
            np.frombuffer(self._counts, dtype=self._counts.typecode)
            if len(self._counts)
            else np.empty(0, dtype=self._counts.typecode)
        ).reshape(-1, self._width)
        views = (times, *(counts[:, k] for k in range(self._width)))
        for view in views:
            view.flags.writeable = False
        return views

    def copy(self) -> CountRows:
        """An independent copy (rows added later do not reach it)."""
        # The last row stays where it is here (a run may still replace it).
        twin = CountRows(self._width)
        twin._times.extend(self._times)
        twin._counts = array(self._counts.typecode, self._counts)
        twin._last = self._last
        return twin

    def __len__(self) -> int:
        return len(self._times) + (self._last is not None)

    @overload
    def __getitem__(self, index: int) -> tuple[Any, ...]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[Any, ...]]: ...

    def __getitem__(self, index: int | slice) -> tuple[Any, ...] | list[tuple[Any, ...]]:
        if isinstance(index, slice):
            return list(zip(*(column[index] for column in self._column_arrays()), strict=True))
        row = range(len(self))[index]  # (raises IndexError as a list would)
        self._settle()
        width = self._width
        return (self._times[row], *self._counts[row * width : (row + 1) * width])
