"""Gather one migration record from a workspace: each step's saved results, each stamped with its environment.

``collect(ws)`` reads what the steps saved (through their doors and state readers, and the run folders' file
formats; nothing is re-run) into a ``sections.Record``: one dataclass per step's section, which
``document.build`` turns into blocks. Saved JSON (a comparison's report, a run's manifest and log) is read
here, at the edge, into records.

A step that has not run is None (its section says so). Paths are shown relative to the workspace, with the
home folder as ``~`` elsewhere, and environment variables are left out, unless ``full`` (``redact``).
"""

from __future__ import annotations

import dataclasses
import json
import os
from datetime import datetime, timezone
from pathlib import Path

from hipwizard import __version__, train
from hipwizard.doctor import environment_stamp, load_report, stamp_from_report
from hipwizard.errors import UserError
from hipwizard.parity import state as parity_state
from hipwizard.port import ReviewState, WorkTree, read_link
from hipwizard.report.sections import (
    ApiRow,
    CalibrationSection,
    CheckRow,
    ComparisonSummary,
    Decisions,
    DoctorSection,
    LastWrite,
    LayerRow,
    MeasurementRow,
    ParitySection,
    PlanSummary,
    PortSection,
    Record,
    RuleRow,
    RunSection,
    Series,
    Side,
    TrainSection,
    Unreadable,
    UntouchedRow,
)
from hipwizard.workspace import Workspace

KEEP_COMPARISONS = 10
KEEP_RUNS = 8
KEEP_CALIBRATIONS = 3


class Redactor:
    """Shows paths without the machine's layout: inside the workspace relative to it, the home folder as
    ``~``, any other absolute path by its last two parts (``.../a/b``). ``full`` shows them as they are."""

    def __init__(self, ws: Workspace, full: bool) -> None:
        self.root = ws.root.resolve()
        self.home = Path.home().resolve()
        self.full = full

    def path(self, value) -> str:
        if value in (None, ""):
            return ""
        p = Path(str(value)).expanduser()
        if self.full or not p.is_absolute():
            return str(value)
        try:
            return p.resolve().relative_to(self.root).as_posix() or "."
        except ValueError:
            pass
        try:
            return "~/" + p.resolve().relative_to(self.home).as_posix()
        except ValueError:
            return ".../" + "/".join(p.parts[-2:])


def collect(ws: Workspace, *, full: bool = False) -> Record:
    """The workspace's migration record; paths redacted and the home folder written ``~`` unless ``full``."""
    red = Redactor(ws, full)
    record = Record(
        title=f"Migration report: {ws.root.resolve().name}",
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        hipwizard=__version__, workspace=red.path(ws.root) if full else ws.root.resolve().name,
        full=full, environment=environment_stamp(ws),
        doctor=_doctor(ws), port=_port(ws, red), parity=_parity(ws, red), train=_train(ws, red, full),
    )
    return record if full else _home_free(record)


def _home_free(value):
    """Every string of ``value`` (a record, and what it holds) with the home folder written as ``~`` (a
    tool's message, a config path)."""
    if isinstance(value, str):
        return home_free(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: _home_free(getattr(value, f.name))
                                             for f in dataclasses.fields(value) if f.init})
    if isinstance(value, dict):
        return {k: _home_free(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_home_free(v) for v in value)
    return value


# --- doctor ---------------------------------------------------------------------------------------------
def _doctor(ws: Workspace) -> DoctorSection | None:
    report = load_report(ws)
    if report is None:
        return None
    checks = [CheckRow(c.title, c.status, c.found, c.why, c.fix) for c in report.checks]
    return DoctorSection(report.origin, checks, stamp_from_report(report))


# --- port -----------------------------------------------------------------------------------------------
def _port(ws: Workspace, red: Redactor) -> PortSection | Unreadable | None:
    link = read_link(ws)
    if link.review_path is None or not link.review_path.exists():
        return None
    try:
        review = ReviewState.load(link.review_path)
    except UserError as exc:
        return Unreadable(str(exc))
    by_rule: dict[str, RuleRow] = {}
    for h in review.hunks:
        pending = review.decision(h.hunk_id).state == "pending"
        for f in h.flags:
            row = by_rule.get(f.rule_id) or RuleRow(f.rule_id, f.severity, 0, 0, f.reason)
            by_rule[f.rule_id] = dataclasses.replace(row, hunks=row.hunks + 1, pending=row.pending + pending)
    untouched: dict[str, tuple] = {}  # rule -> (flag, places, files)
    for rel, risks in review.untouched.items():
        for r in risks:
            flag, places, files = untouched.get(r.flag.rule_id) or (r.flag, 0, set())
            untouched[r.flag.rule_id] = (flag, places + 1, files | {rel})
    try:
        tree = WorkTree.load(review.out)
        conflicts, edits = sorted(tree.conflicts), tree.edited()
        written_env = tree.environment
    except (UserError, OSError):
        conflicts, edits, written_env = [], [], None
    c = review.counts()
    w = review.last_write
    return PortSection(
        src=red.path(review.src), out=red.path(review.out), backend=review.backend,
        hip_version=review.hip_version or "not known", files=len(review.files), hunks=c.total,
        decisions=Decisions(c.accepted, c.edited, c.rejected, c.pending, c.changed),
        flagged=review.flagged_counts()["total"],
        by_rule=sorted(by_rule.values(), key=lambda row: -row.hunks),
        untouched=sorted((UntouchedRow(rule, flag.severity, places, sorted(files), flag.hint)
                          for rule, (flag, places, files) in untouched.items()), key=lambda row: -row.places),
        diagnostics=[ApiRow(kind, name, n) for kind in ("too_new", "unsupported", "removed")
                     for name, n in review.api_counts(kind).items()],
        last_write=LastWrite(w.files, w.revision, w.compile_errors, w.arch, w.check_note) if w is not None else None,
        conflicts=conflicts, edited_files=edits, vanished=len(review.vanished), environment=review.environment,
        written_environment=written_env, mode=link.mode, guard=link.guard,
    )


# --- parity ---------------------------------------------------------------------------------------------
def _parity(ws: Workspace, red: Redactor) -> ParitySection | None:
    rows = parity_state.comparisons(ws)[-KEEP_COMPARISONS:]
    if not rows:
        return None
    latest = next((d for d in (parity_state.saved_report(ws, e) for e in reversed(rows)) if d is not None), None)
    return ParitySection(list(reversed(rows)), _comparison(latest, red) if latest is not None else None)


def _side(side, red: Redactor) -> Side:
    """One side of a saved comparison report (JSON, maybe damaged: what is not there is left out)."""
    if not isinstance(side, dict):
        return Side()
    shown = {k: str(side[k]) for k in ("device_name", "dtype", "torch") if side.get(k) not in (None, "")}
    model = side["model"].get("name", "") if isinstance(side.get("model"), dict) else ""
    env = side.get("environment")
    return Side(**shown, model=str(model), file=red.path(side["file"]) if side.get("file") else "",
                environment=env if isinstance(env, dict) else None)


def _number(value) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _layer_rows(layers) -> list[LayerRow]:
    rows = []
    for layer in layers if isinstance(layers, list) else []:
        if not isinstance(layer, dict):
            continue
        m = found if isinstance(found := layer.get("metrics"), dict) else {}
        rows.append(LayerRow(str(layer.get("name", "?")), str(layer.get("verdict") or m.get("verdict", "?")),
                             _number(m.get("cosine")), _number(m.get("max_abs")), _number(m.get("rel_l2"))))
    return rows


def _comparison(data: dict, red: Redactor) -> ComparisonSummary:
    backward = data.get("backward")
    tolerance = data.get("tolerance")
    env = data.get("environment")
    return ComparisonSummary(
        headline=str(data.get("headline", "")), verdict=data.get("verdict"),
        tolerance=tolerance.get("name") if isinstance(tolerance, dict) else None,
        first_divergent=data.get("first_divergent_module") or data.get("first_divergent"),
        reference=_side(data.get("reference"), red), candidate=_side(data.get("candidate"), red),
        forward=_layer_rows(data.get("layers")),
        backward=_layer_rows(backward.get("layers")) if isinstance(backward, dict) else [],
        triangle_verdict=data.get("triangle_verdict"), environment=env if isinstance(env, dict) else None)


# --- train ----------------------------------------------------------------------------------------------
def _train(ws: Workspace, red: Redactor, full: bool) -> TrainSection | None:
    runs = [r for r in train.load(ws).launched_runs if Path(r).is_dir()][:KEEP_RUNS]
    cals = [_calibration(c) for c in train.calibrations(ws)[:KEEP_CALIBRATIONS]]
    if not runs and not cals:
        return None
    return TrainSection([_run(ws, Path(r), red, full) for r in runs], cals)


def _calibration(cal) -> CalibrationSection:
    """A calibration as the report shows it: where and when, the ceiling, and each measured config against what
    was predicted for it before it ran."""
    rows = []
    for m in cal.measurements:
        step_err = (m.predicted_step_s - m.step_s) / m.step_s if m.ok and m.step_s and m.predicted_step_s else None
        peak_err = (m.predicted_peak_gib - m.peak_gib) / m.peak_gib if m.ok and m.peak_gib and m.predicted_peak_gib \
            else None
        rows.append(MeasurementRow(m.label, m.ok, m.error, m.step_s, m.tokens_per_s, m.peak_gib, step_err, peak_err))
    return CalibrationSection(cal.machine, cal.created, cal.key.get("gpu"), cal.wall_s, cal.stopped,
                              cal.ceiling_tflops, cal.versions, cal.environment, rows)


def _plan(ws: Workspace, config: Path) -> PlanSummary | None:
    """The plan of a run's config as hipwizard predicts it today (memory, the advisor's pick); None when
    the config cannot be planned (the run's own section still shows)."""
    if not config.is_file():
        return None
    try:
        p = train.plan_file(config, ws=ws).to_dict()
    except (UserError, OSError, ValueError, TypeError):
        return None
    est, adv, device = p.get("estimate") or {}, p.get("advice") or {}, p.get("device") or {}
    best = next(iter(adv.get("suggestions") or []), None)
    best = best if isinstance(best, dict) else {}
    return PlanSummary(predicted_gib=est.get("total_gib"), fits=est.get("fits"), source=p.get("estimate_source"),
                       device=device.get("name"), device_vram_gib=device.get("vram_gib"),
                       baseline=(adv.get("baseline") or {}).get("label"), advice=best.get("label"),
                       advice_speedup=best.get("speedup"))


def _run(ws: Workspace, run_dir: Path, red: Redactor, full: bool) -> RunSection:
    info = train.run_info(run_dir, with_progress=False)
    manifest = _json(run_dir / "run.json")
    end = _json(run_dir / "exit.json")
    series = Series()
    for rec in _trainer_log(run_dir, manifest):
        step = rec.get("current_steps")
        if not isinstance(step, int) or rec.get("loss") is None:
            continue
        series.step.append(step)
        series.loss.append(rec.get("loss"))
        series.lr.append(rec.get("lr"))
        series.throughput.append(rec.get("throughput"))
        series.vram.append(rec.get("vram_reserved"))
    peak = [v for v in series.vram if isinstance(v, (int, float)) and v > 0]
    return RunSection(
        name=info.name, state=info.state, symbol=info.symbol, cause=info.cause, started=info.started,
        duration_s=end.get("duration_s"), platform=manifest.get("platform"), versions=manifest.get("versions") or {},
        steps=series.step[-1] if series.step else None, final_loss=series.loss[-1] if series.loss else None,
        series=series, config=_config_summary(run_dir / "config.yaml"), environment=manifest.get("environment"),
        run_dir=red.path(run_dir), peak_vram_gib=max(peak) if peak else None,
        plan=_plan(ws, run_dir / "config.yaml"), env_delta=(manifest.get("env_delta") or {}) if full else {})


def _trainer_log(run_dir: Path, manifest: dict) -> list[dict]:
    out_dir = Path(manifest.get("output_dir") or run_dir / "output")
    for p in (out_dir / "trainer_log.jsonl", run_dir / "output" / "trainer_log.jsonl"):
        try:
            lines = p.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        recs = []
        for line in lines:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict):
                recs.append(rec)
        return recs
    return []


CONFIG_KEYS = ("model_name_or_path", "stage", "finetuning_type", "lora_rank", "lora_target", "deepspeed",
               "per_device_train_batch_size", "gradient_accumulation_steps", "learning_rate", "cutoff_len",
               "bf16", "fp16", "gradient_checkpointing", "enable_liger_kernel", "flash_attn", "max_steps")


def _config_summary(path: Path) -> dict:
    from ruamel.yaml import YAML, YAMLError  # heavy: ruamel (only when a run has a config to show)

    try:
        values = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, YAMLError):
        return {}
    if not isinstance(values, dict):
        return {}
    return {k: values[k] for k in CONFIG_KEYS if k in values and not isinstance(values[k], (dict, list))}


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def home_free(text: str) -> str:
    """``text`` with the home folder written as ``~`` (for free text such as a doctor's finding)."""
    home = os.path.expanduser("~")
    return text.replace(home, "~") if home and home != "/" else text
