"""One "flagged" count everywhere: hipify's JSON and text, ``review --summary`` and the Port screen agree."""

from __future__ import annotations

import json
import shutil

from hipwizard.cli import main
from hipwizard.port.demo import DEMO_PROJECT
from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.port.screen import PortScreen
from hipwizard.workspace import Workspace


async def test_hipify_summary_and_the_port_screen_count_the_same_flagged_hunks(tmp_path, capsys):
    shutil.copytree(DEMO_PROJECT, tmp_path / "src")
    args = ["hipify", str(tmp_path / "src"), "--out", str(tmp_path / "out"), "--workspace", str(tmp_path),
            "--backend", "builtin"]
    assert main([*args, "--json"]) == 0
    hipify = json.loads(capsys.readouterr().out)
    n = hipify["flagged_hunks"]
    by_sev = hipify["flagged_hunks_by_severity"]
    # The demo has hunks with more than one flag: a count of flags would differ from a count of hunks.
    assert 0 < n < sum(hipify["flags_by_severity"].values()) and sum(by_sev.values()) == n
    assert main([*args]) == 0
    assert f"{n} flagged" in capsys.readouterr().out
    assert main(["review", str(tmp_path / "out"), "--summary", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["flagged_hunks"] == n and summary["flagged"] == by_sev
    assert main(["review", str(tmp_path / "out"), "--summary"]) == 0
    assert f"  {n} flagged hunks: {by_sev['high']} high, {by_sev['med']} med, {by_sev['low']} low" in capsys.readouterr().out
    app = HipwizardApp(Workspace(tmp_path))
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.press("2")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PortScreen) and screen.review is not None
        assert f"⚑ {n} flagged" in str(screen.query_one("#port-status").render())
        rows = [str(screen.query_one("#port-filelist").get_option_at_index(i).prompt)
                for i in range(len(screen.nav.files))]
        assert sum(int(part[1:]) for row in rows for part in row.split() if part.startswith("⚑") and part[1:].isdigit()) == n
