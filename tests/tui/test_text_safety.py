"""Text from outside is inert in the TUI (Pilot): a workspace folder whose name holds markup (``a[/]``,
``[bold]``), terminal escapes (OSC 0/52, CSI) or TeX opens, and its name is shown as it is, with no ESC in
what is drawn."""

from __future__ import annotations

import pytest

from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.home import HomeScreen
from hipwizard.workspace import Workspace
from tests.hostile_text import assert_inert
from tests.tui.waiting import toasts

NAMES = ["a[/]", "b[bold]x[/bold]y", "c[$accent]z", "d\x1b]0;pwned\x07e\x1b]52;c;ZGF0YQ==\x1b\\f\x1b[2Jg", "h$x^2$\\"]


def _plain_screen(app) -> str:
    from textual.widgets import Static

    texts = [str(w.render()) for w in app.screen.query(Static)]
    return "\n".join(texts) + app.export_screenshot()


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
async def test_a_hostile_workspace_name_is_shown_inert(tmp_path, name):
    root = tmp_path / name
    root.mkdir(parents=True)  # "a[/]" is the folder "]" in the folder "a["
    app = HipwizardApp(Workspace(root))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        line = str(app.screen.query_one("#workspace-line").render())
        shown = name.split("\x1b")[0]
        assert shown in line  # the name as it is, markup and all
        assert_inert(line)
        assert_inert(_plain_screen(app))
        await pilot.press("1")  # the doctor screen shows the workspace too
        await pilot.pause()
        assert_inert(_plain_screen(app))
    assert app.return_code in (0, None)


def _screen_text(app) -> str:
    from textual.widgets import DataTable, OptionList

    parts = [_plain_screen(app)]
    for table in app.screen.query(DataTable):
        parts += [" ".join(map(str, table.get_row_at(i))) for i in range(table.row_count)]
    for options in app.screen.query(OptionList):
        parts += [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
    return "\n".join(parts)


@pytest.mark.slow
async def test_doctor_screen_shows_a_hostile_gpu_name_as_text(tmp_path, capsys):
    from hipwizard.cli import main
    from hipwizard.doctor.probe.replay import ReplayRunner
    from tests.doctor.test_text_safety import _paste
    from tests.hostile_text import HOSTILE

    evil = " ".join(HOSTILE.values())
    assert main(["doctor", "--paste", str(_paste(tmp_path, evil)), "--no-save", "--record", str(tmp_path / "rec")]) in (0, 1)
    capsys.readouterr()
    app = HipwizardApp(Workspace(tmp_path), resume=False)
    app.doctor_runner = ReplayRunner(tmp_path / "rec")
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("1")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        seen = ""
        for _ in range(12):  # down the checklist: each check's details
            text = _screen_text(app)
            assert_inert(text)
            seen += text
            await pilot.press("down")
            await pilot.pause()
        assert "[bold]Instinct[/] [/] [$accent]x" in seen and "<script>" in seen  # shown as text


async def test_parity_screen_shows_hostile_device_and_module_names_as_text(tmp_path, capsys):
    from hipwizard.cli import main
    from tests.hostile_text import HOSTILE
    from tests.parity.parity_captures import layer_outputs, write_capture

    evil = " ".join(HOSTILE.values())
    outputs = {evil + k: v for k, v in layer_outputs().items()}
    a = write_capture(tmp_path / "a.safetensors", outputs, device_name=evil, torch=evil)
    b = write_capture(tmp_path / "b.safetensors", outputs, device_name=evil)
    assert main(["parity", "compare", str(a), str(b), "--workspace", str(tmp_path)]) == 0
    capsys.readouterr()
    app = HipwizardApp(Workspace(tmp_path), resume=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        text = _screen_text(app)
        assert_inert(text)
        assert "[bold]Instinct[/]" in text and "[$accent]x" in text


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
async def test_a_toast_shows_text_from_outside_as_it_is(tmp_path, name):
    """Toasts carry file names, tool errors and run names (``✖ cannot launch: ...``): a name with ``[/]`` in it
    used to end the app (Textual read it as a closing tag) and escapes reached the terminal."""
    app = HipwizardApp(Workspace(tmp_path), resume=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        app.notify(f"✖ cannot launch: {name}", severity="error")
        await pilot.pause()
        said = [n for n in toasts(app) if "cannot launch" in n.message]
        assert said and name.split("\x1b")[0] in said[0].message  # the name as it is
        assert said[0].markup is False  # drawn as text: "a[/]" is not a closing tag
        assert_inert(said[0].message)
    assert app.return_code in (0, None)
