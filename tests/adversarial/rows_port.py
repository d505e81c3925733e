"""Rows for ``hipify``, ``review`` and ``check``: sources that cannot be translated, output folders that
cannot be ours, and review states that were damaged or crafted."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .table import BINARY, Case, both, mkdir, nothing, write

KERNEL = "__global__ void k(float *x) { x[threadIdx.x] = 1; }\nint main() { cudaMalloc(0, 4); }\n"
NOT_UTF8_CU = b"// caf\xe9 \xff\n__global__ void k(float *x) { x[threadIdx.x] = 1; }\n"
GOOD = write("src/a.cu", KERNEL)


def hipify(*extra: str) -> tuple[str, ...]:
    return ("hipify", "src", "--out", "o", "--backend", "builtin", *extra)


def link(rel: str, target: str):
    """A symlink at ``rel`` pointing to ``target`` (relative to the row's folder unless absolute)."""
    def build(tmp: Path) -> None:
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target if os.path.isabs(target) else tmp / target, path)
    return build


def review(mutate) -> callable:
    """A real review of ``src/a.cu`` into ``o`` (every hunk accepted), then ``mutate(state dict, tmp)`` applied to
    its JSON, as a hand edit or a tool would."""
    def build(tmp: Path) -> None:
        from hipwizard.port import services

        GOOD(tmp)
        services.translate(None, tmp / "src", tmp / "o", backend="builtin")
        path = tmp / "o.review.json"
        data = json.loads(path.read_text())
        for d in data["decisions"].values():
            d["state"] = "accepted"
        mutate(data, tmp)
        path.write_text(json.dumps(data))
    return build


def first_hunk(key: str, value):
    def mutate(data: dict, tmp: Path) -> None:
        data["hunks"][0][key] = value
    return mutate


def rename_file(new: str):
    """Every hunk (and the file table) points at ``new`` instead of ``a.cu``: a crafted path."""
    def mutate(data: dict, tmp: Path) -> None:
        new_name = new.replace("{tmp}", str(tmp))
        for h in data["hunks"]:
            h["file"] = new_name
        *_, last = data["files"].values()
        data["files"] = {new_name: last}
    return mutate


def top(key: str, value):
    def mutate(data: dict, tmp: Path) -> None:
        data[key] = value
    return mutate


WRITE = ("review", "o", "--write", "--no-check")
STATE = "o.review.json"

ROWS = [
    # sources that are not there, empty, or hold nothing to translate
    Case("hipify-missing-source", hipify(), nothing, 2, ("src", "does not exist"), absent=("o", STATE)),
    Case("hipify-empty-folder", hipify(), mkdir("src"), 2, ("no cuda sources", "src"), absent=("o", STATE)),
    Case("hipify-only-binary-cu", hipify(), write("src/a.cu", BINARY), 2, ("no cuda sources", "a.cu: binary file"), absent=("o", STATE)),
    Case("hipify-binary-cu-named", hipify(), both(GOOD, write("src/b.cu", BINARY)), 0, ("b.cu: binary file",),
         appear=(STATE,)),
    Case("hipify-empty-cu", hipify("--accept-all", "--no-check"), both(GOOD, write("src/e.cu", "")), 0, ("wrote",),
         appear=("o/a.cu",)),
    Case("hipify-not-utf8-kept-byte-for-byte", hipify("--accept-all", "--no-check"), write("src/a.cu", NOT_UTF8_CU),
         0, ("wrote 1 file",), appear=("o/a.cu",)),
    Case("hipify-huge-file-named", hipify("--max-file-size", "1k"),
         both(GOOD, write("src/big.cu", KERNEL * 100)), 0, ("big.cu: too large", "--max-file-size")),
    Case("hipify-max-file-size-garbage", hipify("--max-file-size", "lots"), GOOD, 2, ("--max-file-size", "not a size"),
         absent=("o", STATE)),
    Case("hipify-source-is-a-binary-file", ("hipify", "src/a.cu", "--out", "o"), write("src/a.cu", BINARY), 2,
         ("no cuda sources", "a.cu: binary file"), absent=("o", STATE)),
    # symlinks in and out of the source
    Case("hipify-symlink-inside-translated", hipify("--json"), both(GOOD, link("src/l.cu", "src/a.cu")), 0,
         ('"files": 2',), not_words=("outside",)),
    Case("hipify-symlink-outside-named", hipify(), both(GOOD, write("elsewhere/x.cu", KERNEL),
         link("src/x.cu", "elsewhere/x.cu")), 0, ("x.cu: symlink to a file outside the tree",),
         not_words=("binary", "generated", "too large")),
    Case("hipify-symlinked-folder-named", hipify(), both(GOOD, mkdir("elsewhere"), link("src/d", "elsewhere")), 0,
         ("d: symlinked folder (not followed)",)),
    Case("hipify-symlink-loop", hipify(), both(GOOD, link("src/l.cu", "src/l.cu")), 1, ("l.cu", "symlink loop")),
    Case("hipify-dangling-symlink", hipify(), both(GOOD, link("src/gone.cu", "nowhere.cu")), 1,
         ("gone.cu", "no such file")),
    Case("hipify-source-is-symlink-to-folder", ("hipify", "s", "--out", "o", "--json"), both(GOOD, link("s", "src")),
         0, ('"files": 1',)),
    # output folders that cannot be ours
    Case("hipify-out-inside-source", ("hipify", "src", "--out", "src/hip"), GOOD, 2, ("inside the source folder",),
         absent=("src/hip", "src/hip.review.json"), unchanged=("src",)),
    Case("hipify-out-is-source", ("hipify", "src", "--out", "src"), GOOD, 2, ("must not be the source folder",),
         unchanged=("src",), absent=("src.review.json",)),
    Case("hipify-out-contains-source", ("hipify", "p/src", "--out", "p"), write("p/src/a.cu", KERNEL), 2,
         ("must not be the source folder or contain it",), absent=("p.review.json",)),
    Case("hipify-out-under-regular-file", ("hipify", "src", "--out", "f/o"),
         both(GOOD, write("f", "x")), 2, ("f is a file",), unchanged=("f",), absent=("f.review.json",)),
    Case("hipify-out-is-regular-file", ("hipify", "src", "--out", "f"), both(GOOD, write("f", "x")), 2,
         ("is not a folder",), unchanged=("f",), absent=("f.review.json",)),
    Case("hipify-out-proc", ("hipify", "src", "--out", "/proc/hipwizard-x"), GOOD, 2, ("/proc/hipwizard-x",)),
    Case("hipify-out-sys", ("hipify", "src", "--out", "/sys/hipwizard-x/o"), GOOD, 2, ("/sys/hipwizard-x/o",)),
    Case("hipify-review-of-another-source", hipify(),
         both(write("other/a.cu", KERNEL), review(lambda d, t: d.update(src=str(t / "other")))),
         2, ("holds the review of", "other"), unchanged=(STATE,)),
    # review states with wrong types or crafted paths: the whole write is refused, nothing written
    Case("review-old-start-string", WRITE, review(first_hunk("old_start", "1")), 2, (STATE,), absent=("o",),
         unchanged=(STATE,)),
    Case("review-new-lines-int", WRITE, review(first_hunk("new_lines", 5)), 2, (STATE,), absent=("o",),
         unchanged=(STATE,)),
    Case("review-hunks-dict", WRITE, review(top("hunks", {"a": 1})), 2, (STATE,), absent=("o",), unchanged=(STATE,)),
    Case("review-decisions-list", WRITE, review(top("decisions", [1])), 2, (STATE,), absent=("o",), unchanged=(STATE,)),
    Case("review-decision-state-unknown", WRITE,
         review(lambda d, t: d["decisions"].update({k: {"state": "maybe"} for k in d["decisions"]})), 2, (STATE,),
         absent=("o",), unchanged=(STATE,)),
    Case("review-path-dotdot", WRITE, review(rename_file("../evil.cu")), 2, ("../evil.cu",),
         absent=("o", "evil.cu"), unchanged=(STATE,)),
    Case("review-path-absolute", WRITE, review(rename_file("{tmp}/evil.cu")), 2, ("evil.cu",),
         absent=("o", "evil.cu"), unchanged=(STATE,)),
    Case("review-path-dotdot-summary", ("review", "o", "--summary"), review(rename_file("../evil.cu")), 2,
         ("../evil.cu",), absent=("o", "evil.cu")),
    Case("review-out-field-int", WRITE, review(top("out", 5)), 2, (STATE,), absent=("o",), unchanged=(STATE,)),
    Case("review-binary-state", ("review", "o.review.json", "--summary"), write(STATE, BINARY), 2, (STATE,)),
    Case("review-empty-state", ("review", "o.review.json", "--summary"), write(STATE, ""), 2, (STATE,)),
    Case("review-state-a-list", ("review", "o.review.json", "--summary"), write(STATE, "[1]"), 2, (STATE,)),
    Case("review-nonexistent", ("review", "nope", "--summary"), nothing, 2, ("nope",)),
    Case("review-empty-folder", ("review", "d", "--summary"), mkdir("d"), 2, ("d",)),
    Case("review-json-alone", ("review", "o", "--json"), review(lambda d, t: None), 2, ("--json goes with",)),
    Case("review-write-out-now-a-file", WRITE, both(review(lambda d, t: None), write("o", "x")), 2, ("o",),
         unchanged=("o", STATE)),
    # check: folders with nothing to compile
    Case("check-empty-folder", ("check", "d"), mkdir("d"), 2, ("no translation units", "d")),
    Case("check-missing-folder", ("check", "nope"), nothing, 2, ("nope", "not a folder")),
    Case("check-regular-file", ("check", "f"), write("f", "x"), 2, ("f is not a folder",), unchanged=("f",)),
    Case("check-only-headers", ("check", "d"), write("d/a.h", "int x;\n"), 2, ("no translation units",)),
    Case("check-jobs-zero", ("check", "d", "--jobs", "0"), write("d/a.hip", "int x;\n"), 2, ("--jobs",)),
]
