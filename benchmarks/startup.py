"""Time to first frame: the full ``hipwizard`` app against a minimal Textual app, in fresh processes.

Each run spawns the program in a real pseudo-terminal (pexpect, 120x40) and stops the clock when a text
of its first frame appears on the terminal: the home screen's "Suggested next" line for hipwizard, a
one-line Static for the minimal app. Runs alternate between the two so machine noise hits both alike.
Prints both medians and their ratio (target: hipwizard <= 1.25x the minimal app). Beside the wall clock it
reads the CPU time (user + system, all threads) the process had used when the marker appeared
(/proc/PID/stat): on a shared, busy machine the wall clock mostly measures waiting for a core, the CPU
time much less so.

    .venv/bin/python benchmarks/startup.py [--runs 9]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import pexpect

MINIMAL_APP = """
from textual.app import App
from textual.widgets import Static

class Minimal(App):
    def compose(self):
        yield Static("Suggested next: minimal")

Minimal().run()
"""


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, every thread) a live process has used so far; NaN where /proc is missing."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_frame_seconds(argv: list[str], markers: list[str], cwd: str, cpu: list[float] | None = None) -> list[float]:
    """Seconds from spawn until each marker (in order) appears on the terminal; with ``cpu``, the process's
    CPU seconds at the first marker are appended to it."""
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="120", LINES="40")
    start = time.perf_counter()
    child = pexpect.spawn(argv[0], argv[1:], cwd=cwd, env=env, dimensions=(40, 120), encoding="utf-8",
                          codec_errors="replace", timeout=60)
    try:
        times = []
        for marker in markers:
            child.expect(marker)
            times.append(time.perf_counter() - start)
            if cpu is not None and len(times) == 1:
                cpu.append(cpu_seconds(child.pid))
        return times
    finally:
        child.terminate(force=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="hipwizard-startup-")
    minimal = os.path.join(work, "minimal_app.py")
    with open(minimal, "w") as fh:
        fh.write(MINIMAL_APP)
    full, mini, ready = [], [], []
    cpu_full, cpu_mini = [], []
    try:
        for i in range(args.runs + 1):
            ws = tempfile.mkdtemp(dir=work)  # a fresh workspace each run: no resume into a step
            # First frame: the home screen with its four steps ("Train" is on the last card); the
            # statuses are read in a worker after it and land with "Suggested next".
            c_full, c_mini = [], []
            t_full, t_ready = first_frame_seconds([sys.executable, "-m", "hipwizard", ws],
                                                  ["Train", "Suggested next"], work, c_full)
            (t_mini,) = first_frame_seconds([sys.executable, minimal], ["Suggested next"], work, c_mini)
            if i:  # the first pair warms the OS file cache only
                full.append(t_full)
                ready.append(t_ready)
                mini.append(t_mini)
                cpu_full += c_full
                cpu_mini += c_mini
    finally:
        shutil.rmtree(work, ignore_errors=True)
    m_full, m_mini = statistics.median(full), statistics.median(mini)
    print(f"hipwizard first frame: median {m_full * 1000:.0f} ms over {len(full)} runs "
          f"(min {min(full) * 1000:.0f}, max {max(full) * 1000:.0f})")
    print(f"hipwizard statuses shown: median {statistics.median(ready) * 1000:.0f} ms "
          f"(ratio {statistics.median(ready) / m_mini:.2f}x; read in a worker after the first frame)")
    print(f"minimal Textual app:   median {m_mini * 1000:.0f} ms over {len(mini)} runs "
          f"(min {min(mini) * 1000:.0f}, max {max(mini) * 1000:.0f})")
    c_full, c_mini = statistics.median(cpu_full), statistics.median(cpu_mini)
    print(f"CPU time at first frame: hipwizard median {c_full * 1000:.0f} ms, minimal app {c_mini * 1000:.0f} ms "
          f"(ratio {c_full / c_mini:.2f}x; ticks of {1000 / os.sysconf('SC_CLK_TCK'):.0f} ms)")
    print(f"load average (1, 5, 15 min) at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    ratio = m_full / m_mini
    print(f"ratio: {ratio:.2f}x (target <= 1.25x) -> {'PASS' if ratio <= 1.25 else 'OVER TARGET'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
