"""Review screen at scale: 5,000 hunks over 500 files.

Measures, with Textual's Pilot on this machine: the time to open the Port screen on the migration (load
the state file, fill the file list, draw the first hunk), the latency of y / n / j, and the process memory.

Latency, two ways for each key:
- key→frame: from handing the key to the app to the end of the last frame it causes (the compositor's
  update rendered to the escape sequences a terminal would get; headless Textual skips that step, so the
  harness does it). This is what a user waits for.
- Pilot round trip: ``pilot.press(key)`` + ``pilot.pause()``. Pilot then waits until the process looks idle
  (sleeps of 20 ms until CPU time stops moving), so this has a floor of ~80 ms whatever the app does.
Peer, measured in the same run with the same harness: a bare Textual app whose `j` only updates one
Static (the framework's floor). Every 4th file also carries three risks on unchanged lines, shown under
each of its hunks. Targets (issue 4): open < 2 s, next-hunk (j) median < 30 ms.

    .venv/bin/python benchmarks/review.py [--files 500] [--hunks-per-file 10] [--presses 150]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import psutil
from textual._compositor import CompositorUpdate
from textual.app import App
from textual.widgets import Static

from hipwizard.port.model import FileTranslation, RiskFlag
from hipwizard.port.review.state import ReviewState
from hipwizard.port.translation.hunks import split_hunks
from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.port.screen import PortScreen
from hipwizard.workspace import Workspace

FLAG = RiskFlag("WARP32_LITERAL", "high", "warp size hard-coded to 32", "use warpSize", "HIP porting guide")
LANE = ("LANE_MASK_31", "high", "lane index masked with 31: wrong on 64-lane wavefronts", "use warpSize - 1",
        "HIP porting guide")


FRAMES: list[float] = []  # perf_counter at the end of each frame drawn


def _hook_frames() -> None:
    """Time every frame; render it to terminal bytes as a real terminal driver would (headless skips it)."""
    original = App._display

    def display(self, screen, renderable) -> None:
        original(self, screen, renderable)
        if renderable is None:
            return
        if self.is_headless and isinstance(renderable, CompositorUpdate):
            renderable.render_segments(self.console)
        FRAMES.append(time.perf_counter())

    App._display = display


async def _press(pilot, key: str, lat: dict[str, list[float]], pilot_lat: dict[str, list[float]]) -> None:
    FRAMES.clear()
    t = time.perf_counter()
    await pilot.press(key)
    await pilot.pause()
    pilot_lat[key].append((time.perf_counter() - t) * 1000)
    if FRAMES:
        lat[key].append((FRAMES[-1] - t) * 1000)


def build(root: Path, files: int, per_file: int) -> Path:
    """A source tree and its review: each file has ``per_file`` separated CUDA calls (one hunk each)."""
    src = root / "src"
    translations = []
    for f in range(files):
        lines = [f"// file {f}\n", "#include <cstdio>\n"]
        for k in range(per_file):
            lines += [f"void step_{k}(float* d) {{\n", f"  cudaMemset(d, 0, {k + 1});  // call {k}\n",
                      "  int lane = threadIdx.x & 31;\n", "  (void)lane;\n", "}\n"]
        text = "".join(lines)
        rel = f"dir{f % 25}/kernel_{f}.cu"
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
        hunks = split_hunks(rel, text, text.replace("cudaMemset", "hipMemset"))
        for n, h in enumerate(hunks):
            if n % 7 == 0:
                h.flags.append(FLAG)
        # Every 4th file also has risks on lines the translation left unchanged (the `& 31` lane masks):
        # its hunks are drawn with the "Risks on unchanged lines" section under them.
        untouched = [RiskFlag(*LANE, line=5 + 5 * k) for k in range(min(per_file, 3))] if f % 4 == 0 else []
        translations.append(FileTranslation(rel, text, text.replace("cudaMemset", "hipMemset"), "builtin", hunks,
                                            untouched_flags=untouched))
    review = ReviewState.create(src, root / "out", translations)
    review.save()
    return review.path


async def measure_review(path: Path, presses: int) -> dict:
    ws = Workspace(path.parent)
    app = HipwizardApp(ws, resume=False)
    rss0 = psutil.Process().memory_info().rss
    async with app.run_test(size=(120, 40)) as pilot:
        t0 = time.perf_counter()
        screen = PortScreen(path)
        await app.push_screen(screen)
        while screen.review is None:
            await asyncio.sleep(0.005)
        await pilot.pause()
        open_s = time.perf_counter() - t0
        lat: dict[str, list[float]] = {"j": [], "y": [], "n": []}
        pilot_lat: dict[str, list[float]] = {"j": [], "y": [], "n": []}
        for _ in range(presses):
            for key in ("y", "n", "j"):
                await _press(pilot, key, lat, pilot_lat)
        decided = screen.review.counts()
        rss = psutil.Process().memory_info().rss
    return {"open_s": open_s, "lat": lat, "pilot": pilot_lat, "rss_mb": rss / 2**20, "rss_delta_mb": (rss - rss0) / 2**20,
            "hunks": decided.total, "state_mb": path.stat().st_size / 2**20}


class BareApp(App):
    BINDINGS = [("j", "next", "Next")]

    def compose(self):
        yield Static("hunk 0", id="s")

    def action_next(self) -> None:
        self.n = getattr(self, "n", 0) + 1
        self.query_one("#s", Static).update(f"hunk {self.n}")


async def measure_peer(presses: int) -> tuple[list[float], list[float]]:
    lat: dict[str, list[float]] = {"j": []}
    pilot_lat: dict[str, list[float]] = {"j": []}
    app = BareApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for _ in range(presses):
            await _press(pilot, "j", lat, pilot_lat)
    return lat["j"], pilot_lat["j"]


def p95(values: list[float]) -> float:
    return sorted(values)[int(0.95 * (len(values) - 1))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=500)
    ap.add_argument("--hunks-per-file", type=int, default=10)
    ap.add_argument("--presses", type=int, default=150)
    args = ap.parse_args()
    _hook_frames()
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        path = build(Path(tmp), args.files, args.hunks_per_file)
        build_s = time.perf_counter() - t
        ours = asyncio.run(measure_review(path, args.presses))
        peer = asyncio.run(measure_peer(args.presses))
    print(f"migration: {ours['hunks']} hunks over {args.files} files; state file {ours['state_mb']:.1f} MB "
          f"(built in {build_s:.1f} s)")
    print(f"open Port screen: {ours['open_s'] * 1000:.0f} ms   (target < 2000 ms)")
    peer_frame, peer_pilot = peer
    for label, ours_lat, peer_lat in (("key→frame", ours["lat"], peer_frame),
                                      ("Pilot round trip", ours["pilot"], peer_pilot)):
        print(f"{label}:")
        for key in ("j", "y", "n"):
            v = ours_lat[key]
            print(f"  key {key}: median {statistics.median(v):.1f} ms, p95 {p95(v):.1f} ms  (n={len(v)})")
        peer_med = statistics.median(peer_lat)
        print(f"  peer (bare Textual app, j updates one Static): median {peer_med:.1f} ms, p95 {p95(peer_lat):.1f} ms")
        print(f"  ratio j median ours/peer: {statistics.median(ours_lat['j']) / peer_med:.2f}x")
    print("target: j median < 30 ms (key→frame)")
    print(f"memory: RSS {ours['rss_mb']:.0f} MB after the run (+{ours['rss_delta_mb']:.0f} MB for the review)")


if __name__ == "__main__":
    main()
