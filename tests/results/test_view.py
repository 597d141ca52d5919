"""The HTML viewer: the data it embeds, the page it makes, and the page in headless Chromium.

The browser tests drive Debian's ``chromium`` through its ``chromedriver``
with Selenium (nothing is downloaded); they skip only where chromium is not
installed.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile

import numpy as np
import pytest
import test_plots
from conftest import DATA

from hpcpower import Simulation
from hpcpower.cli import main
from hpcpower.platform import STATE_LABELS
from hpcpower.results.export import write_all
from hpcpower.results.view import html_page, run_data, write_html

QUICKSTART = DATA.parent / "quickstart.toml"
MARKOVIAN = DATA.parent / "paper" / "markovian.toml"
COLORS = {
    "sleeping": "#9e9e9e",
    "switching_on": "#f5a300",
    "idle": "#b8e186",
    "computing": "#3b6fb6",
    "switching_off": "#d7301f",
}

#: 12 jobs of 1-4 nodes on 4 nodes, with waits and nodes asleep between bursts.
busy = test_plots.busy


@pytest.fixture(scope="module")
def icon_run(tmp_path_factory):
    results = Simulation.from_scenario(MARKOVIAN, policy__name="snf-icon", workload__first=60).run()
    folder = tmp_path_factory.mktemp("icon") / "run"
    write_all(results, folder)
    return results, folder


def embedded(page: str) -> dict:
    m = re.search(r'<script id="hpcview-data" type="application/json">(.*?)</script>', page, re.S)
    return json.loads(m.group(1))


# ---------------------------------------------------------------- the data
def test_the_page_embeds_the_run(busy):
    page = html_page(busy)
    data = embedded(page)
    meta = data["meta"]
    assert meta["n_nodes"] == 4 and meta["end_s"] == busy.end_s
    assert meta["states"] == list(STATE_LABELS)
    assert dict(zip(meta["states"], meta["colors"], strict=True)) == COLORS
    assert meta["title"].startswith("snf-ipm on tiny-4 (4 nodes)") and meta["settings"] == (
        "timeout 100 s"
    )
    t = busy.jobs
    jobs = data["jobs"]
    assert len(jobs["submit"]) == 12 and jobs["submit"] == t["submit_s"].tolist()
    assert jobs["start"] == t["start_s"].tolist() and jobs["res"] == t["res"].tolist()
    # Replaying the state changes gives each node's state, as in the node intervals.
    state = np.zeros(4, dtype=int)
    c = data["changes"]
    changes = list(zip(c["t"], c["nodes"], c["s"], strict=True))
    for now in np.linspace(1, busy.end_s - 1, 40):
        state[:] = STATE_LABELS.index("idle")
        for when, nodes, s in changes:
            if when <= now:
                for part in nodes.split():
                    a, _, b = part.partition("-")
                    state[int(a) : int(b or a) + 1] = s
        for node in range(4):
            (label,) = [r[1] for r in busy.node_intervals() if r[0] == node and r[2] <= now < r[3]]
            assert STATE_LABELS[state[node]] == label
    assert data["power"]["e"][-1] == pytest.approx(busy.summary["total_energy_j"])
    assert data["decisions"] is None
    # One page, nothing fetched: no external script, style, image or link.
    assert not re.search(r"(src|href)\s*=|https?://|@import|url\(", page)


def test_a_run_folder_and_its_results_give_the_same_page(icon_run, tmp_path):
    results, folder = icon_run
    assert html_page(folder) == html_page(results)
    data = run_data(folder)
    dec = data["decisions"]
    assert len(dec["rows"]) == len(results.decisions)
    assert {"time_s", "mode", "arrival_cv", "target"} <= set(dec["columns"])
    column = dec["columns"].index("mode")
    assert [r[column] for r in dec["rows"]] == [d["mode"] for d in results.decisions]
    out = write_html(folder, tmp_path / "deep" / "icon.html")
    assert out.read_text(encoding="utf-8") == html_page(results)


def test_errors_name_what_is_missing(tmp_path):
    from hpcpower.errors import InputError

    (tmp_path / "summary.json").write_text("{}")
    with pytest.raises(InputError, match="not a run folder .no jobs.csv, pstate_changes.csv"):
        run_data(tmp_path)


def test_cli_view(tmp_path, capsys):
    run = tmp_path / "run"
    base = [str(QUICKSTART), "--set", "workload.first=20"]
    assert main(["run", *base, "-q", "--out", str(run)]) == 0
    out = tmp_path / "page.html"
    assert main(["view", str(run), "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert embedded(out.read_text())["meta"]["n_nodes"] == 64
    # A scenario is run first; a folder that is no run is one line.
    assert main(["view", *base, "--out", str(tmp_path / "s.html")]) == 0
    assert embedded((tmp_path / "s.html").read_text()) == embedded(out.read_text())
    assert main(["view", str(tmp_path), "--out", str(tmp_path / "x.html")]) == 2
    assert "not a run folder" in capsys.readouterr().err


# ------------------------------------------------------------- in Chromium
@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,1000",
    ):
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="hpcpower-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The driver is given, so Selenium looks nothing up on the network.
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def errors(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def text(driver, element_id: str) -> str:
    return driver.find_element("id", element_id).text


def test_the_slider_moves_the_run_in_chromium(browser, busy, tmp_path):
    from selenium.webdriver.common.keys import Keys

    from hpcpower.results.animate import node_states_at
    from hpcpower.results.plots import power_series, queue_series

    page = write_html(busy, tmp_path / "busy.html")
    browser.get(page.as_uri())
    assert errors(browser) == []
    shown = browser.execute_script("return hpcview.states()")
    at_start = [STATE_LABELS[s] for s in node_states_at(busy, np.array([0.0]))[0]]
    assert shown == at_start and text(browser, "time") == "t = 0.000 min (0.0 s)"
    # The keyboard moves the slider to its end: the states there are the run's last.
    slider = browser.find_element("id", "slider")
    slider.send_keys(Keys.END)
    assert browser.execute_script("return hpcview.time()") == pytest.approx(busy.end_s)
    at_end = [STATE_LABELS[s] for s in node_states_at(busy, np.array([busy.end_s]))[0]]
    assert browser.execute_script("return hpcview.states()") == at_end != at_start
    # Step back from the end: the slider moves one step, and the clock with it.
    slider.send_keys(Keys.ARROW_LEFT)
    assert browser.execute_script("return hpcview.time()") == pytest.approx(busy.end_s * 0.999)
    # At instants between events the grid, queue and power are the run's.
    qt, waiting = queue_series(busy)
    pt, watts = power_series(busy)
    for now in (15.0, 35.5, 400.0, 1000.5, 3015.0):
        browser.execute_script("hpcview.setTime(arguments[0])", now)
        expect = [STATE_LABELS[s] for s in node_states_at(busy, np.array([now]))[0]]
        assert browser.execute_script("return hpcview.states()") == expect
        cells = browser.find_elements("css selector", "#grid .node")
        assert [c.get_attribute("data-state") for c in cells] == expect
        k = np.searchsorted(qt, now, side="right") - 1
        assert text(browser, "queue-count") == f"{waiting[k]} waiting"
        k = np.searchsorted(pt, now, side="right") - 1
        assert text(browser, "power") == f"{watts[k]:.0f} W"
        assert "no decision log" in text(browser, "decision")
    # The event buttons jump to the next instant where something happened.
    browser.execute_script("hpcview.setTime(0)")
    browser.find_element("id", "next").click()
    first = browser.execute_script("return hpcview.time()")
    t = busy.jobs
    events = np.concatenate([t["submit_s"], t["start_s"], t["finish_s"]])
    assert first == min(e for e in events.tolist() + [busy.end_s] if e > 0)
    assert errors(browser) == []


def test_the_decision_at_or_before_the_instant_in_chromium(browser, icon_run, tmp_path):
    results, folder = icon_run
    page = write_html(folder, tmp_path / "icon.html")
    browser.get(page.as_uri())
    assert errors(browser) == []
    rows = results.decisions
    k = len(rows) // 2
    now = rows[k]["time_s"]
    later = rows[k + 1]["time_s"] if k + 1 < len(rows) else results.end_s
    # The last row at the instant (a pass may log more than one row at one time).
    last = max(j for j, r in enumerate(rows) if r["time_s"] == now)
    browser.execute_script("hpcview.setTime(arguments[0])", (now + later) / 2)
    shown = text(browser, "decision")
    assert f"row {last + 1} of {len(rows)}" in shown
    assert f"mode {rows[last]['mode']}" in shown and f"triggers {rows[last]['triggers']}" in shown
    assert errors(browser) == []
