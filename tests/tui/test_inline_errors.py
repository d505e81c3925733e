"""The TUI says what the CLI says for the adversarial table's bad inputs: inline, on the screen the user is on,
never a crash screen, and nothing written where it should not be (a sample of ``tests/adversarial``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Input, Static

from hipwizard.port import services
from hipwizard.port.state import record_link
from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.home import HomeScreen, StepCard
from hipwizard.tui.train.plan import TrainPlanPane
from hipwizard.workspace import Workspace
from tests.adversarial.rows_port import KERNEL
from tests.adversarial.table import BINARY
from tests.tui.waiting import until

SIZE = (120, 40)


async def _settle(pilot) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if ".hipwizard" not in p.parts)


async def _port_setup(tmp_path: Path, src: str, out: str) -> tuple[HipwizardApp, str]:
    """Open the Port step on a workspace with no migration, fill its set-up form, submit; the status line."""
    app = HipwizardApp(Workspace(tmp_path), resume=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await _settle(pilot)
        screen = app.screen
        assert screen.query_one("#port-switch").current == "port-setup"
        screen.query_one("#setup-src", Input).value = src
        screen.query_one("#setup-out", Input).value = out
        screen.query_one("#setup-out", Input).focus()
        await pilot.press("enter")
        await _settle(pilot)
        assert app.screen is screen, type(app.screen).__name__  # no crash screen, no other screen
        assert screen.query_one("#port-switch").current == "port-setup" and screen.review is None
        assert app.return_code is None  # the app is still running
        return app, str(screen.query_one("#setup-status", Static).render())


async def test_port_out_inside_the_source_is_one_line_inline(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "k.cu").write_text(KERNEL)
    before = _files(tmp_path)
    _app, status = await _port_setup(tmp_path, str(tmp_path / "proj"), str(tmp_path / "proj" / "hip"))
    assert "inside the source folder" in status and "\n" not in status.strip(), status
    assert _files(tmp_path) == before  # no proj/hip, no review state


@pytest.mark.slow
async def test_port_out_under_a_regular_file_and_a_missing_source(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "k.cu").write_text(KERNEL)
    (tmp_path / "afile").write_text("x")
    before = _files(tmp_path)
    _app, status = await _port_setup(tmp_path, str(tmp_path / "proj"), str(tmp_path / "afile" / "hip"))
    assert "afile is a file" in status, status
    _app, status = await _port_setup(tmp_path, str(tmp_path / "nope"), str(tmp_path / "out"))
    assert "nope does not exist" in status, status
    assert _files(tmp_path) == before


async def test_port_binary_only_source_names_the_file(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "k.cu").write_bytes(BINARY)
    _app, status = await _port_setup(tmp_path, str(tmp_path / "proj"), str(tmp_path / "out"))
    assert "no CUDA sources" in status and "k.cu: binary file" in status, status
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.review.json").exists()


async def test_port_crafted_review_paths_are_named_and_nothing_is_written(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "k.cu").write_text(KERNEL)
    done = services.translate(None, tmp_path / "proj", tmp_path / "out", backend="builtin")
    path = done.review.path
    data = json.loads(path.read_text())
    for h in data["hunks"]:
        h["file"] = "../evil.cu"
    *_, last = data["files"].values()
    data["files"] = {"../evil.cu": last}
    path.write_text(json.dumps(data))
    crafted = path.read_text()
    ws = Workspace(tmp_path)
    record_link(ws, str(tmp_path / "proj"), str(tmp_path / "out"))
    app = HipwizardApp(ws, resume=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await _settle(pilot)
        screen = app.screen
        assert screen.review is None and screen.query_one("#port-switch").current == "port-setup"
        status = str(screen.query_one("#setup-status", Static).render())
        assert "../evil.cu" in status and path.name in status, status
        await pilot.press("w")  # the write key does nothing without a review
        await _settle(pilot)
    assert path.read_text() == crafted
    assert not (tmp_path / "evil.cu").exists() and not (tmp_path / "out").exists()


@pytest.mark.slow
async def test_train_plan_learning_rate_fast_is_an_inline_error(tmp_path):
    app = HipwizardApp(Workspace(tmp_path), resume=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("4")
        await _settle(pilot)
        screen = app.screen
        screen.query_one("#in-learning_rate", Input).value = "fast"
        await until(pilot, lambda: "✖ learning_rate" in str(screen.query_one("#err-learning_rate", Static).render()))
        await until(pilot, lambda: not screen.query_one(TrainPlanPane).replan_pending)  # the issues panel, re-planned
        await _settle(pilot)
        assert app.screen is screen
        error = str(screen.query_one("#err-learning_rate", Static).render())
        assert "✖ learning_rate" in error, error
        issues = str(screen.query_one("#plan-issues", Static).render())
        assert "✖ error: learning_rate" in issues, issues
        await pilot.press("ctrl+s")  # saving is refused while a value is unreadable
        await _settle(pilot)
        assert app.screen is screen
    assert not Workspace(tmp_path).runs_dir.exists()


async def test_a_damaged_doctor_json_puts_the_home_card_in_attention_naming_the_file(tmp_path):
    state = tmp_path / ".hipwizard" / "doctor.json"
    state.parent.mkdir()
    state.write_text('{"version": 1, "report": 5}')
    app = HipwizardApp(Workspace(tmp_path), resume=False)
    async with app.run_test(size=SIZE) as pilot:
        await _settle(pilot)
        assert isinstance(app.screen, HomeScreen)
        card = app.screen.query_one("#step-doctor", StepCard)
        assert card.has_class("attention"), card.text
        assert "attention" in card.text and "doctor.json" in card.text, card.text
    assert state.read_text() == '{"version": 1, "report": 5}'  # reading it changes nothing
