"""`hipwizard --web`: the same app served on loopback (textual-serve behind a token, Host and Origin checks),
fetched and driven in a real browser; the lock itself by raw requests in test_web_lock.py."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    """A running `hipwizard --web`: its port, the token URL it printed, the token, and the page at that URL."""

    port: int
    url: str
    token: str
    page: str
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def stderr(self) -> str:
        return _stderr_path(self.log).read_text(errors="replace")


def _stderr_path(log: Path) -> Path:
    return log.with_name(log.name + ".stderr")


def _logs(log: Path) -> str:
    err = _stderr_path(log)
    return log.read_text(errors="replace") + (err.read_text(errors="replace") if err.exists() else "")


_URL_LINE = re.compile(r"(http://\S+?:(\d+)/\?token=([A-Za-z0-9_-]+))")


@contextmanager
def web_server(workspace: Path, log: Path, *args: str, timeout: float = 60):
    """`hipwizard --web [ARGS]` on a free port, in its own process group; yields a ``Served`` once the URL it
    printed (with this launch's token) answers HTTP.

    textual-serve starts one app process per browser session (through a shell) in the same group, so
    killing the group in ``finally`` leaves nothing behind."""
    workspace.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    with open(log, "wb") as out, open(_stderr_path(log), "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "hipwizard", "--web", "--port", str(port), *args,
                                 str(workspace)], stdout=out, stderr=err, start_new_session=True)
    try:
        page, found = "", None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            found = found or _URL_LINE.search(log.read_text(errors="replace"))
            if found:
                try:
                    page = urllib.request.urlopen(f"http://127.0.0.1:{port}/?token={found[3]}", timeout=5).read().decode()
                    break
                except OSError:
                    pass
            time.sleep(0.3)
        assert proc.poll() is None, f"hipwizard --web exited ({proc.returncode}):\n{_logs(log)}"
        assert found and page, f"hipwizard --web gave no token URL that answers within {timeout:.0f} s:\n{_logs(log)}"
        assert int(found[2]) == port
        yield Served(port=port, url=found[1], token=found[3], page=page, log=log)
    finally:
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue


def test_web_serves_the_wizard_on_loopback_with_a_token(tmp_path):
    with web_server(tmp_path / "ws", tmp_path / "server.log") as served:
        assert "textual.js" in served.page and "hipwizard" in served.page
        # The URL to open is printed on loopback, and the page's websocket URL is this server's own.
        assert served.url == f"http://127.0.0.1:{served.port}/?token={served.token}"
        assert len(served.token) >= 32
        assert f'data-session-websocket-url="ws://127.0.0.1:{served.port}/ws"' in served.page
        # Without the token the page is refused.
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(served.base, timeout=5)
        assert refused.value.code == 403


# --- in a real browser ---------------------------------------------------------------------------------
# textual-serve's page draws the terminal with xterm.js on a <canvas> (its WebGL/canvas renderers), so the
# DOM holds no text (no `.xterm-rows`), and the accessibility tree exists only in screen-reader mode. What
# the canvas shows is xterm's own buffer, so the test reads that: a script installed before the page's
# scripts run catches textual.js's terminal wrapper the moment its constructor sets `websocket_url` (a
# setter on Object.prototype that then steps aside), and `terminal.buffer.active` gives each row's text.
# Keys go in the way a person types them: real key events (CDP Input) into xterm's focused textarea.

_CATCH_TERMINAL = r"""
Object.defineProperty(Object.prototype, 'websocket_url', {configurable: true, set(value) {
  Object.defineProperty(this, 'websocket_url', {value, writable: true, enumerable: true, configurable: true});
  if (!window.__hipwizardTerm) window.__hipwizardTerm = this;
}});
"""

_READ_SCREEN = r"""
const w = window.__hipwizardTerm;
if (!w || !w.terminal || !w.terminal.buffer) return null;
const buf = w.terminal.buffer.active, rows = [];
for (let i = 0; i < buf.length; i++) { const line = buf.getLine(i); rows.push(line ? line.translateToString(true) : ''); }
return rows.join('\n');
"""

# Closed network: no background connections, no QUIC, and every host but localhost fails to resolve at
# once (the page links a Google font; without this its load event could wait on a DNS timeout).
_CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1400,900",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
)


def _chromium() -> tuple[str, str] | None:
    browser = os.environ.get("HIPWIZARD_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    driver = os.environ.get("HIPWIZARD_CHROMEDRIVER") or shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def _wait_for_screen(driver, wanted: str, timeout: float) -> str:
    """Poll the terminal's text until ``wanted`` shows; returns the text (the last read on timeout)."""
    deadline = time.monotonic() + timeout
    text = None
    while time.monotonic() < deadline:
        text = driver.execute_script(_READ_SCREEN)
        if text and wanted in text:
            return text
        time.sleep(0.25)
    return text


@pytest.mark.slow
def test_web_in_headless_chromium_refused_without_token_then_home_then_port(tmp_path):
    found = _chromium()
    if found is None:
        pytest.skip("headless browser test: no chromium + chromedriver on PATH "
                    "(Debian: apt-get install chromium chromium-driver; `./run.sh test` installs them)")
    browser, chromedriver = found
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in _CHROMIUM_FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=tmp_path)
    options.add_argument(f"--user-data-dir={profile}")

    with web_server(tmp_path / "ws", tmp_path / "server.log") as served:
        # An explicit chromedriver path: Selenium Manager (which would go online) is never asked.
        driver = webdriver.Chrome(options=options,
                                  service=Service(chromedriver, log_output=str(tmp_path / "chromedriver.log")))
        try:
            driver.set_page_load_timeout(60)
            driver.set_script_timeout(30)
            driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": _CATCH_TERMINAL})

            # The address without the token (what someone guessing the port would open): refused, no app.
            driver.get(served.base)
            refused = driver.execute_script("return document.body ? document.body.innerText : ''")
            assert "a token is required" in refused, refused
            assert not driver.execute_script("return !!window.__hipwizardTerm")

            # The URL hipwizard printed: the page sets its cookie and its websocket (which carries no token in
            # its URL) is accepted through it, so the app is drawn and answers keys.
            driver.get(served.url)

            home = _wait_for_screen(driver, "Suggested next", timeout=90)
            if not home or "Suggested next" not in home:
                driver.save_screenshot(str(tmp_path / "home.png"))
                caught = driver.execute_script("return !!(window.__hipwizardTerm && window.__hipwizardTerm.terminal)")
                pytest.fail(
                    "Home screen not seen in the browser within 90 s "
                    + ("" if caught else "(textual.js's xterm Terminal was never caught: did textual-serve "
                       "change its page?) ")
                    + f"— screenshot {tmp_path / 'home.png'}\nterminal:\n{home}\n"
                    f"server log:\n{_logs(served.log)}"
                )
            assert "Doctor" in home and "Port" in home
            assert "CUDA source folder" not in home

            driver.execute_script("window.__hipwizardTerm.terminal.focus()")
            assert driver.execute_script("return document.activeElement.className").find("xterm-helper-textarea") >= 0
            ActionChains(driver).send_keys("2").perform()

            # The Port step with no migration yet: its set-up form (hipwizard/tui/port/dialogs.py).
            port = _wait_for_screen(driver, "CUDA source folder", timeout=60)
            if not port or "CUDA source folder" not in port:
                driver.save_screenshot(str(tmp_path / "port.png"))
                pytest.fail(f"Port screen not seen after pressing 2 — screenshot {tmp_path / 'port.png'}\n"
                            f"terminal:\n{port}\nserver log:\n{_logs(served.log)}")
            assert "No migration yet" in port and "Output folder (HIP)" in port
            assert "Suggested next" not in port
        finally:
            driver.quit()
