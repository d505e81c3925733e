"""Render the report's blocks (``document``) as one self-contained HTML file or as Markdown with its charts
as SVG files beside it, written atomically.

HTML: inline CSS and inline SVG, no script, no external resource, so it opens with no network and can be
attached to a ticket as one file. Every text is made inert (``hipwizard.textsafe``): HTML-escaped with no control
character; in Markdown, no raw HTML, link, image, math or stray cell boundary from a name. Markdown:
GitHub-flavoured tables; each chart is ``<name>.svg`` in a
``<report>_files/`` folder next to the ``.md``, linked relatively, so the pair renders on GitHub.
"""

from __future__ import annotations

import html
from pathlib import Path
from urllib.parse import quote

from hipwizard.atomic import atomic_write_text
from hipwizard.doctor import STAMP_LABELS
from hipwizard.report.document import stamp_text
from hipwizard.textsafe import inert, markdown

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 70rem; margin: 2rem auto;
       padding: 0 1rem; color: #1b1f24; }
h1 { font-size: 1.6rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #d0d7de; padding-bottom: .2rem; }
table { border-collapse: collapse; margin: .6rem 0; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } .stamp { font: 12px ui-monospace, monospace; background: #f6f8fa;
padding: .3rem .5rem; border-left: 3px solid #8c959f; } .note { color: #57606a; font-size: 12px; }
figure { margin: .8rem 0; } figure svg { max-width: 100%; height: auto; }
"""


def _stamp_details(fp: dict) -> list[tuple[str, str]]:
    rows = [(label, str(fp.get(key))) for key, label in STAMP_LABELS.items() if fp.get(key) not in (None, "")]
    rows += [(name, v) for name, v in (fp.get("packages") or {}).items()]
    return rows


def to_html(blocks: list[tuple]) -> str:
    def e(text) -> str:  # names from outside (GPU, run, module, file): escaped, no control character
        return html.escape(inert(text, keep="\n"))

    title = next((b[1] for b in blocks if b[0] == "h1"), "hipwizard report")
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{e(title)}</title><style>{CSS}</style></head><body>"]
    section_open = False
    for b in blocks:
        kind = b[0]
        if kind == "h2":
            if section_open:
                parts.append("</section>")
            parts.append(f'<section id="{e(b[2])}"><h2>{e(b[1])}</h2>')
            section_open = True
        elif kind in ("h1", "h3"):
            parts.append(f"<{kind}>{e(b[1])}</{kind}>")
        elif kind == "p":
            parts.append(f"<p>{e(b[1])}</p>")
        elif kind == "note":
            parts.append(f'<p class="note">{e(b[1])}</p>')
        elif kind == "stamp":
            details = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in _stamp_details(b[1]))
            parts.append(f'<details class="stamp"><summary>{e(stamp_text(b[1]))}</summary>'
                         f"<table>{details}</table></details>")
        elif kind == "table":
            head = "".join(f"<th>{e(h)}</th>" for h in b[1])
            rows = "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>" for row in b[2])
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif kind == "chart":
            parts.append(f'<figure id="{e(b[1])}">{b[2]}</figure>')  # SVG made by matplotlib from our numbers
    if section_open:
        parts.append("</section>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def to_markdown(blocks: list[tuple], files_dir: str) -> tuple[str, dict[str, str]]:
    """(Markdown text, {file name: SVG text}) — the charts are linked as ``files_dir/<name>.svg``."""
    out: list[str] = []
    images: dict[str, str] = {}
    for b in blocks:
        kind = b[0]
        if kind in ("h1", "h2", "h3"):
            out.append({"h1": "#", "h2": "##", "h3": "###"}[kind] + " " + markdown(b[1]))
        elif kind == "p":
            out.append(markdown(b[1]))
        elif kind == "note":
            out.append(f"_{markdown(b[1])}_")
        elif kind == "stamp":
            out.append(f"> {markdown(stamp_text(b[1]))}")
        elif kind == "table":
            out.append("| " + " | ".join(markdown(h) or " " for h in b[1]) + " |")
            out.append("|" + "---|" * len(b[1]))
            out += ["| " + " | ".join(markdown(c) for c in row) + " |" for row in b[2]]
        elif kind == "chart":
            images[f"{b[1]}.svg"] = b[2]
            out.append(f"![{markdown(b[1])}]({quote(files_dir)}/{quote(b[1])}.svg)")
        out.append("")
    return "\n".join(out), images


def files(blocks: list[tuple], path: Path) -> dict[Path, str]:
    """The files of the report at ``path`` (``.html``/``.htm`` or ``.md``), the report first, with their text.
    Raises ``ValueError`` for another suffix."""
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):
        return {path: to_html(blocks)}
    if suffix not in (".md", ".markdown"):
        raise ValueError(f"{path.name}: the report is written as .html or .md, not {suffix or 'no suffix'}")
    files_dir = f"{path.stem}_files"
    text, images = to_markdown(blocks, files_dir)
    return {path: text, **{path.parent / files_dir / name: svg for name, svg in images.items()}}


def write(contents: dict[Path, str]) -> list[Path]:
    """Write ``files``' result, the charts before the report that links them; returns the files written.
    Raises ``OSError`` when one cannot be written."""
    report, *charts = contents
    for target in charts:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, contents[target])
    atomic_write_text(report, contents[report])
    return [report, *charts]
