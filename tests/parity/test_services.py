"""The Parity services both faces call: requests, compare (and its record), capture's refusals, curves."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hipwizard.errors import UserError
from hipwizard.parity import services
from hipwizard.parity.requests import (
    CompareRequest,
    RunOptions,
    Subject,
    TolerancePolicy,
    demo_request,
)
from hipwizard.parity.state import curves_spec, latest_comparison, summarize
from hipwizard.progress import Progress
from hipwizard.workspace import Workspace
from tests.parity.parity_captures import layer_outputs, write_capture

FIX = Path(__file__).parent.parent / "fixtures"


def test_request_says_which_way_or_why_not():
    ref, cand = Path("r.safetensors"), Path("c.safetensors")
    assert CompareRequest(ref=ref, cand=cand).how == "two captures"
    assert CompareRequest(ref=ref, subject=Subject(demo=True)).how == "re-run of reference inputs"
    assert demo_request("fp16").how == "same machine"
    for bad, words in [(CompareRequest(), "give a reference capture"),
                       (CompareRequest(ref=ref), "compare REF with what"),
                       (CompareRequest(ref=ref, cand=cand, subject=Subject(demo=True)), "not both"),
                       (CompareRequest(ref=ref, same_machine=True, subject=Subject(demo=True)), "takes no capture file")]:
        with pytest.raises(UserError, match=words):
            _ = bad.how


def test_request_round_trips_through_json():
    import json

    request = CompareRequest(ref=Path("/x/r.safetensors"), subject=Subject(harness=Path("h.py")),
                             options=RunOptions(dtype="bf16", device="cpu", layers=["model.*"], perturb={"m": 0.1}),
                             tolerance=TolerancePolicy("fp16", {"atol": 0.5}, Path("t.yaml"), 3.0), keep=Path("k"))
    assert CompareRequest.from_dict(json.loads(json.dumps(request.to_dict()))) == request
    assert CompareRequest.from_dict(demo_request("fp32").to_dict()) == demo_request("fp32")


def test_compare_two_captures_records_the_workspace(tmp_path):
    a = write_capture(tmp_path / "a.safetensors", layer_outputs())
    b = write_capture(tmp_path / "b.safetensors", {k: v * 1.5 for k, v in layer_outputs().items()})
    ws = Workspace(tmp_path)
    seen: list[Progress] = []
    outcome = services.run_comparison(CompareRequest(ref=a, cand=b), ws=ws, progress=seen.append)
    assert outcome.how == "two captures" and outcome.exit_code == 1 and outcome.report.is_file()
    assert [p.stage for p in seen] == ["compare"]
    assert latest_comparison(ws).verdict == "fail" and summarize(ws).state == "attention"
    lenient = services.run_comparison(CompareRequest(ref=a, cand=b, tolerance=TolerancePolicy(overrides={
        "cosine_min": 0.0, "rel_l2_max": 1.0, "outside_max": 1.0})))
    assert lenient.exit_code == 0 and lenient.report is None  # no workspace: nothing recorded
    assert latest_comparison(ws).verdict == "fail"


def test_capture_needs_a_subject(tmp_path):
    with pytest.raises(UserError, match="say what to capture"):
        services.run_capture(None, RunOptions(), tmp_path / "x.safetensors")
    with pytest.raises(UserError, match="does not exist"):
        services.run_capture(Subject(model=tmp_path / "nowhere"), RunOptions(device="cpu"), tmp_path / "x.safetensors")


def test_capture_replaces_an_earlier_capture_but_no_other_file(tmp_path):
    """A capture at --out replaces the capture hipwizard wrote there; any other file is refused before a model
    runs and left as it was."""
    out = tmp_path / "ref.safetensors"
    write_capture(out, layer_outputs(seed=1))
    services.check_output(out)  # a capture of ours: may be replaced
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    with pytest.raises(UserError, match="exists and is not a hipwizard capture: it is not replaced"):
        services.check_output(weights)
    assert weights.read_bytes().startswith(b"\x08")


def test_curves_are_remembered_and_read_back(tmp_path):
    ws = Workspace(tmp_path)
    assert services.recorded_curves(ws) is None
    for run in ("plain", "zero3"):
        (tmp_path / run).mkdir()
        shutil.copy(FIX / "llamafactory" / f"trainer_log-8b-lora-{run}-h200.jsonl", tmp_path / run / "trainer_log.jsonl")
    gap = services.curves(tmp_path / "plain", tmp_path / "zero3", smoothing=0.5, ws=ws)
    assert not gap.diverged and curves_spec(ws).smoothing == 0.5
    again = services.recorded_curves(ws)
    assert again.as_dict() == gap.as_dict()
    shutil.rmtree(tmp_path / "zero3")
    with pytest.raises(UserError):
        services.recorded_curves(ws)
