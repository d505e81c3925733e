"""The Train step's measuring actions, one function each (both faces call them; ``services`` has the rest):

- ``bench``: time a bf16 GEMM on this machine's GPU (``gemm_bench`` in a subprocess) and keep it in the
  workspace as the ceiling MFU is judged against;
- ``calibrate``: plan a config, run its top K candidates for a few steps each (``calibrate.run_calibration``),
  fit, and keep the calibration in the workspace; ``train plan`` and the Plan tab use it when it matches; with
  ``knobs`` also the pick with each predicted-neutral knob changed (``Advice.trials``), the only way those knobs
  are ever advised (measured before advised: issue 34);
- ``calibrate_plan``: the same for the Plan tab's unsaved form (written to ``.hipwizard/calibrate-plan/``).

Bad input raises ``UserError`` (one line). Long actions take ``progress``; ``calibrate`` also ``should_stop``.
"""

from __future__ import annotations

import json
import platform as _platform
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from hipwizard.doctor.state import environment_stamp
from hipwizard.errors import UserError
from hipwizard.progress import Progress, ProgressFn
from hipwizard.runner import SubprocessRunner
from hipwizard.train import services, state
from hipwizard.train.calibration.corrections import Calibration, calibration_key
from hipwizard.train.calibration.measure import GpuPeak, run_calibration
from hipwizard.train.config.yaml_io import load_yaml
from hipwizard.train.planning.ceiling import Ceiling
from hipwizard.train.planning.device import DeviceTarget
from hipwizard.train.planning.knobs import installed_versions
from hipwizard.train.run.launcher import LaunchOptions
from hipwizard.train.run.rundir import save_run_dir
from hipwizard.workspace import Workspace

BENCH_TIMEOUT_S = 300.0


def bench(ws: Workspace | None, *, sizes: list[int] | None = None, seconds: float = 1.0,
          progress: ProgressFn | None = None, runner=None) -> Ceiling:
    """Measure the achievable bf16 GEMM rate here and save it in ``ws`` (when given)."""
    if not 0 < seconds <= 60:
        raise UserError(f"the GEMM timing must last between 0 and 60 seconds, not {seconds:g}", field="seconds")
    if progress:
        progress(Progress("timing a bf16 GEMM"))
    argv = [sys.executable, "-m", "hipwizard.train.calibration.gemm_bench", "--seconds", str(seconds)]
    if sizes:
        argv += ["--sizes", ",".join(str(n) for n in sizes)]
    result = (runner or SubprocessRunner()).run(argv, timeout=BENCH_TIMEOUT_S)
    try:
        data = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (result.stderr or result.stdout or result.note).strip().splitlines()
        raise UserError(f"the GEMM benchmark did not run: {tail[-1] if tail else result.status}") from None
    ceiling = Ceiling(float(data["tflops"]), str(data.get("gpu", "")), int(data.get("n", 0)), str(data.get("torch", "")),
                      datetime.now(timezone.utc).isoformat(timespec="seconds"), _platform.node())
    if ws is not None:
        try:
            state.save_ceiling(ws, ceiling)
        except OSError as exc:
            raise UserError(f"measured {ceiling.tflops:.0f} TFLOP/s but cannot save it: {exc}") from None
    if progress:
        progress(Progress("timing a bf16 GEMM", 1, 1))
    return ceiling


def counts_problem(candidates: int, steps: int, warmup: int) -> str | None:
    """What is wrong with K candidates of N steps each (``warmup`` of them untimed), or None: the bounds the CLI
    and the Plan tab's dialog both hold."""
    if not 1 <= candidates <= 16:
        return f"candidates must be between 1 and 16, not {candidates}"
    if not warmup + 2 <= steps <= 1000:
        return f"steps must be between {warmup + 2} and 1000 (the first {warmup} are warm-up), not {steps}"
    return None


def calibrate(ws: Workspace, config_path: Path, *, candidates: int = 4, steps: int = 8, warmup: int = 2,
              seq_len: int | None = None, lengths: str | None = None, vram_gib: float | None = None,
              device: str | None = None, options: LaunchOptions | None = None, with_bench: bool = False,
              progress: ProgressFn | None = None, should_stop: Callable[[], bool] = lambda: False,
              knobs: bool = False) -> Calibration:
    """Run the advisor's top ``candidates`` for ``steps`` real steps each and keep what was measured.

    The GPU is the one the run uses (its name from telemetry, when there is one); the calibration is saved
    in the workspace even when stopped part way (what was measured stays measured)."""
    problem = counts_problem(candidates, steps, warmup)
    if problem:
        raise UserError(problem, field=problem.split()[0])  # "candidates ..." / "steps ..."
    options = options or LaunchOptions()
    if options.gpus is None and options.nproc_per_node is None and options.platform != "cpu":
        # The key says world size 1: without this a many-GPU box would train each candidate on all its GPUs.
        options = replace(options, gpus=[0])
    target = services.target_device(ws, vram_gib=vram_gib, device=device)
    gpu = GpuPeak((options.gpus or [0])[0])
    if gpu.used_gib() is not None and gpu.name:
        target = DeviceTarget(gpu.name, vram_gib or round(gpu.total_gib or target.vram_gib or 0, 1) or target.vram_gib,
                              target.arch, "telemetry")
    problems = services.launch_problems(config_path)
    if problems:
        raise UserError(f"{config_path}: cannot calibrate: {'; '.join(problems)}")
    loaded = load_yaml(config_path)
    plan = services.plan(loaded.config, ws=ws, base_dir=loaded.base_dir, seq_len=seq_len, lengths=lengths,
                         device=target, use_calibration=False, trials=knobs)
    advice = plan.advice
    if advice is None or (advice.reason and advice.baseline is None):
        raise UserError(f"{config_path}: nothing to calibrate: {advice.reason if advice else 'no plan'}")
    ceiling = bench(ws, progress=progress) if with_bench else state.ceiling(ws)
    seq = max(1, min(seq_len or loaded.config.cutoff_len, loaded.config.cutoff_len))
    shape = plan.shape.shape if plan.shape else None
    versions = installed_versions()
    key = calibration_key(loaded.config, gpu=target.name, world_size=1, params=shape.total_params if shape else None,
                          seq_len=seq, lengths=lengths, versions=versions)
    cal = run_calibration(advice, config_path=config_path.resolve(), document=loaded.document,
                          base_dir=loaded.base_dir, runs_dir=ws.runs_dir, key=key, candidates=candidates,
                          steps=steps, warmup=warmup, options=options, seq_len=seq, versions=versions,
                          ceiling_tflops=ceiling.tflops if ceiling else None, progress=progress,
                          should_stop=should_stop, extra=advice.trials)

    cal.environment = environment_stamp(ws)
    try:
        state.save_calibration(ws, cal)
    except OSError as exc:
        raise UserError(f"calibrated, but cannot save it in the workspace: {exc}") from None
    return cal


PLAN_FOLDER = "calibrate-plan"  # under the workspace's state folder: the Plan tab's config, as calibrated


def calibrate_plan(ws: Workspace, config, document=None, *, base_dir: Path, gpus: int = 1, seq_len: int | None = None,
                   candidates: int = 4, steps: int = 8, warmup: int = 2, options: LaunchOptions | None = None,
                   progress: ProgressFn | None = None,
                   should_stop: Callable[[], bool] = lambda: False) -> Calibration:
    """``calibrate`` for a config being edited (the Plan tab's form, a ``TrainConfig`` and its YAML
    ``document``): written to ``.hipwizard/calibrate-plan/config.yaml`` (paths anchored at ``base_dir``), then
    calibrated from there. One GPU only: the key of a calibration holds the world size it ran at."""
    if gpus != 1:
        raise UserError(f"calibration runs on one GPU: set GPUs to 1 (not {gpus}) to calibrate")
    run = save_run_dir(ws.state_dir / PLAN_FOLDER, config, document, base_dir=base_dir)
    return calibrate(ws, run.config_path, candidates=candidates, steps=steps, warmup=warmup, seq_len=seq_len,
                     options=options, progress=progress, should_stop=should_stop)
