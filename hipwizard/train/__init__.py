"""Step 4, train: plan, launch and watch a LLaMA-Factory fine-tune.

The front door. Faces (``hipwizard.cli``, ``hipwizard.tui``) and ``hipwizard.report`` import the train step
only from here and from ``hipwizard.train.state`` (tests/test_architecture.py checks it).

- Services, one per user action (``services``): ``plan`` / ``plan_file``, ``init_run_dir``, ``save_plan``
  (the Plan tab's Save; ``run_name_problem`` its naming rule), ``demo_ready`` / ``build_demo``, ``launch`` / ``launch_demo``, ``stop``, ``list_runs``,
  ``watch`` and ``follow`` (a run followed for a live view), ``launched_manifest``, ``check_grace``; for long runs
  (``longrun``) ``resume`` (from the newest complete checkpoint), ``stall_policy``, ``incident`` (what was captured when it
  stalled or failed) and ``attempts``; the measuring actions
  (``calibration.services``): ``bench``, ``calibrate``, ``calibrate_plan``, ``counts_problem``.
- State readers (``state``): ``load``, ``calibrations``, ``ceiling``, ``launched_run_dirs``, ``summarize``.
- Value types the faces show or build: ``TrainConfig`` and its field helpers, ``Plan``, the presets,
  ``LaunchOptions``, ``Launched``, ``StopResult``, ``RunInfo``, ``RunSnapshot`` and its samples, ``GpuChoice``.

Behind the door, rooms by concept: ``config/`` (the LLaMA-Factory config: fields, YAML, DeepSpeed JSON, command
lines, bounded reads, what the installed LLaMA-Factory knows), ``planning/`` (the target device, the rules, model
shape, memory, throughput, knobs, the advisor, the ceiling, presets: one ``Plan``), ``run/`` (run folders,
launching, the manifest, logs and their tails, history, alarms, failures, snapshots, stopping, runs on disk),
``calibration/`` (measuring candidates and the GEMM ceiling on this machine, and the corrections they imply).
``supervise`` stays here: its module name is the argv that ``run.stop`` knows a run's supervisor by, also for
runs launched by an earlier version. ``demo`` is the step's part of the embedded demo.

Names from modules that pull pydantic, YAML or psutil load on first use (``hipwizard.lazy``), so reading the
state (the home screen) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hipwizard.lazy import lazy_attributes
from hipwizard.train.state import TrainState, calibrations, ceiling, launched_run_dirs, load, summarize

if TYPE_CHECKING:  # the lazy names below, for type checkers; at run time each loads on first use
    from hipwizard.train.calibration.corrections import SOURCE_WORDS
    from hipwizard.train.calibration.services import bench, calibrate, calibrate_plan, counts_problem
    from hipwizard.train.config.train_config import FIELD_GROUPS, TrainConfig, field_help, parse_field
    from hipwizard.train.longrun import attempts, incident, resume, run_again_with_nccl_debug, stall_policy
    from hipwizard.train.planning.ceiling import spec_tflops, utilisation
    from hipwizard.train.planning.device import KNOWN_DEVICES
    from hipwizard.train.planning.plan import Plan
    from hipwizard.train.planning.presets import (
        DEFAULT_PRESET,
        DEMO_PRESET,
        load_presets,
        preset_config,
        preset_document,
    )
    from hipwizard.train.run.classify import Diagnosis
    from hipwizard.train.run.follow import RunFollower
    from hipwizard.train.run.gpus import GPUS_HELP, GpuChoice, parse_gpus
    from hipwizard.train.run.history import fmt_duration
    from hipwizard.train.run.incident import NCCL_DEBUG_ENV, Incident
    from hipwizard.train.run.launcher import LaunchOptions
    from hipwizard.train.run.manifest import CONFIG_NAME
    from hipwizard.train.run.resume import Attempt
    from hipwizard.train.run.rundir import RunDir, run_name
    from hipwizard.train.run.runs import LIVE_STATES, STATE_SYMBOL, RunInfo, run_info
    from hipwizard.train.run.snapshot import GpuHistory, HostSample, RunSnapshot, host_sample
    from hipwizard.train.run.stall import STALL_FLOOR_S, STALL_K, StallPolicy
    from hipwizard.train.run.stop import StopResult
    from hipwizard.train.run.watch import RunWatch
    from hipwizard.train.services import (
        Launched,
        LaunchRefused,
        build_demo,
        check_grace,
        demo_ready,
        follow,
        init_run_dir,
        launch,
        launch_demo,
        launched_manifest,
        list_runs,
        plan,
        plan_file,
        run_name_problem,
        save_plan,
        stop,
        watch,
    )

_LAZY = {
    **dict.fromkeys(("plan", "plan_file", "init_run_dir", "save_plan", "run_name_problem", "demo_ready",
                     "build_demo", "launch", "launch_demo", "stop", "list_runs", "watch", "follow", "launched_manifest", "check_grace",
                     "Launched", "LaunchRefused"),
                    "hipwizard.train.services"),
    **dict.fromkeys(("resume", "stall_policy", "incident", "attempts", "run_again_with_nccl_debug"),
                    "hipwizard.train.longrun"),
    **dict.fromkeys(("bench", "calibrate", "calibrate_plan", "counts_problem"), "hipwizard.train.calibration.services"),
    "SOURCE_WORDS": "hipwizard.train.calibration.corrections",
    **dict.fromkeys(("spec_tflops", "utilisation"), "hipwizard.train.planning.ceiling"),
    **dict.fromkeys(("FIELD_GROUPS", "TrainConfig", "field_help", "parse_field"),
                    "hipwizard.train.config.train_config"),
    "KNOWN_DEVICES": "hipwizard.train.planning.device",
    **dict.fromkeys(("GPUS_HELP", "GpuChoice", "parse_gpus"), "hipwizard.train.run.gpus"),
    "fmt_duration": "hipwizard.train.run.history",
    "LaunchOptions": "hipwizard.train.run.launcher",
    "CONFIG_NAME": "hipwizard.train.run.manifest",
    "Plan": "hipwizard.train.planning.plan",
    **dict.fromkeys(("DEFAULT_PRESET", "DEMO_PRESET", "load_presets", "preset_config", "preset_document"),
                    "hipwizard.train.planning.presets"),
    **dict.fromkeys(("RunDir", "run_name"), "hipwizard.train.run.rundir"),
    "RunFollower": "hipwizard.train.run.follow",
    **dict.fromkeys(("STATE_SYMBOL", "RunInfo", "run_info", "LIVE_STATES"), "hipwizard.train.run.runs"),
    **dict.fromkeys(("STALL_K", "STALL_FLOOR_S", "StallPolicy"), "hipwizard.train.run.stall"),
    **dict.fromkeys(("NCCL_DEBUG_ENV", "Incident"), "hipwizard.train.run.incident"),
    "Diagnosis": "hipwizard.train.run.classify",
    "Attempt": "hipwizard.train.run.resume",
    **dict.fromkeys(("GpuHistory", "HostSample", "RunSnapshot", "host_sample"), "hipwizard.train.run.snapshot"),
    "StopResult": "hipwizard.train.run.stop",
    "RunWatch": "hipwizard.train.run.watch",
}

__getattr__ = lazy_attributes(__name__, _LAZY)

__all__ = [
    # services and their results
    "plan", "plan_file", "init_run_dir", "save_plan", "run_name_problem", "demo_ready", "build_demo", "launch", "launch_demo", "stop",
    "list_runs", "watch", "follow", "launched_manifest", "check_grace", "Launched", "LaunchRefused", "StopResult",
    "RunDir", "RunFollower", "RunWatch", "resume", "stall_policy", "incident", "attempts", "run_again_with_nccl_debug",
    "bench", "calibrate", "calibrate_plan", "counts_problem",
    # state readers
    "load", "calibrations", "ceiling", "launched_run_dirs", "summarize", "TrainState",
    # value types and the words the faces show
    "TrainConfig", "FIELD_GROUPS", "field_help", "parse_field", "Plan", "SOURCE_WORDS", "spec_tflops", "utilisation",
    "DEFAULT_PRESET", "DEMO_PRESET", "load_presets", "preset_config", "preset_document", "run_name",
    "KNOWN_DEVICES", "GPUS_HELP", "GpuChoice", "parse_gpus", "LaunchOptions", "CONFIG_NAME",
    "RunInfo", "run_info", "STATE_SYMBOL", "LIVE_STATES", "fmt_duration", "STALL_K", "STALL_FLOOR_S", "StallPolicy",
    "NCCL_DEBUG_ENV", "Incident", "Diagnosis", "Attempt", "RunSnapshot", "GpuHistory", "HostSample", "host_sample",
]
