"""Keys by verb: one key means one thing on every screen.

``VERBS`` is the table every screen's bindings follow. A key bound on one screen and pressed on another
does nothing there, and says so: the app binds each verb key (hidden, lowest priority) to a notification
naming the verb and the screens where it works. Screens bind the same keys to their own actions, and a
screen's binding wins over the app's.

Keys that change files or processes (write, launch, stop) ask to confirm before acting.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class Verb:
    key: str  # Textual key name
    name: str  # what it does, as the footer and help say it
    where: str  # the screens where it does it


# Global keys (bound by the app, active everywhere): ? help, h home, q quit, 1-4 a step, g the suggested
# next step, ctrl+p the command palette. The verbs below are screen keys.
VERBS: tuple[Verb, ...] = (
    Verb("j", "next item", "Doctor, Port, Train (Run tab)"),
    Verb("k", "previous item", "Doctor, Port, Train (Run tab)"),
    Verb("r", "re-run / refresh", "Doctor (re-run the checks), Port (re-read the sources), Parity (reload "
                                  "results), Train (refresh the runs, Run tab)"),
    Verb("c", "copy the report", "Doctor"),
    Verb("p", "paste tool outputs to check", "Doctor"),
    Verb("y", "accept the hunk", "Port"),
    Verb("n", "reject the hunk", "Port"),
    Verb("a", "accept the file", "Port"),
    Verb("d", "reject the file", "Port"),
    Verb("A", "accept every unflagged hunk", "Port"),
    Verb("u", "undo", "Port"),
    Verb("s", "split the hunk", "Port"),
    Verb("e", "edit the hunk", "Port"),
    Verb("J", "next pending hunk", "Port"),
    Verb("K", "previous pending hunk", "Port"),
    Verb("slash", "search", "Port"),
    Verb("f", "filter", "Port"),
    Verb("w", "write the accepted hunks (asks to confirm)", "Port"),
    Verb("m", "settle a write conflict with your edits: mine / new / merged (asks which)", "Port (results panel)"),
    Verb("D", "run the demo job", "Parity (demo comparison), Train (demo training run)"),
    Verb("t", "change the candidate dtype", "Parity"),
    Verb("b", "switch forward / backward (gradients)", "Parity"),
    Verb("v", "show the next attention backend's table", "Parity (with --attn a,b,...)"),
    Verb("x", "launch the planned run (asks to confirm)", "Train"),
    Verb("X", "stop the run or the calibration (asks to confirm)", "Train (Run tab: the run; Plan tab: a calibration)"),
    Verb("o", "open (attach to) a run", "Train (Run tab)"),
    Verb("P", "post-mortem: the alarm step's batch through Parity",
         "Train (Run tab, on a run with a NaN/inf loss or a grad_norm spike; any step: "
         "hipwizard parity postmortem RUN_DIR --step N)"),
    Verb("ctrl+s", "save the run folder", "Train (Plan tab)"),
    Verb("ctrl+g", "apply the suggestion", "Train (Plan tab)"),
    Verb("ctrl+n", "next suggestion", "Train (Plan tab)"),
    Verb("C", "calibrate: run the top candidates a few steps each and measure them", "Train (Plan tab)"),
    Verb("E", "export the migration report (HTML)", "Home (and 'Export report' in the command palette)"),
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
    return f"{shown} ({v.name}) does nothing on {screen_title}; it works on {v.where}."
