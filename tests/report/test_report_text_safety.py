"""Text from outside is inert in the report (real CLI): a GPU name from a paste, a capture's device and module
names, a run's name holding terminal escapes, HTML, Markdown links/images, markup and TeX ``$...$`` give a
Markdown file that renders no HTML, link or image of theirs, an HTML file that escapes them (as it always
did), and no control character in either; the charts draw the names as text."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from hipwizard.cli import main
from hipwizard.train.state import remember_run
from hipwizard.workspace import Workspace
from tests.doctor.test_text_safety import _paste
from tests.hostile_text import HOSTILE, assert_inert
from tests.parity.parity_captures import layer_outputs, write_capture

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EVIL = " ".join(HOSTILE.values())


def _hostile_workspace(tmp_path: Path, capsys) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    assert main(["doctor", "--paste", str(_paste(tmp_path, EVIL)), "--workspace", str(root)]) in (0, 1)
    outputs = {EVIL + k: v for k, v in layer_outputs().items()}
    a = write_capture(tmp_path / "a.safetensors", outputs, device_name=EVIL)
    b = write_capture(tmp_path / "b.safetensors", outputs, device_name=EVIL)
    assert main(["parity", "compare", str(a), str(b), "--workspace", str(root)]) == 0
    ws = Workspace.open(root)
    run = ws.state_dir / "runs" / "evil"
    shutil.copytree(FIXTURES / "report" / "run-demo-lora", run)
    manifest = json.loads((run / "run.json").read_text())
    manifest["name"] = EVIL + r" $\undefinedcommand{x}$"
    (run / "run.json").write_text(json.dumps(manifest))
    remember_run(ws, run)
    capsys.readouterr()
    return ws


def test_markdown_and_html_reports_keep_names_from_outside_inert(tmp_path, capsys):
    ws = _hostile_workspace(tmp_path, capsys)
    md_path, html_path = tmp_path / "x.md", tmp_path / "x.html"
    assert main(["report", str(ws.root), "--out", str(md_path)]) == 0
    assert main(["report", str(ws.root), "--out", str(html_path)]) == 0
    out, err = capsys.readouterr()
    assert_inert(out + err)
    md = md_path.read_text()
    assert_inert(md)
    for svg in (tmp_path / "x_files").glob("*.svg"):
        assert_inert(svg.read_text())
    assert "<script" not in md and "<img" not in md and "&lt;script&gt;" in md
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").enable("table").render(md)
    assert "<script" not in rendered and "onerror" not in rendered.replace("onerror=alert", "")
    assert 'href="javascript' not in rendered and 'src="http://x' not in rendered
    images = re.findall(r'<img src="([^"]+)"', rendered)
    assert images and all(src.startswith("x_files/") for src in images)  # only the report's own charts
    # every table row has as many cells as its header: a "|" in a name did not add a column
    for table in re.findall(r"<table>.*?</table>", rendered, re.S):
        widths = {len(re.findall(r"<t[hd]", row)) for row in re.findall(r"<tr>.*?</tr>", table, re.S)}
        assert len(widths) == 1, table[:400]
    assert r"\$x^2\$" in md  # TeX in a name stays text, also where the page renders math
    html = html_path.read_text()
    assert_inert(html)
    assert "<script" not in html and "<img" not in html and "&lt;script&gt;" in html
    assert "[bold]Instinct[/]" in html and "$x^2$" in html  # escaped, not removed
