"""Step 3, the Parity dashboard: per-module verdicts, error by depth, module details, loss curves.

Layout and event wiring only. Comparisons run in ``python -m hipwizard.parity.worker`` (a subprocess:
this process never imports torch), whose JSON-line progress drives the progress bar; results are read
back from the workspace, where the CLI records its comparisons too.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, ProgressBar, Sparkline, Static

from hipwizard.errors import UserError
from hipwizard.parity.report import Comparison
from hipwizard.parity.state import latest_comparison
from hipwizard.tui.parity import views

DTYPE_CYCLE = ("bf16", "fp16", "fp32")


class ParityScreen(Screen):
    step_key = "parity"
    CSS_PATH = "parity.tcss"
    HELP_TITLE = "Parity"
    HELP_TEXT = (
        "Each module's output on the candidate is compared with the reference: cosine similarity, max abs "
        "error, relative L2 error and the share of elements outside tolerance. ✔ pass / ✖ FAIL / ✖ NaN / "
        "✖ Inf / ✖ missing / ✖ shape. 'Divergence starts' marks the first module where the error jumps — "
        "later modules inherit its error, so the largest error is usually further down.\n\n"
        "Headless: hipwizard parity capture --model DIR --out ref.safetensors (on the reference machine), then "
        "hipwizard parity compare ref.safetensors --model DIR (on the candidate). Same machine: "
        "hipwizard parity compare --model DIR --reference cpu --dtype bf16. Loss curves: hipwizard parity "
        "curves RUN_A RUN_B. Results recorded in this workspace appear here."
    )
    BINDINGS = [
        Binding("r", "run_demo", "Run demo comparison", id="parity.run"),
        Binding("d", "cycle_dtype", "Candidate dtype", id="parity.dtype"),
        Binding("l", "reload", "Reload results", id="parity.reload"),
    ]

    def __init__(self, comparison: Comparison | None = None) -> None:
        super().__init__()
        self._given = comparison
        self.comparison: Comparison | None = None
        self.dtype = "bf16"
        self.running = False

    # --- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Vertical(id="parity"):
            yield Static(id="parity-headline")
            with Horizontal(id="parity-run"):
                yield ProgressBar(total=None, show_eta=False, id="parity-progress")
                yield Static(id="parity-stage")
            with Horizontal(id="parity-body"):
                with Vertical(id="parity-left"):
                    yield DataTable(id="parity-table", cursor_type="row", zebra_stripes=True)
                    yield Static("error by depth — log₁₀ rel L2, higher is worse", id="parity-spark-label")
                    yield Sparkline([], id="parity-spark")
                with VerticalScroll(id="parity-right"):
                    yield Static(id="parity-details")
            yield Static(id="parity-curves")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#parity-table", DataTable)
        table.add_columns("#", "module", "shape", "cosine", "max abs", "rel L2", "outside", "verdict")
        self.query_one("#parity-run").display = False
        self.query_one("#parity-curves").display = False
        self.action_reload()

    # --- state --------------------------------------------------------------------------------
    @property
    def _is_demo(self) -> bool:
        return bool(self.app.workspace.read_state("parity").get("demo")
                    or self.app.workspace.read_state("workspace").get("demo"))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The demo run needs the embedded model; elsewhere comparisons come from the CLI.
        if action in ("run_demo", "cycle_dtype"):
            return self._is_demo
        return True

    def action_reload(self) -> None:
        comp = self._given if self._given is not None else latest_comparison(self.app.workspace)
        self._given = None
        self.show(comp)
        self.load_curves()

    def show(self, comp: Comparison | None) -> None:
        self.comparison = comp
        table = self.query_one("#parity-table", DataTable)
        table.clear()
        headline = self.query_one("#parity-headline", Static)
        if comp is None:
            hint = (f"Press [b]r[/b] to compare the demo's tiny Llama: float64 CPU reference vs {self.dtype} "
                    "candidate ([b]d[/b] changes the dtype)." if self._is_demo else
                    "Run [b]hipwizard parity compare ...[/b] in this folder (see [b]?[/b]); its result appears here.")
            headline.update(f"○ no comparison yet\n{hint}")
            self.query_one("#parity-spark", Sparkline).data = []
            self.query_one("#parity-details", Static).update("")
            return
        headline.update(views.headline(comp))
        for layer in comp.layers:
            m = layer.metrics
            mark = " ◀" if layer.name == comp.first_divergent else ""
            table.add_row(
                str(layer.order), layer.name, "×".join(map(str, layer.shape)),
                views.fmt(m.cosine, ".6f") if m else "—", views.fmt(m.max_abs, ".3g") if m else "—",
                views.fmt(m.rel_l2, ".3g") if m else "—", f"{m.outside_share:.2%}" if m else "—",
                layer.label + mark, key=layer.name,
            )
        self.query_one("#parity-spark", Sparkline).data = views.depth_series(comp)
        if comp.layers:
            start = next((i for i, layer in enumerate(comp.layers) if layer.name == comp.first_divergent), 0)
            table.move_cursor(row=start)
            self._show_details(comp.layers[start].name)

    def _show_details(self, name: str) -> None:
        if self.comparison is None:
            return
        layer = next((x for x in self.comparison.layers if x.name == name), None)
        if layer is not None:
            self.query_one("#parity-details", Static).update(views.details(layer, self.comparison))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value is not None:
            self._show_details(event.row_key.value)

    @work(thread=True, exclusive=True, group="parity-curves")
    def load_curves(self) -> None:
        """Read the two runs' logs off the UI thread (they may sit on a slow network disk)."""
        from hipwizard.parity.curves import compare_curves, read_curve

        spec = self.app.workspace.read_state("parity").get("curves")
        if not spec:
            return
        try:
            gap = compare_curves(read_curve(spec["a"]), read_curve(spec["b"]),
                                 smoothing=spec.get("smoothing", 0.3), threshold=spec.get("threshold", 0.05))
            text = "[b]loss curves[/b]\n" + views.curves_plot(gap)
        except (UserError, KeyError, OSError) as exc:
            text = f"[b]loss curves[/b]\n⚠ cannot read them: {exc}"
        self.app.call_from_thread(self._show_curves, text)

    def _show_curves(self, text: str) -> None:
        panel = self.query_one("#parity-curves", Static)
        panel.update(text)
        panel.display = True

    # --- running the demo comparison ----------------------------------------------------------
    def action_cycle_dtype(self) -> None:
        self.dtype = DTYPE_CYCLE[(DTYPE_CYCLE.index(self.dtype) + 1) % len(DTYPE_CYCLE)]
        self.notify(f"candidate dtype: {self.dtype}")
        if self.comparison is None:
            self.show(None)

    def action_run_demo(self) -> None:
        if self.running:
            self.notify("a comparison is already running", severity="warning")
            return
        argv = ["compare", "--demo", "--reference", "cpu", "--dtype", self.dtype, "--device", "auto",
                "--workspace", str(self.app.workspace.root)]
        self.run_worker_process(argv)

    @work(exclusive=True, group="parity-run")
    async def run_worker_process(self, argv: list[str]) -> None:
        self.running = True
        run_row = self.query_one("#parity-run")
        bar = self.query_one("#parity-progress", ProgressBar)
        stage = self.query_one("#parity-stage", Static)
        run_row.display = True
        bar.update(total=None, progress=0)
        stage.update("starting the worker …")
        result = None
        proc = None
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "hipwizard.parity.worker", *argv,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=str(Path.cwd()),
            )
            assert proc.stdout is not None
            async for raw in proc.stdout:
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue
                if event.get("event") == "progress":
                    total, done = event.get("total"), event.get("done")
                    bar.update(total=total or None, progress=done or 0)
                    stage.update(f"◐ {event.get('stage')}" + (f" {done}/{total}" if total else ""))
                else:
                    result = event
            err = (await proc.stderr.read()).decode(errors="replace") if proc.stderr else ""
            await proc.wait()
        except asyncio.CancelledError:
            # The screen went away mid-run: stop the worker rather than leave it computing unseen.
            if proc is not None and proc.returncode is None:
                proc.kill()
            raise
        finally:
            self.running = False
            run_row.display = False
        if result is None:
            tail = err.strip().splitlines()[-1:] if err else []
            self.notify(f"the parity worker stopped without a result: {' '.join(tail) or 'no output'}",
                        severity="error", timeout=10)
        elif result.get("event") == "error":
            self.notify(f"✖ {result.get('message')}", severity="error", timeout=10)
        else:
            self.show(Comparison.from_dict(result["comparison"]))
            self.notify(self.comparison.headline() if self.comparison else "done")
