"""The Train step's user actions, one function each; the CLI (``cli/train*.py``) and the Train screen
(``tui/train/``) both call these, so an action behaves the same from either face.

- ``plan`` / ``plan_file``: validate a config, estimate its memory on the target GPU, rank faster variants.
  The GPU comes from the doctor's report (``doctor.state.target_facts``) unless the caller overrides it.
- ``save_plan``: a config saved as a run directory (the Plan tab's Save; ``init_run_dir``, the CLI's
  ``train init``, saves a preset through it). ``demo_ready`` / ``build_demo``: the tiny demo model.
- ``launch``: start ``llamafactory-cli train`` (detached) for a run directory or a config file, and record
  the run in the workspace state.
- ``launch_demo``: build the demo, write a run directory of the demo preset, launch it on CPU.
- ``stop``: graceful stop, then the whole process group.
- ``list_runs`` / ``watch`` / ``follow``: the runs a workspace knows, one run followed, and one followed for
  a live view (GPU readings, the run's own processes, the saved ceiling).

Long actions take ``progress: ProgressFn | None``. Bad input raises ``UserError`` (one line, in the user's
words; ``field`` names the value at fault, which the CLI shows as its flag and the TUI marks).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from hipwizard.atomic import atomic_write_text
from hipwizard.demo_model import DemoAssets, demo_assets
from hipwizard.doctor.state import environment_stamp, target_facts
from hipwizard.errors import UserError
from hipwizard.progress import Progress, ProgressFn
from hipwizard.train import state
from hipwizard.train.config.bounded import read_regular_text
from hipwizard.train.config.train_config import TrainConfig
from hipwizard.train.config.yaml_io import load_yaml
from hipwizard.train.demo import DEMO_ENV, ensure_demo_built, write_demo_run_dir
from hipwizard.train.planning.device import DeviceTarget, resolve_device
from hipwizard.train.planning.knobs import KnobAvailability
from hipwizard.train.planning.plan import Plan, make_plan
from hipwizard.train.planning.presets import DEMO_PRESET, preset_config, preset_document
from hipwizard.train.planning.rules import RuleContext, check_config, resolve_path
from hipwizard.train.run.follow import RunFollower
from hipwizard.train.run.launcher import LaunchOptions
from hipwizard.train.run.launcher import launch as start
from hipwizard.train.run.manifest import CONFIG_NAME, MANIFEST_NAME, RunManifest, load_manifest
from hipwizard.train.run.rundir import RunDir, save_run_dir
from hipwizard.train.run.runs import RunInfo, run_info
from hipwizard.train.run.runs import list_runs as find
from hipwizard.train.run.stop import StopResult, stop_run
from hipwizard.train.run.watch import RunWatch
from hipwizard.workspace import Workspace


def _report(progress: ProgressFn | None, stage: str, done: int | None = None, total: int | None = None,
            item: str = "") -> None:
    if progress is not None:
        progress(Progress(stage, done, total, item))


# --- plan ---------------------------------------------------------------------------------------------
def target_device(ws: Workspace | None, *, vram_gib: float | None = None, device: str | None = None,
                  arch: str | None = None) -> DeviceTarget:
    """The GPU to plan for: what the caller says, else the doctor's report of ``ws``, else an MI300X."""
    if vram_gib is not None and not (0 < vram_gib <= 100_000):
        raise UserError(f"VRAM must be a positive size in GiB, not {vram_gib:g}", field="vram")
    try:
        return resolve_device(vram_gib=vram_gib, device=device, arch=arch, doctor_gpus=target_facts(ws).gpus)
    except ValueError as exc:
        raise UserError(str(exc), field="device") from None


def _check_sizes(gpus: int, seq_len: int | None) -> None:
    if not 1 <= gpus <= 4096:
        raise UserError(f"the number of GPUs must be between 1 and 4096, not {gpus}", field="gpus")
    if seq_len is not None and seq_len < 1:
        raise UserError(f"the sequence length must be positive, not {seq_len}", field="seq_len")


def plan(config: TrainConfig, *, ws: Workspace | None = None, base_dir: Path | None = None, gpus: int = 1,
         seq_len: int | None = None, lengths: str | None = None, field_errors: list[tuple[str, str]] | None = None,
         device: DeviceTarget | None = None, progress: ProgressFn | None = None, use_calibration: bool = True,
         trials: bool = False) -> Plan:
    """Validate ``config``, estimate its peak memory per GPU and rank faster variants that fit.
    ``use_calibration`` False: predictions only (what a new calibration is fitted against); ``trials``: also
    the pick with each predicted-neutral knob changed (``Advice.trials``: what a calibration with knobs runs).

    ``device`` None: ``target_device(ws)``. ``base_dir``: where relative model/dataset paths start
    (default: the workspace root, else the current folder)."""
    _check_sizes(gpus, seq_len)
    _report(progress, "planning")
    device = device or target_device(ws)
    base = base_dir or (ws.root if ws is not None else Path.cwd())

    result = make_plan(config, base_dir=base, device=device, world_size=gpus, seq_len=seq_len, lengths=lengths,
                       field_errors=field_errors, calibrations=state.calibrations(ws) if ws is not None and use_calibration else [],
                       knobs=KnobAvailability.gather(), ceiling=state.ceiling(ws), trials=trials)
    _report(progress, "planning", 1, 1)
    return result


def plan_file(path: Path, *, ws: Workspace | None = None, gpus: int = 1, vram_gib: float | None = None,
              device: str | None = None, arch: str | None = None, seq_len: int | None = None,
              lengths: str | None = None, progress: ProgressFn | None = None) -> Plan:
    """``plan`` for a LLaMA-Factory YAML file; what the file could not say becomes the plan's notes.
    ``UserError`` (one line naming the file and each value) when a value cannot be read at all (a word
    where a number goes, a batch size of -4): no plan is made from the defaults that would replace them."""
    _check_sizes(gpus, seq_len)
    target = target_device(ws, vram_gib=vram_gib, device=device, arch=arch)
    loaded = load_yaml(path)
    if loaded.errors:
        raise UserError(unusable_values(loaded.path or path, loaded.errors))
    result = plan(loaded.config, ws=ws, base_dir=loaded.base_dir, gpus=gpus, seq_len=seq_len, lengths=lengths,
                  field_errors=loaded.errors, device=target, progress=progress)
    result.notes.extend(loaded.notes)
    if loaded.unknown_keys:
        result.notes.append(f"kept as written (not edited by hipwizard): {', '.join(loaded.unknown_keys)}")
    return result


def unusable_values(path: Path, errors: list[tuple[str, str]]) -> str:
    """One line: ``PATH: N value(s) cannot be used: field: why; ...``."""
    return f"{path}: {len(errors)} value(s) cannot be used: " + "; ".join(
        msg if msg.startswith(f"{name.split('.')[0]}:") else f"{name}: {msg}" for name, msg in errors)


def init_run_dir(out: Path, preset: str, *, progress: ProgressFn | None = None) -> tuple[RunDir, TrainConfig]:
    """Write a run directory (config.yaml + ds_config.json) from a preset at ``out``; returns (RunDir,
    TrainConfig). The demo preset builds the tiny model first."""
    if preset == DEMO_PRESET:
        build_demo(progress=progress)
    config = preset_config(preset)
    return save_plan(config, preset_document(preset), out=out), config


def save_plan(config: TrainConfig, document=None, *, ws: Workspace | None = None, name: str | None = None,
              out: Path | None = None, base_dir: Path | None = None) -> RunDir:
    """Write ``config`` (its YAML ``document`` keeps unknown keys) as a run directory: at ``out`` when given,
    else as ``name`` under the workspace's runs folder (``./runs`` without a workspace). Relative paths start
    at ``base_dir``. ``UserError`` (field ``name``) for a name that is not a plain folder name; ``UserError``
    for a folder that holds a launched run or cannot be written."""
    if out is None:
        problem = run_name_problem(name or "")
        if problem:
            raise UserError(problem, field="name")
        out = (ws.runs_dir if ws is not None else Path.cwd() / "runs") / (name or "").strip()
    return save_run_dir(out, config, document, base_dir=base_dir)


def run_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a run folder in the runs folder (empty, a path, hidden), or None."""
    name = name.strip()
    if not name or "/" in name or "\\" in name or name.startswith(".") or "\0" in name:
        return "give the run a plain name (no slashes, not starting with a dot)"
    return None


def demo_ready() -> bool:
    """Whether the tiny demo model and dataset are built (``build_demo`` would return at once)."""
    return demo_assets().ready


def build_demo(*, progress: ProgressFn | None = None) -> DemoAssets:
    """Build the tiny demo model and dataset (a subprocess, offline, once); returns where they are."""
    return ensure_demo_built(progress=progress)


# --- launch / stop ------------------------------------------------------------------------------------
@dataclass
class Launched:
    """A run that was started: its manifest, and what could not be done around it (one line each)."""

    manifest: RunManifest
    warnings: list[str] = field(default_factory=list)

    @property
    def run_dir(self) -> str:
        return self.manifest.run_dir

    @property
    def name(self) -> str:
        return self.manifest.name


# Plan errors on these fields mean LLaMA-Factory cannot even start: a launch stops on them first.
LAUNCH_BLOCKERS = ("model_name_or_path", "dataset", "dataset_dir", "template", "output_dir")


def launch_problems(config_path: Path, *, base_dir: Path | None = None) -> list[str]:
    """The one-line reasons ``train plan`` gives that would make ``llamafactory-cli train`` fail at once
    (unreadable values, a model folder that does not exist, an unknown dataset or template), empty when
    none. ``UserError`` when the file itself cannot be read."""
    loaded = load_yaml(config_path)
    if loaded.errors:
        return [unusable_values(loaded.path or config_path, loaded.errors)]
    base = base_dir or loaded.base_dir
    issues = check_config(loaded.config, RuleContext.gather(loaded.config, base))
    return [i.message for i in issues if i.severity == "error" and i.field in LAUNCH_BLOCKERS]


class LaunchRefused(UserError):
    """A config that ``llamafactory-cli train`` would fail on at once: the reasons, and the config whose plan
    says more (each face names its own way to see that plan)."""

    def __init__(self, config_path: Path, problems: list[str]) -> None:
        super().__init__(f"{config_path}: cannot launch: {'; '.join(problems)} (the plan of this config says more)")
        self.config_path = config_path
        self.problems = problems


def _refuse(config_path: Path, problems: list[str]) -> None:
    if problems:
        raise LaunchRefused(config_path, problems)


def resolve_target(target: str | Path, runs_dir: Path) -> Path:
    """A run directory for TARGET: the folder itself (a run directory: it holds config.yaml), or, for a
    config file anywhere, a new run dir under ``runs_dir`` holding that config with its relative model /
    dataset paths made absolute. A run writes only into its run directory, never beside the user's
    config. ``UserError`` (nothing created) when the config cannot work."""
    path = Path(target).expanduser()
    if path.is_dir():
        if (path / CONFIG_NAME).is_file():
            _refuse(path / CONFIG_NAME, launch_problems(path / CONFIG_NAME))
        return path
    if not path.exists():
        raise UserError(f"{path} does not exist")
    if path.suffix not in (".yaml", ".yml", ".sh"):
        raise UserError(f"{path} is neither a run directory, a .yaml config nor a .sh script with a "
                        f"llamafactory-cli train command")
    _refuse(path, launch_problems(path))
    loaded = load_yaml(path)
    run_dir = runs_dir / f"{path.stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    n = 1
    while run_dir.exists():
        n += 1
        run_dir = runs_dir / f"{path.stem}-{time.strftime('%Y%m%d-%H%M%S')}-{n}"
    ds = loaded.document.get("deepspeed")
    run = save_run_dir(run_dir, loaded.config, loaded.document, base_dir=loaded.base_dir)
    if isinstance(ds, str) and ds and loaded.config.zero_stage is not None:
        _keep_deepspeed_json(resolve_path(ds, loaded.base_dir), run.deepspeed_path)
    return run.path


def _keep_deepspeed_json(source: Path, dest: Path) -> None:
    """The user's own DeepSpeed JSON, when readable, replaces the one rebuilt from its ZeRO settings
    (it may tune more than the stage and offload)."""
    try:
        text = read_regular_text(source)
    except (OSError, UnicodeDecodeError):
        return
    atomic_write_text(dest, text)


def launch(ws: Workspace, target: str | Path, options: LaunchOptions | None = None, *,
           progress: ProgressFn | None = None) -> Launched:
    """Start ``llamafactory-cli train`` for a run directory (or a config.yaml) and remember it in the
    workspace. The run is detached: it outlives the caller. ``UserError`` before anything starts when the
    config cannot work (the reasons ``train plan`` gives)."""
    run_dir = resolve_target(target, ws.runs_dir)
    _report(progress, "launching", item=Path(run_dir).name)
    manifest = start(run_dir, options or LaunchOptions())
    _stamp(ws, manifest)
    launched = Launched(manifest)
    try:
        state.remember_run(ws, manifest.run_dir)
    except OSError as exc:
        launched.warnings.append(f"cannot record the run in the workspace: {exc}")
    _report(progress, "launching", 1, 1, Path(run_dir).name)
    return launched


def _stamp(ws: Workspace, manifest: RunManifest) -> None:
    """Stamp the run's manifest with this machine's environment (``doctor.fingerprint``); a manifest that
    cannot be rewritten keeps the run going, unstamped."""
    manifest.environment = environment_stamp(ws)
    try:
        manifest.save()
    except OSError:
        manifest.environment = None


def launch_demo(ws: Workspace, options: LaunchOptions | None = None, *, max_steps: int | None = None,
                progress: ProgressFn | None = None) -> Launched:
    """The demo run: build the tiny model (once), write a run dir of the demo preset, launch it on CPU."""
    assets = build_demo(progress=progress)
    _report(progress, "writing the demo run directory")
    run_dir = write_demo_run_dir(ws.runs_dir, assets.root, max_steps=max_steps)
    options = options or LaunchOptions()
    options.extra_env = {**DEMO_ENV, **options.extra_env}
    options.platform = options.platform or "cpu"
    return launch(ws, run_dir, options, progress=progress)


# What a run.json must hold for a run to be followed or stopped (wrong types would reach os.killpg).
_MANIFEST_TYPES: dict[str, tuple[type | tuple[type, ...], str]] = {"run_dir": (str, "text"), "name": (str, "text"), "pid": (int, "whole number"),
                   "pgid": (int, "whole number"), "log": (str, "text"), "output_dir": (str, "text"),
                   "command": (list, "list"), "pid_create_time": ((int, float), "number")}


def launched_manifest(run_dir: str | Path) -> RunManifest:
    """The manifest of a launched run; ``UserError`` (one line naming the path) when ``run_dir`` is not a
    folder, was never launched, or its run.json is damaged or holds wrong types."""
    path = Path(run_dir).expanduser().resolve()
    if not path.exists():
        raise UserError(f"{path} does not exist")
    if not path.is_dir():
        raise UserError(f"{path} is a file, not a run directory (give the folder that holds run.json)")
    file = path / MANIFEST_NAME
    if not file.exists():
        raise UserError(f"{path} has no {MANIFEST_NAME}: it was never launched")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{file} is unreadable: {exc}") from None
    if not isinstance(data, dict):
        raise UserError(f"{file} does not hold a JSON object")
    for key, (kind, word) in _MANIFEST_TYPES.items():
        value = data.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise UserError(f"{file}: {key} must be a {word}, not {value!r}")
        if isinstance(value, str) and "\0" in value:
            raise UserError(f"{file}: {key} holds a NUL byte")
    if data["pid"] <= 0 or data["pgid"] <= 0:
        raise UserError(f"{file}: pid and pgid must be positive, not {data['pid']} / {data['pgid']}")
    manifest = load_manifest(path)
    if manifest is None:
        raise UserError(f"{file} lacks fields of a run manifest")
    return manifest


def check_grace(grace_s: float) -> None:
    if not 0 <= grace_s < 1e6:
        raise UserError(f"the grace period must be a number of seconds, not {grace_s:g}", field="grace")


def stop(run_dir: str | Path, *, grace_s: float = 60.0, progress: ProgressFn | None = None) -> StopResult:
    """Stop the run in ``run_dir``: the Trainer saves first, then its whole process group ends.
    Returns ``stop.StopResult``; ``UserError`` when nothing was launched there."""
    check_grace(grace_s)
    manifest = launched_manifest(run_dir)
    _report(progress, "stopping", item=manifest.name)
    result = stop_run(manifest, grace_s=grace_s)
    _report(progress, "stopping", 1, 1, manifest.name)
    return result


# --- runs ---------------------------------------------------------------------------------------------
def list_runs(ws: Workspace, extra_dirs: tuple[Path, ...] | list[Path] = (), *, planned: bool = False) -> list[RunInfo]:
    """The runs of the workspace (its runs/ folder, runs launched from it elsewhere, ``extra_dirs``),
    newest first; with ``planned``, also run directories saved but never launched (last)."""
    roots = [ws.runs_dir, *(Path(d) for d in extra_dirs), *state.launched_run_dirs(ws)]
    runs = find(roots)
    if planned and ws.runs_dir.is_dir():
        known = {r.run_dir for r in runs}
        for cfg in sorted(ws.runs_dir.glob(f"*/{CONFIG_NAME}")):
            if str(cfg.parent.resolve()) not in known:
                runs.append(run_info(cfg.parent))
    return runs


def watch(run_dir: str | Path) -> RunWatch:
    """A ``RunWatch`` on the run, its history so far loaded; ``UserError`` when it was never launched."""
    launched_manifest(run_dir)
    run_watch = RunWatch(run_dir)
    run_watch.attach()
    return run_watch


def follow(run_dir: str | Path, ws: Workspace | None = None) -> RunFollower:
    """A run followed for a live view: ``watch`` plus the GPU readings, the run's own processes and the
    workspace's measured ceiling (MFU); ``UserError`` when it was never launched."""
    return RunFollower(watch(run_dir), ceiling=state.ceiling(ws))
