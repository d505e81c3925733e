"""One kernel's spec as a form: fields as text, each checked with the form field named, written with the draft
kept (a redraft then keeps the edit)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hipwizard.errors import UserError
from hipwizard.parity.kernels.edit import apply_fields, edit_kernel_spec, spec_fields
from hipwizard.parity.kernels.project import save_specs, specs_for
from tests.parity.kernels.test_sweep import SPEC

DEMO = Path(__file__).resolve().parents[3] / "hipwizard" / "assets" / "demo" / "cuda_project"


def test_fields_round_trip_and_each_bad_field_is_named():
    fields = spec_fields(SPEC)
    assert fields["dims"] == "n=4, block=32" and fields["grid"] == "hw_cdiv(n, 32), 1, 1"
    assert fields["extent:y"] == "n + 1" and fields["reference"] == ""
    same = apply_fields(SPEC, fields)
    assert same == SPEC
    new = apply_fields(SPEC, {**fields, "dims": "n=7, block=64", "reference": "2 * x[:n]", "extent:y": "n"})
    assert new.dims == {"n": 7, "block": 64} and new.reference == "2 * x[:n]" and new.buffers[1].extent == "n"
    cases = {"dims": "n=0, block=32", "swept": "n, m", "grid": "1, 1", "block": "256, (1, 1",
             "extent:x": "", "reference": "y * 2", "shared_bytes": "4; system(1)"}
    for field, bad in cases.items():
        with pytest.raises(UserError) as exc:
            apply_fields(SPEC, {**fields, field: bad})
        assert exc.value.field == field, (field, str(exc.value))
    with pytest.raises(UserError, match="give a value for block"):
        apply_fields(SPEC, {**fields, "dims": "n=4"})


def test_an_edit_is_written_and_survives_a_redraft(tmp_path):
    tree = tmp_path / "demo"
    shutil.copytree(DEMO, tree)
    spec_file = tmp_path / "kernels.json"
    files, drafts = specs_for(tree, spec_file)
    save_specs(spec_file, files, drafts, tree, None)
    key = "kernels/layernorm.cu::layernorm_kernel"
    doc = json.loads(spec_file.read_text())
    fields = spec_fields(next(s for f in files for s in f.specs if s.kernel == "layernorm_kernel"))
    edit_kernel_spec(spec_file, key, {**fields, "dims": fields["dims"].replace("cols=4", "cols=1024")})
    after = json.loads(spec_file.read_text())
    assert after["kernels"][key]["spec"]["dims"]["cols"] == 1024
    assert after["kernels"][key]["draft"] == doc["kernels"][key]["draft"]  # the draft kept: a redraft sees the edit
    files, _ = specs_for(tree, spec_file)
    assert next(s for f in files for s in f.specs if s.kernel == "layernorm_kernel").dims["cols"] == 1024
    with pytest.raises(UserError) as exc:
        edit_kernel_spec(spec_file, "nope.cu::k", fields)
    assert exc.value.field == "kernel"
    before = spec_file.read_text()
    with pytest.raises(UserError):
        edit_kernel_spec(spec_file, key, {**fields, "grid": "rows"})
    assert spec_file.read_text() == before  # nothing half-written
