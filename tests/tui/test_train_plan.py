"""Pilot tests and snapshots of the Plan tab (TrainPlanPane mounted in a tiny app)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from textual.app import App, ComposeResult
from textual.widgets import Input, Select, Static, Switch

from hipwizard.train.config.yaml_io import load_yaml
from hipwizard.tui.train.plan import TrainPlanPane
from hipwizard.workspace import Workspace
from tests.train.plan_fixtures import recipe_dir
from tests.tui.waiting import notifications, until

SIZE = (160, 50)


class PlanApp(App):
    def __init__(self, workspace: Workspace, model: str | None = None) -> None:
        super().__init__()
        self.workspace = workspace
        self.model = model
        self.saved: list[Path] = []

    def compose(self) -> ComposeResult:
        yield TrainPlanPane()

    def on_mount(self) -> None:
        loaded = load_yaml(self.workspace.root / "recipe.yaml")
        if self.model:
            loaded.config.model_name_or_path = self.model
        pane = self.query_one(TrainPlanPane)
        pane.load(loaded.config, loaded.document, base_dir=self.workspace.root)
        pane.query_one("#plan-name", Input).value = "recipe"  # deterministic (the default has a timestamp)

    def on_train_plan_pane_saved(self, message: TrainPlanPane.Saved) -> None:
        self.saved.append(message.run_dir)


def make_app(tmp_path, model=None) -> PlanApp:
    return PlanApp(Workspace(recipe_dir(tmp_path)), model)


async def settle(pilot) -> None:
    """Until the last edit's plan is shown (its debounce timer fired and its job answered)."""
    await pilot.pause()
    await until(pilot, lambda: not any(p.replan_pending for p in pilot.app.query(TrainPlanPane)))
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def panel(app, name: str) -> str:
    return str(app.query_one(f"#plan-{name}", Static).render())


@pytest.mark.slow
async def test_form_groups_help_and_clean_plan(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        titles = [str(s.render()) for s in app.query(".plan-group-title")]
        assert titles == ["Model", "Method", "Data", "Training", "Distributed (DeepSpeed)", "Output"]
        assert "LoRA rank r" in str(app.query_one("#field-lora_rank .plan-help", Static).render())
        assert app.query_one("#in-per_device_train_batch_size", Input).value == "4"
        assert app.query_one("#in-zero_stage", Select).value == "3"
        assert "✔ ok: no problems found" in panel(app, "issues")
        assert "✔ fits" in panel(app, "memory") and "MI300X" in panel(app, "memory")
        assert "▶" in panel(app, "advice")


@pytest.mark.slow
async def test_inline_validation_as_you_type_and_save_refused(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lr = app.query_one("#in-learning_rate", Input)
        lr.value = "fast"
        await settle(pilot)
        # the plan worker starts after the field's debounce: under load it may not have run yet
        await until(pilot, lambda: "✖ error: learning_rate" in panel(app, "issues"))
        assert "✖ learning_rate" in str(app.query_one("#err-learning_rate", Static).render())
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.saved == [] and not app.workspace.runs_dir.exists()
        lr.value = "1e-4"
        await settle(pilot)
        await until(pilot, lambda: str(app.query_one("#err-learning_rate", Static).render()) == "")
        assert app.query_one(TrainPlanPane).config.learning_rate == 1e-4


@pytest.mark.slow
async def test_rules_show_while_editing(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#in-fp16", Switch).value = True
        app.query_one("#in-lora_target", Input).value = "q_proj,qkv"
        await settle(pilot)
        issues = panel(app, "issues")
        assert "bf16 and fp16 are both on" in issues and "qkv not a module" in issues


@pytest.mark.slow
async def test_memory_estimate_updates_live(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = app.query_one(TrainPlanPane).plan.estimate.total_gib
        app.query_one("#in-per_device_train_batch_size", Input).value = "8"
        await settle(pilot)
        after = app.query_one(TrainPlanPane).plan.estimate.total_gib
        assert after > before
        assert f"{after:7.1f} GiB" in panel(app, "memory")


async def test_apply_suggestion_then_save_run_dir(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+n", "ctrl+n")  # walk the list, then back to the top
        assert "▶ " in panel(app, "advice")
        app.query_one(TrainPlanPane).selected = 0
        await pilot.press("ctrl+g")
        await settle(pilot)
        cfg = app.query_one(TrainPlanPane).config
        assert cfg.zero_stage is None and cfg.disable_gradient_checkpointing
        assert cfg.effective_batch() == 16
        assert app.query_one("#in-zero_stage", Select).value == Select.NULL
        assert app.query_one("#in-disable_gradient_checkpointing", Switch).value is True
        await pilot.press("ctrl+s")
        await pilot.pause()
    run_dir = app.workspace.runs_dir / "recipe"
    assert app.saved == [run_dir]
    data = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert "deepspeed" not in data and data["disable_gradient_checkpointing"] is True
    assert data["model_name_or_path"] == str(app.workspace.root / "m8b")  # anchored for the launcher
    assert data["ddp_timeout"] == 180000000  # unknown keys of the loaded YAML kept
    assert not (run_dir / "ds_config.json").exists()


async def test_save_refused_by_the_service_marks_the_name_field(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        name = app.query_one("#plan-name", Input)
        name.value = "../elsewhere"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.saved == [] and name.has_class("-invalid")  # the service's field, marked
        name.value = "recipe"
        await pilot.press("ctrl+s")
        await pilot.pause()
    assert app.saved == [app.workspace.runs_dir / "recipe"] and not name.has_class("-invalid")


async def test_unknown_architecture_estimate_says_why_editor_still_works(tmp_path):
    app = make_app(tmp_path, model="unknown_arch")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "✖ cannot estimate memory" in panel(app, "memory") and "MambaForCausalLM" in panel(app, "memory")
        app.query_one("#in-cutoff_len", Input).value = "512"
        await settle(pilot)
        assert app.query_one(TrainPlanPane).config.cutoff_len == 512


async def test_knobs_not_offered_fold_until_opened(tmp_path):
    """80x24: the advisor's knobs not offered (~10 long lines) take a line or two: a count and how to open it (▸ and
    words, not colour); enter on it or ctrl+o from anywhere on the tab shows one line per knob (▾), and the title
    says how to hide (and that a click does it too)."""
    from textual.widgets import Collapsible

    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        reasons = app.query_one(TrainPlanPane).plan.advice.not_offered
        assert len(reasons) >= 2
        folded = app.query_one("#plan-not-offered", Collapsible)
        title = folded.query_one("CollapsibleTitle")  # by CSS type name: the class is not public
        shown = panel(app, "advice") + str(title.render())
        assert str(title.render()) == f"▸ {len(reasons)} knobs not offered (ctrl+o/click: why)"
        assert not any(reason in shown for reason in reasons)
        assert folded.collapsed and folded.outer_size.height <= 2  # one line, or two where it wraps
        lines = app.query_one("#plan-not-offered-lines", Static)
        assert lines.region.height == 0
        title.focus()
        await pilot.press("enter")
        await until(pilot, lambda: lines.region.height >= len(reasons))
        assert not folded.collapsed and str(title.render()).startswith("▾ ")
        assert str(title.render()).endswith("(ctrl+o/click: hide)")
        assert str(lines.render()).splitlines() == [f"○ {reason}" for reason in reasons]
        # enter again folds it (a pilot click on the title missed it under load: Textual's own click is its tests')
        title.focus()
        await pilot.press("enter")
        await until(pilot, lambda: folded.collapsed and lines.region.height == 0)
        assert str(title.render()).startswith("▸ ")
        # ctrl+o from a form field (focus far from the fold): opens, and again folds
        app.query_one("#in-cutoff_len", Input).focus()
        await pilot.press("ctrl+o")
        await until(pilot, lambda: not folded.collapsed and lines.region.height >= len(reasons))
        assert app.focused is app.query_one("#in-cutoff_len", Input)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: folded.collapsed)


def test_knobs_not_offered_text_is_never_markup():
    from types import SimpleNamespace

    from hipwizard.tui.train import plan_panels as panels

    reason = "optim [bold]x[/] [$accent]y: a [link=http://x]reason[/link]"
    plan = SimpleNamespace(advice=SimpleNamespace(reason="", not_offered=[reason]))
    assert panels.not_offered_text(plan).plain == f"○ {reason}"
    assert panels.not_offered_title(plan, expanded=False) == "1 knob not offered (ctrl+o/click: why)"
    assert panels.not_offered_lines(SimpleNamespace(advice=SimpleNamespace(reason="no GPU", not_offered=[reason]))) == []


# --- snapshots --------------------------------------------------------------------------------

def test_snapshot_recipe(tmp_path, snap_compare):
    assert snap_compare(make_app(tmp_path), terminal_size=SIZE, run_before=settle)


def test_snapshot_inline_error(tmp_path, snap_compare):
    async def before(pilot):
        await settle(pilot)
        pilot.app.query_one("#in-learning_rate", Input).value = "-1"
        pilot.app.query_one("#in-template", Input).value = "llama-3"
        await settle(pilot)
        pilot.app.query_one("#plan-form").scroll_to_widget(pilot.app.query_one("#field-template"), animate=False)
        await pilot.pause()

    assert snap_compare(make_app(tmp_path), terminal_size=SIZE, run_before=before)


def test_snapshot_after_applying_advice(tmp_path, snap_compare):
    async def before(pilot):
        await settle(pilot)
        await pilot.press("ctrl+g")
        await settle(pilot)

    assert snap_compare(make_app(tmp_path), terminal_size=SIZE, run_before=before)


class DemoPlanApp(App):
    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace

    def compose(self) -> ComposeResult:
        yield TrainPlanPane()


async def test_demo_workspace_opens_on_the_demo_preset_with_the_tiny_model(tmp_path, monkeypatch, demo_assets):
    import os

    cache = tmp_path / "cache"
    cache.mkdir()
    os.symlink(demo_assets.root, cache / "demo-v1")  # the session's built demo stands in for the user's cache
    monkeypatch.setenv("HIPWIZARD_CACHE", str(cache))
    from hipwizard.demo_workspace import prepare_demo_workspace

    ws = prepare_demo_workspace()
    app = DemoPlanApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await settle(pilot)
        pane = app.query_one(TrainPlanPane)
        assert pane.query_one("#plan-preset", Select).value == "demo"
        assert pane.query_one("#in-model_name_or_path", Input).value == str(cache / "demo-v1" / "model")
        issues = str(pane.query_one("#plan-issues", Static).render())
        assert "checking" not in issues and "error" not in issues.lower(), issues
        assert "fits" in str(pane.query_one("#plan-memory", Static).render())


@pytest.mark.slow
async def test_narrow_form_fits_80_columns(tmp_path):
    """80x24 over SSH: one line per field, short labels that fit, the focused field's help naming its YAML key,
    side panels without bars; back to the full form when wide again."""
    from hipwizard.tui.train.plan_panels import SHORT_WIDTH

    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        pane = app.query_one(TrainPlanPane)
        assert pane.has_class("-narrow")
        for label in app.query(".plan-field-name"):
            text = str(label.render())
            assert len(text) <= SHORT_WIDTH and len(text) <= label.content_region.width, text
        batch = app.query_one("#in-per_device_train_batch_size", Input)
        assert batch.compact and batch.region.height == 1
        assert str(app.query_one("#label-per_device_train_batch_size").render()) == "batch / GPU"
        help_ = app.query_one("#help-per_device_train_batch_size", Static)
        assert not help_.display or help_.region.height == 0
        batch.focus()
        await settle(pilot)
        assert help_.region.height >= 1
        assert str(help_.render()).startswith("per_device_train_batch_size: Sequences per GPU")
        side = app.query_one("#plan-memory", Static)
        lines = str(side.render()).splitlines()
        assert "█" not in "".join(lines) and "total" in "".join(lines)
        assert max(len(line) for line in lines[1:]) <= side.content_region.width
        await pilot.resize_terminal(160, 50)
        await settle(pilot)
        assert not pane.has_class("-narrow") and not batch.compact
        assert str(app.query_one("#label-per_device_train_batch_size").render()) == "per_device_train_batch_size"
        assert "█" in panel(app, "memory")


# --- calibration from the Plan tab: a real short run of the tiny demo model on CPU -------------------------

class CalibrateApp(App):
    """The Plan tab on the demo's config (its own folder), calibrating on CPU with ``candidates`` x ``steps``."""

    def __init__(self, workspace: Workspace, config: Path, candidates: int, steps: int, warmup: int) -> None:
        super().__init__()
        self.workspace, self.config_path = workspace, config
        self.settings = (candidates, steps, warmup)

    def compose(self) -> ComposeResult:
        yield TrainPlanPane()

    def on_mount(self) -> None:
        from hipwizard.train.run.launcher import LaunchOptions
        from tests.train.helpers import LF_ENV

        pane = self.query_one(TrainPlanPane)
        pane.calibrate_candidates, pane.calibrate_steps, pane.calibrate_warmup = self.settings
        pane.calibrate_options = LaunchOptions(platform="cpu", extra_env=dict(LF_ENV))
        loaded = load_yaml(self.config_path)
        pane.load(loaded.config, loaded.document, base_dir=self.config_path.parent)


def _calibrate_app(tmp_path, demo_assets, candidates, steps, warmup) -> CalibrateApp:
    from hipwizard.train.demo import write_demo_run_dir

    run_dir = write_demo_run_dir(tmp_path / "src", demo_assets.root, name="demo")
    return CalibrateApp(Workspace.open(tmp_path / "ws"), run_dir / "config.yaml", candidates, steps, warmup)


def _status(app) -> str:
    return str(app.query_one("#plan-calibrate-status", Static).render())


@pytest.mark.slow
async def test_calibrate_key_runs_the_demo_on_cpu_with_a_progress_bar_then_labels_numbers(tmp_path, demo_assets):
    """C (focus on the Calibrate button): one candidate, 3 real steps through the launcher; the bar counts the
    steps, the calibration is saved, and after the re-plan the advisor says measured here / calibrated here."""
    import sys

    from textual.widgets import Button, Input, ProgressBar

    from hipwizard.train import state
    from hipwizard.tui.train.dialogs import CalibrateDialog

    torch_before = "torch" in sys.modules
    app = _calibrate_app(tmp_path, demo_assets, 4, 8, 1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await until(pilot, lambda: "▶" in panel(app, "advice"))
        assert "ℹ predicted (H200-fitted model); C calibrates here" in panel(app, "advice")
        assert "↳ predicted" in panel(app, "memory")
        app.query_one("#plan-calibrate", Button).focus()
        await pilot.press("C")
        # K and N are asked first, with the last values; a bad one is said in the dialog and nothing starts
        await until(pilot, lambda: isinstance(app.screen, CalibrateDialog))
        dialog = app.screen
        k, n = dialog.query_one("#calibrate-candidates", Input), dialog.query_one("#calibrate-steps", Input)
        assert (k.value, n.value) == ("4", "8")
        k.value = "0"
        await pilot.click("#calibrate-go")
        await until(pilot, lambda: "candidates must be between 1 and 16, not 0" in str(
            dialog.query_one("#calibrate-error", Static).render()))
        assert app.screen is dialog and not app.workspace.runs_dir.exists()
        k.value, n.value = "1", "3"
        k.focus()
        await pilot.press("enter")
        await until(pilot, lambda: "▶ calibrating" in _status(app))
        assert str(app.query_one("#plan-calibrate", Button).label) == "Stop"
        bar = app.query_one("#plan-calibrate-bar", ProgressBar)
        await until(pilot, lambda: "✔ calibrated" in _status(app) or "✖" in _status(app), timeout=300)
        assert "1 of 1 config(s) measured" in _status(app), _status(app)
        assert bar.total == 3 and bar.progress == 3
        assert str(app.query_one("#plan-calibrate", Button).label) == "Calibrate"
        await until(pilot, lambda: "measured here" in panel(app, "advice"))
        advice = panel(app, "advice")
        assert "ℹ calibrated on" in advice and "· calibrated here" in advice, advice
        # a CPU has no device memory to read: the step time is measured, the peak stays predicted and says so
        assert "measured here; memory predicted" in advice, advice
        assert "↳ predicted" in panel(app, "memory")
        # the demo plans 8 steps: the selected candidate's planned run, its start-up measured (3 steps hold no
        # timed checkpoint, so that stays the prior), and the order says so (issue 33 item 4)
        assert "shortest 8-step run first" in advice, advice
        assert "planned run ~" in advice and "start-up measured here, checkpoints prior" in advice, advice
    (cal,) = state.calibrations(app.workspace)
    assert len(cal.good) == 1 and cal.good[0].steps == 3 and not cal.stopped
    assert ("torch" in sys.modules) == torch_before  # the run was a subprocess; nothing heavy came in here


@pytest.mark.slow
async def test_stop_calibration_asks_then_ends_the_candidates_process_group(tmp_path, demo_assets):
    """X during the first candidate, confirmed with y: the run in flight is stopped (no process of its group
    left), the second candidate never starts, and the stopped calibration is kept."""
    from textual.widgets import Button

    from hipwizard.train import state
    from hipwizard.train.run.manifest import load_manifest
    from hipwizard.train.run.stop import run_processes
    from tests.train.helpers import pids_alive

    app = _calibrate_app(tmp_path, demo_assets, 2, 40, 2)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await until(pilot, lambda: "▶" in panel(app, "advice"))
        assert not app.query_one(TrainPlanPane).check_action("stop_calibration", ())  # X hidden: nothing to stop
        await pilot.click("#plan-calibrate")
        await until(pilot, lambda: app.screen.query("#calibrate-go"))
        await settle(pilot)  # the dialog laid out before the click lands on its button
        await pilot.click("#calibrate-go")  # K and N as they were (2 and 40)
        runs = app.workspace.runs_dir

        def seen() -> str:
            return f"status {_status(app)!r}, toasts {notifications(app)}, runs {sorted(map(str, runs.glob('*/*')))}"

        await until(pilot, lambda: not app.screen.query("#calibrate-go"), describe=seen)  # the click took

        def first():
            return next(iter(runs.glob("calibrate-*/1")), None)

        await until(pilot, lambda: first() is not None and load_manifest(first()) is not None, timeout=120,
                    describe=seen)
        manifest = load_manifest(first())
        def stepping_first() -> bool:  # a step of the first candidate logged (arrivals can come several at once)
            import re

            found = re.search(r"calibrating (\d+)/(\d+)", _status(app))
            return found is not None and 1 <= int(found.group(1)) < 40

        await until(pilot, stepping_first, timeout=240, describe=seen)
        pids = list(run_processes(manifest))
        assert pids
        app.query_one("#plan-calibrate", Button).focus()
        await pilot.press("X")
        await until(pilot, lambda: "Stop the calibration?" in str(app.screen.query_one("#confirm-text").render()))
        await pilot.press("y")
        await until(pilot, lambda: "■ stopped" in _status(app), timeout=120, describe=seen)
        assert not run_processes(manifest) and not pids_alive(pids)
        assert not (runs / first().parent.name / "2").exists()
        assert str(app.query_one("#plan-calibrate", Button).label) == "Calibrate"
    (cal,) = state.calibrations(app.workspace)
    # the candidate in flight: measured from the steps it logged before the stop, or marked stopped
    assert cal.stopped and len(cal.measurements) == 1
    assert cal.measurements[0].ok or cal.measurements[0].error == "stopped"
