"""The attention-backend matrix: the same comparison once per attention backend (``--attn sdpa,eager,fa2``).

Each backend re-runs the model on this machine (re-run or same-machine comparison); a backend that does
not import or load here (flash-attn not installed, a kernel not built for this GPU) becomes a row saying
why, not a failure of the whole matrix. The result is the first backend's comparison with every backend's
in ``Comparison.matrix``; its verdict is the worst of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hipwizard.errors import UserError
from hipwizard.parity.compare.result import BackendRow, Comparison
from hipwizard.parity.requests import CompareRequest
from hipwizard.progress import Progress, ProgressFn, quiet

# What a backend that cannot run here raises (transformers: ImportError/ValueError; torch: RuntimeError
# "No available kernel"; our own checks: UserError).
UNAVAILABLE = (UserError, ImportError, ValueError, RuntimeError, NotImplementedError, AssertionError)


def compare_matrix(request: CompareRequest, run_one: Callable[[CompareRequest], Comparison],
                   progress: ProgressFn | None = None) -> Comparison:
    """``run_one`` for each backend of ``request.options.attn``; UserError when none could run."""
    progress = progress or quiet
    if request.how == "two captures":
        raise UserError("--attn with several backends re-runs the model: give --model/--demo, not a candidate file")
    backends = request.options.attn_backends
    rows = []
    for i, attn in enumerate(backends):
        progress(Progress("attention backend", i, len(backends), attn))
        try:
            keep = request.keep / attn if request.keep is not None else None  # one folder per backend
            comp = run_one(replace(request, options=replace(request.options, attn=attn), keep=keep))
        except UNAVAILABLE as exc:
            lines = str(exc).strip().splitlines() or [type(exc).__name__]
            rows.append(BackendRow(attn, error=f"{type(exc).__name__}: {lines[0][:200]}"))
            continue
        rows.append(BackendRow(attn, comp))
    ran = [row.comparison for row in rows if row.comparison is not None]
    if not ran:
        raise UserError("no attention backend ran here: " + "; ".join(f"{r.attn}: {r.error}" for r in rows))
    first = ran[0]
    return replace(first, matrix=rows, timings=dict(first.timings))
