"""Rows for ``parity curves`` and ``parity compare``: loss logs and capture files that cannot be read."""

from __future__ import annotations

import json
import struct

from .table import BINARY, NOT_UTF8, Case, both, mkdir, nothing, write


def log(rel: str, *records) -> callable:
    return write(f"{rel}/trainer_log.jsonl", "".join(
        (r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))


def good(rel: str):
    return log(rel, *({"current_steps": s, "total_steps": 3, "loss": 1.0} for s in (1, 2, 3)))


def curves(*extra: str) -> tuple[str, ...]:
    return ("parity", "curves", "a", "b", *extra)


NO_SAVE = ("--no-save",)
HEADER_ONLY = json.dumps({"__metadata__": {"note": "no tensors"}}).encode()

ROWS = [
    # a loss that is not a number is not a divergence
    Case("curves-loss-1e999", curves(*NO_SAVE), both(log("a", '{"current_steps": 1, "loss": 1e999}',
         {"current_steps": 2, "loss": 1.0}), good("b")), 2, ("a/trainer_log.jsonl", "line 1", "not a finite number"),
         not_words=("diverged",)),
    Case("curves-loss-nan", curves(*NO_SAVE), both(log("a", '{"current_steps": 1, "loss": NaN}'), good("b")), 2,
         ("not a finite number",), not_words=("diverged",)),
    Case("curves-loss-minus-infinity", curves(*NO_SAVE), both(good("a"), log("b", '{"current_steps": 2, "loss": -Infinity}')),
         2, ("b/trainer_log.jsonl", "line 1"), not_words=("diverged",)),
    Case("curves-missing-run", curves(*NO_SAVE), good("b"), 2, ("a: no trainer_log.jsonl",)),
    Case("curves-run-is-a-file", curves(*NO_SAVE), both(write("a", "x"), good("b")), 2, ("a holds no loss values",)),
    Case("curves-empty-log", curves(*NO_SAVE), both(write("a/trainer_log.jsonl", ""), good("b")), 2, ("no loss values",)),
    Case("curves-binary-log", curves(*NO_SAVE), both(write("a/trainer_log.jsonl", BINARY), good("b")), 2, ("no loss values",)),
    Case("curves-not-utf8-log", curves(*NO_SAVE), both(write("a/trainer_log.jsonl", NOT_UTF8), good("b")), 2,
         ("no loss values",)),
    Case("curves-huge-step-and-array-lines-skipped", curves(*NO_SAVE),
         both(log("a", '{"current_steps": 1e999, "loss": 1.0}', "[1, 2]", '{"current_steps": true}',
                  *({"current_steps": s, "loss": 1.0} for s in (1, 2, 3))), good("b")), 0, ("match",), stdout_empty=False),
    Case("curves-threshold-nan", curves("--threshold", "nan", *NO_SAVE), both(good("a"), good("b")), 2, ("--threshold",)),
    Case("curves-threshold-inf", curves("--threshold", "inf", *NO_SAVE), both(good("a"), good("b")), 2, ("--threshold",)),
    Case("curves-smoothing-zero", curves("--smoothing", "0", *NO_SAVE), both(good("a"), good("b")), 2, ("--smoothing",)),
    Case("curves-no-common-step", curves(*NO_SAVE), both(good("a"), log("b", {"current_steps": 9, "loss": 1.0})), 2,
         ("no step in common",)),
    Case("curves-workspace-file", curves("--workspace", "f"), both(good("a"), good("b"), write("f", "x")), 2,
         ("f is not a directory",), unchanged=("f",)),
    Case("curves-workspace-under-file", curves("--workspace", "f/ws"), both(good("a"), good("b"), write("f", "x")), 2,
         ("is a file",), unchanged=("f",)),
    Case("curves-workspace-proc", curves("--workspace", "/proc/hipwizard-x"), both(good("a"), good("b")), 2,
         ("/proc/hipwizard-x",)),
    Case("curves-over-damaged-parity-state", curves("--workspace", "ws"),
         both(good("a"), good("b"), write("ws/.hipwizard/parity.json", '{"version": 1, "curves": "x", "demo": 3}')), 0,
         ("match",), stdout_empty=False, appear=("ws/.hipwizard/parity.json.damaged",)),
    # capture files
    Case("compare-binary-capture", ("parity", "compare", "r.safetensors", "r.safetensors", *NO_SAVE),
         write("r.safetensors", BINARY), 2, ("r.safetensors", "not a safetensors file")),
    Case("compare-empty-capture", ("parity", "compare", "r.safetensors", "r.safetensors", *NO_SAVE),
         write("r.safetensors", b""), 2, ("r.safetensors", "empty")),
    Case("compare-missing-capture", ("parity", "compare", "r.safetensors", "c.safetensors", *NO_SAVE), nothing, 2,
         ("r.safetensors does not exist",)),
    Case("compare-capture-is-folder", ("parity", "compare", "r", "r", *NO_SAVE), mkdir("r"), 2, ("r is a directory",)),
    Case("compare-header-without-hipwizard-metadata", ("parity", "compare", "r.safetensors", "r.safetensors", *NO_SAVE),
         write("r.safetensors", struct.pack("<Q", len(HEADER_ONLY)) + HEADER_ONLY), 2, ("not a hipwizard capture",)),
    Case("compare-truncated-header", ("parity", "compare", "r.safetensors", "r.safetensors", *NO_SAVE),
         write("r.safetensors", struct.pack("<Q", 4096) + b'{"__metadata__"'), 2, ("r.safetensors", "truncated")),
    # output paths that cannot be written are refused before the model runs (the message is the pre-run check's,
    # not the OSError a write would meet after loading and running the model)
    Case("capture-out-under-regular-file", ("parity", "capture", "--demo", "--out", "afile/x.safetensors"),
         write("afile", "x"), 2, ("--out afile/x.safetensors cannot be written", "afile is a file, not a folder"),
         unchanged=("afile",)),
    Case("capture-out-deep-under-regular-file", ("parity", "capture", "--demo", "--out", "afile/a/b/x.safetensors"),
         write("afile", "x"), 2, ("afile is a file, not a folder",), unchanged=("afile",)),
    Case("capture-out-is-folder", ("parity", "capture", "--demo", "--out", "d"), mkdir("d"), 2,
         ("--out d is a folder", "d/capture.safetensors"), unchanged=("d",)),
    Case("capture-out-proc", ("parity", "capture", "--demo", "--out", "/proc/hipwizard-x.safetensors"), nothing, 2,
         ("--out /proc/hipwizard-x.safetensors cannot be written",)),
    # a file hipwizard did not write (here: a model's weights) is never replaced by a capture
    Case("capture-out-over-model-weights", ("parity", "capture", "--demo", "--out", "m/model.safetensors"),
         write("m/model.safetensors", struct.pack("<Q", len(HEADER_ONLY)) + HEADER_ONLY), 2,
         ("--out m/model.safetensors exists and is not a hipwizard capture", "not replaced"),
         unchanged=("m/model.safetensors",)),
    Case("capture-nothing-to-capture", ("parity", "capture", "--out", "x.safetensors"), nothing, 2,
         ("say what to capture",), absent=("x.safetensors",)),
    Case("compare-keep-under-regular-file", ("parity", "compare", "--reference", "cpu", "--demo", "--keep", "afile/k",
         *NO_SAVE), write("afile", "x"), 2, ("--keep afile/k cannot be written", "afile is a file"), unchanged=("afile",)),
    Case("compare-keep-is-file", ("parity", "compare", "--reference", "cpu", "--demo", "--keep", "afile", *NO_SAVE),
         write("afile", "x"), 2, ("--keep afile is a file, not a folder",), unchanged=("afile",)),
]
