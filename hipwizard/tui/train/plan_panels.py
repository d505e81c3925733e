"""Text of the Plan tab's side panels (validation, memory, advisor) and the form's labels, from a ``Plan``.

Pure functions returning Rich ``Text`` so ``plan.py`` stays layout and wiring. ``narrow`` versions drop
what matters least first (the memory bars), and the form's labels get short names, the YAML key moving
into the field's help line, so nothing needed is cut off in an 80-column terminal.
"""

from __future__ import annotations

from rich.text import Text

from hipwizard.train import SOURCE_WORDS, Plan, field_help

GROUP_TITLES = {"model": "Model", "method": "Method", "data": "Data", "training": "Training",
                "distributed": "Distributed (DeepSpeed)", "output": "Output"}

# Labels of the narrow form (at most SHORT_WIDTH characters); keys not listed are short enough already.
SHORT_WIDTH = 14
SHORT_LABELS = {
    "model_name_or_path": "model", "quantization_bit": "quantization", "trust_remote_code": "remote code",
    "finetuning_type": "finetuning", "preprocessing_num_workers": "prep workers",
    "per_device_train_batch_size": "batch / GPU", "gradient_accumulation_steps": "grad accum",
    "num_train_epochs": "epochs", "lr_scheduler_type": "lr schedule",
    "disable_gradient_checkpointing": "no grad ckpt", "offload_optimizer": "offload optim",
    "overwrite_output_dir": "overwrite out", "save_only_model": "only model",
    "resume_from_checkpoint": "resume from", "enable_liger_kernel": "liger kernel",
    "dataloader_num_workers": "loader workers", "use_unsloth_gc": "unsloth ckpt",
    "group_by_length": "length groups",
}


def label(name: str, narrow: bool) -> str:
    return SHORT_LABELS.get(name, name) if narrow else name


def help_line(name: str, narrow: bool) -> str:
    """The field's help; a shortened label's help starts with the YAML key it stands for."""
    text = field_help(name)
    return f"{name}: {text}" if narrow and label(name, True) != name else text


def issues_text(plan: Plan | None) -> Text:
    text = Text("Validation\n", style="bold")
    issues = plan.issues if plan else []
    if not issues:
        text.append("✔ ok: no problems found\n", style="green")
    styles = {"error": "red", "warning": "yellow", "info": "cyan"}
    for issue in issues:
        text.append(issue.line() + "\n", style=styles[issue.severity])
    return text


def memory_text(plan: Plan | None, narrow: bool = False) -> Text:
    est = plan.estimate if plan else None
    dev = plan.device if plan else None
    text = Text(f"Memory per GPU — {dev.name if dev else '?'}"
                f"{f', {dev.vram_gib:g} GiB' if dev and dev.vram_gib else ''}\n", style="bold")
    if plan is None or est is None or not est.available:
        text.append(f"✖ {est.reason if est else 'no estimate'}\n", style="red")
        return text
    scale = max(est.device_vram_gib or est.total_gib, est.total_gib) or 1.0
    # narrow: as wide as the longest name (one line per part), numbers one column shorter
    name_w = max(len(p.name) for p in est.parts) + 1 if narrow else 18
    num_w = 6 if narrow else 7
    for part in est.parts:
        text.append(f"{part.name:<{name_w}}{part.gib:{num_w}.1f} GiB")
        if not narrow:  # the bars go first when space is short: the numbers say the same
            text.append(" " + "█" * max(0, round(24 * part.gib / scale)))
        text.append("\n")
    text.append(f"{'total':<{name_w}}{est.total_gib:{num_w}.1f} GiB\n", style="bold")
    text.append(f"↳ {SOURCE_WORDS.get(plan.source, plan.source)}"
                f"{': corrected by calibration' if plan.source != 'predicted' else ''}\n", style="dim")
    if est.fits is not None:
        word = "✔ fits" if est.fits else "✖ does not fit"
        text.append(f"{word}: margin {est.margin_gib:.1f} GiB\n", style="green" if est.fits else "red")
    return text


def suggestions(plan: Plan | None, top: int = 5) -> list:
    advice = plan.advice if plan else None
    return [c for c in (advice.ranked if advice else []) if c.changes][:top]


def advice_text(plan: Plan | None, selected: int) -> Text:
    advice = plan.advice if plan else None
    planned = advice is not None and advice.baseline is not None and advice.baseline.wall_s is not None
    order = f"shortest {plan.config.max_steps}-step run first" if plan is not None and planned else "fastest first"
    text = Text(f"Advisor — same effective batch, {order}\n", style="bold")
    if advice is None or advice.reason:
        text.append(f"⚠ {advice.reason if advice else 'no advice'}\n", style="yellow")
        return text
    text.append(calibration_line(advice.calibration) + "\n", style="italic")
    ranked = suggestions(plan)
    calibrated = any(c.source != "predicted" for c in advice.ranked)
    if not ranked:
        text.append("✔ your config is already the fastest that fits\n", style="green")
    for n, cand in enumerate(ranked):
        mark = "▶" if n == selected else " "
        text.append(f"{mark} {cand.speedup:4.2f}x  {cand.label}", style="bold" if n == selected else "")
        # Without a calibration every number is predicted and the line above says so once.
        text.append(f"  · {cand.source_words}\n" if calibrated else "\n", style="dim")
    if ranked:
        for reason in ranked[selected].reasons:
            text.append(f"  · {reason}\n", style="dim")
        if ranked[selected].wall_s is not None:  # ranked by the run planned (max_steps), extras measured or prior
            text.append(f"  · {ranked[selected].planned_words}\n", style="dim")
        text.append("ctrl+g applies ▶, ctrl+n picks the next\n", style="italic")
    return text  # the knobs not offered come after, folded (``not_offered_title``, ``not_offered_text``)


def not_offered_lines(plan: Plan | None) -> list[str]:
    """Why each knob the advisor does not propose is not (``Advice.not_offered``); none where it gave no advice."""
    advice = plan.advice if plan else None
    return [] if advice is None or advice.reason else list(advice.not_offered)


def not_offered_title(plan: Plan | None, expanded: bool) -> str:
    """The one line the not-offered knobs take while folded, saying how to unfold them. Our own words and a
    count only: the caller may render it as markup."""
    count = len(not_offered_lines(plan))
    knobs = "knob" if count == 1 else "knobs"
    return f"{count} {knobs} not offered (ctrl+o/click: {'hide' if expanded else 'why'})"


def not_offered_text(plan: Plan | None) -> Text:
    """One line per knob not offered, and why (a symbol and words, not colour; the reasons never read as markup)."""
    return Text("\n").join(Text(f"○ {line}", style="dim") for line in not_offered_lines(plan))


def calibration_line(why: str) -> str:
    """Which calibration the advisor's numbers use (``Advice.calibration``), with the key that makes one."""
    if not why or why.startswith("no calibration"):
        return "ℹ predicted (H200-fitted model); C calibrates here"
    return f"ℹ {why}"
