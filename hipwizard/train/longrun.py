"""The Train step's services for long runs: resume from a checkpoint, when a run counts as stalled, what was
captured when it stalled or failed, and each attempt. The CLI (``train run --resume``, ``runs``, ``attach``)
and the Run view call these (through the step's door), like the other actions in ``services``.
"""

from __future__ import annotations

from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.progress import ProgressFn
from hipwizard.train.run.incident import NCCL_DEBUG_ENV, Incident, read_incident
from hipwizard.train.run.launcher import LaunchOptions
from hipwizard.train.run.resume import Attempt, newest_checkpoint, read_attempts
from hipwizard.train.run.stall import StallPolicy
from hipwizard.train.services import Launched, launch, launched_manifest
from hipwizard.workspace import Workspace


def resume(ws: Workspace, run_dir: str | Path, options: LaunchOptions | None = None, *,
           progress: ProgressFn | None = None) -> Launched:
    """Continue the run in ``run_dir`` from its newest complete checkpoint (LLaMA-Factory's
    ``resume_from_checkpoint``): the same log, trainer_log.jsonl and loss curve, the next attempt recorded.
    ``UserError`` when it was never launched, still runs, or has no complete checkpoint."""
    manifest = launched_manifest(run_dir)
    if newest_checkpoint(manifest.output_dir) is None:  # said first: the config's own checks come after
        raise UserError(f"{manifest.output_dir} holds no complete checkpoint to resume from (save_steps sets how "
                        f"often the run saves one)", field="resume")
    options = options or LaunchOptions()
    options.resume = True
    return launch(ws, run_dir, options, progress=progress)


def run_again_with_nccl_debug(ws: Workspace, run_dir: str | Path, *,
                              progress: ProgressFn | None = None) -> Launched:
    """The run again with NCCL_DEBUG=INFO (RCCL/NCCL's own account of its rings and collectives in train.log):
    from its newest complete checkpoint when it has one, else from the start."""
    manifest = launched_manifest(run_dir)
    options = LaunchOptions(platform=manifest.platform, extra_env=dict(NCCL_DEBUG_ENV),
                            auto_resume=manifest.auto_resume, stall=StallPolicy.from_dict(manifest.stall)
                            if manifest.stall else None)
    nproc = manifest.env_delta.get("NPROC_PER_NODE")
    options.nproc_per_node = int(nproc) if nproc and nproc.isdigit() else None
    options.resume = newest_checkpoint(manifest.output_dir) is not None
    return launch(ws, manifest.run_dir, options, progress=progress)


def stall_policy(floor_s: float | None = None, k: float | None = None) -> StallPolicy | None:
    """A stall policy with the given floor (seconds) and factor, None for the defaults; ``UserError`` (field
    ``stall_floor`` / ``stall_k``) for values that are not positive."""
    if floor_s is None and k is None:
        return None
    if floor_s is not None and not 0 < floor_s < 1e7:
        raise UserError(f"the stall floor must be a positive number of seconds, not {floor_s:g}", field="stall_floor")
    if k is not None and not 0 < k < 1e4:
        raise UserError(f"the stall factor must be positive, not {k:g}", field="stall_k")
    default = StallPolicy()
    return StallPolicy(k if k is not None else default.k, floor_s if floor_s is not None else default.floor_s,
                       max(default.startup_s, floor_s or 0))


def incident(run_dir: str | Path) -> Incident | None:
    """The incident captured for the run's current attempt (stall or failure), if any."""
    return read_incident(launched_manifest(run_dir).run_dir)


def attempts(run_dir: str | Path) -> list[Attempt]:
    """Each start of the run (launch, resumes by hand or automatic), oldest first."""
    return read_attempts(launched_manifest(run_dir).run_dir)
