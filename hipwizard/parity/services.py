"""The Parity step's services: one function per user action, called by both faces.

- ``run_capture``: run a model (or harness) once and store inputs, outputs and metadata in one file;
- ``run_comparison``: compare a reference with a candidate in one of three ways (``CompareRequest``) and record
  the result in the workspace (a ``requests.CompareOutcome``); ``worker.compare_in_worker`` runs the very same
  call in a subprocess, which is how the dashboard runs it (the UI process never imports torch);
- ``curves``: overlay two training runs' loss curves and remember them; ``recorded_curves`` reads them back.

torch is imported only inside the capture and compare rooms' functions; the front door loads this module on
first use, so a face that only shows saved results does not import numpy either.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.parity import lean, runs, state
from hipwizard.parity.capture.model import CaptureResult
from hipwizard.parity.compare.captures import compare_files
from hipwizard.parity.compare.curves import CurveGap, compare_curves, read_curve
from hipwizard.parity.compare.matrix import compare_matrix
from hipwizard.parity.compare.result import Comparison
from hipwizard.parity.requests import CompareOutcome, CompareRequest, RunOptions, Subject
from hipwizard.parity.runs import capture_subject
from hipwizard.parity.tensorfile import read_meta
from hipwizard.progress import Progress, ProgressFn, quiet
from hipwizard.workspace import Workspace


def run_capture(subject: Subject | None, options: RunOptions, out: Path, *,
                progress: ProgressFn | None = None) -> CaptureResult:
    """Run ``subject`` once with hooks on ``options`` and write the capture file ``out``."""

    if subject is None:
        raise UserError("say what to capture: --model DIR, --demo or --harness FILE.py")
    check_output(out)
    return capture_subject(subject, options, Path(out), progress=progress)


def check_output(out: str | Path, *, what: str = "--out", folder: bool = False) -> None:
    """Raise ``UserError`` (one line, before any model runs) when ``out`` cannot be written: a folder where a
    file is wanted (or a file where a folder is), a path under a regular file, or a place the system refuses
    (``/proc``, a read-only folder). Nothing is created: the probe file is removed at once."""

    path = Path(out).expanduser().absolute()
    if not folder and path.is_dir():
        raise UserError(f"{what} {out} is a folder; give the capture file to write, e.g. {out}/capture.safetensors")
    if folder and path.exists() and not path.is_dir():
        raise UserError(f"{what} {out} is a file, not a folder")
    if not folder and path.is_file() and not _is_capture(path):
        raise UserError(f"{what} {out} exists and is not a hipwizard capture: it is not replaced "
                        "(give another path, or move that file away first)")
    probe = path if folder and path.is_dir() else path.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise UserError(f"{what} {out} cannot be written: {probe} is a file, not a folder")
    try:
        fd, name = tempfile.mkstemp(prefix=".hipwizard-probe.", dir=probe)
    except OSError as exc:
        raise UserError(f"{what} {out} cannot be written in {probe}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(name)


def _is_capture(path: Path) -> bool:
    """Whether ``path`` is a capture hipwizard wrote (its header carries hipwizard's metadata): only those
    are replaced by a new capture; a model's weights or any other file at that path never are."""

    try:
        read_meta(path)
    except UserError:
        return False
    return True


def run_comparison(request: CompareRequest, *, ws: Workspace | None = None,
                   progress: ProgressFn | None = None) -> CompareOutcome:
    """Make the comparison ``request`` asks for; with ``ws``, record it there (the dashboard shows it).

    Bad input (wrong model, truncated file, a request that is none of the three ways) raises UserError;
    a numerical failure is a result (``verdict`` fail or invalid), not an exception.
    """

    progress = progress or quiet
    how = request.how
    if request.keep is not None and how != "two captures":
        check_output(request.keep, what="--keep", folder=True)
    def run_one(req: CompareRequest) -> Comparison:
        kwargs = req.tolerance.compare_kwargs()
        # ``how`` checked what each way needs (CompareRequest.how): the asserts only tell the type checker.
        if how == "same machine":
            assert req.subject is not None
            if req.options.lean:
                return lean.compare_lean(req.subject, req.options, progress=progress, **kwargs)
            return runs.compare_same_machine(req.subject, req.options, keep=req.keep, progress=progress, **kwargs)
        if how == "two captures":
            progress(Progress("compare"))
            assert req.ref is not None and req.cand is not None
            return compare_files(req.ref, req.cand, ref_run=req.ref_run, backward=req.options.backward, **kwargs)
        assert req.ref is not None and req.subject is not None
        return runs.compare_rerun(req.ref, req.subject, req.options, keep=req.keep, progress=progress,
                                  ref_run=req.ref_run, **kwargs)

    if len(request.options.attn_backends) > 1:

        comp = compare_matrix(request, run_one, progress)
    else:
        comp = run_one(request)
    report = state.record_comparison(ws, comp, how) if ws is not None else None
    return CompareOutcome(comp, how, report)


def curves(run_a: Path, run_b: Path, *, smoothing: float = 0.3, threshold: float = 0.05,
           ws: Workspace | None = None) -> CurveGap:
    """The two runs' smoothed loss curves and their gap; with ``ws``, remembered for the dashboard."""

    gap = compare_curves(read_curve(run_a), read_curve(run_b), smoothing=smoothing, threshold=threshold)
    if ws is not None:
        state.record_curves(ws, str(Path(run_a).resolve()), str(Path(run_b).resolve()), smoothing, threshold)
    return gap


def recorded_curves(ws: Workspace) -> CurveGap | None:
    """The overlay last recorded in ``ws`` (None when there is none); UserError when its logs are unreadable."""

    spec = state.curves_spec(ws)
    if spec is None:
        return None
    try:
        return compare_curves(read_curve(spec.run_a), read_curve(spec.run_b), smoothing=spec.smoothing,
                              threshold=spec.threshold)
    except OSError as exc:
        raise UserError(str(exc)) from None
