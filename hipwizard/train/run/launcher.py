"""Launch ``llamafactory-cli train config.yaml`` from a run directory, detached from the caller.

The run gets its own session (so closing the TUI or dropping SSH never signals it), writes stdout and
stderr to ``train.log`` in the run directory (a file, never a pipe that can fill), and is recorded in
``run.json`` (see ``manifest``) before ``launch`` returns. ``build_environment`` is separate and pure so
the exact variables a run gets are testable without starting anything.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

import psutil
import yaml

from hipwizard import __version__
from hipwizard.errors import UserError
from hipwizard.gpu import detect_platform
from hipwizard.train.config.bounded import InputRefused, check_yaml_bounds, read_regular_text
from hipwizard.train.config.launch_knobs import knob_environment, read_knobs
from hipwizard.train.run.incident import ATTEMPT_MARK, INCIDENT_NAME, INCIDENT_TEXT, set_aside
from hipwizard.train.run.manifest import (
    CONFIG_NAME,
    EXIT_NAME,
    LOG_NAME,
    MANIFEST_NAME,
    RUN_ENV,
    STOP_NAME,
    RunManifest,
    load_manifest,
)
from hipwizard.train.run.resume import (
    ATTEMPTS_NAME,
    Attempt,
    Checkpoint,
    newest_checkpoint,
    read_attempts,
    resume_arguments,
    write_attempts,
)
from hipwizard.train.run.runs import is_running
from hipwizard.train.run.stall import STALL_NAME, StallPolicy, clear_stall
from hipwizard.train.run.stop import kill_group

VERSIONED = ("llamafactory", "torch", "transformers", "peft", "accelerate", "deepspeed", "datasets")


@dataclass
class LaunchOptions:
    """How to start a run. ``gpus`` None = every visible device; ``platform`` None = detect."""
    gpus: list[int] | None = None
    nproc_per_node: int | None = None
    nnodes: int = 1
    node_rank: int = 0
    master_addr: str | None = None
    master_port: int | None = None
    platform: str | None = None  # "rocm", "cuda" or "cpu"
    extra_env: dict[str, str] = field(default_factory=dict)
    llamafactory_cli: str | None = None
    resume: bool = False  # continue from the newest complete checkpoint (LLaMA-Factory's resume_from_checkpoint)
    auto_resume: int = 0  # resume by itself after a crash or a stall, at most this many times
    stall: StallPolicy | None = None  # when the run counts as stalled (None: stall.StallPolicy's defaults)


def read_config(run_dir: Path) -> dict[str, Any]:
    """The run's config.yaml as a dict; UserError when it is missing or not a mapping."""
    path = run_dir / CONFIG_NAME
    if not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a run directory (it does not exist)")
    if not path.is_file():
        raise UserError(f"{run_dir} has no {CONFIG_NAME}: write one with `hipwizard train init` first")
    try:
        text = read_regular_text(path)
        check_yaml_bounds(text)
        data = yaml.safe_load(text)
    except InputRefused as exc:
        raise UserError(f"{path} is refused: {exc}") from None
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise UserError(f"{path} is not readable YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} does not hold a mapping of LLaMA-Factory options")
    return data


def output_dir_of(run_dir: Path, config: Mapping[str, Any]) -> Path:
    """Where the trainer writes trainer_log.jsonl: ``output_dir``, relative to the run dir (its cwd)."""
    out = config.get("output_dir")
    if not out:
        raise UserError(f"{run_dir / CONFIG_NAME} has no output_dir: LLaMA-Factory needs one")
    path = Path(str(out)).expanduser()
    return path if path.is_absolute() else (run_dir / path)


def fp8_engages(config: Mapping[str, Any]) -> bool:
    """Whether a run of ``config`` (the YAML) trains with FP8 matmuls when hipwizard launches it: ``fp8`` on with
    bf16 and fp16 off. transformers 5 reads ACCELERATE_MIXED_PRECISION when TrainingArguments is built (bf16 or
    fp16 override it) and hands the result to Accelerate, so LLaMA-Factory setting it later, in its Trainer, is
    too late (its log then says "Accelerate FP8 status - enabled: False"); set in the launch environment it is
    read in time, and Accelerate converts the Linear layers (its defaults: tensorwise scales, not the first or
    last Linear, dimensions divisible by 16) under a bf16 autocast. Measured: issue 34, docs/benchmarks.md."""
    return config.get("fp8") is True and not config.get("bf16") and not config.get("fp16")


def build_environment(config: Mapping[str, Any], options: LaunchOptions, platform: str,
                      base: Mapping[str, str], output_dir: Path,
                      knob_env: Mapping[str, str] | None = None) -> tuple[dict[str, str], list[str]]:
    """(variables to set, inherited variables to remove) for a run. Pure: no process is started. ``knob_env``: the
    run folder's launch knobs (``launch_knobs.knob_environment``: TunableOp on ROCm); the caller's own
    ``extra_env`` still has the last word."""
    delta: dict[str, str] = {
        "RECORD_VRAM": "1",  # trainer_log.jsonl then carries vram_allocated / vram_reserved
        "PYTHONUNBUFFERED": "1",  # the log file gets lines as they happen
        # LlamaBoard mode makes LLaMA-Factory treat SIGABRT as "stop and save" (see stop.py).
        "LLAMABOARD_ENABLED": "1",
        "LLAMABOARD_WORKDIR": str(output_dir),
    }
    removed: list[str] = []
    uses_deepspeed = bool(config.get("deepspeed"))
    nproc = options.nproc_per_node or (len(options.gpus) if options.gpus else None)
    if nproc is None and platform == "cpu":
        nproc = 1  # llamafactory would count 0 accelerators
    if nproc is not None:
        if nproc < 1:
            raise UserError("NPROC_PER_NODE must be at least 1")
        delta["NPROC_PER_NODE"] = str(nproc)
    if uses_deepspeed or options.nnodes > 1 or (nproc or 1) > 1:
        # llamafactory-cli only goes through torchrun (which DeepSpeed needs) when forced or when it
        # counts more than one accelerator itself — on CPU it counts none, so NPROC_PER_NODE=2 alone
        # would silently train in ONE process (world size 1).
        delta["FORCE_TORCHRUN"] = "1"
    if options.nnodes > 1:
        if not options.master_addr or not options.master_port:
            raise UserError("a multi-node run needs --master-addr and --master-port")
        if not 0 <= options.node_rank < options.nnodes:
            raise UserError(f"node rank {options.node_rank} is outside 0..{options.nnodes - 1}")
        delta.update(NNODES=str(options.nnodes), NODE_RANK=str(options.node_rank),
                     MASTER_ADDR=options.master_addr, MASTER_PORT=str(options.master_port))
    elif options.master_port:
        delta["MASTER_PORT"] = str(options.master_port)
    if options.gpus is not None:
        ids = ",".join(str(g) for g in options.gpus)
        if platform == "rocm":
            # HIP honours HIP_VISIBLE_DEVICES; ROCR_VISIBLE_DEVICES filters one level below and an
            # inherited CUDA_VISIBLE_DEVICES is applied again by torch on ROCm, so filtering twice
            # would renumber devices: set exactly one selector.
            delta["HIP_VISIBLE_DEVICES"] = ids
            removed += [v for v in ("ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES") if v in base]
        else:
            delta["CUDA_VISIBLE_DEVICES"] = ids
    if platform == "cpu":
        delta.setdefault("CUDA_VISIBLE_DEVICES", "")  # never wander onto a GPU the user did not choose
    if fp8_engages(config):
        delta["ACCELERATE_MIXED_PRECISION"] = "fp8"
    delta.update(knob_env or {})
    delta.update(options.extra_env)
    return delta, removed


def find_llamafactory_cli(explicit: str | None = None) -> str:
    if explicit:
        return explicit
    sibling = Path(sys.executable).parent / "llamafactory-cli"
    if sibling.is_file() and os.access(sibling, os.X_OK):
        return str(sibling)
    found = shutil.which("llamafactory-cli")
    if not found:
        raise UserError("llamafactory-cli is not installed: pip install 'hipwizard[train]'")
    return found


def library_versions() -> dict[str, str]:
    """Installed versions from package metadata (nothing is imported)."""
    out = {"hipwizard": __version__, "python": sys.version.split()[0]}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def launch(run_dir: str | Path, options: LaunchOptions | None = None) -> RunManifest:
    """Start the run in RUN_DIR and return its manifest (already saved). Raises UserError on bad input."""
    options = options or LaunchOptions()
    run_dir = Path(run_dir).expanduser().resolve()
    config = read_config(run_dir)
    output_dir = output_dir_of(run_dir, config)
    refuse_links(run_dir)
    previous = load_manifest(run_dir)
    if previous is not None and is_running(previous):
        raise UserError(f"a run is already going in {run_dir} (pid {previous.pid}); stop it first")
    if options.auto_resume < 0:
        raise UserError("the number of automatic resumes must be 0 or more", field="auto_resume")
    checkpoint = _resume_point(run_dir, output_dir, previous) if options.resume else None
    platform = options.platform or detect_platform()
    delta, removed = build_environment(config, options, platform, os.environ, output_dir,
                                       knob_environment(read_knobs(run_dir), platform, run_dir))
    # The run's marker: the supervisor and everything it starts inherit it, and stop.py signals only
    # processes that carry it (a pid or group number alone may have been reused by someone else).
    token = secrets.token_hex(16)
    delta[RUN_ENV] = token
    env = {k: v for k, v in os.environ.items() if k not in removed}
    env.update(delta)
    command = [find_llamafactory_cli(options.llamafactory_cli), "train", CONFIG_NAME]
    if checkpoint is not None:
        command += resume_arguments(checkpoint)
    bin_dir = str(Path(command[0]).parent)
    if bin_dir not in env.get("PATH", "").split(os.pathsep):
        # llamafactory-cli runs `torchrun` by name: it must find the one installed beside it (the venv).
        delta["PATH"] = env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    argv = [sys.executable, "-m", "hipwizard.train.supervise", str(run_dir), "--", *command]
    log_path = run_dir / LOG_NAME
    try:
        (run_dir / EXIT_NAME).unlink(missing_ok=True)
        # A stop mark left by the previous run (stop, then resume) would call this one "stopped".
        (run_dir / STOP_NAME).unlink(missing_ok=True)
        clear_stall(run_dir)
        attempt = _record_attempt(run_dir, checkpoint)
        log = open_log(log_path, append=checkpoint is not None)
        if checkpoint is not None:  # one log for the whole run: each attempt starts with its mark
            log.write(f"\n{ATTEMPT_MARK}{attempt}: resuming from {checkpoint.path.name} (step {checkpoint.step})\n"
                      .encode())
            log.flush()
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # made a link after the check above
            raise UserError(_link_refusal(log_path)) from None
        raise UserError(f"cannot write in {run_dir}: {exc.strerror or exc}") from None
    with log:
        try:
            proc = subprocess.Popen(argv, cwd=run_dir, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            raise UserError(f"cannot start {argv[0]}: {exc}") from None
    _reap_in_background(proc)
    started = time.time()
    manifest = RunManifest(
        run_dir=str(run_dir), name=str(config.get("run_name") or run_dir.name), command=command, argv=argv,
        cwd=str(run_dir), env_delta=delta, env_removed=removed, pid=proc.pid, pgid=proc.pid,
        pid_create_time=_create_time(proc.pid), started=datetime.fromtimestamp(started, timezone.utc)
        .isoformat(timespec="seconds"), started_epoch=started, log=LOG_NAME, output_dir=str(output_dir),
        platform=platform, versions=library_versions(), run_token=token, attempt=attempt,
        auto_resume=options.auto_resume, stall=asdict(options.stall) if options.stall else None,
    )
    try:
        manifest.save()
    except OSError as exc:
        # A run nobody can find again must not keep going: take it down before reporting.

        kill_group(proc.pid)
        raise UserError(f"cannot record the run in {run_dir}: {exc.strerror or exc}") from None
    return manifest


# The files a launch, the supervisor and a stop write in a run directory.
RUN_FILES = (LOG_NAME, MANIFEST_NAME, EXIT_NAME, STOP_NAME, STALL_NAME, INCIDENT_NAME, INCIDENT_TEXT, ATTEMPTS_NAME)


def _resume_point(run_dir: Path, output_dir: Path, previous: RunManifest | None) -> Checkpoint:
    """The newest complete checkpoint of the run; ``UserError`` when it was never launched or has none."""
    if previous is None:
        raise UserError(f"{run_dir} was never launched: there is nothing to resume (launch it without resume)")
    checkpoint = newest_checkpoint(output_dir)
    if checkpoint is None:
        raise UserError(f"{output_dir} holds no complete checkpoint to resume from (save_steps sets how often "
                        f"the run saves one)", field="resume")
    return checkpoint


def _record_attempt(run_dir: Path, checkpoint: Checkpoint | None) -> int:
    """attempts.json for this start: a fresh launch starts the list over, a resume adds the next attempt
    (and keeps the last attempt's incident under its number)."""
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if checkpoint is None:
        for name in (INCIDENT_NAME, INCIDENT_TEXT):
            (run_dir / name).unlink(missing_ok=True)
        write_attempts(run_dir, [Attempt(1, now, "launch")])
        return 1
    attempts = read_attempts(run_dir)
    last = max((a.attempt for a in attempts), default=1)
    set_aside(run_dir, last)
    write_attempts(run_dir, attempts + [Attempt(last + 1, now, "resume", str(checkpoint.path), checkpoint.step)])
    return last + 1


def _link_refusal(path: Path) -> str:
    return (f"{path} is a symbolic link: hipwizard does not write through links in a run directory "
            f"(remove the link; its target is left as it is)")


def refuse_links(run_dir: Path) -> None:
    """``UserError`` when a file the run writes is a symbolic link: writing the log through it would
    truncate whatever it points to (a user's file)."""
    for name in RUN_FILES:
        if (run_dir / name).is_symlink():
            raise UserError(_link_refusal(run_dir / name))


def open_log(path: Path, *, append: bool = False):
    """``train.log`` opened for writing without following a link (O_NOFOLLOW: ELOOP on a link); a resume
    appends to it."""
    mode = os.O_APPEND if append else os.O_TRUNC
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | mode | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    return os.fdopen(fd, "wb")


def _create_time(pid: int) -> float:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return 0.0


def _reap_in_background(proc: subprocess.Popen) -> None:
    """Collect the exit status when the supervisor ends, so a long-lived TUI leaves no zombie."""
    threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()
