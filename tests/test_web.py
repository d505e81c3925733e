"""`hipwizard --web`: the same app served on localhost (textual-serve)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_web_serves_the_wizard_on_localhost(tmp_path):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "hipwizard", "--web", "--port", str(port), str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        page = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                page = urllib.request.urlopen(f"http://localhost:{port}/", timeout=2).read().decode()
                break
            except OSError:
                time.sleep(0.3)
        assert proc.poll() is None, proc.stdout.read()
        assert "textual.js" in page and "hipwizard" in page
    finally:
        proc.terminate()
        proc.wait(timeout=10)
