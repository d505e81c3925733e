"""Gather one migration record from a workspace: each step's saved results, each stamped with its environment.

``collect(ws)`` reads what the steps saved (through their own state modules and file formats; nothing is
re-run) into a plain dict that the renderers (``render_html``, ``render_md``) turn into a document::

    {"title", "generated", "hipwizard", "workspace", "environment": fingerprint of this workspace,
     "doctor": {...} | None, "port": {...} | None, "parity": {...} | None, "train": {...} | None}

A step that has not run is None (its section says so). Paths are shown relative to the workspace, with the
home folder as ``~`` elsewhere, and environment variables are left out, unless ``full`` (``redact``).
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from hipwizard import __version__, train
from hipwizard.doctor import environment_stamp, load_report, stamp_from_report
from hipwizard.parity import state as parity_state
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


def collect(ws: Workspace, *, full: bool = False) -> dict:
    red = Redactor(ws, full)
    record = {
        "title": f"Migration report: {ws.root.resolve().name}",
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "hipwizard": __version__, "workspace": red.path(ws.root) if full else ws.root.resolve().name,
        "full": full, "environment": environment_stamp(ws),
        "doctor": _doctor(ws), "port": _port(ws, red), "parity": _parity(ws, red), "train": _train(ws, red, full),
    }
    return record if full else _home_free(record)


def _home_free(value):
    """Every string of ``value`` with the home folder written as ``~`` (a tool's message, a config path)."""
    if isinstance(value, str):
        return home_free(value)
    if isinstance(value, dict):
        return {k: _home_free(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_home_free(v) for v in value]
    return value


# --- doctor ---------------------------------------------------------------------------------------------
def _doctor(ws: Workspace) -> dict | None:
    report = load_report(ws)
    if report is None:
        return None
    checks = [{"title": c.title, "status": c.status, "found": c.found, "why": c.why, "fix": c.fix}
              for c in report.checks]
    counts: dict[str, int] = {}
    for c in checks:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    return {"origin": report.origin, "checks": checks, "counts": counts,
            "environment": stamp_from_report(report)}


# --- port -----------------------------------------------------------------------------------------------
def _port(ws: Workspace, red: Redactor) -> dict | None:
    from hipwizard.errors import UserError
    from hipwizard.port import ReviewState, WorkTree, read_link

    link = read_link(ws)
    if link.review_path is None or not link.review_path.exists():
        return None
    try:
        review = ReviewState.load(link.review_path)
    except UserError as exc:
        return {"error": str(exc)}
    by_rule: dict[str, dict] = {}
    for h in review.hunks:
        d = review.decision(h.hunk_id).state
        for f in h.flags:
            row = by_rule.setdefault(f.rule_id, {"severity": f.severity, "hunks": 0, "pending": 0, "reason": f.reason})
            row["hunks"] += 1
            row["pending"] += d == "pending"
    untouched: dict[str, dict] = {}
    for rel, risks in review.untouched.items():
        for r in risks:
            row = untouched.setdefault(r.flag.rule_id, {"severity": r.flag.severity, "places": 0, "files": set(),
                                                        "hint": r.flag.hint})
            row["places"] += 1
            row["files"].add(rel)
    for row in untouched.values():
        row["files"] = sorted(row["files"])
    try:
        tree = WorkTree.load(review.out)
        conflicts, edits = sorted(tree.conflicts), tree.edited()
        written_env = tree.environment
    except (UserError, OSError):
        conflicts, edits, written_env = [], [], None
    summary = review.summary()
    return {
        "src": red.path(review.src), "out": red.path(review.out), "backend": review.backend,
        "hip_version": review.hip_version or "not known", "files": summary["files"], "hunks": summary["hunks"],
        "decisions": {k: summary[k] for k in ("accepted", "edited", "rejected", "pending", "changed")},
        "flagged": summary["flagged"], "by_rule": dict(sorted(by_rule.items(), key=lambda kv: -kv[1]["hunks"])),
        "untouched": dict(sorted(untouched.items(), key=lambda kv: -kv[1]["places"])),
        "diagnostics": {kind: review.api_counts(kind) for kind in ("too_new", "unsupported", "removed")},
        "last_write": review.last_write, "conflicts": conflicts, "edited_files": edits,
        "vanished": len(review.vanished), "environment": review.environment, "written_environment": written_env,
    }


# --- parity ---------------------------------------------------------------------------------------------
def _parity(ws: Workspace, red: Redactor) -> dict | None:
    rows = parity_state.comparisons(ws)[-KEEP_COMPARISONS:]
    if not rows:
        return None
    latest = next((d for d in (parity_state.saved_report(ws, e) for e in reversed(rows)) if d is not None), None)
    return {"comparisons": [{"verdict": e.verdict, "passed": e.passed, "total": e.total,
                             "first_divergent": e.first_divergent, "tolerance": e.tolerance,
                             "label": e.label} for e in reversed(rows)],
            "latest": _comparison(latest, red) if latest is not None else None}


def _side(side, red: Redactor) -> dict:
    if not isinstance(side, dict):
        return {}
    keep = ("kind", "device", "device_name", "dtype", "torch", "cuda", "hip", "seed", "batch", "seq",
            "attn_implementation")
    out = {k: side[k] for k in keep if side.get(k) not in (None, "")}
    if isinstance(side.get("model"), dict):
        out["model"] = side["model"].get("name", "")
    if side.get("file"):
        out["file"] = red.path(side["file"])
    env = side.get("environment")
    if isinstance(env, dict):
        out["environment"] = env
    return out


def _layer_rows(layers) -> list[dict]:
    rows = []
    for layer in layers if isinstance(layers, list) else []:
        if not isinstance(layer, dict):
            continue
        m = layer.get("metrics") if isinstance(layer.get("metrics"), dict) else {}
        rows.append({"name": layer.get("name", "?"), "verdict": layer.get("verdict") or m.get("verdict", "?"),
                     "cosine": m.get("cosine"), "max_abs": m.get("max_abs"), "rel_l2": m.get("rel_l2"),
                     "triangle": layer.get("triangle")})
    return rows


def _comparison(data: dict, red: Redactor) -> dict:
    backward = data.get("backward")
    return {"headline": data.get("headline", ""), "verdict": data.get("verdict"),
            "tolerance": (data.get("tolerance") or {}).get("name") if isinstance(data.get("tolerance"), dict) else None,
            "first_divergent": data.get("first_divergent_module") or data.get("first_divergent"),
            "reference": _side(data.get("reference"), red), "candidate": _side(data.get("candidate"), red),
            "forward": _layer_rows(data.get("layers")),
            "backward": _layer_rows(backward.get("layers")) if isinstance(backward, dict) else [],
            "triangle_verdict": data.get("triangle_verdict"), "environment": data.get("environment")}


# --- train ----------------------------------------------------------------------------------------------
def _train(ws: Workspace, red: Redactor, full: bool) -> dict | None:
    runs = [r for r in train.load(ws).launched_runs if Path(r).is_dir()][:KEEP_RUNS]
    cals = [_calibration(c) for c in train.calibrations(ws)[:KEEP_CALIBRATIONS]]
    if not runs and not cals:
        return None
    return {"runs": [_run(ws, Path(r), red, full) for r in runs], "calibrations": cals}


def _calibration(cal) -> dict:
    """A calibration as the report shows it: where and when, the ceiling, and each measured config against what
    was predicted for it before it ran."""
    rows = []
    for m in cal.measurements:
        step_err = (m.predicted_step_s - m.step_s) / m.step_s if m.ok and m.step_s and m.predicted_step_s else None
        peak_err = (m.predicted_peak_gib - m.peak_gib) / m.peak_gib if m.ok and m.peak_gib and m.predicted_peak_gib \
            else None
        rows.append({"label": m.label, "ok": m.ok, "error": m.error, "step_s": m.step_s, "tokens_per_s": m.tokens_per_s,
                     "peak_gib": m.peak_gib, "step_err": step_err, "peak_err": peak_err})
    return {"machine": cal.machine, "created": cal.created, "gpu": cal.key.get("gpu"), "wall_s": cal.wall_s,
            "stopped": cal.stopped, "ceiling_tflops": cal.ceiling_tflops, "versions": cal.versions,
            "environment": cal.environment, "measurements": rows}


def _plan(ws: Workspace, config: Path) -> dict | None:
    """The plan of a run's config as hipwizard predicts it today (memory, the advisor's pick); None when
    the config cannot be planned (the run's own section still shows)."""
    from hipwizard.errors import UserError

    if not config.is_file():
        return None
    try:
        p = train.plan_file(config, ws=ws).to_dict()
    except (UserError, OSError, ValueError, TypeError):
        return None
    est, adv = p.get("estimate") or {}, p.get("advice") or {}
    best = next(iter(adv.get("suggestions") or []), None)
    return {"predicted_gib": est.get("total_gib"), "fits": est.get("fits"), "source": p.get("estimate_source"),
            "device": (p.get("device") or {}).get("name"), "device_vram_gib": (p.get("device") or {}).get("vram_gib"),
            "baseline": (adv.get("baseline") or {}).get("label"),
            "advice": best.get("label") if isinstance(best, dict) else None,
            "advice_speedup": best.get("speedup") if isinstance(best, dict) else None}


def _run(ws: Workspace, run_dir: Path, red: Redactor, full: bool) -> dict:
    info = train.run_info(run_dir, with_progress=False)
    manifest = _json(run_dir / "run.json")
    end = _json(run_dir / "exit.json")
    series: dict[str, list] = {"step": [], "loss": [], "lr": [], "throughput": [], "vram": []}
    log = _trainer_log(run_dir, manifest)
    for rec in log:
        step = rec.get("current_steps")
        if not isinstance(step, int) or rec.get("loss") is None:
            continue
        series["step"].append(step)
        series["loss"].append(rec.get("loss"))
        series["lr"].append(rec.get("lr"))
        series["throughput"].append(rec.get("throughput"))
        series["vram"].append(rec.get("vram_reserved"))
    config = _config_summary(run_dir / "config.yaml")
    out = {"name": info.name, "state": info.state, "symbol": info.symbol, "cause": info.cause,
           "started": info.started, "duration_s": end.get("duration_s"), "platform": manifest.get("platform"),
           "versions": manifest.get("versions") or {}, "steps": series["step"][-1] if series["step"] else None,
           "final_loss": series["loss"][-1] if series["loss"] else None, "series": series, "config": config,
           "environment": manifest.get("environment"), "run_dir": red.path(run_dir)}
    peak = [v for v in series["vram"] if isinstance(v, (int, float)) and v > 0]
    out["peak_vram_gib"] = max(peak) if peak else None
    out["plan"] = _plan(ws, run_dir / "config.yaml")
    if full:
        out["env_delta"] = manifest.get("env_delta") or {}
    return out


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
    from ruamel.yaml import YAML, YAMLError

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
