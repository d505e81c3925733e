"""The report as a list of blocks, built once from ``collect``'s record (``sections.Record``) and rendered as
HTML or Markdown: this is where the records become text.

Blocks (tuples): ``("h1"|"h3", text)``, ``("h2", text, section id)``, ``("p", text)``, ``("note", text)``, ``("table", headers, rows)``,
``("chart", name, svg)`` and ``("stamp", fingerprint)``. Every step section starts with its environment
stamp; state is always written as a word or symbol, never by colour alone.
"""

from __future__ import annotations

from hipwizard.doctor import describe_stamp
from hipwizard.report import plots
from hipwizard.report.sections import (
    CalibrationSection,
    DoctorSection,
    ParitySection,
    PortSection,
    Record,
    TrainSection,
    Unreadable,
)

STATUS = {"pass": "✔ pass", "ok": "✔ ok", "warn": "⚠ warn", "fail": "✖ fail", "skip": "– skip", "n/a": "– n/a",
          "unknown": "? unknown", "info": "ℹ info", "invalid": "✖ invalid"}


def _num(v, fmt: str = "{:.4g}") -> str:
    return fmt.format(v) if isinstance(v, (int, float)) else "—"


def build(record: Record) -> list[tuple]:
    blocks: list[tuple] = [("h1", record.title),
                           ("p", f"Generated {record.generated} by hipwizard {record.hipwizard} for the "
                                 f"workspace {record.workspace}."),
                           ("stamp", record.environment)]
    blocks += _summary(record)
    blocks += _doctor(record.doctor)
    blocks += _port(record.port)
    blocks += _parity(record.parity)
    blocks += _train(record.train)
    if not record.full:
        blocks.append(("note", "Paths are shown relative to the workspace (home as ~) and environment variables "
                               "are left out; `hipwizard report --full` includes them."))
    return blocks


def _summary(r: Record) -> list[tuple]:
    rows = []
    d = r.doctor
    rows.append(["1 Doctor", "○ not run" if d is None else
                 ("✖ " if dict(d.counts).get("fail") else "✔ ") + ", ".join(f"{n} {k}" for k, n in d.counts)])
    p = r.port
    rows.append(["2 Port", "○ not started" if p is None else f"✖ {p.error}" if isinstance(p, Unreadable) else
                 f"{'✔' if not p.decisions.pending else '◐'} {p.hunks} hunks in {p.files} files, "
                 f"{p.decisions.pending} pending"])
    latest = r.parity.latest if r.parity is not None else None
    rows.append(["3 Parity", "○ no comparison" if latest is None else latest.headline or str(latest.verdict)])
    t = r.train
    cals = f"; {len(t.calibrations)} calibration(s)" if t and t.calibrations else ""
    rows.append(["4 Train", "○ no run" if t is None else
                 (f"{len(t.runs)} run(s); last: {t.runs[0].symbol} {t.runs[0].state}" if t.runs else "○ no run")
                 + cals])
    return [("h2", "Summary", "summary"), ("table", ["step", "result"], rows)]


def _stamp_or_none(env) -> tuple:
    return ("stamp", env) if env else ("note", "Environment not recorded for this artefact (made before "
                                               "hipwizard stamped artefacts).")


def _doctor(d: DoctorSection | None) -> list[tuple]:
    out: list[tuple] = [("h2", "1 Doctor: is the machine ready?", "doctor")]
    if d is None:
        return out + [("p", "The doctor has not run in this workspace (`hipwizard doctor`).")]
    out.append(("stamp", d.environment))
    out.append(("p", f"Origin: {d.origin}."))
    rows = [[STATUS.get(c.status, c.status), c.title, c.found, c.fix or "—"] for c in d.checks]
    out.append(("table", ["status", "check", "found", "how to fix"], rows))
    return out


def _port(p: PortSection | Unreadable | None) -> list[tuple]:
    out: list[tuple] = [("h2", "2 Port: CUDA to HIP", "port")]
    if p is None:
        return out + [("p", "No migration yet (`hipwizard hipify SRC --out DIR`).")]
    if isinstance(p, Unreadable):
        return out + [("p", f"✖ {p.error}")]
    out.append(_stamp_or_none(p.environment))
    d = p.decisions
    out.append(("p", f"{p.src} → {p.out} ({p.backend} backend, APIs checked against HIP "
                     f"{p.hip_version}): {p.files} files, {p.hunks} hunks — {d.accepted} accepted, "
                     f"{d.edited} edited, {d.rejected} rejected, {d.pending} pending "
                     f"({d.changed} changed since decided)."))
    if p.mode == "dual":
        out.append(("p", f"Output mode: dual-target — one source for NVIDIA and AMD: the CUDA tree is kept, AMD builds "
                         f"define {p.guard or 'USE_ROCM'} and read the generated compat header; the change is "
                         f"{p.out}.dual.patch."))
    else:
        out.append(("p", "Output mode: fork — a HIP copy of the tree."))
    if p.by_rule:
        rows = [[r.rule, r.severity, str(r.hunks), str(r.pending), r.reason] for r in p.by_rule]
        out += [("h3", "Flags by rule"), ("table", ["rule", "severity", "hunks", "pending", "why"], rows)]
    if p.untouched:
        rows = [[r.rule, r.severity, str(r.places), ", ".join(r.files[:4]) + (" …" if len(r.files) > 4 else ""),
                 r.hint] for r in p.untouched]
        out += [("h3", "Risks left on unchanged lines (edit by hand)"),
                ("table", ["rule", "severity", "places", "files", "hint"], rows)]
    diags = [[a.kind.replace("_", " "), a.name, str(a.places)] for a in p.diagnostics]
    if diags:
        out += [("h3", f"API diagnostics for the target HIP {p.hip_version}"),
                ("table", ["kind", "CUDA API", "places"], diags)]
    w = p.last_write
    if w is not None:
        check = (f"compile check for {w.arch}: " + ("✔ no errors" if not w.compile_errors
                                                      else f"✖ {w.compile_errors} error(s)")) if w.arch \
            else "not compile-checked"
        out.append(("p", f"Last write: {w.files} file(s) at revision {w.revision}; {check}."
                         + (f" {w.check_note}." if w.check_note else "")))
        out.append(_stamp_or_none(p.written_environment))
    else:
        out.append(("p", "Not written yet."))
    if p.conflicts:
        out.append(("p", f"✖ In conflict with hand edits: {', '.join(p.conflicts)}."))
    if p.edited_files:
        out.append(("p", f"✎ Hand-edited since written (kept on every write): {', '.join(p.edited_files)}."))
    return out


def _side(s) -> str:
    return ", ".join(f"{k} {v}" for k, v in (("device_name", s.device_name), ("dtype", s.dtype), ("torch", s.torch),
                                             ("model", s.model)) if v)


def _parity(q: ParitySection | None) -> list[tuple]:
    out: list[tuple] = [("h2", "3 Parity: same numbers?", "parity")]
    if q is None or q.latest is None:
        return out + [("p", "No comparison yet (`hipwizard parity compare`).")]
    c = q.latest
    out.append(_stamp_or_none(c.environment or c.candidate.environment))
    out.append(("p", f"{c.headline}"))
    out.append(("table", ["", "reference", "candidate"], [["run", _side(c.reference), _side(c.candidate)]]))
    for label, rows in (("forward", c.forward), ("backward", c.backward)):
        if not rows:
            continue
        table = [[r.name, STATUS.get(r.verdict, str(r.verdict)), _num(r.cosine, "{:.8f}"),
                  _num(r.max_abs), _num(r.rel_l2)] for r in rows]
        out += [("h3", f"Modules, {label}"), ("table", ["module", "verdict", "cosine", "max abs", "rel L2"], table)]
        chart = plots.depth_chart(rows, title=f"Error by depth, {label}")
        if chart:
            out.append(("chart", f"parity-{label}-error-by-depth", chart))
    if len(q.comparisons) > 1:
        earlier = [[STATUS.get(e.verdict, str(e.verdict)), f"{e.passed}/{e.total}", e.first_divergent or "—",
                    e.tolerance or "—", e.label or ""] for e in q.comparisons]
        out += [("h3", "Earlier comparisons (newest first)"),
                ("table", ["verdict", "passed", "first divergent", "tolerance", "label"], earlier)]
    return out


def _train(t: TrainSection | None) -> list[tuple]:
    out: list[tuple] = [("h2", "4 Train: the fine-tune", "train")]
    if t is None or not t.runs:
        out.append(("p", "No training run yet (`hipwizard train run CONFIG`)."))
    if t is None:
        return out
    for k, run in enumerate(t.runs):
        out.append(("h3", f"{run.symbol} {run.name} — {run.state}"))
        out.append(_stamp_or_none(run.environment))
        dur = f"{run.duration_s:.0f} s" if isinstance(run.duration_s, (int, float)) else "—"
        out.append(("p", f"Platform {run.platform or '?'}, {run.steps or 0} steps, final loss "
                         f"{_num(run.final_loss)}, duration {dur}, peak reserved VRAM "
                         f"{_num(run.peak_vram_gib, '{:.1f} GiB')}." + (f" Cause: {run.cause}." if run.cause else "")))
        plan = run.plan
        if plan:
            speed = f" ({plan.advice_speedup:.2f}x predicted)" if isinstance(plan.advice_speedup, (int, float)) else ""
            out.append(("table", ["plan", "value"], [
                ["memory, predicted", f"{_num(plan.predicted_gib, '{:.2f} GiB')} ({plan.source}) on "
                                      f"{plan.device} ({_num(plan.device_vram_gib, '{:.0f} GiB')})"],
                ["memory, measured (peak reserved)", _num(run.peak_vram_gib, "{:.2f} GiB")
                 if run.peak_vram_gib else "— (not recorded: CPU run or no VRAM in the log)"],
                ["as configured", plan.baseline or "—"],
                ["advisor's pick", (plan.advice or "keep as configured") + speed]]))
        if run.config:
            out.append(("table", ["setting", "value"], [[k2, str(v)] for k2, v in run.config.items()]))
        if run.versions:
            out.append(("p", "Versions: " + ", ".join(f"{n} {v}" for n, v in run.versions.items()) + "."))
        s = run.series
        for name, lines, ylabel, logy in (("loss", {"loss": s.loss}, "loss", False),
                                          ("lr", {"learning rate": s.lr}, "learning rate", False),
                                          ("throughput", {"tokens/s (avg)": s.throughput}, "tokens/s", False)):
            chart = plots.series_chart(s.step, lines, title=f"{run.name}: {ylabel}", ylabel=ylabel, logy=logy)
            if chart:
                out.append(("chart", f"run{k}-{name}", chart))
        if run.env_delta:
            out.append(("table", ["environment variable", "value"], [[n, str(v)] for n, v in run.env_delta.items()]))
    for cal in t.calibrations:
        out += _calibration(cal)
    return out


def _pct(v) -> str:
    return f"{v:+.1%}" if isinstance(v, (int, float)) else "—"


def _calibration(cal: CalibrationSection) -> list[tuple]:
    """A calibration: measured configs against what was predicted for them before they ran."""
    state = "■ stopped" if cal.stopped else "✔"
    ceiling = f", measured GEMM ceiling {cal.ceiling_tflops:.0f} TFLOP/s" if cal.ceiling_tflops else ""
    out: list[tuple] = [("h3", f"{state} Calibration on {cal.machine or '?'} ({cal.gpu or 'no GPU'}), "
                               f"{(cal.created or '?')[:16]}"), _stamp_or_none(cal.environment),
                        ("p", f"{len(cal.measurements)} config(s) run for a few real steps each in "
                              f"{cal.wall_s:.0f} s{ceiling}. The plan shows these as 'measured here' and corrects "
                              "the others from them ('calibrated here').")]
    rows = []
    for m in cal.measurements:
        if not m.ok:
            rows.append([m.label, f"✖ {m.error or 'failed'}", "—", "—", "—", "—"])
            continue
        rows.append([m.label, _num(m.step_s, "{:.3f} s"), _num(m.tokens_per_s, "{:,.0f}"),
                     _num(m.peak_gib, "{:.2f} GiB") if m.peak_gib else "— (no device memory read)",
                     _pct(m.step_err), _pct(m.peak_err)])
    out.append(("table", ["config", "step time", "tokens/s", "peak", "predicted step vs measured",
                          "predicted peak vs measured"], rows))
    if cal.versions:
        out.append(("p", "Versions: " + ", ".join(f"{n} {v}" for n, v in cal.versions.items()) + "."))
    return out


def stamp_text(fp: dict) -> str:
    return "Environment: " + describe_stamp(fp)
