"""Text of the run view's panels, from a ``RunSnapshot``: status, progress, rates, GPU/host, log lines.

Pure functions returning Rich ``Text`` so the screen module stays layout and wiring. Every state has a
symbol and a word, never colour alone.
"""

from __future__ import annotations

from rich.text import Text

from hipwizard.train import RunSnapshot, fmt_duration
from hipwizard.units import fmt_bytes

STATE_STYLE = {"running": ("◐", "bold cyan"), "stalled": ("⏸", "bold magenta"), "finished": ("✔", "bold green"), "failed": ("✖", "bold red"),
               "stopped": ("■", "bold yellow"), "lost": ("?", "bold red"), "not launched": ("○", "dim"),
               "stopping": ("◌", "bold yellow")}
SPARK = "▁▂▃▄▅▆▇█"


def spark(values: list[float], width: int = 16, top: float = 1.0) -> str:
    """A sparkline of the last ``width`` values on a 0..top scale."""
    vals = values[-width:]
    if not vals:
        return ""
    return "".join(SPARK[min(len(SPARK) - 1, max(0, int(v / top * (len(SPARK) - 1) + 0.5)))] for v in vals)


def bar(fraction: float, width: int = 24) -> str:
    filled = int(round(max(0.0, min(1.0, fraction)) * width))
    return "█" * filled + "░" * (width - filled)


def status_text(snap: RunSnapshot, state: str | None = None) -> Text:
    state = state or snap.state
    sym, style = STATE_STYLE.get(state, ("·", ""))
    t = Text()
    t.append(f"{sym} {state}", style=style)
    t.append(f"  {snap.name}", style="bold")
    t.append(f"  ·  {snap.summary}")
    return t


def progress_text(snap: RunSnapshot, bar_width: int = 24) -> Text:
    total = snap.total_steps or 0
    frac = snap.step / total if total else 0.0
    t = Text(bar(frac, bar_width), style="green")
    t.append(f" {frac * 100:5.1f}%  step {snap.step}/{total or '?'}")
    if snap.epoch is not None:
        t.append(f"  ·  epoch {snap.epoch:.3g}")
    t.append(f"  ·  elapsed {fmt_duration(snap.elapsed_s)}  ·  remaining {fmt_duration(snap.remaining_s)}")
    return t


def rates_text(snap: RunSnapshot) -> Text:
    parts = []
    if snap.tokens_per_s is not None:
        parts.append(f"tokens/s {snap.tokens_per_s:,.0f} now")
    rate = snap.steady_rate
    if snap.steady_tokens_per_s is not None:
        how = "" if rate is None else " (real)" if rate.real_tokens_per_s is not None else " (incl. padding)"
        parts.append(f"{snap.steady_tokens_per_s:,.0f} steady{how}")
    elif rate is not None and rate.samples_per_s is not None:
        parts.append(f"samples/s {rate.samples_per_s:,.3g} steady")
    if snap.tokens_per_s_avg is not None:
        parts.append(f"{snap.tokens_per_s_avg:,.0f} average")
    if snap.steps_per_s is not None:
        parts.append(f"{snap.steps_per_s:.2f} steps/s")
    if snap.grad_norm is not None:
        parts.append(f"grad_norm {snap.grad_norm:.4g}")
    if snap.vram_peak_gb is not None:
        parts.append(f"peak VRAM (torch) {max(snap.vram_peak_gb, 0.0) + 0.0:.1f} GB")  # never "-0.0"
    t = Text("  ·  ".join(parts) or "○ waiting for the first logged step")
    if snap.warnings:
        t.append(f"  ·  ⚠ {snap.warnings} warning(s)", style="yellow")
    if snap.invalid_lines:
        t.append(f"  ·  ⚠ {snap.invalid_lines} unreadable log line(s) skipped", style="yellow")
    if snap.sampled:
        t.append("  ·  older history sampled", style="dim")
    if snap.utilisation:
        t.append(f"\n{snap.utilisation}")
    for line in snap.alarms[-4:]:
        t.append(f"\nALARM {line}", style="bold red" if line.startswith("✖") else "bold yellow")
    return t


def failure_text(snap: RunSnapshot) -> Text | None:
    """The cause of a failure, the stall alarm, and the incident captured for either (with its fix and keys)."""
    if snap.failure is None and not snap.stall and snap.incident is None:
        return None
    t = Text()
    if snap.stall:
        t.append("⏸ STALLED: ", style="bold magenta")
        t.append(snap.stall)
    if snap.failure is not None:
        t.append("\n" if t else "")
        t.append("✖ cause: ", style="bold red")
        t.append(snap.failure.line)
        if snap.failure.field:
            t.append("  →  look at ", style="dim")
            t.append(snap.failure.field, style="bold")
    d = snap.incident
    if d is not None:
        t.append("\n" if t else "")
        t.append(f"✖ incident: {d.kind}: ", style="bold red")
        t.append(d.line)
        for line in d.evidence[:3]:
            t.append(f"\n    {line[:160]}", style="dim")
        t.append(f"\n  fix: {d.fix}")
    if snap.stall or snap.incident is not None or snap.state in ("failed", "lost"):
        t.append("\n  stacks, GPU state, kernel log: incident.txt in the run folder  ·  "
                 "R resumes from the last checkpoint  ·  N runs again with NCCL_DEBUG=INFO", style="dim")
    return t


def gpu_text(snap: RunSnapshot) -> Text:
    t = Text()
    reading = snap.gpu
    if reading is None:
        t.append("GPU  ○ sampling …\n", style="dim")
    elif not reading.samples:
        t.append(f"GPU  ○ no telemetry (source: {reading.source})\n", style="dim")
        if reading.notes:
            t.append(f"  {reading.notes[-1][:120]}\n", style="dim")
    else:
        t.append(f"GPU  source: {reading.source}\n", style="bold")
        for s in reading.samples:
            vram_hist, util_hist = snap.gpu_history.get(s.index, ([], []))
            frac = s.vram_fraction
            name = f" {s.name[:16]}" if s.name else ""
            t.append(f" {s.index}{name} VRAM {fmt_bytes(s.vram_used)}/{fmt_bytes(s.vram_total)}")
            t.append(f" {frac * 100:.0f}% " if frac is not None else " ")
            t.append(spark(vram_hist, width=10), style="cyan")
            util = f"{s.util_pct:.0f}%" if s.util_pct is not None else "—"
            t.append(f"  util {util} ")
            t.append(spark(util_hist, width=10, top=100.0), style="magenta")
            if s.index in snap.run_vram and snap.run_vram[s.index] is not None:
                t.append(f"  this run {fmt_bytes(snap.run_vram[s.index])}")
            t.append("\n")
    if snap.host is not None:
        h = snap.host
        t.append(f"host CPU {h.cpu_pct:.0f}%  ·  RAM {fmt_bytes(h.ram_used)}/{fmt_bytes(h.ram_total)}\n")
    return t


def log_line_text(text: str, level: str) -> Text:
    if level == "error":
        return Text("✖ " + text, style="bold red")
    if level == "warn":
        return Text("⚠ " + text, style="yellow")
    return Text("  " + text)
