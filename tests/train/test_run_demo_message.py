"""`hipwizard train run --demo` says it builds the tiny model only when it is not built yet (it is reused)."""

from __future__ import annotations

import pytest

from hipwizard.cli import main
from hipwizard.errors import UserError


@pytest.mark.parametrize("built", [False, True])
def test_the_build_line_only_when_the_model_is_not_built(tmp_path, capsys, monkeypatch, built):
    from hipwizard import demo_model, train

    monkeypatch.setattr(demo_model.DemoAssets, "ready", property(lambda self: built))

    def launch_demo(ws, options):  # the launch itself is covered elsewhere; stop right after the message
        raise UserError("not launched in this test")

    monkeypatch.setattr(train, "launch_demo", launch_demo)  # the door: what the CLI calls
    assert main(["train", "run", "--demo", "--workspace", str(tmp_path)]) == 2
    printed = capsys.readouterr().out
    assert ("building the tiny demo model" in printed) is (not built)
