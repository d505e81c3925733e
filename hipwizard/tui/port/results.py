"""The Port screen's results list: after a Write, one row per file, one per compile error (selecting an error
opens its hunk), then the risks on unchanged lines still to edit by hand (the write does not change those
lines); and, whenever the review has them, the APIs the translation reported (newer than the target HIP,
unsupported, removed)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets.option_list import Option

from hipwizard import port
from hipwizard.port import newest_known


def result_options(report, review=None) -> list[Option]:
    """Rows for an ``ApplyReport``; an error row's id is ``"err|<hunk id>"`` when it maps to a hunk.
    With the ``ReviewState`` written, a count of its risks on unchanged lines and one row per file
    with such risks (line numbers in the written file)."""
    rows: list[Option] = []
    for n, f in enumerate(report.files):
        if f.status == "conflict":  # listed with the resolve choices by ``worktree_options``
            continue
        line = f"{f.symbol} {f.path} — {f.status}" + (f", compile {f.check}" if f.check else "")
        detail = "" if f.detail == report.check_note else f.detail  # the write's note is said once, below
        rows.append(Option(Text(line + (f": {detail}" if detail else "")), id=f"file{n}|"))
        for k, e in enumerate(f.errors):
            where = "→ open its hunk (Enter)" if e.hunk_id else "(outside the reviewed hunks)"
            text = Text(f"    ✖ L{e.line}: {e.message}  {where}")
            rows.append(Option(text, id=f"err{n}.{k}|{e.hunk_id}" if e.hunk_id else None))
        ahead = getattr(report, "ahead", {}).get(f.path, [])
        if ahead:  # a missing library header stopped the unit: what the compiler never reached
            rows.append(Option(Text(f"    ⚠ {len(ahead)} flagged line(s) after the stop, not compiled: "
                                    + ", ".join(ahead[:6]) + (" ..." if len(ahead) > 6 else "")), disabled=True))
    if report.arch or report.check_note:
        said = f"compile-checked for {report.arch}" if report.arch else ""
        if said and getattr(report, "check_how", ""):
            said += f" (flags from {report.check_how})"
        said = f"{said}: {report.check_note}" if said and report.check_note else (said or report.check_note)
        rows.append(Option(Text(f"ℹ {said}"), disabled=True))
    untouched = {f: risks for f, risks in review.untouched.items() if risks} if review is not None else {}
    if untouched:
        total = sum(len(r) for r in untouched.values())
        rows.append(Option(Text(f"⚑ {total} risks on unchanged lines need a manual edit:"), disabled=True))
        for f, risks in untouched.items():
            lines = ", ".join(f"L{review.written_line(f, r)} {r.flag.rule_id}" for r in risks)
            rows.append(Option(Text(f"    ⚑ {f}: {lines}"), disabled=True))
    return rows


def worktree_options(review, status: port.WorktreeStatus, written=None, hunks=()) -> list[Option]:
    """Rows for the output folder as a working tree (``port.worktree_status``): each file whose write met
    conflicting hand edits (the user's file kept; how to settle it whole; its row's id is
    ``"conflict|<path>"``) with, under it, each of its conflicts (``hunks``: ``worktree_hunks.OutputHunk``)
    to decide on its own (id ``"region|<n>|<path>"``); the user's edits that every write keeps; then the
    decided hunks that vanished from the translation. ``written``: the last ``ApplyReport``, whose
    conflicts are shown even before the record is read again."""
    conflicts = dict(status.conflicts)
    for f in (written.conflicts if written is not None else ()):
        conflicts.setdefault(f.path, f.detail)
    rows: list[Option] = []
    if status.error:
        rows.append(Option(Text(f"✖ {status.error}"), disabled=True))
    if conflicts:
        rows.append(Option(Text(f"✖ {len(conflicts)} file(s) in conflict with your edits (your file kept). Settle "
                                f"each here (highlight it, m or Enter) or: hipwizard review {review.out} "
                                f"--resolve PATH=mine|new|merged"), disabled=True))
        for rel, why in conflicts.items():
            rows.append(Option(Text(f"    ✖ {rel}: {why.split('; your file')[0]}  → m: settle the file"),
                               id=f"conflict|{rel}"))
            for h in (h for h in hunks if h.kind == "conflict" and h.file == rel):
                state = f"✔ {h.choice}" if h.choice else "○ undecided"
                rows.append(Option(Text(f"        {state}  #{h.index} L{h.line}: yours {_first(h.old)} · new "
                                        f"{_first(h.new)}  → m: decide"), id=f"region|{h.index}|{rel}"))
    edits = [h for h in hunks if h.kind == "yours"]
    if edits:
        rows.append(Option(Text(f"✎ {len(edits)} edit(s) of yours in the output, kept on every write:"), disabled=True))
        for h in edits:
            rows.append(Option(Text(f"    ✎ {h.ref} L{h.line}: -{len(h.old)} +{len(h.new)}  {_first(h.new)}"),
                               disabled=True))
    if review.vanished:
        rows.append(Option(Text(f"✗ {len(review.vanished)} decided hunk(s) vanished from the translation:"),
                           disabled=True))
        for v in review.vanished:
            rows.append(Option(Text(f"    ✗ {v.get('file')}:{v.get('old_start')}  was "
                                    f"{v['decision'].get('state', '?')}"), disabled=True))
    return rows


def _first(lines: list[str], width: int = 28) -> str:
    """The first non-blank line of a side, shortened (``(nothing)`` for an empty side)."""
    text = next((x.strip() for x in lines if x.strip()), "")
    if not text:
        return "(nothing)"
    return repr(text if len(text) <= width else text[: width - 1] + "…")


API_HEADINGS = {"too_new": "⚠ {n} API(s) newer than the target ROCm/HIP {hip}:",
                "opt_in": "⚠ {n} API(s) opt-in on the target ROCm/HIP {hip} (a define each):",
                "unsupported": "✖ {n} API(s) HIP does not have:",
                "removed": "✖ {n} API(s) removed from the target HIP {hip}:"}


def target_label(review) -> str:
    """The ROCm/HIP version the review's APIs were checked against: the doctor's / given one, else the default."""
    return review.hip_version or f"{newest_known()} (default: newest in HIPIFY's tables)"


def api_options(review) -> list[Option]:
    """Rows for the API diagnostics kept with the review (newer than the target HIP, unsupported, removed):
    a heading per kind naming the APIs, then one row per place; a place inside a hunk opens it (Enter). A line
    the review's budget folded into another (``folded_into``) has no row: the row standing for it names it."""
    rows: list[Option] = []
    for kind, heading in API_HEADINGS.items():
        names = review.api_counts(kind)
        if not names:
            continue
        text = heading.format(n=len(names), hip=target_label(review)) + " " + ", ".join(names)
        rows.append(Option(Text(text), disabled=True))
        for rel, diags in review.diagnostics.items():
            for k, d in enumerate(diags):
                if d.kind != kind or d.folded_into:  # a folded line is named on the row that stands for it
                    continue
                hunk_id = _hunk_at(review, rel, d.line)
                where = "  → Enter: its hunk" if hunk_id else ""
                what = d.message.split("; this runtime is", 1)[0].split(" (you target", 1)[0]  # the heading names it
                rows.append(Option(Text(f"    {rel}:{d.line}  {what}{port.fold_note(d, diags)}{where}"),
                                   id=f"api.{kind}.{rel}.{k}|{hunk_id}" if hunk_id else None))
    return rows


def _hunk_at(review, rel: str, line: int | None) -> str | None:
    """The hunk of ``rel`` whose original lines hold ``line``."""
    if line is None:
        return None
    for i in review.by_file.get(rel, ()):
        h = review.hunks[i]
        if h.old_start <= line < h.old_start + max(len(h.old_lines), 1):
            return h.hunk_id
    return None
