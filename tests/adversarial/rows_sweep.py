"""Adversarial rows from the re-sweep of issue 27 (safe by default): variations the first rows did not cover.
See table.py for what every row checks."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from .table import Case, both, write

RUN_JSON = {"name": "r", "command": ["llamafactory-cli", "train", "config.yaml"], "argv": [], "env_delta": {},
            "env_removed": [], "started": "2026-01-01T00:00:00+00:00", "started_epoch": 0.0, "log": "train.log",
            "platform": "cpu"}


def hand_edited_run(rel: str, **fields):
    """``rel/`` a run directory whose run.json was written by hand (``fields`` over a plausible record)."""
    def build(tmp: Path) -> None:
        run = tmp / rel
        run.mkdir(parents=True, exist_ok=True)
        data = {**RUN_JSON, "run_dir": str(run), "cwd": str(run), "output_dir": str(run / "out"), **fields}
        (run / "run.json").write_text(json.dumps(data))
    return build


def stranger_run(rel: str):
    """A run.json (no run marker, as runs before the marker have) naming an unrelated process of this user:
    its pid, its group and its exact create time. Only a create time matches: that is no proof."""
    def build(tmp: Path) -> None:
        import psutil

        # setsid execs in place: the sleep leads its own group, in its own session (a stray signal can
        # reach nothing else); it ends by itself.
        stranger = subprocess.Popen(["setsid", "sleep", "20"])
        deadline = time.monotonic() + 10
        while psutil.Process(stranger.pid).cmdline()[:1] != ["sleep"] and time.monotonic() < deadline:
            time.sleep(0.02)
        born = psutil.Process(stranger.pid).create_time()
        hand_edited_run(rel, pid=stranger.pid, pgid=stranger.pid, pid_create_time=born, run_token="")(tmp)
    return build


ROWS: list[Case] = [
    # process identity: a create time alone proves nothing; the stranger gets no signal
    Case("stop-tokenless-run-json-naming-a-stranger", ("stop", "r", "--grace", "0"), stranger_run("r"), 0,
         ("the run's processes are gone",), not_words=("SIGTERM", "SIGKILL", "SIGABRT"), absent=("r/stop_requested",)),
]


def fifo_at(rel: str):
    def build(tmp: Path) -> None:
        import os

        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(tmp / rel)
    return build


GONE = {"pid": 999_999_999, "pgid": 999_999_999, "pid_create_time": 1.0, "run_token": "t"}  # no such process

ROWS += [
    # a run.json's paths are data: a NUL byte is damage (a traceback in `runs` before), the log is a file of the
    # run directory (a path out of it was read and its error lines shown as the run's), and a log that is a
    # FIFO is no log (attach waited for a writer forever)
    Case("runs-run-json-nul-in-run-dir", ("runs", "r", "--workspace", "{tmp}"),
         hand_edited_run("r", run_dir="/tmp/\x00x", **GONE), 0, ("r",), stdout_empty=False),
    Case("attach-run-json-nul-in-output-dir", ("attach", "--no-follow", "r"),
         hand_edited_run("r", output_dir="o\x00", **GONE), 2, ("output_dir", "NUL")),
    Case("attach-run-json-log-out-of-the-run-dir", ("attach", "--no-follow", "r"),
         both(hand_edited_run("r", log="{tmp}/outside.log", **GONE),
              lambda tmp: (tmp / "r" / "run.json").write_text((tmp / "r" / "run.json").read_text()
                                                              .replace("{tmp}", str(tmp))),
              write("outside.log", "RuntimeError: outside-marker\n")),
         1, ("lost",), not_words=("outside-marker",)),
    Case("attach-run-json-log-is-a-fifo", ("attach", "--no-follow", "r"),
         both(hand_edited_run("r", log="pipe", **GONE), fifo_at("r/pipe")), 1, ("lost",)),
    Case("runs-trainer-log-is-a-fifo", ("runs", "r", "--workspace", "{tmp}"),
         both(hand_edited_run("r", **GONE), fifo_at("r/out/trainer_log.jsonl")), 0, ("lost",), stdout_empty=False),
]

ROWS += [
    # a workspace state file that is a FIFO: `status` waited for a writer forever (jsonread opened it blocking)
    *(Case(f"status-state-file-{step}-is-a-fifo", ("status", "--workspace", "{tmp}"), fifo_at(f".hipwizard/{step}.json"),
           0, ("not a regular file",) if step == "doctor" else (), stdout_empty=False)
      for step in ("doctor", "train")),
]


def header_file(rel: str, header: dict, data: bytes = b"\0" * 16):
    """A safetensors file with ``header`` as is (no library would write it)."""
    raw = json.dumps(header).encode()
    return write(rel, len(raw).to_bytes(8, "little") + raw + data)


def captures(*rels: str):
    def build(tmp: Path) -> None:
        from ..parity.parity_captures import layer_outputs, write_capture

        for rel in rels:
            write_capture(tmp / rel, layer_outputs())
    return build


def entry(**over) -> dict:
    return {"__metadata__": {}, "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], **over}}


COMPARE = ("parity", "compare", "r.safetensors", "r.safetensors", "--no-save")
MALFORMED = {  # a header entry's fields with the wrong types: each was a TypeError/ValueError traceback
    "offsets-text": entry(data_offsets=["0", "4"]), "offsets-negative": entry(data_offsets=[-4, 0]),
    "shape-negative": entry(shape=[-1, -1]), "shape-float": entry(shape=[1.5]),
    "dtype-list": entry(dtype=["F32"]), "shape-wraps-int64": entry(shape=[2**62, 2**62], data_offsets=[0, 0]),
}
ROWS += [
    *(Case(f"compare-header-{name}", COMPARE, header_file("r.safetensors", header), 2, ("r.safetensors", "'a'"))
      for name, header in MALFORMED.items()),
    Case("compare-header-metadata-is-a-list", COMPARE,
         header_file("r.safetensors", {**entry(), "__metadata__": [1, 2]}), 2, ("r.safetensors", "__metadata__")),
    # a capture or a tolerance file that is a FIFO waited for a writer forever; a tolerance file that is not
    # UTF-8 was a UnicodeDecodeError traceback
    Case("compare-capture-is-a-fifo", COMPARE, fifo_at("r.safetensors"), 2, ("r.safetensors", "not a regular file")),
    Case("compare-tolerance-file-is-a-fifo", ("parity", "compare", "a.safetensors", "b.safetensors", "--no-save",
         "--tolerance-file", "tol.yaml"), both(captures("a.safetensors", "b.safetensors"), fifo_at("tol.yaml")), 2,
         ("tol.yaml", "not a regular file")),
    Case("compare-tolerance-file-not-utf8", ("parity", "compare", "a.safetensors", "b.safetensors", "--no-save",
         "--tolerance-file", "tol.yaml"), both(captures("a.safetensors", "b.safetensors"),
                                               write("tol.yaml", b"fp32: {atol: \xff}\n")), 2, ("tol.yaml", "UTF-8")),
]

ROWS += [
    # a workspace folder named with a newline: status printed its "workspace" line as two lines
    Case("status-workspace-name-with-newline", ("status", "--workspace", "ws\nx"), lambda tmp: (tmp / "ws\nx").mkdir(),
         0, ("ws x",), not_words=("ws\nx",), stdout_empty=False),
]
