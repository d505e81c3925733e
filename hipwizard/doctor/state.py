"""The doctor's saved state, ``.hipwizard/doctor.json``: its sole owner.

Format (JSON object, written atomically by ``Workspace``)::

    {"version": 1, "updated": ISO time,
     "report": DoctorReport.to_dict(),     # the last report, live or replayed
     "replay_dir": "DIR",                  # optional: the Doctor screen replays this recording
     "demo_note": "..."}                   # optional: the embedded demo's explanation line

Other steps read the doctor's findings through ``target_facts`` (typed) and ``environment_stamp`` (the
fingerprint they stamp on their artefacts), never by walking the JSON.
No probing happens here, and nothing heavy is imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hipwizard.doctor.fingerprint import bare_stamp, stamp_from_report
from hipwizard.doctor.models import DoctorReport, GpuInfo
from hipwizard.workspace import StepStatus, Workspace, register_state_fields

STEP = "doctor"
STATE_FIELDS = {"report": dict, "replay_dir": str, "demo_note": str}  # checked by Workspace.state_file
register_state_fields(STEP, STATE_FIELDS)


@dataclass(frozen=True)
class TargetFacts:
    """What the doctor found about the machine the port targets; empty when it has not run."""

    hip_version: str | None = None  # HIP runtime (hipconfig), else ROCm, else torch.version.hip
    arch: str | None = None  # gfx arch of the first AMD GPU (no feature suffixes), e.g. "gfx942"
    gpus: tuple[GpuInfo, ...] = field(default_factory=tuple)
    origin: str = ""  # "live", "replay of DIR", "" when there is no report


def load_report(ws: Workspace) -> DoctorReport | None:
    """The last saved report, or None when there is none or it cannot be read back."""
    data = ws.read_state(STEP).get("report")
    if not isinstance(data, dict):
        return None
    try:
        return DoctorReport.from_dict(data)
    except (TypeError, ValueError, AttributeError):
        return None


def save_report(ws: Workspace, report: DoctorReport) -> None:
    """Record ``report`` as the last one, keeping the demo note and replay folder. Raises OSError."""
    ws.update_state(STEP, report=report.to_dict())


def replay_dir(ws: Workspace) -> str | None:
    value = ws.read_state(STEP).get("replay_dir")
    return value if isinstance(value, str) and value else None


def demo_note(ws: Workspace) -> str:
    value = ws.read_state(STEP).get("demo_note", "")
    return value if isinstance(value, str) else ""


def set_demo_note(ws: Workspace, note: str) -> None:
    ws.update_state(STEP, demo_note=note)


def target_facts(ws: Workspace | None) -> TargetFacts:
    """(HIP version, gfx arch, GPUs) from the workspace's doctor report; empty facts without one. A foreign
    or damaged workspace gives empty facts: it must never stop a translation or a plan."""
    if ws is None:
        return TargetFacts()
    try:
        report = load_report(ws)
    except OSError:
        return TargetFacts()
    if report is None:
        return TargetFacts()
    env = report.env
    hip = env.hip_version or env.rocm_version or env.torch.hip or None
    arch = next((g.gfx for g in env.amd_gpus if g.gfx), None)
    return TargetFacts(hip_version=hip, arch=arch, gpus=tuple(env.gpus), origin=report.origin)


def environment_stamp(ws: Workspace | None) -> dict:
    """The workspace's environment fingerprint (``fingerprint.stamp_from_report`` of its doctor report), else
    ``bare_stamp()`` (hipwizard and Python only). Never raises: a stamp must never stop the artefact it marks."""
    try:
        report = load_report(ws) if ws is not None else None
    except OSError:
        report = None
    if report is None:
        return bare_stamp()
    try:
        return stamp_from_report(report)
    except (AttributeError, TypeError, ValueError):
        return bare_stamp()


def summarize(ws: Workspace) -> StepStatus:
    """not started (no report) / attention (a check fails) / done (none fails), with the counts."""
    report = load_report(ws)
    if report is None or not report.checks:
        return StepStatus("not started", "not run yet")
    fails = [c.title or c.id for c in report.checks if c.status == "fail"]
    counts = report.counts
    where = "" if report.origin == "live" else f" ({report.origin})"
    if fails:
        return StepStatus("attention", f"{len(fails)} fail: {', '.join(fails[:3])}; "
                                       f"{counts.warn} warn, {counts.ok} ok{where}")
    return StepStatus("done", f"{counts.ok} ok, {counts.warn} warn, no failures{where}")
