"""Post-mortem of a training step: rebuild the batch a run trained on at the step an alarm names, and run
Parity on it, forward and backward.

``alarm_step(run_dir)``: the step of the run's first NaN/inf loss or grad_norm spike (``train.alarms``, the
same rules as the Run view and ``hipwizard attach``). ``rebuild_batch``: that step's micro-batches, exactly as
the trainer fed them, through ``python -m hipwizard.parity.capture.step_batch`` (LLaMA-Factory and torch load in
that subprocess). ``step_postmortem``: the batch, then a same-machine comparison of the run's model on it —
this device in the run's dtype against a float64 CPU reference, with gradients — recorded in the workspace
so the Parity screen shows it. The weights are the ones step N trained with, as far as the run kept them
(``step_weights``): the newest checkpoint at or before step N-1 (a LoRA checkpoint's adapter on top of the base
model, unmerged; a full checkpoint as the model), else the base model — and the result says which. The batch
file stays in the workspace: captured with ``--inputs`` on the reference (NVIDIA) machine, it gives a
cross-machine comparison on the very same tokens.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from hipwizard import train
from hipwizard.errors import UserError
from hipwizard.parity import services, state
from hipwizard.parity.requests import CompareRequest, RunOptions, Subject
from hipwizard.progress import Progress, ProgressFn, quiet
from hipwizard.workspace import Workspace

ALARM_KINDS = ("nonfinite", "grad_spike")  # what a post-mortem looks into (not throughput or plateaus)
REBUILD_TIMEOUT_S = 1800


@dataclass
class StepBatch:
    path: Path
    meta: dict


@dataclass
class StepWeights:
    """The weights a post-mortem runs: ``model`` (and ``adapter`` on top), and a line saying how close they are
    to what step N trained with (the weights after step N-1)."""

    model: Path
    adapter: Path | None
    checkpoint_step: int | None
    line: str


def step_weights(run: Path, config: dict, model: Path, step: int) -> StepWeights:
    """The newest ``checkpoint-K`` of the run's output folder with K <= step - 1, else the base model."""
    out = Path(str(config.get("output_dir") or "output")).expanduser()
    out = out if out.is_absolute() else run / out
    found = []
    for folder in out.glob("checkpoint-*") if out.is_dir() else ():
        tail = folder.name.removeprefix("checkpoint-")
        if tail.isdigit() and int(tail) <= step - 1 and folder.is_dir():
            found.append((int(tail), folder))
    for k, folder in sorted(found, reverse=True):
        exact = "exactly the weights it trained with" if k == step - 1 else \
            f"{step - 1 - k} step(s) before the weights it trained with (the run kept no later checkpoint)"
        if (folder / "adapter_config.json").is_file():
            return StepWeights(model, folder, k, f"weights: {model.name} + the adapter of {folder.name} (after step "
                                                 f"{k}): {exact}")
        if (folder / "config.json").is_file() and any(folder.glob("*.safetensors")):
            return StepWeights(folder, None, k, f"weights: {folder.name} (after step {k}): {exact}")
    first = "step 1 trains the base weights" if step == 1 else \
        f"no checkpoint at or before step {step - 1} in {out}: the weights step {step} trained with are not on disk"
    return StepWeights(model, None, None, f"weights: the base model {model.name} ({first})")


def alarm_step(run_dir: Path) -> tuple[int, str] | None:
    """(step, the alarm's line) of the run's first NaN/inf or grad_norm spike; None when it has none."""
    watch = train.RunWatch(run_dir)  # the run as it is on disk, launched by hipwizard or not
    watch.attach()
    alarm = next((a for a in watch.alarms() if a.kind in ALARM_KINDS), None)
    return (alarm.step, alarm.line()) if alarm else None


def run_config(run_dir: Path) -> dict:
    """The run's LLaMA-Factory config (``config.yaml`` in the run folder). ``UserError`` when it has none."""
    from ruamel.yaml import YAML, YAMLError  # heavy: ruamel (only to read a run's config)

    path = run_dir / "config.yaml"
    try:
        data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{run_dir} is not a run folder (no config.yaml in it)") from None
    except (OSError, UnicodeDecodeError, YAMLError) as exc:
        raise UserError(f"{path} cannot be read ({exc})") from None
    if not isinstance(data, dict) or not data.get("model_name_or_path"):
        raise UserError(f"{path} names no model_name_or_path")
    return data


def world_size(run_dir: Path) -> int:
    """How many processes trained the run: what its ranks printed ("world size: N"), else the launcher's
    NPROC_PER_NODE x NNODES, else 1."""
    for name in ("train.log", "stdout.log"):
        try:
            with open(run_dir / name, encoding="utf-8", errors="replace") as fh:
                found = re.search(r"world size: (\d+)", fh.read(1 << 20))
        except OSError:
            continue
        if found:
            return max(1, int(found.group(1)))
    try:
        env = json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("env_delta") or {}
        return max(1, int(env.get("NPROC_PER_NODE") or 1) * int(env.get("NNODES") or 1))
    except (OSError, ValueError, TypeError, AttributeError):
        return 1


def rebuild_batch(run_dir: Path, step: int, out: Path, *, world: int = 1, rank: int = 0) -> StepBatch:
    """Run ``step_batch`` in a subprocess; ``UserError`` with its one-line reason when it fails."""
    shard = ["--world-size", str(world), "--rank", str(rank)] if world > 1 else []
    try:
        done = subprocess.run([sys.executable, "-m", "hipwizard.parity.capture.step_batch", str(run_dir), "--step", str(step),
                               "--out", str(out), *shard], capture_output=True, text=True,
                              timeout=REBUILD_TIMEOUT_S, cwd=run_dir)
    except subprocess.TimeoutExpired:
        raise UserError(f"rebuilding step {step}'s batch took over {REBUILD_TIMEOUT_S} s and was stopped") from None
    if done.returncode != 0:
        lines = [x for x in (done.stderr or done.stdout).splitlines() if x.strip()]
        why = next((x for x in reversed(lines) if "error" in x.lower()), lines[-1] if lines else "no output")
        raise UserError(f"could not rebuild step {step}'s batch of {run_dir.name}: {why.strip()}")
    meta = json.loads(done.stdout.strip().splitlines()[-1])
    return StepBatch(out, meta)


def step_postmortem(ws: Workspace, run_dir: str | Path, *, step: int | None = None, dtype: str | None = None,
                    device: str = "auto", rank: int = 0, progress: ProgressFn | None = None):
    """Rebuild the alarm step's batch (``step`` given: that one) and compare the run's model on it; returns
    (StepBatch, CompareOutcome). ``UserError`` when the run has no alarm and no step is given."""
    progress = progress or quiet
    run = Path(run_dir).expanduser()
    if not run.is_dir():
        raise UserError(f"{run_dir}: no such run folder")
    config = run_config(run)
    if step is None:
        found = alarm_step(run)
        if found is None:
            raise UserError(f"{run.name} has no NaN/inf loss or grad_norm spike; name the step with --step N")
        step = found[0]
    if step < 1:
        raise UserError(f"--step {step}: steps count from 1")
    model = Path(str(config["model_name_or_path"])).expanduser()
    if not model.is_absolute():
        model = (run / model).resolve()
    if not model.is_dir():
        raise UserError(f"the run's model {config['model_name_or_path']} is not a local folder here")
    world = world_size(run)
    if not 0 <= rank < world:
        raise UserError(f"--rank {rank}: the run had {world} process(es) (ranks 0-{world - 1})")
    of_rank = f"-rank{rank}" if world > 1 else ""
    out = ws.state_dir / "parity" / f"step-batch-{run.name}-{step}{of_rank}.safetensors"
    weights = step_weights(run, config, model, step)
    progress(Progress(f"rebuilding step {step}'s batch" + (f" (rank {rank} of {world})" if world > 1 else "")))
    batch = rebuild_batch(run, step, out, world=world, rank=rank)
    batch.meta["weights"] = weights.line
    batch.meta["adapter"] = str(weights.adapter) if weights.adapter else None
    batch.meta["checkpoint_step"] = weights.checkpoint_step
    run_dtype = dtype or ("bf16" if config.get("bf16") else "fp16" if config.get("fp16") else "fp32")
    # The triangle: a bf16 run's LoRA gradients sit above the fixed bf16 table even when nothing is wrong (on the
    # H200, q_proj's lora_A/B gradients at rel L2 0.021-0.025 against fp64), so the verdict is relative to this
    # CPU's own error in the run's dtype (a reference run captured here too), with the fixed table beside it.
    request = CompareRequest(subject=Subject(model=weights.model, adapter=weights.adapter), same_machine=True,
                             options=RunOptions(dtype=run_dtype, device=device, backward=True, inputs=str(out),
                                                triangle=run_dtype != "fp64"))
    outcome = services.run_comparison(request, ws=None, progress=progress)
    which = weights.adapter.name if weights.adapter else weights.model.name if weights.checkpoint_step else "base weights"
    on_rank = f" rank {rank}/{world}" if world > 1 else ""
    outcome.report = state.record_comparison(ws, outcome.comparison,
                                             f"post-mortem {run.name} step {step}{on_rank} · {which}")
    return batch, outcome
