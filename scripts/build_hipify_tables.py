"""Turn HIPIFY's published API tables into hipwizard's compact mapping data.

Input: a folder holding HIPIFY's ``docs/tables/*.md`` (``|CUDA|A|D|C|R|HIP|A|D|C|R|E|`` rows, some files
with a further ROC or MIOpen column group) and ``headers.tsv`` (CUDA header -> HIP header, ROC header,
group). Output: ``hipwizard/assets/hipify_map.json.gz`` plus the tables' MIT licence beside it
(``hipify_map.LICENSE.txt``): the data is derived from AMD's tables and must travel with their licence.

Usage: ``python scripts/build_hipify_tables.py [TABLES_DIR] [--out ASSETS_DIR]``
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import sys
from pathlib import Path

DEFAULT_TABLES = Path("/work/shared/data/hipify-tables")
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "hipwizard" / "assets"

# Table file stem -> the API family it describes (shown in diagnostics, used to pick --roc names).
FAMILIES = {
    "CUDA_Runtime_API_functions": "runtime",
    "CUDA_Driver_API_functions": "driver",
    "CUDA_Device_API": "device",
    "CUDA_RTC_API": "rtc",
    "CUBLAS_API": "blas",
    "CUB_API": "cub",
    "CUDNN_API": "dnn",
    "CUFFT_API": "fft",
    "CURAND_API": "rand",
    "CUSOLVER_API": "solver",
    "CUSPARSE_API": "sparse",
    "cuComplex_API": "complex",
}
ROW = re.compile(r"^\|`([^`]+)`\|")
SOURCE_COMMIT = "ROCm/HIPIFY@014177bc2e434ce3e834aa4f3d0e2abb1efa9796 docs/tables"


def _cells(line: str) -> list[str]:
    return [c.strip().strip("`") for c in line.strip().strip("|").split("|")]


def pick_files(tables: Path) -> list[tuple[Path, str]]:
    """One file per family: the ``_and_ROC``/``_and_MIOPEN`` variant when it exists (it holds both name sets)."""
    chosen: list[tuple[Path, str]] = []
    for stem, family in FAMILIES.items():
        both = sorted(tables.glob(f"{stem}_supported_by_HIP_and_*.md"))
        plain = tables / f"{stem}_supported_by_HIP.md"
        path = both[0] if both else plain
        if path.exists():
            chosen.append((path, family))
    return chosen


def parse_table(path: Path, family: str) -> dict[str, list]:
    """Rows of one table file -> {cuda_name: [hip, roc, cuda_added, cuda_dep, cuda_rem, hip_added, hip_dep,
    hip_rem, experimental, family]}. Empty strings mean "none"."""
    out: dict[str, list] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not ROW.match(line):
            continue
        c = _cells(line)
        if len(c) < 11:
            continue
        cuda, ca, cd, _cc, cr, hip, ha, hd, _hc, hr, he = c[:11]
        roc = c[11] if len(c) >= 17 else ""
        if family == "dnn" and len(c) >= 17:
            roc = c[11]  # MIOpen names stand where rocBLAS names stand for BLAS
        if cuda in out and out[cuda][0]:
            continue  # first supported row wins (a name listed twice keeps its mapping)
        out[cuda] = [hip, roc, ca, cd, cr, ha, hd, hr, 1 if he else 0, family]
    return out


def parse_headers(path: Path) -> list[list[str]]:
    rows = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if i == 0 or not line.strip():
            continue
        parts = (line.split("\t") + ["", "", "", ""])[:4]
        rows.append([p.strip() for p in parts])
    return rows


def build(tables: Path, out_dir: Path) -> dict:
    names: dict[str, list] = {}
    for path, family in pick_files(tables):
        for cuda, row in parse_table(path, family).items():
            if cuda not in names or (not names[cuda][0] and row[0]):
                names[cuda] = row
    data = {
        "source": SOURCE_COMMIT,
        "fields": ["hip", "roc", "cuda_added", "cuda_deprecated", "cuda_removed", "hip_added",
                   "hip_deprecated", "hip_removed", "experimental", "family"],
        "names": names,
        "headers": parse_headers(tables / "headers.tsv"),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    blob = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    # mtime=0 keeps the file byte-identical across rebuilds (clean diffs in git)
    (out_dir / "hipify_map.json.gz").write_bytes(gzip.compress(blob, compresslevel=9, mtime=0))
    shutil.copyfile(tables / "LICENSE.txt", out_dir / "hipify_map.LICENSE.txt")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="?", type=Path, default=DEFAULT_TABLES)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if not (args.tables / "headers.tsv").exists():
        print(f"error: {args.tables} has no headers.tsv (not a hipify-tables folder)", file=sys.stderr)
        return 2
    data = build(args.tables, args.out)
    supported = sum(1 for r in data["names"].values() if r[0])
    print(f"{len(data['names'])} CUDA names ({supported} with a HIP name), {len(data['headers'])} headers "
          f"-> {args.out / 'hipify_map.json.gz'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
