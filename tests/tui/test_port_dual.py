"""The Port screen's output-mode choice (issue 31): the source picker offers fork / dual-target, the choice
reaches the translation and is the workspace's."""

from __future__ import annotations

import pytest

from hipwizard.port.dual.model import parse_backend
from hipwizard.tui.app import HipwizardApp
from hipwizard.workspace import Workspace
from tests.port.review_factory import KERNEL
from tests.tui.waiting import until

SIZE = (110, 32)


@pytest.mark.slow
async def test_source_picker_translates_in_the_chosen_dual_target_mode(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "k.cu").write_text(KERNEL)
    app = HipwizardApp(Workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert screen.query_one("#port-switch").current == "port-setup"
        assert screen.query_one("#setup-mode").value == "fork"  # fork stays the default
        screen.query_one("#setup-mode").value = "dual"
        screen.query_one("#setup-src").focus()
        await pilot.press(*str(src), "enter", "enter")
        await app.workers.wait_for_complete()
        await until(pilot, lambda: screen.review is not None)
        options, _ = parse_backend(screen.review.backend)
        assert options is not None and options.guard == "USE_ROCM"
        assert any("#if defined(USE_ROCM) || defined(__HIP_PLATFORM_AMD__)" in "".join(h.new_lines)
                   for h in screen.review.hunks)
        assert Workspace(tmp_path).read_state("port")["mode"] == "dual"
