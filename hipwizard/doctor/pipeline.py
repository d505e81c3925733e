"""The doctor end to end through one runner: probes -> EnvReport -> checks -> DoctorReport.

``diagnose(runner)`` is the pipeline ``services.diagnose`` runs for both faces (the CLI and the screen's
worker), on live tools, a recording or a replay alike; tests call it on a ``ReplayRunner`` directly.
"""

from __future__ import annotations

from typing import Callable

from hipwizard import __version__
from hipwizard.doctor.judge.checklist import run_checks
from hipwizard.doctor.judge.matrix import load_matrix
from hipwizard.doctor.models import DoctorReport
from hipwizard.doctor.probe.replay import slug
from hipwizard.doctor.probe.tools import DEFAULT_TIMEOUT_S, EVIDENCE_PROBES, run_probes
from hipwizard.doctor.read.environment import build_env
from hipwizard.runner import Runner, RunResult


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
    have = recorded()
    return {p.name: runner.run(p.argv, timeout=timeout) for p in EVIDENCE_PROBES if slug(p.argv) in have}
