"""The Doctor's user actions, one function each, called by both faces (``hipwizard doctor`` and the Doctor
screen), so a fix lands once:

- ``open_source(replay=, record=)``: where the answers come from: the live tools, a recording folder replayed
  (pasted files in it are split and recognised first), or the live tools recorded into a folder for a support
  ticket. A bad folder is a ``UserError``.
- ``paste_source(text, label, folder, ws)``: a pasted terminal log becomes a recording folder, then a replay.
- ``diagnose(ws, source)``: probe, parse, check; save the report in the workspace (``state.save_report``) and,
  when recording, as ``doctor-report.json`` beside the recordings. Reports ``Progress("probing", done, total,
  tool)`` once per probe that answered.
- ``export_report(ws, report)``: the report as plain text, saved to ``.hipwizard/doctor-report.txt`` (what the
  screen's copy puts on the clipboard).

Plain Python: no face, no Textual, nothing heavy imported.
"""

from __future__ import annotations

import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from hipwizard.atomic import atomic_write_json, atomic_write_text
from hipwizard.doctor import pipeline
from hipwizard.doctor.models import DoctorReport
from hipwizard.doctor.paste.recognise import parse_paste
from hipwizard.doctor.paste.recording import known_slugs, materialise, write_paste
from hipwizard.doctor.probe.replay import RecordingRunner, ReplayRunner
from hipwizard.doctor.probe.tools import DEFAULT_TIMEOUT_S, default_probes
from hipwizard.doctor.state import replay_dir, save_report
from hipwizard.doctor.text import render_text
from hipwizard.errors import UserError
from hipwizard.progress import Progress, ProgressFn
from hipwizard.runner import Runner, SubprocessRunner
from hipwizard.workspace import Workspace

REPORT_TEXT_FILE = "doctor-report.txt"  # in the workspace's .hipwizard/ folder
RECORDED_REPORT_FILE = "doctor-report.json"  # beside the recordings of ``--record DIR``


@dataclass(frozen=True)
class Source:
    """Where a doctor run gets its answers: a runner, and the words the report uses for it."""

    runner: Runner
    origin: str = "live"  # "live" or "replay of DIR"
    record_dir: Path | None = None  # recording: the folder that receives every tool output
    paste_summary: str = ""  # a paste: what was recognised in it (PasteResult.summary)
    note: str = ""  # said in the report (DoctorReport.notes): e.g. a paste cut at the cap

    @classmethod
    def of(cls, runner: Runner) -> Source:
        """A ready runner (tests, snapshots): a replaying one says so in the report's origin."""
        directory = getattr(runner, "directory", None)
        if directory is not None and hasattr(runner, "recorded_slugs"):
            return cls(runner, f"replay of {Path(directory).name}")
        return cls(runner)


@dataclass(frozen=True)
class Diagnosis:
    """What ``diagnose`` made: the report, and why it could not be saved in the workspace ("" if it was)."""

    report: DoctorReport
    save_error: str = ""


@dataclass(frozen=True)
class ExportedReport:
    """``export_report``'s result: the text, where it went, and why it could not be saved ("" if it was)."""

    text: str
    path: Path
    error: str = ""


def open_source(replay: str | Path | None = None, record: str | Path | None = None) -> Source:
    """Replay ``replay``, record into ``record`` (new or empty folder, created), else the live tools.
    Raises UserError for a folder that cannot serve (not a folder, no recordings, already recorded into)."""
    if replay:
        path = Path(replay).expanduser()
        if not path.is_dir():
            raise UserError(f"--replay {replay}: not a directory")
        pasted = materialise(path)  # pasted files of any name: split and recognised into a recording
        runner = ReplayRunner(pasted[0] if pasted else path)
        if not runner.recorded_slugs() & known_slugs():
            raise UserError(f"--replay {replay}: no recorded outputs or recognisable tool outputs in it (expected files such "
                            "as rocminfo.txt or a pasted log; make one with `hipwizard doctor --record DIR`)")
        note = f" ({pasted[1].summary()})" if pasted else ""
        return Source(runner, f"replay of {path.name}", paste_summary=note.strip(" ()"))
    if record:
        path = Path(record).expanduser()
        if path.exists() and not path.is_dir():
            raise UserError(f"--record {record}: exists and is not a directory")
        if path.is_dir() and any(path.glob("*.txt")):
            raise UserError(f"--record {record}: already holds recordings; choose an empty or new directory")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"--record {record}: cannot create it ({exc.strerror})") from None
        return Source(RecordingRunner(SubprocessRunner(), path), "live", record_dir=path)
    return Source(SubprocessRunner())


def paste_source(text: str, label: str, folder: str | Path | None, ws: Workspace | None, note: str = "") -> Source:
    """A pasted terminal log -> a recording folder (``folder``, else ``.hipwizard/doctor-paste-TIME`` in the
    workspace, else a temporary folder) -> a replay of it. UserError when nothing in it is recognised or the
    folder cannot serve."""
    result = parse_paste(text)
    if not result.recognised:
        what = f"{len(text.splitlines())} lines" if text.strip() else "it is empty"
        raise UserError(f"paste {label}: no tool output recognised ({what}); paste rocminfo, amd-smi, rocm-smi, "
                        "collect_env, pip list, nvidia-smi or lspci output")
    if folder is not None:
        target = Path(folder).expanduser()
        if target.exists() and (not target.is_dir() or any(target.glob("*.txt"))):
            raise UserError(f"--record {folder}: must be a new or empty directory")
    elif ws is not None:
        target = _new_folder(ws.state_dir / time.strftime("doctor-paste-%Y%m%d-%H%M%S"))
    else:
        target = Path(tempfile.mkdtemp(prefix="hipwizard-paste-"))
    try:
        write_paste(result, target, label)
    except OSError as exc:
        raise UserError(f"paste {label}: cannot write the recording into {target} ({exc.strerror or exc})") from None
    return Source(ReplayRunner(target), f"paste of {label}", record_dir=target, paste_summary=result.summary(),
                  note=note)


def _new_folder(base: Path) -> Path:
    """``base``, or ``base-2``, ``base-3``... : a folder made now, never one an earlier paste wrote (two pastes
    in one second would otherwise mix their recordings)."""
    for n in range(1, 1000):
        path = base if n == 1 else base.with_name(f"{base.name}-{n}")
        try:
            path.mkdir(parents=True)
            return path
        except FileExistsError:
            continue
        except OSError as exc:
            raise UserError(f"cannot create {path} ({exc.strerror or exc})") from None
    raise UserError(f"too many pastes named {base.name}* in {base.parent}")


def workspace_source(ws: Workspace | None) -> Source:
    """The recording the workspace's doctor state names (``replay_dir``: a demo or support workspace),
    else the live tools."""
    folder = replay_dir(ws) if ws is not None else None
    if folder and Path(folder).is_dir():
        return Source(ReplayRunner(folder), f"replay of {Path(folder).name}")
    return Source(SubprocessRunner())


def diagnose(ws: Workspace | None, source: Source | None = None, *, timeout: float = DEFAULT_TIMEOUT_S,
             progress: ProgressFn | None = None) -> Diagnosis:
    """Run the doctor: ``source`` (default: ``workspace_source(ws)``) -> report; saved in ``ws`` unless ws is
    None. Never raises for a tool's behaviour; a workspace that cannot be written is ``save_error``, not an
    exception. Raises OSError only when a recording folder cannot take ``doctor-report.json``."""
    source = source or workspace_source(ws)
    report = pipeline.diagnose(source.runner, timeout=timeout, origin=source.origin, on_probe=_probe_counter(progress))
    if source.note:
        report.notes.append(source.note)
    if source.record_dir is not None and source.record_dir.is_dir():
        atomic_write_json(source.record_dir / RECORDED_REPORT_FILE, report.to_dict())
    save_error = ""
    if ws is not None:
        try:
            save_report(ws, report)
        except OSError as exc:
            save_error = str(exc)
    return Diagnosis(report, save_error)


def diagnose_paste(ws: Workspace | None, text: str, label: str = "the paste box") -> Diagnosis:
    """The Doctor screen's paste box: ``paste_source`` (recording folder in the workspace) then ``diagnose``.
    Raises UserError when nothing in the paste is recognised."""
    return diagnose(ws, paste_source(text, label, None, ws))


def export_report(ws: Workspace, report: DoctorReport) -> ExportedReport:
    """The report as plain text, saved to ``.hipwizard/doctor-report.txt``; a workspace that cannot be
    written is ``error`` (the text is still there to copy)."""
    text = render_text(report)
    target = ws.state_dir / REPORT_TEXT_FILE
    try:
        atomic_write_text(target, text)
    except OSError as exc:
        return ExportedReport(text, target, str(exc))
    return ExportedReport(text, target)


def _probe_counter(progress: ProgressFn | None):
    """``on_probe`` for ``pipeline.diagnose``: one Progress per answered probe (probes answer from many threads)."""
    if progress is None:
        return None
    total = len(default_probes())
    lock = threading.Lock()
    answered = [0]

    def on_probe(name: str, _result) -> None:
        with lock:
            answered[0] += 1
            done = answered[0]
        try:
            progress(Progress("probing", done, total, name))
        except Exception:  # a display that went away (a quit app) must not lose the report
            pass

    return on_probe
