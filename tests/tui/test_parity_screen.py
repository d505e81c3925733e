"""Pilot tests and SVG snapshots of the Parity dashboard, fed recorded comparison results."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

import hipwizard.parity as parity
from hipwizard.errors import UserError
from hipwizard.parity import BackendRow, CompareOutcome, services
from hipwizard.parity.compare.result import Comparison
from hipwizard.parity.state import (
    latest_comparison,
    mark_demo,
    record_comparison,
    record_curves,
)
from hipwizard.progress import Progress
from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.parity import views
from hipwizard.tui.parity.screen import ParityScreen
from hipwizard.workspace import Workspace
from tests.tui.waiting import notifications, until

FIX = Path(__file__).parent.parent / "fixtures"
SIZE = (150, 48)
SIZES = {"80x24": (80, 24), "160x45": (160, 45)}


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
        mark_demo(ws)
    return ws


async def _open(pilot):
    pilot.app.sub_title = "snapshot"  # the header would show the tmp path
    await pilot.press("3")
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def _text(app) -> str:
    return "\n".join(str(w.render()) for w in app.screen.query("Static"))


def _stage(app) -> str:
    """The demo run's stage line ("◐ forward …" once the worker reports)."""
    return str(app.screen.query_one("#parity-stage").render())


def _notes(app) -> str:
    return "\n".join(notifications(app))


async def test_table_in_depth_order_with_symbol_and_word_first(tmp_path):
    app = HipwizardApp(_workspace(tmp_path, "compare-demo-fp32-perturbed.json"))
    async with app.run_test(size=SIZE) as pilot:
        await _open(pilot)
        screen = app.screen
        assert isinstance(screen, ParityScreen)
        table = screen.query_one("#parity-table")
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        assert [r[1] for r in rows] == [layer.name for layer in screen.comparison.layers]
        assert [str(c.label) for c in table.ordered_columns][:5] == ["verdict", "module", "cosine", "max abs", "rel L2"]
        assert rows[0][0] == "✔ pass" and rows[1][0] == "✖ FAIL ◀"
        # the cursor starts on the module where divergence starts, with its details
        assert "model.layers.0.mlp" in _text(app) and "divergence starts here" in _text(app)
        await pilot.press("down", "down", "down")
        await pilot.pause()
        details = str(screen.query_one("#parity-details").render())
        assert "model.norm" in details and "worst elements" in details and "tolerance fp32" in details


@pytest.mark.slow
async def test_narrow_window_keeps_verdict_and_module_and_fits_the_columns(tmp_path):
    app = HipwizardApp(_workspace(tmp_path, "compare-demo-fp32-perturbed.json"))
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(pilot)
        screen = app.screen
        table = screen.query_one("#parity-table")
        assert screen.has_class("-narrow")
        labels = [str(c.label) for c in table.ordered_columns]
        assert labels[:2] == ["verdict", "module"] and "rel L2" in labels and "#" not in labels
        assert sum(c.get_render_width(table) for c in table.ordered_columns) <= table.size.width
        await pilot.press("down", "down")
        await pilot.pause()
        assert table.cursor_row == 3
        await pilot.resize_terminal(160, 45)
        await pilot.pause()
        assert not screen.has_class("-narrow")
        assert [str(c.label) for c in table.ordered_columns][-1] == "#"
        assert table.cursor_row == 3  # the rebuilt table keeps the highlighted module


def test_fit_columns_drops_by_priority():
    comp = _recorded("compare-demo-fp32-perturbed.json")

    def keys(width: int) -> list[str]:
        return [c.key for c in views.fit_columns(comp, width)]

    # no reference run-dtype capture: no triangle column
    assert keys(200) == [c.key for c in views.COLUMNS if c.key != "triangle"]
    assert keys(76) == ["verdict", "module", "cosine", "max_abs", "rel_l2", "outside"]
    assert keys(50) == ["verdict", "module", "rel_l2"]
    assert keys(10) == ["verdict", "module"]  # never fewer: the table scrolls sideways
    assert keys(1000)[:2] == ["verdict", "module"]


async def test_empty_workspace_says_how_to_get_results_and_why_demo_keys_do_nothing(tmp_path):
    app = HipwizardApp(_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await _open(pilot)
        assert "○ no comparison yet" in _text(app) and "hipwizard parity compare" in _text(app)
        assert app.screen.check_action("run_demo", ()) is False
        await pilot.press("D")
        await pilot.pause()
        assert "demo workspace" in _notes(app) and app.screen.running is False


class FakeRun:
    """Stands in for the worker subprocess: reports progress, then waits until released or stopped."""

    def __init__(self, outcome):
        self.outcome = outcome
        self.release = threading.Event()
        self.stopped = False

    def run(self, progress=None):
        progress(Progress("forward", 2, 6, "model.layers.0.mlp"))
        self.release.wait(30)
        if self.stopped:
            raise UserError("the comparison was stopped")
        return self.outcome

    def stop(self):
        self.stopped = True
        self.release.set()


@pytest.fixture
def fake_run(monkeypatch):
    outcome = CompareOutcome(_recorded("compare-demo-bf16-pass.json"), "same machine")
    runs = []

    def start(request, ws):
        runs.append((request, FakeRun(outcome)))
        return runs[-1][1]

    monkeypatch.setattr(parity, "compare_in_worker", start)
    return runs


async def test_demo_run_shows_progress_result_and_stops_with_the_screen(tmp_path, fake_run):
    app = HipwizardApp(_workspace(tmp_path, demo=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(pilot)
        await pilot.press("t")
        await pilot.press("D")
        await until(pilot, lambda: fake_run and _stage(app).startswith("◐"))
        request, run = fake_run[-1]
        assert request.options.dtype == "fp16" and request.same_machine and request.subject.demo
        assert "◐ forward 2/6 model.layers.0.mlp" in _text(app)
        await pilot.press("D")
        assert "already running" in _notes(app)
        run.release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen.comparison.verdict == "pass" and not app.screen.running
        assert app.screen.query_one("#parity-run").display is False
        await pilot.press("D")
        await until(pilot, lambda: len(fake_run) == 2 and _stage(app).startswith("◐"))
        second = fake_run[-1][1]
        await pilot.press("h")  # leaving the screen stops the worker
        await pilot.pause()
        assert second.stopped


@pytest.mark.slow
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
        await pilot.press("t", "t")  # bf16 -> fp16 -> fp32
        assert app.screen.dtype == "fp32"
        await pilot.press("D")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        comp = app.screen.comparison
        assert comp is not None and comp.verdict == "pass" and comp.candidate["dtype"] == "fp32"
        text = _text(app)  # the demo compares forward and backward, with the triangle
        assert "forward ✔ pass — 6/6 modules within 2x the reference's own error" in text
        assert "6/6 modules within fp32 tolerance" in text and "backward ✔ pass" in text
    assert latest_comparison(ws).verdict == "pass"


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("report", ["compare-demo-bf16-pass.json", "compare-demo-fp32-perturbed.json"])
def test_snapshot_comparison(snap_compare, tmp_path, report, size):
    app = HipwizardApp(_workspace(tmp_path, report), resume=False)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=_open)


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_with_curves_overlay(snap_compare, tmp_path, size):
    app = HipwizardApp(_workspace(tmp_path, "compare-demo-fp32-perturbed.json", curves=True), resume=False)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=_open)


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_empty_demo(snap_compare, tmp_path, size):
    app = HipwizardApp(_workspace(tmp_path, demo=True), resume=False)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=_open)


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_snapshot_demo_running(snap_compare, tmp_path, fake_run, size):
    app = HipwizardApp(_workspace(tmp_path, "compare-demo-bf16-pass.json", demo=True), resume=False)

    async def run_before(pilot):
        await _open(pilot)
        await pilot.press("D")
        await until(pilot, lambda: _stage(pilot.app).startswith("◐"))  # the run's progress is drawn

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


def _gradient_comparison(tmp_path) -> Comparison:
    """A real comparison with gradients and triangle verdicts: the demo model on this CPU, a wrong backward
    in layer 1's MLP (the parity services, as the CLI runs them)."""
    from hipwizard.demo_model import build
    from hipwizard.parity.requests import CompareRequest, RunOptions, Subject

    model = build().model_dir
    opts = RunOptions(dtype="bf16", device="cpu", seq=8, backward=True, triangle=True,
                      perturb_grad={"model.layers.1.mlp": 0.05})
    return services.run_comparison(CompareRequest(subject=Subject(model=model), same_machine=True, options=opts)).comparison


@pytest.mark.slow
async def test_backward_toggle_shows_gradients_triangle_and_where_the_backward_diverges(tmp_path):
    comp = _gradient_comparison(tmp_path)
    ws = Workspace(tmp_path)
    record_comparison(ws, comp)
    app = HipwizardApp(ws)
    async with app.run_test(size=(160, 45)) as pilot:
        await _open(pilot)
        screen = app.screen
        assert isinstance(screen, ParityScreen) and screen.direction == "forward"
        text = _text(app)
        assert "forward: module outputs" in text and "b shows the backward" in text
        assert "triangle" in [str(c.label) for c in screen.query_one("#parity-table").columns.values()]
        await pilot.press("b")
        await pilot.pause()
        assert screen.direction == "backward"
        table = screen.query_one("#parity-table")
        assert table.row_count == len(comp.backward.layers)
        text = _text(app)
        assert "∂in model.layers.1.mlp" in text and "divergence starts here" in text
        assert "triangle ✖ FAIL" in text and "reference's own bf16 error" in text
        assert "backward order" in text
        await pilot.press("b")
        await pilot.pause()
        assert screen.direction == "forward" and table.row_count == len(comp.layers)


async def test_v_cycles_the_attention_backends_table(tmp_path):
    passing, failing = _recorded("compare-demo-bf16-pass.json"), _recorded("compare-demo-fp32-perturbed.json")
    comp = Comparison.from_dict(passing.to_dict())
    comp.matrix = [BackendRow("eager", passing), BackendRow("fa2", error="not installed"), BackendRow("sdpa", failing)]
    ws = Workspace(tmp_path)
    record_comparison(ws, comp)
    app = HipwizardApp(ws)
    async with app.run_test(size=(160, 45)) as pilot:
        await _open(pilot)
        screen = app.screen
        assert isinstance(screen, ParityScreen)
        assert "table: eager (v next)" in _text(app) and "▶ eager" in _text(app)
        assert screen.shown.first_divergent == passing.first_divergent
        await pilot.press("v")
        await pilot.pause()
        text = _text(app)
        assert "▶ sdpa" in text and "table: sdpa" in text  # fa2 did not run: skipped
        assert screen.shown.first_divergent == failing.first_divergent and failing.first_divergent
        assert screen.query_one("#parity-table").row_count == len(failing.layers)
        await pilot.press("v")
        await pilot.pause()
        assert "▶ eager" in _text(app)


@pytest.mark.slow
async def test_v_is_inert_without_a_matrix_and_in_help(tmp_path):
    app = HipwizardApp(_workspace(tmp_path, "compare-demo-bf16-pass.json"))
    async with app.run_test(size=(160, 45)) as pilot:
        await _open(pilot)
        assert app.screen.check_action("next_backend", ()) is False
        assert "v shows the next backend" in ParityScreen.help_text
