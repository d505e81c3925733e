"""Run the doctor end to end and present its report: probes -> EnvReport -> checks -> DoctorReport.

``diagnose(runner)`` is what both faces call: the CLI (``hipwizard doctor``) and the screen's worker.
"""

from __future__ import annotations

from typing import Callable

from hipwizard import __version__
from hipwizard.doctor.checks import run_checks
from hipwizard.doctor.environment import build_env
from hipwizard.doctor.matrix import load_matrix
from hipwizard.doctor.models import DoctorReport
from hipwizard.doctor.probes import DEFAULT_TIMEOUT_S, run_probes
from hipwizard.runner import RunResult, Runner


def diagnose(
    runner: Runner,
    timeout: float = DEFAULT_TIMEOUT_S,
    origin: str = "live",
    on_probe: Callable[[str, RunResult], None] | None = None,
) -> DoctorReport:
    """Probe through ``runner`` (live, recording or replay), parse, check. Never raises for tool behaviour."""
    results = run_probes(runner, timeout=timeout, on_done=on_probe)
    replay_problems = {}
    problems_by_slug = getattr(runner, "problems", None)
    if problems_by_slug:
        from hipwizard.doctor.replay import slug

        for name, res in results.items():
            if slug(res.argv) in problems_by_slug:
                replay_problems[name] = problems_by_slug[slug(res.argv)]
    matrix = load_matrix()
    env = build_env(results, matrix, replay_problems, _pasted_collect_env(runner, results))
    return DoctorReport(env, run_checks(env, matrix), origin, __version__)


def _pasted_collect_env(runner: Runner, results: dict[str, RunResult]):
    """A replay directory without a Python probe recording may hold a pasted ``collect_env.txt``
    (what users usually attach to issues): read torch facts from it instead."""
    directory = getattr(runner, "directory", None)
    py = results.get("python")
    if directory is None or not hasattr(runner, "recorded_slugs") or py is None or py.status != "error":
        return None
    path = directory / "collect_env.txt"
    if not path.is_file():
        return None
    from hipwizard.doctor.parse_python import parse_collect_env
    from hipwizard.doctor.replay import read_recording

    parsed = parse_collect_env(read_recording(path).result.stdout)
    return parsed.value if parsed.value.torch else None


def render_text(report: DoctorReport, details: bool = True) -> str:
    """The report as plain text (symbols + words, no colour): for the terminal, the clipboard and tickets."""
    env = report.env
    lines = [f"hipwizard doctor ({report.origin}) — {report.summary()}"]
    if env.gpus:
        lines.append(f"GPUs: {len(env.gpus)} ({env.gpu_source or 'nvidia-smi'})")
    for c in report.checks:
        lines.append(f"{c.symbol} {c.status:<4} {c.title}: {c.found}")
        if details and c.status in ("warn", "fail"):
            lines.append(f"         why: {c.why}")
            if c.fix:
                lines.append(f"         fix: {c.fix}")
    return "\n".join(lines) + "\n"
