"""The doctor's line on the home screen, from the report saved in the workspace (no probing here)."""

from __future__ import annotations

from hipwizard.workspace import StepStatus, Workspace


def summarize(ws: Workspace) -> StepStatus:
    """not started (no report) / attention (a check fails) / done (none fails), with the counts."""
    report = ws.read_state("doctor").get("report")
    if not isinstance(report, dict) or not isinstance(report.get("checks"), list):
        return StepStatus("not started", "not run yet")
    checks = [c for c in report["checks"] if isinstance(c, dict)]
    fails = [c.get("title", c.get("id", "?")) for c in checks if c.get("status") == "fail"]
    warns = sum(1 for c in checks if c.get("status") == "warn")
    oks = sum(1 for c in checks if c.get("status") == "ok")
    origin = report.get("origin", "live")
    where = "" if origin == "live" else f" ({origin})"
    if fails:
        return StepStatus("attention", f"{len(fails)} fail: {', '.join(fails[:3])}; {warns} warn, {oks} ok{where}")
    return StepStatus("done", f"{oks} ok, {warns} warn, no failures{where}")
