"""Headless run commands: ``hipwizard train run``, ``hipwizard runs``, ``hipwizard attach``, ``hipwizard stop``.

``train run`` launches detached (its own session) and then, unless ``--detach``, streams progress
lines; Ctrl-C there only stops watching — the run goes on (``hipwizard stop`` stops it).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from hipwizard import train
from hipwizard.errors import UserError
from hipwizard.textsafe import inert_line
from hipwizard.train import CONFIG_NAME, GPUS_HELP, parse_gpus
from hipwizard.workspace import Workspace

POLL_S = 1.0


def add_train_commands(train_sub) -> None:
    p = train_sub.add_parser("run", help="launch llamafactory-cli train from a run dir or config (detached)")
    p.add_argument("target", nargs="?", help="a run directory (with config.yaml) or a LLaMA-Factory config.yaml")
    p.add_argument("--demo", action="store_true", help="a short LoRA run on the tiny demo model, on CPU")
    p.add_argument("--detach", action="store_true", help="launch and return at once (see `hipwizard runs`)")
    p.add_argument("--gpus", metavar="N|IDS", help=f"{GPUS_HELP}; default: every visible device")
    p.add_argument("--nproc", type=int, help="processes per node (NPROC_PER_NODE)")
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("--master-addr")
    p.add_argument("--master-port", type=int)
    p.add_argument("--platform", choices=("rocm", "cuda", "cpu"), help="default: detected from /dev")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in RUN_DIR from its newest complete checkpoint (same log and loss curve)")
    p.add_argument("--auto-resume", type=int, default=0, metavar="N",
                   help="after a crash or a stall, resume from the newest checkpoint by itself, at most N times")
    p.add_argument("--stall-floor", type=float, metavar="SECONDS",
                   help=f"the run is stalled after no step for max({train.STALL_K:g} x the median step time, this); "
                        f"default {train.STALL_FLOOR_S:g}")
    p.add_argument("--nccl-debug", action="store_true",
                   help="run with NCCL_DEBUG=INFO (RCCL/NCCL's own account of its rings and collectives, in train.log)")
    p.add_argument("--workspace", default=".", metavar="DIR",
                   help="the workspace folder, which remembers the run (default: the current folder)")
    p.set_defaults(func=cmd_train_run)


def add_commands(sub) -> None:
    p = sub.add_parser("runs", help="list training runs (running, finished, failed, stopped)")
    p.add_argument("dirs", nargs="*", help="extra folders to search for run directories")
    p.add_argument("--json", action="store_true")
    p.add_argument("--workspace", default=".", metavar="DIR", help="the workspace folder (default: the current folder)")
    p.set_defaults(func=cmd_runs)
    p = sub.add_parser("attach", help="show a run's whole history, then follow it")
    p.add_argument("run_dir")
    p.add_argument("--no-follow", action="store_true", help="print the history and state, then exit")
    p.set_defaults(func=cmd_attach)
    p = sub.add_parser("stop", help="stop a run: graceful first, then its whole process group")
    p.add_argument("run_dir")
    p.add_argument("--grace", type=float, default=60.0, help="seconds to let the Trainer save (default 60)")
    p.set_defaults(func=cmd_stop)


# --- train run ------------------------------------------------------------------------------------
def _options(args):
    choice = parse_gpus(args.gpus)
    gpus = list(choice.ids) if choice and choice.ids is not None else None
    nproc = args.nproc
    if choice is not None and choice.ids is None:  # a count: that many processes on the visible devices
        if nproc is not None and nproc != choice.count:
            raise UserError(f"--gpus {choice.count} and --nproc {nproc} disagree: give one of them")
        nproc = choice.count
    return train.LaunchOptions(gpus=gpus, nproc_per_node=nproc, nnodes=args.nnodes, node_rank=args.node_rank,
                               master_addr=args.master_addr, master_port=args.master_port, platform=args.platform,
                               resume=args.resume, auto_resume=args.auto_resume,
                               stall=train.stall_policy(args.stall_floor),
                               extra_env=dict(train.NCCL_DEBUG_ENV) if args.nccl_debug else {})


def cmd_train_run(args) -> int:
    ws = Workspace.open(args.workspace)
    if args.demo == bool(args.target):
        raise UserError("give a run directory or config.yaml, or --demo (one of them)")
    if args.resume and args.demo:
        raise UserError("--resume continues a run directory: give it, not --demo")
    options = _options(args)
    if args.demo:
        if not train.demo_ready():  # built once, then reused: say so only when it happens
            print("building the tiny demo model (offline, once) ...", flush=True)
        launched = train.launch_demo(ws, options)
    else:
        try:
            launched = train.launch(ws, args.target, options)
        except train.LaunchRefused as exc:
            raise UserError(f"{exc.config_path}: cannot launch: {'; '.join(exc.problems)}"
                            f" (`hipwizard train plan {exc.config_path}` says more)") from None
    for warning in launched.warnings:
        print(f"hipwizard: warning: {inert_line(warning)}", file=sys.stderr)
    manifest = launched.manifest
    print(f"launched {manifest.name}: pid {manifest.pid}, log {manifest.log_path}", flush=True)
    if manifest.attempt > 1:
        print(f"attempt {manifest.attempt}: resuming from {manifest.command[3].split('=', 1)[-1]}", flush=True)
    if args.detach:
        print(f"follow it with `hipwizard attach {manifest.run_dir}`; stop it with `hipwizard stop {manifest.run_dir}`")
        return 0
    return follow(manifest.run_dir)


# --- following --------------------------------------------------------------------------------------
class _Errors:
    """Error lines already shown, and whether the log is inside a traceback: a traceback is not printed
    line by line (it can be 60 lines of LLaMA-Factory frames); the run's end names the cause in one line and
    the log file that holds the traceback."""

    def __init__(self) -> None:
        self.shown: set[str] = set()
        self.in_traceback = False
        self.last = None  # the scan's last line already looked at (the scan keeps a bounded window)
        self.alarms: set[tuple[str, int]] = set()  # (kind, step) of alarms already printed

    def new(self, lines: list) -> list:
        """The lines after the last one looked at (all of them when it has left the window)."""
        start = next((i + 1 for i in range(len(lines) - 1, -1, -1) if lines[i] is self.last), 0)
        self.last = lines[-1] if lines else self.last
        return lines[start:]

    def worth_showing(self, text: str) -> bool:
        if text.startswith("Traceback (most recent call last)"):
            self.in_traceback = True
        if self.in_traceback:
            if not text.startswith((" ", "\t", "Traceback")):  # the exception line ends it (chained ones reopen)
                self.in_traceback = text.startswith(("The above exception", "During handling"))
            return False
        if text in self.shown:
            return False
        self.shown.add(text)
        return True


def _print_new(watch, shown_points: int, errors: _Errors) -> int:
    for p in watch.history.points[shown_points:]:
        parts = [f"step {p.step}/{p.total_steps}" if p.total_steps else f"step {p.step}", f"loss {p.loss:.4f}"]
        if p.lr is not None:
            parts.append(f"lr {p.lr:.2e}")
        if p.elapsed_s is not None:
            parts.append(f"elapsed {train.fmt_duration(p.elapsed_s)}")
        print("  " + " · ".join(parts), flush=True)
    for line in errors.new(list(watch.scan.lines)):
        if line.level == "error" and errors.worth_showing(line.text):
            print(f"  ✖ {line.text}", flush=True)
    for alarm in watch.alarms():
        if (alarm.kind, alarm.step) not in errors.alarms:
            errors.alarms.add((alarm.kind, alarm.step))
            print(f"  ALARM {alarm.line()}", flush=True)
    return len(watch.history.points)


def follow(run_dir: str, *, poll_s: float = POLL_S, follow_live: bool = True) -> int:
    """Print the history so far, then new points, until the run ends. Exit code: 0 finished, 1 otherwise."""
    watch = train.watch(run_dir)
    errors = _Errors()
    shown = _print_new(watch, 0, errors)
    try:
        stall_shown = False
        while follow_live and (state := watch.state()) in train.LIVE_STATES:
            if (state == "stalled") != stall_shown:
                stall_shown = state == "stalled"
                print(_stall_lines(watch.run_dir) if stall_shown else "  ◐ steps came again: running", flush=True)
            time.sleep(poll_s)
            if watch.poll().reset:
                print("  (the run started over: history cleared)")
                shown, errors = 0, _Errors()
            shown = _print_new(watch, shown, errors)
    except KeyboardInterrupt:
        print(f"\nstopped watching; the run goes on. `hipwizard stop {run_dir}` stops it.")
        return 130
    watch.poll()
    _print_new(watch, shown, errors)
    return report_end(watch)


def _stall_lines(run_dir) -> str:
    """The stall alarm and, once captured, the incident's diagnosis and where its stacks are."""
    info = train.run_info(run_dir, with_progress=False)
    lines = [f"  ALARM ⏸ stalled: {info.stall or 'no new step'}"]
    incident = train.incident(run_dir)
    if incident is not None and incident.diagnosis is not None:
        lines += [f"  ✖ {incident.diagnosis.kind}: {inert_line(incident.diagnosis.line)}",
                  f"  fix: {incident.diagnosis.fix}", f"  stacks, GPU state, kernel log: {Path(run_dir) / 'incident.txt'}"]
    return "\n".join(lines)


def report_end(watch) -> int:
    state = watch.state()
    if state == "stalled":
        print(_stall_lines(watch.run_dir))
        print(f"  {watch.history.summary()}")
        return 1
    if watch.history.invalid_lines:
        print(f"  ⚠ {watch.history.invalid_lines} line(s) of trainer_log.jsonl were not valid records (skipped)")
    if state == "running":
        print(f"◐ running · {watch.history.summary()}")
        return 0
    if state == "finished":
        print(f"✔ finished · {watch.history.summary()}")
        return 0
    failure = watch.failure() if state in ("failed", "lost") else None
    if failure:  # the cause first, in one line; the traceback stays in the log, whose path is shown
        print(f"✖ {state}: {failure.line}")
        if failure.field:
            print(f"  look at: {failure.field} in {Path(watch.run_dir) / CONFIG_NAME}")
        print(f"  {watch.history.summary()}")
    else:
        print(f"{'■' if state == 'stopped' else '✖'} {state} · {watch.history.summary()}")
    if state in ("failed", "lost"):
        # A config the trainer rejected (a field to look at) is fixed in the config: the incident would repeat
        # the cause, and resuming would meet the same rejection.
        rejected = failure is not None and failure.field is not None
        incident = None if rejected else train.incident(watch.run_dir)
        if incident is not None and incident.diagnosis is not None:
            d = incident.diagnosis
            print(f"  incident: {d.kind}: {inert_line(d.line)}")
            for line in d.evidence[:4]:
                print(f"    {inert_line(line)}")
            print(f"  fix: {d.fix}")
            print(f"  stacks, GPU state, kernel log, NCCL lines: {Path(watch.run_dir) / 'incident.txt'}")
        print(f"  traceback and full output: {watch.manifest.log_path}")
        if not rejected:
            print(f"  resume it: hipwizard train run {watch.run_dir} --resume  (add --nccl-debug for RCCL's account)")
    return 1


# --- runs / attach / stop -----------------------------------------------------------------------------
def cmd_runs(args) -> int:
    ws = Workspace.open(args.workspace, must_exist=True)
    for d in args.dirs:
        if not Path(d).expanduser().is_dir():
            raise UserError(f"{d} {'is a file, not a folder' if Path(d).expanduser().exists() else 'does not exist'}"
                            " (give folders that hold run directories)")
    infos = train.list_runs(ws, [Path(d) for d in args.dirs])
    if args.json:
        print(json.dumps([i.to_json() for i in infos], indent=2))
        return 0
    if not infos:
        print(f"no runs under {ws.runs_dir} (launch one with `hipwizard train run`)")
        return 0
    for i in infos:
        progress = f"step {i.step}/{i.total_steps}" if i.step is not None else "no step yet"
        loss = f" · loss {i.loss:.4g}" if isinstance(i.loss, (int, float)) else ""
        attempt = f" · attempt {i.attempt}" if i.attempt > 1 else ""
        print(f"{i.symbol} {i.state:<9} {i.name:<28} {progress}{loss}{attempt} · {i.run_dir}")
        if i.stall:
            print(f"    ALARM stalled: {i.stall}")
        if i.cause:
            print(f"    cause: {i.cause}")
        if i.incident:
            print(f"    incident: {inert_line(i.incident)} (see {Path(i.run_dir) / 'incident.txt'})")
    return 0


def cmd_attach(args) -> int:
    return follow(args.run_dir, follow_live=not args.no_follow)


def cmd_stop(args) -> int:
    train.check_grace(args.grace)
    manifest = train.launched_manifest(args.run_dir)
    print(f"stopping {manifest.name} (graceful for up to {args.grace:g} s) ...", flush=True)
    result = train.stop(args.run_dir, grace_s=args.grace)
    if not result.was_running:
        print("the run's processes are gone; nothing was signalled")
        return 0
    for step in result.steps:
        print(f"  {step}")
    if result.survivors:
        print(f"✖ still alive: pids {', '.join(map(str, result.survivors))}", file=sys.stderr)
        return 1
    print(f"■ stopped in {result.elapsed_s:.1f} s; no process of the run is left")
    return 0
