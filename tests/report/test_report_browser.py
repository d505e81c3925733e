"""The HTML report in a real browser: headless Chromium (no network) opens the file and reads its sections,
tables and charts as a reader would see them."""

from __future__ import annotations

import tempfile

import pytest

from hipwizard.cli import main
from tests.report.test_report import _workspace
from tests.test_web import _CHROMIUM_FLAGS, _chromium

READ = """
const out = [];
for (const s of document.querySelectorAll('section')) {
  out.push({id: s.id, heading: s.querySelector('h2').innerText, tables: s.querySelectorAll('table').length,
               charts: [...s.querySelectorAll('figure svg')].map(g => g.getBoundingClientRect().width),
               text: s.innerText});
}
return {title: document.title, sections: out,
        failed: performance.getEntriesByType('resource').map(r => r.name)};
"""


@pytest.mark.slow
def test_headless_chromium_reads_every_section_of_the_report(tmp_path, capsys):
    found = _chromium()
    if found is None:
        pytest.skip("headless browser test: no chromium + chromedriver on PATH (`./run.sh test` installs them)")
    browser, chromedriver = found
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    ws = _workspace(tmp_path, capsys)
    out = tmp_path / "report.html"
    assert main(["report", str(ws.root), "--out", str(out)]) == 0
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in _CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='chromium-profile-', dir=tmp_path)}")
    driver = webdriver.Chrome(options=options,
                              service=Service(chromedriver, log_output=str(tmp_path / "chromedriver.log")))
    try:
        driver.set_page_load_timeout(60)
        driver.get(out.as_uri())
        page = driver.execute_script(READ)
    finally:
        driver.quit()
    assert page["title"].startswith("Migration report")
    assert page["failed"] == []  # no resource fetched: the file is all there is
    assert [x["id"] for x in page["sections"]] == ["summary", "doctor", "port", "parity", "train"]
    s = {x["id"]: x for x in page["sections"]}
    assert s["doctor"]["heading"].startswith("1 Doctor") and s["doctor"]["tables"] >= 2  # stamp + checks
    assert "Flags by rule" in s["port"]["text"]
    assert len(s["parity"]["charts"]) == 1 and len(s["train"]["charts"]) == 3
    assert (s["parity"]["charts"] + s["train"]["charts"]) and all(w > 200 for w in s["parity"]["charts"] + s["train"]["charts"])  # drawn, not collapsed
