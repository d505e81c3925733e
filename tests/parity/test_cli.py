"""The headless commands, through hipwizard.cli.main (exit codes, messages, workspace records)."""

from __future__ import annotations

import json

import numpy as np

from hipwizard.cli import main
from hipwizard.parity.state import curves_spec, latest_comparison, summarize
from hipwizard.workspace import Workspace
from tests.parity.parity_captures import layer_outputs, write_capture


def test_compare_two_files_pass_records_workspace(tmp_path, capsys):
    out = layer_outputs()
    a = write_capture(tmp_path / "a.safetensors", out)
    b = write_capture(tmp_path / "b.safetensors", out)
    rc = main(["parity", "compare", str(a), str(b), "--workspace", str(tmp_path)])
    text = capsys.readouterr().out
    assert rc == 0 and "✔ pass — 4/4 modules within fp32 tolerance" in text
    ws = Workspace(tmp_path)
    assert summarize(ws).state == "done"
    assert latest_comparison(ws).counts == (4, 4)


def test_compare_failure_exit_1_and_json(tmp_path, capsys):
    out = layer_outputs()
    noisy = {k: v + (0.5 if k.endswith("2.mlp") else 0) for k, v in out.items()}
    a = write_capture(tmp_path / "a.safetensors", out)
    b = write_capture(tmp_path / "b.safetensors", noisy)
    rc = main(["parity", "compare", str(a), str(b), "--json", "--no-save"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 1 and data["verdict"] == "fail" and data["first_divergent"] == "model.layers.2.mlp"
    assert not (tmp_path / ".hipwizard").exists()


def test_bad_inputs_exit_2_with_one_line(tmp_path, capsys):
    out = layer_outputs()
    a = write_capture(tmp_path / "a.safetensors", out)
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(a.read_bytes()[:-64])
    assert main(["parity", "compare", str(a), str(cut), "--no-save"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("hipwizard: error:") and "truncated" in err and "Traceback" not in err
    other = write_capture(tmp_path / "o.safetensors", out, model={"config_hash": "zz", "weights_hash": "w0"})
    assert main(["parity", "compare", str(a), str(other), "--no-save"]) == 2
    assert "different models" in capsys.readouterr().err
    fewer = write_capture(tmp_path / "f.safetensors", {k: v for k, v in list(out.items())[:2]})
    assert main(["parity", "compare", str(a), str(fewer), "--workspace", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "✖ missing" in captured.out and "missing from the candidate" in captured.err
    assert summarize(Workspace(tmp_path)).state == "attention"
    assert main(["parity", "compare", "--no-save"]) == 2
    assert main(["parity", "compare", str(a), "--no-save"]) == 2
    assert main(["parity", "compare", str(a), str(a), "--tol", "bogus=1", "--no-save"]) == 2


def test_nan_exits_1_and_says_nan(tmp_path, capsys):
    out = layer_outputs()
    bad = {k: v.copy() for k, v in out.items()}
    bad["model.layers.0.mlp"][:] = np.inf
    a = write_capture(tmp_path / "a.safetensors", out)
    b = write_capture(tmp_path / "b.safetensors", bad)
    assert main(["parity", "compare", str(a), str(b), "--no-save"]) == 1
    assert "✖ Inf" in capsys.readouterr().out


def test_curves_command(tmp_path, capsys):
    import shutil
    from pathlib import Path

    fix = Path(__file__).parent.parent / "fixtures" / "llamafactory"
    for name in ("plain", "zero3"):
        (tmp_path / name).mkdir()
        shutil.copy(fix / f"trainer_log-8b-lora-{name}-h200.jsonl", tmp_path / name / "trainer_log.jsonl")
    rc = main(["parity", "curves", str(tmp_path / "plain"), str(tmp_path / "zero3"), "--workspace", str(tmp_path)])
    assert rc == 0 and "✔ match" in capsys.readouterr().out
    assert curves_spec(Workspace(tmp_path)).run_b.endswith("zero3")
    assert main(["parity", "curves", str(tmp_path / "plain"), str(tmp_path / "zero3"), "--threshold", "0.001",
                 "--no-save"]) == 1
