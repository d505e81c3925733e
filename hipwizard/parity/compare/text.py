"""A comparison as plain text for the terminal and logs: the forward table, the gradients' table, the
triangle numbers beside the fixed table's, and the attention-backend matrix. Pure functions, no numpy."""

from __future__ import annotations

from hipwizard.parity.compare.result import Comparison, keep_every_element


def format_comparison(comp: Comparison) -> str:
    """Every table of ``comp`` (forward, then backward, then one summary line per attention backend),
    headline last."""
    ref, cand = comp.reference, comp.candidate
    lines = [
        f"reference: {ref.get('file')}  {ref.get('dtype')} on {ref.get('device_name') or ref.get('device')}  torch {ref.get('torch')}",
        f"candidate: {cand.get('file')}  {cand.get('dtype')} on {cand.get('device_name') or cand.get('device')}  torch {cand.get('torch')}",
    ]
    if comp.reference_run:
        rr = comp.reference_run
        lines.append(f"reference run dtype: {rr.get('file')}  {rr.get('dtype')} on "
                     f"{rr.get('device_name') or rr.get('device')}  (triangle: pass when error ≤ {comp.triangle_k:g} × its error)")
    lines += [
        f"tolerance: {comp.tolerance.get('name')} (cosine ≥ {comp.tolerance.get('cosine_min'):g}, "
        f"rel L2 ≤ {comp.tolerance.get('rel_l2_max'):g})",
    ]
    if comp.backward is not None:
        lines += ["", "forward (module outputs)"]
    lines += [""] + direction_table(comp) + _sketch_note(comp)
    if comp.backward is not None:
        bwd = comp.backward
        loss = bwd.candidate.get("backward", {}) if isinstance(bwd.candidate.get("backward"), dict) else {}
        lines += ["", f"backward (gradients of the {loss.get('loss', 'seeded')} loss, in backward order)", ""]
        lines += direction_table(bwd) + _sketch_note(bwd)
    if comp.matrix:
        lines += ["", "attention backends"] + matrix_lines(comp)
    lines += ["", comp.headline()]
    return "\n".join(lines)


def direction_table(comp: Comparison) -> list[str]:
    """One direction's rows: the fixed table's numbers and verdict, then the triangle's when given."""
    name_w = max([len("module")] + [len(layer.name) for layer in comp.layers])
    tri = comp.triangle_k is not None
    head = f"{'#':>3}  {'module':<{name_w}}  {'shape':<16} {'cosine':>12} {'max abs':>10} {'rel L2':>10} {'outside':>8}  {'fixed':<10}"
    if tri:
        head += f" {'ref own':>10} {'ratio':>7}  triangle"
    lines = [head]
    for layer in comp.layers:
        m = layer.metrics
        shape = "×".join(str(s) for s in layer.shape)
        if m is None:
            nums = f"{'—':>12} {'—':>10} {'—':>10} {'—':>8}"
        else:
            max_abs = "—" if m.max_abs is None else f"{m.max_abs:.3g}"
            outside = "—" if m.outside_share is None else f"{m.outside_share:.2%}"
            nums = f"{m.cosine:>12.8f} {max_abs:>10} {m.rel_l2:>10.3g} {outside:>8}"
        row = f"{layer.order:>3}  {layer.name:<{name_w}}  {shape:<16} {nums}  {layer.label:<10}"
        if tri:
            t = layer.triangle
            row += f" {t.ref:>10.3g} {t.ratio:>7.2f}  {t.label}" if t is not None else f" {'—':>10} {'—':>7}  —"
        if layer.name == comp.first_divergent:
            row += "  ◀ divergence starts"
        if layer.detail and not layer.passed:
            row += f"  ({layer.detail})"
        lines.append(row)
    return lines


def matrix_lines(comp: Comparison) -> list[str]:
    """One line per attention backend: forward and backward verdicts, worst errors, where divergence starts."""
    width = max(len(row.attn) for row in comp.matrix)
    out = []
    for row in comp.matrix:
        sub = row.comparison
        if sub is None:
            out.append(f"  {row.attn:<{width}}  ⚠ not available: {row.error or '?'}")
            continue
        parts = [f"forward {_summary(sub)}"]
        if sub.backward is not None:
            parts.append(f"backward {_summary(sub.backward)}")
        out.append(f"  {row.attn:<{width}}  " + "   ".join(parts))
    return out


def _sketch_note(comp: Comparison) -> list[str]:
    """The line under a table with sketched rows: what '—' means and how to keep every element."""
    forms = sorted({layer.metrics.sketch for layer in comp.layers if layer.metrics and layer.metrics.sketch})
    if not forms:
        return []
    how = "; ".join(dict.fromkeys(keep_every_element(f, comp.direction) for f in forms))
    return ["", f"— : not kept. Rows stored as {' / '.join(forms)}: cosine and rel L2 estimate the whole tensor's "
                f"(~1%); {how}"]


def _summary(comp: Comparison) -> str:
    worst = max((layer.metrics.rel_l2 for layer in comp.layers if layer.metrics is not None), default=float("nan"))
    mark = "✔" if comp.own_verdict == "pass" else "✖"
    text = f"{mark} {comp.own_verdict} (worst rel L2 {worst:.3g}"
    if comp.triangle_k is not None:
        ratio = max((layer.triangle.ratio for layer in comp.layers if layer.triangle is not None), default=float("nan"))
        text += f", worst ratio {ratio:.2f}"
    text += ")"
    if comp.own_verdict != "pass" and comp.first_divergent:
        text += f" from {comp.first_divergent}"
    return text
