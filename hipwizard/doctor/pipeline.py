"""Run the doctor end to end and present its report: probes -> EnvReport -> checks -> DoctorReport.

``diagnose(runner)`` is what both faces call: the CLI (``hipwizard doctor``) and the screen's worker.
"""

from __future__ import annotations

from typing import Callable

from hipwizard import __version__
from hipwizard.doctor.judge.checklist import run_checks
from hipwizard.doctor.read.environment import build_env
from hipwizard.doctor.judge.matrix import load_matrix
from hipwizard.doctor.models import DoctorReport
from hipwizard.doctor.probe.tools import DEFAULT_TIMEOUT_S, run_probes
from hipwizard.runner import RunResult, Runner


def diagnose(
    runner: Runner,
    timeout: float = DEFAULT_TIMEOUT_S,
    origin: str = "live",
    on_probe: Callable[[str, RunResult], None] | None = None,
) -> DoctorReport:
    """Probe through ``runner`` (live, recording or replay), parse, check. Never raises for tool behaviour."""
    results = run_probes(runner, timeout=timeout, on_done=on_probe)
    results.update(_recorded_evidence(runner, timeout))
    replay_problems = {}
    problems_by_slug = getattr(runner, "problems", None)
    if problems_by_slug:
        from hipwizard.doctor.probe.replay import slug

        for name, res in results.items():
            if slug(res.argv) in problems_by_slug:
                replay_problems[name] = problems_by_slug[slug(res.argv)]
    matrix = load_matrix()
    env = build_env(results, matrix, replay_problems)
    return DoctorReport(env, run_checks(env, matrix, replay=hasattr(runner, "recorded_slugs")), origin, __version__)


def _recorded_evidence(runner: Runner, timeout: float) -> dict[str, RunResult]:
    """Outputs only a recording holds (a pasted collect_env, pip list, lspci ...: ``EVIDENCE_PROBES``), asked
    of a replaying runner through the same seam; a live run has none."""
    recorded = getattr(runner, "recorded_slugs", None)
    if recorded is None:
        return {}
    from hipwizard.doctor.probe.tools import EVIDENCE_PROBES
    from hipwizard.doctor.probe.replay import slug

    have = recorded()
    return {p.name: runner.run(p.argv, timeout=timeout) for p in EVIDENCE_PROBES if slug(p.argv) in have}


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
