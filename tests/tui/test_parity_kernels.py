"""The Parity screen's kernel table: rows from the saved kernel report, the failing kernel's case drilled into."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Static

from hipwizard.parity import KernelReport, KernelRow
from hipwizard.parity.kernels.service import save_result
from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.parity.kernel_table import KernelPanel, details, state_of
from hipwizard.workspace import Workspace

SIZE = (150, 48)


def _rows() -> list[KernelRow]:
    ok = KernelRow("gelu.cu", "gelu_kernel", 12, "out:float in:float", "gelu.cu:40", True, status="pass", cases=91,
                   counts={"pass": 91})
    bad = KernelRow("softmax.cu", "softmax_kernel", 30, "out:float in:float", "softmax.cu:80", True, status="fail",
                    cases=91, counts={"pass": 60, "fail": 31},
                    first_failure="N=2,C=33 normal: unwritten in out: 2 element(s) never written by the port",
                    minimal_case="N=2,C=1 normal: [1] oracle 1 original 1 port nan",
                    checks=["racecheck: original clean, port hazards"])
    nodrv = KernelRow("tex.cu", "tex_kernel", 3, "", "", False, why="scalar t has type cudaTextureObject_t")
    return [ok, bad, nodrv]


def test_states_are_words_with_symbols():
    ok, bad, nodrv = _rows()
    assert state_of(ok) == "✔ pass" and state_of(bad) == "✖ FAIL" and state_of(nodrv) == "✖ no driver"
    text = details(bad)
    assert "first failure: N=2,C=33 normal: unwritten" in text and "minimal case: N=2,C=1" in text
    assert "sanitizer: racecheck: original clean, port hazards" in text and "sanitizer" not in details(ok)


@pytest.mark.slow
async def test_kernel_table_shows_the_report_and_the_failing_case(tmp_path):
    ws = Workspace(tmp_path)
    save_result(ws, KernelReport(tmp_path, tmp_path, tmp_path / "kernels.json", _rows(), "nvidia"))
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        panel = app.screen.query_one(KernelPanel)
        assert panel.display and [r.kernel for r in panel.rows] == ["gelu_kernel", "softmax_kernel", "tex_kernel"]
        shown = str(app.screen.query_one("#kernels-details").render())
        assert "softmax_kernel" in shown and "unwritten" in shown  # the cursor starts on the failing kernel


@pytest.mark.slow
async def test_no_kernel_report_no_panel(tmp_path):
    app = HipwizardApp(Workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert not app.screen.query_one(KernelPanel).display


@pytest.mark.slow
async def test_e_edits_the_highlighted_kernels_spec_with_inline_messages(tmp_path):
    import shutil

    from hipwizard.parity.kernels.project import load_specs, save_specs, specs_for
    from hipwizard.parity.kernels.service import spec_path
    from hipwizard.tui.parity.kernel_form import KernelSpecForm

    demo = Path(__file__).resolve().parents[2] / "hipwizard" / "assets" / "demo" / "cuda_project"
    tree = tmp_path / "demo"
    shutil.copytree(demo, tree)
    ws = Workspace(tmp_path / "ws")
    files, drafts = specs_for(tree, spec_path(ws))
    save_specs(spec_path(ws), files, drafts, tree, None)
    row = KernelRow("kernels/layernorm.cu", "layernorm_kernel", 11, "in:float out:float", "kernels/layernorm.cu:47",
                    True)
    save_result(ws, KernelReport(tree, None, spec_path(ws), [row], "nvidia"))
    app = HipwizardApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, KernelSpecForm)
        dims = form.query_one("#kf-dims", Input)
        dims.value = "cols=0, rows=4, stream=1"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is form  # a bad field keeps the form open, its message under it
        assert "whole number above 0" in str(form.query_one("#kf-dims-error", Static).render())
        dims.value = "cols=129, rows=4, stream=1"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not isinstance(app.screen, KernelSpecForm)
    saved = load_specs(spec_path(ws))["kernels/layernorm.cu::layernorm_kernel"]
    assert saved["spec"]["dims"]["cols"] == 129 and saved["draft"]["dims"]["cols"] == 4
