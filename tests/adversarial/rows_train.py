"""Rows for ``train plan``, ``train run``, ``runs``, ``attach`` and ``stop``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .table import BINARY, NOT_UTF8, Case, both, mkdir, nothing, write

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "train"
RUNS = "ws/.hipwizard/runs"


def recipe(name: str = "c.yaml", **replace: str):
    """The fixture recipe (an 8B-shaped model folder, a dataset, a DeepSpeed JSON) copied to ``r/``, with
    ``key: value`` lines replaced, saved as ``r/NAME``."""
    def build(tmp: Path) -> None:
        shutil.copytree(FIXTURES, tmp / "r", dirs_exist_ok=True)
        lines = []
        for line in (FIXTURES / "recipe.yaml").read_text().splitlines():
            key = line.split(":", 1)[0]
            lines.append(f"{key}: {replace[key]}" if key in replace else line)
        (tmp / "r" / name).write_text("\n".join(lines) + "\n")
    return build


def plan(name: str = "c.yaml") -> tuple[str, ...]:
    return ("train", "plan", f"r/{name}", "--workspace", "ws")


def run(target: str) -> tuple[str, ...]:
    return ("train", "run", target, "--detach", "--workspace", "ws", "--platform", "cpu")


def manifest(rel: str, data) -> callable:
    return write(f"{rel}/run.json", data if isinstance(data, (str, bytes)) else json.dumps(data))


# pid and pgid above any pid_max: should a guard regress, a signal sent to them reaches no process.
NO_PID = 999_999_999
GOOD_MANIFEST = {"run_dir": "x", "name": "n", "command": ["llamafactory-cli"], "argv": [], "cwd": ".",
                 "env_delta": {}, "env_removed": [], "pid": NO_PID, "pgid": NO_PID, "pid_create_time": 0.0, "started": "",
                 "started_epoch": 0.0, "log": "train.log", "output_dir": "out", "platform": "cpu"}
NO_RUN_FILES = ("r/train.log", "r/run.json", "r/output", "r/saves", RUNS)

ROWS = [
    # values that cannot be read: exit 2, the file and the value named, no plan from substituted defaults
    Case("plan-learning-rate-word", plan(), recipe(learning_rate='"fast"'), 2,
         ("r/c.yaml", "learning_rate", "'fast'"), not_words=("fits", "your config")),
    Case("plan-batch-negative", plan(), recipe(per_device_train_batch_size="-4"), 2,
         ("per_device_train_batch_size", "-4"), not_words=("fits", "your config")),
    Case("plan-cutoff-1e12", plan(), recipe(cutoff_len="1e12"), 2, ("cutoff_len",), not_words=("fits",)),
    Case("plan-three-bad-values", plan(), recipe(learning_rate='"fast"', per_device_train_batch_size="-4",
         cutoff_len="1e12"), 2, ("3 value(s) cannot be used", "learning_rate", "cutoff_len")),
    Case("plan-lora-rank-list", plan(), recipe(lora_rank="[8, 16]"), 2, ("lora_rank",)),
    # a config that cannot work: a failed check (exit 1) with the reason
    Case("plan-missing-model-folder", plan(), recipe(model_name_or_path="./gone"), 1, ("model folder", "gone", "does not exist"),
         stdout_empty=False),
    Case("plan-missing-model-absolute", plan(), recipe(model_name_or_path="/nonexistent/llama"), 1,
         ("/nonexistent/llama does not exist",)),
    Case("plan-model-without-config-json", plan(), both(recipe(model_name_or_path="empty"), mkdir("r/empty")), 1,
         ("no config.json",)),
    Case("plan-model-is-a-file", plan(), both(recipe(model_name_or_path="w.bin"), write("r/w.bin", BINARY)), 1,
         ("is a file",)),
    Case("plan-unknown-dataset", plan(), recipe(dataset="nope_set"), 1, ("dataset nope_set not in",)),
    Case("plan-unknown-template", plan(), recipe(template="llama-3"), 1, ("template 'llama-3' is unknown",)),
    Case("plan-empty-config", plan(), both(mkdir("r"), write("r/c.yaml", "")), 1, ("no model set",)),
    # the file itself cannot be read: exit 2
    Case("plan-missing-config", plan("gone.yaml"), nothing, 2, ("gone.yaml does not exist",)),
    Case("plan-binary-config", plan(), write("r/c.yaml", BINARY), 2, ("r/c.yaml",)),
    Case("plan-not-utf8-config", plan(), write("r/c.yaml", NOT_UTF8), 2, ("r/c.yaml",)),
    Case("plan-config-is-folder", plan(), mkdir("r/c.yaml"), 2, ("is a folder",)),
    Case("plan-yaml-list", plan(), write("r/c.yaml", "- a\n- b\n"), 2, ("must be a yaml mapping",)),
    Case("plan-gpus-zero", (*plan(), "--gpus", "0"), recipe(), 2, ("--gpus",)),
    Case("plan-vram-nan", (*plan(), "--vram", "nan"), recipe(), 2, ("--vram",)),
    Case("plan-damaged-doctor-state", plan(), both(recipe(), write("ws/.hipwizard/doctor.json",
         '{"version": 1, "report": {"env": 5, "checks": "x"}}')), 0, ("fits",), stdout_empty=False),
    # train run: refuses before launch with plan's reasons, and writes nothing anywhere
    Case("run-missing-model", run("r/c.yaml"), recipe(model_name_or_path="./gone"), 2,
         ("cannot launch", "does not exist", "hipwizard train plan"), unchanged=("r",), absent=NO_RUN_FILES),
    Case("run-learning-rate-word", run("r/c.yaml"), recipe(learning_rate='"fast"'), 2, ("learning_rate",),
         unchanged=("r",), absent=NO_RUN_FILES),
    Case("run-unknown-template", run("r/c.yaml"), recipe(template="llama-3"), 2, ("template 'llama-3'",),
         unchanged=("r",), absent=NO_RUN_FILES),
    Case("run-config-named-config-yaml", run("r/config.yaml"), recipe("config.yaml", dataset="nope_set"), 2,
         ("dataset nope_set",), unchanged=("r",), absent=NO_RUN_FILES),
    Case("run-dir-with-bad-config", run("r"), recipe("config.yaml", model_name_or_path="./gone"), 2,
         ("cannot launch",), unchanged=("r",), absent=NO_RUN_FILES),
    Case("run-missing-target", run("gone.yaml"), nothing, 2, ("gone.yaml does not exist",), absent=(RUNS,)),
    Case("run-not-yaml", run("notes.txt"), write("notes.txt", "hi"), 2, ("neither a run directory",), absent=(RUNS,)),
    Case("run-dir-without-config", run("d"), mkdir("d"), 2, ("has no config.yaml",), absent=("d/train.log",)),
    Case("run-binary-config", run("r/c.yaml"), write("r/c.yaml", BINARY), 2, ("r/c.yaml",), absent=(RUNS,)),
    Case("run-gpus-words", (*run("r/c.yaml"), "--gpus", "a,b"), recipe(), 2, ("--gpus",), absent=(RUNS,)),
    # runs / attach / stop
    Case("attach-regular-file", ("attach", "f"), write("f", "x"), 2, ("is a file, not a run directory",),
         not_words=("does not exist",)),
    Case("attach-missing", ("attach", "gone"), nothing, 2, ("gone does not exist",)),
    Case("attach-never-launched", ("attach", "d", "--no-follow"), mkdir("d"), 2, ("never launched",)),
    Case("attach-binary-manifest", ("attach", "d", "--no-follow"), manifest("d", BINARY), 2, ("run.json", "unreadable")),
    Case("attach-manifest-list", ("attach", "d", "--no-follow"), manifest("d", "[1, 2]"), 2, ("run.json", "json object")),
    Case("attach-manifest-pid-string", ("attach", "d", "--no-follow"), manifest("d", {**GOOD_MANIFEST, "pid": str(NO_PID)}), 2,
         ("run.json", "pid must be a whole number")),
    Case("stop-regular-file", ("stop", "f"), write("f", "x"), 2, ("is a file",)),
    Case("stop-manifest-negative-pid", ("stop", "d", "--grace", "0"), manifest("d", {**GOOD_MANIFEST, "pid": -NO_PID}), 2,
         ("pid and pgid must be positive",)),
    Case("stop-manifest-pgid-float", ("stop", "d"), manifest("d", {**GOOD_MANIFEST, "pgid": 1.5}), 2, ("pgid",)),
    Case("stop-grace-nan", ("stop", "d", "--grace", "nan"), manifest("d", GOOD_MANIFEST), 2, ("--grace",)),
    Case("runs-workspace-missing", ("runs", "--workspace", "gone"), nothing, 2, ("gone does not exist",)),
    Case("runs-extra-dir-is-file", ("runs", "f", "--workspace", "ws"), both(write("f", "x"), mkdir("ws")), 2, ("f is a file",)),
    Case("runs-damaged-manifest-and-state", ("runs", "rr", "--workspace", "ws"),
         both(manifest("rr/r1", "[1]"), write("rr/r1/config.yaml", "output_dir: o\n"),
              write("ws/.hipwizard/train.json", '{"version": 1, "last_run": 5, "launched_runs": "x"}')), 0,
         ("r1",), stdout_empty=False),
]
