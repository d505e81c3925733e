"""Run the advisor's top candidates for a few real steps each and measure them: ``hipwizard train calibrate``.

For each candidate a run directory is written under ``runs/calibrate-<time>/`` (the user's YAML with the
candidate's settings, ``max_steps`` = steps, ``logging_steps`` 1, one checkpoint, no eval), launched through
the real launcher (detached, ``RECORD_VRAM=1``) and watched:

- step arrivals: trainer_log.jsonl polled every ``POLL_S``; the steady step time is the mean over the steps
  after ``warmup`` (start-up, compilation and the allocator's growth are in the first ones);
- start-up: launch to the first steady step, less the steady steps up to it; launch to the first logged step
  is kept beside it (``steady_timing``);
- one checkpoint: ``save_steps`` puts exactly one save inside the steady window (``save_step``, when it holds
  at least four steps): the step after it arrives late by the save's cost (that interval less the median); the
  trainer's own clock — its "Saving model checkpoint" log line to the last file the save wrote (``save_span``) —
  is its lower bound, and is taken instead where the interval's excess is within the step noise
  (``checkpoint_cost``);
- tokens/s: ``throughput.steady_rate`` over the same steps: trainer_log's ``total_tokens`` (real tokens with
  ``include_num_input_tokens_seen: non_padding``, which calibration sets where the user's config sets no count;
  padding included with ``true``); without it the samples of each
  step (the short last step of an epoch as it is, from the trainer's banner) x ``seq``;
- peak device memory: ``hipwizard.gpu`` telemetry every 0.2 s, minus what was in use before the run (what
  decides an OOM); RECORD_VRAM's torch max allocated / reserved beside it. No GPU (CPU runs): no peak.

``should_stop()`` is checked between polls; when it turns true the run in flight is stopped (its whole
process group) and the calibration so far is returned, marked ``stopped``. So is a KeyboardInterrupt.
A candidate that fails (e.g. out of memory) is recorded as failed with its cause: the advisor then drops it.
"""

from __future__ import annotations

import json
import platform as _platform
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from ruamel.yaml.comments import CommentedMap

from hipwizard.errors import UserError
from hipwizard.gpu import GpuTelemetry
from hipwizard.progress import Progress, ProgressFn
from hipwizard.train.calibration.corrections import Calibration, Measurement, compute_seconds, knobs_of, per_token_gib
from hipwizard.train.planning.advisor import Candidate
from hipwizard.train.run.failure import diagnose_run
from hipwizard.train.run.history import parse_duration
from hipwizard.train.run.launcher import LaunchOptions, launch, read_config
from hipwizard.train.run.rundir import save_run_dir
from hipwizard.train.run.runs import is_running
from hipwizard.train.run.stop import stop_run
from hipwizard.train.run.tail import TrainerLogTail
from hipwizard.train.run.throughput import banner_of, steady_rate, token_count_mode

POLL_S = 0.05
TELEMETRY_S = 0.2
RUN_TIMEOUT_S = 900.0


class GpuPeak:
    """Device memory in use (GiB) on the run's GPU, through hipwizard's telemetry; ``None`` without one."""
    def __init__(self, index: int = 0) -> None:

        self.telemetry, self.index = GpuTelemetry(), index
        self.name = ""
        self.total_gib: float | None = None

    def used_gib(self) -> float | None:
        try:
            reading = self.telemetry.sample()
        except Exception:  # telemetry must never take the calibration down
            return None
        for s in reading.samples:
            if s.index == self.index and s.vram_used is not None:
                self.name = s.name or self.name
                self.total_gib = s.vram_total / 2**30 if s.vram_total else self.total_gib
                return s.vram_used / 2**30
        return None


def save_step(steps: int, warmup: int) -> int | None:
    """The step whose checkpoint the calibration times: inside the steady window, with at least two other steady
    step intervals beside the one it delays (their median is the step time it is measured against), and the only
    multiple of itself before the last step (one save; the last step's own save is after the timing). None when
    the window is too short."""
    if steps - warmup - 1 < 3:
        return None
    return max(warmup + 1, steps // 2 + 1)


def _candidate_config(cand: Candidate, steps: int, save_at: int | None):
    return cand.config.model_copy(update={
        "max_steps": steps, "logging_steps": 1, "save_steps": save_at or 10**9, "output_dir": "output",
        "overwrite_output_dir": True, "plot_loss": False, "report_to": "none", "val_size": 0.0,
        "resume_from_checkpoint": None})


def counting_real_tokens(document: CommentedMap | None) -> CommentedMap:
    """``document`` with ``include_num_input_tokens_seen: non_padding`` where it sets no count: every candidate is
    then timed in real tokens, so one that pads less (length-grouped batches) shows its gain, and a short window of
    long or short batches is not read as a slow or fast config. A count the user set is kept."""
    doc = CommentedMap() if document is None else CommentedMap(document)
    if doc.get("include_num_input_tokens_seen") in (None, False, "no"):
        doc["include_num_input_tokens_seen"] = "non_padding"
    return doc


def measure(cand: Candidate, run_dir: Path, document, base_dir: Path, *, steps: int, warmup: int,
            options: LaunchOptions, seq_len: int, should_stop: Callable[[], bool], gpu: GpuPeak | None,
            on_step: Callable[[int], None] | None = None) -> tuple[Measurement, bool]:
    """Run one candidate; (its measurement, whether a stop was asked for)."""
    save_at = save_step(steps, warmup)
    config = _candidate_config(cand, steps, save_at)
    save_run_dir(run_dir, config, counting_real_tokens(document), base_dir=base_dir)
    m = Measurement(cand.label, knobs_of(cand.config), False, predicted_step_s=cand.throughput.step_seconds,
                    predicted_compute_s=compute_seconds(cand.throughput), predicted_peak_gib=cand.estimate.total_gib,
                    predicted_per_token_gib=per_token_gib(cand.estimate), run_dir=str(run_dir))
    before = gpu.used_gib() if gpu else None
    peak = before
    start = time.monotonic()
    manifest = launch(run_dir, options)
    tail = TrainerLogTail(manifest.trainer_log_path)
    arrivals: dict[int, float] = {}
    records: dict[int, dict] = {}
    try:
        stopped, seen = _follow(manifest, tail, arrivals, records, gpu, should_stop, on_step, start, m)
    except BaseException:  # Ctrl-C or a crash here must not leave the run going: no orphans
        stop_run(manifest, grace_s=5.0)
        raise
    peak = max([p for p in (peak, seen) if p is not None], default=None)
    for rec in tail.poll().records:
        if isinstance(rec.get("current_steps"), int):
            arrivals.setdefault(rec["current_steps"], time.monotonic())
            records.setdefault(rec["current_steps"], rec)
    m.wall_s, m.steps = time.monotonic() - start, max(arrivals, default=0)
    m.allocated_gib = max((r.get("vram_allocated") or 0 for r in records.values()), default=None) or None
    m.reserved_gib = max((r.get("vram_reserved") or 0 for r in records.values()), default=None) or None
    if before is not None and peak is not None and peak > before:
        m.peak_gib = round(peak - before, 3)
    steady = sorted(s for s in arrivals if s > warmup)
    if len(steady) >= 2:
        first, last = steady[0], steady[-1]
        timing = steady_timing(arrivals, warmup=warmup, save_at=save_at, start=start)
        if timing.step_s <= 0:  # the steps reached the log together (a fast run, one poll): the trainer's own clock,
            span = _trainer_span(run_dir, records, first, last)  # warm-up included when only that is left
            timing = steady_timing(arrivals, warmup=warmup, save_at=None, start=start,
                                   step_s=span / (last - first) if span > 0 else 0.0)
        if timing.step_s > 0:
            m.step_s = step_s = timing.step_s
            m.first_step_s, m.startup_s = timing.first_step_s, timing.startup_s
            m.checkpoint_s, m.checkpoint_step = timing.checkpoint_s, timing.checkpoint_step
            written = save_span(run_dir / "output" / f"checkpoint-{save_at}", manifest.log_path) if save_at else None
            if written is not None:  # the trainer's own clock (file times): the save took at least this long
                m.checkpoint_s = checkpoint_cost(m.checkpoint_s, written, timing.noise_s)
                m.checkpoint_step = save_at
            m.tokens_per_s = _tokens_per_s(run_dir, manifest.log_path, records, first, last, step_s, seq_len,
                                           cand.config.effective_batch(options.nproc_per_node or 1) * seq_len)
            m.ok = True
        else:
            m.error = (f"the {len(steady)} steady steps reached the log at once: too fast to time "
                       "(give it more steps)")
    if not m.ok and not m.error:

        failure = diagnose_run(manifest)
        m.error = ("stopped" if stopped else failure.line if failure else
                   f"only {len(steady)} steady step(s) logged (give it more than {warmup + 2} steps)")
    return m, stopped


def _trainer_span(run_dir: Path, records: dict, first: int, last: int) -> float:
    """Seconds the trainer itself took from step ``first`` to ``last``: from the log's elapsed times (1 s
    resolution), else pro rata from its final ``train_runtime`` (output/train_results.json); 0 when unknown."""
    start, end = (parse_duration(records[s].get("elapsed_time")) for s in (first, last))
    if start is not None and end is not None and end > start:
        return end - start
    try:
        results = json.loads((run_dir / "output" / "train_results.json").read_text(encoding="utf-8"))
        runtime, steps = float(results["train_runtime"]), max(records)
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0
    return runtime * (last - first) / steps if runtime > 0 and steps else 0.0


@dataclass(frozen=True)
class Timing:
    """What a run's step arrivals say: the steady step time and the costs beyond it (None: not measured)."""

    step_s: float
    first_step_s: float | None = None
    startup_s: float | None = None
    checkpoint_s: float | None = None
    checkpoint_step: int | None = None
    noise_s: float = 0.0  # the steady intervals' median absolute deviation (the clock's poll included)


def checkpoint_cost(interval_s: float | None, files_s: float | None, noise_s: float) -> float | None:
    """One save's cost from its two clocks: the step interval that holds it (less the median step) and the span of
    its file times (a lower bound). The interval, unless its excess over the files is within 3 x the step noise:
    then it cannot tell the save from the noise (a small save on a busy machine) and the files' span is taken."""
    if interval_s is None or files_s is None:
        return interval_s if files_s is None else files_s
    return interval_s if interval_s - files_s > 3 * noise_s else files_s


def _median(values: list[float]) -> float:
    s = sorted(values)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def steady_timing(arrivals: dict[int, float], *, warmup: int, save_at: int | None, start: float,
                  step_s: float | None = None) -> Timing:
    """Time a run from its step arrivals (step -> seconds on the clock ``start`` was read from; launch at ``start``).

    - step time: the mean over the steady steps (after ``warmup``), the interval that holds the timed save left out;
    - checkpoint: the step after ``save_at`` arrives late by the save: that interval less the median of the others;
    - start-up: launch to the first steady step less the steady steps up to it (``first`` x step time): model
      load, data, compilation and slow warm-up steps; first step: launch to the first logged step, as seen.
    ``step_s`` given (a run too fast for the clock, timed by the trainer): no checkpoint, start-up from the last
    arrival (the one the clock stamps best when the steps came in a burst)."""
    steady = sorted(s for s in arrivals if s > warmup)
    if len(steady) < 2:
        return Timing(0.0)
    first, last = steady[0], steady[-1]
    first_step = arrivals[min(arrivals)] - start
    if step_s is not None:
        startup = arrivals[last] - start - last * step_s if step_s > 0 else None
        return Timing(step_s, first_step, None if startup is None else max(0.0, startup))
    gaps = {s: arrivals[s] - arrivals[s - 1] for s in steady[1:] if s - 1 in arrivals}
    held = save_at + 1 if save_at is not None and first <= save_at and save_at + 1 in gaps else None
    others = [g for s, g in gaps.items() if s != held]
    span = arrivals[last] - arrivals[first]
    if held is None or len(others) < 2:
        mean = span / (last - first)
        return Timing(mean, first_step, max(0.0, arrivals[first] - start - first * mean) if mean > 0 else None)
    mean = (span - gaps[held]) / (last - first - 1)
    if mean <= 0:
        return Timing(0.0)
    median = _median(others)
    return Timing(mean, first_step, max(0.0, arrivals[first] - start - first * mean),
                  max(0.0, gaps[held] - median), save_at, _median([abs(g - median) for g in others]))


SAVE_LINE = re.compile(r"\] (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) >> Saving model checkpoint to (\S+)")


def save_started(log_path: Path, folder: Path) -> float | None:
    """When the trainer began saving ``folder``: its own log line "Saving model checkpoint to output/checkpoint-N"
    (transformers' first act of a save, stamped to the millisecond in the machine's local time); None unread."""
    try:
        text = log_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for stamp, where in SAVE_LINE.findall(text):
        if Path(where).name == folder.name:
            return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return None


def save_span(folder: Path, log_path: Path | None = None) -> float | None:
    """Seconds a checkpoint save took by the trainer's own clock: from its "Saving model checkpoint" log line (else
    the first file it wrote) to the last file it wrote (modification times, every file under ``folder``: DeepSpeed's
    shards too); None without files. A lower bound of the save's cost: work after its last file is not in it."""
    try:
        times = [p.stat().st_mtime for p in folder.rglob("*") if p.is_file()]
    except OSError:
        return None
    if not times:
        return None
    began = save_started(log_path, folder) if log_path is not None else None
    start = began if began is not None and began <= min(times) + 1.0 else min(times)
    return max(0.0, max(times) - start) if began is not None or len(times) >= 2 else None


def _tokens_per_s(run_dir: Path, log_path: Path, records: dict, first: int, last: int, step_s: float,
                  seq_len: int, full_step_tokens: float) -> float | None:
    """Tokens/s of the steps after ``first`` up to ``last`` (``throughput.steady_rate``): the trainer's count
    when it logged one, else each step's samples (the epoch's cut from the trainer's banner) x ``seq_len``."""
    try:
        config = read_config(run_dir)
    except UserError:  # the run's own config.yaml, written above: unreadable only if it was taken away
        config = {}
    tokens = {s: r.get("total_tokens") for s, r in records.items()}
    counted = all(isinstance(tokens.get(s), (int, float)) for s in (first, last))
    shape = banner_of(log_path, drop_last=bool(config.get("dataloader_drop_last")))
    rate = steady_rate({first: 0.0, last: step_s * (last - first)}, first, last,
                       total_tokens=tokens if counted else None,
                       token_count=token_count_mode(config.get("include_num_input_tokens_seen")), shape=shape,
                       sample_tokens=None if counted else seq_len, full_step_tokens=full_step_tokens)
    return rate.tokens_per_s if rate else None


def _follow(manifest, tail, arrivals: dict, records: dict, gpu: GpuPeak | None, should_stop, on_step,
            start: float, m: Measurement) -> tuple[bool, float | None]:
    """Poll the run until it ends, stamping step arrivals and sampling memory: (stopped, peak GiB in use)."""
    last_tel, peak = 0.0, None
    while True:
        now = time.monotonic()
        for rec in tail.poll().records:
            step = rec.get("current_steps")
            if isinstance(step, int) and step not in arrivals:
                arrivals[step], records[step] = now, rec
                if on_step:
                    on_step(step)
        if gpu and now - last_tel >= TELEMETRY_S:
            used, last_tel = gpu.used_gib(), now
            if used is not None:
                peak = used if peak is None else max(peak, used)
        if should_stop():
            stop_run(manifest, grace_s=5.0)
            return True, peak
        if not is_running(manifest):
            return False, peak
        if now - start > RUN_TIMEOUT_S:
            stop_run(manifest, grace_s=5.0)
            m.error = f"no end after {RUN_TIMEOUT_S:.0f} s: stopped"
            return False, peak
        time.sleep(POLL_S)


def run_calibration(plan_advice, *, config_path: Path, document, base_dir: Path, runs_dir: Path, key: dict,
                    candidates: int, steps: int, warmup: int, options: LaunchOptions, seq_len: int,
                    versions: dict[str, str], ceiling_tflops: float | None = None,
                    progress: ProgressFn | None = None,
                    should_stop: Callable[[], bool] = lambda: False, extra: list[Candidate] | None = None) -> Calibration:
    """Measure the top ``candidates`` of ``plan_advice`` (an ``Advice``), then each of ``extra`` (knob trials) not
    among them; returns the ``Calibration``.
    (Checkpoints: one save inside the steady window, ``save_step``, is timed; the one transformers writes after
    the last step is outside the timing.)"""
    ranked = [c for c in plan_advice.ranked][:candidates]
    if not ranked:
        ranked = [plan_advice.baseline] if plan_advice.baseline else []
    seen = [knobs_of(c.config) for c in ranked]
    ranked += [c for c in extra or [] if knobs_of(c.config) not in seen]
    cal = Calibration(key=key, machine=_platform.node(), versions=versions, ceiling_tflops=ceiling_tflops,
                      created=datetime.now(timezone.utc).isoformat(timespec="seconds"), config_path=str(config_path))
    folder = runs_dir / f"calibrate-{time.strftime('%Y%m%d-%H%M%S')}"
    gpu: GpuPeak | None = GpuPeak((options.gpus or [0])[0])
    if gpu is not None and gpu.used_gib() is None:
        gpu = None
    total = len(ranked) * steps
    t0 = time.monotonic()
    try:
        for i, cand in enumerate(ranked):
            done = i * steps

            def on_step(step: int, done=done, label=cand.label) -> None:
                if progress:
                    progress(Progress("calibrating", done + min(step, steps), total, label))

            if progress:
                progress(Progress("calibrating", done, total, f"{i + 1}/{len(ranked)} starting: {cand.label}"))
            m, stopped = measure(cand, folder / f"{i + 1}", document, base_dir, steps=steps, warmup=warmup,
                                 options=options, seq_len=seq_len, should_stop=should_stop, gpu=gpu, on_step=on_step)
            cal.measurements.append(m)
            if stopped:
                cal.stopped = True
                break
    except KeyboardInterrupt:
        cal.stopped = True
    cal.wall_s = time.monotonic() - t0
    if progress:
        progress(Progress("calibrating", total, total, "done" if not cal.stopped else "stopped"))
    return cal
