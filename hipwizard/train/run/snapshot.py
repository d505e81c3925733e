"""A frozen picture of a run for the run view: built in a worker thread, drawn on the UI thread.

``RunSnapshot`` holds copies (never the live lists a tail is appending to) and series already
thinned to at most ``MAX_PLOT_POINTS`` so drawing costs the same for a 10-step and a 1M-step run.
``GpuHistory`` keeps the last minutes of VRAM and utilisation per device for the sparklines.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Sequence

import psutil

from hipwizard.gpu.sample import GpuReading
from hipwizard.train.run.alarms import detect_alarms, metric_points
from hipwizard.train.run.classify import Diagnosis
from hipwizard.train.run.failure import Failure
from hipwizard.train.run.incident import read_incident
from hipwizard.train.run.logscan import LogLine
from hipwizard.train.run.stall import read_stall
from hipwizard.train.run.throughput import SteadyRate
from hipwizard.train.run.watch import RunWatch

MAX_PLOT_POINTS = 400
Series = list[tuple[float, float]]


def thin(series: Sequence[tuple[float, float]], limit: int = MAX_PLOT_POINTS) -> Series:
    """At most ``limit`` points, evenly picked, always keeping the last one."""
    if len(series) <= limit:
        return list(series)
    step = len(series) / limit
    out = [series[int(i * step)] for i in range(limit - 1)]
    out.append(series[-1])
    return out


@dataclass(frozen=True)
class HostSample:
    cpu_pct: float
    ram_used: int
    ram_total: int


def host_sample() -> HostSample:
    vm = psutil.virtual_memory()
    return HostSample(psutil.cpu_percent(interval=None), vm.total - vm.available, vm.total)


class GpuHistory:
    """Per-device rolling history: (vram fraction, util %) over the last ``keep`` samples."""

    def __init__(self, keep: int = 120):
        self.keep = keep
        self.vram: dict[int, deque[float]] = {}
        self.util: dict[int, deque[float]] = {}

    def add(self, reading: GpuReading) -> None:
        for s in reading.samples:
            self.vram.setdefault(s.index, deque(maxlen=self.keep)).append(s.vram_fraction or 0.0)
            self.util.setdefault(s.index, deque(maxlen=self.keep)).append(s.util_pct or 0.0)

    def copy(self) -> dict[int, tuple[list[float], list[float]]]:
        return {i: (list(self.vram[i]), list(self.util.get(i, ()))) for i in self.vram}


@dataclass(frozen=True)
class RunSnapshot:
    name: str
    state: str
    summary: str
    step: int = 0
    total_steps: int | None = None
    epoch: float | None = None
    elapsed_s: float | None = None
    remaining_s: float | None = None
    tokens_per_s: float | None = None
    tokens_per_s_avg: float | None = None
    steps_per_s: float | None = None
    grad_norm: float | None = None
    loss: Series = field(default_factory=list)
    loss_smooth: Series = field(default_factory=list)
    eval_loss: Series = field(default_factory=list)
    lr: Series = field(default_factory=list)
    lines: tuple[LogLine, ...] = ()
    warnings: int = 0
    errors: int = 0
    invalid_lines: int = 0
    sampled: bool = False
    failure: Failure | None = None
    gpu: GpuReading | None = None
    gpu_history: dict[int, tuple[list[float], list[float]]] = field(default_factory=dict)
    run_vram: dict[int, int | None] = field(default_factory=dict)  # device -> VRAM of the run's processes
    host: HostSample | None = None
    vram_peak_gb: float | None = None
    alarms: tuple[str, ...] = ()  # alarms.Alarm.line() of each alarm so far
    steady_tokens_per_s: float | None = None  # median window rate after the first records (``steady_rate``)
    steady_rate: SteadyRate | None = None  # that window: how its tokens were counted, samples/s, short steps
    utilisation: str = ""  # "412 TFLOP/s, MFU 54% of measured GEMM, 42% of spec" (empty when unknown)
    stall: str = ""  # stall.StallVerdict.line() while the run is stalled
    incident: Diagnosis | None = None  # the diagnosis captured when it stalled or failed (incident.txt has all)
    attempt: int = 1


def snapshot(watch: RunWatch, state: str, *, gpu: GpuReading | None = None, gpu_history: GpuHistory | None = None,
             host: HostSample | None = None, run_pids: set[int] | None = None,
             failure_of: Callable[[], Failure | None] | None = None, keep_lines: int = 200,
             ceiling=None) -> RunSnapshot:
    """Copy what the view shows out of ``watch`` (call from the thread that polls it)."""
    h, scan = watch.history, watch.scan
    last = h.last
    failure = (failure_of or watch.failure)() if state in ("failed", "lost") else None
    verdict = read_stall(watch.run_dir, watch.manifest.trainer_log_path) if state == "stalled" else None
    incident = read_incident(watch.run_dir) if state in ("stalled", "failed", "lost") else None
    run_vram = {}
    if gpu is not None and run_pids:
        run_vram = {s.index: s.vram_of(run_pids) for s in gpu.samples}
    peaks = [p.vram_reserved_gb for p in h.points if p.vram_reserved_gb is not None]
    metrics = metric_points(h.points, scan.grad_by_key)
    window = watch.steady()
    steady = window.tokens_per_s if window is not None and window.counted != "(every step a full batch)" else None
    now = h.current_tokens_per_s
    gpu_name = next((s.name for s in gpu.samples if s.name), "") if gpu is not None else ""
    return RunSnapshot(
        name=watch.manifest.name, state=state, summary=h.summary(),
        step=last.step if last else 0, total_steps=last.total_steps if last else None,
        epoch=last.epoch if last else None, elapsed_s=last.elapsed_s if last else None,
        remaining_s=last.remaining_s if last else None,
        tokens_per_s=h.current_tokens_per_s, tokens_per_s_avg=h.average_tokens_per_s,
        steps_per_s=h.current_steps_per_s, grad_norm=scan.last_grad_norm,
        loss=thin(h.loss), loss_smooth=thin(h.smoothed_loss), eval_loss=thin(h.eval_loss), lr=thin(h.lr),
        lines=tuple(list(scan.lines)[-keep_lines:]), warnings=scan.warnings, errors=scan.errors,
        invalid_lines=h.invalid_lines, sampled=h.sampled, failure=failure, gpu=gpu,
        gpu_history=gpu_history.copy() if gpu_history else {}, run_vram=run_vram, host=host,
        vram_peak_gb=max(peaks) if peaks else None,
        alarms=tuple(a.line() for a in detect_alarms(metrics)), steady_tokens_per_s=steady, steady_rate=window,
        utilisation=watch.utilisation(rate, ceiling=ceiling, gpu_name=gpu_name) if (rate := steady or now) else "",
        stall=verdict.line() if verdict else "", incident=incident.diagnosis if incident else None,
        attempt=watch.manifest.attempt,
    )
