"""The Plan tab of the Train screen: LLaMA-Factory config forms, live memory estimate, advisor, save.

A widget, not a screen: ``TrainScreen`` embeds ``TrainPlanPane()`` and listens for ``TrainPlanPane.Saved``.
Fields are grouped as LlamaBoard groups them; each shows its help and its error as you type. Validation,
estimate and advice come from ``hipwizard.train.plan.make_plan`` in a thread worker, debounced, so typing
never waits for them. Layout and event wiring only.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Input, Label, Select, Static, Switch

from hipwizard.errors import UserError
from hipwizard.train.config import FIELD_GROUPS, TrainConfig, field_help, parse_field
from hipwizard.doctor.state import target_facts
from hipwizard.train.device import DeviceTarget, resolve_device
from hipwizard.train.plan import Plan, make_plan
from hipwizard.train.presets import DEFAULT_PRESET, load_presets, preset_config
from hipwizard.train.rundir import run_name, save_run_dir

GROUP_TITLES = {"model": "Model", "method": "Method", "data": "Data", "training": "Training",
                "distributed": "Distributed (DeepSpeed)", "output": "Output"}


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


class TrainPlanPane(Vertical):
    """Edit a training plan and save it as a run directory."""

    # The styles live in train_plan.tcss; a widget has no CSS_PATH, so it carries them as DEFAULT_CSS.
    DEFAULT_CSS = (Path(__file__).with_name("plan.tcss")).read_text(encoding="utf-8")
    BINDINGS = [
        Binding("ctrl+s", "save", "Save run dir", id="plan.save"),
        Binding("ctrl+g", "apply_suggestion", "Apply suggestion", id="plan.apply"),
        Binding("ctrl+n", "next_suggestion", "Next suggestion", id="plan.next_suggestion"),
    ]

    class Saved(Message):
        """A run directory was written; the screen may offer to launch it."""

        def __init__(self, run_dir: Path) -> None:
            super().__init__()
            self.run_dir = run_dir

    class PlanReady(Message):
        def __init__(self, plan: Plan, generation: int) -> None:
            super().__init__()
            self.plan = plan
            self.generation = generation

    def __init__(self, *, id: str | None = "train-plan") -> None:
        super().__init__(id=id)
        self.config = TrainConfig()
        self.document = None
        self.base_dir = Path.cwd()
        self.field_errors: dict[str, str] = {}
        self.plan: Plan | None = None
        self.selected = 0
        self._generation = 0
        self._timer = None

    # --- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        presets = load_presets()
        self._first_preset = _initial_preset(getattr(self.app, "workspace", None), presets)
        with Horizontal(id="plan-top"):
            yield Select([(p.title, n) for n, p in presets.items()], value=self._first_preset, allow_blank=False,
                         id="plan-preset")
            yield Label("GPUs", classes="plan-top-label")
            yield Input("1", id="plan-gpus", restrict=r"[0-9]*", max_length=4)
            yield Label("seq", classes="plan-top-label")
            yield Input("", placeholder="cutoff_len", id="plan-seq", restrict=r"[0-9]*", max_length=7)
            yield Label("name", classes="plan-top-label")
            yield Input("", id="plan-name")
            yield Button("Save", id="plan-save", variant="primary")
        with Horizontal(id="plan-body"):
            with VerticalScroll(id="plan-form"):
                for group, names in FIELD_GROUPS.items():
                    yield Static(GROUP_TITLES[group], classes="plan-group-title")
                    for name in names:
                        with Vertical(classes="plan-field", id=f"field-{name}"):
                            with Horizontal(classes="plan-field-row"):
                                yield Label(name, classes="plan-field-name")
                                yield self._editor(name)
                            yield Static(field_help(name), classes="plan-help")
                            yield Static("", classes="plan-error", id=f"err-{name}")
            with VerticalScroll(id="plan-side"):
                yield Static("○ checking…", id="plan-issues")
                yield Static("", id="plan-memory")
                yield Static("", id="plan-advice")

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
        self.load(preset_config(self._first_preset))
        if self._first_preset == DEMO_PRESET:
            self._build_demo()

    @work(thread=True, exclusive=True, group="plan-demo-build")
    def _build_demo(self) -> None:
        """The demo preset points at the tiny model: build it (a subprocess, once) and re-check the form."""
        from hipwizard.demo_model import demo_assets
        from hipwizard.train.presets import ensure_demo_built

        if demo_assets().ready:
            return
        self.app.call_from_thread(self.notify, "building the tiny demo model (offline, once) …")
        try:
            ensure_demo_built()
        except UserError as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error")
            return
        self.app.call_from_thread(self._reload_if_demo)

    def _reload_if_demo(self) -> None:
        if self.query_one("#plan-preset", Select).value == DEMO_PRESET:
            self.load(preset_config(DEMO_PRESET))

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
            self.query_one(f"#err-{name}", Static).update("")
        self.query_one("#plan-name", Input).value = run_name(self.config)
        self.selected = 0
        self._schedule()

    def _show_value(self, name: str, value: Any) -> None:
        widget = self.query_one(f"#in-{name}")
        if isinstance(widget, Switch):
            widget.value = bool(value)
        elif isinstance(widget, Select):
            widget.value = Select.NULL if value is None else str(value)
        else:
            widget.value = _text(value)

    # --- editing ------------------------------------------------------------------------------
    @on(Input.Changed)
    @on(Switch.Changed)
    @on(Select.Changed)
    def _field_changed(self, event) -> None:
        widget_id = event.control.id or ""
        if widget_id == "plan-preset":
            self.load(preset_config(str(event.value)))
            if event.value == DEMO_PRESET:
                self._build_demo()
            return
        if widget_id in ("plan-gpus", "plan-seq"):
            self._schedule()
            return
        if not widget_id.startswith("in-"):
            return
        name = widget_id[3:]
        raw = event.value
        text = "" if raw is Select.NULL else ("true" if raw is True else "false" if raw is False else str(raw))
        error = self.query_one(f"#err-{name}", Static)
        try:
            value = parse_field(name, text)
        except ValueError as exc:
            self.field_errors[name] = str(exc)
            error.update(Text(f"✖ {exc}", style="bold red"))
            self._schedule()
            return
        self.field_errors.pop(name, None)
        error.update("")
        if getattr(self.config, name) != value or name not in self.config.model_fields_set:
            setattr(self.config, name, value)
            self._schedule()

    def _schedule(self) -> None:
        """Re-plan shortly after the last keystroke (debounced)."""
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(0.15, self._replan)

    def _replan(self) -> None:
        self._generation += 1
        self._plan_worker(self.config.model_copy(), self._device(), self._int("#plan-gpus", 1),
                          self._int("#plan-seq", None), dict(self.field_errors), self._generation)

    def _int(self, selector: str, default):
        text = self.query_one(selector, Input).value.strip()
        return max(1, int(text)) if text.isdigit() else default

    def _device(self) -> DeviceTarget:
        workspace = getattr(self.app, "workspace", None)
        return resolve_device(doctor_gpus=target_facts(workspace).gpus)

    @work(thread=True, exclusive=True, group="plan")
    def _plan_worker(self, config, device, gpus, seq, errors, generation) -> None:
        plan = make_plan(config, base_dir=self.base_dir, device=device, world_size=gpus, seq_len=seq,
                         field_errors=list(errors.items()))
        self.post_message(self.PlanReady(plan, generation))

    @on(PlanReady)
    def _show_plan(self, message: PlanReady) -> None:
        if message.generation != self._generation:
            return  # a newer edit is already being planned
        self.plan = message.plan
        self.selected = min(self.selected, max(0, len(self._suggestions()) - 1))
        self.query_one("#plan-issues", Static).update(self._issues_text())
        self.query_one("#plan-memory", Static).update(self._memory_text())
        self.query_one("#plan-advice", Static).update(self._advice_text())

    # --- side panels --------------------------------------------------------------------------
    def _issues_text(self) -> Text:
        text = Text("Validation\n", style="bold")
        issues = self.plan.issues if self.plan else []
        if not issues:
            text.append("✔ ok: no problems found\n", style="green")
        styles = {"error": "red", "warning": "yellow", "info": "cyan"}
        for issue in issues:
            text.append(issue.line() + "\n", style=styles[issue.severity])
        return text

    def _memory_text(self) -> Text:
        plan = self.plan
        est = plan.estimate if plan else None
        dev = plan.device if plan else None
        text = Text(f"Memory per GPU — {dev.name if dev else '?'}"
                    f"{f', {dev.vram_gib:g} GiB' if dev and dev.vram_gib else ''}\n", style="bold")
        if est is None or not est.available:
            text.append(f"✖ {est.reason if est else 'no estimate'}\n", style="red")
            return text
        scale = max(est.device_vram_gib or est.total_gib, est.total_gib) or 1.0
        for part in est.parts:
            bar = "█" * max(0, round(24 * part.gib / scale))
            text.append(f"{part.name:<18}{part.gib:7.1f} GiB {bar}\n")
        text.append(f"{'total':<18}{est.total_gib:7.1f} GiB\n", style="bold")
        if est.fits is not None:
            word = "✔ fits" if est.fits else "✖ does not fit"
            text.append(f"{word}: margin {est.margin_gib:.1f} GiB\n", style="green" if est.fits else "red")
        return text

    def _suggestions(self):
        advice = self.plan.advice if self.plan else None
        return [c for c in (advice.ranked if advice else []) if c.changes][:5]

    def _advice_text(self) -> Text:
        text = Text("Advisor — same effective batch, fastest first\n", style="bold")
        advice = self.plan.advice if self.plan else None
        if advice is None or advice.reason:
            text.append(f"⚠ {advice.reason if advice else 'no advice'}\n", style="yellow")
            return text
        suggestions = self._suggestions()
        if not suggestions:
            text.append("✔ your config is already the fastest that fits\n", style="green")
        for n, cand in enumerate(suggestions):
            mark = "▶" if n == self.selected else " "
            text.append(f"{mark} {cand.speedup:4.2f}x  {cand.label}\n", style="bold" if n == self.selected else "")
        if suggestions:
            for reason in suggestions[self.selected].reasons:
                text.append(f"  · {reason}\n", style="dim")
            text.append("ctrl+g applies ▶, ctrl+n picks the next\n", style="italic")
        return text

    # --- actions ------------------------------------------------------------------------------
    def action_next_suggestion(self) -> None:
        suggestions = self._suggestions()
        if suggestions:
            self.selected = (self.selected + 1) % len(suggestions)
            self.query_one("#plan-advice", Static).update(self._advice_text())

    def action_apply_suggestion(self) -> None:
        suggestions = self._suggestions()
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

    def action_save(self) -> None:
        if self.field_errors or (self.plan is not None and not self.plan.valid):
            count = len(self.field_errors) + (len(self.plan.errors) if self.plan else 0)
            self.notify(f"✖ not saved: fix {count} error(s) first", severity="error")
            return
        name = self.query_one("#plan-name", Input).value.strip()
        if not name or "/" in name or name.startswith("."):
            self.notify("✖ not saved: give the run a plain name", severity="error")
            return
        workspace = getattr(self.app, "workspace", None)
        runs = workspace.runs_dir if workspace is not None else Path.cwd() / "runs"
        try:
            run = save_run_dir(runs / name, self.config, self.document, base_dir=self.base_dir)
        except UserError as exc:
            self.notify(f"✖ {exc}", severity="error")
            return
        self.notify(f"✔ saved {run.path.name}")
        self.post_message(self.Saved(run.path))


DEMO_PRESET = "demo"


def _initial_preset(workspace, presets) -> str:
    """The embedded demo opens on the demo preset (the tiny model on CPU); other workspaces on the recipe."""
    try:
        is_demo = bool(workspace is not None and workspace.read_state("workspace").get("demo"))
    except OSError:
        is_demo = False
    return DEMO_PRESET if is_demo and DEMO_PRESET in presets else DEFAULT_PRESET
