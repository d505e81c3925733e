"""``hipwizard parity kernels``: the spec file through the CLI, bad input as one line (exit 2), and real drivers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hipwizard.cli import main

DEMO = Path(__file__).resolve().parents[3] / "hipwizard" / "assets" / "demo" / "cuda_project"


def test_spec_lists_the_demo_kernels_and_writes_the_spec_file(tmp_path, capsys):
    rc = main(["parity", "kernels", "spec", "--original", str(DEMO), "--workspace", str(tmp_path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert sorted(k["kernel"] for k in doc["kernels"]) == ["layernorm_kernel", "scale_bias_kernel", "softmax_kernel"]
    spec_file = Path(doc["spec_file"])
    assert spec_file.is_file() and "layernorm_kernel" in spec_file.read_text()


def test_bad_original_is_one_line_exit_2(tmp_path, capsys):
    rc = main(["parity", "kernels", "spec", "--original", str(tmp_path / "nope"), "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "no such folder" in err and "Traceback" not in err and err.count("\n") == 1


def test_a_damaged_spec_file_is_refused_not_overwritten(tmp_path, capsys):
    spec = tmp_path / ".hipwizard" / "parity" / "kernels.json"
    spec.parent.mkdir(parents=True)
    spec.write_text("{not json")
    rc = main(["parity", "kernels", "spec", "--original", str(DEMO), "--workspace", str(tmp_path)])
    assert rc == 2 and "does not read as JSON" in capsys.readouterr().err
    assert spec.read_text() == "{not json"


def test_a_bad_reference_in_the_spec_file_is_one_line_exit_2(tmp_path, capsys):
    assert main(["parity", "kernels", "spec", "--original", str(DEMO), "--workspace", str(tmp_path)]) == 0
    spec = tmp_path / ".hipwizard" / "parity" / "kernels.json"
    doc = json.loads(spec.read_text())
    doc["kernels"]["kernels/scale.cu::scale_bias_kernel"]["spec"]["reference"] = "x * (scale"
    spec.write_text(json.dumps(doc))
    capsys.readouterr()
    rc = main(["parity", "kernels", "spec", "--original", str(DEMO), "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "the reference of scale_bias_kernel does not parse" in err and err.count("\n") == 1
    assert "(--" not in err  # a field of the spec file, not a flag of the command


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_build_compiles_the_original_driver_with_nvcc(tmp_path, capsys):
    rc = main(["parity", "kernels", "build", "--original", str(DEMO), "--port", str(DEMO), "--kernel", "scale_*",
               "--workspace", str(tmp_path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    row = doc["kernels"][0]
    assert row["kernel"] == "scale_bias_kernel" and row["original_built"] is True
    assert rc in (0, 1)  # the port side is the CUDA tree itself here: hipcc may refuse it, the original must build
