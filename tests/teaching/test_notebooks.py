"""The notebooks in notebooks/ run from top to bottom (jupytext text files, run by nbclient)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PAGES = sorted(NOTEBOOKS.glob("[0-9][0-9]-*.py"))


def test_the_notebooks_are_numbered_in_order_from_00():
    numbers = [int(page.name[:2]) for page in PAGES]
    assert numbers == list(range(len(PAGES))) and len(PAGES) >= 7


@pytest.mark.parametrize("page", PAGES, ids=[page.stem for page in PAGES])
def test_the_notebook_runs(page, monkeypatch):
    jupytext = pytest.importorskip("jupytext", reason='pip install -e ".[test]"')
    from nbclient import NotebookClient

    # The kernel inherits the environment: the checkout's hpcpower first, as
    # for the other tests. Figures go through matplotlib's inline backend
    # (drawn with Agg, no window) and land in the outputs as PNG.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join(filter(None, [str(NOTEBOOKS.parent), os.environ.get("PYTHONPATH")])),
    )
    notebook = jupytext.read(page)
    assert sum(cell.cell_type == "markdown" for cell in notebook.cells) >= 3
    NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    ).execute()
    errors = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert not errors
    images = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]
    assert images, "every notebook draws at least one figure"


def test_the_notebooks_are_jupytext_percent_files():
    for page in PAGES:
        text = page.read_text()
        assert "formats: py:percent" in text, page.name
        assert re.search(r"^# %% \[markdown\]", text, flags=re.M), page.name
