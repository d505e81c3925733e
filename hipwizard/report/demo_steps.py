"""The embedded demo's steps, each one call of its step's services, run in the report's worker subprocess
(``python -m hipwizard.report.worker``, job ``demo-step``): torch and LLaMA-Factory load there, never in the
process that asked for the fill (``hipwizard.report.demo``, the CLI or the TUI).

- ``doctor``: ``doctor.diagnose`` on this machine's live tools (failing checks are a result the report shows);
- ``port``: ``port.translate`` of the demo CUDA project with the unflagged hunks accepted and written,
  compile-checked when hipcc is installed (compile errors are a result too);
- ``parity``: ``parity.run_comparison`` of the tiny Llama in bf16 against an fp64 CPU reference, forward and
  backward, recorded in the workspace; a comparison that does not pass fails the step;
- ``train``: ``train.launch_demo`` (a short LoRA run with the real ``llamafactory-cli``), followed through
  ``train.watch`` until it ends; a run that does not finish fails the step.

A step that fails raises ``UserError`` with one line; the worker sends it back as its error event.
"""

from __future__ import annotations

import time

from hipwizard import doctor, parity, port, train
from hipwizard.errors import UserError
from hipwizard.progress import Progress, ProgressFn
from hipwizard.workspace import Workspace

STEPS = ("doctor", "port", "parity", "train")
POLL_S = 1.0  # how often the demo run's log is read while it trains


def run_step(ws: Workspace, name: str, progress: ProgressFn) -> str:
    """Run the demo step ``name`` in ``ws``; one line saying what it did. ``UserError`` when it failed."""
    if name == "doctor":
        diagnosis = doctor.diagnose(ws, doctor.open_source(), progress=progress)
        if diagnosis.save_error:
            raise UserError(f"the doctor's report could not be saved: {diagnosis.save_error}")
        return f"doctor: {len(diagnosis.report.checks)} checks"
    if name == "port":
        link = port.read_link(ws)
        if link.src is None or link.out is None:
            raise UserError("the demo workspace names no CUDA project to port")
        done = port.translate(ws, link.src, link.out, accept="unflagged", progress=progress)
        return f"port: {len(done.review.hunks)} hunks"
    if name == "parity":
        request = parity.CompareRequest(subject=parity.Subject(demo=True), same_machine=True,
                                        options=parity.RunOptions(dtype="bf16", backward=True))
        outcome = parity.run_comparison(request, ws=ws, progress=progress)
        if outcome.exit_code != 0:
            raise UserError(outcome.comparison.headline())
        return f"parity: {outcome.comparison.headline()}"
    if name == "train":
        return _train(ws, progress)
    raise UserError(f"no demo step {name!r} (one of {', '.join(STEPS)})")


def _train(ws: Workspace, progress: ProgressFn) -> str:
    launched = train.launch_demo(ws, progress=progress)
    watch = train.watch(launched.manifest.run_dir)
    while watch.state() == "running":
        time.sleep(POLL_S)
        watch.poll()
        progress(Progress("training", item=watch.history.summary()))
    state = watch.state()
    if state != "finished":
        failure = watch.failure() if state in ("failed", "lost") else None
        raise UserError(f"the demo run {launched.manifest.name} ended {state}"
                        + (f": {failure.line}" if failure else f" · {watch.history.summary()}"))
    return f"train: {launched.manifest.name} finished · {watch.history.summary()}"
