"""Helpers shared by the workload readers: opening files and checking options.

Not part of the public API. Every reader goes through :func:`read_source`, so
all of them accept plain or gzip-compressed files (recognised by the gzip magic
bytes, whatever the file is called) and report a missing file the same way.
"""

from __future__ import annotations

import collections
import dataclasses
import gzip
import itertools
import os
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hpcpower.errors import InputError
from hpcpower.workload.job import Job

GZIP_MAGIC = b"\x1f\x8b"


def read_source(path: str | os.PathLike[str]) -> tuple[bytes, str]:
    """Read a workload file, decompressing it if it is gzip data.

    Args:
        path: File to read.

    Returns:
        The (decompressed) bytes and the path as text, for messages.

    Raises:
        InputError: The file does not exist, is a directory, cannot be read,
            or is a damaged gzip file.
    """
    where = os.fspath(path)
    p = Path(where)
    if not p.exists():
        raise InputError(f"no such workload file: {where}")
    if p.is_dir():
        raise InputError(f"workload path is a directory, not a file: {where}")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read workload file {where}: {exc.strerror or exc}") from exc
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{where}: damaged gzip data: {exc}") from exc
    return data, where


def check_procs_per_node(procs_per_node: object) -> int:
    """Return ``procs_per_node`` as an int, or raise if it is not a positive integer.

    Args:
        procs_per_node: The setting as given by the caller.

    Returns:
        The setting as an ``int``.

    Raises:
        InputError: The value is not an integer >= 1.
    """
    if isinstance(procs_per_node, bool) or not isinstance(procs_per_node, int):
        raise InputError(f"procs_per_node must be a positive integer, got {procs_per_node!r}")
    if procs_per_node < 1:
        raise InputError(f"procs_per_node must be a positive integer, got {procs_per_node}")
    return procs_per_node


def ceil_div(a: int, b: int) -> int:
    """Return ``ceil(a / b)`` for integers, without going through floats."""
    return -(-a // b)


_JOB_FIELDS = (
    "id",
    "name",
    "submit_s",
    "res",
    "reqtime_s",
    "runtime_s",
    "user_id",
    "profile",
)


def _can_fill_slots() -> bool:
    """True if :class:`Job` is still the plain slotted dataclass the fast path assumes."""
    try:
        names = tuple(f.name for f in dataclasses.fields(Job))
    except TypeError:  # pragma: no cover - Job is no longer a dataclass
        return False
    return (
        names == _JOB_FIELDS
        and not hasattr(Job, "__post_init__")
        and all(type(Job.__dict__.get(n)) is _MEMBER_DESCRIPTOR for n in _JOB_FIELDS)
    )


class _Probe:
    __slots__ = ("x",)


_MEMBER_DESCRIPTOR = type(_Probe.__dict__["x"])


def make_jobs(
    names: Sequence[str],
    submit_s: Sequence[float],
    res: Sequence[int],
    reqtime_s: Sequence[float],
    runtime_s: Sequence[int | float],
    user_id: Sequence[int],
    profile: Sequence[str] | None = None,
) -> list[Job]:
    """Build ``Job(id=k, ...)`` for k = 0, 1, ... from parallel columns.

    The columns must already hold Python ``str``/``float``/``int`` values (use
    ``ndarray.tolist()``). For large traces the frozen dataclass ``__init__``
    costs about 3 us a job (0.7 s for SDSC Blue), so, as long as :class:`Job`
    is a plain slotted dataclass without ``__post_init__``, the slots are
    filled directly instead; the result is identical (same fields, equality
    and hash). Otherwise the ordinary constructor is used.

    Args:
        names: Each job's identifier in its source.
        submit_s: Submission times.
        res: Nodes requested.
        reqtime_s: Requested walltimes.
        runtime_s: Actual runtimes.
        user_id: Submitting users.
        profile: Profile names, or ``None`` when the source has none.

    Returns:
        The jobs, ``jobs[k].id == k``.
    """
    n = len(names)
    ids = list(range(n))
    profiles: Iterable[str] = itertools.repeat("", n) if profile is None else profile
    # Walltimes, runtimes and users repeat (527, 22,670 and 468 distinct
    # values among SDSC Blue's 232,562 jobs): equal values share one object.
    reqtime_s, runtime_s, user_id = _shared(reqtime_s), _shared(runtime_s), _shared(user_id)
    cols: tuple[Iterable[Any], ...] = (
        ids,
        names,
        submit_s,
        res,
        reqtime_s,
        runtime_s,
        user_id,
        profiles,
    )
    if not _FAST:
        return list(map(Job, *cols))
    jobs: list[Job] = list(map(object.__new__, itertools.repeat(Job, n)))
    for field_name, col in zip(_JOB_FIELDS, cols, strict=True):
        setter = Job.__dict__[field_name].__set__
        collections.deque(map(setter, jobs, col), maxlen=0)
    return jobs


_FAST = _can_fill_slots()


def _shared(values: Sequence[Any]) -> list[Any]:
    """``values`` with equal ones of one type as one object (fewer objects, the same values).

    Keyed by type too, so that ``5`` and ``5.0`` stay apart; zeros are left
    as they are, so that ``-0.0`` never becomes ``0.0``; NaNs are never
    equal, so never merged.
    """
    first: dict[tuple[type, Any], Any] = {}
    keep = first.setdefault
    return [keep((v.__class__, v), v) if v else v for v in values]
