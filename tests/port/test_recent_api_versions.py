"""RECENT_HIP_API names the same ROCm version as the API note for the same call (issue 29 item 5)."""

from __future__ import annotations

import re

from hipwizard.port.translation.engine import port_tree


def test_recent_flag_and_too_new_note_say_the_same_version(tmp_path):
    (tmp_path / "k.cu").write_text("void f(cudaGraph_t g, cudaGraphNode_t* n) {\n"
                                   "  cudaEventRecordNodeParams p;\n"  # hipEventRecordNodeParams: 6.1.0
                                   + "  int x = 0;\n" * 8  # apart: two hunks, one flag each
                                   + "  cudaGraphAddNode(n, g, 0, 0, 0);\n}\n")  # hipGraphAddNode: 6.2.0
    report = port_tree(tmp_path, backend="builtin", hip_version="5.7")
    ft = report.files[0]
    notes = {d.line: d.message for d in ft.diagnostics if d.kind == "too_new"}
    flags = [f for h in ft.hunks for f in h.flags if f.rule_id == "RECENT_HIP_API"]
    assert notes and flags
    for f in flags:
        note_versions = set(re.findall(r"ROCm >= ([\d.]+)", notes[f.line]))
        flag_versions = set(re.findall(r"ROCm >= ([\d.]+)", f.reason))
        assert note_versions and note_versions == flag_versions, (f.reason, notes[f.line])
        assert "6.0 per" not in f.reason  # the rule's threshold is not stated as the call's version
    assert {v for f in flags for v in re.findall(r"ROCm >= ([\d.]+)", f.reason)} == {"6.1.0", "6.2.0"}
