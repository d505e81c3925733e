"""The Plan tab of the Train screen: LLaMA-Factory config forms, live memory estimate, advisor, save.

A widget, not a screen: ``TrainScreen`` embeds ``TrainPlanPane()`` and listens for ``TrainPlanPane.Saved``.
Fields are grouped as LlamaBoard groups them; each shows its help and its error as you type. Validation,
estimate and advice come from ``hipwizard.train.plan`` (the service) in a job, debounced, so typing never waits
for them. Below ``NARROW`` columns the form goes compact: one line per field, short labels, the help of
the focused field only, the side panels without bars. Layout and event wiring only; the panels' text is
in ``plan_panels``.

C (or the Calibrate button) calibrates the form's config here: ``train.calibrate_plan`` in a
thread worker runs the advisor's top candidates for a few real steps each (every candidate is its own
``llamafactory-cli`` process group; nothing heavy is imported in this process), with a progress bar
(``plan_calibrate``); X stops it (asks first; the run in flight is stopped, process group and all). Then the
form is re-planned, and the advisor marks each number measured here, calibrated here or predicted.
"""

from __future__ import annotations

import typing
from functools import partial
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Button, Collapsible, Input, Label, Select, Static, Switch

from hipwizard import train
from hipwizard.errors import UserError
from hipwizard.train import (
    DEFAULT_PRESET,
    DEMO_PRESET,
    FIELD_GROUPS,
    Plan,
    TrainConfig,
    load_presets,
    parse_field,
    preset_config,
    preset_document,
    run_name,
)
from hipwizard.tui.messages import WorkProgress
from hipwizard.tui.train import plan_panels as panels
from hipwizard.tui.train.plan_calibrate import CalibrationBar, PlanCalibration
from hipwizard.tui.workers import Jobs

NARROW = 120  # columns below which the form goes compact


def _choices(name: str) -> tuple[list[Any], bool] | None:
    """Literal choices of a field and whether it may be empty; None for free-text fields."""
    annotation = TrainConfig.model_fields[name].annotation
    args = typing.get_args(annotation)
    optional = type(None) in args
    literal = annotation if typing.get_origin(annotation) is typing.Literal else next(
        (a for a in args if typing.get_origin(a) is typing.Literal), None)
    if literal is None:
        return None
    return list(typing.get_args(literal)), optional


def _text(value: Any) -> str:
    return "" if value is None else (f"{value:g}" if isinstance(value, float) else str(value))


class TrainPlanPane(PlanCalibration, Jobs, Vertical):
    """Edit a training plan and save it as a run directory."""

    # The styles live in plan.tcss; a widget has no CSS_PATH, so it carries them as DEFAULT_CSS.
    DEFAULT_CSS = (Path(__file__).with_name("plan.tcss")).read_text(encoding="utf-8")
    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="plan.save"),
        Binding("ctrl+g", "apply_suggestion", "Apply", id="plan.apply"),
        Binding("ctrl+n", "next_suggestion", "Next", id="plan.next_suggestion"),
        Binding("C", "calibrate", "Calibrate", id="plan.calibrate"),
        Binding("X", "stop_calibration", "Stop", id="plan.stop_calibration"),
        Binding("ctrl+o", "toggle_not_offered", "Why not offered", show=False, id="plan.not_offered"),
    ]
    # What C runs; tests and other machines may change them (the CLI takes --candidates/--steps/--warmup).
    calibrate_candidates, calibrate_steps, calibrate_warmup = 4, 8, 2
    calibrate_options = None  # a LaunchOptions; None: one process, platform detected

    class Saved(Message):
        """A run directory was written; the screen may offer to launch it."""

        def __init__(self, run_dir: Path) -> None:
            super().__init__()
            self.run_dir = run_dir

    def __init__(self, *, id: str | None = "train-plan") -> None:
        super().__init__(id=id)
        self.config = TrainConfig()
        self.document = None
        self.base_dir = Path.cwd()
        self.field_errors: dict[str, str] = {}
        self.plan: Plan | None = None
        self.selected = 0
        self.narrow = False
        self._generation = 0
        self._timer: Timer | None = None
        self.replan_pending = False  # an edit whose plan is not shown yet (debounce timer or job running)
        self._stop_calibration = None  # a threading.Event while a calibration runs (PlanCalibration)

    # --- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        presets = load_presets()
        self._first_preset = _initial_preset(getattr(self.app, "workspace", None), presets)
        with Horizontal(id="plan-top"):
            with Horizontal(id="plan-top-preset"):
                yield Select([(p.title, n) for n, p in presets.items()], value=self._first_preset,
                             allow_blank=False, id="plan-preset")
            with Horizontal(id="plan-top-run"):
                yield Label("GPUs", classes="plan-top-label")
                yield Input("1", id="plan-gpus", restrict=r"[0-9]*", max_length=4)
                yield Label("seq", classes="plan-top-label")
                yield Input("", placeholder="cutoff", id="plan-seq", restrict=r"[0-9]*", max_length=7)
                yield Label("name", classes="plan-top-label")
                yield Input("", id="plan-name")
                yield Button("Save", id="plan-save", variant="primary")
                yield Button("Calibrate", id="plan-calibrate")
        yield CalibrationBar(id="plan-calibration")
        with Horizontal(id="plan-body"):
            with VerticalScroll(id="plan-form"):
                for group, names in FIELD_GROUPS.items():
                    yield Static(panels.GROUP_TITLES[group], classes="plan-group-title")
                    for name in names:
                        with Vertical(classes="plan-field", id=f"field-{name}"):
                            with Horizontal(classes="plan-field-row"):
                                yield Label(name, classes="plan-field-name", id=f"label-{name}")
                                yield self._editor(name)
                            yield Static(panels.help_line(name, False), classes="plan-help", id=f"help-{name}")
                            yield Static("", classes="plan-error -empty", id=f"err-{name}")
            with VerticalScroll(id="plan-side"):
                yield Static("○ checking…", id="plan-issues")
                yield Static("", id="plan-memory")
                yield Static("", id="plan-advice")
                # ~10 long lines: folded to one line so the side panel fits an 80x24 terminal; the title's
                # ▸/▾ and words say whether it is open (not ▶, the advisor's mark), click or enter toggles it.
                folded = Collapsible(Static("", id="plan-not-offered-lines"), id="plan-not-offered",
                                     collapsed_symbol="▸", expanded_symbol="▾")
                folded.display = False  # until a plan has some
                yield folded

    def _editor(self, name: str):
        value = getattr(self.config, name)
        choices = _choices(name)
        if TrainConfig.model_fields[name].annotation is bool:
            return Switch(value=bool(value), id=f"in-{name}")
        if choices is not None:
            options, optional = choices
            return Select([(str(o), str(o)) for o in options], value=Select.NULL if value is None else str(value),
                          allow_blank=optional, prompt="none", id=f"in-{name}")
        return Input(_text(value), id=f"in-{name}", placeholder="empty")

    def on_mount(self) -> None:
        workspace = getattr(self.app, "workspace", None)
        self.base_dir = workspace.root if workspace is not None else Path.cwd()
        self._load_preset(self._first_preset)

    def on_resize(self) -> None:
        narrow = self.size.width < NARROW
        if narrow != self.narrow:
            self._set_narrow(narrow)

    def _set_narrow(self, narrow: bool) -> None:
        """Compact widgets, short labels and help that names the YAML key below NARROW columns."""
        self.narrow = narrow
        self.set_class(narrow, "-narrow")
        for widget in self.query("Input, Select, Button"):
            if isinstance(widget, (Input, Select, Button)):
                widget.compact = narrow
        for name in TrainConfig.model_fields:
            self.query_one(f"#label-{name}", Label).update(panels.label(name, narrow))
            self.query_one(f"#help-{name}", Static).update(panels.help_line(name, narrow))
        if self.plan is not None:
            self.query_one("#plan-memory", Static).update(panels.memory_text(self.plan, narrow))

    # --- presets and the demo -------------------------------------------------------------------
    def _load_preset(self, name: str) -> None:
        self.load(preset_config(name), preset_document(name))
        if name == DEMO_PRESET:
            self._build_demo()

    def _build_demo(self) -> None:
        """The demo preset points at the tiny model: build it (a subprocess, once) and re-check the form."""
        if not train.demo_ready():
            self.start_job("demo-build", train.build_demo, done=self._demo_built, failed=self._demo_failed,
                           progress=True)

    def on_work_progress(self, message: WorkProgress) -> None:
        if message.job == "calibrate":
            message.stop()
            self.query_one(CalibrationBar).advanced(message.progress)
        elif message.job == "demo-build":
            message.stop()
            if not message.progress.finished:
                self.notify(f"{message.progress.text()} …")

    def _demo_built(self, _assets) -> None:
        if self.query_one("#plan-preset", Select).value == DEMO_PRESET:
            self.load(preset_config(DEMO_PRESET), preset_document(DEMO_PRESET))

    def _demo_failed(self, text: str) -> None:
        self.notify(f"✖ {text}", severity="error", timeout=8)

    # --- loading ------------------------------------------------------------------------------
    def load(self, config: TrainConfig, document=None, base_dir: Path | None = None) -> None:
        """Show ``config`` in the form (YAML ``document`` kept for unknown keys) and re-plan."""
        self.config = config.model_copy()
        self.document = document
        if base_dir is not None:
            self.base_dir = base_dir
        self.field_errors.clear()
        for name in TrainConfig.model_fields:
            self._show_value(name, getattr(self.config, name))
            self._show_error(name, "")
        self.query_one("#plan-name", Input).value = run_name(self.config)
        self.selected = 0
        self._schedule()

    def _show_value(self, name: str, value: Any) -> None:
        widget = self.query_one(f"#in-{name}")
        if isinstance(widget, Switch):
            widget.value = bool(value)
        elif isinstance(widget, Select):
            widget.value = Select.NULL if value is None else str(value)
        elif isinstance(widget, Input):
            widget.value = _text(value)

    def _show_error(self, name: str, text: Text | str) -> None:
        error = self.query_one(f"#err-{name}", Static)
        error.update(text)
        error.set_class(not text, "-empty")  # the narrow form hides empty error lines

    # --- editing ------------------------------------------------------------------------------
    @on(Input.Changed)
    @on(Switch.Changed)
    @on(Select.Changed)
    def _field_changed(self, event) -> None:
        widget_id = event.control.id or ""
        if widget_id == "plan-preset":
            self._load_preset(str(event.value))
            return
        if widget_id in ("plan-gpus", "plan-seq"):
            self._schedule()
            return
        if not widget_id.startswith("in-"):
            return
        name = widget_id[3:]
        raw = event.value
        text = "" if raw is Select.NULL else ("true" if raw is True else "false" if raw is False else str(raw))
        try:
            value = parse_field(name, text)
        except ValueError as exc:
            self.field_errors[name] = str(exc)
            self._show_error(name, Text(f"✖ {exc}", style="bold red"))
            self._schedule()
            return
        self.field_errors.pop(name, None)
        self._show_error(name, "")
        if getattr(self.config, name) != value or name not in self.config.model_fields_set:
            setattr(self.config, name, value)
            self._schedule()

    def _schedule(self) -> None:
        """Re-plan shortly after the last keystroke (debounced)."""
        if self._timer is not None:
            self._timer.stop()
        self.replan_pending = True
        self._timer = self.set_timer(0.15, self._replan)

    def _replan(self) -> None:
        self._generation += 1
        self.replan_pending = True
        self.start_job("plan", train.plan, self.config.model_copy(), ws=getattr(self.app, "workspace", None),
                       base_dir=self.base_dir, gpus=self._int("#plan-gpus", 1), seq_len=self._int("#plan-seq", None),
                       field_errors=list(self.field_errors.items()),
                       done=partial(self._show_plan, self._generation),
                       failed=partial(self._plan_failed, self._generation))

    def _int(self, selector: str, default):
        text = self.query_one(selector, Input).value.strip()
        return max(1, int(text)) if text.isdigit() else default

    def _show_plan(self, generation: int, plan: Plan) -> None:
        if generation != self._generation:
            return  # a newer edit is already being planned
        self.replan_pending = False
        self.plan = plan
        self.selected = min(self.selected, max(0, len(panels.suggestions(plan)) - 1))
        self.query_one("#plan-issues", Static).update(panels.issues_text(plan))
        self.query_one("#plan-memory", Static).update(panels.memory_text(plan, self.narrow))
        self.query_one("#plan-advice", Static).update(panels.advice_text(plan, self.selected))
        self.query_one("#plan-not-offered-lines", Static).update(panels.not_offered_text(plan))
        folded = self.query_one("#plan-not-offered", Collapsible)
        folded.display = bool(panels.not_offered_lines(plan))
        self._not_offered_toggled()

    def action_toggle_not_offered(self) -> None:
        """ctrl+o: open or fold the knobs not offered (from anywhere on the tab, not only with focus on the fold)."""
        folded = self.query_one("#plan-not-offered", Collapsible)
        if folded.display:
            folded.collapsed = not folded.collapsed

    @on(Collapsible.Toggled, "#plan-not-offered")
    def _not_offered_toggled(self) -> None:
        folded = self.query_one("#plan-not-offered", Collapsible)
        folded.title = panels.not_offered_title(self.plan, expanded=not folded.collapsed)

    def _plan_failed(self, generation: int, text: str) -> None:
        if generation == self._generation:
            self.replan_pending = False
            self.query_one("#plan-issues", Static).update(Text(f"Validation\n✖ {text}\n", style="red"))

    # --- actions ------------------------------------------------------------------------------
    def action_next_suggestion(self) -> None:
        suggestions = panels.suggestions(self.plan)
        if suggestions:
            self.selected = (self.selected + 1) % len(suggestions)
            self.query_one("#plan-advice", Static).update(panels.advice_text(self.plan, self.selected))

    def action_apply_suggestion(self) -> None:
        suggestions = panels.suggestions(self.plan)
        if not suggestions:
            self.notify("No suggestion to apply.", severity="warning")
            return
        cand = suggestions[self.selected]
        for name, (_old, new) in cand.changes.items():
            setattr(self.config, name, new)
            self._show_value(name, new)
        self.selected = 0
        self.notify(f"Applied: {cand.label} (expected {cand.speedup:.2f}x)")
        self._schedule()

    @on(Button.Pressed, "#plan-save")
    def _save_pressed(self) -> None:
        self.action_save()

    # --- calibration (the actions are PlanCalibration's) ------------------------------------------
    @on(Button.Pressed, "#plan-calibrate")
    def _calibrate_pressed(self) -> None:
        self.action_stop_calibration() if self.calibrating else self.action_calibrate()

    def run_dir_name(self) -> str:
        return self.query_one("#plan-name", Input).value.strip()

    def _form_problem(self) -> str | None:
        if self.field_errors or (self.plan is not None and not self.plan.valid):
            count = len(self.field_errors) + (len(self.plan.errors) if self.plan else 0)
            return f"fix {count} error(s) first"
        return None

    def save_problem(self) -> str | None:
        """Why the plan cannot be saved now (the form's errors, the service's naming rule), or None."""
        return self._form_problem() or train.run_name_problem(self.run_dir_name())

    def action_save(self) -> Path | None:
        """Write the run directory through the save service; returns it (None when refused, with a
        notification saying why and, when the service names the field at fault, that input marked)."""
        problem = self._form_problem()
        if problem:
            self.notify(f"✖ not saved: {problem}", severity="error")
            return None
        try:
            run = train.save_plan(self.config, self.document, ws=getattr(self.app, "workspace", None),
                                  name=self.run_dir_name(), base_dir=self.base_dir)
        except UserError as exc:
            self.query_one("#plan-name", Input).set_class(exc.field == "name", "-invalid")  # the field at fault
            self.notify(f"✖ not saved: {exc}", severity="error")
            return None
        self.query_one("#plan-name", Input).remove_class("-invalid")
        self.notify(f"✔ saved {run.path.name}")
        self.post_message(self.Saved(run.path))
        return run.path


def _initial_preset(workspace, presets) -> str:
    """The embedded demo opens on the demo preset (the tiny model on CPU); other workspaces on the recipe."""
    try:
        is_demo = workspace is not None and workspace.is_demo
    except OSError:
        is_demo = False
    return DEMO_PRESET if is_demo and DEMO_PRESET in presets else DEFAULT_PRESET
