"""Read what a node's GPU interconnect measured and looks like: rccl-tests, TransferBench, topology tables.

Each reader takes the text a tool printed (live, recorded or pasted) and returns a record, or None when the
text is not that tool's output; the judge (``judge.interconnect``) compares them with the published numbers.

- ``read_rccl_tests``: an ``all_reduce_perf`` (or any ``*_perf``) table: ranks and devices, out-of-place and in-place
  bus bandwidth per message size, the ``# Avg bus bandwidth`` line, ``#wrong`` counts.
- ``read_transferbench``: the ``p2p`` preset's ``Averages (During UniDir|BiDir)`` rows (CPU->CPU, CPU->GPU,
  GPU->CPU, GPU->GPU), the GPU->GPU cells of its unidirectional matrix, and the ``a2a`` preset's ``RTotal`` row.
- ``read_topology``: ``rocm-smi --showtopo`` (GPU0..N tables of weight, hops, link type) and ``amd-smi topology``
  (tables keyed by PCI BDF); a table whose cells are link types is read as one whatever its title says (rocm-smi
  in TPX mode prints the link types under the weight title).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NUM = r"[0-9]+(?:\.[0-9]+)?"


# --- rccl-tests ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CollectiveRow:
    size: int  # bytes
    busbw_oop: float  # GB/s, out-of-place
    busbw_ip: float | None  # GB/s, in-place
    wrong: int = 0


@dataclass(frozen=True)
class RcclRun:
    test: str  # all_reduce_perf, all_gather_perf, ... ("" when the text does not say)
    ranks: int
    devices: tuple[str, ...]  # the device names the run listed, one per rank
    hosts: tuple[str, ...]
    rows: tuple[CollectiveRow, ...]
    avg_busbw: float | None

    @property
    def largest(self) -> CollectiveRow | None:
        return max(self.rows, key=lambda r: r.size) if self.rows else None

    @property
    def peak_busbw(self) -> float | None:
        return max((max(r.busbw_oop, r.busbw_ip or 0.0) for r in self.rows), default=None)


_RANK = re.compile(r"^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.+?)\s*$")
_ROW = re.compile(rf"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)\s+({_NUM})\s+({_NUM})\s+({_NUM})\s+(\S+)"
                  rf"(?:\s+({_NUM})\s+({_NUM})\s+({_NUM})\s+(\S+))?\s*$")
_ROW_NOROOT = re.compile(rf"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+({_NUM})\s+({_NUM})\s+({_NUM})\s+(\S+)"
                         rf"(?:\s+({_NUM})\s+({_NUM})\s+({_NUM})\s+(\S+))?\s*$")
_AVG = re.compile(rf"^#\s*Avg bus bandwidth\s*:\s*({_NUM})")
_TEST = re.compile(r"\b(\w+_perf)\b")


def _wrong(text: str | None) -> int:
    try:
        return int(text) if text is not None else 0
    except ValueError:
        return 0 if text in ("N/A",) else 1


def read_rccl_tests(text: str) -> RcclRun | None:
    """An rccl-tests (or nccl-tests) result table; None when the text has none."""
    ranks: dict[int, tuple[str, str]] = {}
    rows: list[CollectiveRow] = []
    avg = None
    for line in text.splitlines():
        line = re.sub(r"^\s*\d+:\s", "", line)  # srun --label prefixes
        if m := _RANK.match(line.strip()):
            ranks[int(m.group(1))] = (m.group(2), m.group(3))
        elif m := _AVG.match(line.strip()):
            avg = float(m.group(1))
        elif m := _ROW.match(line):
            rows.append(CollectiveRow(int(m.group(1)), float(m.group(8)),
                                      float(m.group(12)) if m.group(12) else None,
                                      _wrong(m.group(9)) + _wrong(m.group(13))))
        elif m := _ROW_NOROOT.match(line):
            rows.append(CollectiveRow(int(m.group(1)), float(m.group(7)),
                                      float(m.group(11)) if m.group(11) else None,
                                      _wrong(m.group(8)) + _wrong(m.group(12))))
    if not rows:
        return None
    test = next((m.group(1) for m in _TEST.finditer(text)), "")
    ordered = [ranks[k] for k in sorted(ranks)]
    return RcclRun(test, len(ordered), tuple(d for _, d in ordered), tuple(sorted({h for h, _ in ordered})),
                   tuple(rows), avg)


# --- TransferBench -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TransferBenchRun:
    unidir: dict[str, float | None] = field(default_factory=dict)  # "GPU->GPU" -> GB/s (None: N/A)
    bidir: dict[str, float | None] = field(default_factory=dict)
    gpu_pairs: dict[tuple[int, int], float] = field(default_factory=dict)  # unidirectional GPU i -> GPU j
    a2a_rtotal: tuple[float, ...] = ()  # per destination GPU, the a2a preset's RTotal row
    gpus: int = 0
    cus: int | None = None  # compute units per GPU the run used (NUM_GPU_SE): 304 on an MI300X


_AVG_TB = re.compile(r"Averages\s*\(During\s+(UniDir|BiDir)\)\s*:\s*(.+)$", re.I)
_TB_KINDS = ("CPU->CPU", "CPU->GPU", "GPU->CPU", "GPU->GPU")
_TB_GPU_ROW = re.compile(r"^\s*GPU\s*(\d+)\s*->\s+(.+)$")
_TB_HEADER = re.compile(r"^\s*SRC(?:\+EXE)?\\DST\s+(.+)$")
_RTOTAL = re.compile(r"RTotal\s*(?:│\s*)?((?:[0-9.]+\s+)+[0-9.]+)")


def _cell(word: str) -> float | None:
    try:
        return float(word)
    except ValueError:
        return None


def read_transferbench(text: str) -> TransferBenchRun | None:
    """TransferBench's p2p (and a2a) summaries; None when the text has neither."""
    run = TransferBenchRun()
    columns: list[tuple[str, str]] = []
    in_unidir = False
    for line in text.splitlines():
        if "Unidirectional copy peak bandwidth" in line:
            in_unidir = True
        elif "Bidirectional copy peak bandwidth" in line:
            in_unidir = False
        if m := _TB_HEADER.match(line):
            columns = re.findall(r"(CPU|GPU)\s+(\d+)", m.group(1))
            continue
        if m := _AVG_TB.search(line):
            values = m.group(2).split()
            target = run.unidir if m.group(1).lower() == "unidir" else run.bidir
            for kind, v in zip(_TB_KINDS, values, strict=False):
                target[kind] = _cell(v)
            continue
        if in_unidir and columns and (m := _TB_GPU_ROW.match(line)):
            src = int(m.group(1))
            for (kind, idx), v in zip(columns, m.group(2).split(), strict=False):
                value = _cell(v)
                if kind == "GPU" and int(idx) != src and value is not None:
                    run.gpu_pairs[(src, int(idx))] = value
        if m := _RTOTAL.search(line):
            run = TransferBenchRun(run.unidir, run.bidir, run.gpu_pairs,
                                   tuple(float(x) for x in m.group(1).split()), run.gpus)
    gpus = max([max(p) + 1 for p in run.gpu_pairs] + [len(run.a2a_rtotal)], default=0)
    m = re.search(r"NUM_GPU_DEVICES\s*=\s*(\d+)", text)
    gpus = int(m.group(1)) if m else gpus
    if not (run.unidir or run.bidir or run.a2a_rtotal):
        return None
    cus = re.search(r"NUM_GPU_SE\s*=\s*(\d+)", text)
    return TransferBenchRun(run.unidir, run.bidir, run.gpu_pairs, run.a2a_rtotal, gpus, int(cus.group(1)) if cus else None)


# --- topology ------------------------------------------------------------------------------------------------
LINK_WORDS = ("XGMI", "PCIE", "XXXX", "SELF", "N/A")


@dataclass(frozen=True)
class Topology:
    tool: str  # "rocm-smi" or "amd-smi"
    devices: tuple[str, ...]  # GPU0.. or BDFs
    link: dict[tuple[int, int], str]  # (i, j) -> XGMI / PCIE / XXXX / ...
    hops: dict[tuple[int, int], int] = field(default_factory=dict)
    weight: dict[tuple[int, int], int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # lines where the tool said it could not read something


_DEV = r"(?:GPU\d+|[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F])"
_TITLE = re.compile(r"(Weight|Hops|Link Type)\s+between two GPUs|^\s*(WEIGHT|HOPS|LINK TYPE|ACCESS|NUMA BW|[A-Z -]+) TABLE:",
                    re.I)


def read_topology(text: str) -> Topology | None:
    """``rocm-smi --showtopo`` or ``amd-smi topology``; None when neither table is there."""
    tool = "amd-smi" if re.search(r"^\s*LINK TYPE TABLE:", text, re.M) else "rocm-smi"
    section = ""
    header: list[str] = []
    tables: dict[str, dict[tuple[int, int], str]] = {}
    notes = []
    for line in text.splitlines():
        if m := _TITLE.search(line):
            section = (m.group(1) or m.group(2) or "").lower().replace("_", " ")
            header = []
            continue
        if re.search(r"not supported|cannot read", line, re.I):
            notes.append(line.strip())
            continue
        words = line.split()
        if words and all(re.fullmatch(_DEV, w) for w in words) and len(words) > 1:
            header = words
            continue
        if header and words and re.fullmatch(_DEV, words[0]) and len(words) == len(header) + 1:
            i = header.index(words[0]) if words[0] in header else None
            if i is None:
                continue
            cells = words[1:]
            kind = "link type" if any(c.upper() in ("XGMI", "PCIE", "XXXX") for c in cells) else section
            for j, c in enumerate(cells):
                tables.setdefault(kind, {})[(i, j)] = c
    link = {k: v.upper() for k, v in tables.get("link type", {}).items() if k[0] != k[1]}
    if not link:
        return None
    devices = tuple(header)

    def ints(name: str) -> dict[tuple[int, int], int]:
        return {k: int(v) for k, v in tables.get(name, {}).items() if k[0] != k[1] and v.isdigit()}

    return Topology(tool, devices, link, ints("hops"), ints("weight"), tuple(notes))
