"""Rows for ``status``, ``doctor`` and opening the app: workspaces and their state files."""

from __future__ import annotations

from pathlib import Path

from .table import BINARY, NOT_UTF8, Case, both, mkdir, nothing, write

H200 = str(Path(__file__).resolve().parent.parent / "fixtures" / "doctor" / "h200")
S = ".hipwizard/"


def state(step: str, text: str | bytes):
    return write(f"ws/{S}{step}.json", text)


ROWS = [
    # status: a typo must not read as "not started"
    Case("status-nonexistent", ("status", "{tmp}/nope"), nothing, 2, ("nope does not exist",), not_words=("not started",)),
    Case("status-regular-file", ("status", "f"), write("f", "x"), 2, ("f is not a directory",)),
    Case("status-under-regular-file", ("status", "f/sub"), write("f", "x"), 2, ("is a file",), unchanged=("f",)),
    # wrong types in every state file: the step needs attention, the file and the field are named
    Case("status-doctor-version-string", ("status", "ws"), state("doctor", '{"version": "1"}'), 0,
         ("doctor.json", "version must be a whole number")),
    Case("status-doctor-report-int", ("status", "ws"), state("doctor", '{"version": 1, "report": 5}'), 0,
         ("doctor.json", "wrong type of report")),
    Case("status-doctor-binary", ("status", "ws"), state("doctor", BINARY), 0, ("doctor.json", "unreadable")),
    Case("status-doctor-not-utf8", ("status", "ws"), state("doctor", NOT_UTF8), 0, ("doctor.json", "unreadable")),
    Case("status-doctor-empty", ("status", "ws"), state("doctor", ""), 0, ("doctor.json", "unreadable")),
    Case("status-doctor-newer", ("status", "ws"), state("doctor", '{"version": 99}'), 0, ("doctor.json", "newer hipwizard")),
    Case("status-parity-list", ("status", "ws"), state("parity", "[1, 2]"), 0, ("parity.json", "json object")),
    Case("status-parity-demo-string", ("status", "ws"), state("parity", '{"version": 1, "demo": "yes"}'), 0,
         ("parity.json", "wrong type of demo")),
    Case("status-parity-comparisons-dict", ("status", "ws"), state("parity", '{"version": 1, "comparisons": {"a": 1}}'),
         0, ("parity.json", "comparisons")),
    Case("status-train-types", ("status", "ws"), state("train", '{"version": 1, "last_run": 5, "launched_runs": "x"}'),
         0, ("train.json", "last_run", "launched_runs"), not_words=("no run planned",)),
    Case("status-workspace-types", ("status", "ws"), state("workspace", '{"version": 1, "created": 5}'), 0,
         ("workspace.json", "created")),
    Case("status-json-damaged-train", ("status", "ws", "--json"), state("train", '{"version": 1, "last_run": []}'), 0,
         ("train.json", '"attention"')),
    # the app itself: a typo in DIR is not an empty workspace
    Case("app-nonexistent-dir", ("{tmp}/nope",), nothing, 2, ("nope does not exist",)),
    Case("app-regular-file", ("f",), write("f", "x"), 2, ("not a directory",)),
    Case("app-unknown-flag", ("--bogus",), nothing, 2, ("unknown argument '--bogus'",)),
    # doctor: replay folders with garbage, output paths the system refuses
    Case("doctor-replay-missing", ("doctor", "--replay", "nope", "--no-save"), nothing, 2, ("--replay nope", "not a directory")),
    Case("doctor-replay-file", ("doctor", "--replay", "f", "--no-save"), write("f", "x"), 2, ("--replay f",)),
    Case("doctor-replay-empty", ("doctor", "--replay", "d", "--no-save"), mkdir("d"), 2, ("no recorded outputs",)),
    Case("doctor-replay-binary", ("doctor", "--replay", "d", "--no-save"),
         both(write("d/rocminfo.txt", BINARY), write("d/amd-smi.txt", BINARY)), 1, ("fail",), stdout_empty=False),
    Case("doctor-replay-not-utf8", ("doctor", "--replay", "d", "--no-save", "--json"),
         both(write("d/rocminfo.txt", NOT_UTF8), write("d/hipconfig_--version.txt", NOT_UTF8)), 1, ('"checks"',)),
    Case("doctor-timeout-negative", ("doctor", "--timeout", "-1", "--replay", H200, "--no-save"), nothing, 2, ("--timeout",)),
    Case("doctor-timeout-nan", ("doctor", "--timeout", "nan", "--replay", H200, "--no-save"), nothing, 2, ("--timeout",)),
    Case("doctor-workspace-file", ("doctor", "--replay", H200, "--workspace", "f"), write("f", "x"), 2,
         ("f is not a directory",), unchanged=("f",)),
    Case("doctor-workspace-under-file", ("doctor", "--replay", H200, "--workspace", "f/ws"), write("f", "x"), 2,
         ("is a file",), unchanged=("f",)),
    Case("doctor-record-under-file", ("doctor", "--record", "f/rec", "--no-save", "--timeout", "5"), write("f", "x"), 2,
         ("--record f/rec",), unchanged=("f",)),
    Case("doctor-record-proc", ("doctor", "--record", "/proc/hipwizard-x", "--no-save", "--timeout", "5"), nothing, 2,
         ("/proc/hipwizard-x",)),
    # a damaged doctor.json is replaced by the new report and kept beside it, not lost
    Case("doctor-saves-over-damaged-state", ("doctor", "--replay", H200, "--workspace", "ws"),
         state("doctor", '{"version": 1, "report": "garbage"}'), 0, ("replay of h200",), stdout_empty=False,
         appear=(f"ws/{S}doctor.json.damaged",)),
]
