"""What makes two runs the same run: the canonical configuration and its ``run_id``.

A run's identity is its resolved configuration with everything that does not
change its results taken out and everything that does spelled out:

* the policy's full settings, defaults included (``make_policy(...).config()``),
  so ``policy.alpha = 5000`` and an SNF-ICON run that leaves alpha at its
  default of 5000 are the same run;
* a workload or platform file by the SHA-256 of its bytes, not by its path,
  so a sweep keeps its run ids when the checkout moves, and a trace edited in
  place makes new runs;
* no ``simulation.name`` (a label), no ``simulation.kernels`` (the numpy
  and compiled forms give the same results to the bit), and neither
  ``simulation.explain`` nor ``simulation.decisions`` (what is recorded
  about a run, not what it does).

``run_id`` is the first 16 hex digits of the SHA-256 of that configuration
as canonical JSON (sorted keys, no spaces); it never uses Python's ``hash``,
so it is the same in every process, on every machine and under every
``PYTHONHASHSEED``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

#: Settings that never change a run's results, left out of its identity.
NOT_IDENTITY = (
    ("simulation", "name"),
    ("simulation", "kernels"),
    ("simulation", "explain"),
    ("simulation", "decisions"),
)

#: Hex digits of the SHA-256 kept in a run id (64 bits: no collision in any sweep).
RUN_ID_DIGITS = 16


@lru_cache(maxsize=256)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    """SHA-256 of a file's bytes (cached per path, size and modification time)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_digest(path: str | Path) -> str:
    """SHA-256 of the file at ``path``, as hex."""
    stat = Path(path).stat()
    return _file_digest(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


def canonical(config: dict[str, Any], policy_settings: dict[str, Any]) -> dict[str, Any]:
    """The configuration that identifies a run (see the module docstring).

    Args:
        config: A resolved scenario configuration (``hpcpower.scenario.resolve``).
        policy_settings: The policy's full settings, ``make_policy(...).config()``.
    """
    ident = copy.deepcopy(config)
    for section, key in NOT_IDENTITY:
        ident[section].pop(key, None)
    ident["policy"] = dict(policy_settings)
    workload = ident["workload"]
    if workload["path"]:
        workload["sha256"] = file_digest(workload.pop("path"))
    else:
        workload.pop("path")
    platform = str(ident["platform"]["name"])
    if platform.lower().endswith(".json"):
        ident["platform"] = {"sha256": file_digest(platform)}
    return ident


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON: sorted keys, no spaces, floats as Python writes them."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def run_id(identity: dict[str, Any]) -> str:
    """The run id of a canonical configuration (:func:`canonical`)."""
    text = canonical_json(identity).encode("ascii")
    return hashlib.sha256(text).hexdigest()[:RUN_ID_DIGITS]
