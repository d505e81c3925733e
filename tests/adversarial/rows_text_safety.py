"""Adversarial rows of issue 27 (safe by default): see table.py for what every row checks."""

from __future__ import annotations

import json
import re
import shutil
import struct
from pathlib import Path

from .table import Case, both, mkdir, write

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ROCMINFO = FIXTURES / "doctor" / "corpus" / "mi300x-4x-rocminfo-thamada.txt"
CAP = 8 * 2**20


def safetensors(rel: str, header: bytes):
    return write(rel, struct.pack("<Q", len(header)) + header)


DEEP_HEADER = ('{"a":' * 100_000 + "1" + "}" * 100_000).encode()  # the header itself nests 100 000 deep
DEEP_META = json.dumps({"__metadata__": {"hipwizard": "[" * 100_000 + "]" * 100_000}}).encode()
SHALLOW_DEEP = json.dumps({"__metadata__": {"hipwizard": "[" * 200 + "]" * 200}}).encode()  # below Python's limit


def run_named(name: str):
    """A workspace ``ws`` with one recorded training run whose name is ``name``."""
    def build(tmp: Path) -> None:
        from hipwizard.train.state import remember_run
        from hipwizard.workspace import Workspace

        run = tmp / "ws" / ".hipwizard" / "runs" / "r"
        shutil.copytree(FIXTURES / "report" / "run-demo-lora", run)
        manifest = json.loads((run / "run.json").read_text())
        manifest["name"] = name
        (run / "run.json").write_text(json.dumps(manifest))
        remember_run(Workspace(tmp / "ws"), run)
    return build


def big_paste(tmp: Path) -> None:
    """A paste just over 8 MiB whose cap falls inside rocminfo's 'Marketing Name:' line."""
    body = "$ rocminfo\n" + ROCMINFO.read_text()
    name_at = re.search(r"Marketing Name:\s*AMD Instinc", body).end()
    before = CAP - name_at  # the bytes before the body, so that the cap lands just after "AMD Instinc"
    lines = (before - 14 - 200) // 100
    filler = "$ echo filler\n" + ("x" * 99 + "\n") * lines
    text = filler + "#" * (before - len(filler) - 1) + "\n" + body
    assert text.isascii() and len(text) > CAP and text[:CAP].endswith("AMD Instinc")
    (tmp / "big.log").write_text(text)


ROWS: list[Case] = [
    # matplotlib reads $...$ as TeX: a run name with a bad TeX command stopped the report with a traceback
    Case("report-run-name-tex", ("report", "ws", "--out", "r.html"), run_named(r"lora $\undefinedcommand{x}$ run"),
         0, ("report written",), appear=("r.html",)),
    Case("report-run-name-tex-md", ("report", "ws", "--out", "r.md"), run_named(r"$\frac{1}{$ <script>x</script>"),
         0, ("report written",), appear=("r.md",)),
    # JSON nested deeper than Python's recursion limit: a RecursionError traceback before
    Case("parity-compare-deep-header", ("parity", "compare", "a.safetensors", "a.safetensors", "--no-save"),
         safetensors("a.safetensors", DEEP_HEADER), 2, ("a.safetensors", "nested deeper than")),
    Case("parity-compare-deep-metadata", ("parity", "compare", "a.safetensors", "a.safetensors", "--no-save"),
         safetensors("a.safetensors", DEEP_META), 2, ("a.safetensors", "nested deeper than")),
    Case("parity-compare-nested-metadata", ("parity", "compare", "a.safetensors", "a.safetensors", "--no-save"),
         safetensors("a.safetensors", SHALLOW_DEEP), 2, ("a.safetensors", "nested deeper than")),
    Case("env-deep-header", ("env", "a.safetensors"), safetensors("a.safetensors", DEEP_HEADER), 2,
         ("a.safetensors", "nested deeper than")),
    # a __metadata__ that is a list, not a map: an AttributeError traceback before; now simply no stamp
    Case("env-list-metadata", ("env", "a.safetensors"),
         safetensors("a.safetensors", b'{"__metadata__": [1, 2], "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'),
         2, ("a.safetensors", "no environment stamp")),
    Case("env-deep-json-artefact", ("env", "state.json"), write("state.json", "[" * 100_000 + "]" * 100_000), 2,
         ("state.json", "nested deeper than")),
    Case("status-deep-state-file", ("status", "ws"),
         both(mkdir("ws/.hipwizard"), write("ws/.hipwizard/workspace.json", '{"a":' * 50_000 + "1" + "}" * 50_000)),
         0, ("nested deeper than",)),
    # a paste that is not a regular file: /dev/zero never ends; a folder is not a log
    Case("doctor-paste-dev-zero", ("doctor", "--paste", "/dev/zero", "--no-save"), lambda tmp: None, 2,
         ("/dev/zero", "not a regular file")),
    Case("doctor-paste-folder", ("doctor", "--paste", "d", "--no-save"), mkdir("d"), 2, ("not a regular file",)),
    # over 8 MiB: cut at a line boundary and said (before: cut mid-line, "AMD Instinc", in silence)
    Case("doctor-paste-over-cap", ("doctor", "--paste", "big.log", "--no-save"), big_paste, 0,
         ("larger than 8 MiB", "whole lines"), not_words=("AMD Instinc\n", "AMD Instinc (", "AMD Instinc;")),
]

