"""The step-screen contract (``StepScreen``), the keys table against the screens' bindings, and the actions
that are derived from bindings rather than copied."""

from __future__ import annotations

import pytest

from hipwizard.port.state import record_link
from hipwizard.steps import STEPS
from hipwizard.tui.app import HipwizardApp
from hipwizard.tui.home import HomeScreen
from hipwizard.tui.keys import EVERYWHERE, VERBS, At, explanation, verb
from hipwizard.tui.port.host import ReviewHost
from hipwizard.tui.port.screen import REVIEW_ACTIONS, PortScreen
from hipwizard.tui.step_screen import StepScreen, when_idle
from hipwizard.tui.train.screen import PLAN_ACTIONS, RUN_ACTIONS, TrainScreen
from hipwizard.workspace import Workspace
from tests.port.review_factory import new_review
from tests.tui.waiting import notifications, until

SCREENS = {**{spec.key: spec.load_screen() for spec in STEPS}, "home": HomeScreen}


# --- the contract ---------------------------------------------------------------------------------------
def test_every_step_screen_is_a_step_screen_that_declares_its_step_and_help():
    for spec in STEPS:
        cls = SCREENS[spec.key]
        assert issubclass(cls, StepScreen), cls
        assert cls.step_key == spec.key
        assert isinstance(cls.help_title, str) and cls.help_title
        assert isinstance(cls.help_text, str) and len(cls.help_text) > 40
        assert "HELP_TITLE" not in vars(cls) and "HELP_TEXT" not in vars(cls)


def test_a_step_screen_without_its_declarations_is_refused_when_defined():
    with pytest.raises(TypeError, match="step_key"):
        type("Nameless", (StepScreen,), {"help_title": "x"})
    with pytest.raises(TypeError, match="help_title"):
        type("Untitled", (StepScreen,), {"step_key": "doctor"})


def test_train_names_its_tab_in_help_without_an_upper_case_property():
    assert not isinstance(vars(TrainScreen).get("HELP_TITLE"), property)
    assert TrainScreen.help_title == "Train"


def test_when_idle_says_what_to_wait_for_and_does_not_act():
    calls, said = [], []

    class Fake:
        busy = "writing…"

        def notify(self, message, **_kw):
            said.append(message)

        @when_idle
        def act(self, n):
            calls.append(n)
            return n

    fake = Fake()
    assert fake.act(1) is None and calls == [] and said == ["Wait: writing…"]
    fake.busy = ""
    assert fake.act(2) == 2 and calls == [2]


def _reviewing(tmp_path) -> Workspace:
    review = new_review(tmp_path)
    ws = Workspace(tmp_path)
    record_link(ws, str(review.src), str(review.out))
    return ws


async def test_port_busy_redraws_the_status_line_and_holds_decisions(tmp_path):
    app = HipwizardApp(_reviewing(tmp_path), resume=False)
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.press("2")
        await until(pilot, lambda: isinstance(app.screen, PortScreen) and app.screen.review is not None)
        screen = app.screen
        assert isinstance(screen, ReviewHost)  # what the mixins assume, met
        status = screen.query_one("#port-status")
        hunk = screen.nav.current.hunk_id
        screen.busy = "writing and compile-checking…"
        assert "◐ writing and compile-checking…" in str(status.render())  # no explicit redraw call needed
        for key in ("y", "n", "a", "u", "s", "w", "r"):
            app.clear_notifications()
            await pilot.press(key)
            await until(pilot, lambda: notifications(app))
            assert notifications(app) == ["Wait: writing and compile-checking…"], key
        assert screen.review.decision(hunk).state == "pending" and screen.nav.current.hunk_id == hunk
        await pilot.press("j")  # moving around does not wait
        await until(pilot, lambda: screen.nav.current.hunk_id != hunk)
        screen.busy = ""
        assert "writing" not in str(status.render())
        await pilot.press("k", "y")
        await until(pilot, lambda: screen.review.decision(hunk).state == "accepted")


async def test_doctor_waits_for_its_probe_with_the_shared_guard(tmp_path):
    from pathlib import Path

    from hipwizard.doctor.probe.replay import ReplayRunner

    app = HipwizardApp(Workspace(tmp_path), resume=False)
    app.doctor_runner = ReplayRunner(Path(__file__).parent.parent / "fixtures" / "doctor" / "nogpu-debian")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("1")
        await until(pilot, lambda: app.screen.step_key == "doctor" and not app.screen.busy)
        app.screen.busy = "the doctor is probing"
        await pilot.press("r")
        await until(pilot, lambda: notifications(app))
        assert notifications(app) == ["Wait: the doctor is probing"]


# --- actions derived from bindings ------------------------------------------------------------------------
def test_review_actions_are_the_actions_of_the_review_bindings():
    review_bound = {b.action for b in PortScreen.BINDINGS if b.id and b.id.startswith("review.")}
    assert review_bound and REVIEW_ACTIONS == review_bound
    assert {"accept", "write", "resolve", "next"} <= REVIEW_ACTIONS


async def test_review_keys_are_disabled_until_a_review_is_open(tmp_path):
    app = HipwizardApp(Workspace(tmp_path), resume=False)  # no port yet: the set-up form
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.press("2")
        await until(pilot, lambda: isinstance(app.screen, PortScreen))
        assert REVIEW_ACTIONS and all(app.screen.check_action(a, ()) is None for a in REVIEW_ACTIONS)


def test_train_run_and_plan_bindings_name_an_action_of_their_table():
    named = {}
    for b in TrainScreen.BINDINGS:
        head, _, rest = b.action.partition("(")
        named.setdefault(head, set()).add(rest.strip(")'\""))
    assert named["run"] and named["run"] <= set(RUN_ACTIONS)
    assert named["plan"] and named["plan"] <= set(PLAN_ACTIONS)


@pytest.mark.slow
async def test_train_tab_check_lets_unexpected_errors_through(tmp_path, monkeypatch):
    app = HipwizardApp(Workspace(tmp_path), resume=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4")
        await until(pilot, lambda: isinstance(app.screen, TrainScreen))
        screen = app.screen
        assert screen.heading() == "Train (Plan tab)"

        def broken(*_a, **_kw):
            raise RuntimeError("a bug, not a missing tab")

        monkeypatch.setattr(screen, "query_one", broken)
        with pytest.raises(RuntimeError):
            screen._run_tab_active()


async def test_a_remapped_parity_demo_key_keeps_its_outside_the_demo_note(tmp_path, monkeypatch):
    keymap = tmp_path / "keymap.yaml"
    keymap.write_text('parity.run: "F"\n', encoding="utf-8")
    monkeypatch.setenv("HIPWIZARD_KEYMAP", str(keymap))
    app = HipwizardApp(Workspace(tmp_path / "ws"), resume=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("3")
        await until(pilot, lambda: app.screen.step_key == "parity")
        await pilot.press("F")
        await until(pilot, lambda: notifications(app))
        assert "run the demo comparison, in the demo workspace" in notifications(app)[-1]


# --- the keys table and the screens' bindings agree -------------------------------------------------------
def _screen_keys(cls) -> set[str]:
    return {k.strip() for b in cls.BINDINGS for k in b.key.split(",")}


def test_every_screen_binding_is_a_verb_of_that_screen_in_the_key_table():
    everywhere = {v.key for v in EVERYWHERE}
    wrong = []
    for where, cls in SCREENS.items():
        for key in sorted(_screen_keys(cls)):
            v = verb(key)
            if key not in everywhere and (v is None or where not in {at.screen for at in v.where}):
                wrong.append(f"{where}: {key}")
    assert not wrong, f"bound but not in keys.VERBS for that screen: {wrong}"


def test_every_verb_is_bound_on_each_screen_its_table_row_names():
    wrong = [f"{v.key} on {at.screen}" for v in VERBS for at in v.where if v.key not in _screen_keys(SCREENS[at.screen])]
    assert VERBS and not wrong, f"keys.VERBS names a screen that does not bind the key: {wrong}"


def test_every_app_binding_is_a_key_of_the_table():
    everywhere = {v.key for v in EVERYWHERE}
    app_keys = {b.key for b in HipwizardApp.BINDINGS if b.description}  # the explain bindings have none
    assert app_keys and app_keys <= everywhere
    assert {v.key for v in VERBS}.isdisjoint(everywhere)  # a key is either global or a screen verb


def test_the_table_names_screens_that_exist_and_reads_as_before():
    assert VERBS and all(at.screen in SCREENS for v in VERBS for at in v.where)
    assert all(v.where for v in VERBS) and not any(v.where for v in EVERYWHERE)
    assert str(At("train", "Run tab")) == "Train (Run tab)"
    assert explanation("y", "Doctor") == "y (accept the hunk) does nothing on Doctor; it works on Port."
    assert explanation("j", "Parity").endswith("it works on Doctor, Port, Train (Run tab), Home.")
