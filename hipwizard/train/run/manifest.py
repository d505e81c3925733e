"""The run manifest: what was launched, how, and how it ended — one JSON file in the run directory.

``run.json`` is written atomically at launch (command, env delta, pid, pgid, start time, versions);
``exit.json`` is written atomically when the run ends (by the supervisor with the exit code, or by
``stop`` when it had to kill the group). Both survive the TUI, the SSH session and a reboot.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hipwizard.atomic import atomic_write_json

MANIFEST_NAME = "run.json"
EXIT_NAME = "exit.json"
LOG_NAME = "train.log"
STOP_NAME = "stop_requested"  # written by stop before its first signal (see stop.py)
RUN_ENV = "HIPWIZARD_RUN"  # the run's marker in the environment of every process of the run (see stop.py)
CONFIG_NAME = "config.yaml"


@dataclass
class RunManifest:
    """Everything needed to find, watch and stop a launched run later (from any process)."""

    run_dir: str
    name: str
    command: list[str]  # what the user's run is: llamafactory-cli train config.yaml
    argv: list[str]  # what was actually exec'd: the supervisor wrapping ``command``
    cwd: str
    env_delta: dict[str, str]
    env_removed: list[str]
    pid: int
    pgid: int
    pid_create_time: float  # psutil's create_time: tells our pid from a recycled one
    started: str
    started_epoch: float
    log: str
    output_dir: str
    platform: str
    versions: dict[str, str] = field(default_factory=dict)
    version: int = 1
    environment: dict | None = None  # doctor.fingerprint of the machine it was launched on (services.launch)
    run_token: str = ""  # the value of RUN_ENV its processes carry ("" in runs launched before it existed)
    attempt: int = 1  # which start of the run this launch is (a resume is the next one; see resume.py)
    auto_resume: int = 0  # how many times the supervisor may resume it by itself after a crash or stall
    stall: dict | None = None  # stall.StallPolicy's values (k, floor_s, startup_s); None: the defaults

    def save(self) -> None:
        atomic_write_json(Path(self.run_dir) / MANIFEST_NAME, asdict(self))

    @property
    def log_path(self) -> Path:
        return Path(self.run_dir) / self.log

    @property
    def trainer_log_path(self) -> Path:
        return Path(self.output_dir) / "trainer_log.jsonl"


_PATH_FIELDS = ("run_dir", "cwd", "log", "output_dir")


def load_manifest(run_dir: str | Path) -> RunManifest | None:
    """The manifest of a run directory, or None when it was never launched or the file is damaged (a
    path field that is not text or holds a NUL byte is damage: every later open would raise on it)."""
    try:
        data = json.loads((Path(run_dir) / MANIFEST_NAME).read_text(encoding="utf-8"))
        fields = RunManifest.__dataclass_fields__
        manifest = RunManifest(**{k: v for k, v in data.items() if k in fields})
    except (OSError, ValueError, TypeError, AttributeError):  # AttributeError: not a JSON object
        return None
    if any(not isinstance(getattr(manifest, k), str) or "\0" in getattr(manifest, k) for k in _PATH_FIELDS):
        return None
    # The folder the file is in, not the one it claims: logs are read and stop's marks written there, and
    # a run.json edited (or copied) to name another folder must move neither.
    manifest.run_dir = str(Path(run_dir).resolve())
    if Path(manifest.log).name != manifest.log or manifest.log in ("", ".", ".."):
        manifest.log = LOG_NAME  # the log is a file of the run directory, never a path out of it (/dev/zero)
    return manifest


@dataclass(frozen=True)
class RunEnd:
    """How a run ended, as ``exit.json`` says: its exit code (None when ``stop`` ended the group), when,
    whether it was stopped, how long it ran. Values of the wrong type read as unknown."""

    returncode: int | None = None
    ended: str | None = None
    stopped: bool = False
    duration_s: float | None = None
    error: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunEnd:
        def typed(key: str, kind):
            value = data.get(key)
            return value if isinstance(value, kind) and not isinstance(value, bool) else None

        return cls(returncode=typed("returncode", int), ended=typed("ended", str), stopped=data.get("stopped") is True,
                   duration_s=typed("duration_s", (int, float)), error=typed("error", str))


def read_exit(run_dir: str | Path) -> RunEnd | None:
    """``exit.json`` as a ``RunEnd``, or None while running (or when it is unreadable)."""
    try:
        data = json.loads((Path(run_dir) / EXIT_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return RunEnd.from_dict(data) if isinstance(data, dict) else None


def write_exit(run_dir: str | Path, **info: Any) -> None:
    atomic_write_json(Path(run_dir) / EXIT_NAME, info)
