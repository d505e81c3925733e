"""The doctor's report as plain text (symbols and words, no colour): for the terminal (``hipwizard doctor``),
the clipboard and support tickets (``services.export_report``)."""

from __future__ import annotations

from hipwizard.doctor.models import DoctorReport


def render_text(report: DoctorReport, details: bool = True) -> str:
    """The report as plain text (symbols + words, no colour): for the terminal, the clipboard and tickets."""
    env = report.env
    lines = [f"hipwizard doctor ({report.origin}) — {report.summary()}"]
    lines += [f"⚠ note: {note}" for note in report.notes]
    if env.gpus:
        lines.append(f"GPUs: {len(env.gpus)} ({env.gpu_source or 'nvidia-smi'})")
    for c in report.checks:
        lines.append(f"{c.symbol} {c.status:<4} {c.title}: {c.found}")
        if details and c.status in ("warn", "fail"):
            lines.append(f"         why: {c.why}")
            if c.fix:
                lines.append(f"         fix: {c.fix}")
    return "\n".join(lines) + "\n"
