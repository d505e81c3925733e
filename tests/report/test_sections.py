"""The report's record is dataclasses (hipwizard/report/sections.py): ``collect`` reads the steps' saved JSON
into typed rows at the edge, and the home folder is written ``~`` inside every record it holds."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from hipwizard.parity import Comparison
from hipwizard.parity.state import record_comparison
from hipwizard.report.collect import collect
from hipwizard.report.document import build
from hipwizard.report.sections import ComparisonSummary, LayerRow, ParitySection, Record
from hipwizard.workspace import Workspace

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "parity"


def _workspace(tmp_path: Path, monkeypatch) -> tuple[Workspace, Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    ws = Workspace.open(tmp_path / "ws")
    ws.touch()
    comp = Comparison.from_dict(json.loads((FIX / "compare-demo-bf16-pass.json").read_text()))
    comp.layers[0].name = f"{home}/secret.layer"  # text from outside that names the home folder
    record_comparison(ws, comp, "first")
    return ws, home


def test_collect_makes_typed_sections_and_writes_the_home_folder_as_tilde(tmp_path, monkeypatch):
    ws, home = _workspace(tmp_path, monkeypatch)
    record = collect(ws)
    assert isinstance(record, Record) and record.doctor is None and record.port is None and record.train is None
    assert isinstance(record.parity, ParitySection) and isinstance(record.parity.latest, ComparisonSummary)
    rows = record.parity.latest.forward
    assert rows and all(isinstance(r, LayerRow) for r in rows)
    assert rows[0].name == "~/secret.layer" and rows[0].verdict == "pass" and isinstance(rows[0].rel_l2, float)
    assert [e.label for e in record.parity.comparisons] == ["first"]
    assert not dataclasses.is_dataclass(record.environment)  # a stamp stays the doctor's map
    full = collect(ws, full=True).parity.latest.forward[0]
    assert full.name == f"{home}/secret.layer"
    assert any(b[0] == "table" and any("~/secret.layer" in c for row in b[2] for c in row) for b in build(record))


def test_a_damaged_saved_comparison_reads_as_rows_with_what_is_there(tmp_path, monkeypatch):
    ws, _ = _workspace(tmp_path, monkeypatch)
    report = next((ws.state_dir / "parity").glob("compare-*.json"))
    data = json.loads(report.read_text())
    data["layers"] = [{"name": "a", "metrics": {"cosine": "x", "rel_l2": True}}, "not a layer", {"metrics": []}]
    data["reference"], data["tolerance"] = [1, 2], "bf16"
    report.write_text(json.dumps(data))
    latest = collect(ws).parity.latest
    assert latest.forward == [LayerRow("a", "?", None, None, None), LayerRow("?", "?", None, None, None)]
    assert latest.tolerance is None and latest.reference.dtype == "" and latest.candidate.dtype == "bf16"
