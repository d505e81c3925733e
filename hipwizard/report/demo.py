"""Fill the embedded demo workspace so its report has every section: each step not run yet is run there,
headless, through its step's own services in the report's worker subprocess (``hipwizard.report.worker``,
on the one job protocol of ``hipwizard.jobs``; ``hipwizard.report.demo_steps`` says what each step runs).
torch and LLaMA-Factory load in that process, never in this one:

1. ``doctor`` — live checks of this machine (on a machine without an AMD GPU they fail, and say how to fix);
2. ``port`` — the demo CUDA project translated, the unflagged hunks accepted and written (compile-checked
   when hipcc is installed);
3. ``parity`` — the tiny Llama in bf16 against an fp64 CPU reference, forward and backward;
4. ``train`` — a short LoRA run of the tiny Llama with the real ``llamafactory-cli``.

A step whose result is already in the workspace is not run again. A step that fails stops the fill with
its one line (``UserError``).
"""

from __future__ import annotations

from hipwizard import doctor, port
from hipwizard.errors import UserError
from hipwizard.jobs import run_job
from hipwizard.parity import state as parity_state
from hipwizard.progress import Progress, ProgressFn, quiet
from hipwizard.report.worker import MODULE
from hipwizard.train import state as train_state
from hipwizard.workspace import Workspace

STEP_TIMEOUT_S = 900


def needed(ws: Workspace) -> list[str]:
    """The demo steps whose result ``ws`` lacks, in order."""
    steps = []
    if doctor.load_report(ws) is None:
        steps.append("doctor")
    link = port.read_link(ws)
    if link.src is not None and link.review_path is not None and not link.review_path.exists():
        steps.append("port")
    if not parity_state.comparisons(ws):
        steps.append("parity")
    if not train_state.load(ws).launched_runs:
        steps.append("train")
    return steps


def fill(ws: Workspace, *, progress: ProgressFn | None = None) -> list[str]:
    """Run the demo steps the workspace lacks; returns their names. Raises ``UserError`` when one fails."""
    progress = progress or quiet
    steps = needed(ws)
    for n, name in enumerate(steps):
        def step_progress(p: Progress, n: int = n, name: str = name) -> None:
            progress(Progress(f"demo: {name}", n, len(steps), " ".join(x for x in (p.stage, p.item) if x)))

        step_progress(Progress(""))
        try:
            run_job(MODULE, {"job": "demo-step", "step": name, "workspace": str(ws.root)},
                    what=f"{name} step", progress=step_progress, cwd=ws.root, timeout_s=STEP_TIMEOUT_S)
        except UserError as exc:
            raise UserError(f"the demo's {name} step failed: {exc}") from None
    progress(Progress("demo", len(steps), len(steps)))
    return steps
