"""Every example in the docs runs and prints what its page says (``docs/check_docs.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT / "docs")) for p in PAGES])
def test_the_examples_of_the_page_run_as_shown(page):
    done = subprocess.run(
        [sys.executable, "docs/check_docs.py", str(page.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_policies_reference_lists_every_snf_icon_setting_with_its_default():
    """docs/reference/policies.md has a row per IconConfig field, with the code's default."""
    import dataclasses
    import re

    from hpcpower.policies.icon.config import IconConfig

    text = (ROOT / "docs" / "reference" / "policies.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| [^|]+ \| `([^`]+)` \|", text, flags=re.M))
    for field in dataclasses.fields(IconConfig):
        assert field.name in rows, f"policies.md has no row for {field.name}"
        default = field.default
        shown = rows[field.name]
        if default is None:
            assert shown == '"none"', field.name
        elif isinstance(default, bool):
            assert shown == str(default).lower(), field.name
        else:
            assert float(shown) == default, field.name


def test_none_spells_null_for_the_optional_snf_icon_settings():
    from hpcpower import make_policy

    config = make_policy(
        "snf-icon", max_spare_nodes="none", spare_arrival_window_s="None", arrival_rate="none"
    ).config()
    assert (config["max_spare_nodes"], config["spare_arrival_window_s"]) == (None, None)
    assert config["arrival_rate"] is None
