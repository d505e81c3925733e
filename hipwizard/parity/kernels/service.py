"""The kernels' services, one per user action (the CLI and the Parity screen both call these, through the door).

- ``kernel_specs``: find the original's kernels, draft their specs, keep the user's edits, write the spec file.
- ``kernel_build``: generate and compile the drivers (original with nvcc, twin with nvcc, port with hipcc for
  AMD or with nvcc through the reverse-mapping headers on an NVIDIA machine).
- ``kernel_run``: build, then sweep each kernel: the original checked against the float64 twin first, then the
  port against both. Results are saved in the workspace (``kernels-result.json``) for the screen and the report.
Compilers and drivers are subprocesses; nothing here imports torch.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hipwizard import port as port_step
from hipwizard.atomic import atomic_write_text
from hipwizard.errors import UserError
from hipwizard.parity.kernels.edit import edit_kernel_spec, saved_spec, spec_fields
from hipwizard.parity.kernels.find import find_kernels
from hipwizard.parity.kernels.project import FileSpecs, save_specs, spec_key, specs_for
from hipwizard.parity.kernels.reference import check_expression
from hipwizard.parity.kernels.run import Toolchain, build, minimal_failure, sweep
from hipwizard.parity.kernels.sanitize import sanitizer_path, uses_shared_memory
from hipwizard.parity.kernels.twin import reverse_headers
from hipwizard.progress import Progress
from hipwizard.workspace import Workspace

SPEC_NAME = "kernels.json"
RESULT_NAME = "kernels-result.json"


@dataclass
class KernelRow:
    """One kernel as the faces show it."""

    file: str
    kernel: str
    line: int
    buffers: str  # "out:float[N] in:float[N]"
    launch_site: str
    supported: bool
    why: str = ""
    notes: list[str] = field(default_factory=list)
    original_built: bool | None = None
    port_built: bool | None = None
    twin_built: bool | None = None
    status: str = ""  # pass, fail, original broken, not run, or "" before a run
    cases: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    first_failure: str = ""
    minimal_case: str = ""
    seconds: float = 0.0
    checks: list[str] = field(default_factory=list)  # the sanitizer's one-line results (racecheck)


@dataclass
class KernelReport:
    original: Path
    port: Path | None
    spec_file: Path
    rows: list[KernelRow]
    platform: str = ""

    @property
    def exit_code(self) -> int:
        bad = {"fail", "original broken"}
        return 1 if any(r.status in bad or r.original_built is False or r.port_built is False for r in self.rows) else 0

    def to_dict(self) -> dict:
        return {"original": str(self.original), "port": str(self.port or ""), "spec_file": str(self.spec_file),
                "platform": self.platform, "kernels": [asdict(r) for r in self.rows]}


def spec_path(ws: Workspace) -> Path:
    return ws.state_dir / "parity" / SPEC_NAME


def _trees(ws: Workspace, original: Path | None, port: Path | None, link=None) -> tuple[Path, Path | None]:
    if original is None:
        link = link or port_step.read_link(ws)
        original, port = link.src, port or link.out
    if original is None:
        raise UserError("no original tree: give the CUDA sources (or port them first, the workspace then knows)",
                        field="original")
    if not original.is_dir():
        raise UserError(f"{original}: no such folder", field="original")
    if port is not None and not port.is_dir():
        raise UserError(f"{port}: no such folder (the port's output)", field="port")
    return original.resolve(), port.resolve() if port else None


def _row(f: FileSpecs, s) -> KernelRow:
    buffers = " ".join(f"{b.role}:{b.type}" for b in s.buffers)
    return KernelRow(f.rel, s.kernel, s.line, buffers, s.launch_site, not s.unsupported, s.unsupported, s.notes)


def kernel_specs(ws: Workspace, original: Path | None = None, port: Path | None = None, link=None,
                 only: list[str] | None = None) -> KernelReport:
    """Draft (and merge the user's edits into) every kernel's spec; write the spec file; the rows."""
    return _specs(ws, original, port, link, only)[0]


def _specs(ws: Workspace, original: Path | None, port: Path | None, link,
           only: list[str] | None) -> tuple[KernelReport, list[FileSpecs]]:
    original, port = _trees(ws, original, port, link)
    path = spec_path(ws)
    files, drafts = specs_for(original, path)
    save_specs(path, files, drafts, original, port)
    for f in files:
        for s in f.specs:
            if why := check_expression(s):
                raise UserError(f"{why} (edit {path})")  # a field of the spec file, no flag of this command
    if only:
        for f in files:
            f.specs = [s for s in f.specs if any(fnmatch.fnmatch(s.kernel, p) for p in only)]
        files = [f for f in files if f.specs]
        if not files:
            raise UserError(f"no kernel matches {', '.join(only)}", field="kernels")
    rows = [_row(f, s) for f in files for s in f.specs]
    return KernelReport(original, port, path, rows), files


def kernel_run(ws: Workspace, original: Path | None = None, port: Path | None = None, *, link=None,
               only: list[str] | None = None, platform: str = "amd", run: bool = False, tc: Toolchain | None = None,
               seed: int = 0, k: float = 2.0, progress: Callable[[Progress], None] | None = None) -> KernelReport:
    """Build the drivers of every kernel (``run``: and sweep them on this machine's GPU; ``platform`` "nvidia"
    builds the port with nvcc through the reverse-mapping headers, "amd" with hipcc)."""
    report, files = _specs(ws, original, port, link, only)
    if report.port is None:
        raise UserError("no port tree: give the port's output folder", field="port")
    if platform not in ("amd", "nvidia"):
        raise UserError(f"platform {platform!r}: amd or nvidia", field="platform")
    if run and platform == "amd":
        raise UserError("running needs this machine's GPU: on the reference (NVIDIA) machine run the port through "
                        "the reverse-mapping headers (platform nvidia)", field="platform")
    tc = tc or Toolchain()
    tc.port_platform = platform
    tc.compile_only = not run
    for tool in ([tc.nvcc] + ([tc.hipcc] if platform == "amd" else [])):
        if shutil.which(tool) is None:
            raise UserError(f"{tool} is not on PATH (needed to build the drivers)", field="toolchain")
    report.platform = platform
    by_key = {(r.file, r.kernel): r for r in report.rows}
    with tempfile.TemporaryDirectory(prefix="hipwizard-kernels-") as tmp:
        work = Path(tmp)
        if platform == "nvidia":
            tables = port_step.load_tables()
            pairs = [(c, m.hip) for c in tables if (m := tables.get(c)) is not None and m.hip]
            reverse_headers(work / "reverse", pairs)
            tc.reverse_include = str(work / "reverse")
        for i, f in enumerate(files):
            specs = [s for s in f.specs if not s.unsupported]
            if not specs:
                continue
            if progress:
                progress(Progress("building drivers", i + 1, len(files), f.rel))
            d = work / f"f{i}"
            psrc = report.port / f.unit_rel
            osrc = report.original / f.unit_rel
            built = {}
            for variant, src, roots in (("original", osrc, [report.original]), ("twin", osrc, [report.original]),
                                        ("port", psrc, [report.port, report.original])):
                if variant == "twin" and not run:
                    continue
                built[variant] = build(specs, src, variant, d, tc, roots) if src.is_file() else None
            for s in specs:
                row = by_key[(f.rel, s.kernel)]
                row.original_built = bool(built["original"] and built["original"].ok)
                row.port_built = bool(built["port"] and built["port"].ok)
                if "twin" in built:
                    row.twin_built = bool(built["twin"] and built["twin"].ok)
                if not row.port_built:
                    log = built["port"].log if built["port"] else f"{psrc} does not exist"
                    row.first_failure = "port driver: " + next(
                        (ln for ln in log.splitlines() if "error" in ln), log[-200:]).strip()
                if not row.original_built and built["original"]:
                    row.first_failure = "original driver: " + next(
                        (ln for ln in built["original"].log.splitlines() if "error" in ln), "")[:300]
            if not run or not all((one := built.get(v)) is not None and one.ok for v in ("original", "port")):
                continue
            binaries = {v: b.path for v, b in built.items() if b and b.ok}
            sanitizer = sanitizer_path()
            bodies = {k.name: k.body for k in find_kernels(f.path.read_text(encoding="utf-8", errors="replace"),
                                                           f.rel)} if sanitizer else {}
            for j, s in enumerate(specs):
                if progress:
                    progress(Progress("sweeping", j + 1, len(specs), s.kernel))
                row = by_key[(f.rel, s.kernel)]
                capture = ws.state_dir / "parity" / "kernels" / f"{s.kernel}.safetensors"
                capture.parent.mkdir(parents=True, exist_ok=True)
                shared = sanitizer and uses_shared_memory(bodies.get(s.kernel, ""), s.shared_bytes)
                res = sweep(s, j, binaries, d / f"k{j}", seed=seed, k_factor=k, capture=capture,
                            sanitizer=sanitizer if shared else "", tools=("racecheck",) if shared else ())
                row.status, row.cases, row.counts, row.seconds = res.status, len(res.cases), res.counts, res.seconds
                row.checks = res.checks
                if res.first_failure and res.first_failure.verdict:
                    v = res.first_failure.verdict
                    row.first_failure = (f"{_dims(res.first_failure.dims)} {res.first_failure.distribution}: "
                                         f"{v.detector} in {v.buffer}: {v.detail}")
                    mini = minimal_failure(res)
                    if mini and mini.verdict:
                        row.minimal_case = f"{_dims(mini.dims)} {mini.distribution}: " + "; ".join(
                            f"[{i}] oracle {o:.6g} original {r:.6g} port {p:.6g}" for i, o, r, p in mini.verdict.worst[:3])
    save_result(ws, report)
    return report


def kernel_check(ws: Workspace, progress: Callable[[Progress], None] | None = None) -> KernelReport:
    """What the Parity screen's L key does for the workspace's port: sweep the kernels where this machine has an
    NVIDIA GPU and nvcc (the port through the reverse-mapping headers), else build the drivers (the port with
    hipcc when it is here, with nvcc through the reverse-mapping headers otherwise), else draft the specs."""
    gpu = shutil.which("nvidia-smi") is not None and shutil.which("nvcc") is not None
    if gpu:
        return kernel_run(ws, platform="nvidia", run=True, progress=progress)
    if shutil.which("nvcc") is None:
        return kernel_specs(ws)
    platform = "amd" if shutil.which("hipcc") else "nvidia"
    return kernel_run(ws, platform=platform, run=False, progress=progress)


def kernel_spec_form(ws: Workspace, file: str, kernel: str) -> dict[str, str]:
    """The spec form's fields of one kernel (``edit.spec_fields``) as the workspace's spec file holds it."""
    spec = saved_spec(spec_path(ws), f"{file}::{kernel}")
    if spec is None:
        raise UserError(f"{kernel} has no saved spec yet: check the kernels first (L)", field="kernel")
    return spec_fields(spec)


def edit_kernel(ws: Workspace, file: str, kernel: str, fields: dict[str, str]) -> None:
    """Write the form's ``fields`` into the kernel's spec (each checked: ``UserError(field=<the form field>)``)."""
    edit_kernel_spec(spec_path(ws), f"{file}::{kernel}", fields)


def _dims(dims: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in dims.items())


def save_result(ws: Workspace, report: KernelReport) -> Path:
    path = ws.state_dir / "parity" / RESULT_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(report.to_dict(), indent=1) + "\n")
    return path


def saved_kernels(ws: Workspace) -> list[KernelRow]:
    """The last kernel report's rows ([] when none or unreadable)."""
    path = ws.state_dir / "parity" / RESULT_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [KernelRow(**r) for r in data.get("kernels", [])]
    except (OSError, ValueError, TypeError, AttributeError):
        return []


__all__ = ["KernelReport", "KernelRow", "edit_kernel", "kernel_check", "kernel_run", "kernel_spec_form", "kernel_specs",
           "saved_kernels", "spec_key", "spec_path"]
