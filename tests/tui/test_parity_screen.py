"""Pilot tests and SVG snapshots of the Parity dashboard, fed recorded comparison results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hipwizard.parity.report import Comparison
from hipwizard.parity.status import record_comparison, record_curves
from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.parity_screen import ParityScreen
from hipwizard.workspace import Workspace

FIX = Path(__file__).parent.parent / "fixtures"
SIZE = (150, 48)


def _recorded(name: str) -> Comparison:
    return Comparison.from_dict(json.loads((FIX / "parity" / name).read_text()))


def _workspace(tmp_path, *reports: str, curves: bool = False, demo: bool = False) -> Workspace:
    ws = Workspace(tmp_path)
    for name in reports:
        record_comparison(ws, _recorded(name))
    if curves:
        for run in ("plain", "zero3"):
            (tmp_path / run).mkdir()
            shutil.copy(FIX / "llamafactory" / f"trainer_log-8b-lora-{run}-h200.jsonl", tmp_path / run / "trainer_log.jsonl")
        record_curves(ws, str(tmp_path / "plain"), str(tmp_path / "zero3"), 0.3, 0.05)
    if demo:
        ws.update_state("parity", demo=True)
    return ws


async def _open(pilot):
    pilot.app.sub_title = "snapshot"  # the header would show the tmp path
    await pilot.press("3")
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def _text(app) -> str:
    return "\n".join(str(w.render()) for w in app.screen.query("Static"))


async def test_table_sorted_by_depth_with_symbol_and_word(tmp_path):
    app = HipwizardApp(_workspace(tmp_path, "compare-demo-fp32-perturbed.json"))
    async with app.run_test(size=SIZE) as pilot:
        await _open(pilot)
        screen = app.screen
        assert isinstance(screen, ParityScreen)
        table = screen.query_one("#parity-table")
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        assert [r[0] for r in rows] == [str(i) for i in range(6)]
        assert rows[0][-1] == "✔ pass" and rows[1][-1] == "✖ FAIL ◀"
        # the cursor starts on the module where divergence starts, with its details
        assert "model.layers.0.mlp" in _text(app) and "divergence starts here" in _text(app)
        await pilot.press("down", "down", "down")
        await pilot.pause()
        details = str(screen.query_one("#parity-details").render())
        assert "model.norm" in details and "worst elements" in details and "tolerance fp32" in details


async def test_empty_workspace_says_how_to_get_results_and_hides_demo_keys(tmp_path):
    app = HipwizardApp(_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await _open(pilot)
        assert "○ no comparison yet" in _text(app) and "hipwizard parity compare" in _text(app)
        assert app.screen.check_action("run_demo", ()) is False


async def test_demo_key_runs_worker_and_shows_result(tmp_path, demo_assets, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "demo-v1").symlink_to(demo_assets.root)
    monkeypatch.setenv("HIPWIZARD_CACHE", str(cache))
    (tmp_path / "ws").mkdir()
    ws = _workspace(tmp_path / "ws", demo=True)
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        await _open(pilot)
        await pilot.press("d", "d")  # bf16 -> fp16 -> fp32
        assert app.screen.dtype == "fp32"
        await pilot.press("r")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        comp = app.screen.comparison
        assert comp is not None and comp.verdict == "pass" and comp.candidate["dtype"] == "fp32"
        assert "✔ pass — 6/6 modules within fp32 tolerance" in _text(app)
    assert ws.read_state("parity")["comparisons"][-1]["verdict"] == "pass"


@pytest.mark.parametrize("report", ["compare-demo-bf16-pass.json", "compare-demo-fp32-perturbed.json"])
def test_snapshot_comparison(snap_compare, tmp_path, report):
    app = HipwizardApp(_workspace(tmp_path, report), resume=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=_open)


def test_snapshot_with_curves_overlay(snap_compare, tmp_path):
    app = HipwizardApp(_workspace(tmp_path, "compare-demo-bf16-pass.json", curves=True), resume=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=_open)


def test_snapshot_empty_demo(snap_compare, tmp_path):
    app = HipwizardApp(_workspace(tmp_path, demo=True), resume=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=_open)
