"""Step 3, the Parity dashboard: per-module verdicts, error by depth, module details, loss curves.

Layout and event wiring only. Results are read back from the workspace (``parity.state``), where the CLI
records its comparisons too. The demo comparison is parity's ``run_comparison`` run in a worker subprocess
(``parity.compare_in_worker``: this process never imports torch), waited on in a thread job whose
progress drives the progress bar. Below ``NARROW`` columns the details pane goes under the table and the
table keeps its most telling columns (``module_table``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Footer, Header, ProgressBar, Sparkline, Static

from hipwizard import parity
from hipwizard.errors import UserError
from hipwizard.parity import CompareOutcome, Comparison, CurveGap, demo_request
from hipwizard.textsafe import markup
from hipwizard.tui.messages import WorkProgress
from hipwizard.tui.parity import views
from hipwizard.tui.parity.kernel_form import KernelSpecForm
from hipwizard.tui.parity.kernel_table import KernelPanel
from hipwizard.tui.parity.module_table import ModuleTable
from hipwizard.tui.step_screen import StepScreen

if TYPE_CHECKING:  # the worker's module loads on the demo key, through the door's lazy table
    from hipwizard.parity import WorkerRun

DTYPE_CYCLE = ("bf16", "fp16", "fp32")
NARROW = 110  # columns: below this the details pane goes under the table


class ParityScreen(StepScreen):
    step_key = "parity"
    CSS_PATH = "parity.tcss"
    help_title = "Parity"
    help_text = (
        "Each module's output on the candidate is compared with the reference: cosine similarity, max abs "
        "error, relative L2 error and the share of elements outside tolerance. ✔ pass / ✖ FAIL / ✖ NaN / "
        "✖ Inf / ✖ missing / ✖ shape. 'Divergence starts' (◀) marks the first module where the error jumps — "
        "later modules inherit its error, so the largest error is usually further down. A narrow window "
        "shows fewer columns: the details pane has every number of the highlighted module.\n\n"
        "Headless: hipwizard parity capture --model DIR --out ref.safetensors (on the reference machine), then "
        "hipwizard parity compare ref.safetensors --model DIR (on the candidate). Same machine: "
        "hipwizard parity compare --model DIR --reference cpu --dtype bf16. Loss curves: hipwizard parity "
        "curves RUN_A RUN_B. Results recorded in this workspace appear here.\n\n"
        "Gradients: with --backward the comparison also holds the gradients of a seeded loss (∂out a module "
        "received, ∂W of its LoRA-target weights, ∂in it handed on, in backward order); b switches the table "
        "and the error-by-depth chart between forward and backward. ∂out and ∂in are kept as count sketches "
        "(8,192 values: cosine and rel L2 estimated to ~1%, max abs and outside shown as —); capture with "
        "--grad-sketch 0 to keep every element; --compact sketches the module outputs too (files of a few MB "
        "for any model). The triangle column (with --reference-run) "
        "is the port's error against the high-precision reference divided by the reference machine's own "
        "run-dtype error: ✔ when at most k (default 2). Attention backends (--attn a,b,c) are listed under the "
        "table, each with its forward and backward verdict; v shows the next backend's table (▶ marks the one shown)."
        "\n\nYour own kernels (L, or hipwizard parity kernels spec|build|run): each __global__ kernel of the port's "
        "original gets a spec (editable: .hipwizard/parity/kernels.json) and generated drivers; on an NVIDIA "
        "machine the original, its float64 twin and the port are swept over shapes x distributions and judged "
        "(✔ pass / ✖ FAIL with the detector / ! original broken); the table lists them, the highlighted kernel's "
        "first failing case and minimal case below it; e edits the highlighted kernel's spec in a form (dimensions, "
        "swept ones, launch geometry, extents, an optional torch reference), each field checked on save."
    )
    BINDINGS = [
        Binding("D", "run_demo", "Demo compare", id="parity.run"),
        Binding("t", "cycle_dtype", "Dtype", id="parity.dtype"),
        Binding("r", "reload", "Reload", id="parity.reload"),
        Binding("b", "toggle_direction", "Fwd/Bwd", id="parity.direction"),
        Binding("v", "next_backend", "Backend", id="parity.backend"),
        Binding("L", "check_kernels", "Kernels", id="parity.kernels"),
        Binding("e", "edit_kernel_spec", "Edit spec", id="parity.kernel_spec"),
        # D and t have two bindings each, on purpose. Textual tries a key's bindings in order and moves on
        # when ``check_action`` refuses one: in the demo workspace the bindings above act; elsewhere
        # check_action refuses them (and the footer leaves them out) and these silent ones say why D and t
        # do nothing here (the app's own note would point back to this very screen). Each shares its twin's
        # id, so a keymap that moves D or t moves both.
        Binding("D", "demo_only", "", show=False, id="parity.run"),
        Binding("t", "demo_only", "", show=False, id="parity.dtype"),
    ]

    def __init__(self, comparison: Comparison | None = None) -> None:
        super().__init__()
        self._given = comparison
        self.comparison: Comparison | None = None
        self.dtype = "bf16"
        self._demo = False
        self._run: WorkerRun | None = None
        self._curves: CurveGap | None = None
        self.direction = "forward"
        self.backend = 0  # which attention backend's comparison the table shows (index among those that ran)

    @property
    def running(self) -> bool:
        return self._run is not None

    # --- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Vertical(id="parity"):
            yield Static(id="parity-headline")
            yield Static(id="parity-sides")
            yield Static(id="parity-direction")
            with Horizontal(id="parity-run"):
                yield ProgressBar(total=None, show_eta=False, id="parity-progress")
                yield Static(id="parity-stage")
            with Horizontal(id="parity-body"):
                with Vertical(id="parity-left"):
                    yield ModuleTable(id="parity-table")
                    yield Static("error by depth — log₁₀ rel L2, higher is worse", id="parity-spark-label")
                    yield Sparkline([], id="parity-spark")
                    yield Static(id="parity-matrix")
                with VerticalScroll(id="parity-right"):
                    yield Static(id="parity-details")
            yield Static(id="parity-curves")
            yield KernelPanel(id="parity-kernels")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#parity-run").display = False
        self.query_one("#parity-curves").display = False
        self.query_one("#parity-curves").border_title = "loss curves"
        self.action_reload()

    def on_resize(self, event: events.Resize) -> None:
        narrow = event.size.width < NARROW
        if narrow != self.has_class("-narrow"):
            self.set_class(narrow, "-narrow")
            self._render_curves()

    def on_unmount(self) -> None:
        # The screen went away mid-run: stop the worker rather than leave it computing unseen.
        if self._run is not None:
            self._run.stop()

    # --- state --------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The demo run needs the embedded model; elsewhere comparisons come from the CLI, and D / t fall
        # through to their demo_only twins (see BINDINGS).
        if action in ("run_demo", "cycle_dtype"):
            return self._demo
        if action == "toggle_direction":
            return self.base is not None and self.base.backward is not None
        if action == "next_backend":
            return len(views.ran_backends(self.comparison)) > 1
        if action == "edit_kernel_spec":  # shown once there are kernels (L drafted their specs)
            panels = self.query(KernelPanel)
            return bool(panels and panels.first().rows)
        return True

    @property
    def base(self) -> Comparison | None:
        """The comparison of the attention backend shown (the comparison itself without a matrix)."""
        ran = views.ran_backends(self.comparison)
        return ran[self.backend % len(ran)].comparison if ran else self.comparison

    def action_next_backend(self) -> None:
        ran = views.ran_backends(self.comparison)
        if ran:
            self.backend = (self.backend + 1) % len(ran)
            self.show(self.comparison)

    @property
    def shown(self) -> Comparison | None:
        """The direction the table shows: the comparison, or its gradients' comparison."""
        comp = self.base
        if comp is not None and self.direction == "backward" and comp.backward is not None:
            return comp.backward
        return comp

    def action_toggle_direction(self) -> None:
        self.direction = "backward" if self.direction == "forward" else "forward"
        self.show(self.comparison)

    def action_demo_only(self) -> None:
        self.notify("D and t run the demo comparison, in the demo workspace (hipwizard --demo). Here, run "
                    "hipwizard parity compare … in this folder (see ?): its result appears on this screen.",
                    timeout=6)

    def action_reload(self) -> None:
        ws = self.app.workspace
        self._demo = parity.is_demo(ws)
        self.refresh_bindings()
        comp = self._given if self._given is not None else parity.latest_comparison(ws)
        self._given = None
        self.show(comp)
        self.start_job("curves", parity.recorded_curves, ws, done=self._show_curves, failed=self._curves_failed,
                       daemon=True)
        self.query_one(KernelPanel).show(parity.saved_kernels(ws))
        self.refresh_bindings()

    def action_check_kernels(self) -> None:
        """The port's kernels: specs drafted, drivers built (and swept where this machine has an NVIDIA GPU)."""
        self.query_one("#parity-progress", ProgressBar).update(total=None, progress=0)
        self.query_one("#parity-stage", Static).update("drafting the kernels' specs …")
        self.query_one("#parity-run").display = True
        self.start_job("kernels", parity.kernel_check, self.app.workspace, done=self._kernels_done,
                       failed=self._kernels_failed, progress=True, daemon=True)

    def action_edit_kernel_spec(self) -> None:
        """The highlighted kernel's spec as a form (checked on save; the spec file keeps the edits)."""
        row = self.query_one(KernelPanel).highlighted()
        if row is None:
            self.notify("no kernel to edit: check the kernels first (L)", timeout=6)
            return
        try:
            fields = parity.kernel_spec_form(self.app.workspace, row.file, row.kernel)
        except UserError as exc:
            self.notify(f"✖ {markup(str(exc))}", severity="error", timeout=8)
            return

        def saved(ok: bool | None) -> None:
            if ok:
                self.notify(f"✔ spec of {markup(row.kernel)} saved: L runs the check with it", timeout=6)

        self.app.push_screen(KernelSpecForm(self.app.workspace, row.file, row.kernel, fields), saved)

    def _kernels_done(self, report: parity.KernelReport) -> None:
        self.query_one("#parity-run").display = self._run is not None
        self.query_one(KernelPanel).show(report.rows)
        self.refresh_bindings()

    def _kernels_failed(self, text: str) -> None:
        self.query_one("#parity-run").display = self._run is not None
        self.notify(f"✖ {markup(text)}", severity="error", timeout=10)

    def show(self, comp: Comparison | None) -> None:
        if comp is not self.comparison:
            self.backend = 0
        self.comparison = comp
        self.refresh_bindings()
        direction = self.query_one("#parity-direction", Static)
        matrix = self.query_one("#parity-matrix", Static)
        base, shown = self.base, self.shown  # None exactly when comp is
        direction.update(views.direction_note(base, shown) if base is not None and shown is not None else "")
        direction.display = base is not None and base.backward is not None
        matrix.update(views.matrix_text(comp, self.backend) if comp is not None else "")
        matrix.display = bool(comp is not None and comp.matrix)
        headline = self.query_one("#parity-headline", Static)
        sides = self.query_one("#parity-sides", Static)
        table = self.query_one(ModuleTable)
        if comp is None or shown is None:
            hint = (f"Press [b]D[/b] to compare the demo's tiny Llama: float64 CPU reference vs {self.dtype} "
                    "candidate ([b]t[/b] changes the dtype)." if self._demo else
                    "Run [b]hipwizard parity compare ...[/b] in this folder (see [b]?[/b]); its result appears here.")
            headline.update(f"○ no comparison yet\n{hint}")
            sides.display = False
            self.query_one("#parity-body").display = False
            table.show(None)
            self.query_one("#parity-spark", Sparkline).data = []
            self.query_one("#parity-details", Static).update("")
            return
        headline.update(views.headline(comp))
        sides.update(views.sides(comp))
        sides.display = True
        self.query_one("#parity-body").display = True
        start = shown.first_divergent or (shown.layers[0].name if shown.layers else None)
        table.show(shown, cursor=start)
        self.query_one("#parity-spark", Sparkline).data = views.depth_series(shown)
        self.query_one("#parity-spark-label", Static).update(
            f"error by depth ({'backward order' if shown.direction == 'backward' else 'forward order'}) — "
            "log₁₀ rel L2, higher is worse")
        if start is not None:
            self._show_details(start)

    def _show_details(self, name: str) -> None:
        shown = self.shown
        if shown is None:
            return
        layer = next((x for x in shown.layers if x.name == name), None)
        if layer is not None:
            self.query_one("#parity-details", Static).update(views.details(layer, shown))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value is not None:
            self._show_details(event.row_key.value)

    # --- loss curves (their logs may sit on a hung network disk: read in a daemon job) --------
    def _show_curves(self, gap: CurveGap | None) -> None:
        self._curves = gap
        self._render_curves()

    def _curves_failed(self, text: str) -> None:
        panel = self.query_one("#parity-curves", Static)
        panel.update(f"⚠ cannot read them: {markup(text)}")
        panel.display = True

    def _render_curves(self) -> None:
        if self._curves is None:
            return
        panel = self.query_one("#parity-curves", Static)
        narrow = self.has_class("-narrow")
        panel.update(views.curves_plot(self._curves, height=3 if narrow else 8, compact=narrow))
        panel.display = True

    # --- running the demo comparison ----------------------------------------------------------
    def action_cycle_dtype(self) -> None:
        self.dtype = DTYPE_CYCLE[(DTYPE_CYCLE.index(self.dtype) + 1) % len(DTYPE_CYCLE)]
        self.notify(f"candidate dtype: {self.dtype}")
        if self.comparison is None:
            self.show(None)

    def action_run_demo(self) -> None:
        if self._run is not None:
            self.notify("a comparison is already running", severity="warning")
            return
        self._run = parity.compare_in_worker(demo_request(self.dtype, "auto"), self.app.workspace)
        self.query_one("#parity-progress", ProgressBar).update(total=None, progress=0)
        self.query_one("#parity-stage", Static).update("starting the worker …")
        self.query_one("#parity-run").display = True
        self.start_job("compare", self._run.run, done=self._compared, failed=self._compare_failed, progress=True,
                       daemon=True)

    def on_work_progress(self, message: WorkProgress) -> None:
        if message.job == "kernels":
            self.query_one("#parity-stage", Static).update(f"◐ {message.progress.text()}")
            return
        if message.job != "compare" or self._run is None:
            return
        p = message.progress
        self.query_one("#parity-progress", ProgressBar).update(total=p.total or None, progress=p.done or 0)
        self.query_one("#parity-stage", Static).update(f"◐ {p.text()}")

    def _compared(self, outcome: CompareOutcome) -> None:
        self._finished()
        self.show(outcome.comparison)
        self.notify(markup(outcome.comparison.headline()))

    def _compare_failed(self, text: str) -> None:
        self._finished()
        self.notify(f"✖ {markup(text)}", severity="error", timeout=10)

    def _finished(self) -> None:
        self._run = None
        self.query_one("#parity-run").display = False
