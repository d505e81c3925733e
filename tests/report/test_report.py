"""``hipwizard report`` and ``hipwizard env`` through the real CLI, on a workspace made by hipwizard's own
commands (doctor replaying a real MI300X recording, hipify + write of the demo project) plus recorded real
parity and training artefacts (tests/fixtures/report/README.md)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from hipwizard.cli import main
from hipwizard.parity.compare.result import Comparison
from hipwizard.parity.state import record_comparison
from hipwizard.port.demo import DEMO_PROJECT
from hipwizard.train.state import remember_run
from hipwizard.workspace import Workspace

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MI300X = FIXTURES / "doctor" / "mi300x-8x-rocm62"
H200 = FIXTURES / "doctor" / "h200"
REPORT = FIXTURES / "report"


def _workspace(tmp_path: Path, capsys, doctor: Path = MI300X) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir(parents=True)
    assert main(["doctor", "--replay", str(doctor), "--workspace", str(root)]) in (0, 1)
    shutil.copytree(DEMO_PROJECT, root / "cuda")
    assert main(["hipify", str(root / "cuda"), "--out", str(root / "hip"), "--workspace", str(root),
                 "--backend", "builtin", "--accept-unflagged", "--no-check", "--json"]) == 0
    ws = Workspace.open(root)
    # a real comparison report, recorded by the parity step's own state module
    data = json.loads((REPORT / "compare-demo-bf16.json").read_text())
    record_comparison(ws, Comparison.from_dict(data))
    run = ws.state_dir / "runs" / "demo-lora"
    shutil.copytree(REPORT / "run-demo-lora", run)
    remember_run(ws, run)
    capsys.readouterr()
    return ws


def _sections(html: str) -> dict[str, str]:
    return dict(re.findall(r'<section id="([^"]+)">(.*?)</section>', html, re.S))


def test_html_report_is_one_self_contained_file_with_every_section(tmp_path, capsys):
    ws = _workspace(tmp_path, capsys)
    out = tmp_path / "report.html"
    assert main(["report", str(ws.root), "--out", str(out)]) == 0
    assert "✔ report written" in capsys.readouterr().out
    html = out.read_text()
    assert "<script" not in html and not re.search(r'(src|href)="(https?:)?//', html)  # opens with no network
    sections = _sections(html)
    assert list(sections) == ["summary", "doctor", "port", "parity", "train"]
    assert "gfx942" in sections["doctor"] and "8 x" in html
    port = sections["port"]
    assert "Flags by rule" in port and "Risks left on unchanged lines" in port and "WARP32_LITERAL" in port
    parity = sections["parity"]
    assert "model.layers.0.self_attn" in parity and "✔ pass" in parity and "<svg" in parity
    train = sections["train"]
    assert train.count("<svg") == 3 and "demo-lora" in train and "memory, predicted" in train
    # every step section carries an environment stamp (the port's: the MI300X the doctor replayed)
    assert html.count('class="stamp"') >= 3 and "Environment: 8 x" in port


def test_paths_and_environment_variables_only_with_full(tmp_path, capsys):
    ws = _workspace(tmp_path, capsys)
    home = str(Path.home())
    assert main(["report", str(ws.root), "--out", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "PYTHONUNBUFFERED" not in html and str(ws.root) not in html
    if home not in ("/", ""):
        assert home + "/" not in html
    assert main(["report", str(ws.root), "--out", str(tmp_path / "full.html"), "--full"]) == 0
    full = (tmp_path / "full.html").read_text()
    assert "PYTHONUNBUFFERED" in full and str(ws.root) in full


def test_markdown_report_links_its_charts_as_files_beside_it(tmp_path, capsys):
    ws = _workspace(tmp_path, capsys)
    out = tmp_path / "docs" / "migration.md"
    assert main(["report", str(ws.root), "--out", str(out)]) == 0
    text = out.read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(links) == 4 and all(link.startswith("migration_files/") for link in links)
    for link in links:
        assert (out.parent / link).read_text().lstrip().startswith("<svg")
    # GitHub tables: a header, a separator of the same width, rows with escaped pipes
    table = [line for line in text.splitlines() if line.startswith("| status | check")]
    assert table and text.splitlines()[text.splitlines().index(table[0]) + 1] == "|---|---|---|---|"
    assert "## 4 Train: the fine-tune" in text
    # rendered by a CommonMark parser with GitHub's table extension: real tables and images, no stray pipes
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").enable("table").render(text)
    assert html.count("<table>") == text.count("\n|---") and "| status |" not in html
    assert sorted(re.findall(r'<img src="([^"]+)"', html)) == sorted(links)


@pytest.mark.parametrize("out, why", [("r.txt", "FILE.html or FILE.md"), ("adir", "is a folder"),
                                      ("afile/r.html", "is a file, not a folder")])
def test_a_bad_out_is_one_line_and_nothing_is_written(tmp_path, capsys, out, why):
    ws = _workspace(tmp_path, capsys)
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["report", str(ws.root), "--out", str(tmp_path / out)]) == 2
    err = capsys.readouterr().err
    assert why in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_an_empty_workspace_reports_each_step_as_not_run(tmp_path, capsys):
    Workspace.open(tmp_path / "empty").touch()
    assert main(["report", str(tmp_path / "empty"), "--out", str(tmp_path / "e.md")]) == 0
    text = (tmp_path / "e.md").read_text()
    assert "The doctor has not run" in text and "No migration yet" in text
    assert "No comparison yet" in text and "No training run yet" in text
    assert "environment not recorded" not in text.lower() or "no doctor report" in text


def test_env_compares_two_artefacts_stamped_on_different_machines(tmp_path, capsys):
    a = _workspace(tmp_path / "a", capsys)
    b = _workspace(tmp_path / "b", capsys, doctor=H200)
    assert main(["env", str(a.root / "hip.review.json")]) == 0
    assert "gfx942" in capsys.readouterr().out
    assert main(["env", str(a.root / "hip.review.json"), str(a.root / "hip")]) == 0
    assert capsys.readouterr().out.startswith("= same environment")  # the review and its written tree
    assert main(["env", str(a.root / "hip.review.json"), str(b.root / "hip.review.json"), "--json"]) == 0
    differs = {d["field"]: (d["a"], d["b"]) for d in json.loads(capsys.readouterr().out)["differs"]}
    assert differs["gfx arch"][0] == "gfx942" and differs["gfx arch"][1] != "gfx942"
    assert "GPU" in differs
    assert main(["env", str(tmp_path)]) == 2
    assert "carries no environment stamp" in capsys.readouterr().err


@pytest.mark.slow
def test_parity_capture_and_comparison_carry_the_environment(tmp_path, capsys):
    root = tmp_path / "ws"
    root.mkdir()
    assert main(["doctor", "--replay", str(MI300X), "--workspace", str(root)]) in (0, 1)
    ref = root / "ref.safetensors"
    assert main(["parity", "capture", "--demo", "--dtype", "fp32", "--device", "cpu", "--out", str(ref),
                 "--workspace", str(root)]) == 0
    capsys.readouterr()
    assert main(["env", str(ref), "--json"]) == 0
    stamp = json.loads(capsys.readouterr().out)
    assert stamp["arch"] == "gfx942" and stamp["gpus"] == 8
    assert main(["parity", "compare", str(ref), "--demo", "--device", "cpu", "--workspace", str(root)]) == 0
    [saved] = sorted((root / ".hipwizard" / "parity").glob("compare-*.json"))
    capsys.readouterr()
    assert main(["env", str(saved), str(ref)]) == 0
    assert capsys.readouterr().out.startswith("= same environment")
    assert main(["report", str(root), "--out", str(tmp_path / "r.md")]) == 0
    parity = (tmp_path / "r.md").read_text().split("## 3 Parity")[1].split("## 4")[0]
    assert "> Environment: 8 x" in parity and "(gfx942)" in parity


def test_calibrations_are_a_train_subsection_with_prediction_errors(tmp_path, capsys):
    """The H200 calibration of issue 18 in a workspace with no run: the Train section shows it (machine, GPU,
    ceiling, each measured config with its time, rate, peak and how far the prediction was) in HTML and Markdown."""
    from hipwizard.train.calibration.corrections import Calibration
    from hipwizard.train.state import save_calibration

    ws = Workspace.open(tmp_path / "ws")
    data = json.loads((FIXTURES / "train" / "h200_calibration_issue18_run2.json").read_text())
    cal = Calibration.from_dict(data["calibrate"]["calibration"])
    save_calibration(ws, cal)
    assert main(["report", str(ws.root), "--out", str(tmp_path / "r.md")]) == 0
    text = (tmp_path / "r.md").read_text()
    assert "No training run yet" in text and "0 run(s)" not in text and "1 calibration(s)" in text
    assert "Calibration on vm (NVIDIA H200)" in text and "ceiling 669 TFLOP/s" in text
    first = cal.measurements[0]  # no DeepSpeed 16 x 1: predicted 61.8 GiB, measured 67.5
    row = next(line for line in text.splitlines() if line.startswith(f"| {first.label} |"))
    expected = (first.predicted_peak_gib - first.peak_gib) / first.peak_gib
    assert f"{expected:+.1%}" in row and f"{first.peak_gib:.2f} GiB" in row, row
    assert text.count("| ZeRO-2") == 2  # the other measured configs are rows too
    assert main(["report", str(ws.root), "--out", str(tmp_path / "r.html")]) == 0
    assert "Calibration on vm" in _sections((tmp_path / "r.html").read_text())["train"]


def test_a_report_file_edited_by_hand_or_not_ours_is_never_replaced_without_force(tmp_path, capsys):
    ws = Workspace.open(tmp_path / "ws")
    ws.touch()
    out = tmp_path / "r.md"
    for _ in range(2):  # hipwizard's own file, untouched: written again
        assert main(["report", str(ws.root), "--out", str(out)]) == 0
    out.write_text(out.read_text() + "\nmy note on the migration\n")
    capsys.readouterr()
    assert main(["report", str(ws.root), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "changed since hipwizard wrote it" in err[0] and "--force" in err[0]
    assert out.read_text().endswith("my note on the migration\n")  # the hand edit is kept
    mine = tmp_path / "notes.html"
    mine.write_text("<p>the user's own page</p>")
    assert main(["report", str(ws.root), "--out", str(mine)]) == 2
    assert mine.read_text() == "<p>the user's own page</p>"
    assert main(["report", str(ws.root), "--out", str(mine), "--force"]) == 0
    assert "<section" in mine.read_text()
    assert main(["report", str(ws.root), "--out", str(mine)]) == 0  # now hipwizard's: replaced freely
