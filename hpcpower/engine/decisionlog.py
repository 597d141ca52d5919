"""The decision log, stored in columns: one typed array per key instead of a dict per pass.

A policy's note is a flat dict of scalars, one per controller pass; a long
SNF-ICON run makes hundreds of thousands of them with dozens of keys, and
as dicts they cost about 2 KB each (the dict, and a float object per
number). Here each key is a column: floats in an ``array("d")`` (8 bytes),
whole numbers in ``array("q")``, booleans in ``array("b")``, and strings,
which repeat, as codes into a table of the distinct ones. A column whose
values do not fit one of these (mixed kinds, ``None`` among numbers,
anything else) keeps them as Python objects. Rows come back as dicts equal
to the notes that went in, with their values unchanged (a float's bits, an
int, a bool, the same string), keys in the order columns first appeared;
``numpy`` scalars come back as the Python scalars they equal.

How much is kept is the simulation's ``decisions`` setting (:data:`LEVELS`).
"""

from __future__ import annotations

import itertools
import operator
from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

#: What the log keeps: every pass, the passes that did something (started a
#: job or switched a node), or nothing.
LEVELS = ("full", "changes", "off")


class _Column:
    """One key's values, row by row; rows that lack the key or hold ``None`` are marked.

    The marks are one byte per row (``bytearray``), made only once a column
    has such a row: a key most passes lack (SNF-ICON's optimiser outputs)
    costs a byte per pass for the mark, not a set entry.
    """

    __slots__ = ("kind", "values", "strings", "codes", "missing", "nones")

    def __init__(self) -> None:
        #: "f", "i", "b", "s" (typed), "o" (objects), or "" until a value other than None.
        self.kind = ""
        self.values: Any = array("b")
        self.strings: list[str] = []
        self.codes: dict[str, int] = {}
        #: 1 for each row without the key / holding None; None while there is none.
        self.missing: bytearray | None = None
        self.nones: bytearray | None = None

    def put(self, row: int, value: Any) -> None:
        if isinstance(value, np.generic):
            value = value.item()  # a numpy scalar is kept as the Python scalar it equals
        self._pad(row)
        if self.missing is not None:
            self.missing.append(0)
        if value is None and self.kind != "o":
            if self.nones is None:
                self.nones = bytearray(row)
            self.nones.append(1)
            self._append_filler()
            return
        if self.nones is not None:
            self.nones.append(0)
        kind = _kind(value)
        if self.kind == "":
            self._become(kind)
        elif self.kind != "o" and kind != self.kind:
            self._to_objects()
        if self.kind == "s":
            code = self.codes.get(value)
            if code is None:
                code = self.codes[value] = len(self.strings)
                self.strings.append(value)
            self.values.append(code)
        else:
            self.values.append(value)

    def extend(self, row: int, values: list[Any]) -> None:
        """Put ``values`` at rows ``row``, ``row + 1``, ... (``_ABSENT``: the row lacks the key).

        When the values other than absent and ``None`` are all of the
        column's kind, the batch goes into the typed array in one call, with
        its marks; otherwise value by value.
        """
        kinds = set(map(type, values))
        absent = _AbsentType in kinds
        none = type(None) in kinds
        kinds.discard(_AbsentType)
        kinds.discard(type(None))
        kind = _KINDS.get(next(iter(kinds))) if len(kinds) == 1 else None
        if kind == "i" and not all(-(2**63) <= v < 2**63 for v in values if type(v) is int):
            kind = None  # too large for int64: kept as objects
        fits = kind is not None and self.kind in (kind, "")
        if self.kind == "o" or not (fits or (not kinds and self.kind != "")):
            for k, value in enumerate(values):
                if value is not _ABSENT:
                    self.put(row + k, value)
            return
        self._pad(row)
        if kind is not None and self.kind == "":
            self._become(kind)
        n = len(self.values)
        if absent or self.missing is not None:
            if self.missing is None:
                self.missing = bytearray(n)
            self.missing.extend([v is _ABSENT for v in values] if absent else bytes(len(values)))
        if none or self.nones is not None:
            if self.nones is None:
                self.nones = bytearray(n)
            self.nones.extend([v is None for v in values] if none else bytes(len(values)))
        if absent or none:
            values = [0 if v is _ABSENT or v is None else v for v in values]
            if self.kind == "s":
                values = ["" if v == 0 and type(v) is int else v for v in values]
        if self.kind == "s":
            codes = self.codes
            for value in dict.fromkeys(values):  # new strings, in order of appearance
                if value not in codes:
                    codes[value] = len(self.strings)
                    self.strings.append(value)
            self.values.extend([codes[value] for value in values])
        else:
            self.values.extend(values)

    def _pad(self, row: int) -> None:
        """Mark the rows before ``row`` that the column has not seen as lacking the key."""
        n = len(self.values)
        if n < row:
            if self.missing is None:
                self.missing = bytearray(n)
            self.missing.extend(b"\x01" * (row - n))
            if self.nones is not None:
                self.nones.extend(bytes(row - n))
            for _ in range(row - n):
                self._append_filler()

    def _become(self, kind: str) -> None:
        """Take the kind of the first value other than None (earlier rows are fillers)."""
        n = len(self.values)
        self.kind = kind
        typecode = {"f": "d", "i": "q", "b": "b", "s": "i"}.get(kind)
        if typecode is None:
            self.values = [None] * n
        else:
            self.values = array(typecode, bytes(array(typecode).itemsize * n))

    def _append_filler(self) -> None:
        self.values.append(None if self.kind == "o" else 0)

    def get(self, row: int) -> Any:
        if self.nones is not None and self.nones[row]:
            return None
        value = self.values[row]
        kind = self.kind
        if kind == "s":
            return self.strings[value]
        if kind == "b":
            return bool(value)
        return value

    def has(self, row: int) -> bool:
        return row < len(self.values) and (self.missing is None or not self.missing[row])

    def _to_objects(self) -> None:
        values = [self.get(r) for r in range(len(self.values))]
        self.kind = "o"
        self.values = values
        self.nones = None

    def nbytes(self) -> int:
        marks = len(self.missing or b"") + len(self.nones or b"")
        if self.kind == "o":
            return 8 * len(self.values) + marks
        return self.values.itemsize * len(self.values) + marks


class _AbsentType:
    """The type of :data:`_ABSENT`."""


#: Marks a row without the key in a batch (see :meth:`_Column.extend`).
_ABSENT = _AbsentType()
#: The exact Python types that go straight into a typed column.
_KINDS = {float: "f", int: "i", bool: "b", str: "s"}


def _kind(value: Any) -> str:
    """The column kind a value fits: f, i, b, s, or o (kept as an object)."""
    kind = type(value)
    if kind is float:
        return "f"
    if kind is bool:
        return "b"
    if kind is int:
        return "i" if -(2**63) <= value < 2**63 else "o"
    if kind is str:
        return "s"
    if isinstance(value, np.floating):
        return "f"
    if isinstance(value, np.bool_):
        return "b"
    if isinstance(value, np.integer):
        return "i"
    return "o"


class DecisionLog(Sequence[dict[str, Any]]):
    """A sequence of notes (dicts), stored in columns; appended to, never changed.

    Reads as a list of dicts: ``len(log)``, ``log[i]``, iteration, slices
    (lists of dicts), and ``==`` with another sequence of dicts.
    """

    #: Notes held as dicts before they go into the columns, in one batch.
    BATCH = 2048

    def __init__(self) -> None:
        self._rows = 0  # rows in the columns
        self._columns: dict[str, _Column] = {}
        self._pending: list[Mapping[str, Any]] = []

    def append(self, note: Mapping[str, Any]) -> None:
        """Add one pass's note as the next row."""
        pending = self._pending
        pending.append(note)
        if len(pending) >= self.BATCH:
            self._flush()

    def extend(self, notes: Sequence[Mapping[str, Any]]) -> None:
        """Add several notes."""
        for note in notes:
            self.append(note)

    def _flush(self) -> None:
        """Move the pending notes into the columns, a column at a time."""
        pending = self._pending
        if not pending:
            return
        row = self._rows
        columns = self._columns
        keys = dict.fromkeys(itertools.chain.from_iterable(pending))
        for key in keys:
            column = columns.get(key)
            if column is None:
                column = columns[key] = _Column()
            try:  # (a key every note has: the common case, read in C)
                values = list(map(operator.itemgetter(key), pending))
            except KeyError:
                values = [note.get(key, _ABSENT) for note in pending]
            column.extend(row, values)
        self._rows = row + len(pending)
        self._pending = []

    def __len__(self) -> int:
        return self._rows + len(self._pending)

    def _row(self, row: int) -> dict[str, Any]:
        self._flush()
        return {k: c.get(row) for k, c in self._columns.items() if c.has(row)}

    def __getitem__(self, index):
        self._flush()
        if isinstance(index, slice):
            return [self._row(r) for r in range(*index.indices(self._rows))]
        if index < 0:
            index += self._rows
        if not 0 <= index < self._rows:
            raise IndexError("decision log index out of range")
        return self._row(index)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self._flush()
        for row in range(self._rows):
            yield self._row(row)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __bool__(self) -> bool:
        return len(self) > 0

    def copy(self) -> DecisionLog:
        """An independent copy (the rows so far)."""
        self._flush()
        twin = DecisionLog()
        twin._rows = self._rows
        for key, column in self._columns.items():
            copied = _Column()
            copied.kind = column.kind
            copied.values = column.values[:]
            copied.strings = list(column.strings)
            copied.codes = dict(column.codes)
            copied.missing = None if column.missing is None else bytearray(column.missing)
            copied.nones = None if column.nones is None else bytearray(column.nones)
            twin._columns[key] = copied
        return twin

    def keys(self) -> list[str]:
        """Every key, in the order it first appeared."""
        self._flush()
        return list(self._columns)

    def column(self, key: str) -> list[Any]:
        """One key's values for every row (``None`` where a row lacks it)."""
        self._flush()
        column = self._columns[key]
        return [column.get(r) if column.has(r) else None for r in range(self._rows)]

    def nbytes(self) -> int:
        """Bytes held by the columns' values (the tables of strings not counted)."""
        self._flush()
        return sum(c.nbytes() for c in self._columns.values())

    def __repr__(self) -> str:
        return f"<DecisionLog {len(self)} rows, {len(self._columns)} columns>"
