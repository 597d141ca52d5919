"""docs/background/snf-icon.md describes every column of SNF-ICON's decision log, and only those.

Small runs that between them write every column and most values: the
quickstart (mostly fallback passes), the Markovian case with a short
arrival-recency window (the gate closes, completion shutdowns) and its NG
variant without required service samples (gate disabled, optional service
series).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hpcpower import Simulation

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "background" / "snf-icon.md"
RUNS = [
    ("scenarios/quickstart.toml", {"policy__name": "snf-icon"}),
    (
        "scenarios/paper/markovian.toml",
        {"policy__name": "snf-icon", "workload__first": 400, "policy__spare_arrival_window_s": 300},
    ),
    (
        "scenarios/paper/markovian.toml",
        {
            "policy__name": "snf-icon-ng",
            "workload__first": 400,
            "policy__require_service_samples": False,
        },
    ),
]
#: Text columns, and how a value splits into the words the page must list.
SPLIT = {
    "triggers": "+",
    "mode": None,
    "arrival_reason": ",",
    "service_reason": ",",
    "gate_reason": None,
    "spare": None,
    "spare_reason": None,
}


@pytest.fixture(scope="module")
def rows():
    out = []
    for path, overrides in RUNS:
        results = Simulation.from_scenario(ROOT / path, **overrides).run()
        keys = {k for r in results.decisions for k in r}
        assert set(results.to_pandas("decisions").columns) == keys
        out.extend(results.decisions)
    return out


@pytest.fixture(scope="module")
def table():
    """``{column: (unit, meaning)}`` from the section's table."""
    text = PAGE.read_text()
    section = text.split("\n## The decision log\n", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"^\| `(\w+)` \| ([^|]+) \| (.+) \|$", section, flags=re.M)
    assert found, "no table in the decision log section"
    return {name: (unit.strip(), meaning) for name, unit, meaning in found}


def listed(meaning: str) -> set[str]:
    """The code spans of a meaning cell (``""`` stands for the empty string)."""
    return {"" if span == '""' else span for span in re.findall(r"`([^`]*)`", meaning)}


def seen(rows, key):
    return {r[key] for r in rows if key in r}


def test_every_logged_column_has_a_row_and_every_row_is_logged(rows, table):
    keys = {k for r in rows for k in r}
    assert sorted(keys - set(table)) == [], "columns missing from the page"
    assert sorted(set(table) - keys) == [], "rows of the page no run logged"


def test_true_false_columns_are_marked_bool(rows, table):
    for key in table:
        values = seen(rows, key)
        assert (table[key][0] == "bool") == all(isinstance(v, bool) for v in values), key


def test_every_value_of_a_text_column_is_listed(rows, table):
    for key, sep in SPLIT.items():
        words = listed(table[key][1])
        for value in seen(rows, key):
            assert isinstance(value, str), key
            parts = value.split(sep) if sep else [value]
            missing = [p for p in parts if p not in words]
            assert not missing, f"{key}: {missing} (from {value!r}) not on the page"


def test_every_screen_reason_is_listed(rows, table):
    words = listed(table["screen_reason"][1])
    for value in seen(rows, "screen_reason"):
        if value == "accepted":
            assert "accepted" in words
            continue
        for part in value.split(";"):
            series, reasons = part.split(":")
            assert f"{series}:<reason>" in words, value
            allowed = listed(table[f"{series}_reason"][1])
            assert set(reasons.split(",")) <= allowed, value
