"""Keys by verb: one key means one thing on every screen.

``VERBS`` is the table every screen's bindings follow: each verb's ``where`` names the screens (by key, with
a note such as the tab) that bind it, and tests/tui/test_step_screens.py checks both ways that the screens'
BINDINGS agree with it. ``EVERYWHERE`` lists the keys that mean the same on every screen (the app's, arrows,
escape). A key bound on one screen and pressed on another does nothing there, and says so: the app binds
each verb key (hidden, lowest priority) to a notification naming the verb and the screens where it works.
Screens bind the same keys to their own actions, and a screen's binding wins over the app's.

Keys that change files or processes (write, launch, stop) ask to confirm before acting.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

from hipwizard.steps import step_by_key


@dataclass(frozen=True)
class At:
    """One screen where a verb works: the screen's key (a step key, or "home") and, in brackets after the
    screen's name, where on it or what the key does there ("Run tab", "demo comparison")."""

    screen: str
    note: str = ""

    def __str__(self) -> str:
        name = "Home" if self.screen == "home" else step_by_key(self.screen).title
        return f"{name} ({self.note})" if self.note else name


@dataclass(frozen=True)
class Verb:
    key: str  # Textual key name
    name: str  # what it does, as the footer and help say it
    where: tuple[At, ...] = ()  # the screens where it does it; () for a key that means the same everywhere

    @property
    def places(self) -> str:
        """``where`` in words: "Doctor, Port, Train (Run tab)"."""
        return ", ".join(str(at) for at in self.where)


DOCTOR, PORT, PARITY, TRAIN, HOME = At("doctor"), At("port"), At("parity"), At("train"), At("home")
RUN_TAB, PLAN_TAB = At("train", "Run tab"), At("train", "Plan tab")

# Keys that mean the same on every screen: the app's (? help, h home, q quit, 1-4 a step, g the suggested next
# step, ctrl+p the command palette) and the keys every list and dialog reads the same way. Screens may bind
# them (Home's g, arrows) to the same meaning; they get no "does nothing here" note.
EVERYWHERE: tuple[Verb, ...] = (
    Verb("question_mark", "help"),
    Verb("h", "home"),
    Verb("q", "quit"),
    *(Verb(str(n), f"step {n}") for n in range(1, 5)),
    Verb("g", "the suggested next step"),
    Verb("ctrl+p", "command palette"),
    Verb("down", "next item"),
    Verb("up", "previous item"),
    Verb("escape", "close (a search, a dialog, help)"),
)

# The verbs below are screen keys.
VERBS: tuple[Verb, ...] = (
    Verb("j", "next item", (DOCTOR, PORT, RUN_TAB, HOME)),
    Verb("k", "previous item", (DOCTOR, PORT, RUN_TAB, HOME)),
    Verb("r", "re-run / refresh", (At("doctor", "re-run the checks"), At("port", "re-read the sources"),
                                   At("parity", "reload results"), At("train", "refresh the runs, Run tab"))),
    Verb("c", "copy the report", (DOCTOR,)),
    Verb("p", "paste tool outputs to check", (DOCTOR,)),
    Verb("y", "accept the hunk", (PORT,)),
    Verb("n", "reject the hunk", (PORT,)),
    Verb("a", "accept the file", (PORT,)),
    Verb("d", "reject the file", (PORT,)),
    Verb("A", "accept every unflagged hunk", (PORT,)),
    Verb("u", "undo", (PORT,)),
    Verb("s", "split the hunk", (PORT,)),
    Verb("e", "edit", (At("port", "the hunk"), At("parity", "the highlighted kernel's spec"))),
    Verb("J", "next pending hunk", (PORT,)),
    Verb("K", "previous pending hunk", (PORT,)),
    Verb("slash", "search", (PORT,)),
    Verb("f", "filter", (PORT,)),
    Verb("w", "write the accepted hunks (asks to confirm)", (PORT,)),
    Verb("m", "settle a write conflict with your edits: mine / new / merged (asks which)",
         (At("port", "results panel"),)),
    Verb("D", "run the demo job", (At("parity", "demo comparison"), At("train", "demo training run"))),
    Verb("t", "change the candidate dtype", (PARITY,)),
    Verb("b", "switch forward / backward (gradients)", (PARITY,)),
    Verb("v", "show the next attention backend's table", (At("parity", "with --attn a,b,..."),)),
    Verb("L", "check the port's kernels against the originals (kernel parity)", (PARITY,)),
    Verb("x", "launch the planned run (asks to confirm)", (TRAIN,)),
    Verb("X", "stop the run or the calibration (asks to confirm)",
         (At("train", "Run tab: the run; Plan tab: a calibration"),)),
    Verb("o", "open (attach to) a run", (RUN_TAB,)),
    Verb("R", "resume an ended run from its newest complete checkpoint (asks to confirm)", (RUN_TAB,)),
    Verb("N", "run it again with NCCL_DEBUG=INFO (asks to confirm)", (RUN_TAB,)),
    Verb("P", "post-mortem: the alarm step's batch through Parity",
         (At("train", "Run tab, on a run with a NaN/inf loss or a grad_norm spike; any step: "
                      "hipwizard parity postmortem RUN_DIR --step N"),)),
    Verb("ctrl+s", "save the run folder", (PLAN_TAB,)),
    Verb("ctrl+g", "apply the suggestion", (PLAN_TAB,)),
    Verb("ctrl+n", "next suggestion", (PLAN_TAB,)),
    Verb("C", "calibrate: run the top candidates a few steps each and measure them", (PLAN_TAB,)),
    Verb("ctrl+o", "open or fold the knobs not offered, and why each is not", (PLAN_TAB,)),
    Verb("E", "export the migration report (HTML)", (At("home", "and 'Export report' in the command palette"),)),
)

_BY_KEY = {v.key: v for v in VERBS}


def verb(key: str) -> Verb | None:
    return _BY_KEY.get(key)


def explain_bindings() -> list[Binding]:
    """Hidden app bindings: every verb key, for the screens that do not bind it. No description, so help
    and the footer list only what a screen really does."""
    return [Binding(v.key, f"explain_key({v.key!r})", "", show=False) for v in VERBS]


def explanation(key: str, screen_title: str) -> str:
    v = verb(key)
    if v is None:
        return f"{key} does nothing on {screen_title}."
    shown = "/" if key == "slash" else key
    return f"{shown} ({v.name}) does nothing on {screen_title}; it works on {v.places}."
