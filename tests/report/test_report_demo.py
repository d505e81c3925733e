"""`hipwizard report --demo DIR`: every step of the embedded demo is run for real in DIR (live doctor, hipify
and write of the demo project, parity of the tiny Llama forward and backward against an fp64 CPU reference,
an 8-step LoRA run with the real llamafactory-cli), then the full report is written; a second call reuses
what is there."""

from __future__ import annotations

import time

import pytest

from hipwizard.cli import main


@pytest.mark.slow
def test_report_demo_runs_each_step_once_and_reports_them_all(tmp_path, capsys):
    out = tmp_path / "demo" / "report.md"
    assert main(["report", "--demo", str(tmp_path / "demo"), "--out", str(out)]) == 0
    text = out.read_text()
    assert "○ not run" not in text and "○ no " not in text and "○ not started" not in text  # every step ran
    assert "### Modules, backward" in text and "∂W " in text  # parity with gradients
    assert "### ✔ demo-lora-" in text and "memory, predicted" in text
    for section in ("## 2 Port", "## 3 Parity", "## 4 Train"):  # each artefact stamped where it was made
        assert text.split(section)[1].split("\n## ")[0].count("> Environment: ") >= 1, section
    assert len(list((out.parent / "report_files").glob("*.svg"))) == 5  # fwd + bwd depth, loss, lr, throughput
    capsys.readouterr()
    start = time.monotonic()
    assert main(["report", "--demo", str(tmp_path / "demo"), "--out", str(tmp_path / "again.html")]) == 0
    assert time.monotonic() - start < 30  # nothing is run again: only the report is written
    assert "<section id=\"train\">" in (tmp_path / "again.html").read_text()
