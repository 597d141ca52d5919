"""The decision log, stored in compressed columns instead of a dict per pass.

A policy's note is a flat dict of scalars, one per controller pass; a long
SNF-ICON run makes millions of them with dozens of keys, and as dicts they
cost about 2 KB each (the dict, and a float object per number). Here notes
are gathered in batches of :attr:`DecisionLog.BATCH`; each batch becomes a
block with one part per key, its values in a numpy array of their kind:
floats (8 bytes), whole numbers (int64), booleans (1 byte), and strings,
which repeat, as codes into the key's table of distinct strings; whole
numbers and codes take the smallest integer type that holds the block's.

Most keys keep their value from one pass to the next (the screen's
statistics until a sample enters or leaves its window, the estimated
rates, the optimiser's outputs that most passes lack), so a part holds
only the value of each *run* of equal values and the row where the run
starts, when that is smaller than one value per row. Rows that lack the
key or hold ``None`` are marked by one bit per row, in parts that have any.
A part whose values do not fit one kind (mixed kinds, integers beyond
int64, other objects) keeps them as Python objects.

Rows come back as dicts equal to the notes that went in, with their values
unchanged (a float's bits, an int, a bool, the same string), keys in the
order they first appeared in the log; ``numpy`` scalars come back as the
Python scalars they equal. Reading goes block by block, so iterating over
a long log (to write ``decisions.csv``) never expands it whole.

A long log keeps only its latest blocks in memory: beyond
:attr:`DecisionLog.KEEP_BLOCKS`, blocks move to an anonymous temporary
file (in :func:`tempfile.gettempdir`, gone when the log is, even after a
crash) and are read back one at a time. A whole trace's log (millions of
passes) then costs the run a few megabytes instead of a hundred. Where the
file cannot be written, blocks stay in memory. A pickled log holds every
block itself.

How much is kept is the simulation's ``decisions`` setting (:data:`LEVELS`).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import operator
import os
import pickle
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

import numpy as np

#: Reads at an offset without moving the file's position, where the system has it.
_PREAD = getattr(os, "pread", None)

#: What the log keeps: every pass, the passes that did something (started a
#: job or switched a node), or nothing.
LEVELS = ("full", "changes", "off")


class _AbsentType:
    """The type of :data:`_ABSENT`."""


#: Marks a row without the key (see :func:`_encode`).
_ABSENT = _AbsentType()
#: The exact Python types that go into a typed array, and the array's dtype.
_DTYPES: dict[type, Any] = {float: np.float64, int: np.int64, bool: np.bool_, str: np.int32}
_NoneType = type(None)


class _Part:
    """One key's values over one block's rows.

    Attributes:
        kind: The Python type of the values (``float``, ``int``, ``bool``,
            ``str``), or ``object`` for a list of Python objects.
        values: One value per present row, or per run (see ``starts``).
        starts: With runs: the position (among present rows) where each
            run of equal values starts; ``None``: one value per present row.
        missing: Packed bits, one per row: the row lacks the key (or ``None``).
        nones: Packed bits, one per row: the row holds ``None`` (or ``None``).
    """

    __slots__ = ("kind", "values", "starts", "missing", "nones")

    def __init__(self, kind, values, starts, missing, nones) -> None:
        self.kind = kind
        self.values = values
        self.starts = starts
        self.missing = missing
        self.nones = nones

    def nbytes(self) -> int:
        """Bytes of the arrays (8 a value for a list of objects; the string tables not counted)."""
        total = 0
        for array in (self.starts, self.missing, self.nones):
            if array is not None:
                total += array.nbytes
        if self.kind is object:
            return total + 8 * len(self.values)
        return total + self.values.nbytes


def _encode(values: list[Any], codes: dict[str, int], strings: list[str]) -> _Part:
    """A :class:`_Part` for one key's values over a block (``_ABSENT`` where a row lacks it).

    New strings are added to the key's ``codes`` and ``strings``.
    """
    n = len(values)
    missing = nones = None
    present = values
    kinds = set(map(type, values))
    if _AbsentType in kinds or _NoneType in kinds:
        absent = np.array(list(map(operator.is_, values, itertools.repeat(_ABSENT, n))))
        is_none = np.array(list(map(operator.is_, values, itertools.repeat(None, n))))
        if absent.any():
            missing = np.packbits(absent)
        if is_none.any():
            nones = np.packbits(is_none)
        present = [v for v in values if v is not _ABSENT and v is not None]
        kinds = set(map(type, present))
    if any(issubclass(k, np.generic) for k in kinds):
        present = [v.item() if isinstance(v, np.generic) else v for v in present]
        kinds = set(map(type, present))
    kind = kinds.pop() if len(kinds) == 1 else object
    if kind not in _DTYPES:
        return _Part(object, list(present), None, missing, nones)
    dtype = _DTYPES[kind]
    if kind is str:
        for text in dict.fromkeys(present):  # new strings, in order of appearance
            if text not in codes:
                codes[text] = len(strings)
                strings.append(text)
        present = list(map(codes.__getitem__, present))
        dtype = _narrowest(0, len(strings) - 1)
    try:
        array = np.array(present, dtype=dtype)
    except OverflowError:  # integers beyond int64
        return _Part(object, list(present), None, missing, nones)
    if kind is int and len(array):
        array = array.astype(_narrowest(int(array.min()), int(array.max())), copy=False)
    starts = None
    if len(array) > 1:
        # Equal bits, not equal values: NaN runs, and -0.0 apart from 0.0.
        bits = array.view(np.int64) if kind is float else array
        starts = np.flatnonzero(bits[1:] != bits[:-1]) + 1
        position = _narrowest(0, len(array) - 1)
        size = array.itemsize
        if len(starts) + 1 < len(array) * size / (size + position.itemsize):
            array = np.concatenate((array[:1], array[starts]))
            starts = np.concatenate(([0], starts)).astype(position)
        else:
            starts = None
    return _Part(kind, array, starts, missing, nones)


def _encode_some(notes: list[Mapping[str, Any]], key: str, codes, strings) -> _Part:
    """:func:`_encode` of ``key``'s values in ``notes``, some of which lack it.

    Only the notes that have the key are read (SNF-ICON's optimiser outputs
    are in a few passes' notes), and the rows without it are marked missing.
    """
    has = np.fromiter(
        map(operator.contains, notes, itertools.repeat(key)), dtype=bool, count=len(notes)
    )
    rows = np.flatnonzero(has).tolist()
    part = _encode([notes[row][key] for row in rows], codes, strings)
    # (Runs are counted over the rows that hold a value: the same rows here.)
    part.missing = np.packbits(~has)
    if part.nones is not None:
        nones = np.zeros(len(notes), dtype=bool)
        nones[has] = np.unpackbits(part.nones)[: len(rows)].astype(bool)
        part.nones = np.packbits(nones)
    return part


#: Integer types from the smallest, for :func:`_narrowest`.
_INTEGERS = tuple(np.iinfo(t) for t in (np.int8, np.int16, np.int32, np.int64))


def _narrowest(low: int, high: int) -> np.dtype:
    """The smallest signed integer type that holds ``low`` to ``high`` (int64 at most)."""
    for info in _INTEGERS:
        if info.min <= low and high <= info.max:
            return info.dtype
    return _INTEGERS[-1].dtype


def _decode(part: _Part, n: int, strings: list[str]) -> list[Any]:
    """The block's ``n`` values of one key, ``_ABSENT`` where a row lacks it."""
    values = part.values
    if part.kind is not object:
        if part.starts is not None:
            ends = np.append(part.starts[1:], _present(part, n)).astype(np.int64)
            values = np.repeat(values, ends - part.starts)
        values = values.tolist()
        if part.kind is str:
            values = [strings[code] for code in values]
    if part.missing is None and part.nones is None:
        return list(values)
    absent = _bits(part.missing, n)
    none = _bits(part.nones, n)
    out: list[Any] = []
    given = iter(values)
    for a, b in zip(absent, none, strict=True):
        out.append(_ABSENT if a else None if b else next(given))
    return out


def _text(value: Any) -> str:
    """A value as ``csv`` writes it, NaN and ``None`` as empty fields."""
    if value is None or value != value:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def _csv_field(text: str) -> str:
    """``text`` as a csv field: quoted (quotes doubled) if it holds a comma, quote or newline."""
    if "," in text or '"' in text or "\n" in text or "\r" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def _decode_text(part: _Part, n: int, strings: list[str], quote: bool = False) -> list[str]:
    """The block's ``n`` values of one key as text (see :meth:`DecisionLog.iter_text`).

    ``quote``: as fields of a CSV line (see :meth:`DecisionLog.csv_lines`).
    """
    values = part.values
    if part.kind is str:
        texts = [strings[code] for code in values.tolist()]
    elif part.kind is float:
        texts = list(map(float.__repr__, values.tolist()))
        if np.isnan(values).any():
            texts = ["" if text == "nan" else text for text in texts]
    elif part.kind is object:
        texts = list(map(_text, values))
    else:
        texts = list(map(str, values.tolist()))
    if quote and (part.kind is str or part.kind is object):
        # (Each run's value once, before the runs are expanded.)
        texts = list(map(_csv_field, texts))
    holding = None if part.missing is None and part.nones is None else _holding(part, n)
    if part.starts is not None:
        present = n if holding is None else len(holding)
        ends = np.append(part.starts[1:], present).astype(np.int64)
        lengths = (ends - part.starts).tolist()
        texts = list(itertools.chain.from_iterable(map(itertools.repeat, texts, lengths)))
    if holding is None:
        return texts
    # Empty fields everywhere, then the values put at the rows that hold one:
    # keys that only some passes have (ICON's optimiser outputs) are mostly
    # empty, so this reads their values only, not every row.
    out = [""] * n
    for row, text in zip(holding.tolist(), texts, strict=True):
        out[row] = text
    return out


def _holding(part: _Part, n: int) -> np.ndarray:
    """The rows (of the block's ``n``) that hold a value of the key, in order."""
    empty = np.zeros(n, dtype=bool)
    for packed in (part.missing, part.nones):
        if packed is not None:
            empty |= np.unpackbits(packed, count=n).astype(bool)
    return np.flatnonzero(~empty)


def _present(part: _Part, n: int) -> int:
    """How many of the block's ``n`` rows hold a value."""
    if part.missing is None and part.nones is None:
        return n
    return len(_holding(part, n))


def _bits(packed: np.ndarray | None, n: int) -> list[bool]:
    """``n`` flags from packed bits (all false for ``None``)."""
    if packed is None:
        return [False] * n
    return np.unpackbits(packed)[:n].astype(bool).tolist()


class _Block:
    """The notes of one batch, a part per key that any of them has."""

    __slots__ = ("n", "parts")

    def __init__(self, n: int, parts: dict[str, _Part]) -> None:
        self.n = n
        self.parts = parts

    def nbytes(self) -> int:
        """Bytes of its parts' arrays (see :meth:`_Part.nbytes`)."""
        return sum(part.nbytes() for part in self.parts.values())


class _Spilled:
    """Where a block moved to in the log's file: its place, length, rows and size."""

    __slots__ = ("offset", "length", "n", "size")

    def __init__(self, offset: int, length: int, n: int, size: int) -> None:
        self.offset = offset
        self.length = length
        self.n = n
        self.size = size


class DecisionLog(Sequence[dict[str, Any]]):
    """A sequence of notes (dicts), stored in compressed columns; appended to, never changed.

    Reads as a list of dicts: ``len(log)``, ``log[i]``, iteration, slices
    (lists of dicts), and ``==`` with another sequence of dicts.
    """

    #: Notes held as dicts before they are compressed, as one block.
    BATCH = 2048
    #: Blocks held in memory; beyond them, blocks move to a temporary file
    #: (64 blocks: 131,072 passes, a few megabytes). ``None``: all in memory.
    KEEP_BLOCKS: int | None = 64

    def __init__(self) -> None:
        self._rows = 0  # rows in the blocks
        self._blocks: list[_Block | _Spilled] = []
        # The file blocks moved to (shared with copies: blocks are only appended),
        # how many of the first blocks are there, and whether moving failed.
        self._file: Any = None
        self._spilled = 0
        self._spill_failed = False
        self._firsts: list[int] = []  # first row of each block
        #: Every key in order of first appearance, with its string table.
        self._keys: dict[str, tuple[dict[str, int], list[str]]] = {}
        self._pending: list[Mapping[str, Any]] = []
        # The latest block read: (index, its rows as dicts).
        self._read: tuple[int, list[dict[str, Any]]] | None = None

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
        """Compress the pending notes into a block, a key at a time."""
        pending = self._pending
        if not pending:
            return
        keys = self._keys
        present = set().union(*pending)
        if not present.issubset(keys):  # new keys, in order of first appearance
            for key in dict.fromkeys(itertools.chain.from_iterable(pending)):
                keys.setdefault(key, ({}, []))
        parts = {}
        for key in keys:
            if key not in present:
                continue
            try:  # (a key every note has: the common case, read in C)
                values = list(map(operator.itemgetter(key), pending))
            except KeyError:
                parts[key] = _encode_some(pending, key, *keys[key])
                continue
            parts[key] = _encode(values, *keys[key])
        self._firsts.append(self._rows)
        self._blocks.append(_Block(len(pending), parts))
        self._rows += len(pending)
        self._pending = []
        keep = self.KEEP_BLOCKS
        if keep is not None and len(self._blocks) - self._spilled > keep:
            self._spill()

    def _spill(self) -> None:
        """Move the blocks held in memory to the log's file (kept in memory if it fails)."""
        if self._spill_failed:
            return
        try:
            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="hpcpower-decisions-")
            fh = self._file
            fh.seek(0, os.SEEK_END)
            moved = []
            for b in range(self._spilled, len(self._blocks)):
                block = cast(_Block, self._blocks[b])  # (those after the moved ones)
                data = pickle.dumps(block, protocol=pickle.HIGHEST_PROTOCOL)
                moved.append(_Spilled(fh.tell(), len(data), block.n, block.nbytes()))
                fh.write(data)
            fh.flush()
        except OSError:
            # (No room or no temporary folder: the log stays in memory.)
            self._spill_failed = True
            return
        self._blocks[self._spilled :] = moved
        self._spilled = len(self._blocks)

    def _block(self, b: int) -> _Block:
        """Block ``b``, read back from the log's file if it moved there."""
        block = self._blocks[b]
        if isinstance(block, _Block):
            return block
        fh = self._file
        if _PREAD is not None:  # (no shared file position: safe in a forked process too)
            data = _PREAD(fh.fileno(), block.length, block.offset)
        else:  # pragma: no cover - Windows
            fh.seek(block.offset)
            data = fh.read(block.length)
        if len(data) != block.length:
            raise OSError(f"the decision log's temporary file lost block {b}")
        return pickle.loads(data)

    def __getstate__(self) -> dict[str, Any]:
        """Every block held in the pickle itself (the file is this process's)."""
        self._flush()
        state = dict(self.__dict__)
        state["_blocks"] = [self._block(b) for b in range(len(self._blocks))]
        state["_file"] = None
        state["_spilled"] = 0
        state["_read"] = None
        return state

    def __len__(self) -> int:
        return self._rows + len(self._pending)

    def _block_rows(self, b: int) -> list[dict[str, Any]]:
        """Block ``b``'s rows as dicts (the latest block read is kept)."""
        if self._read is not None and self._read[0] == b:
            return self._read[1]
        block = self._block(b)
        columns = [
            (key, _decode(part, block.n, self._keys[key][1]))
            for key in self._keys
            if (part := block.parts.get(key)) is not None
        ]
        rows = [
            {key: v for key, values in columns if (v := values[r]) is not _ABSENT}
            for r in range(block.n)
        ]
        self._read = (b, rows)
        return rows

    def _row(self, row: int) -> dict[str, Any]:
        self._flush()
        b = bisect.bisect_right(self._firsts, row) - 1
        return dict(self._block_rows(b)[row - self._firsts[b]])

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
        for b in range(len(self._blocks)):
            for row in self._block_rows(b):
                yield dict(row)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __bool__(self) -> bool:
        return len(self) > 0

    def copy(self) -> DecisionLog:
        """An independent copy (the rows so far; blocks are never changed, so shared)."""
        self._flush()
        twin = DecisionLog()
        twin._rows = self._rows
        twin._blocks = list(self._blocks)
        twin._firsts = list(self._firsts)
        twin._file, twin._spilled = self._file, self._spilled
        twin._spill_failed = self._spill_failed
        twin._keys = {
            key: (dict(codes), list(strings)) for key, (codes, strings) in self._keys.items()
        }
        return twin

    def keys(self) -> list[str]:
        """Every key, in the order it first appeared."""
        self._flush()
        return list(self._keys)

    def iter_values(self, keys: Sequence[str], missing: Any = None) -> Iterator[tuple[Any, ...]]:
        """Each row's values of ``keys``, as a tuple (``missing`` for a key the row lacks).

        Cheaper than reading rows as dicts.
        """

        def column(part: _Part, n: int, strings: list[str]) -> list[Any]:
            values = _decode(part, n, strings)
            if part.missing is not None:
                values = [missing if v is _ABSENT else v for v in values]
            return values

        return self._iter_rows(keys, column, missing)

    def iter_text(self, keys: Sequence[str]) -> Iterator[tuple[str, ...]]:
        """Each row's values of ``keys`` as the ``csv`` module writes them, as a tuple.

        A float is its ``repr``, anything else its ``str``; NaN, ``None`` and
        a key the row lacks are empty. Each run of equal values is formatted
        once, so this is much cheaper than letting ``csv`` format every row.
        """
        return self._iter_rows(keys, _decode_text, "")

    def csv_lines(self, keys: Sequence[str]) -> Iterator[str]:
        """The rows of ``keys`` as the lines ``csv.writer`` writes, a block of lines at a time.

        The same text as writing :meth:`iter_text` with ``csv.writer`` (its
        default dialect: minimal quoting, CR LF line ends), for two keys
        or more; each run of equal values is quoted once, and a row is one join.
        """
        if len(keys) < 2:
            # (csv quotes a lone empty field, and writes no separator.)
            raise ValueError("csv_lines needs two keys or more; write iter_text with csv")
        quoted = functools.partial(_decode_text, quote=True)
        for columns in self._iter_columns(keys, quoted, ""):
            yield "\r\n".join(map(",".join, zip(*columns, strict=True))) + "\r\n"

    def _iter_rows(self, keys: Sequence[str], column, missing: Any) -> Iterator[tuple[Any, ...]]:
        """Rows of ``keys`` from ``column(part, n, strings)`` per key, a block at a time."""
        for columns in self._iter_columns(keys, column, missing):
            yield from zip(*columns, strict=True)

    def _iter_columns(self, keys: Sequence[str], column, missing: Any) -> Iterator[list]:
        """Per block, the values of each of ``keys`` (``column(part, n, strings)``)."""
        self._flush()
        for b in range(len(self._blocks)):
            block = self._block(b)
            n = block.n
            yield [
                itertools.repeat(missing, n)
                if (part := block.parts.get(key)) is None
                else column(part, n, self._keys[key][1])
                for key in keys
            ]

    def column(self, key: str) -> list[Any]:
        """One key's values for every row (``None`` where a row lacks it)."""
        self._flush()
        if key not in self._keys:
            raise KeyError(key)
        out: list[Any] = []
        strings = self._keys[key][1]
        for b in range(len(self._blocks)):
            block = self._block(b)
            part = block.parts.get(key)
            if part is None:
                out.extend([None] * block.n)
            else:
                out.extend(None if v is _ABSENT else v for v in _decode(part, block.n, strings))
        return out

    def nbytes(self) -> int:
        """Bytes of the blocks' arrays, in memory or in the file (string tables not counted)."""
        self._flush()
        return sum(
            block.nbytes() if isinstance(block, _Block) else block.size for block in self._blocks
        )

    def spilled_blocks(self) -> int:
        """How many blocks moved to the log's temporary file (see :attr:`KEEP_BLOCKS`)."""
        return self._spilled

    def __repr__(self) -> str:
        return f"<DecisionLog {len(self)} rows, {len(self._keys)} columns>"
