"""Adversarial rows of issue 27 (safe by default): see table.py for what every row checks.

The port step's inputs: only regular files of the source tree are read (a FIFO blocked hipify forever, a
device never ends), each file skipped says its own reason, a file name that is not UTF-8 is named instead of
a traceback, and hipify writes nothing into the source tree.
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from .table import Case, both, mkdir, write

KERNEL = "__global__ void k(float *x) { x[threadIdx.x] = 1; }\nint main() { cudaMalloc(0, 4); }\n"
GOOD = write("src/a.cu", KERNEL)
STATE = "o.review.json"


def hipify(*extra: str) -> tuple[str, ...]:
    return ("hipify", "src", "--out", "o", "--backend", "builtin", *extra)


def fifo(rel: str):
    return lambda tmp: os.mkfifo(tmp / rel)


def char_device(rel: str):
    """``rel`` as the character device 1:3 (what /dev/null is). /dev/zero's 1:5 would show the harm better
    (read without end) but, unfixed, it takes the whole test run down with it: ``tests/port/test_scan.py``
    reads that one in a child process with a memory limit."""
    def build(tmp: Path) -> None:
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(tmp / rel, 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    return build


def unix_socket(rel: str):
    def build(tmp: Path) -> None:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(tmp / rel))
        sock.close()  # the socket file stays
    return build


def raw_name(rel: bytes, data: bytes):
    """A file whose name is bytes that are not UTF-8 (as a Latin-1 tool or an old archive leaves them)."""
    def build(tmp: Path) -> None:
        path = os.path.join(os.fsencode(tmp), rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)
    return build


def reviewed_then(change):
    """A real review of ``src`` into ``o``, then ``change(tmp)`` done to the source tree."""
    def build(tmp: Path) -> None:
        from hipwizard.port import services

        services.translate(None, tmp / "src", tmp / "o", backend="builtin")
        change(tmp)
    return build


def replace_by_fifo(rel: str):
    def change(tmp: Path) -> None:
        (tmp / rel).unlink()
        os.mkfifo(tmp / rel)
    return change


def inside(rel: str):
    """Run the row's command from ``rel`` (the table restores the folder afterwards)."""
    return lambda tmp: os.chdir(tmp / rel)


LATIN1 = b"src/caf\xe9.cu"

ROWS: list[Case] = [
    # not regular files: skipped and named, never opened for reading
    Case("hipify-fifo-named-not-read", hipify(), both(GOOD, fifo("src/f.cu")), 0,
         ("f.cu: a named pipe (fifo), not a regular file",), appear=(STATE,)),
    Case("hipify-char-device-named-not-read", hipify(), both(GOOD, char_device("src/z.cu")), 0,
         ("z.cu: a character device, not a regular file",), appear=(STATE,)),
    Case("hipify-socket-named-not-read", hipify(), both(GOOD, unix_socket("src/s.cu")), 0,
         ("s.cu: a socket, not a regular file",), not_words=("no such device",), appear=(STATE,)),
    Case("hipify-only-a-fifo", hipify(), both(mkdir("src"), fifo("src/f.cu")), 2,
         ("no cuda sources", "f.cu: a named pipe"), absent=(STATE, "o")),
    Case("hipify-source-named-is-a-fifo", ("hipify", "src/f.cu", "--out", "o", "--backend", "builtin"),
         both(mkdir("src"), fifo("src/f.cu")), 2, ("no cuda sources", "f.cu: a named pipe"), absent=(STATE, "o")),
    Case("review-source-replaced-by-fifo", ("review", "o", "--summary"),
         both(GOOD, write("src/b.cu", KERNEL), reviewed_then(replace_by_fifo("src/a.cu"))), 0,
         ("1 source file(s) changed since the review",)),
    # each skipped file says its own reason (the header said "files over 8 MiB are skipped" above them all)
    Case("hipify-skip-reasons-each-their-own", hipify("--max-file-size", "1k"),
         both(GOOD, write("src/big.cu", KERNEL * 40), write("src/plain.cpp", "int main() { return 0; }\n")), 0,
         ("2 file(s) skipped (1 no cuda content, 1 too large):", "big.cu: too large", "plain.cpp: no cuda content"),
         not_words=("files over",)),
    # a file name that is not UTF-8: named with its bytes escaped, never a traceback
    Case("hipify-not-utf8-file-name-named", hipify(), both(GOOD, raw_name(LATIN1, KERNEL.encode())), 0,
         ("caf\\xe9.cu", "not valid utf-8")),
    Case("hipify-not-utf8-folder-name-named", hipify("--accept-all", "--no-check"),
         both(GOOD, raw_name(b"src/d\xff/k.cu", KERNEL.encode())), 0,
         ("d\\xff/k.cu", "not valid utf-8", "wrote 1 file")),
    Case("review-with-not-utf8-file-name", ("review", "o", "--summary"),
         both(GOOD, raw_name(LATIN1, KERNEL.encode()), reviewed_then(lambda tmp: None)), 0, ("hunks",)),
    # nothing written into the source tree: the workspace goes with the output
    Case("hipify-from-inside-the-source", ("hipify", ".", "--out", "../o", "--backend", "builtin"),
         both(GOOD, inside("src")), 0, ("review:",), unchanged=("src",), absent=("src/.hipwizard",),
         appear=(STATE, ".hipwizard/port.json")),
    Case("hipify-accept-all-from-a-source-subfolder",
         ("hipify", "..", "--out", "../../o", "--backend", "builtin", "--accept-all", "--no-check"),
         both(GOOD, write("src/sub/b.cu", KERNEL), inside("src/sub")), 0, ("wrote 2 file(s)",), unchanged=("src",),
         absent=("src/sub/.hipwizard", "src/.hipwizard"), appear=("o/sub/b.cu", ".hipwizard/port.json")),
]
