"""The migration workspace: a ``.hipwizard/`` folder that remembers each step's state.

Layout (every file JSON, written atomically, each with a ``version`` field)::

    DIR/.hipwizard/workspace.json   created, last screen, hipwizard version
    DIR/.hipwizard/doctor.json      the doctor's last report
    DIR/.hipwizard/port.json        source and output paths (the review state lives beside the output)
    DIR/.hipwizard/parity.json      parity captures and comparisons
    DIR/.hipwizard/train.json       run directories
    DIR/.hipwizard/runs/            run directories created by the Train step

Each step's ``hipwizard.<step>.state`` owns its file: it alone reads and writes it (tests/test_architecture.py
checks that), registers the file's field types (``register_state_fields``) and provides ``summarize(ws) ->
StepStatus``; the app and ``hipwizard status`` ask for it through ``steps`` (this module imports no step) to
show "not started / in progress / done" with a one-line summary. A damaged file is a value, ``StateFile.error``,
never a traceback and never a key mixed into the data.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from hipwizard import __version__, jsonread
from hipwizard.atomic import atomic_write_json
from hipwizard.errors import UserError
from hipwizard.steps import STEP_KEYS, step_by_key

STATE_VERSION = 1
STATE_DIRNAME = ".hipwizard"

FieldTypes = dict[str, type | tuple[type, ...]]

# workspace.json's fields and their types (a step's own file: ``STATE_FIELDS``, registered by its state module).
WORKSPACE_FIELDS: FieldTypes = {
    "created": str, "updated": str, "hipwizard": str, "last_screen": str, "demo": bool}

_FIELDS: dict[str, FieldTypes] = {"workspace": WORKSPACE_FIELDS}


def register_state_fields(step: str, fields: Mapping[str, type | tuple[type, ...]]) -> None:
    """Called by a step's state module when it loads: the top-level field types its file must have. A field of
    another type is left out of ``StateFile.data`` and named in ``StateFile.error``."""
    _FIELDS[step] = dict(fields)


@dataclass(frozen=True)
class StateFile:
    """One state file as read: the fields that could be trusted, and why the file (or some of its fields)
    could not be (``""`` when it was read whole or does not exist)."""

    data: dict[str, Any]
    error: str = ""

StepState = Literal["not started", "in progress", "done", "attention"]


@dataclass(frozen=True)
class StepStatus:
    state: StepState
    summary: str

    @property
    def symbol(self) -> str:
        return {"not started": "○", "in progress": "◐", "done": "✔", "attention": "✖"}[self.state]


class Workspace:
    """A folder under migration. Creating one does not touch the disk until something is saved."""

    def __init__(self, root: str | Path):
        self.root = Path(root).expanduser().resolve()
        self.state_dir = self.root / STATE_DIRNAME

    @classmethod
    def open(cls, root: str | Path, *, must_exist: bool = False) -> "Workspace":
        """The workspace in ``root``. ``UserError`` when ``root`` is a file, or (``must_exist``: commands that
        only read, where a typo must not read as "not started") when it does not exist."""
        path = Path(root).expanduser()
        if path.exists() and not path.is_dir():
            raise UserError(f"{path} is not a directory")
        for parent in path.absolute().parents:  # a folder can never be made under a regular file
            if parent.exists():
                if not parent.is_dir():
                    raise UserError(f"{path}: {parent} is a file, so no workspace can be made under it")
                break
        if must_exist and not path.exists():
            raise UserError(f"{path} does not exist (no workspace there)")
        return cls(path)

    def state_path(self, step: str) -> Path:
        return self.state_dir / f"{step}.json"

    def state_file(self, step: str) -> StateFile:
        """The saved state of a step with its damage: ``{}`` when there is none. Never raises."""
        path = self.state_path(step)
        try:
            data = jsonread.read_json(path)  # capped and depth-limited: a damaged file is said, not a traceback
        except FileNotFoundError:
            return StateFile({})
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            return StateFile({}, f"{path} is unreadable: {exc}")
        if not isinstance(data, dict):
            return StateFile({}, f"{path} does not hold a JSON object")
        version = data.get("version", STATE_VERSION)
        if not isinstance(version, int) or isinstance(version, bool):
            return StateFile({}, f"{path}: version must be a whole number, not {version!r}")
        if version > STATE_VERSION:
            return StateFile({}, f"{path} was written by a newer hipwizard (version {version})")
        wrong = [key for key, kind in _FIELDS.get(step, {}).items()
                 if data.get(key) is not None and (not isinstance(data[key], kind) or
                                                   (isinstance(data[key], bool) and kind is not bool))]
        if wrong:
            # Readers get the fields they can trust (the rest stays on disk, in the .damaged copy, on the
            # next write) and the step shows "attention" naming the file and the fields.
            shown = ", ".join(f"{k} ({type(data[k]).__name__})" for k in wrong)
            return StateFile({k: v for k, v in data.items() if k not in wrong}, f"{path}: wrong type of {shown}")
        return StateFile(data)

    def read_state(self, step: str) -> dict[str, Any]:
        """The trusted fields of a step's saved state (``state_file`` says what was damaged)."""
        return dict(self.state_file(step).data)

    def _keep_damaged(self, step: str, state: StateFile) -> None:
        """Before a write replaces a state file that could not be read whole, keep it as ``<file>.damaged``."""
        if not state.error:
            return
        path = self.state_path(step)
        try:
            if path.is_file():
                os.replace(path, path.with_name(path.name + ".damaged"))
        except OSError:
            pass

    def write_state(self, step: str, data: dict[str, Any]) -> None:
        payload = {"version": STATE_VERSION, "updated": _now(), **{k: v for k, v in data.items() if k not in ("version", "updated")}}
        atomic_write_json(self.state_path(step), payload)

    def update_state(self, step: str, **changes: Any) -> dict[str, Any]:
        state = self.state_file(step)
        self._keep_damaged(step, state)
        data = {**state.data, **changes}
        self.write_state(step, data)
        return data

    def touch(self, **changes: Any) -> None:
        """Record workspace-level facts (for example the last screen, so reopening resumes there)."""
        state = self.state_file("workspace")
        self._keep_damaged("workspace", state)
        data = dict(state.data)
        data.setdefault("created", _now())
        data["hipwizard"] = __version__
        data.update(changes)
        self.write_state("workspace", data)

    @property
    def is_demo(self) -> bool:
        """Whether this is the embedded demo's workspace (``workspace.json`` ``demo``)."""
        return self.read_state("workspace").get("demo") is True

    @property
    def last_screen(self) -> str | None:
        """The screen the app showed last (``home`` or a step key), so reopening resumes there."""
        value = self.read_state("workspace").get("last_screen")
        return value if isinstance(value, str) else None

    @property
    def damage(self) -> str:
        """Why ``workspace.json`` could not be read whole, or ``""``."""
        return self.state_file("workspace").error

    @property
    def runs_dir(self) -> Path:
        return self.state_dir / "runs"

    def step_status(self, step: str) -> StepStatus:
        """Ask the step's own ``state.summarize`` (no heavy imports there); a damaged file is "attention"."""
        try:
            summarize = step_by_key(step).load_state().summarize  # loading it registers the file's field types
            damage = self.state_file(step).error
            return StepStatus("attention", damage) if damage else summarize(self)
        except Exception as exc:  # a broken state file must not take the app down
            return StepStatus("attention", f"{self.state_path(step)} is unreadable: {type(exc).__name__}: {exc}")

    def next_step(self) -> str | None:
        """The first step that is not done: what the app suggests next."""
        for step in STEP_KEYS:
            if self.step_status(step).state != "done":
                return step
        return None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
