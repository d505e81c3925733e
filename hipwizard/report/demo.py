"""Fill the embedded demo workspace so its report has every section: each step not run yet is run there,
headless, through hipwizard's own commands in a subprocess (the same code a user runs; torch and
LLaMA-Factory load in those processes, never in this one):

1. ``doctor`` — live checks of this machine (on a machine without an AMD GPU they fail, and say how to fix);
2. ``hipify`` of the demo CUDA project, accepting the unflagged hunks and writing them (compile-checked when
   hipcc is installed);
3. ``parity compare --demo --reference cpu`` — the tiny Llama in bf16 against an fp64 CPU reference, forward
   and backward;
4. ``train run --demo`` — a short LoRA run of the tiny Llama with the real ``llamafactory-cli``.

A step whose result is already in the workspace is not run again. A step that fails stops the fill with
its last output line (``UserError``).
"""

from __future__ import annotations

import subprocess
import sys

from hipwizard.errors import UserError
from hipwizard.parity import state as parity_state
from hipwizard.train import state as train_state
from hipwizard.progress import Progress, ProgressFn
from hipwizard.workspace import Workspace

STEP_TIMEOUT_S = 900


def _needed(ws: Workspace) -> list[tuple[str, list[str]]]:
    from hipwizard.doctor.state import load_report
    from hipwizard.port.state import read_link

    w = str(ws.root)
    steps: list[tuple[str, list[str]]] = []
    if load_report(ws) is None:
        steps.append(("doctor", ["doctor", "--workspace", w]))
    link = read_link(ws)
    if link.src is not None and link.review_path is not None and not link.review_path.exists():
        steps.append(("port", ["hipify", str(link.src), "--out", str(link.out), "--workspace", w,
                               "--accept-unflagged"]))
    if not parity_state.comparisons(ws):
        steps.append(("parity", ["parity", "compare", "--demo", "--reference", "cpu", "--dtype", "bf16",
                                 "--backward", "--workspace", w]))
    if not train_state.load(ws).launched_runs:
        steps.append(("train", ["train", "run", "--demo", "--workspace", w]))
    return steps


def fill(ws: Workspace, *, progress: ProgressFn | None = None) -> list[str]:
    """Run the demo steps the workspace lacks; returns their names. Raises ``UserError`` when one fails."""
    steps = _needed(ws)
    for n, (name, argv) in enumerate(steps):
        if progress:
            progress(Progress(f"demo: {name}", n, len(steps), " ".join(argv[:2])))
        try:
            done = subprocess.run([sys.executable, "-m", "hipwizard", *argv], cwd=ws.root, capture_output=True,
                                  text=True, timeout=STEP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise UserError(f"the demo's {name} step took over {STEP_TIMEOUT_S} s and was stopped") from None
        # exit 1 is a result the report shows: a doctor check failed (expected without an MI300X), or the
        # port's compile check found errors (e.g. a hipcc too old for gfx942); other steps must succeed
        if done.returncode not in ((0, 1) if name in ("doctor", "port") else (0,)):
            last = next((x for x in reversed((done.stderr + done.stdout).splitlines()) if x.strip()), "no output")
            raise UserError(f"the demo's {name} step failed (exit {done.returncode}): {last.strip()}")
    if progress:
        progress(Progress("demo", len(steps), len(steps)))
    return [name for name, _ in steps]
